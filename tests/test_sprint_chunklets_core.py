"""The Sprint chunk-sizing model, the Chunklets instability index (as the reproductions call them
through ``qoelab._core``; the Rust unit tests hold the full worked tables) and the papers' ABRs
(huang, tputfrac, sa3) driven by the packet simulator."""

import json
import math

import pytest

import qoelab
from qoelab import _core


def test_program1_worked_value():
    # 3 Mbit/s, 256 KB queue, 2 flows, base RTT 100 ms: fair share 187_500 B/s, RTT 782.67 ms,
    # fair-BDP 146_750 B; r_1 = 4, r_2 = 26.128 -> S*(0.1) = 0.9 * 301.28 * 146_750 = 39.79 MB
    rtt = 0.1 + 256_000 * 8 / 3e6
    s = _core.get_chunk_size(187_500.0, rtt, 0.1)
    assert s == pytest.approx(0.9 * ((4 + 36_687.5 / 1460 + 1) / 0.1) * 146_750, rel=1e-9)
    assert s == pytest.approx(39.8e6, abs=0.05e6)
    assert _core.get_chunk_size(187_500.0, rtt, 0.1, 1460.0) == s


def test_efficiency_models():
    # one 4-s segment at the fair share, 3 Mbit/s, 256 KB queue: 0.59 in sprint.md's table
    b = 146_750.0
    assert _core.efficiency_rounds(4 * 187_500.0, b, 0.75 * b) == pytest.approx(0.59, abs=0.01)
    # a Program 1 chunk reaches 1 - eps under both forms
    s = _core.get_chunk_size(187_500.0, b / 187_500.0, 0.25)
    assert _core.efficiency_rounds(s, b, 0.75 * b) >= 0.75
    assert _core.efficiency_eq1(s, b, 0.75 * b) >= 0.75
    assert math.isnan(_core.efficiency_rounds(0.0, b, 0.75 * b))


def test_instability_index_levels():
    # a single 19 -> 20 switch at d = 0: 10 / (19 * 45)
    assert _core.instability_index_levels([18] * 10 + [19]) == pytest.approx([10 / (19 * 45)])
    assert _core.instability_index_levels([0] * 10) == []


def test_new_abrs_are_registered():
    names = {e["name"] for e in json.loads(_core.describe("abr"))}
    assert {"huang", "tputfrac", "sa3"} <= names


def _one(abr, rate):
    return {"scenario": {"name": "one", "duration": "300s"},
            "topology": {"rate": rate, "rtt": "40ms", "buffer": "1bdp"},
            "client": [{"abr": abr, "video": "synthetic:pensieve", "video_duration": "240s"}]}


def test_huang_uses_its_240s_buffer_and_climbs_to_the_top():
    r = qoelab.run(_one("huang", "5Mbps"))
    c = r.summary["clients"][0]
    seg = r.table("segments")
    assert c["buffer_max_s"] == 240.0
    assert c["stall_count"] == 0
    # floor(B / 10 s): the top rung (5) needs 50 s of buffer, which 5 Mbit/s builds
    assert seg.rung.iloc[0] == 0 and (seg.rung.iloc[-10:] == 5).all()
    # every switch goes to the target rung min(5, floor(B / 10 s)) of the buffer at the decision
    switched = seg[seg.rung.diff().fillna(0) != 0]
    assert len(switched) >= 5
    assert (switched.rung == (switched.buffer_before_s // 10).clip(upper=5)).all()


def test_sa3_waits_for_the_12s_target_below_the_top():
    # 2 Mbit/s: SA (about the link's payload rate) picks rung 3 (1.85 Mbit/s) or below, never
    # the top, so requests wait until the buffer is down to 12 s
    r = qoelab.run(_one("sa3", "2Mbps"))
    c = r.summary["clients"][0]
    seg = r.table("segments")
    assert c["buffer_max_s"] == 34.0  # the 30 s top target + one 4-s segment
    assert (seg.rung < 5).all()
    assert (seg.abr_delay_s > 0).any()
    assert (seg.buffer_before_s <= 12.0 + 1e-6).all()


@pytest.mark.parametrize("args,name", [((-187_500.0, 0.04, 0.1), "bandwidth_bytes_per_s"),
                                       ((187_500.0, -0.04, 0.1), "rtt_s"),
                                       ((187_500.0, 0.04, 2.0), "eps"), ((187_500.0, 0.04, 0.0), "eps"),
                                       ((187_500.0, float("nan"), 0.1), "rtt_s")])
def test_chunk_sizing_refuses_out_of_range_input(args, name):
    """Nonsense in was nonsense out (a 3.9 MB chunk for a negative bandwidth, a negative one for eps 2)."""
    with pytest.raises(ValueError, match=f"^{name}: expected"):
        _core.get_chunk_size(*args)
    with pytest.raises(ValueError, match="^fair_bdp: expected"):
        _core.efficiency_rounds(1000.0, -1.0, 0.0)
