"""Every example scenario validates; the short ones run."""

import glob
import os

import pytest

from conftest import REPO, data_dir, qoelab_cli

EXAMPLES = sorted(glob.glob(os.path.join(REPO, "scenarios", "*.toml")))


def test_there_are_examples():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_validates_and_has_a_header(path):
    text = open(path).read()
    assert text.startswith("#"), "every example starts with a header comment"
    if "data:" in text and not os.path.isdir(data_dir()):
        pytest.skip(f"needs the shared data folder ({data_dir()})")
    r = qoelab_cli("validate", path)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_video_example_runs(tmp_path):
    r = qoelab_cli("run", os.path.join(REPO, "scenarios", "video-two-clients-fqcodel.toml"), "--out", str(tmp_path / "o"),
                   "--json")
    assert r.returncode == 0, r.stderr
    import json
    s = json.loads(r.stdout)
    assert len(s["clients"]) == 2
    assert all(c["segments"] == 90 for c in s["clients"])
    assert s["video"]["jfi_goodput"] > 0.9
    assert (tmp_path / "o" / "segments.parquet").exists()


def test_page_load_example_runs_and_fq_codel_loads_faster():
    import statistics

    import qoelab
    from qoelab import scenario
    path = os.path.join(REPO, "scenarios", "page-loads-beside-video.toml")
    fq = qoelab.run(path).summary
    raw = scenario.load(path).raw
    raw["topology"]["aqm"] = "pfifo"
    fifo = qoelab.run(scenario.from_dict(raw, src=path)).summary
    for s in (fq, fifo):
        assert len(s["pages"]) == 5 and all(p["objects_done"] == 52 for p in s["pages"])
    med = [statistics.median(p["plt_s"] for p in s["pages"]) for s in (fq, fifo)]
    assert med[0] < 0.75 * med[1], med
