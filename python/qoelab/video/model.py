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
               "resolutions", "byte_offsets"}
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
    return video


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
