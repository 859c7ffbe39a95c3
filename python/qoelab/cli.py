"""The qoelab command line.

Bad input (scenario, trace, manifest, CLI argument) prints one line naming the file, key or line
and what was expected, and exits with code 2; nothing half-written is left behind.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import threading

from qoelab.cliutil import EXIT_INPUT, EXIT_SIGINT
from qoelab.cliutil import Parser as _Parser
from qoelab.cliutil import int_at_least
from qoelab.errors import InputError, Terminated, is_interrupt


def _cmd_run(args):
    if args.real:
        from qoelab import realrun
        return realrun.main(args)
    from qoelab import outdir, results
    outdir.check(args.out, force=args.force)     # refuse before simulating, not after
    res = results.run(args.scenario, seed=args.seed, progress=True)
    out = res.write(args.out, force=args.force)
    if args.json:
        print(json.dumps(res.summary, indent=2))
    else:
        _print_summary(res, out)
    return 0


def _print_summary(res, out):
    s, p = res.summary, res.perf
    print(f"scenario {s['scenario']} (seed {s['seed']}), {s['duration_s']:g} s simulated in {p['wall_s']:.3f} s wall "
          f"({p['events']} events, {p['bottleneck_packets_per_s'] or 0:,.0f} bottleneck packets/s)")
    for f in s["flows"][:12]:
        print(f"  flow {f['name']:<20} {f['kind']:<5} goodput {f['goodput_bps'] / 1e6:8.3f} Mbit/s")
    if len(s["flows"]) > 12:
        print(f"  ... {len(s['flows']) - 12} more flows")
    if s.get("jain_index") is not None:
        print(f"  Jain's fairness index over bulk flows: {s['jain_index']:.4f}")
    for pg in s.get("pages", [])[:12]:
        plt = f"{pg['plt_s']:.3f} s" if pg["plt_s"] is not None else "not finished"
        print(f"  page {pg['name']:<20} load time {plt} ({pg['objects_done']}/{pg['objects']} objects, "
              f"{pg['bytes']:,} B, {pg['connections']} connections)")
    def num(x, spec):   # None: not defined for this run (a link with no capacity during it)
        return "n/a" if x is None else format(x, spec)
    for l in s["links"]:
        d = l["queue_delay_ms"]
        print(f"  link {l['name']:<14} {l['aqm']:<9} utilization {num(l['utilization'], '.3f')}  queue delay mean "
              f"{num(d.get('mean', 0), '.2f')} ms p99 {num(d.get('p99', 0), '.2f')} ms  drops {l['dropped_packets']}")
    print(f"results: {out}/ (summary.json, {', '.join(t + '.parquet' for t in res.tables)})")


def _cmd_validate(args):
    from qoelab import scenario
    for path in args.files:
        sc = scenario.load(path, standalone=True)
        n = len(sc.config["flows"])
        nc = len(sc.config.get("clients", []))
        npg = len(sc.config.get("pages", []))
        def count(k, one, many):
            return f"{k} {one if k == 1 else many}"
        pg = count(npg, "page load", "page loads") + ", " if npg else ""
        print(f"{path}: ok ({sc.meta['topology']}, {count(n, 'flow', 'flows')}, "
              f"{count(nc, 'video client', 'video clients')}, {pg}"
              f"{'trace mode' if sc.config.get('network') == 'trace' else count(len(sc.config['links']), 'link', 'links')}, "
              f"{sc.config['duration'] / 1e9:g} s)")
    return 0


def _cmd_list(args):
    from qoelab import _core, scenario
    if args.family == "tcp":
        entries = [{"name": "tcp", "summary": "TCP endpoint options ([flow.tcp] in scenarios)",
                    "reference": "RFC 5681, 6298, 6675, 7323; Linux defaults", "params": scenario._describe_tcp()}]
    else:
        entries = json.loads(_core.describe(args.family))
    if args.json:
        print(json.dumps(entries, indent=2))
        return 0
    for e in entries:
        print(f"{e['name']}: {e['summary']}  [{e['reference']}]")
        for p in e["params"]:
            d = _with_unit(p["default"], p["unit"])
            unit = p["unit"] + (" " + "|".join(p["choices"]) if p.get("choices") else "")
            print(f"    {p['name']:<18} {unit:<16} default {d:<24} {p['doc']}")
    return 0


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


def _with_unit(v, unit: str) -> str:
    """A default as scenarios write it: durations and rates with units (the core's integers are
    nanoseconds and bit/s), booleans in TOML spelling; descriptive defaults unchanged."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if not isinstance(v, (int, float)):
        return str(v)
    if unit == "duration":
        for div, suf in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
            if abs(v) >= div:
                return _num(v / div) + suf
        return _num(v) + "ns"
    if unit == "rate":
        for div, suf in ((1e9, "Gbps"), (1e6, "Mbps"), (1e3, "kbps")):
            if abs(v) >= div:
                return _num(v / div) + suf
        return _num(v) + "bps"
    if unit == "bytes":
        return _num(v) + "B"
    if unit == "packets":
        return _num(v) + "pkts"
    return _num(v) if isinstance(v, float) else str(v)


def _cmd_bench(args):
    if args.sweep is not None:
        if args.instructions:
            raise InputError(None, "--instructions", "the suite's cases (it does not apply to --sweep)", "--sweep")
        if args.case:
            raise InputError(None, "--case", "the suite's cases (it does not apply to --sweep)", "--sweep")
        from qoelab.sweep import bench as sbench
        return sbench.main(args.sweep, json_out=args.json)
    from qoelab import bench
    return bench.main(json_out=args.json, quick=args.quick, only=args.case, instructions=args.instructions)


def _cmd_demo(args):
    from qoelab import demo
    return demo.main(args.out)


def build_parser():
    p = _Parser(prog="qoelab", description="qoelab: a lab for video streaming over shared networks. "
                "Deterministic packet-level simulation of hosts, links, AQMs and TCP; `qoelab link` runs the same "
                "link model and AQMs on real packets (Linux).")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    r = sub.add_parser("run", help="run a scenario and write its results",
                       description="Run SCENARIO (a TOML file, see docs/scenario-format.md). Writes DIR/summary.json, "
                       "DIR/perf.json (wall-clock figures), DIR/config.json (the normalized config), DIR/scenario.toml (a copy of "
                       "SCENARIO), one Parquet file "
                       "per table (docs/tables.md) and DIR/<link>.pcap when [output] pcap names a link.")
    r.add_argument("scenario", metavar="SCENARIO")
    r.add_argument("--out", required=True, metavar="DIR", help="output directory (created; written atomically)")
    r.add_argument("--seed", type=_nonneg_int, default=None, help="override the scenario's seed")
    r.add_argument("--json", action="store_true", help="print summary.json to stdout")
    r.add_argument("--force", action="store_true", help="replace DIR if it exists")
    r.add_argument("--real", action="store_true",
                   help="run on a real network instead of simulating it (Linux; root or a user namespace): the bottleneck emulated on "
                        "real packets between two network namespaces, kernel TCP (bulk, finite, onoff, web flows, "
                        "also upstream), UDP (cbr), `qoelab serve` and the sans-IO player, or dash.js in headless Chromium for clients with player = \"dashjs\" (make "
                        "setup-real); dumbbell scenarios (docs/realnet.md)")
    r.set_defaults(func=_cmd_run)

    v = sub.add_parser("validate", help="check scenario files without running them")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.set_defaults(func=_cmd_validate)

    l = sub.add_parser("list", help="list models with their parameters, defaults and units")
    l.add_argument("family", choices=["aqm", "cc", "abr", "data_plane", "flow_controller", "tcp"])
    l.add_argument("--json", action="store_true", help="machine-readable output")
    l.set_defaults(func=_cmd_list)

    b = sub.add_parser("bench", help="packets/s, events/s and peak memory of a fixed benchmark suite",
                       description="Runs the fixed benchmark suite (docs/benchmarks.md), each case in a process "
                       "of its own, and prints bottleneck packets per wall second, events per second and peak "
                       "RSS per case, after the build, the processor's clock and the load average (figures "
                       "compare only at the same clock and load), and the chunklets case as a fraction of "
                       "the reference case when both ran (also alternated with it in one process, round by round) "
                       "and of the 40-flow bulk case (as many connections, no data plane) when that ran too; "
                       "with --instructions, instruction counts instead. The 1-hour memory case runs only when named: "
                       "--case memory-1G-1h.")
    b.add_argument("--json", action="store_true", help="print the results as JSON")
    b.add_argument("--quick", action="store_true", help="shorter runs (for a smoke check; figures are noisier)")
    b.add_argument("--case", action="append", default=None, help="run only this case (repeatable; memory-1G-1h runs only this way)")
    b.add_argument("--instructions", action="store_true",
                   help="instead of wall time: each case once under valgrind's callgrind, the instructions of "
                        "the core's event loop per bottleneck packet and per event (the same for one build on "
                        "any machine and load; about 100x slower than a plain run, so best with --quick and --case)")
    b.add_argument("--sweep", type=_pos_int, nargs="?", const=10_000, default=None, metavar="N",
                   help="instead: the sweep engine's cost: N short runs (default 10000) on all cores, runs/min, "
                        "overhead per run, driver memory, query times (docs/benchmarks.md)")
    b.set_defaults(func=_cmd_bench)

    d = sub.add_parser("demo", help="the main job on built-in defaults (what `make demo` runs)")
    d.add_argument("--out", default="results/demo", metavar="DIR",
                   help="output directory: one run per AQM and demo.json (default results/demo)")
    d.set_defaults(func=_cmd_demo)

    for mod in ("qoelab.content.cli", "qoelab.reproduce.cli", "qoelab.minerva", "qoelab.serve", "qoelab.realnet",
                "qoelab.sweep.cli", "qoelab.sweep.compare", "qoelab.dashjs",
                "qoelab.pageload.cli"):
        try:
            m = __import__(mod, fromlist=["add_parser"])
        except ImportError:
            continue
        m.add_parser(sub)
    return p


_pos_int = int_at_least(20, "a number of runs", 100_000)   # (the sweep engine runs at most 10^5)
_nonneg_int = int_at_least(0)


def _version():
    try:
        from qoelab import __version__
        return f"qoelab {__version__}"
    except Exception:  # pragma: no cover
        return "qoelab"


def _who(cmd) -> str:
    return f"qoelab {cmd}" if cmd else "qoelab"


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stopping() -> None:
    """The first stop signal is being handled: the next ones are ignored, so that the cleanup (a
    pool of workers terminated, temporary output removed) finishes and the exit status is the first
    signal's. A second Ctrl-C a moment later (or `timeout` forwarding its own) interrupted the
    cleanup: multiprocessing's internal errors, a hang, or death by the signal with status -2."""
    for s in _STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    # A background thread that fails while the command stops is part of the stop, not news: a SIGTERM
    # to the whole process group kills a sweep's forkserver, and the pool's worker handler thread then
    # printed its EOFError traceback before the one line
    threading.excepthook = lambda args: None


def _on_sigint(signum, frame):
    _stopping()
    raise KeyboardInterrupt


def _on_sigterm(signum, frame):
    _stopping()
    raise Terminated(signum)


#: errno values of a write that failed for the machine's reasons (a full disk or quota, a read-only file
#: system): one line, not an internal error (found by a probe on a 300 KiB tmpfs)
_WRITE_FAILURES = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def main(argv=None):
    rc = _main(argv)
    if argv is None:   # the program itself (not a call from Python code)
        _exit_past_threads(rc)
    return rc


def _exit_past_threads(rc) -> None:
    """A thread left running by user code (a `python:` ABR module that started one at import)
    kept the interpreter from exiting after the command had finished and printed its result: the
    command's status is the process's, with output flushed, whatever threads remain."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except (OSError, ValueError):
                pass
        os._exit(rc if isinstance(rc, int) else 1)


def _main(argv=None):
    prev = {}
    if threading.current_thread() is threading.main_thread():
        # SIGTERM and SIGHUP (the terminal closed) unwind like Ctrl-C: temporary output removed
        prev = {s: signal.signal(s, _on_sigterm) for s in (signal.SIGTERM, signal.SIGHUP)}
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            prev[signal.SIGINT] = signal.signal(signal.SIGINT, _on_sigint)
    cmd = None
    try:
        # Ctrl-C or SIGTERM while the subcommands' modules load (about 0.1 s) is the same one line
        # as later, not a traceback
        parser = build_parser()
        argv = sys.argv[1:] if argv is None else argv
        if not argv:   # `qoelab` alone: the usage line and the commands, exit 2
            parser.print_help(sys.stderr)
            return EXIT_INPUT
        args, extra = parser.parse_known_args(argv)
        cmd = args.cmd
        if extra:   # named by the subcommand, as its other argument errors are (argparse says "qoelab:")
            print(f"{_who(cmd)}: error: unrecognized arguments: {' '.join(extra)}", file=sys.stderr)
            return EXIT_INPUT
        return args.func(args)
    except InputError as e:
        print(f"{_who(cmd)}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except Terminated as e:
        print(f"{_who(cmd)}: terminated ({signal.Signals(e.signum).name})", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        print(f"{_who(cmd)}: interrupted (SIGINT)", file=sys.stderr)
        return EXIT_SIGINT
    except BrokenPipeError:   # `qoelab list aqm | head`: the reader is gone, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BaseException as e:  # a bug: one line unless QOELAB_DEBUG is set
        if is_interrupt(e):   # Ctrl-C inside DuckDB or pyarrow, reported by them as an error of theirs
            print(f"{_who(cmd)}: interrupted (SIGINT)", file=sys.stderr)
            return EXIT_SIGINT
        if os.environ.get("QOELAB_DEBUG") or isinstance(e, SystemExit):
            raise
        if isinstance(e, OSError) and e.errno in _WRITE_FAILURES:
            # the machine, not the input or the code: one line (outputs are written atomically, so
            # nothing half-written is left), exit 1 as for any failed run
            where = f" {e.filename}" if e.filename else ""
            print(f"{_who(cmd)}: error: cannot write{where}: {os.strerror(e.errno)}", file=sys.stderr)
            return 1
        print(f"{_who(cmd)}: internal error: {type(e).__name__}: {e} (set QOELAB_DEBUG=1 for a traceback; "
              "please report it)", file=sys.stderr)
        return 1
    finally:
        if not any(signal.getsignal(s) == signal.SIG_IGN for s in _STOP_SIGNALS if s in prev):
            for s, h in prev.items():    # (after a stop signal they stay ignored until the exit)
                signal.signal(s, h)


if __name__ == "__main__":
    sys.exit(main())
