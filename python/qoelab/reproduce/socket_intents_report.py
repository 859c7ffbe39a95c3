"""HTML report of ``qoelab reproduce socket-intents``: claims P1-P21 with verdicts, the speedup ECDFs
of Figs. 3.4-3.6 and the factor plots of Fig. 3.7 (the dissertation's figures were lost in the text
conversion; these are drawn from our runs with the captions' definitions)."""

from __future__ import annotations

import html
import os

import numpy as np

from qoelab.reproduce import common
from qoelab.reproduce.report import CSS, _png
from qoelab.reproduce.socket_intents_claims import EPS, POL7, PRIMARY, SECOND, wide

LABEL = {"if1": "Interface 1", "if2": "Interface 2", "rr": "Round Robin", "mptcp-if1": "MPTCP if1",
         "mptcp-rnd": "MPTCP rnd", "eaf": "EAF", "eaf-mptcp": "EAF-MPTCP", "eaf-heuristic": "EAF (prototype est.)"}
CATS = [("slower", None, 1 - EPS), ("equal", 1 - EPS, 1 + EPS), ("(1, 1.5]", 1 + EPS, 1.5), ("(1.5, 2]", 1.5, 2),
        ("(2, 5]", 2, 5), ("> 5", 5, None)]
CAT_COLORS = ["#d62728", "#bbbbbb", "#c7e9c0", "#74c476", "#31a354", "#006d2c"]


def _ecdf(ax, w, base: str, pols, xlim=None, logx=True):
    for p in pols:
        if p not in w or p == base:
            continue
        sp = np.sort((w[base] / w[p]).to_numpy())
        ax.step(sp, np.arange(1, len(sp) + 1) / len(sp), where="post", label=LABEL.get(p, p))
    ax.axvline(1, color="black", lw=0.5)
    if logx:
        ax.set_xscale("log")
    if xlim:
        ax.set_xlim(*xlim)
    ax.set_ylabel("ECDF over cases")
    ax.legend(fontsize=7)


def fig_ecdf(df, set_name: str, base: str, xlim=None, logx=True, pols=POL7 + ("eaf-heuristic",)):
    import matplotlib.pyplot as plt
    w = wide(df, set_name)
    if w.empty:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    _ecdf(ax, w, base, pols, xlim, logx)
    ax.set_xlabel(f"speedup over {LABEL[base]}: PLT({LABEL[base]}) / PLT(policy)")
    fig.tight_layout()
    return _png(fig)


def _cat(sv):
    out = np.empty(len(sv), dtype=object)
    for name, lo, hi in CATS:
        m = np.ones(len(sv), bool)
        if lo is not None:
            m &= sv > lo if name != "equal" else sv >= lo
        if hi is not None:
            m &= sv <= hi if name != "slower" else sv < hi
        out[m] = name
    return out


def fig37(df, pages, scen, which: str):
    import matplotlib.pyplot as plt
    import pandas as pd
    w = wide(df, PRIMARY)
    if w.empty:
        return None
    cases = w.reset_index()[["page", "scenario"]].merge(scen, on="scenario").merge(
        pages[pages["set"] == PRIMARY][["page", "bytes", "objects", "median_object_bytes"]], on="page")
    cases["cat"] = _cat((w["if1"] / w["eaf"]).to_numpy())
    if which == "a":
        factors = [("bw1_mbit", "if1 bandwidth (Mbit/s)"), ("rtt1_ms", "if1 RTT (ms)"),
                   ("bw2_mbit", "if2 bandwidth (Mbit/s)"), ("rtt2_ms", "if2 RTT (ms)")]
    else:
        cases["size_q"] = pd.qcut(cases["bytes"], 4, labels=["Q1 (small)", "Q2", "Q3", "Q4 (large)"])
        cases["obj_q"] = pd.qcut(cases["objects"].rank(method="first"), 4, labels=["Q1 (few)", "Q2", "Q3", "Q4 (many)"])
        cases["med_q"] = pd.qcut(cases["median_object_bytes"].rank(method="first"), 4,
                                 labels=["Q1 (small)", "Q2", "Q3", "Q4 (large)"])
        factors = [("size_q", "page size quartile"), ("obj_q", "objects quartile"),
                   ("med_q", "median object size quartile")]
    fig, axs = plt.subplots(1, len(factors), figsize=(3.0 * len(factors), 3.4), sharey=True)
    for ax, (col, lab) in zip(axs, factors):
        tab = pd.crosstab(cases[col], cases["cat"], normalize="index")
        bottom = np.zeros(len(tab))
        for (name, _, _), colr in zip(CATS, CAT_COLORS):
            v = tab[name].to_numpy() if name in tab else np.zeros(len(tab))
            ax.bar([str(x) for x in tab.index], v, bottom=bottom, color=colr, label=name)
            bottom += v
        ax.set_xlabel(lab, fontsize=8)
        ax.tick_params(axis="x", labelsize=7, rotation=30)
    axs[0].set_ylabel("share of cases")
    axs[-1].legend(fontsize=6, title="EAF speedup", title_fontsize=6, loc="lower right")
    fig.tight_layout()
    return _png(fig)


def fig_cross(cross, check: str):
    """P17/P18: flow-model vs packet-level load time per (page, setting), log-log, with y = x."""
    import matplotlib.pyplot as plt
    if cross is None or not len(cross) or not (cross["check"] == check).any():
        return None
    d = cross[cross["check"] == check]
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    for k, (lbl, g) in enumerate(d.groupby("setting", sort=False)):
        ax.scatter(g["packet_plt_s"], g["flow_plt_s"], s=14, label=lbl, color=f"C{k}", alpha=0.8)
    lo = float(min(d["packet_plt_s"].min(), d["flow_plt_s"].min())) * 0.8
    hi = float(max(d["packet_plt_s"].max(), d["flow_plt_s"].max())) * 1.25
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="packet-level load time (s)", ylabel="flow-model load time (s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _png(fig)


def fig_reldiff(cross):
    """Fig. 3.3 substitute: ECDF of the relative difference (flow - packet) / packet of P18."""
    import matplotlib.pyplot as plt
    if cross is None or not len(cross) or not (cross["check"] == "P18").any():
        return None
    d = cross[cross["check"] == "P18"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, (lbl, g) in enumerate(d.groupby("setting", sort=False)):
        x = np.sort(100 * g["rel_diff"].to_numpy())
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=lbl, color=f"C{k}")
    ax.axvline(0, color="k", lw=0.8)
    ax.set(xlabel="relative difference of the replayed load time (%)", ylabel="ECDF")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def write_report(out_dir: str, df, pages, scen, claims: list[dict], meta: dict, cross=None) -> str:
    import matplotlib
    matplotlib.use("Agg", force=True)
    perf = meta.get("perf", {})
    parts = [common.report_head("socket-intents", "Socket Intents (multi-access page loads), reproduced", CSS),
             f"<p>{html.escape(meta['paper'])}. Run <b>{html.escape(meta['grid'])}</b> "
             f"({html.escape(meta.get('grid_description', ''))}): {meta['runs']:,} page loads, {meta['failed']} failed "
             f"items, {meta['wall_s_runs']:.1f} s wall in the simulations with {meta['jobs']} worker processes "
             f"({perf.get('loads_per_s_wall')} loads/s; {perf.get('loads_per_s_per_worker')} per worker"
             + (f"; {perf['tasks_resumed']} tasks resumed from the sweep store, {perf.get('page_loads_run', 0):,} "
                "loads run in this invocation" if perf.get("tasks_resumed") else "") + "). "
             + ("<b>Quick run: 24 pages; the verdicts are indicative only.</b> " if meta['grid'] == 'quick' else "")
             + "Workload: synthetic HAR files calibrated to the dissertation's statistics (the crawls are not "
             "public); every fraction is workload-dependent. Verdicts: the claims file's grade (PASS/PARTIAL/FAIL) "
             "mapped to SUPPORTED / INCONCLUSIVE (PARTIAL) / NOT SUPPORTED. Data: <code>runs.parquet</code>, "
             "<code>pages.parquet</code>, <code>scenarios.parquet</code>, <code>claims.json</code>, "
             "<code>workload.json</code>, <code>hars/</code>.</p>"]
    parts.append(common.failures_html(meta.get("failures"), "Failed items"))
    parts.append(common.claims_table_html(claims) + "<h2>Figures</h2>")
    figs = [
        ("fig3_4a", lambda: fig_ecdf(df, PRIMARY, "if1", (0.05, 50)),
         "Fig. 3.4a: ECDF of the speedup over Interface 1, Alexa-100-like set (all 384 scenarios x pages)"),
        ("fig3_4b", lambda: fig_ecdf(df, PRIMARY, "if1", (1, 5), logx=False),
         "Fig. 3.4b: the same, zoomed into speedups 1-5"),
        ("fig3_5", lambda: fig_ecdf(df, SECOND, "if1", (0.05, 50)),
         "Fig. 3.5: ECDF of the speedup over Interface 1, Alexa-1000-like set"),
        ("fig3_6", lambda: fig_ecdf(df, PRIMARY, "mptcp-if1", (0.02, 20),
                                    pols=("mptcp-rnd", "eaf", "eaf-mptcp", "eaf-heuristic")),
         "Fig. 3.6: ECDF of the speedup over MPTCP if1 (s' = PLT(MPTCP if1) / PLT(policy))"),
        ("fig3_7a", lambda: fig37(df, pages, scen, "a"),
         "Fig. 3.7a: EAF speedup categories by interface factor (category boundaries beyond 'slower' and "
         "'equal' are a reconstruction)"),
        ("fig3_7b", lambda: fig37(df, pages, scen, "b"),
         "Fig. 3.7b: EAF speedup categories by page size, number of objects and median object size"),
        ("fig3_2_crossmodel", lambda: fig_cross(cross, "P17"),
         "Fig. 3.2 substitute (P17, cross-model): handcrafted pages, flow model vs qoelab's packet-level browser on "
         "one interface; below the line = the flow model is faster"),
        ("fig3_3_closed_loop", lambda: fig_reldiff(cross),
         "Fig. 3.3 substitute (P18, closed loop): relative difference of the flow-model replay of packet-level "
         "HARs; data in crossmodel.parquet"),
    ]
    parts += common.figures_html(os.path.join(out_dir, "figures"), ((name, fn(), cap) for name, fn, cap in figs))
    sens = meta.get("sensitivity") or []
    if sens:
        def pc(x):
            return "" if x is None else f"{100 * x:.1f}%"
        head = ("<h2>Sensitivity</h2><p>The headline fractions on the Alexa-100-like set (384 scenarios) under the "
                "model variants of the claims file §1.10, next to the base model (the public code's choices): "
                "reuse of an idle connection costs one RTT (the text) instead of none; max-min sharing instead "
                "of water-filling; decimal instead of binary units. Faster / slower than Interface 1: s > 1.001 / "
                "s < 0.999. Data: <code>sweep-sensitivity/</code>.</p><table><tr><th>variant</th><th>cases</th>"
                "<th>median PLT if1</th><th>EAF faster</th><th>EAF slower</th><th>P(EAF s &gt; 2)</th>"
                "<th>EAF-MPTCP faster</th><th>MPTCP if1 faster</th><th>MPTCP if1 slower</th><th>MPTCP if1 s &lt; 0.99 "
                "(P5)</th></tr>")
        rows = "".join(
            f"<tr><td>{html.escape(r['variant'])}</td><td>{r['cases']:,}</td><td>{r['if1_median_s']:.3f} s</td>"
            f"<td>{pc(r.get('eaf_faster'))}</td><td>{pc(r.get('eaf_slower'))}</td><td>{pc(r.get('eaf_s_gt_2'))}</td>"
            f"<td>{pc(r.get('eaf-mptcp_faster'))}</td><td>{pc(r.get('mptcp-if1_faster'))}</td>"
            f"<td>{pc(r.get('mptcp-if1_slower'))}</td><td>{pc(r.get('mptcp-if1_s_lt_099'))}</td></tr>" for r in sens)
        parts.append(head + rows + "</table>")
    wl = meta.get("workload", {})
    parts.append("<h2>Setup</h2><p>Flow-level page-load model (docs/models/pageload.md): interfaces (RTT, "
                 "bandwidth) with water-filling, TCP handshake 2 RTT (+2 TLS), IW10 slow start until the fair share, "
                 "HTTP/1.1 persistent connections (6 busy per origin, 17 in all, idle timeout 30 s), MPTCP with one "
                 "subflow per interface, prediction runs; reuse of an idle connection costs no RTT (the public "
                 "code). Table 3.1: if1 RTT 10/20/30/50 ms x bandwidth 0.5/2/6/12/20/50 Mbit/s, if2 RTT "
                 "20/50/100/200 ms x bandwidth 0.5/5/20/50 Mbit/s in the public code's binary units (Mbit = 2^20 "
                 "bit; 0.5 Mbit/s = kbit(500) = 64,000 B/s). Speedups: eps = 1e-3. Workload targets met "
                 f"(whole sets): {html.escape(str(wl))}. See docs/reproductions/socket-intents.md.</p></body></html>")
    return common.write_html(out_dir, parts, meta)
