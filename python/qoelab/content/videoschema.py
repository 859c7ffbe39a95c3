"""The normalized video table (the core's ``Video``) as Python checks it: shared by the corpus
loader and the Sabre/Minerva importers."""

from __future__ import annotations

from qoelab.errors import InputError

VIDEO_KEYS = {"name", "segment_duration", "last_segment_duration", "bitrates_bps", "sizes", "quality",
              "resolutions", "byte_offsets"}


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _show(x) -> str:
    s = repr(x)
    return s if len(s) <= 40 else s[:40] + "..."


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
    if (not isinstance(br, list) or not br or not all(_is_int(b) for b in br)
            or any(a >= b for a, b in zip(br, br[1:]))):
        raise InputError(path, "bitrates_bps", "strictly ascending bitrates", _show(br))
    if not _is_int(v["segment_duration"]) or v["segment_duration"] <= 0:
        raise InputError(path, "segment_duration", "an integer > 0 (ns)", _show(v["segment_duration"]))
    r = len(br)
    if not isinstance(v["sizes"], list) or not v["sizes"]:
        raise InputError(path, "sizes", "at least one segment", "none" if v["sizes"] == [] else _show(v["sizes"]))
    for i, row in enumerate(v["sizes"]):
        if not isinstance(row, list) or len(row) != r:
            found = str(len(row)) if isinstance(row, list) else _show(row)
            raise InputError(path, f"sizes[{i}]", f"{r} sizes (one per rung)", found)
        for j, x in enumerate(row):
            if not _is_int(x) or x < 0:   # (a negative size was accepted here and named the scenario later)
                raise InputError(path, f"sizes[{i}][{j}]", "an integer byte count >= 0", _show(x))
    q = v.get("quality") or {}
    if not isinstance(q, dict):
        raise InputError(path, "quality", "an object metric -> [segment][rung]", _show(q))
    for m, t in q.items():
        if (not isinstance(t, list) or len(t) != len(v["sizes"])
                or any(not isinstance(row, list) or len(row) != r for row in t)):
            raise InputError(path, f"quality.{m}", f"{len(v['sizes'])} segments x {r} rungs", "other shape")
    res = v.get("resolutions")
    if res is not None and (not isinstance(res, list) or len(res) != r):
        raise InputError(path, "resolutions", f"{r} entries", str(len(res)) if isinstance(res, list) else _show(res))
    from qoelab.video.model import check_byte_offsets
    check_byte_offsets(v.get("byte_offsets"), v["sizes"], path)
