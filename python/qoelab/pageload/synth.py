"""Seeded synthetic web pages calibrated to the statistics of the dissertation's crawls (§3.4.3),
written as real HAR 1.2 files (the Alexa crawls of 2015/2016 are not public).

Structure of a page: a root HTML object on the primary origin, then 2 to 4 *waves*; every object
of wave k is a child of one object of wave k - 1 (wave 1: of the root). Distributions (per
site; the acceptance targets of the claims file §2.4 are checked by :func:`stats` and by the
tests):

* objects: lognormal, median 30, clipped to [1, 260];
* hosts: 1 + Poisson(6.5), at most the number of objects; the primary host gets ~40% of the
  objects, every other host at least one;
* object sizes (bytes on the wire): lognormal with median 2.5 KB and sigma 1.5 times a per-site
  scale (lognormal, sigma 0.6), and with probability 1% a large object, log-uniform in
  [100 KB, 1 MB]; the root HTML: lognormal, median 10 KB, sigma 0.8 (these were tuned until
  the targets were met, :data:`TARGETS`);
* HTTPS per host with probability ``https_share`` (default 0.5).

Sets: ``alexa100`` = 100 sites x 26 days (a site keeps its structure; per day the object count
varies by +-15% and every size by +-15%); ``alexa1000`` = 1000 sites x 1 day with another seed
and wider distributions (sigma of the object count and of the site scale x 1.1).

HAR timings come from loading each page once in the flow model at the crawl condition (one
interface, 67 Mbit/s decimal, per-site RTT uniform in [20, 50] ms): a child starts 1 us after its
parent finished and finishes when the model says, so the HAR dependency heuristic recovers the
intended tree (verified by the tests). All randomness comes from ``random.Random`` seeded with
(set seed, site, day) strings, so a page does not depend on how many others are generated.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
from dataclasses import dataclass

from qoelab.pageload.page import Obj, Page

CRAWL_BW_BYTES = 67_000_000 // 8
MAX_OBJECTS = 260


@dataclass(frozen=True)
class SetSpec:
    name: str
    sites: int
    days: int
    seed: int
    n_median: float = 30.0
    n_sigma: float = 1.05
    size_median: float = 2500.0
    size_sigma: float = 1.5
    scale_sigma: float = 0.6
    p_big: float = 0.01
    hosts_lambda: float = 6.5
    https_share: float = 0.5
    root_median: float = 10_000.0


SETS = {
    "alexa100": SetSpec("alexa100", sites=100, days=26, seed=2015),
    "alexa1000": SetSpec("alexa1000", sites=1000, days=1, seed=2016, n_sigma=1.05 * 1.1, size_sigma=1.5,
                         scale_sigma=0.6 * 1.1),
}


def _rng(*parts) -> random.Random:
    h = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def _poisson(r: random.Random, lam: float) -> int:
    # Knuth (lam is small)
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= r.random()
        if p <= limit:
            return k
        k += 1


def site_template(spec: SetSpec, site: int) -> dict:
    """The structure of a site (the largest day's object list; a day takes a prefix)."""
    r = _rng("pageload-synth", spec.name, spec.seed, "site", site)
    n = int(round(math.exp(math.log(spec.n_median) + spec.n_sigma * r.gauss(0, 1))))
    n = max(1, min(MAX_OBJECTS, n))
    n_max = max(1, min(MAX_OBJECTS, int(math.ceil(n * 1.15)))) if spec.days > 1 else n
    hosts = max(1, min(n_max, 1 + _poisson(r, spec.hosts_lambda)))
    scale = math.exp(spec.scale_sigma * r.gauss(0, 1))
    tls_host = [r.random() < spec.https_share for _ in range(hosts)]
    sizes = [max(200, int(math.exp(math.log(spec.root_median) + 0.8 * r.gauss(0, 1))))]
    host_of = [0]
    for i in range(1, n_max):
        if r.random() < spec.p_big:
            s = int(math.exp(r.uniform(math.log(100_000), math.log(1_000_000))))
        else:
            s = int(math.exp(math.log(spec.size_median) + spec.size_sigma * r.gauss(0, 1)) * scale)
        sizes.append(max(100, min(s, 5_000_000)))
        if i < hosts:
            host_of.append(i)                     # every host at least once
        else:
            host_of.append(0 if r.random() < 0.4 else r.randrange(hosts))
    # shuffle host assignment of the non-root objects so that the first wave is not all new hosts
    tail = host_of[1:]
    r.shuffle(tail)
    host_of = [0] + tail
    # waves
    n_waves = r.randint(2, 4)
    weights = [r.uniform(0.5, 1.5) / (k + 1) for k in range(n_waves)]
    wave_of = [0] + sorted(r.choices(range(1, n_waves + 1), weights=weights, k=n_max - 1))
    parents: list[int | None] = [None]
    first_of_wave = {0: [0]}
    for i in range(1, n_max):
        w = wave_of[i]
        prev = first_of_wave.get(w - 1)
        while not prev:
            w -= 1
            prev = first_of_wave.get(w - 1)
        # the first few objects of the previous wave act as scripts loading the next wave
        parents.append(r.choice(prev[:3]))
        first_of_wave.setdefault(wave_of[i], []).append(i)
    rtt_ms = r.uniform(20.0, 50.0)
    return {"n": n, "sizes": sizes, "host_of": host_of, "tls_host": tls_host, "parents": parents,
            "rtt_ms": rtt_ms}


def make_page(spec: SetSpec, site: int, day: int, template: dict | None = None) -> Page:
    t = template or site_template(spec, site)
    r = _rng("pageload-synth", spec.name, spec.seed, "day", site, day)
    if spec.days > 1:
        n = max(1, min(len(t["sizes"]), int(round(t["n"] * r.uniform(0.85, 1.15)))))
        sizes = [max(1, int(s * r.uniform(0.85, 1.15))) for s in t["sizes"][:n]]
    else:
        n = t["n"]
        sizes = list(t["sizes"][:n])
    site_name = f"site{site:04d}.example"
    objs = []
    for i in range(n):
        h = t["host_of"][i]
        host = site_name if h == 0 else f"h{h}.site{site:04d}.example"
        tls = t["tls_host"][h]
        objs.append(Obj(size=sizes[i], host=host, tls=tls, parent=t["parents"][i],
                        url=f"{'https' if tls else 'http'}://{host}/o{i}"))
    return Page(name=page_name(spec, site, day), objects=objs)


def page_name(spec: SetSpec, site: int, day: int) -> str:
    """The public simulator's file name convention <site>+<date>+<time>."""
    import datetime as dt
    d0 = dt.date(2015, 12, 7) if spec.name == "alexa100" else dt.date(2016, 10, 10)
    return f"site{site:04d}.example+{(d0 + dt.timedelta(days=day)).isoformat()}+10-00-00"


def crawl_timings(page: Page, rtt_ms: float) -> None:
    """Set har_start_s / har_finish_s from a load in the flow model at the crawl condition."""
    from qoelab import _core
    r = _core.pageload_run(page.core_tuple(), [(CRAWL_BW_BYTES, int(rtt_ms * 1e6), [])], "if1")
    fin_us = [-(-rec["finish_ns"] // 1000) for rec in r["records"]]
    for i, o in enumerate(page.objects):
        st = 0 if o.parent is None else fin_us[o.parent] + 1
        o.har_start_s = st / 1e6
        o.har_finish_s = max(fin_us[i], st + 1) / 1e6


def generate(spec: SetSpec, sites: int | None = None, days: int | None = None) -> list[Page]:
    """Pages of the first ``sites`` sites x ``days`` days of the set, with crawl timings."""
    out = []
    for s in range(spec.sites if sites is None else min(sites, spec.sites)):
        t = site_template(spec, s)
        for d in range(spec.days if days is None else min(days, spec.days)):
            p = make_page(spec, s, d, t)
            crawl_timings(p, t["rtt_ms"])
            out.append(p)
    return out


def _har_args(p: Page) -> dict:
    date = p.name.split("+")[1] if "+" in p.name else "2015-12-07"
    return {"t0_iso": f"{date}T10:00:00+00:00", "creator": "qoelab pageload synth"}


def write_set(pages: list[Page], out_dir: str) -> list[str]:
    from qoelab.pageload.har import write_har
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for p in pages:
        path = os.path.join(out_dir, p.name + ".har")
        write_har(p, path, **_har_args(p))
        paths.append(path)
    return paths


def imported_page(spec: SetSpec, site: int, day: int, template: dict | None = None) -> Page:
    """The page of (site, day) exactly as the HAR importer reads the file :func:`write_set` writes
    for it (crawl timings, the dependency heuristic), without writing the file."""
    from qoelab.pageload.har import har_doc, page_from_har
    t = template or site_template(spec, site)
    p = make_page(spec, site, day, t)
    crawl_timings(p, t["rtt_ms"])
    return page_from_har(har_doc(p, **_har_args(p)), p.name + ".har", p.name)


def _pct(v: list[float], q: float) -> float:
    s = sorted(v)
    k = (len(s) - 1) * q
    lo = int(math.floor(k))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# acceptance targets (claims file §2.4): (name, lower, upper)
TARGETS = [("total_p5_kb", 15.0, 35.0), ("total_p95_mb", 1.2, 2.7), ("share_below_300kb", 0.40, 1.0),
           ("hosts_median", 5.0, 9.0), ("objects_max", 150.0, 1e9)]


def stats(pages: list[Page]) -> dict:
    """The workload statistics the dissertation reports, and whether each target is met."""
    tot = [p.total_bytes for p in pages]
    st = {
        "pages": len(pages),
        "total_p5_kb": _pct(tot, 0.05) / 1000.0,
        "total_median_kb": _pct(tot, 0.5) / 1000.0,
        "total_p95_mb": _pct(tot, 0.95) / 1e6,
        "share_below_300kb": sum(t < 300_000 for t in tot) / len(tot),
        "hosts_median": _pct([p.n_hosts for p in pages], 0.5),
        "objects_median": _pct([len(p.objects) for p in pages], 0.5),
        "objects_max": float(max(len(p.objects) for p in pages)),
        "object_size_median_b": _pct([o.size for p in pages for o in p.objects], 0.5),
        "https_share": sum(o.tls for p in pages for o in p.objects) / sum(len(p.objects) for p in pages),
    }
    st["targets"] = {k: {"value": st[k], "band": [lo, hi], "ok": lo <= st[k] <= hi} for k, lo, hi in TARGETS}
    st["all_targets_met"] = all(v["ok"] for v in st["targets"].values())
    return st
