#!/usr/bin/env python3
"""Run qoelab and ns-3 (benchmarks/ns3/dumbbell.py) on the same dumbbell cases; write a table.

Run with the qoelab venv's Python; ns-3 runs in its own venv (--ns3-python), one simulation at
a time. Results: OUT/<case>.qoelab.json, OUT/<case>.ns3.json, OUT/results.json, OUT/table.md.

    .venv/bin/python benchmarks/ns3/compare.py --ns3-python .venv-ns3/bin/python --out results/ns3
    # a subset / shorter runs:
    .venv/bin/python benchmarks/ns3/compare.py --cases cubic4_fq_codel --duration 60 ...
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCEN = os.path.join(HERE, "scenarios")


def case_names():
    return [os.path.splitext(os.path.basename(p))[0] for p in sorted(glob.glob(os.path.join(SCEN, "*.toml")))]


def load_case(name, duration=None, seed=None):
    from qoelab import scenario
    sc = scenario.load(os.path.join(SCEN, name + ".toml"))
    if duration is not None:
        sc.config["duration"] = int(duration * 1e9)
    if seed is not None:
        sc.config["seed"] = seed
    link = sc.config["links"][0]
    assert link["name"] == "bottleneck"
    flows = sc.config["flows"]
    spec = {
        "aqm": link["aqm"],
        "buffer": link.get("buffer_packets"),
        "flows": len(flows),
        "duration": sc.config["duration"] / 1e9,
        "rate": link["rate_bps"],
        "seed": sc.config["seed"],
    }
    return sc, spec


def _run_qoelab_cli(sc, out_json, tcp=()):
    exe = os.path.join(os.path.dirname(sys.executable), "qoelab")
    with tempfile.TemporaryDirectory() as d:
        toml = os.path.join(d, "case.toml")
        _write_toml(sc, toml, tcp)
        run_dir = os.path.join(d, "run")
        cmd = ["nice", "-n", "10", exe, "run", toml, "--out", run_dir, "--force", "--json"]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        total = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(f"qoelab failed: {p.stderr}")
        summ = json.loads(p.stdout)
        with open(os.path.join(run_dir, "perf.json")) as f:
            perf = json.load(f)
    summ["perf"] = perf
    summ["perf"]["process_wall_s"] = round(total, 3)
    with open(out_json, "w") as f:
        json.dump(summ, f, indent=2)
    return summ


def _write_toml(sc, path, tcp=()):
    """The case's TOML with duration/seed overridden (text substitution on the original file) and
    `tcp` ("KEY=VALUE" TOML) appended as the flows' [flow.tcp] table (the case files have one [[flow]])."""
    import re
    with open(sc.path) as f:
        text = f.read()
    text = re.sub(r'(?m)^duration = .*$', f'duration = "{sc.config["duration"] / 1e9:g}s"', text)
    text = re.sub(r'(?m)^seed = .*$', f'seed = {sc.config["seed"]}', text)
    if tcp:
        assert text.count("[[flow]]") == 1 and "[flow.tcp]" not in text, sc.path
        text += "\n[flow.tcp]\n" + "".join(t.replace("=", " = ", 1) + "\n" for t in tcp)
    with open(path, "w") as f:
        f.write(text)


def run_ns3(py, spec, out_json, extra=()):
    cmd = ["nice", "-n", "10", py, os.path.join(HERE, "dumbbell.py"), "--aqm", spec["aqm"],
           "--flows", str(spec["flows"]), "--duration", f"{spec['duration']:g}", "--rate", f"{spec['rate']:g}",
           "--seed", str(spec["seed"]), "--out", out_json]
    if spec["buffer"] is not None:
        cmd += ["--buffer", str(spec["buffer"])]
    cmd += list(extra)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    total = time.perf_counter() - t0
    if p.returncode != 0 or not os.path.exists(out_json):
        raise RuntimeError(f"ns-3 driver failed ({p.returncode}): {p.stderr[-3000:]}")
    with open(out_json) as f:
        r = json.load(f)
    r["perf"]["process_wall_s"] = round(total, 3)
    with open(out_json, "w") as f:
        json.dump(r, f, indent=2)
    return r


def metrics_qoelab(s):
    b = next(l for l in s["links"] if l["name"] == "bottleneck")
    q = b["queue_delay_ms"]
    return {
        "util": b["utilization"], "jfi": s["jain_index"], "mean": q.get("mean"), "p50": q.get("p50"),
        "p95": q.get("p95"), "p99": q.get("p99"), "qdisc_mean": None, "qdisc_p99": None, "drops": b["dropped_packets"], "marks": b["marked_packets"],
        "goodputs": [f["goodput_bps"] for f in s["flows"]],
        "fast_recoveries": sum(f.get("fast_recoveries", 0) for f in s["flows"]),
        "rtos": sum(f.get("rto_count", 0) for f in s["flows"]),
        "pkts": s["packets"]["bottleneck"], "wall": s["perf"]["wall_s"],
        "pps": s["perf"]["bottleneck_packets_per_s"],
    }


def metrics_ns3(r):
    b = r["bottleneck"]
    # comparable with qoelab's sojourn: queue disc enqueue -> start of transmission, sent packets only
    q = b.get("queue_to_wire_delay_ms") or {}
    qd = b.get("queue_delay_ms") or {}
    return {
        "util": b["utilization"], "jfi": r["jain_index"], "mean": q.get("mean"), "p50": q.get("p50"),
        "p95": q.get("p95"), "p99": q.get("p99"), "qdisc_mean": qd.get("mean"), "qdisc_p99": qd.get("p99"),
        "drops": b["dropped_packets"], "marks": b["marked_packets"],
        "goodputs": [f["goodput_bps"] for f in r["flows"]],
        "fast_recoveries": r.get("tcp", {}).get("fast_recoveries"),
        "rtos": r.get("tcp", {}).get("rto_loss_states"),
        "pkts": r["packets_bottleneck"], "wall": r["perf"]["wall_s"],
        "pps": r["perf"]["bottleneck_packets_per_s"],
    }


def fmt(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"


def table(rows):
    lines = [
        "| case | sim | util % | JFI | mean delay ms | p50 ms | p95 ms | p99 ms | ns-3 qdisc-only mean / p99 ms | drops | bottleneck pkts | wall s | pkts / wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, dur, m_q, m_n in rows:
        for sim, m in (("qoelab", m_q), ("ns-3", m_n)):
            if m is None:
                continue
            lines.append(
                f"| {name} ({dur:g} s) | {sim} | {fmt(100 * m['util'], 2)} | {fmt(m['jfi'], 4)} | {fmt(m['mean'])} | "
                f"{fmt(m['p50'])} | {fmt(m['p95'])} | {fmt(m['p99'])} | "
                f"{'-' if m['qdisc_mean'] is None else fmt(m['qdisc_mean']) + ' / ' + fmt(m['qdisc_p99'])} | {m['drops']} | {m['pkts']} | "
                f"{fmt(m['wall'], 3)} | {m['pps']:,.0f} |")
    return "\n".join(lines) + "\n"


def _qoelab_cpu(sc):
    """CPU seconds of one in-process qoelab simulation (the core's run call only)."""
    from qoelab import _core
    c0 = time.process_time()
    _core.run(sc.to_json())
    return time.process_time() - c0


def speed(a):
    name = (a.cases or ["cubic4_fq_codel"])[0]
    sc, spec = load_case(name, a.duration, a.seed)
    res = {"case": name, "duration_s": spec["duration"], "qoelab": [], "ns3": []}
    for k in range(a.repeat):
        s = _run_qoelab_cli(sc, os.path.join(a.out, f"speed-{name}-{k}.qoelab.json"))
        cpu = _qoelab_cpu(sc)
        res["qoelab"].append({"pkts": s["packets"]["bottleneck"], "wall_s": s["perf"]["wall_s"],
                              "pps": s["perf"]["bottleneck_packets_per_s"], "cpu_s": round(cpu, 3),
                              "pps_cpu": round(s["packets"]["bottleneck"] / cpu, 1)})
        print("qoelab", res["qoelab"][-1], file=sys.stderr)
        r = run_ns3(a.ns3_python, spec, os.path.join(a.out, f"speed-{name}-{k}.ns3.json"), ["--no-trace"] + a.ns3_arg)
        res["ns3"].append({"pkts": r["packets_bottleneck"], "wall_s": r["perf"]["wall_s"],
                           "pps": r["perf"]["bottleneck_packets_per_s"], "import_s": r["perf"]["import_s"],
                           "cpu_s": r["perf"]["cpu_s"], "pps_cpu": r["perf"]["bottleneck_packets_per_cpu_s"]})
        print("ns-3", res["ns3"][-1], file=sys.stderr)
    with open(os.path.join(a.out, "speed.json"), "w") as f:
        json.dump(res, f, indent=2)
    lines = ["| simulator | run | bottleneck packets | wall s (simulation only) | bottleneck packets / wall s | CPU s | bottleneck packets / CPU s |",
             "|---|---|---|---|---|---|---|"]
    for sim in ("qoelab", "ns3"):
        for k, x in enumerate(res[sim]):
            lines.append(f"| {'ns-3 3.44' if sim == 'ns3' else 'qoelab'} | {k + 1} | {x['pkts']} | {x['wall_s']:.3f} | "
                         f"{x['pps']:,.0f} | {x['cpu_s']:.3f} | {x['pps_cpu']:,.0f} |")
    md = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "speed.md"), "w") as f:
        f.write(md)
    print(md)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ns3-python", default=os.path.join(REPO, ".venv-ns3", "bin", "python"))
    ap.add_argument("--out", default=os.path.join(REPO, "results", "ns3"))
    ap.add_argument("--cases", nargs="*", default=None, help="case names (scenarios/*.toml); default all")
    ap.add_argument("--duration", type=float, default=None, help="override simulated seconds")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument("--ns3-from", metavar="DIR", default=None,
                    help="read the ns-3 side from DIR/<case>-<duration>s-seed<seed>.ns3.json (e.g. "
                         "docs/validation/ns3-results) instead of running ns-3")
    ap.add_argument("--qoelab-tcp", action="append", default=[], metavar="KEY=VALUE",
                    help="a [flow.tcp] setting for the qoelab side, e.g. prr=false (repeatable)")
    ap.add_argument("--skip-qoelab", action="store_true")
    ap.add_argument("--ns3-arg", action="append", default=[], help="extra argument for dumbbell.py")
    ap.add_argument("--speed", action="store_true",
                    help="speed comparison only: cubic4_fq_codel (200 s), qoelab and ns-3 without trace sinks")
    ap.add_argument("--repeat", type=int, default=1, help="speed mode: runs per simulator")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    if a.speed:
        return speed(a)
    rows = []
    allres = {}
    for name in a.cases or case_names():
        sc, spec = load_case(name, a.duration, a.seed)
        tag = f"{name}-{spec['duration']:g}s-seed{spec['seed']}"
        mq = mn = None
        if not a.skip_qoelab:
            s = _run_qoelab_cli(sc, os.path.join(a.out, tag + ".qoelab.json"), a.qoelab_tcp)
            mq = metrics_qoelab(s)
            print(f"{tag}: qoelab util {mq['util']:.4f} mean {mq['mean']} ms wall {mq['wall']} s", file=sys.stderr)
        if a.ns3_from:
            with open(os.path.join(a.ns3_from, tag + ".ns3.json")) as f:
                mn = metrics_ns3(json.load(f))
        elif not a.skip_ns3:
            r = run_ns3(a.ns3_python, spec, os.path.join(a.out, tag + ".ns3.json"), [x for x in a.ns3_arg])
            mn = metrics_ns3(r)
            print(f"{tag}: ns-3   util {mn['util']:.4f} mean {mn['mean']} ms wall {mn['wall']} s", file=sys.stderr)
        rows.append((name, spec["duration"], mq, mn))
        allres[tag] = {"spec": spec, "qoelab": mq, "ns3": mn}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(allres, f, indent=2)
    md = table(rows)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
