"""`qoelab bench`: a fixed benchmark suite; bottleneck packets and events per wall second, and
peak memory.

Each case is a scenario built in code (no external data), run REPEAT times (once for the long
memory case) in a fresh child process of its own; the median wall time is reported. Wall time
covers the simulation inside the core only (scenario parsing and result conversion excluded).
Peak RSS is the child's maximum resident set size (the interpreter, the core and the run; the
interpreter with the core loaded is ~18 MB). This is a benchmark, not a test: nothing here asserts a speed.

With `--instructions` each case runs once under valgrind's callgrind instead, and the figures are
the instructions of the core's event loop per bottleneck packet and per engine event: the same
for one build on any machine, day and load, where wall time on a shared machine is not.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPEAT = 3


def _dumbbell(name, n, rate, aqm, duration, buffer="1000pkts", cc="cubic"):
    return {"scenario": {"name": name, "duration": duration, "seed": 1},
            "topology": {"rate": rate, "rtt": "20ms", "buffer": buffer, "aqm": aqm},
            "flow": [{"kind": "bulk", "cc": cc, "count": n}],
            "output": {"tables": []}}


def _video4(name, duration, controller, pin=False):
    scn = {"scenario": {"name": name, "duration": duration, "seed": 1},
           "topology": {"rate": "10Mbps", "rtt": "20ms", "buffer": "1.5bdp"},
           "client": [{"name": "v", "abr": "dynamic", "count": 4, "cc": "wcubic", "video": "synthetic:sabre-bbb",
                       "video_duration": duration}],
           "output": {"tables": []}}
    if controller:
        scn["provider"] = [{"name": "p", "controller": controller, "clients": ["v"], "metric": "bitrate"}]
        if pin:
            scn["provider"][0].update({"w_min": 1.0, "w_max": 1.0})
    return scn


_TRACE_DIR = None


def _trace() -> str:
    """The Mahimahi trace of the trace case: one 1504-byte opportunity per ms (~12 Mbit/s), in a
    temporary folder of this process that is removed when it exits (one per process, however often
    the cases are listed)."""
    global _TRACE_DIR
    if _TRACE_DIR is None:
        from qoelab.outdir import own_tmp_prefix   # (SIGKILL skips the cleanup at exit)
        _TRACE_DIR = tempfile.TemporaryDirectory(prefix=own_tmp_prefix("bench"))
    trace = os.path.join(_TRACE_DIR.name, "12mbps.down")
    if not os.path.exists(trace):
        with open(trace, "w") as f:
            f.write("".join(f"{i}\n" for i in range(1, 1001)))
    return trace


def cases(quick: bool):
    d = (lambda full, q: q if quick else full)
    trace = _trace()
    return [
        ("dumbbell-4cubic-10M-fqcodel-200s",
         "4 Cubic bulk flows, 10 Mbit/s, 20 ms RTT, FQ-CoDel, 200 s (the reference case)",
         _dumbbell("bench1", 4, "10Mbps", "fq_codel", d("200s", "50s"))),
        ("dumbbell-16cubic-100M-pfifo",
         "16 Cubic bulk flows, 100 Mbit/s, 20 ms RTT, pfifo 1 BDP",
         _dumbbell("bench2", 16, "100Mbps", "pfifo", d("60s", "10s"), buffer="1bdp")),
        ("dumbbell-4cubic-10M-pie",
         "4 Cubic bulk flows, 10 Mbit/s, 20 ms RTT, PIE, 200 s",
         _dumbbell("bench3", 4, "10Mbps", "pie", d("200s", "50s"))),
        ("mahimahi-trace-2bbr",
         "2 BBR flows over a Mahimahi opportunity trace (12 Mbit/s), 40 ms RTT, 100 s",
         {"scenario": {"name": "bench4", "duration": d("100s", "20s")},
          "topology": {"trace": trace, "rate_up": "12Mbps", "rtt": "40ms", "buffer": "100pkts"},
          "flow": [{"kind": "bulk", "cc": "bbr", "count": 2}], "output": {"tables": []}}),
        ("video-1client-3M-10min",
         "one DASH client (dash.js DYNAMIC), a 10-minute video at 3 Mbit/s, 40 ms, pfifo 1 BDP",
         {"scenario": {"name": "bench6", "duration": d("620s", "120s")},
          "topology": {"rate": "3Mbps", "rtt": "40ms", "buffer": "1bdp"},
          "client": [{"abr": "dynamic", "video": "synthetic:sabre-bbb", "video_duration": d("600s", "100s")}],
          "output": {"tables": []}}),
        ("video-3clients-dynamic-codel",
         "3 DASH clients (dash.js DYNAMIC) over HTTP/TCP, 10 Mbit/s, 40 ms, CoDel, 300 s",
         {"scenario": {"name": "bench5", "duration": d("300s", "60s")},
          "topology": {"rate": "10Mbps", "rtt": "40ms", "buffer": "1bdp", "aqm": "codel"},
          "client": [{"abr": "dynamic", "count": 3, "video": "synthetic:sabre-bbb", "video_duration": "300s"}],
          "output": {"tables": []}}),
        ("dumbbell-40cubic-10M-fqcodel-200s",
         "40 Cubic bulk flows, 10 Mbit/s, 20 ms RTT, FQ-CoDel, 200 s (the reference case with as many "
         "connections as the chunklets case: the packet path's cost of 40 connections without a data plane)",
         _dumbbell("bench12", 40, "10Mbps", "fq_codel", d("200s", "50s"))),
        ("video-4clients-chunklets10-fqcodel",
         "4 DASH clients fetching each segment as 10 chunklets over 10 connections (dash.js DYNAMIC), "
         "10 Mbit/s, 20 ms, FQ-CoDel, 200 s (compare with the reference case: data planes must not slow the "
         "packet path)",
         {"scenario": {"name": "bench8", "duration": d("200s", "50s")},
          "topology": {"rate": "10Mbps", "rtt": "20ms", "buffer": "1000pkts", "aqm": "fq_codel"},
          "client": [{"abr": "dynamic", "count": 4, "video": "synthetic:chunklets", "video_duration": "200s",
                      "data_plane": {"kind": "chunklets", "n": 10}}],
          "output": {"tables": []}}),
        ("video-4clients-wcubic-nocontrol",
         "4 DASH clients (dash.js DYNAMIC) on weighted Cubic, no flow controller, 10 Mbit/s, 20 ms, pfifo 1.5 BDP, "
         "600 s (the baseline of the next case)",
         _video4("bench9", d("600s", "60s"), None)),
        ("video-4clients-wcubic-minerva",
         "the same 4 clients under one Minerva provider (paper profile, metric = bitrate: the synthetic video "
         "has no quality table); the controller's cost is the difference with the previous case",
         _video4("bench10", d("600s", "60s"), "minerva")),
        ("video-4clients-wcubic-minerva-pinned",
         "as the previous case with the clamp pinned to [1, 1]: the controller does all its work but the weights "
         "stay 1, so the packets are those of the baseline and the difference is the controller's own cost",
         _video4("bench11", d("600s", "60s"), "minerva", pin=True)),
        ("memory-1G-1h",
         "memory case: 4 Cubic bulk flows, 1 Gbit/s, 20 ms RTT, FQ-CoDel, 1 hour, tables off (run once)",
         _dumbbell("bench7", 4, "1Gbps", "fq_codel", d("3600s", "30s"), buffer="1bdp")),
    ]


#: Cases run once (too long to repeat) and only when named with --case.
ONCE = {"memory-1G-1h"}
#: Cases left out of the profile-guided build's training run (tools/pgo_train.py), besides ONCE:
#: trained with the 40-flow case, a build ran 0.97 of the packets/s of one trained without it on the
#: reference, chunklets and 40-flow cases alike (docs/benchmarks.md).
UNTRAINED = {"dumbbell-40cubic-10M-fqcodel-200s"}

#: The reference case, and the cases whose packets/s are compared with it in the same run (the
#: data-plane goal of docs/benchmarks.md: the chunklets case within 20% of the reference).
REFERENCE = "dumbbell-4cubic-10M-fqcodel-200s"
VS_REFERENCE = ("video-4clients-chunklets10-fqcodel",)
#: Each compared case's like-for-like bulk case: the same link and queue with as many TCP
#: connections and no data plane, so that the packet path's cost of the connections and the data
#: plane's own cost show apart (`vs_bulk` in `--json`).
LIKE_FOR_LIKE = {"video-4clients-chunklets10-fqcodel": "dumbbell-40cubic-10M-fqcodel-200s"}


def _cpu() -> dict:
    """The processor's model name and current clock (MHz) from /proc/cpuinfo (Linux; None elsewhere):
    wall-time figures of different days compare only on the same clock."""
    model, mhz = None, None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k == "model name" and model is None:
                    model = v.strip()
                elif k == "cpu MHz" and mhz is None:
                    mhz = round(float(v), 0)
    except (OSError, ValueError):
        pass
    return {"cpu_model": model, "cpu_mhz": mhz}


def _load() -> list:
    """1-, 5- and 15-minute load averages (empty where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def _child(name: str, quick: bool, repeat: int) -> None:
    """Run one case in this (fresh) process and print its figures as JSON."""
    scn = next(c[2] for c in cases(quick) if c[0] == name)
    r = run_case(scn, repeat)
    r["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(r))


def _child_json(code: str, what: str, prefix: tuple = ()):
    """Run `code` in a fresh interpreter (behind `prefix`, such as valgrind) and return the JSON
    it printed last."""
    p = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed: {(p.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_case_isolated(name: str, quick: bool, repeat: int) -> dict:
    """Run a case in a child process, so that its peak RSS is its own."""
    return _child_json(f"from qoelab import bench; bench._child({name!r}, {quick!r}, {repeat!r})",
                       f"benchmark case {name}")


#: Rounds of the paired measurement: the reference case and a compared case alternated in one
#: process, so that both see the same machine (its speed drifts by more than 1.5x within minutes).
PAIR_ROUNDS = 7


def _child_pair(a: str, b: str, quick: bool, rounds: int) -> None:
    """Alternate cases `a` and `b` in this process and print each round's bottleneck packets/s."""
    from qoelab import _core, scenario
    scns = {n: s for n, _, s in cases(quick)}
    cfgs = [scenario.from_dict(scns[n], "<bench>").to_json() for n in (a, b)]
    rows = []
    for _ in range(rounds):
        row = []
        for cfg in cfgs:
            t0 = time.perf_counter()
            s, _, _ = _core.run(cfg)
            row.append(json.loads(s)["packets"]["bottleneck"] / (time.perf_counter() - t0))
        rows.append(row)
    print(json.dumps(rows))


def paired_ratio(a: str, b: str, quick: bool, rounds: int = PAIR_ROUNDS) -> dict:
    """Case `b`'s packets/s as a fraction of case `a`'s, round by round with the two alternated
    in one child process: the median, least and greatest of the rounds' ratios."""
    rows = _child_json(f"from qoelab import bench; bench._child_pair({a!r}, {b!r}, {quick!r}, {rounds!r})",
                       f"benchmark cases {a} and {b}")
    ratios = [rb / ra for ra, rb in rows]
    return {"rounds": rounds, "median": round(statistics.median(ratios), 3),
            "min": round(min(ratios), 3), "max": round(max(ratios), 3)}


#: What callgrind counts: the core's event loop (`World::run_until`, the calls it makes), not the
#: interpreter, the scenario's parsing, the network's construction or the summary.
COLLECT = "*World*run*"


def callgrind_total(path: str) -> int:
    """Instructions executed (the `Ir` event) in a callgrind output file: its `summary:` line
    (`totals:` in older files)."""
    found = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("summary", "totals") and v.strip():
                found.setdefault(k, int(v.split()[0]))
    if not found:
        raise RuntimeError(f"{path}: no summary line in callgrind's output")
    return found.get("summary", found.get("totals"))


def _valgrind() -> str:
    """valgrind's path, or the one-line error of `--instructions` without it."""
    vg = shutil.which("valgrind")
    if vg is None:
        from qoelab.errors import InputError
        raise InputError(None, "--instructions", "valgrind on the PATH (Debian: apt install valgrind)", "none")
    return vg


def count_instructions(name: str, quick: bool, code: str | None = None) -> dict:
    """Run a case once under valgrind's callgrind in a child process and return the instructions
    its event loop executed, per bottleneck packet and per engine event. Deterministic for one
    build of the core: the figure compares across machines and days, unlike wall time. `code`
    (for tests) replaces the child's program; it prints the case's `bottleneck_packets`,
    `events` and `simulated_s` as JSON, as `_child` does (whose wall-time figures, taken under
    callgrind, are dropped)."""
    vg = _valgrind()
    code = code or f"from qoelab import bench; bench._child({name!r}, {quick!r}, 1)"
    with tempfile.TemporaryDirectory(prefix="qoelab-callgrind-") as d:
        out = os.path.join(d, "callgrind.out")
        child = _child_json(code, f"benchmark case {name} under callgrind",
                            (vg, "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect={COLLECT}"))
        ir = callgrind_total(out)
    r = {k: child[k] for k in ("bottleneck_packets", "events", "simulated_s")}
    pk, ev = r["bottleneck_packets"], r["events"]
    r.update({"instructions": ir,
              "instructions_per_packet": round(ir / pk) if pk else None,
              "instructions_per_event": round(ir / ev) if ev else None,
              "events_per_packet": round(ev / pk, 2) if pk else None})
    return r


def run_case(scn: dict, repeat: int) -> dict:
    from qoelab import _core, scenario
    sc = scenario.from_dict(scn, "<bench>")
    cfg = sc.to_json()
    walls = []
    summary = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        s, _, _ = _core.run(cfg)
        walls.append(time.perf_counter() - t0)
        summary = json.loads(s)
    wall = statistics.median(walls)
    pk = summary["packets"]["bottleneck"]
    return {
        "wall_s_median": round(wall, 4),
        "wall_s_min": round(min(walls), 4),
        "simulated_s": summary["duration_s"],
        "bottleneck_packets": pk,
        "events": summary["events"],
        "bottleneck_packets_per_s": round(pk / wall),
        "events_per_s": round(summary["events"] / wall),
        "events_per_packet": round(summary["events"] / pk, 2) if pk else None,
        "simulated_s_per_wall_s": round(summary["duration_s"] / wall, 1),
    }


def _fmt_load(v: list) -> str:
    return " ".join(f"{x:.2f}" for x in v) if v else "unknown"


def main(json_out=False, quick=False, only=None, instructions=False) -> int:
    from qoelab import __version__, _core
    if instructions:
        _valgrind()  # its error before anything is printed
    out = {"qoelab": __version__, "core_build": _core.build(),
           "machine": {"cpu": platform.processor() or platform.machine(), **_cpu(),
                       "cores": os.cpu_count(), "python": platform.python_version(),
                       "load_before": _load()},
           "repeat": 1 if instructions else REPEAT, "quick": quick,
           "measure": "instructions" if instructions else "wall_time", "cases": []}
    all_cases = cases(quick)
    names = [c[0] for c in all_cases]
    if only:
        bad = [o for o in only if o not in names]
        from qoelab.errors import InputError
        if bad:
            raise InputError(None, "--case", "one of " + ", ".join(names), bad[0])
        if instructions and ONCE & set(only):
            # an hour at 1 Gbit/s is about 10^12 instructions: many hours under callgrind
            raise InputError(None, "--case", "a case other than the memory case with --instructions "
                             "(it measures peak memory; under callgrind it would run for many hours)",
                             sorted(ONCE & set(only))[0])
    if not json_out:
        note = "" if out["core_build"].startswith("pgo") else " (not profile-guided: see docs/benchmarks.md)"
        print(f"qoelab {__version__}, core build: {out['core_build']}{note}", flush=True)
        m = out["machine"]
        clock = f" at {m['cpu_mhz']:,.0f} MHz" if m["cpu_mhz"] else ""
        print(f"machine: {m['cpu_model'] or m['cpu']}{clock}, {m['cores']} cores, "
              f"load average {_fmt_load(m['load_before'])}", flush=True)
    for name, desc, scn in all_cases:
        if (only and name not in only) or (not only and name in ONCE):
            continue
        if instructions:
            r = count_instructions(name, quick)
            r.update({"case": name, "description": desc})
            out["cases"].append(r)
            if not json_out:
                print(f"{name:<36} {r['instructions_per_packet']:>8,} instructions per bottleneck packet "
                      f"{r['instructions_per_event']:>6,} per event  ({r['instructions'] / 1e6:,.2f} M in the event "
                      f"loop, {r['bottleneck_packets']:,} bottleneck packets, {r['events_per_packet']} events "
                      f"per packet)", flush=True)
            continue
        repeat = 1 if name in ONCE else REPEAT
        r = run_case_isolated(name, quick, repeat)
        r.update({"case": name, "description": desc, "repeat": repeat})
        out["cases"].append(r)
        if not json_out:
            print(f"{name:<36} {r['bottleneck_packets_per_s']:>12,} bottleneck pkts/s {r['events_per_s']:>12,} events/s "
                  f"{r['simulated_s_per_wall_s']:>8,.0f} sim-s/wall-s  peak {r['peak_rss_mb']:>7,.1f} MB  "
                  f"(median of {repeat}: {r['wall_s_median']:.3f} s)", flush=True)
    out["machine"]["load_after"] = _load()
    by = {c["case"]: c for c in out["cases"]}
    # the same run's ratios: instructions per packet (--instructions) or packets per wall second;
    # vs_reference against the reference case, vs_bulk against the case with as many connections
    fig, src = (("instructions_per_packet", "instructions_per_packet") if instructions
                else ("packets_per_s", "bottleneck_packets_per_s"))
    wanted = ([("vs_reference", n, REFERENCE) for n in VS_REFERENCE]
              + [("vs_bulk", n, b) for n, b in LIKE_FOR_LIKE.items()])
    shown = []
    for key, n, base in wanted:
        if n not in by or base not in by:
            continue
        v = {"bulk_case": base} if key == "vs_bulk" else {}
        v.update({fig: round(by[n][src] / by[base][src], 3),
                  "events_per_packet": round(by[n]["events_per_packet"] / by[base]["events_per_packet"], 3)})
        if not instructions:
            v["packets_per_s_paired"] = paired_ratio(base, n, quick)
        out.setdefault(key, {})[n] = v
        shown.append((n, v, "the reference case" if key == "vs_reference"
                      else f"{base}, the case with as many connections and no data plane"))
    if not json_out:
        for n, v, what in shown:
            if instructions:
                print(f"{n}: {v['instructions_per_packet']:.2f}x the instructions per packet of {what} "
                      f"({v['events_per_packet']:.2f}x its engine events per packet)", flush=True)
                continue
            pr = v["packets_per_s_paired"]
            print(f"{n}: {pr['median']:.2f}x the packets/s of {what} (median of {pr['rounds']} rounds alternating "
                  f"the two in one process: {pr['min']:.2f}-{pr['max']:.2f}; {v['packets_per_s']:.2f}x in the runs "
                  f"above), {v['events_per_packet']:.2f}x its engine events per packet", flush=True)
        print(f"load average after: {_fmt_load(out['machine']['load_after'])}", flush=True)
    if json_out:
        print(json.dumps(out, indent=2))
    return 0
