"""``qoelab reproduce socket-intents``: the full factorial of Palmer's dissertation, ch. 3 (Table
3.1: 7 policies x 384 interface scenarios x the pages) on the flow-level page-load model, with
claims P1-P21 of ../shared/reference/claims/socket-intents.md judged by their rules.

The grid runs on the sweep engine (:mod:`qoelab.sweep`): one task per :class:`GridItem` (a few
pages of one set with every scenario and policy, :func:`grid_task`) into the resumable store
DIR/sweep (an interrupted run resumes where it stopped; ``--jobs`` worker processes). Pages are
synthetic (the 2015/2016 crawls are not public): every task regenerates its pages exactly as the
HAR importer reads the files written to DIR/hars/ (:func:`qoelab.pageload.synth.imported_page`;
a test checks the equality).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field

from qoelab import outdir
from qoelab.errors import InputError
from qoelab.reproduce import common

NAME = "socket-intents"
PAPER = ("Palmer, 'Socket Intents & VOXEL: Improving Performance on the Web and Video Streaming' (dissertation, "
         "TU Berlin 2022), ch. 3 (with Tiesel, Enghardt, Feldmann)")
# Table 3.1 (the public simulator's binary units: 0.5 Mbit/s = kbit(500))
RTT1_MS = (10, 20, 30, 50)
BW1 = ("500kbps", "2Mbps", "6Mbps", "12Mbps", "20Mbps", "50Mbps")
RTT2_MS = (20, 50, 100, 200)
BW2 = ("500kbps", "5Mbps", "20Mbps", "50Mbps")
POLICIES = ("if1", "if2", "rr", "mptcp-if1", "mptcp-rnd", "eaf", "eaf-mptcp")
ABLATION = ("eaf-heuristic",)


def mbit(label: str) -> float:
    """The grid label in Mbit/s (0.5 for 500kbps)."""
    return float(label[:-4]) / 1000.0 if label.endswith("kbps") else float(label[:-4])


def scenarios(units: str = "binary") -> list[dict]:
    """The 384 interface scenarios, in a fixed order (index = scenario id)."""
    from qoelab.pageload.units import rate_bytes
    out = []
    for r1 in RTT1_MS:
        for b1 in BW1:
            for r2 in RTT2_MS:
                for b2 in BW2:
                    out.append({"scenario": len(out), "rtt1_ms": r1, "bw1": b1, "bw1_mbit": mbit(b1),
                                "bw1_bytes": rate_bytes(b1, units), "rtt2_ms": r2, "bw2": b2, "bw2_mbit": mbit(b2),
                                "bw2_bytes": rate_bytes(b2, units)})
    return out


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    #: (set, sites, days): the first `sites` sites x `days` days of a synthetic set
    sets: tuple = (("alexa100", 100, 1), ("alexa1000", 1000, 1))
    #: seeds of MPTCP rnd on the primary set (the other sets: seed 1 only)
    rnd_seeds: int = 5
    pages_per_item: int = 4
    units: str = "binary"
    policies: tuple = POLICIES + ABLATION
    primary: str = "alexa100"
    #: sensitivity variants (:data:`VARIANTS`) run on the primary set with :data:`SENS_POLICIES`
    sensitivity: tuple = ()
    extra: dict = field(default_factory=dict)

    def items(self) -> list["GridItem"]:
        """The tasks: every page of every set, in chunks of ``pages_per_item``."""
        out = []
        for set_name, sites, days in self.sets:
            pages = [(site, day) for site in range(sites) for day in range(days)]
            for k in range(0, len(pages), self.pages_per_item):
                out.append(GridItem(set_name, k, tuple(pages[k:k + self.pages_per_item]), tuple(self.policies),
                                    self.units, self.rnd_seeds if set_name == self.primary else 1))
        return out


#: Sensitivity variants of the model (claims file §1.10): the text's one RTT per reused connection,
#: max-min sharing instead of the public code's water-filling, decimal instead of binary units.
VARIANTS = {"reuse-rtt-1": {"options": (("reuse_rtts", 1),)}, "maxmin": {"options": (("sharing", "maxmin"),)},
            "decimal": {"units": "decimal"}}
SENS_POLICIES = ("if1", "eaf", "eaf-mptcp", "mptcp-if1")


@dataclass(frozen=True)
class GridItem:
    """One task of the grid: pages ``first_page``.. of set ``set`` (as (site, day) pairs), every
    scenario of Table 3.1 and every policy (MPTCP rnd with ``rnd_seeds`` seeds)."""
    set: str
    first_page: int
    pages: tuple
    policies: tuple
    units: str
    rnd_seeds: int
    rep: int = 0
    seed: int = 0

    @property
    def run_id(self) -> str:
        return f"{self.set}-{self.first_page:05d}"


@dataclass(frozen=True)
class VariantItem(GridItem):
    """A task of a sensitivity variant: a :class:`GridItem` with model ``options``
    (``pageload_batch``'s: ``reuse_rtts``, ``sharing``) and its variant's name."""
    variant: str = ""
    options: tuple = ()

    @property
    def run_id(self) -> str:
        return f"{self.variant}-{self.set}-{self.first_page:05d}"


def variant_items(spec: "Spec") -> list[VariantItem]:
    """The sensitivity tasks: every variant of ``spec.sensitivity`` on the primary set's pages."""
    out = []
    for v in spec.sensitivity:
        cfg = VARIANTS[v]
        for it in spec.items():
            if it.set != spec.primary:
                continue
            out.append(VariantItem(it.set, it.first_page, it.pages, SENS_POLICIES, cfg.get("units", spec.units), 1,
                                   variant=v, options=cfg.get("options", ())))
    return out


def full_spec() -> Spec:
    return Spec(name="full", description="Table 3.1: 7 policies (+ the EAF estimator ablation) x 384 scenarios x "
                                         "1,100 synthetic pages (Alexa-100-like: 100 sites x 1 day; Alexa-1000-like: "
                                         "1,000 sites); MPTCP rnd with 5 seeds on the Alexa-100-like set; "
                                         "sensitivity: reuse RTT 1, max-min sharing, decimal units (Alexa-100-like, "
                                         "4 policies)",
                sensitivity=tuple(VARIANTS))


def quick_spec() -> Spec:
    return Spec(name="quick", description="every policy and all 384 scenarios on 24 pages (12 sites of each set); "
                                          "MPTCP rnd with 2 seeds",
                sets=(("alexa100", 12, 1), ("alexa1000", 12, 1)), rnd_seeds=2, pages_per_item=2)


def run_pages(item: GridItem, pages: list) -> tuple[dict, list[dict]]:
    """Every (page, scenario, policy, seed) of ``item`` on ``pages``: (columns as numpy arrays, page
    statistics)."""
    import numpy as np

    from qoelab import _core
    sc = scenarios(item.units)
    ifaces = [[(s["bw1_bytes"], s["rtt1_ms"] * 1_000_000, []), (s["bw2_bytes"], s["rtt2_ms"] * 1_000_000, [])]
              for s in sc]
    cols: dict[str, list] = {k: [] for k in ("page", "scenario", "policy", "seed", "plt_ns", "conns", "mptcp",
                                             "off_first", "blocked")}
    stats = []
    for k, pg in enumerate(pages):
        page_id = item.first_page + k
        sizes = sorted(o.size for o in pg.objects)
        stats.append({"set": item.set, "page": page_id, "name": pg.name, "objects": len(pg.objects),
                      "hosts": pg.n_hosts, "bytes": pg.total_bytes, "median_object_bytes": float(np.median(sizes)),
                      "https_share": sum(o.tls for o in pg.objects) / len(pg.objects), "depth": _depth(pg)})
        jobs = []
        for pol in item.policies:
            for seed in (range(1, item.rnd_seeds + 1) if pol == "mptcp-rnd" else (1,)):
                for s in sc:
                    jobs.append((0, ifaces[s["scenario"]], pol, seed))
        res = _core.pageload_batch([pg.core_tuple()], jobs, dict(getattr(item, "options", ())) or None)
        for (_, _, pol, seed), j, r in zip(jobs, range(len(jobs)), res):
            cols["page"].append(page_id)
            cols["scenario"].append(j % len(sc))
            cols["policy"].append(pol)
            cols["seed"].append(seed)
            cols["plt_ns"].append(r[0])
            cols["conns"].append(r[1])
            cols["mptcp"].append(r[2])
            cols["off_first"].append(r[3])
            cols["blocked"].append(r[4])
    out = {"page": np.array(cols["page"], dtype=np.int32), "scenario": np.array(cols["scenario"], dtype=np.int16),
           "policy": np.array(cols["policy"]), "seed": np.array(cols["seed"], dtype=np.int8),
           "plt_ns": np.array(cols["plt_ns"], dtype=np.int64), "conns": np.array(cols["conns"], dtype=np.int16),
           "mptcp": np.array(cols["mptcp"], dtype=np.int16), "off_first": np.array(cols["off_first"], dtype=np.int16),
           "blocked": np.array(cols["blocked"], dtype=bool)}
    return out, stats


def _stored_keys(store_dir: str) -> set:
    """Keys of the runs a sweep store at ``store_dir`` already holds (none if there is no store)."""
    from qoelab.sweep.store import Store, is_store
    return Store(store_dir).done_keys() if os.path.isdir(store_dir) and is_store(store_dir) else set()


def grid_task(point: dict) -> dict:
    """The sweep engine's task for a :class:`GridItem` (``point["payload"]``): its page loads as the
    run's ``loads`` table and the pages' statistics in the record."""
    import pyarrow as pa

    from qoelab.pageload import synth
    item = point["payload"]
    spec = synth.SETS[item.set]
    templates: dict = {}
    pages = []
    for site, day in item.pages:
        t = templates.setdefault(site, synth.site_template(spec, site))
        pages.append(synth.imported_page(spec, site, day, t))
    cols, stats = run_pages(item, pages)
    cols["rnd_seed"] = cols.pop("seed")   # the sweep's own "seed" column would take the name
    return {"run": {"loads": int(len(cols["page"]))}, "pages": stats, "tables": {"loads": pa.table(cols)}}


def _depth(pg) -> int:
    d = [0] * len(pg.objects)
    for i, o in enumerate(pg.objects):
        if o.parent is not None:
            d[i] = d[o.parent] + 1
    return max(d) + 1


def _cost(item: GridItem) -> float:
    """Larger pages take longer: the objects of the item's pages (cheap: the site templates)."""
    from qoelab.pageload import synth
    spec = synth.SETS[item.set]
    return float(sum(synth.site_template(spec, site)["n"] for site, _ in item.pages))


def write_workload(spec: Spec, har_root: str, log) -> tuple[dict, dict]:
    """Generate the synthetic sets, write their HAR files, return (paths per set, stats per set)."""
    from qoelab.pageload import synth
    paths, stats = {}, {}
    for set_name, sites, days in spec.sets:
        pages = synth.generate(synth.SETS[set_name], sites=sites, days=days)
        paths[set_name] = synth.write_set(pages, os.path.join(har_root, set_name))
        st = synth.stats(pages)
        # the targets are judged on the whole set's distribution (all sites and days), which does not
        # need the crawl timings: the subset actually loaded is reported too
        full = synth.SETS[set_name]
        whole = [synth.make_page(full, s, d) for s in range(full.sites) for d in range(full.days)]
        stats[set_name] = {"loaded": st, "whole_set": synth.stats(whole)}
        log(f"{NAME}: {set_name}: {len(pages)} pages written (targets met by the whole set: "
            f"{stats[set_name]['whole_set']['all_targets_met']}; by the pages loaded: {st['all_targets_met']})")
    return paths, stats


P18_PAGES = 100   # Alexa-100-like pages in the closed loop (one per site: the first crawl day)


def run_crossmodel(spec: Spec, har_paths: dict, har_dir: str, rows: list, log) -> dict:
    """P17 and P18: the flow model against qoelab's packet-level browser
    (:mod:`qoelab.pageload.crossmodel`). An error is recorded, not raised (the claims say NOT RUN)."""
    from qoelab.pageload import crossmodel
    t0 = time.perf_counter()
    paths = har_paths.get("alexa100", [])
    days = dict((n, d) for n, _, d in spec.sets).get("alexa100", 1)
    p18_paths = paths[::max(1, days)][:P18_PAGES]
    try:
        p17 = crossmodel.p17(rows, log=lambda m: log(f"{NAME}: {m}"), units=spec.units)
        p18 = crossmodel.p18(p18_paths, rows, har_dir=har_dir, log=lambda m: log(f"{NAME}: {m}"), units=spec.units)
    except Exception as e:  # noqa: BLE001 - reported in the claims, the grid's results are kept
        log(f"{NAME}: cross-model validation failed: {type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
    return {"p17": p17, "p18": p18, "wall_s": round(time.perf_counter() - t0, 2),
            "packet_loads": sum(r["check"] in ("P17", "P18") for r in rows)}


def reproduce(out_dir: str = "results/socket-intents", quick: bool = False, jobs: int = 0, log=None,
              spec: Spec | None = None) -> dict:
    """Run the grid on the sweep engine (resumable store DIR/sweep), write the pages, run the
    cross-model checks, judge P1-P21, write DIR/{runs.parquet, scenarios.parquet, pages.parquet,
    crossmodel.parquet, workload.json, claims.json, meta.json, report.html, figures/, hars/, sweep/}
    atomically."""
    import numpy as np
    import pandas as pd

    from qoelab.reproduce import socket_intents_claims as sic
    from qoelab.reproduce import socket_intents_report as sir
    if jobs is not None and jobs < 0:
        raise InputError(None, "--jobs", "a number of worker processes >= 1", str(jobs))
    out_dir = common.check_out_dir(out_dir, NAME)
    spec = spec or (quick_spec() if quick else full_spec())
    log = log or (lambda msg: None)
    njobs = jobs or os.cpu_count() or 1
    t0 = time.perf_counter()
    items = spec.items()
    n_loads = sum(len(it.pages) * 384 * (len(it.policies) - 1 + it.rnd_seeds) for it in items)
    log(f"{NAME}: {len(items)} tasks, {n_loads} page loads ({spec.name}), {njobs} worker process"
        f"{'es' if njobs > 1 else ''}")
    store_dir = os.path.join(out_dir, "sweep")
    before = _stored_keys(store_dir)
    t1 = time.perf_counter()
    recs, sres = common.run_on_sweep(f"{NAME}-{spec.name}-{len(items)}", items, None, None, store_dir, njobs,
                                     None, log, _cost, task_of=lambda it: f"{__name__}:grid_task")
    wall_runs = time.perf_counter() - t1
    failures = [f"{it.run_id}: {(r or {}).get('error') or 'missing from the store'}"
                for it, r in zip(items, recs) if not r or r.get("status") != "ok"]
    cols = ["set", "page", "scenario", "policy", "seed", "plt_ns", "conns", "mptcp", "off_first", "blocked"]
    lp = os.path.join(store_dir, "store", "tables", "loads.parquet")
    if os.path.exists(lp):
        df = pd.read_parquet(lp, columns=[c if c != "seed" else "rnd_seed" for c in cols])
        df = df.rename(columns={"rnd_seed": "seed"})
    else:
        df = pd.DataFrame({c: [] for c in cols})
    df["set"] = df["set"].astype("category")
    df["policy"] = df["policy"].astype("category")
    df["plt_s"] = df["plt_ns"] / 1e9
    pages = pd.DataFrame([p for r in recs if r and r.get("status") == "ok"
                          for p in (r.get("metrics") or {}).get("pages", [])])
    scen = pd.DataFrame(scenarios(spec.units))
    # what this invocation ran (a rerun into the same DIR resumes what the store holds)
    now = [r for r in recs if r and r.get("status") == "ok" and r.get("key") not in before]
    loads_now = sum(((r.get("metrics") or {}).get("run") or {}).get("loads", 0) for r in now)
    cpu_s = sum(r.get("wall_s") or 0 for r in now)
    perf = {"page_loads": int(len(df)), "page_loads_run": int(loads_now), "wall_s_runs": round(wall_runs, 2),
            "worker_s": round(cpu_s, 2),
            "loads_per_s_wall": round(loads_now / wall_runs, 1) if wall_runs > 0 and loads_now else None,
            "loads_per_s_per_worker": round(loads_now / cpu_s, 1) if cpu_s > 0 else None,
            "tasks_run": sres.get("ran"), "tasks_resumed": sres.get("skipped")}
    log(f"{NAME}: {len(df)} loads ({loads_now} run now in {wall_runs:.0f} s: {perf['loads_per_s_wall']} loads/s "
        f"wall, {perf['loads_per_s_per_worker']} per worker; {sres.get('skipped')} tasks resumed from the store), "
        f"{len(failures)} failed tasks")
    sens, sens_store = None, os.path.join(out_dir, "sweep-sensitivity")
    vitems = variant_items(spec)
    if vitems:
        log(f"{NAME}: sensitivity: {len(spec.sensitivity)} variants, {len(vitems)} tasks")
        vrecs, _ = common.run_on_sweep(f"{NAME}-sensitivity-{spec.name}-{len(vitems)}", vitems, None, None, sens_store,
                                       njobs, None, log, _cost, task_of=lambda it: f"{__name__}:grid_task")
        failures += [f"{it.run_id}: {(r or {}).get('error') or 'missing from the store'}"
                     for it, r in zip(vitems, vrecs) if not r or r.get("status") != "ok"]
        sp = os.path.join(sens_store, "store", "tables", "loads.parquet")
        if os.path.exists(sp):
            sens = pd.read_parquet(sp, columns=["variant", "page", "scenario", "policy", "plt_ns"])
    with outdir.atomic_dir(out_dir) as tmp:
        har_paths, wstats = write_workload(spec, os.path.join(tmp, "hars"), log)
        cross_rows: list[dict] = []
        cross = run_crossmodel(spec, har_paths, os.path.join(tmp, "hars", "packet"), cross_rows, log)
        cross_df = pd.DataFrame(cross_rows)
        if len(cross_df):
            cross_df.to_parquet(os.path.join(tmp, "crossmodel.parquet"), index=False)
        claims = sic.evaluate(df, pages, scen, wstats, spec, perf, cross)
        sens_rows = sic.sensitivity(df, sens, spec.primary) if sens is not None else []
        meta = {"reproduction": NAME, "paper": PAPER, "grid": spec.name, "grid_description": spec.description,
                "spec": asdict(spec), "runs": int(len(df)), "items": len(items), "failed": len(failures),
                "sweep": {k: sres.get(k) for k in ("ran", "skipped", "failed", "wall_s")},
                "failures": failures[:50], "jobs": njobs, "wall_s_runs": round(wall_runs, 2), "perf": perf,
                "workload": {k: {"whole_set_targets_met": v["whole_set"]["all_targets_met"],
                                 "loaded_targets_met": v["loaded"]["all_targets_met"]} for k, v in wstats.items()},
                "crossmodel": {k: v for k, v in cross.items() if k in ("wall_s", "packet_loads", "error")},
                "sensitivity": sens_rows,
                "claims": claims}
        df.drop(columns=["plt_ns"]).to_parquet(os.path.join(tmp, "runs.parquet"), index=False)
        pages.to_parquet(os.path.join(tmp, "pages.parquet"), index=False)
        scen.to_parquet(os.path.join(tmp, "scenarios.parquet"), index=False)
        common.dump_json(os.path.join(tmp, "workload.json"), wstats)
        common.write_claims_report_meta(tmp, claims, meta,
                                        lambda: sir.write_report(tmp, df, pages, scen, claims, meta, cross_df), t0)
        os.rename(store_dir, os.path.join(tmp, "sweep"))     # the stores move with the results
        if os.path.isdir(sens_store):
            os.rename(sens_store, os.path.join(tmp, "sweep-sensitivity"))
    meta["out_dir"] = out_dir
    return meta


if __name__ == "__main__":
    import sys
    sys.exit("run it as: qoelab reproduce socket-intents [--quick]")
