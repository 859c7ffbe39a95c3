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
    raw = scn.read_toml(path)
    sc = scn.load(path)
    if raw.get("flow") or raw.get("flows"):
        raise InputError(path, "flow", message="flows are not played for real by sim-real yet (they need "
                                               "`qoelab run --real`); remove them or compare the video alone")
    topo = raw.get("topology", {})
    if topo.get("kind", "dumbbell") != "dumbbell" or "rate_profile" in topo:
        raise InputError(path, "topology", "a dumbbell with a fixed rate or Mahimahi traces (no rate profile) "
                                           "for sim-real")
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
    link = []
    for key, rkey, opt, ropt in (("trace", "rate", "--trace", "--rate"),
                                 ("trace_up", "rate_up", "--uplink-trace", "--uplink-rate")):
        if key in topo:
            link += [opt, _mahimahi_path(path, topo, key)]
        elif topo.get(rkey):
            link += [ropt, str(topo[rkey])]
    if "--rate" not in link and "--trace" not in link:
        raise InputError(path, "topology.rate", "a fixed rate or a Mahimahi trace for sim-real", None)
    link += ["--rtt", str(topo.get("rtt", "0ms")), "--aqm", str(topo.get("aqm", "pfifo"))]
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


def _mahimahi_path(path: str, topo: dict, key: str) -> str:
    """The file of topology.<key>: the emulator reads Mahimahi packet-delivery traces only."""
    from qoelab import traces
    v = topo[key]
    if not isinstance(v, str):
        raise InputError(path, f"topology.{key}", "the path of a Mahimahi trace", repr(v))
    if v.startswith("data:"):
        full = os.path.join(traces.data_dir(), v[5:])
    else:
        full = v if os.path.isabs(v) else os.path.join(os.path.dirname(os.path.abspath(path)), v)
    fmt = topo.get(key + "_format", "auto")
    if fmt == "auto" and os.path.isfile(full):
        fmt = traces.detect_format(full)
    if fmt != "mahimahi":
        raise InputError(path, f"topology.{key}", "a Mahimahi trace for sim-real (the emulator replays Mahimahi "
                                                   "packet-delivery traces)",
                         f"a {fmt} trace")
    return full


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
    with open(os.path.join(out, "events.jsonl")) as f:
        events = f.read()
    return {"summary": s, "segments": seg, "lateness": lat.split("qoelab link: ")[-1], "events": events}


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
                if r.get("events"):     # dash.js's own record: throughput estimates, buffer samples
                    with open(os.path.join(t, f"events-{key}.jsonl"), "w") as f:
                        f.write(r["events"])
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


# ----------------------------------------------------------------------------------------------
# Network mode: bulk flows simulated and run for real by `qoelab run --real`

#: The issue's matrix: {pfifo, codel, fq_codel, pie} x {reno, cubic, bbr} at 10 and 20 Mbit/s.
MATRIX_AQMS = ("pfifo", "codel", "fq_codel", "pie")
MATRIX_CCS = ("reno", "cubic", "bbr")
MATRIX_RATES = ("10Mbps", "20Mbps")


def matrix_scenario(aqm: str, cc: str, rate: str, duration: str = "30s") -> str:
    """One cell: two bulk flows of ``cc`` (the second starts 5 s later) through a 2-BDP ``aqm``
    bottleneck at ``rate``, 40 ms RTT. ``reno`` is the simulator's ``newreno`` (the kernel calls its
    NewReno ``reno``)."""
    cc = {"reno": "newreno"}.get(cc, cc)
    return (f"# sim-real matrix cell\n[scenario]\nname = \"m-{aqm}-{cc}-{rate}\"\nduration = \"{duration}\"\n\n"
            f"[topology]\nrate = \"{rate}\"\nrtt = \"40ms\"\naqm = \"{aqm}\"\nbuffer = \"2bdp\"\n\n"
            f"[[flow]]\nname = \"a\"\nkind = \"bulk\"\ncc = \"{cc}\"\n\n"
            f"[[flow]]\nname = \"b\"\nkind = \"bulk\"\ncc = \"{cc}\"\nstart = \"5s\"\n")


def network_agreement(sim: dict, real: dict) -> dict:
    """Goodput shares per flow and the bottleneck's mean queueing delay, simulated vs real, against
    the goal: every share within 10% (relative) and the mean delay within 20%."""
    def shares(s):
        g = {f["name"]: f.get("goodput_bps") or 0.0 for f in s.get("flows", []) if f.get("kind") == "bulk"}
        tot = sum(g.values())
        return {k: (v / tot if tot else None) for k, v in g.items()}, g
    s_sh, s_g = shares(sim)
    r_sh, r_g = shares(real)
    flows = []
    ok = True
    for k in s_sh:
        a, b = s_sh[k], r_sh.get(k)
        dev = (b / a - 1) if a and b is not None else None
        ok = ok and dev is not None and abs(dev) <= 0.10
        flows.append({"flow": k, "goodput_sim_bps": s_g[k], "goodput_real_bps": r_g.get(k), "share_sim": a,
                      "share_real": b, "share_dev": dev})
    qs = ((sim.get("links") or [{}])[0].get("queue_delay_ms") or {}).get("mean")
    qr = ((real.get("links") or [{}])[0].get("queue_delay_ms") or {}).get("mean")
    qdev = (qr / qs - 1) if qs and qr is not None else None
    q_ok = qdev is not None and abs(qdev) <= 0.20
    return {"flows": flows, "shares_ok": ok, "qdelay_sim_ms": qs, "qdelay_real_ms": qr, "qdelay_dev": qdev,
            "qdelay_ok": q_ok, "util_sim": (sim.get("links") or [{}])[0].get("utilization"),
            "util_real": (real.get("links") or [{}])[0].get("utilization")}


def run_real_scenario(path: str, out: str, timeout_s: float) -> tuple[dict, dict]:
    """`qoelab run --real` of a scenario: its summary and perf (timing quality)."""
    r = subprocess.run([sys.executable, "-m", "qoelab.cli", "run", "--real", path, "--out", out, "--force"],
                       capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise RuntimeError(f"qoelab run --real {os.path.basename(path)}: "
                           f"{(r.stderr.strip().splitlines() or ['failed'])[-1]}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    perf = {}
    if os.path.exists(os.path.join(out, "perf.json")):
        perf = json.load(open(os.path.join(out, "perf.json")))
    return summary, perf


def network_matrix(out: str, aqms=MATRIX_AQMS, ccs=MATRIX_CCS, rates=MATRIX_RATES, duration: str = "30s",
                   force: bool = False, log=None) -> list[dict]:
    """Every cell simulated and run for real; DIR/report.html, DIR/matrix.json."""
    from qoelab import outdir, results
    log = log or (lambda m: None)
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        raise InputError(None, None, message="sim-real --matrix cannot run here: needs root and /dev/net/tun")
    out = outdir.check(out, force=force)
    cells = []
    with tempfile.TemporaryDirectory(prefix="qoelab-simreal-") as tmp:
        n = len(aqms) * len(ccs) * len(rates)
        for aqm in aqms:
            for cc in ccs:
                for rate in rates:
                    path = os.path.join(tmp, f"{aqm}-{cc}-{rate}.toml")
                    with open(path, "w") as f:
                        f.write(matrix_scenario(aqm, cc, rate, duration))
                    log(f"sim-real matrix: {len(cells) + 1}/{n} {aqm} {cc} {rate}")
                    sim = results.run(path).summary
                    real, perf = run_real_scenario(path, os.path.join(tmp, "real"), 300)
                    a = network_agreement(sim, real)
                    a.update({"aqm": aqm, "cc": cc, "rate": rate, "timing": perf.get("timing") or perf})
                    cells.append(a)
        with outdir.atomic_dir(out) as t:
            with open(os.path.join(t, "matrix.json"), "w") as f:
                json.dump(cells, f, indent=2, default=str)
                f.write("\n")
            _write_matrix(t, cells, duration)
    return cells


def _write_matrix(tmp: str, cells: list[dict], duration: str) -> None:
    f = (lambda v, fmt: "n/a" if v is None else fmt.format(v))
    trs = []
    for c in cells:
        sh = "; ".join(f"{x['flow']} {f(x['share_sim'], '{:.3f}')}/{f(x['share_real'], '{:.3f}')}" for x in c["flows"])
        trs.append(f"<tr><td>{c['aqm']}</td><td>{c['cc']}</td><td>{c['rate']}</td><td>{html.escape(sh)}</td>"
                   f"<td>{'met' if c['shares_ok'] else '<b>not met</b>'}</td>"
                   f"<td>{f(c['qdelay_sim_ms'], '{:.1f}')} / {f(c['qdelay_real_ms'], '{:.1f}')} "
                   f"({f(c['qdelay_dev'], '{:+.0%}')})</td><td>{'met' if c['qdelay_ok'] else '<b>not met</b>'}</td>"
                   f"<td>{f(c['util_sim'], '{:.3f}')} / {f(c['util_real'], '{:.3f}')}</td>"
                   f"<td>{html.escape(json.dumps(c.get('timing'))[:160])}</td></tr>")
    met = sum(1 for c in cells if c["shares_ok"] and c["qdelay_ok"])
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>sim vs real: network matrix</title><style>"
            "body{font-family:system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:13px}"
            "td,th{border:1px solid #ccc;padding:3px 7px}</style></head><body><h1>Simulated vs real: the network "
            f"matrix</h1><p>Two bulk flows of each congestion controller (the second from 5 s), 40 ms RTT, a 2-BDP "
            f"buffer, {html.escape(duration)}; the simulator's TCP vs the Linux kernel's behind qoelab's emulator "
            "(the same link and AQM code). Goal (issue 10): goodput shares within 10% and the mean queueing delay "
            f"within 20%. {met} of {len(cells)} cells meet both.</p><table><tr><th>AQM</th><th>CC</th><th>rate</th>"
            "<th>goodput share sim / real</th><th>shares</th><th>mean queue delay sim / real (ms)</th><th>delay</th>"
            "<th>utilization sim / real</th><th>timing quality</th></tr>" + "".join(trs) + "</table></body></html>\n")
    with open(os.path.join(tmp, "report.html"), "w") as fh:
        fh.write(page)


def add_sim_real(csub) -> None:
    s = csub.add_parser(
        "sim-real", help="one video session simulated and played for real by dash.js behind the emulator",
        description="Simulate SCENARIO (one video client on a content-pipeline MPD, a fixed-rate dumbbell, no "
                    "flows) and play it for real with dash.js in Chromium behind `qoelab link` with the same link, "
                    "once per dash.js settings variant; write DIR/report.html (agreement table, per-segment "
                    "bitrate and buffer), agreement.json and the segments of each run. Linux, root, make "
                    "setup-real. See docs/realnet.md.")
    s.add_argument("scenario", metavar="SCENARIO", nargs="?", default=None)
    s.add_argument("--matrix", action="store_true",
                   help="instead of SCENARIO: the network matrix {pfifo, codel, fq_codel, pie} x {reno, cubic, bbr} x "
                        "{10, 20} Mbit/s, two bulk flows each, simulated and run for real (qoelab run --real)")
    s.add_argument("--duration", default=None, help="with --matrix: the cells' length (default 30s)")
    s.add_argument("--out", dest="sr_out", default="results/sim-real", metavar="DIR")
    s.add_argument("--variants", default=None,
                   help=f"with SCENARIO: dash.js settings variants, comma-separated from {', '.join(VARIANTS)} "
                        "(default default,no-rt)")
    s.add_argument("--force", dest="sr_force", action="store_true", help="replace DIR if it exists")

    def run(args) -> int:
        log = (lambda m: print(m, file=sys.stderr, flush=True))
        if args.matrix:
            if args.scenario is not None:   # (it was silently ignored and the 24 real cells started)
                raise InputError(None, "SCENARIO", "no scenario with --matrix (the matrix has its own cells)",
                                 repr(args.scenario[:60]))
            if args.variants is not None:   # (likewise: the matrix plays no video)
                raise InputError(None, "--variants", "no --variants with --matrix (its cells are bulk flows)",
                                 repr(args.variants[:60]))
            args.duration = args.duration or "30s"
            from qoelab import units
            try:
                ns = units.duration(args.duration)
            except ValueError as e:
                raise InputError(None, "--duration", message=str(e)) from None
            if not 1e9 <= ns <= 3600e9:
                raise InputError(None, "--duration", "a cell length of 1 s to 1 h", repr(args.duration))
            cells = network_matrix(args.sr_out, duration=args.duration, force=args.sr_force, log=log)
            print(f"{sum(1 for c in cells if c['shares_ok'] and c['qdelay_ok'])} of {len(cells)} cells meet the goal; "
                  f"report: {os.path.join(os.path.abspath(args.sr_out), 'report.html')}")
            return 0
        if args.scenario is None:
            raise InputError(None, "SCENARIO", "a scenario file (or --matrix)", "nothing")
        if args.duration is not None:   # the scenario's own duration applies
            raise InputError(None, "--duration", "--duration only with --matrix (SCENARIO sets its duration)",
                             repr(args.duration[:60]))
        variants = args.variants if args.variants is not None else "default,no-rt"
        path = compare(args.scenario, args.sr_out, [v.strip() for v in variants.split(",") if v.strip()],
                       force=args.sr_force, log=lambda m: print(m, file=sys.stderr, flush=True))
        print(f"report: {path}")
        return 0
    s.set_defaults(func=run)
