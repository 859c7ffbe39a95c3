"""`qoelab run --real SCENARIO --out DIR`: a dumbbell scenario on a real network (Linux; root or unprivileged user namespaces).

This module checks that the scenario maps onto the real-network runtime (one line and exit 2 naming
what does not), writes the plan for the driver ``qoelab-netemu run`` (crate ``crates/qoelab-net``,
``real.rs``: namespaces, the emulated bottleneck, ``qoelab serve``, kernel TCP bulk flows, the core's
video sessions over real sockets), runs it, and turns what it writes into the same result files as
a simulated run (summary.json, Parquet tables), plus the timing quality in perf.json. See
docs/realnet.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from qoelab.cliutil import EXIT_INPUT
from qoelab.errors import Terminated

SERVER_ADDR = "10.77.0.1"
BASE_PORT = 8000


class Unsupported(Exception):
    """The scenario or the machine lacks something the real run needs (one line, exit 2)."""


def _kernel_ccs() -> set[str]:
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            return set(f.read().split())
    except OSError:
        return set()


#: The simulator's controllers under the kernel's names (Linux calls its NewReno with SACK "reno").
KERNEL_CC = {"newreno": "reno"}


def _check_cc(where: str, cc: str, params, tcp, avail: set[str]) -> None:
    if cc not in avail:
        raise Unsupported(f"{where}.cc: {cc!r} is not a congestion controller of this kernel "
                          f"(available: {', '.join(sorted(avail)) or 'none'})")
    if params:
        raise Unsupported(f"{where}.cc_params: parameters of qoelab's controllers do not apply to kernel TCP")
    if tcp:
        raise Unsupported(f"{where}.tcp: TCP options of the simulator do not apply to kernel TCP")


def _path(links: list[dict], src: int, dst: int) -> list[int] | None:
    """Link indices of the shortest path src -> dst (BFS, lowest link index first, as the simulator)."""
    prev = {src: None}
    frontier = [src]
    while frontier:
        nxt = []
        for n in frontier:
            for i, l in enumerate(links):
                if l["from"] == n and l["to"] not in prev:
                    prev[l["to"]] = i
                    nxt.append(l["to"])
        frontier = nxt
    if dst not in prev:
        return None
    out, n = [], dst
    while prev[n] is not None:
        out.append(prev[n])
        n = links[prev[n]]["from"]
    return out[::-1]


def _video_path(v: dict, where: str) -> str:
    """The URL path of a synthetic video's rung files under `qoelab serve` (its bytes have exactly
    the scenario's layout), or Unsupported."""
    from qoelab.serve import synthetic_layout
    from qoelab.video.ladders import LADDERS
    m = re.fullmatch(r"(.+)-seed(\d+)", v.get("name", ""))
    if not m or m.group(1) not in LADDERS:
        raise Unsupported(f"{where}.video ({v.get('name')!r}): only synthetic:<ladder> videos are served on the "
                          "real network yet")
    ladder, seed, n = m.group(1), int(m.group(2)), len(v["sizes"])
    lay = synthetic_layout(ladder, seed, n)
    if lay["sizes"] != v["sizes"] or lay.get("byte_offsets") != v.get("byte_offsets"):
        raise Unsupported(f"{where}.video ({v.get('name')!r}): its sizes differ from the synthetic video served "
                          "for it")
    return f"/synthetic/{ladder}/s{seed}-n{n}/"


def plan_for(sc, work: str, out: str) -> dict:
    """The driver's plan for scenario `sc` (Unsupported if it does not map)."""
    cfg = sc.config
    meta = sc.meta
    if meta.get("topology") != "dumbbell":
        raise Unsupported(f"topology {meta.get('topology')!r}: only dumbbell scenarios run on the real network yet")
    if cfg.get("network", "packet") != "packet":
        raise Unsupported(f"scenario.network {cfg.get('network')!r}: the real network replaces the packet network")
    if cfg.get("providers"):
        raise Unsupported("provider: flow controllers do not run on the real network yet")
    for i, pg in enumerate(cfg.get("pages") or []):
        raise Unsupported(f"page[{i}] ({pg.get('name')}): page loads do not run on the real network yet")
    raw_out = ((sc.raw or {}).get("output") or {}) if isinstance(sc.raw, dict) else {}
    for l in cfg["links"]:
        if l.get("pcap"):
            raise Unsupported(f"output.pcap: {l['name']!r}: the real run writes no pcap (capture on the namespaces' "
                              "interfaces with tcpdump instead)")
    if "packets" in cfg.get("output", {}).get("tables", []):
        key = "output.packet_log" if raw_out.get("packet_log") else "output.tables"
        raise Unsupported(f"{key}: the per-packet log (the packets table) is the simulator's; the real run does not "
                          "write it")
    for i, c in enumerate(cfg.get("clients", [])):
        t = c.get("transport")
        if t not in (None, "tcp"):
            raise Unsupported(f"client[{i}] ({c['name']}).transport: {t!r} runs in the packet simulator only; the "
                              "real network runs kernel TCP")
    for i, f in enumerate(cfg.get("flows", [])):
        t = f.get("transport")
        if t not in (None, "tcp"):
            raise Unsupported(f"flow[{i}] ({f['name']}).transport: {t!r} runs in the packet simulator only; the "
                              "real network runs kernel TCP")
    links = cfg["links"]
    name = meta["bottleneck"]["link"]
    names = [l["name"] for l in links]
    down, up = names.index(name), names.index(name + "_up")
    avail = _kernel_ccs()
    pairs = []   # (where, server-side node, client-side node)
    bulk_up = []   # per flow (bulk, onoff, web): upstream (client side -> server side)
    for i, f in enumerate(cfg.get("flows", [])):
        where = f"flow[{i}] ({f['name']})"
        if f["kind"] not in ("bulk", "onoff", "web", "cbr"):
            raise Unsupported(f"{where}.kind: {f['kind']!r} flows do not run on the real network")
        if f.get("weight_schedule"):
            raise Unsupported(f"{where}.weight_schedule: weights do not apply to kernel TCP")
        if f["kind"] == "cbr":
            if not 29 <= f["packet_size"] <= 1500:
                raise Unsupported(f"{where}.packet_size: {f['packet_size']} bytes; on the real network a datagram "
                                  "is 29-1500 IP bytes (MTU 1500, no fragments)")
        else:
            f["cc"] = KERNEL_CC.get(f["cc"], f["cc"])
            _check_cc(where, f["cc"], f.get("cc_params"), f.get("tcp"), avail)
        fwd = _path(links, f["src"], f["dst"]) or []
        upstream = up in fwd and down not in fwd
        bulk_up.append(upstream)
        pairs.append((where, f["dst"], f["src"]) if upstream else (where, f["src"], f["dst"]))
    clients, servers, ports = [], [], {}
    si = cfg.get("output", {}).get("sample_interval", 100_000_000) / 1e9
    players = meta.get("players") or {}

    def add_server(cc: str) -> int:
        port = BASE_PORT + len(servers)
        k = len(servers)
        servers.append({
            "argv": [sys.executable, "-c", "import sys; from qoelab.cli import main; sys.exit(main())",
                     "serve", os.path.join(work, "www"), "--bind", SERVER_ADDR, "--port", str(port),
                     "--cc", cc, "--tcp-info-log", os.path.join(work, f"server{k}.tcp_info.jsonl"),
                     "--tcp-info-interval", f"{max(si, 0.001):g}", "--log", os.path.join(work, f"server{k}.log"),
                     "--idle-timeout", "3600"],
            "port": port,
            "tcp_info_log": os.path.join(work, f"server{k}.tcp_info.jsonl"),
            "stderr": os.path.join(work, f"server{k}.stderr"),
        })
        return k

    for i, c in enumerate(cfg.get("clients", [])):
        where = f"client[{i}] ({c['name']})"
        pl = players.get(i)
        if pl is not None:
            c["cc"] = KERNEL_CC.get(c["cc"], c["cc"])
            _check_cc(where, c["cc"], c.get("cc_params"), c.get("tcp"), avail)
            path = _video_path(cfg["videos"][c["video"]], where) + "media/"
            _check_playable(where, cfg["videos"][c["video"]])
            # A server of its own (with the client's cc): its TCP_INFO log then holds exactly this
            # browser's connections.
            k = add_server(c["cc"])
            clients.append({"path": path, "server": k, "browser": _browser(pl, i, c, servers[k]["port"], path, cfg,
                                                                          work)})
            pairs.append((where, c["server"], c["client"]))
            continue
        if c.get("arrival_rate") is not None:
            raise Unsupported(f"{where}.arrival_rate: session arrivals do not run on the real network yet")
        if c["abr"].startswith("python:"):
            raise Unsupported(f"{where}.abr: Python ABRs do not run on the real network yet")
        if (c.get("http") or {}).get("think", 0):
            raise Unsupported(f"{where}.http.think: the real server has no think time")
        c["cc"] = KERNEL_CC.get(c["cc"], c["cc"])
        _check_cc(where, c["cc"], c.get("cc_params"), c.get("tcp"), avail)
        path = _video_path(cfg["videos"][c["video"]], where)
        if c["cc"] not in ports:
            ports[c["cc"]] = add_server(c["cc"])
        clients.append({"path": path, "server": ports[c["cc"]]})
        pairs.append((where, c["server"], c["client"]))
    # One emulated hop: every flow must see the same path delays, and only the bottleneck may
    # limit the rate or lose packets.
    delays = set()
    rate = links[down].get("rate_bps") or 0
    for where, s, d in pairs:
        pd, pu = _path(links, s, d), _path(links, d, s)
        if pd is None or pu is None or down not in pd or up not in pu:
            raise Unsupported(f"{where}: its path does not cross the bottleneck")
        for li in pd + pu:
            l = links[li]
            if li in (down, up):
                continue
            if l.get("loss") or l.get("trace") or (rate and l.get("rate_bps", 0) < rate):
                key = "topology.access_rate" if not (l.get("loss") or l.get("trace")) else f"link {l['name']}"
                raise Unsupported(f"{key}: an access link ({l['name']}) that limits or loses does not map onto one "
                                  "emulated hop (only the bottleneck is emulated)")
        delays.add((sum(links[i]["delay"] for i in pd), sum(links[i]["delay"] for i in pu)))
    if len(delays) > 1:
        raise Unsupported("flows with different RTTs: the emulated bottleneck has one delay per direction")
    dd, du = delays.pop() if delays else (links[down]["delay"], links[up]["delay"])
    return {"config": cfg, "down": down, "up": up, "delay_down_ns": dd, "delay_up_ns": du,
            "servers": servers, "clients": clients, "bulk_upstream": bulk_up, "out": out, "rt": True,
            "parent_pid": os.getpid(),
            "players": {str(i): {k: v for k, v in p.items() if k not in ("where", "core_abr")}
                        for i, p in players.items()}}


def _check_playable(where: str, v: dict) -> None:
    from qoelab.video.playable import MIN_SEGMENT_BYTES
    small = min(min(row) for row in v["sizes"])
    if small < MIN_SEGMENT_BYTES:
        raise Unsupported(f"{where}.video: a segment of {small} bytes is too small to be served as playable media "
                          f"for dash.js (at least {MIN_SEGMENT_BYTES})")


def _browser_tmp() -> str:
    import atexit
    from qoelab import dashjs
    d = dashjs.browser_tmpdir("browser")
    atexit.register(shutil.rmtree, d, True)
    return d


def _browser(pl: dict, i: int, c: dict, port: int, path: str, cfg: dict, work: str) -> dict:
    """The driver's plan of a dash.js client: `node play.mjs CONFIG` (waits for its start on stdin)."""
    from qoelab import dashjs
    why = dashjs.missing()
    if why:
        raise Unsupported(f"client[{i}] ({c['name']}).player: dash.js in Chromium cannot run: {why}")
    settings = dashjs.apply_sets(dashjs.settings(pl["abr"], pl["buffer_max_s"], pl["buffer_max_s"]), pl["set"])
    conf = {"mpd": f"http://{SERVER_ADDR}:{port}{path}manifest.mpd",
            "duration_s": max(1.0, (cfg["duration"] - c["start"]) / 1e9 + 10.0),
            "settings": settings, "sample_ms": 250, "chromium": dashjs.find_chromium(), "wait_go": True}
    # the browser's temporary files: a folder of this process, removed when it exits (after the driver
    # and its browsers), or by a later run if it is killed; not in `work`, whose path may be too long
    # for Chromium's socket
    conf["tmpdir"] = _browser_tmp()
    d = dashjs.browser_dir()
    return {"argv": [shutil.which("node") or "node", os.path.join(d, "play.mjs"), json.dumps(conf)], "cwd": d,
            "events": os.path.join(work, f"browser{i}.events.jsonl"),
            "stderr": os.path.join(work, f"browser{i}.stderr")}


def find_driver() -> str | None:
    from qoelab.realnet import find_emulator
    return find_emulator()


def _write_tables(tables: list, tmp: str) -> list[str]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    names = []
    for t in tables:
        arrays, cols = [], []
        for col, kind, vals in t["columns"]:
            cols.append(col)
            if kind == "i64":
                arrays.append(pa.array(np.asarray(vals, dtype="<i8")))
            elif kind == "f64":
                arrays.append(pa.array(np.asarray([np.nan if v is None else v for v in vals], dtype="<f8")))
            else:
                arrays.append(pa.array(vals, type=pa.string()))
        pq.write_table(pa.Table.from_arrays(arrays, names=cols), os.path.join(tmp, f"{t['name']}.parquet"),
                       compression="zstd")
        names.append(t["name"])
    return names


def _stop_child(p: subprocess.Popen, sig: int) -> None:
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=2)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run(args) -> int:
    """The `qoelab run --real` command (args: scenario, out, seed, force, json)."""
    from qoelab import outdir
    from qoelab import scenario as scmod
    err = "qoelab run --real: error:"
    if not sys.platform.startswith("linux"):
        print(f"{err} needs Linux (network namespaces and TUN devices)", file=sys.stderr)
        return EXIT_INPUT
    driver = find_driver()
    if driver is None:
        print(f"{err} the emulator binary qoelab-netemu was not found (run `make build`, or set QOELAB_NETEMU)",
              file=sys.stderr)
        return EXIT_INPUT
    from qoelab.realnet import emulator_mismatch
    bad = emulator_mismatch(driver)
    if bad:
        print(f"{err} {bad}", file=sys.stderr)
        return EXIT_INPUT
    if not os.path.exists("/dev/net/tun"):
        print(f"{err} /dev/net/tun is missing (load the tun module or create the device node)", file=sys.stderr)
        return EXIT_INPUT
    out = outdir.check(args.out, force=args.force)
    sc = scmod.load(args.scenario, standalone=True, real=True)
    if args.seed is not None:
        sc = sc.with_seed(args.seed)
    t0 = time.perf_counter()
    with outdir.atomic_dir(out) as tmp:
        work = os.path.join(tmp, ".real")
        os.makedirs(os.path.join(work, "www"))
        try:
            plan = plan_for(sc, work, work)
        except Unsupported as e:
            print(f"{err} {args.scenario}: {e}", file=sys.stderr)
            raise _Exit(EXIT_INPUT) from None
        with open(os.path.join(work, "plan.json"), "w") as f:
            json.dump(plan, f)
        p = subprocess.Popen([driver, "run", "--plan", os.path.join(work, "plan.json")])
        try:
            code = p.wait()
        except KeyboardInterrupt:
            _stop_child(p, signal.SIGINT)
            raise
        except Terminated:
            _stop_child(p, signal.SIGTERM)
            raise
        if code == 130:
            raise KeyboardInterrupt
        if code in (128 + signal.SIGTERM, 128 + signal.SIGHUP):
            raise Terminated(code - 128)
        if code != 0:
            if code != EXIT_INPUT:
                how = (f"was killed by signal {-code} ({signal.Signals(-code).name})" if code < 0
                       and -code in signal.valid_signals() else f"failed (exit status {code})")
                print(f"{err} the real-network driver {how}", file=sys.stderr)
            raise _Exit(EXIT_INPUT if code == EXIT_INPUT else 1)
        with open(os.path.join(work, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(work, "tables.json")) as f:
            tables = json.load(f)
        with open(os.path.join(work, "real.json")) as f:
            real = json.load(f)
        if real.get("dashjs"):
            _merge_dashjs(summary, tables, real, sc)
        wall = time.perf_counter() - t0
        with open(os.path.join(tmp, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
        perf = {"wall_s": round(wall, 6), "network": "real", "realnet": real}
        with open(os.path.join(tmp, "perf.json"), "w") as f:
            json.dump(perf, f, indent=2)
            f.write("\n")
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(sc.config, f, indent=1)
            f.write("\n")
        if sc.path and os.path.isfile(sc.path):
            shutil.copyfile(sc.path, os.path.join(tmp, "scenario.toml"))
        names = _write_tables(tables, tmp)
        shutil.rmtree(work)
    if args.json:
        print(json.dumps(summary, indent=2))
        # the timing quality is printed at the end of every run: with --json, on stderr
        for ln in _timing(perf):
            print(ln, file=sys.stderr)
    else:
        _print(summary, perf, names, out)
    return 0


def _merge_dashjs(summary: dict, tables: list, real: dict, sc) -> None:
    """Put the dash.js clients into the summary (at their index among the scenario's clients) and
    their segments into the segments table, from their events (dashjs.summarize), with the keys of
    a simulated client; what dash.js does not define is null (docs/realnet.md)."""
    from qoelab import dashjs
    cfg = sc.config
    dur = cfg["duration"] / 1e9
    players = sc.meta.get("players") or {}
    done = {}
    seg_rows = []
    for d in real["dashjs"]:
        i, go = d["client"], d.get("go_s")
        c = cfg["clients"][i]
        events = []
        try:
            with open(d["events"]) as f:
                for line in f:
                    try:
                        events.append(json.loads(line))
                    except ValueError:
                        pass
        except OSError:
            pass
        if go is None:
            events = []
        else:   # page times count from its start; nothing after the end of the run
            events = [e for e in events if e.get("ev") not in ("ready", "done") and e.get("t", 0.0) <= dur - go]
        s, rows = dashjs.summarize(events, c["name"])
        t_load = next((e["t"] for e in events if e.get("ev") == "load"), 0.0)
        session = max((e.get("t", 0.0) for e in events), default=0.0) - t_load
        done[i] = _client_entry(s, rows, d, c, cfg, players.get(i) or {}, session)
        real.setdefault("dashjs_clients", []).append(
            {"name": c["name"], "go_s": go, "micro_stalls": s["micro_stalls"], "replaced": s["replaced"],
             "errors": s["errors"],
             "ended": s["ended"], "events": len(events)})
        for r in rows:
            r["client"] = i
            for k in ("t_request_s", "t_first_byte_s", "t_last_byte_s"):
                r[k] = float("nan") if r[k] is None else r[k] + go
            seg_rows.append(r)
    for d in real["dashjs"]:   # the paths of the work directory are gone with it
        d.pop("events", None)
        d.pop("stderr", None)
    rest = iter(summary["clients"])
    summary["clients"] = [done[i] if i in done else next(rest) for i in range(len(cfg["clients"]))]
    summary["video"] = _fairness([c for c in summary["clients"] if "segments" in c])
    if "segments" in cfg.get("output", {}).get("tables", []):
        _append_segments(tables, seg_rows)


def _client_entry(s: dict, rows: list, d: dict, c: dict, cfg: dict, pl: dict, session: float) -> dict:
    """A simulated client's summary keys (report::ClientSummary, docs/metrics.md) for a dash.js client."""
    played = [r for r in rows if not r["abandoned"]]
    n = len(played)
    mbps = [r["bitrate_bps"] / 1e6 for r in played]
    bps = [r["bitrate_bps"] for r in played]
    ar = [r["tput_first_byte_bps"] for r in played]
    ar = [x for x in ar if x == x]
    mean = (lambda x: sum(x) / len(x) if x else 0.0)
    # Chunklets' instability index over bitrates (k = 10, w(d) = k - d), as metrics::instability_index
    k, ii = 10, []
    for t in range(k, len(bps)):
        num = sum(abs(bps[t - j] - bps[t - j - 1]) * (k - j) for j in range(k))
        den = sum(bps[t - j] * (k - j) for j in range(1, k + 1))
        ii.append(num / den if den else 0.0)
    # QoE (Minerva Eq. 1, qoelab's defaults: P = bitrate in Mbit/s, beta 25, gamma 2.5): dash.js does not
    # attribute a stall to a segment, so the total is exact and the mean is the total over the segments.
    qoe_total = sum(mbps) - 25.0 * s["rebuffer_s"] - 2.5 * sum(abs(a - b) for a, b in zip(mbps[1:], mbps))
    startup = s["startup_s"] or 0.0
    z = (lambda v: 0.0 if v is None else v)
    out = {"name": c["name"], "abr": f"dashjs:{pl.get('abr', c['abr'])}",
           "segments": n, "abandoned": s["abandoned"], "bytes": s["bytes"], "avg_bitrate_bps": z(s["avg_bitrate_bps"]),
           "avg_quality": None, "quality_level_pct": z(s["quality_level_pct"]), "startup_s": startup,
           "rebuffer_s": s["rebuffer_s"], "stall_count": s["stall_count"], "rebuffer_ratio": z(s["rebuffer_ratio"]),
           "rebuffer_ratio_with_startup": z(s["rebuffer_ratio_with_startup"]), "switches": s["switches"],
           "instability_pct": z(s["instability_pct"]), "instability_index_mean": mean(ii),
           "instability_index_max": max(ii, default=0.0), "qoe_mean": qoe_total / n if n else 0.0,
           "qoe_total": qoe_total, "achieved_rate_mean_bps": mean(ar),
           "smoothed_ar_last_bps": mean(ar[-3:]),
           "goodput_bps": s["bytes"] * 8 / session if session > 0 else 0.0,
           "video": cfg["videos"][c["video"]]["name"],
           # dash.js's buffer target at the top quality (bufferTimeAtTopQuality: 30 s unless set)
           "buffer_max_s": pl.get("buffer_max_s") or 30.0,
           "base_rtt_ms": c.get("rtt", 0) / 1e6,
           "flow": d["flow"], "connections": d["connections"], "srtt_mean_ms": d["srtt_mean_ms"]}
    if d.get("loss_phases") is not None:
        out["loss_phases"] = d["loss_phases"]
    return out


def _fairness(cs: list) -> dict | None:
    """metrics::FairnessMetrics over every client (sans-IO and dash.js)."""
    if not cs:
        return None

    def jain(x):
        s2 = sum(v * v for v in x)
        return 1.0 if not x or s2 == 0 else sum(x) ** 2 / (len(x) * s2)

    def spread(x):
        return max(x) - min(x) if x else 0.0
    g = [c["goodput_bps"] for c in cs]
    q = [c["qoe_mean"] for c in cs]
    lo = min(q)
    return {"clients": len(cs), "jfi_goodput": jain(g), "jfi_qoe": jain([v - lo for v in q] if lo < 0 else q),
            "festive_unfairness": max(0.0, 1.0 - jain(g)) ** 0.5,
            "quality_unfairness_pct": spread([c["quality_level_pct"] for c in cs]),
            "bitrate_unfairness_bps": spread([c["avg_bitrate_bps"] for c in cs]),
            "min_qoe": lo, "qoe_spread": spread(q)}


#: The segments table's columns (report::segments_table) and a dash.js row's value for each.
_SEG_COLS = [("client", "i64"), ("segment", "i64"), ("rung", "i64"), ("bitrate_bps", "i64"), ("bytes", "i64"),
             ("quality", "f64"), ("t_request_s", "f64"), ("t_first_byte_s", "f64"), ("t_last_byte_s", "f64"),
             ("tput_request_bps", "f64"), ("tput_first_byte_bps", "f64"), ("buffer_before_s", "f64"),
             ("buffer_after_s", "f64"), ("stall_s", "f64"), ("abr_delay_s", "f64"), ("abandoned", "i64"),
             ("abr_reason", "str"), ("lost_bytes", "i64"), ("extra_bytes", "i64")]


def _append_segments(tables: list, rows: list) -> None:
    t = next((t for t in tables if t["name"] == "segments"), None)
    if t is None:
        t = {"name": "segments", "columns": [[n, k, []] for n, k in _SEG_COLS]}
        tables.append(t)
    nan = float("nan")
    for r in rows:
        for col in t["columns"]:
            name, kind, vals = col
            v = r.get(name)
            if name == "abr_reason":
                v = "dashjs"
            elif name in ("lost_bytes", "extra_bytes"):
                v = 0       # dash.js fetches whole segments reliably
            elif v is None or (isinstance(v, float) and v != v):
                v = -1 if kind == "i64" else nan
            vals.append(int(v) if kind == "i64" else (float(v) if kind == "f64" else str(v)))


class _Exit(Exception):
    """Leave the atomic output directory (removed) with an exit status."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _timing(perf: dict) -> list[str]:
    """The emulator's departure lateness per direction, one line each."""
    return [f"  timing {k}: departure lateness p50 {lat['p50']} us, p99 {lat['p99']} us, max {lat['max']} us"
            for k in ("downlink", "uplink") for lat in [perf["realnet"][k]["lateness_us"]]]


def _print(s: dict, perf: dict, names: list[str], out: str) -> None:
    r = perf["realnet"]
    print(f"scenario {s['scenario']} (seed {s['seed']}), {s['duration_s']:g} s on the real network in "
          f"{perf['wall_s']:.1f} s wall (SCHED_FIFO {'on' if r['sched_fifo'] else 'off'})")
    for f in s["flows"][:12]:
        print(f"  flow {f['name']:<20} {f['kind']:<8} goodput {f['goodput_bps'] / 1e6:8.3f} Mbit/s")
    for c in s["clients"]:
        if "segments" in c:
            print(f"  client {c['name']:<18} {c['segments']} segments, avg bitrate {c['avg_bitrate_bps'] / 1e6:.2f} "
                  f"Mbit/s, rebuffer {c['rebuffer_s']:.2f} s")
    for l in s["links"]:
        d = l["queue_delay_ms"]
        print(f"  link {l['name']:<14} {l['aqm']:<9} utilization {l['utilization']:.3f}  queue delay mean "
              f"{d.get('mean', 0):.2f} ms p99 {d.get('p99', 0):.2f} ms  drops {l['dropped_packets']}")
    for ln in _timing(perf):
        print(ln)
    print(f"results: {out}/ (summary.json, perf.json, {', '.join(n + '.parquet' for n in names)})")


def main(args) -> int:
    try:
        return run(args)
    except _Exit as e:
        return e.code
