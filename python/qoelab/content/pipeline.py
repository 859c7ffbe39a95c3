"""``qoelab video prepare``: reference -> encoded ladder -> DASH -> per-segment quality + frame tables.

Every step's result lives in a content-addressed cache (``--cache``, default ``$QOELAB_CACHE`` or
``~/.cache/qoelab/content``): the key hashes every input of the step (source bytes or generator graph,
display size, frame rate, duration, rung, encoder settings, metrics, VMAF subsampling, the ffmpeg version
line). A re-run skips every (rung, step) whose key exists; adding a metric re-measures without re-encoding.
Cache entries and the output directory are written into temporary directories and renamed at the end, so an
interrupted run never leaves half-written output.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import hashlib
import json
import os
import shutil
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field

from qoelab.content import ffmpeg as ff
from qoelab.content import frames as frm
from qoelab.content import ladder as lad
from qoelab.content import measure as meas
from qoelab.content import mp4, mpd, sources
from qoelab.content.corpus import TABLE_FORMAT
from qoelab.filememo import sha256_file
from qoelab.content.progress import Progress
from qoelab import outdir
from qoelab.errors import InputError

FORMAT = TABLE_FORMAT
NS = 1_000_000_000


@dataclass
class Params:
    width: int = 1920  # display (reference) resolution
    height: int = 1080
    fps: int = 24
    segment_s: float = 4.0
    duration_s: float | None = None  # None: whole file (generated sources: 60 s)
    render_duration_s: float | None = None  # generated sources: the clip length the graph is made for
    ladder: list = field(default_factory=lambda: lad.table62(1080))
    metrics: list = field(default_factory=lambda: list(meas.METRICS))
    vmaf_subsample: int = 1
    preset: str = "medium"
    peak_ratio: float = 2.0  # capped VBR: maxrate = peak_ratio x average, bufsize = maxrate x 1 s
    jobs: int = 0  # 0 = os.cpu_count()
    nice: int = 0
    ffmpeg: str | None = None
    cache: str | None = None
    bframes: int = 0  # > 0: B frames without pyramid (VOXEL's droppable frames); 0: the I/P-only default
    #: reference codec: "ffv1" (lossless, compact) or "rawvideo" (uncompressed: free to decode, ~3 MB per
    #: 1080p frame; removed from the cache once every rung's steps are cached)
    reference_codec: str = "ffv1"
    ssim_psnr_step: int = 1  # SSIM and PSNR on every N-th frame (1 = all frames)

    @property
    def seg_frames(self) -> int:
        return int(round(self.segment_s * self.fps))


def default_cache() -> str:
    return os.environ.get("QOELAB_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "qoelab", "content")


def _key(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:24]


class Cache:
    def __init__(self, root: str):
        from qoelab.errors import InputError
        self.root = root
        try:
            if os.path.exists(root) and not os.path.isdir(root):
                raise NotADirectoryError(20, "it is not a directory")
            os.makedirs(root, exist_ok=True)
            if not os.access(root, os.W_OK | os.X_OK):
                raise PermissionError(13, "not writable")
        except OSError as e:   # a file, a device, /proc, a name too long: one line, before any work
            raise InputError(root if len(root) <= 200 else root[:200] + "...", None,
                             message=f"cannot use it as the content cache (--cache, $QOELAB_CACHE): "
                                     f"{e.strerror or e}") from None

    def path(self, kind: str, key: str) -> str:
        return os.path.join(self.root, f"{kind}-{key}")

    def get_or_make(self, kind: str, key: str, make) -> tuple[str, bool]:
        """Return (dir, hit). ``make(tmpdir)`` fills a fresh temp dir that is renamed into place."""
        final = self.path(kind, key)
        if _sound_entry(final):
            return final, True
        if os.path.islink(final) or (os.path.lexists(final) and not os.path.isdir(final)):
            os.unlink(final)   # (a file or link where the entry's folder goes: made again)
        tmp = os.path.join(self.root, f".tmp-{kind}-{uuid.uuid4().hex}")
        os.makedirs(tmp)
        try:
            info = make(tmp) or {}
            with open(os.path.join(tmp, "done.json"), "w") as f:
                json.dump(info, f)
            if os.path.isdir(final):
                shutil.rmtree(final)
            os.rename(tmp, final)
        finally:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
        return final, False


def _sound_entry(d: str) -> bool:
    """A finished cache entry: a real folder holding only regular files, with a done.json object.
    Anything else (a FIFO had blocked the command, deaf to SIGTERM; /dev/zero filled memory; a file
    where the folder goes was an internal error) is made again."""
    try:
        if os.path.islink(d) or not os.path.isdir(d):
            return False
        if not all(e.is_file(follow_symlinks=False) for e in os.scandir(d)):
            return False
        done = os.path.join(d, "done.json")
        if not os.path.isfile(done) or os.path.getsize(done) > 2**20:
            return False
        with open(done, "rb") as f:
            return isinstance(json.loads(f.read()), dict)
    except (OSError, ValueError, RecursionError):
        return False


def _entry_json(path: str, kind: type):
    """A JSON file of a cache entry, of top-level type ``kind``; a damaged one is one line naming it."""
    from qoelab.errors import InputError
    try:
        with open(path, "rb") as f:
            v = json.loads(f.read())
    except (OSError, ValueError, RecursionError) as e:
        v = e
    if not isinstance(v, kind):
        raise InputError(path, None, message=f"a damaged content-cache entry ({type(v).__name__}); remove "
                                             f"{os.path.dirname(path)} to make it again")
    return v


def _subst(args: list[str], subs: dict[str, str]) -> list[str]:
    out = []
    for a in args:
        for k, v in subs.items():
            if v:
                a = a.replace(v, "{" + k + "}")
        out.append(a)
    return out


def _count_frames(path: str) -> int:
    import av

    with av.open(path) as c:
        return sum(1 for p in c.demux(c.streams.video[0]) if p.size)


def reference_args(source: str, p: Params) -> tuple[list[str], str]:
    """ffmpeg input+filter args that render the reference and a description of the source."""
    gen = sources.parse(source)
    if source.startswith("gen:") and gen is None:
        raise InputError(source, None, "gen:<name> with name in " + ", ".join(sources.SOURCES), "unknown source")
    if gen is not None:
        dur = p.duration_s or 60.0
        n = int(round(dur * p.fps))
        # the graph is parameterised with the full clip length, so a shorter render is a prefix of it
        graph = gen.graph(p.width, p.height, p.fps, p.render_duration_s or dur)
        graph += f",trim=end_frame={n},setpts=N/({p.fps}*TB),format=yuv420p,setsar=1[out]"
        return ["-filter_complex", graph, "-map", "[out]"], gen.description
    if not os.path.isfile(source):
        raise InputError(source, None, "a readable video file or gen:<name>", "no such file")
    import av

    try:
        with av.open(source) as c:
            if not c.streams.video:
                raise InputError(source, None, "a video stream", "none")
    except av.FFmpegError as e:
        # strerror: FFmpeg's own words, without the "[Errno N]" of str(e)
        why = getattr(e, "strerror", None) or str(e).split(":")[0]
        raise InputError(source, None, "a readable video file", f"data FFmpeg cannot read ({why})") from None
    vf = (f"fps={p.fps},scale={p.width}:{p.height}:flags=bicubic,format=yuv420p,setsar=1,"
          f"setpts=N/({p.fps}*TB)")
    args = ["-i", os.path.abspath(source)]
    if p.duration_s:
        args += ["-t", f"{p.duration_s:.3f}"]
    return args + ["-an", "-sn", "-vf", vf], os.path.basename(source)


def _ref_codec_args(p: Params) -> list[str]:
    if p.reference_codec == "rawvideo":
        return ["-c:v", "rawvideo", "-pix_fmt", "yuv420p", "-f", "nut"]
    return ["-c:v", "ffv1", "-threads", "1", "-pix_fmt", "yuv420p"]


#: x264's instruction sets where the CPU has AVX2 and its companions (x264's "AVX2" set).
X264_AVX2_FLAGS = ("avx2", "fma", "bmi1", "bmi2", "abm")


@functools.lru_cache(maxsize=1)
def x264_asm() -> str:
    """``":asm=AVX2"`` on an x86-64 CPU with AVX2, else "". x264 picks AVX-512 code paths where the
    CPU has them, and they round differently: on an AVX-512 machine the encodes of some rungs differ
    from an AVX2 machine's by up to 0.4% in size (and VMAF by up to 0.4 points), measured on the
    corpus clip testsrc2. Capping x264 at AVX2 makes encodes the same on every AVX2 machine, with or
    without AVX-512; other CPUs keep x264's own choice (docs/corpus.md, "Reproducibility")."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        return ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return ""
    return ":asm=AVX2" if all(x in flags for x in X264_AVX2_FLAGS) else ""


def x264_params(p: Params) -> str:
    s = p.seg_frames
    return (f"keyint={s}:min-keyint={s}:scenecut=0:bframes={p.bframes}:ref=1:open-gop=0:threads=1"
            + (":b-pyramid=none:b-adapt=0" if p.bframes else "") + x264_asm())


def encode_args(ref: str, rung: lad.Rung, p: Params, out: str) -> list[str]:
    s = p.seg_frames
    peak = int(round(rung.bitrate * p.peak_ratio))
    ts = 90000 if 90000 % p.fps == 0 else p.fps * 1000
    return ["-threads", "1", "-i", ref, "-an",
            "-vf", f"setpts=N/({p.fps}*TB),scale={rung.width}:{rung.height}:flags=bicubic,format=yuv420p,setsar=1",
            "-fps_mode", "passthrough",
            "-c:v", "libx264", "-preset", p.preset, "-profile:v", "high",
            "-b:v", str(rung.bitrate), "-maxrate", str(peak), "-bufsize", str(peak),
            "-x264-params", x264_params(p),
            "-force_key_frames", f"expr:eq(mod(n,{s}),0)", "-video_track_timescale", str(ts),
            "-movflags", "+frag_keyframe+empty_moov+default_base_moof+skip_trailer", "-f", "mp4", out]


def prepare(source: str, out: str | None, p: Params, name: str | None = None, progress: bool = True,
            log=None) -> dict:
    """Run the whole pipeline; write ``out`` (MPD, one MP4 per rung, table.json, frames.parquet) if given.

    Returns the table document (see docs/content.md)."""
    t_start = time.monotonic()
    ff.resume()
    ffm = ff.find_ffmpeg(p.ffmpeg)
    gen = sources.parse(source)
    ff.check(ffm, filters=gen.needs if gen else ())
    ffver = ff.version(ffm)
    cache = Cache(p.cache or default_cache())
    jobs = p.jobs or os.cpu_count() or 1
    name = name or (source[4:] if gen else os.path.splitext(os.path.basename(source))[0])

    # ---- reference
    ref_in, desc = reference_args(source, p)
    src_id = {"gen": source, "graph": ref_in} if gen else {"sha256": sha256_file(source)}
    ref_key = _key({"v": 2, "src": src_id, "w": p.width, "h": p.height, "fps": p.fps, "dur": p.duration_s,
                    "ff": ffver, **({"codec": p.reference_codec} if p.reference_codec != "ffv1" else {})})
    timing: dict[str, dict] = {}

    ref_argv = [*ref_in, "-fps_mode", "passthrough", *_ref_codec_args(p)]  # + the output path

    def make_ref(tmp):
        args = [*ref_argv, os.path.join(tmp, "reference.nut")]
        t0 = time.monotonic()
        ff.run(ffm, args, "reference", source, p.nice)
        n = _count_frames(os.path.join(tmp, "reference.nut"))
        if n == 0:
            raise InputError(source, None, "at least one video frame", "none")
        return {"frames": n, "seconds": time.monotonic() - t0,
                "args": _subst(args, {"source": os.path.abspath(source) if not gen else "",
                                      "reference": os.path.join(tmp, "reference.nut")})}

    ref_lock = threading.Lock()
    ref_state: dict = {}

    def ensure_ref() -> str:
        """Render the reference (or find it in the cache); generated sources only need it when a rung
        step misses the cache."""
        with ref_lock:
            if not ref_state:
                d, hit = cache.get_or_make("ref", ref_key, make_ref)
                info = _entry_json(os.path.join(d, "done.json"), dict)
                ref_state.update(dir=d, hit=hit, info=info)
            return os.path.join(ref_state["dir"], "reference.nut")

    if gen is not None and not os.path.isfile(os.path.join(cache.path("ref", ref_key), "done.json")):
        nframes = int(round((p.duration_s or 60.0) * p.fps))  # the graph's trim: exactly this many frames
        ref_info = {"frames": nframes, "seconds": 0.0, "args": [*ref_argv, "{reference}"]}
    else:
        ensure_ref()
        ref_info = ref_state["info"]
        nframes = ref_info["frames"]
    ref_path = os.path.join(cache.path("ref", ref_key), "reference.nut")
    S = p.seg_frames
    if S < 1:
        raise InputError(None, "segment_s", f"at least one frame per segment (1/{p.fps:g} s)", f"{p.segment_s:g} s")
    nseg = (nframes + S - 1) // S
    if nseg == 0:
        raise InputError(source, None, "at least one segment", "no frames")

    # ---- per rung: encode, frame table, measurement
    disp_px = p.width * p.height
    cost = {"encode": 1.0, "frames": 0.25, "measure": 2.5 if "vmaf" in p.metrics else 0.6}
    total = sum(nframes * (r.width * r.height / disp_px * (cost["encode"] + cost["frames"]) + cost["measure"])
                for r in p.ladder)
    bar = Progress(total, f"prepare {name}", progress)
    commands: dict[str, list] = {}

    def do_rung(i: int, rung: lad.Rung):
        px = rung.width * rung.height / disp_px
        enc_key = _key({"ref": ref_key, "rung": asdict(rung), "preset": p.preset, "peak": p.peak_ratio,
                        "seg": S, "fps": p.fps, "ff": ffver, "v": 2, **({"bf": p.bframes} if p.bframes else {})})

        def make_enc(tmp):
            out_mp4 = os.path.join(tmp, "rung.mp4")
            args = encode_args(ensure_ref(), rung, p, out_mp4)
            t0 = time.monotonic()
            ff.run(ffm, args, f"encode {rung.label}", source, p.nice)
            return {"seconds": time.monotonic() - t0,
                    "args": _subst(args, {"reference": ref_path, "output": out_mp4})}

        enc_dir, hit_e = cache.get_or_make("enc", enc_key, make_enc)
        bar.advance(nframes * px * cost["encode"], f"{rung.label} encode")
        mp4_path = os.path.join(enc_dir, "rung.mp4")
        idx = mp4.index(mp4_path)
        if len(idx.fragments) != nseg:
            raise InputError(mp4_path, None, f"{nseg} fragments (one per segment)", str(len(idx.fragments)))

        def make_frames(tmp):
            t0 = time.monotonic()
            rows = frm.frame_table(mp4_path, idx.fragments, S)
            with open(os.path.join(tmp, "frames.json"), "w") as f:
                json.dump(rows, f)
            return {"seconds": time.monotonic() - t0}

        frm_dir, hit_f = cache.get_or_make("frm", _key({"enc": enc_key, "v": 2}), make_frames)
        bar.advance(nframes * px * cost["frames"], f"{rung.label} frames")

        def make_meas(tmp):
            t0 = time.monotonic()
            vals, args = meas.measure_file(ffm, mp4_path, ensure_ref(), p.width, p.height, nframes, p.metrics,
                                           p.vmaf_subsample, p.nice, fps=p.fps, step=p.ssim_psnr_step)
            with open(os.path.join(tmp, "metrics.json"), "w") as f:
                json.dump(vals, f)
            return {"seconds": time.monotonic() - t0,
                    "args": _subst(args, {"reference": ref_path, "distorted": mp4_path})}

        mkey = _key({"enc": enc_key, "metrics": p.metrics, "sub": p.vmaf_subsample, "v": 1,
                     **({"step": p.ssim_psnr_step} if p.ssim_psnr_step != 1 else {})})
        meas_dir, hit_m = cache.get_or_make("meas", mkey, make_meas)
        bar.advance(nframes * cost["measure"], f"{rung.label} measure")
        rows = _entry_json(os.path.join(frm_dir, "frames.json"), list)
        vals = _entry_json(os.path.join(meas_dir, "metrics.json"), dict)
        infos = {}
        for k, d in (("encode", enc_dir), ("frames", frm_dir), ("measure", meas_dir)):
            infos[k] = _entry_json(os.path.join(d, "done.json"), dict)
        return {"idx": idx, "mp4": mp4_path, "rows": rows, "vals": vals, "infos": infos,
                "hits": {"encode": hit_e, "frames": hit_f, "measure": hit_m}}

    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [ex.submit(do_rung, i, r) for i, r in enumerate(p.ladder)]
        try:
            results = [f.result() for f in futs]
        except BaseException:   # Ctrl-C, SIGTERM or a failed rung: stop the other rungs now
            for f in futs:
                f.cancel()
            ff.stop_all()
            raise

    if ref_state:
        timing["reference"] = {"frames": nframes, "seconds": ref_state["info"]["seconds"], "cached": ref_state["hit"]}
        ref_info = ref_state["info"]
    else:
        timing["reference"] = {"frames": nframes, "seconds": 0.0, "cached": True}
    if p.reference_codec == "rawvideo" and not out and os.path.isdir(cache.path("ref", ref_key)):
        shutil.rmtree(cache.path("ref", ref_key), ignore_errors=True)  # every rung step is cached now
    # ---- assemble the table
    seg_s = S / p.fps
    last_frames = nframes - (nseg - 1) * S
    sizes = [[results[r]["idx"].fragments[s].size for r in range(len(p.ladder))] for s in range(nseg)]
    quality = {}
    for m in p.metrics:
        per = [meas.per_segment(results[r]["vals"][m], S, nseg) for r in range(len(p.ladder))]
        quality[m] = [[round(per[r][s], 4) for r in range(len(p.ladder))] for s in range(nseg)]
    video = {
        "name": name,
        "segment_duration": int(round(seg_s * NS)),
        "last_segment_duration": None if last_frames == S else int(round(last_frames / p.fps * NS)),
        "bitrates_bps": [r.bitrate for r in p.ladder],
        "sizes": sizes,
        "quality": quality,
        "resolutions": [[r.width, r.height] for r in p.ladder],
    }
    rung_meta = []
    for i, (r, res) in enumerate(zip(p.ladder, results)):
        fsz = [f.size for f in res["idx"].fragments]
        rung_meta.append({
            "width": r.width, "height": r.height, "bitrate": r.bitrate,
            "file": f"rung{i:02d}_{r.width}x{r.height}_{r.bitrate // 1000}k.mp4",
            "codec": res["idx"].codec, "init_bytes": res["idx"].init_end,
            "avg_bitrate_bps": int(round(sum(fsz) * 8 / (nframes / p.fps))),
            "mpd_bandwidth": mpd.min_bandwidth(fsz, seg_s, seg_s),
        })
        for k in ("encode", "frames", "measure"):
            t = timing.setdefault(k, {"frames": 0, "seconds": 0.0, "cached": True})
            t["frames"] += nframes
            t["seconds"] += res["infos"][k]["seconds"]
            t["cached"] = t["cached"] and res["hits"][k]
        commands.setdefault("encode", []).append(res["infos"]["encode"]["args"])
        commands.setdefault("measure", []).append(res["infos"]["measure"]["args"])
    commands = {"reference": ref_info["args"], **commands}
    for t in timing.values():
        t["seconds"] = round(t["seconds"], 3)
        t["fps"] = round(t["frames"] / t["seconds"], 1) if t["seconds"] > 0 else None
    meta = {
        "source": source, "source_description": desc,
        "display": [p.width, p.height], "fps": p.fps, "frames": nframes, "segment_frames": S,
        "ladder": rung_meta, "metrics": p.metrics, "vmaf_model": "vmaf_v0.6.1 (libvmaf built-in)",
        "vmaf_subsample": p.vmaf_subsample, **({"ssim_psnr_step": p.ssim_psnr_step} if p.ssim_psnr_step != 1 else {}),
        "ssim": "luma SSIM of ffmpeg's ssim filter", "psnr": f"luma PSNR of ffmpeg's psnr filter, capped at {meas.PSNR_CAP} dB",
        "segment_value": "arithmetic mean over the segment's measured frames",
        "encoder": {"codec": "libx264", "preset": p.preset, "profile": "high", "peak_ratio": p.peak_ratio,
                    "x264_params": x264_params(p)},
        "ffmpeg_version": ffver, "commands": commands,
        "timing": timing, "wall_seconds": round(time.monotonic() - t_start, 2),
    }
    doc = {"format": FORMAT, "video": video, "meta": meta}
    frame_rows = []
    for r, res in enumerate(results):
        for row in res["rows"]:
            gi = row["segment"] * S + row["pts_idx"]
            row = dict(row, rung=r)
            for m in p.metrics:
                v = res["vals"][m][gi] if gi < len(res["vals"][m]) else None
                row[m] = float("nan") if v is None else round(v, 4)
            frame_rows.append(row)
    if out:
        write_output(out, doc, frame_rows, results, p, nframes)
    doc["_frames"] = frame_rows
    return doc


def frames_table(rows: list[dict]):
    import pyarrow as pa

    cols = list(frm.COLUMNS) + [m for m in meas.METRICS if rows and m in rows[0]]
    data = {c: [r[c] for r in rows] for c in cols}
    types = {"segment": pa.int32(), "rung": pa.int16(), "decode_idx": pa.int16(), "pts_idx": pa.int16(),
             "type": pa.string(), "size": pa.int64(), "offset": pa.int64(), "ref": pa.int16(),
             "weight": pa.float32(), "vmaf": pa.float32(), "ssim": pa.float32(), "psnr": pa.float32()}
    t = pa.table({c: pa.array(data[c], type=types[c]) for c in cols})
    return t.sort_by([("rung", "ascending"), ("segment", "ascending"), ("decode_idx", "ascending")])


def write_table_files(dirpath: str, doc: dict, rows: list[dict], table_name: str = "table.json",
                      frames_name: str = "frames.parquet") -> None:
    import pyarrow.parquet as pq

    d = {k: v for k, v in doc.items() if not k.startswith("_")}
    with open(os.path.join(dirpath, table_name), "w") as f:
        json.dump(d, f, indent=1)
        f.write("\n")
    pq.write_table(frames_table(rows), os.path.join(dirpath, frames_name), compression="zstd")


def is_prepare_output(path: str) -> bool:
    """``path`` holds the output of an earlier ``qoelab video prepare`` (its table.json is ours), which
    a new run may replace without --force."""
    try:
        with open(os.path.join(path, "table.json")) as f:
            return json.load(f).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def write_output(out: str, doc: dict, rows, results, p: Params, nframes: int) -> None:
    with outdir.atomic_dir(out) as tmp:
        reps = []
        for i, (rm, res) in enumerate(zip(doc["meta"]["ladder"], results)):
            dst = os.path.join(tmp, rm["file"])
            # a copy, not a hard link: an output edited in place would change the cache entry that
            # every later prepare with these parameters reuses (found by a probe)
            shutil.copyfile(res["mp4"], dst)
            idx = res["idx"]
            reps.append({"id": i, "file": rm["file"], "width": rm["width"], "height": rm["height"],
                         "codec": idx.codec, "timescale": idx.timescale, "init_end": idx.init_end,
                         "ranges": [(f.start, f.end) for f in idx.fragments], "bandwidth": rm["mpd_bandwidth"]})
        seg_s = p.seg_frames / p.fps
        mpd.write(os.path.join(tmp, "manifest.mpd"), reps, nframes / p.fps, p.seg_frames, p.fps, seg_s)
        write_table_files(tmp, doc, rows)
