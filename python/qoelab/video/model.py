"""The normalized video description (the core's ``Video``) built and checked in Python: shared by
every loader (Sabre, Pensieve, MPD, HLS, synthetic)."""

from __future__ import annotations

import math
from typing import Any

from qoelab.errors import InputError

NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000

#: Pensieve's ``VIDEO_BIT_RATE`` (kbit/s) for ``video_size_0`` .. ``video_size_5`` (Envivio, 4 s).
PENSIEVE_BITRATES_KBPS = (300, 750, 1200, 1850, 2850, 4300)


# Limits of a video (beyond them it is a typo, or a few bytes of manifest that would expand to
# gigabytes): segments per video, bytes per segment, bit/s per rung, ns per segment.
MAX_SEGMENTS = 100_000
MAX_SEGMENT_BYTES = 10**12
MAX_BITRATE_BPS = 10**12
MAX_SEGMENT_NS = 3600 * 10**9


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def layout_from_sizes(sizes: list, init_bytes: list) -> list[list[int]]:
    """A byte layout that tiles each rung's file exactly (``layout_from_sizes`` of the core): rung
    ``r``'s file starts with ``init_bytes[r]`` bytes (the init segment), then the segments back to
    back, so ``offset[s][r] = init_bytes[r] + sum(sizes[0..s][r])``."""
    nxt = [int(b) for b in init_bytes]
    out = []
    for row in sizes:
        if len(row) != len(nxt):
            raise ValueError(f"layout_from_sizes: {len(row)} sizes in a row for {len(nxt)} init sizes")
        out.append(list(nxt))
        nxt = [a + int(b) for a, b in zip(nxt, row)]
    return out


def make_video(name: str, segment_duration: int, bitrates_bps: list, sizes: list, *,
               last_segment_duration: int | None = None, quality: dict | None = None,
               resolutions: list | None = None, byte_offsets: list | None = None) -> dict:
    """Assemble a Video dict (no validation; see :func:`validate_video`). ``byte_offsets``: the
    byte layout ``[segment][rung]`` (offset of the segment's first byte in its rung's file), or None."""
    return {
        "name": str(name),
        "segment_duration": int(segment_duration),
        "last_segment_duration": None if last_segment_duration is None else int(last_segment_duration),
        "bitrates_bps": [int(b) for b in bitrates_bps],
        "sizes": [[int(x) for x in row] for row in sizes],
        "quality": {} if quality is None else quality,
        "resolutions": None if resolutions is None else [[int(w), int(h)] for w, h in resolutions],
        "byte_offsets": None if byte_offsets is None else [[int(x) for x in row] for row in byte_offsets],
    }


def validate_video(video: dict, path: str | None = None) -> dict:
    """The rules of ``Video::validate`` (core), raised as InputError naming ``path`` and the key."""
    p = path if path is not None else video.get("name", "video")
    allowed = {"name", "segment_duration", "last_segment_duration", "bitrates_bps", "sizes", "quality",
               "resolutions", "byte_offsets", "voxel"}
    extra = sorted(set(video) - allowed)
    if extra:
        raise InputError(p, extra[0], "only the Video keys " + ", ".join(sorted(allowed)), f"key {extra[0]}")
    b = video.get("bitrates_bps")
    if not isinstance(b, list) or not b:
        raise InputError(p, "bitrates_bps", "at least one rung", repr(b))
    for i, x in enumerate(b):
        if not _is_int(x) or not 0 < x <= MAX_BITRATE_BPS:
            raise InputError(p, f"bitrates_bps[{i}]", "an integer bit/s > 0 and <= 1e12", repr(x)[:40])
    for i in range(1, len(b)):
        if b[i] <= b[i - 1]:
            raise InputError(p, f"bitrates_bps[{i}]", f"strictly ascending bitrates (> {b[i - 1]})", str(b[i]))
    d = video.get("segment_duration")
    if not _is_int(d) or not 0 < d <= MAX_SEGMENT_NS:
        raise InputError(p, "segment_duration", "an integer ns > 0 (at most one hour)", repr(d)[:40])
    last = video.get("last_segment_duration")
    if last is not None and (not _is_int(last) or not 0 < last <= MAX_SEGMENT_NS):
        raise InputError(p, "last_segment_duration", "null or an integer ns > 0 (at most one hour)", repr(last)[:40])
    sizes = video.get("sizes")
    if not isinstance(sizes, list) or not sizes:
        raise InputError(p, "sizes", "at least one segment", repr(sizes)[:40])
    if len(sizes) > MAX_SEGMENTS:
        raise InputError(p, "sizes", f"at most {MAX_SEGMENTS:,} segments", str(len(sizes)))
    r = len(b)
    for i, row in enumerate(sizes):
        if not isinstance(row, list) or len(row) != r:
            n = len(row) if isinstance(row, list) else type(row).__name__
            raise InputError(p, f"sizes[{i}]", f"{r} sizes (one per rung)", str(n))
        for j, x in enumerate(row):
            if not _is_int(x) or not 0 <= x <= MAX_SEGMENT_BYTES:
                raise InputError(p, f"sizes[{i}][{j}]", "an integer byte count >= 0 and <= 1e12", repr(x)[:40])
    q = video.get("quality") or {}
    if not isinstance(q, dict):
        raise InputError(p, "quality", "an object metric -> [segment][rung]", type(q).__name__)
    for m, t in q.items():
        if (not isinstance(t, list) or len(t) != len(sizes)
                or any(not isinstance(row, list) or len(row) != r or not all(_is_num(v) for v in row) for row in t)):
            raise InputError(p, f"quality.{m}", f"{len(sizes)} segments x {r} rungs of numbers", "another shape")
    res = video.get("resolutions")
    if res is not None:
        if not isinstance(res, list) or len(res) != r:
            raise InputError(p, "resolutions", f"{r} entries", repr(res)[:40])
        for i, wh in enumerate(res):
            if not isinstance(wh, (list, tuple)) or len(wh) != 2 or not all(_is_int(v) and v > 0 for v in wh):
                raise InputError(p, f"resolutions[{i}]", "[width, height]", repr(wh))
    check_byte_offsets(video.get("byte_offsets"), sizes, p)
    check_voxel(video, p)
    return video


def _is_range_list(v: Any) -> bool:
    """``v`` is a list of [first, last] pairs of integers (one loop; large VOXEL tables are checked
    once per run)."""
    if not isinstance(v, list):
        return False
    for x in v:
        if not isinstance(x, (list, tuple)) or len(x) != 2:
            return False
        a, b = x
        if not (type(a) is int or _is_int(a)) or not (type(b) is int or _is_int(b)):
            return False
    return True


def voxel_segment_problem(seg: dict, first: int, last: int) -> tuple[str, str, str] | None:
    """The first rule of a VOXEL segment entry (``reliable``, ``unreliable``: [[a, b], ...]
    inclusive byte ranges; ``ssims``: [[q, k, n], ...]) that ``(first, last)``, the segment's bytes
    in its rung's file, breaks: (field, expected, found), or None (``VoxelSegment::validate``)."""
    rel, unr, ss = seg.get("reliable"), seg.get("unreliable"), seg.get("ssims")
    for k, v in (("reliable", rel), ("unreliable", unr)):
        if not _is_range_list(v):
            return k, "a list of [first, last] byte ranges", repr(v)[:60]
        for a, b in v:
            if b < a:
                return k, "ranges first-last with first <= last", f"{a}-{b}"
    at = first
    for a, b in sorted(list(map(tuple, rel)) + list(map(tuple, unr))):
        if a != at:
            return ("unreliable", f"reliable and unreliable ranges that tile the segment's bytes {first}-{last} "
                    f"without gaps or overlaps (byte {at} next)", f"{a}-{b}")
        at = b + 1
    if at != last + 1:
        return "unreliable", f"ranges ending at the segment's last byte {last}", str(at - 1)
    if not isinstance(ss, list):
        return "ssims", "a list of [ssim, k, bytes]", repr(ss)[:60]
    prefix = [0]
    for a, b in unr:
        prefix.append(prefix[-1] + b - a + 1)
    prev = None
    for e in ss:
        if (not isinstance(e, (list, tuple)) or len(e) != 3 or not _is_num(e[0]) or not _is_int(e[1])
                or not _is_int(e[2])):
            return "ssims", "entries [ssim, k, bytes]", repr(e)[:60]
        q, k, n = e
        if not 0 <= q <= 1:
            return "ssims", "SSIM levels in [0, 1]", repr(q)
        if not 0 <= k < len(prefix):
            return "ssims", f"k <= {len(unr)} (the unreliable ranges)", str(k)
        if n != prefix[k]:
            return "ssims", f"{prefix[k]} bytes for the first {k} unreliable ranges", str(n)
        if prev is not None and (k <= prev[1] or q < prev[0]):
            return "ssims", f"k ascending and SSIM non-decreasing (after {prev[0]}:{prev[1]})", f"{q}:{k}"
        prev = (q, k)
    return None


def check_voxel(video: dict, p: str) -> None:
    """The VOXEL table's rules of ``Video::validate``: a byte layout, ``segments[segment][rung]``
    entries that tile each segment's bytes, monotone SSIM levels, ``avg_ssim`` one per rung."""
    v = video.get("voxel")
    if v is None:
        return
    sizes, offs = video["sizes"], video.get("byte_offsets")
    if offs is None:
        raise InputError(p, "voxel", "a byte layout (byte_offsets) with the VOXEL table", "none")
    n, r = len(sizes), len(sizes[0])
    if not isinstance(v, dict) or not isinstance(v.get("segments"), list) or len(v["segments"]) != n or \
            any(not isinstance(row, list) or len(row) != r for row in v["segments"]):
        raise InputError(p, "voxel.segments", f"{n} segments x {r} rungs", "another shape")
    a = v.get("avg_ssim")
    if a is not None and (not isinstance(a, list) or len(a) != r or not all(_is_num(x) for x in a)):
        raise InputError(p, "voxel.avg_ssim", f"null or {r} numbers (one per rung)", repr(a)[:60])
    for s, row in enumerate(v["segments"]):
        for j, seg in enumerate(row):
            if not isinstance(seg, dict) or set(seg) != {"reliable", "unreliable", "ssims"}:
                raise InputError(p, f"voxel.segments[{s}][{j}]", "an object with reliable, unreliable, ssims",
                                 repr(seg)[:60])
            bad = voxel_segment_problem(seg, offs[s][j], offs[s][j] + sizes[s][j] - 1)
            if bad:
                raise InputError(p, f"voxel.segments[{s}][{j}].{bad[0]}", bad[1], bad[2])


def check_byte_offsets(offs, sizes: list, p: str) -> None:
    """The byte-layout rules of ``Video::validate``: None, or ``[segment][rung]`` integers where per
    rung the segments are in file order and never overlap (``off[s+1][r] >= off[s][r] + size[s][r]``)."""
    if offs is None:
        return
    n, r = len(sizes), len(sizes[0])
    if not isinstance(offs, list) or len(offs) != n:
        found = f"{len(offs)} segments" if isinstance(offs, list) else type(offs).__name__
        raise InputError(p, "byte_offsets", f"null or {n} segments x {r} rungs", found)
    ends = [0] * r
    for i, row in enumerate(offs):
        if not isinstance(row, list) or len(row) != r:
            found = str(len(row)) if isinstance(row, list) else type(row).__name__
            raise InputError(p, f"byte_offsets[{i}]", f"{r} offsets (one per rung)", found)
        for j, x in enumerate(row):
            if not _is_int(x) or not 0 <= x < 2**64:
                raise InputError(p, f"byte_offsets[{i}][{j}]", "an integer byte offset >= 0", repr(x)[:40])
            if i > 0 and x < ends[j]:
                raise InputError(p, f"byte_offsets[{i}][{j}]",
                                 f">= {ends[j]} (segments in file order, not overlapping segment {i - 1})", str(x))
            ends[j] = x + sizes[i][j]
            if ends[j] >= 2**64:
                raise InputError(p, f"byte_offsets[{i}][{j}]", "offset + size < 2^64", str(x))


# ------------------------------------------------------------------------------------ sabre movie
