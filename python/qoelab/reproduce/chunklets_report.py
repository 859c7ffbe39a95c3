"""The HTML report of ``qoelab reproduce chunklets``: claims table, figures in the paper's form
(box plots of the steady-state per-chunk SA and RR vs N, one panel per queue discipline, one figure
per experiment; Fig. 4's SA time series; the multiplier vs N/(N+M)), setup and deviations."""

from __future__ import annotations

import html
import os

from qoelab.reproduce import common
from qoelab.reproduce.chunklets import AQM_LABEL, AQM_ORDER, EXPERIMENTS, M_BULK, PAYLOAD
from qoelab.reproduce.report import CSS, _png


def box_figure(chunks, exp: str):
    import matplotlib.pyplot as plt
    d = chunks[chunks["exp"] == exp]
    aqms = [a for a in AQM_ORDER if (d["aqm"] == a).any()]
    fig, axes = plt.subplots(2, len(aqms), figsize=(3.6 * len(aqms) + 0.6, 5.2), squeeze=False, sharey="row")
    for j, a in enumerate(aqms):
        x = d[d["aqm"] == a]
        ns = sorted(set(x["n"]))
        for i, (col, lab) in enumerate((("sa_bps", "SA (Mbit/s)"), ("rr_bps", "RR (Mbit/s)"))):
            ax = axes[i][j]
            data = [x.loc[x["n"] == n, col].dropna().to_numpy() / 1e6 for n in ns]
            ax.boxplot(data, positions=range(len(ns)), widths=0.6, showfliers=False)
            ax.set_xticks(range(len(ns)))
            ax.set_xticklabels([str(n) for n in ns], fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            if i == 0:
                ax.set_title(AQM_LABEL[a], fontsize=10)
            else:
                ax.set_xlabel("N (chunklets)")
            if j == 0:
                ax.set_ylabel(lab)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def series_figure(chunks):
    """Fig. 4: SA over the first 200 s of steady state, seed 0, N = 1, 5, 10, FQ-CoDel vs PIE (E3)."""
    import matplotlib.pyplot as plt
    d = chunks[(chunks["exp"] == "E3") & (chunks["rep"] == 0) & (chunks["t_rel"] <= 200)]
    aqms = [a for a in ("pie", "fq_codel") if (d["aqm"] == a).any()]
    if not aqms:
        return None
    fig, axes = plt.subplots(1, len(aqms), figsize=(4.2 * len(aqms), 3.0), squeeze=False, sharey=True)
    for j, a in enumerate(aqms):
        ax = axes[0][j]
        for n in sorted(set(d.loc[d["aqm"] == a, "n"])):
            if n not in (1, 4, 5, 10):
                continue
            x = d[(d["aqm"] == a) & (d["n"] == n)]
            ax.plot(x["t_rel"], x["sa_bps"] / 1e6, label=f"N={n}", lw=1)
        ax.set_title(AQM_LABEL[a], fontsize=10)
        ax.set_xlabel("time since steady state (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("SA (Mbit/s)")
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def multiplier_figure(runs):
    import matplotlib.pyplot as plt
    d = runs[(runs["exp"] == "E3") & (runs["aqm"] == "fq_codel")]
    if not len(d) or "ov_dash_full_bps" not in d.columns:
        return None
    g = d.groupby("n")["ov_dash_full_bps"].mean()
    ns = list(range(1, 11))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(ns, [n / (n + M_BULK) * 25 * PAYLOAD for n in ns], "k--", label="N/(N+M) C (payload)")
    ax.plot(g.index, g.to_numpy() / 1e6, "o-", label="full-overlap DASH rate")
    ax.set_xlabel("N")
    ax.set_ylabel("Mbit/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def _cell_table(stats, exp) -> str:
    d = stats[stats["exp"] == exp].sort_values(["aqm", "n"])
    rows = ["<table class='num'><tr><th>queue</th><th>N</th><th>chunks</th><th>SA median [95% CI]</th>"
            "<th>SA IQR</th><th>RR median</th><th>II median</th><th>AR req&rarr;last SA median</th></tr>"]
    for r in d.to_dict("records"):
        rows.append(f"<tr><td>{AQM_LABEL[r['aqm']]}</td><td>{r['n']}</td><td>{r['chunks']}</td>"
                    f"<td>{r['sa_med'] / 1e6:.2f} [{r.get('sa_lo', float('nan')) / 1e6:.2f}, "
                    f"{r.get('sa_hi', float('nan')) / 1e6:.2f}]</td><td>{r['sa_iqr'] / 1e6:.2f}</td>"
                    f"<td>{r['rr_med'] / 1e6:.2f}</td><td>{r['ii_med']:.4f}</td>"
                    f"<td>{r.get('sareq_med', float('nan')) / 1e6:.2f}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def write_report(out_dir: str, runs, chunks, stats, claims: list[dict], meta: dict) -> str:
    import matplotlib
    matplotlib.use("Agg", force=True)
    fig_dir = os.path.join(out_dir, "figures")
    p = [common.report_head("chunklets", "Chunklets over AQM gateways, reproduced", CSS),
         f"<p>{html.escape(meta.get('paper', ''))}. Grid <b>{html.escape(meta.get('grid', ''))}</b>: "
         f"{meta.get('runs')} runs ({html.escape(meta.get('grid_description', ''))}); {meta.get('failed', 0)} failed; "
         f"{meta.get('wall_s_runs', 0):.1f} s wall in the simulations with {meta.get('jobs')} worker processes. Data: "
         "<code>runs.parquet</code>, <code>chunks.parquet</code> (steady-state chunks), <code>cells.parquet</code>, "
         "<code>bins.parquet</code> (100-ms overlap bins), <code>claims.json</code>.</p>"]
    p.append(common.failures_html(meta.get("failures")))
    p.append(common.claims_table_html(
        claims, "<p>Verdicts: the claims file's PASS / PARTIAL / FAIL / INCONCLUSIVE are reported as SUPPORTED / "
        "INCONCLUSIVE (PARTIAL) / NOT SUPPORTED / INCONCLUSIVE. Rates in Mbit/s (HTTP payload); SA = mean of the "
        "last 3 per-chunk ARs (first &rarr; last byte of any chunklet), steady state only, medians pooled over "
        "seeds with bootstrap 95% CIs.</p>") + "<h2>Figures</h2>")

    def put(name, img, cap):
        p.extend(common.figures_html(fig_dir, [(name, img, cap)], missing=""))
    exps = [e for e in EXPERIMENTS if len(chunks) and (chunks["exp"] == e).any()]
    for e in exps:
        fig, down, up, rd, rb, qd, qu, bulk, fixed = EXPERIMENTS[e]
        cap = (f"{e} ({fig}): {down}/{up} Mbit/s, RTT DASH {rd} ms / bulk {rb} ms, queue down "
               f"{'FIFO 100' if qd == 'fifo' else 'per panel'}, up {'FIFO 100' if qu == 'fifo' else 'per panel'}, "
               f"{'4 ' + bulk + 'stream bulk flows' if bulk else 'no cross traffic'}, "
               f"{'fixed 3.5 Mbit/s' if fixed is not None else 'full ladder, sa3'}. Box: steady-state per-chunk "
               "SA (top) and RR (bottom) vs N.")
        put(f"{e}_box", box_figure(chunks, e), cap)
        if len(stats):
            p.append(_cell_table(stats, e))
    put("fig4_series", series_figure(chunks) if len(chunks) else None,
        "Fig. 4 (E3 conditions): SA over the first 200 s of steady state, seed 0.")
    put("multiplier", multiplier_figure(runs) if len(runs) else None,
        "C2: DASH rate in 100-ms bins where all N chunklets receive (E3 FQ-CoDel) vs N/(N+M) C.")
    p.append("<h2>Deviations from the testbed</h2><ul>"
             + "".join(f"<li>{html.escape(d)}</li>" for d in meta.get("deviations", [])) + "</ul>")
    p.append("<p>Setup and numbers: docs/reproductions/chunklets.md.</p></body></html>")
    return common.write_html(out_dir, p, meta)
