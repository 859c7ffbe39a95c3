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
import re
import time
from dataclasses import dataclass

from qoelab import outdir
from qoelab.reproduce import common
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
    # Sensitivity of E4 (claims file sec. 5 P2, P7): the player sees a segment only when its last
    # chunklet is in (the paper's store-and-forward proxy, as dash.js saw it); the DASH host on Linux
    # TCP instead of the freebsd10 profile.
    "E4-proxy": ("Fig. 6 sensitivity: proxy view", 12, 1, 20, 20, "aqm", "aqm", "down", None),
    "E4-linux": ("Fig. 6 sensitivity: Linux TCP", 12, 1, 20, 20, "aqm", "aqm", "down", None),
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
AQMS2 = ("pie", "fq_codel")


def full_grid() -> GridSpec:
    """N = 1..10 for E3/E4/E7 (FIFO, PIE, FQ-CoDel) and E5/E6/E8/E9 (PIE, FQ-CoDel), E1 (FQ-CoDel,
    N = 2), E0 (N = 1, three queues); 5 seeds x 400 s (the claims file's >= 5 seeds, the paper's 400 s)."""
    cells = {"E0": (AQM_ORDER, (1,)), "E1": (("fq_codel",), (2,)),
             "E3": (AQM_ORDER, NS), "E4": (AQM_ORDER, NS), "E7": (AQM_ORDER, NS),
             "E9": (AQMS2, NS), "E5": (AQMS2, NS), "E6": (AQMS2, NS), "E8": (AQMS2, NS),
             "E4-proxy": (AQMS2, (1, 5, 10)), "E4-linux": (AQMS2, (1, 5, 10))}
    return GridSpec("full", cells, seeds=5, duration_s=400,
                    description="E3/E4/E7 x FIFO/PIE/FQ-CoDel and E5/E6/E8/E9 x PIE/FQ-CoDel at N = 1..10; E1 "
                                "(FQ-CoDel, N = 2); E0 (N = 1); sensitivity of E4 (proxy view, Linux TCP) x "
                                "PIE/FQ-CoDel at N = 1, 5, 10; 5 seeds x 400 s (the paper's duration)")


def quick_grid() -> GridSpec:
    """``--quick``: N = 1, 4, 10 for E3/E4/E7 (FIFO, PIE, FQ-CoDel) and E9 (PIE, FQ-CoDel); N = 1, 10
    for E5/E6/E8; E1; E0; 1 seed x 90 s (49 runs)."""
    q = (1, 4, 10)
    cells = {"E0": (AQM_ORDER, (1,)), "E1": (("fq_codel",), (2,)),
             "E3": (AQM_ORDER, q), "E4": (AQM_ORDER, q), "E7": (AQM_ORDER, q), "E9": (AQMS2, q),
             "E5": (AQMS2, (1, 10)), "E6": (AQMS2, (1, 10)), "E8": (AQMS2, (1, 10))}
    return GridSpec("quick", cells, seeds=1, duration_s=90,
                    description="E3/E4/E7 x FIFO/PIE/FQ-CoDel and E9 x PIE/FQ-CoDel at N = 1, 4, 10; E5/E6/E8 x "
                                "PIE/FQ-CoDel at N = 1, 10; E1; E0; 1 seed x 90 s")


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
    if run.exp == "E4-proxy":
        client["data_plane"]["proxy"] = True
    if run.exp == "E4-linux":
        del client["tcp"]
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


FALLBACK_SKIP = 10


def steady_cut(chunks) -> tuple[int, bool]:
    """:func:`steady_start`, or, for a client that never fills its buffer (no OFF period in the
    run: FIFO under upstream load), every chunk after the first FALLBACK_SKIP (flagged False)."""
    k0, ok = steady_start(chunks)
    return (k0, True) if ok else (min(FALLBACK_SKIP, len(chunks)), False)


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
    res["one_bins"] = int(len(one))    # (0, not missing, when there are none)
    if len(one):
        b = float(one["bulk_per_flow_bps"].mean())
        res["ratio_one"] = float(one["dash_bps"].mean()) / b if b > 0 else float("nan")
    return res


# ----------------------------------------------------------------------------------------------
# Running one grid point


def extract(run: Run, summary: dict, tabs: dict) -> tuple[dict, "object", "object"]:
    """The run record, its steady-state chunk rows and its overlap bins (full-overlap runs only)."""
    import pandas as pd
    fig, down, up, *_ = EXPERIMENTS[run.exp]
    c = (summary.get("clients") or [{}])[0]
    segs, reqs = tabs.get("segments"), tabs.get("requests")
    ch = chunk_frame(segs, reqs)
    k0, from_off = steady_cut(ch)
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
    st = st.assign(t_rel=st["t_request"] - (rec["steady_t_s"] if len(st) else 0.0))
    st.insert(0, "run_id", run.run_id)
    for k, v in (("exp", run.exp), ("aqm", run.aqm), ("n", run.n), ("rep", run.rep)):
        st[k] = v
    bins = None
    flows, info = tabs.get("flows"), tabs.get("flow_info")
    if reqs is not None and flows is not None and info is not None and EXPERIMENTS[run.exp][7] == "down":
        dash_ids = set(info.loc[info["kind"] == "video", "flow"])
        bulk_ids = set(info.loc[info["kind"] == "bulk", "flow"])
        bins = overlap_bins(flows, dash_ids, bulk_ids, reqs, run.n)
        t_ss = rec["steady_t_s"] if rec["steady_t_s"] == rec["steady_t_s"] else 0.0
        o = overlap_stats(bins[bins["time_s"] >= t_ss], run.n, M_BULK, down * 1e6)
        rec.update({f"ov_{k}": v for k, v in o.items()})
        bins.insert(0, "run_id", run.run_id)
    return rec, st, bins


H_BYTES = 600   # the simulator's request (300 B) + response header (300 B) per GET ([client.http] defaults)


def _header_bytes(http: dict, reqs) -> float:
    """Request + response header bytes per GET: the [client.http] defaults (the summary does not
    count header bytes)."""
    return float(H_BYTES)


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


def sweep_extract(res, point: dict) -> dict:
    """The sweep engine's extract hook: :func:`extract` of the run (``point["payload"]``); the chunk
    and bin tables as lists of rows."""
    run = point["payload"]
    tabs = {}
    for name in ("segments", "requests", "flows", "flow_info"):
        try:
            tabs[name] = res.table(name)
        except KeyError:
            tabs[name] = None
    rec, st, bins = extract(run, res.summary, tabs)
    rows = (lambda d: d.to_dict(orient="records") if d is not None and len(d) else [])
    return {"run": rec, "chunks": rows(st), "bins": rows(bins)}


def _cost(run: Run) -> float:
    return EXPERIMENTS[run.exp][1] * run.duration_s + run.n


def run_grid(runs: list[Run], store_dir: str, jobs: int = 0, runner=None, log=None) -> tuple[list[dict], dict]:
    """Every run on the sweep engine into the resumable store ``store_dir``; results in grid order
    ({"run": record, "chunks": DataFrame or None, "bins": DataFrame or None}) and the sweep's
    counts. A custom ``runner`` runs everything in this process (tests)."""
    import pandas as pd
    recs, res = common.run_on_sweep(f"chunklets-{len(runs)}", runs, scenario,
                                    "qoelab.reproduce.chunklets:sweep_extract", store_dir, jobs, runner, log, _cost)
    out = []
    for run, rec in zip(runs, recs):
        r, m = common.record_metrics(rec, {"run_id": run.run_id, "exp": run.exp, "aqm": run.aqm, "n": run.n,
                                           "rep": run.rep, "seed": run.seed})
        out.append({"run": r, "chunks": pd.DataFrame(m["chunks"]) if m.get("chunks") else None,
                    "bins": pd.DataFrame(m["bins"]) if m.get("bins") else None})
    return out, res

# ----------------------------------------------------------------------------------------------
# Cell statistics (pooled steady-state chunks) and the verdict helpers of the claims file (sec. 3)


def boot_ci_median(x, reps: int = 300, seed: int = 1) -> tuple[float, float]:
    """Bootstrap 95% CI of the median (percentile method)."""
    import numpy as np
    x = np.asarray([v for v in x if v == v], dtype=float)
    if len(x) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    meds = np.median(rng.choice(x, size=(reps, len(x)), replace=True), axis=1)
    return float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def cell_stats(chunks):
    """Per (exp, aqm, n): median, IQR and bootstrap CI of SA (and RR, II, AR req->last), pooled over
    seeds, plus the per-seed medians (lists) for the "A > B" rule."""
    import pandas as pd
    rows = []
    for (e, a, n), g in chunks.groupby(["exp", "aqm", "n"]):
        r = {"exp": e, "aqm": a, "n": int(n), "chunks": len(g), "seeds": int(g["run_id"].nunique())}
        for col, key in (("sa_bps", "sa"), ("rr_bps", "rr"), ("ii", "ii"), ("sa_req_bps", "sareq"),
                         ("ar_bps", "ar")):
            x = g[col].dropna()
            if not len(x):
                r.update({f"{key}_med": float("nan"), f"{key}_iqr": float("nan")})
                continue
            r[f"{key}_med"] = float(x.median())
            r[f"{key}_iqr"] = float(x.quantile(0.75) - x.quantile(0.25))
            r[f"{key}_mean"] = float(x.mean())
            if key in ("sa", "rr"):
                r[f"{key}_lo"], r[f"{key}_hi"] = boot_ci_median(x)
            r[f"{key}_seeds"] = [float(v) for v in g.groupby("rep")[col].median().sort_index()]
        r["top_frac"] = float((g["rung"] == TOP_RUNG).mean())
        sa = g["sa_bps"].dropna()
        r["sa_cv"] = float(sa.std() / sa.mean()) if len(sa) > 1 and sa.mean() > 0 else float("nan")
        rows.append(r)
    return pd.DataFrame(rows)


class Cells:
    """Look-ups into :func:`cell_stats`."""

    def __init__(self, stats):
        self.d = {(r["exp"], r["aqm"], int(r["n"])): r for r in stats.to_dict("records")} if len(stats) else {}

    def has(self, e, a=None):
        return any(k[0] == e and (a is None or k[1] == a) for k in self.d)

    def get(self, e, a, n, key):
        r = self.d.get((e, a, n))
        return r.get(key, float("nan")) if r else float("nan")

    def series(self, e, a, key, ns=None) -> dict:
        out = {k[2]: r.get(key, float("nan")) for k, r in self.d.items() if k[0] == e and k[1] == a}
        out = {n: v for n, v in sorted(out.items()) if ns is None or n in ns}
        return {n: v for n, v in out.items() if not (isinstance(v, float) and math.isnan(v))}

    def ns(self, e, a):
        return sorted(k[2] for k in self.d if k[0] == e and k[1] == a)


def spearman(xs, ys) -> float:
    import pandas as pd
    if len(xs) < 3:
        return float("nan")
    v = pd.Series(list(xs)).rank().corr(pd.Series(list(ys)).rank())
    return float(v) if v == v else 0.0


def trend(ser: dict, up: bool = True, ratio: float = 1.15, lo: int = 1, hi: int = 10):
    """'Increases with N' (up) or 'decreases' (N = lo..hi): (status, text). Status True / False
    (direction holds, magnitude short, or no clear trend) / 'rev' (opposite trend) / None (< 2 N)."""
    s = {n: v for n, v in ser.items() if lo <= n <= hi}
    if len(s) < 2 or min(s) != lo or max(s) != hi:
        # the rules compare N = lo with N = hi: another end point is another rule
        return None, f"needs N = {lo} and N = {hi}"
    ns, vs = list(s), list(s.values())
    rho = spearman(ns, vs) if len(s) >= 3 else (1.0 if vs[-1] > vs[0] else -1.0)
    r = vs[-1] / vs[0] if vs[0] > 0 else float("inf")
    txt = f"rho {rho:+.2f}, x{r:.2f} (N={ns[0]}->{ns[-1]})"
    if up:
        if rho >= 0.7 and r >= ratio:
            return True, txt
        if rho <= -0.7 and r <= 1 / 1.15:
            return "rev", txt
        return False, txt
    if rho <= -0.7 and r <= 0.85:
        return True, txt
    if rho >= 0.7 and r >= 1.15:
        return "rev", txt
    return False, txt


def greater(a: float, b: float, sa=(), sb=(), margin: float = 1.05):
    """'A > B': median_A >= 1.05 median_B and the same sign in >= 80% of the seed-level medians.
    True / 'rev' (B > A by the same rule) / 'noise'."""
    if a != a or b != b:
        return None
    pairs = list(zip(sa, sb))

    def agree(x, y):
        return not pairs or sum(1 for p, q in pairs if (p > q if x else q > p)) >= 0.8 * len(pairs)
    # strictly: a tie (0 against 0, a saturated median) is no difference, whatever the margin
    if a > b and a >= margin * b and agree(True, None):
        return True
    if b > a and b >= margin * a and agree(False, None):
        return "rev"
    return "noise"


def count_frac(statuses, need: float):
    """Fraction rule over N values: True if >= need of the evaluated ones are True; 'rev' if >= need
    are 'rev'; else False (or 'noise' when all non-True are noise)."""
    ev = [s for s in statuses if s is not None]
    if not ev:
        return None
    if sum(s is True for s in ev) >= need * len(ev) - 1e-9:
        return True
    if sum(s == "rev" for s in ev) >= need * len(ev) - 1e-9:
        return "rev"
    return "noise" if all(s in (True, "noise") for s in ev) else False


def _merge(statuses) -> object:
    """One status from the parts of a condition that all must hold: reversed if any is, else false
    if any is, else noise if any is, else true (None: none was evaluated)."""
    ev = [s for s in statuses if s is not None]
    return (None if not ev else "rev" if "rev" in ev else False if False in ev else
            "noise" if "noise" in ev else True)


def _conditions(parts: list) -> dict:
    """{condition: status} with the parts of one lettered condition ("(a) PIE", "(a) FQ") merged."""
    out: dict = {}
    for lab, s in parts:
        m = re.match(r"\(([a-z])\)", lab)
        out.setdefault(m.group(1) if m else lab, []).append(s)
    return {k: _merge(ss) for k, ss in out.items()}


def combine(parts: list) -> str:
    """Verdict of a compound claim from its conditions (label, status): the claims file's PASS ->
    SUPPORTED, PARTIAL -> PARTIAL, FAIL -> NOT SUPPORTED, INCONCLUSIVE -> INCONCLUSIVE.

    No condition evaluated: INCONCLUSIVE. All true: SUPPORTED (PARTIAL if some were not run). Any
    reversed: NOT SUPPORTED. Only seed noise against the claim: INCONCLUSIVE (PARTIAL if one
    condition is noise and the others hold). Exactly one false ("only one condition of a compound
    claim fails"), whatever is noise beside it: PARTIAL. Two or more false: NOT SUPPORTED (the
    claims file does not grade that case; this is its reading here, docs/reproductions/chunklets.md).
    Conditions are counted as the claims file letters them: the parts of one lettered condition
    ("(a) PIE", "(a) FQ-CoDel"; "(c) E7", "(c) E9") are one condition."""
    parts = [(lab, _norm(s)) for lab, s in parts]
    if not [s for _, s in parts if s is not None]:
        return INCONCLUSIVE
    if all(s is True for _, s in parts if s is not None):
        return SUPPORTED if all(s is not None for _, s in parts) else PARTIAL
    # a claim's conditions are its lettered ones: "(c) E7" and "(c) E9" are one condition, (c)
    st = [s for s in _conditions(parts).values() if s is not None]
    if any(s == "rev" for s in st):
        return NOT_SUPPORTED
    bad = [s for s in st if s is not True]
    if all(s == "noise" for s in bad):
        return INCONCLUSIVE if len(bad) > 1 or len(st) == 1 else PARTIAL
    # a condition within seed noise has not failed: it does not count as a second failure
    if sum(s is False for s in bad) == 1:
        return PARTIAL
    return NOT_SUPPORTED


def _norm(s):
    return s if s is None or isinstance(s, str) else bool(s)


def _x(a, b) -> str:
    return f"x{a / b:.1f}" if b > 0 else "x inf"


def _m(x, nd=2):
    return "n/a" if x is None or x != x else f"{x / 1e6:.{nd}f}"


def _st(s):
    return {True: "yes", False: "no", "rev": "reversed", "noise": "within noise",
            None: "n/a (not run, or no data)"}[_norm(s)]


def _ser_txt(ser: dict, scale=1e6, nd=2) -> str:
    return " ".join(f"{n}:{v / scale:.{nd}f}" for n, v in ser.items())


def _ci_txt(c: Cells, e, a, n) -> str:
    return (f"{_m(c.get(e, a, n, 'sa_med'))} [{_m(c.get(e, a, n, 'sa_lo'))}, {_m(c.get(e, a, n, 'sa_hi'))}]")


def _not_run(claim: dict, what: str) -> dict:
    claim.update(verdict=INCONCLUSIVE, ours=f"not run: {what}", parts=[])
    return claim


LOW = " (low weight)"


def _finish(claim: dict, parts: list, ours: str) -> dict:
    """The verdict of ``parts`` by :func:`combine`; a condition the claims file gives a low or
    PARTIAL weight (label ending in LOW) does not enter it: if it does not hold, SUPPORTED becomes
    PARTIAL, never worse."""
    claim["verdict"] = combine([(lab, s) for lab, s in parts if not lab.endswith(LOW)])
    if claim["verdict"] == SUPPORTED and any(_norm(s) is not True for lab, s in parts if lab.endswith(LOW)):
        claim["verdict"] = PARTIAL
    claim["parts"] = [{"condition": lab, "holds": _st(s)} for lab, s in parts]
    claim["ours"] = ours + " | conditions: " + "; ".join(f"{lab}: {_st(s)}" for lab, s in parts)
    return claim


def _runs_mean(runs, e, a, n, col):
    d = runs[(runs["exp"] == e) & (runs["aqm"] == a) & (runs["n"] == n)]
    if col not in d.columns:
        return float("nan")
    x = d[col].dropna()
    return float(x.mean()) if len(x) else float("nan")


# ----------------------------------------------------------------------------------------------
# The claims C1-C13 (rules: the claims file, sec. 3)

AQMS2 = ("pie", "fq_codel")


def claim_c1(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C1", "figures": "Fig. 3 / IV-A (E1)",
             "paper": "N = 2 chunklets vs 4 bulk CUBIC flows, 25/5 Mbit/s, 20 ms, FQ-CoDel: while both chunklets "
                      "overlap DASH gets 2/6 x 25 = 8.3 Mbit/s and each bulk flow 1/6 = 4.2 Mbit/s.",
             "rule": "100-ms bins in which both chunklets receive: DASH mean in [7.1, 9.6] Mbit/s, each bulk flow "
                     "in [3.5, 4.8], DASH/bulk in [1.6, 2.4]; bins with one chunklet: ratio in [0.8, 1.25]."}
    if not ((runs["exp"] == "E1") & (runs["aqm"] == "fq_codel") & (runs["n"] == 2)).any():
        return _not_run(claim, "E1 not in this grid")
    g = lambda col: _runs_mean(runs, "E1", "fq_codel", 2, col)  # noqa: E731
    d, b, r, r1, on, fr = (g("ov_dash_full_bps"), g("ov_bulk_full_per_flow_bps"), g("ov_ratio_full"),
                           g("ov_ratio_one"), g("ov_dash_on_bps"), g("ov_full_frac_on"))

    def inr(x, lo, hi, rev=None):
        if x != x:
            return None
        return True if lo <= x <= hi else ("rev" if rev is not None and x < rev else False)
    parts = [("DASH in [7.1, 9.6]", inr(d, 7.1e6, 9.6e6)), ("bulk/flow in [3.5, 4.8]", inr(b, 3.5e6, 4.8e6)),
             ("ratio in [1.6, 2.4]", inr(r, 1.6, 2.4, rev=1.0)), ("one-chunklet ratio in [0.8, 1.25]", inr(r1, 0.8, 1.25))]
    ob = g("ov_one_bins")
    one = (f"ratio {r1:.2f} ({ob:.0f} bins per run: mostly loss-recovery stalls of the last chunklet)"
           if ob > 0 else "none in these runs (the condition is not evaluated)")
    ours = (f"full-overlap bins: DASH {_m(d)} Mbit/s, bulk {_m(b)} Mbit/s per flow, ratio {r:.2f}; one-chunklet "
            f"bins: {one}; all ON bins: DASH {_m(on)} Mbit/s; full overlap {fr:.0%} of ON bins "
            f"(goodput, payload; ideal IP-level 8.33 x 0.965 = 8.04)")
    return _finish(claim, parts, ours)


def claim_c2(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C2", "figures": "IV-A model (E3 FQ-CoDel)",
             "paper": "Under FQ-CoDel the DASH rate while all N chunklets overlap is AR_N = N/x C, x = N + M "
                      "(the multiplier).",
             "rule": "E3 FQ-CoDel, each N: full-overlap DASH rate within +-15% of N/(N+M) x C x 1448/1500 "
                     "(payload). SUPPORTED at every N; PARTIAL at >= half of them; NOT SUPPORTED otherwise."}
    ns = sorted(set(runs.loc[(runs["exp"] == "E3") & (runs["aqm"] == "fq_codel"), "n"]))
    if not ns:
        return _not_run(claim, "E3 FQ-CoDel not in this grid")
    ok, txt = [], []
    for n in ns:
        d = _runs_mean(runs, "E3", "fq_codel", n, "ov_dash_full_bps")
        ideal = n / (n + M_BULK) * 25e6 * PAYLOAD
        sh = _runs_mean(runs, "E3", "fq_codel", n, "ov_share_full")
        fr = _runs_mean(runs, "E3", "fq_codel", n, "ov_full_frac_on")
        if d == d:
            ok.append(abs(d / ideal - 1) <= 0.15)
        txt.append(f"N={n}: {_m(d)} vs {_m(ideal)} (share {sh:.2f} vs {n / (n + M_BULK):.2f}, full overlap "
                   f"{fr:.0%} of ON)")
    col = runs.loc[(runs["exp"] == "E3") & (runs["aqm"] == "fq_codel"), "fq_collisions"].dropna()
    k = sum(ok)
    claim["verdict"] = (INCONCLUSIVE if not ok else SUPPORTED if k == len(ok) else
                        PARTIAL if k >= len(ok) / 2 else NOT_SUPPORTED)
    claim["ours"] = (f"within 15% at {k}/{len(ok)} N; " + "; ".join(txt)
                     + f"; FQ hash collisions (sum over runs): {int(col.sum()) if len(col) else 'n/a'}")
    claim["parts"] = []
    return claim


def _peak_window(chunks, e, a, n, win=200.0):
    d = chunks[(chunks["exp"] == e) & (chunks["aqm"] == a) & (chunks["n"] == n) & (chunks["t_rel"] <= win)]
    if not len(d):
        return float("nan"), float("nan")
    pk = d.groupby("run_id")["sa_bps"].max().median()
    cv = d.groupby("run_id")["sa_bps"].agg(lambda x: x.std() / x.mean()).median()
    return float(pk), float(cv)


def claim_c3(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C3", "figures": "Fig. 4 / IV-A (E2 = E3 conditions)",
             "paper": "SA over 200 s, N = 1, 5, 10: FQ-CoDel's SA is more stable and higher than PIE's at high N; "
                      "peak ~14 Mbit/s (FQ-CoDel, N = 10) vs ~10 Mbit/s (PIE).",
             "rule": "Max SA in a 200-s steady-state window (median over seeds): FQ N=10 in [10.5, 17.5], PIE N=10 in "
                     "[7.5, 12.5]; peak and median FQ > PIE at N = 10; SA(1) < SA(5) < SA(10) for both. CV of SA "
                     "lower for FQ at PARTIAL weight (conflicts with C4(d)): if it does not hold, SUPPORTED becomes "
                     "PARTIAL, never worse."}
    if not (c.has("E3", "pie") and c.has("E3", "fq_codel")):
        return _not_run(claim, "E3 PIE/FQ-CoDel not in this grid")
    nmax = max(c.ns("E3", "fq_codel"))
    pf, cvf = _peak_window(chunks, "E3", "fq_codel", nmax)
    pp, cvp = _peak_window(chunks, "E3", "pie", nmax)
    mf, mp = c.get("E3", "fq_codel", nmax, "sa_med"), c.get("E3", "pie", nmax, "sa_med")

    def mono(a):
        # all three N or no verdict on the condition (the quick grid has no N = 5: comparing 1 with 10
        # alone was shown as "holds")
        if not all(("E3", a, n) in c.d for n in (1, 5, 10)):
            return None
        s = [c.get("E3", a, n, "sa_med") for n in (1, 5, 10)]
        return True if all(x < y for x, y in zip(s, s[1:])) else ("rev" if all(x > y for x, y in zip(s, s[1:]))
                                                                  else False)
    parts = [(f"FQ peak in [10.5, 17.5] (N={nmax})", (10.5e6 <= pf <= 17.5e6) if pf == pf else None),
             (f"PIE peak in [7.5, 12.5] (N={nmax})", (7.5e6 <= pp <= 12.5e6) if pp == pp else None),
             ("peak and median FQ > PIE", None if pf != pf or pp != pp else
              (True if pf > pp and mf > mp else "rev" if pf < pp and mf < mp else False)),
             ("FQ SA(1)<SA(5)<SA(10)", mono("fq_codel")), ("PIE SA(1)<SA(5)<SA(10)", mono("pie"))]
    ours = (f"N={nmax}: peak FQ {_m(pf)} vs PIE {_m(pp)} Mbit/s; median FQ {_ci_txt(c, 'E3', 'fq_codel', nmax)} vs "
            f"PIE {_ci_txt(c, 'E3', 'pie', nmax)}; CV of SA FQ {cvf:.2f} vs PIE {cvp:.2f} "
            f"({'FQ more stable' if cvf < cvp else 'PIE more stable'}); medians N=1,5,10 FQ "
            f"{[_m(c.get('E3', 'fq_codel', n, 'sa_med')) for n in (1, 5, 10)]}, PIE "
            f"{[_m(c.get('E3', 'pie', n, 'sa_med')) for n in (1, 5, 10)]}")
    parts.append(("CV of SA FQ < PIE" + LOW, None if cvf != cvf or cvp != cvp else cvf < cvp))
    return _finish(claim, parts, ours)


def claim_c4(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C4", "figures": "Fig. 5 / IV-A (E3)",
             "paper": "25/5 Mbit/s, fixed 3.5 Mbit/s RR, 4 downstream flows: PIE's and FQ-CoDel's SA increase with "
                      "N; FIFO's SA is lower but still retrieves 3.5 Mbit/s; PIE shows a quicker rise; FQ-CoDel's "
                      "distribution widens as N grows.",
             "rule": "(a) PIE and FQ increase with N (FQ x1.5); (b) FIFO median below both AQMs at >= 70% of N, "
                     "FIFO median SA >= 3.5 Mbit/s, no steady-state stalls; (c) PIE > FQ at N = 2, 3, 4; "
                     "(d) IQR_FQ(10) >= 1.5 IQR_FQ(1)."}
    if not c.has("E3"):
        return _not_run(claim, "E3 not in this grid")
    sf, sp, so = (c.series("E3", a, "sa_med") for a in ("fq_codel", "pie", "pfifo"))
    a1, t1 = trend(sf, ratio=1.5)
    a2, t2 = trend(sp)
    below = [greater(min(sp.get(n, math.nan), sf.get(n, math.nan)), v) for n, v in so.items()]
    fifo_ok = (min(so.values()) >= 3.5e6) if so else None
    stalls = runs.loc[(runs["exp"] == "E3") & (runs["aqm"] == "pfifo"), "stalls_steady"].sum() if so else 0
    pie_q = [greater(c.get("E3", "pie", n, "sa_med"), c.get("E3", "fq_codel", n, "sa_med"),
                     c.get("E3", "pie", n, "sa_seeds") or (), c.get("E3", "fq_codel", n, "sa_seeds") or ())
             for n in (2, 3, 4) if ("E3", "pie", n) in c.d]
    i1, i10 = c.get("E3", "fq_codel", 1, "sa_iqr"), c.get("E3", "fq_codel", max(sf) if sf else 10, "sa_iqr")
    parts = [("(a) FQ increases x1.5", a1), ("(a) PIE increases", a2),
             ("(b) FIFO below both AQMs at >= 70% of N", count_frac(below, 0.7)),
             ("(b) FIFO SA >= 3.5 and no stalls", None if fifo_ok is None else bool(fifo_ok and stalls == 0)),
             ("(c) PIE > FQ at N = 2..4", count_frac(pie_q, 1.0) if pie_q else None),
             ("(d) IQR_FQ(10) >= 1.5 IQR_FQ(1)", None if i1 != i1 or i10 != i10 else i10 >= 1.5 * i1)]
    ours = (f"median SA (Mbit/s) FQ {_ser_txt(sf)}; PIE {_ser_txt(sp)}; FIFO {_ser_txt(so)}; FQ {t1}; PIE {t2}; "
            f"FIFO steady stalls {int(stalls)}; IQR_FQ N=1 {_m(i1)} -> N={max(sf) if sf else '-'} {_m(i10)}; "
            f"IQR_PIE(N>=8) {_ser_txt(c.series('E3', 'pie', 'sa_iqr', range(8, 11)))}, IQR_FQ(N>=8) "
            f"{_ser_txt(c.series('E3', 'fq_codel', 'sa_iqr', range(8, 11)))}; premise SA(N=1) >= 3.5: "
            f"{ {AQM_LABEL[a]: _m(c.get('E3', a, 1, 'sa_med')) for a in AQM_ORDER} }")
    return _finish(claim, parts, ours)


def _pairs(c, e, a, b, key, ns):
    return [greater(c.get(e, a, n, key), c.get(e, b, n, key), c.get(e, a, n, key.replace("_med", "_seeds")) or (),
                    c.get(e, b, n, key.replace("_med", "_seeds")) or ())
            if key.endswith("_med") else greater(c.get(e, a, n, key), c.get(e, b, n, key)) for n in ns
            if (e, a, n) in c.d and (e, b, n) in c.d]


def claim_c5(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C5", "figures": "Fig. 6 / IV-B.1 (E4)",
             "paper": "12/1 Mbit/s, 20 ms, 4 downstream flows, full ladder: SA increases with N for FIFO, PIE and "
                      "FQ-CoDel; instability index < 0.02 in all cases; FIFO has the largest spread and the highest "
                      "II; for N < 6 PIE has a wider spread, higher RR and higher II than FQ-CoDel; for N > 6 FQ-CoDel "
                      "has the wider spread; both AQMs have a higher II at N > 6.",
             "rule": "(a) increases for all three; (b) every cell's median II < 0.02 (<= 0.03: one condition short; "
                     "above: the condition fails); "
                     "(c) FIFO SA IQR and median II above PIE's and FQ's in >= 70% of these comparisons over N; "
                     "(d) N < 6: IQR SA, IQR RR, median RR and median II PIE > FQ, each at >= 4 of N = 1..5; (e) N > 6: IQR_FQ > IQR_PIE (SA) at >= 75%; "
                     "(f) both AQMs' mean of per-N median II higher at N > 6 than at N <= 6."}
    if not c.has("E4"):
        return _not_run(claim, "E4 not in this grid")
    tr = {a: trend(c.series("E4", a, "sa_med")) for a in AQM_ORDER if c.has("E4", a)}
    iis = [v for a in AQM_ORDER for v in c.series("E4", a, "ii_med").values()]
    mx = max(iis) if iis else float("nan")
    ns = c.ns("E4", "pfifo")
    fifo = [s for b in AQMS2 for s in _pairs(c, "E4", "pfifo", b, "sa_iqr", ns) + _pairs(c, "E4", "pfifo", b,
                                                                                            "ii_med", ns)]
    lo = [n for n in c.ns("E4", "pie") if n < 6]
    hi = [n for n in c.ns("E4", "pie") if n > 6]
    # (d) each metric at >= 4 of N = 1..5 (80%), every metric needed
    dm = {k: _pairs(c, "E4", "pie", "fq_codel", k, lo) for k in ("sa_iqr", "rr_iqr", "rr_med", "ii_med")}
    d_st = _merge(count_frac(v, 0.8) for v in dm.values() if v)
    e = _pairs(c, "E4", "fq_codel", "pie", "sa_iqr", hi)

    def f(a):
        s = c.series("E4", a, "ii_med")
        h, l_ = [v for n, v in s.items() if n > 6], [v for n, v in s.items() if n <= 6]
        if not h or not l_:
            return None
        return greater(sum(h) / len(h), sum(l_) / len(l_), margin=1.0 + 1e-9)
    parts = [(f"(a) {AQM_LABEL[a]} increases", tr[a][0]) for a in tr]
    # (b) below 0.02; PARTIAL if every median is <= 0.03 (one condition short); above that it fails
    parts += [("(b) median II < 0.02", None if mx != mx else True if mx < 0.02 else False if mx <= 0.03 else "rev"),
              ("(c) FIFO widest SA spread and highest II", count_frac(fifo, 0.7) if fifo else None),
              ("(d) N<6 PIE wider/higher than FQ (each metric)", d_st),
              ("(e) N>6 IQR_FQ > IQR_PIE", count_frac(e, 0.75) if e else None),
              ("(f) II higher at N>6 (PIE)", f("pie")), ("(f) II higher at N>6 (FQ)", f("fq_codel"))]
    ours = ("median SA (Mbit/s) " + "; ".join(f"{AQM_LABEL[a]} {_ser_txt(c.series('E4', a, 'sa_med'))} ({tr[a][1]})"
                                             for a in tr)
            + f"; max cell median II {mx:.4f}; SA IQR " + "; ".join(
                f"{AQM_LABEL[a]} {_ser_txt(c.series('E4', a, 'sa_iqr'))}" for a in tr)
            + "; median II " + "; ".join(f"{AQM_LABEL[a]} {_ser_txt(c.series('E4', a, 'ii_med'), 1, 4)}" for a in tr))
    return _finish(claim, parts, ours)


def claim_c6(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C6", "figures": "Fig. 7 / IV-B.1 (E5 vs E4)",
             "paper": "12/1 Mbit/s, 60 ms RTT for DASH and bulk, PIE/FQ-CoDel: the trends of Fig. 6 hold; SA is lower "
                      "than in Fig. 6 (AQMs act as a small effective buffer < BDP); FQ-CoDel has a lower II than PIE "
                      "for N < 7.",
             "rule": "(a) SA increases with N for PIE and FQ; (b) SA(E5) < SA(E4) at >= 80% of N per AQM; (c) median "
                     "II FQ < PIE at >= 5 of N = 1..6 (83%)."}
    if not c.has("E5"):
        return _not_run(claim, "E5 (60 ms) not in this grid")
    parts, txt = [], []
    for a in AQMS2:
        s = c.series("E5", a, "sa_med")
        t = trend(s)
        parts.append((f"(a) {AQM_LABEL[a]} increases", t[0]))
        lower = _pairs_x(c, ("E4", a), ("E5", a), "sa_med", list(s))
        parts.append((f"(b) {AQM_LABEL[a]} SA below E4", count_frac(lower, 0.8) if lower else None))
        txt.append(f"{AQM_LABEL[a]} E5 {_ser_txt(s)} vs E4 {_ser_txt(c.series('E4', a, 'sa_med', s))} ({t[1]})")
    ii = _pairs(c, "E5", "pie", "fq_codel", "ii_med", [n for n in c.ns("E5", "pie") if n < 7])
    ii = [True if s is True else s for s in ii]
    parts.append(("(c) II FQ < PIE for N < 7", count_frac(ii, 0.83) if ii else None))
    txt.append("median II PIE " + _ser_txt(c.series("E5", "pie", "ii_med"), 1, 4) + ", FQ "
               + _ser_txt(c.series("E5", "fq_codel", "ii_med"), 1, 4))
    return _finish(claim, parts, "; ".join(txt))


def _pairs_x(c, A, B, key, ns):
    """A > B at each N across experiments: A = (exp, aqm)."""
    return [greater(c.get(*A, n, key), c.get(*B, n, key), c.get(*A, n, key.replace("_med", "_seeds")) or (),
                    c.get(*B, n, key.replace("_med", "_seeds")) or ()) for n in ns
            if (A[0], A[1], n) in c.d and (B[0], B[1], n) in c.d]


def _med_of(ser: dict) -> float:
    import statistics
    return statistics.median(ser.values()) if ser else float("nan")


def claim_c7(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C7", "figures": "Fig. 8 / IV-B.1 (E6 vs E4)",
             "paper": "DASH at 20 ms, bulk at 60 ms: DASH's SA is higher than in Fig. 6 (longer-RTT flows cede "
                      "capacity); PIE reaches higher SA and relatively high RRs; under PIE no significant SA increase "
                      "with N (single queue), while FQ-CoDel's SA increases.",
             "rule": "(a) SA(E6) > SA(E4) at >= 80% of N per AQM; (b) PIE's median SA and RR (median over N) above "
                     "E4's; (c) [low weight: if it fails, SUPPORTED becomes PARTIAL, never worse] PIE SA(10)/SA(1) < "
                     "1.2 and FQ increases with N."}
    if not c.has("E6"):
        return _not_run(claim, "E6 (mixed RTT) not in this grid")
    parts, txt = [], []
    for a in AQMS2:
        s = c.series("E6", a, "sa_med")
        hi = _pairs_x(c, ("E6", a), ("E4", a), "sa_med", list(s))
        parts.append((f"(a) {AQM_LABEL[a]} SA above E4", count_frac(hi, 0.8) if hi else None))
        txt.append(f"{AQM_LABEL[a]} E6 {_ser_txt(s)} vs E4 {_ser_txt(c.series('E4', a, 'sa_med', s))}")
    ns = list(c.series("E6", "pie", "sa_med"))
    for key in ("sa_med", "rr_med"):
        a_, b_ = _med_of(c.series("E6", "pie", key)), _med_of(c.series("E4", "pie", key, ns))
        parts.append((f"(b) PIE {key[:2].upper()} above E4", greater(a_, b_)))
    sp = c.series("E6", "pie", "sa_med")
    ratio = sp[max(sp)] / sp[min(sp)] if len(sp) >= 2 and sp[min(sp)] > 0 else float("nan")
    tf = trend(c.series("E6", "fq_codel", "sa_med"))
    parts.append(("(c) PIE flat (x<1.2) and FQ increases" + LOW, None if ratio != ratio or tf[0] is None else
                  bool(ratio < 1.2 and tf[0] is True)))
    txt.append(f"PIE SA ratio N={max(sp)}/N={min(sp)} {ratio:.2f}; FQ {tf[1]}")
    return _finish(claim, parts, "; ".join(txt))


def claim_c8(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C8", "figures": "Fig. 9 / IV-B.2 (E7)",
             "paper": "4 upstream flows, symmetric FIFO/PIE/FQ-CoDel, 12/1 Mbit/s: FIFO is worst (SA ~0.1 Mbit/s, "
                      "very low RRs, zero instability); PIE and FQ-CoDel give much higher SA; with either AQM SA "
                      "decreases with N and stabilises around N = 6; with chunklets FQ-CoDel has better RRs and lower "
                      "spread and II than PIE.",
             "rule": "(a) FIFO median SA in [0.03, 0.3] Mbit/s, median RR <= 131 kbit/s, median II = 0 at every N; "
                     "(b) PIE and FQ SA >= 10x FIFO at every N; (c) each AQM decreases on N = 1..6 and N >= 6 within "
                     "+-15% of N = 6; (d) N >= 2: median RR FQ >= PIE and median II FQ <= PIE at >= 7 of 9 N."}
    if not c.has("E7"):
        return _not_run(claim, "E7 not in this grid")
    so, ro, io = (c.series("E7", "pfifo", k) for k in ("sa_med", "rr_med", "ii_med"))
    a_ok = None
    if so:
        a_ok = all(0.03e6 <= v <= 0.3e6 for v in so.values()) and all(v <= 131e3 for v in ro.values()) and all(
            v == 0 for v in io.values())
        if a_ok is False and min(so.values()) > 0.3e6:
            a_ok = False
    b = []
    for a in AQMS2:
        for n, v in so.items():
            x = c.get("E7", a, n, "sa_med")
            if x == x:
                b.append(x >= 10 * v)
    parts = [("(a) FIFO SA ~0.1, RR <= 131k, II = 0", a_ok),
             ("(b) AQM SA >= 10x FIFO", None if not b else all(b))]
    txt = [f"FIFO SA {_ser_txt(so)} (AR req->last {_ser_txt(c.series('E7', 'pfifo', 'sareq_med'))}), RR "
           f"{_ser_txt(ro)}, II {_ser_txt(io, 1, 3)}"]
    for a in AQMS2:
        s = c.series("E7", a, "sa_med")
        t = trend(s, up=False, hi=6)
        st = t[0]
        if st is True and 6 in s:
            flat = all(abs(v / s[6] - 1) <= 0.15 for n, v in s.items() if n >= 6)
            st = True if flat else False
        parts.append((f"(c) {AQM_LABEL[a]} decreases, stable from N = 6", st))
        txt.append(f"{AQM_LABEL[a]} SA {_ser_txt(s)} ({t[1]})")
    ns = [n for n in c.ns("E7", "fq_codel") if n >= 2]
    d = [s for s in _pairs(c, "E7", "fq_codel", "pie", "rr_med", ns)]
    d2 = _pairs(c, "E7", "pie", "fq_codel", "ii_med", ns)
    dd = [True if x in (True, "noise") and y in (True, "noise") else
          "rev" if x == "rev" and y == "rev" else False for x, y in zip(d, d2)]
    parts.append(("(d) N>=2 RR FQ >= PIE and II FQ <= PIE", count_frac(dd, 7 / 9) if dd else None))
    txt.append("RR FQ " + _ser_txt(c.series("E7", "fq_codel", "rr_med")) + " vs PIE "
               + _ser_txt(c.series("E7", "pie", "rr_med")))
    return _finish(claim, parts, "; ".join(txt))


def claim_c9(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C9", "figures": "Fig. 10 / IV-C.1 (E8)",
             "paper": "Downstream AQM with a 100-packet upstream FIFO, 4 downstream flows: SA increases with N for both "
                      "AQMs; FQ-CoDel has a higher SA than PIE as N grows and a lower II; the upstream FIFO is not "
                      "detrimental.",
             "rule": "(a) increases for PIE and FQ; (b) FQ > PIE SA at >= 3 of N = 7..10 (75%) and II FQ < PIE (median over N of "
                     "the per-N medians, 'A > B'); "
                     "(c) per-N medians within +-15% of E4's (same AQM)."}
    if not c.has("E8"):
        return _not_run(claim, "E8 (upstream FIFO) not in this grid")
    parts, txt = [], []
    for a in AQMS2:
        s = c.series("E8", a, "sa_med")
        t = trend(s)
        parts.append((f"(a) {AQM_LABEL[a]} increases", t[0]))
        txt.append(f"{AQM_LABEL[a]} E8 {_ser_txt(s)} vs E4 {_ser_txt(c.series('E4', a, 'sa_med', s))} ({t[1]})")
    hi = [n for n in c.ns("E8", "fq_codel") if n >= 7]
    g = _pairs(c, "E8", "fq_codel", "pie", "sa_med", hi)
    parts.append(("(b) FQ > PIE at N >= 7", count_frac(g, 0.75) if g else None))
    ii = _med_of(c.series("E8", "fq_codel", "ii_med")), _med_of(c.series("E8", "pie", "ii_med"))
    # "a lower II than PIE": PIE > FQ by the claims file's "A > B" (a tie is no difference)
    parts.append(("(b) II FQ < PIE", None if ii[0] != ii[0] or ii[1] != ii[1] else greater(ii[1], ii[0])))
    txt.append(f"II median over N: FQ {ii[0]:.4f} PIE {ii[1]:.4f}")
    w = [abs(c.get("E8", a, n, "sa_med") / c.get("E4", a, n, "sa_med") - 1) <= 0.15 for a in AQMS2
         for n in c.ns("E8", a) if ("E4", a, n) in c.d]
    parts.append(("(c) within 15% of E4", None if not w else all(w)))
    return _finish(claim, parts, "; ".join(txt))


def claim_c10(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C10", "figures": "Fig. 11 / IV-C.2 (E9)",
             "paper": "Upstream AQM with a 100-packet downstream FIFO, 4 upstream flows: the SA-vs-N curve is like "
                      "Fig. 9's (chunkleting lowers SA); with FQ-CoDel the top RR and zero instability; FQ-CoDel "
                      "beats PIE on RR and II.",
             "rule": "(a) each AQM's SA decreases on N = 1..6; (b) FQ: >= 95% of steady chunks at level 20 and median "
                     "II = 0 at every N (only at N <= 5: one condition short); (c) median over N of the per-N median "
                     "RR FQ > PIE and of the median II PIE > FQ ('A > B': a tie is no difference)."}
    if not c.has("E9"):
        return _not_run(claim, "E9 not in this grid")
    parts, txt = [], []
    for a in AQMS2:
        s = c.series("E9", a, "sa_med")
        t = trend(s, up=False, hi=6)
        parts.append((f"(a) {AQM_LABEL[a]} decreases", t[0]))
        txt.append(f"{AQM_LABEL[a]} SA {_ser_txt(s)} ({t[1]})")
    top = c.series("E9", "fq_codel", "top_frac")
    ii = c.series("E9", "fq_codel", "ii_med")
    okn = {n: top[n] >= 0.95 and ii.get(n, 1) == 0 for n in top}
    b = None if not okn else (True if all(okn.values()) else
                              False if all(v for n, v in okn.items() if n <= 5) else "rev")
    parts.append(("(b) FQ top RR and II = 0 at every N", b))
    rr = _med_of(c.series("E9", "fq_codel", "rr_med")), _med_of(c.series("E9", "pie", "rr_med"))
    i2 = _med_of(ii), _med_of(c.series("E9", "pie", "ii_med"))
    # "beats PIE on RR and II": FQ > PIE on RR and PIE > FQ on II, each by the claims file's "A > B"
    # (a tie, e.g. both at the top rung, is no difference)
    c10c = None
    if rr[0] == rr[0] and rr[1] == rr[1] and i2[0] == i2[0] and i2[1] == i2[1]:
        c10c = _merge((greater(rr[0], rr[1]), greater(i2[1], i2[0])))
    parts.append(("(c) RR FQ > PIE and II FQ < PIE", c10c))
    txt.append("FQ share of level-20 chunks " + " ".join(f"{n}:{v:.0%}" for n, v in top.items())
               + f"; RR FQ {_ser_txt(c.series('E9', 'fq_codel', 'rr_med'))} vs PIE "
                 f"{_ser_txt(c.series('E9', 'pie', 'rr_med'))}; median over N: RR FQ {_m(rr[0])} PIE {_m(rr[1])}, "
                 f"II FQ {i2[0]:.4f} PIE {i2[1]:.4f}")
    return _finish(claim, parts, "; ".join(txt))


def claim_c11(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C11", "figures": "III-A, IV-A premises (E0, E3)",
             "paper": "(a) 12 Mbit/s without cross traffic lets the client reach the top RR; (b) 25/5 with 4 "
                      "downstream flows lets N = 1 exceed 3.5 Mbit/s.",
             "rule": "(a) E0, N = 1, every queue: median RR = 4.2 Mbit/s, no steady-state stalls; (b) E3 N = 1 "
                     "median SA > 3.5 Mbit/s under every queue."}
    parts, txt = [], []
    if c.has("E0"):
        rr = {a: c.get("E0", a, 1, "rr_med") for a in AQM_ORDER if ("E0", a, 1) in c.d}
        st = runs.loc[runs["exp"] == "E0", "stalls_steady"].sum()
        parts.append(("(a) top RR, no stalls", all(v >= 4.2e6 for v in rr.values()) and st == 0))
        txt.append("E0 median RR " + ", ".join(f"{AQM_LABEL[a]} {_m(v)}" for a, v in rr.items())
                   + f", steady stalls {int(st)}")
    else:
        parts.append(("(a) top RR, no stalls", None))
    if c.has("E3"):
        sa = {a: c.get("E3", a, 1, "sa_med") for a in AQM_ORDER if ("E3", a, 1) in c.d}
        parts.append(("(b) N = 1 SA > 3.5", all(v > 3.5e6 for v in sa.values())))
        txt.append("E3 N=1 median SA " + ", ".join(f"{AQM_LABEL[a]} {_ci_txt(c, 'E3', a, 1)}" for a in sa))
    else:
        parts.append(("(b) N = 1 SA > 3.5", None))
    return _finish(claim, parts, "; ".join(txt))


def claim_c12(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C12", "figures": "IV-A fn. 7",
             "paper": "The HTTP overhead (N H)/(N H + V) of the N values used is minimal.",
             "rule": f"Steady-state chunks of E3-E6 and E8, H = {H_BYTES} B (request + response header): SUPPORTED if "
                     "every chunk's ratio <= 1%; PARTIAL if >= 95% of them; NOT SUPPORTED otherwise. Worst case "
                     "per rung reported."}
    d = chunks[chunks["exp"].isin(["E3", "E4", "E5", "E6", "E8"])]
    if not len(d):
        return _not_run(claim, "none of E3-E6, E8 in this grid")
    ratio = d["n"] * H_BYTES / (d["n"] * H_BYTES + d["bytes"])
    frac = float((ratio <= 0.01).mean())
    worst = ratio.groupby(d["level"]).max()
    claim["verdict"] = SUPPORTED if frac == 1.0 else PARTIAL if frac >= 0.95 else NOT_SUPPORTED
    claim["ours"] = (f"{frac:.1%} of {len(d)} steady-state chunks <= 1%; worst overall {ratio.max():.2%}; worst per "
                     "level: " + ", ".join(f"L{int(k)} {v:.2%}" for k, v in worst.items()))
    claim["parts"] = []
    return claim


def claim_c13(c: Cells, runs, chunks) -> dict:
    claim = {"id": "C13", "figures": "Abstract / VI",
             "paper": "(a) Against downstream flows, chunklets over an AQM beat regular DASH over FIFO or AQMs; (b) "
                      "FQ-CoDel gives the best throughput multiplication; (c) with upstream flows FQ-CoDel protects "
                      "the DASH ACKs (FQ >= PIE >> FIFO in SA and RR).",
             "rule": "(a) E3, E4, E8: max over N of the median SA (and RR where the ladder varies) over PIE or FQ > "
                     "every N = 1 value; (b) SA(Nmax)/SA(1) for FQ >= PIE's and FIFO's in E3 and E4; (c) E7 and "
                     "E9: FQ >= PIE >= 10x FIFO (E7's FIFO; C8(b)'s 'much higher') in median SA and median RR, "
                     "median over N."}
    parts, txt = [], []
    for e in ("E3", "E4", "E8"):
        if not c.has(e):
            parts.append((f"(a) {e}", None))
            continue
        keys = ("sa_med",) if e == "E3" else ("sa_med", "rr_med")
        ok = True
        for k in keys:
            best = max([v for a in AQMS2 for v in c.series(e, a, k).values()] or [math.nan])
            base = [c.get(e, a, 1, k) for a in AQM_ORDER if (e, a, 1) in c.d]
            ok = ok and all(best > b for b in base) if base else ok
            txt.append(f"{e} {k[:2].upper()} best AQM {_m(best)} vs N=1 {[_m(b) for b in base]}")
        parts.append((f"(a) {e}", ok))
    for e in ("E3", "E4"):
        r = {}
        for a in AQM_ORDER:
            s = c.series(e, a, "sa_med")
            r[a] = s[max(s)] / s[min(s)] if len(s) >= 2 and s[min(s)] > 0 else math.nan
        # "largest for FQ-CoDel": against PIE and FIFO (a FIFO not in the grid is not compared)
        others = [r[a] for a in AQM_ORDER if a != "fq_codel" and not math.isnan(r[a])]
        parts.append((f"(b) {e} FQ ratio largest", None if math.isnan(r["fq_codel"]) or math.isnan(r["pie"]) else
                      all(r["fq_codel"] >= x for x in others)))
        txt.append(f"{e} SA(Nmax)/SA(1) " + " ".join(f"{AQM_LABEL[a]} {r[a]:.2f}" for a in AQM_ORDER
                                                     if not math.isnan(r[a])))
    # (c) "FQ >= PIE >> FIFO in SA and RR ... the same evidence as C8/C10": ">>" is C8(b)'s "much
    # higher", >= 10x FIFO's (E7's FIFO: E9 has no FIFO-only cell)
    fifo = {k: _med_of(c.series("E7", "pfifo", k)) for k in ("sa_med", "rr_med")}
    for e in ("E7", "E9"):
        v = {(a, k): _med_of(c.series(e, a, k)) for a in AQMS2 for k in ("sa_med", "rr_med")}
        if any(x != x for x in v.values()) or any(x != x for x in fifo.values()):
            parts.append((f"(c) {e}", None))
            continue
        ok = all(v[("fq_codel", k)] >= v[("pie", k)] and v[("pie", k)] >= 10 * fifo[k] for k in fifo)
        parts.append((f"(c) {e} FQ >= PIE >= 10x FIFO (SA, RR)", ok))
        txt.append(f"{e} SA FQ {_m(v[('fq_codel', 'sa_med')])} PIE {_m(v[('pie', 'sa_med')])} FIFO(E7) "
                   f"{_m(fifo['sa_med'])} (PIE/FIFO {_x(v[('pie', 'sa_med')], fifo['sa_med'])}); RR FQ "
                   f"{_m(v[('fq_codel', 'rr_med')])} PIE {_m(v[('pie', 'rr_med')])} FIFO(E7) {_m(fifo['rr_med'])} "
                   f"({_x(v[('pie', 'rr_med')], fifo['rr_med'])})")
    return _finish(claim, parts, "; ".join(txt))


CLAIMS = (claim_c1, claim_c2, claim_c3, claim_c4, claim_c5, claim_c6, claim_c7, claim_c8, claim_c9, claim_c10,
          claim_c11, claim_c12, claim_c13)


def evaluate_claims(runs, chunks) -> list[dict]:
    c = Cells(cell_stats(chunks)) if len(chunks) else Cells([])
    out = []
    for i, fn in enumerate(CLAIMS):
        try:
            cl = fn(c, runs, chunks)
        except Exception as e:  # a claim that cannot be evaluated is inconclusive, with the reason
            cl = {"id": f"C{i + 1}", "paper": fn.__name__, "rule": "", "verdict": INCONCLUSIVE,
                  "ours": f"could not evaluate: {type(e).__name__}: {e}", "parts": []}
        out.append(on_issue_scale(cl))
    return out


def on_issue_scale(cl: dict) -> dict:
    """The issue's verdict scale is SUPPORTED / NOT SUPPORTED / INCONCLUSIVE: a PARTIAL grade (the
    direction holds, a magnitude or one condition does not) is reported as INCONCLUSIVE, labelled
    "INCONCLUSIVE (PARTIAL)"; ``grade`` keeps the claims file's grade."""
    g = cl.get("verdict", INCONCLUSIVE)
    cl["grade"] = g
    if g == PARTIAL:
        cl["verdict"] = INCONCLUSIVE
    cl["verdict_label"] = cl["verdict"] + (" (PARTIAL)" if g == PARTIAL else "")
    return cl


# ----------------------------------------------------------------------------------------------
# The whole reproduction


def _is_ours(path: str) -> bool:
    return common.is_ours(path, "chunklets")


def check_out_dir(out_dir: str) -> str:
    return common.check_out_dir(out_dir, "chunklets")


DEVIATIONS = [
    "Simulated dumbbell instead of the TEACUP/dummynet testbed; chunkleting is done by the client's data plane "
    "(N persistent connections, the paper's byte split), not by a store-and-forward proxy (proxy = false).",
    "ABR: the paper's literal rule (sa3: highest rung <= mean of the last 3 ARs, 12 s / 30 s buffer targets), not "
    "dash.js 2.4.1's ThroughputRule; no dashjs241 sensitivity run.",
    "Video: synthetic VBR sizes on Table I's 20-rung 2-s ladder (synthetic:chunklets), not the ITEC BBB chunks.",
    "DASH TCP: the freebsd10 profile (NewReno, 4380 B restart window, 30 ms min RTO, 100 ms delayed ACK); "
    "bulk flows: Linux-like CUBIC. FQ-CoDel: dummynet variant with a per-seed hash perturbation; one FQ hash per "
    "connection and direction.",
    "Bulk flows start at t = 0-1 s (seeded jitter), DASH at t = 0 (not stated in the paper).",
    "Full grid: 5 seeds x 400 s as the claims file asks; --quick: 1 seed x 90 s at N = 1, 4, 10 (E5/E6/E8: 1, 10), "
    "so trends are judged on 2-3 N values and without seed agreement. 'A > B' seed agreement is >= 80% of the seeds.",
    "Sensitivity of E4 only (N = 1, 5, 10; report only, not graded): the proxy (store-and-forward) view "
    "(E4-proxy) and Linux TCP for the DASH host (E4-linux). Not run: a dash.js 2.4.1 ThroughputRule ABR, DASH "
    "starting after the bulk flows, keep-alive limits.",
    "E2 (Fig. 4) is not run separately: C3 uses E3's runs (the conditions the claims file assumes for Fig. 4).",
    "Rates are HTTP-payload goodput (flows table, 100-ms samples); C2's ideal is scaled by 1448/1500.",
    "Steady state: from the first OFF period; a run that never idles (FIFO under upstream load) uses every chunk "
    "after the first 10 (flagged steady_from_off = false in runs.parquet).",
]


def reproduce(out_dir: str = "results/chunklets", quick: bool = False, jobs: int = 0, runner=None, log=None,
              spec: GridSpec | None = None) -> dict:
    """Run the grid on the sweep engine (resumable store DIR/sweep), evaluate C1-C13, write
    DIR/{runs,chunks,cells,bins}.parquet, claims.json, meta.json, report.html, figures/ atomically
    (the store moved in). Returns the meta dict (with the claims)."""
    import pandas as pd

    from qoelab.reproduce import chunklets_report as report

    if jobs is not None and jobs < 0:
        raise InputError(None, "--jobs", "a number of worker processes >= 1 (0 = all CPUs)", str(jobs))
    out_dir = check_out_dir(out_dir)
    spec = spec or (quick_grid() if quick else full_grid())
    runs = spec.runs()
    log = log or (lambda msg: None)
    njobs = jobs or os.cpu_count() or 1
    t0 = time.perf_counter()
    store_dir = os.path.join(out_dir, "sweep")
    results, sres = run_grid(runs, store_dir, jobs=njobs, runner=runner, log=log)
    wall_runs = time.perf_counter() - t0
    rdf = pd.DataFrame([r["run"] for r in results])
    chunks = [r["chunks"] for r in results if r["chunks"] is not None and len(r["chunks"])]
    cdf = pd.concat(chunks, ignore_index=True) if chunks else pd.DataFrame(
        columns=["run_id", "exp", "aqm", "n", "rep", "sa_bps", "rr_bps", "ii", "rung", "level", "bytes", "t_rel"])
    bins = [r["bins"] for r in results if r["bins"] is not None and len(r["bins"])]
    bdf = pd.concat(bins, ignore_index=True) if bins else pd.DataFrame()
    stats = cell_stats(cdf) if len(cdf) else pd.DataFrame()
    claims = evaluate_claims(rdf, cdf)
    failures = [(r["run"]["run_id"], r["run"]["error"]) for r in results if r["run"].get("error")]
    meta = {"reproduction": "chunklets",
            "paper": "Kua & Armitage: Optimising DASH over AQM-enabled Gateways Using Intra-chunk Parallel "
                     "Retrieval (Chunklets), ICCCN 2017",
            "grid": spec.name, "grid_description": spec.description, "runs": len(runs), "failed": len(failures),
            "failures": failures[:50], "jobs": njobs, "seeds": spec.seeds, "duration_s": spec.duration_s,
            "wall_s_runs": round(wall_runs, 2), "runs_executed": sres["ran"], "runs_resumed": sres["skipped"],
            "deviations": DEVIATIONS, "claims": claims}
    with outdir.atomic_dir(out_dir) as tmp:
        for name, d in (("runs", rdf), ("chunks", cdf), ("bins", bdf)):
            d.to_parquet(os.path.join(tmp, f"{name}.parquet"), index=False)
        if len(stats):
            s2 = stats.copy()
            for col in [c for c in s2.columns if c.endswith("_seeds")]:
                s2[col] = s2[col].apply(lambda v: json.dumps(v) if isinstance(v, list) else None)
            s2.to_parquet(os.path.join(tmp, "cells.parquet"), index=False)
        common.write_claims_report_meta(tmp, claims, meta,
                                        lambda: report.write_report(tmp, rdf, cdf, stats, claims, meta), t0,
                                        json_default=float)
        os.rename(store_dir, os.path.join(tmp, "sweep"))     # the store moves with the results
    meta["out_dir"] = out_dir
    return meta


def rewrite_report(out_dir: str) -> dict:
    """Re-evaluate the claims and rewrite claims.json, meta.json and report.html of a finished
    reproduction from its Parquet files (no simulation)."""
    import pandas as pd

    from qoelab.reproduce import chunklets_report as report
    if not _is_ours(out_dir):
        raise InputError(out_dir, None, message="not a chunklets reproduction (no meta.json from one)")
    rdf = pd.read_parquet(os.path.join(out_dir, "runs.parquet"))
    cdf = pd.read_parquet(os.path.join(out_dir, "chunks.parquet"))
    with open(os.path.join(out_dir, "meta.json")) as f:
        meta = json.load(f)
    stats = cell_stats(cdf) if len(cdf) else pd.DataFrame()
    meta["claims"] = evaluate_claims(rdf, cdf)
    meta["deviations"] = DEVIATIONS
    for name, data in (("claims.json", meta["claims"]), ("meta.json", meta)):
        with open(os.path.join(out_dir, name), "w") as f:
            json.dump(data, f, indent=2, default=float)
            f.write("\n")
    report.write_report(out_dir, rdf, cdf, stats, meta["claims"], meta)
    return meta
