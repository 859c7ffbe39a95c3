"""The HAS-over-AQM testbed (Livi, Sassatelli, Urvoy-Keller) reproduced in the simulator.

Paper: "HTTP Adaptive Streaming and Access Router Management: the Users' and Network's
Perspectives" (testbed serl/hls-bba-testbed). Setup mapping, deviations and measured verdicts:
docs/reproductions/livi.md.

The grid (:func:`full_grid`): BBA2, BBA3, Classic1, Classic2 x droptail (``pfifo``), ARED, CoDel x
router buffer {6, 1, 0.5, 0.25} BDP by the testbed's rule (packets = 10 Mbit/s x 80 ms x k /
(8 x 1500), rounded, at least 1: 400, 67, 33, 17 packets) x 1-3 clients (ARED with 1 client only, as
in the testbed) x per-client bandwidth 600 kbit/s-3 Mbit/s in steps of 300 kbit/s (the bottleneck is
that times the number of clients), 80 ms RTD, plus the paper's variable profile (p2; rates per
client, times the number of clients; the testbed's other profile p1 is defined but not run). Every run lasts 700 s (the testbed kills players after
700 s) and streams the 10-minute, 8-rung, 2-s synthetic ``has-testbed`` ladder (bbb8).

:func:`quick_grid` is the documented subset behind ``--quick`` (see its docstring).

Seeds: each run's seed is derived from its identifier (sha256), never from its position in the
grid, so a run gives the same numbers alone, in the quick subset or in the full grid, with any
number of worker processes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field

from qoelab import outdir
from qoelab.reproduce import common
from qoelab.errors import InputError

from qoelab.reproduce.livi_params import (ALGO_LABEL, ALGORITHMS, AQM_LABEL, AQMS, BUFFERS_BDP,  # noqa: F401
                                          CLIENTS_BY_AQM, DURATION_S, FAIR_SHARES_BPS, MTU, PROFILES,
                                          QUICK_SECONDS, REF_BW_BPS, RTD_S, START_JITTER_S, START_S, TABLES,
                                          VIDEO_S, VIDEO_SEED, buffer_packets, mean_ci, profile_mean_bps, t95)


def capacity_integral_bits(run: "Run", t0: float, t1: float) -> float:
    """Bits the bottleneck can carry in [t0, t1] (all clients)."""
    if t1 <= t0:
        return 0.0
    if run.profile == "static":
        return run.fair_share_bps * run.clients * (t1 - t0)
    steps = PROFILES[run.profile]
    total = 0.0
    for i, (s0, r) in enumerate(steps):
        s1 = steps[i + 1][0] if i + 1 < len(steps) else math.inf
        a, b = max(s0, t0), min(s1, t1)
        if b > a:
            total += (b - a) * r * run.clients
    return total


# ----------------------------------------------------------------------------------------------
# The grid


@dataclass(frozen=True)
class Run:
    algo: str
    aqm: str
    buffer_bdp: float
    clients: int
    profile: str                 # "static", "p1" or "p2"
    fair_share_bps: int          # static: the per-client bandwidth; variable: 0
    rep: int = 0

    @property
    def buffer_pkts(self) -> int:
        return buffer_packets(self.buffer_bdp)

    @property
    def bandwidth_label(self) -> str:
        return f"{self.fair_share_bps // 1000}k" if self.profile == "static" else self.profile

    @property
    def run_id(self) -> str:
        return (f"{self.algo}-{self.aqm}-{round(self.buffer_bdp * 100)}pct-n{self.clients}-"
                f"{self.bandwidth_label}-r{self.rep}")

    @property
    def seed(self) -> int:
        return int.from_bytes(hashlib.sha256(self.run_id.encode()).digest()[:4], "big") & 0x7FFFFFFF

    @property
    def nominal_fair_share_bps(self) -> float:
        """Per-client bandwidth used to normalise ARB: the static value, or the profile's mean over the video."""
        return float(self.fair_share_bps) if self.profile == "static" else profile_mean_bps(self.profile)

    def starts_s(self) -> list[float]:
        rng = random.Random(self.seed)
        return [START_S + round(rng.random() * START_JITTER_S, 3) for _ in range(self.clients)]


@dataclass
class GridSpec:
    """What to run. ``reps`` maps (profile kind, clients) to repetitions; see :func:`reps_for`."""
    name: str
    algos: tuple = ALGORITHMS
    aqm_clients: dict = field(default_factory=lambda: dict(CLIENTS_BY_AQM))
    buffers: tuple = BUFFERS_BDP
    fair_shares: tuple = FAIR_SHARES_BPS
    profiles: tuple = ("p2",)
    static_reps: dict = field(default_factory=lambda: {1: 1, 2: 1, 3: 1})
    variable_reps: dict = field(default_factory=lambda: {1: 2, 2: 4, 3: 4})
    # optional restriction of (aqm, buffer) pairs per client count, for the quick subset
    only: dict | None = None
    description: str = ""

    def runs(self) -> list[Run]:
        out = []
        for algo in self.algos:
            for aqm, ns in self.aqm_clients.items():
                for n in ns:
                    for k in self.buffers:
                        if self.only is not None and (aqm, k) not in self.only.get(n, ()):
                            continue
                        for bw in self.fair_shares.get(n, ()) if isinstance(self.fair_shares, dict) \
                                else self.fair_shares:
                            for rep in range(self.static_reps.get(n, 0)):
                                out.append(Run(algo, aqm, float(k), n, "static", int(bw), rep))
                        profs = self.profiles.get(n, ()) if isinstance(self.profiles, dict) else self.profiles
                        for prof in profs:
                            for rep in range(self.variable_reps.get(n, 0)):
                                out.append(Run(algo, aqm, float(k), n, prof, 0, rep))
        return out


def full_grid() -> GridSpec:
    """The paper's grid.

    Static: 4 algorithms x {DT, CoDel} x {1, 2, 3} clients + ARED x 1 client, x 4 buffers x 9
    per-client bandwidths (0.6-3 Mbit/s), one run each (the bandwidth sweep gives the samples the
    confidence intervals are taken over): 1008 runs. Variable: the paper's profile (p2: 4, 2.8, 1.5,
    1, 0.6, 4 Mbit/s per client, 100 s each), repeated 2 times (1 client) or 4 times (2-3 clients)
    as the paper repeats its experiments, repetitions differing by the seeded start jitter (and
    ARED's random drops): 352 runs. The testbed's other profile (p1) is defined in PROFILES but not
    run by default.
    """
    return GridSpec(name="full", description=full_grid.__doc__.strip().splitlines()[0])


def quick_grid() -> GridSpec:
    """The ``--quick`` subset (44 runs, under a minute on 2 cores).

    Just what the main claims need, with the paper's dimensions cut down: all 4 algorithms;
    droptail and CoDel only; 1 client at 1.8 Mbit/s with DT 6 and 0.25 BDP and CoDel 6 BDP (loss
    phases, RTT inflation); 2 clients at 1.2 and 2.4 Mbit/s with DT and CoDel at 6 and 0.25 BDP
    (loss phases, quality unfairness); static bandwidth only. No ARED, 3-client or variable-profile
    runs; the figures of those families are listed as not run.
    """
    only = {1: {("pfifo", 6.0), ("pfifo", 0.25), ("codel", 6.0)},
            2: {("pfifo", 6.0), ("pfifo", 0.25), ("codel", 6.0), ("codel", 0.25)}}
    return GridSpec(name="quick", aqm_clients={"pfifo": (1, 2), "codel": (1, 2)},
                    buffers=(6.0, 0.25), fair_shares={1: (1_800_000,), 2: (1_200_000, 2_400_000)},
                    profiles=(), static_reps={1: 1, 2: 1}, variable_reps={}, only=only,
                    description="subset: DT/CoDel, 6 and 0.25 BDP, 1 client at 1.8 Mbit/s, 2 clients at "
                                "1.2 and 2.4 Mbit/s, static")


def rate_str(bps: float) -> str:
    return f"{int(round(bps))}bps"


def scenario(run: Run) -> dict:
    """The scenario dict of one run (the video-client contract of docs/scenario-format.md)."""
    topo = {"rate_up": "100Mbps", "rtt": f"{int(RTD_S * 1000)}ms", "buffer": f"{run.buffer_pkts}pkts",
            "aqm": run.aqm}
    if run.profile == "static":
        topo["rate"] = rate_str(run.fair_share_bps * run.clients)
    else:
        topo["rate_profile"] = [[f"{t}s", rate_str(r * run.clients)] for t, r in PROFILES[run.profile]]
    if run.aqm == "codel":
        topo["aqm_params"] = {"interval": f"{int(RTD_S * 1000)}ms"}   # interval = path RTT (testbed)
    # ARED: the core's defaults are the testbed's rule (limit B, min B/6, max B/2, avpkt 1000,
    # adaptive, bandwidth = link rate).
    clients = []
    for i, start in enumerate(run.starts_s()):
        clients.append({"name": f"c{i}", "count": 1, "abr": run.algo, "video": "synthetic:has-testbed",
                        "video_seed": VIDEO_SEED, "video_duration": f"{VIDEO_S}s", "rtt": f"{int(RTD_S * 1000)}ms",
                        "start": f"{start:.3f}s", "cc": "cubic"})
    return {"scenario": {"name": f"livi-{run.run_id}", "duration": f"{DURATION_S}s", "seed": run.seed},
            "topology": topo, "client": clients, "output": {"loss_phases": True, "tables": list(TABLES)}}


# ----------------------------------------------------------------------------------------------
# Metric extraction


def _mean(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(xs) / len(xs) if xs else float("nan")


def _num(d, k, default=float("nan")):
    v = d.get(k) if isinstance(d, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def link_utilization(run: Run, segments=None, flows=None, flow_info=None) -> float:
    """The testbed's LU: data delivered to the clients over the capture span (first request to last
    byte) divided by what the bottleneck could carry in that span.

    From the ``segments`` table when present (payload bytes of every segment, first request to
    last byte); else from the ``flows`` samples of the video flows (bytes received; the span from
    the first to the last sample where the count grows)."""
    if segments is not None and len(segments):
        t0 = float(segments["t_request_s"].min())
        t1 = float(segments["t_last_byte_s"].max())
        cap = capacity_integral_bits(run, t0, t1)
        return float(segments["bytes"].sum()) * 8.0 / cap if cap > 0 else float("nan")
    if flows is None or flow_info is None or not len(flows):
        return float("nan")
    vids = set(flow_info.loc[flow_info["kind"] == "video", "flow"])
    f = flows[flows["flow"].isin(vids)]
    if not len(f):
        return float("nan")
    tot = f.groupby("time_s")["bytes_received"].sum().sort_index()
    grow = tot.diff().fillna(tot.iloc[0]) > 0
    if not grow.any():
        return float("nan")
    times = tot.index[grow]
    # the first growing sample covers the interval before it
    step = float(tot.index[1] - tot.index[0]) if len(tot) > 1 else 0.1
    t0 = max(0.0, float(times[0]) - step)
    t1 = float(times[-1])
    start_bytes = float(tot[tot.index < times[0]].iloc[-1]) if (tot.index < times[0]).any() else 0.0
    cap = capacity_integral_bits(run, t0, t1)
    return (float(tot[times[-1]]) - start_bytes) * 8.0 / cap if cap > 0 else float("nan")


def extract(run: Run, summary: dict, segments=None, flows=None, flow_info=None) -> tuple[dict, list[dict]]:
    """One run's record (paper metrics) and one record per client.

    ARB = avg bitrate / per-client bandwidth; INS = switches / segments (%); RBR = (stalls +
    startup) / session (%); RTTi = mean smoothed RTT of the download connection / RTD (%); QU =
    max - min of the clients' quality levels (% scale); LU = bytes delivered to the clients from the
    first request to the last byte over what the bottleneck could carry in that span (the testbed's
    10-ms-binned rate averaged over the capture); loss phases summed over the clients.
    """
    clients = summary.get("clients") or []
    video = summary.get("video") or {}
    link = (summary.get("links") or [{}])[0]
    fs = run.nominal_fair_share_bps
    crec = []
    for c in clients:
        lp = c.get("loss_phases") or {}
        srtt = _num(c, "srtt_mean_ms")
        crec.append({
            "run_id": run.run_id, "client": c.get("name"), "algo": run.algo, "aqm": run.aqm,
            "buffer_bdp": run.buffer_bdp, "clients": run.clients, "profile": run.profile,
            "fair_share_bps": run.fair_share_bps, "rep": run.rep,
            "segments": _num(c, "segments"), "avg_bitrate_bps": _num(c, "avg_bitrate_bps"),
            "arb": _num(c, "avg_bitrate_bps") / fs if fs else float("nan"),
            "quality_level_pct": _num(c, "quality_level_pct"),
            "ins_pct": _num(c, "instability_pct"),
            "rbr_pct": 100.0 * _num(c, "rebuffer_ratio_with_startup"),
            "stall_count": _num(c, "stall_count"), "rebuffer_s": _num(c, "rebuffer_s"),
            "startup_s": _num(c, "startup_s"),
            "rtti_pct": 100.0 * srtt / (RTD_S * 1000.0) if srtt == srtt else float("nan"),
            "srtt_mean_ms": srtt, "goodput_bps": _num(c, "goodput_bps"),
            "loss_B": int(lp.get("B", 0)), "loss_T": int(lp.get("T", 0)), "loss_C": int(lp.get("C", 0)),
        })

    lu = link_utilization(run, segments, flows, flow_info)
    qd = link.get("queue_delay_ms") or {}
    rec = {
        "run_id": run.run_id, "algo": run.algo, "aqm": run.aqm, "buffer_bdp": run.buffer_bdp,
        "buffer_pkts": run.buffer_pkts, "clients": run.clients, "profile": run.profile,
        "fair_share_bps": run.fair_share_bps, "rep": run.rep, "seed": run.seed,
        "arb": _mean([c["arb"] for c in crec]),
        "ins_pct": _mean([c["ins_pct"] for c in crec]),
        "rbr_pct": _mean([c["rbr_pct"] for c in crec]),
        "rtti_pct": _mean([c["rtti_pct"] for c in crec]),
        "qu_pct": _num(video, "quality_unfairness_pct", 0.0 if run.clients == 1 else float("nan")),
        "lu": lu,
        "link_utilization": _num(link, "utilization"),
        "queue_delay_mean_ms": _num(qd, "mean"),
        "drops": _num(link, "dropped_packets", _num(link, "drops")),
        "stall_count": sum(c["stall_count"] for c in crec if c["stall_count"] == c["stall_count"]),
        "jfi_goodput": _num(video, "jfi_goodput"),
        "loss_B": sum(c["loss_B"] for c in crec), "loss_T": sum(c["loss_T"] for c in crec),
        "loss_C": sum(c["loss_C"] for c in crec),
    }
    return rec, crec


# ----------------------------------------------------------------------------------------------
# Running (on the sweep engine: qoelab.sweep)

#: The sweep columns of a livi run (its grid coordinates); ``rep`` and ``seed`` are the sweep's own.
COLUMNS = ["run_id", "algo", "aqm", "buffer_bdp", "buffer_pkts", "clients", "profile", "fair_share_bps"]


def _point(run: Run) -> dict:
    return {"run_id": run.run_id, "algo": run.algo, "aqm": run.aqm, "buffer_bdp": run.buffer_bdp,
            "buffer_pkts": run.buffer_pkts, "clients": run.clients, "profile": run.profile,
            "fair_share_bps": run.fair_share_bps}


def _run_of(point: dict, rep: int) -> Run:
    return Run(point["algo"], point["aqm"], float(point["buffer_bdp"]), int(point["clients"]), point["profile"],
               int(point["fair_share_bps"]), int(rep))


def _tables(res) -> dict:
    tabs = {}
    for name in ("segments", "flows", "flow_info"):
        try:
            tabs[name] = res.table(name)
        except KeyError:
            tabs[name] = None
        if name == "segments" and tabs[name] is not None and len(tabs[name]):
            break
    return tabs


def sweep_extract(res, point: dict) -> dict:
    """The sweep engine's extract hook: the paper's metrics of one run (run and per-client records)."""
    run = _run_of(point, point["rep"])
    tabs = _tables(res)
    rec, crec = extract(run, res.summary, tabs.get("segments"), tabs.get("flows"), tabs.get("flow_info"))
    return {"run": rec, "clients": crec}


def execute(run: Run, runner=None) -> dict:
    """Run one grid point alone and return {"run": record, "clients": [...]} (record["error"] is set
    if it failed)."""
    t0 = time.perf_counter()
    try:
        from qoelab import results
        res = (runner or results.run)(scenario(run))
        tabs = _tables(res)
        rec, crec = extract(run, res.summary, tabs.get("segments"), tabs.get("flows"), tabs.get("flow_info"))
        err = None
    except Exception as e:  # recorded, reported, and the CLI exits non-zero
        rec, crec, err = {"run_id": run.run_id, **_keys(run)}, [], f"{type(e).__name__}: {e}".splitlines()[0]
    rec["wall_s"] = round(time.perf_counter() - t0, 4)
    rec["error"] = err
    return {"run": rec, "clients": crec}


def _keys(run: Run) -> dict:
    return {"algo": run.algo, "aqm": run.aqm, "buffer_bdp": run.buffer_bdp, "buffer_pkts": run.buffer_pkts,
            "clients": run.clients, "profile": run.profile, "fair_share_bps": run.fair_share_bps,
            "rep": run.rep, "seed": run.seed}


def grid_sweep(spec: GridSpec):
    """The grid as a sweep (qoelab.sweep): one run per grid point, its columns, the extract hook."""
    from qoelab.sweep import spec as sspec
    runs = [sspec.Run(i, r.rep, r.seed, _point(r), scenario(r)) for i, r in enumerate(spec.runs())]
    grid = {id(sr): r for sr, r in zip(runs, spec.runs())}
    runs.sort(key=lambda sr: -_cost(grid[id(sr)]))     # run the longest first, so that the tail is short
    return sspec.programmatic(f"livi-{spec.name}", runs,
        COLUMNS, base_src="<livi>", tables=[], extract="qoelab.reproduce.livi:sweep_extract",
        description=spec.description)


def run_grid(spec: GridSpec, store_dir: str, jobs: int = 0, runner=None, log=None) -> tuple:
    """Run the grid on the sweep engine into the store ``store_dir`` (resumable); returns (runs
    DataFrame, clients DataFrame, sweep result). A custom ``runner`` (scenario dict -> object with
    ``.summary`` and ``.table(name)``) runs everything in this process (tests)."""
    from qoelab.sweep import runner as srunner
    sw = grid_sweep(spec)
    res = srunner.run(sw, store_dir, jobs=jobs, force=True, log=log, sim=runner)
    df, cdf = frames(store_dir)
    return df, cdf, res


def frames(store_dir: str) -> tuple:
    """The livi runs and clients tables from a sweep store (grid order)."""
    from qoelab.sweep.store import Store
    st = Store(store_dir)
    df = st.sql("SELECT * FROM runs ORDER BY index")
    rec_cols = ["run_id", "algo", "aqm", "buffer_bdp", "buffer_pkts", "clients", "profile", "fair_share_bps",
                "rep", "seed", "arb", "ins_pct", "rbr_pct", "rtti_pct", "qu_pct", "lu", "link_utilization",
                "queue_delay_mean_ms", "drops", "stall_count", "jfi_goodput", "loss_B", "loss_T", "loss_C",
                "wall_s", "error"]
    for c in rec_cols:
        if c not in df.columns:
            df[c] = float("nan")
    import pandas as pd
    df = df[rec_cols].copy()
    df["error"] = pd.Series([e if isinstance(e, str) else None for e in df["error"]], index=df.index, dtype=object)
    cdf = st.sql("SELECT * FROM clients ORDER BY index, client")
    keep = ["run_id", "client", "algo", "aqm", "buffer_bdp", "clients", "profile", "fair_share_bps", "rep",
            "segments", "avg_bitrate_bps", "arb", "quality_level_pct", "ins_pct", "rbr_pct", "stall_count",
            "rebuffer_s", "startup_s", "rtti_pct", "srtt_mean_ms", "goodput_bps", "loss_B", "loss_T", "loss_C"]
    cdf = cdf[[c for c in keep if c in cdf.columns]].copy() if len(cdf) else cdf
    return df, cdf


def _cost(run: Run) -> float:
    bw = run.fair_share_bps if run.profile == "static" else profile_mean_bps(run.profile)
    return bw * run.clients


# ----------------------------------------------------------------------------------------------
# Statistics and claims

def paired(df, metric: str, by: str, a, b, match: list[str]):
    """Paired differences metric[by == a] - metric[by == b] over rows equal on ``match``."""
    left = df[df[by] == a].set_index(match)[metric]
    right = df[df[by] == b].set_index(match)[metric]
    j = left.to_frame("a").join(right.to_frame("b"), how="inner").dropna()
    return list(j["a"] - j["b"]), j


def _sig(m, h):
    """+1 if significantly > 0, -1 if significantly < 0, 0 otherwise."""
    if m != m:
        return 0
    if h != h:     # one sample: no interval; the sign alone is not significance
        return 0
    if m - h > 0:
        return 1
    if m + h < 0:
        return -1
    return 0


def _fmt(x, nd=1):
    return "n/a" if x is None or x != x else f"{x:.{nd}f}"


SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "SUPPORTED", "NOT SUPPORTED", "INCONCLUSIVE"

MATCH_STATIC = ["clients", "profile", "fair_share_bps", "rep"]


def _ok(df):
    if "error" in df.columns:
        df = df[df["error"].isna()]
    return df


def claim_losses(df) -> dict:
    claim = {"id": "C1", "figures": "Fig. 7, Fig. 10",
             "paper": "AQMs, CoDel in particular, move the bulk of TCP losses from the initial burst and "
                      "ACK-trailing phases (problematic to HAS flows) to the more favorable ACK-clocking phase "
                      "(Sec. IV-B, Fig. 7 and 10; conclusion).",
             "rule": "Static runs with 1 and 2 clients, all buffers and bandwidths pooled. Share of ACK-clocking "
                     "(C) losses among classified drops of the video flows, per AQM. SUPPORTED if C share under "
                     "CoDel >= 50% and >= 10 points above droptail's, and CoDel's C share is above droptail's for "
                     ">= 3 of the 4 algorithms; NOT SUPPORTED if CoDel's pooled C share is not above droptail's; "
                     "INCONCLUSIVE otherwise or with < 30 drops under either AQM."}
    d = _ok(df)
    d = d[(d["profile"] == "static") & (d["clients"].isin([1, 2]))]

    def shares(x):
        b, t, c = (float(x[f"loss_{p}"].sum()) for p in "BTC")
        tot = b + t + c
        return (b / tot, t / tot, c / tot, tot) if tot else (float("nan"),) * 3 + (0.0,)
    res = {}
    for aqm in ("pfifo", "codel", "ared"):
        x = d[d["aqm"] == aqm]
        if len(x):
            res[aqm] = shares(x)
    per_algo = {}
    for algo in ALGORITHMS:
        dt = d[(d["aqm"] == "pfifo") & (d["algo"] == algo)]
        cd = d[(d["aqm"] == "codel") & (d["algo"] == algo)]
        if len(dt) and len(cd):
            per_algo[algo] = (shares(dt)[2], shares(cd)[2])
    if "pfifo" not in res or "codel" not in res:
        claim.update(verdict=INCONCLUSIVE, ours="no droptail/CoDel runs with 1-2 clients")
        return claim
    bd, td, cdt, nd = res["pfifo"]
    bc, tc, cc, nc = res["codel"]
    ours = (f"droptail: B {bd:.0%}, T {td:.0%}, C {cdt:.0%} of {nd:.0f} drops; CoDel: B {bc:.0%}, T {tc:.0%}, "
            f"C {cc:.0%} of {nc:.0f} drops")
    if "ared" in res:
        ba, ta, ca, na = res["ared"]
        ours += f"; ARED (1 client): C {ca:.0%} of {na:.0f}"
    ours += ". C share DT -> CoDel per algorithm: " + ", ".join(
        f"{ALGO_LABEL[a]} {x:.0%} -> {y:.0%}" for a, (x, y) in per_algo.items())
    better = sum(1 for x, y in per_algo.values() if y > x)
    if nd < 30 or nc < 30:
        v = INCONCLUSIVE
    elif cc >= 0.5 and cc - cdt >= 0.10 and better >= min(3, len(per_algo)):
        v = SUPPORTED
    elif cc <= cdt:
        v = NOT_SUPPORTED
    else:
        v = INCONCLUSIVE
    claim.update(verdict=v, ours=ours, numbers={"droptail": res["pfifo"], "codel": res["codel"],
                                                "per_algo": per_algo})
    return claim


def claim_qu_droptail_large(df) -> dict:
    claim = {"id": "C2a", "figures": "Fig. 12, 13, 14",
             "paper": "With droptail, quality unfairness (QU) is high for large buffers and worsens as the buffer "
                      "grows (Sec. IV-D).",
             "rule": "Droptail runs with 2-3 clients, static and variable. Paired difference QU(6 BDP) - QU(0.25 "
                     "BDP) over runs equal in algorithm, clients, bandwidth/profile and repetition. SUPPORTED if the "
                     "mean difference is > 0 with its 95% CI excluding 0; NOT SUPPORTED if < 0 likewise; "
                     "INCONCLUSIVE otherwise."}
    d = _ok(df)
    d = d[(d["aqm"] == "pfifo") & (d["clients"] >= 2)]
    diffs, j = paired(d, "qu_pct", "buffer_bdp", 6.0, 0.25, ["algo"] + MATCH_STATIC)
    m, h, n = mean_ci(diffs)
    if n == 0:
        claim.update(verdict=INCONCLUSIVE, ours="no paired droptail 6/0.25 BDP runs with >= 2 clients")
        return claim
    s = _sig(m, h)
    v = SUPPORTED if s > 0 else NOT_SUPPORTED if s < 0 else INCONCLUSIVE
    claim.update(verdict=v, ours=f"QU at 6 BDP {_fmt(j['a'].mean())}% vs 0.25 BDP {_fmt(j['b'].mean())}%: "
                                 f"difference {_fmt(m)} +- {_fmt(h)} points (n = {n} pairs)")
    return claim


def claim_qu_bba_vs_classic(df) -> dict:
    claim = {"id": "C2b", "figures": "Fig. 12, 14",
             "paper": "With droptail and moderate to large buffers, quality fairness degrades specifically for BBAs, "
                      "which perform up to 150% worse than Classic (Classic2) in the 2-client constant and variable "
                      "bandwidth cases (Sec. IV-D; conclusion).",
             "rule": "Droptail, 2 clients, buffers 6 and 1 BDP, static and variable. Paired difference mean(QU BBA2, "
                     "QU BBA3) - QU Classic2 over runs equal in buffer, bandwidth/profile and repetition. SUPPORTED "
                     "if > 0 with the 95% CI excluding 0; NOT SUPPORTED if < 0 likewise; INCONCLUSIVE otherwise."}
    d = _ok(df)
    d = d[(d["aqm"] == "pfifo") & (d["clients"] == 2) & (d["buffer_bdp"].isin([6.0, 1.0]))]
    match = ["buffer_bdp"] + MATCH_STATIC
    piv = d.pivot_table(index=match, columns="algo", values="qu_pct", aggfunc="mean")
    need = {"bba2", "bba3", "classic2"}
    if not need <= set(piv.columns):
        claim.update(verdict=INCONCLUSIVE, ours="missing algorithms for droptail 2-client runs")
        return claim
    piv = piv.dropna(subset=list(need))
    bba = (piv["bba2"] + piv["bba3"]) / 2
    diffs = list(bba - piv["classic2"])
    m, h, n = mean_ci(diffs)
    if n == 0:
        claim.update(verdict=INCONCLUSIVE, ours="no paired runs")
        return claim
    c2 = piv["classic2"].mean()
    rel = (bba.mean() / c2 - 1) * 100 if c2 > 0 else float("inf")
    ours = (f"QU BBA2 {_fmt(piv['bba2'].mean())}%, BBA3 {_fmt(piv['bba3'].mean())}%, Classic2 {_fmt(c2)}%"
            + (f", Classic1 {_fmt(piv['classic1'].mean())}%" if "classic1" in piv else "")
            + f"; BBAs - Classic2 = {_fmt(m)} +- {_fmt(h)} points (n = {n}), BBAs {_fmt(rel, 0)}% "
              f"{'worse' if rel >= 0 else 'better'} than Classic2 (paper: up to 150% worse)")
    for k in (6.0, 1.0):
        sub = piv.xs(k, level="buffer_bdp") if k in piv.index.get_level_values("buffer_bdp") else None
        if sub is not None and len(sub):
            ours += (f"; at {k:g} BDP: BBAs {_fmt(((sub['bba2'] + sub['bba3']) / 2).mean())}% vs Classic2 "
                     f"{_fmt(sub['classic2'].mean())}%")
    s = _sig(m, h)
    claim.update(verdict=SUPPORTED if s > 0 else NOT_SUPPORTED if s < 0 else INCONCLUSIVE, ours=ours)
    return claim


def claim_codel_qu(df) -> dict:
    claim = {"id": "C3", "figures": "Fig. 12, 13, 14",
             "paper": "CoDel gives significantly better quality fairness than droptail for all HAS algorithms and "
                      "buffer sizes (Sec. IV-D); CoDel alleviates the unfairness for the different algorithms "
                      "(conclusion).",
             "rule": "Runs with 2-3 clients, static and variable. Per algorithm, paired difference QU(droptail) - "
                     "QU(CoDel) over runs equal in buffer, clients, bandwidth/profile and repetition. SUPPORTED if "
                     "every algorithm's mean difference is > 0 with its 95% CI excluding 0; NOT SUPPORTED if any "
                     "algorithm's mean difference is <= 0; INCONCLUSIVE otherwise."}
    d = _ok(df)
    d = d[d["clients"] >= 2]
    parts, sigs, means = [], [], []
    for algo in ALGORITHMS:
        x = d[d["algo"] == algo]
        diffs, j = paired(x, "qu_pct", "aqm", "pfifo", "codel", ["buffer_bdp"] + MATCH_STATIC)
        m, h, n = mean_ci(diffs)
        if n == 0:
            continue
        per_buf = []
        for k in BUFFERS_BDP:
            if k in j.index.get_level_values("buffer_bdp"):
                jj = j.xs(k, level="buffer_bdp")
                per_buf.append(f"{k:g}: {_fmt(jj['a'].mean())}->{_fmt(jj['b'].mean())}")
        parts.append(f"{ALGO_LABEL[algo]}: DT {_fmt(j['a'].mean())}% -> CoDel {_fmt(j['b'].mean())}% "
                     f"(diff {_fmt(m)} +- {_fmt(h)}, n = {n}; by BDP {', '.join(per_buf)})")
        sigs.append(_sig(m, h))
        means.append(m)
    if not means:
        claim.update(verdict=INCONCLUSIVE, ours="no paired droptail/CoDel runs with >= 2 clients")
        return claim
    if any(m <= 0 for m in means):
        v = NOT_SUPPORTED
    elif all(s > 0 for s in sigs) and len(means) == len(ALGORITHMS):
        v = SUPPORTED
    else:
        v = INCONCLUSIVE
    claim.update(verdict=v, ours="; ".join(parts))
    return claim


def claim_rtt(df) -> dict:
    claim = {"id": "C4", "figures": "Fig. 6",
             "paper": "Droptail (and ARED) with big buffers cause a sizable RTT inflation, while CoDel keeps a low RTT "
                      "(Sec. IV-B, Fig. 6).",
             "rule": "1 client, static, buffer 6 BDP. RTTi excess = RTTi - 100%. SUPPORTED if droptail's mean excess "
                     ">= 3x CoDel's and the paired difference (same algorithm, bandwidth, repetition) is > 0 with its "
                     "95% CI excluding 0; NOT SUPPORTED if droptail's mean RTTi is not above CoDel's; INCONCLUSIVE "
                     "otherwise."}
    d = _ok(df)
    d = d[(d["clients"] == 1) & (d["profile"] == "static") & (d["buffer_bdp"] == 6.0)]
    diffs, j = paired(d, "rtti_pct", "aqm", "pfifo", "codel", ["algo"] + MATCH_STATIC)
    m, h, n = mean_ci(diffs)
    if n == 0:
        claim.update(verdict=INCONCLUSIVE, ours="no paired 1-client 6 BDP droptail/CoDel runs")
        return claim
    a, b = j["a"].mean(), j["b"].mean()
    ex_a, ex_b = a - 100, b - 100
    per = []
    for algo in ALGORITHMS:
        x = j.xs(algo, level="algo") if algo in j.index.get_level_values("algo") else None
        if x is not None and len(x):
            per.append(f"{ALGO_LABEL[algo]} {x['a'].mean():.0f}% vs {x['b'].mean():.0f}%")
    ratio = ex_a / ex_b if ex_b > 0 else float("inf")
    ours = (f"RTTi droptail {a:.0f}% vs CoDel {b:.0f}% (excess ratio {_fmt(ratio)}x; paired difference "
            f"{m:.1f} ± {h:.1f} points, 95% CI; n = {n}); " + ", ".join(per))
    if a <= b:
        v = NOT_SUPPORTED
    elif ratio >= 3 and _sig(m, h) > 0:
        v = SUPPORTED
    else:
        v = INCONCLUSIVE
    claim.update(verdict=v, ours=ours)
    return claim


def claim_no_rebuffering_single(df) -> dict:
    claim = {"id": "X1", "figures": "Sec. IV-A",
             "paper": "With a single client there are no re-buffering events, with constant and variable bandwidth "
                      "(Sec. IV-A). [additional claim]",
             "rule": "1-client runs. SUPPORTED if >= 95% of them have no stall (startup excluded); NOT SUPPORTED if "
                     "< 80%; INCONCLUSIVE otherwise."}
    d = _ok(df)
    d = d[d["clients"] == 1]
    if not len(d):
        claim.update(verdict=INCONCLUSIVE, ours="no 1-client runs")
        return claim
    frac = float((d["stall_count"] == 0).mean())
    worst = d.sort_values("stall_count", ascending=False).iloc[0]
    ours = (f"{frac:.0%} of {len(d)} runs without stalls; mean RBR (with startup) {d['rbr_pct'].mean():.2f}%; "
            f"most stalls: {int(worst['stall_count'])} in {worst['run_id']}")
    claim.update(verdict=SUPPORTED if frac >= 0.95 else NOT_SUPPORTED if frac < 0.8 else INCONCLUSIVE, ours=ours)
    return claim


def claim_ins_bba2(df) -> dict:
    claim = {"id": "X2", "figures": "Fig. 4",
             "paper": "Instability is much higher with BBA2 than with the Classics (1 client, variable bandwidth; "
                      "qualitatively similar with static bandwidth) (Sec. IV-A). [additional claim]",
             "rule": "1 client, variable profile p2 (static if no variable runs). SUPPORTED if BBA2's mean INS >= 1.5x "
                     "the larger of the Classics'; NOT SUPPORTED if it is not above it; INCONCLUSIVE otherwise."}
    d = _ok(df)
    d = d[d["clients"] == 1]
    prof = "p2" if (d["profile"] == "p2").any() else "static"
    d = d[d["profile"] == prof]
    g = d.groupby("algo")["ins_pct"].mean()
    if not {"bba2", "classic1", "classic2"} <= set(g.index):
        claim.update(verdict=INCONCLUSIVE, ours="missing algorithms")
        return claim
    cl = max(g["classic1"], g["classic2"])
    ours = f"{prof}: INS " + ", ".join(f"{ALGO_LABEL[a]} {g[a]:.1f}%" for a in ALGORITHMS if a in g.index)
    v = SUPPORTED if g["bba2"] >= 1.5 * cl else NOT_SUPPORTED if g["bba2"] <= cl else INCONCLUSIVE
    claim.update(verdict=v, ours=ours)
    return claim


def claim_classic2_rebuffers(df) -> dict:
    claim = {"id": "X3", "figures": "Fig. 11",
             "paper": "With 2 clients and an over-dimensioned droptail buffer (DT 600%), Classic2 re-buffers: its "
                      "download-time estimate misses the queueing delay (Sec. IV-C, Remark). [additional claim]",
             "rule": "2 clients, buffer 6 BDP, variable profile p2 (static if no variable runs). SUPPORTED if "
                     "Classic2's mean RBR under droptail is >= 1% and >= 3x its RBR under CoDel; NOT SUPPORTED if "
                     "it is not above CoDel's; INCONCLUSIVE otherwise."}
    d = _ok(df)
    d = d[(d["clients"] == 2) & (d["buffer_bdp"] == 6.0) & (d["algo"] == "classic2")]
    prof = "p2" if (d["profile"] == "p2").any() else "static"
    d = d[d["profile"] == prof]
    dt, cd = d[d["aqm"] == "pfifo"]["rbr_pct"], d[d["aqm"] == "codel"]["rbr_pct"]
    if not len(dt) or not len(cd):
        claim.update(verdict=INCONCLUSIVE, ours="no Classic2 2-client 6 BDP droptail/CoDel runs")
        return claim
    a, b = float(dt.mean()), float(cd.mean())
    others = df[(df["clients"] == 2) & (df["buffer_bdp"] == 6.0) & (df["aqm"] == "pfifo") & (df["profile"] == prof)
                & (df["algo"] != "classic2")].groupby("algo")["rbr_pct"].mean()
    ours = (f"{prof}: Classic2 RBR droptail {a:.2f}% vs CoDel {b:.2f}% (n = {len(dt)}); droptail others: "
            + ", ".join(f"{ALGO_LABEL[k]} {v:.2f}%" for k, v in others.items()))
    v = SUPPORTED if a >= 1.0 and a >= 3 * b else NOT_SUPPORTED if a <= b else INCONCLUSIVE
    claim.update(verdict=v, ours=ours)
    return claim


CLAIMS = (claim_losses, claim_qu_droptail_large, claim_qu_bba_vs_classic, claim_codel_qu, claim_rtt,
          claim_no_rebuffering_single, claim_ins_bba2, claim_classic2_rebuffers)


def evaluate_claims(df) -> list[dict]:
    out = []
    for fn in CLAIMS:
        try:
            c = fn(df)
        except Exception as e:  # a claim that cannot be evaluated is inconclusive, with the reason
            c = {"id": fn.__name__, "paper": fn.__doc__ or fn.__name__, "rule": "",
                 "verdict": INCONCLUSIVE, "ours": f"could not evaluate: {type(e).__name__}: {e}"}
        c.pop("numbers", None)
        out.append(c)
    return out


# ----------------------------------------------------------------------------------------------
# The whole reproduction


def _is_ours(path: str) -> bool:
    return common.is_ours(path, "livi")


def check_out_dir(out_dir: str) -> str:
    return common.check_out_dir(out_dir, "livi")


def reproduce(out_dir: str = "results/livi", quick: bool = False, jobs: int = 0, runner=None,
              log=None, spec: GridSpec | None = None) -> dict:
    """Run the grid on the sweep engine, evaluate the claims, write DIR/{sweep/ (the resumable store:
    runs, clients, per-run records), runs.parquet, clients.parquet, claims.json, meta.json,
    report.html, figures/*.png}. A killed reproduction resumes from DIR/sweep; the other files are
    replaced atomically at the end. Returns the meta dict (with the claims)."""
    from qoelab.reproduce import report

    if jobs is not None and jobs < 0:
        raise InputError(None, "--jobs", "a number of worker processes >= 1 (0 = all CPUs)", str(jobs))
    out_dir = check_out_dir(out_dir)
    spec = spec or (quick_grid() if quick else full_grid())
    log = log or (lambda msg: None)
    njobs = jobs or os.cpu_count() or 1
    store_dir = os.path.join(out_dir, "sweep")
    t0 = time.perf_counter()
    df, cdf, sres = run_grid(spec, store_dir, jobs=njobs, runner=runner, log=log)
    wall_runs = time.perf_counter() - t0
    claims = evaluate_claims(df)
    failures = [(rid, err) for rid, err in zip(df["run_id"], df["error"]) if err]
    meta = {
        "reproduction": "livi", "paper": "Livi, Sassatelli, Urvoy-Keller: HTTP Adaptive Streaming and Access "
                                         "Router Management: the Users' and Network's Perspectives",
        "grid": spec.name, "grid_description": spec.description, "runs": len(df), "failed": len(failures),
        "failures": failures[:50], "jobs": njobs, "wall_s_runs": round(wall_runs, 2),
        "runs_executed": sres["ran"], "runs_resumed": sres["skipped"],
        "sim_s_total": len(df) * DURATION_S,
        "buffers_pkts": {f"{k:g}": buffer_packets(k) for k in BUFFERS_BDP},
        "claims": claims,
    }
    with outdir.atomic_dir(out_dir) as tmp:
        df.to_parquet(os.path.join(tmp, "runs.parquet"), index=False)
        cdf.to_parquet(os.path.join(tmp, "clients.parquet"), index=False)
        common.write_claims_report_meta(tmp, claims, meta, lambda: report.write_report(tmp, df, claims, meta), t0,
                                        data_note="; the data are in runs.parquet, clients.parquet and claims.json",
                                        json_default=None)
        os.rename(store_dir, os.path.join(tmp, "sweep"))     # the store moves with the results
    meta["out_dir"] = out_dir
    return meta


def rewrite_report(out_dir: str) -> dict:
    """Re-evaluate the claims and rewrite claims.json, meta.json and report.html of a finished
    reproduction from its sweep store (after a change to the claims or the figures; no simulation)."""
    from qoelab.reproduce import report
    if not _is_ours(out_dir):
        raise InputError(out_dir, None, message="not a livi reproduction (no meta.json from one)")
    df, _ = frames(os.path.join(out_dir, "sweep"))
    with open(os.path.join(out_dir, "meta.json")) as f:
        meta = json.load(f)
    meta["claims"] = evaluate_claims(df)
    for name, data in (("claims.json", meta["claims"]), ("meta.json", meta)):
        with open(os.path.join(out_dir, name + ".tmp"), "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
    report.write_report(out_dir, df, meta["claims"], meta)
    for name in ("claims.json", "meta.json"):
        os.replace(os.path.join(out_dir, name + ".tmp"), os.path.join(out_dir, name))
    return meta


def grid_counts(spec: GridSpec) -> dict:
    """Number of runs per (aqm, clients, profile kind) -- for the docs and tests."""
    out: dict = {}
    for r in spec.runs():
        k = (r.aqm, r.clients, "static" if r.profile == "static" else "variable")
        out[k] = out.get(k, 0) + 1
    return out


__all__ = ["Run", "GridSpec", "full_grid", "quick_grid", "buffer_packets", "scenario", "extract", "execute",
           "run_grid", "evaluate_claims", "reproduce", "mean_ci", "asdict"]
