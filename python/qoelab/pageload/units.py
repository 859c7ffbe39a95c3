"""Interface strings ("20Mbps,30ms") -> (bytes/s, RTT ns), with the public simulator's binary
prefixes or decimal ones.

The public simulator (dtsimulator) defines ``mbit(x) = x * 1024 * 1024 / 8`` and
``kbit(x) = x * 1024 / 8`` bytes/s: "50 Mbit/s" there is 52.4e6 bit/s, and its grid's 0.5 Mbit/s
is ``kbit(500)`` = 64,000 B/s. ``binary`` (the default, for fidelity) reads "20Mbps" the same way;
``decimal`` reads it as 20e6 bit/s. The choice changes every bandwidth-bound load time by 4.9%.
"""

from __future__ import annotations

from qoelab import units

UNIT_MODES = ("binary", "decimal")
_BIN = {"bps": 1, "bit/s": 1, "kbps": 1024, "kbit/s": 1024, "mbps": 1024**2, "mbit/s": 1024**2,
        "gbps": 1024**3, "gbit/s": 1024**3}


def rate_bytes(text: str, mode: str = "binary") -> int:
    """A rate string -> integer bytes/s (rounded). ValueError says what was expected."""
    if mode not in UNIT_MODES:
        raise ValueError(f"expected units binary or decimal, found {mode!r}")
    if mode == "decimal":
        return int(round(units.rate(text) / 8))
    units.rate(text)  # validates the syntax, the unit and the bound
    v, u = units._split(text, units.RATE_EXAMPLE)
    return int(round(v * _BIN[u.lower()] / 8))


def iface(text: str, mode: str = "binary") -> tuple[int, int]:
    """ "20Mbps,30ms" -> (bytes/s, RTT ns). The bandwidth must be > 0 and the RTT > 0."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2:
        raise ValueError(f"expected BANDWIDTH,RTT like \"20Mbps,30ms\", found {text!r}")
    bw = rate_bytes(parts[0], mode)
    rtt = units.duration(parts[1])
    if bw < MIN_RATE_BYTES:
        # (8 bit/s stuck the water-filling: more busy flows than bytes/s get a share of 0 each,
        # an internal error; scenarios' rates start at 1 kbit/s too)
        raise ValueError(f"expected a bandwidth of at least 1kbps ({MIN_RATE_BYTES} B/s), found {parts[0]!r}")
    if rtt <= 0 or rtt > MAX_RTT_NS:
        raise ValueError(f"expected an RTT > 0 and at most 100s, found {parts[1]!r}")
    return bw, rtt


#: The least interface bandwidth (B/s): 1 kbit/s, as a scenario's link rate; at most 17 flows
#: share an interface, so each gets at least 7 B/s.
MIN_RATE_BYTES = 125
#: The longest RTT the core takes (ns).
MAX_RTT_NS = 100 * 10**9


def schedule(text: str, mode: str = "binary") -> list[tuple[int, int]]:
    """ "2s:5Mbps,4.5s:20Mbps" -> [(t ns, bytes/s), ...]: the interface's bandwidth from each time
    on (increasing times, rates > 0)."""
    out: list[tuple[int, int]] = []
    for part in [p.strip() for p in str(text).split(",") if p.strip()]:
        if ":" not in part:
            raise ValueError(f"expected TIME:RATE pairs like \"2s:5Mbps,4.5s:20Mbps\", found {part!r}")
        t_s, r_s = part.split(":", 1)
        t = units.duration(t_s.strip())
        r = rate_bytes(r_s.strip(), mode)
        if r < MIN_RATE_BYTES:
            raise ValueError(f"expected a rate of at least 1kbps ({MIN_RATE_BYTES} B/s), found {r_s.strip()!r}")
        if out and t <= out[-1][0]:
            raise ValueError(f"expected increasing times, found {t_s.strip()!r} after {out[-1][0] / 1e9:g}s")
        out.append((t, r))
    if not out:
        raise ValueError("expected at least one TIME:RATE pair")
    return out
