"""`qoelab reproduce socket-intents`: claim helpers on hand-made data, the grid's run specs, and one
small end-to-end reproduction (every claim P1-P21 gets a verdict; outputs written)."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from conftest import qoelab_cli
from qoelab.reproduce import socket_intents as SI
from qoelab.reproduce import socket_intents_claims as SC


def test_scenarios_are_table_3_1_in_binary_units():
    sc = SI.scenarios()
    assert len(sc) == 384 and [s["scenario"] for s in sc] == list(range(384))
    assert {s["bw1"] for s in sc} == set(SI.BW1) and {s["rtt2_ms"] for s in sc} == {20, 50, 100, 200}
    s0 = sc[0]
    assert s0["bw1_bytes"] == 64_000 and s0["bw2_bytes"] == 64_000          # kbit(500)
    assert sc[-1]["bw1_bytes"] == 50 * 1024 * 1024 // 8
    dec = SI.scenarios("decimal")
    assert dec[-1]["bw1_bytes"] == 6_250_000


def test_fractions_ks_spearman():
    f = SC.fractions([1.0, 1.0005, 2.0, 0.5])
    assert f == {"faster": 0.25, "slower": 0.25, "equal": 0.5, "n": 4}
    # a case without a result is in no fraction (it was counted as equal until 2026-11-30)
    assert SC.fractions([1.0, 1.0005, 2.0, 0.5, float("nan")]) == f
    assert SC.ks([1, 2, 3], [1, 2, 3]) == 0.0
    assert SC.ks([1, 2, 3], [10, 20, 30]) == 1.0
    x = np.arange(100.0)
    assert SC.spearman(x, x ** 3) == pytest.approx(1.0)
    assert SC.spearman(x, -x) == pytest.approx(-1.0)
    rho, lo, hi = SC.spearman_ci(x, x + np.random.default_rng(1).normal(0, 30, 100), reps=100)
    assert lo < rho < hi and lo > 0


def test_hand_cases_within_one_rtt():
    for c in SC.hand_cases():
        assert c["ok"], c


def test_items_cover_every_page_once():
    spec = SI.Spec(name="t", description="t", sets=(("alexa100", 5, 2), ("alexa1000", 3, 1)), rnd_seeds=2, pages_per_item=4)
    items = spec.items()
    got = [(it.set, it.first_page + k, sd) for it in items for k, sd in enumerate(it.pages)]
    assert got == [("alexa100", i, (i // 2, i % 2)) for i in range(10)] + [("alexa1000", i, (i, 0)) for i in range(3)]
    assert all(it.rnd_seeds == (spec.rnd_seeds if it.set == "alexa100" else 1) for it in items)
    assert len({it.run_id for it in items}) == len(items)


def test_tasks_load_the_pages_the_har_files_hold(tmp_path):
    """A task regenerates its pages in memory; they must be the pages of the HAR files the
    reproduction writes (the same importer, the same dependency tree, the same sizes)."""
    from qoelab.pageload import synth
    from qoelab.pageload.har import load_har
    spec = synth.SETS["alexa100"]
    pages = synth.generate(spec, sites=3, days=2)
    paths = synth.write_set(pages, str(tmp_path))
    for (site, day), path in zip([(s, d) for s in range(3) for d in range(2)], paths):
        assert synth.imported_page(spec, site, day) == load_har(path)


def test_small_reproduction_end_to_end(tmp_path):
    spec = SI.Spec(name="test", description="4 + 2 pages", sets=(("alexa100", 4, 1), ("alexa1000", 2, 1)),
                   rnd_seeds=2, pages_per_item=2, sensitivity=("reuse-rtt-1",))
    out = str(tmp_path / "si")
    meta = SI.reproduce(out, jobs=1, spec=spec)
    assert meta["failed"] == 0 and not meta.get("report_error")
    assert meta["runs"] == 6 * 384 * 8 + 4 * 384   # 8 policies, one more MPTCP rnd seed on the primary set
    claims = json.load(open(os.path.join(out, "claims.json")))
    assert [c["id"] for c in claims] == [f"P{i}" for i in range(1, 22)]
    assert all(c["verdict"] in ("SUPPORTED", "NOT SUPPORTED", "INCONCLUSIVE", "OUT OF SCOPE") for c in claims)
    runs = pd.read_parquet(os.path.join(out, "runs.parquet"))
    assert (runs["plt_s"] > 0).all() and set(runs["policy"]) == set(SI.POLICIES + SI.ABLATION)
    # deterministic policies do not depend on the seed; the Interface 1 baseline is the same in every
    # run of a case
    assert runs.groupby(["set", "page", "scenario", "policy"], observed=True).size().max() == 2
    for f in ("report.html", "pages.parquet", "scenarios.parquet", "workload.json", "meta.json",
              "figures/fig3_4a.png", "figures/fig3_7a.png"):
        assert os.path.exists(os.path.join(out, f)), f
    assert len(os.listdir(os.path.join(out, "hars", "alexa100"))) == 4
    # the grid ran on the sweep engine: its store moved into the output and can be queried
    assert meta["sweep"]["ran"] == 3 and meta["sweep"]["failed"] == 0
    import qoelab
    n = qoelab.open_store(os.path.join(out, "sweep")).sql("SELECT count(*) AS n FROM tables.loads")["n"][0]
    assert n == len(runs)
    # the sensitivity variant ran on the primary set into its own store; one RTT per reuse never speeds
    # Interface 1 up
    sens = {r["variant"]: r for r in meta["sensitivity"]}
    assert set(sens) == {"base", "reuse-rtt-1"} and sens["base"]["cases"] == sens["reuse-rtt-1"]["cases"] == 4 * 384
    assert sens["reuse-rtt-1"]["if1_median_s"] >= sens["base"]["if1_median_s"]
    assert os.path.isdir(os.path.join(out, "sweep-sensitivity"))
    # run again into the same directory: every task is found in the store and not run again, same loads
    meta2 = SI.reproduce(out, jobs=1, spec=spec)
    assert meta2["sweep"]["ran"] == 0 and meta2["sweep"]["skipped"] == 3
    assert meta2["perf"]["tasks_resumed"] == 3 and meta2["perf"]["page_loads_run"] == 0
    p21 = {c["id"]: c for c in meta2["claims"]}["P21"]["ours"]
    assert "3 tasks resumed from the store" in p21
    pd.testing.assert_frame_equal(pd.read_parquet(os.path.join(out, "runs.parquet")), runs)
    # P17/P18 ran: the packet-level loads and their HARs are in the output, and both have a verdict
    by_id = {c["id"]: c for c in claims}
    assert by_id["P17"]["grade"] != "NOT RUN" and by_id["P18"]["grade"] != "NOT RUN"
    cross = pd.read_parquet(os.path.join(out, "crossmodel.parquet"))
    assert set(cross["check"]) == {"P17", "P18"}
    assert (cross["packet_plt_s"] > 0).all() and (cross["flow_plt_s"] > 0).all()
    assert (cross["check"] == "P18").sum() == 2 * 4
    assert len(os.listdir(os.path.join(out, "hars", "packet", "50ms-6Mbit"))) == 4
    # a second run replaces its own output; a foreign non-empty directory is refused (exit 2)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x.txt").write_text("keep")
    r = qoelab_cli("reproduce", "socket-intents", "--quick", "--out", str(foreign))
    assert r.returncode == 2 and "refusing" in r.stderr
