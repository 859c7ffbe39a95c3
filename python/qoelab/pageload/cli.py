"""``qoelab pageload``: load one page (a HAR file or a handcrafted page) over two interfaces with
a Socket Intents policy, in the flow-level model (docs/models/pageload.md)."""

from __future__ import annotations

import json
import os
import sys

from qoelab.cliutil import int_at_least
from qoelab.errors import InputError

CSV_HEADER = "origin,date,time,policy,if1_bw,if1_rtt,if2_bw,if2_rtt,page_load_time_s"


def policies() -> list[dict]:
    from qoelab import _core
    return [{"name": n, "paper": p, "public": pub, "doc": d, "randomized": r}
            for n, p, pub, d, r in _core.pageload_policies()]


def resolve_policy(name: str) -> dict:
    for p in policies():
        if name in (p["name"], p["public"]) and name:
            return p
    names = ", ".join(p["name"] for p in policies())
    raise InputError(None, "--policy", f"one of {names}", repr(name))


def load_page(spec: str):
    """A HAR file, or ``hand:<name>`` for a handcrafted page (``hand:mixed``, ``hand:8x100KB``)."""
    if spec.startswith("hand:"):
        from qoelab.pageload import handcrafted
        try:
            return handcrafted.by_name(spec[5:])
        except KeyError:
            names = ", ".join(p.name[5:] for p in handcrafted.pages())
            raise InputError(spec, None, f"a handcrafted page ({names})", repr(spec[5:])) from None
    from qoelab.pageload.har import load_har
    return load_har(spec)


def name_parts(name: str) -> tuple[str, str, str]:
    """(site, date, time) from the public convention <site>+<date>+<time>; else (name, "", "")."""
    parts = name.split("+")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else (name, "", "")


def public_json(page, policy: dict, ifaces: list[tuple[int, int]], res: dict) -> dict:
    """The public simulator's JSON shape: {"simulatorResults": [{policy, interfaces, connections,
    transfers[...]}, {}]} (times in s; bandwidths in bytes/s)."""
    recs = res["records"]
    children = page.children()
    conns: dict[int, dict] = {}
    for i, r in enumerate(recs):
        c = conns.setdefault(r["conn"], {"id": r["conn"], "origin": page.objects[i].host, "ssl": page.objects[i].tls,
                                         "mptcp": r["mptcp"],
                                         "interfaces": [f"if{k + 1}" for k in range(4) if r["iface_mask"] >> k & 1],
                                         "transfers": []})
        c["transfers"].append(i)
    transfers = [{
        "id": i, "origin": o.host, "ssl": o.tls, "size": o.size, "children": children[i],
        "connection": r["conn"],
        "times": {"start": r["enqueue_ns"] / 1e9, "enable": r["enable_ns"] / 1e9, "enqueue": r["enqueue_ns"] / 1e9,
                  "finish": r["finish_ns"] / 1e9, "harStart": o.har_start_s, "harFinish": o.har_finish_s},
    } for i, (o, r) in enumerate(zip(page.objects, recs))]
    run = {"policy": policy["public"] or policy["name"],
           "interfaces": [{"name": f"if{k + 1}", "bandwidth": bw, "rtt": rtt / 1e9} for k, (bw, rtt) in enumerate(ifaces)],
           "connections": [conns[k] for k in sorted(conns)], "transfers": transfers,
           "pageLoadTime": res["plt_ns"] / 1e9}
    return {"simulatorResults": [run, {}]}


# Objects of one page for the flow-level model: its run is one call into the core, which Ctrl-C
# and SIGTERM cannot interrupt; 20,000 objects started at once took 0.9 s there (a probe's 400,000
# ignored SIGTERM for minutes).
MAX_FLOW_LEVEL_OBJECTS = 20_000


def options_from(args) -> dict:
    if args.reuse_rtts < 0 or args.reuse_rtts > 10:
        raise InputError(None, "--reuse-rtts", "0 to 10", str(args.reuse_rtts))
    return {"reuse_rtts": args.reuse_rtts, "sharing": args.sharing}


def _cmd(args) -> int:
    from qoelab import _core, outdir
    from qoelab.pageload import units as pu
    if args.json is not None:
        outdir.check_file(args.json, "--json")
    if args.list_policies:
        for p in policies():
            pub = p["public"] or "-"
            print(f"{p['name']:<14} {pub:<10} {p['paper']}: {p['doc']}")
        return 0
    if not args.page:
        raise InputError(None, "PAGE", "a HAR file or hand:<name>", "nothing")
    pol = resolve_policy(args.policy)
    ifaces = []
    for k, text in (("--if1", args.if1), ("--if2", args.if2)):
        try:
            ifaces.append(pu.iface(text, args.units))
        except ValueError as e:
            raise InputError(None, k, message=str(e)) from None
    scheds = []
    for k, text in (("--if1-schedule", args.if1_schedule), ("--if2-schedule", args.if2_schedule)):
        try:
            scheds.append(pu.schedule(text, args.units) if text else [])
        except ValueError as e:
            raise InputError(None, k, message=str(e)) from None
    out = outdir.check(args.out, args.force) if args.out else None
    page = load_page(args.page)
    if args.packet:
        return _packet(args, page, ifaces[0], out)
    if len(page.objects) > MAX_FLOW_LEVEL_OBJECTS:
        raise InputError(args.page, None, f"a page of at most {MAX_FLOW_LEVEL_OBJECTS:,} objects for the flow-level "
                         "model (one call that Ctrl-C cannot interrupt: 20,000 objects loading at once take ~1 s; "
                         "--packet takes up to 100,000)", f"{len(page.objects):,} objects")
    opts = options_from(args)
    try:
        res = _core.pageload_run(page.core_tuple(), [(bw, rtt, sc) for (bw, rtt), sc in zip(ifaces, scheds)],
                                 pol["name"], args.seed, opts)
    except ValueError as e:
        raise InputError(args.page, None, message=str(e)) from None
    site, date, time_ = name_parts(page.name)
    plt_s = res["plt_ns"] / 1e9
    line = ",".join(str(x) for x in (site, date, time_, pol["public"] or pol["name"], ifaces[0][0], ifaces[0][1] / 1e9,
                                      ifaces[1][0], ifaces[1][1] / 1e9, repr(plt_s)))
    print(line)
    pj = public_json(page, pol, ifaces, res)
    if args.json:
        outdir.write_text(args.json, json.dumps(pj, indent=1))
    if out:
        write_result_dir(out, page, pol, ifaces, args, opts, res, pj, line)
    return 0


def _packet(args, page, if1: tuple[int, int], out) -> int:
    """``--packet``: the page in the packet simulator's browser on interface 1."""
    from qoelab import _core
    from qoelab.pageload import crossmodel
    for k in ("if1_schedule", "if2_schedule"):
        if getattr(args, k):
            raise InputError(None, "--" + k.replace("_", "-"), message="rate schedules are not supported with --packet")
    if args.json is not None:
        # (it wrote nothing, exit 0)
        raise InputError(None, "--json", message="the public simulator's JSON is the flow-level model's; with --packet "
                                                 "use --out DIR (summary and the pages table)")
    ccs = [e["name"] for e in json.loads(_core.describe("cc"))]
    if args.cc not in ccs:
        raise InputError(None, "--cc", "one of " + ", ".join(sorted(ccs)), repr(args.cc))
    src = {"handcrafted": args.page[5:]} if args.page.startswith("hand:") else {"har": os.path.abspath(args.page)}
    try:
        res = crossmodel.packet_load(src, if1[0], if1[1], cc=args.cc, seed=args.seed, page_bytes=page.total_bytes)
    except InputError as e:   # the generated scenario's topology is --if1, its page PAGE
        where = str(e.where or "")
        if e.path != "<crossmodel>":
            raise
        if where.startswith("topology."):
            raise InputError(None, "--if1", e.expected, e.found, e.message) from None
        if where.startswith("page[0]"):   # (it named "<crossmodel>:page[0].har")
            raise InputError(args.page, None, e.expected, e.found, e.message) from None
        raise
    pg = res.summary["pages"][0]
    if pg["plt_s"] is None:
        raise InputError(args.page, None, message="the load did not finish within the simulated time")
    site, date, time_ = name_parts(page.name)
    print(",".join(str(x) for x in (site, date, time_, "packet-" + args.cc, if1[0], if1[1] / 1e9, "", "",
                                    repr(pg["plt_s"]))))
    print(f"# packet simulator: {pg['objects']} objects, {pg['connections']} connections, "
          f"{pg['tls_handshakes']} TLS handshakes", file=sys.stderr)
    if out:
        res.write(out, force=args.force)
    return 0


def write_result_dir(out, page, pol, ifaces, args, opts, res, pj, line) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from qoelab import outdir
    with outdir.atomic_dir(out) as tmp:
        summary = {
            "schema": "qoelab.pageload/1",
            "page": {"name": page.name, "source": args.page, "objects": len(page.objects), "hosts": page.n_hosts,
                     "bytes": page.total_bytes, "dropped_entries": page.dropped},
            "policy": {"name": pol["name"], "paper": pol["paper"], "public": pol["public"]},
            "interfaces": [{"name": f"if{k + 1}", "bandwidth_bytes_per_s": bw, "rtt_s": rtt / 1e9, "spec": s,
                            "schedule": sched}
                           for k, ((bw, rtt), s, sched) in enumerate(zip(ifaces, (args.if1, args.if2),
                                                                         (args.if1_schedule, args.if2_schedule)))],
            "units": args.units, "seed": args.seed, "options": opts,
            "page_load_time_s": res["plt_ns"] / 1e9,
            "connections_opened": res["conns_opened"], "mptcp_connections_opened": res["mptcp_opened"],
            "objects_not_only_if1": res["off_first"], "limit_blocked": res["limit_blocked"],
            "model_steps": res["steps"], "prediction_runs": res["predictions"],
        }
        with open(os.path.join(tmp, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
        with open(os.path.join(tmp, "simulator.json"), "w") as f:
            json.dump(pj, f, indent=1)
        with open(os.path.join(tmp, "result.csv"), "w") as f:
            f.write(CSV_HEADER + "\n" + line + "\n")
        recs = res["records"]
        tbl = pa.table({
            "object": list(range(len(recs))),
            "url": [o.url for o in page.objects],
            "host": [o.host for o in page.objects],
            "tls": [o.tls for o in page.objects],
            "size_bytes": [o.size for o in page.objects],
            "parent": [o.parent if o.parent is not None else -1 for o in page.objects],
            "enable_s": [r["enable_ns"] / 1e9 for r in recs],
            "enqueue_s": [r["enqueue_ns"] / 1e9 for r in recs],
            "finish_s": [r["finish_ns"] / 1e9 for r in recs],
            "connection": [r["conn"] for r in recs],
            "iface_mask": [r["iface_mask"] for r in recs],
            "mptcp": [r["mptcp"] for r in recs],
            "new_connection": [r["new_conn"] for r in recs],
        })
        pq.write_table(tbl, os.path.join(tmp, "transfers.parquet"))


def add_parser(sub) -> None:
    p = sub.add_parser("pageload", help="load a web page over two interfaces with a Socket Intents policy "
                                        "(flow-level model)",
                       description="Loads PAGE (a HAR 1.2 file, or hand:<name> for a handcrafted page such as "
                                   "hand:mixed or hand:8x100KB) in the flow-level page-load model "
                                   "(docs/models/pageload.md) and prints the public simulator's CSV line "
                                   f"({CSV_HEADER}; bandwidths in bytes/s, RTTs in s).")
    p.add_argument("page", nargs="?", metavar="PAGE")
    p.add_argument("--if1", default="20Mbps,30ms", help="interface 1 BANDWIDTH,RTT (default 20Mbps,30ms)")
    p.add_argument("--if2", default="5Mbps,100ms", help="interface 2 BANDWIDTH,RTT (default 5Mbps,100ms)")
    p.add_argument("--if1-schedule", metavar="T:RATE,...", help="interface 1's bandwidth from given times on, "
                                                              "e.g. 2s:5Mbps,4s:20Mbps (the RTT stays)")
    p.add_argument("--if2-schedule", metavar="T:RATE,...", help="the same for interface 2")
    p.add_argument("--policy", default="eaf", help="a policy name or the public simulator's name (default eaf; "
                                                   "--list-policies)")
    p.add_argument("--units", default="binary", choices=("binary", "decimal"),
                   help="Mbps = 1024*1024 bit/s as in the public simulator (binary, default) or 10^6 (decimal)")
    p.add_argument("--seed", type=int_at_least(0, "a seed", 2**64 - 1), default=1,
                   help="seed of randomized policies (mptcp-rnd; default 1)")
    p.add_argument("--reuse-rtts", type=int, default=0, help="RTTs before data on a reused idle connection "
                                                             "(default 0 as in the public code; the text says 1)")
    p.add_argument("--sharing", default="waterfill", choices=("waterfill", "maxmin"),
                   help="bandwidth sharing per interface (default waterfill)")
    p.add_argument("--json", metavar="FILE", help="write the public simulator's JSON shape to FILE")
    p.add_argument("--out", metavar="DIR", help="write a result directory (summary.json, transfers.parquet, "
                                                "simulator.json, result.csv)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out directory")
    p.add_argument("--list-policies", action="store_true", help="list the policies and exit")
    p.add_argument("--packet", action="store_true",
                   help="load PAGE in the packet simulator instead: a browser over HTTP/1.1 and simulated TCP on "
                        "interface 1 alone (6 connections per origin, TLS handshakes; docs/models/page-session.md); "
                        "--out writes that run's result directory")
    p.add_argument("--cc", default="newreno", help="congestion control of the packet simulator's connections "
                                                   "(--packet; default newreno)")
    p.set_defaults(func=_cmd)
