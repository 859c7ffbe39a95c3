"""Sabre movie JSON and Minerva .dat/.vmaf export and import."""

import json

import pytest

from qoelab.content import corpus, formats
from qoelab.content.cli import main
from qoelab.errors import InputError

VIDEO = {
    "name": "toy",
    "segment_duration": 4_000_000_000,
    "last_segment_duration": None,
    "bitrates_bps": [160_000, 560_000, 1_050_000],
    "sizes": [[80_001, 280_010, 525_000], [70_000, 250_000, 510_003]],
    "quality": {"vmaf": [[40.5, 70.25, 85.125], [38.0, 69.0, 84.0]], "ssim": [[0.9, 0.95, 0.97], [0.9, 0.95, 0.97]]},
    "resolutions": [[256, 144], [640, 360], [640, 360]],
}


def test_sabre_roundtrip(tmp_path):
    p = tmp_path / "movie.json"
    formats.export_sabre(VIDEO, str(p))
    doc = json.loads(p.read_text())
    assert doc["segment_duration_ms"] == 4000
    assert doc["bitrates_kbps"] == [160, 560, 1050]
    assert doc["segment_sizes_bits"][0] == [8 * 80_001, 8 * 280_010, 8 * 525_000]
    v = formats.import_sabre(str(p))
    assert v["sizes"] == VIDEO["sizes"] and v["bitrates_bps"] == VIDEO["bitrates_bps"]
    assert v["segment_duration"] == VIDEO["segment_duration"] and v["quality"] == {}
    assert corpus.load_video(str(p))["sizes"] == VIDEO["sizes"]  # load_video detects Sabre JSON


def test_minerva_roundtrip(tmp_path):
    files = formats.export_minerva(VIDEO, str(tmp_path / "toy.dat"))
    assert [f.rsplit(".", 1)[1] for f in files] == ["dat", "vmaf"]
    lines = (tmp_path / "toy.dat").read_text().splitlines()
    assert lines[0] == "chunk_duration 4 bitrates 1050 560 160"  # highest first
    assert lines[1] == "525000 280010 80001"
    assert (tmp_path / "toy.vmaf").read_text().splitlines()[0] == "85.1250 70.2500 40.5000"
    v = formats.import_minerva(str(tmp_path / "toy.dat"))
    assert v["sizes"] == VIDEO["sizes"] and v["bitrates_bps"] == VIDEO["bitrates_bps"]
    assert v["quality"]["vmaf"] == VIDEO["quality"]["vmaf"]
    assert corpus.load_video(str(tmp_path / "toy.dat"))["quality"]["vmaf"] == VIDEO["quality"]["vmaf"]


def test_minerva_mbit_bitrates_and_errors(tmp_path):
    (tmp_path / "m.dat").write_text("x 2 y 1.05 0.375\n1000 500\n900 400\n")
    v = formats.import_minerva(str(tmp_path / "m.dat"))
    assert v["bitrates_bps"] == [375_000, 1_050_000] and v["sizes"] == [[500, 1000], [400, 900]]
    (tmp_path / "bad.dat").write_text("x 2 y 1.05 0.375\n1000\n")
    with pytest.raises(InputError) as e:
        formats.import_minerva(str(tmp_path / "bad.dat"))
    assert "bad.dat:2" in str(e.value)
    (tmp_path / "bad.json").write_text('{"segment_duration_ms": 4000, "bitrates_kbps": [1, 2]}')
    with pytest.raises(InputError):
        formats.import_sabre(str(tmp_path / "bad.json"))


def test_cli_export_import(tmp_path, capsys):
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"format": "qoelab-content/1", "video": VIDEO, "meta": {}}))
    assert main(["video", "export", str(t), "--format", "sabre", "--out", str(tmp_path / "s.json")]) == 0
    assert main(["video", "import", str(tmp_path / "s.json"), "--format", "sabre", "--out", str(tmp_path / "back.json")]) == 0
    back = corpus.load_video(str(tmp_path / "back.json"))
    assert back["sizes"] == VIDEO["sizes"]
    assert main(["video", "export", str(t), "--format", "minerva", "--out", str(tmp_path / "m")]) == 0
    assert main(["video", "import", str(tmp_path / "m.dat"), "--format", "minerva", "--out", str(tmp_path / "mb.json")]) == 0
    assert corpus.load_video(str(tmp_path / "mb.json"))["quality"]["vmaf"] == VIDEO["quality"]["vmaf"]
    # bad input: one line on stderr, exit 2
    assert main(["video", "import", str(tmp_path / "nope.json"), "--format", "sabre", "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nope.json" in err
