"""VOXEL frame importance (Algorithm 1, the four orders), SSIM levels and the extended manifest
attributes, on the dissertation's worked numbers (claims file voxel.md §1.3, §2; claim V11)."""

import pytest

from qoelab.content import voxel
from qoelab.errors import InputError

# Figs. 5.7/5.8: frame 2 references frame 1 with 9 MBs; frames 3, 4, 5 reference frame 2 with 30, 45, 8
FRAMES = [1, 2, 3, 4, 5]
EDGES = {(1, 2): 9, (2, 3): 30, (2, 4): 45, (2, 5): 8}


@pytest.mark.parametrize("variant", ["branch", "literal"])
def test_algorithm_1_worked_example(variant):
    w = voxel.chained_weights(FRAMES, EDGES, threshold=1, variant=variant)
    assert w[1] == 35                                      # both readings of the cap (V11)
    assert w[2] == {"branch": 83, "literal": 68}[variant]  # branch-local = frame 2's direct references
    assert w[3] == w[4] == w[5] == 0


def test_threshold_stops_the_descent_but_small_edges_still_count():
    # at 4K the threshold is 324 MBs: the 9-MB edge is counted, the walk does not go below it
    assert voxel.threshold_mbs(3840, 2160) == 324
    assert voxel.threshold_mbs(1920, 1080) == 82           # 120 x 68 MBs (1088 coded lines)
    w = voxel.chained_weights(FRAMES, EDGES, threshold=324)
    assert w[1] == 9 and w[2] == 83                        # 30, 45, 8 are all below 324: counted, not descended
    w = voxel.chained_weights(FRAMES, EDGES, threshold=20)  # 9 < 20: stop at frame 2
    assert w[1] == 9 and w[2] == 83


def test_cycles_and_bad_edges_are_refused():
    with pytest.raises(ValueError, match="cycle"):
        voxel.chained_weights([1, 2], {(1, 2): 5, (2, 1): 5}, threshold=1)
    with pytest.raises(ValueError, match="negative"):
        voxel.chained_weights([1, 2], {(1, 2): -1}, threshold=1)


def test_a_dense_pyramid_is_fast_with_memoisation():
    # 96 frames, every frame referenced by the next 4 (a dense DAG): unmemoised, the walk is exponential
    frames = list(range(96))
    edges = {(i, j): 100 + (i * 7 + j) % 50 for i in frames for j in range(i + 1, min(96, i + 5))}
    w = voxel.chained_weights(frames, edges, threshold=1)
    assert w[95] == 0 and w[0] > w[90] > 0


def test_candidate_orders():
    # frame 1 = I; 3, 4, 5 are unreferenced (weight 0): ties keep the original order
    o = voxel.candidate_orders(FRAMES, EDGES, threshold=1)
    assert o["original"] == [1, 2, 3, 4, 5]
    assert o["grouped"] == [1, 2, 3, 4, 5]
    assert o["summed"] == [1, 2, 3, 4, 5] and o["chained"] == [1, 2, 3, 4, 5]
    # an IBBP-like segment: P frames (2, 5) referenced, B frames (3, 4) not; frame 5 referenced most
    edges = {(1, 2): 300, (2, 3): 200, (5, 3): 150, (2, 4): 100, (5, 4): 250, (2, 5): 400, (5, 6): 380}
    o = voxel.candidate_orders([1, 2, 3, 4, 5, 6], edges, threshold=10)
    assert o["grouped"] == [1, 2, 5, 3, 4, 6]
    # summed: frame 5 has 780 referencing MBs, frame 2 700; chained: frame 2 also carries frame 5's subtree
    assert o["summed"][:3] == [1, 5, 2] and o["chained"][:3] == [1, 2, 5]
    w = voxel.chained_weights([1, 2, 3, 4, 5, 6], edges, threshold=10)
    assert w[5] == 780 and w[2] == 200 + 100 + 400 + 780
    assert set(o["chained"][3:]) == {3, 4, 6}


def test_ssim_levels_keep_the_smallest_prefix_per_level():
    # (k kept droppable frames, n unreliable bytes, SSIM of the decoded segment)
    curve = [(0, 0, 0.80), (1, 100, 0.9871), (2, 180, 0.9879), (3, 260, 0.9904), (4, 300, 0.9903),
             (5, 400, 1.0)]
    lv = voxel.ssim_levels(curve, bound=0.988)
    assert lv == [(0.988, 2, 180), (0.99, 3, 260), (1.0, 5, 400)]
    # the prefix of 4 frames reaches 0.990 too but 3 frames already do; entries rise in q, k and n
    assert all(a[0] < b[0] and a[1] < b[1] and a[2] < b[2] for a, b in zip(lv, lv[1:]))


def _listing_6_1():
    """A segment with Listing 6.1's numbers: mediaRange 367,500,239-374,182,132; reliable 1,371,846 B
    (the I-frame, 95 frame headers, the last a 15-B range); 95 unreliable frames of 5,310,048 B."""
    a, b = 367_500_239, 374_182_132
    i_frame = 1_371_846 - 95 * 15
    reliable, unreliable = [(a, a + i_frame - 1)], []
    at = a + i_frame
    payload = [5_310_048 // 95] * 95
    payload[0] += 5_310_048 - sum(payload)
    for p in payload:
        reliable.append((at, at + 14))
        unreliable.append((at + 15, at + 15 + p - 1))
        at += 15 + p
    assert at == b + 1
    return (a, b), reliable, unreliable, payload


def test_listing_6_1_numbers_round_trip():
    media, rel, unr, payload = _listing_6_1()
    k49 = sum(payload[:49])
    ssims = [(0.988, 49, k49), (1.0, 95, 5_310_048)]
    attrs = voxel.voxel_attributes(media, rel, unr, ssims)
    assert attrs["mediaRange"] == "367500239-374182132"
    assert attrs["reliableSize"] == "1371846"
    assert attrs["ssims"].endswith("1.0:95:5310048")
    assert int(attrs["reliableSize"]) + 5_310_048 == 374_182_132 - 367_500_239 + 1 == 6_681_894
    back = voxel.parse_voxel_attributes(attrs)
    assert back["reliable"] == rel and back["unreliable"] == unr and back["ssims"] == ssims
    assert rel[-1][1] - rel[-1][0] + 1 == 15


def test_inconsistent_attributes_are_one_line_errors():
    media, rel, unr, payload = _listing_6_1()
    attrs = voxel.voxel_attributes(media, rel, unr, [(1.0, 95, 5_310_048)])
    bad = dict(attrs, ssims="1.0:95:5310047")
    with pytest.raises(InputError, match="first 95 unreliable ranges hold 5310048"):
        voxel.parse_voxel_attributes(bad)
    with pytest.raises(InputError, match="reliableSize"):
        voxel.parse_voxel_attributes(dict(attrs, reliableSize="7"))
    with pytest.raises(InputError, match="@unreliable"):
        voxel.parse_voxel_attributes(dict(attrs, unreliable="5-3"))
    with pytest.raises(ValueError, match="tile"):
        voxel.voxel_attributes(media, rel[:-1], unr, [])


@pytest.fixture(scope="module")
def bframes_mp4(tmp_path_factory):
    import subprocess
    import imageio_ffmpeg
    out = tmp_path_factory.mktemp("vx") / "b.mp4"
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc2=size=320x180:rate=24", "-t", "1", "-c:v", "libx264", "-preset", "veryfast",
                    "-x264-params", "bframes=2:b-pyramid=0:b-adapt=0:ref=1:keyint=24:min-keyint=24:scenecut=0",
                    "-pix_fmt", "yuv420p", str(out)], check=True)
    return str(out)


def test_frame_graph_read_from_the_decoder(bframes_mp4):
    g = voxel.frame_graph(bframes_mp4)
    fr = g["frames"]
    types = "".join(f["type"] for f in sorted(fr, key=lambda f: f["display"]))
    assert len(fr) == 24 and types[0] == "I" and "B" in types and "P" in types
    # with two B frames between anchors in display order: I B B P B B P ...
    assert types[:7] == "IBBPBBP", types
    referenced = {x for (x, _y) in g["edges"]}
    by_id = {f["id"]: f for f in fr}
    assert all(by_id[x]["type"] in ("I", "P") for x in referenced), "B frames are never referenced here"
    # every P frame after the first references the anchor before it, every B both neighbouring anchors
    for f in fr:
        ins = [x for (x, y) in g["edges"] if y == f["id"]]
        if f["type"] == "P":
            assert len(ins) == 1 and by_id[ins[0]]["display"] < f["display"]
        if f["type"] == "B":
            assert ins and all(by_id[x]["type"] in ("I", "P") for x in ins)
    assert sum(f["bytes"] for f in fr) > 0 and max(g["edges"].values()) <= (320 // 16) * (192 // 16)
    # orders: the chained order puts the anchors first, earliest (longest chain) first; B frames last
    ids = [f["id"] for f in fr]
    i_frame = next(f["id"] for f in fr if f["type"] == "I")
    o = voxel.candidate_orders(ids, g["edges"], voxel.threshold_mbs(320, 180), i_frame=i_frame)
    anchors = [f for f in fr if f["type"] in ("I", "P")]
    head = o["chained"][:len(anchors)]
    assert [by_id[x]["type"] for x in head].count("B") == 0
    assert [by_id[x]["display"] for x in head[1:]] == sorted(by_id[x]["display"] for x in head[1:])
    assert o["grouped"][-1] in {f["id"] for f in fr if f["type"] == "B"}


def test_prefix_curves_by_decoding_with_drops(bframes_mp4):
    """Dropping frames for real: the whole segment decodes to itself (SSIM 1); dropping B frames (never
    referenced) costs less SSIM per byte than dropping the anchors they and later frames depend on."""
    g = voxel.frame_graph(bframes_mp4)
    fr = g["frames"]
    ref = voxel.decode_with_drops(bframes_mp4)
    assert len(ref) == 24 and voxel.ssim_y(ref[0], ref[0]) == pytest.approx(1.0)
    ids = [f["id"] for f in fr]
    i_frame = next(f["id"] for f in fr if f["type"] == "I")
    orders = voxel.candidate_orders(ids, g["edges"], voxel.threshold_mbs(320, 180), i_frame=i_frame)
    grouped = voxel.prefix_curve(bframes_mp4, orders["grouped"], fr, ref)
    original = voxel.prefix_curve(bframes_mp4, orders["original"], fr, ref)
    assert grouped[-1][2] == pytest.approx(1.0, abs=1e-9) and original[-1][2] == pytest.approx(1.0, abs=1e-9)
    assert grouped[0][1] == 0 and grouped[-1][1] == sum(f["bytes"] for f in fr if f["id"] != i_frame)
    # keeping every anchor and no B frame (grouped order) beats keeping the same number of frames in
    # decode order (which loses later anchors and freezes the tail)
    n_anchors = sum(1 for f in fr if f["type"] == "P")
    assert grouped[n_anchors][2] > original[n_anchors][2]
    # SSIM rises (weakly) as frames are added in the grouped order once the anchors are in
    tail = [s for _, _, s in grouped[n_anchors:]]
    assert tail[-1] >= tail[0]
    lv = voxel.ssim_levels(grouped, bound=0.9)
    assert lv[-1][0] == 1.0 and all(a[2] < b[2] for a, b in zip(lv, lv[1:]))


def test_segment_ranges_tile_the_segment():
    # a fragment at 1000: 120 B of moof + mdat header, then I (500 B), P (300 B), B (40 B), B (10 B)
    frames = [{"id": 0, "offset": 1120, "bytes": 500}, {"id": 1, "offset": 1620, "bytes": 300},
              {"id": 2, "offset": 1920, "bytes": 40}, {"id": 3, "offset": 1960, "bytes": 10}]
    media = (1000, 1969)
    rel, unr = voxel.segment_ranges(media, frames, [0, 1, 2, 3])
    assert unr == [(1635, 1919), (1935, 1959)]          # frame 3 is all header: nothing to drop
    assert rel == [(1000, 1634), (1920, 1934), (1960, 1969)]
    attrs = voxel.voxel_attributes(media, rel, unr, [(0.9, 1, 285), (1.0, 2, 310)])
    assert int(attrs["reliableSize"]) + 285 + 25 == 970
    # the unreliable list follows the order: the B frame first if it is more important
    _, unr2 = voxel.segment_ranges(media, frames, [0, 2, 1, 3])
    assert unr2 == [(1935, 1959), (1635, 1919)]


def test_order_choice_and_mos():
    curves = {"original": [(0, 0, 0.6), (1, 100, 0.9), (2, 250, 0.99)],
              "chained": [(0, 0, 0.6), (1, 180, 0.985), (2, 250, 0.99)]}
    assert voxel.choose_order(curves, 0.98) == ("chained", 180)
    assert voxel.choose_order(curves, 0.85) == ("original", 100)
    assert voxel.choose_order(curves, 0.995) == ("original", None)      # fetch the rung below
    assert [voxel.mos_of_ssim(x) for x in (0.995, 0.99, 0.96, 0.9, 0.6, 0.2)] == \
        ["Excellent", "Excellent", "Good", "Fair", "Poor", "Bad"]


def test_extended_mpd_round_trip(tmp_path):
    """VOXEL attributes added to a pipeline-style MPD and read back; a VOXEL-unaware reader still sees
    the plain SegmentList."""
    from qoelab.content import mpd
    reps = [{"id": 0, "file": "r0.mp4", "width": 320, "height": 180, "codec": "avc1.42c00c", "timescale": 90000,
             "init_end": 800, "ranges": [(800, 1770), (1770, 2740)], "bandwidth": 100000}]
    src = tmp_path / "m.mpd"
    mpd.write(str(src), reps, 8.0, 96, 24, 2.0)
    frames0 = [{"id": 0, "offset": 920, "bytes": 500}, {"id": 1, "offset": 1420, "bytes": 300},
               {"id": 2, "offset": 1720, "bytes": 40}]
    rel, unr = voxel.segment_ranges((800, 1769), frames0, [0, 1, 2])
    n1 = unr[0][1] - unr[0][0] + 1
    entries = {(0, 0): {"reliable": rel, "unreliable": unr, "ssims": [(0.95, 1, n1), (1.0, 2, n1 + 25)]}}
    out = tmp_path / "v.mpd"
    voxel.write_mpd(str(src), str(out), entries, avg_ssim={0: 0.9731})
    back = voxel.read_mpd(str(out))
    r0 = back["representations"][0]
    assert r0["avg_ssim"] == pytest.approx(0.9731) and r0["segments"][1] is None
    assert r0["segments"][0]["unreliable"] == unr and r0["segments"][0]["ssims"][-1] == (1.0, 2, n1 + 25)
    plain = mpd.read(str(out))["representations"][0]
    assert plain["segments"] == [(800, 1770), (1770, 2740)]
    bad = {(0, 0): dict(entries[(0, 0)], ssims=[(1.0, 2, 7)])}
    with pytest.raises(InputError, match=r"SegmentURL\[0\]"):
        voxel.write_mpd(str(src), str(tmp_path / "x.mpd"), bad)
    text = out.read_text().replace('ssims="0.95:1:', 'ssims="0.95:1x:')
    (tmp_path / "broken.mpd").write_text(text)
    with pytest.raises(InputError, match=r"broken.mpd:Representation\[0\].SegmentURL\[0\]@ssims"):
        voxel.read_mpd(str(tmp_path / "broken.mpd"))


def test_qoelab_video_voxel_end_to_end(tmp_path):
    """prepare with B frames, then `qoelab video voxel`: an extended MPD whose entries are consistent,
    chosen against the rung below's pristine SSIM, and the measured curves of the orders."""
    import json
    from conftest import qoelab_cli
    d = tmp_path / "enc"
    r = qoelab_cli("video", "prepare", "gen:testsrc2", "--out", str(d), "--duration", "2", "--ladder",
                   "192x108@150k,320x180@400k", "--segment", "2s", "--preset", "ultrafast", "--metrics", "ssim",
                   "--bframes", "3", "--no-progress")
    assert r.returncode == 0, r.stderr
    r = qoelab_cli("video", "voxel", str(d), "--prefixes", "6")
    assert r.returncode == 0, r.stderr
    m = voxel.read_mpd(str(d / "manifest-voxel.mpd"))          # parses and re-checks every entry
    reps = m["representations"]
    assert len(reps) == 2 and all(rp["segments"][0] is not None for rp in reps)
    assert 0 < reps[0]["avg_ssim"] < reps[1]["avg_ssim"] <= 1
    rep = json.load(open(d / "voxel.json"))
    top = next(s for s in rep["segments"] if s["rung"] == 1)
    assert top["b_frames"] > 0 and top["frames"] == 48
    assert top["bound"] == pytest.approx(json.load(open(d / "table.json"))["video"]["quality"]["ssim"][0][0])
    lv = reps[1]["segments"][0]["ssims"]
    assert lv[-1][1] == len(reps[1]["segments"][0]["unreliable"])      # the last level keeps every frame
    # unreferenced B frames first out: the grouped order's curve is at least the original's at equal k
    g, o = top["curves"]["grouped"], top["curves"]["original"]
    assert all(a[2] >= b[2] - 1e-9 for a, b in zip(g[1:-1], o[1:-1]))
    r = qoelab_cli("video", "voxel", str(tmp_path))
    assert r.returncode == 2 and "table.json" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    # a damaged rung file: one line naming it and the segment (it was PyAV's InvalidDataError naming a
    # temporary copy, exit 1)
    rung = d / json.load(open(d / "table.json"))["meta"]["ladder"][0]["file"]
    rung.write_bytes(bytes(range(7, 256)) * 40)
    r = qoelab_cli("video", "voxel", str(d), "--prefixes", "6")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{rung}:segment 0: expected decodable video" in r.stderr, r.stderr
