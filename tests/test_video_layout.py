"""Byte layout of videos (``byte_offsets[segment][rung]``): which loaders keep or make one, that it
tiles the rung files, and that malformed ranges are one-line errors (docs/formats.md, "Byte layout")."""

import json
import struct

import pytest

from qoelab import _core
from qoelab.content import corpus
from qoelab.errors import InputError
from qoelab.scenario import _fit_duration
from qoelab.video import (
    LADDERS,
    layout_from_sizes,
    load_hls,
    load_mpd,
    load_pensieve_sizes,
    load_video,
    make_video,
    synthetic_video,
    validate_video,
)
from qoelab.video.synthetic import INIT_BYTES


def write(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return str(p)


def raises_at(fn, prefix, needle=None):
    with pytest.raises(InputError) as ei:
        fn()
    msg = str(ei.value)
    assert msg.startswith(prefix), msg
    if needle:
        assert needle in msg, msg
    assert "\n" not in msg
    return msg


def assert_tiles(v, init):
    """Each rung's file = init[r] bytes, then the segments: the ranges, taken in file order, start
    right after the init segment and each starts where the previous one ended, so every byte after
    the init is covered exactly once (no gap, no overlap) and the file ends with the last segment."""
    offs, sizes = v["byte_offsets"], v["sizes"]
    for r in range(len(init)):
        spans = sorted((offs[s][r], offs[s][r] + sizes[s][r]) for s in range(len(sizes)))
        pos = init[r]
        for a, b in spans:
            assert a == pos, f"rung {r}: a gap or an overlap at byte {pos}"
            pos = b
        assert pos == init[r] + sum(row[r] for row in sizes)
        # and in segment order: segment s starts where segment s-1 ends
        assert [offs[s][r] for s in range(len(sizes))] == [a for a, _ in spans]


def core_says(v):
    return json.loads(_core.check_video(json.dumps(v)))


# ------------------------------------------------------------------------------------- the model
def test_layout_from_sizes_and_validation():
    sizes = [[10, 40], [0, 50], [5, 60]]
    offs = layout_from_sizes(sizes, [100, 0])
    assert offs == [[100, 0], [110, 40], [110, 90]]
    v = make_video("x", 10**9, [1, 2], sizes, byte_offsets=offs)
    assert validate_video(v) is v and core_says(v)["byte_layout"] is True
    assert_tiles(v, [100, 0])
    # overlap, wrong shape, non-integer: the key names the cell, as the core's message does
    bad = make_video("x", 10**9, [1, 2], sizes, byte_offsets=[[100, 0], [109, 40], [110, 90]])
    with pytest.raises(InputError, match=r"x:byte_offsets\[1\]\[0\]: expected >= 110 .*found 109"):
        validate_video(bad)
    with pytest.raises(ValueError, match=r"byte_offsets\[1\]\[0\]: expected >= 110"):
        _core.check_video(json.dumps(bad))
    with pytest.raises(InputError, match=r"byte_offsets: expected null or 3 segments x 2 rungs, found 2 segments"):
        validate_video(dict(bad, byte_offsets=offs[:2]))
    with pytest.raises(InputError, match=r"byte_offsets\[2\]: expected 2 offsets"):
        validate_video(dict(bad, byte_offsets=offs[:2] + [[1]]))
    with pytest.raises(InputError, match=r"byte_offsets\[0\]\[1\]: expected an integer"):
        validate_video(dict(bad, byte_offsets=[[100, -1]] + offs[1:]))
    # no layout: None, and older documents without the key still load in the core
    old = {k: x for k, x in v.items() if k != "byte_offsets"}
    assert core_says(old)["byte_layout"] is False


def test_normalized_video_json_keeps_layout_and_reports_bad_offsets(tmp_path):
    v = synthetic_video("pensieve", 4, seed=1)
    p = write(tmp_path, "v.json", json.dumps(v))
    assert load_video(p) == v
    old = {k: x for k, x in v.items() if k != "byte_offsets"}
    assert load_video(write(tmp_path, "old.json", json.dumps(old)))["byte_offsets"] is None
    bad = json.loads(json.dumps(v))
    bad["byte_offsets"][2][3] = bad["byte_offsets"][1][3]
    p2 = write(tmp_path, "bad.json", json.dumps(bad))
    raises_at(lambda: load_video(p2), f"{p2}:byte_offsets[2][3]: expected >= ", "not overlapping segment 1")


# ---------------------------------------------------------------------------------------- synthetic
@pytest.mark.parametrize("ladder", sorted(LADDERS))
def test_synthetic_layout_tiles_each_rung_file(ladder):
    v = synthetic_video(ladder, 60, seed=3)
    assert v["byte_offsets"][0] == [INIT_BYTES] * len(v["bitrates_bps"]) and INIT_BYTES == 800
    assert_tiles(v, [INIT_BYTES] * len(v["bitrates_bps"]))
    assert core_says(v)["byte_layout"] is True


def test_sprint_ladder():
    lad = LADDERS["sprint"]
    b = lad.bitrates_kbps
    assert lad.segment_duration_s == 4.0
    assert 1010 in b and 1519 in b
    assert 200 <= b[0] <= 300 and b[-1] >= 16000
    ratios = [y / x for x, y in zip(b, b[1:])]
    assert all(1.3 <= q <= 1.51 for q in ratios), ratios
    v = synthetic_video("sprint", 5, seed=0)
    assert v["segment_duration"] == 4 * 10**9 and len(v["bitrates_bps"]) == len(b)


def test_tiled_scenario_video_keeps_a_valid_layout():
    v = synthetic_video("has-testbed", 3, seed=0)
    v["byte_offsets"][2] = [o + 8 for o in v["byte_offsets"][2]]  # a gap before the last segment
    longer = _fit_duration(v, 7 * 2 * 10**9)
    assert len(longer["byte_offsets"]) == 7
    validate_video(longer)
    assert core_says(longer)["byte_layout"] is True
    end = [o + s for o, s in zip(v["byte_offsets"][2], v["sizes"][2])]
    assert longer["byte_offsets"][3] == end  # the repeat starts right after the last segment
    period = [e - f for e, f in zip(end, v["byte_offsets"][0])]  # the media part of each rung file
    assert longer["byte_offsets"][5] == [o + p for o, p in zip(v["byte_offsets"][2], period)]
    assert longer["byte_offsets"][6] == [o + 2 * p for o, p in zip(v["byte_offsets"][0], period)]
    shorter = _fit_duration(v, 2 * 10**9)
    assert shorter["byte_offsets"] == v["byte_offsets"][:1]


# ----------------------------------------------------------------------------------- corpus, sabre
def test_corpus_clip_layout_from_its_init_segments():
    name = corpus.list_videos()[0]
    doc = corpus.load_table(name)
    v = corpus.load_video(name)
    init = [r["init_bytes"] for r in doc["meta"]["ladder"]]
    assert v["byte_offsets"][0] == init
    assert_tiles(v, init)
    assert core_says(v)["byte_layout"] is True
    assert "byte_offsets" not in doc["video"]  # the committed table itself is unchanged


def test_sabre_and_pensieve_have_no_layout(tmp_path):
    doc = {"segment_duration_ms": 3000, "bitrates_kbps": [230, 331],
           "segment_sizes_bits": [[8000, 16000], [8000, 24000]]}
    v = load_video(write(tmp_path, "movie.json", json.dumps(doc)))
    assert v["byte_offsets"] is None and core_says(v)["byte_layout"] is False
    for i in range(2):
        write(tmp_path, f"pens/video_size_{i}", "100\n200\n")
    assert load_pensieve_sizes(str(tmp_path / "pens"), bitrates_kbps=[300, 750])["byte_offsets"] is None


# --------------------------------------------------------------------------------------------- MPD
MPD_LIST = """<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT12S">
  <Period>
    <AdaptationSet mimeType="video/mp4">
      <Representation id="hi" bandwidth="2000000">
        <BaseURL>hi.mp4</BaseURL>
        <SegmentList timescale="1000" duration="4000">
          <Initialization range="0-99"/>
          <SegmentURL mediaRange="100-1099"/>
          <SegmentURL mediaRange="1100-3099"/>
          <SegmentURL mediaRange="3200-3699"/>
        </SegmentList>
      </Representation>
      <Representation id="lo" bandwidth="500000">
        <BaseURL>lo.mp4</BaseURL>
        <SegmentList timescale="1000" duration="4000">
          <Initialization range="0-49"/>
          <SegmentURL mediaRange="50-249"/>
          <SegmentURL mediaRange="250-549"/>
          <SegmentURL mediaRange="550-649"/>
        </SegmentList>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>
"""
RANGES = {"lo": [(50, 249), (250, 549), (550, 649)], "hi": [(100, 1099), (1100, 3099), (3200, 3699)]}


def test_mpd_media_range_offsets_kept_exactly(tmp_path):
    p = write(tmp_path, "v.mpd", MPD_LIST)
    v = load_mpd(p)
    assert v["byte_offsets"] == [[50, 100], [250, 1100], [550, 3200]]
    for r, rid in enumerate(("lo", "hi")):
        for s, (a, b) in enumerate(RANGES[rid]):
            assert v["byte_offsets"][s][r] == a and v["sizes"][s][r] == b - a + 1
    assert load_video(p) == v
    assert core_says(v)["byte_layout"] is True
    # the gap (a styp box, say) between segments 1 and 2 of "hi" stays a gap
    assert v["byte_offsets"][2][1] > v["byte_offsets"][1][1] + v["sizes"][1][1]


def test_mpd_without_one_file_per_rung_has_no_layout(tmp_path):
    # one Representation names a file per segment -> no layout for the video
    write(tmp_path, "lo-1.m4s", "x" * 200)
    write(tmp_path, "lo-2.m4s", "x" * 300)
    write(tmp_path, "lo-3.m4s", "x" * 100)
    text = MPD_LIST.replace('<SegmentURL mediaRange="50-249"/>', '<SegmentURL media="lo-1.m4s"/>').replace(
        '<SegmentURL mediaRange="250-549"/>', '<SegmentURL media="lo-2.m4s"/>').replace(
        '<SegmentURL mediaRange="550-649"/>', '<SegmentURL media="lo-3.m4s"/>')
    v = load_mpd(write(tmp_path, "files.mpd", text))
    assert v["sizes"][0] == [200, 1000] and v["byte_offsets"] is None
    # ranges of different files: sizes as before, no layout (and no order check across files)
    text = MPD_LIST.replace('<SegmentURL mediaRange="250-549"/>', '<SegmentURL media="b.mp4" mediaRange="0-299"/>')
    v = load_mpd(write(tmp_path, "two.mpd", text))
    assert v["sizes"][1] == [300, 2000] and v["byte_offsets"] is None
    # SegmentTemplate: one file per segment
    tpl = """<MPD mediaPresentationDuration="PT4S"><Period><AdaptationSet mimeType="video/mp4">
<SegmentTemplate media="$RepresentationID$-$Number$.m4s" timescale="1" duration="2"/>
<Representation id="v1" bandwidth="1000"/><Representation id="v2" bandwidth="2000"/>
</AdaptationSet></Period></MPD>"""
    v = load_mpd(write(tmp_path, "t.mpd", tpl), sizes={"v1": [1, 2], "v2": [3, 4]})
    assert v["byte_offsets"] is None and core_says(v)["byte_layout"] is False


LO = "/MPD/Period[1]/AdaptationSet[1]/Representation[2]/SegmentList[1]"


@pytest.mark.parametrize("old,new,line,where,needle", [
    ('"250-549"', '"549-250"', 19, f"{LO}/SegmentURL[2]@mediaRange", "first <= last"),
    ('"250-549"', '"10-5"', 19, f"{LO}/SegmentURL[2]@mediaRange", "first <= last"),
    ('"250-549"', '"a-b"', 19, f"{LO}/SegmentURL[2]@mediaRange", "a byte range 'first-last'"),
    ('"250-549"', '"200-549"', 19, f"{LO}/SegmentURL[2]@mediaRange", "after the previous SegmentURL's range (first > 249"),
    ('"550-649"', '"0-10"', 20, f"{LO}/SegmentURL[3]@mediaRange", "segments in file order, not overlapping"),
    ('"50-249"', '"40-249"', 18, f"{LO}/SegmentURL[1]@mediaRange", "after the Initialization range (first > 49"),
])
def test_mpd_malformed_ranges_are_one_line_errors(tmp_path, old, new, line, where, needle):
    p = write(tmp_path, "bad.mpd", MPD_LIST.replace(old, new))
    raises_at(lambda: load_mpd(p), f"{p}:{line}:{where}: expected ", needle)


def sidx_box(timescale, refs, version=0, first_offset=0):
    body = struct.pack(">B3xII", version, 1, timescale)
    body += struct.pack(">II", 0, first_offset) if version == 0 else struct.pack(">QQ", 0, first_offset)
    body += struct.pack(">HH", 0, len(refs))
    for size, dur in refs:
        body += struct.pack(">III", size, dur, 0x90000000)
    return struct.pack(">I4s", 8 + len(body), b"sidx") + body


def test_mpd_segment_base_keeps_sidx_offsets(tmp_path):
    (tmp_path / "media").mkdir()
    reps = []
    expect = []
    for i, (bw, sizes, first_offset) in enumerate([(300_000, [100, 120, 50], 0), (900_000, [300, 310, 140], 16)]):
        box = sidx_box(1000, [(s, 2000) for s in sizes], version=i, first_offset=first_offset)
        head = b"\0" * 40  # stands for ftyp/moov
        (tmp_path / "media" / f"r{i}.mp4").write_bytes(head + box + b"\0" * (first_offset + sum(sizes)))
        reps.append(f'<Representation id="r{i}" bandwidth="{bw}"><BaseURL>media/r{i}.mp4</BaseURL>'
                    f'<SegmentBase indexRange="40-{40 + len(box) - 1}"><Initialization range="0-39"/></SegmentBase>'
                    "</Representation>")
        start = 40 + len(box) + first_offset  # the anchor point (first byte after the sidx) + first_offset
        expect.append([start + sum(sizes[:k]) for k in range(3)])
    text = '<MPD mediaPresentationDuration="PT6S"><Period><AdaptationSet>' + "".join(reps) + \
        "</AdaptationSet></Period></MPD>"
    v = load_mpd(write(tmp_path, "base.mpd", text))
    assert v["sizes"] == [[100, 300], [120, 310], [50, 140]]
    assert v["byte_offsets"] == [list(x) for x in zip(*expect)]
    # the last segment ends at the end of each file: the sidx references tile the rest of the file
    for r in range(2):
        end = v["byte_offsets"][2][r] + v["sizes"][2][r]
        assert end == (tmp_path / "media" / f"r{r}.mp4").stat().st_size
    assert core_says(v)["byte_layout"] is True


# --------------------------------------------------------------------------------------------- HLS
MASTER = """#EXTM3U
#EXT-X-STREAM-INF:BANDWIDTH=2040000
hi/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=350000
lo/index.m3u8
"""
LO_RANGES = """#EXTM3U
#EXT-X-MAP:URI="all.mp4",BYTERANGE="720@0"
#EXTINF:2.0,
#EXT-X-BYTERANGE:1000@720
all.mp4
#EXTINF:2.0,
#EXT-X-BYTERANGE:1500
all.mp4
#EXTINF:1.25,
#EXT-X-BYTERANGE:700@3300
all.mp4
#EXT-X-ENDLIST
"""
HI_RANGES = """#EXTM3U
#EXTINF:2.0,
#EXT-X-BYTERANGE:5000@0
all.mp4
#EXTINF:2.0,
#EXT-X-SIZE:5100
#EXT-X-BYTERANGE:5100
all.mp4
#EXTINF:1.25,
#EXT-X-BYTERANGE:3000
all.mp4
#EXT-X-ENDLIST
"""
HI_SIZES = """#EXTM3U
#EXTINF:2.0,
#EXT-X-SIZE:5000
s1.ts
#EXTINF:2.0,
#EXT-X-SIZE:5100
s2.ts
#EXTINF:1.25,
#EXT-X-SIZE:3000
s3.ts
#EXT-X-ENDLIST
"""


def test_hls_byterange_offsets(tmp_path):
    p = write(tmp_path, "master.m3u8", MASTER)
    write(tmp_path, "lo/index.m3u8", LO_RANGES)
    write(tmp_path, "hi/index.m3u8", HI_RANGES)
    v = load_hls(p)
    assert v["sizes"] == [[1000, 5000], [1500, 5100], [700, 3000]]
    # @offset kept; without it the range follows the previous one of the same URI
    assert v["byte_offsets"] == [[720, 0], [1720, 5000], [3300, 10100]]
    assert core_says(v)["byte_layout"] is True
    # a variant with a file per segment -> no layout for the video
    write(tmp_path, "hi/index.m3u8", HI_SIZES)
    v = load_hls(p)
    assert v["sizes"] == [[1000, 5000], [1500, 5100], [700, 3000]] and v["byte_offsets"] is None
    # ranges of several files -> no layout
    write(tmp_path, "hi/index.m3u8", HI_RANGES.replace("#EXT-X-BYTERANGE:3000\nall.mp4", "#EXT-X-BYTERANGE:3000@0\nb.mp4"))
    assert load_hls(p)["byte_offsets"] is None


@pytest.mark.parametrize("old,new,line,needle", [
    ("#EXT-X-BYTERANGE:5000@0", "#EXT-X-BYTERANGE:5000", 3, "without an offset the previous segment must be a range"),
    ("#EXT-X-BYTERANGE:3000", "#EXT-X-BYTERANGE:3000@6000", 10, "offset >= 10100"),
    ("#EXT-X-BYTERANGE:3000", "#EXT-X-BYTERANGE:3000@-5", 10, "#EXT-X-BYTERANGE:<n>[@<offset>]"),
    ("#EXT-X-BYTERANGE:3000", "#EXT-X-BYTERANGE:x@1", 10, "#EXT-X-BYTERANGE:<n>[@<offset>]"),
    ("#EXT-X-SIZE:5100", "#EXT-X-SIZE:5101", 7, "the #EXT-X-SIZE of the segment (5101 bytes) as length"),
])
def test_hls_malformed_byteranges_are_one_line_errors(tmp_path, old, new, line, needle):
    p = write(tmp_path, "master.m3u8", MASTER)
    write(tmp_path, "lo/index.m3u8", LO_RANGES)
    hi = write(tmp_path, "hi/index.m3u8", HI_RANGES.replace(old, new))
    raises_at(lambda: load_hls(p), f"{hi}:{line}: expected ", needle)
