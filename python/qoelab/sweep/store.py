"""The results store of a sweep directory (docs/tables.md, "Sweep store").

Layout::

    DIR/sweep.json                      format version, core version, the sweep (columns, runs, spec id)
    DIR/runs/<k[:2]>/<key>.json         one record per finished run (its commit marker, written last)
    DIR/tables/<table>/key=<key>/part.parquet   per-run tables, hive-partitioned by run key
    DIR/store/{runs,clients,flows,links}.parquet   the flattened summaries (rebuilt from the records)

Every file appears atomically (written to a temporary name, renamed into place), and a run's record
is written after its tables, so a run is in the store exactly when its record is: a sweep killed
at any point loses at most the runs in flight, and its next invocation runs only what is missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import tempfile

from qoelab.errors import InputError

STORE_FORMAT = 1
VIEWS = ("runs", "clients", "flows", "links")
#: Columns that are text even when every value is null (other all-null columns are doubles).
TEXT_COLUMNS = {"key", "status", "error", "client", "flow", "link", "name", "abr", "video", "kind", "cc", "aqm",
                "src", "dst", "scenario", "network", "invariants", "core_version", "config_hash", "schema"}
_TMP = ".qoelab-tmp-"


def _atomic_write(path: str, data: bytes) -> None:
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{_TMP}{os.getpid()}-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def is_store(path: str) -> bool:
    try:
        with open(os.path.join(path, "sweep.json")) as f:
            return json.load(f).get("schema") == "qoelab.sweep"
    except (OSError, ValueError, AttributeError):
        return False


class Store:
    """A sweep directory: records of finished runs, per-run tables, compacted Parquet views."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.meta = self._read_meta()

    # ------------------------------------------------------------------ creation and checks
    def _read_meta(self) -> dict:
        p = os.path.join(self.path, "sweep.json")
        try:
            with open(p) as f:
                meta = json.load(f)
        except FileNotFoundError:
            raise InputError(self.path, None, message="not a sweep store (no sweep.json; run `qoelab sweep SPEC "
                                                      "--out DIR` first)") from None
        except (OSError, ValueError) as e:
            raise InputError(p, None, message=f"unreadable sweep.json: {e}") from None
        if not isinstance(meta, dict) or meta.get("schema") != "qoelab.sweep":
            raise InputError(p, "schema", "\"qoelab.sweep\"", repr(meta.get("schema") if isinstance(meta, dict)
                                                                   else meta))
        if meta.get("store_format") != STORE_FORMAT:
            raise InputError(p, "store_format", f"{STORE_FORMAT} (this qoelab's store format)",
                             f"{meta.get('store_format')!r}: written by an incompatible qoelab version")
        return meta

    @classmethod
    def create_or_open(cls, path: str, sweep, force: bool = False) -> "Store":
        """Open ``path`` for ``sweep``: create it if it does not exist or is empty; resume it if it
        holds this same sweep written by this core; refuse (one line) otherwise, unless ``force``,
        which replaces a previous sweep store (never another kind of directory)."""
        from qoelab import _core
        path = os.path.abspath(path)
        core = _core.version()
        if os.path.lexists(path) and not os.path.isdir(path):
            raise InputError(path, None, message="output path exists and is not a directory")
        if os.path.isdir(path) and os.listdir(path):
            if not is_store(path):
                raise InputError(path, None, message="output directory exists, is not empty and is not a sweep "
                                                     "store (refusing to write into it)")
            st = cls(path)
            reason = None
            if st.meta.get("core_version") != core:
                reason = f"was written by qoelab core {st.meta.get('core_version')}, this is {core}"
            elif st.meta.get("spec_id") != sweep.spec_id:
                reason = "holds a different sweep (other axes, values, seeds or base scenario)"
            if reason is None:
                return st
            if not force:
                raise InputError(path, None, message=f"the store {reason}; use another --out, or --force to "
                                                     "replace it")
            shutil.rmtree(path)
        os.makedirs(path, exist_ok=True)
        meta = {"schema": "qoelab.sweep", "store_format": STORE_FORMAT, "core_version": core,
                "name": sweep.name, "description": sweep.description, "spec_path": os.path.abspath(sweep.path)
                if os.path.exists(sweep.path) else sweep.path,
                "spec_id": sweep.spec_id, "columns": sweep.columns, "repetitions": sweep.repetitions,
                "runs": len(sweep.runs), "points": len({r.index for r in sweep.runs}),
                "tables": sweep.tables, "extract": sweep.extract, "report": sweep.report,
                "column_values": {c: _distinct([r.point.get(c) for r in sweep.runs]) for c in sweep.columns}}
        _atomic_write(os.path.join(path, "sweep.json"), (json.dumps(meta, indent=1) + "\n").encode())
        if os.path.exists(sweep.path) and os.path.isfile(sweep.path):
            with open(sweep.path, "rb") as f:
                _atomic_write(os.path.join(path, "sweep.toml"), f.read())
        return cls(path)

    # ------------------------------------------------------------------ records
    def record_path(self, key: str) -> str:
        return os.path.join(self.path, "runs", key[:2], key + ".json")

    def done_keys(self) -> set:
        """Keys of the runs whose record is in the store; removes temporary files of killed writers."""
        out = set()
        root = os.path.join(self.path, "runs")
        if not os.path.isdir(root):
            return out
        for d in os.listdir(root):
            sub = os.path.join(root, d)
            if not os.path.isdir(sub):
                continue
            for n in os.listdir(sub):
                if n.endswith(".json") and not n.startswith("."):
                    out.add(n[:-5])
                elif n.startswith(_TMP):
                    _remove_if_dead(os.path.join(sub, n), n)
        return out

    def failed_keys(self) -> set:
        out = set()
        for rec in self.records():
            if rec.get("status") != "ok":
                out.add(rec["key"])
        return out

    def write_run(self, record: dict, tables: dict | None = None) -> None:
        """Write one finished run: its tables (Parquet bytes by name), then its record."""
        key = record["key"]
        for name, data in (tables or {}).items():
            _atomic_write(os.path.join(self.path, "tables", name, f"key={key}", "part.parquet"), data)
        _atomic_write(self.record_path(key), (json.dumps(record, separators=(",", ":"), allow_nan=True)
                                              + "\n").encode())

    def remove_runs(self, keys) -> None:
        for k in keys:
            with contextlib.suppress(OSError):
                os.unlink(self.record_path(k))

    def records(self):
        """Every record, in (index, rep) order."""
        recs = []
        root = os.path.join(self.path, "runs")
        for k in sorted(self.done_keys()):
            try:
                with open(os.path.join(root, k[:2], k + ".json")) as f:
                    recs.append(json.load(f))
            except (OSError, ValueError):
                continue
        recs.sort(key=lambda r: (r.get("index", 0), r.get("rep", 0), r["key"]))
        return recs

    # ------------------------------------------------------------------ compaction
    def _keys_digest(self, keys) -> str:
        return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()

    def compacted(self) -> bool:
        try:
            with open(os.path.join(self.path, "store", "manifest.json")) as f:
                m = json.load(f)
        except (OSError, ValueError):
            return False
        return m.get("keys_digest") == self._keys_digest(self.done_keys()) and m.get("store_format") == STORE_FORMAT

    def compact(self) -> dict:
        """Rebuild DIR/store/*.parquet from the records (rows sorted by index, rep): the same
        records give the same files, whatever the order or the back end that produced them."""
        import pyarrow.parquet as pq
        recs = self.records()
        columns = self.meta.get("columns", [])
        rows = {v: [] for v in VIEWS}
        for rec in recs:
            ids = {"key": rec["key"], "index": rec.get("index"), "rep": rec.get("rep"), "seed": rec.get("seed")}
            point = {c: rec.get("point", {}).get(c) for c in columns}
            s = rec.get("summary") or {}
            run = {**ids, **point, "status": rec.get("status"), "error": rec.get("error"),
                   "wall_s": rec.get("wall_s")}
            run.update(_flatten({k: v for k, v in s.items() if k not in ("flows", "links", "clients")}))
            m = rec.get("metrics") or {}
            run.update({k: v for k, v in _flatten(m.get("run") if isinstance(m.get("run"), dict) else {}).items()
                        if k not in ids and k not in ("status", "error", "wall_s")})
            rows["runs"].append(run)
            cm = m.get("clients") if isinstance(m.get("clients"), list) else []
            for i, c in enumerate(s.get("clients") or []):
                row = {**ids, **point, "client": c.get("name"), **_flatten(c)}
                row.pop("name", None)
                if i < len(cm) and isinstance(cm[i], dict):
                    row.update(_flatten(cm[i]))     # an extract metric named like a summary key replaces it
                rows["clients"].append(row)
            for f in s.get("flows") or []:
                row = {**ids, **point, "flow": f.get("name"), **_flatten(f)}
                row.pop("name", None)
                rows["flows"].append(row)
            for ln in s.get("links") or []:
                row = {**ids, **point, "link": ln.get("name"), **_flatten(ln)}
                row.pop("name", None)
                rows["links"].append(row)
        out = os.path.join(self.path, "store")
        os.makedirs(out, exist_ok=True)
        counts = {}
        for v in VIEWS:
            t = _to_arrow(rows[v], list({"key": 0, "index": 0, "rep": 0, "seed": 0, **{c: 0 for c in columns}}))
            fd, tmp = tempfile.mkstemp(prefix=f"{_TMP}{os.getpid()}-", dir=out)
            os.close(fd)
            try:
                pq.write_table(t, tmp, compression="zstd")
                os.chmod(tmp, 0o644)
                os.replace(tmp, os.path.join(out, f"{v}.parquet"))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            counts[v] = t.num_rows
        man = {"store_format": STORE_FORMAT, "keys_digest": self._keys_digest([r["key"] for r in recs]),
               "rows": counts}
        _atomic_write(os.path.join(out, "manifest.json"), (json.dumps(man, indent=1) + "\n").encode())
        return counts

    def ensure_compacted(self) -> None:
        if not self.compacted():
            self.compact()

    # ------------------------------------------------------------------ queries
    def table_names(self) -> list[str]:
        d = os.path.join(self.path, "tables")
        return sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []

    def connect(self):
        """A DuckDB connection with the views ``runs``, ``clients``, ``flows``, ``links`` and
        ``tables.<name>`` (per-run tables, with their run's ``key`` and column values)."""
        import duckdb
        self.ensure_compacted()
        con = duckdb.connect()
        st = os.path.join(self.path, "store")
        for v in VIEWS:
            con.execute(f"CREATE VIEW {v} AS SELECT * FROM read_parquet('{_sql_str(os.path.join(st, v + '.parquet'))}')")
        tabs = self.table_names()
        if tabs:
            con.execute("CREATE SCHEMA tables")
            cols = ", ".join(f'r."{c}"' for c in self.meta.get("columns", []))
            for t in tabs:
                glob = os.path.join(self.path, "tables", t, "*", "*.parquet")
                con.execute(
                    f'CREATE VIEW tables."{t}" AS SELECT t.*{", " + cols if cols else ""}, r.rep, r.seed '
                    f"FROM read_parquet('{_sql_str(glob)}', hive_partitioning = true, union_by_name = true) t "
                    f"JOIN runs r USING (key)")
        return con

    def sql(self, query: str):
        """Run a query; a pandas DataFrame."""
        return self._run(query).df()

    def arrow(self, query: str):
        """Run a query; a pyarrow Table."""
        import duckdb
        con = self.connect()
        try:
            rel = con.sql(query)
            for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):   # DuckDB 2.x, 1.x
                if hasattr(rel, name):
                    return getattr(rel, name)()
        except duckdb.Error as e:
            raise InputError(None, "query", message=str(e).splitlines()[0]) from None
        raise RuntimeError("this DuckDB has no Arrow export")  # pragma: no cover

    def _run(self, query: str):
        import duckdb
        con = self.connect()
        try:
            return con.execute(query)
        except duckdb.Error as e:
            raise InputError(None, "query", message=str(e).splitlines()[0]) from None


def open_store(path: str) -> Store:
    """A sweep directory's store: ``open_store(DIR).sql("SELECT ...")`` (pandas) or ``.arrow(...)``."""
    return Store(path)


# ----------------------------------------------------------------------------------------------


def _sql_str(s: str) -> str:
    return s.replace("'", "''")


def _remove_if_dead(path: str, name: str) -> None:
    pid = name[len(_TMP):].split("-", 1)[0]
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), 0)
            return
        except ProcessLookupError:
            pass
        except PermissionError:
            return
        with contextlib.suppress(OSError):
            os.unlink(path)


def _distinct(vals: list) -> list:
    out, seen = [], set()
    for v in vals:
        k = (type(v).__name__, v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _flatten(d: dict, prefix: str = "") -> dict:
    """Nested tables -> ``parent_child`` columns; lists are kept as JSON text."""
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "_"))
        elif isinstance(v, list):
            out[name] = json.dumps(v)
        else:
            out[name] = v
    return out


def _to_arrow(rows: list[dict], first: list[str]):
    """Rows -> an Arrow table with one type per column: int64 if every value is an integer, double
    if numbers, bool if booleans, string otherwise (numbers in a text column are written as text);
    missing values are nulls. Column order: ``first``, then first appearance."""
    import pyarrow as pa
    order = list(first)
    seen = set(order)
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                order.append(k)
    arrays = []
    for c in order:
        vals = [r.get(c) for r in rows]
        kinds = {("b" if isinstance(v, bool) else "i" if isinstance(v, int) else "f" if isinstance(v, float)
                  else "s") for v in vals if v is not None}
        if not kinds:   # only nulls: text for the text columns of the schema, else a number
            arrays.append(pa.array(vals, type=pa.string() if c in TEXT_COLUMNS else pa.float64()))
        elif kinds == {"b"}:
            arrays.append(pa.array(vals, type=pa.bool_()))
        elif kinds == {"i"} and all(v is None or -2 ** 63 <= v < 2 ** 63 for v in vals):
            arrays.append(pa.array(vals, type=pa.int64()))
        elif kinds <= {"i", "f"}:
            arrays.append(pa.array([None if v is None else float(v) for v in vals], type=pa.float64()))
        else:
            arrays.append(pa.array([None if v is None else (v if isinstance(v, str) else json.dumps(v))
                                    for v in vals], type=pa.string()))
    return pa.Table.from_arrays(arrays, names=order) if order else pa.table({})


def nan_to_none(x):
    return None if isinstance(x, float) and math.isnan(x) else x
