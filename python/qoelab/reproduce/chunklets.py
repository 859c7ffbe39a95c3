"""Chunklets (Kua & Armitage, ICCCN 2017) reproduced in the simulator: ``qoelab reproduce chunklets``.

Paper: "Optimising DASH over AQM-enabled Gateways Using Intra-chunk Parallel Retrieval
(Chunklets)". Model, experiments E0-E9, claims C1-C13 and their verdict rules:
../shared/reference/claims/chunklets.md (not needed at run time). Setup mapping, deviations and
measured verdicts: docs/reproductions/chunklets.md.

A cell is (experiment, queue discipline, N); a run is a cell and a seed. Every run is one DASH
client (``[client.data_plane] kind = "chunklets", n = N``; N = 1 is regular DASH) with the paper's
literal ABR (``sa3``) or a fixed 3.5 Mbit/s rung, against 4 CUBIC bulk flows (down or up), on a
12/1 or 25/5 Mbit/s asymmetric dumbbell with FIFO 100 / PIE 1000 / FQ-CoDel 1000 per direction
(dummynet recipes). The DASH client's TCP is the ``freebsd10`` profile (NewReno, FreeBSD restart
window, 30 ms min RTO, 100 ms delayed ACK).

Metrics per run (:func:`chunk_frame`, :func:`steady_start`, :func:`overlap_bins`): per chunk AR
over first -> last byte of any chunklet (the paper's) and over request -> last byte (dash.js's
view), SA = mean of the last 3 ARs, RR, II on levels 1-20; steady state from the first OFF period;
the full-overlap bins (100-ms flow samples lying entirely inside an interval where all N
chunklets of a chunk are receiving) with the DASH and bulk rates in them.

Seeds derive from the run identifier (sha256), so a run gives the same numbers in any grid.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass

from qoelab import outdir
from qoelab.errors import InputError

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, PARTIAL = "SUPPORTED", "NOT SUPPORTED", "INCONCLUSIVE", "PARTIAL"
AQM_LABEL = {"pfifo": "FIFO", "pie": "PIE", "fq_codel": "FQ-CoDel"}
AQM_ORDER = ("pfifo", "pie", "fq_codel")
M_BULK = 4
PAYLOAD = 1448 / 1500
SAMPLE_S = 0.1
TOP_RUNG = 19          # level 20, 4.2 Mbit/s
FIXED_RUNG = 17        # level 18, 3.5 Mbit/s
VIDEO_SEED = 7

# id: (figure, down Mbit/s, up Mbit/s, dash rtt ms, bulk rtt ms, down queue, up queue, bulk dir, fixed rung)
# queue "aqm" = the cell's discipline; "fifo" = a 100-packet FIFO whatever the cell's discipline.
EXPERIMENTS = {
    "E0": ("premise", 12, 1, 20, 20, "aqm", "aqm", None, None),
    "E1": ("Fig. 3", 25, 5, 20, 20, "aqm", "aqm", "down", FIXED_RUNG),
    "E3": ("Fig. 5 (and Fig. 4)", 25, 5, 20, 20, "aqm", "aqm", "down", FIXED_RUNG),
    "E4": ("Fig. 6", 12, 1, 20, 20, "aqm", "aqm", "down", None),
    "E5": ("Fig. 7", 12, 1, 60, 60, "aqm", "aqm", "down", None),
    "E6": ("Fig. 8", 12, 1, 20, 60, "aqm", "aqm", "down", None),
    "E7": ("Fig. 9", 12, 1, 20, 20, "aqm", "aqm", "up", None),
    "E8": ("Fig. 10", 12, 1, 20, 20, "aqm", "fifo", "down", None),
    "E9": ("Fig. 11", 12, 1, 20, 20, "fifo", "aqm", "up", None),
}


@dataclass(frozen=True)
class Run:
    exp: str
    aqm: str
    n: int
    rep: int
    duration_s: int

    @property
    def cell(self) -> tuple:
        return (self.exp, self.aqm, self.n)

    @property
    def run_id(self) -> str:
        return f"{self.exp}-{self.aqm}-n{self.n}-r{self.rep}"

    @property
    def seed(self) -> int:
        return int.from_bytes(hashlib.sha256(self.run_id.encode()).digest()[:4], "big") & 0x7FFFFFFF


@dataclass
class GridSpec:
    name: str
    cells: dict          # exp -> (aqms, ns)
    seeds: int
    duration_s: int
    description: str = ""

    def runs(self) -> list[Run]:
        return [Run(e, a, n, r, self.duration_s) for e, (aqms, ns) in self.cells.items()
                for a in aqms for n in ns for r in range(self.seeds)]


NS = tuple(range(1, 11))


def full_grid() -> GridSpec:
    """N = 1..10 for E3/E4/E7 (FIFO, PIE, FQ-CoDel) and E9 (PIE, FQ-CoDel), E1 (FQ-CoDel, N = 2),
    E0 (N = 1, three queues); E5, E6, E8 at N = 1, 4, 7, 10; 2 seeds, 150 s each (the paper: 400 s)."""
    cells = {"E0": (AQM_ORDER, (1,)), "E1": (("fq_codel",), (2,)),
             "E3": (AQM_ORDER, NS), "E4": (AQM_ORDER, NS), "E7": (AQM_ORDER, NS),
             "E9": (("pie", "fq_codel"), NS),
             "E5": (("pie", "fq_codel"), (1, 4, 7, 10)), "E6": (("pie", "fq_codel"), (1, 4, 7, 10)),
             "E8": (("pie", "fq_codel"), (1, 4, 7, 10))}
    return GridSpec("full", cells, seeds=2, duration_s=150,
                    description="E3/E4/E7 x FIFO/PIE/FQ-CoDel and E9 x PIE/FQ-CoDel at N = 1..10; E5/E6/E8 x "
                                "PIE/FQ-CoDel at N = 1, 4, 7, 10; E1 (FQ-CoDel, N = 2); E0 (N = 1); 2 seeds x 150 s")


def quick_grid() -> GridSpec:
    """``--quick``: N = 1 and 4 for E3/E4/E7 (FIFO, PIE, FQ-CoDel), E1, E0; 1 seed x 60 s."""
    cells = {"E0": (AQM_ORDER, (1,)), "E1": (("fq_codel",), (2,)),
             "E3": (AQM_ORDER, (1, 4)), "E4": (AQM_ORDER, (1, 4)), "E7": (("pfifo", "fq_codel"), (1, 4))}
    return GridSpec("quick", cells, seeds=1, duration_s=60,
                    description="E3/E4 x FIFO/PIE/FQ-CoDel and E7 x FIFO/FQ-CoDel at N = 1, 4; E1; E0; "
                                "1 seed x 60 s")


def _queue(kind: str, up: bool) -> tuple[str, str, dict]:
    if kind == "pfifo":
        return "pfifo", "100pkts", {}
    if kind == "pie":
        return "pie", "1000pkts", {"qdelay_ref": "15ms", "tupdate": "15ms", "alpha": 0.125, "beta": 1.25,
                                   "max_burst": "150ms", "max_ecnth": 0.1, "estimator": "rate",
                                   "derandomize": True, "mean_pktsize": "800B", "decay": 0.984375, "ecn": False}
    if kind == "fq_codel":
        return "fq_codel", "1000pkts", {"variant": "dummynet", "perturb": True, "flows": 1024,
                                        "quantum": "1514B", "target": "5ms", "interval": "100ms"}
    raise ValueError(kind)


def scenario(run: Run) -> dict:
    fig, down, up, rtt_d, rtt_b, qd, qu, bulk, fixed = EXPERIMENTS[run.exp]
    kd = "pfifo" if qd == "fifo" else run.aqm
    ku = "pfifo" if qu == "fifo" else run.aqm
    aqm_d, buf_d, par_d = _queue(kd, False)
    aqm_u, buf_u, par_u = _queue(ku, True)
    topo = {"rate": f"{down}Mbps", "rate_up": f"{up}Mbps", "rtt": f"{rtt_d}ms", "aqm": aqm_d, "aqm_up": aqm_u,
            "buffer": buf_d, "buffer_up": buf_u}
    if par_d:
        topo["aqm_params"] = par_d
    if par_u:
        topo["aqm_params_up"] = par_u
    client = {"name": "dash", "count": 1, "video": "synthetic:chunklets", "video_seed": VIDEO_SEED,
              "rtt": f"{rtt_d}ms", "start": "0s", "tcp": {"profile": "freebsd10"},
              "data_plane": {"kind": "chunklets", "n": run.n}}
    if fixed is not None:
        client.update(abr="fixed", abr_params={"rung": fixed})
    else:
        client["abr"] = "sa3"
    scn = {"scenario": {"name": f"chunklets-{run.run_id}", "duration": f"{run.duration_s}s", "seed": run.seed},
           "topology": topo, "client": [client],
           "output": {"sample_interval": f"{int(SAMPLE_S * 1000)}ms",
                      "tables": ["flows", "segments"]}}
    if bulk:
        rng = random.Random(run.seed)
        scn["flow"] = [{"kind": "bulk", "name": f"bulk{k}", "direction": bulk, "rtt": f"{rtt_b}ms", "cc": "cubic",
                        "start": f"{rng.random():.3f}s"} for k in range(M_BULK)]
    return scn


# ----------------------------------------------------------------------------------------------
# Metric helpers (pure functions of small frames; unit-tested)


def smoothed(ar, w: int = 3) -> list[float]:
    """SA_k = mean of AR_{k-w+1..k} (fewer at the start)."""
    ar = list(ar)
    return [sum(ar[max(0, i - w + 1):i + 1]) / len(ar[max(0, i - w + 1):i + 1]) for i in range(len(ar))]


def chunk_frame(segments, requests=None):
    """Per chunk: segment, rung, level, rr_bps, bytes, t_request, t_first, t_last, ar_bps (first ->
    last byte of any chunklet, body bytes), ar_req_bps (request -> last byte), sa_bps.

    From ``requests`` (the union of the chunk's chunklets) when present, else from ``segments``."""
    import pandas as pd
    s = segments.sort_values("segment").reset_index(drop=True)
    if "abandoned" in s.columns:
        s = s[~s["abandoned"].astype(bool)].reset_index(drop=True)
    out = pd.DataFrame({"segment": s["segment"], "rung": s["rung"].astype(int), "rr_bps": s["bitrate_bps"],
                        "bytes": s["bytes"].astype(float), "t_request": s["t_request_s"],
                        "t_first": s["t_first_byte_s"], "t_last": s["t_last_byte_s"]})
    if requests is not None and len(requests):
        r = requests
        if "kind" in r.columns:
            r = r[r["kind"] == "chunklet"]
        if len(r):
            g = r.groupby("segment").agg(body=("body_bytes", "sum"), t_issue=("t_issue_s", "min"),
                                         t_first=("t_first_byte_s", "min"), t_last=("t_last_byte_s", "max"))
            m = out["segment"].map
            ok = out["segment"].isin(g.index)
            out.loc[ok, "bytes"] = m(g["body"])[ok].astype(float)
            out.loc[ok, "t_first"] = m(g["t_first"])[ok]
            out.loc[ok, "t_last"] = m(g["t_last"])[ok]
            out.loc[ok, "t_request"] = m(g["t_issue"])[ok]
    out["level"] = out["rung"] + 1
    dt = (out["t_last"] - out["t_first"]).clip(lower=1e-6)
    out["ar_bps"] = 8.0 * out["bytes"] / dt
    out["ar_req_bps"] = 8.0 * out["bytes"] / (out["t_last"] - out["t_request"]).clip(lower=1e-6)
    out["sa_bps"] = smoothed(out["ar_bps"])
    out["sa_req_bps"] = smoothed(out["ar_req_bps"])
    return out


def steady_start(chunks, gap_s: float = 0.1) -> tuple[int, bool]:
    """Index of the first steady-state chunk: the first chunk requested after an OFF period (an idle
    gap > gap_s between the previous chunk's last byte and its request: the buffer was full). If the
    client never idles: (len(chunks), False) -- no steady state."""
    tr = list(chunks["t_request"])
    tl = list(chunks["t_last"])
    for k in range(1, len(tr)):
        if tr[k] - tl[k - 1] > gap_s:
            return k, True
    return len(tr), False


def ii_levels(rungs) -> list[float]:
    from qoelab import _core
    return list(_core.instability_index_levels([int(r) for r in rungs]))


def full_overlap_intervals(requests, n: int) -> list[tuple[float, float, int]]:
    """Per chunk with n chunklets: (start, end, segment) where all n are receiving
    (max of first-byte times, min of last-byte times); empty overlaps left out."""
    r = requests
    if "kind" in r.columns:
        r = r[r["kind"] == "chunklet"]
    out = []
    for seg, g in r.groupby("segment"):
        if len(g) < n:
            continue
        a, b = float(g["t_first_byte_s"].max()), float(g["t_last_byte_s"].min())
        if b > a:
            out.append((a, b, int(seg)))
    return out


def active_count(requests, t0: float, t1: float) -> int:
    """Chunklets receiving over the whole of [t0, t1] (first byte <= t0 and last byte >= t1)."""
    r = requests
    return int(((r["t_first_byte_s"] <= t0) & (r["t_last_byte_s"] >= t1)).sum())


def overlap_bins(flows, dash_flows, bulk_flows, requests, n: int, sample_s: float = SAMPLE_S):
    """The flows samples (rate over (t - sample_s, t]) classified by the number of chunklets receiving
    throughout the bin: columns time_s, active (chunklets over the whole bin), any (a chunklet
    receiving at some point of the bin), dash_bps, bulk_bps (sum), bulk_per_flow_bps.

    ``full`` bins: active == n. Bins only partly covered are counted in ``any`` but not ``active``."""
    import numpy as np
    import pandas as pd
    f = flows
    dash = f[f["flow"].isin(dash_flows)].groupby("time_s")["goodput_bps"].sum()
    bulk = f[f["flow"].isin(bulk_flows)].groupby("time_s")["goodput_bps"].sum()
    times = np.array(sorted(set(f["time_s"])))
    r = requests
    if "kind" in r.columns:
        r = r[r["kind"] == "chunklet"]
    fb = r["t_first_byte_s"].to_numpy()
    lb = r["t_last_byte_s"].to_numpy()
    t0 = times - sample_s
    active = ((fb[None, :] <= t0[:, None] + 1e-9) & (lb[None, :] >= times[:, None] - 1e-9)).sum(axis=1)
    anyc = ((fb[None, :] < times[:, None]) & (lb[None, :] > t0[:, None])).sum(axis=1)
    d = pd.DataFrame({"time_s": times, "active": active, "any": anyc,
                      "dash_bps": dash.reindex(times).fillna(0.0).to_numpy(),
                      "bulk_bps": bulk.reindex(times).fillna(0.0).to_numpy()})
    d["bulk_per_flow_bps"] = d["bulk_bps"] / max(1, len(bulk_flows))
    return d


def overlap_stats(bins, n: int, m: int, capacity_bps: float) -> dict:
    """Full-overlap DASH rate and share against N/(N+M) (share = DASH / (DASH + bulk) in those bins)."""
    full = bins[bins["active"] == n]
    on = bins[bins["any"] > 0]
    one = bins[(bins["active"] == 1) & (bins["any"] == 1)] if n > 1 else bins.iloc[0:0]
    res = {"full_bins": int(len(full)), "on_bins": int(len(on)),
           "full_frac_on": len(full) / len(on) if len(on) else float("nan"),
           "ideal_share": n / (n + m), "ideal_bps": n / (n + m) * capacity_bps}
    if len(full):
        dsh, blk = float(full["dash_bps"].mean()), float(full["bulk_bps"].mean())
        res.update(dash_full_bps=dsh, bulk_full_per_flow_bps=float(full["bulk_per_flow_bps"].mean()),
                   share_full=dsh / (dsh + blk) if dsh + blk > 0 else float("nan"),
                   ratio_full=dsh / float(full["bulk_per_flow_bps"].mean())
                   if full["bulk_per_flow_bps"].mean() > 0 else float("nan"))
    if len(on):
        res["dash_on_bps"] = float(on["dash_bps"].mean())
    if len(one):
        b = float(one["bulk_per_flow_bps"].mean())
        res["ratio_one"] = float(one["dash_bps"].mean()) / b if b > 0 else float("nan")
        res["one_bins"] = int(len(one))
    return res


# ----------------------------------------------------------------------------------------------
# Running one grid point


def _run_real(scn: dict):
    from qoelab import results
    return results.run(scn)


def extract(run: Run, summary: dict, tabs: dict) -> tuple[dict, "object", "object"]:
    """The run record, its steady-state chunk rows and its overlap bins (full-overlap runs only)."""
    import pandas as pd
    fig, down, up, *_ = EXPERIMENTS[run.exp]
    c = (summary.get("clients") or [{}])[0]
    segs, reqs = tabs.get("segments"), tabs.get("requests")
    ch = chunk_frame(segs, reqs)
    k0, from_off = steady_start(ch)
    ch["ii"] = [float("nan")] * min(10, len(ch)) + ii_levels(ch["rung"])[: max(0, len(ch) - 10)]
    st = ch.iloc[k0:].copy()
    # II only on windows fully inside the steady state
    st.loc[st.index < k0 + 10, "ii"] = float("nan")
    stalls_steady = 0
    if segs is not None and "stall_s" in segs.columns:
        ss = segs.sort_values("segment").reset_index(drop=True)
        stalls_steady = int((ss["stall_s"].iloc[k0:] > 0).sum()) if k0 < len(ss) else 0
    http = c.get("http") or {}
    hdr = _header_bytes(http, reqs)
    rec = {"run_id": run.run_id, "exp": run.exp, "aqm": run.aqm, "n": run.n, "rep": run.rep, "seed": run.seed,
           "duration_s": run.duration_s, "chunks": len(ch), "steady_from": k0, "steady_from_off": from_off,
           "steady_t_s": float(ch["t_request"].iloc[k0]) if k0 < len(ch) else float("nan"),
           "steady_chunks": len(st), "stalls_steady": stalls_steady, "stall_count": c.get("stall_count"),
           "header_bytes": hdr, "fq_collisions": _collisions(summary)}
    for col in ("sa_bps", "rr_bps", "ar_bps", "ar_req_bps", "sa_req_bps", "ii"):
        x = st[col].dropna()
        rec[f"{col}_median"] = float(x.median()) if len(x) else float("nan")
    st.insert(0, "run_id", run.run_id)
    for k, v in (("exp", run.exp), ("aqm", run.aqm), ("n", run.n), ("rep", run.rep)):
        st[k] = v
    bins = None
    flows, info = tabs.get("flows"), tabs.get("flow_info")
    if reqs is not None and flows is not None and info is not None and EXPERIMENTS[run.exp][7] == "down":
        dash_ids = set(info.loc[info["kind"] == "video", "flow"])
        bulk_ids = set(info.loc[info["kind"] == "bulk", "flow"])
        bins = overlap_bins(flows, dash_ids, bulk_ids, reqs, run.n)
        t_ss = rec["steady_t_s"] if from_off else 0.0
        o = overlap_stats(bins[bins["time_s"] >= t_ss], run.n, M_BULK, down * 1e6)
        rec.update({f"ov_{k}": v for k, v in o.items()})
        bins.insert(0, "run_id", run.run_id)
    return rec, st, bins


def _header_bytes(http: dict, reqs) -> float:
    """Request + response header bytes per request, if the summary reports them."""
    for k in ("header_bytes_per_request", "header_bytes"):
        if isinstance(http.get(k), (int, float)):
            v = float(http[k])
            nreq = http.get("requests") or (len(reqs) if reqs is not None else 0)
            return v / nreq if k == "header_bytes" and nreq else v
    req_h, resp_h = http.get("request_header_bytes"), http.get("response_header_bytes")
    if isinstance(req_h, (int, float)) and isinstance(resp_h, (int, float)):
        return float(req_h) + float(resp_h)
    return float("nan")


def _collisions(summary: dict):
    tot = 0
    found = False
    for link in summary.get("links") or []:
        v = link.get("fq_collisions")
        if isinstance(v, (int, float)):
            tot += v
            found = True
        elif isinstance(v, dict):
            tot += sum(x for x in v.values() if isinstance(x, (int, float)))
            found = True
    return tot if found else None


def execute(run: Run, runner=None) -> dict:
    t0 = time.perf_counter()
    st = bins = None
    try:
        res = (runner or _run_real)(scenario(run))
        tabs = {}
        for name in ("segments", "requests", "flows", "flow_info"):
            try:
                tabs[name] = res.table(name)
            except KeyError:
                tabs[name] = None
        rec, st, bins = extract(run, res.summary, tabs)
        err = None
    except Exception as e:
        rec = {"run_id": run.run_id, "exp": run.exp, "aqm": run.aqm, "n": run.n, "rep": run.rep, "seed": run.seed}
        err = f"{type(e).__name__}: {e}".splitlines()[0]
    rec["wall_s"] = round(time.perf_counter() - t0, 3)
    rec["error"] = err
    return {"run": rec, "chunks": st, "bins": bins}


def _worker(run: Run) -> dict:
    return execute(run)


def _ignore_sigint() -> None:
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _cost(run: Run) -> float:
    return EXPERIMENTS[run.exp][1] * run.duration_s + run.n


def run_grid(runs: list[Run], jobs: int = 0, runner=None, progress=None) -> list[dict]:
    """Every run, results in grid order; ``jobs`` worker processes (workers ignore SIGINT, the
    parent's Ctrl-C terminates the pool and nothing is written)."""
    jobs = jobs or os.cpu_count() or 1
    out: list = [None] * len(runs)
    t0 = time.perf_counter()
    if runner is not None or jobs == 1 or len(runs) <= 1:
        for i, r in enumerate(runs):
            out[i] = execute(r, runner)
            if progress:
                progress(i + 1, len(runs), time.perf_counter() - t0)
        return out
    import multiprocessing as mp
    ctx = mp.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
    order = sorted(range(len(runs)), key=lambda i: -_cost(runs[i]))
    with ctx.Pool(processes=min(jobs, len(runs)), initializer=_ignore_sigint) as pool:
        done = 0
        for i, res in zip(order, pool.imap(_worker, [runs[i] for i in order], chunksize=1)):
            out[i] = res
            done += 1
            if progress:
                progress(done, len(runs), time.perf_counter() - t0)
    return out
