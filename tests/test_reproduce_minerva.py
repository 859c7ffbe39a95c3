"""`qoelab reproduce minerva`: metric helpers on hand-made frames, the fluid anchor of the claims file
(§1.3), the corpus, the scenario wiring, and one end-to-end quick reproduction (every claim M1-M22
has a verdict)."""

import json
import math
import os

import pandas as pd
import pytest

from qoelab.errors import InputError
from qoelab.reproduce import minerva as M
from qoelab.reproduce import minerva_claims as MC
from qoelab.reproduce import minerva_corpus as corpus
from qoelab.reproduce.minerva import (INCONCLUSIVE, NOT_SUPPORTED, OUT_OF_SCOPE, SUPPORTED, Run, chunk_qoe,
                                      client_qoe, fixed_rate_opt, fluid_iteration, fluid_optimum, gap_closure,
                                      group_share, mean_abs_diff)

# ----------------------------------------------------------------------------------------------
# metric helpers


def test_chunk_qoe_is_eq1():
    # 50; 60 - 2.5 x 10; 60 - 25 x 1 (1 s stall, no switch)
    assert chunk_qoe([50, 60, 60], [0, 0, 1.0]) == pytest.approx([50.0, 35.0, 35.0])
    assert chunk_qoe([], []) == []


def _seg(q, stall, t, abandoned=None):
    n = len(q)
    return pd.DataFrame({"segment": range(n), "quality": q, "stall_s": stall, "t_request_s": t,
                         "abandoned": abandoned or [0] * n, "bitrate_bps": [1e6] * n})


def test_client_qoe_window_and_abandoned():
    s = _seg([40, 50, 50, 90], [0, 0, 0.5, 0], [1.0, 5.0, 9.0, 250.0], [0, 0, 0, 0])
    m = client_qoe(s, 200.0)        # the chunk requested 249 s after the first is outside the window
    assert m["chunks"] == 3
    assert m["qoe"] == pytest.approx((40 + (50 - 25) + (50 - 12.5)) / 3)
    assert m["rebuf_s"] == pytest.approx(0.5) and m["stalls"] == 1
    assert m["quality"] == pytest.approx(140 / 3)
    s2 = _seg([40, 99, 50], [0, 0, 0], [0.0, 4.0, 8.0], [0, 1, 0])
    assert client_qoe(s2)["chunks"] == 2        # the abandoned chunk does not count
    assert math.isnan(client_qoe(s2.iloc[:0])["qoe"])


def test_gap_closure():
    assert gap_closure(60, 50, 70) == pytest.approx(0.5)
    assert gap_closure(75, 50, 70) == pytest.approx(1.25)     # dynamic beats fixed-rate: allowed
    assert math.isnan(gap_closure(60, 50, 51))                # OPT - Cubic < 2


def test_fixed_rate_opt_bisection():
    # linear curves q = 10 r and q = 20 r: equal level L needs L/10 + L/20 = 3 -> L = 20
    a = [(r / 10, r) for r in range(0, 101)]
    b = [(r / 10, 2 * r) for r in range(0, 101)]
    lvl, rates = fixed_rate_opt([a, b], 3.0)
    assert lvl == pytest.approx(20.0, abs=1e-6)
    assert rates == pytest.approx([2.0, 1.0], abs=1e-6)
    # non-monotone curve: the running maximum is used
    c = [(1.0, 10.0), (2.0, 5.0), (3.0, 30.0)]
    assert fixed_rate_opt([c], 2.0)[0] == pytest.approx(10.0)


def test_fluid_anchor_of_the_claims_file():
    """§1.3: capacity 5 Mbit/s, curves A and B: equal split 60.85, optimum 75.02, Eq. 3 from the
    equal split reaches r_A = 4.038 and min U 74.64 after 10 steps (>= 74.6)."""
    it = fluid_iteration([corpus._A, corpus._B], 5.0, 10)
    assert it[0]["min"] == pytest.approx(60.85, abs=0.01)
    assert it[10]["min"] >= 74.6
    assert it[10]["rates"][0] == pytest.approx(4.038, abs=0.01)
    assert [x["min"] for x in it] == sorted(x["min"] for x in it)       # monotone approach
    assert fluid_optimum([corpus._A, corpus._B], 5.0) == pytest.approx(75.02, abs=0.02)
    assert fluid_optimum([corpus._A, corpus._B], 3.0) == pytest.approx(60.33, abs=0.02)


def test_group_share_and_abs_diff():
    assert group_share({"m0": 3.0, "c0": 1.0}, ["m0"]) == pytest.approx(0.75)
    assert math.isnan(group_share({}, ["m0"]))
    w = pd.DataFrame({"time_s": [0.0, 0.0, 1.5, 2.5], "client": ["a", "b", "a", "b"],
                      "utility": [10.0, 20.0, 14.0, 15.0]})
    # grid 0, 1, 2, 3: |10-20|, |10-20|, |14-20|, |14-15|
    assert mean_abs_diff(w, "a", "b", 0.0, 3.0) == pytest.approx((10 + 10 + 6 + 1) / 4)


def test_value_check_on_a_hand_made_value_function():
    bufs = [0.0, 4.0, 20.0]
    vals = [[[10.0, 20.0, 30.0]] * 3] * 3          # 3 rungs x 3 rates x 3 buffers
    vf = {"values": vals, "rates_bps": [0.8e6, 1.0e6, 1.2e6], "buffers_s": bufs}
    c = MC.value_check({"x": vf})
    assert c["viol_rate"] == 0 and c["viol_buffer"] == 0
    assert c["ratios"] == pytest.approx([1.0] * 3)


def test_corpus_curves_and_normalization(tmp_path):
    for v in corpus.VIDEOS:
        q = corpus.vmaf_curve(v)
        assert len(q) == len(corpus.LADDER_KBPS) and q == sorted(q)
    assert corpus.vmaf_curve("A")[-1] == pytest.approx(85.14, abs=0.05)     # 5.8 Mbit/s unscaled
    from qoelab import minerva as mv
    files = corpus.normalization_files(str(tmp_path), M.ALPHA, n_segments=5)
    for m in ("vmaf", "psnr"):
        d = mv.load_normalization(files[m], "x")
        assert d["format"] == "qoelab.normalization" and d["metric"] == m and d["alpha"] == M.ALPHA
        assert d["videos"] == list(corpus.VIDEOS) and d["popularity"] == pytest.approx([1 / 8] * 8)
        assert d["mean_rate_bps"] == sorted(d["mean_rate_bps"]) and d["mean_rate_bps"][-1] <= 2.35e6 + 1


def test_scenarios_are_paired_and_wired():
    a = Run("bench", "cubic", 4.1, ("A", "B", "V3", "V4"))
    b = Run("bench", "minerva", 4.1, ("A", "B", "V3", "V4"))
    assert a.seed == b.seed and a.run_id != b.run_id
    sa, sb = M.scenario(a), M.scenario(b)
    assert [c["start"] for c in sa["client"]] == [c["start"] for c in sb["client"]]
    assert all(c["cc"] == "cubic" for c in sa["client"]) and "provider" not in sa
    p = sb["provider"][0]
    assert p["controller"] == "minerva" and p["alpha"] == M.ALPHA and p["normalization"] == "file"
    assert os.path.isabs(p["normalization_file"]) and p["normalization_file"].endswith("norm-vmaf.json")
    assert all(c["cc"] == "wcubic" for c in sb["client"])
    x = M.scenario(Run("xt", "mixed", 8.2, ("A", "B", "V3", "V4")))
    assert sorted(c["cc"] for c in x["client"]) == ["cubic"] * 4 + ["wcubic"] * 4
    assert x["provider"][0]["clients"] == ["m0", "m1", "m2", "m3"]
    bd = M.scenario(Run("bound", "minerva", 2.0, ("A", "B"), mu=2))["provider"][0]
    assert (bd["w_min"], bd["w_max"]) == (0.5, 2.0)
    pv = M.scenario(Run("prov", "minerva", 4.1, ("A", "B", "V3", "V4"), videos2=("V5", "V6", "V7", "V8")))
    assert [p["metric"] for p in pv["provider"]] == ["vmaf", "psnr"]
    assert pv["provider"][1]["normalization_file"].endswith("norm-psnr.json")
    raw = M.scenario(Run("prov", "minerva_raw", 4.1, ("A", "B", "V3", "V4"), videos2=("V5", "V6", "V7", "V8")))
    assert all(p["normalization"] == "none" and "normalization_file" not in p for p in raw["provider"])
    dt = M.scenario(Run("bench", "bbr", 4.1, ("A", "B", "V3", "V4"), aqm="dt"))
    assert dt["topology"]["aqm"] == "pfifo" and dt["client"][0]["cc"] == "bbr"


# ----------------------------------------------------------------------------------------------
# end to end


@pytest.mark.parametrize("mode", ["hd", "synthetic"])
def test_quick_reproduction(tmp_path, mode):
    if mode == "hd" and not _hd_ready():
        pytest.skip("the hd corpus is not generated (qoelab video corpus regenerate --set hd)")
    out = tmp_path / "mn"
    meta = M.reproduce(str(out), quick=True, jobs=2, corpus_mode=mode)
    assert meta["failed"] == 0 and not meta.get("report_error")
    assert meta["corpus"] == mode and meta["videos"] == list(corpus.pool(mode))
    claims = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in claims] == [f"M{i}" for i in range(1, 23)]
    assert all(c["verdict"] in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, OUT_OF_SCOPE) for c in claims)
    assert all(c["ours"] for c in claims)
    assert {c["id"]: c["verdict"] for c in claims}["M14"] == OUT_OF_SCOPE
    # nothing failed to evaluate
    assert not [c for c in claims if c["ours"].startswith("could not evaluate")]
    html = (out / "report.html").read_text()
    assert "M22" in html and "data:image/png;base64" in html
    df = pd.read_parquet(out / "runs.parquet")
    assert len(df) == meta["runs"] and df["error"].isna().all()
    assert set(df["exp"]) == {"bench", "dyn", "pool", "xt", "web", "bound", "conv", "join", "prov"}
    odf = pd.read_parquet(out / "opt.parquet")
    assert meta["opt_runs"] == meta["opt_cells"] * M.OPT_GRID
    assert odf.groupby(["rate_mbps", "videos"]).ngroups == meta["opt_cells"]
    assert (out / "norm-vmaf.json").exists() and (out / "norm-psnr.json").exists()
    # a second run replaces a previous minerva reproduction; another directory is refused
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("keep")
    with pytest.raises(InputError):
        M.reproduce(str(other), quick=True, corpus_mode=mode)
    assert os.path.exists(other / "x")


def test_cli_registers_minerva():
    from qoelab.reproduce import REPRODUCTIONS, cli
    assert REPRODUCTIONS["minerva"] == "qoelab.reproduce.minerva"
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "minerva", "--jobs", "0"])
    assert e.value.code == 2


# ----------------------------------------------------------------------------------------------
# --corpus hd: the generated genre corpus at the paper's link rates

def _hd_ready():
    from qoelab.content import corpus as cc
    d = cc.corpus_dir("hd")
    return all(os.path.isfile(os.path.join(d, f"{c}.json")) for c in cc.HD_CLIPS)


need_hd = pytest.mark.skipif(not _hd_ready(), reason="the hd corpus is not generated (qoelab video corpus regenerate --set hd)")


def test_hd_grid_uses_the_papers_rates_and_the_hd_pool():
    from dataclasses import replace
    sp = replace(M.full_spec(), corpus="hd")
    runs = sp.runs()
    rates = {r.exp: set() for r in runs}
    for r in runs:
        rates[r.exp].add(r.rate_mbps)
        assert r.corpus == "hd" and r.run_id.endswith("-hd")
    assert rates["bench"] == {4.0, 10.0, 16.0} and rates["dyn"] == {8.0} and rates["xt"] == {20.0, 40.0}
    assert rates["web"] == {20.0} and rates["bound"] == rates["conv"] == rates["join"] == {5.0}
    assert rates["prov"] == {10.0, 20.0}
    assert {r.load_mbps for r in runs if r.exp == "web"} == {4.0, 8.0, 12.0, 16.0}
    pool = set(corpus.pool("hd"))
    assert all(set(r.videos) <= pool for r in runs if r.exp in ("bench", "dyn", "xt", "web", "prov"))
    assert {r.videos for r in runs if r.exp in ("pool", "join")} == {("cooking",), ("cooking", "cooking")}
    assert {r.videos for r in runs if r.exp in ("bound", "conv")} == {("A", "B")}
    # the synthetic grid is unchanged (its run ids and rates)
    syn = M.full_spec().runs()
    assert {r.rate_mbps for r in syn if r.exp == "bench"} == set(M.BENCH_RATES)
    assert not any(r.run_id.endswith("-hd") for r in syn)
    assert corpus.vmaf_curve("A", "hd")[-1] == pytest.approx(85.14 + 0.2 / 1.7 * (91.19 - 85.14), abs=0.01)  # 6 Mbit/s


@need_hd
def test_hd_videos_are_corpus_tables_looped():
    from qoelab.content import corpus as cc
    v = corpus.make_video("soccer", 75, mode="hd")
    src = cc.load_video("soccer")
    n = len(src["sizes"])
    assert len(v["sizes"]) == 75 and v["sizes"][n] == src["sizes"][0] and v["quality"]["vmaf"][n + 3] == src["quality"]["vmaf"][3]
    assert set(v["quality"]) == {"vmaf", "psnr"} and v["bitrates_bps"] == src["bitrates_bps"]
    run = M.Run("bench", "minerva", 10.0, ("soccer", "cartoon", "nature", "news"), corpus="hd")
    scn = M.scenario(run)
    assert scn["topology"]["rate"] == "10Mbps"
    assert all(c["video"].endswith(f"{n}.json") for c, n in zip(scn["client"], run.videos))
