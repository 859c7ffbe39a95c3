"""The Sprint chunk-sizing model and the Chunklets instability index, as the reproductions call
them through ``qoelab._core`` (the Rust unit tests hold the full worked tables)."""

import json
import math

import pytest

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
