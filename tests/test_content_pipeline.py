"""The content pipeline end to end on a short generated source (real ffmpeg, real encodes)."""

import json
import math
import os

import av
import pytest

from conftest import qoelab_cli
from qoelab.content import corpus
from qoelab.content import ffmpeg as ff
from qoelab.content import ladder as lad
from qoelab.content import measure as meas
from qoelab.content import mp4, mpd
from qoelab.content import pipeline as pl
from qoelab.errors import InputError
from qoelab.video import load_mpd

LADDER = "160x90@90k,320x180@250k,320x180@700k"


def params(cache, **kw):
    base = dict(width=320, height=180, fps=24, segment_s=2.0, duration_s=6.0, ladder=lad.parse(LADDER),
                vmaf_subsample=1, preset="veryfast", jobs=2, nice=10, cache=str(cache))
    base.update(kw)
    return pl.Params(**base)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("prep")
    out = root / "out"
    doc = pl.prepare("gen:testsrc2", str(out), params(root / "cache"), progress=False)
    return root, out, doc


def test_mpd_ranges_cover_files_and_match_sizes(prepared):
    _, out, doc = prepared
    m = mpd.read(str(out / "manifest.mpd"))
    v = doc["video"]
    assert len(m["representations"]) == 3
    assert m["duration"] == "PT6.000S"
    for r, rep in enumerate(m["representations"]):
        path = out / rep["file"]
        assert path.is_file()
        assert rep["codec"].startswith("avc1.64")
        assert rep["duration"] == 2 * rep["timescale"]
        a, b = rep["init"]
        assert a == 0
        pos = b
        for s, (x, y) in enumerate(rep["segments"]):
            assert x == pos, "byte ranges must be contiguous"
            assert y - x == v["sizes"][s][r], "table size == byte range length"
            pos = y
        assert pos == os.path.getsize(path), "init + segments cover the file exactly"
        # and the file is a valid, decodable stream of the whole clip
        with av.open(str(path)) as c:
            n = sum(1 for _ in c.decode(video=0))
        assert n == 6 * 24
    # bandwidths ascending and close to the nominal bitrates
    bws = [rep["bandwidth"] for rep in m["representations"]]
    assert bws == sorted(bws)
    # the byte layout the corpus loader gives the table (init segment, then the segments back to back)
    # is the one the MPD loader reads from the written manifest's ranges
    lay = corpus.with_layout(doc)["byte_offsets"]
    assert lay is not None and load_mpd(str(out / "manifest.mpd"))["byte_offsets"] == lay


def test_every_segment_measured_and_quality_rises(prepared):
    _, _, doc = prepared
    v = doc["video"]
    assert v["segment_duration"] == 2_000_000_000 and v["last_segment_duration"] is None
    assert len(v["sizes"]) == 3
    for m in ("vmaf", "ssim", "psnr"):
        t = v["quality"][m]
        assert len(t) == 3 and all(len(row) == 3 for row in t)
        assert all(not math.isnan(x) for row in t for x in row)
    for s in range(3):
        for m in ("vmaf", "ssim", "psnr"):
            row = v["quality"][m][s]
            assert row[0] < row[1] < row[2], (m, s, row)
        assert 0 <= min(v["quality"]["vmaf"][s]) and max(v["quality"]["vmaf"][s]) <= 100
        assert 0 < min(v["quality"]["ssim"][s]) and max(v["quality"]["ssim"][s]) <= 1
        assert v["sizes"][s][0] < v["sizes"][s][1] < v["sizes"][s][2]
    # the table file is what load_video returns, plus the byte layout of the rung files
    from qoelab.content.corpus import load_video

    loaded = load_video(str(prepared[1] / "table.json"))
    assert {k: x for k, x in loaded.items() if k != "byte_offsets"} == v
    assert loaded["byte_offsets"] == corpus.with_layout(doc)["byte_offsets"]


def test_frame_tables(prepared):
    _, out, doc = prepared
    import pandas as pd

    f = pd.read_parquet(out / "frames.parquet")
    for r, rm in enumerate(doc["meta"]["ladder"]):
        idx = mp4.index(str(out / rm["file"]))
        for s, frag in enumerate(idx.fragments):
            g = f[(f.rung == r) & (f.segment == s)].sort_values("decode_idx")
            assert len(g) == 48
            # sizes add up to the segment's media bytes; the rest is the moof box + mdat header
            assert int(g["size"].sum()) + frag.moof_size + frag.mdat_header == doc["video"]["sizes"][s][r]
            assert int(g["size"].sum()) == sum(frag.sample_sizes)
            # offsets inside the segment are contiguous, starting after moof + mdat header
            offs = list(g["offset"])
            sizes = list(g["size"])
            assert offs[0] == frag.moof_size + frag.mdat_header
            assert all(offs[i] + sizes[i] == offs[i + 1] for i in range(len(offs) - 1))
            # closed GOP: the first frame is I with no reference, every reference is inside the segment
            assert g.iloc[0]["type"] == "I"
            for _, row in g.iterrows():
                if row["type"] == "I":
                    assert row["ref"] == -1 and row["weight"] == 0
                else:
                    assert row["type"] == "P"
                    assert 0 <= row["ref"] < row["decode_idx"]
                    assert 0 <= row["weight"] <= 1
            assert list(g["pts_idx"]) == list(range(48))
    assert set(f.columns) >= {"vmaf", "ssim", "psnr", "weight", "ref", "offset", "size", "type"}


def test_reference_weight_sees_scene_cuts(tmp_path):
    # scene-cuts switches generator every 2.5 s: frame 60 of the 4-s segment is a cut coded as a P frame,
    # which must be (almost) entirely intra, while frames within a scene are mostly predicted.
    p = params(tmp_path / "c", width=160, height=90, duration_s=4.0, segment_s=4.0,
               ladder=lad.parse("160x90@300k"), metrics=["ssim"])
    doc = pl.prepare("gen:scene-cuts", None, p, progress=False)
    rows = [r for r in doc["_frames"] if r["segment"] == 0]
    cut = rows[60]
    assert cut["type"] == "P"
    assert cut["weight"] < 0.3
    inside = sorted(r["weight"] for r in rows[1:60])
    assert inside[len(inside) // 2] > 0.8


def test_mp4_index_reads_the_boxes_not_the_media(prepared, tmp_path):
    """The index is the one a whole-file parse gives, from a fraction of the bytes (rungs of several GB
    were read whole); a file cut short or garbled is one InputError."""
    _, out, doc = prepared
    path = str(out / doc["meta"]["ladder"][2]["file"])
    with open(path, "rb") as f:
        whole = f.read()
    assert mp4.index(path) == mp4._index(whole, path)
    read = []

    class Counting(mp4._FileBuf):
        WINDOW = 4096    # (this rung is small: 3 segments of ~160 kB; the default window is 64 KiB)

        def _get(self, a, b):
            before = (self.base, len(self.data))
            got = super()._get(a, b)
            if (self.base, len(self.data)) != before:
                read.append(len(self.data))
            return got
    with open(path, "rb") as f:
        assert mp4._index(Counting(f), path) == mp4.index(path)
    media = sum(sum(fr.sample_sizes) for fr in mp4.index(path).fragments)
    assert sum(read) < (len(whole) - media) + 4 * 4096 * 8, (sum(read), len(whole), media)   # boxes, not media
    for cut in (len(whole) // 3, len(whole) - 5, 20):
        (tmp_path / "cut.mp4").write_bytes(whole[:cut])
        with pytest.raises(InputError):
            mp4.index(str(tmp_path / "cut.mp4"))
    (tmp_path / "garbled.mp4").write_bytes(whole[:40] + bytes(range(256)) * 8)
    with pytest.raises(InputError):
        mp4.index(str(tmp_path / "garbled.mp4"))


def test_tail_dropped_segment_decodes_with_lower_ssim(prepared):
    root, out, doc = prepared
    ffm = ff.find_ffmpeg()
    r, s = 2, 1
    path = str(out / doc["meta"]["ladder"][r]["file"])
    frag = mp4.index(path).fragments[s]
    ref = None
    for d in os.listdir(root / "cache"):
        if d.startswith("ref-"):
            ref = str(root / "cache" / d / "reference.nut")
    n = len(frag.sample_sizes)
    full = meas.measure_partial(ffm, path, frag, ref, s * n, 320, 180, 24, n, ("ssim",))["ssim"]
    # the intact segment decoded alone measures what the whole-stream measurement said
    assert abs(full - doc["video"]["quality"]["ssim"][s][r]) < 2e-3
    dropped = meas.measure_partial(ffm, path, frag, ref, s * n, 320, 180, 24, n - 24, ("ssim",))["ssim"]
    assert dropped < full - 0.01
    fewer = meas.measure_partial(ffm, path, frag, ref, s * n, 320, 180, 24, 1, ("ssim",))["ssim"]
    assert fewer < dropped


def test_rerun_skips_everything_and_is_identical(prepared, tmp_path):
    root, out, doc = prepared
    doc2 = pl.prepare("gen:testsrc2", str(tmp_path / "again"), params(root / "cache"), progress=False)
    assert all(t["cached"] for t in doc2["meta"]["timing"].values())
    assert doc2["video"] == doc["video"]
    # a new metric selection re-measures but does not re-encode
    doc3 = pl.prepare("gen:testsrc2", None, params(root / "cache", metrics=["psnr"]), progress=False)
    t = doc3["meta"]["timing"]
    assert t["encode"]["cached"] and t["frames"]["cached"] and not t["measure"]["cached"]
    assert doc3["video"]["quality"]["psnr"] == doc["video"]["quality"]["psnr"]


def test_unreadable_input_is_one_line_error_and_no_output(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"this is not a video" * 100)
    out = tmp_path / "out"
    with pytest.raises(InputError) as e:
        pl.prepare(str(bad), str(out), params(tmp_path / "c"), progress=False)
    assert "\n" not in str(e.value) and str(bad) in str(e.value)
    assert not out.exists()
    assert not [x for x in os.listdir(tmp_path) if "partial" in x]
    with pytest.raises(InputError):
        pl.prepare(str(tmp_path / "missing.mkv"), str(out), params(tmp_path / "c"), progress=False)
    with pytest.raises(InputError):
        pl.prepare("gen:nope", str(out), params(tmp_path / "c"), progress=False)


def test_missing_ffmpeg_features_are_named():
    ffm = ff.find_ffmpeg()
    with pytest.raises(InputError) as e:
        ff.check(ffm, filters=("no_such_filter_xyz",), encoders=("no_such_encoder",))
    msg = str(e.value)
    assert "filter no_such_filter_xyz" in msg and "encoder no_such_encoder" in msg and "\n" not in msg
    ff.check(ffm)  # the default ffmpeg has everything the pipeline needs
    with pytest.raises(InputError):
        ff.find_ffmpeg("/nonexistent/ffmpeg")


def test_failed_run_leaves_previous_output_intact(prepared, tmp_path):
    _, out, doc = prepared
    before = sorted(os.listdir(out))
    with pytest.raises(InputError):
        pl.prepare(str(tmp_path / "missing.mkv"), str(out), params(tmp_path / "c"), progress=False)
    assert sorted(os.listdir(out)) == before
    assert json.load(open(out / "table.json"))["video"] == doc["video"]


def test_ladder_parsing():
    t = lad.parse("table6.2")
    assert len(t) == 11 and t[0].bitrate == 160_000 and t[-1].bitrate == 5_800_000
    assert (t[-1].width, t[-1].height) == (1920, 1080)
    assert len(lad.parse("table6.2:720")) == 9
    c = lad.parse("corpus")
    assert len(c) == 8 and max(r.height for r in c) == 360
    with pytest.raises(InputError):
        lad.parse("640x360@750k,320x180@300k")
    with pytest.raises(InputError):
        lad.parse("banana")


def test_cli_prepare_and_errors(tmp_path, capsys):
    from qoelab.content.cli import main

    out = tmp_path / "o"
    rc = main(["video", "prepare", "gen:gradients", "--out", str(out), "--ladder", "96x54@40k,160x90@120k",
               "--display", "160x90", "--duration", "2", "--segment", "1s", "--vmaf-subsample", "2",
               "--preset", "veryfast", "--cache", str(tmp_path / "c"), "--no-progress", "--nice", "10"])
    assert rc == 0
    stdout = capsys.readouterr().out
    assert "2 segments x 2 rungs" in stdout and "frames/s" in stdout
    doc = json.load(open(out / "table.json"))
    assert doc["meta"]["vmaf_subsample"] == 2
    import pandas as pd

    f = pd.read_parquet(out / "frames.parquet")
    assert f["vmaf"].isna().sum() == len(f) // 2  # every other frame has no VMAF
    assert f["ssim"].notna().all()
    rc = main(["video", "prepare", str(tmp_path / "nope.mp4"), "--out", str(out), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "nope.mp4" in err and "\n" not in err
    (tmp_path / "notvideo.mp4").write_text("{}")
    assert main(["video", "prepare", str(tmp_path / "notvideo.mp4"), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("notvideo.mp4: expected a readable video file, found data FFmpeg cannot read "
                        "(Invalid data found when processing input)"), err
    assert main(["video", "prepare", "gen:gradients", "--out", str(out), "--metrics", "bogus"]) == 2
    capsys.readouterr()
    for opt, v in (("--duration", "0"), ("--duration", "nan"), ("--jobs", "-1"), ("--fps", "100000"),
                   ("--nice", "100"), ("--segment", "1e23"), ("--vmaf-subsample", str(10**23))):
        r = qoelab_cli("video", "prepare", "gen:gradients", "--out", str(out), opt, v)
        err = r.stderr.strip()
        assert r.returncode == 2 and f"argument {opt}: expected" in err and "\n" not in err, (opt, v, err)


def test_a_last_segment_of_one_frame_and_outputs_independent_of_the_cache(tmp_path):
    """49 frames in 2 s segments at 24 fps: the last fragment holds one sample, whose size ffmpeg
    writes as tfhd's default (no per-sample size in trun); the reader refused it, so one source
    length in 48 could not be prepared. The output files were hard links to the cache's encodes."""
    out = tmp_path / "o"
    p = params(tmp_path / "c", duration_s=49 / 24, ladder=lad.parse("160x90@90k"), metrics=["psnr"])
    doc = pl.prepare("gen:testsrc2", str(out), p, progress=False)
    assert doc["meta"]["frames"] == 49 and len(doc["video"]["sizes"]) == 2
    path = str(out / doc["meta"]["ladder"][0]["file"])
    fr = mp4.index(path).fragments
    assert [len(f.sample_sizes) for f in fr] == [48, 1]
    assert all(sum(f.sample_sizes) == f.end - f.data_offset for f in fr)   # the sizes tile each mdat
    assert os.stat(path).st_nlink == 1


def test_a_segment_shorter_than_a_frame_is_refused(tmp_path):
    # it was a ZeroDivisionError (exit 1)
    for extra in (["--segment", "1ms"], ["--fps", "1", "--segment", "500ms"]):
        r = qoelab_cli("video", "prepare", "gen:gradients", "--out", str(tmp_path / "o"), *extra)
        err = r.stderr.strip()
        assert r.returncode == 2 and "--segment: expected at least one frame per segment" in err, err
        assert "\n" not in err
        assert not (tmp_path / "o").exists()
