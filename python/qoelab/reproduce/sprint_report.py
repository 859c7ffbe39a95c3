"""HTML report of the Sprint reproduction: claims (S1-S20), Fig. 6 (% fair share over rate x queue),
Fig. 11 (% of expected fair share vs alpha), Table I (pairwise unfairness), setup."""

from __future__ import annotations

import html
import os

from qoelab.reproduce import common
from qoelab.reproduce.report import CSS, _png
from qoelab.reproduce.sprint import PLANE_LABEL
from qoelab.reproduce.sprint_claims import PAPER_T1, alpha_table, cells, med, median_ci, table1

COLOR = {"dash": "#1f77b4", "sprint": "#d62728", "sprintx": "#2ca02c", "notrain": "#ff7f0e", "pipe": "#9467bd"}


def fig6(df):
    import matplotlib.pyplot as plt
    c = cells(df)
    rates = sorted({k[1] for k in c})
    queues = sorted({k[2] for k in c})
    if not rates:
        return None
    fig, axs = plt.subplots(1, len(rates), figsize=(3.2 * len(rates), 3.2), sharey=True, squeeze=False)
    for ax, r in zip(axs[0], rates):
        for p in ("dash", "sprint", "sprintx"):
            xs, ms, lo, hi = [], [], [], []
            for i, q in enumerate(queues):
                m, a, b, n = median_ci(c.get((p, r, q), []))
                if n:
                    xs.append(i)
                    ms.append(m)
                    lo.append(m - a if a == a else 0)
                    hi.append(b - m if b == b else 0)
            ax.errorbar(xs, ms, yerr=[lo, hi], marker="o", capsize=2, color=COLOR[p], label=PLANE_LABEL[p])
        ax.set_xticks(range(len(queues)))
        ax.set_xticklabels([str(q) for q in queues], fontsize=8)
        ax.set_xlabel("queue (KB)")
        ax.set_title(f"{r:g} Mbit/s", fontsize=9)
        ax.axhline(100, color="#888", lw=0.6, ls=":")
        ax.grid(alpha=0.3)
    axs[0][0].set_ylabel("% of fair share")
    axs[0][0].legend(fontsize=7)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def fig11(df):
    import matplotlib.pyplot as plt
    t = alpha_table(df)
    if not t:
        return None
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for p in ("sprint", "notrain", "dash"):
        al = sorted(a for (q, a) in t if q == p)
        if not al:
            continue
        ms = [med(t[(p, a)]) for a in al]
        cis = [median_ci(t[(p, a)]) for a in al]
        lo = [m - c[1] if c[1] == c[1] else 0 for m, c in zip(ms, cis)]
        hi = [c[2] - m if c[2] == c[2] else 0 for m, c in zip(ms, cis)]
        ax.errorbar(al, ms, yerr=[lo, hi], marker="o", capsize=2, color=COLOR[p], label=PLANE_LABEL[p])
    ax.axhline(100, color="#888", lw=0.6, ls=":")
    ax.set_xlabel("alpha (aggressiveness)")
    ax.set_ylabel("% of expected fair share")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def fig5(df):
    import matplotlib.pyplot as plt
    from qoelab.reproduce.sprint_claims import chunk_points
    pts = chunk_points(df)
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    qs = sorted({p[0] for p in pts})
    cols = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    for q, col in zip(qs, cols):
        pp = sorted((c, m, p) for qq, c, m, p in pts if qq == q)
        ax.plot([c / 1e3 for c, _, _ in pp], [m for _, m, _ in pp], "o", color=col, label=f"{q} KB measured")
        ax.plot([c / 1e3 for c, _, _ in pp], [p for _, _, p in pp], "--", color=col, label=f"{q} KB Eq. 1")
    ax.set_xscale("log")
    ax.set_xlabel("chunk size (KB)")
    ax.set_ylabel("efficiency (of fair share)")
    ax.set_ylim(0, 1.1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def table1_html(df) -> str:
    t = table1(df)
    rows = ["<table class='num'><tr><th>pair</th><th>256 KB ours</th><th>256 KB paper</th><th>512 KB ours</th>"
            "<th>512 KB paper</th></tr>"]
    for p in PAPER_T1[256]:
        cells_ = []
        for q in (256, 512):
            v = t.get(q, {}).get(p)
            if v:
                m, a, b, n = median_ci(v[1], reps=500)
                cells_.append(f"<td>{m:.2f} [{a:.2f}, {b:.2f}] <span class='n'>n={n}; first flow "
                              f"{v[2]:.0f}% FS</span></td>" if n > 1 else f"<td>{m:.2f} <span class='n'>n=1</span></td>")
            else:
                cells_.append("<td>not run</td>")
            cells_.append(f"<td>{PAPER_T1[q][p]:.2f}</td>")
        label = " &ndash; ".join(PLANE_LABEL[x] for x in p.split("+"))
        rows.append(f"<tr><th>{label}</th>{''.join(cells_)}</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def sensitivity_table(df) -> dict:
    """{(setting, plane, queue): [%FS over seeds]} at 3 Mbit/s: the primary setting (grid runs, cubic,
    100 ms) and the claims file's sensitivity settings (base RTT 20 ms; NewReno)."""
    out: dict = {}
    prim = cells(df)
    for (p, r, q), v in prim.items():
        if r == 3.0 and q in (256, 512):
            out[("cubic, 100 ms", p, q)] = v
    if "exp" in df and len(df):
        d = df[(df["exp"] == "sens") & df["error"].isna()] if "error" in df else df[df["exp"] == "sens"]
        label = {"rtt20": "cubic, 20 ms", "newreno": "newreno, 100 ms"}
        for (c, p, q), g in d.groupby(["cell", "plane", "queue_kb"]) if len(d) else []:
            out[(label.get(c, c), p, int(q))] = [float(x) for x in g["pct_fs"] if x == x]
    return out


def sensitivity_html(df) -> str:
    t = sensitivity_table(df)
    settings = [s for s in ("cubic, 100 ms", "cubic, 20 ms", "newreno, 100 ms") if any(k[0] == s for k in t)]
    if len(settings) < 2:
        return "<h2>Sensitivity</h2><p>Not run in this grid (full run only).</p>"
    rows = ["<h2>Sensitivity (3 Mbit/s, % of fair share vs 1 bulk flow, median [95% CI] over seeds)</h2>",
            "<table class='num'><tr><th>setting</th>" + "".join(
                f"<th>{PLANE_LABEL[p]} {q} KB</th>" for q in (256, 512) for p in ("dash", "sprint", "sprintx")) + "</tr>"]
    for s_ in settings:
        cells_ = []
        for q in (256, 512):
            for p in ("dash", "sprint", "sprintx"):
                m, a, b, n = median_ci(t.get((s_, p, q), []), reps=500)
                cells_.append(f"<td>{m:.0f} [{a:.0f}, {b:.0f}]</td>" if n > 1 else
                              (f"<td>{m:.0f}</td>" if n else "<td>-</td>"))
        rows.append(f"<tr><th>{s_}</th>{''.join(cells_)}</tr>")
    rows.append("</table><p>The primary setting is the Fig. 6 grid's. Claims are graded on the primary setting; "
                "this table shows whether the direction (Sprint above DASH, DASH losing at the deeper queue) holds "
                "under the other two (claims file sec. 3, 'Sensitivity').</p>")
    return "\n".join(rows)


def write_report(out_dir: str, df, mdf, claims: list[dict], meta: dict) -> str:
    import matplotlib
    matplotlib.use("Agg", force=True)
    parts = [common.report_head("sprint", "Sprint / Sprint-x, reproduced", CSS),
             f"<p>{html.escape(meta['paper'])}. Run <b>{html.escape(meta['grid'])}</b> "
             f"({html.escape(meta.get('grid_description', ''))}): {meta['runs']} runs, {meta['failed']} failed, "
             f"{meta['wall_s_runs']:.1f} s wall in the simulations with {meta['jobs']} worker processes. "
             + ("<b>Quick run: 1 seed and short runs; the verdicts are indicative only.</b> " if meta['grid'] == 'quick'
                else "") +
             "Verdicts: the claims file's grade (PASS/PARTIAL/FAIL) mapped to SUPPORTED / INCONCLUSIVE (PARTIAL) / "
             "NOT SUPPORTED; real-Internet claims OUT OF SCOPE. Numbers: median over seeds [bootstrap 95% CI]. "
             "Data: <code>runs.parquet</code>, <code>minutes.parquet</code>, <code>claims.json</code>.</p>"]
    parts.append(common.failures_html(meta.get("failures")))
    parts.append(common.claims_table_html(claims) + "<h2>Figures</h2>")
    parts += common.figures_html(os.path.join(out_dir, "figures"), (
        ("fig5", fig5(df), "Fig. 5: predicted (Eq. 1, round by round) vs measured efficiency of chunk transfers after "
                           "idle, NewReno, 3 Mbit/s, 1 bulk flow"),
        ("fig6", fig6(df), "Fig. 6: % of fair share against 1 bulk flow over rate x queue (Huang ABR)"),
        ("fig11", fig11(df), "Fig. 11: % of expected fair share (alpha x FS) vs alpha, tputfrac ABR, 3 Mbit/s, "
                             "256 KB")))
    parts.append("<h2>Table I: unfairness sqrt(1 - JFI), 3 Mbit/s</h2>" + table1_html(df))
    parts.append(sensitivity_html(df))
    parts.append("<h2>Setup</h2><p>Dumbbell; bottleneck rate C, bfifo queue Q bytes (KB = 1000 B), 100 Mbit/s "
                 "upstream; every flow and client from its own server host, base RTT 100 ms (S19: 20 ms); cubic, "
                 "IW 10, slow start after idle; video synthetic:sprint (4-s segments, 13 rungs 250 kbit/s-20 Mbit/s); "
                 "Huang-style ABR (240 s buffer) unless stated; warm-up 60 s excluded from every %FS. "
                 "See docs/reproductions/sprint.md.</p></body></html>")
    return common.write_html(out_dir, parts, meta)
