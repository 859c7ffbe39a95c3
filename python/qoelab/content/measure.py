"""Per-frame quality of a decoded rung against the reference, aggregated per segment.

One ffmpeg pass per rung: the rung is decoded, scaled (bicubic) to the display resolution and compared
frame by frame with the reference (the source scaled to the display resolution) by

* ``libvmaf`` (model ``vmaf_v0.6.1``; optionally every N-th frame only: ``n_subsample``),
* ffmpeg's ``ssim`` filter (luma SSIM, ``Y:`` of the stats file),
* ffmpeg's ``psnr`` filter (luma PSNR, ``psnr_y``; identical frames give inf, stored as 100 dB).

A segment's value is the arithmetic mean over its (measured) frames.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import tempfile

from qoelab.content import ffmpeg as ff
from qoelab.errors import InputError

PSNR_CAP = 100.0
METRICS = ("vmaf", "ssim", "psnr")


def parse_metrics(spec: str) -> list[str]:
    ms = [m.strip().lower() for m in spec.split(",") if m.strip()]
    bad = [m for m in ms if m not in METRICS]
    if bad or not ms:
        raise InputError(None, "--metrics", "a comma list of vmaf, ssim, psnr", spec)
    return [m for m in METRICS if m in ms]


def _graph(metrics, w, h, subsample, fps, dist_chain="", ref_chain="", step=1):
    # timestamps are regenerated from frame numbers on both sides so that frame i is compared with frame i
    n = len(metrics)
    d = f"[0:v]{dist_chain}setpts=N/({fps}*TB),scale={w}:{h}:flags=bicubic,format=yuv420p,setsar=1,split={n}" \
        + "".join(f"[d{i}]" for i in range(n))
    r = f"[1:v]{ref_chain}setpts=N/({fps}*TB),format=yuv420p,setsar=1,split={n}" + "".join(f"[r{i}]" for i in range(n))
    parts = [d, r]
    for i, m in enumerate(metrics):
        if m == "vmaf":
            parts.append(f"[d{i}][r{i}]libvmaf=log_fmt=json:log_path=vmaf.json:n_threads=1:"
                         f"n_subsample={subsample}[o{i}]")
        elif m in ("ssim", "psnr"):
            if step == 1:
                parts.append(f"[d{i}][r{i}]{m}=stats_file={m}.log[o{i}]")
            else:  # every step-th frame of both sides (select keeps frame numbers aligned)
                sel = f"select='not(mod(n\\,{step}))'"
                parts.append(f"[d{i}]{sel}[ds{i}];[r{i}]{sel}[rs{i}];[ds{i}][rs{i}]{m}=stats_file={m}.log[o{i}]")
    outs = []
    for i in range(n):
        outs += ["-map", f"[o{i}]", "-f", "null", "-"]
    return ";".join(parts), outs


def _read(tmp, metrics, nframes, path, step=1):
    res = {}
    if "vmaf" in metrics:
        with open(os.path.join(tmp, "vmaf.json")) as f:
            doc = json.load(f)
        v = [None] * nframes
        for fr in doc["frames"]:
            i = fr["frameNum"]
            if i < nframes:
                v[i] = float(fr["metrics"]["vmaf"])
        res["vmaf"] = v
    for m, fn, key in (("ssim", "ssim.log", "Y"), ("psnr", "psnr.log", "psnr_y")):
        if m not in metrics:
            continue
        v = [None] * nframes
        with open(os.path.join(tmp, fn)) as f:
            for line in f:
                kv = dict(re.findall(r"(\w+):(\S+)", line))
                i = (int(kv["n"]) - 1) * step
                if i < nframes:
                    x = float(kv[key])
                    v[i] = PSNR_CAP if (m == "psnr" and (math.isinf(x) or x > PSNR_CAP)) else x
        res[m] = v
    for m, v in res.items():
        want = (nframes + step - 1) // step
        got = sum(1 for x in v if x is not None)
        if m != "vmaf" and got != want:
            raise InputError(path, m, f"{want} measured frames", f"{got}")
    return res


def measure_file(ffmpeg: str, distorted: str, reference: str, w: int, h: int, nframes: int,
                 metrics: list[str], subsample: int = 1, nice: int = 0,
                 dist_input: list[str] | None = None, dist_chain: str = "", ref_chain: str = "", fps: int = 24,
                 step: int = 1):
    """Per-frame metrics ``{metric: [value or None per frame]}`` plus the ffmpeg argv used."""
    with tempfile.TemporaryDirectory(prefix="qoelab-measure-") as tmp:
        graph, outs = _graph(metrics, w, h, subsample, fps, dist_chain, ref_chain, step)
        args = [*(dist_input or []), "-i", os.path.abspath(distorted), "-i", os.path.abspath(reference),
                "-filter_complex", graph, *outs]
        from qoelab.content import ffmpeg as ff
        # through ff.run, which Ctrl-C / SIGTERM stops (it was not: the command waited for the
        # measurement to end, ~5 s after SIGTERM to its pid)
        ff.run(ffmpeg, args, "measure", distorted, nice, cwd=tmp)
        return _read(tmp, metrics, nframes, distorted, step), args


def per_segment(values: list, seg_frames: int, n_segments: int) -> list[float]:
    out = []
    for s in range(n_segments):
        xs = [x for x in values[s * seg_frames:(s + 1) * seg_frames] if x is not None]
        out.append(sum(xs) / len(xs) if xs else float("nan"))
    return out


# ---- partial segments (frames dropped): the basis of VOXEL's virtual quality levels ----

def annexb_segment(mp4_path: str, avcc: bytes, data_offset: int, sample_sizes: list[int], keep: int) -> bytes:
    """The first ``keep`` frames of a fragment as an Annex-B H.264 stream (SPS/PPS from avcC first)."""
    nal_len = (avcc[4] & 3) + 1
    out = bytearray()
    p = 5
    nsps = avcc[p] & 0x1F
    p += 1
    for _ in range(nsps):
        n = struct.unpack(">H", avcc[p:p + 2])[0]
        out += b"\x00\x00\x00\x01" + avcc[p + 2:p + 2 + n]
        p += 2 + n
    npps = avcc[p]
    p += 1
    for _ in range(npps):
        n = struct.unpack(">H", avcc[p:p + 2])[0]
        out += b"\x00\x00\x00\x01" + avcc[p + 2:p + 2 + n]
        p += 2 + n
    with open(mp4_path, "rb") as f:
        f.seek(data_offset)
        data = f.read(sum(sample_sizes[:keep]))
    q = 0
    while q < len(data):
        n = int.from_bytes(data[q:q + nal_len], "big")
        out += b"\x00\x00\x00\x01" + data[q + nal_len:q + nal_len + n]
        q += nal_len + n
    return bytes(out)


def read_avcc(mp4_path: str) -> bytes:
    with open(mp4_path, "rb") as f:
        buf = f.read(1 << 16)
    i = buf.find(b"avcC")
    if i < 4:
        raise InputError(mp4_path, None, "an H.264 (avcC) track", "none")
    size = struct.unpack(">I", buf[i - 4:i])[0]
    return buf[i + 4:i - 4 + size]


def measure_partial(ffmpeg: str, mp4_path: str, frag, reference: str, first_frame: int, w: int, h: int,
                    fps: int, keep: int, metrics=("ssim",), nice: int = 0) -> dict:
    """Quality of a segment of which only the first ``keep`` frames arrived.

    The received bytes (an IDR frame and the following P frames) are decoded; the last decoded frame is
    frozen for the rest of the segment (what a player shows), and the result is compared with the
    reference frames of the segment. Returns ``{metric: segment mean}``.
    """
    n = len(frag.sample_sizes)
    if not 1 <= keep <= n:
        raise InputError(mp4_path, "keep", f"1..{n} frames", str(keep))
    data = annexb_segment(mp4_path, read_avcc(mp4_path), frag.data_offset, frag.sample_sizes, keep)
    with tempfile.NamedTemporaryFile(suffix=".h264", delete=False) as t:
        t.write(data)
        seg = t.name
    try:
        vals, _ = measure_file(
            ffmpeg, seg, reference, w, h, n, list(metrics), 1, nice, fps=fps,
            dist_input=["-framerate", str(fps), "-f", "h264"],
            dist_chain=f"tpad=stop={n - keep}:stop_mode=clone,",
            ref_chain=f"trim=start_frame={first_frame}:end_frame={first_frame + n},")
    finally:
        os.unlink(seg)
    return {m: per_segment(v, n, 1)[0] for m, v in vals.items()}
