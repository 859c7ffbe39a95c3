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
import re
import shutil
import tempfile

from qoelab import outdir
from qoelab.errors import InputError, json_input, read_input, reraise_interrupt

STORE_FORMAT = 1
# The compacted views' layout (store/manifest.json "views"): views of another layout are made again
# from the records. 2: the run's seed is uint64 (was int64, so sweeps' seeds stopped at 2^63 - 1).
VIEWS_VERSION = 2
VIEWS = ("runs", "clients", "flows", "links")
ROW_GROUP = 131_072
#: Columns that are text even when every value is null (other all-null columns are doubles).
TEXT_COLUMNS = {"key", "status", "error", "client", "flow", "link", "name", "abr", "video", "kind", "cc", "aqm",
                "src", "dst", "scenario", "network", "invariants", "core_version", "config_hash", "schema"}
_TMP = outdir.TMP_PREFIX


def _atomic_write(path: str, data: bytes) -> None:
    d = os.path.dirname(path)
    up = d
    while not os.path.isdir(up):   # a file where the store keeps a folder (was an internal error)
        if os.path.lexists(up):
            raise _not_folder(up, "part of the store")
        up = os.path.dirname(up)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=outdir.tmp_prefix(), dir=d)
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
    p = os.path.join(path, "sweep.json")
    try:
        if not os.path.isfile(p):   # (a FIFO would block the open)
            return False
        with open(p) as f:
            return json.loads(f.read(MAX_FILE_BYTES)).get("schema") == "qoelab.sweep"
    except (OSError, ValueError, AttributeError, RecursionError):
        return False


# The largest file of a store read whole (sweep.json, a run record, the manifest): a 1e5-run
# sweep's sweep.json is a few MB, a record of 10^4 video sessions about 10 MB.
MAX_FILE_BYTES = 256 * 2**20


_KEY_RE = re.compile(r"[0-9a-f]{64}")


def _not_folder(path: str, what: str) -> InputError:
    return InputError(_printable(path), None, message=f"expected a folder ({what}), found a file; the store is "
                                                      "damaged: remove it, or this path, and run the sweep again")


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _printable(path: str) -> str:
    """A path for an error line, whatever bytes its names hold (non-UTF-8 names are escaped)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _read_file(path: str, what: str) -> bytes | None:
    """The bytes of a store's file ``path``, None if it does not exist; a folder, a device, a pipe
    or socket (a FIFO blocked the command; /dev/zero filled memory) or a file over
    MAX_FILE_BYTES is an :class:`InputError` naming it."""
    if not os.path.exists(path):   # (a dangling link: as if gone)
        return None
    return read_input(path, what, MAX_FILE_BYTES)


_MISSING = object()


def found(v) -> str:
    """A JSON value as an error message shows it (what was found)."""
    if v is _MISSING:
        return "no such key"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        t = repr(v)
        return t if len(t) <= 40 else f"an integer of {len(t)} digits"
    if isinstance(v, str):
        return repr(v) if len(v) <= 40 else f"{v[:40]!r}... ({len(v)} characters)"
    if isinstance(v, list):
        return f"a list of {len(v)} item{'s' if len(v) > 1 else ''}" if v else "an empty list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def check_columns(columns, path: str) -> list:
    """sweep.json's ``columns``: distinct identifiers, none of them reserved (the rule of sweep files,
    docs/sweeps.md); else an :class:`InputError` naming ``path``."""
    from qoelab.sweep.spec import _COL_RE, RESERVED
    if not isinstance(columns, list):
        raise InputError(path, "columns", "a list of column names", found(columns))
    seen = set()
    for i, c in enumerate(columns):
        if not isinstance(c, str) or not _COL_RE.match(c):
            raise InputError(path, f"columns.{i}", "a column name (an identifier: letters, digits, _)", found(c))
        if c in RESERVED:
            raise InputError(path, f"columns.{i}", f"a column name other than {', '.join(sorted(RESERVED))}",
                             repr(c))
        if c in seen:
            raise InputError(path, f"columns.{i}", "distinct column names", f"{c!r} twice")
        seen.add(c)
    return columns


def check_record(rec, path: str, key: str) -> dict:
    """A run record (``DIR/runs/<k[:2]>/<key>.json``) as :mod:`qoelab.sweep.runner` writes it, or an
    :class:`InputError` naming the file and the key (the store's views are built from the records,
    so a record edited or damaged by hand is reported here, before anything reads it)."""
    def bad(where, expected, v):
        raise InputError(path, where, expected, found(v))
    if not isinstance(rec, dict):
        bad(None, "a JSON object (a run record)", rec)
    if rec.get("key", _MISSING) != key:
        bad("key", f"the run key of the file's name, {key!r}", rec.get("key", _MISSING))
    for k in ("index", "rep", "seed"):
        v = rec.get(k, _MISSING)
        top = 64 if k == "seed" else 63
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2 ** top:
            bad(k, f"an integer from 0 to 2^{top} - 1", v)
    point = rec.get("point")
    if point is not None and not isinstance(point, dict):
        bad("point", "an object of column values", point)
    if rec.get("status", _MISSING) not in ("ok", "error"):
        bad("status", '"ok" or "error"', rec.get("status", _MISSING))
    if not isinstance(rec.get("error"), (str, type(None))):
        bad("error", "a string or null", rec["error"])
    for k in ("wall_s", "sim_wall_s"):
        v = rec.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            bad(k, "a number or null", v)
    s = rec.get("summary")
    if s is not None:
        if not isinstance(s, dict):
            bad("summary", "an object (the run's summary.json) or null", s)
        for k in ("flows", "links", "clients"):
            items = s.get(k)
            if items is None:
                continue
            if not isinstance(items, list):
                bad(f"summary.{k}", "a list of objects or null", items)
            for i, it in enumerate(items):
                if not isinstance(it, dict):
                    bad(f"summary.{k}.{i}", "an object", it)
    m = rec.get("metrics")
    if m is not None and not isinstance(m, dict):
        bad("metrics", "an object (the extract hook's metrics) or null", m)
    return rec


class Store:
    """A sweep directory: records of finished runs, per-run tables, compacted Parquet views."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.meta = self._read_meta()

    # ------------------------------------------------------------------ creation and checks
    def _read_meta(self) -> dict:
        p = os.path.join(self.path, "sweep.json")
        data = _read_file(p, "the sweep's description, sweep.json")
        if data is None:
            raise InputError(self.path, None, message="not a sweep store (no sweep.json; run `qoelab sweep SPEC "
                                                      "--out DIR` first)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(p, None, "a readable UTF-8 file", str(e)) from None
        meta = json_input(text, p)
        if not isinstance(meta, dict) or meta.get("schema") != "qoelab.sweep":
            raise InputError(p, "schema", "\"qoelab.sweep\"", repr(meta.get("schema") if isinstance(meta, dict)
                                                                   else meta))
        if meta.get("store_format") != STORE_FORMAT:
            raise InputError(p, "store_format", f"{STORE_FORMAT} (this qoelab's store format)",
                             f"{meta.get('store_format')!r}: written by an incompatible qoelab version")
        check_columns(meta.get("columns", []), p)
        return meta

    @property
    def meta_path(self) -> str:
        """DIR/sweep.json (the sweep as stored; the report's panels are read from it)."""
        return os.path.join(self.path, "sweep.json")

    @classmethod
    def create_or_open(cls, path: str, sweep, force: bool = False) -> "Store":
        """Open ``path`` for ``sweep``: create it if it does not exist or is empty; resume it if it
        holds this same sweep written by this core; refuse (one line) otherwise, unless ``force``,
        which replaces a previous sweep store (never another kind of directory)."""
        from qoelab import _core
        path = outdir.given(path)
        outdir.creatable(path)
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
                reason = "holds a different sweep (other axes, values, seeds, base scenario or python: ABR code)"
            elif st.meta.get("extract") != sweep.extract:
                # what each run records: resuming would mix the two (found by a probe: 43 runs of one
                # hook, 5 of the other, exit 0)
                reason = (f"was written with extract = {st.meta.get('extract')!r}, this sweep file has "
                          f"{sweep.extract!r} (its runs would record other metrics)")
            elif list(st.meta.get("tables") or []) != list(sweep.tables or []):
                reason = (f"keeps the tables {st.meta.get('tables')!r}, this sweep file asks for {sweep.tables!r} "
                          "(its runs would keep others)")
            if reason is None:
                st.clean_stale()
                st._refresh_description(sweep)
                return st
            if not force:
                raise InputError(path, None, message=f"the store {reason}; use another --out, or --force to "
                                                     "replace it")
            outdir.refuse_if_holds_cwd(path)
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

    def _refresh_description(self, sweep) -> None:
        """On resumption: what does not change the runs (name, description, `[report]`) is taken
        from the sweep file given now, and its copy `sweep.toml` replaced, so that `report` draws
        the panels of the file the user last gave (they were kept from the first file, silently)."""
        new = {"name": sweep.name, "description": sweep.description, "report": sweep.report}
        if all(self.meta.get(k) == v for k, v in new.items()):
            return
        meta = {**self.meta, **new}
        if os.path.exists(sweep.path):
            meta["spec_path"] = os.path.abspath(sweep.path)
        _atomic_write(os.path.join(self.path, "sweep.json"), (json.dumps(meta, indent=1) + "\n").encode())
        if os.path.isfile(sweep.path):
            with open(sweep.path, "rb") as f:
                _atomic_write(os.path.join(self.path, "sweep.toml"), f.read())
        self.meta = meta

    def clean_stale(self) -> None:
        """Remove temporary files left by killed writers (their process is gone)."""
        for d, _, files in os.walk(self.path):
            for n in files:
                if n.startswith(_TMP):
                    _remove_if_dead(os.path.join(d, n), n)

    # ------------------------------------------------------------------ records
    def record_path(self, key: str) -> str:
        return os.path.join(self.path, "runs", key[:2], key + ".json")

    def done_keys(self) -> set:
        """Keys of the runs whose record is in the store; removes temporary files of killed writers."""
        out = set()
        root = os.path.join(self.path, "runs")
        if os.path.lexists(root) and not os.path.isdir(root):
            raise _not_folder(root, "the run records")
        if not os.path.isdir(root):
            return out
        for d in os.listdir(root):
            sub = os.path.join(root, d)
            if not os.path.isdir(sub):
                if not d.startswith((".", _TMP)):   # (a file there failed only when a run was written into it)
                    raise _not_folder(sub, "run records")
                continue
            for n in os.listdir(sub):
                if n.endswith(".json") and not n.startswith("."):
                    if not _KEY_RE.fullmatch(n[:-5]) or n[:2] != d:   # (a non-UTF-8 name was an internal error)
                        raise InputError(_printable(os.path.join(sub, n)), None,
                                         message="not a run record's name (the run's key, 64 hex digits, in the "
                                                 "folder of its first two); remove it")
                    out.add(n[:-5])
                elif n.startswith(_TMP):
                    _remove_if_dead(os.path.join(sub, n), n)
        return out

    def failed_keys(self) -> set:
        out = set()
        for key in self.done_keys():
            rec = self.record(key)
            if rec is not None and rec["status"] != "ok":
                out.add(key)
        return out

    def check_runs(self, keys) -> None:
        """Check the stored runs ``keys`` before any run is added: each record (:meth:`record`) and
        each of its table partitions (a folder holding a regular file, or absent). A damaged run of
        a resumed sweep is reported here, in one line, instead of after the missing runs have been
        simulated (compaction reads them all). The partitions' Parquet contents are read only by
        compaction (a schema read per partition would cost more than a resume is worth)."""
        names = self.table_names()
        for key in sorted(keys):
            if self.record(key) is None:
                continue
            for t in names:
                f = os.path.join(self.path, "tables", t, f"key={key}", "part.parquet")
                if self._part_present(key, f) and not os.path.isfile(f):
                    raise self._bad_part(key, f, OSError("not a regular file"))

    def write_run(self, record: dict, tables: dict | None = None) -> None:
        """Write one finished run: its tables (Parquet bytes by name), then its record."""
        key = record["key"]
        for name, data in (tables or {}).items():
            _atomic_write(os.path.join(self.path, "tables", name, f"key={key}", "part.parquet"), data)
        _atomic_write(self.record_path(key), (json.dumps(record, separators=(",", ":"), allow_nan=True,
                                                         default=_json_default) + "\n").encode())

    def remove_runs(self, keys) -> None:
        for k in keys:
            with contextlib.suppress(OSError):
                os.unlink(self.record_path(k))

    def records(self):
        """Every record, in (index, rep) order (checked: a corrupt one is an :class:`InputError`)."""
        recs = [r for r in map(self.record, sorted(self.done_keys())) if r is not None]
        recs.sort(key=lambda r: (r["index"], r["rep"], r["key"]))
        return recs

    def record(self, key: str) -> dict | None:
        """The record of run ``key``, checked (:func:`check_record`): a record that is not valid JSON or
        not what `qoelab sweep` writes is an :class:`InputError` naming the file and the key; None if
        the record is gone (removed since the directory was listed)."""
        path = self.record_path(key)
        data = _read_file(path, "a run record")
        if data is None:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(path, f"byte {e.start}", "UTF-8 text (a run record written by qoelab; delete it to run "
                                                      "that run again)", repr(data[e.start:e.start + 4])) from None
        return check_record(json_input(text, path, "valid JSON (a run record written by qoelab; delete it to run "
                                                   "that run again)", unique_keys=False), path, key)

    # ------------------------------------------------------------------ compaction
    def _keys_digest(self, keys) -> str:
        return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()

    def compacted(self) -> bool:
        p = os.path.join(self.path, "store", "manifest.json")
        try:
            if not os.path.isfile(p):   # (made again: a FIFO would block, /dev/zero fill memory)
                return False
            with open(p) as f:
                m = json.loads(f.read(MAX_FILE_BYTES + 1))
        except (OSError, ValueError):
            return False
        if not isinstance(m, dict):
            return False
        st = os.path.join(self.path, "store")
        files = [os.path.join(st, v + ".parquet") for v in VIEWS] + \
            [os.path.join(st, "tables", t + ".parquet") for t in self.table_names()]
        return (m.get("keys_digest") == self._keys_digest(self.done_keys()) and m.get("store_format") == STORE_FORMAT
                and m.get("views") == VIEWS_VERSION and m.get("columns") == self.meta.get("columns", [])
                and all(map(os.path.isfile, files)))

    def _rows(self, rec: dict, columns: list) -> dict:
        """One record's rows of each view (``rec`` checked by :func:`check_record`). The run's
        identity and the sweep's columns come first and are never replaced: a summary field named
        like one of them (an axis called ``events``) is kept as ``summary_<name>``, an extract
        metric as ``metrics_<name>``."""
        ids = {"key": rec["key"], "index": rec["index"], "rep": rec["rep"], "seed": rec["seed"]}
        point = {c: (rec.get("point") or {}).get(c) for c in columns}
        s = rec.get("summary") or {}

        def add(row: dict, fields: dict, protected: set, prefix: str) -> None:
            for k, v in fields.items():
                if k not in protected:
                    row[k] = v
                elif row[k] != v:       # (the summary's own seed equals the run's: nothing to keep)
                    row[f"{prefix}_{k}"] = v

        run = {**ids, **point, "status": rec.get("status"), "error": rec.get("error"), "wall_s": rec.get("wall_s")}
        fixed = set(run)
        add(run, _flatten({k: v for k, v in s.items() if k not in ("flows", "links", "clients")}), fixed, "summary")
        m = rec.get("metrics") or {}
        add(run, _flatten(m.get("run") if isinstance(m.get("run"), dict) else {}), fixed, "metrics")
        out = {"runs": [run], "clients": [], "flows": [], "links": []}
        cm = m.get("clients") if isinstance(m.get("clients"), list) else []
        for i, c in enumerate(s.get("clients") or []):
            row = {**ids, **point, "client": c.get("name")}
            fixed = set(row)
            add(row, {k: v for k, v in _flatten(c).items() if k != "name"}, fixed, "summary")
            if i < len(cm) and isinstance(cm[i], dict):
                add(row, _flatten(cm[i]), fixed, "metrics")   # a metric named like a summary field replaces it
            out["clients"].append(row)
        for view, items, idcol in (("flows", s.get("flows"), "flow"), ("links", s.get("links"), "link")):
            for f in items or []:
                row = {**ids, **point, idcol: f.get("name")}
                add(row, {k: v for k, v in _flatten(f).items() if k != "name"}, set(row), "summary")
                out[view].append(row)
        return out

    def _load(self, key: str) -> dict | None:
        """The record of run ``key`` as stored (not checked; None if unreadable): see :meth:`record`."""
        try:
            data = _read_file(self.record_path(key), "a run record")
            return None if data is None else json.loads(data)
        except (OSError, ValueError, RecursionError):
            return None

    def compact(self, batch: int = 2000) -> dict:
        """Rebuild DIR/store/*.parquet from the records (rows sorted by index, rep; the same records
        give the same files, whatever the order or the back end that produced them), and merge each
        per-run table into DIR/store/tables/<name>.parquet (with the run's columns). Two passes over
        the records (types, then rows in batches), so memory does not grow with the sweep."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        # the system allocator returns freed memory; mimalloc/jemalloc keep it, and the driver's RSS
        # would grow with the number of per-run tables read here
        pa.set_memory_pool(pa.system_memory_pool())
        columns = self.meta.get("columns", [])
        for d in (os.path.join(self.path, "store"), os.path.join(self.path, "store", "tables")):
            if os.path.isdir(d):
                for n in os.listdir(d):
                    if n.startswith(_TMP):
                        _remove_if_dead(os.path.join(d, n), n)
        first = list({"key": 0, "index": 0, "rep": 0, "seed": 0, **{c: 0 for c in columns}})
        order, kinds, names, points = [], {v: {} for v in VIEWS}, {v: list(first) for v in VIEWS}, {}
        for key in sorted(self.done_keys()):     # sorted: the same records give the same column order
            rec = self.record(key)
            if rec is None:
                continue
            order.append((rec["index"], rec["rep"], key))
            points[key] = {**{c: (rec.get("point") or {}).get(c) for c in columns}, "rep": rec["rep"],
                           "seed": rec["seed"]}
            for v, rows in self._rows(rec, columns).items():
                kv, nv = kinds[v], names[v]
                for row in rows:
                    for k, val in row.items():
                        if k not in kv:
                            kv[k] = set()
                            if k not in first:
                                nv.append(k)
                        if val is not None:
                            kv[k].add(_kind(val))
        order.sort()
        out = os.path.join(self.path, "store")
        if os.path.lexists(out) and not os.path.isdir(out):
            raise InputError(out, None, message="not a folder (the store's compacted views are made there); "
                                                "remove it to make them again")
        os.makedirs(out, exist_ok=True)
        schemas = {v: _schema(names[v], kinds[v]) for v in VIEWS}
        tmps, writers, counts = {}, {}, {v: 0 for v in VIEWS}
        try:
            for v in VIEWS:
                fd, tmps[v] = tempfile.mkstemp(prefix=outdir.tmp_prefix(), dir=out)
                os.close(fd)
                writers[v] = pq.ParquetWriter(tmps[v], schemas[v], compression="zstd")
            buf = {v: [] for v in VIEWS}

            def flush(v):
                if buf[v]:
                    writers[v].write_table(_table(buf[v], schemas[v]))
                    counts[v] += len(buf[v])
                    buf[v] = []
            for _, _, key in order:
                rec = self.record(key)
                if rec is None:     # removed since the first pass (--retry-failed in another process)
                    continue
                for v, rows in self._rows(rec, columns).items():
                    buf[v].extend(rows)
                    if len(buf[v]) >= batch:
                        flush(v)
            for v in VIEWS:
                flush(v)
                writers[v].close()
                os.chmod(tmps[v], 0o644)
                os.replace(tmps[v], os.path.join(out, f"{v}.parquet"))
        except BaseException:
            for v, t in tmps.items():
                with contextlib.suppress(Exception):
                    writers[v].close()
                with contextlib.suppress(OSError):
                    os.unlink(t)
            raise
        counts.update({f"tables.{t}": n for t, n in self._compact_tables(out, columns, order, points).items()})
        man = {"store_format": STORE_FORMAT, "views": VIEWS_VERSION, "keys_digest": self._keys_digest([k for _, _, k in order]),
               "columns": columns, "rows": counts}
        _atomic_write(os.path.join(out, "manifest.json"), (json.dumps(man, indent=1) + "\n").encode())
        return counts

    def _compact_tables(self, out: str, columns: list, order: list, points: dict) -> dict:
        """store/tables/<name>.parquet: every committed run's partition of table <name> in (index,
        rep) order, with the run's key, columns, rep and seed in front; one run at a time, so memory
        does not grow with the sweep."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        tdir = os.path.join(out, "tables")
        if os.path.lexists(tdir) and not os.path.isdir(tdir):
            raise _not_folder(tdir, "the compacted tables")
        names = self.table_names()
        counts = {}
        if os.path.isdir(tdir):
            for n in os.listdir(tdir):
                if n.endswith(".parquet") and n[:-8] not in names:
                    os.unlink(os.path.join(tdir, n))
        if not names:
            return counts
        os.makedirs(tdir, exist_ok=True)
        head_schema = pa.schema([f for f in _schema(["key"] + columns + ["rep", "seed"], {
            "key": {"s"}, **{c: {_kind(p[c]) for p in points.values() if p.get(c) is not None} for c in columns},
            "rep": {"i"}, "seed": {"i"}})])
        for t in names:
            files = [(key, os.path.join(self.path, "tables", t, f"key={key}", "part.parquet")) for _, _, key in order]
            files = [(k, f) for k, f in files if self._part_present(k, f)]
            fields: dict = {}
            for key, f in files:
                for fld in self._part_schema(key, f):
                    if fld.name not in fields:
                        fields[fld.name] = fld.type
                    elif fields[fld.name] != fld.type:
                        fields[fld.name] = pa.float64() if all(pa.types.is_integer(x) or pa.types.is_floating(x)
                                                                for x in (fields[fld.name], fld.type)) else pa.string()
            body = [pa.field(n, ty) for n, ty in fields.items() if n not in head_schema.names]
            schema = pa.schema(list(head_schema) + body)
            fd, tmp = tempfile.mkstemp(prefix=outdir.tmp_prefix(), dir=tdir, suffix=".parquet")
            os.close(fd)
            n = 0
            pending, pending_rows = [], 0
            try:
                with pq.ParquetWriter(tmp, schema, compression="zstd") as w:
                    for i, (key, f) in enumerate(files):
                        part = self._part_table(key, f)
                        p = points[key]
                        cols = []
                        for fld in schema:
                            if fld.name in head_schema.names:
                                v = key if fld.name == "key" else p.get(fld.name)
                                cols.append(pa.array([v] * part.num_rows, type=fld.type) if not
                                            (pa.types.is_string(fld.type) and v is not None and not isinstance(v, str))
                                            else pa.array([json.dumps(v)] * part.num_rows, type=fld.type))
                            elif fld.name in part.column_names:
                                cols.append(_cast(part.column(fld.name), fld.type, f, fld.name))
                            else:
                                cols.append(pa.nulls(part.num_rows, type=fld.type))
                        pending.append(pa.Table.from_arrays(cols, schema=schema))
                        pending_rows += part.num_rows
                        n += part.num_rows
                        if pending_rows >= ROW_GROUP or i == len(files) - 1:     # row groups of ~128k rows
                            w.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP)
                            pending, pending_rows = [], 0
                os.chmod(tmp, 0o644)
                os.replace(tmp, os.path.join(tdir, f"{t}.parquet"))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            counts[t] = n
        return counts

    def _bad_part(self, key: str, f: str, e: Exception) -> InputError:
        rec = os.path.relpath(self.record_path(key), self.path)
        return InputError(f, None, message=f"not a Parquet file written by qoelab ({_first_line(e)}); delete it and "
                                           f"its run's record {rec} and run the sweep again to remake both")

    def _part_present(self, key: str, f: str) -> bool:
        """Whether run ``key`` kept this table (its partition ``f``); a partition folder that is not a
        folder or a part that is a dangling link or a link loop is an :class:`InputError` (they
        were silently left out of the results, or an internal error when the run was made again)."""
        d = os.path.dirname(f)
        if not os.path.lexists(d):
            return False
        if not os.path.isdir(d):
            raise _not_folder(d, "a run's partition of a table")
        if os.path.lexists(f) and not os.path.exists(f):
            raise self._bad_part(key, f, OSError("a dangling symbolic link or a link loop"))
        return os.path.lexists(f)

    def _part_schema(self, key: str, f: str):
        import pyarrow as pa
        import pyarrow.parquet as pq
        if not os.path.isfile(f):   # a FIFO blocked inside pyarrow, deaf to SIGTERM
            raise self._bad_part(key, f, OSError("not a regular file"))
        try:
            return pq.read_schema(f)
        except (pa.ArrowException, OSError) as e:
            reraise_interrupt(e)
            raise self._bad_part(key, f, e) from None

    def _part_table(self, key: str, f: str):
        import pyarrow as pa
        import pyarrow.parquet as pq
        if not os.path.isfile(f):
            raise self._bad_part(key, f, OSError("not a regular file"))
        try:
            return pq.read_table(f)
        except (pa.ArrowException, OSError) as e:
            reraise_interrupt(e)
            raise self._bad_part(key, f, e) from None

    def ensure_compacted(self) -> None:
        if not self.compacted():
            self.compact()

    # ------------------------------------------------------------------ queries
    def table_names(self) -> list[str]:
        d = os.path.join(self.path, "tables")
        if os.path.lexists(d) and not os.path.isdir(d):
            raise _not_folder(d, "the per-run tables")
        names = sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []
        for n in names:
            if not (n.isprintable() and _utf8(n)):   # (a non-UTF-8 name was an internal error)
                raise InputError(_printable(os.path.join(d, n)), None,
                                 message="not a table's folder (a table name is printable UTF-8); remove it")
            if not os.path.isdir(os.path.join(d, n)):
                raise _not_folder(os.path.join(d, n), "a table's runs")
        return names

    def connect(self):
        """A DuckDB connection with the views ``runs``, ``clients``, ``flows``, ``links`` and
        ``tables.<name>`` (per-run tables, with their run's ``key`` and column values)."""
        import duckdb
        self.ensure_compacted()
        con = duckdb.connect()
        st = os.path.join(self.path, "store")

        def view(name: str, f: str) -> None:
            try:
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{_sql_str(f)}')")
            except duckdb.Error as e:
                reraise_interrupt(e)
                # store/ is a cache of the records; without it (and its manifest) it is rebuilt
                raise InputError(f, None, message=f"not a Parquet file written by qoelab ({_first_line(e)}); "
                                                  f"delete {st} (rebuilt from the run records) and try again") from None
        for v in VIEWS:
            view(v, os.path.join(st, v + ".parquet"))
        tabs = self.table_names()
        if tabs:
            con.execute("CREATE SCHEMA tables")
            for t in tabs:
                view(f'tables."{_sql_ident(t)}"', os.path.join(st, "tables", t + ".parquet"))
        return con

    def sql(self, query: str):
        """Run a query; a pandas DataFrame."""
        res = self._run(query)
        if res is None:
            raise InputError(None, "SQL", "a statement that returns rows", _first_line(query)[:60])
        try:
            return res.df()
        except RuntimeError as e:       # Ctrl-C while fetching: DuckDB's RuntimeError, not a duckdb.Error
            reraise_interrupt(e)
            raise

    def arrow(self, query: str):
        """Run a query; a pyarrow Table."""
        import duckdb
        _check_query(query)
        con = self.connect()
        try:
            rel = con.sql(query)
            if rel is None:    # (a statement of only comments)
                raise InputError(None, "SQL", "a statement that returns rows", _first_line(query)[:60])
            for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):   # DuckDB 2.x, 1.x
                if hasattr(rel, name):
                    return getattr(rel, name)()
        except duckdb.Error as e:
            reraise_interrupt(e)
            raise self._query_error(e) from None
        except RuntimeError as e:
            reraise_interrupt(e)
            raise
        raise RuntimeError("this DuckDB has no Arrow export")  # pragma: no cover

    def chunks(self, query: str, rows: int = 100_000):
        """Run a query; its result as pandas DataFrames of about ``rows`` rows each (the first one,
        with the result's columns, even when there are no rows), fetched one at a time as the caller
        asks for them, so that a consumer that stops early (``qoelab query --max-rows``) or writes each
        chunk out never holds the whole result. A query that fails, or whose chunk cannot be fetched
        (out of memory), is an :class:`InputError` about the query."""
        import duckdb
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise InputError(None, "rows", "an integer >= 1", repr(rows))
        vectors = max(1, min(64, -(-rows // 2048)))     # DuckDB fetches whole vectors of 2048 rows
        res = self._run(query)
        if res is None:   # (DuckDB returns nothing for a statement of only comments)
            raise InputError(None, "SQL", "a statement that returns rows", _first_line(query)[:60])
        first = True
        while True:
            try:
                df = res.fetch_df_chunk(vectors)
            except duckdb.Error as e:
                reraise_interrupt(e)
                raise self._query_error(e) from None
            except RuntimeError as e:
                reraise_interrupt(e)
                raise
            except (MemoryError, OverflowError) as e:   # "Could not reserve memory block"
                raise InputError(None, "query", message=f"its result could not be fetched ({type(e).__name__}: "
                                                        f"{_first_line(e)}); select fewer rows (LIMIT) or columns")
            if not len(df) and not first:
                return
            first = False
            yield df

    def _query_error(self, e: BaseException) -> InputError:
        """DuckDB's first line; for an unknown table, what this store has (a per-run table is kept only
        where a run wrote it, e.g. ``packets`` only with a packet log)."""
        msg = _first_line(e)
        if msg.startswith("Catalog Error") and "does not exist" in msg:
            try:
                have = ["runs", "clients", "flows", "links"] + [f"tables.{t}" for t in self.table_names()]
                msg += f" (this store has {', '.join(have)}; a per-run table is here only if a run wrote it)"
            except InputError:
                pass
        return InputError(None, "query", message=msg)

    def _run(self, query: str):
        import duckdb
        _check_query(query)
        con = self.connect()
        try:
            return con.execute(query)
        except duckdb.Error as e:
            reraise_interrupt(e)
            raise self._query_error(e) from None
        except RuntimeError as e:       # DuckDB 2 reports Ctrl-C as a plain RuntimeError
            reraise_interrupt(e)
            raise


def open_store(path: str) -> Store:
    """A sweep directory's store: ``open_store(DIR).sql("SELECT ...")`` (pandas) or ``.arrow(...)``."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise InputError(None, "path", "a sweep store's directory", repr(path))   # ("" was the current directory)
    return Store(path)


def _check_query(query) -> None:
    if not isinstance(query, str) or not query.strip():
        raise InputError(None, "SQL", "a query", repr(query) if not isinstance(query, str) else "an empty string")


# ----------------------------------------------------------------------------------------------


def _json_default(o):
    """numpy scalars (extract hooks compute with pandas) as Python numbers; anything else as text."""
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def _sql_str(s: str) -> str:
    return s.replace("'", "''")


def _sql_ident(s: str) -> str:
    return s.replace('"', '""')


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _cast(col, ty, path: str, name: str):
    """A per-run table's column cast to the merged table's type (an :class:`InputError` if it cannot be)."""
    import pyarrow as pa
    try:
        return col.cast(ty)
    except (pa.ArrowException, ValueError, OverflowError) as e:
        reraise_interrupt(e)
        raise InputError(path, name, f"a column convertible to {ty} (this column's type across the runs' tables)",
                         f"{col.type} ({_first_line(e)})") from None


def _remove_if_dead(path: str, name: str) -> None:
    if outdir.is_stale(path, name):
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


def _kind(v) -> str:
    if isinstance(v, bool):
        return "b"
    if isinstance(v, int):
        return "i" if -2 ** 63 <= v < 2 ** 63 else "s"
    return "f" if isinstance(v, float) else "s"


def _schema(names: list, kinds: dict):
    """One type per column: int64 if every value is an integer, double if numbers, bool if
    booleans, string otherwise; a column with only nulls is text if it is a text column of the
    schema, else double. The run's ``seed`` is uint64 (a scenario's seeds go to 2^64 - 1)."""
    import pyarrow as pa
    fields = []
    for c in names:
        k = kinds.get(c, set())
        if c == "seed":
            t = pa.uint64()
        elif not k:
            t = pa.string() if c in TEXT_COLUMNS else pa.float64()
        elif k == {"b"}:
            t = pa.bool_()
        elif k == {"i"}:
            t = pa.int64()
        elif k <= {"i", "f"}:
            t = pa.float64()
        else:
            t = pa.string()
        fields.append(pa.field(c, t))
    return pa.schema(fields)


def _table(rows: list[dict], schema):
    import pyarrow as pa
    arrays = []
    for f in schema:
        vals = [r.get(f.name) for r in rows]
        if pa.types.is_floating(f.type):
            vals = [None if v is None else float(v) for v in vals]
        elif pa.types.is_string(f.type):
            vals = [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in vals]
        arrays.append(pa.array(vals, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def nan_to_none(x):
    return None if isinstance(x, float) and math.isnan(x) else x
