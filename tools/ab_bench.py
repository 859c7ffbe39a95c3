#!/usr/bin/env python3
"""Compare the wall-time speed of two builds of the core, paired.

    tools/ab_bench.py A B [--rounds N] [--quick] [--case NAME ...] [--json]

A and B are directories that hold a built `qoelab` package (the package folder with its
`_core` extension module), such as a worktree's `python/` after `make build` there. Each build
runs in a child interpreter of its own (this interpreter, with PYTHONPATH set to the directory);
every round asks the two in turn, in alternating order, to run each `qoelab bench` case once, and
records the bottleneck packets per wall second of the core's run. Both children are started
again every 5 rounds, in alternating order: a child keeps for life whatever placement it got,
and one of two children running the same build was ~4% faster than the other for the whole run
before this (docs/benchmarks.md). The figure per case is the
median over the rounds of B's speed divided by A's in the same round, with its quartiles: on a
machine whose speed changes by more than 1.5x within seconds, only runs seconds apart compare.
A benchmark, never a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

REFERENCE_CASES = ("dumbbell-4cubic-10M-fqcodel-200s", "video-4clients-chunklets10-fqcodel")

# The child: reads case names on stdin, runs each once, prints packets/s per line ("!" + message
# on an error). It times the run as `qoelab.bench` does but uses only what every build has had
# (`bench.cases`, `scenario.from_dict`, `_core.run`), so that an older checkout can be build A.
_WORKER = r"""
import json, sys, time
from qoelab import bench, _core, scenario
quick = sys.argv[1] == "1"
cases = {n: s for n, _, s in bench.cases(quick=quick)}
cfgs = {}
print("ready", flush=True)
for line in sys.stdin:
    name = line.strip()
    if name not in cases:
        print("!unknown case " + name, flush=True)
        continue
    if name not in cfgs:
        cfgs[name] = scenario.from_dict(cases[name], "<bench>").to_json()
    t0 = time.perf_counter()
    out, _, _ = _core.run(cfgs[name])
    wall = time.perf_counter() - t0
    print(json.loads(out)["packets"]["bottleneck"] / wall, flush=True)
"""


class Error(Exception):
    pass


def _check_dir(label: str, d: str) -> str:
    pkg = os.path.join(d, "qoelab")
    if not os.path.isfile(os.path.join(pkg, "__init__.py")):
        raise Error(f"{label}: {d}: expected a directory holding the qoelab package (such as a worktree's python/)")
    return os.path.abspath(d)


class Worker:
    def __init__(self, label: str, d: str, quick: bool):
        self.label = label
        env = dict(os.environ, PYTHONPATH=d, PYTHONHASHSEED="0")
        self.p = subprocess.Popen([sys.executable, "-c", _WORKER, "1" if quick else "0"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                  start_new_session=True)
        if self.p.stdout.readline().strip() != "ready":
            err = (self.p.stderr.read() or "").strip().splitlines()
            hint = " (is its core built? `make build` in that checkout)" if any("_core" in e for e in err) else ""
            raise Error(f"{label}: {d}: the package does not start: {err[-1] if err else 'no output'}{hint}")

    def run(self, case: str) -> float:
        self.p.stdin.write(case + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().strip()
        if not line:
            err = (self.p.stderr.read() or "").strip().splitlines()
            raise Error(f"{self.label}: case {case} failed: {err[-1] if err else 'no output'}")
        if line.startswith("!"):
            raise Error(f"{self.label}: {line[1:]}")
        return float(line)

    def stop(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.p.wait()


def _quartiles(v: list) -> tuple:
    s = sorted(v)
    return s[len(s) // 4], statistics.median(s), s[(3 * len(s)) // 4]


def compare(a: str, b: str, cases: list, rounds: int, quick: bool, progress=None, respawn: int = 5) -> dict:
    """B/A per case over `rounds` paired rounds; the children restart every `respawn` rounds
    (module docstring)."""
    workers = {}
    dirs = {"A": a, "B": b}
    speed = {c: {"A": [], "B": []} for c in cases}
    try:
        for r in range(rounds):
            if r % respawn == 0:
                for w in workers.values():
                    w.stop()
                workers = {}
                for k in ("AB" if (r // respawn) % 2 == 0 else "BA"):
                    workers[k] = Worker(k, dirs[k], quick)
                for c in cases:  # one unrecorded run each: imports, caches, the allocator
                    for k in "AB":
                        workers[k].run(c)
            for c in cases:
                for k in ("AB" if r % 2 == 0 else "BA"):
                    speed[c][k].append(workers[k].run(c))
            if progress:
                progress(r + 1, rounds)
    finally:
        for w in workers.values():
            w.stop()
    out = {}
    for c in cases:
        ratios = [y / x for x, y in zip(speed[c]["A"], speed[c]["B"])]
        q1, med, q3 = _quartiles(ratios)
        out[c] = {"a_packets_per_s_median": statistics.median(speed[c]["A"]),
                  "b_packets_per_s_median": statistics.median(speed[c]["B"]),
                  "b_over_a_median": med, "b_over_a_q1": q1, "b_over_a_q3": q3, "rounds": rounds}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/ab_bench.py", description=__doc__.split("\n\n")[1].strip())
    ap.add_argument("a", metavar="A", help="directory holding build A's qoelab package (the baseline)")
    ap.add_argument("b", metavar="B", help="directory holding build B's qoelab package")
    ap.add_argument("--rounds", type=int, default=30, help="alternated rounds (default 30)")
    ap.add_argument("--quick", action="store_true", help="the short variants of the cases")
    ap.add_argument("--case", action="append", metavar="NAME",
                    help="a `qoelab bench` case (repeatable; default: the reference and the chunklets case)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    try:
        if args.rounds < 1:
            raise Error(f"--rounds: expected a count >= 1, got {args.rounds}")
        a, b = _check_dir("A", args.a), _check_dir("B", args.b)
        cases = args.case or list(REFERENCE_CASES)
        t0 = time.monotonic()

        def progress(done, total):
            if sys.stderr.isatty():
                print(f"\rround {done}/{total} ({time.monotonic() - t0:.0f} s)", end="", file=sys.stderr, flush=True)

        res = compare(a, b, cases, args.rounds, args.quick, progress)
        if sys.stderr.isatty():
            print(file=sys.stderr)
    except Error as e:
        print(f"ab_bench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ab_bench: interrupted", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps({"a": a, "b": b, "cases": res}, indent=2))
        return 0
    for c, r in res.items():
        print(f"{c}: A {r['a_packets_per_s_median'] / 1e6:.3f} M, B {r['b_packets_per_s_median'] / 1e6:.3f} M "
              f"bottleneck pkts/s (medians); B/A {r['b_over_a_median']:.3f} "
              f"(quartiles {r['b_over_a_q1']:.3f}-{r['b_over_a_q3']:.3f}, {r['rounds']} paired rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
