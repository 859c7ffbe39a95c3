"""VOXEL's frame importance and extended manifest (Palmer's dissertation, ch. 5 and §6.1; the model is
restated in ../shared/reference/claims/voxel.md §1-2). Pure functions, no media: the content pipeline
feeds them a segment's frame graph and per-prefix SSIM curve.

* :func:`chained_weights` — Algorithm 1 (§5.1.3): weight(f) = WALK(f, +inf) over the reference DAG,
  with both readings of its cap (``"branch"``: each successor's cap is min(inherited, edge), as the
  prose says; ``"literal"``: the printed pseudo-code, where a small edge also caps the siblings after
  it), memoised on (node, cap).
* :func:`summed_weights` — order ③: the number of macroblocks, in all frames, that reference f.
* :func:`candidate_orders` — the four drop orders ①-④ (the tail is dropped first; the I-frame is always
  first; ties keep the original order).
* :func:`ssim_levels` — the ``ssims`` entries of one (segment, rung): one per distinct 3-decimal SSIM
  value from the bound up, with the smallest prefix (k frames, n unreliable bytes) that reaches it.
* :func:`voxel_attributes` / :func:`parse_voxel_attributes` — the ``SegmentURL`` attributes of
  Listing 6.1 (``reliable``, ``unreliable``, ``reliableSize``, ``ssims``), written and read back with
  their consistency checks (``n`` counts unreliable bytes only: n + reliableSize = the segment when
  every frame is kept).
"""

from __future__ import annotations

import math
import re

from qoelab.errors import InputError

#: THRESHOLD of Algorithm 1: 1% of the frame's macroblocks (324 at 4K, ~81 at 1080p, ~9 at 360p).
THRESHOLD_FRACTION = 0.01


def threshold_mbs(width: int, height: int) -> int:
    """Algorithm 1's THRESHOLD: 1% of the macroblocks of a frame (16x16, coded height rounded up)."""
    mbs = math.ceil(width / 16) * math.ceil(height / 16)
    return max(1, round(THRESHOLD_FRACTION * mbs))


def _successors(edges: dict) -> dict:
    succ: dict = {}
    for (x, y), w in edges.items():
        if w < 0:
            raise ValueError(f"edge {x}->{y}: a negative macroblock count ({w})")
        if x == y:
            raise ValueError(f"edge {x}->{y}: a frame cannot reference itself")
        succ.setdefault(x, []).append((y, w))
    return succ


def chained_weights(frames: list, edges: dict, threshold: float, variant: str = "branch") -> dict:
    """Algorithm 1's weight of every frame. ``edges[(x, y)]`` = the number of y's macroblocks that
    reference x (y references x); successors are visited in the order of ``frames`` (the literal
    variant depends on it). Raises ValueError on a cycle (references form a DAG)."""
    if variant not in ("branch", "literal"):
        raise ValueError(f"variant: expected 'branch' or 'literal', found {variant!r}")
    succ = _successors(edges)
    pos = {f: i for i, f in enumerate(frames)}
    for x in succ:
        succ[x].sort(key=lambda e: pos.get(e[0], len(pos)))
    memo: dict = {}
    active: set = set()

    def walk(node, cap):
        key = (node, cap)
        if key in memo:
            return memo[key]
        if node in active:
            raise ValueError(f"the reference graph has a cycle through frame {node}")
        active.add(node)
        w = 0.0
        c = cap
        for suc, ew in succ.get(node, ()):
            if variant == "branch":
                c = min(cap, ew)
            elif ew < c:
                c = ew
            w += c                                    # line 8: always counted
            if c < threshold:                         # line 10: do not descend
                continue
            w += walk(suc, c)                         # line 13
        active.discard(node)
        memo[key] = w
        return w
    return {f: walk(f, math.inf) for f in frames}


def summed_weights(frames: list, edges: dict) -> dict:
    """Order ③'s weight: the total number of macroblocks that reference each frame."""
    out = {f: 0 for f in frames}
    for (x, _y), w in edges.items():
        out[x] = out.get(x, 0) + w
    return out


def candidate_orders(frames: list, edges: dict, threshold: float, i_frame=None, variant: str = "branch") -> dict:
    """The four drop orders of ch. 5 (most important first; the tail is dropped first):
    ``original`` (decode order), ``grouped`` (frames nobody references moved to the end),
    ``summed`` (order ③), ``chained`` (order ④, Algorithm 1). The I-frame (default: the first frame) is
    always first; ties keep the original order."""
    i_frame = frames[0] if i_frame is None else i_frame
    rest = [f for f in frames if f != i_frame]
    referenced = {x for (x, _y), w in edges.items() if w > 0}
    summed = summed_weights(frames, edges)
    chained = chained_weights(frames, edges, threshold, variant)
    pos = {f: i for i, f in enumerate(frames)}
    return {
        "original": [i_frame] + rest,
        "grouped": [i_frame] + [f for f in rest if f in referenced] + [f for f in rest if f not in referenced],
        "summed": [i_frame] + sorted(rest, key=lambda f: (-summed[f], pos[f])),
        "chained": [i_frame] + sorted(rest, key=lambda f: (-chained[f], pos[f])),
    }


def ssim_levels(curve: list, bound: float, decimals: int = 3) -> list[tuple]:
    """The ``ssims`` entries of one (segment, rung) from its prefix curve ``[(k, n, ssim), ...]`` (k
    droppable frames kept in the chosen order, n their bytes, the decoded segment's SSIM; k = 0 is the
    I-frame alone): one entry (q, k, n) per distinct ``decimals``-rounded SSIM q >= ``bound``, with
    the smallest prefix that reaches it, ascending. Levels a smaller prefix already exceeds are
    dropped, so entries grow in q, k and n together."""
    best: dict = {}
    for k, n, s in sorted(curve):
        q = round(s, decimals)
        if q + 1e-12 < bound:
            continue
        if q not in best:
            best[q] = (q, k, n)
    out = []
    for q in sorted(best):
        e = best[q]
        while out and (out[-1][1] >= e[1] or out[-1][2] >= e[2]):
            out.pop()                                 # a higher level with a smaller or equal prefix wins
        out.append(e)
    return out


def choose_order(curves: dict, bound: float) -> tuple[str, int | None]:
    """§1.4: the order that needs the fewest bytes at this rung to reach an SSIM of at least ``bound``
    (the pristine SSIM of the rung below): ``(name, bytes)``; ties go to the first name in ``curves``'
    order. If no prefix of any order reaches the bound, ``(first name, None)``: the client should fetch
    the rung below."""
    best, best_n = None, None
    for name, curve in curves.items():
        n = min((n for _k, n, s in curve if s + 1e-12 >= bound), default=None)
        if n is not None and (best_n is None or n < best_n):
            best, best_n = name, n
    return (best, best_n) if best is not None else (next(iter(curves)), None)


#: SSIM -> MOS (Table 5.1, after Zinner et al.): lower bounds.
MOS_SSIM = (("Excellent", 0.99), ("Good", 0.95), ("Fair", 0.88), ("Poor", 0.5), ("Bad", -1.0))


def mos_of_ssim(ssim: float) -> str:
    return next(label for label, lo in MOS_SSIM if ssim >= lo)


# ----------------------------------------------------------------------------------------------
# The frame graph, read from the decoder

_TYPES = {1: "I", 2: "P", 3: "B"}


def frame_graph(path: str, max_frames: int | None = None) -> dict:
    """A video file's frames and reference graph, read from the decoder (FFmpeg's exported motion
    vectors, ``flags2 +export_mvs``): ``frames`` in decode order (``id`` = decode index, ``pts``,
    ``type`` I/P/B, ``bytes`` and file ``offset`` of its packet, ``display`` index), ``edges[(x, y)]`` = how many of frame
    y's macroblocks reference frame x, as 16x16-macroblock equivalents of the predicted blocks' areas
    (a bi-predicted block counts for both of its references), and the frame size. A motion vector's
    ``source`` (-1 past, +1 future) names the nearest I/P frame before or after y in display order:
    exact for encodes with one reference frame and no B-pyramid (the content pipeline's VOXEL encodes),
    an approximation otherwise (then a reference further back is attributed to the nearest one)."""
    import av
    c = av.open(path)
    try:
        st = c.streams.video[0]
        st.codec_context.options = {"flags2": "+export_mvs"}
        pkts, decoded = [], []
        for pkt in c.demux(st):
            if pkt.size:
                pkts.append((pkt.pts, pkt.size, pkt.pos))
            for fr in pkt.decode():
                decoded.append(_frame_info(fr))
            if max_frames is not None and len(pkts) >= max_frames and len(decoded) >= max_frames:
                break
        w, h = st.codec_context.width, st.codec_context.height
    finally:
        c.close()
    by_pts = {d["pts"]: d for d in decoded}
    pkts = [(pts, size, pos) for pts, size, pos in pkts if pts in by_pts]
    if max_frames is not None:
        pkts = pkts[:max_frames]
    keep = {pts for pts, _, _ in pkts}
    display = sorted(keep)
    disp_idx = {pts: i for i, pts in enumerate(display)}
    frames = [{"id": i, "pts": pts, "type": by_pts[pts]["type"], "bytes": size, "offset": pos,
               "display": disp_idx[pts]} for i, (pts, size, pos) in enumerate(pkts)]
    id_of = {f["pts"]: f["id"] for f in frames}
    anchors = [pts for pts in display if by_pts[pts]["type"] in ("I", "P")]
    edges: dict = {}
    for pts in display:
        d = by_pts[pts]
        prev = next((a for a in reversed(anchors) if a < pts), None)
        nxt = next((a for a in anchors if a > pts), None)
        for src, area in d["areas"].items():
            ref = prev if src < 0 else nxt
            if ref is None or ref not in id_of:
                continue
            e = (id_of[ref], id_of[pts])
            edges[e] = edges.get(e, 0) + area
    edges = {k: round(v / 256) for k, v in edges.items() if round(v / 256) > 0}
    return {"frames": frames, "edges": edges, "width": w, "height": h}


def _frame_info(fr) -> dict:
    areas: dict = {}
    mv = fr.side_data.get("MOTION_VECTORS") if hasattr(fr.side_data, "get") else None
    if mv is not None:
        arr = mv.to_ndarray()
        for src in (-1, 1):
            sel = arr[arr["source"] == src]
            if len(sel):
                areas[src] = int((sel["w"].astype("int64") * sel["h"].astype("int64")).sum())
    t = int(fr.pict_type) if not isinstance(fr.pict_type, str) else {"I": 1, "P": 2, "B": 3}.get(fr.pict_type, 0)
    return {"pts": fr.pts, "type": _TYPES.get(t, "?"), "areas": areas}


# ----------------------------------------------------------------------------------------------
# Decoding with frames dropped, and the prefix curve

def decode_with_drops(path: str, keep: set | None = None) -> list:
    """The luma planes of a file's frames in display order, decoded with only the frames whose decode
    index is in ``keep`` (None: all). A frame that is not decoded (dropped, or lost to a dropped
    reference) is replaced by the previous one shown (frame freeze, as a player repeats the last
    frame); frames that reference a dropped frame are decoded from whatever the decoder holds (its
    own concealment), so errors propagate as in a real player."""
    import av
    c = av.open(path)
    try:
        st = c.streams.video[0]
        order = []
        shown: dict = {}
        dec = av.CodecContext.create(st.codec_context.name, "r")
        dec.extradata = st.codec_context.extradata
        i = 0
        for pkt in c.demux(st):
            if not pkt.size:
                continue
            order.append(pkt.pts)
            if keep is None or i in keep:
                try:
                    for fr in dec.decode(pkt):
                        shown[fr.pts] = fr.to_ndarray(format="gray")
                except av.error.InvalidDataError:
                    pass
            i += 1
        try:
            for fr in dec.decode(None):
                shown[fr.pts] = fr.to_ndarray(format="gray")
        except (av.error.EOFError, av.error.InvalidDataError):
            pass
    finally:
        c.close()
    out, last = [], None
    for pts in sorted(order):
        if pts in shown:
            last = shown[pts]
        out.append(last)
    first = next((x for x in out if x is not None), None)
    return [x if x is not None else first for x in out]


def ssim_y(a, b) -> float:
    """SSIM of two luma planes: 8x8 windows every 4 pixels, C1 = (0.01 x 255)^2, C2 = (0.03 x 255)^2,
    averaged (the windowing of FFmpeg's ``ssim`` filter)."""
    import numpy as np
    if a is None or b is None:
        return 0.0
    x = a.astype("float64")
    y = b.astype("float64")

    def box(z):
        c = np.pad(z, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
        s = c[8:, 8:] - c[:-8, 8:] - c[8:, :-8] + c[:-8, :-8]
        return s[::4, ::4] / 64.0
    mx, my = box(x), box(y)
    vx = box(x * x) - mx * mx
    vy = box(y * y) - my * my
    cxy = box(x * y) - mx * my
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    m = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return float(m.mean())


def prefix_curve(path: str, order: list, frames: list, reference: list, ks=None) -> list[tuple]:
    """``[(k, n, ssim), ...]`` for k = 0 .. len(order) - 1: the segment decoded with the I-frame (order[0])
    and the first k droppable frames of ``order``, n = those k frames' bytes, ssim = the mean SSIM of
    its shown frames against ``reference`` (luma planes in display order, e.g. the pristine decode or
    the source at this resolution). ``ks``: only these prefix lengths (default: all)."""
    import numpy as np
    size = {f["id"]: f["bytes"] for f in frames}
    out = []
    cum = [0]
    for fid in order[1:]:
        cum.append(cum[-1] + size[fid])
    for k in (range(len(order)) if ks is None else ks):
        n = cum[k]
        shown = decode_with_drops(path, set(order[:k + 1]))
        memo: dict = {}
        tot = 0.0
        for i, (a, b) in enumerate(zip(shown, reference)):
            if a is not None and b is not None and a.shape == b.shape and np.array_equal(a, b):
                tot += 1.0                          # decoded exactly as the reference: skip the windows
                continue
            key = (id(a), id(b))                    # a frozen frame repeats the same array
            if key not in memo:
                memo[key] = ssim_y(a, b)
            tot += memo[key]
        out.append((k, n, tot / max(1, len(reference))))
    return out


# ----------------------------------------------------------------------------------------------
# The extended manifest (Listing 6.1)

#: Bytes of each droppable frame kept reliable: the 4-byte NAL length prefix, the NAL header and the
#: slice header, as the 15-byte last reliable range of Listing 6.1 (a fixed length, not parsed).
HEADER_BYTES = 15


def segment_ranges(media: tuple, frames: list, order: list, header_bytes: int = HEADER_BYTES) -> tuple[list, list]:
    """(reliable, unreliable) byte ranges of one segment (``media`` = its inclusive byte range in the
    rung's file; ``frames``: ``id``, ``offset`` (absolute), ``bytes``; ``order``: most important first,
    order[0] the I-frame). Reliable: everything that is not a droppable frame's payload — the container
    boxes, the I-frame, and the first ``header_bytes`` of every other frame; unreliable: one range per
    droppable frame's payload, in ``order``. Together they tile ``media``."""
    a, b = media
    by_id = {f["id"]: f for f in frames}
    payload = {}
    for fid in order[1:]:
        f = by_id[fid]
        h = min(header_bytes, f["bytes"])
        if f["bytes"] > h:
            payload[fid] = (f["offset"] + h, f["offset"] + f["bytes"] - 1)
    cut = sorted(payload.values())
    reliable, at = [], a
    for x, y in cut:
        if x < a or y > b:
            raise ValueError(f"frame bytes {x}-{y} outside the segment {a}-{b}")
        if x > at:
            reliable.append((at, x - 1))
        at = y + 1
    if at <= b:
        reliable.append((at, b))
    unreliable = [payload[fid] for fid in order[1:] if fid in payload]
    return reliable, unreliable


def _ranges(rs) -> str:
    return ",".join(f"{a}-{b}" for a, b in rs)


def voxel_attributes(media: tuple, reliable: list, unreliable: list, ssims: list) -> dict:
    """The extended ``SegmentURL`` attributes of one segment: ``mediaRange`` (inclusive byte range),
    ``reliable`` and ``unreliable`` ranges (absolute in the rung's file; unreliable in importance
    order), ``reliableSize`` and ``ssims="q:k:n,..."``. Checks that the ranges lie in the segment, do
    not overlap, cover it exactly, and that each entry's n is the bytes of its first k unreliable
    ranges."""
    a, b = media
    allr = sorted(list(reliable) + list(unreliable))
    at = a
    for x, y in allr:
        if x != at or y < x:
            raise ValueError(f"ranges must tile mediaRange {a}-{b} without gaps or overlaps (at byte {at}: {x}-{y})")
        at = y + 1
    if at != b + 1:
        raise ValueError(f"ranges end at byte {at - 1}, mediaRange at {b}")
    sizes = [y - x + 1 for x, y in unreliable]
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)
    for q, k, n in ssims:
        if not 0 <= k <= len(unreliable) or prefix[k] != n:
            raise ValueError(f"ssims entry {q}:{k}:{n}: the first {k} unreliable ranges hold "
                             f"{prefix[k] if 0 <= k <= len(unreliable) else '?'} bytes")
    return {"mediaRange": f"{a}-{b}", "reliable": _ranges(reliable), "unreliable": _ranges(unreliable),
            "reliableSize": str(sum(y - x + 1 for x, y in reliable)),
            "ssims": ",".join(f"{_q(q)}:{k}:{n}" for q, k, n in ssims)}


def _q(q: float) -> str:
    s = f"{q:.3f}".rstrip("0")
    return s + "0" if s.endswith(".") else s


_RANGE = re.compile(r"^(\d+)-(\d+)$")


def _parse_ranges(text: str, where: str) -> list:
    out = []
    for part in [p for p in text.split(",") if p.strip()]:
        m = _RANGE.match(part.strip())
        if not m or int(m.group(2)) < int(m.group(1)):
            raise InputError(None, where, "byte ranges a-b,c-d,... with a <= b", repr(part))
        out.append((int(m.group(1)), int(m.group(2))))
    return out


def parse_voxel_attributes(attrs: dict, where: str = "SegmentURL") -> dict:
    """Read the attributes back: ``{"media": (a, b), "reliable": [...], "unreliable": [...],
    "reliable_size": int, "ssims": [(q, k, n), ...]}``, checked as :func:`voxel_attributes` writes
    them (one line naming the attribute otherwise)."""
    media = _parse_ranges(attrs.get("mediaRange", ""), f"{where}@mediaRange")
    if len(media) != 1:
        raise InputError(None, f"{where}@mediaRange", "one byte range", repr(attrs.get("mediaRange")))
    rel = _parse_ranges(attrs.get("reliable", ""), f"{where}@reliable")
    unr = _parse_ranges(attrs.get("unreliable", ""), f"{where}@unreliable")
    try:
        rsize = int(attrs.get("reliableSize", ""))
    except ValueError:
        raise InputError(None, f"{where}@reliableSize", "an integer", repr(attrs.get("reliableSize"))) from None
    ssims = []
    for part in [p for p in attrs.get("ssims", "").split(",") if p.strip()]:
        bits = part.split(":")
        try:
            q, k, n = float(bits[0]), int(bits[1]), int(bits[2])
            if len(bits) != 3:
                raise ValueError
        except (ValueError, IndexError):
            raise InputError(None, f"{where}@ssims", "entries q:k:n", repr(part)) from None
        ssims.append((q, k, n))
    if rsize != sum(y - x + 1 for x, y in rel):
        raise InputError(None, f"{where}@reliableSize", f"{sum(y - x + 1 for x, y in rel)} (the reliable ranges' "
                                                        "bytes)", str(rsize))
    try:
        voxel_attributes(media[0], rel, unr, ssims)
    except ValueError as e:
        raise InputError(None, where, message=str(e)) from None
    return {"media": media[0], "reliable": rel, "unreliable": unr, "reliable_size": rsize, "ssims": ssims}


# ----------------------------------------------------------------------------------------------
# Whole manifests

def write_mpd(mpd_in: str, mpd_out: str, entries: dict, avg_ssim: dict | None = None) -> None:
    """Write ``mpd_out``: ``mpd_in`` (a single-file, byte-ranged SegmentList MPD such as `qoelab video
    prepare` writes) with the VOXEL attributes of Listing 6.1 on every ``SegmentURL`` that has an entry.
    ``entries[(rung, segment)]`` = ``{"reliable": [...], "unreliable": [...], "ssims": [(q, k, n), ...]}``
    (``rung`` = the Representation's position, 0 first); ``avg_ssim[rung]`` sets
    ``Representation@avgSSIM`` (the public client's BOLA utility). Unknown to VOXEL-unaware players,
    which fetch ``mediaRange`` as before. Every entry is checked (:func:`voxel_attributes`)."""
    import xml.etree.ElementTree as ET
    from qoelab.content import mpd as mpdmod
    ET.register_namespace("", mpdmod.NS)
    try:
        tree = ET.parse(mpd_in)
    except (OSError, ET.ParseError) as e:
        raise InputError(mpd_in, None, "a DASH MPD (XML)", str(e)) from None
    ns = {"d": mpdmod.NS}
    used = set()
    for r, rep in enumerate(tree.getroot().findall(".//d:Representation", ns)):
        if avg_ssim and r in avg_ssim:
            rep.set("avgSSIM", f"{avg_ssim[r]:.6f}")
        for t, u in enumerate(rep.findall("d:SegmentList/d:SegmentURL", ns)):
            e = entries.get((r, t))
            if e is None:
                continue
            media = _parse_ranges(u.get("mediaRange", ""), f"Representation[{r}].SegmentURL[{t}]@mediaRange")
            if len(media) != 1:
                raise InputError(mpd_in, f"Representation[{r}].SegmentURL[{t}]@mediaRange", "one byte range",
                                 repr(u.get("mediaRange")))
            try:
                attrs = voxel_attributes(media[0], e["reliable"], e["unreliable"], e["ssims"])
            except ValueError as err:
                raise InputError(mpd_in, f"Representation[{r}].SegmentURL[{t}]", message=str(err)) from None
            for k in ("reliable", "unreliable", "reliableSize", "ssims"):
                u.set(k, attrs[k])
            used.add((r, t))
    missing = set(entries) - used
    if missing:
        raise InputError(mpd_in, None, message=f"no SegmentURL for entries {sorted(missing)[:3]} (rung, segment)")
    ET.indent(tree)
    tree.write(mpd_out, xml_declaration=True, encoding="utf-8")


def read_mpd(path: str) -> dict:
    """The VOXEL view of an MPD: per Representation (in order) its ``avg_ssim`` (or None) and per
    segment the parsed attributes (:func:`parse_voxel_attributes`) or None where a SegmentURL has
    none. Errors name the file and the SegmentURL."""
    import xml.etree.ElementTree as ET
    from qoelab.content import mpd as mpdmod
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise InputError(path, None, "a DASH MPD (XML)", str(e)) from None
    ns = {"d": mpdmod.NS}
    reps = []
    for r, rep in enumerate(root.findall(".//d:Representation", ns)):
        segs = []
        for t, u in enumerate(rep.findall("d:SegmentList/d:SegmentURL", ns)):
            if u.get("ssims") is None and u.get("unreliable") is None:
                segs.append(None)
                continue
            try:
                segs.append(parse_voxel_attributes(dict(u.attrib), f"Representation[{r}].SegmentURL[{t}]"))
            except InputError as e:
                raise InputError(path, e.where, message=e.message, expected=e.expected, found=e.found) from None
        a = rep.get("avgSSIM")
        try:
            avg = float(a) if a is not None else None
        except ValueError:
            raise InputError(path, f"Representation[{r}]@avgSSIM", "a number", repr(a)) from None
        reps.append({"id": rep.get("id"), "avg_ssim": avg, "segments": segs})
    return {"representations": reps}
