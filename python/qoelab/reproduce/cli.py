"""``qoelab reproduce ...``: re-run published experiments and check their claims.

The main CLI wires it in with ``add_parser(subparsers)``; the subcommand sets ``args.func``, which
returns the exit code (0: done, every run succeeded; 1: some runs failed, the report lists them).
Bad arguments raise :class:`qoelab.errors.InputError` or go through argparse: one line, exit 2.
Stand-alone: ``python -m qoelab.reproduce.cli livi --quick``.
"""

from __future__ import annotations

import sys

from qoelab.cliutil import EXIT_INPUT, Parser, max_workers, worker_count
from qoelab.errors import InputError


_jobs = worker_count


def _run_reproduction(name: str, args) -> int:
    """Run reproduction ``name`` (module qoelab.reproduce.<name>), print its verdicts and the report's
    path; exit 1 if a run failed or the report could not be written."""
    import importlib
    mod = importlib.import_module(f"qoelab.reproduce.{name}")
    if not args.out:
        raise InputError(None, "--out", "a directory", repr(args.out))

    def log(msg):
        print(msg, file=sys.stderr, flush=True)
    kw = {"tcp_only": True} if getattr(args, "tcp_only", False) else {}
    if getattr(args, "corpus", None):
        kw["corpus_mode"] = args.corpus
    meta = mod.reproduce(args.out, quick=args.quick, jobs=args.jobs or 0, log=log, **kw)
    extra = f" + {meta['opt_runs']} fixed-rate runs" if meta.get("opt_runs") else ""
    what = "page loads" if name == "socket_intents" else "runs"   # (its items are page loads)
    print(f"{name.replace('_', '-')} ({meta['grid']} grid): {meta['runs']} {what}{extra}, {meta['failed']} failed, "
          f"{meta['wall_s_total']:.1f} s wall")
    for c in meta["claims"]:
        print(f"  {c['id']:<4} {c.get('verdict_label', c['verdict']):<24} {c.get('ours', '')[:150]}")
    if meta.get("report_error"):
        print(f"report generation failed: {meta['report_error']}", file=sys.stderr)
    print(f"report: {meta['out_dir']}/report.html")
    return 1 if meta["failed"] or meta.get("report_error") else 0


def _cmd_livi(args) -> int:
    return _run_reproduction("livi", args)


def _cmd_chunklets(args) -> int:
    return _run_reproduction("chunklets", args)


def _cmd_sprint(args) -> int:
    return _run_reproduction("sprint", args)


def _add_chunklets(rsub) -> None:
    ck = rsub.add_parser(
        "chunklets", help="Chunklets (Kua & Armitage): N parallel byte-range requests over FIFO/PIE/FQ-CoDel",
        description="Kua & Armitage, 'Optimising DASH over AQM-enabled Gateways Using Intra-chunk Parallel "
                    "Retrieval (Chunklets)', ICCCN 2017. Runs experiments E0-E9 of the claims file (12/1 and 25/5 "
                    "Mbit/s, FIFO 100 / PIE / FQ-CoDel 1000, 4 CUBIC bulk flows down or up, N = 1..10 chunklets) "
                    "in parallel and writes DIR/report.html (SA/RR box plots vs N, claims C1-C13 with verdicts), "
                    "claims.json, meta.json, runs/chunks/cells/bins.parquet. See docs/reproductions/chunklets.md.")
    ck.add_argument("--quick", action="store_true",
                    help="a subset (N = 1, 4, 10; every experiment; 1 seed x 90 s; 49 runs) that finishes in under a minute")
    ck.add_argument("--out", default="results/chunklets", metavar="DIR",
                    help="output directory (default results/chunklets)")
    ck.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                    help=f"worker processes running simulations in parallel, 1-{max_workers()} (default: number of CPUs)")
    ck.set_defaults(func=_cmd_chunklets)


def _add_sprint(rsub) -> None:
    sp = rsub.add_parser(
        "sprint", help="Sprint / Sprint-x vs DASH against bulk flows (Arye, Sen, Freedman)",
        description="Arye, Sen, Freedman, 'Poor Video Streaming Performance Explained (and Fixed)'. Runs the "
                    "E4 grid (3-25 Mbit/s x 64-1536 KB x DASH/Sprint/Sprint-x vs 1 bulk flow), Table I pairs, "
                    "4 bulk flows, the alpha sweep (Fig. 11), IWS traces, fixed-rung and small-queue runs and a "
                    "long Sprint-x run; writes DIR/report.html, runs.parquet, minutes.parquet, claims.json "
                    "(S1-S20), meta.json, figures/. See docs/reproductions/sprint.md.")
    sp.add_argument("--quick", action="store_true", help="a small subset (1 seed, short runs), under a minute")
    sp.add_argument("--out", default="results/sprint", metavar="DIR", help="output directory (default results/sprint)")
    sp.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                    help=f"worker processes running simulations in parallel, 1-{max_workers()} (default: number of CPUs)")
    sp.set_defaults(func=_cmd_sprint)


def _cmd_minerva(args) -> int:
    return _run_reproduction("minerva", args)


def _cmd_socket_intents(args) -> int:
    return _run_reproduction("socket_intents", args)


def _add_socket_intents(rsub) -> None:
    si = rsub.add_parser(
        "socket-intents", help="Socket Intents (Palmer): multi-access page loads, EAF / MPTCP policies",
        description="Palmer, 'Socket Intents & VOXEL' (dissertation 2022), ch. 3. Runs the full factorial of Table "
                    "3.1 (7 policies + the EAF estimator ablation x 384 interface scenarios) on 1,100 synthetic "
                    "pages (Alexa-100-like and Alexa-1000-like, written as HAR files) in the flow-level page-load "
                    "model; writes DIR/report.html (speedup ECDFs of Figs. 3.4-3.6, factor plots of Fig. 3.7, "
                    "claims P1-P21 with verdicts), runs.parquet, pages.parquet, scenarios.parquet, claims.json, "
                    "meta.json, workload.json, hars/. See docs/reproductions/socket-intents.md.")
    si.add_argument("--quick", action="store_true", help="24 pages x 384 scenarios x every policy, under a minute")
    si.add_argument("--out", default="results/socket-intents", metavar="DIR",
                    help="output directory (default results/socket-intents)")
    si.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                    help=f"worker processes running page loads in parallel, 1-{max_workers()} (default: number of CPUs)")
    si.set_defaults(func=_cmd_socket_intents)


def _add_minerva(rsub) -> None:
    mn = rsub.add_parser(
        "minerva", help="Minerva (Nathan et al.): QoE-fair transport vs Cubic and BBR",
        description="Nathan et al., 'End-to-End Transport for Video QoE Fairness', SIGCOMM 2019. Runs the §8.2 "
                    "benchmark (4 videos x 4/10/16 Mbit/s x Cubic/PIE, Minerva/PIE, Minerva/droptail, BBR/droptail, "
                    "Minerva-PF, and a fixed-rate optimum from trace-mode runs), §8.3 Poisson arrivals and buffer "
                    "pooling, §8.4 Minerva vs Cubic groups, web cross traffic, §8.6 rate bounds, App. B convergence, "
                    "the Fig. 2 join and §8.7 VMAF + PSNR providers on the 16 genre clips of the hd corpus at the "
                    "paper's rates (or, --corpus synthetic, 8 synthetic curves at the paper's rates x 0.405); writes "
                    "DIR/report.html, runs.parquet, opt.parquet, claims.json (M1-M22), meta.json, figures/. See "
                    "docs/reproductions/minerva.md.")
    mn.add_argument("--quick", action="store_true", help="every family at its smallest (1 seed, short runs), under a minute")
    mn.add_argument("--corpus", choices=["hd", "synthetic"], default="hd",
                    help="videos: hd = the 16 generated genre clips of the hd corpus (1080p ladder 0.2-6 Mbit/s, "
                         "measured VMAF/PSNR) at the paper's own link rates (default); synthetic = 8 synthetic curves "
                         "on a 0.15-2.35 Mbit/s ladder at the paper's rates x 0.405")
    mn.add_argument("--out", default="results/minerva", metavar="DIR",
                    help="output directory (default results/minerva)")
    mn.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                    help=f"worker processes running simulations in parallel, 1-{max_workers()} (default: number of CPUs)")
    mn.set_defaults(func=_cmd_minerva)


def _cmd_voxel(args) -> int:
    return _run_reproduction("voxel", args)


def _add_voxel(rsub) -> None:
    vx = rsub.add_parser(
        "voxel", help="VOXEL (Palmer): frame-level partial segments, QUIC*, ABR* vs BOLA/BETA-like over cellular traces",
        description="Palmer, dissertation 2022, ch. 4-6 (VOXEL, CoNEXT'21). Writes MODELLED stand-ins of the four films "
                    "(13-rung Table 6.2 ladder, VOXEL tables) and runs VOXEL, BOLA, BETA-like, BOLA-SSIM, VOXEL rel and "
                    "BOLA/MPC over QUIC and QUIC* on VOXEL's traces (T-Mobile, Verizon, AT&T, FCC, 3G; shifted runs), the "
                    "Norway 3G ablation, a 750-packet queue, web cross traffic and the synthetic traces of Fig. 6.17; "
                    "writes DIR/report.html (p90 bufRatio per buffer and arm, SSIM ECDFs, % data skipped, claims V1-V43 "
                    "with verdicts), runs.parquet, segments.parquet, claims.json, meta.json, content/. Needs the shared "
                    "data folder (../shared/data or $QOELAB_DATA). See docs/reproductions/voxel.md.")
    vx.add_argument("--quick", action="store_true",
                    help="BBB stand-in, 120 s of media, 4 traces x 1/7 segments x VOXEL/BOLA/BETA-like, 1 shift; under a minute")
    vx.add_argument("--out", default="results/voxel", metavar="DIR", help="output directory (default results/voxel)")
    vx.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                    help=f"worker processes running simulations in parallel, 1-{max_workers()} (default: number of CPUs)")
    vx.add_argument("--tcp-only", action="store_true",
                    help="debug: every arm over TCP with the sequential data plane (no QUIC*); no network claim is graded")
    vx.set_defaults(func=_cmd_voxel)


def add_parser(subparsers) -> None:
    """Register ``reproduce`` with the subcommand ``livi``."""
    rp = subparsers.add_parser("reproduce", help="re-run a published experiment and check its claims",
                               description="Re-run a published experiment in the simulator and write an HTML report "
                                           "with its figures and the paper's claims next to ours, with a verdict "
                                           "per claim.")
    rsub = rp.add_subparsers(dest="reproduce_cmd", metavar="{livi,sprint,chunklets,minerva,socket-intents,voxel}")
    rsub.required = True
    lv = rsub.add_parser(
        "livi", help="HAS over AQM testbed (Livi et al.): BBA2/BBA3/Classic1/Classic2 over droptail/ARED/CoDel",
        description="Livi, Sassatelli, Urvoy-Keller, 'HTTP Adaptive Streaming and Access Router Management'. "
                    "Runs BBA2, BBA3, Classic1, Classic2 x droptail/ARED/CoDel x buffer {6, 1, 0.5, 0.25} BDP "
                    "(testbed rule: 400/67/33/17 packets) x 1-3 clients (ARED: 1), 80 ms RTT, per-client bandwidth "
                    "0.6-3 Mbit/s in 9 steps and the paper's variable profile (4, 2.8, 1.5, 1, 0.6, 4 Mbit/s per "
                    "client, 100 s each): 1360 runs of 700 s, in parallel; writes DIR/report.html "
                    "(figures ARB, INS, LU, RTTi, loss phases, RBR, QU; claims with verdicts), runs.parquet, "
                    "clients.parquet, claims.json, meta.json, figures/, sweep/ (the resumable sweep store). DIR is "
                    "replaced atomically if it holds a "
                    "previous livi reproduction. See docs/reproductions/livi.md.")
    lv.add_argument("--quick", action="store_true",
                    help="a subset (44 runs: droptail/CoDel, 6 and 0.25 BDP, 1-2 clients, static "
                         "bandwidths 1.2-2.4 Mbit/s) that finishes in under a minute on 2 cores")
    lv.add_argument("--out", default="results/livi", metavar="DIR", help="output directory (default results/livi)")
    lv.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                    help=f"worker processes running simulations in parallel, 1-{max_workers()} (default: number of CPUs)")
    lv.set_defaults(func=_cmd_livi)
    _add_sprint(rsub)
    _add_chunklets(rsub)
    _add_minerva(rsub)
    _add_socket_intents(rsub)
    _add_voxel(rsub)


def main(argv=None) -> int:
    p = Parser(prog="qoelab")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    add_parser(sub)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except InputError as e:
        print(f"qoelab {args.cmd}: error: {e}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main(["reproduce", *sys.argv[1:]]))
