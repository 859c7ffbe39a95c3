"""The HTML report of the HAS-over-AQM reproduction: figures (PNG, embedded), claims table, setup.

Figure families as in the paper: ARB, INS, LU, RTTi, loss phases, RBR, QU. Each figure groups the
runs by queue configuration (AQM and buffer, in % of BDP, as the paper labels them: DT 600%, ...,
CoDel 25%) with one bar per algorithm: the mean over the runs of that cell (bandwidth samples and
repetitions) with its 95% confidence interval. A figure whose runs are not in the grid (the quick
subset) is listed as not run.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os

from qoelab.reproduce import common
from qoelab.reproduce.livi_params import (ALGO_LABEL, ALGORITHMS, AQM_LABEL, BUFFERS_BDP, DURATION_S,
                                          FAIR_SHARES_BPS, PROFILES, RTD_S, buffer_packets, mean_ci)

ALGO_COLOR = {"bba2": "#d62728", "bba3": "#ff7f0e", "classic1": "#1f77b4", "classic2": "#2ca02c"}
PHASE_HATCH = {"B": "///", "T": "xxx", "C": ""}
PHASE_LABEL = {"B": "initial burst (B)", "T": "ACK trailing (T)", "C": "ACK clocking (C)"}
AQM_ORDER = ("pfifo", "ared", "codel")

# (family, metric, clients, profile, paper figure, caption, y label, log scale)
FIGURES = [
    ("ARB", "arb", 1, "static", "Fig. 1", "Average relative bit rate, 1 client, static bandwidth", "ARB", False),
    ("ARB", "arb", 2, "static", "Fig. 9", "Average relative bit rate, 2 clients, static bandwidth", "ARB", False),
    ("INS", "ins_pct", 1, "p2", "Fig. 4", "Instability, 1 client, variable bandwidth (profile 2)", "INS (%)", False),
    ("INS", "ins_pct", 1, "static", "-", "Instability, 1 client, static bandwidth (not in the paper)", "INS (%)",
     False),
    ("LU", "lu", 1, "static", "Fig. 5", "Link utilization, 1 client, static bandwidth", "LU", False),
    ("LU", "lu", 2, "static", "Fig. 8", "Link utilization, 2 clients, static bandwidth", "LU", False),
    ("RTTi", "rtti_pct", 1, "static", "Fig. 6", "RTT inflation (RTT / RTD, %), 1 client, static bandwidth",
     "RTTi (%)", True),
    ("RTTi", "rtti_pct", 2, "static", "-", "RTT inflation, 2 clients, static bandwidth (not in the paper)",
     "RTTi (%)", True),
    ("Loss phases", "loss", 1, "static", "Fig. 7", "Distribution of loss phases, 1 client, static bandwidth",
     "drops per run", False),
    ("Loss phases", "loss", 2, "static", "Fig. 10", "Distribution of loss phases, 2 clients, static bandwidth",
     "drops per run", False),
    ("RBR", "rbr_pct", 2, "p2", "Fig. 11", "Re-buffering ratio (startup included), 2 clients, variable "
     "bandwidth (profile 2)", "RBR (%)", True),
    ("RBR", "rbr_pct", 2, "static", "-", "Re-buffering ratio, 2 clients, static bandwidth (not in the paper)",
     "RBR (%)", True),
    ("QU", "qu_pct", 2, "static", "Fig. 12", "Quality unfairness, 2 clients, static bandwidth", "QU (%)", False),
    ("QU", "qu_pct", 3, "static", "Fig. 13", "Quality unfairness, 3 clients, static bandwidth", "QU (%)", False),
    ("QU", "qu_pct", 2, "p2", "Fig. 14", "Quality unfairness, 2 clients, variable bandwidth (profile 2)", "QU (%)",
     False),
]


def config_label(aqm: str, k: float) -> str:
    return f"{AQM_LABEL[aqm]} {round(k * 100)}%"


def _groups(d):
    present = set(zip(d["aqm"], d["buffer_bdp"]))
    return [(aqm, k) for aqm in AQM_ORDER for k in BUFFERS_BDP if (aqm, k) in present]


def _axes(ngroups):
    import matplotlib.pyplot as plt
    width = max(5.0, 1.0 * ngroups + 1.5)
    fig, ax = plt.subplots(figsize=(width, 3.4))
    fig.subplots_adjust(left=0.7 / width, right=1 - 0.15 / width, bottom=0.12, top=0.80)
    return fig, ax


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def bar_figure(d, metric: str, ylabel: str, log: bool = False):
    """Grouped bars: configuration groups on x, one bar per algorithm, mean +- 95% CI."""
    import matplotlib.pyplot as plt
    groups = _groups(d)
    algos = [a for a in ALGORITHMS if (d["algo"] == a).any()]
    fig, ax = _axes(len(groups))
    w = 0.8 / max(1, len(algos))
    table = {}
    cells = {key: list(v) for key, v in d.groupby(["algo", "aqm", "buffer_bdp"])[metric]}
    for i, algo in enumerate(algos):
        xs, ms, hs = [], [], []
        for gi, (aqm, k) in enumerate(groups):
            m, h, n = mean_ci(cells.get((algo, aqm, k), []))
            table[(config_label(aqm, k), algo)] = (m, h, n)
            if m == m:
                xs.append(gi + (i - (len(algos) - 1) / 2) * w)
                ms.append(m)
                hs.append(0.0 if h != h else h)
        ax.bar(xs, ms, w, yerr=hs, capsize=2, color=ALGO_COLOR[algo], label=ALGO_LABEL[algo])
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([config_label(a, k) for a, k in groups], rotation=0, fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        if metric == "rbr_pct":     # RBR is often 0: a log scale above 0.1 %, linear below
            ax.set_yscale("symlog", linthresh=0.1)
            ax.set_ylim(bottom=0)
        else:
            ax.set_yscale("log")
    else:
        # metrics are >= 0; a small-sample CI can be huge: keep the bars readable (numbers below)
        means = [v[0] for v in table.values() if v[0] == v[0]]
        tops = [v[0] + v[1] for v in table.values() if v[0] == v[0] and v[1] == v[1]]
        top = max(tops + means + [0.0])
        if means and max(means) > 0:
            top = min(top, 1.6 * max(means))
        ax.set_ylim(0, top * 1.05 if top > 0 else 1.0)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=len(algos), loc="upper center", bbox_to_anchor=(0.5, 1.18), frameon=False)
    img = _png(fig)
    plt.close(fig)
    return img, table, [config_label(a, k) for a, k in groups], algos


def loss_figure(d):
    """Stacked B/T/C drops per run (mean), one bar per algorithm in each configuration group."""
    import matplotlib.pyplot as plt
    groups = _groups(d)
    algos = [a for a in ALGORITHMS if (d["algo"] == a).any()]
    fig, ax = _axes(len(groups))
    w = 0.8 / max(1, len(algos))
    table = {}
    cells = d.groupby(["algo", "aqm", "buffer_bdp"])[["loss_B", "loss_T", "loss_C"]].mean()
    for i, algo in enumerate(algos):
        for gi, (aqm, k) in enumerate(groups):
            if (algo, aqm, k) not in cells.index:
                continue
            row = cells.loc[(algo, aqm, k)]
            vals = {p: float(row[f"loss_{p}"]) for p in "BTC"}
            table[(config_label(aqm, k), algo)] = vals
            bottom = 0.0
            pos = gi + (i - (len(algos) - 1) / 2) * w
            for p in "BTC":
                ax.bar(pos, vals[p], w, bottom=bottom, color=ALGO_COLOR[algo], hatch=PHASE_HATCH[p],
                       edgecolor="black", linewidth=0.3)
                bottom += vals[p]
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([config_label(a, k) for a, k in groups], fontsize=8)
    ax.set_ylabel("drops per run")
    ax.grid(axis="y", alpha=0.3)
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=ALGO_COLOR[a], label=ALGO_LABEL[a]) for a in algos]
    handles += [Patch(facecolor="white", edgecolor="black", hatch=PHASE_HATCH[p], label=PHASE_LABEL[p]) for p in "BTC"]
    ax.legend(handles=handles, fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, 1.25), frameon=False)
    img = _png(fig)
    plt.close(fig)
    return img, table, [config_label(a, k) for a, k in groups], algos


def _num_table(table, groups, algos, loss=False) -> str:
    rows = ["<table class='num'><tr><th></th>" + "".join(f"<th>{ALGO_LABEL[a]}</th>" for a in algos) + "</tr>"]
    for g in groups:
        cells = []
        for a in algos:
            v = table.get((g, a))
            if v is None:
                cells.append("<td></td>")
            elif loss:
                tot = sum(v.values())
                cells.append("<td>" + " / ".join(f"{v[p]:.1f}" for p in "BTC")
                             + (f" (C {v['C'] / tot:.0%})" if tot else "") + "</td>")
            else:
                m, h, n = v
                cells.append(f"<td>{_f(m)} &plusmn; {_f(h)} <span class='n'>n={n}</span></td>" if m == m
                             else "<td>n/a</td>")
        rows.append(f"<tr><th>{html.escape(g)}</th>{''.join(cells)}</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _f(x):
    if x != x:
        return "-"
    a = abs(x)
    return f"{x:.3f}" if a < 10 else f"{x:.1f}" if a < 1000 else f"{x:.0f}"


CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.2em}
td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;vertical-align:top;text-align:left}
table.num td{text-align:right;font-variant-numeric:tabular-nums}
.ok{background:#d9f2d9}.bad{background:#f8d4d4}.meh{background:#fdf0c8}
.n{color:#888;font-size:11px} figure{margin:1em 0 2em} figcaption{font-size:14px;margin:0.3em 0}
code{background:#f3f3f3;padding:0 3px}
"""


def setup_rows() -> list[tuple[str, str, str]]:
    bufs = ", ".join(f"{k:g} BDP = {buffer_packets(k)} pkts" for k in BUFFERS_BDP)
    fs = f"{FAIR_SHARES_BPS[0] / 1e6:g}-{FAIR_SHARES_BPS[-1] / 1e6:g} Mbit/s step 0.3 (x clients)"
    prof = "p2: " + ", ".join(f"{t} s {r / 1e6:g}M" for t, r in PROFILES["p2"]) + " (per client; p1 not run)"
    return [
        ("Testbed VMs: VLC (HLS) clients, node.js server, tc-netem routers",
         "packet-level simulator: dumbbell, server and clients on 100 Mbit/s access, one bottleneck", "simulated"),
        ("Bottleneck rate", fs, "same"),
        ("RTD 80 ms (netem delay on one direction)", f"RTT {RTD_S * 1000:g} ms", "same"),
        ("Router buffer {6, 1, 0.5, 0.25} BDP of 10 Mbit/s x 80 ms", bufs, "same rule"),
        ("Droptail: netem limit", "pfifo with the buffer in packets", "same"),
        ("ARED: red limit B min B/6 max B/2 avpkt 1000 adaptive, 1 client only", "core ared with its testbed defaults",
         "same"),
        ("CoDel: codel limit B interval = RTT (80 ms), target 5 ms, noecn", "codel, limit B, interval 80 ms", "same"),
        ("Variable profile 4, 2.8, 1.5, 1, 0.6, 4 Mbit/s, equal shares of the video (x clients)", prof, "same"),
        ("Big Buck Bunny bbb8: 8 rates 350-2750 kbit/s, 300 x 2 s VBR segments",
         "synthetic VBR video on the same ladder (seeded, ar1-lognormal)", "synthetic sizes"),
        ("BBA2, BBA3, Classic1, Classic2 in VLC (240 s buffer)", "core ABRs bba2, bba3, classic1, classic2, "
         "their default (testbed) constants", "same constants"),
        ("TCP Cubic, persistent libcurl connection", "cubic, one persistent HTTP/1.1 connection per client", "same"),
        ("Players start together at 1 s; runs killed after 700 s", f"start 1 s + seeded jitter < 0.5 s; "
         f"{DURATION_S} s", "jitter added"),
        ("Repetitions: 2 (1 client) or 4 runs", "static: one run per bandwidth sample; variable: 2 or 4 seeds",
         "fewer static repeats"),
    ]


def write_report(out_dir: str, df, claims: list[dict], meta: dict) -> str:
    import matplotlib
    matplotlib.use("Agg", force=True)
    ok = df[df["error"].isna()] if "error" in df.columns else df
    fig_dir = os.path.join(out_dir, "figures")
    os.makedirs(fig_dir, exist_ok=True)
    parts = [common.report_head("livi", "HAS over AQM testbed, reproduced", CSS),
             f"<p>{html.escape(meta.get('paper', ''))}. Grid <b>{html.escape(meta.get('grid', ''))}</b>: "
             f"{meta.get('runs')} runs of {DURATION_S} s simulated ({html.escape(meta.get('grid_description', ''))}); "
             f"{meta.get('failed', 0)} failed; {meta.get('wall_s_runs', 0):.1f} s wall in the simulations with {meta.get('jobs')} "
             f"worker processes. Data: <code>runs.parquet</code>, <code>clients.parquet</code>, <code>sweep/</code> "
             "(the sweep store: <code>qoelab query DIR/sweep ...</code>), <code>claims.json</code>.</p>"]
    parts.append(common.failures_html(meta.get("failures")))
    parts.append(common.claims_table_html(claims))

    parts.append("<h2>Figures</h2><p>Bars: mean over the runs of a cell (per-client bandwidth samples and "
                 "repetitions); whiskers: 95% confidence interval. x: queue management and buffer in % of the "
                 "testbed BDP (DT = droptail).</p>")
    missing = []
    for i, (fam, metric, n, prof, pfig, cap, ylab, log) in enumerate(FIGURES):
        d = ok[(ok["clients"] == n) & (ok["profile"] == prof)] if len(ok) else ok
        if not len(d) or (metric not in ("loss",) and metric not in d.columns):
            missing.append(f"{pfig if pfig != '-' else fam}: {cap}")
            continue
        if metric == "loss":
            img, table, groups, algos = loss_figure(d)
            num = _num_table(table, groups, algos, loss=True)
        else:
            img, table, groups, algos = bar_figure(d, metric, ylab, log)
            num = _num_table(table, groups, algos)
        name = f"{i:02d}_{fam.lower().replace(' ', '_')}_{n}c_{prof}.png"
        with open(os.path.join(fig_dir, name), "wb") as f:
            f.write(base64.b64decode(img))
        parts.append(f"<figure><figcaption><b>{html.escape(fam)}</b> &mdash; {html.escape(cap)} "
                     f"<span class='n'>(paper: {html.escape(pfig)})</span></figcaption>"
                     f"<img alt='{html.escape(cap)}' src='data:image/png;base64,{img}'>{num}</figure>")
    if missing:
        parts.append("<p>Not in this grid: " + "; ".join(html.escape(m) for m in missing) + ".</p>")

    parts.append("<h2>Setup: paper &rarr; qoelab</h2><table><tr><th>testbed</th><th>here</th><th></th></tr>")
    for a, b, c in setup_rows():
        parts.append(f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td><td>{html.escape(c)}</td></tr>")
    parts.append("</table><p>Metric definitions: docs/reproductions/livi.md and docs/metrics.md.</p></body></html>")
    return common.write_html(out_dir, parts, meta)
