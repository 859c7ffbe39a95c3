"""`qoelab run --real SCENARIO --out DIR`: a dumbbell scenario on a real network (Linux, root).

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


def _video_path(v: dict) -> str:
    """The URL path of a synthetic video's rung files under `qoelab serve` (its bytes have exactly
    the scenario's layout), or Unsupported."""
    from qoelab.serve import synthetic_layout
    from qoelab.video.ladders import LADDERS
    m = re.fullmatch(r"(.+)-seed(\d+)", v.get("name", ""))
    if not m or m.group(1) not in LADDERS:
        raise Unsupported(f"video {v.get('name')!r}: only synthetic:<ladder> videos are served on the real network yet")
    ladder, seed, n = m.group(1), int(m.group(2)), len(v["sizes"])
    lay = synthetic_layout(ladder, seed, n)
    if lay["sizes"] != v["sizes"] or lay.get("byte_offsets") != v.get("byte_offsets"):
        raise Unsupported(f"video {v.get('name')!r}: its sizes differ from the synthetic video served for it")
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
    links = cfg["links"]
    name = meta["bottleneck"]["link"]
    names = [l["name"] for l in links]
    down, up = names.index(name), names.index(name + "_up")
    avail = _kernel_ccs()
    pairs = []   # (where, server-side node, client-side node)
    bulk_up = []   # per flow: upstream (client side -> server side)
    for i, f in enumerate(cfg.get("flows", [])):
        where = f"flow[{i}] ({f['name']})"
        if f["kind"] != "bulk":
            raise Unsupported(f"{where}.kind: {f['kind']!r} flows do not run on the real network yet (bulk only)")
        if f.get("bytes") is not None:
            raise Unsupported(f"{where}.bytes: finite transfers do not run on the real network yet")
        if f.get("weight_schedule"):
            raise Unsupported(f"{where}.weight_schedule: weights do not apply to kernel TCP")
        f["cc"] = KERNEL_CC.get(f["cc"], f["cc"])
        _check_cc(where, f["cc"], f.get("cc_params"), f.get("tcp"), avail)
        fwd = _path(links, f["src"], f["dst"]) or []
        upstream = up in fwd and down not in fwd
        bulk_up.append(upstream)
        pairs.append((where, f["dst"], f["src"]) if upstream else (where, f["src"], f["dst"]))
    clients, servers, ports = [], [], {}
    si = cfg.get("output", {}).get("sample_interval", 100_000_000) / 1e9
    for i, c in enumerate(cfg.get("clients", [])):
        where = f"client[{i}] ({c['name']})"
        if c.get("arrival_rate") is not None:
            raise Unsupported(f"{where}.arrival_rate: session arrivals do not run on the real network yet")
        if c["abr"].startswith("python:"):
            raise Unsupported(f"{where}.abr: Python ABRs do not run on the real network yet")
        if (c.get("http") or {}).get("think", 0):
            raise Unsupported(f"{where}.http.think: the real server has no think time")
        c["cc"] = KERNEL_CC.get(c["cc"], c["cc"])
        _check_cc(where, c["cc"], c.get("cc_params"), c.get("tcp"), avail)
        path = _video_path(cfg["videos"][c["video"]])
        if c["cc"] not in ports:
            port = BASE_PORT + len(servers)
            ports[c["cc"]] = len(servers)
            k = len(servers)
            servers.append({
                "argv": [sys.executable, "-c", "import sys; from qoelab.cli import main; sys.exit(main())",
                         "serve", os.path.join(work, "www"), "--bind", SERVER_ADDR, "--port", str(port),
                         "--cc", c["cc"], "--tcp-info-log", os.path.join(work, f"server{k}.tcp_info.jsonl"),
                         "--tcp-info-interval", f"{max(si, 0.001):g}", "--log", os.path.join(work, f"server{k}.log"),
                         "--idle-timeout", "3600"],
                "port": port,
                "tcp_info_log": os.path.join(work, f"server{k}.tcp_info.jsonl"),
                "stderr": os.path.join(work, f"server{k}.stderr"),
            })
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
                raise Unsupported(f"link {l['name']}: an access link that limits or loses does not map onto one "
                                  "emulated hop")
        delays.add((sum(links[i]["delay"] for i in pd), sum(links[i]["delay"] for i in pu)))
    if len(delays) > 1:
        raise Unsupported("flows with different RTTs: the emulated bottleneck has one delay per direction")
    dd, du = delays.pop() if delays else (links[down]["delay"], links[up]["delay"])
    return {"config": cfg, "down": down, "up": up, "delay_down_ns": dd, "delay_up_ns": du,
            "servers": servers, "clients": clients, "bulk_upstream": bulk_up, "out": out, "rt": True,
            "parent_pid": os.getpid()}


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
    if not os.path.exists("/dev/net/tun"):
        print(f"{err} /dev/net/tun is missing (load the tun module or create the device node)", file=sys.stderr)
        return EXIT_INPUT
    out = outdir.check(args.out, force=args.force)
    sc = scmod.load(args.scenario, standalone=True)
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
        if code == 143:
            raise Terminated(signal.SIGTERM)
        if code != 0:
            if code != EXIT_INPUT:
                print(f"{err} the real-network driver failed (exit status {code})", file=sys.stderr)
            raise _Exit(EXIT_INPUT if code == EXIT_INPUT else 1)
        with open(os.path.join(work, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(work, "tables.json")) as f:
            tables = json.load(f)
        with open(os.path.join(work, "real.json")) as f:
            real = json.load(f)
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
    else:
        _print(summary, perf, names, out)
    return 0


class _Exit(Exception):
    """Leave the atomic output directory (removed) with an exit status."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


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
    for k in ("downlink", "uplink"):
        lat = r[k]["lateness_us"]
        print(f"  timing {k}: departure lateness p50 {lat['p50']} us, p99 {lat['p99']} us, max {lat['max']} us")
    print(f"results: {out}/ (summary.json, perf.json, {', '.join(n + '.parquet' for n in names)})")


def main(args) -> int:
    try:
        return run(args)
    except _Exit as e:
        return e.code
