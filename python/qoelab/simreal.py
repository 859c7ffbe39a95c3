"""``qoelab compare sim-real SCENARIO``: the same video session simulated and played for real by
dash.js in Chromium behind the emulated bottleneck, side by side (docs/realnet.md, "sim vs real").

Scope today: scenarios with one `[[client]]` (count 1) streaming a content-pipeline MPD (`qoelab video
prepare`), on a dumbbell with a fixed rate, RTT, AQM and buffer, without flows (bulk, web and
upstream flows need `qoelab run --real`). The simulator plays the MPD with the scenario's sans-IO
ABR; for real, `qoelab serve` serves the MPD's directory in the server namespace of `qoelab link`
and `qoelab dashjs` plays it with the matching dash.js rules, once per variant of dash.js settings
(`default`, and `no-rt`: the Resource Timing API off). The page gives the agreement table against
the goal of issue 10 (average bitrate within 15%, stall count within 1) and per-segment plots.
"""

from __future__ import annotations

import html
import io
import json
import os
import subprocess
import sys
import tempfile
import tomllib

from qoelab.errors import InputError

ABR_MAP = {"dynamic": "dynamic", "bola": "bola", "throughput": "throughput"}
VARIANTS = {"default": [], "no-rt": ["streaming.abr.throughput.useResourceTimingApi=false"]}
SERVER = "10.77.0.1"


def _why_not() -> str | None:
    from qoelab import dashjs
    if os.geteuid() != 0:
        return "needs root (network namespaces and TUN devices for qoelab link)"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    return dashjs.missing()


def plan(path: str) -> dict:
    """Read and check the scenario; what to run for real."""
    from qoelab import scenario as scn
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as e:
        raise InputError(path, None, message=f"cannot read scenario: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(path, None, message=f"invalid TOML: {e}") from None
    sc = scn.load(path)
    if raw.get("flow") or raw.get("flows"):
        raise InputError(path, "flow", message="flows are not played for real by sim-real yet (they need "
                                               "`qoelab run --real`); remove them or compare the video alone")
    topo = raw.get("topology", {})
    if topo.get("kind", "dumbbell") != "dumbbell" or "rate_profile" in topo or "trace" in topo:
        raise InputError(path, "topology", "a dumbbell with a fixed rate (no trace or rate profile) for sim-real")
    clients = raw.get("client", [])
    if len(clients) != 1 or clients[0].get("count", 1) != 1:
        raise InputError(path, "client", "exactly one [[client]] with count = 1 for sim-real")
    c = clients[0]
    abr = c.get("abr", "dynamic")
    if abr not in ABR_MAP:
        raise InputError(path, "client.0.abr", f"an ABR dash.js also has ({', '.join(ABR_MAP)})", repr(abr))
    video = c.get("video", "")
    mpd = video if os.path.isabs(video) else os.path.join(os.path.dirname(os.path.abspath(path)), video)
    if not (isinstance(video, str) and video.endswith(".mpd") and os.path.isfile(mpd)):
        raise InputError(path, "client.0.video", "the path of a content-pipeline MPD (qoelab video prepare): "
                                                 "dash.js needs playable media", repr(video))
    rate = topo.get("rate")
    if not rate:
        raise InputError(path, "topology.rate", "a fixed rate for sim-real", None)
    link = ["--rate", str(rate), "--rtt", str(topo.get("rtt", "0ms")), "--aqm", str(topo.get("aqm", "pfifo"))]
    buf = topo.get("buffer")
    if isinstance(buf, str) and buf.strip().lower().endswith("bdp"):
        pk = sc.config["links"][0].get("buffer_packets") if sc.config.get("links") else None
        if pk:
            link += ["--buffer", f"{pk}pkts"]
    elif buf is not None:
        link += ["--buffer", str(buf) if isinstance(buf, str) else f"{buf}pkts"]
    if topo.get("loss"):
        link += ["--loss", str(topo["loss"])]
    return {"scenario": sc, "raw": raw, "mpd": mpd, "abr": ABR_MAP[abr], "link": link,
            "duration_s": sc.config["duration"] / 1e9}


def run_real(p: dict, variant: str, out: str) -> dict:
    """One dash.js session behind the emulated link; returns its summary, segments and timing."""
    import pandas as pd
    q = [sys.executable, "-m", "qoelab.cli"]
    qs = " ".join(q)
    d, name = os.path.split(p["mpd"])
    cmd = q + ["link", *p["link"], "--server", f"{qs} serve {d} --bind {SERVER} --port 8000", "--",
               *q, "dashjs", f"http://{SERVER}:8000/{name}", "--duration", f"{p['duration_s']:g}",
               "--abr", p["abr"], "--out", out, "--force"]
    for s in VARIANTS[variant]:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=p["duration_s"] + 180)
    if r.returncode != 0:
        raise RuntimeError(f"real run ({variant}) failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    lat = next((ln for ln in r.stderr.splitlines() if "departure lateness" in ln), "")
    s = json.load(open(os.path.join(out, "summary.json")))["clients"][0]
    seg = pd.read_parquet(os.path.join(out, "segments.parquet"))
    return {"summary": s, "segments": seg, "lateness": lat.split("qoelab link: ")[-1]}


def compare(path: str, out: str, variants=("default", "no-rt"), force: bool = False, log=None) -> str:
    from qoelab import outdir, results
    log = log or (lambda m: None)
    bad = [v for v in variants if v not in VARIANTS] or ([] if variants else ["(none)"])
    if bad:
        raise InputError(None, "--variants", f"names from {', '.join(VARIANTS)}", bad[0])
    p = plan(path)
    why = _why_not()
    if why:
        raise InputError(None, None, message=f"sim-real cannot run here: {why}")
    out = outdir.check(out, force=force)
    raw = json.loads(json.dumps(p["raw"]))
    o = raw.setdefault("output", {})
    o["tables"] = sorted(set(o.get("tables", [])) | {"segments"})
    from qoelab import scenario as scn
    log("sim-real: simulating")
    sim = results.run(scn.from_dict(raw, path))
    rows = {"simulator": {"summary": sim.summary["clients"][0], "segments": sim.table("segments"), "lateness": ""}}
    with tempfile.TemporaryDirectory(prefix="qoelab-simreal-") as tmp:
        for v in variants:
            log(f"sim-real: dash.js for real ({v}), {p['duration_s']:g} s")
            rows[f"dash.js ({v})"] = run_real(p, v, os.path.join(tmp, v))
        with outdir.atomic_dir(out) as t:
            table = _write(t, path, p, rows)
            for name, r in rows.items():
                key = name.replace(" ", "_").replace("(", "").replace(")", "").replace(".", "")
                r["segments"].to_parquet(os.path.join(t, f"segments-{key}.parquet"), index=False)
            with open(os.path.join(t, "agreement.json"), "w") as f:
                json.dump(table, f, indent=2)
                f.write("\n")
    for line in _lines(table):
        print(line)
    return os.path.join(out, "report.html")


def _agreement(rows: dict) -> list[dict]:
    s0 = rows["simulator"]["summary"]
    out = []
    for name, r in rows.items():
        s = r["summary"]
        b0, b = s0.get("avg_bitrate_bps"), s.get("avg_bitrate_bps")
        diff = (b / b0 - 1) if b0 and b is not None else None
        stalls_ok = abs((s.get("stall_count") or 0) - (s0.get("stall_count") or 0)) <= 1
        ok = None if name == "simulator" else (diff is not None and abs(diff) <= 0.15 and stalls_ok)
        out.append({"run": name, "segments": s.get("segments"), "avg_bitrate_bps": b, "bitrate_vs_sim": diff,
                    "stall_count": s.get("stall_count"), "rebuffer_s": s.get("rebuffer_s"),
                    "startup_s": s.get("startup_s"), "switches": s.get("switches"),
                    "goal_met": ok, "lateness": r.get("lateness", "")})
    return out


def _lines(table) -> list[str]:
    f = (lambda v, fmt: "n/a" if v is None else fmt.format(v))
    out = [f"{'run':<22} {'segments':>8} {'avg bitrate':>14} {'vs sim':>8} {'stalls':>6} {'startup':>8} {'goal':>5}"]
    for r in table:
        out.append(f"{r['run']:<22} {r['segments']:>8} {f(r['avg_bitrate_bps'], '{:,.0f}'):>14} "
                   f"{f(r['bitrate_vs_sim'], '{:+.1%}'):>8} {r['stall_count']:>6} {f(r['startup_s'], '{:.2f}'):>8} "
                   f"{'' if r['goal_met'] is None else ('met' if r['goal_met'] else 'NOT'):>5}")
    return out


def _write(tmp: str, path: str, p: dict, rows: dict) -> list[dict]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    table = _agreement(rows)
    figs = []
    for col, label in (("bitrate_bps", "bitrate of each segment (bit/s)"), ("buffer_after_s", "buffer after (s)")):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for name, r in rows.items():
            d = r["segments"]
            if col in d.columns and len(d):
                t = d["t_last_byte_s"].astype(float)
                ax.step(t, d[col].astype(float), where="post", label=name, lw=1.3)
        ax.set_xlabel("time of the segment's last byte (s)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        plt.close(fig)
        figs.append(buf.getvalue()[buf.getvalue().find("<svg"):])
    f = (lambda v, fmt: "n/a" if v is None else fmt.format(v))
    trs = "".join(
        f"<tr><td>{html.escape(r['run'])}</td><td>{r['segments']}</td><td>{f(r['avg_bitrate_bps'], '{:,.0f}')}</td>"
        f"<td>{f(r['bitrate_vs_sim'], '{:+.1%}')}</td><td>{r['stall_count']}</td><td>{f(r['rebuffer_s'], '{:.2f}')}</td>"
        f"<td>{f(r['startup_s'], '{:.2f}')}</td><td>{r['switches']}</td>"
        f"<td>{'' if r['goal_met'] is None else ('met' if r['goal_met'] else '<b>not met</b>')}</td>"
        f"<td>{html.escape(r['lateness'])}</td></tr>" for r in table)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>sim vs real: {html.escape(path)}</title>"
            "<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1100px}table{border-collapse:collapse;"
            "font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px}</style></head><body>"
            f"<h1>Simulated vs real: {html.escape(os.path.basename(path))}</h1>"
            f"<p>Link: <code>{html.escape(' '.join(p['link']))}</code>; video <code>{html.escape(p['mpd'])}</code>; "
            f"{p['duration_s']:g} s. Simulator: the sans-IO <code>{html.escape(p['abr'])}</code> ABR. Real: dash.js "
            "5.2.1 in headless Chromium behind qoelab's emulator (the same link model and AQM), kernel TCP, "
            "<code>qoelab serve</code>; <i>default</i> = dash.js's settings, <i>no-rt</i> = its Resource Timing "
            "throughput off. Goal (issue 10): average bitrate within 15% of the simulator's and the stall count "
            "within 1.</p><table><tr><th>run</th><th>segments</th><th>avg bitrate (bit/s)</th><th>vs sim</th>"
            "<th>stalls</th><th>rebuffer (s)</th><th>startup (s)</th><th>switches</th><th>goal</th>"
            f"<th>departure lateness</th></tr>{trs}</table>"
            "<p>Where dash.js with its default settings disagrees, its own throughput estimate (the "
            "<code>tput_kbps</code> of its events, docs/realnet.md) is the measured reason.</p>"
            + "".join(f"<div>{s}</div>" for s in figs) + "</body></html>\n")
    with open(os.path.join(tmp, "report.html"), "w") as fh:
        fh.write(page)
    return table


def add_sim_real(csub) -> None:
    s = csub.add_parser(
        "sim-real", help="one video session simulated and played for real by dash.js behind the emulator",
        description="Simulate SCENARIO (one video client on a content-pipeline MPD, a fixed-rate dumbbell, no "
                    "flows) and play it for real with dash.js in Chromium behind `qoelab link` with the same link, "
                    "once per dash.js settings variant; write DIR/report.html (agreement table, per-segment "
                    "bitrate and buffer), agreement.json and the segments of each run. Linux, root, make "
                    "setup-real. See docs/realnet.md.")
    s.add_argument("scenario", metavar="SCENARIO")
    s.add_argument("--out", dest="sr_out", default="results/sim-real", metavar="DIR")
    s.add_argument("--variants", default="default,no-rt",
                   help=f"dash.js settings variants, comma-separated from {', '.join(VARIANTS)}")
    s.add_argument("--force", dest="sr_force", action="store_true", help="replace DIR if it exists")

    def run(args) -> int:
        path = compare(args.scenario, args.sr_out, [v.strip() for v in args.variants.split(",") if v.strip()],
                       force=args.sr_force, log=lambda m: print(m, file=sys.stderr, flush=True))
        print(f"report: {path}")
        return 0
    s.set_defaults(func=run)
