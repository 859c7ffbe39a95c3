"""`qoelab reproduce voxel`: the modelled stand-in videos, trace shifting, the scenario builder, the
verdict rules on hand-made per-run results (each rule that can say FAIL is seen saying it), the report,
and the quick reproduction end to end (skipped with the reason while the core lacks QUIC video
clients or the shared data folder is absent)."""

import json
import os
import time

import numpy as np
import pandas as pd
import pytest

from qoelab.content import voxel_standin as vs
from qoelab.reproduce import voxel, voxel_claims
from qoelab.reproduce.common import GRADE_TO_VERDICT
from qoelab.reproduce.voxel import ARMS, Run, Spec, scenario, shift_rates, write_shifted
from qoelab.video.ladders import LADDERS
from qoelab.video.model import validate_video

VERDICTS = set(GRADE_TO_VERDICT.values())


# ----------------------------------------------------------------------------------------------
# Stand-ins


@pytest.fixture(scope="module")
def videos():
    t0 = time.perf_counter()
    out = {f: vs.generate(f, validate=False) for f in vs.FILMS}
    return out, time.perf_counter() - t0


def test_standins_are_valid_fast_and_deterministic(videos):
    vids, wall = videos
    assert wall < 10.0                                   # all four in well under 10 s
    for f, v in vids.items():
        validate_video(v)                                # the core's Video rules incl. the VOXEL table
        assert len(v["bitrates_bps"]) == 13 and len(v["sizes"]) == 75
        assert v["segment_duration"] == 4 * 10**9
        sizes = np.array(v["sizes"], dtype=float)
        rates = np.array(LADDERS["voxel"].bitrates_kbps) * 1000.0
        np.testing.assert_allclose(sizes.mean(axis=0) * 8 / 4, rates, rtol=0.01)   # each rung's mean = its bitrate
        assert (sizes * 8 / 4 <= 2.0 * rates * 1.01).all()                        # 2x capped VBR
        q = np.array(v["quality"]["ssim"])
        assert (q[:, -1] == 1.0).all() and (np.diff(q, axis=1) >= 0).all()        # Q12 is the reference
        for s in (0, 40, 74):
            for r in (0, 6, 12):
                e = v["voxel"]["segments"][s][r]
                assert len(e["unreliable"]) == 95
                bound = 0.5 if r == 0 else round(q[s, r - 1], 3)                   # §1.4: the rung below
                assert e["ssims"][0][0] >= bound - 0.0011
                assert e["ssims"][-1][0] == pytest.approx(round(q[s, r], 3), abs=0.0011)
                assert all(b - a + 1 == 15 for a, b in e["reliable"][1:])           # 15-byte frame headers
    full = vs.generate("bbb", validate=False, levels="all")
    validate_video(full)
    i_only = [row[r]["ssims"][0][0] for row in full["voxel"]["segments"] for r in range(13)]
    assert all(row[r]["ssims"][0][1] == 0 for row in full["voxel"]["segments"] for r in range(13))
    assert 0.5 <= float(np.median(i_only)) <= 0.8 and min(i_only) >= 0.3            # I-frame + headers: "poor"
    assert vs.generate("ed", validate=False) == vids["ed"]


def test_standin_shares_and_patterns():
    for f in vs.FILMS:
        sh = vs.byte_shares(f)
        assert abs(sh["I"] - 0.15) < 0.02 and abs(sh["P"] - 0.65) < 0.03 and abs(sh["B"] - 0.20) < 0.02
        assert sh["frames_B"] == 32 and sh["frames_P"] == 63
    tos = vs.complexity("tos")
    assert tos[:12].mean() > 1.4 * tos[12:50].mean() and tos[55] > 1.5 * tos[12:50].mean()
    sin = vs.complexity("sintel")
    assert sin[0] > sin[30] > sin[45] and sin[60:].mean() > 3 * sin[40:50].mean()
    ed, bbb = vs.complexity("ed"), vs.complexity("bbb")
    assert ed.std() > bbb.std() and (ed > 1.8).sum() > (bbb > 1.8).sum()
    order = vs.importance_order()
    t = vs.frame_types()
    assert [t[i] for i in order[:63]] == [1] * 63 and [t[i] for i in order[63:]] == [2] * 32


def test_standin_tolerance_is_content_dependent(videos):
    vids, _ = videos
    st = {f: vs.content_stats(v) for f, v in vids.items()}
    assert st["bbb"]["drop_at_099_median"] > st["ed"]["drop_at_099_median"]   # calmer film tolerates more drops
    assert all(0.05 < s["drop_at_099_median"] < 0.4 for s in st.values())


def test_truncate_keeps_a_valid_video(videos):
    v = vs.truncate(videos[0]["bbb"], 30)
    validate_video(v)
    assert len(v["sizes"]) == 30 and len(v["voxel"]["segments"]) == 30


# ----------------------------------------------------------------------------------------------
# Traces and scenarios


def test_shift_rates_is_circular():
    tr = {"kind": "rates", "segments": [[10**9, 1000 * (i + 1), 0] for i in range(5)], "loop": True}
    s = shift_rates(tr, 2 * 10**9)
    assert [x[1] for x in s["segments"]] == [3000, 4000, 5000, 1000, 2000]
    h = shift_rates(tr, int(2.5 * 10**9))
    assert h["segments"][0] == [5 * 10**8, 3000, 0] and h["segments"][-1] == [5 * 10**8, 3000, 0]
    assert sum(x[0] for x in h["segments"]) == 5 * 10**9
    assert shift_rates(tr, 5 * 10**9)["segments"] == tr["segments"]


def test_write_shifted_sum_and_sabre(tmp_path):
    src = tmp_path / "t.sum"
    src.write_text("".join(f"{i + 1} {1000 * (i + 1)}\n" for i in range(30)))
    p = write_shifted(str(src), 1, 3, str(tmp_path))                    # 10 s into the 30-s trace
    assert open(p).read().split("\n")[0] == "1 11000"
    js = tmp_path / "n.json"
    js.write_text(json.dumps([{"duration_ms": 1000, "bandwidth_kbps": 100 * (i + 1), "latency_ms": 100}
                              for i in range(10)]))
    p = write_shifted(str(js), 1, 2, str(tmp_path))
    d = json.load(open(p))
    assert d[0]["bandwidth_kbps"] == 600 and all(x["latency_ms"] == 0 for x in d)


def test_scenario_carries_the_arm_keys():
    r = Run("main", "bbb", "verizon", 1, "voxel", trace_file="/x.sum", video_file="/v.json")
    c = scenario(r)["client"][0]
    assert c["transport"] == "quic" and c["abr"] == "abrstar"
    assert c["abr_params"] == {"partial": True, "keep_partial": True}
    assert c["data_plane"] == {"kind": "voxel", "reliability": "partial", "hole_filling": True,
                               "optional_ranges": True, "safety": "70ms"}
    assert c["player"] == {"buffer_max": "8s", "quality_metric": "ssim"}          # (N + 1) x 4 s
    topo = scenario(r)["topology"]
    assert topo["trace"] == "/x.sum" and topo["buffer"] == "32pkts" and topo["aqm"] == "pfifo" and topo["rtt"] == "30ms"
    assert scenario(Run("main", "bbb", "verizon", 7, "voxel_rel"))["client"][0]["data_plane"]["reliability"] == "reliable"
    q = scenario(Run("main", "bbb", "att", 5, "bola_q"))["client"][0]
    assert q["abr"] == "abrstar" and q["abr_params"] == {"utility": "log", "abandon_rule": "bola"}
    assert q["data_plane"]["reliability"] == "partial" and not q["data_plane"]["hole_filling"]
    assert scenario(Run("longq", "bbb", "att", 5, "bola", queue=750))["topology"]["buffer"] == "750pkts"
    syn = scenario(Run("synth", "bbb", "step", 7, "voxel"))["topology"]
    assert syn["rate_profile"] == [["0s", "10.75Mbps"], ["70s", "10.5Mbps"]]
    cr = scenario(Run("cross", "bbb", "fixed20", 1, "voxel", cross_mbps=20.0))
    assert cr["topology"]["rate"] == "20Mbps" and cr["flow"][0]["kind"] == "web"
    tcp = scenario(Run("main", "bbb", "verizon", 1, "beta", tcp_only=True))["client"][0]
    assert "transport" not in tcp and "data_plane" not in tcp and tcp["abr"] == "beta"
    assert set(ARMS) >= {"voxel", "voxel_rel", "bola", "bola_ssim", "beta", "bola_q", "mpc", "mpc_q", "tput"}


def test_runs_are_paired_by_seed():
    runs = Spec("t", videos=("bbb",), traces=("verizon",), buffers=(1,), shifts=2, families=("main",)).runs()
    by = {}
    for r in runs:
        by.setdefault(r.shift, set()).add(r.seed)
    assert all(len(s) == 1 for s in by.values()) and len({r.run_id for r in runs}) == len(runs) == 6
    assert len({next(iter(s)) for s in by.values()}) == 2


# ----------------------------------------------------------------------------------------------
# Verdict rules on hand-made results


def _df(rows):
    base = {"error": None, "queue": 32, "played": 75, "ssim_mean": 0.97, "nominal_bitrate_bps": 5e6,
            "avg_bitrate_bps": 5e6, "fetched_bitrate_bps": 5e6, "skipped_pct": 0.0}
    return pd.DataFrame([{**base, **r} for r in rows])


def _grid(values, fam="main", traces=("tmobile", "verizon", "att", "3g"), buffers=(1, 2, 5, 7), shifts=3, **extra):
    """values: {arm: bufratio or function(trace, buffer, shift)}."""
    rows = []
    for a, f in values.items():
        for t in traces:
            for b in buffers:
                for s in range(shifts):
                    x = f(t, b, s) if callable(f) else f
                    rows.append({"fam": fam, "video": "bbb", "trace": t, "buffer": b, "arm": a, "shift": s,
                                 "bufratio": x, "run_id": f"{fam}-{t}-{b}-{s}-{a}", **extra})
    return _df(rows)


def test_compare_and_p90():
    assert voxel_claims.compare(0.01, 0.04) == ("imp", pytest.approx(0.75))
    assert voxel_claims.compare(0.0005, 0.001) == ("tie", None)
    assert voxel_claims.compare(0.01, 0.0) == ("loss", -1.0)
    assert voxel_claims.p90([0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0]) == pytest.approx(0.1)
    m, lo, hi = voxel_claims.p90_ci([0.01 * i for i in range(30)])
    assert lo <= m <= hi


def test_v23_pass_and_fail():
    good = _grid({"voxel": 0.01, "bola": 0.05})
    assert voxel_claims.v23(good)["grade"] == "PASS"                   # 80% improvement everywhere
    bad = _grid({"voxel": 0.06, "bola": 0.05})
    assert voxel_claims.v23(bad)["grade"] == "FAIL"
    ties = _grid({"voxel": 0.0, "bola": 0.0})
    assert voxel_claims.v23(ties)["grade"] == "NOT RUN"
    assert voxel_claims.v23(_df([]))["grade"] == "NOT RUN"


def test_v21_pass_partial_fail():
    assert voxel_claims.v21(_grid({"voxel": 0.0, "bola": 0.05, "beta": 0.04}))["grade"] == "PASS"
    assert voxel_claims.v21(_grid({"voxel": 0.03, "bola": 0.05, "beta": 0.04}))["grade"] == "PARTIAL"
    assert voxel_claims.v21(_grid({"voxel": 0.06, "bola": 0.05, "beta": 0.04}))["grade"] == "FAIL"


def test_v24_v25_v26():
    df = _grid({"voxel": 0.001, "bola": 0.05})
    sdf = pd.DataFrame({"run_id": df["run_id"], "quality": 0.97})
    assert voxel_claims.v24(df, sdf)["grade"] == "PASS"
    assert voxel_claims.v24(_grid({"voxel": 0.1, "bola": 0.05}), sdf)["grade"] == "FAIL"
    assert voxel_claims.v25(df)["grade"] == "PASS"
    assert voxel_claims.v25(_grid({"voxel": 0.08, "bola": 0.05}))["grade"] == "FAIL"
    assert voxel_claims.v26(df)["grade"] == "PASS"
    low = pd.concat([df[df["arm"] == "bola"], df[df["arm"] == "voxel"].assign(nominal_bitrate_bps=3e6)])
    assert voxel_claims.v26(low)["grade"] == "FAIL"


def test_v28_skipped_falls_with_buffer():
    rows = []
    for b, x in ((1, 12.0), (2, 9.0), (5, 4.0), (7, 2.0)):
        rows.append({"fam": "main", "video": "bbb", "trace": "verizon", "buffer": b, "arm": "voxel", "shift": 0,
                     "bufratio": 0.0, "skipped_pct": x, "run_id": str(b)})
    assert voxel_claims.v28(_df(rows))["grade"] == "PASS"
    for r in rows:
        r["skipped_pct"] = 20.0 - r["skipped_pct"]
    assert voxel_claims.v28(_df(rows))["grade"] == "FAIL"


def test_v33_ablation():
    def rows(vox, ssim_v=0.9, ssim_b=0.86):
        out = []
        for k in range(10):
            for b in (1, 7):
                for a, x, s in (("bola", 0.08 + 0.01 * k * k, ssim_b), ("bola_ssim", 0.085 + 0.01 * k * k, ssim_v),
                                ("voxel", vox(k), ssim_v)):
                    out.append({"fam": "ablation", "video": "bbb", "trace": f"n{k}", "buffer": b, "arm": a, "shift": 0,
                                "bufratio": x, "ssim_mean": s, "run_id": f"{k}{b}{a}"})
        return _df(out)
    assert voxel_claims.v33(rows(lambda k: 0.02 + 0.002 * k * k))["grade"] == "PASS"
    assert voxel_claims.v33(rows(lambda k: 0.6))["grade"] == "FAIL"


def test_v36_partial_reliability():
    df = pd.concat([_grid({"voxel": 0.01, "voxel_rel": 0.03}, traces=("verizon", "tmobile"))])
    assert voxel_claims.v36(df)["grade"] == "PASS"
    assert voxel_claims.v36(_grid({"voxel": 0.03, "voxel_rel": 0.01}, traces=("verizon", "tmobile")))["grade"] == "FAIL"
    assert voxel_claims.v36(_grid({"voxel": 0.0, "voxel_rel": 0.0}, traces=("verizon", "tmobile")))["grade"] == "NOT RUN"


def test_v38_synthetic():
    def df(pv, pb, mv=0.97, mb=0.9):
        return _df([{"fam": "synth", "video": "bbb", "trace": t, "buffer": 7, "arm": a, "shift": 0, "bufratio": 0.0,
                     "perfect_share": p, "ssim_min_30s": m, "run_id": t + a}
                    for t in ("const", "step") for a, p, m in (("voxel", pv, mv), ("bola", pb, mb))])
    assert voxel_claims.v38(df(0.7, 0.0))["grade"] == "PASS"
    assert voxel_claims.v38(df(0.3, 0.2))["grade"] == "PARTIAL"
    assert voxel_claims.v38(df(0.0, 0.2))["grade"] == "FAIL"


def test_v15_v39_v17_v18():
    base = _grid({"voxel": 0.0}, traces=("verizon",), buffers=(1, 7), vx_unreliable_requested=1e6,
                 vx_lost_first=1000.0, vx_hole_fill_received=990.0, vx_residual_lost=10.0)
    assert voxel_claims.v15(base, {})["grade"] == "PASS"
    assert voxel_claims.v15(base.assign(vx_residual_lost=1e5, vx_hole_fill_received=0.0), {})["grade"] == "FAIL"
    assert voxel_claims.v15(base, {"tcp_only": True})["grade"] == "NOT RUN"
    b = _grid({"bola": 0.02}, traces=("tmobile",), buffers=(1,), refetch_big_share=0.3, abandoned=5)
    assert voxel_claims.v39(b)["grade"] == "PASS"
    assert voxel_claims.v39(b.assign(refetch_big_share=0.0))["grade"] == "FAIL"
    q = _grid({"mpc": 0.1, "mpc_q": 0.03, "bola": 0.05, "bola_q": 0.048}, buffers=(5, 7))
    assert voxel_claims.v17(q)["grade"] == "PASS" and voxel_claims.v18(q)["grade"] == "PASS"
    q2 = _grid({"mpc": 0.03, "mpc_q": 0.1, "bola": 0.05, "bola_q": 0.01}, buffers=(5, 7))
    assert voxel_claims.v17(q2)["grade"] == "FAIL" and voxel_claims.v18(q2)["grade"] == "FAIL"


def test_v11_exact_and_every_claim_listed():
    assert voxel_claims.v11()["grade"] == "PASS"
    cl = voxel_claims.evaluate(_df([]), pd.DataFrame(), voxel.quick_spec(), {})
    assert [c["id"] for c in cl] == [f"V{i}" for i in range(1, 44)]
    assert all(c["verdict"] in VERDICTS for c in cl)
    by = {c["id"]: c for c in cl}
    for cid in ("V1", "V2", "V13", "V27", "V40", "V41", "V42"):
        assert by[cid]["verdict"] == "OUT OF SCOPE" and "out of scope" in by[cid]["ours"]


def test_report_from_hand_made_results(tmp_path):
    from qoelab.reproduce import voxel_report
    df = _grid({"voxel": lambda t, b, s: 0.01 * s, "bola": lambda t, b, s: 0.02 + 0.01 * s, "beta": 0.03},
               skipped_pct=5.0)
    sdf = pd.DataFrame([{"run_id": r, "segment": k, "quality": 0.95 + 0.0005 * k} for r in df["run_id"] for k in range(30)])
    claims = voxel_claims.evaluate(df, sdf, voxel.quick_spec(), {})
    meta = {"paper": "p", "grid": "quick", "runs": len(df), "failed": 0, "wall_s_runs": 1.0, "jobs": 1,
            "content": {"bbb": {**vs.byte_shares("bbb"), "shares": vs.byte_shares("bbb"), "avg_ssim": [0.9] * 13}}}
    p = voxel_report.write_report(str(tmp_path), df, sdf, claims, meta)
    text = open(p).read()
    assert "V43" in text and "p90 bufRatio" in text and "MODELLED" in text
    assert os.path.exists(tmp_path / "figures" / "p90.png") and os.path.exists(tmp_path / "figures" / "skipped.png")


# ----------------------------------------------------------------------------------------------
# With the shared data folder


def test_v43_trace_statistics():
    from conftest import need_data
    need_data("traces", "voxel")
    c = voxel_claims.v43()
    assert c["grade"] == "PASS", c["ours"]


def _core_has_quic_video_clients(tmp) -> str | None:
    """None if the core accepts the keys of every arm of the quick grid, else the reason."""
    import qoelab
    from qoelab.errors import InputError
    path = os.path.join(str(tmp), "probe.json")
    with open(path, "w") as f:
        json.dump(vs.truncate(vs.generate("bbb", validate=False), 2), f)
    for arm in sorted({r.arm for r in voxel.quick_spec().runs()}):
        scn = scenario(Run("main", "bbb", "const", 1, arm, video_s=8, video_file=path))
        scn["scenario"]["duration"] = "1s"
        try:
            qoelab.run(scn)
        except InputError as e:
            return f"the core refuses the {arm} arm's keys ({str(e).splitlines()[0][:160]})"
        except Exception as e:  # noqa: BLE001
            return f"the core refuses the {arm} arm's keys ({type(e).__name__}: {str(e)[:160]})"
    return None


def test_quick_reproduction(tmp_path):
    from conftest import need_data
    need_data("traces", "voxel")
    why = _core_has_quic_video_clients(tmp_path)
    if why:
        print(f"skipped: {why}")
        pytest.skip(why)
    t0 = time.perf_counter()
    meta = voxel.reproduce(str(tmp_path / "out"), quick=True)
    wall = time.perf_counter() - t0
    assert meta["failed"] == 0, meta["failures"]
    cl = json.load(open(tmp_path / "out" / "claims.json"))
    assert [c["id"] for c in cl] == [f"V{i}" for i in range(1, 44)]
    assert all(c["verdict"] in VERDICTS for c in cl)
    assert os.path.exists(tmp_path / "out" / "report.html") and os.path.exists(tmp_path / "out" / "segments.parquet")
    print(f"quick voxel reproduction: {wall:.1f} s")
