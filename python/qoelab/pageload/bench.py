"""Page loads per second of the flow-level driver, in this process (one core):
``python -m qoelab.pageload.bench [--sites N]``. The pages are the first N sites of the
Alexa-1000-like synthetic set; every one is loaded under the 384 scenarios of Table 3.1 with each of
the 7 policies of the dissertation (one ``pageload_batch`` call per page and policy)."""

from __future__ import annotations

import argparse
import json
import time


def run(sites: int = 20) -> dict:
    from qoelab import _core
    from qoelab.pageload import synth
    from qoelab.reproduce.socket_intents import POLICIES, scenarios
    pages = [p.core_tuple() for p in synth.generate(synth.SETS["alexa1000"], sites=sites)]
    ifs = [[(s["bw1_bytes"], s["rtt1_ms"] * 1_000_000, []), (s["bw2_bytes"], s["rtt2_ms"] * 1_000_000, [])]
           for s in scenarios()]
    per, total_n, total_t = {}, 0, 0.0
    for pol in POLICIES:
        t0 = time.perf_counter()
        for p in pages:
            _core.pageload_batch([p], [(0, f, pol, 1) for f in ifs])
        dt = time.perf_counter() - t0
        per[pol] = round(len(pages) * len(ifs) / dt)
        total_n += len(pages) * len(ifs)
        total_t += dt
    return {"pages": len(pages), "objects_mean": sum(len(p[0]) for p in pages) / len(pages),
            "loads": total_n, "wall_s": round(total_t, 2), "loads_per_s": round(total_n / total_t),
            "loads_per_s_by_policy": per}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sites", type=int, default=20)
    print(json.dumps(run(ap.parse_args().sites), indent=1))
