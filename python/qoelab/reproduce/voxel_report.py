"""HTML report of the VOXEL reproduction: claims V1-V43, p90 bufRatio per buffer size per arm (Figs.
6.9/6.21 form), SSIM ECDFs (Figs. 6.10/6.14), % data skipped (Fig. 6.15), the synthetic traces (Fig.
6.17), the 3G ablation (Fig. 6.16), the modelled stand-ins (I/P/B byte shares) and the setup."""

from __future__ import annotations

import html
import os

import numpy as np

from qoelab.reproduce import common
from qoelab.reproduce.report import CSS, _png
from qoelab.reproduce.voxel import ARMS, TRACE_LABEL
from qoelab.reproduce.voxel_claims import p90_ci, runs_of, table

COLOR = {"voxel": "#d62728", "bola": "#1f77b4", "beta": "#2ca02c", "voxel_rel": "#ff7f0e", "bola_ssim": "#9467bd",
         "bola_q": "#17becf", "mpc": "#8c564b", "mpc_q": "#e377c2", "voxel_f0.8": "#bcbd22", "voxel_f0.7": "#7f7f7f",
         "voxel_f0.6": "#aec7e8"}
ORDER = ("voxel", "bola", "beta", "voxel_rel", "bola_q", "mpc", "mpc_q", "voxel_f0.8", "voxel_f0.7", "voxel_f0.6")


def _arms(df, fam="main"):
    d = runs_of(df, fam)
    have = set(d["arm"]) if d is not None and len(d) else set()
    return [a for a in ORDER if a in have]


def fig_p90(df):
    """p90 bufRatio vs buffer size, one panel per (trace, video), one line per arm, bootstrap CI bars."""
    import matplotlib.pyplot as plt
    d = runs_of(df, "main")
    if d is None or not len(d):
        return None
    traces = [t for t in TRACE_LABEL if t in set(d["trace"])]
    videos = sorted(set(d["video"]), key=lambda v: ("bbb", "tos", "ed", "sintel").index(v))
    arms = _arms(df)
    fig, axs = plt.subplots(len(traces), len(videos), figsize=(2.6 * len(videos) + 0.6, 2.1 * len(traces) + 0.4),
                            squeeze=False, sharex=True)
    for i, t in enumerate(traces):
        for j, v in enumerate(videos):
            ax = axs[i][j]
            if not any(k[0] == v and k[1] == t for a in arms for k in table(df, "main", a)):
                ax.axis("off")
                ax.text(0.5, 0.5, f"{TRACE_LABEL[t]} / {v.upper()}: not run", ha="center", va="center", fontsize=7,
                        transform=ax.transAxes)
                continue
            for a in arms:
                tab = table(df, "main", a)
                bs = sorted(b for vv, tt, b in tab if (vv, tt) == (v, t))
                if not bs:
                    continue
                ms, lo, hi = [], [], []
                for b in bs:
                    m, x, y = p90_ci(list(tab[(v, t, b)].values()), reps=300)
                    ms.append(100 * m)
                    lo.append(100 * (m - x) if x == x else 0)
                    hi.append(100 * (y - m) if y == y else 0)
                ax.errorbar(bs, ms, yerr=[lo, hi], marker="o", ms=3, capsize=2, color=COLOR.get(a, "#000"),
                            label=ARMS[a]["label"])
            ax.set_title(f"{TRACE_LABEL[t]} / {v.upper()}", fontsize=8)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
            if j == 0:
                ax.set_ylabel("p90 bufRatio (%)", fontsize=7)
            if i == len(traces) - 1:
                ax.set_xlabel("buffer (segments)", fontsize=7)
    axs[0][0].legend(fontsize=6)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def fig_ssim_ecdf(df, sdf):
    """ECDF of segment SSIM over all segments of all runs, per trace, one line per arm."""
    import matplotlib.pyplot as plt
    d = runs_of(df, "main")
    if d is None or not len(d) or sdf is None or not len(sdf):
        return None
    traces = [t for t in TRACE_LABEL if t in set(d["trace"])]
    arms = [a for a in _arms(df) if a in ("voxel", "bola", "beta", "voxel_rel")]
    fig, axs = plt.subplots(1, len(traces), figsize=(2.8 * len(traces), 2.8), squeeze=False, sharey=True)
    for ax, t in zip(axs[0], traces):
        for a in arms:
            ids = set(d[(d["trace"] == t) & (d["arm"] == a)]["run_id"])
            x = np.sort(sdf[sdf["run_id"].isin(ids)]["quality"].to_numpy(dtype=float))
            if len(x):
                ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=COLOR.get(a), label=ARMS[a]["label"])
        ax.set_title(TRACE_LABEL[t], fontsize=9)
        ax.set_xlim(0.85, 1.001)
        ax.set_xlabel("segment SSIM", fontsize=8)
        ax.grid(alpha=0.3)
    axs[0][0].set_ylabel("ECDF")
    axs[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def fig_skipped(df):
    """VOXEL's % of data skipped (bytes not fetched / full size of the chosen rung) vs buffer, per trace."""
    import matplotlib.pyplot as plt
    tab = table(df, "main", "voxel", "skipped_pct")
    if not tab:
        return None
    traces = [t for t in TRACE_LABEL if any(k[1] == t for k in tab)]
    videos = sorted({k[0] for k in tab}, key=lambda v: ("bbb", "tos", "ed", "sintel").index(v))
    fig, axs = plt.subplots(1, len(traces), figsize=(2.8 * len(traces), 2.6), squeeze=False, sharey=True)
    for ax, t in zip(axs[0], traces):
        for v in videos:
            bs = sorted(b for vv, tt, b in tab if (vv, tt) == (v, t))
            ax.plot(bs, [np.mean(list(tab[(v, t, b)].values())) for b in bs], marker="o", ms=3, label=v.upper())
        ax.set_title(TRACE_LABEL[t], fontsize=9)
        ax.set_xlabel("buffer (segments)", fontsize=8)
        ax.grid(alpha=0.3)
    axs[0][0].set_ylabel("% data skipped (VOXEL)")
    axs[0][0].legend(fontsize=7)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def fig_synth(df, sdf):
    import matplotlib.pyplot as plt
    d = runs_of(df, "synth")
    if d is None or not len(d) or sdf is None or not len(sdf):
        return None
    fig, axs = plt.subplots(1, 2, figsize=(9, 2.8), sharey=True)
    for ax, t in zip(axs, ("const", "step")):
        for a in ("voxel", "bola"):
            ids = set(d[(d["trace"] == t) & (d["arm"] == a)]["run_id"])
            s = sdf[sdf["run_id"].isin(ids)].sort_values("segment")
            ax.plot(s["segment"] * 4, s["quality"], color=COLOR[a], label=ARMS[a]["label"], lw=1)
        ax.set_title({"const": "constant 10.5 Mbit/s", "step": "10.75 -> 10.5 Mbit/s at 70 s"}[t], fontsize=9)
        ax.set_xlabel("media time (s)")
        ax.grid(alpha=0.3)
    axs[0].set_ylabel("segment SSIM")
    axs[0].legend(fontsize=7)
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def fig_ablation(df):
    import matplotlib.pyplot as plt
    d = runs_of(df, "ablation")
    if d is None or not len(d):
        return None
    fig, ax = plt.subplots(figsize=(5, 2.8))
    arms = ("bola", "bola_ssim", "voxel")
    for k, b in enumerate(sorted(set(d["buffer"]))):
        for i, a in enumerate(arms):
            x = d[(d["buffer"] == b) & (d["arm"] == a)]["bufratio"]
            if len(x):
                ax.bar(k * 4 + i, 100 * float(x.mean()), color=COLOR[a], label=ARMS[a]["label"] if k == 0 else None)
    ax.set_xticks([k * 4 + 1 for k in range(len(set(d["buffer"])))])
    ax.set_xticklabels([f"{b} seg" for b in sorted(set(d["buffer"]))])
    ax.set_ylabel("mean bufRatio (%)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    img = _png(fig)
    plt.close(fig)
    return img


def content_html(meta) -> str:
    c = meta.get("content") or {}
    if not c:
        return ""
    rows = ["<h2>Content: MODELLED stand-ins (not encodes)</h2>",
            "<p>The four films' encodes and per-prefix SSIM tables are not available; the videos are modelled "
            "(qoelab.content.voxel_standin; model and constants in docs/reproductions/voxel.md). Byte shares are of "
            "frame bytes over all segments and rungs (the issue asks how close they come to the reported "
            "~15/65/20%).</p><table class='num'><tr><th>stand-in</th><th>I</th><th>P</th><th>B</th><th>reliable share"
            "</th><th>sd of Q12 segment bitrate (Mbit/s)</th><th>mean SSIM Q0 / Q9 / Q11</th><th>I-frame-only SSIM at Q12 "
            "(median)</th><th>droppable Q12 bytes at SSIM >= 0.99 (median)</th></tr>"]
    for f, v in c.items():
        sh = v.get("shares", {})
        a = v.get("avg_ssim") or [float("nan")] * 13
        rows.append(f"<tr><th>{f.upper()}</th><td>{100 * sh.get('I', 0):.1f}%</td><td>{100 * sh.get('P', 0):.1f}%</td>"
                    f"<td>{100 * sh.get('B', 0):.1f}%</td><td>{100 * sh.get('reliable', 0):.1f}%</td>"
                    f"<td>{v.get('sd_q12_mbps', 0):.2f}</td><td>{a[0]:.3f} / {a[9]:.3f} / {a[11]:.3f}</td>"
                    f"<td>{v.get('i_only_ssim_median', 0):.3f}</td><td>{100 * v.get('drop_at_099_median', 0):.1f}%</td></tr>")
    rows.append("</table><p class='n'>Paper: I ~15%, P ~65%, B ~20% of the bytes; sd of the segment bitrate BBB 3.77, "
                "ToS 3.52, ED 5.6, Sintel 7.5 Mbit/s (Tables 6.1).</p>")
    return "\n".join(rows)


def write_report(out_dir: str, df, sdf, claims: list[dict], meta: dict) -> str:
    import matplotlib
    matplotlib.use("Agg", force=True)
    warn = ""
    if meta.get("tcp_only"):
        warn = ("<p class='bad'><b>--tcp-only debug run</b>: every arm ran over TCP with the sequential data plane "
                "(no QUIC*, no VOXEL data plane); the figures say nothing about VOXEL and no network claim is "
                "graded.</p>")
    parts = [common.report_head("voxel", "VOXEL, reproduced", CSS), warn,
             f"<p>{html.escape(meta['paper'])}. Run <b>{html.escape(meta['grid'])}</b> "
             f"({html.escape(meta.get('grid_description', ''))}): {meta['runs']} runs, {meta['failed']} failed, "
             f"{meta['wall_s_runs']:.1f} s wall in the simulations with {meta['jobs']} worker processes. "
             + ("<b>Quick run: 1 shift per configuration and 120 s of media; the verdicts are indicative only.</b> "
                if meta['grid'].startswith('quick') else "") +
             "Videos: <b>" + html.escape(meta.get("content_label", "")) + "</b>. Verdicts: the claims file's grade "
             "(PASS/PARTIAL/FAIL) mapped to SUPPORTED / INCONCLUSIVE (PARTIAL) / NOT SUPPORTED; content claims that need "
             "real encodes, real networks or people OUT OF SCOPE. p90 over the shifted runs of a configuration "
             "[bootstrap 95% CI]. Data: <code>runs.parquet</code>, <code>segments.parquet</code>, "
             "<code>claims.json</code>, <code>content/</code> (the stand-in Video JSON files).</p>"]
    parts.append(common.failures_html(meta.get("failures")))
    parts.append(common.claims_table_html(claims) + "<h2>Figures</h2>")
    parts += common.figures_html(os.path.join(out_dir, "figures"), (
            ("p90", fig_p90(df), "Figs. 6.9/6.21 form: p90 bufRatio (%) over the shifted runs vs buffer size "
             "(segments, + 1 in flight), per trace and stand-in, per arm"),
            ("ssim_ecdf", fig_ssim_ecdf(df, sdf), "Figs. 6.10/6.14 form: ECDF of segment SSIM (all segments of "
             "all runs, all buffers), per trace"),
            ("skipped", fig_skipped(df), "Fig. 6.15 form: % of data skipped by VOXEL (bytes not fetched / full "
             "size of the chosen rung) vs buffer size"),
            ("synth", fig_synth(df, sdf), "Fig. 6.17 form: segment SSIM on the synthetic traces (BBB stand-in, "
             "7-segment buffer)"),
            ("ablation", fig_ablation(df), "Fig. 6.16 form: mean bufRatio over the Norway 3G traces (BBB "
             "stand-in): BOLA, BOLA-SSIM, VOXEL")))
    parts.append(content_html(meta))
    parts.append("<h2>Setup</h2><p>Dumbbell, one video client from its own server host; downstream rate from VOXEL's "
                 "per-second traces (or the Norway 3G traces with their latency dropped), shifted circularly by i x d / n "
                 "s for run i of n; base RTT 30 ms; 32-packet drop-tail (pfifo) queue (750 for V35); upstream 100 "
                 "Mbit/s; Cubic. Buffer N segments = buffer_max (N + 1) x 4 s. Arms (python/qoelab/reproduce/voxel.py "
                 "ARMS): VOXEL = abrstar (partial, keep-partial) over QUIC* (partial reliability, hole filling, optional "
                 "ranges, 70 ms safety); BOLA = abrstar with the log utility and the release's bola abandonment (full "
                 "segments) over reliable QUIC; BETA-like = beta over reliable QUIC; BOLA-SSIM = abrstar without keep-partial over reliable QUIC; VOXEL rel = VOXEL with every "
                 "transfer reliable; X/QUIC* = the same ABR in Q* mode. bufRatio excludes startup (runs.parquet also "
                 "has it with startup). See docs/reproductions/voxel.md for the deviations.</p></body></html>")
    return common.write_html(out_dir, parts, meta)
