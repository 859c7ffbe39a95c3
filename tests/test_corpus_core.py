"""The committed corpus loads through the core's Video model and streams in a scenario."""

import json

import pytest

import qoelab
from qoelab import _core
from qoelab.content import corpus

CLIPS = corpus.list_videos()


def test_corpus_has_twelve_clips():
    assert len(CLIPS) >= 12


@pytest.mark.parametrize("name", CLIPS)
def test_clip_parses_in_the_core(name):
    v = corpus.load_video(name)
    info = json.loads(_core.check_video(json.dumps(v)))
    assert info["segments"] >= 15 and info["rungs"] >= 8
    assert info["duration_s"] >= 60.0
    assert set(info["quality"]) >= {"vmaf", "ssim", "psnr"}


def test_core_rejects_a_broken_video():
    v = corpus.load_video(CLIPS[0])
    v["sizes"][3] = v["sizes"][3][:-1]
    with pytest.raises(ValueError) as e:
        _core.check_video(json.dumps(v))
    assert "sizes[3]" in str(e.value)


def test_corpus_clip_streams_with_vmaf_quality():
    d = {"scenario": {"name": "corpus", "duration": "70s"},
         "topology": {"rate": "2Mbps", "rtt": "40ms"},
         "client": [{"abr": "bolae", "video": f"corpus:{CLIPS[0]}", "abr_params": {"utility": "vmaf"},
                     "player": {"quality_metric": "vmaf"}}]}
    res = qoelab.run(d)
    c = res.summary["clients"][0]
    assert c["segments"] == 15
    assert 0 < c["avg_quality"] <= 100
    assert res.table("segments").quality.notna().all()


def test_a_corpus_variable_naming_a_file_is_one_line(tmp_path, monkeypatch):
    # $QOELAB_CORPUS set to a file: clips were looked up there and the error listed another set's
    from qoelab.content import corpus
    from qoelab.errors import InputError
    f = tmp_path / "movie.json"
    f.write_text("{}")
    monkeypatch.setenv("QOELAB_CORPUS", str(f))
    with pytest.raises(InputError) as e:
        corpus.find_video("slides")
    assert "$QOELAB_CORPUS: expected a corpus folder, found a file" in str(e.value)
