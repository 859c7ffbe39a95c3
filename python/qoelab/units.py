"""Unit strings of scenario files: "20ms", "10Mbps", "256KB", "100pkts", "1.5bdp", "1%".

Canonical units: durations in integer nanoseconds, rates in integer bit/s, sizes in integer
bytes. Decimal prefixes for rates and sizes (k = 1000, up to T, and P for sizes); binary sizes with
KiB/MiB/GiB/TiB.
Every parser raises ``ValueError`` whose message says what was expected; the scenario loader
adds the file and key.
"""

from __future__ import annotations

import math
import re

_NUM = r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+)"

_DUR = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
        "min": 60_000_000_000, "h": 3_600_000_000_000}
_RATE = {"bps": 1, "bit/s": 1, "kbps": 1e3, "kbit/s": 1e3, "mbps": 1e6, "mbit/s": 1e6,
         "gbps": 1e9, "gbit/s": 1e9, "tbps": 1e12, "tbit/s": 1e12}
_SIZE = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "pb": 1e15,
         "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_PKTS = ("pkts", "pkt", "packets", "packet", "p")

# Largest values the parsers accept (the core keeps them in unsigned 64-bit integers; anything
# near these is a typo). Scenario keys add tighter, meaningful bounds.
MAX_DURATION_NS = 100 * 365 * 86_400 * 10**9
MAX_RATE_BPS = 10**14
MAX_SIZE_BYTES = 10**15
MAX_PACKETS = 10**9

DURATION_EXAMPLE = "a duration like \"20ms\", \"1.5s\", \"250us\""
RATE_EXAMPLE = "a rate like \"10Mbps\", \"600kbps\", \"1Gbps\""
SIZE_EXAMPLE = "a size like \"256KB\", \"1500B\", \"1MiB\""
BUFFER_EXAMPLE = "a buffer like \"1.5bdp\", \"100pkts\", \"256KB\""


def _split(text, what):
    if isinstance(text, bool) or not isinstance(text, str):
        raise ValueError(f"expected {what}, found {text!r}")
    m = re.fullmatch(r"\s*" + _NUM + r"\s*([A-Za-zµ/%]+)\s*", text)
    if not m:
        raise ValueError(f"expected {what}, found {text!r}")
    v = float(m.group(1))
    if not math.isfinite(v):
        raise ValueError(f"expected {what}, found {text!r} (the number is too large)")
    return v, m.group(2)


def _bounded(v: float, limit: float, text, what: str, shown: str) -> int:
    """round(v) if it is at most `limit`, else a ValueError naming the limit."""
    if not v <= limit:
        raise ValueError(f"expected {what} of at most {shown}, found {text!r}")
    return int(round(v))


def duration(text) -> int:
    """Duration string -> integer nanoseconds."""
    v, u = _split(text, DURATION_EXAMPLE)
    if u not in _DUR:
        raise ValueError(f"expected {DURATION_EXAMPLE}, found {text!r} (unit {u!r} is not one of "
                         f"{', '.join(_DUR)})")
    return _bounded(v * _DUR[u], MAX_DURATION_NS, text, "a duration", "100 years")


def rate(text) -> int:
    """Rate string -> integer bit/s."""
    v, u = _split(text, RATE_EXAMPLE)
    k = u.lower()
    if k not in _RATE:
        raise ValueError(f"expected {RATE_EXAMPLE}, found {text!r} (unit {u!r} is not one of "
                         "bps, kbps, Mbps, Gbps, Tbps, kbit/s, Mbit/s, Gbit/s, Tbit/s)")
    return _bounded(v * _RATE[k], MAX_RATE_BPS, text, "a rate", "100Tbps")


def size(text) -> int:
    """Size string -> integer bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        raise ValueError(f"expected {SIZE_EXAMPLE} (with a unit), found {text!r}")
    v, u = _split(text, SIZE_EXAMPLE)
    k = u.lower()
    if k not in _SIZE:
        raise ValueError(f"expected {SIZE_EXAMPLE}, found {text!r}")
    return _bounded(v * _SIZE[k], MAX_SIZE_BYTES, text, "a size", "1PB")


def packets(text) -> int:
    """Packet count: an integer or "100pkts"."""
    if isinstance(text, int) and not isinstance(text, bool) and 0 <= text <= MAX_PACKETS:
        return text
    if isinstance(text, int) and not isinstance(text, bool) and text > MAX_PACKETS:
        raise ValueError(f"expected a packet count of at most {MAX_PACKETS}, found {text!r}")
    v, u = _split(text, "a packet count like 100 or \"100pkts\"")
    if u.lower() not in _PKTS or v != int(v):
        raise ValueError(f"expected a packet count like 100 or \"100pkts\", found {text!r}")
    if v > MAX_PACKETS:
        raise ValueError(f"expected a packet count of at most {MAX_PACKETS}, found {text!r}")
    return int(v)


def probability(text) -> float:
    """Probability: a number in [0, 1] or a percentage string "1%"."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            v = float(text)
        except OverflowError:
            v = math.inf
    else:
        val, u = _split(text, "a probability like 0.01 or \"1%\"")
        if u != "%":
            raise ValueError(f"expected a probability like 0.01 or \"1%\", found {text!r}")
        v = val / 100.0
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"expected a probability in [0, 1], found {text!r}")
    return v


def buffer(text, rate_bps: int, rtt_ns: int, mtu: int = 1500, max_packets: int = MAX_PACKETS) -> dict:
    """Buffer size: "1.5bdp" (packets of `mtu` bytes: ceil(rate * rtt / 8 / mtu), at least 1),
    "100pkts", or a byte size, of at most ``max_packets`` packets. Returns {"packets": n} or
    {"bytes": n}."""
    if isinstance(text, str) and text.strip().lower().endswith("bdp"):
        v, _ = _split(text, BUFFER_EXAMPLE)
        if v <= 0:
            raise ValueError(f"expected a buffer > 0, found {text!r}")
        bdp_bytes = rate_bps * rtt_ns / 8e9
        n = max(1, math.ceil(v * bdp_bytes / mtu - 1e-9))
        if n > max_packets:
            raise ValueError(f"expected a buffer of at most {max_packets:,} packets, found {text!r} ({n:.3g} packets)")
        return {"packets": n}
    try:
        n = packets(text)
    except ValueError as e:
        if "at most" in str(e):
            raise
        n = None
    if n is not None:
        if n < 1:
            raise ValueError(f"expected a buffer of at least 1 packet, found {text!r}")
        if n > max_packets:
            raise ValueError(f"expected a buffer of at most {max_packets:,} packets, found {text!r}")
        return {"packets": n}
    try:
        b = size(text)
    except ValueError as e:
        if "at most" in str(e):
            raise
        raise ValueError(f"expected {BUFFER_EXAMPLE}, found {text!r}") from None
    if b < mtu:
        raise ValueError(f"expected a buffer of at least one packet ({mtu}B), found {text!r}")
    return {"bytes": b}


def fmt_duration(ns: int) -> str:
    for u, f in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= f:
            return f"{ns / f:g}{u}"
    return f"{ns}ns"


def fmt_rate(bps: float) -> str:
    for u, f in (("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if bps >= f:
            return f"{bps / f:g}{u}"
    return f"{bps:g}bps"


def fmt_size(b: int) -> str:
    for u, f in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= f:
            return f"{b / f:g}{u}"
    return f"{b}B"
