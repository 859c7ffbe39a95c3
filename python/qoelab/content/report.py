"""Corpus statistics and the quality-curve plot (docs/img/corpus-vmaf.png)."""

from __future__ import annotations

import os

from qoelab.content import corpus


def rate_quality(video: dict, metric: str = "vmaf") -> tuple[list[float], list[float]]:
    """(average measured bit/s per rung, mean quality per rung) of one video."""
    n = len(video["sizes"])
    durs = [video["segment_duration"]] * n
    if video.get("last_segment_duration"):
        durs[-1] = video["last_segment_duration"]
    total_s = sum(durs) / 1e9
    rates = [sum(row[r] for row in video["sizes"]) * 8 / total_s for r in range(len(video["bitrates_bps"]))]
    t = (video.get("quality") or {}).get(metric)
    if t is None:   # (a clip without the table was an internal KeyError)
        from qoelab.errors import InputError
        raise InputError(video.get("name"), f"quality.{metric}", f"a {metric} table (the corpus plot's metric)",
                         "none")
    q = [sum(row[r] for row in t) / n for r in range(len(video["bitrates_bps"]))]
    return rates, q


def spread(root: str | None = None, metric: str = "vmaf", at_bps: int = 1_000_000) -> dict:
    """Mean quality of every clip at the rung whose nominal bitrate is closest to ``at_bps``."""
    out = {}
    for name in corpus.list_videos(root):
        v = corpus.load_video(os.path.join(root or corpus.corpus_dir(), f"{name}.json"))
        i = min(range(len(v["bitrates_bps"])), key=lambda r: abs(v["bitrates_bps"][r] - at_bps))
        _, q = rate_quality(v, metric)
        out[name] = (v["bitrates_bps"][i], q[i])
    vals = [q for _, q in out.values()]
    return {"per_clip": out, "min": min(vals), "max": max(vals), "spread": max(vals) - min(vals)}


def genre_spread(root: str | None = None, metric: str = "vmaf", at_bps: int = 1_000_000,
                 top_below: float = 95.0) -> dict:
    """Issue 9's corpus criteria: the p20-p80 span of the clips' mean ``metric`` at the rung nearest
    ``at_bps`` (linear-interpolated percentiles), and the fraction of clips whose top rung stays below
    ``top_below``."""
    import numpy as np

    sp = spread(root, metric, at_bps)
    vals = [q for _, q in sp["per_clip"].values()]
    tops = {}
    for name in corpus.list_videos(root):
        v = corpus.load_video(os.path.join(root or corpus.corpus_dir(), f"{name}.json"))
        tops[name] = rate_quality(v, metric)[1][-1]
    p20, p80 = (float(x) for x in np.percentile(vals, [20, 80]))
    below = [n for n, q in tops.items() if q < top_below]
    return {**sp, "p20": p20, "p80": p80, "p80_p20_at_1mbit": p80 - p20, "top": tops,
            "below_95_top": below, "frac_below_95_top": len(below) / len(tops) if tops else float("nan")}


def plot(out_png: str, root: str | None = None) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = corpus.list_videos(root)
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    cmap = plt.get_cmap("tab20")
    for k, name in enumerate(names):
        v = corpus.load_video(os.path.join(root or corpus.corpus_dir(), f"{name}.json"))
        nominal = [b / 1e6 for b in v["bitrates_bps"]]
        for ax, m in zip(axes, ("vmaf", "ssim", "psnr")):
            _, q = rate_quality(v, m)
            ax.plot(nominal, q, marker="o", ms=3, color=cmap(k % 20), label=name)
    sp = genre_spread(root)
    at = next(iter(sp["per_clip"].values()))[0] / 1e6
    for ax, m, lab in zip(axes, ("vmaf", "ssim", "psnr"), ("VMAF (mean of segments)", "SSIM (luma)", "PSNR (luma, dB)")):
        ax.set_xscale("log")
        ticks = [b / 1e6 for b in corpus.load_video(os.path.join(root or corpus.corpus_dir(), f"{names[0]}.json"))["bitrates_bps"]]
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks], rotation=45, fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("nominal bitrate (Mbit/s)")
        ax.set_ylabel(lab)
        ax.grid(True, which="both", alpha=0.3)
        ax.axvline(at, color="grey", ls="--", lw=0.8)
    axes[0].set_title(f"VMAF at {at:g} Mbit/s: range {sp['spread']:.1f}, p20-p80 {sp['p80_p20_at_1mbit']:.1f} points",
                      fontsize=10)
    axes[0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    import io

    from qoelab import outdir
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    outdir.write_text(out_png, buf.getvalue())
    plt.close(fig)
    return sp


def markdown_table(root: str | None = None, metric: str = "vmaf") -> str:
    """Mean ``metric`` per rung of every clip, with the measured average bitrates (for docs/corpus.md)."""
    names = corpus.list_videos(root)
    rows = []
    head = None
    for name in names:
        v = corpus.load_video(os.path.join(root or corpus.corpus_dir(), f"{name}.json"))
        rates, q = rate_quality(v, metric)
        if head is None:
            head = "| clip | " + " | ".join(f"{b / 1e6:.2f}" for b in v["bitrates_bps"]) + " | measured kbit/s (lowest–highest rung) |"
            rows.append(head)
            rows.append("|---" * (len(v["bitrates_bps"]) + 2) + "|")
        rows.append(f"| {name} | " + " | ".join(f"{x:.1f}" if metric != "ssim" else f"{x:.4f}" for x in q)
                    + f" | {rates[0] / 1e3:.0f}–{rates[-1] / 1e3:.0f} |")
    return "\n".join(rows)
