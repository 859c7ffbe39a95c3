"""Pieces every reproduction shares: the verdict scale, recognising and replacing its own output
directory, writing claims/report/meta, and the process-pool runner."""

from __future__ import annotations

import json
import os

from qoelab import outdir
from qoelab.errors import InputError

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, OUT_OF_SCOPE = "SUPPORTED", "NOT SUPPORTED", "INCONCLUSIVE", "OUT OF SCOPE"
#: The claims files' grades -> the issue's verdicts (PARTIAL: the direction holds, a magnitude does not).
GRADE_TO_VERDICT = {"PASS": SUPPORTED, "PARTIAL": INCONCLUSIVE, "FAIL": NOT_SUPPORTED, "N/A": OUT_OF_SCOPE,
                    "NOT RUN": INCONCLUSIVE}


def claim(cid, figures, paper, rule, grade, ours, **kw) -> dict:
    """One claim's record: the claims file's ``grade`` and the verdict on the issue's scale (a PARTIAL
    grade is labelled "INCONCLUSIVE (PARTIAL)")."""
    v = GRADE_TO_VERDICT[grade]
    c = {"id": cid, "figures": figures, "paper": paper, "rule": rule, "grade": grade,
         "verdict": v, "verdict_label": v + (" (PARTIAL)" if grade == "PARTIAL" else ""), "ours": ours}
    c.update(kw)
    return c


def is_ours(path: str, reproduction: str) -> bool:
    """``path`` holds a previous run of ``reproduction``: its meta.json says so, or (an interrupted
    run) it holds nothing but the sweep store of one (``sweep/``, named ``<reproduction>-...``, and
    possibly its sensitivity store ``sweep-sensitivity/``)."""
    try:
        with open(os.path.join(path, "meta.json")) as f:
            return json.load(f).get("reproduction") == reproduction
    except (OSError, ValueError, AttributeError):
        pass
    try:
        names = [n for n in os.listdir(path) if not n.startswith(outdir.TMP_PREFIX)]
        with open(os.path.join(path, "sweep", "sweep.json")) as f:
            meta = json.load(f)
        return "sweep" in names and set(names) <= {"sweep", "sweep-sensitivity"} and \
            meta.get("schema") == "qoelab.sweep" and \
            str(meta.get("name", "")).startswith(reproduction + "-")
    except (OSError, ValueError, AttributeError):
        return False


def check_out_dir(out_dir: str, reproduction: str) -> str:
    """The absolute output directory, refused (one line, exit 2) if it exists, is not empty and is not
    a previous run of this reproduction; see :func:`qoelab.outdir.check`."""
    out_dir = os.path.abspath(out_dir)
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not is_ours(out_dir, reproduction):
        raise InputError(out_dir, None, message="output directory exists, is not empty and is not a previous "
                                                f"{reproduction} reproduction (refusing to replace it)")
    return outdir.check(out_dir, replaceable=lambda p: is_ours(p, reproduction))


def dump_json(path: str, obj, json_default=str) -> None:
    """``obj`` as indented JSON with a final newline."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, default=json_default)
        f.write("\n")


def write_claims_report_meta(tmp: str, claims: list, meta: dict, write_report, t0: float, data_note: str = "",
                             json_default=str) -> None:
    """The last step of a reproduction, inside its atomic output directory ``tmp``: claims.json, the
    HTML report (``write_report()``; if it fails, the data are kept and report.html says why, and
    ``meta["report_error"]`` is set), then meta.json with the total wall time since ``t0``."""
    import time
    meta["provenance"] = provenance()
    dump_json(os.path.join(tmp, "claims.json"), claims, json_default)
    try:
        write_report()
    except Exception as e:  # keep the runs: a plotting problem must not lose the simulations
        from qoelab.errors import reraise_interrupt
        reraise_interrupt(e)
        meta["report_error"] = f"{type(e).__name__}: {e}".splitlines()[0]
        with open(os.path.join(tmp, "report.html"), "w") as f:
            f.write(f"<!doctype html><p>report generation failed: {meta['report_error']}{data_note}</p>")
    meta["wall_s_total"] = round(time.perf_counter() - t0, 2)
    dump_json(os.path.join(tmp, "meta.json"), meta, json_default)


def run_pool(items: list, worker, jobs: int = 0, cost=None, progress=None, serial=None) -> list:
    """``worker(item)`` for every item, results in input order, on ``jobs`` worker processes (0 = all
    CPUs; ``worker`` must be a module-level function). The most expensive items by ``cost(item)`` go
    first so that the tail is short. ``serial`` (a function of an item) runs everything in this
    process instead (tests with a custom runner); so do ``jobs == 1`` and a single item.
    ``progress(done, total, elapsed_s)`` is called after each item."""
    import sys
    import time
    jobs = jobs or os.cpu_count() or 1
    out: list = [None] * len(items)
    t0 = time.perf_counter()
    if serial is not None or jobs == 1 or len(items) <= 1:
        f = serial or worker
        for i, it in enumerate(items):
            out[i] = f(it)
            if progress:
                progress(i + 1, len(items), time.perf_counter() - t0)
        return out
    import multiprocessing as mp
    ctx = mp.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
    order = sorted(range(len(items)), key=lambda i: -cost(items[i])) if cost else list(range(len(items)))
    from qoelab.sweep.runner import stoppable_pool
    with stoppable_pool(ctx, min(jobs, len(items))) as pool:
        done = 0
        for i, res in zip(order, pool.imap(worker, [items[i] for i in order], chunksize=1)):
            out[i] = res
            done += 1
            if progress:
                progress(done, len(items), time.perf_counter() - t0)
    return out


def run_on_sweep(name: str, items: list, scenario_of, extract: str, store_dir: str, jobs: int = 0, runner=None,
                 log=None, cost=None, task_of=None) -> tuple[list, dict]:
    """Run a reproduction's grid on the sweep engine (qoelab.sweep): one run per item (a frozen
    dataclass with ``run_id``, ``rep``, ``seed``), its scenario ``scenario_of(item)``, the hook
    ``extract`` ("module:function", called in the worker as ``function(result, point)`` with the
    item as ``point["payload"]``) into the resumable store ``store_dir``; the most expensive items
    (``cost``) run first. ``runner`` (tests) replaces the simulator in this process. Returns the
    records in item order and the sweep's counts. ``task_of(item)``, when it returns "module:function",
    makes that item a computation rather than a scenario run (the function gets the point, with the
    item as ``point["payload"]``, and returns {"run": {...}, other keys kept in the record, "tables":
    {...}})."""
    from dataclasses import fields

    from qoelab.sweep import runner as srunner
    from qoelab.sweep import spec as sspec
    from qoelab.sweep.store import Store

    def point(it) -> dict:
        p = {"run_id": it.run_id}
        for f in fields(it):
            v = getattr(it, f.name)
            if f.name not in ("rep", "seed") and isinstance(v, (str, int, float, bool)):
                p[f.name] = v
        return p
    runs = []
    for i, it in enumerate(items):
        task = task_of(it) if task_of else None
        runs.append(sspec.Run(i, getattr(it, "rep", 0), getattr(it, "seed", 0), point(it),
                              None if task else scenario_of(it), payload=it, task=task))
    columns = list(dict.fromkeys(c for r in runs for c in r.point))
    for r in runs:
        for c in columns:
            r.point.setdefault(c, None)
    if cost is not None:
        runs.sort(key=lambda r: -cost(r.payload))
    sw = sspec.programmatic(name, runs, columns, base_src=f"<{name}>", tables=[], extract=extract)
    res = srunner.run(sw, store_dir, jobs=jobs, force=True, log=log, sim=runner)
    st = Store(store_dir)
    by_index = {r.index: st._load(r.key) for r in sw.runs}
    return [by_index[i] for i in range(len(items))], res


def record_metrics(rec: dict | None, failed: dict) -> tuple[dict, dict]:
    """(run record with ``wall_s`` and ``error``, the hook's other outputs) from a sweep record;
    ``failed`` is the run record of a failed run (its identifiers)."""
    if rec is None:
        return {**failed, "wall_s": None, "error": "missing from the store"}, {}
    m = rec.get("metrics") or {}
    if rec.get("status") == "ok":
        out = dict(m.get("run") or {})
        out["wall_s"] = rec.get("wall_s")
        out["error"] = None
        return out, m
    return {**failed, "wall_s": rec.get("wall_s"), "error": rec.get("error")}, {}


#: CSS class of a verdict in the reports.
VCLASS = {SUPPORTED: "ok", NOT_SUPPORTED: "bad", INCONCLUSIVE: "meh", OUT_OF_SCOPE: "meh"}


def claims_table_html(claims: list, intro: str = "") -> str:
    """The reports' claims table: id and figures, the paper's claim, ours, the verdict, the rule;
    ``intro`` (HTML) stands between the heading and the table."""
    import html
    rows = "".join(
        f"<tr><td>{html.escape(str(c['id']))}<br><span class='n'>{html.escape(c.get('figures', ''))}</span></td>"
        f"<td>{html.escape(c.get('paper', ''))}</td><td>{html.escape(c.get('ours', ''))}</td>"
        f"<td class='{VCLASS.get(c['verdict'], 'meh')}'><b>{html.escape(c.get('verdict_label', c['verdict']))}</b></td>"
        f"<td>{html.escape(c.get('rule', ''))}</td></tr>" for c in claims)
    return ("<h2>Claims</h2>" + intro + "<table><tr><th>#</th><th>paper's claim</th><th>ours</th><th>verdict</th>"
            "<th>rule</th></tr>" + rows + "</table>")


def report_head(reproduction: str, heading: str, css: str) -> str:
    """The opening of a reproduction's report.html, up to and including its heading."""
    import html
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>qoelab reproduce {reproduction}</title>"
            f"<style>{css}</style></head><body><h1>{html.escape(heading)}</h1>")


def failures_html(failures: list | None, label: str = "Failed runs") -> str:
    """The first ten failures, each ``(run, error)`` or a string, as one paragraph; "" when there are none."""
    import html
    if not failures:
        return ""
    items = (f"{f[0]}: {f[1]}" if isinstance(f, (list, tuple)) else str(f) for f in failures[:10])
    return f"<p class='bad'>{label}: " + "; ".join(html.escape(i) for i in items) + "</p>"


def figures_html(fig_dir: str, figures, missing: str = "not run") -> list[str]:
    """Each ``(name, png, caption)`` (``png``: base64 PNG or None) written to ``fig_dir/name.png`` and
    returned as an inline <figure>; a None figure becomes "caption: not run." (nothing if ``missing``
    is empty)."""
    import base64
    import html
    os.makedirs(fig_dir, exist_ok=True)
    parts = []
    for name, img, cap in figures:
        if img is None:
            if missing:
                parts.append(f"<p>{html.escape(cap)}: {missing}.</p>")
            continue
        with open(os.path.join(fig_dir, name + ".png"), "wb") as f:
            f.write(base64.b64decode(img))
        parts.append(f"<figure><figcaption>{html.escape(cap)}</figcaption>"
                     f"<img alt='{html.escape(cap)}' src='data:image/png;base64,{img}'></figure>")
    return parts


def provenance() -> dict:
    """How a reproduction was made: the command line, qoelab's and the core's versions and build, and
    the date (UTC). In meta.json and at the foot of report.html (nothing else in them depends on it)."""
    import datetime
    import platform
    import shlex
    import sys
    from qoelab import _core, __version__
    argv = sys.argv[:]
    if argv and argv[0].endswith(("qoelab/cli.py", "qoelab/__main__.py")):
        argv[0] = "qoelab"
    elif argv:
        argv[0] = os.path.basename(argv[0])
    return {"command": " ".join(shlex.quote(a) for a in argv), "qoelab": __version__, "core": _core.version(),
            "core_build": _core.build(), "python": platform.python_version(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")}


def write_html(out_dir: str, parts: list[str], meta: dict) -> str:
    """Join ``parts`` into ``out_dir/report.html`` with the provenance at its foot (``meta``'s, the
    one in meta.json, else this command's); returns its path."""
    import html
    path = os.path.join(out_dir, "report.html")
    p = meta.get("provenance") or provenance()
    foot = (f"<footer><p>Made by <code>{html.escape(p['command'])}</code> with qoelab {html.escape(p['qoelab'])} "
            f"(core {html.escape(p['core'])}, {html.escape(p['core_build'])} build, Python {html.escape(p['python'])}) "
            f"on {html.escape(p['date_utc'])} UTC; the wall time of the whole command is in meta.json "
            f"(<code>wall_s_total</code>).</p></footer>")
    text = "\n".join(parts)
    end = text.rfind("</body>")
    text = text[:end] + foot + text[end:] if end >= 0 else text + foot
    with open(path, "w") as f:
        f.write(text)
    return path
