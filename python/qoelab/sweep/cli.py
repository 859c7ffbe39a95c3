"""``qoelab sweep``, ``qoelab query``, ``qoelab report`` (docs/sweeps.md)."""

from __future__ import annotations

import sys

from qoelab.cliutil import int_at_least, nonempty, worker_count


_jobs = worker_count


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cmd_sweep(args) -> int:
    from qoelab.sweep import runner, spec
    # a large sweep takes a while to expand (every run's scenario is built and keyed): a progress
    # line every few seconds on stderr
    sw = spec.load(args.spec, progress=None if args.quiet else _log)
    if args.dry_run:
        print(f"sweep {sw.name}: {len(sw.runs)} runs ({len({r.index for r in sw.runs})} points x "
              f"{sw.repetitions} repetitions); columns: {', '.join(sw.columns) or 'none'}")
        for r in sw.runs[:args.dry_run_show]:
            print(f"  {r.key[:12]} rep {r.rep} seed {r.seed}  " + ", ".join(f"{k}={v!r}" for k, v in r.point.items()))
        if len(sw.runs) > args.dry_run_show:
            print(f"  ... {len(sw.runs) - args.dry_run_show} more")
        return 0
    res = runner.run(sw, args.out, jobs=args.jobs or 0, ray=args.ray, force=args.force,
                     retry_failed=args.retry_failed, log=_log, quiet=args.quiet)
    print(f"sweep {sw.name}: {res['ran']} runs in {res['wall_s']:.1f} s ({res['skipped']} were already in the "
          f"store), {res['failed_total']} failed in all; store {res['out_dir']} "
          f"({res['rows']['runs']} runs, {res['rows']['clients']} client rows, {res['rows']['flows']} flow rows)")
    if res["failed_total"]:
        print(f"failed runs: qoelab query {res['out_dir']} \"SELECT key, error FROM runs WHERE status <> 'ok'\"",
              file=sys.stderr)
    return 1 if res["failed_total"] else 0


def _cmd_query(args) -> int:
    from qoelab.sweep.store import Store
    st = Store(args.dir)
    if args.sql is None:
        con = st.connect()
        for v in ("runs", "clients", "flows", "links"):
            cols = con.execute(f"DESCRIBE {v}").fetchall()
            n = con.execute(f"SELECT count(*) FROM {v}").fetchone()[0]
            print(f"{v} ({n} rows): " + ", ".join(f"{c[0]} {c[1]}" for c in cols))
        for t in st.table_names():
            print(f"tables.{t}")
        return 0
    # fetched in chunks: a result larger than memory is written out (csv, json) or cut (--max-rows)
    # without ever being held whole
    limit = args.max_rows if args.max_rows is not None or args.format != "table" else 200
    shown, cut, frames = 0, False, []
    for i, df in enumerate(st.chunks(args.sql, rows=100_000 if limit is None else limit + 1)):
        if limit is not None and shown + len(df) > limit:
            df, cut = df.iloc[:limit - shown], True
        shown += len(df)
        if args.format == "csv":
            df.to_csv(sys.stdout, index=False, header=i == 0)
        elif args.format == "json":
            text = df.to_json(orient="records", lines=True)
            sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")
        else:
            frames.append(df)
        if cut:
            break
    if args.format == "table":
        import pandas as pd
        df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        with pd.option_context("display.max_rows", None, "display.max_columns", 50, "display.width", 200):
            print(df.to_string(index=False) if len(df) else "(no rows)")
    sys.stdout.flush()
    if cut:
        print(f"qoelab query: the first {shown} rows; the result has more (--max-rows N, or LIMIT in the query)",
              file=sys.stderr)
    return 0


def _cmd_report(args) -> int:
    from qoelab.sweep import report
    out = report.write(args.dir, args.out)
    print(f"report: {out}")
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser(
        "sweep", help="run a parameter study (axes x repetitions) into a resumable results store",
        description="Expand SPEC.toml (a base scenario, [axes] of dotted scenario keys or variables, [zip.*] "
                    "groups, [derived] values, filters, repetitions with seeds) and run every run that DIR's store "
                    "does not hold yet, on all cores (or on Ray). Each run is keyed by the hash of its normalized "
                    "configuration, seed and core version; a killed sweep resumes where it stopped. Query the store "
                    "with `qoelab query DIR`, plot it with `qoelab report DIR`. See docs/sweeps.md.")
    s.add_argument("spec", metavar="SPEC.toml", type=nonempty("a sweep file"))
    s.add_argument("--out", required=True, metavar="DIR", help="the sweep directory (created, or resumed)")
    s.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                   help="local worker processes (default: number of CPUs)")
    s.add_argument("--ray", metavar="ADDRESS", default=None, type=nonempty("local or a Ray address"),
                   help="run on Ray: 'auto' (the cluster this machine belongs to), 'local' (start Ray here) or "
                        "an address such as ray://head:10001; needs pip install 'qoelab[ray]'")
    s.add_argument("--force", action="store_true",
                   help="replace DIR if it holds a different sweep (or one written by another core version)")
    s.add_argument("--retry-failed", action="store_true", help="run again the runs recorded as failed")
    s.add_argument("--dry-run", action="store_true", help="expand and check the sweep, list its runs, run nothing")
    s.add_argument("--quiet", action="store_true", help="no progress lines (the start line and the result line stay)")
    s.set_defaults(func=_cmd_sweep, dry_run_show=20)

    q = sub.add_parser(
        "query", help="SQL over a sweep store (DuckDB): views runs, clients, flows, links, tables.<name>",
        description="Run a DuckDB SQL query over a sweep directory. Views: runs (one row per run: key, index, rep, "
                    "seed, the axis columns, status, error, wall_s, the summary's scalars), clients (one row per run "
                    "per video client), flows (per flow), links (per monitored link), tables.<name> (per-run tables "
                    "with their run's key and axis columns). Without SQL: the views and their columns. Schema: "
                    "docs/tables.md.")
    q.add_argument("dir", metavar="DIR", type=nonempty("a sweep store folder"))
    q.add_argument("sql", nargs="?", default=None, metavar="SQL",
                   help="a DuckDB query (any SQL: COPY and ATTACH write files; with several statements, the "
                        "last one's result is printed); without it, the views and their columns")
    q.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="output format (default: an aligned table). A DOUBLE's NaN (\"did not happen\" in "
                        "several tables) and a NULL come out alike (NaN in the table, empty in csv, null in json): "
                        "tell them apart in the SQL (isnan(x), x IS NULL)")
    q.add_argument("--max-rows", type=int_at_least(1, "a number of rows"), default=None, metavar="N",
                   help="write at most N rows (default: 200 in table format, every row in csv and json, which "
                        "are written as they are fetched); a note on stderr says when rows were left out")
    q.set_defaults(func=_cmd_query)

    r = sub.add_parser(
        "report", help="an HTML report of a sweep store: every metric against every axis, 95%% CIs",
        description="Write a self-contained HTML page (inline SVG plots): one panel per metric against each axis, "
                    "means with 95% confidence intervals over the runs of each cell (its repetitions and the runs of "
                    "the axes the panel does not show), grouped by a second axis, and the run table. A sweep file's [report] section can name the panels. See docs/sweeps.md.")
    r.add_argument("dir", metavar="DIR", type=nonempty("a sweep store folder"))
    r.add_argument("--out", default=None, metavar="DIR2", help="where to write report.html (default: DIR)")
    r.set_defaults(func=_cmd_report)
