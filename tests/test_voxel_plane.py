"""The `voxel` data plane (docs/models/data_plane-voxel.md) over the simulator's QUIC (QUIC*) and TCP:
unreliable droppable frames, zero-filled losses that lower the played SSIM, hole filling, and the
refusals of `[[client]] transport`."""

import pytest

import qoelab

from test_abrstar import _voxel_mpd

HI = {0: 0.80, 1: 0.93, 2: 0.97}      # the fixture's `hi` levels by droppable ranges received


def _run(tmp_path, plane, abr="bolae", transport="quic", extra="", rate="2.5Mbps", buffer="8pkts",
         buffer_max="12s", duration="90s"):
    if not (tmp_path / "v.mpd").exists():
        _voxel_mpd(tmp_path / "v.mpd", n=20)
    (tmp_path / "s.toml").write_text(
        f'[scenario]\nduration = "{duration}"\n[topology]\nrate = "{rate}"\nrtt = "30ms"\nbuffer = "{buffer}"\n'
        f'[[client]]\nvideo = "v.mpd"\nabr = "{abr}"\ntransport = "{transport}"\n{extra}'
        f'[client.player]\nbuffer_max = "{buffer_max}"\n[client.data_plane]\nkind = "voxel"\n{plane}')
    res = qoelab.run(str(tmp_path / "s.toml"))
    return res, res.table("segments"), res.summary["clients"][0], res.summary["flows"][1]


def test_qstar_droppable_frames_are_lost_not_resent_and_lower_the_ssim(tmp_path):
    """Q* mode (whole segments, droppable frames unreliable, no hole filling) on a lossy 8-packet queue:
    bytes are lost and zero-filled, never retransmitted; a segment with a hole plays at the level of the
    droppable ranges that arrived whole before it. Reliable QUIC on the same link loses nothing."""
    res, seg, c, f = _run(tmp_path, 'reliability = "partial"\nhole_filling = false\noptional_ranges = false\n')
    assert f["transport"] == "quic" and f["unreliable_bytes_retransmitted"] == 0
    assert f["unreliable_bytes_lost"] > 0 and f["hole_bytes"] >= f["unreliable_bytes_lost"]
    vx = c["http"]["voxel"]
    assert vx["lost_first"] > 0 and vx["residual_lost"] == vx["lost_first"] and vx["hole_fill_requested"] == 0
    assert int(seg["lost_bytes"].sum()) == vx["lost_first"]
    hi = seg[(seg["rung"] == 1) & (seg["abandoned"] == 0)]
    assert len(hi) > 0
    for row in hi.itertuples():
        # reliable part [0, 200,000), droppable ranges [200,000, 600,000) and [600,000, 1,000,000)
        if row.lost_bytes == 0:
            assert row.quality == pytest.approx(HI[2])
        else:
            assert row.quality in (HI[0], HI[1])
    assert (hi["lost_bytes"] > 0).any()
    assert c["bytes"] == int(seg["bytes"].sum())
    res, seg, c, f = _run(tmp_path, 'reliability = "reliable"\n')
    assert int(seg["lost_bytes"].sum()) == 0 and f["unreliable_bytes_sent"] == 0 and f["retransmits"] > 0
    assert (seg[seg["rung"] == 1]["quality"] == HI[2]).all()


def test_hole_filling_recovers_lost_bytes_while_the_buffer_is_full(tmp_path):
    """With slack (a 12-s buffer that fills at 6 Mbit/s), lost droppable bytes are requested again and
    most are recovered; the segment's quality and bytes are revised."""
    plane = 'reliability = "partial"\nhole_filling = true\noptional_ranges = false\n'
    res, seg, c, f = _run(tmp_path, plane, rate="6Mbps", buffer="12pkts")
    vx = c["http"]["voxel"]
    assert vx["lost_first"] > 0, vx
    assert vx["hole_fill_requested"] > 0 and vx["hole_fill_received"] > 0
    assert vx["residual_lost"] < vx["lost_first"]
    assert int(seg["extra_bytes"].sum()) == vx["hole_fill_received"]
    assert c["bytes"] == int(seg["bytes"].sum())
    reqs = res.table("requests") if "requests" in res.tables else None
    if reqs is not None:
        assert (reqs["kind"] == "holes").any()


def test_over_tcp_the_plane_fetches_reliably(tmp_path):
    res, seg, c, f = _run(tmp_path, 'reliability = "partial"\n', transport="tcp")
    assert c["segments"] == 20 and int(seg["lost_bytes"].sum()) == 0
    assert c["http"]["voxel"]["unreliable_requested"] == 0


@pytest.mark.parametrize("extra, plane, key", [
    ('[client.tcp]\nsack = true\n', "", "tcp"),
    ("", "", "transport"),
    ("", 'reliability = "sometimes"\n', "reliability"),
])
def test_bad_client_transport_options_are_one_line_errors(tmp_path, extra, plane, key):
    from conftest import qoelab_cli
    _voxel_mpd(tmp_path / "v.mpd", n=4)
    transport = "udp" if key == "transport" else "quic"
    (tmp_path / "s.toml").write_text(
        '[scenario]\nduration = "10s"\n[topology]\nrate = "5Mbps"\n[[client]]\nvideo = "v.mpd"\nabr = "bolae"\n'
        f'transport = "{transport}"\n{extra}[client.data_plane]\nkind = "voxel"\n{plane}')
    r = qoelab_cli("run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and key in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_quic_options_without_quic_are_refused(tmp_path):
    from conftest import qoelab_cli
    (tmp_path / "s.toml").write_text(
        '[scenario]\nduration = "10s"\n[topology]\nrate = "5Mbps"\n[[client]]\nabr = "bolae"\n'
        '[client.quic]\ninitial_window = 20\n')
    r = qoelab_cli("run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "quic" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_video_duration_truncates_and_tiles_the_voxel_table(tmp_path):
    """`video_duration` fits the VOXEL table to the byte layout: truncated, or tiled with each copy's
    ranges shifted by the rung's file period (the core checks that the ranges tile every segment)."""
    _voxel_mpd(tmp_path / "v.mpd", n=5)
    for dur, n in (("12s", 3), ("40s", 10)):
        (tmp_path / "s.toml").write_text(
            f'[scenario]\nduration = "60s"\n[topology]\nrate = "5Mbps"\n[[client]]\nvideo = "v.mpd"\n'
            f'video_duration = "{dur}"\nabr = "abrstar"\nabr_params = {{partial = true}}\ntransport = "quic"\n'
            '[client.data_plane]\nkind = "voxel"\n')
        res = qoelab.run(str(tmp_path / "s.toml"))
        assert res.summary["clients"][0]["segments"] == n
        assert res.table("segments")["quality"].notna().all()


def test_an_abandoned_response_over_quic_counts_as_cancelled():
    """Over QUIC* the plane cuts an abandoned response short by skipping the rest of it (no reset):
    the summary's http block counts it as cancelled, as the requests table marks it (it counted as
    completed until 2026-11-30, with no waste)."""
    d = {"scenario": {"name": "vq", "duration": "40s", "seed": 1},
         "topology": {"rate": "6Mbps", "rtt": "40ms", "buffer": "1bdp", "aqm": "pfifo"},
         "client": [{"name": "v", "count": 2, "abr": "abrstar", "video": "synthetic:voxel", "video_duration": "60s",
                     "stagger": "1s", "transport": "quic", "data_plane": {"kind": "voxel"}}],
         "flow": [{"name": "bulk", "start": "5s", "stop": "30s"}],
         "output": {"tables": ["segments"]}}
    r = qoelab.run(d)
    rq = r.table("requests")
    total = 0
    for i, c in enumerate(r.summary["clients"]):
        t = rq[rq["client"] == i]
        h = c["http"]
        total += h["cancelled"]
        assert h["requests"] == len(t)
        assert h["cancelled"] == int(t["cancelled"].sum()), (h, t[["request", "cancelled"]])
        assert h["completed"] == int(((t["cancelled"] == 0) & (t["t_last_byte_s"] == t["t_last_byte_s"])).sum())
        assert (h["wasted_bytes"] > 0) == (h["cancelled"] > 0)
        # a QUIC client's mean smoothed RTT (null until 2026-11-30): at least the 40 ms base
        assert c["srtt_mean_ms"] is not None and c["srtt_mean_ms"] >= 40, c["srtt_mean_ms"]
    assert total >= 1
