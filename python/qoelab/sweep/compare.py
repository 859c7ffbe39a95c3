"""``qoelab compare``: the seed systems side by side on one bottleneck (docs/sweeps.md, "compare").

N video clients share one bottleneck with cross traffic; every client of a run is fetched the same
way: sequential DASH, Sprint, Sprint-x, Chunklets, or sequential DASH with its flows' weights set by
a Minerva provider (weighted Cubic). Same videos, same ABR, same seeds for every system. It is a
sweep (axis ``system`` x seeds) written into a sweep store, with a report whose panels put the
systems on the x axis and a table of means with 95% confidence intervals.
"""

from __future__ import annotations

from qoelab.errors import InputError

SYSTEMS = {
    "dash": ("sequential DASH: one GET per segment on one connection", {"client.0.data_plane.kind": "sequential"}),
    "sprint": ("Sprint: pipelined trains keeping >= 1 BDP outstanding (Arye et al.)",
               {"client.0.data_plane.kind": "sprint"}),
    "sprint-x": ("Sprint-x: expanded byte-range requests (Arye et al.)", {"client.0.data_plane.kind": "sprint-x"}),
    "chunklets": ("Chunklets: each segment as n parallel byte ranges over n connections (Kua & Armitage)",
                  {"client.0.data_plane.kind": "chunklets"}),
    "minerva": ("Minerva: sequential DASH over weighted Cubic, weights from a Minerva provider (Nathan et al.; "
                "quality = bitrate, as the synthetic videos have no VMAF table)",
                {"client.0.cc": "wcubic",
                 "provider": [{"name": "minerva", "controller": "minerva", "clients": ["video"],
                               "metric": "bitrate"}]}),
}
METRICS = (("clients", "qoe_mean", "QoE per chunk"), ("clients", "avg_bitrate_bps", "bitrate (bit/s)"),
           ("clients", "rebuffer_ratio", "rebuffer ratio"), ("clients", "startup_s", "startup (s)"),
           ("clients", "switches", "switches"), ("runs", "video_jfi_qoe", "Jain's index of QoE"),
           ("runs", "video_jfi_goodput", "Jain's index of goodput"),
           ("links", "queue_delay_ms_p99", "queue delay p99 (ms)"), ("links", "utilization", "utilization"))


def sweep_dict(systems, clients: int, rate: str, rtt: str, aqm: str, buffer: str, cross: str, duration: str,
               seeds: int, abr: str, video: str, chunklets_n: int) -> dict:
    bad = [s for s in systems if s not in SYSTEMS]
    if bad:
        raise InputError(None, "--systems", f"names from {', '.join(SYSTEMS)}", bad[0])
    if not systems:
        raise InputError(None, "--systems", "at least one system", "none")
    if clients < 1 or clients > 64:
        raise InputError(None, "--clients", "1..64", str(clients))
    if not 1 <= chunklets_n <= 64:
        raise InputError(None, "--chunklets-n", "1..64 connections per client", str(chunklets_n))
    flows = []
    if cross in ("bulk", "both"):
        flows.append({"name": "bulk", "kind": "bulk", "count": 1})
    if cross in ("web", "both"):
        flows.append({"name": "web", "kind": "web", "arrival_rate": 2.0})
    variants = {}
    for s in systems:
        v = dict(SYSTEMS[s][1])
        if s == "chunklets":
            v["client.0.data_plane.n"] = chunklets_n
        variants[s] = v
    base = {"scenario": {"name": "compare", "duration": duration, "seed": 1},
            "topology": {"rate": rate, "rtt": rtt, "aqm": aqm, "buffer": buffer},
            "client": [{"name": "video", "count": clients, "abr": abr, "video": video, "stagger": "1s",
                        "data_plane": {"kind": "sequential"}}],
            "output": {"tables": ["segments"]}}
    if flows:
        base["flow"] = flows
    desc = (f"{clients} video client(s) ({abr}, {video}) on a {rate}, {rtt} {aqm} bottleneck (buffer {buffer}) "
            f"with cross traffic: {cross}; {duration}; {seeds} seed(s). Systems: "
            + "; ".join(f"{s}: {SYSTEMS[s][0]}" for s in systems))
    panels = [{"y": f"{v}.{c}", "x": "system", "title": label} for v, c, label in METRICS]
    if cross in ("bulk", "both"):
        panels.append({"y": "flows.goodput_bps", "x": "system", "flow": "bulk", "title": "bulk flow goodput (bit/s)"})
    return {"sweep": {"name": "compare", "description": desc, "repetitions": seeds, "tables": ["segments"]},
            "base": base, "axes": {"system": {"values": variants}},
            "report": {"panel": panels, "summary_by": "system"}}


#: The base scenario's keys that come from an option, and that option.
OPTION_OF_KEY = {"scenario.duration": "--duration", "topology.rate": "--rate", "topology.rtt": "--rtt",
                 "topology.aqm": "--aqm", "topology.buffer": "--buffer", "client[0].abr": "--abr",
                 "client[0].video": "--video"}


def _check_options(base: dict) -> None:
    """Load the base scenario (sequential DASH) so that a bad option is reported as that option
    (``--duration: expected ...``), not as a key of the generated sweep."""
    from qoelab import scenario
    try:
        scenario.from_dict(base, "qoelab compare", check=False)
    except InputError as e:
        opt = OPTION_OF_KEY.get(e.where or "")
        if opt is None:
            raise
        raise InputError(None, opt, e.expected, e.found, e.message) from None


def main(args) -> int:
    import sys

    from qoelab.sweep import report, runner, spec
    from qoelab.sweep.store import Store
    systems = [s.strip() for s in args.systems.split(",")]
    if "" in systems:   # (`dash,,sprint` and a trailing comma were read as fewer systems, silently)
        raise InputError(None, "--systems", "comma-separated system names", repr(args.systems))
    dup = next((s for i, s in enumerate(systems) if s in systems[:i]), None)
    if dup is not None:
        raise InputError(None, "--systems", "each system once", f"{dup} twice")
    d = sweep_dict(systems, args.clients, args.rate, args.rtt,
                   args.aqm, args.buffer, args.cross, args.duration, args.seeds, args.abr, args.video,
                   args.chunklets_n)
    _check_options(d["base"])
    sw = spec.from_dict(d, "qoelab compare")
    res = runner.run(sw, args.out, jobs=args.jobs or 0, ray=args.ray, force=args.force,
                     log=lambda m: print(m, file=sys.stderr, flush=True))
    path = report.write(res["out_dir"])
    st = Store(res["out_dir"])
    for line in report.summary_lines(st, "system"):
        print(line)
    print(f"report: {path}  (query the runs: qoelab query {res['out_dir']} \"SELECT ...\")")
    return 1 if res["failed_total"] else 0


def add_parser(sub) -> None:
    from qoelab.cliutil import int_at_least, worker_count
    _jobs = int_at_least(1, "a number")
    c = sub.add_parser(
        "compare", help="the seed systems side by side on one bottleneck: DASH, Sprint, Sprint-x, Chunklets, Minerva",
        description="Without a subcommand: run N video clients on one bottleneck with cross traffic, fetched with "
                    "each system in turn "
                    "(sequential DASH, Sprint, Sprint-x, Chunklets, Minerva's weighted Cubic), same videos and seeds, "
                    "as a sweep into DIR; write DIR/report.html (each metric per system with 95% CIs) and print the "
                    "table (docs/sweeps.md). `qoelab compare sim-real SCENARIO`: the same video session simulated "
                    "and played for real by dash.js (docs/realnet.md).")
    c.add_argument("--out", default="results/compare", metavar="DIR", help="sweep directory (default results/compare)")
    c.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS)}")
    c.add_argument("--clients", type=int, default=3, help="video clients (default 3)")
    c.add_argument("--rate", default="10Mbps", help="bottleneck rate (default 10Mbps)")
    c.add_argument("--rtt", default="40ms", help="base RTT (default 40ms)")
    c.add_argument("--aqm", default="fq_codel", help="queue discipline (default fq_codel; qoelab list aqm)")
    c.add_argument("--buffer", default="1000pkts", help="buffer (default 1000pkts, FQ-CoDel's default limit)")
    c.add_argument("--cross", choices=("bulk", "web", "both", "none"), default="bulk",
                   help="cross traffic: one Cubic bulk flow (default), Poisson web flows (2/s), both, none")
    c.add_argument("--duration", default="300s", help="run length (default 300s)")
    c.add_argument("--seeds", type=int_at_least(1, "a number of seeds", 20_000), default=5,
                   help="repetitions (seeds 1..N, default 5; at most 20000: 5 systems x N runs)")
    c.add_argument("--abr", default="dynamic", help="ABR of every client (default dynamic; qoelab list abr)")
    c.add_argument("--video", default="synthetic:sabre-bbb", help="video (default synthetic:sabre-bbb)")
    c.add_argument("--chunklets-n", type=_jobs, default=4, help="Chunklets' connections per client (default 4)")
    c.add_argument("--jobs", type=worker_count, default=None, metavar="N",
                   help="local worker processes (default: CPUs; at most 4 per CPU)")
    c.add_argument("--ray", default=None, metavar="ADDRESS", help="run on Ray (see qoelab sweep --help)")
    c.add_argument("--force", action="store_true", help="replace DIR if it holds another sweep")
    c.set_defaults(func=main)
    csub = c.add_subparsers(dest="compare_cmd", metavar="{sim-real}", required=False,
                            parser_class=type(c))
    from qoelab.simreal import add_sim_real
    add_sim_real(csub)
