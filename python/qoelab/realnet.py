"""`qoelab link`: a Mahimahi-style shell behind qoelab's userspace bottleneck emulator (Linux).

The emulator is the Rust binary ``qoelab-netemu`` (crate ``crates/qoelab-net``, built by ``make build``).
This module only checks the options (argparse, one line and exit 2 on errors) and then *execs* the
binary, so that signals (Ctrl-C, SIGTERM, SIGKILL) reach the emulator itself and no Python process
stays in between. See docs/realnet.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from qoelab.cliutil import EXIT_INPUT

BINARY = "qoelab-netemu"


def find_emulator() -> str | None:
    """Where the emulator binary is: $QOELAB_NETEMU, next to this package (``qoelab/bin/``, for
    installed wheels), then the checkout's ``target/release`` and ``target/debug``."""
    env = os.environ.get("QOELAB_NETEMU")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    here = Path(__file__).resolve().parent
    candidates = [here / "bin" / BINARY]
    root = here.parent.parent   # python/qoelab -> checkout root
    candidates += [root / "target" / "release" / BINARY, root / "target" / "debug" / BINARY]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def emulator_mismatch(binary: str) -> str | None:
    """None if the emulator binary was built from the sources this module was built from (their
    source fingerprints agree), else what is wrong, for a one-line error: a stale emulator runs
    other link, AQM and session code than the simulator."""
    from qoelab import _core
    try:
        p = subprocess.run([binary, "--source-id"], capture_output=True, text=True, timeout=10)
        got = p.stdout.strip() if p.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        got = ""
    want = _core.source_id()
    if got == want:
        return None
    return (f"the emulator binary {binary} was built from other sources than this qoelab module "
            f"(source id {got or 'unknown'}, the module's {want}); run `make build` to rebuild both")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "link", help="run COMMAND behind an emulated bottleneck on real packets (Linux, root)",
        description="Runs COMMAND in a fresh client network namespace whose only way out is a userspace "
        "bottleneck emulator running qoelab's own link model and AQMs on real IP packets "
        "(Mahimahi-style, like mm-link + mm-delay). --server CMD runs in the server namespace; "
        "COMMAND finds the server's address in $MAHIMAHI_BASE and $QOELAB_SERVER_ADDR (10.77.0.1; the "
        "client is 10.77.1.1). Exit status: COMMAND's; 2 for bad options or missing prerequisites "
        "(/dev/net/tun; root, or unprivileged user namespaces, in which it runs without SCHED_FIFO). "
        "Timing quality (departure lateness p50/p99/max) is "
        "printed at exit and written with the queue statistics to --json-stats. See docs/realnet.md.")
    p.add_argument("--rate", metavar="R", help="link rate in both directions, e.g. 10Mbps (or --trace)")
    p.add_argument("--uplink-rate", metavar="R", help="uplink (client -> server) rate if different")
    p.add_argument("--rtt", metavar="D", default="0ms", help="round-trip propagation delay, e.g. 40ms "
                   "(half each way; default 0ms)")
    p.add_argument("--aqm", metavar="NAME", default="pfifo",
                   help="queue discipline in both directions (`qoelab list aqm`; default pfifo)")
    p.add_argument("--aqm-param", metavar="K=V", action="append", default=[],
                   help="discipline parameter with units, e.g. target=5ms (repeatable)")
    p.add_argument("--buffer", metavar="N", help="buffer per direction: 100pkts or 150KB "
                   "(default: the discipline's own default, 1000 packets for pfifo)")
    p.add_argument("--trace", metavar="FILE", help="Mahimahi packet-delivery trace (ms timestamps, 1504 "
                   "bytes each) for the downlink, and the uplink unless --uplink-trace/--uplink-rate")
    p.add_argument("--uplink-trace", metavar="FILE", help="Mahimahi trace for the uplink")
    p.add_argument("--loss", metavar="P", help="i.i.d. loss per direction, e.g. 1%% or 0.01")
    p.add_argument("--server", metavar="CMD", help="shell command run in the server namespace")
    p.add_argument("--json-stats", metavar="FILE", help="write the run's statistics (queues, drops, "
                   "sojourn and lateness percentiles) as JSON")
    p.add_argument("--downlink-log", metavar="FILE", help="log of the downlink in mm-link's format "
                   "(arrivals, delivery opportunities, departures; for mm-throughput-graph / mm-delay-graph)")
    p.add_argument("--uplink-log", metavar="FILE", help="the same for the uplink")
    for d in ("uplink", "downlink"):
        p.add_argument(f"--{d}-queue", metavar="KIND", help=f"the {d}'s queue as in mm-link (infinite, "
                       "droptail, drophead, codel, pie; codel and pie in their Mahimahi modes) or any "
                       "discipline of `qoelab list aqm`; overrides --aqm/--aqm-param/--buffer for the "
                       f"{d}" if d == "uplink" else "the same for the downlink")
        p.add_argument(f"--{d}-queue-args", metavar="ARGS", help="mm-link's \"NAME=NUMBER[, ...]\" with "
                       "NAME = packets | bytes | target | interval | qdelay_ref | max_burst (milliseconds); "
                       "for qoelab's disciplines K=V with units, e.g. \"target=2ms, packets=200\""
                       if d == "uplink" else f"the same for the downlink")
    p.add_argument("--seed", metavar="N", help="seed of the loss and AQM random streams (default 1)")
    p.add_argument("--no-rt", action="store_true", help="do not ask for SCHED_FIFO")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the program to run in the client namespace (default $SHELL)")
    p.set_defaults(func=_cmd_link)


def _cmd_link(args) -> int:
    if not sys.platform.startswith("linux"):
        print("qoelab link: error: needs Linux (network namespaces and TUN devices)", file=sys.stderr)
        return EXIT_INPUT
    from qoelab import outdir
    for opt in ("json_stats", "downlink_log", "uplink_log"):   # (a FIFO blocked the emulator, deaf to signals)
        if getattr(args, opt) is not None:
            outdir.check_file(getattr(args, opt), "--" + opt.replace("_", "-"))
    for opt in ("trace", "uplink_trace"):
        # read by the rules (and with the messages) of `qoelab run`: the emulator's own reader took blank
        # lines, spaces, "+2" and more than 8,311,170 opportunities in a millisecond
        if getattr(args, opt) is not None:
            from qoelab import traces
            traces.load_mahimahi(getattr(args, opt))
    binary = find_emulator()
    if binary is None:
        print(f"qoelab link: error: the emulator binary {BINARY} was not found (run `make build`, or set "
              "QOELAB_NETEMU)", file=sys.stderr)
        return EXIT_INPUT
    bad = emulator_mismatch(binary)
    if bad:
        print(f"qoelab link: error: {bad}", file=sys.stderr)
        return EXIT_INPUT
    argv = [binary]
    for opt in ("rate", "uplink_rate", "rtt", "aqm", "buffer", "trace", "uplink_trace", "loss", "server",
                "json_stats", "downlink_log", "uplink_log", "uplink_queue", "uplink_queue_args",
                "downlink_queue", "downlink_queue_args", "seed"):
        v = getattr(args, opt)
        if v is not None:
            argv += ["--" + opt.replace("_", "-"), v]
    for kv in args.aqm_param:
        argv += ["--aqm-param", kv]
    if args.no_rt:
        argv.append("--no-rt")
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    argv += ["--"] + cmd
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, argv)
    return 1  # pragma: no cover (execv does not return)
