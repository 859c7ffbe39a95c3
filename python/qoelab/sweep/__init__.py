"""Sweeps: parameter studies declared in a file, run on all cores or on Ray into a resumable
store queried with DuckDB (docs/sweeps.md).

    from qoelab.sweep import spec, runner
    sw = spec.load("examples/aqm-buffer-sweep.toml")
    runner.run(sw, "results/aqm-buffer")
    qoelab.open_store("results/aqm-buffer").sql("SELECT aqm, avg(qoe_mean) FROM clients GROUP BY aqm")
"""

from qoelab.sweep.store import Store, open_store

__all__ = ["Store", "open_store"]
