"""Video loaders -> the normalized ``Video`` dict of ``qoelab-core`` (crates/qoelab-core/src/video).

The dict has exactly the keys the core accepts (it denies unknown fields)::

    {"name": str, "segment_duration": ns, "last_segment_duration": ns | None,
     "bitrates_bps": [strictly ascending ints], "sizes": [[bytes per rung] per segment],
     "quality": {metric: [[float per rung] per segment]}, "resolutions": [[w, h] per rung] | None,
     "byte_offsets": [[offset of the segment's first byte in its rung's file per rung] per segment] | None}

Sabre movies and Pensieve size folders carry no byte layout (``byte_offsets`` None): a data plane
that sends byte ranges refuses such videos (docs/formats.md, "Byte layout").

All errors are :class:`qoelab.errors.InputError` naming the file and the line / key / XML path.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from qoelab.errors import InputError, int_input, json_input, read_input

__all__ = [
    "PENSIEVE_BITRATES_KBPS",
    "make_video",
    "validate_video",
    "layout_from_sizes",
    "load_video",
    "load_sabre_movie",
    "load_pensieve_sizes",
    "save_sabre_movie",
]

from qoelab.video.model import (  # noqa: F401  (re-exported)
    MAX_BITRATE_BPS,
    MAX_SEGMENT_BYTES,
    MAX_SEGMENT_NS,
    MAX_SEGMENTS,
    NS_PER_MS,
    NS_PER_S,
    PENSIEVE_BITRATES_KBPS,
    _is_int,
    _is_num,
    layout_from_sizes,
    make_video,
    validate_video,
)
from qoelab.video.mpd import MAX_U32, load_mpd
from qoelab.video.hls import load_hls


def _json_load(path: str) -> tuple[Any, str]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError(path, None, "an existing file", "no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, None, "a readable UTF-8 file", str(e)) from None
    try:
        return json.loads(text, parse_constant=_no_constant), text
    except json.JSONDecodeError as e:
        raise InputError(path, f"{e.lineno}:{e.colno}", "valid JSON", e.msg) from None
    except ValueError as e:  # NaN / Infinity, or an integer of more digits than Python converts
        if "(not a JSON number)" not in str(e):
            json_input(text, path)  # raises its InputError (the number of digits)
        m = re.search(r"[:\[,]\s*-?(Infinity|NaN)\b", text)
        line = str(text.count("\n", 0, m.start()) + 1) if m else None
        raise InputError(path, line, "valid JSON numbers", str(e)) from None
    except RecursionError:
        raise InputError(path, None, "valid JSON", "arrays or objects nested too deeply") from None


def _no_constant(name: str):
    raise ValueError(f"{name} (not a JSON number)")


def _key_line(text: str, key: str) -> str:
    m = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return str(text.count("\n", 0, m.start()) + 1) if m else ""


def _refuse_content_table(doc: Any, path: str, text: str) -> None:
    """A ``qoelab-content/1`` table (what ``qoelab video prepare`` and ``qoelab video import`` write)
    holds a Video JSON under ``video`` plus the pipeline's ``meta``; it is not a video file itself."""
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if isinstance(fmt, str) and fmt.startswith("qoelab-content/") and "video" in doc:
        ln = _key_line(text, "format")
        raise InputError(path, f"{ln}:format" if ln else "format", "a Video JSON or a Sabre movie JSON",
                         f"a {fmt[:40]} table (the content pipeline's format: convert it with "
                         f"'qoelab video export {path} --format sabre --out movie.json', or use its \"video\" "
                         "object as a Video JSON; a corpus clip is video = \"corpus:<clip>\")")


def load_sabre_movie(path: str, name: str | None = None) -> dict:
    """Sabre movie JSON: ``{segment_duration_ms, bitrates_kbps, segment_sizes_bits[segment][rung]}``.

    Sizes in bits become bytes rounded **up** (``ceil(bits / 8)``: the bytes needed to carry them;
    Sabre's own files hold multiples of 8, so nothing changes for them). kbit/s = 1000 bit/s.
    Other top-level keys (e.g. ``source``) are ignored.
    """
    path = str(path)
    doc, text = _json_load(path)
    if not isinstance(doc, dict):
        raise InputError(path, "1", "a JSON object {segment_duration_ms, bitrates_kbps, segment_sizes_bits}",
                         type(doc).__name__)
    if "segment_sizes_bits" not in doc:
        _refuse_content_table(doc, path, text)

    def where(key: str, sub: str = "") -> str:
        ln = _key_line(text, key)
        return f"{ln}:{key}{sub}" if ln else f"{key}{sub}"

    for key in ("segment_duration_ms", "bitrates_kbps", "segment_sizes_bits"):
        if key not in doc:
            raise InputError(path, key, f"key {key}", "nothing")
    d = doc["segment_duration_ms"]
    if not _is_num(d) or d <= 0 or d * NS_PER_MS > MAX_SEGMENT_NS:
        raise InputError(path, where("segment_duration_ms"), f"a number of ms > 0 and <= {MAX_SEGMENT_NS // NS_PER_MS}",
                         json.dumps(d))
    br = doc["bitrates_kbps"]
    if not isinstance(br, list) or not br:
        raise InputError(path, where("bitrates_kbps"), "a non-empty list of kbit/s", json.dumps(br)[:40])
    for i, x in enumerate(br):
        if not _is_num(x) or x * 1000 > MAX_BITRATE_BPS or round(x * 1000) < 1:   # (whole bit/s >= 1)
            raise InputError(path, where("bitrates_kbps", f"[{i}]"),
                             f"a number of kbit/s >= 0.001 and <= {MAX_BITRATE_BPS // 1000}", json.dumps(x))
        if i and x <= br[i - 1]:
            raise InputError(path, where("bitrates_kbps", f"[{i}]"),
                             f"strictly ascending bitrates (> {br[i - 1]})", json.dumps(x))
    ss = doc["segment_sizes_bits"]
    if not isinstance(ss, list) or not ss:
        raise InputError(path, where("segment_sizes_bits"), "a non-empty list [segment][rung] of bits",
                         json.dumps(ss)[:40])
    sizes = []
    for i, row in enumerate(ss):
        if not isinstance(row, list) or len(row) != len(br):
            n = len(row) if isinstance(row, list) else type(row).__name__
            raise InputError(path, where("segment_sizes_bits", f"[{i}]"),
                             f"{len(br)} sizes (one per bitrate)", str(n))
        out = []
        for j, x in enumerate(row):
            if not _is_num(x) or x < 0 or x > 8 * MAX_SEGMENT_BYTES:
                raise InputError(path, where("segment_sizes_bits", f"[{i}][{j}]"),
                                 f"a number of bits >= 0 and <= {8 * MAX_SEGMENT_BYTES}", json.dumps(x))
            out.append(math.ceil(x / 8))
        sizes.append(out)
    video = make_video(name or _stem(path), round(d * NS_PER_MS), [round(x * 1000) for x in br], sizes)
    return validate_video(video, path)


def save_sabre_movie(video: dict, path: str) -> None:
    """Write a Video as Sabre movie JSON (sizes x 8 bits; ms and kbit/s as exact as possible)."""
    def c(x):
        return int(x) if float(x).is_integer() else x
    doc = {"segment_duration_ms": c(video["segment_duration"] / NS_PER_MS),
           "bitrates_kbps": [c(b / 1000) for b in video["bitrates_bps"]],
           "segment_sizes_bits": [[8 * s for s in row] for row in video["sizes"]]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
        f.write("\n")


# -------------------------------------------------------------------------------- pensieve folder
def load_pensieve_sizes(folder: str, bitrates_kbps=PENSIEVE_BITRATES_KBPS, segment_duration_s: float = 4.0,
                        last_segment_duration_s: float | None = None, name: str | None = None) -> dict:
    """A Pensieve ``video_size_0`` .. ``video_size_{N-1}`` folder (one byte count per line each).

    File ``video_size_i`` is rung ``i`` (0 = lowest), with bitrate ``bitrates_kbps[i]`` (the files
    carry no bitrates; default = Pensieve's 300..4300 kbit/s). All files must have the same number
    of lines. Segment duration defaults to Pensieve's 4 s.
    """
    folder = str(folder)
    if not os.path.isdir(folder):
        raise InputError(folder, None, "a folder with video_size_0 .. video_size_N files", "no such folder")
    files = {}
    for fn in os.listdir(folder):
        m = re.fullmatch(r"video_size_([0-9]+)", fn)
        if m:
            files[int(m.group(1))] = os.path.join(folder, fn)
    if not files:
        raise InputError(folder, None, "files video_size_0 .. video_size_N", "none")
    n = len(files)
    if sorted(files) != list(range(n)):
        missing = min(set(range(max(files) + 1)) - set(files))
        raise InputError(os.path.join(folder, f"video_size_{missing}"), None, "a file (rungs are numbered 0..N-1)",
                         "no such file")
    if len(bitrates_kbps) != n:
        raise InputError(folder, None, f"{len(bitrates_kbps)} video_size files (one per bitrate)", str(n))
    cols = []
    for i in range(n):
        fp = files[i]
        # a regular file of at most 16 MiB (100,000 segments of 20-digit counts: a FIFO blocked, /dev/zero
        # filled memory, a folder was an internal error)
        text = read_input(fp, "a Pensieve video_size file", 16 * 2**20).decode("utf-8", "replace")
        if text.endswith("\n"):
            text = text[:-1]
        lines = [ln.rstrip("\r") for ln in text.split("\n")] if text else []
        if not lines:
            raise InputError(fp, None, "one byte count per line", "an empty file")
        col = []
        for k, ln in enumerate(lines, 1):
            if not re.fullmatch(r"\s*[0-9]+\s*", ln):
                raise InputError(fp, str(k), "a non-negative integer byte count", repr(ln) if ln else "an empty line")
            col.append(int_input(ln.strip(), fp, str(k), "a non-negative integer byte count"))
        if cols and len(col) != len(cols[0]):
            raise InputError(fp, str(len(col)), f"{len(cols[0])} lines like video_size_0", f"{len(col)} lines")
        cols.append(col)
    sizes = [[cols[r][s] for r in range(n)] for s in range(len(cols[0]))]
    last = None if last_segment_duration_s is None else round(last_segment_duration_s * NS_PER_S)
    video = make_video(name or os.path.basename(os.path.normpath(folder)), round(segment_duration_s * NS_PER_S),
                       [round(b * 1000) for b in bitrates_kbps], sizes, last_segment_duration=last)
    return validate_video(video, folder)


# ------------------------------------------------------------------------------------- dispatcher
def _stem(path: str) -> str:
    base = os.path.basename(os.path.normpath(path))
    return base.rsplit(".", 1)[0] if "." in base else base


def load_video(path: str, format: str | None = None, **options) -> dict:
    """Load a video description. ``format``: sabre | pensieve | mpd | hls | video (normalized JSON);
    None = by extension/content: a folder -> pensieve; ``.mpd`` -> mpd; ``.m3u8``/``.m3u`` -> hls;
    ``.json`` with ``segment_sizes_bits`` -> sabre, with ``bitrates_bps`` -> normalized Video JSON.
    ``options`` go to the format's loader.
    """
    path = str(path)
    fmt = format
    if fmt is None:
        low = path.lower()
        if os.path.isdir(path):
            fmt = "pensieve"
        elif low.endswith(".mpd"):
            fmt = "mpd"
        elif low.endswith((".m3u8", ".m3u")):
            fmt = "hls"
        else:
            doc, _ = _json_load(path)
            fmt = "video" if isinstance(doc, dict) and "bitrates_bps" in doc else "sabre"
    if fmt == "sabre":
        return load_sabre_movie(path, **options)
    if fmt == "pensieve":
        return load_pensieve_sizes(path, **options)
    if fmt == "mpd":
        return load_mpd(path, **options)
    if fmt == "hls":
        return load_hls(path, **options)
    if fmt == "video":
        doc, text = _json_load(path)
        if not isinstance(doc, dict):
            raise InputError(path, "1", "a Video JSON object", type(doc).__name__)
        if "bitrates_bps" not in doc:
            _refuse_content_table(doc, path, text)
        res = doc.get("resolutions")
        for i, wh in enumerate(res if isinstance(res, list) else []):
            # the core's (u32, u32): a larger number would fail there, naming the scenario
            if not isinstance(wh, list) or len(wh) != 2 or not all(_is_int(x) and 0 < x <= MAX_U32 for x in wh):
                raise InputError(path, f"resolutions[{i}]", f"[width, height], integers in [1, {MAX_U32}]",
                                 json.dumps(wh)[:40])
        doc.setdefault("quality", {})
        doc.setdefault("last_segment_duration", None)
        doc.setdefault("resolutions", None)
        doc.setdefault("byte_offsets", None)
        if "name" not in doc or not isinstance(doc["name"], str):
            raise InputError(path, "name", "a string", repr(doc.get("name")))
        return validate_video(doc, path)
    raise InputError(path, None, "video format sabre|pensieve|mpd|hls|video", repr(fmt))
