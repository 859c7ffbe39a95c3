"""`abrstar` (VOXEL's ABR*, docs/models/abr-abrstar.md) through the player: full segments only until
the player plays partial ones. The decision core's hand-computed cases are Rust unit tests."""

import qoelab

from test_video_loaders import MPD_LIST, write


def _run(tmp_path, video, extra="", duration="60s", rate="3Mbps"):
    (tmp_path / "s.toml").write_text(
        f'[scenario]\nduration = "{duration}"\n[topology]\nrate = "{rate}"\nrtt = "40ms"\n'
        f'[[client]]\nvideo = "{video}"\nabr = "abrstar"\n{extra}')
    return qoelab.run(str(tmp_path / "s.toml"))


def test_abrstar_plays_a_synthetic_video_with_bola_ssim_decisions(tmp_path):
    res = _run(tmp_path, "synthetic:sabre-bbb", 'video_duration = "60s"\n[client.player]\nbuffer_max = "20s"\n')
    c = res.summary["clients"][0]
    seg = res.table("segments")
    assert c["segments"] == len(seg[seg["abandoned"] == 0]) >= 14 and c["stall_count"] == 0
    reasons = list(seg["abr_reason"])
    assert reasons[0] == "first segment -> rung 0" and seg["rung"].iloc[0] == 0
    assert reasons[1].startswith("start: rung ") and all("BOLA-SSIM" in r for r in reasons[1:])
    # 3 Mbit/s carries more than the lowest rungs once the buffer has grown
    assert seg["rung"].iloc[-5:].min() >= 3, list(seg["rung"])
    # the buffer cap is kept by pauses: the buffer never exceeds 20 s plus one segment
    assert seg["buffer_after_s"].max() <= 20.0 + 3.0 + 1e-6, seg["buffer_after_s"].max()


def test_abrstar_on_the_voxel_manifest(tmp_path):
    """The extended MPD: avgSSIM given on one rung only (no utilities: ln(b/b0)); the segment with
    droppable frames offers its full level."""
    write(tmp_path, "v.mpd", MPD_LIST)
    res = _run(tmp_path, "v.mpd", duration="20s", rate="5Mbps")
    assert res.summary["clients"][0]["segments"] == 3
    assert res.table("segments")["abr_reason"].iloc[1].startswith("start: ")


def _voxel_mpd(path, n=8):
    """2 rungs, 4-s segments; every `hi` segment (1,000,000 B) has a 200,000-B reliable part and two
    400,000-B droppable ranges with levels 0.80 (none), 0.93 (one), 0.97 (both); `lo` has none."""
    hi, lo = [], []
    for i in range(n):
        a, b = i * 1_000_000, i * 250_000
        hi.append(f'<SegmentURL mediaRange="{a}-{a + 999_999}" reliable="{a}-{a + 199_999}" '
                  f'unreliable="{a + 200_000}-{a + 599_999},{a + 600_000}-{a + 999_999}" reliableSize="200000" '
                  'ssims="0.80:0:0,0.93:1:400000,0.97:2:800000"/>')
        lo.append(f'<SegmentURL mediaRange="{b}-{b + 249_999}"/>')
    rep = ('<Representation id="{id}" bandwidth="{bw}" avgSSIM="{u}"><BaseURL>{id}.mp4</BaseURL>'
           '<SegmentList timescale="1000" duration="4000">{segs}</SegmentList></Representation>')
    path.write_text(
        f'<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" '
        f'mediaPresentationDuration="PT{4 * n}S"><Period><AdaptationSet mimeType="video/mp4">'
        + rep.format(id="hi", bw=2_000_000, u=0.97, segs="".join(hi))
        + rep.format(id="lo", bw=500_000, u=0.85, segs="".join(lo))
        + "</AdaptationSet></Period></MPD>")


def test_partial_segments_are_fetched_and_played_at_their_ssim(tmp_path):
    """`partial = true`: the player requests the chosen level's bytes (reliable part + prefix) and logs
    the level's SSIM as the segment's quality; a full segment of `hi` plays at 0.97."""
    _voxel_mpd(tmp_path / "v.mpd")
    level_of = {200_000: 0.80, 600_000: 0.93, 1_000_000: 0.97}
    for rate in ("1.6Mbps", "6Mbps"):
        res = _run(tmp_path, "v.mpd", 'abr_params = {partial = true}\n[client.player]\nbuffer_max = "12s"\n',
                   duration="40s", rate=rate)
        seg = res.table("segments")
        hi = seg[seg["rung"] == 1]
        assert len(hi) >= 5, list(seg["rung"])
        for row in hi.itertuples():
            assert row.bytes in level_of and abs(row.quality - level_of[row.bytes]) < 1e-12, row
        assert seg[seg["rung"] == 0]["quality"].isna().all()      # `lo` has no levels: no SSIM known
        c = res.summary["clients"][0]
        assert c["segments"] == 8 and c["bytes"] == int(seg["bytes"].sum())
    # full segments only (the default): every `hi` download is the whole 1,000,000 B
    res = _run(tmp_path, "v.mpd", '[client.player]\nbuffer_max = "12s"\n', duration="40s", rate="6Mbps")
    seg = res.table("segments")
    assert set(seg[seg["rung"] == 1]["bytes"]) == {1_000_000}


def test_partial_segments_are_refused_where_they_cannot_work(tmp_path):
    from conftest import qoelab_cli
    _voxel_mpd(tmp_path / "v.mpd")
    sc = tmp_path / "s.toml"
    base = '[scenario]\nduration = "10s"\n[topology]\nrate = "5Mbps"\n[[client]]\nvideo = "{v}"\nabr = "abrstar"\n'
    sc.write_text(base.format(v="v.mpd") + 'abr_params = {partial = true}\n[client.data_plane]\nkind = "sprint-x"\n')
    r = qoelab_cli("run", str(sc), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "data_plane" in r.stderr, r.stderr
    sc.write_text(base.format(v="synthetic:sabre-bbb") + 'abr_params = {partial = true}\n')
    r = qoelab_cli("run", str(sc), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "partial" in r.stderr and "VOXEL" in r.stderr, r.stderr
