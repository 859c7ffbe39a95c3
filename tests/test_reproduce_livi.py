"""`qoelab reproduce livi`: grid construction, metric extraction, claim verdicts, report, CLI.

Runs with a fake runner (synthetic summaries) except one end-to-end run of the real simulator.
No dependence on ../shared.
"""

import json
import math
import os
import random

import pandas as pd
import pytest

import qoelab
from qoelab.errors import InputError
from qoelab.reproduce import livi
from qoelab.reproduce.livi import (INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Run, buffer_packets, evaluate_claims,
                                   extract, full_grid, quick_grid, scenario)

# ----------------------------------------------------------------------------------------------
# grid


def test_bdp_rule_values():
    # 10 Mbit/s x 80 ms = 66.7 packets of 1500 B: the paper's "BDP = 67 packets", "BS = 17 packets" at 25%
    assert [buffer_packets(k) for k in (6, 1, 0.5, 0.25)] == [400, 67, 33, 17]
    assert buffer_packets(0.001) == 1                                  # at least one packet
    assert buffer_packets(1, ref_bw_bps=50_000_000, rtd_s=0.020) == 83  # the 20 ms rule of the testbed


def test_full_grid_counts():
    runs = full_grid().runs()
    ids = [r.run_id for r in runs]
    assert len(ids) == len(set(ids))
    static = [r for r in runs if r.profile == "static"]
    var = [r for r in runs if r.profile != "static"]
    # 4 algorithms x (DT 1-3, CoDel 1-3, ARED 1 = 7 AQM/client pairs) x 4 buffers x 9 bandwidths
    assert len(static) == 4 * 7 * 4 * 9 == 1008
    # variable: profile 2 x 4 algorithms x 4 buffers x (3 one-client pairs x 2 reps + 4 multi-client pairs x 4 reps)
    assert len(var) == 4 * 4 * (3 * 2 + 4 * 4) == 352
    assert {r.profile for r in var} == {"p2"}
    assert {r.algo for r in runs} == {"bba2", "bba3", "classic1", "classic2"}
    assert {r.buffer_pkts for r in runs} == {400, 67, 33, 17}
    assert {r.clients for r in runs if r.aqm == "ared"} == {1}
    assert {r.clients for r in runs if r.aqm == "codel"} == {1, 2, 3}
    assert sorted({r.fair_share_bps for r in static}) == list(range(600_000, 3_000_001, 300_000))


def test_quick_grid_is_a_small_subset():
    q = quick_grid().runs()
    full = {r.run_id for r in full_grid().runs()}
    assert 30 <= len(q) <= 64
    assert {r.run_id for r in q} <= full
    assert {r.aqm for r in q} == {"pfifo", "codel"}
    assert {r.clients for r in q} == {1, 2}


def test_seeds_depend_on_the_run_only():
    a = Run("bba2", "pfifo", 6.0, 2, "static", 1_200_000, 0)
    b = Run("bba2", "pfifo", 6.0, 2, "static", 1_200_000, 1)
    assert a.seed == Run("bba2", "pfifo", 6.0, 2, "static", 1_200_000, 0).seed
    assert a.seed != b.seed and a.starts_s() != b.starts_s()
    assert all(1.0 <= s < 1.5 for s in a.starts_s())


def test_scenario_dicts():
    s = scenario(Run("classic2", "codel", 0.25, 3, "static", 900_000))
    t = s["topology"]
    assert t["rate"] == "2700000bps" and t["buffer"] == "17pkts" and t["rtt"] == "80ms"
    assert t["aqm"] == "codel" and t["aqm_params"] == {"interval": "80ms"}
    assert s["scenario"]["duration"] == "700s" and s["output"]["loss_phases"] is True
    assert [c["abr"] for c in s["client"]] == ["classic2"] * 3
    assert len({c["name"] for c in s["client"]}) == 3
    v = scenario(Run("bba3", "ared", 1.0, 2, "p2", 0, 3))["topology"]
    assert "rate" not in v
    assert v["rate_profile"][0] == ["0s", "8000000bps"] and v["rate_profile"][4] == ["400s", "1200000bps"]
    assert v["buffer"] == "67pkts" and "aqm_params" not in v


def test_profile_means():
    assert livi.profile_mean_bps("p2") == pytest.approx((4 + 2.8 + 1.5 + 1 + 0.6 + 4) / 6 * 1e6)
    assert livi.profile_mean_bps("p1") == pytest.approx((4 + 1 + 4 + 0.6 + 4) / 5 * 1e6)
    r = Run("bba2", "pfifo", 1.0, 2, "p1", 0)
    assert livi.capacity_integral_bits(r, 100, 140) == pytest.approx((20 * 4e6 + 20 * 1e6) * 2)


# ----------------------------------------------------------------------------------------------
# extraction


def _summary(n=2, qlev=(50.0, 25.0), loss=({"B": 1, "T": 2, "C": 3},) * 2):
    return {
        "clients": [{"name": f"c{i}", "abr": "bba2", "flow": f"c{i}", "segments": 300, "avg_bitrate_bps": 1.0e6 + i,
                     "quality_level_pct": qlev[i], "instability_pct": 10.0 * (i + 1),
                     "rebuffer_ratio_with_startup": 0.01, "stall_count": i, "rebuffer_s": float(i),
                     "startup_s": 1.0, "srtt_mean_ms": 160.0, "goodput_bps": 9e5, "loss_phases": loss[i]}
                    for i in range(n)],
        "video": {"clients": n, "quality_unfairness_pct": abs(qlev[0] - qlev[-1]), "jfi_goodput": 0.99},
        "links": [{"name": "bottleneck", "utilization": 0.5, "queue_delay_ms": {"mean": 80.0},
                   "dropped_packets": 12}],
    }


def test_extract_metrics():
    run = Run("bba2", "pfifo", 6.0, 2, "static", 1_000_000)
    seg = pd.DataFrame({"client": ["c0", "c1"], "t_request_s": [1.0, 1.2], "t_last_byte_s": [50.0, 101.0],
                        "bytes": [10_000_000, 10_000_000]})
    rec, crec = extract(run, _summary(), seg)
    assert rec["arb"] == pytest.approx(1.0, abs=1e-5)
    assert rec["ins_pct"] == pytest.approx(15.0)
    assert rec["rbr_pct"] == pytest.approx(1.0)
    assert rec["rtti_pct"] == pytest.approx(200.0)     # 160 ms over the 80 ms RTD
    assert rec["qu_pct"] == 25.0
    assert (rec["loss_B"], rec["loss_T"], rec["loss_C"]) == (2, 4, 6)
    assert rec["lu"] == pytest.approx(20e6 * 8 / (2e6 * 100.0))
    assert rec["stall_count"] == 1 and rec["drops"] == 12
    assert len(crec) == 2 and crec[1]["ins_pct"] == 20.0


# ----------------------------------------------------------------------------------------------
# claims on synthetic run tables


def _df(rows):
    base = {"error": None, "rep": 0, "stall_count": 0, "rbr_pct": 0.5, "ins_pct": 10.0, "arb": 0.8, "lu": 0.88,
            "rtti_pct": 110.0, "qu_pct": 0.0, "loss_B": 0, "loss_T": 0, "loss_C": 0, "run_id": "x"}
    return pd.DataFrame([{**base, **r} for r in rows])


def _grid_rows(fn, clients=(1, 2), buffers=(6.0, 1.0, 0.5, 0.25), bws=(600_000, 1_200_000, 1_800_000, 2_400_000)):
    rows = []
    rng = random.Random(7)
    for algo in livi.ALGORITHMS:
        for aqm in ("pfifo", "codel"):
            for n in clients:
                for k in buffers:
                    for bw in bws:
                        r = {"algo": algo, "aqm": aqm, "clients": n, "buffer_bdp": k, "profile": "static",
                             "fair_share_bps": bw}
                        r.update(fn(r, rng))
                        rows.append(r)
    return _df(rows)


def _paper_like(r, rng):
    """Droptail: losses in B/T, big RTT at 6 BDP, QU grows with the buffer, BBAs worse; CoDel: C losses, fair."""
    dt = r["aqm"] == "pfifo"
    bba = r["algo"].startswith("bba")
    out = {"loss_B": 10 if dt else 1, "loss_T": 8 if dt else 2, "loss_C": 5 if dt else 30,
           "rtti_pct": (900.0 if r["buffer_bdp"] == 6 else 150.0) + rng.random() * 50 if dt else 112 + rng.random() * 5}
    if r["clients"] >= 2:
        out["qu_pct"] = (r["buffer_bdp"] * (6 if bba else 2.5) + 2 + rng.random() * 3) if dt else 1 + rng.random()
    out["ins_pct"] = 30.0 if r["algo"] == "bba2" else 8.0
    out["rbr_pct"] = 5.0 if (dt and r["algo"] == "classic2" and r["buffer_bdp"] == 6) else 0.1
    return out


def _by_id(claims):
    return {c["id"]: c for c in claims}


def test_claims_supported_on_paper_like_data():
    c = _by_id(evaluate_claims(_grid_rows(_paper_like)))
    for k in ("C1", "C2a", "C2b", "C3", "C4", "X1", "X2", "X3"):
        assert c[k]["verdict"] == SUPPORTED, (k, c[k])
        assert c[k]["paper"] and c[k]["rule"] and c[k]["ours"]


def test_claims_not_supported_on_opposite_data():
    def opposite(r, rng):
        dt = r["aqm"] == "pfifo"
        bba = r["algo"].startswith("bba")
        out = {"loss_B": 1 if dt else 10, "loss_T": 2 if dt else 8, "loss_C": 30 if dt else 5,
               "rtti_pct": 110 + rng.random() if dt else 300 + rng.random(), "stall_count": 2,
               "ins_pct": 5.0 if r["algo"] == "bba2" else 8.0, "rbr_pct": 0.1 if dt else 0.5}
        if r["clients"] >= 2:
            out["qu_pct"] = ((7 - r["buffer_bdp"]) * (1 if bba else 3) + rng.random()) if dt else 30 + rng.random()
        return out
    c = _by_id(evaluate_claims(_grid_rows(opposite)))
    for k in ("C1", "C2a", "C2b", "C3", "C4", "X1", "X2", "X3"):
        assert c[k]["verdict"] == NOT_SUPPORTED, (k, c[k])


def test_claims_inconclusive_on_noise_and_missing_data():
    def noise(r, rng):
        out = {"loss_B": 0, "loss_T": 0, "loss_C": 0, "rtti_pct": 150 + rng.gauss(0, 30)}
        if r["clients"] >= 2:
            out["qu_pct"] = 10 + rng.gauss(0, 5)
        return out
    c = _by_id(evaluate_claims(_grid_rows(noise)))
    assert c["C1"]["verdict"] == INCONCLUSIVE           # too few drops
    # QU does not depend on the buffer or the algorithm, only on noise: the differences are inside
    # their confidence intervals, so neither "supported" nor "not supported" may be claimed
    assert c["C2a"]["verdict"] == INCONCLUSIVE, c["C2a"]
    assert c["C2b"]["verdict"] == INCONCLUSIVE, c["C2b"]
    # no multi-client runs at all: the QU claims cannot be evaluated
    one = _grid_rows(_paper_like, clients=(1,))
    c = _by_id(evaluate_claims(one))
    assert c["C2a"]["verdict"] == c["C2b"]["verdict"] == c["C3"]["verdict"] == INCONCLUSIVE
    assert c["C4"]["verdict"] == SUPPORTED
    # failed runs are ignored
    bad = _grid_rows(_paper_like)
    bad.loc[bad.index[:5], "error"] = "RuntimeError: boom"
    assert _by_id(evaluate_claims(bad))["C4"]["verdict"] == SUPPORTED


def test_mean_ci():
    m, h, n = livi.mean_ci([1.0, 2.0, 3.0])
    assert (m, n) == (2.0, 3) and h == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    assert math.isnan(livi.mean_ci([5.0])[1]) and livi.mean_ci([])[2] == 0


def test_t95_is_students_quantile_between_the_table_entries():
    """t(0.975; dof) to 3 decimals (published values); between the table's entries a dof took the
    next larger entry's value (2.060 at 21): intervals up to 1% too narrow (found by a probe)."""
    from qoelab.reproduce.livi_params import t95
    for dof, t in ((1, 12.706), (20, 2.086), (21, 2.080), (22, 2.074), (35, 2.030), (50, 2.009), (100, 1.984),
                   (1000, 1.962)):
        assert t95(dof) == t, (dof, t95(dof))
    assert math.isnan(t95(0))


# ----------------------------------------------------------------------------------------------
# the whole pipeline with a fake runner: output directory, report


class _FakeResult:
    def __init__(self, summary, seg):
        self.summary, self._seg = summary, seg

    def table(self, name):
        if name != "segments":
            raise KeyError(name)
        return self._seg


def fake_runner(scn):
    """A stand-in simulator: paper-like numbers as a function of the scenario dict."""
    t = scn["topology"]
    n = len(scn["client"])
    dt = t["aqm"] == "pfifo"
    big = int(t["buffer"][:-4]) >= 67
    algo = scn["client"][0]["abr"]
    rng = random.Random(scn["scenario"]["seed"])
    q = [40.0 + (rng.random() * (30 if (dt and big and algo.startswith("bba")) else 10 if dt else 2))
         for _ in range(n)]
    loss = {"B": 8, "T": 6, "C": 4} if dt else {"B": 1, "T": 1, "C": 20}
    s = _summary(n, tuple(q), (loss,) * n)
    s["video"]["quality_unfairness_pct"] = max(q) - min(q)
    for c in s["clients"]:
        c["srtt_mean_ms"] = (80 + (int(t["buffer"][:-4]) * 12000 / 2e6 * 1000 if dt else 8)) * (1 + rng.random() / 10)
        c["stall_count"] = 0
    seg = pd.DataFrame({"client": ["c0"], "t_request_s": [1.0], "t_last_byte_s": [400.0], "bytes": [50_000_000]})
    return _FakeResult(s, seg)


def _tiny_spec():
    """Two algorithms, droptail 6 BDP, 2 clients, one bandwidth: a handful of runs and figures."""
    return livi.GridSpec(name="tiny", algos=("bba2", "classic2"), aqm_clients={"pfifo": (2,), "codel": (2,)},
                         buffers=(6.0,), fair_shares=(1_200_000,), profiles=(), static_reps={2: 1},
                         variable_reps={})


@pytest.fixture(scope="module")
def quick_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "livi"
    meta = livi.reproduce(str(out), quick=True, runner=fake_runner)
    return out, meta


def test_reproduce_with_fake_runner_writes_report(quick_out):
    out, meta = quick_out
    assert meta["failed"] == 0 and meta["runs"] == len(quick_grid().runs())
    files = set(os.listdir(out))
    assert {"report.html", "runs.parquet", "clients.parquet", "claims.json", "meta.json", "figures"} <= files
    html = (out / "report.html").read_text()
    assert "<h2>Claims</h2>" in html and html.count("data:image/png;base64,") >= 6
    for fam in ("ARB", "LU", "RTTi", "Loss phases", "RBR", "QU", "INS"):
        assert f"<b>{fam}</b>" in html
    claims = json.loads((out / "claims.json").read_text())
    assert {c["id"] for c in claims} >= {"C1", "C2a", "C2b", "C3", "C4"}
    for c in claims:
        assert c["verdict"] in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)
        assert f"<b>{c['verdict']}</b>" in html
    assert _by_id(claims)["C1"]["verdict"] == SUPPORTED
    assert _by_id(claims)["C4"]["verdict"] == SUPPORTED
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == meta["runs"] and runs["error"].isna().all()
    assert len(os.listdir(out / "figures")) >= 6
    assert json.loads((out / "meta.json").read_text())["reproduction"] == "livi"


def test_second_run_replaces_atomically(tmp_path):
    out = tmp_path / "livi"
    livi.reproduce(str(out), runner=fake_runner, spec=_tiny_spec())
    (out / "marker").write_text("old")
    meta = livi.reproduce(str(out), runner=fake_runner, spec=_tiny_spec())
    assert meta["runs"] == 4 and not (out / "marker").exists()
    assert meta["runs_executed"] == 0 and meta["runs_resumed"] == 4     # the sweep store was reused
    assert sorted(os.listdir(tmp_path)) == ["livi"]          # no temporary or old directories left


def test_failed_runs_are_reported(tmp_path):
    def broken(scn):
        if scn["topology"]["aqm"] == "codel":
            raise RuntimeError("simulated failure\nsecond line")
        return fake_runner(scn)
    meta = livi.reproduce(str(tmp_path / "o"), runner=broken, spec=_tiny_spec())
    assert meta["failed"] == 2 and meta["failures"][0][1] == "RuntimeError: simulated failure"
    assert "Failed runs" in (tmp_path / "o" / "report.html").read_text()


def test_report_helpers_escape_and_write_figures(tmp_path):
    import base64
    from qoelab.reproduce import common
    png = base64.b64encode(b"\x89PNG fake").decode()
    parts = common.figures_html(str(tmp_path / "figures"), [("a", png, "Fig. <1>"), ("b", None, "Fig. 2")])
    assert (tmp_path / "figures" / "a.png").read_bytes() == b"\x89PNG fake"
    assert not (tmp_path / "figures" / "b.png").exists()
    assert "Fig. &lt;1&gt;" in parts[0] and parts[1] == "<p>Fig. 2: not run.</p>"
    assert common.figures_html(str(tmp_path / "figures"), [("b", None, "Fig. 2")], missing="") == []
    assert common.failures_html([]) == ""
    f = common.failures_html([("r1", "boom <x>"), "r2: lost"] + [("r", "e")] * 20, "Failed items")
    assert f.startswith("<p class='bad'>Failed items: r1: boom &lt;x&gt;; r2: lost") and f.count("; ") == 9
    t = common.claims_table_html([{"id": "C1", "verdict": NOT_SUPPORTED, "paper": "a & b"}], "<p>intro</p>")
    assert "<h2>Claims</h2><p>intro</p><table>" in t and "a &amp; b" in t and "class='bad'" in t
    assert common.write_html(str(tmp_path), ["x", "y</body></html>"], {}) == str(tmp_path / "report.html")
    text = (tmp_path / "report.html").read_text()
    # the provenance (command, versions, date) at the foot, inside the body
    assert text.startswith("x\ny<footer><p>Made by <code>") and text.endswith("</footer></body></html>")
    assert f"with qoelab {qoelab.__version__} (core " in text and " UTC; " in text


def test_refuses_foreign_output_dir(tmp_path):
    d = tmp_path / "precious"
    d.mkdir()
    (d / "thesis.tex").write_text("x")
    with pytest.raises(InputError):
        livi.reproduce(str(d), quick=True, runner=fake_runner)
    assert (d / "thesis.tex").exists()


# ----------------------------------------------------------------------------------------------
# CLI


def _cli(argv):
    import argparse

    from qoelab.cli import _Parser
    from qoelab.reproduce import cli
    p = _Parser(prog="qoelab")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    cli.add_parser(sub)
    return p.parse_args(argv)


def test_cli_arguments():
    a = _cli(["reproduce", "livi", "--quick", "--out", "x", "--jobs", "2"])
    assert (a.quick, a.out, a.jobs) == (True, "x", 2)
    a = _cli(["reproduce", "livi"])
    assert (a.quick, a.out, a.jobs) == (False, "results/livi", None)
    for bad in (["reproduce", "livi", "--jobs", "0"], ["reproduce", "livi", "--jobs", "two"],
                ["reproduce", "nope"], ["reproduce", "livi", "--bogus"]):
        with pytest.raises(SystemExit) as e:
            _cli(bad)
        assert e.value.code == 2


def test_cli_bad_out_dir_is_one_line_exit_2(tmp_path, capsys):
    from qoelab.reproduce import cli
    f = tmp_path / "file"
    f.write_text("x")
    assert cli.main(["reproduce", "livi", "--quick", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a directory" in err


# ----------------------------------------------------------------------------------------------
# end to end (real simulator)


def test_one_real_run_extracts_every_metric():
    res = livi.execute(Run("classic2", "codel", 0.25, 2, "static", 1_200_000))
    rec = res["run"]
    assert rec["error"] is None, rec["error"]
    for k in ("arb", "ins_pct", "rbr_pct", "rtti_pct", "qu_pct", "lu"):
        assert rec[k] == rec[k], k          # not NaN
    assert 0.2 < rec["arb"] < 1.2 and 0.3 < rec["lu"] <= 1.05 and rec["rtti_pct"] >= 99
    assert len(res["clients"]) == 2


def test_lu_from_flow_samples_when_there_is_no_segments_table():
    run = Run("bba2", "pfifo", 1.0, 1, "static", 1_000_000)
    info = pd.DataFrame({"flow": [0, 1], "kind": ["http_req", "video"]})
    # 0.1 s samples; the video flow receives 12_500 B per sample (1 Mbit/s) from 1.0 s to 11.0 s, then stops
    t = [round(0.1 * i, 1) for i in range(1, 201)]
    got = [0 if x <= 1.0 else min(12_500 * round((x - 1.0) / 0.1), 12_500 * 100) for x in t]
    flows = pd.DataFrame({"time_s": t * 2, "flow": [1] * 200 + [0] * 200, "bytes_received": got + [7] * 200})
    lu = livi.link_utilization(run, None, flows, info)
    assert lu == pytest.approx(1.0, rel=1e-6)
    assert math.isnan(livi.link_utilization(run, None, None, None))


def test_report_failure_keeps_the_data(tmp_path, monkeypatch):
    from qoelab.reproduce import report

    def boom(*a, **k):
        raise ValueError("no plotting today")
    monkeypatch.setattr(report, "write_report", boom)
    meta = livi.reproduce(str(tmp_path / "o"), runner=fake_runner, spec=_tiny_spec())
    assert meta["report_error"] == "ValueError: no plotting today"
    assert len(pd.read_parquet(tmp_path / "o" / "runs.parquet")) == 4
    assert "report generation failed" in (tmp_path / "o" / "report.html").read_text()


def test_rewrite_report_from_the_store(tmp_path):
    out = tmp_path / "o"
    livi.reproduce(str(out), runner=fake_runner, spec=_tiny_spec())
    (out / "report.html").unlink()
    meta = livi.rewrite_report(str(out))
    assert (out / "report.html").exists() and meta["runs"] == 4
    assert json.loads((out / "claims.json").read_text()) == meta["claims"]
    with pytest.raises(InputError):
        livi.rewrite_report(str(tmp_path))


def test_interrupted_reproduction_resumes_from_its_sweep_store(tmp_path):
    """A reproduction killed after some runs leaves DIR/sweep only; the next one takes it up."""
    from qoelab.sweep import runner as srunner
    out = tmp_path / "livi"
    sw = livi.grid_sweep(_tiny_spec())
    srunner.run(sw, str(out / "sweep"), force=True, sim=fake_runner, quiet=True, max_runs=3)
    assert sorted(os.listdir(out)) == ["sweep"]
    meta = livi.reproduce(str(out), runner=fake_runner, spec=_tiny_spec())
    assert meta["runs_executed"] == 1 and meta["runs_resumed"] == 3 and meta["runs"] == 4
    assert {"sweep", "meta.json", "runs.parquet"} <= set(os.listdir(out))
