"""`qoelab video voxel DIR`: VOXEL's per-segment frame importance, prefix SSIM and extended MPD for a
video prepared by the content pipeline (docs/content.md, "VOXEL").

For every (rung, segment): the segment alone (init + fragment) is decoded to read its frame graph
(`voxel.frame_graph`), the four drop orders are formed (Algorithm 1 for the chained one), each
order's prefix curve is measured by decoding the segment with only a prefix of it
(`voxel.prefix_curve`, at ``prefixes`` evenly spread lengths plus the whole segment), the order that
needs the fewest bytes to reach the bound is chosen (the pristine SSIM of the rung below; 0.5, the
"poor" boundary, for the lowest rung), and its ``ssims`` levels and byte ranges are written onto the
MPD as DIR/manifest-voxel.mpd.

SSIM of a prefix: the prefix is decoded at the rung's resolution and compared with the rung's pristine
decode (relative SSIM); the absolute value written is the pipeline's per-segment SSIM of the pristine
rung (against the display-resolution reference) times that relative SSIM — an approximation (the
dissertation decodes and scores every prefix against the source), stated in the docs.
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from qoelab.content import mpd as mpdmod
from qoelab.content import voxel
from qoelab.errors import InputError, json_input, read_input

POOR = 0.5    # Table 5.1's lower bound of "poor": the lowest rung's bound


def _ks(n: int, prefixes: int) -> list[int]:
    if n <= prefixes:
        return list(range(n))
    return sorted({round(i * (n - 1) / (prefixes - 1)) for i in range(prefixes)})


def annotate(d: str, prefixes: int = 16, variant: str = "branch", log=None) -> dict:
    log = log or (lambda m: None)
    t0 = time.perf_counter()
    tpath = os.path.join(d, "table.json")
    if not os.path.exists(tpath):
        raise InputError(tpath, None, message="not a prepared video (qoelab video prepare): no table.json")
    try:   # a regular file of at most 256 MiB (a FIFO blocked, /dev/zero filled memory), bounded JSON
        doc = json_input(read_input(tpath, "a prepared video's table").decode("utf-8"), tpath)
    except UnicodeDecodeError as e:
        raise InputError(tpath, None, message=f"not a prepared video (qoelab video prepare): {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("video"), dict):
        raise InputError(tpath, "video", message="not a prepared video (qoelab video prepare): no video object")
    video = doc["video"]
    ssim = (video.get("quality") or {}).get("ssim")
    if not ssim:
        raise InputError(tpath, "video.quality.ssim", message="no SSIM table: prepare with --metrics including ssim")
    import av
    m = mpdmod.read(os.path.join(d, "manifest.mpd"))
    reps = m["representations"]
    entries, avg, report, chosen = {}, {}, [], {}
    for r, rep in enumerate(reps):
        path = os.path.join(d, rep["file"])
        data = read_input(path, "a rung's media file", 4 * 2**30)
        init = data[rep["init"][0]:rep["init"][1]]
        avg[r] = sum(ssim[t][r] for t in range(len(rep["segments"]))) / max(1, len(rep["segments"]))
        for t, (a, b) in enumerate(rep["segments"]):
            with tempfile.NamedTemporaryFile(suffix=".mp4", delete=False) as tf:
                tf.write(init + data[a:b])
                seg = tf.name
            try:
                g = voxel.frame_graph(seg)
                frames = [dict(f, offset=f["offset"] - len(init) + a) for f in g["frames"]]
                ids = [f["id"] for f in frames]
                i_frame = next((f["id"] for f in frames if f["type"] == "I"), ids[0])
                orders = voxel.candidate_orders(ids, g["edges"], voxel.threshold_mbs(g["width"], g["height"]),
                                                i_frame=i_frame, variant=variant)
                ref = voxel.decode_with_drops(seg)
                pristine = ssim[t][r]
                ks = _ks(len(ids), prefixes)
                hdr = voxel.HEADER_BYTES
                pay = {f["id"]: max(0, f["bytes"] - hdr) for f in frames}
                curves = {}
                for name, order in orders.items():
                    rel = voxel.prefix_curve(seg, order, frames, ref, ks=ks)
                    # k and n in the manifest's terms: unreliable ranges (frames with a payload) and their bytes
                    pts = []
                    for k, _n, s in rel:
                        kept = order[1:k + 1]
                        pts.append((sum(1 for f in kept if pay[f] > 0), sum(pay[f] for f in kept), pristine * s))
                    curves[name] = pts
                bound = ssim[t][r - 1] if r > 0 else POOR
                name, nbytes = voxel.choose_order(curves, bound)
                chosen[name] = chosen.get(name, 0) + 1
                levels = voxel.ssim_levels(curves[name], min(bound, round(pristine, 3)))
                full = curves[name][-1]
                if not levels or levels[-1][1] != full[0]:
                    levels = [e for e in levels if e[1] < full[0]] + [(round(full[2], 3), full[0], full[1])]
                    levels = [e for i, e in enumerate(levels) if all(e[0] < x[0] for x in levels[i + 1:])]
                rel_r, unr = voxel.segment_ranges((a, b - 1), frames, orders[name])
                entries[(r, t)] = {"reliable": rel_r, "unreliable": unr, "ssims": levels}
                report.append({"rung": r, "segment": t, "order": name, "bound": bound, "bytes_to_bound": nbytes,
                               "frames": len(ids), "b_frames": sum(1 for f in frames if f["type"] == "B"),
                               "levels": levels, "curves": curves})
            except av.error.FFmpegError as e:   # a damaged or cut rung file (PyAV named the temporary copy)
                raise InputError(path, f"segment {t}", "decodable video (as `qoelab video prepare` writes it)",
                                 (getattr(e, "strerror", None) or type(e).__name__)) from None
            except IndexError:   # a segment without one decodable frame
                raise InputError(path, f"segment {t}", "decodable video (as `qoelab video prepare` writes it)",
                                 "no frame") from None
            finally:
                os.unlink(seg)
        log(f"voxel: rung {r} ({rep['width']}x{rep['height']}): {len(rep['segments'])} segments")
    out_mpd = os.path.join(d, "manifest-voxel.mpd")
    tmp = out_mpd + ".tmp"
    voxel.write_mpd(os.path.join(d, "manifest.mpd"), tmp, entries, avg_ssim=avg)
    os.replace(tmp, out_mpd)
    with open(os.path.join(d, "voxel.json.tmp"), "w") as f:
        json.dump({"variant": variant, "prefixes": prefixes, "segments": report}, f)
    os.replace(os.path.join(d, "voxel.json.tmp"), os.path.join(d, "voxel.json"))
    return {"segments": len(reps[0]["segments"]) if reps else 0, "rungs": len(reps), "orders": chosen,
            "mpd": out_mpd, "wall_s": time.perf_counter() - t0}
