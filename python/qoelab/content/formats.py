"""Export to / import from Sabre movie JSON and Minerva's ``.dat``/``.vmaf`` layout.

Sabre movie JSON (UMass-LIDS/sabre ``--movie``)::

    {"segment_duration_ms": 4000, "bitrates_kbps": [160, ...], "segment_sizes_bits": [[s_q0, s_q1, ...], ...]}

Sabre has no quality tables, no resolutions and no separate last-segment duration; the export keeps the
nominal segment duration (integer ms) and converts bytes to bits. Importing gives a Video without quality.

Minerva (``vibhaa/minerva_quic``; the files are not public, the layout is inferred from its parsers):

* ``<video>.dat``: line 1 ``chunk_duration <seconds> bitrates <kbps, highest first>``; then one line per
  chunk with that chunk's sizes in **bytes**, highest bitrate first (Minerva reverses them on load).
* ``<video>.vmaf``: one line per chunk, the VMAF of each bitrate, highest bitrate first (the same order as
  ``.dat``). The order of ``.vmaf`` columns is not pinned by the parsers we read; we chose the ``.dat`` order.

Bitrate units in ``.dat`` line 1 are not visible in the parsers either; we write kbit/s (integers) and accept
both kbit/s and Mbit/s on import (values < 100 are taken as Mbit/s).
"""

from __future__ import annotations

import json
import math
import os

from qoelab.errors import InputError

NS = 1_000_000_000


def export_sabre(video: dict, path: str) -> None:
    doc = {
        "segment_duration_ms": int(round(video["segment_duration"] / 1e6)),
        "bitrates_kbps": [int(round(b / 1000)) for b in video["bitrates_bps"]],
        "segment_sizes_bits": [[int(s) * 8 for s in row] for row in video["sizes"]],
    }
    _atomic_write(path, json.dumps(doc, indent=1) + "\n")


def import_sabre(path: str, name: str | None = None) -> dict:
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(path, None, "a readable Sabre movie JSON", e.strerror) from None
    except json.JSONDecodeError as e:
        raise InputError(path, str(e.lineno), "valid JSON", e.msg) from None
    for k in ("segment_duration_ms", "bitrates_kbps", "segment_sizes_bits"):
        if k not in doc:
            raise InputError(path, k, "a Sabre movie field", "missing")
    br = doc["bitrates_kbps"]
    rows = doc["segment_sizes_bits"]
    for i, row in enumerate(rows):
        if len(row) != len(br):
            raise InputError(path, f"segment_sizes_bits[{i}]", f"{len(br)} sizes", str(len(row)))
    video = {
        "name": name or os.path.splitext(os.path.basename(path))[0],
        "segment_duration": int(round(float(doc["segment_duration_ms"]) * 1e6)),
        "last_segment_duration": None,
        "bitrates_bps": [int(round(float(b) * 1000)) for b in br],
        "sizes": [[int(math.ceil(float(s) / 8)) for s in row] for row in rows],
        "quality": {},
        "resolutions": None,
    }
    from qoelab.content.videoschema import validate

    validate(video, path)
    return video


def export_minerva(video: dict, path: str) -> list[str]:
    """Write ``path`` (.dat) and, if the video has a VMAF table, the ``.vmaf`` next to it. Returns the files."""
    base = path[:-4] if path.endswith(".dat") else path
    dur = video["segment_duration"] / NS
    kbps = [int(round(b / 1000)) for b in video["bitrates_bps"]][::-1]
    lines = [f"chunk_duration {dur:g} bitrates " + " ".join(map(str, kbps))]
    lines += [" ".join(str(int(s)) for s in row[::-1]) for row in video["sizes"]]
    _atomic_write(base + ".dat", "\n".join(lines) + "\n")
    files = [base + ".dat"]
    vm = (video.get("quality") or {}).get("vmaf")
    if vm is not None:
        _atomic_write(base + ".vmaf", "\n".join(" ".join(f"{x:.4f}" for x in row[::-1]) for row in vm) + "\n")
        files.append(base + ".vmaf")
    return files


def import_minerva(path: str, name: str | None = None) -> dict:
    base = path[:-4] if path.endswith(".dat") else path
    dat = base + ".dat"
    try:
        with open(dat) as f:
            lines = [ln.split() for ln in f if ln.strip()]
    except OSError as e:
        raise InputError(dat, None, "a readable Minerva .dat file", e.strerror) from None
    if not lines or len(lines[0]) < 4:
        raise InputError(dat, "1", "'<token> <chunk_duration_s> <token> <bitrates...>'", " ".join(lines[0]) if lines else "empty")
    try:
        dur = float(lines[0][1])
        rates = [float(x) for x in lines[0][3:]]
    except ValueError:
        raise InputError(dat, "1", "numbers for chunk duration and bitrates", " ".join(lines[0])) from None
    mult = 1e6 if max(rates) < 100 else 1e3  # Mbit/s or kbit/s
    bitrates = [int(round(r * mult)) for r in rates][::-1]
    sizes = []
    for i, ln in enumerate(lines[1:], start=2):
        if len(ln) != len(rates):
            raise InputError(dat, str(i), f"{len(rates)} chunk sizes", str(len(ln)))
        try:
            sizes.append([int(float(x)) for x in ln][::-1])
        except ValueError:
            raise InputError(dat, str(i), "chunk sizes in bytes", " ".join(ln)) from None
    quality = {}
    if os.path.isfile(base + ".vmaf"):
        with open(base + ".vmaf") as f:
            vl = [ln.split() for ln in f if ln.strip()]
        if len(vl) != len(sizes):
            raise InputError(base + ".vmaf", None, f"{len(sizes)} lines (one per chunk)", str(len(vl)))
        rows = []
        for i, ln in enumerate(vl, start=1):
            if len(ln) != len(rates):
                raise InputError(base + ".vmaf", str(i), f"{len(rates)} VMAF values", str(len(ln)))
            rows.append([float(x) for x in ln][::-1])
        quality["vmaf"] = rows
    video = {"name": name or os.path.basename(base), "segment_duration": int(round(dur * NS)),
             "last_segment_duration": None, "bitrates_bps": bitrates, "sizes": sizes, "quality": quality,
             "resolutions": None}
    from qoelab.content.videoschema import validate

    validate(video, dat)
    return video


def _atomic_write(path: str, text: str) -> None:
    from qoelab import outdir

    outdir.write_text(path, text)
