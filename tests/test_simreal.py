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


def test_plan_maps_a_mahimahi_trace_to_the_emulator_and_refuses_other_formats(tmp_path):
    """`compare sim-real` on a trace: the scenario's Mahimahi files go to `qoelab link` as they are
    (the simulator and the emulator read the same file); other formats are refused with one line."""
    from test_video_layout import MPD_LIST
    from qoelab.errors import InputError
    (tmp_path / "v.mpd").write_text(MPD_LIST)
    (tmp_path / "t.down").write_text("".join(f"{ms}\n" for ms in range(1, 101)))
    (tmp_path / "t.json").write_text('[{"duration_ms": 1000, "bandwidth_kbps": 1000, "latency_ms": 0}]')
    sc = tmp_path / "s.toml"
    base = ('[scenario]\nname = "t"\nduration = "10s"\n[topology]\n{topo}\nrtt = "40ms"\naqm = "fq_codel"\n'
            '[[client]]\nname = "c"\nvideo = "v.mpd"\n')
    sc.write_text(base.format(topo='trace = "t.down"\nrate_up = "10Mbps"'))
    p = simreal.plan(str(sc))
    assert p["link"][:4] == ["--trace", str(tmp_path / "t.down"), "--uplink-rate", "10Mbps"]
    assert p["link"][4:] == ["--rtt", "40ms", "--aqm", "fq_codel"]
    sc.write_text(base.format(topo='trace = "t.down"\ntrace_up = "t.down"'))
    assert simreal.plan(str(sc))["link"][2:4] == ["--uplink-trace", str(tmp_path / "t.down")]
    sc.write_text(base.format(topo='trace = "t.json"\nrate_up = "10Mbps"'))
    with pytest.raises(InputError) as e:
        simreal.plan(str(sc))
    assert "topology.trace" in str(e.value) and "Mahimahi" in str(e.value) and "sabre" in str(e.value)


def test_dashjs_summary_counts_a_replaced_segment_once():
    """Fast switching: segment 1 fetched at rung 0, then again at rung 1 (replacing it); segment 2's
    first download abandoned. Played = the last completed download per segment."""
    from qoelab import dashjs
    ev = [{"ev": "ladder", "bitrates": [500_000, 1_000_000], "t": 0.0}, {"ev": "load", "t": 0.0},
          {"ev": "startup", "t": 1.0}]
    for i, (idx, bw, kind) in enumerate([(0, 500_000, "segment"), (1, 500_000, "segment"),
                                          (1, 1_000_000, "segment"), (2, 1_000_000, "abandoned"),
                                          (2, 500_000, "segment")]):
        ev.append({"ev": kind, "type": "MediaSegment", "index": idx, "bandwidth": bw, "bytes": 1000,
                   "t_request": i + 0.1, "t_first_byte": i + 0.2, "t_end": i + 0.5})
    s, rows = dashjs.summarize(ev)
    assert len(rows) == 5
    assert (s["segments"], s["replaced"], s["abandoned"]) == (3, 1, 1)
    assert s["avg_bitrate_bps"] == pytest.approx((500_000 + 1_000_000 + 500_000) / 3)
    assert s["switches"] == 2 and s["bytes"] == 5000


def test_matrix_refuses_a_scenario_and_a_bad_duration_before_any_cell():
    """`--matrix SCENARIO` silently ignored SCENARIO and started the 24 real cells; `--matrix
    --duration 0s` was refused only once the matrix had started, naming a temporary file."""
    from conftest import qoelab_cli
    for extra, needle in ((["scenarios/asymmetric-upstream.toml"], "SCENARIO: expected no scenario with --matrix"),
                          (["--duration", "0s"], "--duration: expected a cell length of 1 s to 1 h"),
                          # it was not checked with --matrix, where it does nothing, and the matrix started
                          (["--variants", "foo"], "--variants: expected no --variants with --matrix")):
        r = qoelab_cli("compare", "sim-real", "--matrix", *extra)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
    r = qoelab_cli("compare", "sim-real", "scenarios/asymmetric-upstream.toml", "--duration", "5s")
    assert r.returncode == 2 and "--duration: expected --duration only with --matrix" in r.stderr, r.stderr
