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
