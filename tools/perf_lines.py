#!/usr/bin/env python3
"""Where the core's wall time goes, by source line of the core crate, through inlining.

    perf record -e cpu-clock -F 10000 -o perf.data .venv/bin/python -c "..."   # a run to profile
    tools/perf_lines.py perf.data [--lib PATH] [--top N]

`perf report` attributes a sample to the innermost inlined frame, which in a release build is
mostly the standard library (`ptr::write`, slice indexing). This maps each sample taken in the
extension module to the innermost frame that is in crates/qoelab-core (via `addr2line -i`) and
prints the share of the module's samples per line. cpu-clock sampling needs no hardware counters
(virtual machines often have none); a sample lands at or just after the instruction that was
running, so a slow load shows up on the line after it.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys


class Error(Exception):
    pass


def _run(cmd: list) -> str:
    if shutil.which(cmd[0]) is None:
        raise Error(f"expected {cmd[0]} on the PATH (Debian: apt install {'linux-perf' if cmd[0] == 'perf' else 'binutils'})")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        err = p.stderr.strip().splitlines()
        raise Error(f"{' '.join(cmd[:2])}: {err[-1] if err else 'failed'}")
    return p.stdout


def _default_lib() -> str:
    import qoelab
    found = glob.glob(os.path.join(os.path.dirname(qoelab.__file__), "_core*.so"))
    if not found:
        raise Error("--lib: no built qoelab/_core*.so found (run `make build`, or name the library)")
    return found[0]


def lines(data: str, lib: str) -> tuple:
    """(samples in total, samples in `lib`, samples in `lib` that could not be placed, Counter of
    'file:line  function' -> samples). A sample is placed by its symbol and offset; a demangled
    name that several symbols share (generic instances) places none of its samples."""
    name = os.path.basename(lib)
    addr = collections.defaultdict(set)
    for ln in _run(["nm", "-C", lib]).splitlines():
        p = ln.split(" ", 2)
        if len(p) == 3 and p[0]:
            addr[p[2]].add(int(p[0], 16))
    total, in_lib, per_addr = 0, 0, collections.Counter()
    # "<ip> <symbol, which may hold spaces>+0x<offset> (<dso>)"
    sym = re.compile(r"^\s*[0-9a-f]+\s+(.+)\+0x([0-9a-f]+)\s+\(")
    for ln in _run(["perf", "script", "-i", data, "-F", "ip,sym,symoff,dso", "-G"]).splitlines():
        if not ln.strip():
            continue
        total += 1
        if name in ln:
            in_lib += 1
            m = sym.search(ln)
            if m and len(addr.get(m.group(1), ())) == 1:
                per_addr[next(iter(addr[m.group(1)])) + int(m.group(2), 16)] += 1
    if not per_addr:
        raise Error(f"{data}: no samples in {name} (was the run made with this library?)")
    where = {}
    cur, frames = None, []

    def flush():
        if cur is None:
            return
        pairs = [(frames[i], frames[i + 1]) for i in range(0, len(frames) - 1, 2)]
        core = [(fn, fl) for fn, fl in pairs if "qoelab-core/src/" in fl]
        fn, fl = core[0] if core else (pairs[0] if pairs else ("?", "?"))
        where[cur] = f"{fl.split('src/')[-1].split(' ')[0]}  {fn.split('::')[-1][:48]}"

    out = _run(["addr2line", "-a", "-i", "-f", "-C", "-e", lib] + [hex(a) for a in per_addr])
    for ln in out.splitlines():
        if ln.startswith("0x"):
            flush()
            cur, frames = int(ln, 16), []
        else:
            frames.append(ln)
    flush()
    agg = collections.Counter()
    for a, c in per_addr.items():
        agg[where.get(a, "?")] += c
    return total, in_lib, in_lib - sum(per_addr.values()), agg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/perf_lines.py", description=__doc__.split("\n\n")[2].strip())
    ap.add_argument("data", help="a perf.data file (perf record -e cpu-clock)")
    ap.add_argument("--lib", help="the extension module the run used (default: this checkout's qoelab/_core*.so)")
    ap.add_argument("--top", type=int, default=40, help="lines to print (default 40)")
    args = ap.parse_args(argv)
    try:
        if not os.path.isfile(args.data):
            raise Error(f"{args.data}: no such file")
        lib = args.lib or _default_lib()
        if not os.path.isfile(lib):
            raise Error(f"--lib: {lib}: no such file")
        total, in_lib, unplaced, agg = lines(args.data, lib)
        core = in_lib - unplaced
    except Error as e:
        print(f"perf_lines: {e}", file=sys.stderr)
        return 2
    try:
        print(f"{total} samples, {in_lib} in {os.path.basename(lib)} ({unplaced} of them not placed: an ambiguous or "
              f"unnamed symbol); share of the placed ones per line of crates/qoelab-core:")
        for where, c in agg.most_common(args.top):
            print(f"{100 * c / core:5.1f}%  {where}")
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
