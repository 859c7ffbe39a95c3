"""``qoelab report DIR``: a self-contained HTML page of a sweep store (inline SVG plots).

One panel per metric against each axis that varies: the mean over the runs of each cell with its
95% confidence interval (Student t; the runs of a cell are its repetitions, and the values of the
axes not shown in the panel), one line per value of a second axis. A sweep file's ``[report]``
section can name the panels instead::

    [[report.panel]]
    y = "clients.qoe_mean"        # view.column; per run, the mean over the view's rows of that run
    x = "buffer_bdp"              # an axis column
    group = "aqm"                 # optional: one line per value
    title = "QoE vs buffer"       # optional
    flow = "bulk"                 # optional, flows view: only that flow (or flows named bulk-<i>)
    link = "bottleneck"           # optional, links view: that link (default: the first monitored link)
"""

from __future__ import annotations

import html
import io
import math
import os
import re

from qoelab.errors import InputError, reraise_interrupt
from qoelab.reproduce.livi_params import mean_ci
from qoelab.sweep.store import Store, found

#: Default metrics: (view, column, label); a metric is shown when its column exists and has values.
DEFAULT_METRICS = (
    ("clients", "avg_bitrate_bps", "video bitrate (bit/s), mean over clients"),
    ("clients", "qoe_mean", "QoE per chunk, mean over clients"),
    ("clients", "rebuffer_ratio", "rebuffer ratio, mean over clients"),
    ("clients", "startup_s", "startup delay (s), mean over clients"),
    ("clients", "switches", "bitrate switches, mean over clients"),
    ("runs", "video_jfi_goodput", "Jain's index of client goodputs"),
    ("flows", "goodput_bps", "goodput (bit/s), mean over flows"),
    ("runs", "jain_index", "Jain's index of bulk-flow goodputs"),
    ("links", "utilization", "bottleneck utilization"),
    ("links", "queue_delay_ms_mean", "bottleneck queue delay, mean (ms)"),
    ("links", "queue_delay_ms_p99", "bottleneck queue delay, p99 (ms)"),
    ("links", "dropped_packets", "bottleneck drops (packets)"),
)
MAX_TABLE_ROWS = 1000


def _per_run(con, view: str, col: str, link: str | None, flow: str | None = None):
    """DataFrame key -> v: the column per run (the mean over the view's rows of each ok run; for
    ``links``, the rows of ``link``; for ``flows``, those of flow ``flow`` or named ``flow-<i>``
    when given)."""
    col = col.replace('"', '""')
    if view == "runs":
        return con.execute(f'SELECT key, "{col}" AS v FROM runs WHERE status = \'ok\'').df()
    cond, params = "", []
    if view == "links" and link:
        cond, params = " AND v.link = ?", [link]
    if view == "flows" and flow:
        cond, params = " AND (v.flow = ? OR v.flow LIKE ?)", [flow, flow + "-%"]
    return con.execute(f'SELECT v.key, avg(v."{col}") AS v FROM {view} v JOIN runs r USING (key) '
                       f"WHERE r.status = 'ok'{cond} GROUP BY v.key", params).df()


def _columns(con, view: str) -> dict:
    return {r[0]: r[1] for r in con.execute(f"DESCRIBE {view}").fetchall()}


def _numeric(t: str) -> bool:
    return any(x in t.upper() for x in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL"))


def check_meta(st: Store) -> dict:
    """The keys of DIR/sweep.json the report reads (the store checked ``columns``), checked: a bad
    one is an :class:`InputError` naming sweep.json and the key. (The ``[report]`` section of the sweep
    file is stored there when the store is created, and read from there.)"""
    path, meta = st.meta_path, st.meta
    for k in ("name", "description"):
        if not isinstance(meta.get(k), (str, type(None))):
            raise InputError(path, k, "a string", found(meta[k]))
    cv = meta.get("column_values")
    if cv is not None:
        if not isinstance(cv, dict):
            raise InputError(path, "column_values", "an object: column -> list of values", found(cv))
        for c, vals in cv.items():
            if not isinstance(vals, list):
                raise InputError(path, f"column_values.{c}", "a list of values", found(vals))
            for i, v in enumerate(vals):
                if isinstance(v, (list, dict)):
                    raise InputError(path, f"column_values.{c}.{i}", "a string, number, boolean or null", found(v))
    rep = meta.get("report")
    if rep is None:
        return {}
    if not isinstance(rep, dict):
        raise InputError(path, "report", "an object (the sweep file's [report] table)", found(rep))
    panels = rep.get("panel")
    if panels is not None and not isinstance(panels, list):
        raise InputError(path, "report.panel", "a list of panels ([[report.panel]] tables)", found(panels))
    for i, p in enumerate(panels or []):
        where = f"report.panel.{i}"
        if not isinstance(p, dict):
            raise InputError(path, where, "a table {y, x, group, title, flow, link}", found(p))
        if not isinstance(p.get("y"), str) or "." not in p["y"]:
            raise InputError(path, where + ".y", "\"view.column\" (runs, clients, flows, links)", found(p.get("y")))
        for k in ("x", "group", "title", "flow", "link"):
            if not isinstance(p.get(k), (str, type(None))):
                raise InputError(path, f"{where}.{k}", "a string", found(p[k]))
    by = rep.get("summary_by")
    if not isinstance(by, (str, type(None))):
        raise InputError(path, "report.summary_by", "a column name", found(by))
    return rep


def _panels(st: Store, con, runs, axes: list[str]) -> list[dict]:
    spec = check_meta(st).get("panel")
    path = st.meta_path
    if spec:
        out = []
        for i, p in enumerate(spec):
            where = f"report.panel.{i}"
            view, col = p["y"].split(".", 1)
            if view not in ("runs", "clients", "flows", "links") or col not in _columns(con, view):
                raise InputError(path, where + ".y", message=f"no column {col!r} in view {view!r}")
            x = p.get("x", axes[0] if axes else None)
            if x not in axes:
                raise InputError(path, where + ".x", f"an axis column ({', '.join(axes)})", found(x))
            g = p.get("group")
            if g is not None and g not in axes:
                raise InputError(path, where + ".group", f"an axis column ({', '.join(axes)})", found(g))
            out.append({"view": view, "col": col, "x": x, "group": g,
                        "title": p.get("title") or f"{p['y']} vs {x}" + (f" by {g}" if g else ""),
                        "label": p["y"], "link": p.get("link"), "flow": p.get("flow")})
        return out
    points = runs["index"].nunique()

    def axis_like(a) -> bool:
        """Varies, is not an identifier (one value per point) and, if text, has at most 30 values."""
        n = runs[a].nunique(dropna=False)
        numeric = runs[a].dtype.kind in "fiu"
        return n > 1 and not (n == points and points > 30 and not numeric) and (numeric or n <= 30)
    varying = [a for a in axes if axis_like(a)]
    out = []
    for view, col, label in DEFAULT_METRICS:
        cols = _columns(con, view)
        if col not in cols or not _numeric(cols[col]):
            continue
        if con.execute(f'SELECT count("{col}") FROM {view}').fetchone()[0] == 0:   # (known names)
            continue
        for x in varying or axes[:1]:
            others = [a for a in varying if a != x and runs[a].nunique() <= 8]
            g = others[0] if others else None
            out.append({"view": view, "col": col, "x": x, "group": g, "label": label,
                        "title": f"{label} vs {x}" + (f", by {g}" if g else ""), "link": None})
    m = st.meta.get("extract")
    if m:   # numeric metrics of the extract hook (run level)
        cols = _columns(con, "runs")
        known = set(st.meta.get("columns", [])) | {"key", "index", "rep", "seed", "wall_s", "sim_wall_s"}
        for c, t in cols.items():
            if c not in known and _numeric(t) and not c.startswith(("packets_", "events", "duration", "video_")) \
                    and c not in ("jain_index", "schema_version"):
                for x in varying[:1]:
                    others = [a for a in varying if a != x and runs[a].nunique() <= 8]
                    out.append({"view": "runs", "col": c, "x": x, "group": others[0] if others else None,
                                "label": c, "title": f"{c} vs {x}", "link": None})
    # a record whose summary had 30,000 keys made 30,000 figures (MemoryError at 4 GB); the rest are
    # in `qoelab query` and a report.panel section can pick them
    return out[:MAX_PANELS]


MAX_PANELS = 120


def _sort_key(v):
    return (0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v))


def _unique_ids(svg: str, prefix: str) -> str:
    """Every id of one inline SVG, and the references to it, prefixed: matplotlib gives every figure
    the same ids (figure_1, axes_1, its glyphs), 150 duplicates in one report (invalid HTML)."""
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = re.sub(r'(href="#)([^"]+)"', lambda m: f'{m.group(1)}{prefix}{m.group(2)}"', svg)
    return re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", svg)


def _plot(panel: dict, data, prefix: str = "") -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x, g = panel["x"], panel["group"]
    xs = sorted(data[x].dropna().unique().tolist(), key=_sort_key)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs)
    pos = {v: (float(v) if numeric else i) for i, v in enumerate(xs)}
    fig, ax = plt.subplots(figsize=(5.2, 3.3))
    groups = sorted(data[g].dropna().unique().tolist(), key=_sort_key) if g else [None]
    rows = []
    for gi, gv in enumerate(groups):
        d = data if gv is None else data[data[g] == gv]
        px, py, pe = [], [], []
        for xv in xs:
            vals = d[d[x] == xv]["v"].tolist()
            m, h, n = mean_ci(vals)
            if n == 0:
                continue
            px.append(pos[xv])
            py.append(m)
            pe.append(0.0 if h != h else h)
            rows.append((gv, xv, m, h, n))
        if not px:
            continue
        off = 0.0 if numeric else (gi - (len(groups) - 1) / 2) * 0.06
        ax.errorbar([p + off for p in px], py, yerr=pe, marker="o", ms=4, capsize=3, lw=1.2,
                    label=None if gv is None else f"{g} = {gv}")
    if numeric:
        vals = [pos[v] for v in xs]
        if len(vals) > 2 and min(vals) > 0 and max(vals) / min(vals) >= 20:
            ax.set_xscale("log")
    else:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(v) for v in xs], rotation=20 if len(xs) > 4 else 0)
    ax.set_xlabel(x)
    ax.set_ylabel(panel["label"] if len(panel["label"]) < 40 else panel["col"])
    ax.grid(alpha=0.3)
    if g:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.find("<svg"):]
    panel["cells"] = rows
    return _unique_ids(svg, prefix) if prefix else svg


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _bottleneck(con) -> str | None:
    if "link" in _columns(con, "links"):
        r = con.execute("SELECT link FROM links ORDER BY index, rep LIMIT 1").fetchone()
        return r[0] if r else None
    return None


def summary(st: Store, by: str) -> tuple[list, list]:
    """(metric labels, rows): per value of column ``by``, each panel metric's mean, 95% CI half
    width and number of runs."""
    con = st.connect()
    check_meta(st)
    axes = list(st.meta.get("columns", []))
    if by not in axes:
        raise InputError(st.meta_path, "report.summary_by", f"an axis column ({', '.join(axes)})", found(by))
    runs = con.execute("SELECT * FROM runs ORDER BY index, rep").df()
    panels = _panels(st, con, runs, axes)
    link = _bottleneck(con)
    labels, cols = [], []
    seen = set()
    for p in panels:
        if (p["view"], p["col"], p.get("flow")) in seen:
            continue
        seen.add((p["view"], p["col"], p.get("flow")))
        per = _per_run(con, p["view"], p["col"], p.get("link") or link, p.get("flow"))
        cols.append(runs[["key", by]].merge(per, on="key"))
        labels.append(p.get("title") or p["label"])
    values = (st.meta.get("column_values") or {}).get(by) or sorted(runs[by].unique().tolist(), key=_sort_key)
    rows = []
    for v in values:
        rows.append((v, [mean_ci(d[d[by] == v]["v"].tolist()) for d in cols]))
    return labels, rows


def summary_lines(st: Store, by: str) -> list[str]:
    """The summary as aligned text lines (mean ± 95% CI)."""
    labels, rows = summary(st, by)
    w = max([len(str(v)) for v, _ in rows] + [len(by)])
    texts = [[_pm(m, h) for m, h, n in cells] for _, cells in rows]
    # each column as wide as its label or its widest cell (labels were cut at 22 characters:
    # "Jain's index of goodpu")
    ws = [max([len(lb)] + [len(t[j]) for t in texts]) for j, lb in enumerate(labels)]
    out = [f"{by:<{w}}  " + "  ".join(f"{lb:>{cw}}" for lb, cw in zip(labels, ws))]
    for (v, _), t in zip(rows, texts):
        out.append(f"{str(v):<{w}}  " + "  ".join(f"{x:>{cw}}" for x, cw in zip(t, ws)))
    return out


def _pm(m, h) -> str:
    if m != m:
        return "n/a"
    return f"{m:.4g} ± {h:.2g}" if h == h else f"{m:.4g}"


def write(dir_: str, out: str | None = None) -> str:
    """Write report.html for the sweep store ``dir_`` into ``out`` (default ``dir_``); its path."""
    if out is not None:
        from qoelab import outdir
        outdir.given(out)
        if os.path.exists(out) and not os.path.isdir(out):
            raise InputError(out, None, message="--out names a file; expected a directory for report.html")
        outdir.creatable(out)   # before the report is built
    st = Store(dir_)
    check_meta(st)
    con = st.connect()
    axes = list(st.meta.get("columns", []))
    import duckdb
    try:
        runs = con.execute("SELECT * FROM runs ORDER BY index, rep").df()
    except duckdb.Error as e:   # a store/runs.parquet replaced by another Parquet file
        reraise_interrupt(e)
        raise InputError(os.path.join(st.path, "store", "runs.parquet"), None,
                         message=f"not the runs view qoelab writes ({str(e).splitlines()[0][:160]}); remove "
                                 f"{os.path.join(st.path, 'store')} to make the views again") from None
    if not len(runs):
        raise InputError(st.path, None, message="the store holds no runs yet")
    panels = _panels(st, con, runs, axes)
    link = _bottleneck(con)
    figs = []
    for p in panels:
        per = _per_run(con, p["view"], p["col"], p.get("link") or link, p.get("flow"))
        d = runs[["key"] + axes].merge(per, on="key")
        d = d[d["v"].notna()]
        if not len(d):
            continue
        figs.append((p, _plot(p, d, prefix=f"f{len(figs)}-")))
    ok = int((runs["status"] == "ok").sum())
    failed = len(runs) - ok
    name = st.meta.get("name") or "sweep"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>sweep {html.escape(name)}</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1500px}"
             ".grid{display:flex;flex-wrap:wrap;gap:12px}.panel{border:1px solid #ddd;padding:6px}"
             ".panel h3{font-size:13px;margin:2px 0 4px}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f4f4f4}"
             "td.s,th.s{text-align:left}details{margin:6px 0}</style></head><body>",
             f"<h1>Sweep {html.escape(name)}</h1>",
             f"<p>{html.escape(st.meta.get('description') or '')}</p>",
             f"<p>{len(runs)} runs in the store of {st.meta.get('runs')} in the sweep ({ok} ok, {failed} failed); "
             f"{st.meta.get('repetitions')} repetition(s); core {html.escape(str(st.meta.get('core_version')))}. "
             f"Axes: " + ", ".join(f"<b>{html.escape(a)}</b> ({', '.join(html.escape(_fmt(v)) for v in (st.meta.get('column_values') or {}).get(a) or [])})"
                                   for a in axes) + ".</p>",
             "<p>Each point is the mean over the runs of its cell (repetitions, and the values of axes not shown) "
             "with its 95% confidence interval (Student t); a point without a bar has one run. Bottleneck metrics "
             f"are those of link <code>{html.escape(str(link))}</code>.</p>",
             ]
    by = check_meta(st).get("summary_by")
    if by:
        labels, rows = summary(st, by)
        parts.append(f"<h2>Summary by {html.escape(by)}</h2><p>Mean ± half-width of the 95% confidence interval over "
                     "the runs (seeds) of each value.</p><table><tr><th class='s'>" + html.escape(by) + "</th>" +
                     "".join(f"<th>{html.escape(lb)}</th>" for lb in labels) + "</tr>" +
                     "".join(f"<tr><td class='s'>{html.escape(str(v))}</td>" +
                             "".join(f"<td>{html.escape(_pm(m, h))}</td>" for m, h, n in cells) + "</tr>"
                             for v, cells in rows) + "</table>")
    parts.append("<h2>Panels</h2><div class='grid'>")
    for p, svg in figs:
        parts.append(f"<div class='panel'><h3>{html.escape(p['title'])}</h3>{svg}<details><summary>numbers</summary>"
                     "<table><tr><th class='s'>group</th><th class='s'>x</th><th>mean</th><th>95% CI ±</th><th>n</th>"
                     "</tr>" + "".join(f"<tr><td class='s'>{html.escape(_fmt(gv))}</td><td class='s'>{html.escape(_fmt(xv))}"
                                      f"</td><td>{_fmt(m)}</td><td>{_fmt(h)}</td><td>{n}</td></tr>"
                                      for gv, xv, m, h, n in p.get("cells", [])) + "</table></details></div>")
    parts.append("</div>")
    if failed:
        bad = runs[runs["status"] != "ok"]
        parts.append("<h2>Failed runs</h2><table><tr><th class='s'>key</th><th class='s'>error</th></tr>" + "".join(
            f"<tr><td class='s'>{html.escape(k[:12])}</td><td class='s'>{html.escape(str(e))}</td></tr>"
            for k, e in zip(bad["key"], bad["error"])) + "</table>")
    show = ["key", "rep", "seed"] + axes + ["status", "wall_s"]
    extra = [c for c in ("video_jfi_goodput", "jain_index", "events") if c in runs.columns]
    t = runs[show + extra].head(MAX_TABLE_ROWS)
    parts.append(f"<h2>Runs</h2><p>{'First ' + str(MAX_TABLE_ROWS) + ' of ' if len(runs) > MAX_TABLE_ROWS else ''}"
                 f"{len(runs)} runs; all of them: <code>qoelab query {html.escape(os.path.basename(st.path))} \"SELECT * "
                 f"FROM runs\"</code> (from the folder that holds the store: the report names no absolute path, "
                 f"so that it can be shared)."
                 "</p><table><tr>" + "".join(f"<th class='s'>{html.escape(c)}</th>" for c in t.columns) + "</tr>")
    for row in t.itertuples(index=False):
        parts.append("<tr>" + "".join(f"<td class='s'>{html.escape(_fmt(v)[:12] if c == 'key' else _fmt(v))}</td>"
                                      for c, v in zip(t.columns, row)) + "</tr>")
    parts.append("</table></body></html>\n")
    out = os.path.abspath(out or st.path)
    os.makedirs(out, exist_ok=True)
    from qoelab import outdir
    path = os.path.join(out, "report.html")
    outdir.write_text(path, "".join(parts))
    return path
