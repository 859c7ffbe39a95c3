"""Constants of the Livi et al. testbed and the statistics the livi reproduction uses.

Shared by :mod:`qoelab.reproduce.livi` (grid, runs, claims) and :mod:`qoelab.reproduce.report`
(figures), which therefore do not import each other at module level.
"""

from __future__ import annotations

import math

# ----------------------------------------------------------------------------------------------
# Testbed constants

ALGORITHMS = ("bba2", "bba3", "classic1", "classic2")
ALGO_LABEL = {"bba2": "BBA2", "bba3": "BBA3", "classic1": "Classic1", "classic2": "Classic2"}
AQMS = ("pfifo", "ared", "codel")
AQM_LABEL = {"pfifo": "DT", "ared": "ARED", "codel": "CoDel"}
BUFFERS_BDP = (6.0, 1.0, 0.5, 0.25)
REF_BW_BPS = 10_000_000          # fixed reference bandwidth of the buffer rule for RTT 80 ms
RTD_S = 0.080                    # round-trip propagation delay
MTU = 1500
FAIR_SHARES_BPS = tuple(range(600_000, 3_000_001, 300_000))   # per-client bandwidth samples
CLIENTS_BY_AQM = {"pfifo": (1, 2, 3), "ared": (1,), "codel": (1, 2, 3)}
# Variable profiles: (start s, per-client rate bit/s); the bottleneck is rate x clients. No loop.
PROFILES = {
    "p1": ((0, 4_000_000), (120, 1_000_000), (240, 4_000_000), (360, 600_000), (480, 4_000_000)),
    "p2": ((0, 4_000_000), (100, 2_800_000), (200, 1_500_000), (300, 1_000_000), (400, 600_000),
           (500, 4_000_000)),
}
DURATION_S = 700                 # runs killed after 700 s
VIDEO_S = 600                    # 300 segments of 2 s
START_S = 1.0                    # players start 1 s into the test (testbed Player(delay=1))
START_JITTER_S = 0.5             # our addition: seeded per-client start jitter in [0, 0.5) s
VIDEO_SEED = 1                   # one movie for every client and run (as Big Buck Bunny)
QUICK_SECONDS = 60
# Tables the runs record: the per-segment log (LU; the flows samples are the fallback when a
# core has no segments table). The TCP and queue samples are not needed and cost time.
TABLES = ("segments",)


def buffer_packets(k: float, ref_bw_bps: int = REF_BW_BPS, rtd_s: float = RTD_S, mtu: int = MTU) -> int:
    """The testbed's buffer rule: k x BDP of the fixed reference bandwidth, in packets, rounded, >= 1."""
    return max(1, int(math.floor(ref_bw_bps * rtd_s * k / (8 * mtu) + 0.5)))


def profile_mean_bps(profile: str, horizon_s: float = VIDEO_S) -> float:
    """Time-average per-client rate of a variable profile over [0, horizon_s]."""
    steps = PROFILES[profile]
    total = 0.0
    for i, (t0, r) in enumerate(steps):
        t1 = steps[i + 1][0] if i + 1 < len(steps) else horizon_s
        t1 = min(t1, horizon_s)
        if t1 > t0:
            total += (t1 - t0) * r
    return total / horizon_s


_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _t_sf(t: float, dof: int) -> float:
    """P(T > t) for Student's t with `dof` degrees of freedom, t >= 0: I_x(dof/2, 1/2) / 2 with
    x = dof / (dof + t^2)."""
    a, b, x = dof / 2.0, 0.5, dof / (dof + t * t)
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(a * math.log(x) + b * math.log1p(-x) + lbeta)
    if x < (a + 1.0) / (a + b + 2.0):
        ix = front * _betacf(a, b, x) / a
    else:
        ix = 1.0 - front * _betacf(b, a, 1.0 - x) / b
    return ix / 2.0


def t95(dof: int) -> float:
    """The two-sided 95% quantile of Student's t, t(0.975; dof), to 3 decimals: the table above
    where it has the dof, else computed (bisection on the distribution function). Until 2026-11-30
    a dof between table entries took the next larger entry's value (2.060 for 21-25 instead of
    2.080 at 21), so intervals there were up to 1% too narrow."""
    if dof <= 0:
        return float("nan")
    if dof in _T95:
        return _T95[dof]
    lo, hi = 1.9, 13.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if _t_sf(mid, dof) > 0.025:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 3)


def mean_ci(xs) -> tuple[float, float, int]:
    """Mean, half-width of its 95% confidence interval (Student t), number of samples."""
    xs = [float(x) for x in xs if x is not None and x == x]
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan"), 0
    m = sum(xs) / n
    if n == 1:
        return m, float("nan"), 1
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, t95(n - 1) * math.sqrt(var / n), n
