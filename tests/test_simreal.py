"""`qoelab compare sim-real`: the agreement rules (no real network needed here; the runs themselves are in
the browser and real-network tiers)."""

import pytest

from qoelab import scenario, simreal


def _summary(goodputs, qdelay):
    return {"flows": [{"name": k, "kind": "bulk", "goodput_bps": v} for k, v in goodputs.items()],
            "links": [{"name": "bottleneck", "queue_delay_ms": {"mean": qdelay}, "utilization": 0.98}]}


def test_network_agreement_rules():
    sim = _summary({"a": 6e6, "b": 4e6}, 20.0)
    ok = simreal.network_agreement(sim, _summary({"a": 5.8e6, "b": 4.2e6}, 23.0))
    assert ok["shares_ok"] and ok["qdelay_ok"]
    assert ok["flows"][0]["share_sim"] == pytest.approx(0.6) and ok["flows"][0]["share_dev"] == pytest.approx(-0.0333, abs=1e-3)
    assert ok["qdelay_dev"] == pytest.approx(0.15)
    bad = simreal.network_agreement(sim, _summary({"a": 5e6, "b": 5e6}, 30.0))
    assert not bad["shares_ok"] and not bad["qdelay_ok"]          # 0.5 vs 0.6 is -17%; 30 vs 20 ms is +50%
    missing = simreal.network_agreement(sim, _summary({"a": 5e6}, None))
    assert not missing["shares_ok"] and not missing["qdelay_ok"]


@pytest.mark.parametrize("aqm", simreal.MATRIX_AQMS)
def test_matrix_cells_are_valid_scenarios(tmp_path, aqm):
    for cc in simreal.MATRIX_CCS:
        p = tmp_path / f"{aqm}-{cc}.toml"
        p.write_text(simreal.matrix_scenario(aqm, cc, "10Mbps"))
        sc = scenario.load(str(p))
        want = {"reno": "newreno"}.get(cc, cc)
        assert [f.get("cc") for f in sc.config["flows"]][:2] in ([want, want], [None, None]), sc.config["flows"]
        assert sc.config["links"][0]["aqm"] == aqm
