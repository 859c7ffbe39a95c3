"""``qoelab video ...``: the content pipeline's command group.

The main CLI wires it in with ``content_cli.add_parser(subparsers)``; every subcommand sets ``args.func``,
which returns the exit code. Bad input raises :class:`qoelab.errors.InputError` (one line, exit 2).
Stand-alone: ``python -m qoelab.content.cli video ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from qoelab.cliutil import float_in, int_at_least
from qoelab.errors import InputError


def _segment(s: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*", s)
    v = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1) if m else 0.0
    if not 0 < v <= 600:
        raise argparse.ArgumentTypeError(f"expected a duration like 4s or 2000ms, at most 600s, found {s!r}")
    return v


def _size(s: str) -> tuple[int, int]:
    from qoelab.content.ladder import MAX_SIDE, MIN_SIDE
    m = re.fullmatch(r"(\d+)x(\d+)", s.strip())
    if not m or not all(MIN_SIDE <= int(g) <= MAX_SIDE for g in m.groups()):
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT from {MIN_SIDE} to {MAX_SIDE} pixels a side, "
                                         f"found {s[:60]!r}")
    return int(m.group(1)) // 2 * 2, int(m.group(2)) // 2 * 2


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int_at_least(0, "a number of processes", 256), default=0,
                   help="rungs processed in parallel (default 0: number of CPUs)")
    p.add_argument("--cache", default=None,
                   help="cache directory of finished steps (default: $QOELAB_CACHE or ~/.cache/qoelab/content)")
    p.add_argument("--ffmpeg", default=None,
                   help="ffmpeg executable (default: $QOELAB_FFMPEG, else the imageio-ffmpeg wheel's, else PATH)")
    p.add_argument("--nice", type=int_at_least(-20, "a niceness", 19), default=0,
                   help="run ffmpeg under nice -n N, -20..19 (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def add_parser(subparsers) -> None:
    """Register ``video`` with subcommands prepare, voxel, corpus, export, import."""
    from qoelab.content import sources

    video = subparsers.add_parser("video", help="content pipeline: encode, package, measure; the corpus",
                                  description="Content pipeline: real encodes (libx264), DASH packaging, "
                                              "per-segment VMAF/SSIM/PSNR, frame tables, VOXEL frame importance, the quality corpus.")
    vsub = video.add_subparsers(dest="video_cmd", metavar="{prepare,voxel,corpus,export,import}")
    vsub.required = True

    pr = vsub.add_parser(
        "prepare", help="encode a ladder, package DASH, measure every segment, write frame tables",
        description="Encode SOURCE into a bitrate ladder (libx264, capped VBR with peak 2x average, one IDR per "
                    "segment, no B frames, one reference frame), package it as DASH (one fragmented MP4 per "
                    "rung, byte-ranged MPD), and measure every segment of every rung against the reference "
                    "(SOURCE scaled to the display resolution). Writes DIR/manifest.mpd, DIR/rungNN_*.mp4, "
                    "DIR/table.json (the video model + metadata) and DIR/frames.parquet.",
        epilog="Built-in generated sources: " + ", ".join(f"gen:{n}" for n in sources.SOURCES))
    pr.add_argument("source", metavar="SOURCE", help="a video file, or gen:<name> for a built-in generated source")
    pr.add_argument("--out", required=True, metavar="DIR",
                    help="output directory, written atomically; an earlier prepare's output there is replaced")
    pr.add_argument("--force", action="store_true", help="replace DIR even if it is not an earlier prepare's output")
    pr.add_argument("--ladder", default="table6.2",
                    help="table6.2 (dissertation Table 6.2 up to 1080p, 11 rungs; default), table6.2:HEIGHT, "
                         "corpus (the corpus' 8-rung ladder capped at 360p), hd (the hd corpus' 8 rungs, 0.2-6 Mbit/s, 240p-1080p), or WxH@RATE,... (RATE in bit/s, k/M suffix)")
    pr.add_argument("--segment", type=_segment, default=4.0, metavar="DUR", help="segment duration, e.g. 4s (default) or 2000ms")
    pr.add_argument("--metrics", default="vmaf,ssim,psnr", help="comma list of vmaf, ssim, psnr (default: all)")
    pr.add_argument("--display", type=_size, default=None, metavar="WxH",
                    help="reference/display resolution every rung is measured at (default: the top rung's)")
    pr.add_argument("--fps", type=int_at_least(1, "a frame rate", 240), default=24,
                    help="frame rate of reference and encodes, 1..240 (default 24)")
    pr.add_argument("--duration", type=float_in(0, 86400, "seconds"), default=None, metavar="SECONDS",
                    help="use only the first SECONDS of SOURCE (default: all of a file; 60 s for gen: sources)")
    pr.add_argument("--vmaf-subsample", type=int_at_least(1, "an integer", 10000), default=1, metavar="N",
                    help="compute VMAF on every N-th frame only (default 1 = every frame); SSIM/PSNR use every frame")
    pr.add_argument("--preset", default="medium", metavar="PRESET",
                    choices=["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
                             "veryslow", "placebo"], help="x264 preset, ultrafast .. placebo (default medium)")
    pr.add_argument("--name", default=None, help="video name in the table (default: from SOURCE)")
    pr.add_argument("--bframes", type=int, default=0, metavar="N",
                    help="N B frames between anchors, no pyramid (VOXEL's droppable frames; default 0: I/P only)")
    _common(pr)
    pr.set_defaults(func=cmd_prepare)

    vx = vsub.add_parser(
        "voxel", help="VOXEL: frame importance and per-prefix SSIM of a prepared video; the extended MPD",
        description="For every segment of every rung of DIR (the output of `qoelab video prepare --bframes N "
                    "--metrics ssim,...`): the frame graph from the decoder, the four drop orders, each order's "
                    "prefix SSIM by decoding the segment with frames dropped, the order needing the fewest bytes to "
                    "reach the rung below's pristine SSIM, and the ssims levels; writes DIR/manifest-voxel.mpd "
                    "(Listing 6.1's reliable, unreliable, reliableSize, ssims; Representation@avgSSIM) and "
                    "DIR/voxel.json. See docs/content.md.")
    vx.add_argument("dir", metavar="DIR")
    vx.add_argument("--prefixes", type=int, default=16, metavar="K",
                    help="prefix lengths decoded per order (evenly spread, plus the whole segment; default 16)")
    vx.add_argument("--variant", choices=("branch", "literal"), default="branch",
                    help="Algorithm 1's cap: branch-local (default) or the printed pseudo-code")
    vx.set_defaults(func=cmd_voxel)

    co = vsub.add_parser("corpus", help="list, regenerate, verify or plot the committed quality corpus",
                         description="The committed corpora (shipped in the package): quality tables of built-in generated clips. "
                                     "Two sets: sd (python/qoelab/corpus/, 12 clips, 360p display, default) and hd "
                                     "(python/qoelab/corpus-hd/, 16 genre clips, 1080p display, ladder 0.2-6 Mbit/s); "
                                     "choose with --set. See docs/corpus.md.")
    csub = co.add_subparsers(dest="corpus_cmd", metavar="{list,regenerate,verify,plot}")
    csub.required = True
    cl = csub.add_parser("list", help="list the corpus clips with their VMAF at about 1 Mbit/s")
    cl.add_argument("--corpus", default=None, metavar="DIR", help="corpus directory (default: the set's package directory qoelab/corpus or qoelab/corpus-hd; $QOELAB_CORPUS, $QOELAB_CORPUS_HD)")
    cl.add_argument("--set", dest="cset", default="sd", choices=["sd", "hd"],
                    help="corpus set: sd (360p, 12 clips, default) or hd (1080p ladder 0.2-6 Mbit/s, 16 genre clips)")
    cl.set_defaults(func=cmd_corpus_list)
    cr = csub.add_parser("regenerate", help="re-run the pipeline for all (or some) clips and rewrite their tables",
                         description="Re-run the pipeline with the corpus parameters (corpus/manifest.json) and "
                                     "rewrite corpus/<clip>.json, corpus/frames/<clip>.parquet and the manifest.")
    cr.add_argument("--clip", action="append", default=None, metavar="NAME", help="only this clip (repeatable)")
    cr.add_argument("--corpus", default=None, metavar="DIR", help="corpus directory (default: the set's package directory qoelab/corpus or qoelab/corpus-hd; $QOELAB_CORPUS, $QOELAB_CORPUS_HD)")
    cr.add_argument("--set", dest="cset", default="sd", choices=["sd", "hd"],
                    help="corpus set: sd (360p, 12 clips, default) or hd (1080p ladder 0.2-6 Mbit/s, 16 genre clips)")
    _common(cr)
    cr.set_defaults(func=cmd_corpus_regenerate)
    cv = csub.add_parser("verify", help="regenerate a clip from scratch and compare with the committed table",
                         description="Regenerate CLIP in a fresh cache and compare sizes and quality with the "
                                     "committed table; exit 1 on any difference.")
    cv.add_argument("--clip", required=True, metavar="NAME", help="corpus clip to verify")
    cv.add_argument("--segments", type=int_at_least(1), default=None, metavar="K",
                    help="quick check: render K+1 segments and compare the first K (default: the whole clip)")
    cv.add_argument("--rungs", default=None, metavar="I,J,...", help="only these rung indices (default: all)")
    cv.add_argument("--corpus", default=None, metavar="DIR", help="corpus directory (default: the set's package directory qoelab/corpus or qoelab/corpus-hd; $QOELAB_CORPUS, $QOELAB_CORPUS_HD)")
    cv.add_argument("--set", dest="cset", default="sd", choices=["sd", "hd"],
                    help="corpus set: sd (360p, 12 clips, default) or hd (1080p ladder 0.2-6 Mbit/s, 16 genre clips)")
    _common(cv)
    cv.set_defaults(func=cmd_corpus_verify)

    cp = csub.add_parser("plot", help="plot the corpus' quality curves (VMAF/SSIM/PSNR vs bitrate) to a PNG",
                         description="Plot mean VMAF, SSIM and PSNR per rung of every clip and print the VMAF "
                                     "spread at the rung nearest 1 Mbit/s.")
    cp.add_argument("--out", default=None, metavar="PNG", help="image to write (default docs/img/corpus-vmaf.png, hd: docs/img/corpus-hd-vmaf.png)")
    cp.add_argument("--corpus", default=None, metavar="DIR", help="corpus directory (default: the set's package directory qoelab/corpus or qoelab/corpus-hd; $QOELAB_CORPUS, $QOELAB_CORPUS_HD)")
    cp.add_argument("--set", dest="cset", default="sd", choices=["sd", "hd"],
                    help="corpus set: sd (360p, 12 clips, default) or hd (1080p ladder 0.2-6 Mbit/s, 16 genre clips)")
    cp.set_defaults(func=cmd_corpus_plot)

    ex = vsub.add_parser("export", help="export a table to Sabre movie JSON or Minerva .dat/.vmaf",
                         description="Export TABLE (a table.json, a corpus clip name, a Video JSON or Sabre "
                                     "movie, a DASH MPD, an HLS playlist or a Pensieve size folder: a file video "
                                     "a scenario's `video` takes) to another tool's format.")
    ex.add_argument("table", metavar="TABLE", help="table.json, corpus clip name, video file or folder")
    ex.add_argument("--format", required=True, choices=["sabre", "minerva"], help="target format")
    ex.add_argument("--out", required=True, metavar="PATH",
                    help="output file (sabre: movie JSON; minerva: PATH.dat plus PATH.vmaf if VMAF is present)")
    ex.set_defaults(func=cmd_export)

    im = vsub.add_parser("import", help="import a Sabre movie JSON or Minerva .dat/.vmaf into a table",
                         description="Read another tool's video description and write a qoelab table "
                                     "(format qoelab-content/1, no frame tables).")
    im.add_argument("file", metavar="FILE", help="Sabre movie JSON, or Minerva .dat (its .vmaf is read if present)")
    im.add_argument("--format", required=True, choices=["sabre", "minerva"], help="input format")
    im.add_argument("--out", required=True, metavar="TABLE", help="table JSON to write")
    im.add_argument("--name", default=None, help="video name (default: from FILE)")
    im.set_defaults(func=cmd_import)


def cmd_prepare(a) -> int:
    from qoelab.content import ladder as lad
    from qoelab.content import measure as meas
    from qoelab.content import pipeline as pl

    from qoelab import outdir

    # refused before encoding: a file in the way, or a non-empty directory that is not an earlier
    # prepare's output (without --force)
    outdir.check(a.out, force=a.force, replaceable=pl.is_prepare_output)
    rungs = lad.parse(a.ladder)
    w, h = a.display or (max(r.width for r in rungs), max(r.height for r in rungs))
    p = pl.Params(width=w, height=h, fps=a.fps, segment_s=a.segment, duration_s=a.duration, ladder=rungs,
                  metrics=meas.parse_metrics(a.metrics), vmaf_subsample=a.vmaf_subsample, preset=a.preset,
                  jobs=a.jobs, nice=a.nice, ffmpeg=a.ffmpeg, cache=a.cache, bframes=a.bframes)
    if not 0 <= a.bframes <= 16:
        raise InputError(None, "--bframes", "an integer in 0..16", str(a.bframes))
    if p.seg_frames < 1:   # (a ZeroDivisionError in the segment count)
        raise InputError(None, "--segment", f"at least one frame per segment (1/{a.fps:g} s at --fps {a.fps:g})",
                         f"{a.segment * 1000:g} ms")
    doc = pl.prepare(a.source, a.out, p, name=a.name, progress=not a.no_progress)
    v, m = doc["video"], doc["meta"]
    print(f"{a.out}: {len(v['sizes'])} segments x {len(v['bitrates_bps'])} rungs, "
          f"{m['frames']} frames at {m['display'][0]}x{m['display'][1]}, {m['wall_seconds']:.1f} s")
    for step, t in m["timing"].items():
        print(f"  {step:9s} {t['frames']:7d} frames {t['seconds']:8.1f} s  "
              f"{(t['fps'] or 0):7.1f} frames/s{'  (cached)' if t['cached'] else ''}")
    return 0


def cmd_voxel(a) -> int:
    from qoelab.content import voxel_prepare
    if not 2 <= a.prefixes <= 1000:
        raise InputError(None, "--prefixes", "an integer in 2..1000", str(a.prefixes))
    res = voxel_prepare.annotate(a.dir, prefixes=a.prefixes, variant=a.variant,
                                 log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"{a.dir}: {res['segments']} segments x {res['rungs']} rungs annotated in {res['wall_s']:.1f} s; orders chosen: "
          + ", ".join(f"{k} {v}" for k, v in sorted(res["orders"].items())) + f"; {res['mpd']}")
    return 0


def _corpus_root(a) -> str:
    """--corpus (or the set's package directory), refused unless it is a directory with clips in it."""
    from qoelab.content import corpus
    root = a.corpus or corpus.corpus_dir(a.cset)
    if not os.path.isdir(root):
        raise InputError(None, "--corpus", "a corpus directory", repr(root))
    try:
        clips = corpus.list_videos(root)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(os.path.join(root, "manifest.json"), None, "a corpus manifest", type(e).__name__) from None
    if not clips:
        raise InputError(root, None, message="holds no corpus clips (manifest.json or <clip>.json files)")
    return root


def cmd_corpus_list(a) -> int:
    from qoelab.content import corpus

    root = _corpus_root(a)
    for name in corpus.list_videos(root):
        v = corpus.load_video(os.path.join(root, f"{name}.json"))
        vm = v["quality"].get("vmaf")
        i = min(range(len(v["bitrates_bps"])), key=lambda r: abs(v["bitrates_bps"][r] - 1_000_000))
        q = sum(row[i] for row in vm) / len(vm) if vm else float("nan")
        print(f"{name:16s} {len(v['sizes']):3d} segments  {len(v['bitrates_bps'])} rungs  "
              f"VMAF@{v['bitrates_bps'][i] / 1e6:.2f}Mbit/s {q:6.2f}")
    return 0


def cmd_corpus_regenerate(a) -> int:
    from qoelab.content import corpus

    r = corpus.regenerate(a.corpus and _corpus_root(a), a.clip, a.jobs, a.nice, a.ffmpeg, a.cache, not a.no_progress, a.cset)
    print(f"regenerated {len(r['clips'])} clips in {r['wall_seconds']:.0f} s")
    return 0


def cmd_corpus_verify(a) -> int:
    from qoelab.content import corpus

    rungs = None
    if a.rungs:
        try:
            rungs = [int(x) for x in a.rungs.split(",")]
        except ValueError:
            raise InputError(None, "--rungs", "comma list of rung indices", a.rungs) from None
    diffs = corpus.verify(a.clip, _corpus_root(a), a.jobs, a.nice, a.ffmpeg, a.cache,
                          not a.no_progress, a.segments, rungs)
    if diffs:
        for d in diffs:
            print(f"{a.clip}: {d}")
        return 1
    print(f"{a.clip}: identical to the committed table")
    return 0


def cmd_corpus_plot(a) -> int:
    from qoelab.content import report

    from qoelab.content import corpus

    from qoelab import outdir
    out = a.out if a.out is not None else \
        ("docs/img/corpus-vmaf.png" if a.cset == "sd" else f"docs/img/corpus-{a.cset}-vmaf.png")
    outdir.check_file(out)
    if not out.lower().endswith(".png"):
        raise InputError(None, "--out", "a PNG file name ending in .png", repr(out[-60:]))
    sp = report.plot(out, _corpus_root(a))
    for name, (b, q) in sp["per_clip"].items():
        print(f"{name:16s} VMAF {q:6.2f} at {b / 1e6:.2f} Mbit/s")
    print(f"spread {sp['spread']:.2f} VMAF points (min {sp['min']:.2f}, max {sp['max']:.2f}); plot: {out}")
    return 0


def cmd_export(a) -> int:
    from qoelab import outdir
    from qoelab.content import formats

    outdir.check_file(a.out)
    v = formats.load_for_export(a.table)  # the table's rules checked (a hand-edited table too)
    if a.format == "sabre":
        formats.export_sabre(v, a.out, source=a.table)
        print(a.out)
    else:
        print(" ".join(formats.export_minerva(v, a.out, source=a.table)))
    return 0


def cmd_import(a) -> int:
    from qoelab import outdir
    from qoelab.content import formats
    from qoelab.content.corpus import TABLE_FORMAT

    outdir.check_file(a.out)
    v = formats.import_sabre(a.file, a.name) if a.format == "sabre" else formats.import_minerva(a.file, a.name)
    doc = {"format": TABLE_FORMAT, "video": v, "meta": {"imported_from": os.path.abspath(a.file),
                                                               "import_format": a.format}}
    formats._atomic_write(a.out, json.dumps(doc, indent=1) + "\n")
    print(a.out)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="qoelab")
    sub = ap.add_subparsers(dest="cmd")
    sub.required = True
    add_parser(sub)
    a = ap.parse_args(argv)
    try:
        return a.func(a)
    except InputError as e:
        print(f"qoelab: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
