"""Export to / import from Sabre movie JSON and Minerva's ``.dat``/``.vmaf`` layout.

Sabre movie JSON (UMass-LIDS/sabre ``--movie``)::

    {"segment_duration_ms": 4000, "bitrates_kbps": [160, ...], "segment_sizes_bits": [[s_q0, s_q1, ...], ...]}

Sabre has no quality tables, no resolutions and no separate last-segment duration; the export keeps the
nominal segment duration in ms and the bitrates in kbit/s (integers when whole, else floats that read back exactly)
and converts bytes to bits. Importing gives a Video without quality.

Minerva (``vibhaa/minerva_quic``; the files are not public, the layout is inferred from its parsers):

* ``<video>.dat``: line 1 ``chunk_duration <seconds> bitrates <kbps, highest first>``; then one line per
  chunk with that chunk's sizes in **bytes**, highest bitrate first (Minerva reverses them on load).
* ``<video>.vmaf``: one line per chunk, the VMAF of each bitrate, highest bitrate first (the same order as
  ``.dat``). The order of ``.vmaf`` columns is not pinned by the parsers we read; we chose the ``.dat`` order.

Bitrate units in ``.dat`` line 1 are not visible in the parsers either; we write kbit/s and accept both
kbit/s and Mbit/s on import (values < 100 are taken as Mbit/s), so a ladder whose highest rung is below
100 kbit/s is written in Mbit/s.

Both directions check the table's rules (:func:`check_video`): the core's ``Video::validate`` plus the
bounds of :mod:`qoelab.video.model` (sizes 1 byte .. 10^12 bytes, bitrates 1 bit/s .. 10^12 bit/s,
durations 1 ns .. 1 hour, at most 100,000 segments) and VMAF finite in [0, 100]. Bad input is one
:class:`InputError`; nothing is written then.
"""

from __future__ import annotations

import contextlib
import json
import math
import os

from qoelab.errors import InputError, json_input, read_input
from qoelab.video.model import MAX_BITRATE_BPS, MAX_SEGMENT_BYTES, MAX_SEGMENT_NS, MAX_SEGMENTS, validate_video

NS = 1_000_000_000
NS_PER_MS = 1_000_000

#: Range of a VMAF score (libvmaf's scale).
VMAF_MIN, VMAF_MAX = 0.0, 100.0



def _p10(n: int) -> str:
    """``10^k`` for a power of ten, else ``n`` with thousands separators (for messages)."""
    k = len(str(n)) - 1
    return f"10^{k}" if n == 10**k else f"{n:,}"


_SIZE_RULE = f"an integer byte count >= 1 and <= {_p10(MAX_SEGMENT_BYTES)}"


def _show(x) -> str:
    s = x if isinstance(x, str) else json.dumps(x) if isinstance(x, (int, float, type(None))) else repr(x)
    return s if len(s) <= 40 else f"{s[:40]}... ({len(s)} characters)"


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _scaled(x, scale: float, lo: int, hi: int, rnd=round) -> int | None:
    """``rnd(x * scale)`` if ``x`` is a finite number (not a bool) whose scaled value is an integer in
    ``[lo, hi]``, else None. Bounds are checked before multiplying, so huge ints and floats never overflow."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if not (lo - 1) / scale <= x <= (hi + 1) / scale:
        return None
    v = int(rnd(x * scale))
    return v if lo <= v <= hi else None


def _decimal(n: int, den: int):
    """``n / den``: an int when whole, else the float (its shortest repr reads back to ``n`` after
    ``round(x * den)``: ``n`` stays far below 2^53)."""
    return n // den if n % den == 0 else n / den


# ---------------------------------------------------------------------------------------- the rules

def check_video(video, path: str | None) -> dict:
    """The rules a table must meet to be imported or exported, as :class:`InputError` naming ``path``
    and the key: ``validate_video`` (types, shape, bounds, finite quality, byte layout), sizes >= 1 byte
    and VMAF in [0, 100]."""
    if not isinstance(video, dict):
        raise InputError(path, None, "a video object", type(video).__name__)
    sizes = video.get("sizes")
    if isinstance(sizes, list):  # before validate_video, whose rule for sizes allows 0 bytes
        for i, row in enumerate(sizes):
            for j, x in enumerate(row if isinstance(row, list) else []):
                if not _is_int(x) or not 1 <= x <= MAX_SEGMENT_BYTES:
                    raise InputError(path, f"sizes[{i}][{j}]", _SIZE_RULE, _show(x))
    quality = video.get("quality")
    for m, t in (quality.items() if isinstance(quality, dict) else ()):
        for i, row in enumerate(t if isinstance(t, list) else []):
            for j, x in enumerate(row if isinstance(row, list) else []):
                num = isinstance(x, (int, float)) and not isinstance(x, bool)
                if m == "vmaf" and not (num and VMAF_MIN <= x <= VMAF_MAX):  # NaN fails the comparison
                    raise InputError(path, f"quality.vmaf[{i}][{j}]", "a VMAF score in [0, 100]", _show(x))
                if not (num and math.isfinite(x)):
                    raise InputError(path, f"quality.{m}[{i}][{j}]", "a finite number", _show(x))
    validate_video(video, path)
    return video


def load_for_export(table: str) -> dict:
    """The Video of ``table`` (a table path, a corpus clip name or any file ``corpus.load_video`` reads),
    checked by :func:`check_video`. A JSON file is first parsed by ``json_input``, so that syntax errors,
    nesting too deep and overlong integers are InputError."""
    from qoelab.content import corpus

    if os.path.isdir(table) or (os.path.isfile(table) and table.lower().endswith((".mpd", ".m3u8", ".m3u"))):
        # a manifest or a Pensieve size folder: read as a scenario's `video` is (the help says "any
        # loadable video"; they were parsed as JSON)
        from qoelab import video as vmod
        return check_video(vmod.load_video(table), table)
    if os.path.isfile(table) and not table.endswith(".dat"):
        try:
            with open(table, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            found = getattr(e, "strerror", None) or str(e)
            raise InputError(table, None, "a readable UTF-8 JSON file", found) from None
        doc = json_input(text, table)
        meta = doc.get("meta") if isinstance(doc, dict) and "video" in doc else None
        if meta is not None and not isinstance(meta, dict):  # corpus.with_layout reads meta.ladder
            raise InputError(table, "meta", "an object (or null)", type(meta).__name__)
    return check_video(corpus.load_video(table), table)


# -------------------------------------------------------------------------------------------- sabre

def export_sabre(video: dict, path: str, source: str | None = None) -> None:
    """Write ``video`` as a Sabre movie JSON at ``path``; ``source`` names the table in errors."""
    check_video(video, source or (video.get("name") if isinstance(video, dict) else None))
    doc = {
        "segment_duration_ms": _decimal(video["segment_duration"], NS_PER_MS),
        "bitrates_kbps": [_decimal(b, 1000) for b in video["bitrates_bps"]],
        "segment_sizes_bits": [[s * 8 for s in row] for row in video["sizes"]],
    }
    text = json.dumps(doc, indent=1)
    _atomic_write(path, text + "\n")


# Files `video import` reads: a Sabre movie or Minerva .dat of 100,000 segments x 20 rungs is ~20 MB;
# a probe's 120 MB movie ran out of memory while parsing.
MAX_IMPORT_BYTES = 64 * 2**20


def import_sabre(path: str, name: str | None = None) -> dict:
    try:
        text = read_input(path, "a Sabre movie JSON", MAX_IMPORT_BYTES).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, None, "a UTF-8 Sabre movie JSON", str(e)) from None
    doc = json_input(text, path)
    if not isinstance(doc, dict):
        raise InputError(path, None, "a JSON object {segment_duration_ms, bitrates_kbps, segment_sizes_bits}",
                         type(doc).__name__)
    for k in ("segment_duration_ms", "bitrates_kbps", "segment_sizes_bits"):
        if k not in doc:
            raise InputError(path, k, "a Sabre movie field", "missing")
    dur = _scaled(doc["segment_duration_ms"], NS_PER_MS, 1, MAX_SEGMENT_NS)
    if dur is None:
        raise InputError(path, "segment_duration_ms", f"a number of ms > 0 and <= {MAX_SEGMENT_NS // NS_PER_MS}",
                         _show(doc["segment_duration_ms"]))
    br = doc["bitrates_kbps"]
    if not isinstance(br, list) or not br:
        raise InputError(path, "bitrates_kbps", "a non-empty list of kbit/s", _show(br))
    bitrates = []
    for i, x in enumerate(br):
        b = _scaled(x, 1000, 1, MAX_BITRATE_BPS)
        if b is None:
            raise InputError(path, f"bitrates_kbps[{i}]",
                             f"a number of kbit/s >= 0.001 (1 bit/s) and <= {_p10(MAX_BITRATE_BPS // 1000)}", _show(x))
        if bitrates and b <= bitrates[-1]:
            raise InputError(path, f"bitrates_kbps[{i}]",
                             f"strictly ascending bitrates (> {_show(br[i - 1])}, compared in whole bit/s)", _show(x))
        bitrates.append(b)
    rows = doc["segment_sizes_bits"]
    if not isinstance(rows, list) or not rows:
        raise InputError(path, "segment_sizes_bits", "a non-empty list [segment][rung] of bits", _show(rows))
    if len(rows) > MAX_SEGMENTS:
        raise InputError(path, "segment_sizes_bits", f"at most {MAX_SEGMENTS:,} segments", str(len(rows)))
    sizes = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(br):
            found = str(len(row)) if isinstance(row, list) else _show(row)
            raise InputError(path, f"segment_sizes_bits[{i}]", f"{len(br)} sizes (one per bitrate)", found)
        out = []
        for j, x in enumerate(row):
            s = _scaled(x, 1 / 8, 1, MAX_SEGMENT_BYTES, math.ceil)  # bits -> the bytes that carry them
            if s is None:
                raise InputError(path, f"segment_sizes_bits[{i}][{j}]",
                                 f"a number of bits > 0 and <= 8*{_p10(MAX_SEGMENT_BYTES)}", _show(x))
            out.append(s)
        sizes.append(out)
    video = {
        "name": name or os.path.splitext(os.path.basename(path))[0],
        "segment_duration": dur,
        "last_segment_duration": None,
        "bitrates_bps": bitrates,
        "sizes": sizes,
        "quality": {},
        "resolutions": None,
    }
    return check_video(video, path)


# ------------------------------------------------------------------------------------------ minerva

def export_minerva(video: dict, path: str, source: str | None = None) -> list[str]:
    """Write ``path`` (.dat) and, if the video has a VMAF table, the ``.vmaf`` next to it (else an old
    ``.vmaf`` there is removed: it would be read with the new ``.dat``). Returns the files. ``source``
    names the table in errors. On failure neither file is left half-written, nor a mismatched pair."""
    from qoelab import outdir

    check_video(video, source or (video.get("name") if isinstance(video, dict) else None))
    base = path[:-4] if path.endswith(".dat") else path
    dat, vmaf = base + ".dat", base + ".vmaf"
    for p in (dat, vmaf):
        outdir.check_file(p, "--out")
    br = video["bitrates_bps"][::-1]
    den = 1000 if br[0] >= 100_000 else 1_000_000  # kbit/s; Mbit/s when the import would take them so
    lines = [f"chunk_duration {_decimal(video['segment_duration'], NS)} bitrates "
             + " ".join(str(_decimal(b, den)) for b in br)]
    lines += [" ".join(str(s) for s in row[::-1]) for row in video["sizes"]]
    vm = (video.get("quality") or {}).get("vmaf")
    vtext = None if vm is None else "\n".join(" ".join(f"{x:.4f}" for x in row[::-1]) for row in vm) + "\n"
    _atomic_write(dat, "\n".join(lines) + "\n")
    try:
        if vtext is not None:
            _atomic_write(vmaf, vtext)
        elif os.path.lexists(vmaf):
            try:
                os.unlink(vmaf)
            except OSError as e:
                raise InputError(vmaf, None, "a removable old .vmaf (the table has no VMAF)", e.strerror) from None
    except BaseException:  # no .dat without its .vmaf, nor with an old one
        with contextlib.suppress(OSError):
            os.unlink(dat)
        raise
    return [dat] if vtext is None else [dat, vmaf]


def _read_lines(path: str, what: str) -> list[tuple[int, list[str]]]:
    """(line number, tokens) of the non-blank lines of ``path``."""
    try:
        text = read_input(path, what, MAX_IMPORT_BYTES).decode("utf-8")
        return [(i, ln.split()) for i, ln in enumerate(text.split("\n"), start=1) if ln.strip()]
    except UnicodeDecodeError as e:
        raise InputError(path, None, f"a UTF-8 text {what}", str(e)) from None


def _number(tok: str) -> float | None:
    if not tok.isascii():   # float() also reads other scripts' digits ("１" is 1.0)
        return None
    try:
        return float(tok)
    except ValueError:
        return None


def import_minerva(path: str, name: str | None = None) -> dict:
    base = path[:-4] if path.endswith(".dat") else path
    dat = base + ".dat"
    lines = _read_lines(dat, "Minerva .dat file")
    if not lines or len(lines[0][1]) < 4:
        raise InputError(dat, str(lines[0][0]) if lines else "1",
                         "'chunk_duration <seconds> bitrates <kbit/s, highest first...>'",
                         _show(" ".join(lines[0][1])) if lines else "an empty file")
    head_no, head = lines[0]
    dur = _scaled(_number(head[1]), NS, 1, MAX_SEGMENT_NS)
    if dur is None:
        raise InputError(dat, str(head_no), f"a chunk duration in seconds > 0 and <= {MAX_SEGMENT_NS // NS}",
                         _show(head[1]))
    rates = [_number(x) for x in head[3:]]
    for x, tok in zip(rates, head[3:]):
        if x is None or not math.isfinite(x) or x <= 0:
            raise InputError(dat, str(head_no), "bitrates: numbers > 0 (kbit/s, or Mbit/s if all < 100)", _show(tok))
    mult = 1e6 if max(rates) < 100 else 1e3  # Mbit/s or kbit/s
    bitrates = []
    for x, tok in zip(rates, head[3:]):
        b = _scaled(x, mult, 1, MAX_BITRATE_BPS)
        if b is None:
            raise InputError(dat, str(head_no), f"bitrates of at least 1 bit/s and at most {_p10(MAX_BITRATE_BPS)} bit/s",
                             _show(tok))
        if bitrates and b >= bitrates[-1]:
            raise InputError(dat, str(head_no), "bitrates highest first (strictly descending in whole bit/s)",
                             _show(" ".join(head[3:])))
        bitrates.append(b)
    bitrates.reverse()
    r = len(bitrates)
    if len(lines) - 1 > MAX_SEGMENTS:
        raise InputError(dat, None, f"at most {MAX_SEGMENTS:,} chunk lines", str(len(lines) - 1))
    sizes = []
    for no, toks in lines[1:]:
        if len(toks) != r:
            raise InputError(dat, str(no), f"{r} chunk sizes", str(len(toks)))
        row = []
        for k, tok in enumerate(toks, start=1):
            x = _number(tok)
            s = _scaled(x, 1, 1, MAX_SEGMENT_BYTES) if x is not None and x.is_integer() else None
            if s is None:
                raise InputError(dat, str(no), f"chunk sizes in bytes: integers >= 1 and <= {_p10(MAX_SEGMENT_BYTES)}",
                                 f"{_show(tok)} (column {k})")
            row.append(s)
        sizes.append(row[::-1])
    if not sizes:
        raise InputError(dat, None, "at least one chunk line after line 1", "none")
    quality = {}
    vpath = base + ".vmaf"
    if os.path.isfile(vpath):
        vl = _read_lines(vpath, "Minerva .vmaf file")
        if len(vl) != len(sizes):
            lines_s = f"{len(sizes)} non-blank line{'s' * (len(sizes) != 1)}"
            raise InputError(vpath, None, f"{lines_s} (one per chunk of {os.path.basename(dat)})", str(len(vl)))
        rows = []
        for no, toks in vl:
            if len(toks) != r:
                raise InputError(vpath, str(no), f"{r} VMAF values", str(len(toks)))
            row = []
            for k, tok in enumerate(toks, start=1):
                x = _number(tok)
                if x is None or not VMAF_MIN <= x <= VMAF_MAX:  # NaN fails the comparison too
                    raise InputError(vpath, str(no), "VMAF scores: numbers in [0, 100]", f"{_show(tok)} (column {k})")
                row.append(x)
            rows.append(row[::-1])
        quality["vmaf"] = rows
    video = {"name": name or os.path.basename(base), "segment_duration": dur,
             "last_segment_duration": None, "bitrates_bps": bitrates, "sizes": sizes, "quality": quality,
             "resolutions": None}
    return check_video(video, dat)


def _atomic_write(path: str, text: str) -> None:
    """Write ``path`` atomically; a failure (a read-only directory, a full disk) is an InputError."""
    from qoelab import outdir

    try:
        outdir.write_text(path, text)
    except OSError as e:
        raise InputError(path, None, "a writable file", e.strerror or str(e)) from None
