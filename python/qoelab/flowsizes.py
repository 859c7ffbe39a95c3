"""Flow-size distributions for web-like cross traffic: empirical CDF files and a built-in one.

CDF file format: one point per line, ``<size> <cumulative probability>`` (size in bytes, or
with a unit such as ``15KB``), ``#`` starts a comment; sizes strictly increasing, probabilities
non-decreasing in [0, 1], the last one exactly 1. Between points the simulator interpolates
linearly.

Built-in ``web``: the SURGE web file-size model of Barford & Crovella, "Generating
Representative Web Workloads for Network and Server Performance Evaluation", SIGMETRICS 1998:
a lognormal body (mu = 9.357, sigma = 1.318, sizes in bytes) joined to a Pareto tail
(k = 133,000 bytes, alpha = 1.1). The parameter values are the ones commonly cited from that
paper; they were not re-verified against the paper's table for this release. Our construction:
the body's weight is the lognormal CDF at k (0.968), so the CDF is continuous at k, and the tail
is truncated at 10 MB (the truncated Pareto with alpha = 1.1 has no finite mean otherwise). The
CDF is tabulated at 48 points; mean flow size of the tabulated CDF: see ``mean_size``.
"""

from __future__ import annotations

import math

from qoelab import units
from qoelab.errors import InputError

BUILTIN = ("web",)


def _lognorm_cdf(x, mu, sigma):
    return 0.5 * (1.0 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2.0))))


def _surge_cdf(x):
    mu, sigma, k, alpha, cap = 9.357, 1.318, 133_000.0, 1.1, 10_000_000.0
    body = _lognorm_cdf(k, mu, sigma)
    if x < k:
        return _lognorm_cdf(x, mu, sigma)
    tail_mass = 1.0 - (k / cap) ** alpha
    return body + (1.0 - body) * (1.0 - (k / x) ** alpha) / tail_mass


def builtin(name: str) -> list[list[float]]:
    if name != "web":
        raise KeyError(name)
    pts = []
    # 100 B .. 10 MB, log-spaced
    n = 48
    for i in range(n):
        x = 10 ** (2 + 5 * i / (n - 1))
        pts.append([round(x), min(1.0, _surge_cdf(x))])
    pts[-1][1] = 1.0
    pts.insert(0, [0.0, 0.0])
    return pts


def mean_size(cdf: list[list[float]]) -> float:
    """Mean of the piecewise-linear CDF (uniform within each segment)."""
    m = 0.0
    for (x0, p0), (x1, p1) in zip(cdf, cdf[1:]):
        m += (p1 - p0) * (x0 + x1) / 2.0
    return m


def load_cdf(path: str) -> list[list[float]]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise InputError(path, None, message=f"cannot read flow-size CDF: {e.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(path, None, "a text file", "binary data") from None
    pts = []
    for no, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        if len(parts) != 2:
            raise InputError(path, str(no), "two columns: <size> <cumulative probability>", repr(text))
        try:
            sz = float(parts[0]) if parts[0].replace(".", "", 1).isdigit() else float(units.size(parts[0]))
        except ValueError:
            raise InputError(path, str(no), "a size in bytes or like \"15KB\"", repr(parts[0])) from None
        if not 0 <= sz <= units.MAX_SIZE_BYTES:
            raise InputError(path, str(no), "a size of at most 1PB", repr(parts[0]))
        try:
            p = float(parts[1])
        except ValueError:
            raise InputError(path, str(no), "a probability", repr(parts[1])) from None
        if not 0.0 <= p <= 1.0:
            raise InputError(path, str(no), "a probability in [0, 1]", parts[1])
        if pts and (sz <= pts[-1][0] or p < pts[-1][1]):
            raise InputError(path, str(no), "sizes strictly increasing and probabilities non-decreasing",
                             text)
        pts.append([sz, p])
    if not pts:
        raise InputError(path, None, message="no CDF points")
    if pts[-1][1] != 1.0:
        raise InputError(path, str(len(lines)), "the last cumulative probability to be 1", str(pts[-1][1]))
    if pts[0][1] > 0.0:
        pts.insert(0, [0.0 if pts[0][0] > 0 else pts[0][0], 0.0])
    return pts
