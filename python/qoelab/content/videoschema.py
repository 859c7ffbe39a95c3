"""The normalized video table (the core's ``Video``) as Python checks it: shared by the corpus
loader and the Sabre/Minerva importers."""

from __future__ import annotations

from qoelab.errors import InputError

VIDEO_KEYS = {"name", "segment_duration", "last_segment_duration", "bitrates_bps", "sizes", "quality",
              "resolutions", "byte_offsets"}


def validate(v, path: str) -> None:
    """The invariants of the core's ``Video::validate`` (same messages, as InputError)."""
    if not isinstance(v, dict):
        raise InputError(path, None, "a video object", type(v).__name__)
    extra = set(v) - VIDEO_KEYS
    if extra:
        raise InputError(path, ",".join(sorted(extra)), "only the Video fields", "unknown field")
    for k in ("name", "segment_duration", "bitrates_bps", "sizes"):
        if k not in v:
            raise InputError(path, k, "a value", "missing")
    br = v["bitrates_bps"]
    if not br or any(a >= b for a, b in zip(br, br[1:])):
        raise InputError(path, "bitrates_bps", "strictly ascending bitrates", str(br))
    if not isinstance(v["segment_duration"], int) or v["segment_duration"] <= 0:
        raise InputError(path, "segment_duration", "an integer > 0 (ns)", str(v["segment_duration"]))
    r = len(br)
    if not v["sizes"]:
        raise InputError(path, "sizes", "at least one segment", "none")
    for i, row in enumerate(v["sizes"]):
        if len(row) != r:
            raise InputError(path, f"sizes[{i}]", f"{r} sizes (one per rung)", str(len(row)))
    for m, t in (v.get("quality") or {}).items():
        if len(t) != len(v["sizes"]) or any(len(row) != r for row in t):
            raise InputError(path, f"quality.{m}", f"{len(v['sizes'])} segments x {r} rungs", "other shape")
    res = v.get("resolutions")
    if res is not None and len(res) != r:
        raise InputError(path, "resolutions", f"{r} entries", str(len(res)))
    from qoelab.video.model import check_byte_offsets
    check_byte_offsets(v.get("byte_offsets"), v["sizes"], path)
