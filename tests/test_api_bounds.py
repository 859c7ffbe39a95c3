"""The Python API refuses what it cannot honour with a clear exception, and keeps what ran (found by
a probe of the API: each case below was a panic, a silently wrong result or an unclear error)."""

import json
import os

import pytest

from conftest import REPO

SCN = os.path.join(REPO, "scenarios", "dumbbell-4cubic-fqcodel.toml")

SMALL = {"scenario": {"name": "api", "duration": "2s", "seed": 3},
         "topology": {"rate": "10Mbps", "rtt": "20ms"},
         "flow": [{"name": "bulk", "cc": "cubic"}]}


@pytest.mark.parametrize("bad", [5, None, b"x.toml", 1.5])
def test_run_names_a_wrong_scenario_type(bad):
    import qoelab
    with pytest.raises(TypeError, match="^scenario: expected a path"):
        qoelab.run(bad)


def test_run_keeps_what_ran():
    """The caller's dict edited after the run, and a numpy seed (refused before)."""
    import copy

    import numpy as np

    import qoelab
    d = copy.deepcopy(SMALL)
    res = qoelab.run(d, seed=np.int64(5))
    d["topology"]["rate"] = "1Mbps"
    assert res.summary["seed"] == 5
    again = qoelab.run(res.scenario.with_seed(5))
    assert again.summary == res.summary


def test_written_scenario_is_the_file_that_ran(tmp_path):
    import qoelab
    sc = tmp_path / "s.toml"
    text = open(SCN).read()
    sc.write_text(text)
    res = qoelab.run(str(sc))
    sc.write_text(text.replace("fq_codel", "pfifo"))     # edited between the run and the write
    out = res.write(str(tmp_path / "out"))
    assert open(os.path.join(out, "scenario.toml")).read() == text


def test_core_refuses_a_link_delay_that_would_wrap_the_clock():
    """A config with a delay near 2^64 ns passed the core's check and panicked in the engine."""
    import qoelab
    from qoelab import _core
    from qoelab import scenario as scmod
    cfg = json.loads(scmod.from_dict(SMALL).to_json())
    cfg["links"][0]["delay"] = 2**64 - 1
    with pytest.raises(ValueError) as e:
        _core.run(json.dumps(cfg), None, None)
    assert e.value.args[0].endswith(".delay") and "1 h" in e.value.args[1], e.value.args
    assert qoelab  # (imported for the package's panic hook)


def _page(sizes, parents):
    n = len(sizes)
    return (sizes, [0] * n, [False] * n, parents)


@pytest.mark.parametrize("page,what", [
    (_page([100, 200], [-1, 2**32]), "expected -1 (no parent) or an earlier object's index (< 1), found 4294967296"),
    (_page([100, 200], [-1, -5]), "found -5"),
    (_page([2**34 + 1], [-1]), "expected size <= 2^34 bytes"),    # size x 10^9 wrapped 64 bits: a wrong time
])
def test_pageload_refuses_pages_it_would_get_wrong(page, what):
    from qoelab import _core
    with pytest.raises(ValueError, match="page 0: object"):
        _core.pageload_run(page, [(10**9, 10_000_000, [])], "eaf")
    with pytest.raises(ValueError) as e:
        _core.pageload_run(page, [(10**9, 10_000_000, [])], "eaf")
    assert what in str(e.value)


def test_pageload_largest_object_takes_the_time_it_should():
    """2^34 bytes at 1 GB/s: ~17.2 s (2^40 bytes gave 11.7 s instead of ~1,100 s)."""
    from qoelab import _core
    r = _core.pageload_run(_page([2**34], [-1]), [(10**9, 10_000_000, [])], "eaf")
    assert r["plt_ns"] == pytest.approx(2**34, rel=0.01)


@pytest.mark.parametrize("key,value", [("handshake_rtts", 101), ("tls_rtts", 10**9), ("mss", 10**6),
                                       ("iw_segments", 10**6)])
def test_pageload_options_are_bounded(key, value):
    from qoelab import _core
    with pytest.raises(ValueError, match=key):
        _core.pageload_run(_page([100], [-1]), [(10**6, 10_000_000, [])], "eaf", options={key: value})
