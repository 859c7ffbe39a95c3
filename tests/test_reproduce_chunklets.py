"""`qoelab reproduce chunklets`: metric helpers on hand-made frames, verdict helpers, the AR
multiplier in a constant-rate case (issue 8 item 7), and one end-to-end quick reproduction."""

import json
import os

import pandas as pd
import pytest

from qoelab.reproduce import chunklets as C
from qoelab.reproduce.chunklets import (INCONCLUSIVE, NOT_SUPPORTED, PARTIAL, SUPPORTED, Run, combine, greater,
                                        overlap_bins, overlap_stats, scenario, smoothed, steady_cut, steady_start,
                                        trend)

# ----------------------------------------------------------------------------------------------
# metric helpers


def test_sa_is_mean_of_last_three():
    assert smoothed([3.0, 6.0, 9.0, 12.0]) == [3.0, 4.5, 6.0, 9.0]
    assert smoothed([]) == []


def _segments(times):
    """times: list of (t_request, t_first, t_last); 1 MB chunks at rung 5."""
    return pd.DataFrame({"segment": range(len(times)), "rung": [5] * len(times), "bitrate_bps": [1e6] * len(times),
                         "bytes": [1_000_000] * len(times), "t_request_s": [t[0] for t in times],
                         "t_first_byte_s": [t[1] for t in times], "t_last_byte_s": [t[2] for t in times]})


def test_chunk_frame_ar_from_chunklet_union():
    seg = _segments([(0.0, 0.1, 1.1), (1.1, 1.2, 2.2)])
    req = pd.DataFrame({"kind": ["chunklet"] * 4, "segment": [0, 0, 1, 1], "body_bytes": [500_000] * 4,
                        "t_issue_s": [0.0, 0.0, 1.1, 1.1], "t_first_byte_s": [0.1, 0.2, 1.2, 1.3],
                        "t_last_byte_s": [0.9, 1.1, 2.2, 2.0]})
    ch = C.chunk_frame(seg, req)
    # first byte of any chunklet -> last byte of the last: 1 MB over 1.0 s
    assert ch["ar_bps"].tolist() == pytest.approx([8e6, 8e6])
    assert ch["ar_req_bps"].tolist() == pytest.approx([8e6 / 1.1, 8e6 / 1.1])
    assert ch["sa_bps"].tolist() == pytest.approx([8e6, 8e6])
    assert ch["level"].tolist() == [6, 6]


def test_steady_state_starts_at_first_off_period():
    ch = C.chunk_frame(_segments([(0, 0.1, 1), (1, 1.1, 2), (2, 2.1, 3), (5, 5.1, 6), (6, 6.1, 7)]))
    assert steady_start(ch) == (3, True)
    busy = C.chunk_frame(_segments([(i, i + 0.1, i + 1) for i in range(15)]))
    assert steady_start(busy) == (15, False)
    assert steady_cut(busy) == (C.FALLBACK_SKIP, False)


def test_overlap_share_on_a_hand_made_frame():
    # two chunklets receiving over [0.0, 1.0] and [0.0, 0.55]; 100-ms samples at 0.1 .. 1.0
    req = pd.DataFrame({"kind": ["chunklet"] * 2, "segment": [0, 0], "t_first_byte_s": [0.0, 0.0],
                        "t_last_byte_s": [1.0, 0.55]})
    times = [round(0.1 * k, 1) for k in range(1, 11)]
    rows = []
    for t in times:
        both = t <= 0.5
        rows += [{"time_s": t, "flow": 10, "goodput_bps": 4e6 if both else 2e6},
                 {"time_s": t, "flow": 11, "goodput_bps": 4e6 if both else 0.0}]
        rows += [{"time_s": t, "flow": f, "goodput_bps": 4e6 if both else 6e6} for f in (0, 1)]
    flows = pd.DataFrame(rows)
    b = overlap_bins(flows, {10, 11}, {0, 1}, req, 2)
    assert b.loc[b["time_s"] <= 0.5, "active"].eq(2).all()
    assert b.loc[b["time_s"] == 0.6, "active"].item() == 1      # second chunklet ends inside the bin
    s = overlap_stats(b, 2, 2, 16e6)
    assert s["full_bins"] == 5 and s["dash_full_bps"] == pytest.approx(8e6)
    assert s["share_full"] == pytest.approx(0.5) and s["ideal_share"] == pytest.approx(0.5)
    assert s["ratio_full"] == pytest.approx(2.0)
    assert s["ratio_one"] == pytest.approx(2e6 / 6e6)
    assert s["full_frac_on"] == pytest.approx(0.5)


# ----------------------------------------------------------------------------------------------
# verdict helpers


def test_trend_and_greater_and_combine():
    assert trend({1: 1.0, 2: 1.5, 10: 2.0})[0] is True
    assert trend({1: 2.0, 2: 1.5, 10: 1.0})[0] == "rev"
    assert trend({1: 2.0, 2: 1.5, 6: 1.0}, up=False, hi=6)[0] is True
    assert trend({1: 1.0, 2: 1.05, 10: 1.1})[0] is False          # direction right, magnitude short
    # the rule compares N = 1 with N = 6 (decreases) or 10 (increases): without that N there is no
    # verdict (the quick grid's N = 4 was taken as the end point until 2026-11-30)
    assert trend({1: 2.0, 4: 1.0, 10: 1.0}, up=False, hi=6)[0] is None
    assert trend({1: 1.0, 2: 1.5, 4: 2.0})[0] is None
    assert greater(2.0, 1.0, [2, 2], [1, 1]) is True
    assert greater(1.0, 2.0) == "rev" and greater(1.0, 1.01) == "noise"
    # a tie is no difference, even at 0 (it was "A > B" without seed medians until 2026-11-30)
    assert greater(0.0, 0.0) == "noise" and greater(0.0, 0.0, margin=1.0 + 1e-9) == "noise"
    assert greater(4.2e6, 4.2e6, [4.2e6] * 5, [4.2e6] * 5) == "noise"
    # one condition fails and one is within noise: only one condition failed
    assert combine([("a", False), ("b", "noise"), ("c", True)]) == PARTIAL
    assert combine([("a", True), ("b", True)]) == SUPPORTED
    assert combine([("a", True), ("b", False)]) == PARTIAL
    assert combine([("a", True), ("b", None)]) == PARTIAL
    assert combine([("a", "rev"), ("b", True)]) == NOT_SUPPORTED
    assert combine([("a", False), ("b", False), ("c", True)]) == NOT_SUPPORTED
    assert combine([("a", None)]) == INCONCLUSIVE


def test_scenarios():
    s = scenario(Run("E9", "fq_codel", 4, 0, 60))
    t = s["topology"]
    assert t["rate"] == "12Mbps" and t["rate_up"] == "1Mbps"
    assert t["aqm"] == "pfifo" and t["buffer"] == "100pkts" and t["aqm_up"] == "fq_codel"
    assert t["aqm_params_up"]["variant"] == "dummynet" and t["buffer_up"] == "1000pkts"
    assert [f["direction"] for f in s["flow"]] == ["up"] * 4
    cl = s["client"][0]
    assert cl["data_plane"] == {"kind": "chunklets", "n": 4} and cl["abr"] == "sa3"
    assert cl["tcp"] == {"profile": "freebsd10"}
    e3 = scenario(Run("E3", "pie", 2, 0, 60))
    assert e3["client"][0]["abr_params"] == {"rung": 17}
    assert e3["topology"]["aqm_params"]["estimator"] == "rate"
    assert Run("E3", "pie", 2, 0, 60).seed != Run("E3", "pie", 2, 1, 60).seed


# ----------------------------------------------------------------------------------------------
# the AR multiplier in a constant-rate case (issue 8 item 7)


@pytest.mark.parametrize("n", [1, 4])
def test_full_overlap_share_tracks_n_over_n_plus_m(n):
    run = Run("E3", "fq_codel", n, 0, 40)
    scn = scenario(run)
    scn["client"][0]["abr_params"] = {"rung": 19}          # 4.2 Mbit/s: keeps the client backlogged
    from qoelab import results
    res = results.run(scn)
    info = res.table("flow_info")
    bins = overlap_bins(res.table("flows"), set(info.loc[info["kind"] == "video", "flow"]),
                        set(info.loc[info["kind"] == "bulk", "flow"]), res.table("requests"), n)
    st = overlap_stats(bins[bins["time_s"] >= 5.0], n, 4, 25e6)
    assert st["full_bins"] >= 20
    assert abs(st["share_full"] / (n / (n + 4)) - 1) <= 0.15, st


# ----------------------------------------------------------------------------------------------
# end to end


def test_quick_reproduction(tmp_path):
    out = tmp_path / "ck"
    meta = C.reproduce(str(out), quick=True, jobs=2)
    assert meta["failed"] == 0 and not meta.get("report_error")
    claims = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in claims] == [f"C{i}" for i in range(1, 14)]
    assert all(c["verdict"] in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, PARTIAL) for c in claims)
    assert all(c["ours"] for c in claims)
    html = (out / "report.html").read_text()
    assert "C13" in html and "data:image/png;base64" in html
    for name in ("runs", "chunks", "cells", "bins"):
        assert (out / f"{name}.parquet").exists()
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == len(C.quick_grid().runs())
    assert json.loads((out / "meta.json").read_text())["reproduction"] == "chunklets"
    # refuses to replace a directory that is not a chunklets reproduction
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("keep")
    from qoelab.errors import InputError
    with pytest.raises(InputError):
        C.reproduce(str(other), quick=True)
    assert os.path.exists(other / "x")


def test_cli_registers_chunklets():
    from qoelab.reproduce import cli
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "chunklets", "--jobs", "0"])
    assert e.value.code == 2


def test_combine_counts_lettered_conditions():
    """"(c) E7" and "(c) E9" are one condition of the claims file: both failing is one condition
    failing (PARTIAL); two lettered conditions failing is NOT SUPPORTED."""
    assert combine([("(a) E3", True), ("(b) E3", True), ("(c) E7", False), ("(c) E9", False)]) == PARTIAL
    assert combine([("(a) PIE", False), ("(a) FQ", True), ("(c) E7", False)]) == NOT_SUPPORTED
    assert combine([("(a) PIE", True), ("(a) FQ", "rev"), ("(b)", True)]) == NOT_SUPPORTED
    assert combine([("(a) PIE", True), ("(a) FQ", None), ("(b)", True)]) == PARTIAL
    assert combine([("(a) PIE", True), ("(a) FQ", False), ("(c) RR", "noise")]) == PARTIAL


def test_a_low_weight_condition_caps_at_partial():
    """C7 (c) ("Weight: low") and C3's CV ("PARTIAL-weight"): failing, they make SUPPORTED
    PARTIAL and never count as a failure beside another one."""
    from qoelab.reproduce.chunklets import LOW, _finish
    assert _finish({}, [("(a)", True), ("(c)" + LOW, False)], "")["verdict"] == PARTIAL
    assert _finish({}, [("(a)", True), ("(c)" + LOW, True)], "")["verdict"] == SUPPORTED
    assert _finish({}, [("(a) PIE", False), ("(b)", "noise"), ("(c)" + LOW, False)], "")["verdict"] == PARTIAL
    assert _finish({}, [("(a)", False), ("(b)", False), ("(c)" + LOW, True)], "")["verdict"] == NOT_SUPPORTED
