"""The hd corpus and what it needs: the hd ladder, SSIM/PSNR on every N-th frame, the uncompressed
reference that is dropped once every rung is cached, corpus sets, and the corpus' shape and spread
(issue 9 item 5: >= 16 clips, monotone VMAF curves, the p20-p80 span at 1 Mbit/s >= 20 points, >= 30%
of clips below VMAF 95 at the top rung, top rungs at 720p/1080p, >= 60 s per clip)."""

import json
import math
import os
import subprocess
import sys

import pytest

from qoelab.content import corpus, ladder, report
from qoelab.content import pipeline as pl
from qoelab.errors import InputError

HD = corpus.corpus_dir("hd")
HD_CLIPS = corpus.list_videos(HD) if os.path.isfile(os.path.join(HD, "manifest.json")) else []
need_hd = pytest.mark.skipif(len(HD_CLIPS) < len(corpus.HD_CLIPS),
                             reason="the hd corpus is not (completely) generated: qoelab video corpus regenerate --set hd")


def test_hd_ladder():
    rungs = ladder.parse("hd")
    assert [r.bitrate for r in rungs] == [200_000, 400_000, 650_000, 1_000_000, 1_600_000, 2_500_000, 4_000_000,
                                          6_000_000]
    assert [r.height for r in rungs] == [240, 360, 480, 720, 720, 720, 1080, 1080]
    assert all(r.width % 2 == 0 for r in rungs)


def test_corpus_sets():
    assert corpus.corpus_dir("hd").endswith("corpus-hd") and corpus.corpus_dir("sd").endswith("corpus")
    with pytest.raises(InputError):
        corpus.corpus_dir("4k")
    assert len(corpus.HD_CLIPS) >= 16 and not set(corpus.HD_CLIPS) & set(corpus.CLIPS)
    from qoelab.content import sources
    assert all(c in sources.SOURCES for c in corpus.HD_CLIPS)
    p = corpus.corpus_params(cset="hd")
    assert (p.width, p.height, p.reference_codec, p.ssim_psnr_step) == (1920, 1080, "rawvideo", 4)
    with pytest.raises(InputError):
        corpus.find_video("no-such-clip")


def _params(tmp_path, **kw):
    return pl.Params(width=96, height=54, fps=8, segment_s=1.0, duration_s=2.0, ladder=ladder.parse("64x36@40k,96x54@80k"),
                     vmaf_subsample=2, preset="ultrafast", jobs=2, cache=str(tmp_path / "cache"), **kw)


def test_ssim_psnr_step_and_dropped_raw_reference(tmp_path):
    p = _params(tmp_path, ssim_psnr_step=4, reference_codec="rawvideo")
    doc = pl.prepare("gen:testsrc2", None, p, name="t", progress=False)
    rows = [r for r in doc["_frames"] if r["rung"] == 1]
    idx = sorted(r["segment"] * 8 + r["pts_idx"] for r in rows)
    by = {r["segment"] * 8 + r["pts_idx"]: r for r in rows}
    assert idx == list(range(16))
    for i in idx:   # SSIM and PSNR on frames 0, 4, 8, 12 only; VMAF on every 2nd
        assert math.isnan(by[i]["ssim"]) == (i % 4 != 0), i
        assert math.isnan(by[i]["psnr"]) == (i % 4 != 0), i
        assert math.isnan(by[i]["vmaf"]) == (i % 2 != 0), i
    seg0 = doc["video"]["quality"]["ssim"][0][1]
    assert seg0 == pytest.approx((by[0]["ssim"] + by[4]["ssim"]) / 2, abs=1e-4)
    assert doc["meta"]["ssim_psnr_step"] == 4
    cache = tmp_path / "cache"
    assert not [d for d in os.listdir(cache) if d.startswith("ref-")]     # dropped: every rung step is cached
    # a re-run hits every step and does not render the reference again
    doc2 = pl.prepare("gen:testsrc2", None, p, name="t", progress=False)
    assert doc2["video"] == doc["video"]
    assert all(doc2["meta"]["timing"][k]["cached"] for k in ("encode", "frames", "measure"))
    assert not [d for d in os.listdir(cache) if d.startswith("ref-")]


def test_ffv1_reference_is_kept_and_every_frame_measured(tmp_path):
    p = _params(tmp_path)
    doc = pl.prepare("gen:testsrc2", None, p, name="t", progress=False)
    assert all(not math.isnan(r["ssim"]) for r in doc["_frames"])
    assert [d for d in os.listdir(tmp_path / "cache") if d.startswith("ref-")]
    assert "ssim_psnr_step" not in doc["meta"]


def test_cli_set_is_checked():
    r = subprocess.run([sys.executable, "-m", "qoelab.cli", "video", "corpus", "list", "--set", "4k"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--set" in r.stderr


# ------------------------------------------------------------------------------ the committed hd corpus

def _clip_means(name):
    v = corpus.load_video(name)
    q = v["quality"]
    return v, {m: [sum(row[r] for row in q[m]) / len(q[m]) for r in range(len(v["bitrates_bps"]))] for m in q}


@need_hd
def test_hd_corpus_shape():
    man = json.load(open(os.path.join(HD, "manifest.json")))
    assert man["set"] == "hd" and man["params"]["ladder"] == "hd" and "--set hd" in man["regenerate"]
    assert HD_CLIPS == corpus.HD_CLIPS
    for name in HD_CLIPS:
        v, means = _clip_means(name)
        assert len(v["sizes"]) * v["segment_duration"] >= 60e9
        assert set(v["quality"]) == {"vmaf", "ssim", "psnr"}
        assert all(not math.isnan(x) for t in v["quality"].values() for row in t for x in row)
        assert v["resolutions"][-1] == [1920, 1080] and v["resolutions"][-3] == [1280, 720]
        assert len(corpus.load_frames(name)) == len(v["sizes"]) * 8 * 96
        # monotone: every rung at least as good as the one below it (clip means), within 0.05 points of
        # measurement noise (storm: 81.284 at 720p/2.5 Mbit/s, 81.283 at 1080p/4 Mbit/s)
        dips = [(i, a - b) for i, (a, b) in enumerate(zip(means["vmaf"], means["vmaf"][1:])) if b < a - 0.05]
        assert not dips, (name, means["vmaf"])


@need_hd
def test_hd_corpus_spreads_like_genres():
    sp = report.genre_spread(HD)
    assert sp["p80_p20_at_1mbit"] >= 20, sp
    assert sp["frac_below_95_top"] >= 0.30, sp
