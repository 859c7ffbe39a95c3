"""``qoelab bench --sweep N``: the sweep engine's own cost (docs/benchmarks.md, "Sweeps").

A sweep of N short runs (4 AQMs x 5 link rates x N/20 seeds; 5 Cubic flows for 2 s on a 20 ms
dumbbell, the ``flows`` table kept: 100 rows per run) is run on all cores into a fresh store, then
queried. Reported: runs per minute; the simulation's own wall time per run (inside the core) and
the overhead per run beyond it (scenario building, the worker round trip, result conversion,
Parquet and record writes: ``jobs x wall / runs - simulation``), also measured with one process on
a subset, where nothing overlaps; the driver's peak RSS; the compaction time; and DuckDB query
times over the per-run ``flows`` table (N x 100 rows) and the views.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
import time


def _spec(n: int) -> dict:
    reps = max(1, n // 20)
    return {
        "sweep": {"name": f"bench-{n}", "repetitions": reps, "tables": ["flows"]},
        "base": {"scenario": {"name": "bench-sweep", "duration": "2s", "seed": 1},
                 "topology": {"rate": "4Mbps", "rtt": "20ms", "buffer": "1bdp", "aqm": "fq_codel"},
                 "flow": [{"kind": "bulk", "count": 5}],
                 "output": {"tables": ["flows"], "sample_interval": "100ms"}},
        "axes": {"topology.aqm": ["pfifo", "codel", "pie", "fq_codel"],
                 "topology.rate": ["2Mbps", "4Mbps", "6Mbps", "8Mbps", "10Mbps"]},
    }


QUERIES = (
    ("count and mean over tables.flows", "SELECT count(*), avg(goodput_bps) FROM tables.flows"),
    ("group by aqm, rate over tables.flows",
     "SELECT aqm, rate, avg(goodput_bps), quantile_cont(goodput_bps, 0.95) FROM tables.flows GROUP BY ALL"),
    ("runs view: group by aqm, rate", "SELECT aqm, rate, count(*), avg(jain_index) FROM runs GROUP BY ALL"),
    ("flows view: join runs, per-seed mean",
     "SELECT f.aqm, r.seed % 10 AS s, avg(f.goodput_bps) FROM flows f JOIN runs r USING (key) GROUP BY ALL"),
)


def main(n: int = 10_000, jobs: int = 0, json_out: bool = False, keep: str | None = None, serial: int = 500) -> int:
    from qoelab.sweep import runner, spec
    from qoelab.sweep.store import Store
    jobs = jobs or os.cpu_count() or 1
    from qoelab.outdir import own_tmp_prefix
    tmp = tempfile.mkdtemp(prefix=own_tmp_prefix("bench-sweep"))
    out = keep or os.path.join(tmp, "store")
    try:
        t = time.perf_counter()
        sw = spec.from_dict(_spec(n), os.path.join(tmp, "bench.toml"))
        expand_s = time.perf_counter() - t
        res = runner.run(sw, out, jobs=jobs, quiet=json_out)
        ran = res["ran"]
        sim_per_run = res["sim_wall_s"] / ran if ran else float("nan")
        t = time.perf_counter()
        Store(out).compact()
        compact_s = time.perf_counter() - t
        st = Store(out)
        qt = []
        for label, q in QUERIES:
            st.sql(q)     # warm the file cache once
            t = time.perf_counter()
            rows = st.sql(q)
            qt.append({"query": label, "sql": q, "s": round(time.perf_counter() - t, 4), "rows_out": len(rows)})
        nrows = int(st.sql("SELECT count(*) AS n FROM tables.flows")["n"][0])
        # one process on a subset: the overhead per run without overlap
        sub = spec.from_dict(_spec(serial), os.path.join(tmp, "bench-serial.toml"))
        rs = runner.run(sub, os.path.join(tmp, "serial"), jobs=1, quiet=True)
        report = {
            "runs": ran, "jobs": jobs, "wall_s": res["wall_s"], "expand_s": round(expand_s, 3),
            "runs_per_minute": round(60 * ran / res["wall_s"], 1) if res["wall_s"] else None,
            "sim_ms_per_run": round(1e3 * sim_per_run, 3),
            "overhead_ms_per_run": round(1e3 * (jobs * res["wall_s"] / ran - sim_per_run), 3) if ran else None,
            "serial_runs": rs["ran"],
            "serial_overhead_ms_per_run": round(1e3 * (rs["wall_s"] - rs["sim_wall_s"]) / rs["ran"], 3),
            "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "compact_s": round(compact_s, 3), "flows_table_rows": nrows, "queries": qt,
            "store_mb": round(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs) / 2**20, 1),
        }
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    if json_out:
        print(json.dumps(report, indent=2))
    else:
        r = report
        print(f"sweep of {r['runs']:,} runs on {r['jobs']} processes: {r['wall_s']:.1f} s, {r['runs_per_minute']:,.0f} "
              f"runs/min; simulation {r['sim_ms_per_run']:.2f} ms/run, overhead {r['overhead_ms_per_run']:.2f} ms/run "
              f"(one process, {r['serial_runs']} runs: {r['serial_overhead_ms_per_run']:.2f} ms/run)")
        print(f"expansion {r['expand_s']:.2f} s; driver peak RSS {r['driver_peak_rss_mb']:.0f} MB; compaction "
              f"{r['compact_s']:.2f} s; store {r['store_mb']:.0f} MB")
        for q in r["queries"]:
            print(f"  {q['s'] * 1e3:8.1f} ms  {q['query']} ({r['flows_table_rows']:,} rows in tables.flows)")
    return 0
