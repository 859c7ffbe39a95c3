"""The committed corpus: shape, frame tables, spread, and reproduction by its regeneration command."""

import hashlib
import json
import math
import os

import pandas as pd
import pytest

from qoelab.content import corpus, report

ROOT = corpus.corpus_dir()
CLIPS = corpus.list_videos(ROOT) if os.path.isdir(ROOT) else []
VIDEO_FIELDS = {"name", "segment_duration", "last_segment_duration", "bitrates_bps", "sizes", "quality",
                "resolutions", "byte_offsets"}


def test_corpus_size():
    assert len(CLIPS) >= 12
    man = json.load(open(os.path.join(ROOT, "manifest.json")))
    assert man["ffmpeg_version"].startswith("ffmpeg version")
    assert man["params"]["segment_s"] == 4.0 and man["params"]["duration_s"] >= 60
    assert "regenerate" in man["regenerate"]


@pytest.mark.parametrize("name", CLIPS)
def test_clip_loads_as_video_model(name):
    v = corpus.load_video(name)  # by name, through the loader the video model uses
    assert set(v) == VIDEO_FIELDS  # the core's Video has deny_unknown_fields
    assert isinstance(v["segment_duration"], int) and v["segment_duration"] == 4_000_000_000
    assert v["last_segment_duration"] is None
    assert len(v["sizes"]) >= 15 and len(v["bitrates_bps"]) >= 8
    assert v["bitrates_bps"] == sorted(set(v["bitrates_bps"]))
    assert all(isinstance(x, int) and x > 0 for row in v["sizes"] for x in row)
    assert set(v["quality"]) == {"vmaf", "ssim", "psnr"}
    for t in v["quality"].values():
        assert len(t) == len(v["sizes"]) and all(len(r) == len(v["bitrates_bps"]) for r in t)
        assert all(not math.isnan(x) for r in t for x in r)
    assert all(len(wh) == 2 for wh in v["resolutions"])
    doc = corpus.load_table(name)
    man = json.load(open(os.path.join(ROOT, "manifest.json")))
    entry = [c for c in man["clips"] if c["name"] == name][0]
    # the manifest hashes the committed table's video; the loader adds the byte layout of the rung files
    assert entry["video_sha256"] == hashlib.sha256(json.dumps(doc["video"], sort_keys=True).encode()).hexdigest()
    assert {k: x for k, x in v.items() if k != "byte_offsets"} == doc["video"]
    assert v["byte_offsets"][0] == [r["init_bytes"] for r in doc["meta"]["ladder"]]
    assert doc["meta"]["ffmpeg_version"] == man["ffmpeg_version"]
    assert doc["meta"]["commands"]["encode"] and doc["meta"]["commands"]["reference"]


@pytest.mark.parametrize("name", CLIPS)
def test_clip_frame_tables(name):
    v = corpus.load_video(name)
    f = corpus.load_frames(name)
    seg_frames = 96
    assert len(f) == len(v["sizes"]) * len(v["bitrates_bps"]) * seg_frames
    f = f.sort_values(["rung", "segment", "decode_idx"])
    first = f[f.decode_idx == 0]
    assert (first["type"] == "I").all() and (first["ref"] == -1).all()
    assert (f[f.type == "I"]["ref"] == -1).all()
    p = f[f.type != "I"]
    assert (p["type"] == "P").all()
    assert ((p["ref"] >= 0) & (p["ref"] < p["decode_idx"])).all()  # closed GOP, inside the segment
    assert ((f["weight"] >= 0) & (f["weight"] <= 1)).all()
    g = f.groupby(["rung", "segment"])
    last = g.tail(1).set_index(["rung", "segment"])
    head = g.head(1).set_index(["rung", "segment"])
    total = g["size"].sum()
    for (r, s), end in (last["offset"] + last["size"]).items():
        # the frames fill the segment after moof + mdat header: sizes add up to the segment size
        assert end == v["sizes"][s][r]
        assert total[(r, s)] + head.loc[(r, s), "offset"] == v["sizes"][s][r]


def test_spread_at_1mbit_like_genres():
    sp = report.spread(ROOT)
    assert sp["spread"] >= 25, sp


def test_regeneration_reproduces_a_clip():
    # quick form of `qoelab video corpus verify --clip testsrc2`: first segment, three rungs, fresh cache.
    # Rung 1 is one whose encode x264's AVX-512 code paths change (pipeline.x264_asm)
    diffs = corpus.verify("testsrc2", ROOT, jobs=2, nice=10, progress=False, segments=1, rungs=[0, 1, 5])
    assert diffs == []


def test_bad_corpus_directory_and_output_file_are_one_line(tmp_path):
    from conftest import qoelab_cli
    for argv, needle in ((["video", "corpus", "list", "--corpus", str(tmp_path / "nope")], "--corpus: expected"),
                         (["video", "corpus", "plot", "--corpus", str(tmp_path)], "holds no corpus clips"),
                         (["video", "export", "testsrc2", "--format", "sabre", "--out", str(tmp_path)],
                          "--out names a directory")):
        r = qoelab_cli(*argv)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr, (argv, r.stderr)


def test_x264_capped_at_avx2_where_the_cpu_has_it(monkeypatch, tmp_path):
    import builtins
    from qoelab.content import pipeline as pl
    real_open = builtins.open
    for flags, machine, want in (("fpu sse2 avx avx2 fma bmi1 bmi2 abm avx512f", "x86_64", ":asm=AVX2"),
                                 ("fpu sse2 avx", "x86_64", ""), ("fp asimd", "aarch64", "")):
        (tmp_path / "cpuinfo").write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        monkeypatch.setattr("platform.machine", lambda m=machine: m)
        monkeypatch.setattr(builtins, "open", lambda f, *a, **k: real_open(tmp_path / "cpuinfo", *a, **k)
                            if f == "/proc/cpuinfo" else real_open(f, *a, **k))
        pl.x264_asm.cache_clear()
        assert pl.x264_asm() == want, (flags, machine)
    monkeypatch.undo()
    pl.x264_asm.cache_clear()


def test_damaged_corpus_copies_are_one_line(tmp_path):
    """A deeply nested manifest was an internal RecursionError; `"meta": "x"` an AttributeError; a clip
    without VMAF a KeyError in `plot`; negative sizes were accepted (and named the scenario later); a
    clip file that is a FIFO or folder was "no such clip"."""
    import shutil
    from qoelab.errors import InputError
    src = corpus.corpus_dir()

    def copy(name):
        d = tmp_path / name
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("frames"))
        return d
    d = copy("nested")
    (d / "manifest.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(InputError, match="manifest.json: expected valid JSON, found lists or objects nested too"):
        corpus.list_videos(str(d))
    assert corpus.set_of(str(d)) == "sd"
    d = copy("meta")
    doc = json.loads((d / "noise.json").read_text())
    (d / "noise.json").write_text(json.dumps(dict(doc, meta="x")))
    with pytest.raises(InputError, match="noise.json:meta: expected an object, found 'x'"):
        corpus.load_table(str(d / "noise.json"))
    assert corpus.load_video(str(d / "noise.json"))["sizes"] == doc["video"]["sizes"]
    d = copy("neg")
    bad = json.loads(json.dumps(doc))
    bad["video"]["sizes"][0][0] = -5
    (d / "noise.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"noise.json:sizes\[0\]\[0\]: expected an integer byte count >= 0, found -5"):
        corpus.load_video(str(d / "noise.json"))
    noq = dict(doc["video"], quality={})
    with pytest.raises(InputError, match="quality.vmaf: expected a vmaf table"):
        report.rate_quality(noq)
    d = copy("fifo")
    (d / "noise.json").unlink()
    os.mkfifo(d / "noise.json")
    with pytest.raises(InputError, match="noise.json: expected a corpus clip's table \\(a regular file\\), found a "
                                         "device, pipe or socket"):
        corpus.load_table(str(d / "noise.json"))
