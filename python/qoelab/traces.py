"""Network traces: loaders, the normalized forms the simulator uses, converters.

Two normalized forms (plain dicts, JSON-serializable, all integers):

* packet opportunities (Mahimahi)::

    {"kind": "opportunities", "period_ns": P, "times_ns": [t0 <= t1 <= ...],
     "bytes_per_opportunity": 1504}

  Each entry of ``times_ns`` is one delivery opportunity of ``bytes_per_opportunity`` bytes at that
  time (repeated times = several opportunities). The schedule repeats every ``period_ns``: the
  opportunity at ``t`` of cycle ``k`` happens at ``k * period_ns + t``. ``0 <= t <= period_ns``.

* rate schedule (Sabre JSON, Pensieve cooked, VOXEL ``.sum``)::

    {"kind": "rates", "segments": [[duration_ns, rate_bps, latency_ns], ...], "loop": True}

  The link carries ``rate_bps`` for ``duration_ns``, then the next segment; after the last one it
  starts over at the first. ``latency_ns`` is the one-way latency Sabre adds per request (0 where the
  format has none).

Every problem with the input raises :class:`qoelab.errors.InputError` naming file and line.
See docs/formats.md for the exact semantics of each format.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from qoelab.errors import InputError, json_input

__all__ = [
    "MAHIMAHI_BYTES_PER_OPPORTUNITY",
    "FORMATS",
    "load_trace",
    "detect_format",
    "load_mahimahi",
    "load_sabre_network",
    "load_pensieve",
    "load_voxel",
    "save_trace",
    "validate_trace",
    "mean_rate_bps",
    "duration_ns",
    "scale",
    "rates_to_opportunities",
    "opportunities_to_rates",
    "data_dir",
]

#: Bytes per Mahimahi delivery opportunity (mahimahi's PACKET_SIZE, the maximum TUN payload; its
#: README says "1500-byte packet").
MAHIMAHI_BYTES_PER_OPPORTUNITY = 1504

FORMATS = ("mahimahi", "sabre", "pensieve", "voxel")

_NS_PER_MS = 1_000_000
_NS_PER_S = 1_000_000_000
_INT_RE = re.compile(r"[0-9]+\Z")
# Limits of trace values (the core keeps them in unsigned 64-bit integers; beyond these a value is
# a typo): times/durations (ns), rates (bit/s), and one loop of a trace.
MAX_TIME_NS = 10**17          # ~3 years
MAX_RATE_BPS = 10**14         # 100 Tbit/s
MIN_SEGMENT_NS = 1_000        # a rate segment lasts >= 1 us (the link walks segments to time a packet)
MAX_LINES = 10**7             # 20x the longest trace in ../shared/data (505,078 lines); ~1.1 GB to load
# Rate traces (Pensieve, VOXEL lines, Sabre entries) become one rate segment each, carried through the
# normalized configuration: ~1.5 KB a segment at the peak of a trace-mode run (10^7 Pensieve lines ran
# out of memory at 4 GB; 2 x 10^6 took 3.2 GB). 10^6 segments is 11 days of 1 s samples.
MAX_RATE_SEGMENTS = 10**6
_NUM_RE = re.compile(r"[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")


def data_dir() -> str:
    """The reference-data folder: env ``QOELAB_DATA``, else ``../shared/data`` relative to the repo root.

    (The folder may not exist; callers check.)"""
    env = os.environ.get("QOELAB_DATA")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.normpath(os.path.join(root, "..", "shared", "data"))


# --------------------------------------------------------------------------------------------- io
def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise InputError(str(path), None, "an existing trace file", "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), None, "a trace file", "a directory") from None
    except OSError as e:
        raise InputError(str(path), None, "a readable trace file", e.strerror or str(e)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(str(path), str(line), "UTF-8 text", "undecodable bytes") from None


def _lines(text: str, path: str | None = None, limit: int | None = None) -> list[str]:
    """Split into lines; a final newline does not start a new line; CRLF is accepted. More than
    ``limit`` lines is an error (when ``path`` is given): a Mahimahi line costs the loader about
    100 bytes of memory, the engine 8-24 (rate traces: :data:`MAX_RATE_SEGMENTS`)."""
    if text.endswith("\n"):
        text = text[:-1]
    if text == "":
        return []
    if path is not None:
        limit = MAX_LINES if limit is None else limit
        n = text.count("\n") + 1
        if n > limit:
            raise InputError(path, None, f"a trace of at most {limit:,} lines", f"{n:,} lines")
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def _show(s: str, limit: int = 40) -> str:
    if s == "":
        return "an empty line"
    if len(s) > limit:
        s = s[:limit] + "..."
    return repr(s)


# --------------------------------------------------------------------------------------- mahimahi
def load_mahimahi(path: str, bytes_per_opportunity: int = MAHIMAHI_BYTES_PER_OPPORTUNITY) -> dict:
    """Mahimahi packet-opportunity trace: one integer millisecond timestamp per line."""
    path = str(path)
    lines = _lines(_read_text(path), path)
    if not lines:
        raise InputError(path, None, "at least one millisecond timestamp", "an empty file")
    times: list[int] = []
    prev = -1
    same = 0   # opportunities in the millisecond `prev`
    per_ms = MAX_RATE_BPS // (1000 * 8 * max(int(bytes_per_opportunity), 1))
    for i, ln in enumerate(lines, 1):
        if not _INT_RE.match(ln):
            what = "a non-negative integer millisecond timestamp"
            raise InputError(path, str(i), what, _show(ln))
        ms = int(ln) if len(ln) <= 20 else MAX_TIME_NS   # (more digits than int() converts: too large anyway)
        if ms * _NS_PER_MS > MAX_TIME_NS:
            raise InputError(path, str(i), f"a timestamp of at most {MAX_TIME_NS // _NS_PER_MS} ms", _show(ln))
        if ms < prev:
            raise InputError(path, str(i), f"non-decreasing timestamps (>= {prev})", str(ms))
        same = same + 1 if ms == prev else 1
        if same > per_ms:
            raise InputError(path, str(i), f"at most {per_ms:,} opportunities in one millisecond "
                             f"({MAX_RATE_BPS / 10**12:g} Tbit/s)", f"more at {ms} ms")
        prev = ms
        times.append(ms * _NS_PER_MS)
    if prev <= 0:
        raise InputError(path, str(len(lines)), "a last timestamp > 0 ms (the trace period)", str(prev))
    return {
        "kind": "opportunities",
        "period_ns": prev * _NS_PER_MS,
        "times_ns": times,
        "bytes_per_opportunity": int(bytes_per_opportunity),
    }


# ------------------------------------------------------------------------------------------ sabre
def _json_line_of(text: str, index: int) -> int:
    """Line of the ``index``-th (0-based) top-level object of a JSON list (best effort)."""
    depth = 0
    count = -1
    line = 1
    in_str = False
    esc = False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth == 2 and ch == "{":
                count += 1
                if count == index:
                    return line
        elif ch in "]}":
            depth -= 1
    return line


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_sabre_network(path: str) -> dict:
    """Sabre network JSON: ``[{"duration_ms", "bandwidth_kbps", "latency_ms"}, ...]``."""
    path = str(path)
    text = _read_text(path)
    doc = json_input(text, path)
    if not isinstance(doc, list) or not doc:
        raise InputError(path, "1", "a non-empty JSON list of {duration_ms, bandwidth_kbps, latency_ms}",
                         type(doc).__name__ if not isinstance(doc, list) else "an empty list")
    if len(doc) > MAX_RATE_SEGMENTS:
        raise InputError(path, None, f"a trace of at most {MAX_RATE_SEGMENTS:,} entries", f"{len(doc):,} entries")
    segs = []
    for i, item in enumerate(doc):
        where = lambda key=None: f"{_json_line_of(text, i)}:[{i}]" + (f".{key}" if key else "")  # noqa: E731
        if not isinstance(item, dict):
            raise InputError(path, where(), "an object {duration_ms, bandwidth_kbps, latency_ms}",
                             type(item).__name__)
        for key in ("duration_ms", "bandwidth_kbps", "latency_ms"):
            if key not in item:
                raise InputError(path, where(key), f"key {key}", "nothing")
            v = item[key]
            if not _num(v):
                raise InputError(path, where(key), "a number", json.dumps(v))
            if v < 0:
                raise InputError(path, where(key), "a number >= 0", json.dumps(v))
        unknown = sorted(set(item) - {"duration_ms", "bandwidth_kbps", "latency_ms"})
        if unknown:
            raise InputError(path, where(unknown[0]), "only duration_ms, bandwidth_kbps, latency_ms",
                             f"key {unknown[0]}")
        for key, scale, limit in (("duration_ms", _NS_PER_MS, MAX_TIME_NS), ("latency_ms", _NS_PER_MS, MAX_TIME_NS),
                                  ("bandwidth_kbps", 1000, MAX_RATE_BPS)):
            if item[key] * scale > limit:
                raise InputError(path, where(key), f"a number <= {limit // scale}", json.dumps(item[key]))
        dur = round(item["duration_ms"] * _NS_PER_MS)
        if dur < MIN_SEGMENT_NS:
            raise InputError(path, where("duration_ms"), f"a duration >= {MIN_SEGMENT_NS / _NS_PER_MS:g} ms (1 us)",
                             json.dumps(item["duration_ms"]))
        segs.append([dur, round(item["bandwidth_kbps"] * 1000), round(item["latency_ms"] * _NS_PER_MS)])
    trace = {"kind": "rates", "segments": segs, "loop": True}
    _check_nonzero(path, trace)
    return trace


def _check_nonzero(path: str, trace: dict) -> None:
    if not any(s[1] > 0 for s in trace["segments"]):
        raise InputError(path, None, "some sample with a rate > 0", "only zero rates")


# --------------------------------------------------------------------------------------- pensieve
def load_pensieve(path: str, align: str = "next") -> dict:
    """Pensieve "cooked" trace: per line ``time_s throughput_Mbit/s`` (whitespace separated).

    ``align="next"`` (default): sample i holds from its time to the next sample's time (the last
    sample only ends the trace). ``align="previous"``: sample i holds from the previous sample's time
    to its own (what Pensieve's simulator does: it never uses the first sample's throughput).
    """
    path = str(path)
    if align not in ("next", "previous"):
        raise InputError(path, None, "align 'next' or 'previous'", repr(align))
    lines = _lines(_read_text(path), path, MAX_RATE_SEGMENTS)
    times: list[int] = []
    rates: list[int] = []
    lineno: list[int] = []
    for i, ln in enumerate(lines, 1):
        if ln.strip() == "":
            raise InputError(path, str(i), "'time_s throughput_Mbps'", "an empty line")
        parts = ln.split()
        if len(parts) != 2:
            raise InputError(path, str(i), "2 columns 'time_s throughput_Mbps'",
                             f"{len(parts)} columns {_show(ln)}")
        for col, name in zip(parts, ("time_s", "throughput_Mbps")):
            if not _NUM_RE.match(col):
                raise InputError(path, str(i), f"a non-negative number for {name}", _show(col))
        if float(parts[0]) * _NS_PER_S > MAX_TIME_NS or float(parts[1]) * 1e6 > MAX_RATE_BPS:
            raise InputError(path, str(i), f"time_s <= {MAX_TIME_NS // _NS_PER_S} and throughput_Mbps <= "
                             f"{MAX_RATE_BPS // 10**6}", _show(ln))
        t = round(float(parts[0]) * _NS_PER_S)
        r = round(float(parts[1]) * 1e6)
        if times and t < times[-1] + MIN_SEGMENT_NS:
            raise InputError(path, str(i), f"increasing times, at least 1 us apart (>= {times[-1] / _NS_PER_S:.9g} s "
                             "+ 1 us)", parts[0])
        times.append(t)
        rates.append(r)
        lineno.append(i)
    if len(times) < 2:
        raise InputError(path, str(len(lines)) if lines else None, "at least 2 samples (durations are the gaps)",
                         f"{len(times)} sample(s)")
    if align == "next":
        segs = [[times[k + 1] - times[k], rates[k], 0] for k in range(len(times) - 1)]
    else:
        segs = [[times[k] - times[k - 1], rates[k], 0] for k in range(1, len(times))]
    trace = {"kind": "rates", "segments": segs, "loop": True}
    _check_nonzero(path, trace)
    return trace


# ------------------------------------------------------------------------------------------ voxel
def load_voxel(path: str) -> dict:
    """VOXEL ``.sum`` trace: per line ``second bytes`` -- bytes delivered in that one second.

    Seconds are integers that increase by exactly 1 from line to line (the replay sets a new rate
    every second). Each line becomes a 1 s segment at ``bytes * 8`` bit/s.
    """
    path = str(path)
    lines = _lines(_read_text(path), path, MAX_RATE_SEGMENTS)
    if not lines:
        raise InputError(path, None, "lines 'second bytes'", "an empty file")
    segs = []
    prev = None
    for i, ln in enumerate(lines, 1):
        if ln.strip() == "":
            raise InputError(path, str(i), "'second bytes'", "an empty line")
        parts = ln.split()
        if len(parts) != 2:
            raise InputError(path, str(i), "2 columns 'second bytes'", f"{len(parts)} columns {_show(ln)}")
        for col, name in zip(parts, ("second", "bytes")):
            if not _INT_RE.match(col):
                raise InputError(path, str(i), f"a non-negative integer for {name}", _show(col))
        sec, nbytes = (int(c) if len(c) <= 20 else MAX_TIME_NS for c in parts)   # (too large either way)
        if nbytes * 8 > MAX_RATE_BPS or sec * _NS_PER_S > MAX_TIME_NS:
            raise InputError(path, str(i), f"second <= {MAX_TIME_NS // _NS_PER_S} and bytes <= {MAX_RATE_BPS // 8}",
                             _show(ln))
        if prev is not None and sec != prev + 1:
            raise InputError(path, str(i), f"second {prev + 1} (one line per second)", str(sec))
        prev = sec
        segs.append([_NS_PER_S, nbytes * 8, 0])
    trace = {"kind": "rates", "segments": segs, "loop": True}
    _check_nonzero(path, trace)
    return trace


# ------------------------------------------------------------------------------------- dispatcher
def detect_format(path: str) -> str:
    """Guess the format: by extension first, then by content.

    ``.json`` -> sabre; ``.sum`` -> voxel; ``.down``/``.up``/``.mahi`` -> mahimahi. Otherwise the first
    non-empty line decides: ``[`` -> sabre; one integer -> mahimahi; two integers -> voxel; two numbers
    (one with a decimal point or exponent) -> pensieve.
    """
    path = str(path)
    name = os.path.basename(path).lower()
    if name.endswith(".json"):
        return "sabre"
    if name.endswith(".sum"):
        return "voxel"
    if name.endswith((".down", ".up", ".mahi")):
        return "mahimahi"
    text = _read_text(path)
    first = ""
    lineno = 0
    for lineno, ln in enumerate(_lines(text), 1):
        if ln.strip():
            first = ln.strip()
            break
    if not first:
        raise InputError(path, None, "a trace (mahimahi, sabre, pensieve or voxel)", "an empty file")
    if first.startswith("[") or first.startswith("{"):
        return "sabre"
    parts = first.split()
    if len(parts) == 1 and _INT_RE.match(parts[0]):
        return "mahimahi"
    if len(parts) == 2 and all(_INT_RE.match(p) for p in parts):
        return "voxel"
    if len(parts) == 2 and all(_NUM_RE.match(p) for p in parts):
        return "pensieve"
    raise InputError(path, str(lineno), "a trace line of mahimahi ('ms'), voxel ('second bytes'), "
                     "pensieve ('time_s Mbps') or sabre JSON", _show(first))


def load_trace(path: str, format: str | None = None, *, bytes_per_opportunity: int = MAHIMAHI_BYTES_PER_OPPORTUNITY,
               pensieve_align: str = "next") -> dict:
    """Load a network trace into its normalized form (see the module docstring).

    ``format``: one of :data:`FORMATS`, or None to detect it (:func:`detect_format`).
    """
    path = str(path)
    fmt = detect_format(path) if format is None else format
    if fmt == "mahimahi":
        trace = load_mahimahi(path, bytes_per_opportunity)
    elif fmt == "sabre":
        trace = load_sabre_network(path)
    elif fmt == "pensieve":
        trace = load_pensieve(path, align=pensieve_align)
    elif fmt == "voxel":
        trace = load_voxel(path)
    else:
        raise InputError(path, None, "trace format " + "|".join(FORMATS), repr(fmt))
    if duration_ns(trace) > MAX_TIME_NS:
        raise InputError(path, None, f"a trace at most {MAX_TIME_NS // _NS_PER_S} s long",
                         f"{duration_ns(trace) // _NS_PER_S} s")
    return trace


# ------------------------------------------------------------------------------------- validation
def validate_trace(trace: dict, name: str = "trace") -> dict:
    """Check a normalized trace; raises InputError naming the key. Returns the trace."""
    if not isinstance(trace, dict):
        raise InputError(name, None, "a trace dict", type(trace).__name__)
    kind = trace.get("kind")
    if kind == "opportunities":
        p = trace.get("period_ns")
        if not isinstance(p, int) or p <= 0:
            raise InputError(name, "period_ns", "an integer > 0", repr(p))
        b = trace.get("bytes_per_opportunity")
        if not isinstance(b, int) or b <= 0:
            raise InputError(name, "bytes_per_opportunity", "an integer > 0", repr(b))
        ts = trace.get("times_ns")
        if not isinstance(ts, list):
            raise InputError(name, "times_ns", "a list", type(ts).__name__)
        prev = 0
        for i, t in enumerate(ts):
            if not isinstance(t, int) or t < prev or t > p:
                raise InputError(name, f"times_ns[{i}]", f"an integer in [{prev}, period_ns={p}]", repr(t))
            prev = t
    elif kind == "rates":
        segs = trace.get("segments")
        if not isinstance(segs, list) or not segs:
            raise InputError(name, "segments", "a non-empty list", repr(segs)[:40])
        for i, s in enumerate(segs):
            if (not isinstance(s, (list, tuple)) or len(s) != 3 or not all(isinstance(x, int) for x in s)
                    or s[0] <= 0 or s[1] < 0 or s[2] < 0):
                raise InputError(name, f"segments[{i}]", "[duration_ns > 0, rate_bps >= 0, latency_ns >= 0] (integers)",
                                 repr(s)[:60])
        if not isinstance(trace.get("loop", True), bool):
            raise InputError(name, "loop", "true or false", repr(trace.get("loop")))
    else:
        raise InputError(name, "kind", "'opportunities' or 'rates'", repr(kind))
    return trace


# -------------------------------------------------------------------------------------- helpers
def duration_ns(trace: dict) -> int:
    """Length of one cycle of the trace (ns)."""
    if trace["kind"] == "opportunities":
        return trace["period_ns"]
    return sum(s[0] for s in trace["segments"])


def mean_rate_bps(trace: dict) -> float:
    """Mean capacity over one cycle (bit/s)."""
    if trace["kind"] == "opportunities":
        return len(trace["times_ns"]) * trace["bytes_per_opportunity"] * 8 * _NS_PER_S / trace["period_ns"]
    total = sum(s[0] for s in trace["segments"])
    return sum(s[0] * s[1] for s in trace["segments"]) / total


def scale(trace: dict, factor: float) -> dict:
    """Multiply the capacity by ``factor`` (like Sabre's ``-nm``); returns a new trace.

    Rates: every ``rate_bps`` is multiplied (rounded); latency is unchanged. Opportunities: the k-th
    opportunity of the result is placed where the cumulative count of the original reaches
    k / factor, i.e. the result has ``floor(factor * N(t))`` opportunities up to time t (N = original
    cumulative count), keeping the timing pattern; the mean rate scales within one opportunity
    per period.
    """
    if not _num(factor) or factor <= 0:
        raise InputError(None, "scale", "a factor > 0", repr(factor))
    if trace["kind"] == "rates":
        segs = [[d, round(r * factor), lat] for d, r, lat in trace["segments"]]
        return {"kind": "rates", "segments": segs, "loop": trace.get("loop", True)}
    times = trace["times_ns"]
    out: list[int] = []
    # cumulative count after the i-th original opportunity is i+1; emit floor(factor*(i+1)) in total
    emitted = 0
    for i, t in enumerate(times):
        target = math.floor(factor * (i + 1) + 1e-9)
        if target > emitted:
            out.extend([t] * (target - emitted))
            emitted = target
    return {"kind": "opportunities", "period_ns": trace["period_ns"], "times_ns": out,
            "bytes_per_opportunity": trace["bytes_per_opportunity"]}


def rates_to_opportunities(trace: dict, bytes_per_opportunity: int = MAHIMAHI_BYTES_PER_OPPORTUNITY) -> dict:
    """Rate schedule -> packet opportunities with ``mm-rate-to-events`` semantics.

    Time advances in 1 ms ticks; each tick adds the bits the rate schedule delivers in that
    millisecond to a credit; while the credit holds ``8 * bytes_per_opportunity`` bits, one
    opportunity is emitted at the end of that tick and the credit reduced. Leftover credit at the end
    of the cycle is dropped (the loop restarts at zero credit), so the mean rate is preserved within
    one opportunity per cycle. The period is the cycle length rounded up to whole milliseconds
    (Mahimahi's resolution); latency is dropped.
    """
    import numpy as np

    if trace["kind"] == "opportunities":
        return trace
    segs = trace["segments"]
    total_ns = sum(s[0] for s in segs)
    n_ms = -(-total_ns // _NS_PER_MS)
    # cumulative bits at each segment boundary (exact integers: bit*ns / 1e9 kept as bit*ns)
    bounds = [0]
    cum = [0]
    for d, r, _ in segs:
        bounds.append(bounds[-1] + d)
        cum.append(cum[-1] + d * r)
    ticks = np.arange(1, n_ms + 1, dtype=np.float64) * _NS_PER_MS
    ticks[-1] = min(ticks[-1], total_ns)
    cum_bits = np.interp(ticks, np.asarray(bounds, dtype=np.float64),
                         np.asarray(cum, dtype=np.float64) / _NS_PER_S)
    pkt_bits = 8 * bytes_per_opportunity
    counts = np.floor(cum_bits / pkt_bits + 1e-9).astype(np.int64)
    per_tick = np.diff(np.concatenate(([0], counts)))
    times = np.repeat(np.arange(1, n_ms + 1, dtype=np.int64) * _NS_PER_MS, per_tick)
    return {"kind": "opportunities", "period_ns": n_ms * _NS_PER_MS, "times_ns": times.tolist(),
            "bytes_per_opportunity": int(bytes_per_opportunity)}


def opportunities_to_rates(trace: dict, bin_ns: int = _NS_PER_S, merge_empty: bool = False) -> dict:
    """Packet opportunities -> rate schedule: average rate per bin of ``bin_ns`` (default 1 s).

    Bins are ``[k*bin, (k+1)*bin)``; the last bin ends at the period (it may be shorter);
    an opportunity at exactly ``period_ns`` counts in the last bin. The mean rate over the cycle is
    preserved exactly (up to rounding each bin to whole bit/s). Latency is 0. With
    ``merge_empty`` a run of empty bins is one zero-rate segment (the same schedule, for trace mode:
    a sparse trace with a period of 10^11 ms made 10^9 bins and ran out of memory), so the segments
    are at most twice the opportunities, plus one; without it (file conversions, whose formats
    want one entry per bin) every bin is a segment.
    """
    if trace["kind"] == "rates":
        return trace
    if not isinstance(bin_ns, int) or bin_ns <= 0:
        raise InputError(None, "bin_ns", "an integer > 0", repr(bin_ns))
    period = trace["period_ns"]
    nbins = -(-period // bin_ns)
    counts: dict[int, int] = {}
    for t in trace["times_ns"]:
        b = min(t // bin_ns, nbins - 1)
        counts[b] = counts.get(b, 0) + 1
    bits = 8 * trace["bytes_per_opportunity"]
    segs = []
    k = 0                        # the first bin not yet in segs
    for b in (sorted(counts) if merge_empty else range(nbins)):
        if b > k:
            segs.append([b * bin_ns - k * bin_ns, 0, 0])
        d = min(bin_ns, period - b * bin_ns)
        segs.append([d, round(counts.get(b, 0) * bits * _NS_PER_S / d), 0])
        k = b + 1
    if k < nbins:
        segs.append([period - k * bin_ns, 0, 0])
    return {"kind": "rates", "segments": segs, "loop": True}


# ---------------------------------------------------------------------------------------- writers
def save_trace(trace: dict, path: str, format: str) -> None:
    """Write a normalized trace in one of the file formats (inverse of the loaders).

    mahimahi needs opportunities at whole milliseconds and a period equal to the last timestamp;
    sabre/pensieve/voxel need a rate schedule (voxel: 1 s segments and whole bytes per second;
    pensieve: times in seconds with the ``next`` alignment, a final sample closes the trace).
    """
    path = str(path)
    if format == "mahimahi":
        if trace["kind"] != "opportunities":
            raise InputError(path, None, "an opportunities trace for mahimahi", trace["kind"])
        ts = trace["times_ns"]
        if any(t % _NS_PER_MS for t in ts) or not ts or ts[-1] != trace["period_ns"]:
            raise InputError(path, None, "whole-ms opportunity times ending at the period", "other times")
        text = "".join(f"{t // _NS_PER_MS}\n" for t in ts)
    elif format == "sabre":
        _need_rates(trace, path)
        items = [{"duration_ms": _compact(d / _NS_PER_MS), "bandwidth_kbps": _compact(r / 1000),
                  "latency_ms": _compact(lat / _NS_PER_MS)} for d, r, lat in trace["segments"]]
        text = "[\n" + ",\n".join("    " + json.dumps(it) for it in items) + "\n]\n"
    elif format == "pensieve":
        _need_rates(trace, path)
        t = 0
        out = []
        for d, r, _ in trace["segments"]:
            out.append(f"{_compact(t / _NS_PER_S)}\t{_compact(r / 1e6)}\n")
            t += d
        last = trace["segments"][-1][1]
        out.append(f"{_compact(t / _NS_PER_S)}\t{_compact(last / 1e6)}\n")
        text = "".join(out)
    elif format == "voxel":
        _need_rates(trace, path)
        out = []
        for k, (d, r, _) in enumerate(trace["segments"], 1):
            if d != _NS_PER_S or r % 8:
                raise InputError(path, f"segments[{k - 1}]", "1 s segments with whole bytes for voxel",
                                 f"[{d}, {r}]")
            out.append(f"{k} {r // 8}\n")
        text = "".join(out)
    else:
        raise InputError(path, None, "trace format " + "|".join(FORMATS), repr(format))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _need_rates(trace: dict, path: str) -> None:
    if trace["kind"] != "rates":
        raise InputError(path, None, "a rates trace (convert with opportunities_to_rates)", trace["kind"])


def _compact(x: float):
    return int(x) if float(x).is_integer() else x
