"""HTML report of ``qoelab reproduce minerva``: claims M1-M22 with verdicts and the paper's figures where
cheap (Fig. 9 CDF of dmin per link rate, Fig. 10 bars of the dynamic runs, Fig. 11b bandwidth shares)."""

from __future__ import annotations

import html
import os

from qoelab.reproduce import common
from qoelab.reproduce.minerva_claims import STEP, _dyn_pairs, _mean, _xt, deltas
from qoelab.reproduce.report import CSS, _png



def fig9(df):
    import matplotlib.pyplot as plt
    ds = deltas(df)
    if not ds:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for rate in sorted({x["rate"] for x in ds}):
        xs = sorted(x["d"] for x in ds if x["rate"] == rate)
        ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=f"{rate:g} Mbit/s")
    ax.axvline(STEP, color="grey", ls="--", lw=0.8)
    ax.axvline(0, color="black", lw=0.5)
    ax.set_xlabel("improvement in QoE fairness over Cubic (min QoE, VMAF points)")
    ax.set_ylabel("CDF over runs")
    ax.legend()
    return _png(fig)


def fig10(df):
    import matplotlib.pyplot as plt
    rows = []
    for exp, lab in (("dyn", "random videos"), ("pool", "one video")):
        ps = _dyn_pairs(df, exp)
        if not ps:
            continue
        for k, kl in (("mean_quality", "VMAF"), ("mean_rebuf_total_s", "rebuf. total (s)"),
                      ("mean_rebuf_s", "rebuf. non-startup (s)"), ("mean_stalls", "stall events")):
            rows.append((f"{lab}\n{kl}", _mean([float(p["cubic"][k]) for p in ps]),
                         _mean([float(p["minerva"][k]) for p in ps])))
    if not rows:
        return None
    fig, axs = plt.subplots(1, len(rows), figsize=(2.0 * len(rows), 3.2))
    for ax, (lab, c, m) in zip(axs if len(rows) > 1 else [axs], rows):
        ax.bar([0, 1], [c, m], color=["tab:blue", "tab:orange"])
        ax.set_xticks([0, 1], ["Cubic", "Minerva"], fontsize=7)
        ax.set_title(lab, fontsize=7)
    fig.tight_layout()
    return _png(fig)


def fig11b(df):
    import matplotlib.pyplot as plt
    data, labels = [], []
    for n in (4, 8):
        d = _xt(df, n)
        if len(d):
            data.append([100 * float(x) for x in d["share_m"]])
            labels.append(f"N = {n}")
    if not data:
        return None
    fig, ax = plt.subplots(figsize=(4, 3.2))
    ax.boxplot(data)
    ax.set_xticks(range(1, len(labels) + 1), labels)
    ax.axhline(50, color="grey", ls="--", lw=0.8)
    ax.set_ylabel("Minerva bandwidth share (%)")
    return _png(fig)


def write_report(out_dir: str, df, odf, claims: list[dict], meta: dict) -> str:
    import matplotlib
    matplotlib.use("Agg", force=True)
    n = meta.get("norm", {}).get("vmaf", {})
    parts = [common.report_head("minerva", "Minerva, reproduced", CSS),
             f"<p>{html.escape(meta['paper'])}. Run <b>{html.escape(meta['grid'])}</b> "
             f"({html.escape(meta.get('grid_description', ''))}): {meta['runs']} runs + {meta.get('opt_runs', 0)} "
             f"fixed-rate trace-mode runs, {meta['failed']} failed, {meta['wall_s_runs']:.1f} s wall in the simulations with "
             f"{meta['jobs']} worker processes. "
             + ("<b>Quick run: 1 seed and short runs; the verdicts are indicative only.</b> " if meta['grid'] == 'quick'
                else "") +
             "Verdicts: the claims file's grade (PASS/PARTIAL/FAIL) mapped to SUPPORTED / INCONCLUSIVE (PARTIAL) / "
             "NOT SUPPORTED; the real-world claim OUT OF SCOPE. Numbers: median [bootstrap 95% CI] unless stated. "
             "Data: <code>runs.parquet</code>, <code>opt.parquet</code>, <code>claims.json</code>.</p>"]
    parts.append(common.failures_html(meta.get("failures")))
    parts.append(common.claims_table_html(claims) + "<h2>Figures</h2>")
    parts += common.figures_html(os.path.join(out_dir, "figures"), (
        ("fig9", fig9(df), "Fig. 9: CDF of the improvement in min QoE (Minerva/PIE - Cubic/PIE) per link rate; "
                           "dashed: 7.65 (720p -> 1080p)"),
        ("fig10", fig10(df), f"Fig. 10: dynamic Poisson arrivals at {'8' if meta.get('corpus') == 'hd' else '3.2'} "
                             "Mbit/s, seed means per session"),
        ("fig11b", fig11b(df), "Fig. 11b: Minerva's bandwidth share against the same videos over Cubic")))
    if meta.get("corpus", "synthetic") == "hd":
        vids = (f"the {len(meta.get('videos') or [])} clips of qoelab's hd corpus (generated genres, 4-s chunks of 60-s "
                "clips looped, ladder 0.2-6 Mbit/s at 240p-1080p, measured per-segment VMAF and PSNR; docs/corpus.md) "
                "at the paper's link rates; App. B / §8.6 on Minerva's two public curves on the same ladder")
    else:
        vids = ("8 synthetic videos (4-s chunks, ladder 0.15-2.35 Mbit/s = Minerva's 0.375-5.8 x 0.405) with "
                "VMAF/PSNR tables from Minerva's two public curves and six exponential curves, rates x 0.405")
    parts.append("<h2>Setup</h2><p>Dumbbell, min RTT 20 ms, 10 Mbit/s uplink, buffer 1.5 BDP, PIE (Mahimahi mode, "
                 f"target 15 ms) or droptail (pfifo); {vids}; MPC ABR (bitrate objective), 60 s player buffer; "
                 "Minerva: paper profile, "
                 "client utility with our V_5, corpus-wide normalization tables (qoelab minerva normalize over all "
                 f"videos of the corpus, uniform popularity; VMAF {n.get('points')} points, norm-vmaf.json / norm-psnr.json), alpha "
                 f"{meta.get('alpha')} against plain cubic, clamp [0.25, 10]; Eq. 1 QoE on the first 200 s; "
                 "fixed-rate optimum: qoelab minerva fixed-rate-optimal (mpc, trace mode, capacity = link x 0.95). "
                 "See docs/reproductions/minerva.md."
                 "</p></body></html>")
    return common.write_html(out_dir, parts, meta)
