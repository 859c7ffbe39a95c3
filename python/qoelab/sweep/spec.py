"""Sweep files: a base scenario, axes (product and zip), derived values, filters and repetitions,
expanded into a list of runs, each with its key (docs/sweeps.md).

A run's key is the SHA-256 of its normalized scenario configuration (the core's canonical units,
the seed included) and the core version, so the same run has the same key in any sweep, and a
sweep that is run again skips what its store already holds.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import re
import time
from dataclasses import dataclass, field

from qoelab.errors import InputError
from qoelab.sweep import expr

# Expansion builds and keys (normalizes) every run's scenario before anything runs: for
# scenarios/video-two-clients-fqcodel.toml on a busy 2-CPU machine, 0.74 ms of CPU and ~2 KB per run
# (100,000 runs: 74 s, 176 MB peak RSS; docs/sweeps.md); most of it is scenario.from_dict. A
# combination that where or [[exclude]] drops costs ~7 us (1,000,000: 7.5 s).
MAX_RUNS = 100_000
MAX_POINTS = 1_000_000          # combinations of the axes' values, before the filters
# Seeds of sweep runs: as a scenario's, 0..2^64 - 1 (the store's views keep them as uint64).
SEED_MAX = 2 ** 64 - 1
_COL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The tables a run can write (docs/tables.md), the names `sweep.tables` may keep.
RUN_TABLES = ("flow_info", "link_info", "flows", "tcp", "queues", "web", "requests", "segments", "weights", "pages",
              "packets")
SWEEP_KEYS = ("name", "base", "repetitions", "seeds", "seed", "where", "tables", "extract", "description")
RESERVED = {"key", "index", "rep", "seed", "status", "error", "wall_s", "client", "flow", "link", "row"}


@dataclass
class Axis:
    """One column of the sweep: its values and, per value, the scenario keys it sets."""
    name: str
    where: str                     # where it is declared (for messages): axes.X or zip.G.X
    values: list                   # column values (scalars)
    settings: list                 # per value: {dotted key: value}
    keys: list = field(default_factory=list)


@dataclass
class Derived:
    name: str
    key: str | None                # dotted scenario key it sets (None: a column only)
    tree: object
    unit: str | None
    where: str


@dataclass
class Run:
    """One run of a sweep: its position, repetition, seed, column values and scenario dict."""
    index: int
    rep: int
    seed: int
    point: dict
    scenario: dict
    key: str = ""
    payload: object = None         # programmatic sweeps: an object handed to the extract hook as point["payload"]
    task: str | None = None        # programmatic sweeps: "module:function" computed instead of a scenario run


@dataclass
class Sweep:
    path: str                      # the sweep file (or a label for programmatic sweeps)
    name: str
    base_src: str                  # scenario source for relative paths and messages
    columns: list                  # axis and derived column names, in order
    runs: list
    tables: list | None = None     # per-run tables to keep (None: all the scenario records)
    extract: str | None = None     # "module:function" run in the worker on each result
    report: dict = field(default_factory=dict)
    description: str = ""
    repetitions: int = 1

    @property
    def spec_id(self) -> str:
        """Identity of the sweep's set of runs (its keys and columns), to refuse resuming into a
        store written by a different sweep."""
        h = hashlib.sha256()
        h.update(json.dumps(self.columns).encode())
        for k in sorted(r.key for r in self.runs):
            h.update(k.encode())
        return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# Keys into scenario dicts


def _parts(key: str) -> list:
    return [p for p in key.split(".")]


def set_key(data: dict, key: str, value, fresh: set | None = None) -> None:
    """Set dotted ``key`` (``topology.aqm``, ``client.0.abr``, ``client.*.abr``) in ``data``; missing
    tables on the way are created, list indices must exist. Raises KeyError with a reason.

    ``fresh`` (copy on write): the ids of the tables and lists that belong to ``data`` alone (``data``
    itself included); any other table or list on the way is shared with other scenarios and is
    replaced by a shallow copy (whose id is added) before it changes. The runs of a sweep so share
    every part of the base scenario that no axis changes, instead of each holding a deep copy."""
    parts = _parts(key)
    if any(p == "" for p in parts):
        raise KeyError(f"empty component in key {key!r}")

    def own(parent, k, child):
        """``parent[k]`` (a table or list), copied first if it is shared."""
        if fresh is None or id(child) in fresh or not isinstance(child, (dict, list)):
            return child
        child = dict(child) if isinstance(child, dict) else list(child)
        parent[k] = child
        fresh.add(id(child))
        return child

    def walk(node, i, path):
        p = parts[i]
        last = i == len(parts) - 1
        if isinstance(node, list):
            if p == "*":
                if not node:
                    raise KeyError(f"{'.'.join(path) or 'top'} is an empty list")
                idx = range(len(node))
            elif p.isdigit():
                if int(p) >= len(node):
                    raise KeyError(f"{'.'.join(path + [p])}: index out of range ({len(node)} entries)")
                idx = [int(p)]
            else:
                raise KeyError(f"{'.'.join(path)} is a list of tables: use an index or * before {p!r}")
            for j in idx:
                if last:
                    node[j] = copy.deepcopy(value)
                else:
                    walk(own(node, j, node[j]), i + 1, path + [str(j)])
            return
        if not isinstance(node, dict):
            raise KeyError(f"{'.'.join(path)} is a value, not a table")
        if p == "*" or p.isdigit():
            raise KeyError(f"{'.'.join(path) or 'top'} is a table, not a list (found {p!r})")
        if last:
            node[p] = copy.deepcopy(value)
            return
        if p not in node:
            node[p] = {}
            if fresh is not None:
                fresh.add(id(node[p]))
        walk(own(node, p, node[p]), i + 1, path + [p])
    walk(data, 0, [])


def get_key(data: dict, key: str):
    node = data
    for p in _parts(key):
        if isinstance(node, list) and p.isdigit() and int(p) < len(node):
            node = node[int(p)]
        elif isinstance(node, dict) and p in node:
            node = node[p]
        else:
            raise KeyError(f"{key!r} is not set in the scenario")
    return node


# ----------------------------------------------------------------------------------------------
# Parsing


def _scalar(v) -> bool:
    return isinstance(v, (str, int, float, bool))


def _column_of(key: str) -> str:
    parts = [p for p in _parts(key) if p != "*" and not p.isdigit()]
    return parts[-1] if parts else key


def _parse_axis(path: str, where: str, name: str, spec) -> Axis:
    """``"a.b" = [v...]`` (column b), ``var = [v...]`` (a column only), ``col = {key = "a.b", values =
    [...]}`` or ``col = {values = {label = {"a.b" = v, ...}, ...}}`` (named variants)."""
    if isinstance(spec, list):
        if not spec:
            raise InputError(path, where, "a non-empty list of values", "[]")
        for v in spec:
            if not _scalar(v):
                raise InputError(path, where, "values that are strings, numbers or booleans "
                                              "(use {values = {label = {...}}} for groups of settings)", repr(v))
        if "." in name:
            col = _column_of(name)
            return Axis(col, where, list(spec), [{name: v} for v in spec], [name])
        return Axis(name, where, list(spec), [{} for _ in spec], [])
    if isinstance(spec, dict):
        unknown = set(spec) - {"key", "values"}
        if unknown:
            raise InputError(path, f"{where}.{sorted(unknown)[0]}", message="unknown key (known: key, values)")
        if "." in name:
            raise InputError(path, where, "a column name (letters, digits, _) for the table form", repr(name))
        vals = spec.get("values")
        if isinstance(vals, dict):
            if "key" in spec:
                raise InputError(path, f"{where}.key", message="named variants set their own keys; drop 'key'")
            if not vals:
                raise InputError(path, f"{where}.values", "at least one variant", "{}")
            settings = []
            for label, sets in vals.items():
                if not isinstance(sets, dict) or not all(isinstance(k, str) for k in sets):
                    raise InputError(path, f"{where}.values.{label}",
                                     "a table of dotted scenario keys and values", repr(sets))
                settings.append(dict(sets))
            keys = sorted({k for s in settings for k in s})
            return Axis(name, where, list(vals), settings, keys)
        if not isinstance(vals, list) or not vals:
            raise InputError(path, f"{where}.values", "a non-empty list of values (or a table of variants)",
                             repr(vals))
        for v in vals:
            if not _scalar(v):
                raise InputError(path, f"{where}.values", "strings, numbers or booleans", repr(v))
        key = spec.get("key")
        if key is not None and (not isinstance(key, str) or not key):
            raise InputError(path, f"{where}.key", "a dotted scenario key", repr(key))
        return Axis(name, where, list(vals), [({key: v} if key else {}) for v in vals], [key] if key else [])
    raise InputError(path, where, "a list of values or a table {key, values}", type(spec).__name__)


def _check_col(path, where, col, seen):
    if not _COL_RE.match(col):
        raise InputError(path, where, message=f"column name {col!r} is not an identifier (letters, digits, _); "
                                              "name the axis with the table form {key = ..., values = [...]}")
    if col in RESERVED:
        raise InputError(path, where, message=f"column name {col!r} is reserved ({', '.join(sorted(RESERVED))}); "
                                              "name the axis with the table form {key = ..., values = [...]}")
    if col in seen:
        raise InputError(path, where, message=f"two axes make column {col!r} (also {seen[col]}); name one with "
                                              "the table form: other_name = {key = \"...\", values = [...]}")
    seen[col] = where


def _load_base(path: str, sw: dict, data: dict) -> tuple[dict, str]:
    base = sw.get("base")
    inline = data.get("base")
    if base is not None and inline is not None:
        raise InputError(path, "sweep.base", message="give either sweep.base = \"file.toml\" or a [base] table, "
                                                     "not both")
    if inline is not None:
        if not isinstance(inline, dict):
            raise InputError(path, "base", "a table holding the base scenario", type(inline).__name__)
        return copy.deepcopy(inline), path
    if base is None:
        raise InputError(path, "sweep.base", message="missing: the base scenario (sweep.base = \"file.toml\" or a "
                                                     "[base] table)")
    if not isinstance(base, str) or not base:
        raise InputError(path, "sweep.base", "a path to a scenario file", repr(base))
    full = base if os.path.isabs(base) else os.path.join(os.path.dirname(os.path.abspath(path)), base)
    from qoelab import scenario as scn
    try:
        os.stat(full)
    except OSError as e:
        raise InputError(path, "sweep.base", message=f"cannot read {full}: {e.strerror}") from None
    return scn.read_toml(full), full


def load(path: str, check: bool = True, progress=None) -> Sweep:
    """Read a sweep file and expand it (see :func:`from_dict`)."""
    from qoelab import scenario as scn
    try:
        os.stat(path)
    except OSError as e:
        raise InputError(path, None, message=f"cannot read sweep file: {e.strerror}") from None
    return from_dict(scn.read_toml(path), path, check=check, progress=progress)


def from_dict(data: dict, path: str = "<sweep>", check: bool = True, progress=None) -> Sweep:
    """Expand a sweep (the parsed TOML): the product of ``[axes]`` and ``[zip.*]`` groups, derived
    values, filters, repetitions; each run's scenario is built and keyed. With ``check`` the
    scenarios of a covering subset (the first run and one run per axis value) are also built by
    the core, so that a bad value is reported now, naming the axis, rather than as failed runs.
    ``progress``: a function given a line of progress every few seconds of a long expansion.

    The runs' scenario dicts share the tables of the base scenario that no axis changes (copy on
    write): treat them as read-only."""
    from qoelab import scenario as scn
    known_top = {"sweep", "base", "set", "axes", "zip", "derived", "exclude", "report"}
    for k in data:
        if k not in known_top:
            raise InputError(path, k, message=f"unknown table (known: {', '.join(sorted(known_top))})")
    sw = data.get("sweep", {})
    if not isinstance(sw, dict):
        raise InputError(path, "sweep", "a table", type(sw).__name__)
    for k in sw:
        if k not in SWEEP_KEYS:
            raise InputError(path, f"sweep.{k}", message=f"unknown key (known: {', '.join(SWEEP_KEYS)})")
    base, base_src = _load_base(path, sw, data)
    fixed = data.get("set", {})
    if not isinstance(fixed, dict):
        raise InputError(path, "set", "a table of dotted scenario keys and values", type(fixed).__name__)
    for k, v in fixed.items():
        try:
            set_key(base, k, v)
        except KeyError as e:
            raise InputError(path, f"set.{k}", message=f"cannot set it: {e.args[0]}") from None
    name = sw.get("name", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str) or not name:
        raise InputError(path, "sweep.name", "a non-empty string", repr(name))
    reps = sw.get("repetitions", 1)
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 100_000:
        raise InputError(path, "sweep.repetitions", "an integer in 1..100000", repr(reps))
    seeds = sw.get("seeds")
    if seeds is not None:
        if not isinstance(seeds, list) or not seeds:
            raise InputError(path, "sweep.seeds", f"a non-empty list of integers in 0..{SEED_MAX}", _short(seeds))
        for i, sd in enumerate(seeds):
            if isinstance(sd, bool) or not isinstance(sd, int) or not 0 <= sd <= SEED_MAX:
                raise InputError(path, f"sweep.seeds.{i}", f"an integer in 0..{SEED_MAX}", _short(sd),
                                 message="a seed is an unsigned 64-bit integer")
        if "repetitions" in sw and reps != len(seeds):
            raise InputError(path, "sweep.seeds", f"{reps} seeds (sweep.repetitions)", f"{len(seeds)} seeds")
        if len(set(seeds)) != len(seeds):
            dup = next(sd for i, sd in enumerate(seeds) if sd in seeds[:i])
            raise InputError(path, "sweep.seeds", "distinct seeds", f"{dup} twice")
        reps = len(seeds)
    else:
        # seeds s0, s0 + 1, ..., s0 + reps - 1: s0 from sweep.seed, else the base scenario's seed, else 1
        top = SEED_MAX - (reps - 1)
        why = "a seed is an unsigned 64-bit integer" + \
            (f" and the {reps} repetitions use seeds seed..seed + {reps - 1}" if reps > 1 else "")
        if "seed" in sw:
            s0, src, where = sw["seed"], path, "sweep.seed"
        else:
            sec = base.get("scenario")
            s0 = sec.get("seed", 1) if isinstance(sec, dict) else 1
            src, where = _base_seed_source(path, base_src, fixed, data)
            why = f"the sweep's seeds start here, and {why} (or set sweep.seed or sweep.seeds)"
        if isinstance(s0, bool) or not isinstance(s0, int):
            raise InputError(src, where, "an integer", _short(s0))
        if not 0 <= s0 <= top:
            raise InputError(src, where, f"an integer in 0..{top}", str(s0), message=why)
        seeds = [s0 + r for r in range(reps)]
    tables = sw.get("tables")
    if tables is not None and (not isinstance(tables, list) or not all(isinstance(t, str) for t in tables)):
        raise InputError(path, "sweep.tables", "a list of table names", repr(tables))
    for t in tables or []:
        # a typo kept no table at all, silently (found by a probe)
        if t not in RUN_TABLES:
            raise InputError(path, "sweep.tables", f"names of the tables a run writes ({', '.join(RUN_TABLES)})",
                             repr(t))
        if tables.count(t) > 1:
            raise InputError(path, "sweep.tables", "each table once", repr(t))
    extract = sw.get("extract")
    if extract is not None and (not isinstance(extract, str) or ":" not in extract):
        raise InputError(path, "sweep.extract", "\"module:function\"", repr(extract))

    # axes and zip groups: the dimensions of the product
    seen: dict = {}
    dims: list[list[Axis]] = []
    axes = data.get("axes", {})
    if not isinstance(axes, dict):
        raise InputError(path, "axes", "a table of axes", type(axes).__name__)
    for k, v in axes.items():
        ax = _parse_axis(path, f"axes.{k}", k, v)
        _check_col(path, ax.where, ax.name, seen)
        dims.append([ax])
    zips = data.get("zip", {})
    if not isinstance(zips, dict):
        raise InputError(path, "zip", "tables of axes that vary together ([zip.NAME])", type(zips).__name__)
    for g, members in zips.items():
        if not isinstance(members, dict) or not members:
            raise InputError(path, f"zip.{g}", "a table of at least one axis", repr(members))
        group = []
        for k, v in members.items():
            ax = _parse_axis(path, f"zip.{g}.{k}", k, v)
            _check_col(path, ax.where, ax.name, seen)
            group.append(ax)
        n = len(group[0].values)
        for ax in group[1:]:
            if len(ax.values) != n:
                raise InputError(path, ax.where, f"{n} values (as many as {group[0].where})",
                                 f"{len(ax.values)}")
        dims.append(group)

    derived = []
    dsec = data.get("derived", {})
    if not isinstance(dsec, dict):
        raise InputError(path, "derived", "a table", type(dsec).__name__)
    for k, v in dsec.items():
        where = f"derived.{k}"
        unit = None
        if isinstance(v, dict):
            bad = set(v) - {"expr", "unit"}
            if bad:
                raise InputError(path, f"{where}.{sorted(bad)[0]}", message="unknown key (known: expr, unit)")
            unit = v.get("unit")
            if unit is not None and (not isinstance(unit, str) or not re.fullmatch(r"[A-Za-z%/]+", unit)):
                raise InputError(path, f"{where}.unit", "a unit like \"pkts\", \"ms\", \"Mbps\"", repr(unit))
            v = v.get("expr")
        try:
            tree = expr.compile_expr(v)
        except expr.ExprError as e:
            raise InputError(path, where, message=str(e)) from None
        col = _column_of(k) if "." in k else k
        _check_col(path, where, col, seen)
        derived.append(Derived(col, k if "." in k else None, tree, unit, where))

    # Two axes (or an axis and a derived value) setting one scenario key: the later one silently
    # replaced the earlier's value, so a variant's column described a configuration that did not
    # run, depending on the order of the tables in the file (found by a probe).
    setter = {}
    for ax in [ax for d in dims for ax in d]:
        for k in ax.keys:
            if k in setter:
                raise InputError(path, ax.where, message=f"sets {k!r}, which {setter[k]} sets too: one key, one "
                                                         "axis (put the settings into one axis's variants)")
            setter[k] = ax.where
    for dv in derived:
        if dv.key in setter:
            raise InputError(path, dv.where, message=f"sets {dv.key!r}, which {setter[dv.key]} sets too: one key, "
                                                     "one axis or derived value")

    where_src = sw.get("where")
    where_tree = None
    if where_src is not None:
        try:
            where_tree = expr.compile_expr(where_src)
        except expr.ExprError as e:
            raise InputError(path, "sweep.where", message=str(e)) from None
    excludes = data.get("exclude", [])
    if not isinstance(excludes, list) or not all(isinstance(e, dict) and e for e in excludes):
        raise InputError(path, "exclude", "[[exclude]] tables of column = value", repr(excludes))
    for i, e in enumerate(excludes):
        for c in e:
            if c not in seen:
                raise InputError(path, f"exclude.{i}.{c}", message=f"not a column of this sweep "
                                                                   f"(columns: {', '.join(seen) or 'none'})")
    report = data.get("report", {})
    if not isinstance(report, dict):
        raise InputError(path, "report", "a table", type(report).__name__)
    for k in report:
        if k not in ("panel", "summary_by"):
            raise InputError(path, f"report.{k}", message="unknown key (known: panel, summary_by)")
    columns = [ax.name for d in dims for ax in d] + [d.name for d in derived]

    # expand
    sizes = [len(d[0].values) for d in dims]
    points = 1
    for s in sizes:
        points *= s
    filtered = where_tree is not None or bool(excludes)
    if points > MAX_POINTS:
        raise InputError(path, "axes", f"at most {MAX_POINTS:,} combinations of the axes' values"
                         + (" (before where and [[exclude]])" if filtered else ""), f"{points:,}")
    if points * reps > MAX_RUNS and not filtered:
        raise InputError(path, "axes", f"at most {MAX_RUNS:,} runs (combinations x repetitions)",
                         f"{points:,} x {reps:,} = {points * reps:,}")
    core_version = _core_version()
    runs: list[Run] = []
    index = 0
    first_of_value: dict = {}
    prog = _Progress(progress, name)
    for n, combo in enumerate(itertools.product(*[range(s) for s in sizes])):
        if not n & 1023:
            prog.show("expanding the axes' combinations", n, points)
        point, sets = {}, []
        for d, i in zip(dims, combo):
            for ax in d:
                point[ax.name] = ax.values[i]
                sets.append((ax, i))
        # copy on write: the run's scenario shares with the base every table that no axis changes
        scen = dict(base)
        fresh = {id(scen)}
        for ax, i in sets:
            for k, v in ax.settings[i].items():
                try:
                    set_key(scen, k, v, fresh)
                except KeyError as e:
                    raise InputError(path, ax.where, message=f"cannot set {k!r}: {e.args[0]}") from None
        for dv in derived:
            try:
                val = expr.evaluate(dv.tree, point, get=lambda k, s=scen: get_key(s, k))
            except (expr.ExprError, KeyError) as e:
                raise InputError(path, dv.where, message=f"with {_show_point(point)}: "
                                                         f"{e.args[0] if e.args else e}") from None
            if isinstance(val, float) and val.is_integer() and dv.unit:
                val = int(val)
            if dv.unit:
                val = f"{val}{dv.unit}"
            if not _scalar(val):
                raise InputError(path, dv.where, "a string, number or boolean", _short(val))
            point[dv.name] = val
            if dv.key:
                try:
                    set_key(scen, dv.key, val, fresh)
                except KeyError as e:
                    raise InputError(path, dv.where, message=f"cannot set {dv.key!r}: {e.args[0]}") from None
        if where_tree is not None:
            try:
                keep = expr.evaluate(where_tree, point, get=lambda k, s=scen: get_key(s, k))
            except (expr.ExprError, KeyError) as e:
                raise InputError(path, "sweep.where", message=f"with {_show_point(point)}: "
                                                              f"{e.args[0] if e.args else e}") from None
            if not isinstance(keep, bool):   # ("yes" or 0.5 was taken as true)
                raise InputError(path, "sweep.where", message=f"with {_show_point(point)}: expected true or false "
                                                              f"(a comparison), found {keep!r}")
            if not keep:
                continue
        if any(all(point.get(c) == v for c, v in e.items()) for e in excludes):
            continue
        sec = scen.get("scenario", {})
        if not isinstance(sec, dict):
            raise InputError(base_src, "scenario", "a table", type(sec).__name__)
        for rep, seed in enumerate(seeds):
            # each repetition: its own top level and [scenario] table (the seed), the rest shared
            sc_dict = {**scen, "scenario": {**sec, "seed": seed}}
            runs.append(Run(index, rep, seed, dict(point), sc_dict))
            for ax_name in point:
                first_of_value.setdefault((ax_name, _hashable(point[ax_name])), len(runs) - 1)
        index += 1
        if len(runs) > MAX_RUNS:
            raise InputError(path, "axes", f"at most {MAX_RUNS:,} runs (combinations x repetitions) after where "
                             "and [[exclude]]", f"more than {MAX_RUNS:,} after {n + 1:,} of the {points:,} "
                             "combinations")
    if not runs:
        raise InputError(path, "axes", message="the sweep has no runs (every combination was filtered out)")

    # keys (normalized configs), and the core's check of a covering subset
    checked = set(first_of_value.values()) if check else set()
    memo = KeyMemo()    # (the runs share their parsed videos and traces: each is encoded once)
    for i, r in enumerate(runs):
        # every run (a monotonic clock read): a base scenario can take a second to build (a probe's
        # 200,000-step weight schedule), and every 256 runs left minutes without a line
        prog.show("building and keying the runs' scenarios", i, len(runs))
        try:
            sc = scn.from_dict(r.scenario, base_src, check=i in checked)
        except InputError as e:
            raise InputError(path, _blame(dims, derived, e, r.point, fixed), message=f"with {_show_point(r.point)}: "
                                                                             f"{e}") from None
        r.key = run_key(sc.config, core_version, memo, sc.meta.get("python_abr_sources"))
    prog.done(len(runs))
    seen_keys: dict = {}
    for r in runs:
        if r.key in seen_keys:
            o = seen_keys[r.key]
            raise InputError(path, "axes", message=f"two runs are the same scenario ({_show_point(o.point)} rep "
                                                   f"{o.rep} and {_show_point(r.point)} rep {r.rep}): an axis "
                                                   "does not change the scenario")
        seen_keys[r.key] = r
    return Sweep(path, name, base_src, columns, runs, tables, extract, report,
                 sw.get("description", "") if isinstance(sw.get("description", ""), str) else "", reps)


class _Progress:
    """Progress of a long expansion: a line every few seconds through ``log`` (nothing for a sweep
    expanded within the first few seconds)."""

    EVERY_S = 5.0

    def __init__(self, log, name: str):
        self.log, self.name = log, name
        self.t0 = self.last = self.step_t0 = time.monotonic()
        self.step = None
        self.shown = False

    def show(self, step: str, done: int, total: int) -> None:
        if self.log is None:
            return
        now = time.monotonic()
        if step != self.step:
            self.step, self.step_t0 = step, now
        if now - self.last < self.EVERY_S:
            return
        self.last, self.shown = now, True
        left = ""
        if done and now - self.step_t0 > 0.5:
            left = f", about {_fmt_s((total - done) * (now - self.step_t0) / done)} left in this step"
        self.log(f"sweep {self.name}: {step}: {done:,}/{total:,} ({100 * done // max(total, 1)}%), "
                 f"{_fmt_s(now - self.t0)} elapsed{left}")

    def done(self, runs: int) -> None:
        if self.log is not None and self.shown:
            self.log(f"sweep {self.name}: {runs:,} runs expanded and checked in {_fmt_s(time.monotonic() - self.t0)}")


def _fmt_s(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _key_matches(pattern: str, where: str) -> bool:
    """Whether a scenario error's key path (``client[0].data_plane.n``) is at or below a sweep key
    (``client.*.data_plane.n``, ``client.0.data_plane``; ``*`` any index)."""
    w = re.sub(r"\[(\d+)\]", r".\1", where).split(".")
    k = pattern.split(".")
    return len(w) >= len(k) and all(p in ("*", x) for p, x in zip(k, w))


def _blame(dims, derived, err: InputError, point, fixed=None) -> str:
    """The axis (or `[set]` key, or derived value) whose key the scenario error names, else ``axes``.
    (It matched list keys such as ``client[0].data_plane.n`` to no axis, and never `[set]`.)"""
    w = (err.where or "") if isinstance(err.where, str) else ""
    if not w:
        return "axes"
    for d in dims:
        for ax in d:
            if any(_key_matches(k, w) for k in ax.keys):
                return ax.where
    for dv in derived:
        if dv.key and _key_matches(dv.key, w):
            return dv.where
    for k in fixed or {}:
        if _key_matches(k, w):
            return f"set.{k}"
    return "axes"


def _base_seed_source(path: str, base_src: str, fixed: dict, data: dict) -> tuple[str, str]:
    """The file and key that gave the base scenario its seed: [set], an inline [base] or the base file."""
    for k in ("scenario.seed", "scenario"):
        if k in fixed:
            return path, f"set.{k}"
    if data.get("base") is not None:
        return path, "base.scenario.seed"
    return base_src, "scenario.seed"


def _short(v, n: int = 60) -> str:
    """repr(v) for a message, at most about 2n characters (a message is one line of reasonable length)."""
    if isinstance(v, (str, list)) and len(v) > n:
        return repr(v[:n])[:2 * n] + f"... ({len(v):,} {'characters' if isinstance(v, str) else 'items'})"
    if isinstance(v, dict) and len(v) > n:
        return f"a table of {len(v):,} keys"
    r = repr(v)
    return r if len(r) <= 2 * n else r[:2 * n] + "..."


def _hashable(v):
    return (type(v).__name__, v)


def _show_point(point: dict) -> str:
    return ", ".join(f"{k} = {_short(v)}" for k, v in point.items()) or "the base scenario"


def _core_version() -> str:
    from qoelab import _core
    return _core.version()


def _canonical(x):
    """A JSON-able, deterministic form of a task's payload (dataclasses, tuples, sets, numbers)."""
    import dataclasses
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {"__type": type(x).__name__, **{f.name: _canonical(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    if isinstance(x, dict):
        return {str(k): _canonical(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted(_canonical(v) for v in x)
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    return repr(x)


_BIG = 4096             # characters: sub-objects at least this long are remembered by identity in _key_json
_MEMO_BUDGET = 64 << 20  # characters of remembered text; least recently used first out


class KeyMemo:
    """Encodings of large sub-objects by identity for :func:`_key_json`: id -> (object, text), least
    recently used evicted beyond ``_MEMO_BUDGET`` characters (the objects a batch shares are used by
    every run and stay; one run's own objects age out). Holding an object keeps its id from being
    reused."""

    def __init__(self, budget: int = _MEMO_BUDGET):
        self.items: dict = {}
        self.size = 0
        self.budget = budget

    def get(self, x):
        hit = self.items.get(id(x))
        if hit is None or hit[0] is not x:
            return None
        self.items[id(x)] = self.items.pop(id(x))   # most recently used
        return hit[1]

    def put(self, x, text: str) -> None:
        old = self.items.pop(id(x), None)
        if old is not None:
            self.size -= len(old[1])
        self.items[id(x)] = (x, text)
        self.size += len(text)
        while self.size > self.budget and self.items:
            _, t = self.items.pop(next(iter(self.items)))
            self.size -= len(t)


def _key_json(x, memo: KeyMemo | None, top: bool = True) -> str:
    """``json.dumps(x, sort_keys=True, separators=(",", ":"))``, the same string, but with the encoding of
    large shared sub-objects remembered by identity in ``memo``. The scenarios of a reproduction share
    a few large objects (value functions, video tables) by reference; encoding each once instead of
    once per run saved ~40 ms per run of `reproduce minerva --corpus hd`. Only valid while none of
    the objects changes: one memo per batch of keys computed together."""
    if memo is None:
        return json.dumps(x, sort_keys=True, separators=(",", ":"))
    if isinstance(x, (dict, list)):
        hit = memo.get(x)
        if hit is not None:
            return hit
        if isinstance(x, list) and not (x and isinstance(x[0], (dict, list))):
            text = json.dumps(x, sort_keys=True, separators=(",", ":"))   # a row of plain values: no shared parts
        elif isinstance(x, dict):
            if not all(isinstance(k, str) for k in x):
                return json.dumps(x, sort_keys=True, separators=(",", ":"))
            text = "{" + ",".join(json.dumps(k) + ":" + _key_json(x[k], memo, False) for k in sorted(x)) + "}"
        else:
            text = "[" + ",".join(_key_json(v, memo, False) for v in x) + "]"
        if len(text) >= _BIG and not top:
            memo.put(x, text)
        return text
    return json.dumps(x, sort_keys=True, separators=(",", ":"))


def run_key(config: dict, core_version: str, memo: KeyMemo | None = None, abr_sources: dict | None = None) -> str:
    """SHA-256 of the normalized configuration (seed included) and the core version, and of the
    source files of its ``python:`` ABR modules (``abr_sources``: spec -> SHA-256; the configuration
    names them only, and a run resumed after an edit of the ABR kept the old results). ``memo``: see
    :func:`_key_json` (the same key, computed faster for a batch of configurations sharing objects)."""
    h = hashlib.sha256()
    h.update(_key_json(config, memo).encode())
    h.update(b"\0qoelab-core ")
    h.update(core_version.encode())
    if abr_sources:
        h.update(b"\0python-abr-sources ")
        h.update(json.dumps(sorted((k, v or "") for k, v in abr_sources.items())).encode())
    return h.hexdigest()


def programmatic(name: str, runs: list[Run], columns: list, base_src: str = "<programmatic>",
                 tables=None, extract=None, description: str = "") -> Sweep:
    """A sweep built in Python (the reproductions): ``runs`` carry their scenario dicts and column
    values; their keys are computed here."""
    from qoelab import scenario as scn
    core_version = _core_version()
    memo = KeyMemo()
    for r in runs:
        if r.task:
            # a computation: its identity is the function, its column values and its payload
            r.key = run_key({"task": r.task, "point": r.point, "seed": r.seed, "rep": r.rep,
                             "payload": _canonical(r.payload)}, core_version)
            continue
        sc = scn.from_dict(r.scenario, base_src, check=False)
        r.key = run_key(sc.config, core_version, memo, sc.meta.get("python_abr_sources"))
    return Sweep(base_src, name, base_src, list(columns), runs, tables, extract, {}, description,
                 max((r.rep for r in runs), default=0) + 1)
