"""Running scenarios and handling their results (summary, Parquet tables, pcaps)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

from qoelab.errors import InputError


class Result:
    """The outcome of one run.

    ``summary`` is the dict written to summary.json; ``table(name)`` gives a pandas DataFrame,
    ``arrow(name)`` a pyarrow Table; ``tables`` lists the names; ``perf`` has wall-clock figures
    (kept out of the summary so that the summary is byte-identical for the same scenario + seed).
    """

    def __init__(self, scenario, summary: dict, raw_tables: dict, pcaps: dict, perf: dict):
        self.scenario = scenario
        self.summary = summary
        self._raw = raw_tables
        self._arrow = {}
        self.pcaps = pcaps
        self.perf = perf

    @property
    def tables(self) -> list[str]:
        return list(self._raw)

    def arrow(self, name: str):
        import numpy as np
        import pyarrow as pa
        if name not in self._raw:
            raise KeyError(f"no table {name!r}; recorded tables: {', '.join(self._raw)}")
        if name not in self._arrow:
            arrays, names = [], []
            for col, kind, data in self._raw[name]:
                names.append(col)
                if kind == "i64":
                    arrays.append(pa.array(np.frombuffer(data, dtype="<i8")))
                elif kind == "f64":
                    arrays.append(pa.array(np.frombuffer(data, dtype="<f8")))
                else:
                    arrays.append(pa.array(data, type=pa.string()))
            self._arrow[name] = pa.Table.from_arrays(arrays, names=names)
        return self._arrow[name]

    def table(self, name: str):
        return self.arrow(name).to_pandas()

    def write(self, out_dir: str, force: bool = False) -> str:
        """Write summary.json, perf.json, config.json, <table>.parquet, <link>.pcap into out_dir.

        Everything is written into a temporary sibling directory that is renamed at the end, so
        an interrupted run never leaves a half-written result."""
        import pyarrow.parquet as pq
        out_dir = os.path.abspath(out_dir)
        if os.path.exists(out_dir) and not force:
            if not os.path.isdir(out_dir) or os.listdir(out_dir):
                raise InputError(out_dir, None, message="output directory exists and is not empty (use --force to replace it)")
        parent = os.path.dirname(out_dir)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".qoelab-tmp-", dir=parent)
        try:
            with open(os.path.join(tmp, "summary.json"), "w") as f:
                json.dump(self.summary, f, indent=2)
                f.write("\n")
            with open(os.path.join(tmp, "perf.json"), "w") as f:
                json.dump(self.perf, f, indent=2)
                f.write("\n")
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(self.scenario.config, f, indent=1)
                f.write("\n")
            if self.scenario.path and os.path.isfile(self.scenario.path):
                shutil.copyfile(self.scenario.path, os.path.join(tmp, "scenario.toml"))
            for name in self.tables:
                pq.write_table(self.arrow(name), os.path.join(tmp, f"{name}.parquet"), compression="zstd")
            for link, data in self.pcaps.items():
                with open(os.path.join(tmp, f"{link}.pcap"), "wb") as f:
                    f.write(data)
            if os.path.exists(out_dir):
                old = out_dir + ".old-" + str(os.getpid())
                os.rename(out_dir, old)
                os.rename(tmp, out_dir)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(tmp, out_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out_dir


def run(scenario, seed: int | None = None, abrs: dict | None = None) -> Result:
    """Run a scenario (a path, a :class:`qoelab.scenario.Scenario` or a scenario dict).

    ``abrs`` maps ``"python:<name>"`` ABR names used by the scenario's clients to classes
    implementing :class:`qoelab.abr.Abr` (names of the form ``python:module:Class`` are imported
    automatically)."""
    from qoelab import _core
    from qoelab import scenario as sc
    if isinstance(scenario, (str, os.PathLike)):
        scenario = sc.load(os.fspath(scenario))
    elif isinstance(scenario, dict):
        scenario = sc.from_dict(scenario)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    classes = dict(scenario.meta.get("python_abrs", {}))
    classes.update(abrs or {})
    t0 = time.perf_counter()
    try:
        summary_json, tables, pcaps = _core.run(scenario.to_json(), classes or None)
    except ValueError as e:
        if len(e.args) == 2:
            path, msg = e.args
            for prefix, key in scenario.meta.get("origin", {}).items():
                if path == prefix or path.startswith(prefix + "."):
                    path = key + path[len(prefix):]
                    break
            raise InputError(scenario.path, path, message=msg) from None
        raise
    wall = time.perf_counter() - t0
    summary = json.loads(summary_json)
    pk = summary.get("packets", {}).get("bottleneck", 0)
    perf = {
        "wall_s": round(wall, 6),
        "events": summary.get("events"),
        "events_per_s": round(summary.get("events", 0) / wall, 1) if wall > 0 else None,
        "bottleneck_packets_per_s": round(pk / wall, 1) if wall > 0 else None,
        "simulated_s_per_wall_s": round(summary.get("duration_s", 0) / wall, 3) if wall > 0 else None,
    }
    return Result(scenario, summary, tables, pcaps, perf)
