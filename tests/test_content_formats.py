"""Sabre movie JSON and Minerva .dat/.vmaf export and import."""

import json
import os

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
    (tmp_path / "wide.dat").write_text("x 2 y 1.05 0.375\n\uff11000 500\n900 400\n")   # a full-width digit: was 1000
    with pytest.raises(InputError) as e:
        formats.import_minerva(str(tmp_path / "wide.dat"))
    assert "wide.dat:2" in str(e.value)
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


# ------------------------------------------------------------------ bad values: one InputError, nothing written

def _import_minerva_cli(tmp_path, capsys, dat, vmaf=None):
    (tmp_path / "v.dat").write_text(dat)
    if vmaf is not None:
        (tmp_path / "v.vmaf").write_text(vmaf)
    out = tmp_path / "t.json"
    rc = main(["video", "import", str(tmp_path / "v.dat"), "--format", "minerva", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists(), err
    assert err.count("\n") == 0 and "Traceback" not in err
    return err


@pytest.mark.parametrize("head, where", [
    ("chunk_duration nan bitrates 2000 1000", "seconds"),
    ("chunk_duration inf bitrates 2000 1000", "seconds"),
    ("chunk_duration 1e300 bitrates 2000 1000", "seconds"),
    ("chunk_duration -4 bitrates 2000 1000", "seconds"),
    ("chunk_duration 0 bitrates 2000 1000", "seconds"),
    ("chunk_duration 4 bitrates nan 1000", "bitrates"),
    ("chunk_duration 4 bitrates inf 1000", "bitrates"),
    ("chunk_duration 4 bitrates 1e300 1000", "bitrates"),
    ("chunk_duration 4 bitrates 1000 0", "bitrates"),
    ("chunk_duration 4 bitrates 1000 -500", "bitrates"),
    ("chunk_duration 4 bitrates 1000 2000", "highest first"),
])
def test_minerva_header_values(tmp_path, capsys, head, where):
    err = _import_minerva_cli(tmp_path, capsys, head + "\n500000 250000\n")
    assert "v.dat:1:" in err and where in err


@pytest.mark.parametrize("row, col", [
    ("500000 -250000", 2), ("99999999999999999999999 250000", 1), ("500000 0", 2), ("500000 nan", 2),
    ("inf 250000", 1), ("500000 250000.5", 2), ("500000 x", 2), ("9" * 5000 + " 1", 1),
])
def test_minerva_sizes(tmp_path, capsys, row, col):
    err = _import_minerva_cli(tmp_path, capsys, "chunk_duration 4 bitrates 2000 1000\n1000 500\n\n" + row + "\n")
    assert "v.dat:4:" in err and f"(column {col})" in err  # the file's own line number (blank lines count)


@pytest.mark.parametrize("vm, col", [("nan 80", 1), ("-5 1e308", 1), ("5 1e308", 2), ("inf 80", 1), ("80 100.5", 2)])
def test_minerva_vmaf_values(tmp_path, capsys, vm, col):
    err = _import_minerva_cli(tmp_path, capsys, "chunk_duration 4 bitrates 2000 1000\n500000 250000\n", vm + "\n")
    assert "v.vmaf:1:" in err and "[0, 100]" in err and f"(column {col})" in err


def test_minerva_unreadable_and_empty(tmp_path, capsys):
    (tmp_path / "v.dat").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="UTF-8"):
        formats.import_minerva(str(tmp_path / "v.dat"))
    _import_minerva_cli(tmp_path, capsys, "chunk_duration 4 bitrates 2000 1000\n")  # no chunk lines


def _sabre_cli(tmp_path, capsys, text):
    (tmp_path / "s.json").write_text(text)
    out = tmp_path / "t.json"
    rc = main(["video", "import", str(tmp_path / "s.json"), "--format", "sabre", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists(), err
    assert err.count("\n") == 0 and "s.json" in err
    return err


@pytest.mark.parametrize("dur, br, sizes, key", [
    ("1e308", "[500, 1000]", "[[8, 16]]", "segment_duration_ms"),
    ("1e300", "[500, 1000]", "[[8, 16]]", "segment_duration_ms"),
    ("1" + "0" * 400, "[500, 1000]", "[[8, 16]]", "segment_duration_ms"),
    ("NaN", "[500, 1000]", "[[8, 16]]", "segment_duration_ms"),
    ("-4000", "[500, 1000]", "[[8, 16]]", "segment_duration_ms"),
    ("true", "[500, 1000]", "[[8, 16]]", "segment_duration_ms"),
    ('"4000"', "[500, 1000]", "[[8, 16]]", "segment_duration_ms"),
    ("4000", "[500, 1e308]", "[[8, 16]]", "bitrates_kbps[1]"),
    ("4000", "[500, Infinity]", "[[8, 16]]", "bitrates_kbps[1]"),
    ("4000", "[0, 1000]", "[[8, 16]]", "bitrates_kbps[0]"),
    ("4000", "[1000, 500]", "[[8, 16]]", "bitrates_kbps[1]"),
    ("4000", "[500, 500.0001]", "[[8, 16]]", "bitrates_kbps[1]"),  # equal in whole bit/s
    ("4000", "[500, 1000]", "[[1e308, 16]]", "segment_sizes_bits[0][0]"),
    ("4000", "[500, 1000]", "[[-1, 16]]", "segment_sizes_bits[0][0]"),
    ("4000", "[500, 1000]", "[[8, 0]]", "segment_sizes_bits[0][1]"),
    ("4000", "[500, 1000]", "[[8, 16], 5]", "segment_sizes_bits[1]"),
    ("4000", "[500, 1000]", "[]", "segment_sizes_bits"),
    ("4000", "7", "[[8, 16]]", "bitrates_kbps"),
])
def test_sabre_values(tmp_path, capsys, dur, br, sizes, key):
    err = _sabre_cli(tmp_path, capsys, f'{{"segment_duration_ms": {dur}, "bitrates_kbps": {br}, "segment_sizes_bits": {sizes}}}')
    assert f"s.json:{key}:" in err


def test_sabre_json_limits(tmp_path, capsys):
    big = "9" * 5000
    err = _sabre_cli(tmp_path, capsys, f'{{"segment_duration_ms": 4000, "bitrates_kbps": [500, {big}], "segment_sizes_bits": [[8, 16]]}}')
    assert "4300 digits" in err
    assert "nested too deeply" in _sabre_cli(tmp_path, capsys, "[" * 100_000 + "]" * 100_000)
    assert "JSON object" in _sabre_cli(tmp_path, capsys, "[1]")
    assert "s.json:1:" in _sabre_cli(tmp_path, capsys, "{")


def _table(tmp_path, video, meta=None):
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"format": "qoelab-content/1", "video": video, "meta": meta or {}}))
    return t


def _export_cli(tmp_path, capsys, table, fmt, out):
    rc = main(["video", "export", str(table), "--format", fmt, "--out", str(out)])
    return rc, capsys.readouterr().err.strip()


BAD_TABLES = [
    ({"sizes": [[-250000, 500000, 1], [1, 2, 3]]}, "sizes[0][0]"),
    ({"sizes": [[0, 1, 2], [1, 2, 3]]}, "sizes[0][0]"),
    ({"sizes": [[10**23, 1, 2], [1, 2, 3]]}, "sizes[0][0]"),
    ({"sizes": [["x", 1, 2], [1, 2, 3]]}, "sizes[0][0]"),
    ({"sizes": [[1.5, 1, 2], [1, 2, 3]]}, "sizes[0][0]"),
    ({"bitrates_bps": [0, 560_000, 1_050_000]}, "bitrates_bps"),
    ({"bitrates_bps": ["a", 560_000, 1_050_000]}, "bitrates_bps"),
    ({"bitrates_bps": [160_000, 560_000, 10**13]}, "bitrates_bps"),
    ({"segment_duration": 10**300}, "segment_duration"),
    ({"segment_duration": 1e300}, "segment_duration"),
    ({"segment_duration": -1}, "segment_duration"),
    ({"quality": {"vmaf": [[float("nan"), 1, 2], [1, 2, 3]]}}, "quality.vmaf[0][0]"),
    ({"quality": {"vmaf": [[1, 2, 101], [1, 2, 3]]}}, "quality.vmaf[0][2]"),
    ({"quality": {"vmaf": [[1, 2, 3], [-5, 2, 3]]}}, "quality.vmaf[1][0]"),
    ({"quality": {"ssim": [[1, 2, 3], [float("inf"), 2, 3]]}}, "quality.ssim[1][0]"),
    ({"quality": {"vmaf": 5}}, "quality.vmaf"),
    ({"quality": [1]}, "quality"),
]


@pytest.mark.parametrize("fmt", ["sabre", "minerva"])
@pytest.mark.parametrize("change, key", BAD_TABLES)
def test_export_checks_the_table(tmp_path, capsys, fmt, change, key):
    """A hand-edited table that breaks the rules: one line naming the table and key, exit 2, no output."""
    t = _table(tmp_path, {**VIDEO, **change})
    out = tmp_path / ("e.json" if fmt == "sabre" else "m")
    rc, err = _export_cli(tmp_path, capsys, t, fmt, out)
    assert rc == 2 and err.count("\n") == 0 and f"t.json:{key}" in err, err
    assert not any(p.name.startswith(("e.", "m.")) for p in tmp_path.iterdir())
    with pytest.raises(InputError):  # the API checks too
        (formats.export_sabre if fmt == "sabre" else formats.export_minerva)({**VIDEO, **change}, str(out))


def test_export_bad_json_and_meta(tmp_path, capsys):
    t = tmp_path / "t.json"
    for text, what in (("[" * 100_000 + "]" * 100_000, "nested too deeply"),
                       ('{"video": {"sizes": [[' + "9" * 5000 + "]]}}", "4300 digits"),
                       (json.dumps({"video": VIDEO, "meta": [1]}), "t.json:meta"),
                       # a later format was read as this one; a table without its video named format, meta
                       (json.dumps({"format": "qoelab-content/999", "video": VIDEO}), "t.json:format: expected "
                                                                                     "qoelab-content/1"),
                       (json.dumps({"format": "qoelab-content/1", "meta": {}}), "t.json:video: expected the table's"),
                       ("{", "t.json:1:")):
        t.write_text(text)
        rc, err = _export_cli(tmp_path, capsys, t, "sabre", tmp_path / "e.json")
        assert rc == 2 and what in err and err.count("\n") == 0, err
    assert not (tmp_path / "e.json").exists()


def test_import_then_export_never_carries_bad_sizes(tmp_path, capsys):
    """The reported chain: a .dat with a negative size no longer becomes a table that exports to Sabre."""
    _import_minerva_cli(tmp_path, capsys, "chunk_duration 4 bitrates 2000 1000\n500000 -250000\n")
    t = _table(tmp_path, {**VIDEO, "sizes": [[-250000, 500000, 1], [1, 2, 3]]})
    rc, err = _export_cli(tmp_path, capsys, t, "sabre", tmp_path / "e.json")
    assert rc == 2 and not (tmp_path / "e.json").exists()


def test_minerva_export_pairs_files(tmp_path, capsys):
    no_vmaf = {**VIDEO, "quality": {}}
    # an old .vmaf next to the .dat would be read with it: removed when the table has no VMAF
    (tmp_path / "m.vmaf").write_text("1 2 3\n")
    assert formats.export_minerva(no_vmaf, str(tmp_path / "m")) == [str(tmp_path / "m.dat")]
    assert not (tmp_path / "m.vmaf").exists()
    assert formats.import_minerva(str(tmp_path / "m.dat"))["quality"] == {}
    # the .vmaf path cannot be written: refused before the .dat is written
    (tmp_path / "n.vmaf").mkdir()
    rc, err = _export_cli(tmp_path, capsys, _table(tmp_path, VIDEO), "minerva", tmp_path / "n")
    assert rc == 2 and "n.vmaf" in err and not (tmp_path / "n.dat").exists()


def test_exact_durations_and_low_bitrates_roundtrip(tmp_path):
    """Sub-ms durations and fractional kbit/s survive both formats; a ladder below 100 kbit/s is written in
    Mbit/s for Minerva (the import reads values < 100 as Mbit/s)."""
    v = {**VIDEO, "segment_duration": 33_366_667, "bitrates_bps": [64_123, 96_000, 99_999], "quality": {}}
    formats.export_sabre(v, str(tmp_path / "s.json"))
    back = formats.import_sabre(str(tmp_path / "s.json"))
    assert back["segment_duration"] == v["segment_duration"] and back["bitrates_bps"] == v["bitrates_bps"]
    formats.export_minerva(v, str(tmp_path / "m"))
    assert (tmp_path / "m.dat").read_text().startswith("chunk_duration 0.033366667 bitrates 0.099999 0.096 0.064123\n")
    back = formats.import_minerva(str(tmp_path / "m.dat"))
    assert back["segment_duration"] == v["segment_duration"] and back["bitrates_bps"] == v["bitrates_bps"]
    assert back["sizes"] == v["sizes"]


def test_corpus_clip_exports(tmp_path, capsys):
    assert main(["video", "export", "noise", "--format", "minerva", "--out", str(tmp_path / "n")]) == 0
    assert main(["video", "import", str(tmp_path / "n.dat"), "--format", "minerva", "--out", str(tmp_path / "t.json")]) == 0
    assert corpus.load_video(str(tmp_path / "t.json"))["sizes"] == corpus.load_video("noise")["sizes"]


def test_import_reads_only_regular_files_of_bounded_size(tmp_path, monkeypatch):
    """A FIFO blocked `video import` forever and a 120 MB movie ran out of memory while parsing."""
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"f\.json: expected a regular file \(a Sabre movie JSON\), found a device"):
        formats.import_sabre(str(fifo))
    monkeypatch.setattr(formats, "MAX_IMPORT_BYTES", 100)
    big = tmp_path / "big.json"
    big.write_text('{"segment_duration_ms": 4000, "bitrates_kbps": [1], "segment_sizes_bits": [' + "[8]," * 40 + "[8]]}")
    with pytest.raises(InputError, match=r"big\.json: expected a Sabre movie JSON of at most 100 bytes, found 240 bytes"):
        formats.import_sabre(str(big))


def test_export_reads_manifests_and_size_folders(tmp_path, capsys):
    """`video export` says "any loadable video": an MPD was parsed as JSON ("expected valid JSON")."""
    from qoelab.content import mpd as writer
    reps = [{"id": i, "file": f"r{i}.mp4", "width": 640, "height": 360, "codec": "avc1.64001f", "timescale": 15360,
             "init_end": 800, "ranges": [(800 + k * sz, 800 + (k + 1) * sz) for k in range(3)], "bandwidth": bw}
            for i, (bw, sz) in enumerate(((300000, 75000), (600000, 150000)))]
    m = tmp_path / "m.mpd"
    writer.write(str(m), reps, duration_s=6.0, seg_frames=48, fps=24, min_buffer_s=2.0)
    rc, err = _export_cli(tmp_path, capsys, m, "sabre", tmp_path / "e.json")
    assert rc == 0, err
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["bitrates_kbps"] == [300, 600] and doc["segment_sizes_bits"][0] == [75000 * 8, 150000 * 8]
