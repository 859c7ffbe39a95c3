"""Where P18's gap comes from (docs/validation/pageload.md, "Where the gap comes from"): the flow
model's replay of each page against the packet-level load, one cause replaced at a time.

    python benchmarks/pageload/p18_causes.py --hars OUT/hars/alexa100 [--pages 100]

OUT is a `qoelab reproduce socket-intents` output (its synthetic Alexa-100-like HARs; the full run's
first crawl day of each site is every page with "+2015-12-07" in its name). Prints one Markdown
table of medians of (flow - packet) / packet per setting. Rows:

* true tree, true rate: the page as generated, the link's rate (bytes/s);
* true tree, goodput: the link's payload rate (rate x 1460 / 1500);
* HAR tree, goodput: the page re-imported from the packet load's HAR (the importer's heuristic);
* ... `reuse_rtts = 1`: one request round trip on a reused connection (the text's model);
* no TLS (both models): every URL over plain http, loaded again at the packet level;
* no TLS and `reuse_rtts = 1`;
* own estimate: the HAR tree at each page's own bandwidth estimate (the paper's method per page);
* and the mean number of connections a page opens in each model.
"""
import argparse
import glob
import json
import os
import sys
import tempfile


def no_tls(path: str, d: str) -> str:
    """A copy of the HAR with every https:// URL made http:// (no TLS handshakes in either model)."""
    with open(path) as f:
        doc = json.load(f)
    for e in doc["log"]["entries"]:
        u = e["request"]["url"]
        if u.startswith("https://"):
            e["request"]["url"] = "http://" + u[len("https://"):]
    out = os.path.join(d, os.path.basename(path))
    with open(out, "w") as f:
        json.dump(doc, f)
    return out


def main(argv=None) -> int:
    from qoelab import _core
    from qoelab.pageload import crossmodel as cm
    from qoelab.pageload import units as pu
    from qoelab.pageload.har import load_har
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hars", required=True, help="folder of the synthetic HAR files")
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--day", default="+2015-12-07", help="keep the pages whose name has this (the first day)")
    a = ap.parse_args(argv)
    paths = sorted(p for p in glob.glob(os.path.join(a.hars, "*.har")) if a.day in os.path.basename(p))[:a.pages]
    if not paths:
        sys.exit(f"{a.hars}: no HAR file with {a.day!r} in its name")
    names = ["true tree, true rate", "true tree, goodput (rate x 1460/1500)", "HAR tree, goodput",
             "HAR tree, goodput, `reuse_rtts = 1`", "no TLS (both models), HAR tree, goodput",
             "no TLS and `reuse_rtts = 1`", "HAR tree, each page's own bandwidth estimate"]
    cols, conns = {}, {}
    with tempfile.TemporaryDirectory() as d:
        for label, rate, rtt in cm.P18_SETTINGS:
            bw = pu.rate_bytes(rate, "binary")
            gp = int(bw * 1460 / 1500)
            diffs = [[] for _ in names]
            n_pk, n_fl = [], []
            for path in paths:
                pg = load_har(path)
                pk = cm.packet_load({"har": os.path.abspath(path)}, bw, rtt, page_bytes=pg.total_bytes)
                t = pk.summary["pages"][0]["plt_s"]
                timed = cm.page_with_packet_timings(pg, pk)
                rp = cm._reimport(timed)
                n_pk.append(pk.summary["pages"][0]["connections"])
                n_fl.append(_core.pageload_run(rp.core_tuple(), [(gp, rtt, []), (gp, rtt, [])], "if1", 1,
                                               None)["conns_opened"])
                own = cm._median(cm.bandwidth_samples(timed))
                p2 = no_tls(path, d)
                pg2 = load_har(p2)
                pk2 = cm.packet_load({"har": p2}, bw, rtt, page_bytes=pg2.total_bytes)
                t2 = pk2.summary["pages"][0]["plt_s"]
                rp2 = cm._reimport(cm.page_with_packet_timings(pg2, pk2))
                vals = [(cm.flow_plt(pg, bw, rtt), t), (cm.flow_plt(pg, gp, rtt), t), (cm.flow_plt(rp, gp, rtt), t),
                        (cm.flow_plt(rp, gp, rtt, options={"reuse_rtts": 1}), t), (cm.flow_plt(rp2, gp, rtt), t2),
                        (cm.flow_plt(rp2, gp, rtt, options={"reuse_rtts": 1}), t2),
                        (cm.flow_plt(rp, int(round(own)), rtt) if own == own else float("nan"), t)]
                for k, (fl, ref) in enumerate(vals):
                    if fl == fl:
                        diffs[k].append((fl - ref) / ref)
            cols[label] = [cm._median(x) for x in diffs]
            conns[label] = (sum(n_fl) / len(n_fl), sum(n_pk) / len(n_pk))
            print(f"{label}: {len(paths)} pages", file=sys.stderr)
    labels = [x[0] for x in cm.P18_SETTINGS]
    print("| replay | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for k, n in enumerate(names):
        print(f"| {n} | " + " | ".join(f"{100 * cols[lb][k]:+.1f}%" for lb in labels) + " |")
    print("| connections per page, flow model (HAR tree, goodput) / packet browser | "
          + " | ".join(f"{conns[lb][0]:.1f} / {conns[lb][1]:.1f}" for lb in labels) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
