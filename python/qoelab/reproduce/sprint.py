"""Sprint / Sprint-x (Arye, Sen, Freedman, "Poor Video Streaming Performance Explained (and Fixed)",
arXiv 1901.00038) reproduced in the packet simulator: ``qoelab reproduce sprint``.

Model, experiments E1-E11 and claims S1-S20 with their verdict rules: the claims file
(reference/claims/sprint.md). Setup mapping, deviations and measured verdicts:
docs/reproductions/sprint.md.

Every run is one :class:`Run` (an experiment family, a cell and a repetition). Seeds come from the
run identifier *without* the data plane, so DASH, Sprint and Sprint-x of one cell and repetition
share seed and cross traffic (paired runs, §3). Metrics per run (:func:`extract`): % of fair share
(video goodput over the mean of all data flows' goodputs after a warm-up; the RTT probe excluded;
a client's connections summed), unfairness sqrt(1 - JFI), median bitrate, stall time, maximum
buffer, per-minute %FS and cancels (Sprint-x), IWS onsets (E1).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field, replace

from qoelab import outdir
from qoelab.reproduce import common
from qoelab.errors import InputError

from qoelab.reproduce.common import (GRADE_TO_VERDICT, INCONCLUSIVE, NOT_SUPPORTED,  # noqa: F401
                                     OUT_OF_SCOPE, SUPPORTED)

MSS = 1460.0
IW_BYTES = 10 * 1448            # the simulator's initial window (10 x its 1448-byte MSS)
BASE_RTT_MS = 100
WARMUP_S = 60.0
VIDEO = "synthetic:sprint"
LADDER_KBPS = (250, 355, 505, 710, 1010, 1519, 2200, 3200, 4600, 6700, 9700, 14000, 20000)
PLANES = ("dash", "sprint", "sprintx")
PLANE_LABEL = {"dash": "DASH", "sprint": "Sprint", "sprintx": "Sprint-x", "pipe": "pipelined (depth 2)",
               "notrain": "Sprint, no train", "bulk": "Bulk"}
PLANE_KIND = {"dash": {"kind": "sequential"}, "sprint": {"kind": "sprint"}, "sprintx": {"kind": "sprint-x"},
              "pipe": {"kind": "pipelined", "depth": 2}, "notrain": {"kind": "sprint", "train": False}}


# ----------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True)
class Run:
    exp: str                 # grid, pair, multi, alpha, minute, smallq, iws, segsize
    rate_mbps: float
    queue_kb: int
    parts: tuple             # participants: video planes ("dash", ...) and "bulk"
    duration_s: int
    abr: str = "huang"
    alpha: float = 0.0       # tputfrac
    rung: int = -1           # fixed rung (E1, E2)
    rtt_ms: int = BASE_RTT_MS
    rep: int = 0
    sample_ms: int = 100
    cell: str = ""           # label of the paired cell (e.g. "a", "b", "c" in E1)
    chunk_b: int = 0         # E3: bytes per transfer of the onoff flow
    cc: str = "cubic"
    transfers: int = 0       # E3: transfers (period = duration / transfers)

    @property
    def run_id(self) -> str:
        extra = (f"-a{self.alpha:g}" if self.alpha else "") + (f"-r{self.rung}" if self.rung >= 0 else "")
        extra += f"-c{self.chunk_b}B-{self.cc}" if self.chunk_b else ""
        return (f"{self.exp}{self.cell}-{self.rate_mbps:g}M-{self.queue_kb}KB-{self.rtt_ms}ms-"
                f"{'+'.join(self.parts)}-{self.abr}{extra}-{self.duration_s}s-s{self.rep}")

    @property
    def pair_key(self) -> str:
        """Identifier without the video data plane: paired runs share it (and the seed)."""
        parts = ["V" if p != "bulk" else p for p in self.parts]
        return (f"{self.exp}{self.cell}-{self.rate_mbps:g}M-{self.queue_kb}KB-{self.rtt_ms}ms-"
                f"{'+'.join(parts)}-{self.abr}-{self.rung}-{self.chunk_b}-{self.cc}-{self.duration_s}s-s{self.rep}")

    @property
    def seed(self) -> int:
        return int.from_bytes(hashlib.sha256(self.pair_key.encode()).digest()[:4], "big") & 0x7FFFFFFF

    @property
    def plane(self) -> str:
        """The first video participant's data plane ('' if none)."""
        return next((p for p in self.parts if p != "bulk"), "")


@dataclass
class Spec:
    name: str
    rates: tuple = (3, 5, 10, 25)
    queues: tuple = (64, 128, 256, 512, 1024, 1536)
    seeds: int = 5
    dur: int = 900
    pair_seeds: int = 5
    alphas: tuple = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1)
    minute_dur: int = 1800
    minute_seeds: int = 3
    families: tuple = ("grid", "s10", "pair", "multi", "alpha", "minute", "smallq", "iws", "segsize", "chunk", "cell",
                       "sens")
    chunks_kb: tuple = (100, 300, 1000, 3000, 10000)
    chunk_queues: tuple = (64, 256, 1024)
    chunk_transfers: int = 10
    iws_dur: int = 180
    cell_dur: int = 600
    cell_seeds: int = 5
    description: str = ""

    def runs(self) -> list[Run]:
        out: list[Run] = []
        fam = set(self.families)
        for s in range(self.seeds):
            if "grid" in fam:
                for r in self.rates:
                    for q in self.queues:
                        for p in PLANES:
                            out.append(Run("grid", r, q, (p, "bulk"), self.dur, rep=s))
            if "s10" in fam:
                for q in (256, 512):
                    out.append(Run("grid", 3, q, ("pipe", "bulk"), self.dur, rep=s))
        for s in range(self.pair_seeds):
            if "pair" in fam:
                for q in (256, 512):
                    for parts in (("bulk", "bulk"), ("dash", "dash"), ("dash", "sprint"), ("sprint", "sprint")):
                        out.append(Run("pair", 3, q, parts, self.dur, rep=s))
            if "multi" in fam:
                for p in ("dash", "sprint"):
                    out.append(Run("multi", 3, 256, (p, "bulk", "bulk", "bulk", "bulk"), self.dur, rep=s))
            if "alpha" in fam:
                for a in self.alphas:
                    for p in ("sprint", "notrain", "dash"):
                        out.append(Run("alpha", 3, 256, (p, "bulk"), self.dur, abr="tputfrac", alpha=a, rep=s))
            if "smallq" in fam:
                out.append(Run("smallq", 5, 15, ("dash", "bulk"), self.dur, rtt_ms=20, rep=s))
            if "segsize" in fam:
                for k in range(1, 8):        # 355 .. 3200 kbit/s: 0.24-2.1 x the 1.5 Mbit/s fair share
                    out.append(Run("segsize", 3, 256, ("dash", "bulk"), self.dur, abr="fixed", rung=k, rep=s))
            if "iws" in fam and s < 2:
                out.append(Run("iws", 3, 256, ("dash",), self.iws_dur, abr="fixed", rung=7, rep=s,
                               sample_ms=20, cell="a"))
                out.append(Run("iws", 3, 256, ("dash", "bulk"), self.iws_dur, abr="fixed", rung=6, rep=s,
                               sample_ms=20, cell="b"))
                out.append(Run("iws", 3, 256, ("dash", "bulk"), self.iws_dur, abr="fixed", rung=2, rep=s,
                               sample_ms=20, cell="c"))
        if "chunk" in fam:
            out += chunk_runs(self.chunks_kb, self.chunk_queues, self.chunk_transfers)
        if "sens" in fam:
            # The claims file's sensitivity settings (sec. 3): base RTT 20 ms, and NewReno for every flow,
            # on the 3 Mbit/s cells of the Fig. 6 story; compared with the primary (cubic, 100 ms).
            for s in range(self.seeds):
                for q in (256, 512):
                    for p in PLANES:
                        out.append(Run("sens", 3, q, (p, "bulk"), self.dur, rtt_ms=20, rep=s, cell="rtt20"))
                        out.append(Run("sens", 3, q, (p, "bulk"), self.dur, cc="newreno", rep=s, cell="newreno"))
        if "cell" in fam and cell_trace_available():
            # S16 proxy (E10): a cellular trace, a deep droptail buffer, 1 bulk flow; DASH vs Sprint.
            for s in range(self.cell_seeds):
                for p in ("dash", "sprint"):
                    out.append(Run("cell", 0, CELL_QUEUE_KB, (p, "bulk"), self.cell_dur, rep=s))
        if "minute" in fam:
            for s in range(self.minute_seeds):
                out.append(Run("minute", 3, 256, ("sprintx", "bulk"), self.minute_dur, rep=s))
        return out


#: S16 proxy: the Mahimahi T-Mobile LTE (driving) downlink trace, 12.8 Mbit/s mean over its 475 s,
#: looped; a 1 MB droptail buffer (about 0.6 s at the mean rate: the deep buffers of cellular links).
CELL_TRACE = "traces/mahimahi/TMobile-LTE-driving.down"
CELL_QUEUE_KB = 1000


def cell_trace_available() -> bool:
    from qoelab.traces import data_dir
    return os.path.isfile(os.path.join(data_dir(), CELL_TRACE))


def _period_s(chunk_b: float, rate_bps: float) -> float:
    """Time between E3 transfers: 3 x the transfer time at the fair share + 3 s, so the flow idles
    (cwnd restarts from IW) before every transfer."""
    return round(3.0 + 3.0 * chunk_b * 8.0 / (rate_bps / 2.0), 1)


def chunk_runs(chunks_kb, queues, transfers, rate=3) -> list:
    """E3 (S13): an onoff flow writing a chunk every period (idle in between) against 1 bulk flow,
    NewReno (the model's +1 MSS per RTT) and Cubic; S14(b): transfers of S* (eps 0.1 and 0.25)."""
    out = []
    for cc in ("newreno", "cubic"):
        for q in queues:
            for kb in chunks_kb:
                per = _period_s(kb * 1000, rate * 1e6)
                out.append(Run("chunk", rate, q, ("onoff", "bulk"), int(math.ceil(10 + per * transfers)),
                               chunk_b=kb * 1000, cc=cc, transfers=transfers, sample_ms=10))
    from qoelab import _core
    for eps in (0.1, 0.25):
        rtt = BASE_RTT_MS / 1000 + 256_000 * 8 / (rate * 1e6)
        sb = int(_core.get_chunk_size(rate * 1e6 / 16, rtt, eps, MSS))
        per = _period_s(sb, rate * 1e6)
        out.append(Run("sstar", rate, 256, ("onoff", "bulk"), int(math.ceil(10 + per * 3)), chunk_b=sb,
                       cc="cubic", transfers=3, sample_ms=10, cell=f"e{eps:g}"))
    return out


def full_spec() -> Spec:
    """The full run (under 15 min on 2 cores): E4 grid {3, 5, 10, 25} Mbit/s x {64, 128, 256, 512,
    1024, 1536} KB x DASH/Sprint/Sprint-x x 5 seeds x 900 s; pipelined depth 2 at 3 Mbit/s 256/512 KB
    (S10); Table I pairs at 3 Mbit/s 256/512 KB x 5 seeds; 4 bulk flows (S8); tputfrac alpha 0.5-1.1 x
    Sprint/no-train/DASH (S9); 15 KB 5 Mbit/s 20 ms (S19); fixed rungs 355-3200 kbit/s (S12); E1 traces
    (S11, 180 s, 2 seeds; (c) at 505 kbit/s); Sprint-x 1800 s x 3 seeds (S17); the S16 cellular proxy
    (T-Mobile LTE trace, 1 MB droptail, 1 bulk, DASH/Sprint x 5 seeds x 600 s); sensitivity: 3 Mbit/s x
    256/512 KB x the three planes with a 20 ms base RTT and with NewReno (5 seeds each). Every run 900 s unless
    stated, 60 s warm-up."""
    return Spec(name="full", description=full_spec.__doc__.split("\n")[0])


def quick_spec() -> Spec:
    """``--quick``: 3 and 25 Mbit/s x 256 and 512 KB x DASH/Sprint/Sprint-x, 1 seed of 240 s; Table I
    pairs; alpha 0.7/0.9; E1 (a, b, c); one 600 s Sprint-x run for S17; E3 at 300 KB and 3 MB x 256 KB x
    NewReno/Cubic, 3 transfers each, and the two S* transfers (S14(b)); the S16 cellular proxy (1 seed x
    240 s). The verdicts are indicative only (1 seed)."""
    return Spec(name="quick", rates=(3, 25), queues=(256, 512), seeds=1, dur=240, pair_seeds=1,
                alphas=(0.7, 0.9), minute_dur=600, minute_seeds=1, iws_dur=150,
                families=("grid", "pair", "alpha", "minute", "iws", "chunk", "cell"), chunks_kb=(300, 3000),
                cell_dur=240, cell_seeds=1,
                chunk_queues=(256,), chunk_transfers=3,
                description="quick: 3/25 Mbit/s x 256/512 KB, 1 seed x 240 s, Table I pairs, alpha 0.7/0.9, "
                            "E1, one 600-s Sprint-x run, E3 300 KB/3 MB x 256 KB x 3 transfers, S* transfers, "
                            "cellular proxy")


def _vclient(name: str, plane: str, run: Run) -> dict:
    c = {"name": name, "abr": run.abr, "video": VIDEO, "video_seed": 1,
         "video_duration": f"{max(run.duration_s * 2, 600)}s", "cc": "cubic", "rtt": f"{run.rtt_ms}ms",
         "data_plane": dict(PLANE_KIND[plane])}
    if run.abr == "tputfrac":
        c["abr_params"] = {"alpha": run.alpha}
    if run.abr == "fixed":
        c["abr_params"] = {"rung": run.rung}
        c["player"] = {"buffer_max": "20s"}
    if run.exp == "segsize":
        # E2: back-to-back requests, no pauses: a buffer that never fills, and a video long enough
        # that the lowest rung (0.24 x the fair share) is still downloading at the end of the run
        long = f"{run.duration_s * 10}s"
        c["video_duration"] = long
        c["player"] = {"buffer_max": long}
    return c


def scenario(run: Run) -> dict:
    topo = {"rate": f"{run.rate_mbps:g}Mbps", "rate_up": "100Mbps", "rtt": f"{run.rtt_ms}ms",
            "buffer": f"{run.queue_kb * 1000}B", "aqm": "bfifo"}
    if run.exp == "cell":
        del topo["rate"]
        topo["trace"] = "data:" + CELL_TRACE
    clients, flows = [], []
    rng = random.Random(run.seed)
    jitter = [round(rng.random(), 3) for _ in run.parts]     # seeded start offsets in [0, 1) s
    for i, p in enumerate(run.parts):
        if p == "onoff":
            per = _period_s(run.chunk_b, run.rate_mbps * 1e6)
            flows.append({"kind": "onoff", "name": f"v{i}", "rtt": f"{run.rtt_ms}ms", "cc": run.cc,
                          "size": f"{run.chunk_b}B", "period": f"{per}s", "start": "10s"})
        elif p == "bulk":
            flows.append({"kind": "bulk", "name": f"bulk{i}", "rtt": f"{run.rtt_ms}ms", "cc": "cubic",
                          "start": f"{jitter[i]}s"})
        else:
            clients.append({**_vclient(f"v{i}", p, run), "start": f"{jitter[i]}s"})
    if run.exp == "sens":
        for x in clients + flows:
            x["cc"] = run.cc
    tables = ["flows", "segments"] + (["tcp", "queues"] if run.exp == "iws" else [])
    if run.exp in ("chunk", "sstar"):
        tables = ["flows", "tcp"]
        for f in flows:
            f["cc"] = run.cc
    scn = {"scenario": {"name": f"sprint-{run.run_id}", "duration": f"{run.duration_s}s", "seed": run.seed},
           "topology": topo, "client": clients,
           "output": {"tables": tables, "sample_interval": f"{run.sample_ms}ms"}}
    if flows:
        scn["flow"] = flows
    return scn


# ----------------------------------------------------------------------------------------------
# Metric helpers (pure; unit-tested on hand-made frames)


def owner(name: str) -> str:
    """Participant of a flow: the client name before the first '/' (v0/resp~2 -> v0), else the name."""
    return str(name).split("/")[0]


def flow_goodputs(flows, flow_info, t0: float, t1: float) -> dict:
    """Goodput (bit/s) per participant over [t0, t1]: data flows only (kind video or bulk; the RTT
    probe and request directions excluded), a participant's several connections summed. Bytes at a
    time = the last sample at or before it (0 before the flow's first sample)."""
    kinds = dict(zip(flow_info["flow"], flow_info["kind"]))
    names = dict(zip(flow_info["flow"], flow_info["name"]))
    out: dict = {}
    span = t1 - t0
    if span <= 0:
        return out
    for fid, g in flows.groupby("flow"):
        if kinds.get(fid) not in ("video", "bulk", "onoff"):
            continue
        g = g.sort_values("time_s")
        b0 = g.loc[g["time_s"] <= t0 + 1e-9, "bytes_received"]
        b1 = g.loc[g["time_s"] <= t1 + 1e-9, "bytes_received"]
        v0 = float(b0.iloc[-1]) if len(b0) else 0.0
        v1 = float(b1.iloc[-1]) if len(b1) else 0.0
        o = owner(names[fid])
        out[o] = out.get(o, 0.0) + max(0.0, v1 - v0) * 8.0 / span
    return out


def pct_fair_share(x: float, all_x) -> float:
    """100 x x / (sum of all flows / n)."""
    xs = list(all_x)
    tot = sum(xs)
    return 100.0 * x * len(xs) / tot if tot > 0 else float("nan")


def jfi(xs) -> float:
    xs = [float(x) for x in xs]
    s2 = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * s2) if s2 > 0 else float("nan")


def unfairness(xs) -> float:
    """sqrt(1 - JFI) (FESTIVE's definition)."""
    j = jfi(xs)
    return math.sqrt(max(0.0, 1.0 - j)) if j == j else float("nan")


def per_minute(flows, flow_info, video: str, t0: float, t1: float, cancel_times=()) -> list[dict]:
    """Per whole minute in [t0, t1): the video participant's % of fair share and the cancels
    (reconnect instants) in that minute."""
    rows = []
    m = 0
    while t0 + 60 * (m + 1) <= t1 + 1e-9:
        a, b = t0 + 60 * m, t0 + 60 * (m + 1)
        g = flow_goodputs(flows, flow_info, a, b)
        rows.append({"minute": m, "t0": a, "pct_fs": pct_fair_share(g.get(video, 0.0), g.values()) if g else
                     float("nan"), "cancels": sum(1 for c in cancel_times if a <= c < b)})
        m += 1
    return rows


def iws_onsets(tcp, queue_bytes, flow: int, boundaries, rate_bps: float, n: int, base_rtt_s: float) -> list[float]:
    """IWS onsets at segment boundaries (§1.1 test): at each boundary (the last byte of a sequential
    response delivered: none of the flow's packets is left in the bottleneck queue, and the next
    response enters it at least one base RTT later) the flow is in IWS iff its cwnd (last ``tcp``
    sample at or before the boundary) < fair-BDP = (C/n) x (base RTT + bottleneck queueing delay),
    the queueing delay from ``queue_bytes`` (a Series of bottleneck queue bytes indexed by time).
    Returns the boundary times in IWS."""
    t = tcp[tcp["flow"] == flow].sort_values("time_s")
    ts, cw = list(t["time_s"]), list(t["cwnd"])
    import bisect
    out = []
    for b in boundaries:
        i = bisect.bisect_right(ts, b + 1e-9) - 1
        if i < 0:
            continue
        q = 0.0
        if queue_bytes is not None and len(queue_bytes):
            j = queue_bytes.index.searchsorted(b, side="right") - 1
            q = float(queue_bytes.iloc[j]) if j >= 0 else 0.0
        fair_bdp = rate_bps / 8.0 / n * (base_rtt_s + q * 8.0 / rate_bps)
        if cw[i] < fair_bdp:
            out.append(float(b))
    return out


def median_ci(xs, reps: int = 2000, seed: int = 7) -> tuple[float, float, float, int]:
    """Median and its bootstrap 95% CI (percentile), number of samples."""
    xs = sorted(float(x) for x in xs if x is not None and x == x)
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0

    def med(v):
        v = sorted(v)
        k = len(v)
        return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])
    m = med(xs)
    if n == 1:
        return m, float("nan"), float("nan"), 1
    rng = random.Random(seed)
    boots = sorted(med([xs[rng.randrange(n)] for _ in range(n)]) for _ in range(reps))
    return m, boots[int(0.025 * reps)], boots[int(0.975 * reps) - 1], n


def spearman(xs, ys) -> float:
    import pandas as pd
    s = pd.Series(list(xs)).rank().corr(pd.Series(list(ys)).rank())
    return float(s) if s == s else float("nan")


# ----------------------------------------------------------------------------------------------
# Extraction


def _median(v):
    v = sorted(v)
    k = len(v)
    return float("nan") if not k else v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])


def extract(run: Run, summary: dict, tables: dict) -> tuple[dict, list[dict]]:
    """One record per run (and per-minute rows for the S17 runs)."""
    flows, fi, seg = tables.get("flows"), tables.get("flow_info"), tables.get("segments")
    end = float(run.duration_s)
    t0 = min(WARMUP_S, end / 3)
    g = flow_goodputs(flows, fi, t0, end)
    names = [("v" if p != "bulk" else "bulk") + str(i) for i, p in enumerate(run.parts)]
    xs = [g.get(nm, 0.0) for nm in names]
    rec = {"run_id": run.run_id, "exp": run.exp, "cell": run.cell, "rate_mbps": run.rate_mbps,
           "queue_kb": run.queue_kb, "rtt_ms": run.rtt_ms, "parts": "+".join(run.parts), "plane": run.plane,
           "abr": run.abr, "alpha": run.alpha, "rung": run.rung, "rep": run.rep, "seed": run.seed,
           "duration_s": run.duration_s, "n_flows": len(names), "unfairness": unfairness(xs)}
    for i, (nm, x) in enumerate(zip(names, xs)):
        rec[f"gput{i}_bps"] = x
        rec[f"pct_fs{i}"] = pct_fair_share(x, xs)
    rec["pct_fs"] = rec["pct_fs0"]
    clients = {c.get("name"): c for c in summary.get("clients") or []}
    c0 = clients.get("v0") or {}
    http = c0.get("http") or {}
    rec.update({"avg_bitrate_bps": c0.get("avg_bitrate_bps"), "rebuffer_s": c0.get("rebuffer_s"),
                "stall_count": c0.get("stall_count"), "startup_s": c0.get("startup_s"),
                "cancels": http.get("switch_cancels", 0), "resets": http.get("resets", 0),
                "wasted_bytes": http.get("wasted_bytes", 0), "trains": http.get("trains"),
                "train_mean_bytes": http.get("train_mean_bytes"), "max_pipeline": http.get("max_pipeline")})
    if seg is not None and len(seg):
        s0 = seg[seg["client"].astype(str).isin(["v0", "0"])] if "client" in seg else seg
        if not len(s0):
            s0 = seg
        s0 = s0[~s0["abandoned"].astype(bool)] if "abandoned" in s0 else s0
        rec["median_bitrate_kbps"] = _median(list(s0["bitrate_bps"] / 1000.0))
        rec["max_buffer_s"] = float(s0["buffer_after_s"].max())
        after = s0[s0["t_last_byte_s"] > (c0.get("startup_s") or 0) + 1e-9]
        rec["stall_after_startup_s"] = float(after["stall_s"].sum()) if "stall_s" in after else float("nan")
    minutes = []
    if run.exp in ("chunk", "sstar"):
        rec.update(chunk_metrics(run, summary, flows, fi, tables.get("tcp")))
        return rec, minutes
    if run.exp == "minute":
        recon = fi[(fi["kind"] == "video") & (fi["name"].astype(str).str.startswith("v0/"))]
        cancels = sorted(float(t) for t in recon["start_s"] if t > 0)
        for row in per_minute(flows, fi, "v0", t0, end, cancels):
            minutes.append({"run_id": run.run_id, "rep": run.rep, **row})
    if run.exp == "iws":
        tcp, q = tables.get("tcp"), tables.get("queues")
        qb = None
        if q is not None and len(q):
            links = tables.get("link_info")
            bl = 0
            if links is not None and len(links):
                m = links[links["name"] == "bottleneck"]
                bl = int(m["link"].iloc[0]) if len(m) else 0
            qq = q[q["link"] == bl].sort_values("time_s")
            qb = qq.set_index("time_s")["len_bytes"]
        vid = fi[(fi["kind"] == "video") & (fi["name"] == "v0/resp")]["flow"]
        n = len(names)
        if tcp is not None and len(vid) and seg is not None and len(seg):
            fl = int(vid.iloc[0])
            bounds = [float(x) for x in seg["t_last_byte_s"] if 5.0 < x < end - 1.0]
            ons = iws_onsets(tcp, qb, fl, bounds, run.rate_mbps * 1e6, n, run.rtt_ms / 1000.0)
            rec["iws_onsets"] = len(ons)
            rec["iws_boundaries"] = len(bounds)
            rec["iws_per_min"] = len(ons) / ((end - 5.0) / 60.0)
            rec["iws_times"] = json.dumps([round(x, 2) for x in ons[:50]])
            if run.cell == "c" and seg is not None and len(seg):
                rec.update(on_periods(tcp[tcp["flow"] == fl], seg, qb, run.rate_mbps * 1e6, n,
                                      run.rtt_ms / 1000.0))
    return rec, minutes


def transfer_times(series_t, series_b, starts, size) -> list[float]:
    """Duration of each transfer k (start starts[k], complete when the cumulative bytes reach
    (k+1) x size): first sample at or after that."""
    import bisect
    out = []
    bs = list(series_b)
    ts = list(series_t)
    for k, t0 in enumerate(starts):
        target = (k + 1) * size
        i = bisect.bisect_left(bs, target)
        out.append(ts[i] - t0 if i < len(ts) else float("nan"))
    return out


def chunk_metrics(run: Run, summary, flows, fi, tcp) -> dict:
    """E3: measured efficiency (chunk throughput / (C/2)) and Eq. 1's round-by-round prediction from
    the measured fair-BDP (C/2 x (base + mean queueing delay)) and the measured mean ssthresh at the
    transfer starts (capped at the fair-BDP)."""
    from qoelab import _core
    fid = int(fi[fi["name"] == "v0"]["flow"].iloc[0])
    f = flows[flows["flow"] == fid].sort_values("time_s")
    per = _period_s(run.chunk_b, run.rate_mbps * 1e6)
    starts = [10.0 + k * per for k in range(run.transfers)]
    durs = [d for d in transfer_times(f["time_s"], f["bytes_received"], starts, run.chunk_b) if d == d and d > 0]
    fs = run.rate_mbps * 1e6 / 2
    effs = [run.chunk_b * 8.0 / d / fs for d in durs]
    link = (summary.get("links") or [{}])[0]
    qd = float(((link.get("queue_delay_ms") or {}).get("mean")) or 0.0) / 1000.0
    bdp = fs / 8.0 * (run.rtt_ms / 1000.0 + qd)
    ssts = []
    if tcp is not None and len(tcp):
        t = tcp[tcp["flow"] == fid].sort_values("time_s")
        for s0 in starts:
            w = t[t["time_s"] >= s0 + 0.005]
            if len(w) and float(w["ssthresh"].iloc[0]) < 1e12:
                ssts.append(float(w["ssthresh"].iloc[0]))
    sst = min(sum(ssts) / len(ssts), bdp) if ssts else 0.75 * bdp
    pred = _core.efficiency_rounds(float(run.chunk_b), bdp, sst, MSS)
    return {"chunk_b": run.chunk_b, "cc": run.cc, "transfers_done": len(durs),
            "eff_measured": sum(effs) / len(effs) if effs else float("nan"), "eff_predicted": pred,
            "fair_bdp_b": bdp, "sst_b": sst, "queue_delay_s": qd}


def on_periods(tcp, seg, qb, rate_bps, n, base_rtt_s) -> dict:
    """E1(c): ON periods (segment downloads after an idle gap > 1 s) that start from cwnd <= IW and
    peak below the fair-BDP, counted. The start is the first ``tcp`` sample at or after the
    response's first byte reached the client: the sender applies its restart after idle when it
    next sends, so a sample taken at the request still shows the window from before the pause (and
    the first ACK of the new response reaches the sender half an RTT after that first byte)."""
    seg = seg.sort_values("t_request_s")
    tt = tcp.sort_values("time_s")
    starts_iw, peaks_below, k = 0, 0, 0
    prev_end = None
    for tr, tf, tl in zip(seg["t_request_s"], seg["t_first_byte_s"], seg["t_last_byte_s"]):
        if prev_end is not None and tr - prev_end > 1.0 and tr > 5.0 and tf == tf:
            w = tt[(tt["time_s"] >= tf) & (tt["time_s"] <= tl)]
            if len(w):
                k += 1
                starts_iw += int(float(w["cwnd"].iloc[0]) <= IW_BYTES)
                qmax = float(qb[(qb.index >= tr) & (qb.index <= tl)].max()) if qb is not None and len(qb) else 0
                fbdp = rate_bps / 8.0 / n * (base_rtt_s + qmax * 8.0 / rate_bps)
                peaks_below += int(float(w["cwnd"].max()) < fbdp)
        prev_end = tl
    return {"on_periods": k, "on_start_iw": starts_iw, "on_peak_below": peaks_below,
            "on_start_iw_frac": starts_iw / k if k else float("nan"),
            "on_peak_below_frac": peaks_below / k if k else float("nan")}


# ----------------------------------------------------------------------------------------------
# Running (on the sweep engine: qoelab.sweep)


def sweep_extract(res, point: dict) -> dict:
    """The sweep engine's extract hook: :func:`extract` of the run (``point["payload"]``)."""
    run = point["payload"]
    tabs = {}
    for name in ("flows", "flow_info", "segments", "tcp", "queues", "link_info"):
        try:
            tabs[name] = res.table(name)
        except KeyError:
            tabs[name] = None
    rec, minutes = extract(run, res.summary, tabs)
    return {"run": rec, "minutes": minutes}


def run_all(runs: list[Run], store_dir: str, jobs: int = 0, runner=None, log=None) -> tuple[list[dict], dict]:
    """Every run on the sweep engine into the resumable store ``store_dir``; results in input order
    ({"run": record, "minutes": [...]}) and the sweep's counts. A custom ``runner`` (scenario dict ->
    object with ``.summary`` and ``.table(name)``) runs everything in this process (tests)."""
    recs, res = common.run_on_sweep(f"sprint-{len(runs)}", runs, scenario, "qoelab.reproduce.sprint:sweep_extract",
                                    store_dir, jobs, runner, log, _cost)
    out = []
    for run, rec in zip(runs, recs):
        r, m = common.record_metrics(rec, {"run_id": run.run_id, "exp": run.exp, "plane": run.plane})
        out.append({"run": r, "minutes": m.get("minutes") or []})
    return out, res


def _cost(r: Run) -> float:
    return r.rate_mbps * r.duration_s * len(r.parts)

# ----------------------------------------------------------------------------------------------
# The whole reproduction


def _is_ours(path: str) -> bool:
    return common.is_ours(path, "sprint")


def check_out_dir(out_dir: str) -> str:
    return common.check_out_dir(out_dir, "sprint")


def reproduce(out_dir: str = "results/sprint", quick: bool = False, jobs: int = 0, runner=None, log=None,
              spec: Spec | None = None) -> dict:
    """Run on the sweep engine (resumable store DIR/sweep), evaluate S1-S20, write DIR/{runs.parquet,
    minutes.parquet, claims.json, meta.json, report.html, figures/*.png} atomically (the store moved
    in). Returns the meta dict (with the claims)."""
    import pandas as pd

    from qoelab.reproduce import sprint_claims, sprint_report
    if jobs is not None and jobs < 0:
        raise InputError(None, "--jobs", "a number of worker processes >= 1", str(jobs))
    out_dir = check_out_dir(out_dir)
    spec = spec or (quick_spec() if quick else full_spec())
    runs = spec.runs()
    log = log or (lambda msg: None)
    njobs = jobs or os.cpu_count() or 1
    t0 = time.perf_counter()
    store_dir = os.path.join(out_dir, "sweep")
    results, sres = run_all(runs, store_dir, jobs=njobs, runner=runner, log=log)
    wall_runs = time.perf_counter() - t0
    df = pd.DataFrame([r["run"] for r in results])
    mdf = pd.DataFrame([m for r in results for m in r["minutes"]])
    claims = sprint_claims.evaluate(df, mdf, spec)
    failures = [(r["run"]["run_id"], r["run"]["error"]) for r in results if r["run"].get("error")]
    meta = {"reproduction": "sprint",
            "paper": "Arye, Sen, Freedman: Poor Video Streaming Performance Explained (and Fixed), arXiv 1901.00038",
            "grid": spec.name, "grid_description": spec.description, "spec": asdict(spec), "runs": len(runs),
            "failed": len(failures), "failures": failures[:50], "jobs": njobs, "wall_s_runs": round(wall_runs, 2),
            "runs_executed": sres["ran"], "runs_resumed": sres["skipped"], "claims": claims}
    with outdir.atomic_dir(out_dir) as tmp:
        df.to_parquet(os.path.join(tmp, "runs.parquet"), index=False)
        if len(mdf):
            mdf.to_parquet(os.path.join(tmp, "minutes.parquet"), index=False)
        common.write_claims_report_meta(tmp, claims, meta, lambda: sprint_report.write_report(tmp, df, mdf, claims, meta),
                                        t0)
        os.rename(store_dir, os.path.join(tmp, "sweep"))     # the store moves with the results
    meta["out_dir"] = out_dir
    return meta


def rewrite_report(out_dir: str) -> dict:
    """Re-evaluate the claims and rewrite claims.json, meta.json and report.html from runs.parquet
    (after a change to the claims or figures; no simulation)."""
    import pandas as pd

    from qoelab.reproduce import sprint_claims, sprint_report
    if not _is_ours(out_dir):
        raise InputError(out_dir, None, message="not a sprint reproduction (no meta.json from one)")
    df = pd.read_parquet(os.path.join(out_dir, "runs.parquet"))
    df["error"] = df["error"].where(df["error"].notna(), None)
    mp = os.path.join(out_dir, "minutes.parquet")
    mdf = pd.read_parquet(mp) if os.path.exists(mp) else pd.DataFrame()
    with open(os.path.join(out_dir, "meta.json")) as f:
        meta = json.load(f)
    spec = quick_spec() if meta.get("grid") == "quick" else full_spec()
    meta["claims"] = sprint_claims.evaluate(df, mdf, spec)
    common.dump_json(os.path.join(out_dir, "claims.json"), meta["claims"], None)
    common.dump_json(os.path.join(out_dir, "meta.json"), meta)
    sprint_report.write_report(out_dir, df, mdf, meta["claims"], meta)
    return meta


__all__ = ["Run", "rewrite_report", "Spec", "full_spec", "quick_spec", "scenario", "extract", "sweep_extract", "run_all", "reproduce",
           "flow_goodputs", "pct_fair_share", "jfi", "unfairness", "per_minute", "iws_onsets", "median_ci",
           "replace", "field"]
