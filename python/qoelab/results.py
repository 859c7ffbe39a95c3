"""Running scenarios and handling their results (summary, Parquet tables, pcaps)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from qoelab.errors import InputError


class Result:
    """The outcome of one run.

    ``summary`` is the dict written to summary.json; ``table(name)`` gives a pandas DataFrame,
    ``arrow(name)`` a pyarrow Table; ``tables`` lists the names; ``perf`` has wall-clock figures
    (kept out of the summary so that the summary is byte-identical for the same scenario + seed).
    """

    def __init__(self, scenario, summary: dict, raw_tables: dict, pcaps: dict, perf: dict,
                 scenario_file: bytes | None = None):
        self.scenario = scenario
        # the scenario file as it was when the run began (written as scenario.toml: a file edited
        # since would not be what ran)
        self.scenario_file = scenario_file
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

    def write(self, out_dir: str, force: bool = False, replaceable=None) -> str:
        """Write summary.json, perf.json, config.json, <table>.parquet, <link>.pcap into out_dir.

        Everything is written into a temporary sibling directory that is renamed at the end, so
        an interrupted run never leaves a half-written result."""
        import pyarrow.parquet as pq

        from qoelab import outdir
        out_dir = outdir.check(out_dir, force=force, replaceable=replaceable)
        with outdir.atomic_dir(out_dir) as tmp:
            with open(os.path.join(tmp, "summary.json"), "w") as f:
                json.dump(self.summary, f, indent=2)
                f.write("\n")
            with open(os.path.join(tmp, "perf.json"), "w") as f:
                json.dump(self.perf, f, indent=2)
                f.write("\n")
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(self.scenario.config, f, indent=1)
                f.write("\n")
            if getattr(self, "scenario_file", None) is not None:
                with open(os.path.join(tmp, "scenario.toml"), "wb") as f:
                    f.write(self.scenario_file)
            for name in self.tables:
                pq.write_table(self.arrow(name), os.path.join(tmp, f"{name}.parquet"), compression="zstd")
            for link, data in self.pcaps.items():
                with open(os.path.join(tmp, f"{link}.pcap"), "wb") as f:
                    f.write(data)
        return out_dir


class _Bar:
    """Progress of one run on stderr (simulated time, ETA): only on a terminal, only after
    ``after_s`` of wall time, erased when the run ends or is interrupted."""

    def __init__(self, label: str, after_s: float = 2.0, stream=None):
        self.stream = stream or sys.stderr
        self.label = label
        self.after_s = after_s
        self.t0 = time.monotonic()
        self.shown = False
        self.last = 0.0
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, now_s: float, end_s: float) -> None:
        if not self.enabled:
            return
        el = time.monotonic() - self.t0
        if el < self.after_s or el - self.last < 0.2:
            return
        self.last = el
        frac = min(1.0, now_s / end_s) if end_s > 0 else 1.0
        eta = el * (1 - frac) / frac if frac > 0 else float("nan")
        bar = "#" * int(frac * 30)
        line = (f"{self.label} [{bar:<30}] {now_s:,.1f}/{end_s:,.1f} s simulated, {el:.0f} s elapsed, "
                f"ETA {eta:.0f} s")
        self.stream.write("\r" + line[:120].ljust(120))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()
            self.shown = False


def run(scenario, seed: int | None = None, abrs: dict | None = None, progress: bool = False) -> Result:
    """Run a scenario (a path, a :class:`qoelab.scenario.Scenario` or a scenario dict).

    ``abrs`` maps ``"python:<name>"`` ABR names used by the scenario's clients to classes
    implementing :class:`qoelab.abr.Abr` (names of the form ``python:module:Class`` are imported
    automatically). ``progress=True`` shows a progress bar on stderr when it is a terminal and the
    run takes longer than 2 s. Ctrl-C raises KeyboardInterrupt within a fraction of a second."""
    import copy

    from qoelab import _core
    from qoelab import scenario as sc
    if isinstance(scenario, (str, os.PathLike)):
        scenario = sc.load(os.fspath(scenario))
    elif isinstance(scenario, dict):
        scenario = sc.from_dict(copy.deepcopy(scenario))   # (the caller's dict may change afterwards)
    elif not isinstance(scenario, sc.Scenario):
        raise TypeError(f"scenario: expected a path, a qoelab.scenario.Scenario or a scenario dict, found "
                        f"{type(scenario).__name__}")
    if seed is not None:
        scenario = scenario.with_seed(seed)
    scenario_file = None
    if scenario.path and os.path.isfile(scenario.path):
        try:
            with open(scenario.path, "rb") as f:
                scenario_file = f.read(64 << 20)
        except OSError:
            pass
    classes = dict(scenario.meta.get("python_abrs", {}))
    classes.update(abrs or {})
    bar = _Bar(f"run {scenario.config.get('name', 'scenario')}") if progress else None
    t0 = time.perf_counter()
    try:
        from qoelab.abr import run_guard
        with run_guard(scenario.config.get("seed", 1)) if classes else contextlib.nullcontext():
            summary_json, tables, pcaps = _core.run(scenario.to_json(), classes or None, bar)
    except ValueError as e:
        if len(e.args) == 2:
            from qoelab.scenario import abr_client_path
            path, msg = abr_client_path(scenario.config, *e.args)
            for prefix, key in scenario.meta.get("origin", {}).items():
                if path == prefix or path.startswith(prefix + "."):
                    path = key + path[len(prefix):]
                    break
            raise InputError(scenario.path, path, message=msg) from None
        raise
    finally:
        if bar:
            bar.close()
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
    return Result(scenario, summary, tables, pcaps, perf, scenario_file)
