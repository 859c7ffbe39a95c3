"""Cross-model validation of the flow-level page-load model (claims P17 and P18 of
../shared/reference/claims/socket-intents.md; docs/validation/pageload.md).

The reference is qoelab's packet simulator: a browser (``[[page]]``, crates/qoelab-core/src/
session/page.rs) loading the page over HTTP/1.1 and simulated TCP (IW10, up to 6 connections per
origin, TCP and TLS handshakes as packets) through one bottleneck with a large drop-tail buffer.

* **P17** (§3.5.1, Fig. 3.2): the handcrafted pages loaded by both models on one interface.
* **P18** (§3.5.2, Fig. 3.3), closed loop: pages loaded by the packet simulator are written as HAR
  files (the browser's timings); the paper's method estimates the interface from them (bandwidth
  from the objects > 50 KB with parallelism taken into account, the median over all pages; RTT
  by "ping", i.e. the path's base RTT); the HARs are re-imported (dependencies by the importer's
  heuristic) and replayed in the flow model on that interface; the replayed load times are
  compared with the packet simulator's.
"""

from __future__ import annotations

import math
import os

from qoelab.pageload.page import Obj, Page

LARGE_OBJECT = 50_000       # bytes: the objects the bandwidth estimate uses (§3.5.2)
BUFFER_PACKETS = 1_000      # the bottleneck's drop-tail buffer ("large": >= 10 BDP of every setting used)


def packet_load(source: dict, rate_bytes: int, rtt_ns: int, cc: str = "newreno", seed: int = 1,
                page_bytes: int | None = None):
    """Load one page in the packet simulator on one interface of ``rate_bytes`` bytes/s (the
    bottleneck's rate both ways) and base RTT ``rtt_ns``. ``source`` is ``{"har": path}`` or
    ``{"handcrafted": name}``. Returns the :class:`qoelab.Result` (summary["pages"][0], table
    "pages")."""
    from qoelab import results
    from qoelab import scenario as sc
    total = page_bytes if page_bytes is not None else 10**8
    dur_s = min(3 * total / rate_bytes + 200 * rtt_ns / 1e9 + 20, 7 * 86_400 - 1)
    data = {
        "scenario": {"name": "pageload-packet", "duration": f"{dur_s:.3f}s", "seed": seed},
        "topology": {"rate": f"{rate_bytes * 8}bps", "rtt": f"{rtt_ns}ns", "aqm": "pfifo",
                     "buffer": BUFFER_PACKETS},
        "page": [dict(name="page", cc=cc, **source)],
        "output": {"tables": ["pages"], "sample_interval": f"{max(1.0, dur_s / 1000):.3f}s"},
    }
    return results.run(sc.from_dict(data, src="<crossmodel>"))


def flow_plt(page: Page, rate_bytes: int, rtt_ns: int, policy: str = "if1", second=None,
             options: dict | None = None) -> float:
    """Load time (s) of ``page`` in the flow model on one interface (and ``second`` = (bytes/s,
    RTT ns) as interface 2 if given: it is unused by ``if1``)."""
    from qoelab import _core
    ifs = [(rate_bytes, rtt_ns, [])]
    ifs.append((second[0], second[1], []) if second else (rate_bytes, rtt_ns, []))
    return _core.pageload_run(page.core_tuple(), ifs, policy, 1, options)["plt_ns"] / 1e9


def page_with_packet_timings(page: Page, res) -> Page:
    """``page`` with the HAR timings of its packet-level load: start = when the browser learned of
    the object (its parent finished), finish = its last byte, and the timing breakdown
    (blocked, connect, wait, receive) in ``timings``."""
    t = res.table("pages")
    rows = t.sort_values("object").to_dict("records")
    objs = []
    for o, r in zip(page.objects, rows):
        blocked = r["dispatched_s"] - r["enabled_s"]
        connect = r["requested_s"] - r["dispatched_s"]
        wait = r["first_byte_s"] - r["requested_s"]
        receive = r["done_s"] - r["first_byte_s"]
        objs.append(Obj(size=o.size, host=o.host, tls=o.tls, parent=o.parent, url=o.url,
                        har_start_s=r["enabled_s"], har_finish_s=r["done_s"],
                        timings={"blocked": blocked, "connect": connect, "wait": wait, "receive": receive}))
    return Page(name=page.name, objects=objs, dropped=page.dropped)


def receive_intervals(page: Page) -> list[tuple[float, float, int]]:
    """(first byte, last byte, size) of every object, from HAR timings (receive phase)."""
    out = []
    for o in page.objects:
        rec = o.timings["receive"] if o.timings else o.har_finish_s - o.har_start_s
        out.append((o.har_finish_s - rec, o.har_finish_s, o.size))
    return out


def bandwidth_samples(page: Page, min_size: int = LARGE_OBJECT) -> list[float]:
    """§3.5.2's bandwidth estimate per large object (bytes/s), parallelism taken into account:
    the bytes of *all* objects received during the large object's receive phase (each object's
    bytes spread evenly over its own receive phase) divided by that phase's length."""
    iv = receive_intervals(page)
    out = []
    for a, b, size in iv:
        if size <= min_size or b <= a:
            continue
        got = 0.0
        for c, d, sz in iv:
            if d <= c:
                got += sz if a <= d <= b else 0.0
                continue
            ov = min(b, d) - max(a, c)
            if ov > 0:
                got += sz * ov / (d - c)
        out.append(got / (b - a))
    return out


def _median(v: list[float]) -> float:
    s = sorted(v)
    n = len(s)
    if n == 0:
        return math.nan
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def _pct(v: list[float], q: float) -> float:
    s = sorted(x for x in v if x == x)
    if not s:
        return math.nan
    k = (len(s) - 1) * q
    i = int(math.floor(k))
    j = min(i + 1, len(s) - 1)
    return s[i] + (s[j] - s[i]) * (k - i)


def p17(rows_out: list, log=None, cc: str = "newreno", units: str = "binary") -> dict:
    """Handcrafted pages in both models at (50 ms, 6 Mbit/s) and (50 ms, 0.5 Mbit/s) (the grid's
    units: binary by default), plus the EAF part (flow model, (50 ms, 6) + (50 ms, 5)). Appends
    one row per (page, setting) to ``rows_out``; returns the figures the verdict needs."""
    from qoelab.pageload import handcrafted
    from qoelab.pageload import units as pu
    settings = [("50ms/6Mbit", pu.rate_bytes("6Mbps", units), 50_000_000),
                ("50ms/0.5Mbit", pu.rate_bytes("500kbps", units), 50_000_000)]
    for label, bw, rtt in settings:
        for pg in handcrafted.pages():
            res = packet_load({"handcrafted": pg.name}, bw, rtt, cc=cc, page_bytes=pg.total_bytes)
            pk = res.summary["pages"][0]["plt_s"]
            fl = flow_plt(pg, bw, rtt)
            fl1 = flow_plt(pg, bw, rtt, options={"reuse_rtts": 1})
            rows_out.append({"check": "P17", "setting": label, "page": pg.name, "objects": len(pg.objects),
                             "bytes": pg.total_bytes, "packet_plt_s": pk, "flow_plt_s": fl,
                             "rel_diff": (fl - pk) / pk if pk else math.nan,
                             "flow_plt_reuse1_s": fl1, "rel_diff_reuse1": (fl1 - pk) / pk,
                             "connections": res.summary["pages"][0]["connections"]})
        if log:
            log(f"P17: {label}: {len(handcrafted.pages())} handcrafted pages loaded by both models")
    mine = [r for r in rows_out if r["check"] == "P17"]
    frac_le = _frac(mine)
    med_abs = _median([abs(r["rel_diff"]) for r in mine])
    # EAF part: flow model only.
    bw1, bw2 = pu.rate_bytes("6Mbps", units), pu.rate_bytes("5Mbps", units)
    eaf = []
    for pg in handcrafted.pages():
        if sum(o.size >= 100_000 for o in pg.objects) < 2:
            continue
        if1 = flow_plt(pg, bw1, 50_000_000, "if1", (bw2, 50_000_000))
        e = flow_plt(pg, bw1, 50_000_000, "eaf", (bw2, 50_000_000))
        eaf.append({"page": pg.name, "if1_s": if1, "eaf_s": e, "speedup": if1 / e})
    return {"frac_flow_le_packet": frac_le, "median_abs_rel_diff": med_abs, "n": len(mine), "eaf": eaf,
            "eaf_all_faster": all(x["speedup"] > 1 for x in eaf),
            "by_setting": {lbl: {"frac_flow_le_packet": _frac([r for r in mine if r["setting"] == lbl]),
                                 "median_abs_rel_diff": _median([abs(r["rel_diff"]) for r in mine
                                                                 if r["setting"] == lbl])}
                           for lbl, _, _ in settings}}


def _frac(rows) -> float:
    return sum(r["flow_plt_s"] <= r["packet_plt_s"] for r in rows) / len(rows) if rows else math.nan


P18_SETTINGS = (("10ms/50Mbit", "50Mbps", 10_000_000), ("50ms/6Mbit", "6Mbps", 50_000_000))


def p18(har_paths: list[str], rows_out: list, har_dir: str | None = None, log=None, cc: str = "newreno",
        units: str = "binary") -> dict:
    """The closed loop over ``har_paths`` (synthetic pages) in each of :data:`P18_SETTINGS`. Writes
    the packet-level HARs into ``har_dir`` (if given). Appends one row per (page, setting)."""
    from qoelab.pageload import units as pu
    from qoelab.pageload.har import load_har, write_har
    out = {}
    for label, rate, rtt in P18_SETTINGS:
        bw = pu.rate_bytes(rate, units)
        loaded = []
        for path in har_paths:
            pg = load_har(path)
            res = packet_load({"har": os.path.abspath(path)}, bw, rtt, cc=cc, page_bytes=pg.total_bytes)
            pk = res.summary["pages"][0]["plt_s"]
            timed = page_with_packet_timings(pg, res)
            if har_dir:
                d = os.path.join(har_dir, label.replace("/", "-"))
                os.makedirs(d, exist_ok=True)
                hp = os.path.join(d, pg.name + ".har")
                write_har(timed, hp, creator="qoelab packet simulator")
                replay_page = load_har(hp)
            else:
                replay_page = _reimport(timed)
            loaded.append((pg, pk, timed, replay_page))
        samples = [x for _, _, timed, _ in loaded for x in bandwidth_samples(timed)]
        est = _median(samples)
        per_page = []
        for pg, pk, timed, rp in loaded:
            fl = flow_plt(rp, int(round(est)), rtt)
            own = _median(bandwidth_samples(timed))
            fl_own = flow_plt(rp, int(round(own)), rtt) if own == own else math.nan
            fl1 = flow_plt(rp, int(round(est)), rtt, options={"reuse_rtts": 1})
            d = (fl - pk) / pk
            per_page.append(d)
            rows_out.append({"check": "P18", "setting": label, "page": pg.name, "objects": len(pg.objects),
                             "bytes": pg.total_bytes, "packet_plt_s": pk, "flow_plt_s": fl, "rel_diff": d,
                             "abs_diff_s": fl - pk, "flow_plt_own_bw_s": fl_own,
                             "flow_plt_reuse1_s": fl1, "rel_diff_reuse1": (fl1 - pk) / pk,
                             "rel_diff_own_bw": (fl_own - pk) / pk if fl_own == fl_own else math.nan,
                             "connections": None})
        out[label] = {"bw_estimate_bytes": est, "bw_true_bytes": bw, "bw_samples": len(samples),
                      "median_rel_diff": _median(per_page), "p25": _pct(per_page, 0.25), "p75": _pct(per_page, 0.75),
                      "n": len(per_page)}
        if log:
            log(f"P18: {label}: {len(per_page)} pages, estimated {est * 8 / 1e6:.2f} Mbit/s (true "
                f"{bw * 8 / 1e6:.2f}), median relative difference {100 * out[label]['median_rel_diff']:+.1f}%")
    allr = [r["rel_diff"] for r in rows_out if r["check"] == "P18"]
    out["pooled"] = {"median_rel_diff": _median(allr), "p25": _pct(allr, 0.25), "p75": _pct(allr, 0.75),
                     "n": len(allr)}
    return out


def _reimport(timed: Page) -> Page:
    """Round-trip a timed page through the HAR format without a file (the importer's heuristic)."""
    import tempfile

    from qoelab.pageload.har import load_har, write_har
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, timed.name + ".har")
        write_har(timed, p)
        return load_har(p)
