#!/usr/bin/env python3
"""Compare qoelab's trace mode + ABRs with Sabre (UMass-LIDS/sabre) on identical inputs.

Sabre is NOT part of this repository. Give the path of a ``sabre.py`` with ``--sabre PATH`` or the
environment variable ``SABRE_PY``; without it (or when the reference data folder is missing) the
script prints why and exits 0 (a clean skip).

For each trace and each ABR pair it runs

* Sabre: ``python3 sabre.py -v -n TRACE -m MOVIE -a ABR -b 25`` (default EWMA estimator, no
  replacement, abandonment on), parsing its summary lines and, from the ``-v`` per-segment lines,
  the quality of every played segment (for switch counts);
* qoelab: ``crates/qoelab-core/examples/tracemode_run.rs`` (``run_trace_mode`` with
  ``TraceOpts::sabre()``, playback after the first segment, max buffer 25 s) with the ABR and
  parameters of each *variant* (see ``VARIANTS``),

and writes ``per_trace.csv`` and ``summary.md`` (aggregate agreement per ABR and variant) into
``--out`` (default ``benchmarks/sabre/results``).

Data: env ``QOELAB_DATA`` or ``--data`` (default ``../shared/data`` relative to the repo root);
movie ``videos/sabre-bbb.json``; trace sets ``traces/<set>/*.json`` (``--sets``).

    SABRE_PY=/tmp/sabre/sabre.py python3 benchmarks/sabre/compare.py
    python3 benchmarks/sabre/compare.py --sabre /tmp/sabre/sabre.py --sets norway-3g --limit 10
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import glob
import hashlib
import importlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import types

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S = 1_000_000_000  # ns per second

# Sabre configuration -> (Sabre arguments, qoelab ABR, {variant: params}). Parameters are the
# registry's, in canonical units (durations in ns). Per Sabre mode (default = BOLA-U up-switch cap
# with abandonment; "-ao" = BOLA-O cap; "-noa" = no abandonment):
# * "mode": qoelab's defaults plus only the options that select the mode (up-switch cap,
#   abandonment; dynamic: Sabre's 10 s / 5 s thresholds);
# * "matched": the closest our parameters get to Sabre's code (see docs/validation/sabre.md).
BOLAE_MATCHED = {"safety": 1.0, "placeholder_decay": 1.0, "sabre_details": True}
TPUT_MATCHED = {"latency_aware": True, "ibr_factor": 0.5, "ibr_ignore": 0,
                "abandon_buffer_limit": 3600 * S, "abandon_min_samples": 1}
DYN = {"switch_on": 10 * S, "switch_off": 5 * S}
DYN_MATCHED = {**DYN, "abandon_min_samples": 1, "sabre_details": True}


def _modes(name: str, matched: dict, up: str, ab: str, mode_extra: dict, tput_abandon: bool) -> dict:
    """The four Sabre modes (default, -noa, -ao, -ao -noa) of a BOLA-family ABR."""
    out = {}
    for ao in (False, True):
        for noa in (False, True):
            key = name + (" -ao" if ao else "") + (" -noa" if noa else "")
            flags = {up: "bola-o" if ao else "bola-u", ab: not noa}
            if tput_abandon:
                flags["abandon"] = not noa
            qabr = "dynamic" if name == "dynamicdash" else name
            out[key] = ([*["-a", name], *(["-ao"] if ao else []), *(["-noa"] if noa else [])], qabr,
                        {"mode": {**mode_extra, **flags}, "matched": {**matched, **flags}})
    return out


VARIANTS = {
    **_modes("bolae", BOLAE_MATCHED, "upswitch", "abandon", {}, False),
    **_modes("dynamicdash", DYN_MATCHED, "bola_upswitch", "bola_abandon", DYN, True),
    # Sabre's BOLA (not BOLA-E): our `bola` with variant u (Sabre default) or o (-ao)
    **{k: (sa, "bola", {"mode": {"variant": "o" if "-ao" in sa else "u", "abandon": "-noa" not in sa},
                        "matched": {"variant": "o" if "-ao" in sa else "u", "abandon": "-noa" not in sa,
                                    "sabre_details": True}})
       for k, (sa, _, _) in _modes("bola", {}, "x", "y", {}, False).items()},
    # Sabre: latency-aware pick; its IBR (safety 0.9, x0.9 per decision, floor 0.5) is closest to
    # the dash.js cap with factor 0.5 from the first decision; abandonment at any buffer level.
    "throughput": (["-a", "throughput"], "throughput", {"mode": {}, "matched": TPUT_MATCHED}),
    "throughput -noa": (["-a", "throughput", "-noa"], "throughput",
                        {"mode": {"abandon": False}, "matched": {**TPUT_MATCHED, "abandon": False}}),
}

METRICS = ["mean_bitrate_kbps", "time_avg_bitrate_kbps", "rebuffer_s", "rebuffer_events", "switches",
           "bitrate_change_kbps", "time_avg_score"]
# metrics in the aggregate table
AGG = ["mean_bitrate_kbps", "rebuffer_s", "rebuffer_events", "switches", "time_avg_score"]


def data_dir(arg: str | None) -> str:
    if arg:
        return arg
    env = os.environ.get("QOELAB_DATA")
    if env:
        return env
    return os.path.normpath(os.path.join(REPO, "..", "shared", "data"))


def load_sabre_movie(path: str) -> dict:
    """qoelab.video.load_sabre_movie, imported without the native extension if it is not built."""
    try:
        from qoelab.video.loaders import load_sabre_movie as f  # type: ignore
    except Exception:
        root = os.path.join(REPO, "python")
        for name, sub in (("qoelab", "qoelab"), ("qoelab.video", os.path.join("qoelab", "video"))):
            if name not in sys.modules or not hasattr(sys.modules[name], "__path__"):
                m = types.ModuleType(name)
                m.__path__ = [os.path.join(root, sub)]  # type: ignore[attr-defined]
                sys.modules[name] = m
        f = importlib.import_module("qoelab.video.loaders").load_sabre_movie
    return f(path)


# ------------------------------------------------------------------------------------------ sabre
SEG_LINE = re.compile(r"^\[(\d+)-(\d+)\]\s+(\d+): q=(\d+) s=")


# A fixed-rung ABR plugged into Sabre through its documented custom-ABR interface (`-a File.py`,
# class named after the file, subclass of sabre.Abr); used by the network-model check.
FIXED_ABR = """import os
import sabre

Q = int(os.environ["SABRE_FIXED_Q"])


class FixedQ(sabre.Abr):
    def get_first_quality(self):
        return Q

    def get_quality_delay(self, segment_index):
        return (Q, 0)
"""


def run_sabre(sabre: str, movie: str, trace: str, sabre_args: list, buffer_s: float, env=None,
              cache: str | None = None) -> dict:
    """One Sabre run. With ``cache`` (a folder outside the repository) the parsed result is stored
    under a key of sabre.py's content, the movie, the trace, the arguments and SABRE_FIXED_Q, and
    reused on the next call (Sabre is deterministic)."""
    path = None
    if cache:
        h = hashlib.sha256()
        for part in (open(sabre, "rb").read(), open(movie, "rb").read(), open(trace, "rb").read(),
                     json.dumps([[os.path.basename(a) if a.endswith(".py") else a for a in sabre_args], buffer_s, (env or {}).get("SABRE_FIXED_Q")]).encode()):
            h.update(hashlib.sha256(part).digest())
        path = os.path.join(cache, h.hexdigest()[:32] + ".json")
        if os.path.isfile(path):
            with open(path) as f:
                return json.load(f)
    out = _run_sabre(sabre, movie, trace, sabre_args, buffer_s, env)
    if path and not out.get("error"):
        with open(path + ".tmp", "w") as f:
            json.dump(out, f)
        os.replace(path + ".tmp", path)
    return out


def _run_sabre(sabre: str, movie: str, trace: str, sabre_args: list, buffer_s: float, env=None) -> dict:
    cmd = ["nice", "-n", "10", sys.executable, sabre, "-v", "-n", trace, "-m", movie, *sabre_args,
           "-b", str(buffer_s)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    kv, rungs = {}, []
    for line in p.stdout.splitlines():
        m = SEG_LINE.match(line)
        if m:
            if "ABANDONED" not in line and "REPLACEMENT" not in line:
                rungs.append(int(m.group(4)))
            continue
        if ": " in line and not line.startswith("["):
            k, _, v = line.partition(": ")
            try:
                kv[k.strip()] = float(v)
            except ValueError:
                pass
    with open(movie) as f:
        mv = json.load(f)
    br = mv["bitrates_kbps"]
    n = len(mv["segment_sizes_bits"])
    switches = sum(1 for a, b in zip(rungs, rungs[1:]) if a != b)
    abandoned = sum(1 for line in p.stdout.splitlines() if "ABANDONED" in line)
    return {
        "n_segments": len(rungs),
        "mean_bitrate_kbps": kv["total played bitrate"] / n,
        "time_avg_bitrate_kbps": kv["time average played bitrate"],
        "rebuffer_s": kv["total rebuffer"],
        "rebuffer_events": kv["total rebuffer events"],
        "switches": switches,
        "bitrate_change_kbps": kv["total bitrate change"],
        "time_avg_score": kv["time average score"],
        "abandoned": abandoned,
        "check_change_kbps": sum(abs(br[b] - br[a]) for a, b in zip(rungs, rungs[1:])),
        "error": None,
    }


# ----------------------------------------------------------------------------------------- qoelab
def run_ours(runner: list, video_json: str, abr: str, params: dict, traces: list, buffer_s: float) -> dict:
    cmd = runner + ["--video", video_json, "--abr", abr, "--params", json.dumps(params),
                    "--buffer-max", str(buffer_s)] + traces
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if p.returncode != 0:
        raise SystemExit(f"tracemode_run failed: {p.stderr.strip()[-2000:]}")
    out = {}
    for line in p.stdout.splitlines():
        d = json.loads(line)
        out[d["network"]] = d
    return out


def build_runner() -> list:
    p = subprocess.run(["nice", "-n", "10", "cargo", "build", "--release", "--example", "tracemode_run",
                        "-p", "qoelab-core"], cwd=REPO)
    if p.returncode != 0:
        raise SystemExit("cargo build --example tracemode_run failed")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    return ["nice", "-n", "10", os.path.join(target, "release", "examples", "tracemode_run")]


# -------------------------------------------------------------------------------------- aggregate
def fmt(x: float, nd: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{nd}f}"


def aggregate(rows: list, metric: str) -> dict:
    a = [r[f"sabre_{metric}"] for r in rows]
    b = [r[f"ours_{metric}"] for r in rows]
    n = len(a)
    diffs = [y - x for x, y in zip(a, b)]
    mad = sum(abs(d) for d in diffs) / n
    ma, mb = sum(a) / n, sum(b) / n
    rel = [abs(y - x) / abs(x) for x, y in zip(a, b) if abs(x) > 1e-9]
    within = sum(1 for x, y in zip(a, b) if abs(y - x) <= 0.05 * abs(x) + 1e-9) / n
    return {
        "sabre_mean": ma, "ours_mean": mb, "mean_diff": mb - ma, "mad": mad,
        # relative: mean |diff| / mean |sabre| (robust when some Sabre values are 0) and the mean
        # per-trace relative |diff| over traces with a non-zero Sabre value
        "rel_mad": mad / (sum(abs(x) for x in a) / n) if any(abs(x) > 1e-9 for x in a) else float("nan"),
        "mean_rel": sum(rel) / len(rel) if rel else float("nan"), "n_rel": len(rel),
        "within5": within,
    }


def write_summary(path: str, rows: list, args, sets: list, fixed_rows: list) -> None:
    lines = ["# qoelab trace mode vs Sabre: aggregate agreement", "",
             f"Movie `videos/sabre-bbb.json`, max buffer {args.buffer_max:g} s, trace sets: "
             + ", ".join(f"{s} ({sum(1 for r in rows if r['set'] == s and r['abr'] == rows[0]['abr'] and r['variant'] == rows[0]['variant'])})" for s in sets) + ".",
             "Diff = ours - Sabre. MAD = mean absolute difference per trace; rel MAD = MAD / mean |Sabre|;",
             "mean rel = mean of per-trace |diff|/|Sabre| over traces with Sabre != 0 (count in brackets);",
             "within 5% = share of traces with |diff| <= 5% of |Sabre|.", ""]
    groups = []
    for r in rows:
        k = (r["abr"], r["variant"])
        if k not in groups:
            groups.append(k)
    for scope in ["all"] + (sets if len(sets) > 1 else []):
        lines += [f"## {'All traces' if scope == 'all' else scope}", "",
                  "| Sabre ABR | qoelab variant | metric | Sabre mean | ours mean | mean diff | MAD | rel MAD | mean rel | within 5% |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for abr, var in groups:
            sel = [r for r in rows if r["abr"] == abr and r["variant"] == var and (scope == "all" or r["set"] == scope)]
            if not sel:
                continue
            for m in AGG:
                g = aggregate(sel, m)
                nd = 3 if m == "time_avg_score" else 1
                lines.append(f"| {abr} | {var} | {m} | {fmt(g['sabre_mean'], nd)} | {fmt(g['ours_mean'], nd)} | "
                             f"{fmt(g['mean_diff'], nd)} | {fmt(g['mad'], nd)} | {fmt(100 * g['rel_mad'], 1)}% | "
                             f"{fmt(100 * g['mean_rel'], 1)}% ({g['n_rel']}) | {fmt(100 * g['within5'], 0)}% |")
        lines.append("")
    if fixed_rows:
        lines += ["## Network-model check: fixed rung, abandonment off (Sabre `-a FixedQ.py -noa` vs qoelab `fixed`)", "",
                  "| rung | traces | max abs diff rebuffer (s) | max abs diff score | rebuffer events equal | mean Sabre rebuffer (s) |",
                  "|---|---|---|---|---|---|"]
        for q in sorted({r["rung"] for r in fixed_rows}):
            sel = [r for r in fixed_rows if r["rung"] == q]
            dr = max(abs(r["ours_rebuffer_s"] - r["sabre_rebuffer_s"]) for r in sel)
            ds = max(abs(r["ours_time_avg_score"] - r["sabre_time_avg_score"]) for r in sel)
            eq = sum(1 for r in sel if r["ours_rebuffer_events"] == r["sabre_rebuffer_events"])
            ms = sum(r["sabre_rebuffer_s"] for r in sel) / len(sel)
            lines.append(f"| {q} | {len(sel)} | {dr:.2e} | {ds:.2e} | {eq}/{len(sel)} | {ms:.1f} |")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sabre", default=os.environ.get("SABRE_PY"), help="path of sabre.py (env SABRE_PY)")
    ap.add_argument("--data", default=None, help="reference data folder (env QOELAB_DATA, default ../shared/data)")
    ap.add_argument("--sets", default="norway-3g,belgium-4g", help="comma-separated trace sets under traces/")
    ap.add_argument("--abrs", default=",".join(VARIANTS),
                    help="comma-separated Sabre configurations: " + ", ".join(VARIANTS))
    ap.add_argument("--variants", default="mode,matched", help="comma-separated qoelab variants")
    ap.add_argument("--limit", type=int, default=0, help="first N traces of each set (0 = all)")
    ap.add_argument("--buffer-max", type=float, default=25.0, help="Sabre -b and our max buffer (s)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel Sabre processes")
    ap.add_argument("--fixed-rungs", default="0,4,9",
                    help="network-model check: fixed rungs run on both sides with abandonment off ('' = skip)")
    ap.add_argument("--cache", default=os.environ.get("SABRE_CACHE"),
                    help="folder (outside the repository) caching Sabre's parsed results (env SABRE_CACHE)")
    ap.add_argument("--sabre-only", action="store_true",
                    help="only run Sabre (fill --cache) for the selected configurations, then exit")
    ap.add_argument("--out", default=os.path.join(REPO, "benchmarks", "sabre", "results"))
    args = ap.parse_args()

    if not args.sabre or not os.path.isfile(args.sabre):
        print(f"SKIP: sabre.py not found (give --sabre PATH or SABRE_PY; got {args.sabre!r})")
        return 0
    data = data_dir(args.data)
    movie = os.path.join(data, "videos", "sabre-bbb.json")
    if not os.path.isfile(movie):
        print(f"SKIP: reference data not found ({movie}); set QOELAB_DATA or --data")
        return 0
    sets = [s for s in args.sets.split(",") if s]
    traces = []
    for s in sets:
        fs = sorted(glob.glob(os.path.join(data, "traces", s, "*.json")))
        if not fs and os.path.isfile(os.path.join(data, "traces", s)):
            fs = [os.path.join(data, "traces", s)]
        if args.limit:
            fs = fs[: args.limit]
        traces += [(s, f) for f in fs]
    if not traces:
        print("SKIP: no traces found")
        return 0
    abrs = [a for a in args.abrs.split(",") if a]
    for a in abrs:
        if a not in VARIANTS:
            raise SystemExit(f"--abrs: unknown Sabre configuration {a!r}; expected one of: {', '.join(VARIANTS)}")
    variants = [v for v in args.variants.split(",") if v]

    if args.cache:
        os.makedirs(args.cache, exist_ok=True)
    if args.sabre_only:
        jobs = [(abr, t) for abr in abrs for _, t in traces]
        with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            futs = [ex.submit(run_sabre, args.sabre, movie, t, VARIANTS[abr][0], args.buffer_max, None, args.cache)
                    for abr, t in jobs]
            for i, fu in enumerate(cf.as_completed(futs)):
                fu.result()
                if (i + 1) % 100 == 0:
                    print(f"sabre: {i + 1}/{len(jobs)}", file=sys.stderr)
        return 0

    os.makedirs(args.out, exist_ok=True)
    runner = build_runner()
    tmp = tempfile.mkdtemp(prefix="sabre-compare-")
    video_json = os.path.join(tmp, "video.json")
    with open(video_json, "w") as f:
        json.dump(load_sabre_movie(movie), f)

    paths = [t for _, t in traces]
    ours = {}
    for abr in abrs:
        _, qabr, vs = VARIANTS[abr]
        for var in variants:
            if var not in vs:
                continue
            ours[(abr, var)] = run_ours(runner, video_json, qabr, vs[var], paths, args.buffer_max)
            print(f"qoelab {qabr} [{var}]: {len(paths)} traces", file=sys.stderr)

    jobs = [(abr, s, t) for abr in abrs for s, t in traces]
    sab = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(run_sabre, args.sabre, movie, t, VARIANTS[abr][0], args.buffer_max, None, args.cache): (abr, t)
                for abr, s, t in jobs}
        for i, fu in enumerate(cf.as_completed(futs)):
            sab[futs[fu]] = fu.result()
            if (i + 1) % 50 == 0:
                print(f"sabre: {i + 1}/{len(jobs)}", file=sys.stderr)

    fixed_rows = []
    rungs = [int(x) for x in args.fixed_rungs.split(",") if x.strip()]
    if rungs:
        fixed_py = os.path.join(tmp, "FixedQ.py")
        with open(fixed_py, "w") as f:
            f.write(FIXED_ABR)
        fjobs = []
        with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            for q in rungs:
                o = run_ours(runner, video_json, "fixed", {"rung": q}, paths, args.buffer_max)
                env = dict(os.environ, SABRE_FIXED_Q=str(q))
                for s, t in traces:
                    fjobs.append((q, s, t, o[t], ex.submit(run_sabre, args.sabre, movie, t, ["-a", fixed_py, "-noa"],
                                                            args.buffer_max, env, args.cache)))
            for q, s, t, b, fu in fjobs:
                a = fu.result()
                if a.get("error") or b.get("error"):
                    print(f"error fixed {q} {t}: sabre={a.get('error')} ours={b.get('error')}", file=sys.stderr)
                    continue
                fixed_rows.append({"set": s, "trace": os.path.basename(t), "rung": q,
                                   **{f"sabre_{m}": a[m] for m in ("mean_bitrate_kbps", "rebuffer_s", "rebuffer_events",
                                                                   "time_avg_score")},
                                   **{f"ours_{m}": b[m] for m in ("mean_bitrate_kbps", "rebuffer_s", "rebuffer_events",
                                                                  "time_avg_score")}})
        with open(os.path.join(args.out, "fixed_check.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(fixed_rows[0]))
            w.writeheader()
            for r in fixed_rows:
                w.writerow({k: (f"{v:.9g}" if isinstance(v, float) else v) for k, v in r.items()})

    rows = []
    for abr in abrs:
        for var in variants:
            if (abr, var) not in ours:
                continue
            for s, t in traces:
                a, b = sab[(abr, t)], ours[(abr, var)][t]
                if a.get("error") or b.get("error"):
                    print(f"error {abr} {var} {t}: sabre={a.get('error')} ours={b.get('error')}", file=sys.stderr)
                    continue
                row = {"set": s, "trace": os.path.basename(t), "abr": abr, "qoelab_abr": VARIANTS[abr][1],
                       "variant": var}
                for m in METRICS:
                    row[f"sabre_{m}"] = a[m]
                    row[f"ours_{m}"] = b[m]
                row["sabre_abandoned"] = a["abandoned"]
                row["ours_abandoned"] = b["abandoned"]
                rows.append(row)
    with open(os.path.join(args.out, "per_trace.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    write_summary(os.path.join(args.out, "summary.md"), rows, args, sets, fixed_rows)
    with open(os.path.join(args.out, "params.json"), "w") as f:
        json.dump({a: {"sabre_args": sa, "qoelab_abr": q, "variants": v} for a, (sa, q, v) in VARIANTS.items()},
                  f, indent=1)
    print(open(os.path.join(args.out, "summary.md")).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
