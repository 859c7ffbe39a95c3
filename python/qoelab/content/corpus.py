"""The committed corpus: quality tables of generated clips (no media), and the loader the video model uses.

Layout (``python/qoelab/corpus/`` in the repository, installed with the package as ``qoelab/corpus/``
package data; ``$QOELAB_CORPUS`` or ``--corpus DIR`` point elsewhere)::

    corpus/manifest.json          parameters, ffmpeg version, clip list, sha256 of every table
    corpus/<clip>.json            table document (format qoelab-content/1: "video" + "meta")
    corpus/frames/<clip>.parquet  frame tables (one row per frame of every segment and rung)

``load_video`` returns the ``video`` part: exactly the JSON shape of the core's ``Video``, with the
byte layout of the rung files the pipeline wrote added when the table has none: each rung's file is
its init segment (``meta.ladder[r].init_bytes``) followed by the segments back to back (the pipeline's
MPD ranges are contiguous and cover the file exactly), i.e. ``layout_from_sizes(sizes, init_bytes)``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import shutil
import tempfile
import time

from qoelab.content.videoschema import VIDEO_KEYS, _show, validate  # noqa: F401  (re-exported)
from qoelab.errors import InputError, json_input, not_a_file, read_input

#: Clips of the committed corpus, easiest content first (expected).
CLIPS = ["slides", "talking-head", "gradients", "testsrc2", "zoompan", "scrolling-text", "camera-shake",
         "scene-cuts", "mandelbrot", "life", "cellauto", "noise"]

#: Parameters of the committed corpus (see docs/content.md, "Corpus parameters").
CORPUS_PARAMS = {"width": 640, "height": 360, "fps": 24, "segment_s": 4.0, "duration_s": 60.0,
                 "ladder": "corpus", "metrics": ["vmaf", "ssim", "psnr"], "vmaf_subsample": 4,
                 "preset": "veryfast", "peak_ratio": 2.0}

#: Clips of the ``hd`` corpus (docs/corpus.md, "The hd corpus"): generated genres of Minerva's Table 1,
#: expected easiest first.
HD_CLIPS = ["lecture", "cartoon", "product-ad", "news", "animated-mv", "cat", "documentary", "cooking",
            "gaming", "aerial", "nature", "soccer", "gopro", "action", "storm", "crowd"]

#: Parameters of the ``hd`` corpus: 1080p display, the 8-rung 0.2-6 Mbit/s ladder, VMAF on every 8th frame
#: and SSIM/PSNR on every 4th (the cost of 1080p measurement on a 2-core machine, docs/corpus.md).
HD_PARAMS = {"width": 1920, "height": 1080, "fps": 24, "segment_s": 4.0, "duration_s": 60.0,
             "ladder": "hd", "metrics": ["vmaf", "ssim", "psnr"], "vmaf_subsample": 8, "ssim_psnr_step": 4,
             "preset": "veryfast", "peak_ratio": 2.0, "reference_codec": "rawvideo"}

#: The corpus sets: ``sd`` (the committed 360p corpus, default) and ``hd`` (1080p, Minerva-grade).
SETS = {"sd": {"dir": "corpus", "clips": CLIPS, "params": CORPUS_PARAMS},
        "hd": {"dir": "corpus-hd", "clips": HD_CLIPS, "params": HD_PARAMS}}

REGEN_COMMAND = "qoelab video corpus regenerate"


def _check_set(cset: str) -> dict:
    if cset not in SETS:
        raise InputError(None, "--set", "a corpus set (" + ", ".join(SETS) + ")", repr(cset))
    return SETS[cset]


#: The table format this qoelab writes (`qoelab video prepare`, `video import`) and reads.
TABLE_FORMAT = "qoelab-content/1"


def check_table_format(doc, path: str) -> None:
    """A document that says it is a content table (``format`` "qoelab-content/...") must be this
    qoelab's format and hold its ``video`` (a later format was read as this one; a table without its
    video was taken for a bare Video JSON with unknown fields)."""
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if not (isinstance(fmt, str) and fmt.startswith("qoelab-content/")):
        return
    if fmt != TABLE_FORMAT:
        raise InputError(path, "format", f"{TABLE_FORMAT} (the table format this qoelab reads)", repr(fmt[:40]))
    if "video" not in doc:
        raise InputError(path, "video", "the table's Video object", "none")


def corpus_dir(cset: str = "sd") -> str:
    """Directory of a corpus set (``$QOELAB_CORPUS`` overrides the ``sd`` set's, ``$QOELAB_CORPUS_HD`` the
    ``hd`` set's)."""
    var = "QOELAB_CORPUS" if cset == "sd" else f"QOELAB_CORPUS_{cset.upper()}"
    env = os.environ.get(var)
    if env:
        if os.path.lexists(env) and not os.path.isdir(env):   # (clips were then looked up elsewhere)
            what = "a file" if os.path.isfile(env) else "something that is not a folder"
            raise InputError(env, None, message=f"${var}: expected a corpus folder, found {what}")
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", _check_set(cset)["dir"]))  # package data: qoelab/corpus*


def set_of(root: str | None) -> str:
    """The corpus set a directory holds (its manifest's ``set``; ``sd`` without one)."""
    man = os.path.join(root or corpus_dir(), "manifest.json")
    if os.path.isfile(man):
        try:
            doc = json_input(read_input(man, "a corpus manifest", 16 * 2**20).decode("utf-8"), man)
        except (InputError, UnicodeDecodeError):
            return "sd"
        return doc.get("set", "sd") if isinstance(doc, dict) else "sd"
    return "sd"


def list_videos(root: str | None = None) -> list[str]:
    """Names of the clips in the corpus (manifest order)."""
    root = root or corpus_dir()
    man = os.path.join(root, "manifest.json")
    if os.path.isfile(man):
        doc = _read_json(man)
        clips = doc.get("clips") if isinstance(doc, dict) else None
        if not isinstance(clips, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                                  for c in clips):
            raise InputError(man, "clips", 'a list of {"name": ...} objects', _show(clips))
        return [c["name"] for c in clips]
    return sorted(fn[:-5] for fn in os.listdir(root) if fn.endswith(".json") and fn != "manifest.json")


def find_video(name: str, root: str | None = None) -> str:
    """Path of a corpus clip's table (``name`` or ``corpus:name``)."""
    name = name[7:] if name.startswith("corpus:") else name
    roots = [root] if root else [corpus_dir(c) for c in SETS]
    for r in roots:
        path = os.path.join(r, f"{name}.json")
        if os.path.isfile(path):
            return path
        if os.path.lexists(path):   # the clip is there, but not as a file (was "no such clip")
            raise InputError(path, None, "a corpus clip's table (a regular file)", not_a_file(path))
    known = [c for r in roots if os.path.isdir(r) for c in list_videos(r)]
    if os.sep in name or name.endswith(".json"):   # a path, not a clip's name (was "no such clip")
        raise InputError(name, None, "an existing table file, or a corpus clip's name", "no such file")
    raise InputError(name, None, "a corpus clip (" + ", ".join(known) + ")", "no such clip")


def _read_json(path: str):
    try:
        text = read_input(path, "a JSON file").decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, f"byte {e.start}", "a UTF-8 JSON file", "invalid UTF-8") from None
    return json_input(text, path)


def load_table(path_or_name: str) -> dict:
    """The whole table document (``video`` + ``meta``) of a path or corpus clip name."""
    if os.path.lexists(path_or_name) and not os.path.isfile(path_or_name):   # (was "no such clip")
        raise InputError(path_or_name, None, "a corpus clip's table (a regular file)", not_a_file(path_or_name))
    path = path_or_name if os.path.isfile(path_or_name) else find_video(path_or_name)
    doc = _read_json(path)
    check_table_format(doc, path)
    if not isinstance(doc, dict) or "video" not in doc:
        raise InputError(path, None, "a qoelab-content table (keys format, video, meta)", "other JSON")
    if not isinstance(doc.get("meta", {}), dict):
        raise InputError(path, "meta", "an object", _show(doc["meta"]))
    validate(doc["video"], path)
    return doc


def load_video(path_or_name: str) -> dict:
    """Load a video for the core's video model: a corpus table (path or clip name), a bare Video JSON,
    a Sabre movie JSON, or a Minerva ``.dat`` (with its ``.vmaf`` next to it). Returns the Video dict."""
    from qoelab.content import formats

    if not os.path.isfile(path_or_name):
        return with_layout(load_table(path_or_name))
    if path_or_name.endswith(".dat"):
        return formats.import_minerva(path_or_name)
    doc = _read_json(path_or_name)
    check_table_format(doc, path_or_name)
    if isinstance(doc, dict) and "video" in doc:
        validate(doc["video"], path_or_name)
        return with_layout(doc)
    if isinstance(doc, dict) and "segment_sizes_bits" in doc:
        return formats.import_sabre(path_or_name)
    validate(doc, path_or_name)
    return doc


def with_layout(doc: dict) -> dict:
    """The ``video`` of a table document, with the byte layout of its rung files (init segment of
    ``meta.ladder[r].init_bytes``, then the segments back to back) when it has none. A table without
    those init sizes keeps ``byte_offsets`` as it is (None: no layout)."""
    from qoelab.video.model import layout_from_sizes

    v = doc["video"]
    if v.get("byte_offsets") is not None:
        return v
    meta = doc.get("meta")
    ladder = meta.get("ladder") if isinstance(meta, dict) else None   # ("meta": "x" was an internal error)
    r = len(v["bitrates_bps"])
    if not isinstance(ladder, list) or len(ladder) != r:
        return v
    init = [x.get("init_bytes") if isinstance(x, dict) else None for x in ladder]
    if not all(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in init):
        return v
    return dict(v, byte_offsets=layout_from_sizes(v["sizes"], init))


def load_frames(path_or_name: str):
    """Frame tables of a corpus clip (or of a ``prepare`` output dir / table path) as a pandas DataFrame."""
    import pandas as pd

    if os.path.isdir(path_or_name):
        p = os.path.join(path_or_name, "frames.parquet")
    elif os.path.isfile(path_or_name):
        d = os.path.dirname(os.path.abspath(path_or_name))
        base = os.path.splitext(os.path.basename(path_or_name))[0]
        p = os.path.join(d, "frames", f"{base}.parquet")
        if not os.path.isfile(p):
            p = os.path.join(d, "frames.parquet")
    else:
        t = find_video(path_or_name)
        p = os.path.join(os.path.dirname(t), "frames", f"{path_or_name.removeprefix('corpus:')}.parquet")
    if not os.path.isfile(p):
        raise InputError(p, None, "a frames parquet file", "no such file")
    return pd.read_parquet(p)


# ---------------------------------------------------------------- regeneration

def corpus_params(jobs: int = 0, nice: int = 0, ffmpeg: str | None = None, cache: str | None = None,
                  cset: str = "sd"):
    from qoelab.content import ladder as lad
    from qoelab.content.pipeline import Params

    cp = _check_set(cset)["params"]
    return Params(width=cp["width"], height=cp["height"], fps=cp["fps"], segment_s=cp["segment_s"],
                  duration_s=cp["duration_s"], ladder=lad.parse(cp["ladder"]), metrics=list(cp["metrics"]),
                  vmaf_subsample=cp["vmaf_subsample"], preset=cp["preset"], peak_ratio=cp["peak_ratio"],
                  jobs=jobs, nice=nice, ffmpeg=ffmpeg, cache=cache,
                  ssim_psnr_step=cp.get("ssim_psnr_step", 1), reference_codec=cp.get("reference_codec", "ffv1"))


def _sha(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def regenerate(root: str | None = None, clips: list[str] | None = None, jobs: int = 0, nice: int = 0,
               ffmpeg: str | None = None, cache: str | None = None, progress: bool = True,
               cset: str = "sd") -> dict:
    """Re-run the pipeline for ``clips`` (default: all of the set) and (re)write their tables and the
    manifest. Each finished clip is written at once (tables, then the manifest), so an interrupted run
    keeps the clips it finished and a re-run resumes from the step cache."""
    from qoelab.content import ffmpeg as ff
    from qoelab.content import pipeline as pl
    from qoelab.content import sources

    spec = _check_set(cset)
    set_clips = spec["clips"]
    root = root or corpus_dir(cset)
    clips = clips or list(set_clips)
    for c in clips:
        if c not in sources.SOURCES:
            raise InputError(c, None, "a built-in source (" + ", ".join(sources.SOURCES) + ")", "unknown clip")
    p = corpus_params(jobs, nice, ffmpeg, cache, cset)
    man_path = os.path.join(root, "manifest.json")
    man = _read_json(man_path) if os.path.isfile(man_path) else {"clips": []}
    old_clips = man.get("clips", []) if isinstance(man, dict) else None
    if not isinstance(old_clips, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                                  for c in old_clips):
        raise InputError(man_path, "clips", 'a list of {"name": ...} objects', _show(old_clips))
    by_name = {c["name"]: c for c in old_clips}
    os.makedirs(os.path.join(root, "frames"), exist_ok=True)
    t0 = time.monotonic()
    ffm = ff.find_ffmpeg(ffmpeg)

    def write_manifest():
        order = [c for c in set_clips if c in by_name] + [c for c in by_name if c not in set_clips]
        opt = "" if cset == "sd" else f" --set {cset}"
        man = {
            "format": "qoelab-corpus/1",
            **({"set": cset} if cset != "sd" else {}),
            "regenerate": REGEN_COMMAND + opt + " (all clips) or ... --clip NAME (one clip); verify: qoelab video corpus verify"
            + opt + " --clip NAME",
            "ffmpeg_version": ff.version(ffm),
            "params": spec["params"],
            "encode_command": "see <clip>.json meta.commands (exact argv per rung, paths as {placeholders})",
            "clips": [by_name[c] for c in order],
        }
        with open(man_path + ".tmp", "w") as f:
            json.dump(man, f, indent=1)
            f.write("\n")
        os.replace(man_path + ".tmp", man_path)

    for name in clips:
        doc = pl.prepare(f"gen:{name}", None, p, name=name, progress=progress)
        rows = doc.pop("_frames")
        tmp = tempfile.mkdtemp(prefix=".regen-", dir=root)
        try:
            pl.write_table_files(tmp, doc, rows, f"{name}.json", f"{name}.parquet")
            os.replace(os.path.join(tmp, f"{name}.json"), os.path.join(root, f"{name}.json"))
            os.replace(os.path.join(tmp, f"{name}.parquet"), os.path.join(root, "frames", f"{name}.parquet"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        by_name[name] = {"name": name, "source": f"gen:{name}",
                         "description": doc["meta"]["source_description"],
                         "table": f"{name}.json", "frames": f"frames/{name}.parquet",
                         "video_sha256": hashlib.sha256(json.dumps(doc["video"], sort_keys=True).encode()).hexdigest(),
                         "wall_seconds": doc["meta"]["wall_seconds"], "timing": doc["meta"]["timing"]}
        write_manifest()
    return {"clips": clips, "wall_seconds": round(time.monotonic() - t0, 1)}


def compare(a: dict, b: dict, tol: dict | None = None) -> list[str]:
    """Differences between two Video dicts; sizes must be equal, quality within ``tol`` per metric."""
    tol = tol or {"vmaf": 0.0, "ssim": 0.0, "psnr": 0.0}
    diffs = []
    for k in ("segment_duration", "last_segment_duration", "bitrates_bps", "resolutions"):
        if a.get(k) != b.get(k):
            diffs.append(f"{k}: {a.get(k)} != {b.get(k)}")
    if a["sizes"] != b["sizes"]:
        n = sum(x != y for ra, rb in zip(a["sizes"], b["sizes"]) for x, y in zip(ra, rb))
        diffs.append(f"sizes: {n} cells differ")
    for m in sorted(set(a.get("quality", {})) | set(b.get("quality", {}))):
        ta, tb = a.get("quality", {}).get(m), b.get("quality", {}).get(m)
        if ta is None or tb is None:
            diffs.append(f"quality.{m}: missing on one side")
            continue
        worst = max((abs(x - y) for ra, rb in zip(ta, tb) for x, y in zip(ra, rb)
                     if not (math.isnan(x) and math.isnan(y))), default=0.0)
        if worst > tol.get(m, 0.0):
            diffs.append(f"quality.{m}: max |diff| {worst:g} > {tol.get(m, 0.0):g}")
    return diffs


def _subset(v: dict, segments: int | None, rungs: list[int] | None) -> dict:
    v = copy.deepcopy(v)
    rs = rungs if rungs is not None else list(range(len(v["bitrates_bps"])))
    ns = segments if segments is not None else len(v["sizes"])

    def cut(t):
        return [[row[r] for r in rs] for row in t[:ns]]

    v["sizes"] = cut(v["sizes"])
    if v.get("byte_offsets") is not None:
        v["byte_offsets"] = cut(v["byte_offsets"])
    v["quality"] = {m: cut(t) for m, t in v.get("quality", {}).items()}
    v["bitrates_bps"] = [v["bitrates_bps"][r] for r in rs]
    if v.get("resolutions"):
        v["resolutions"] = [v["resolutions"][r] for r in rs]
    if segments is not None:
        v["last_segment_duration"] = None
    return v


def verify(clip: str, root: str | None = None, jobs: int = 0, nice: int = 0, ffmpeg: str | None = None,
           cache: str | None = None, progress: bool = True, segments: int | None = None,
           rungs: list[int] | None = None) -> list[str]:
    """Regenerate ``clip`` from scratch (fresh cache) and compare with the committed table. [] = identical.

    ``segments=K`` (quick check) renders only the first K+1 segments of the clip (the generator graph
    still made for the full length, so its frames are a prefix of the full clip's) and compares the first K:
    the encoder's rate control and look-ahead only see past frames and a few frames ahead, so those
    segments must come out byte-identical. ``rungs`` restricts the ladder (each rung is encoded alone).
    """
    from qoelab.content import pipeline as pl

    cset = set_of(root) if root else ("hd" if clip in HD_CLIPS else "sd")
    committed = load_table(os.path.join(root or corpus_dir(cset), f"{clip}.json"))
    with tempfile.TemporaryDirectory(prefix="qoelab-verify-") as tmpc:
        p = corpus_params(jobs, nice, ffmpeg, cache or tmpc, cset)
        if rungs is not None:
            n = len(p.ladder)
            bad = next((r for r in rungs if not 0 <= r < n), None)
            if bad is not None or not rungs or len(set(rungs)) != len(rungs):
                raise InputError(None, "--rungs", f"distinct rung indices from 0 to {n - 1} ({clip} has {n} rungs)",
                                 str(bad)[:40] if bad is not None else ",".join(map(str, rungs))[:60])
            p.ladder = [p.ladder[r] for r in rungs]
        if segments is not None:
            n = len(committed["video"]["sizes"])
            if segments >= n:
                raise InputError(None, "--segments", f"fewer segments than the clip's {n}", str(segments)[:40])
            p.render_duration_s = p.duration_s
            p.duration_s = (segments + 1) * p.segment_s
        doc = pl.prepare(f"gen:{clip}", None, p, name=clip, progress=progress)
    a = _subset(committed["video"], segments, rungs)
    b = _subset(doc["video"], segments, None)
    diffs = compare(a, b)
    if committed.get("meta", {}).get("ffmpeg_version") != doc["meta"]["ffmpeg_version"]:
        diffs.append("ffmpeg version differs: " + doc["meta"]["ffmpeg_version"])
    return diffs


def copy_video(v: dict) -> dict:
    return copy.deepcopy(v)
