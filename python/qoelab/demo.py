"""`qoelab demo`: the main job on built-in defaults.

"What happens to viewers when two DASH players share a 6 Mbit/s bottleneck with a bulk download,
under each queue discipline?" Runs the same scenario with droptail at 6 BDP (bufferbloat),
CoDel, PIE and FQ-CoDel, prints viewer QoE, fairness and queueing delay side by side, and writes
every run's results (summary.json + Parquet tables) under the output directory.
"""

from __future__ import annotations

import json
import os
import time

AQMS = [("pfifo", "6bdp", "droptail 6 BDP"), ("codel", "1000pkts", "CoDel"), ("pie", "1000pkts", "PIE"),
        ("fq_codel", "1000pkts", "FQ-CoDel")]


def scenario(aqm: str, buffer: str) -> dict:
    return {
        "scenario": {"name": f"demo-{aqm}", "duration": "200s", "seed": 1},
        "topology": {"rate": "6Mbps", "rtt": "40ms", "buffer": buffer, "aqm": aqm},
        "client": [{"name": "viewer", "count": 2, "abr": "dynamic", "video": "synthetic:sabre-bbb",
                    "video_duration": "190s", "stagger": "3s"}],
        "flow": [{"kind": "bulk", "name": "download", "start": "40s", "stop": "160s"}],
        "output": {"loss_phases": True},
    }


def _is_run_output(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "summary.json")) and os.path.isfile(os.path.join(path, "config.json"))


def main(out_dir: str) -> int:
    from qoelab import outdir, results
    # refused before running: an empty path, or a directory in the way that is not an earlier run's output
    out_dir = outdir.given(out_dir)
    for aqm, _, _ in AQMS:
        outdir.check(os.path.join(out_dir, aqm), replaceable=_is_run_output,
                     hint="it is not the output of an earlier run; choose another --out")
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    t0 = time.perf_counter()
    for aqm, buf, label in AQMS:
        res = results.run(scenario(aqm, buf))
        path = res.write(os.path.join(out_dir, aqm), replaceable=_is_run_output)
        s = res.summary
        cl = s["clients"]
        link = s["links"][0]
        rows.append({
            "aqm": label,
            "bitrate_mbps": sum(c["avg_bitrate_bps"] for c in cl) / len(cl) / 1e6,
            "rebuffer_s": sum(c["rebuffer_s"] for c in cl),
            "qoe": sum(c["qoe_mean"] for c in cl) / len(cl),
            "switches": sum(c["switches"] for c in cl),
            "jfi_qoe": s["video"]["jfi_qoe"],
            "delay_ms": link["queue_delay_ms"].get("mean", 0.0),
            "p99_ms": link["queue_delay_ms"].get("p99", 0.0),
            "bulk_mbps": next(f["goodput_bps"] for f in s["flows"] if f["kind"] == "bulk") / 1e6,
            "path": path,
        })
    wall = time.perf_counter() - t0
    print("Two DASH viewers (dash.js DYNAMIC ABR) + a bulk download (40-160 s) on a 6 Mbit/s, 40 ms bottleneck:\n")
    print(f"{'queue':<16}{'bitrate':>9}{'rebuffer':>10}{'QoE/chunk':>11}{'switches':>10}{'JFI(QoE)':>10}"
          f"{'delay':>9}{'p99':>9}{'bulk':>8}")
    for r in rows:
        print(f"{r['aqm']:<16}{r['bitrate_mbps']:>7.2f}Mb{r['rebuffer_s']:>9.1f}s{r['qoe']:>11.2f}{r['switches']:>10d}"
              f"{r['jfi_qoe']:>10.3f}{r['delay_ms']:>7.1f}ms{r['p99_ms']:>7.0f}ms{r['bulk_mbps']:>6.2f}Mb")
    print("\nQoE per chunk = bitrate (Mbit/s) - 25 x rebuffer (s) - 2.5 x |bitrate change| (Minerva Eq. 1); "
          "delay = bottleneck queueing delay (mean, p99).")
    with open(os.path.join(out_dir, "demo.json"), "w") as f:
        json.dump(rows, f, indent=2)
    print(f"\n{len(rows)} runs, {wall:.1f} s wall. Results: {os.path.abspath(out_dir)}/<aqm>/ "
          "(summary.json, segments.parquet, tcp.parquet, queues.parquet, ...), table: demo.json")
    return 0
