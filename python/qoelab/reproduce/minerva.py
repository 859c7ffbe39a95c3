"""Minerva (Nathan et al., "End-to-End Transport for Video QoE Fairness", SIGCOMM 2019) reproduced in the
packet simulator: ``qoelab reproduce minerva``.

Model, setups and claims M1-M22 with their verdict rules: the claims file
(reference/claims/minerva.md). Setup mapping, deviations and measured verdicts:
docs/reproductions/minerva.md. The corpus and its corpus-wide normalization tables:
:mod:`qoelab.reproduce.minerva_corpus`. Claims: :mod:`qoelab.reproduce.minerva_claims`; report:
:mod:`qoelab.reproduce.minerva_report`.

Every run is one :class:`Run` (an experiment family, a scheme, a link, a video combination and a
repetition). The seed comes from the run identifier *without* the scheme, so Cubic, Minerva and BBR
of one cell share seed, videos and start times (paired runs, §3). Per run, per client: mean
per-chunk QoE by Eq. 1 over the first 200 s (VMAF or PSNR, beta 25, gamma 2.5, non-startup stalls;
:func:`client_qoe`), mean quality, rebuffering with and without startup, stall count, goodput; per
run: min QoE, QoE spread, group shares, clamp fraction of the weight updates.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
import tempfile
import time
from dataclasses import asdict, dataclass, replace

from qoelab import outdir
from qoelab.reproduce import common
from qoelab.errors import InputError
from qoelab.reproduce import minerva_corpus as corpus
from qoelab.reproduce.sprint import median_ci, spearman  # noqa: F401  (re-exported for the claims)

from qoelab.reproduce.common import (GRADE_TO_VERDICT, INCONCLUSIVE, NOT_SUPPORTED,  # noqa: F401
                                     OUT_OF_SCOPE, SUPPORTED)

RTT_MS = 20
BETA, GAMMA = 25.0, 2.5
FAIR_S = 200.0             # fairness window (§8.1.1)
#: §8.2 link rates 4 / 10 / 16 Mbit/s x 0.405 (claims file §4 item 2)
BENCH_RATES = (1.7, 4.1, 6.5)
#: the rates of the synthetic corpus (paper x 0.405) -> the paper's own, used with ``--corpus hd`` (its
#: ladder sits at Minerva's rates): §8.2 4/10/16, §8.3 8, §8.4 20 (4 + 4) and 40 (8 + 8), §8.4.1 20,
#: §8.6/App. B/Fig. 2 pair 5 (the App. B anchor's C = 5), §8.7 10/20
PAPER_RATE = {1.7: 4.0, 4.1: 10.0, 6.5: 16.0, 3.2: 8.0, 8.2: 20.0, 16.4: 40.0, 8.1: 20.0, 2.0: 5.0}


def rate_for(r: float, mode: str) -> float:
    """A rate of the synthetic grid in the mode's units."""
    return r if mode == "synthetic" else PAPER_RATE[r]
#: alpha for a plain one-connection cubic baseline (claims file pitfall 2: 1.65 / 2)
ALPHA = 0.825
#: the paper's clamp [0.5, 20] is on the 2-connection scale (w = 2 is one baseline flow); halved for
#: the one-connection scale of plain cubic, like alpha
W_MIN, W_MAX = 0.25, 10.0
SCHEME_LABEL = {"cubic": "Cubic", "minerva": "Minerva", "bbr": "BBR", "minerva_pf": "Minerva-PF",
                "minerva_raw": "Minerva (no normalization)", "mixed": "Minerva + Cubic",
                "minerva_basic": "Minerva, basic utility (Eq. 2)"}


# ----------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True)
class Run:
    exp: str                # bench, dyn, pool, xt, web, bound, conv, join, prov
    scheme: str             # cubic, minerva, bbr, minerva_pf, minerva_raw (xt: mixed)
    rate_mbps: float
    videos: tuple           # video names (xt: each played once by Minerva and once by Cubic)
    duration_s: int = 200
    aqm: str = "pie"        # pie | dt (droptail pfifo 1.5 BDP)
    rep: int = 0
    mu: float = 0.0         # bound (exp bound): w in [1/mu, mu]; 0 = no bound ([0.01, 100])
    load_mbps: float = 0.0  # web cross traffic (exp web)
    videos2: tuple = ()     # prov: the PSNR provider's videos
    corpus: str = "synthetic"   # synthetic | hd (minerva_corpus modes)

    @property
    def run_id(self) -> str:
        x = (f"-mu{self.mu:g}" if self.exp == "bound" else "") + (f"-web{self.load_mbps:g}" if self.load_mbps else "")
        v2 = ("+" + ".".join(self.videos2)) if self.videos2 else ""
        c = "" if self.corpus == "synthetic" else f"-{self.corpus}"
        return (f"{self.exp}-{self.scheme}-{self.aqm}-{self.rate_mbps:g}M-{'.'.join(self.videos)}{v2}{x}-"
                f"{self.duration_s}s-s{self.rep}{c}")

    @property
    def pair_key(self) -> str:
        v2 = ("+" + ".".join(self.videos2)) if self.videos2 else ""
        return f"{self.exp}-{self.rate_mbps:g}-{'.'.join(self.videos)}{v2}-{self.load_mbps:g}-{self.duration_s}-{self.rep}"

    @property
    def seed(self) -> int:
        return int.from_bytes(hashlib.sha256(self.pair_key.encode()).digest()[:4], "big") & 0x7FFFFFFF


def combos(k: int, n: int, seed: int, pool=corpus.VIDEOS) -> list[tuple]:
    """n distinct k-combinations of the corpus (seeded; at most C(len(pool), k))."""
    allc = list(itertools.combinations(pool, k))
    random.Random(seed).shuffle(allc)
    return allc[:n]


@dataclass
class Spec:
    name: str
    bench_combos: int = 12
    bench_rates: tuple = BENCH_RATES
    pf_combos: int = 6
    dyn_seeds: int = 5
    dyn_dur: int = 600
    xt4_combos: int = 10
    xt8_reps: int = 5
    web_loads: tuple = (0.2, 0.4, 0.6, 0.8)   # fraction of the 8.1 Mbit/s link
    web_combos: int = 3
    bound_mus: tuple = (1, 1.25, 1.5, 2, 4, 0)
    bound_seeds: int = 3
    prov_combos: int = 10
    prov_rates: tuple = (4.1, 8.2)
    join_seeds: int = 3
    conv_seeds: int = 3
    duration_s: int = 200
    description: str = ""
    corpus: str = "synthetic"

    def runs(self) -> list[Run]:
        mode = corpus.check_mode(self.corpus)
        out: list[Run] = []
        for r in self._runs():
            kw = {"rate_mbps": rate_for(r.rate_mbps, mode), "corpus": mode}
            if r.load_mbps:
                kw["load_mbps"] = round(r.load_mbps / 8.1 * rate_for(8.1, mode), 2)
            if mode != "synthetic":
                single = corpus.SINGLE[mode]
                kw["videos"] = tuple(single if v == "V5" else v for v in r.videos)
            out.append(replace(r, **kw))
        return out

    def _runs(self) -> list[Run]:
        """The grid in the synthetic corpus' units (rates x 0.405, video V5 for the one-video runs)."""
        out: list[Run] = []
        d = self.duration_s
        pool = corpus.pool(self.corpus)
        for rate in self.bench_rates:
            for i, vs in enumerate(combos(4, self.bench_combos, 11, pool)):
                out.append(Run("bench", "cubic", rate, vs, d))
                out.append(Run("bench", "minerva", rate, vs, d))
                out.append(Run("bench", "minerva", rate, vs, d, aqm="dt"))
                out.append(Run("bench", "bbr", rate, vs, d, aqm="dt"))
                if i < self.pf_combos:
                    out.append(Run("bench", "minerva_pf", rate, vs, d))
        for s in range(self.dyn_seeds):
            for sch in ("cubic", "minerva", "minerva_basic"):
                out.append(Run("dyn", sch, 3.2, pool, self.dyn_dur, rep=s))
                out.append(Run("pool", sch, 3.2, ("V5",), self.dyn_dur, rep=s))
        for vs in combos(4, self.xt4_combos, 23, pool):
            out.append(Run("xt", "mixed", 8.2, vs, d))
        rng = random.Random(31)
        for s in range(self.xt8_reps):
            vs = tuple(sorted(rng.choice(pool) for _ in range(8)))
            out.append(Run("xt", "mixed", 16.4, vs, d, rep=s))
        for vs in combos(4, self.web_combos, 37, pool):
            for ld in self.web_loads:
                for sch in ("cubic", "minerva"):
                    out.append(Run("web", sch, 8.1, vs, d, load_mbps=round(ld * 8.1, 2)))
        for s in range(self.bound_seeds):
            out.append(Run("bound", "cubic", 2.0, ("A", "B"), d, rep=s))
            for mu in self.bound_mus:
                out.append(Run("bound", "minerva", 2.0, ("A", "B"), d, rep=s, mu=mu))
        for s in range(self.conv_seeds):
            out.append(Run("conv", "minerva", 2.0, ("A", "B"), d, rep=s))
        for s in range(self.join_seeds):
            for sch in ("cubic", "minerva"):
                out.append(Run("join", sch, 2.0, ("V5", "V5"), 160, rep=s))
        pv = combos(4, 70, 41, pool)
        pp = combos(4, 70, 43, pool)
        for rate in self.prov_rates:
            for i in range(self.prov_combos):
                for sch in ("cubic", "minerva") + (("minerva_raw",) if rate == self.prov_rates[0] else ()):
                    out.append(Run("prov", sch, rate, pv[i], d, videos2=pp[i]))
        return out


def full_spec() -> Spec:
    """The full run: §8.2 44 combinations of 4 of the 8 videos x 1.7/4.1/6.5 Mbit/s x Cubic/PIE, Minerva/PIE,
    Minerva/droptail, BBR/droptail (+ Minerva-PF on 12 combinations); §8.3 Poisson arrivals at 3.2 Mbit/s
    (random videos, 4 concurrent; one video, 8 concurrent) x 8 seeds x 600 s x Cubic, Minerva and the
    basic-utility ablation; §8.4 4+4 clients at 8.2 Mbit/s (44 combinations) and 8+8 at 16.4 Mbit/s (44
    draws: the claims file's ">= 44 runs"); §8.4.1 web load 20-80% of 8.1 Mbit/s x 10 combinations; §8.6 bounds mu in {1, 1.25, 1.5, 2, 4,
    none} x 5 seeds; App. B convergence and the Fig. 2 join x 5 seeds; §8.7 VMAF + PSNR providers, 20
    combinations x 4.1/8.2 Mbit/s (+ no-normalization ablation at 4.1). 200 s unless stated."""
    return Spec(name="full", bench_combos=44, pf_combos=12, dyn_seeds=8, xt4_combos=44, xt8_reps=44, web_combos=10,
                bound_seeds=5, prov_combos=20, join_seeds=5, conv_seeds=5,
                description="full: 44 combinations x 3 rates x 4 schemes (+ PF on 12), 8 dynamic seeds, 44 + 44 "
                            "cross-traffic runs, 10 combinations x 4 web loads, 5 seeds for bounds/convergence/join, "
                            "20 provider combinations x 2 rates")


def quick_spec() -> Spec:
    """``--quick``: every family at its smallest (2 combinations per rate, 1 seed, shorter runs); the
    verdicts are indicative only."""
    return Spec(name="quick", bench_combos=2, pf_combos=1, dyn_seeds=1, dyn_dur=240, xt4_combos=2, xt8_reps=1,
                web_loads=(0.4,), web_combos=1, bound_mus=(1, 0), bound_seeds=1, prov_combos=1, prov_rates=(4.1,),
                join_seeds=1, conv_seeds=1, duration_s=120,
                description="quick: 2 combinations x 3 rates, 1 seed, 120-s runs (240 s dynamic), every family")


# ----------------------------------------------------------------------------------------------
# Scenarios

_ASSETS: dict = {}


def assets(path: str | None = None, mode: str = "synthetic") -> dict:
    """Videos and value functions of a corpus mode (written once per process into a temporary
    directory, or ``path``)."""
    key = (path or "_tmp", mode)
    if key not in _ASSETS:
        sfx = "" if mode == "synthetic" else f"-{mode}"
        d = path or os.path.join(tempfile.gettempdir(), f"qoelab-minerva-assets-{os.getuid()}-v1{sfx}")
        _ASSETS[key] = {"files": corpus.prepare(d, mode=mode), "norm": corpus.normalization_files(d, ALPHA, mode=mode)}
    return _ASSETS[key]


def provider(name: str, clients: list, files: dict, videos, metric="vmaf", norm=None, objective="maxmin",
             normalization="file", mu: float | None = None) -> dict:
    """One Minerva provider. ``normalization = "file"``: ``norm`` is the path of the corpus-wide
    ``qoelab.normalization`` table of ``metric`` (absolute: a scenario dict resolves relative paths
    against the working directory)."""
    p = {"name": name, "controller": "minerva", "clients": clients, "metric": metric, "alpha": ALPHA,
         "w_min": W_MIN, "w_max": W_MAX,
         "objective": objective, "normalization": normalization}
    if normalization == "file":
        p["normalization_file"] = os.path.abspath(norm)
    if metric == "vmaf":
        p["utility"] = "client"
        p["value_functions"] = sorted({files[v]["vf"] for v in videos})
    else:
        p["utility"] = "client"      # V_h replaced by Eq. 2 (no PSNR value function): the h -> inf limit
    if mu is not None:
        p["w_min"], p["w_max"] = (1.0 / mu, float(mu)) if mu else (0.01, 100.0)
    return p


def _client(name, video_path, cc, start=0.0, metric="vmaf", **kw) -> dict:
    c = {"name": name, "abr": "mpc", "video": video_path, "cc": cc, "start": f"{start:.3f}s",
         "player": {"buffer_max": "60s", "quality_metric": metric}}
    c.update(kw)
    return c


def scenario(run: Run, ast: dict | None = None) -> dict:
    ast = ast or assets(mode=run.corpus)
    files, norm = ast["files"], ast["norm"]
    rng = random.Random(run.seed)
    topo = {"rate": f"{run.rate_mbps:g}Mbps", "rate_up": "10Mbps", "rtt": f"{RTT_MS}ms", "buffer": "1.5bdp"}
    if run.aqm == "pie":
        topo["aqm"] = "pie"
        topo["aqm_params"] = {"qdelay_ref": "15ms", "mode": "mahimahi"}
    else:
        topo["aqm"] = "pfifo"
    cc = {"cubic": "cubic", "bbr": "bbr"}.get(run.scheme, "wcubic")
    clients, providers, flows = [], [], []
    vs = run.videos
    if run.exp in ("dyn", "pool"):
        conc, sess_s = (4, 120.0) if run.exp == "dyn" else (8, 120.0)
        lam = conc / sess_s
        stop = run.duration_s - sess_s
        for v in vs:
            clients.append({"name": f"{v}", "abr": "mpc", "video": files[v]["video"], "cc": cc,
                            "arrival_rate": lam / len(vs), "stop": f"{stop:g}s", "video_duration": f"{sess_s:g}s",
                            "player": {"buffer_max": "60s", "quality_metric": "vmaf"}})
        if cc == "wcubic":
            p = provider("minerva", list(vs), files, vs, norm=norm["vmaf"])
            if run.scheme == "minerva_basic":      # ablation: Eq. 2 utility (no buffer or rebuffering term)
                p["utility"] = "basic"
                p.pop("value_functions", None)
            providers.append(p)
    elif run.exp == "xt":
        names = []
        for i, v in enumerate(vs):
            clients.append(_client(f"m{i}", files[v]["video"], "wcubic", rng.random()))
            clients.append(_client(f"c{i}", files[v]["video"], "cubic", rng.random()))
            names.append(f"m{i}")
        providers.append(provider("minerva", names, files, vs, norm=norm["vmaf"]))
    elif run.exp == "prov":
        n1, n2 = [], []
        for i, v in enumerate(vs):
            clients.append(_client(f"v{i}", files[v]["video"], cc, rng.random()))
            n1.append(f"v{i}")
        for i, v in enumerate(run.videos2):
            clients.append(_client(f"p{i}", files[v]["video"], cc, rng.random(), metric="psnr"))
            n2.append(f"p{i}")
        if cc == "wcubic":
            nz = "none" if run.scheme == "minerva_raw" else "file"
            providers.append(provider("vmaf", n1, files, vs, norm=norm["vmaf"], normalization=nz))
            providers.append(provider("psnr", n2, files, run.videos2, metric="psnr", norm=norm["psnr"],
                                      normalization=nz))
    else:
        names = []
        for i, v in enumerate(vs):
            start = 70.0 + rng.random() if (run.exp == "join" and i == 1) else rng.random()
            clients.append(_client(f"v{i}", files[v]["video"], cc, start))
            names.append(f"v{i}")
        if cc == "wcubic":
            kw = {}
            if run.scheme == "minerva_pf":
                kw = {"objective": "propfair", "normalization": "run"}
            if run.exp == "bound":
                kw["mu"] = run.mu
            p = provider("minerva", names, files, vs, norm=norm["vmaf"], **kw)
            if run.exp == "conv":
                p["utility"] = "basic"
                p.pop("value_functions", None)
            providers.append(p)
    if run.exp == "web":
        cdf_mean = _web_mean_bytes()
        flows.append({"kind": "web", "name": "web", "rtt": f"{RTT_MS}ms", "cc": "cubic",
                      "arrival_rate": round(run.load_mbps * 1e6 / 8.0 / cdf_mean, 4)})
    tables = ["flows", "segments"] + (["weights"] if providers else [])
    scn = {"scenario": {"name": f"minerva-{run.run_id}", "duration": f"{run.duration_s}s", "seed": run.seed},
           "topology": topo, "client": clients, "output": {"tables": tables, "sample_interval": "1s"}}
    if providers:
        scn["provider"] = providers
    if flows:
        scn["flow"] = flows
    return scn


def _web_mean_bytes() -> float:
    from qoelab import flowsizes
    return float(flowsizes.mean_size(flowsizes.builtin("web")))


# ----------------------------------------------------------------------------------------------
# Metric helpers (pure; unit-tested on hand-made frames)


def chunk_qoe(quality, stalls, beta: float = BETA, gamma: float = GAMMA) -> list[float]:
    """Eq. 1 per chunk: ``q_k - beta R_k - gamma |q_k - q_{k-1}|`` (no smoothness term for the first)."""
    out = []
    prev = None
    for q, r in zip(quality, stalls):
        v = float(q) - beta * float(r)
        if prev is not None:
            v -= gamma * abs(float(q) - prev)
        out.append(v)
        prev = float(q)
    return out


def client_qoe(seg, window_s: float = FAIR_S) -> dict:
    """Per-client metrics from one client's segment rows (pandas frame with ``segment``, ``quality``,
    ``stall_s``, ``t_request_s``, ``abandoned``, ``bitrate_bps``): played chunks requested within
    ``window_s`` of the client's first request (§8.1.1: fairness over the first 200 s), mean Eq. 1 QoE,
    mean quality, non-startup rebuffering (s), stall events, chunks."""
    s = seg[~seg["abandoned"].astype(bool)].sort_values("segment") if len(seg) else seg
    if not len(s):
        return {"qoe": float("nan"), "quality": float("nan"), "rebuf_s": 0.0, "stalls": 0, "chunks": 0}
    t0 = float(s["t_request_s"].min())
    s = s[s["t_request_s"] < t0 + window_s]
    q = chunk_qoe(s["quality"], s["stall_s"])
    return {"qoe": sum(q) / len(q), "quality": float(s["quality"].mean()), "rebuf_s": float(s["stall_s"].sum()),
            "stalls": int((s["stall_s"] > 1e-9).sum()), "chunks": int(len(s)),
            "bitrate_kbps": float(s["bitrate_bps"].mean()) / 1000.0}


def gap_closure(min_m: float, min_c: float, min_opt: float, floor: float = 2.0) -> float:
    """G = (min_M - min_C) / (min_OPT - min_C); NaN where OPT - Cubic < ``floor`` points (§3)."""
    d = min_opt - min_c
    return (min_m - min_c) / d if d >= floor else float("nan")


def fixed_rate_opt(qcurves: list, capacity: float, iters: int = 60) -> tuple[float, list]:
    """Max-min over constant rates: ``qcurves`` = per video [(rate, QoE), ...] (rate increasing). Each
    curve is made monotone (running maximum); the common level L is found by bisection so that
    sum_i r_i(L) <= capacity with r_i(L) the smallest rate reaching L (linear between grid points).
    Returns (L, rates)."""
    env = []
    for pts in qcurves:
        m, e = -math.inf, []
        for r, q in pts:
            m = max(m, q)
            e.append((r, m))
        env.append(e)

    def need(e, level):
        if level <= e[0][1]:
            return e[0][0]
        for (r0, q0), (r1, q1) in zip(e, e[1:]):
            if level <= q1:
                return r1 if q1 <= q0 else r0 + (level - q0) / (q1 - q0) * (r1 - r0)
        return math.inf

    lo = min(e[0][1] for e in env)
    hi = max(e[-1][1] for e in env)
    if sum(need(e, lo) for e in env) > capacity:
        return lo, [e[0][0] for e in env]
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if sum(need(e, mid) for e in env) <= capacity:
            lo = mid
        else:
            hi = mid
    return lo, [need(e, lo) for e in env]


def fluid_iteration(curves: list, capacity: float, steps: int = 10) -> list[dict]:
    """App. B fluid model: rates proportional to weights, ``w_i = r_i / U_i(r_i)`` (Eq. 3, no
    normalization), from the equal split. ``curves`` = [(rates, values)] piecewise linear from (0, 0).
    Returns per step {rates, utils, min}."""
    def u(c, r):
        return corpus.interp(r, [0.0] + list(c[0]), [0.0] + list(c[1]))
    n = len(curves)
    r = [capacity / n] * n
    out = []
    for _ in range(steps + 1):
        us = [u(c, x) for c, x in zip(curves, r)]
        out.append({"rates": list(r), "utils": us, "min": min(us)})
        w = [x / max(v, 1e-9) for x, v in zip(r, us)]
        tot = sum(w)
        r = [capacity * x / tot for x in w]
    return out


def fluid_optimum(curves: list, capacity: float) -> float:
    """Max-min of the piecewise-linear curves with sum of rates = capacity (bisection)."""
    pts = [[(x, corpus.interp(x, [0.0] + list(c[0]), [0.0] + list(c[1]))) for x in
            [k * capacity / 2000 for k in range(1, 2001)]] for c in curves]
    return fixed_rate_opt(pts, capacity, iters=80)[0]


def group_share(goodputs: dict, members) -> float:
    """Share of the members' goodput in the total (NaN without traffic)."""
    tot = sum(goodputs.values())
    return sum(goodputs.get(m, 0.0) for m in members) / tot if tot > 0 else float("nan")


def mean_abs_diff(weights, a: str, b: str, t0: float, t1: float, step: float = 1.0) -> float:
    """Time average of abs(U_a - U_b) over [t0, t1] from the ``weights`` table (the last update at or
    before each grid time; grid points before both have a utility are skipped)."""
    w = weights[weights["utility"].notna()]
    ser = {c: w[w["client"] == c].sort_values("time_s") for c in (a, b)}
    vals = []
    t = t0
    while t <= t1 + 1e-9:
        us = []
        for c in (a, b):
            g = ser[c]
            g = g[g["time_s"] <= t + 1e-9]
            if len(g):
                us.append(float(g["utility"].iloc[-1]))
        if len(us) == 2:
            vals.append(abs(us[0] - us[1]))
        t += step
    return sum(vals) / len(vals) if vals else float("nan")


def jfi(xs) -> float:
    xs = [float(x) for x in xs]
    s2 = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * s2) if s2 > 0 else float("nan")


def bootstrap_mean_ci(xs, reps: int = 2000, seed: int = 7) -> tuple[float, float, float, int]:
    """Mean and its bootstrap 95% CI."""
    xs = [float(x) for x in xs if x is not None and x == x]
    n = len(xs)
    if not n:
        return float("nan"), float("nan"), float("nan"), 0
    m = sum(xs) / n
    if n == 1:
        return m, float("nan"), float("nan"), 1
    rng = random.Random(seed)
    boots = sorted(sum(xs[rng.randrange(n)] for _ in range(n)) / n for _ in range(reps))
    return m, boots[int(0.025 * reps)], boots[int(0.975 * reps) - 1], n


# ----------------------------------------------------------------------------------------------
# Extraction


def _names(summary) -> list[str]:
    return [c.get("name") for c in summary.get("clients") or []]


def extract(run: Run, summary: dict, tables: dict) -> dict:
    """One record per run; per-client metrics in ``clients_json``."""
    from qoelab.reproduce.sprint import flow_goodputs
    seg, flows, fi, w = tables.get("segments"), tables.get("flows"), tables.get("flow_info"), tables.get("weights")
    names = _names(summary)
    summ = {c.get("name"): c for c in summary.get("clients") or []}
    window = math.inf if run.exp in ("dyn", "pool") else FAIR_S
    end = float(run.duration_s)
    g = flow_goodputs(flows, fi, 0.0, min(end, FAIR_S)) if flows is not None and fi is not None else {}
    gl = flow_goodputs(flows, fi, 20.0, min(end, FAIR_S)) if flows is not None and fi is not None else {}
    per = []
    for idx, nm in enumerate(names):
        s = seg[seg["client"] == idx] if seg is not None and len(seg) else seg
        m = client_qoe(s, window) if s is not None else {}
        c = summ.get(nm) or {}
        m.update({"name": nm, "startup_s": c.get("startup_s") or 0.0, "goodput_bps": g.get(nm, 0.0),
                  "goodput_late_bps": gl.get(nm, 0.0), "segments": c.get("segments", 0),
                  "weight_mean": (c.get("flow_control") or {}).get("weight_mean")})
        m["rebuf_total_s"] = m.get("rebuf_s", 0.0) + m["startup_s"]
        per.append(m)
    rec = {"run_id": run.run_id, "exp": run.exp, "scheme": run.scheme, "aqm": run.aqm, "rate_mbps": run.rate_mbps,
           "videos": ".".join(run.videos), "videos2": ".".join(run.videos2), "rep": run.rep, "mu": run.mu,
           "load_mbps": run.load_mbps, "seed": run.seed, "duration_s": run.duration_s, "n_clients": len(per)}
    qs = [p["qoe"] for p in per if p.get("qoe") == p.get("qoe")]
    rec["min_qoe"] = min(qs) if qs else float("nan")
    rec["max_qoe"] = max(qs) if qs else float("nan")
    rec["spread_qoe"] = rec["max_qoe"] - rec["min_qoe"] if qs else float("nan")
    rec["sum_log_qoe"] = sum(math.log(max(q, 1.0)) for q in qs) if qs else float("nan")
    rec["jfi_goodput"] = jfi([p["goodput_bps"] for p in per]) if per else float("nan")
    rec["total_goodput_bps"] = sum(p["goodput_bps"] for p in per if not str(p["name"]).startswith("web"))
    if run.exp == "xt":
        mm = [p for p in per if str(p["name"]).startswith("m")]
        cc = [p for p in per if str(p["name"]).startswith("c")]
        rec["min_qoe_m"] = min(p["qoe"] for p in mm)
        rec["min_qoe_c"] = min(p["qoe"] for p in cc)
        rec["share_m"] = group_share({p["name"]: p["goodput_bps"] for p in per}, [p["name"] for p in mm])
    if run.exp == "prov":
        vv = [p for p in per if str(p["name"]).startswith("v")]
        pp = [p for p in per if str(p["name"]).startswith("p")]
        rec["min_qoe_vmaf"] = min(p["qoe"] for p in vv)
        rec["min_qoe_psnr"] = min(p["qoe"] for p in pp)
        rec["share_vmaf"] = group_share({p["name"]: p["goodput_bps"] for p in per}, [p["name"] for p in vv])
    if run.exp in ("dyn", "pool"):
        done = [p for p in per if p.get("chunks", 0) >= 30]
        rec["sessions"] = len(per)
        rec["sessions_done"] = len(done)
        for k in ("quality", "rebuf_s", "rebuf_total_s", "stalls", "qoe"):
            vals = [float(p[k]) for p in done if p.get(k) == p.get(k)]
            rec[f"mean_{k}"] = sum(vals) / len(vals) if vals else float("nan")
        rec["min_qoe"] = min((p["qoe"] for p in done), default=float("nan"))
        qd = sorted(p["qoe"] for p in done)
        rec["p10_qoe"] = qd[int(0.1 * (len(qd) - 1))] if qd else float("nan")
    if run.exp == "join" and seg is not None and len(seg):
        a, b = seg[seg["client"] == 0], seg[seg["client"] == 1]
        t0 = float(b["t_request_s"].min()) if len(b) else 70.0
        bw = b[(b["t_request_s"] >= t0) & (b["t_request_s"] < t0 + 60)]
        aw = a[(a["t_request_s"] >= t0) & (a["t_request_s"] < t0 + 60)]
        rec["new_quality"] = float(bw["quality"].mean()) if len(bw) else float("nan")
        rec["inc_buffer"] = float(aw["buffer_after_s"].mean()) if len(aw) else float("nan")
        rec["inc_stall"] = float(aw["stall_s"].sum()) if len(aw) else 0.0
    if run.exp == "bound" or run.exp == "conv":
        ga, gb = per[0]["goodput_late_bps"], per[1]["goodput_late_bps"]
        eq = (ga + gb) / 2.0
        rec["rel_a"] = ga / eq if eq > 0 else float("nan")
        rec["rel_b"] = gb / eq if eq > 0 else float("nan")
        rec["capacity_mbps"] = (ga + gb) / 1e6
    if w is not None and len(w):
        upd = w[w["utility"].notna()]
        rec["updates"] = int(len(upd))
        rec["clamp_frac"] = float(upd["clamped"].astype(bool).mean()) if len(upd) else float("nan")
        if run.exp == "conv":
            rec["u_absdiff"] = mean_abs_diff(w, "v0", "v1", end / 2, end)
    rec["clients_json"] = json.dumps(per, default=float)
    return rec


# ----------------------------------------------------------------------------------------------
# Fixed-rate optimum: qoelab.minerva.fixed_rate_optimal with the clients' ABR (trace mode)

OPT_EFF = 0.95      # capacity used by OPT = link rate x 0.95 (payload of 1500-B packets, ACK clocking)
OPT_GRID = 50       # fixed_rate_optimal's default grid: rates C k / 50, k = 1..50


def opt_level(rate_mbps: float, videos: tuple, duration_s: float, ast: dict | None = None,
              mode: str = "synthetic") -> dict:
    """The Fixed-Rate Optimal (docs/minerva-tools.md) of ``videos`` on a link of ``rate_mbps``: capacity
    ``rate_mbps x OPT_EFF``, Q_i(r) from one ``mpc`` client per video with the reproduction's 60-s player
    buffer, alone on a constant link in trace mode for ``duration_s`` (the run length)."""
    from qoelab import minerva as mnv
    ast = ast or assets(mode=mode)
    vids = []
    for v in videos:
        with open(ast["files"][v]["video"]) as f:
            vids.append(json.load(f))
    return mnv.fixed_rate_optimal(vids, rate_mbps * OPT_EFF * 1e6, abr="mpc", metric="vmaf", beta=BETA, gamma=GAMMA,
                                  window_s=float(duration_s), grid_points=OPT_GRID, rtt=f"{RTT_MS}ms",
                                  client={"player": {"buffer_max": "60s"}})


def opt_rows(rate_mbps: float, videos: tuple, fro: dict) -> list[dict]:
    """opt.parquet rows of one fixed_rate_optimal result: one per video (allocated rate and QoE, the
    level, the monotone curve as JSON)."""
    combo = ".".join(videos)
    return [{"rate_mbps": rate_mbps, "videos": combo, "video": v["name"], "alloc_mbps": v["rate_bps"] / 1e6,
             "qoe": v["qoe"], "min_qoe": fro["min_qoe"], "spare_mbps": fro["spare_bps"] / 1e6,
             "curve_json": json.dumps({"rates_bps": c["rates_bps"], "qoe": c["qoe"]})}
            for v, c in zip(fro["videos"], fro["curves"])]


# ----------------------------------------------------------------------------------------------
# Running


def sweep_extract(res, point: dict) -> dict:
    """The sweep engine's extract hook: :func:`extract` of the run (``point["payload"]``)."""
    run = point["payload"]
    tabs = {}
    for name in ("flows", "flow_info", "segments", "weights"):
        try:
            tabs[name] = res.table(name)
        except KeyError:
            tabs[name] = None
    return {"run": extract(run, res.summary, tabs)}


@dataclass(frozen=True)
class OptCell:
    """One Fixed-Rate-Optimal computation (trace-mode searches over constant rates): a task of the sweep."""
    rate_mbps: float
    videos: tuple
    duration_s: float
    seed: int = 0
    corpus: str = "synthetic"

    @property
    def run_id(self) -> str:
        c = "" if self.corpus == "synthetic" else f"-{self.corpus}"
        return f"opt-{self.rate_mbps:g}-{'.'.join(self.videos)}{c}"


def opt_task(point: dict) -> dict:
    """The sweep engine's task for an :class:`OptCell` (``point["payload"]``): its opt.parquet rows."""
    c = point["payload"]
    return {"rows": opt_rows(c.rate_mbps, c.videos, opt_level(c.rate_mbps, c.videos, c.duration_s, mode=c.corpus))}


def run_all(runs: list, opt_cells: list, store_dir: str, jobs: int = 0, log=None,
            mode: str = "synthetic") -> tuple[list, list, dict]:
    """The fixed-rate optima (trace-mode computations: tasks of the sweep) and every scenario run, in
    one sweep into the resumable store ``store_dir``. Returns (opt results {"opt", "rows", "error"},
    run records in input order, the sweep's counts)."""
    cells = [OptCell(rate, tuple(vs), dur, corpus=mode) for rate, vs, dur in opt_cells]
    items = cells + list(runs)
    recs, res = common.run_on_sweep(f"minerva-{len(runs)}", items, scenario, "qoelab.reproduce.minerva:sweep_extract",
                                    store_dir, jobs, None, log, _cost,
                                    task_of=lambda it: "qoelab.reproduce.minerva:opt_task" if isinstance(it, OptCell)
                                    else None)
    opt = []
    for c, rec in zip(cells, recs[:len(cells)]):
        ok = rec is not None and rec.get("status") == "ok"
        opt.append({"opt": c.run_id[4:].removesuffix(f"-{mode}"), "rows": (rec.get("metrics") or {}).get("rows", []) if ok else [],
                    "error": None if ok else (rec or {}).get("error", "missing from the store")})
    out = [common.record_metrics(rec, {"run_id": run.run_id, "exp": run.exp, "scheme": run.scheme})[0]
           for run, rec in zip(runs, recs[len(cells):])]
    return opt, out, res


def _cost(it) -> float:
    if isinstance(it, OptCell):
        return 1e9 + it.rate_mbps            # the searches are the longest: first
    return it.rate_mbps * it.duration_s

# ----------------------------------------------------------------------------------------------
# The whole reproduction


def _is_ours(path: str) -> bool:
    return common.is_ours(path, "minerva")


def check_out_dir(out_dir: str) -> str:
    return common.check_out_dir(out_dir, "minerva")


def reproduce(out_dir: str = "results/minerva", quick: bool = False, jobs: int = 0, log=None,
              spec: Spec | None = None, corpus_mode: str = "hd") -> dict:
    """Run, evaluate M1-M22, write DIR/{runs.parquet, opt.parquet, claims.json, meta.json, report.html,
    figures/*.png} atomically. Returns the meta dict (with the claims)."""
    import pandas as pd

    from qoelab.reproduce import minerva_claims, minerva_report
    if jobs is not None and jobs < 0:
        raise InputError(None, "--jobs", "a number of worker processes >= 1", str(jobs))
    corpus.check_mode(corpus_mode)
    out_dir = check_out_dir(out_dir)
    spec = spec or replace(quick_spec() if quick else full_spec(), corpus=corpus_mode)
    mode = spec.corpus
    runs = spec.runs()
    log = log or (lambda msg: None)
    njobs = jobs or os.cpu_count() or 1
    t0 = time.perf_counter()
    ast = assets(mode=mode)       # videos and value functions, once, before the workers start
    cells = sorted({(r.rate_mbps, r.videos) for r in runs if r.exp == "bench"})
    log(f"minerva: {len(runs)} runs + {len(cells)} x {OPT_GRID} fixed-rate runs (trace mode) "
        f"({spec.name}), {njobs} worker process{'es' if njobs > 1 else ''}")
    store_dir = os.path.join(out_dir, "sweep")
    opt, recs, sres = run_all(runs, [(rate, vs, float(spec.duration_s)) for rate, vs in cells], store_dir,
                              jobs=njobs, log=log, mode=mode)
    wall_runs = time.perf_counter() - t0
    df = pd.DataFrame(recs)
    odf = pd.DataFrame([row for o in opt for row in o["rows"]])
    claims = minerva_claims.evaluate(df, odf, spec)
    failures = [(r["run_id"], r["error"]) for r in recs if r.get("error")]
    failures += [("opt-" + o["opt"], o["error"]) for o in opt if o.get("error")]
    meta = {"reproduction": "minerva",
            "paper": "Nathan, Sivaraman, Addanki, Khani, Goyal, Alizadeh: End-to-End Transport for Video QoE "
                     "Fairness, SIGCOMM 2019",
            "grid": spec.name, "grid_description": spec.description, "spec": asdict(spec), "runs": len(runs),
            "corpus": mode, "videos": list(corpus.pool(mode)), "rate_scale": corpus.scale(mode),
            "opt_runs": len(cells) * OPT_GRID, "opt_cells": len(cells), "failed": len(failures),
            "failures": failures[:50], "jobs": njobs, "wall_s_runs": round(wall_runs, 2),
            "norm": _norm_meta(ast["norm"]), "alpha": ALPHA,
            "runs_executed": sres["ran"], "runs_resumed": sres["skipped"], "claims": claims}
    with outdir.atomic_dir(out_dir) as tmp:
        for m, path in ast["norm"].items():
            with open(path) as f, open(os.path.join(tmp, f"norm-{m}.json"), "w") as g:
                g.write(f.read())
        df.to_parquet(os.path.join(tmp, "runs.parquet"), index=False)
        odf.to_parquet(os.path.join(tmp, "opt.parquet"), index=False)
        common.write_claims_report_meta(tmp, claims, meta,
                                        lambda: minerva_report.write_report(tmp, df, odf, claims, meta), t0)
        os.rename(store_dir, os.path.join(tmp, "sweep"))     # the store moves with the results
    meta["out_dir"] = out_dir
    return meta


def _norm_meta(files: dict) -> dict:
    """{metric: {file, alpha, points, utility range, mean-rate range}} of the normalization tables."""
    out = {}
    for m, path in files.items():
        with open(path) as f:
            d = json.load(f)
        out[m] = {"file": f"norm-{m}.json", "alpha": d["alpha"], "points": len(d["utility"]),
                  "utility": [d["utility"][0], d["utility"][-1]],
                  "mean_rate_mbps": [d["mean_rate_bps"][0] / 1e6, d["mean_rate_bps"][-1] / 1e6]}
    return out


def rewrite_report(out_dir: str) -> dict:
    """Re-evaluate the claims and rewrite claims.json, meta.json and report.html from runs.parquet and
    opt.parquet (after a change to the claims or figures; no simulation)."""
    import pandas as pd

    from qoelab.reproduce import minerva_claims, minerva_report
    if not _is_ours(out_dir):
        raise InputError(out_dir, None, message="not a minerva reproduction (no meta.json from one)")
    df = pd.read_parquet(os.path.join(out_dir, "runs.parquet"))
    df["error"] = df["error"].where(df["error"].notna(), None)
    odf = pd.read_parquet(os.path.join(out_dir, "opt.parquet"))
    with open(os.path.join(out_dir, "meta.json")) as f:
        meta = json.load(f)
    spec = replace(quick_spec() if meta.get("grid") == "quick" else full_spec(), corpus=meta.get("corpus", "synthetic"))
    meta["claims"] = minerva_claims.evaluate(df, odf, spec)
    common.dump_json(os.path.join(out_dir, "claims.json"), meta["claims"], None)
    common.dump_json(os.path.join(out_dir, "meta.json"), meta)
    minerva_report.write_report(out_dir, df, odf, meta["claims"], meta)
    return meta


__all__ = ["Run", "Spec", "rewrite_report", "full_spec", "quick_spec", "scenario", "extract", "sweep_extract", "run_all", "reproduce",
           "chunk_qoe", "client_qoe", "gap_closure", "fixed_rate_opt", "fluid_iteration", "fluid_optimum",
           "group_share", "mean_abs_diff", "jfi", "bootstrap_mean_ci", "median_ci", "opt_level", "opt_rows"]
