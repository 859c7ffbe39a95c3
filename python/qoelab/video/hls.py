"""HLS master + media playlists -> Video dict.

Master playlist: every ``#EXT-X-STREAM-INF:BANDWIDTH=<bps>[,RESOLUTION=WxH,...]`` followed by the URI
of its media playlist (relative to the master's folder, or ``media_dir``); ``BANDWIDTH`` is the
rung's nominal bitrate. Media playlist: per segment an ``#EXTINF:<seconds>,[title]`` and its size
from one of (first that applies): ``#EXT-X-SIZE:<bytes>`` (the HLS-BBA testbed's extension, written
by its hls-size-helper), ``#EXT-X-BYTERANGE:<n>[@<offset>]`` (n bytes), or the local file the URI
names. The tags of a segment come before its URI line. Other tags are ignored.

Byte layout (docs/formats.md "Byte layout"): when every segment of a variant has
``#EXT-X-BYTERANGE:<n>[@<o>]`` of one and the same URI, the offsets are kept (``o``, or without it
the byte after the previous segment's range, which must then be of the same URI, as RFC 8216 4.3.2.2
requires). Ranges must be in segment order and must not overlap; with ``#EXT-X-SIZE`` too, both must
give the same length. The video gets a layout only when every variant has one.

Errors name the playlist file and line.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlparse

from qoelab.errors import InputError, int_input, not_a_file, read_input
from qoelab.video.model import MAX_BITRATE_BPS, MAX_SEGMENT_BYTES, MAX_SEGMENT_NS, NS_PER_S, make_video, validate_video
from qoelab.video.mpd import MAX_FILE_BYTES, MAX_U32, _clip, _durations_to_nominal, _show

__all__ = ["load_hls", "parse_attribute_list"]


def _read_lines(path: str) -> list[str]:
    if not os.path.exists(path):
        raise InputError(path, None, "an existing playlist file", "no such file")
    data = read_input(path, "a playlist")   # a regular file of at most 256 MiB
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, str(data[: e.start].count(b"\n") + 1), "UTF-8 text", "undecodable bytes") from None
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None or lines[first].strip() != "#EXTM3U":
        raise InputError(path, str((first or 0) + 1), "#EXTM3U as the first line",
                         repr(lines[first].strip())[:40] if first is not None else "an empty file")
    return lines


def parse_attribute_list(text: str, path: str, line: int) -> dict:
    """``KEY=value,KEY="quoted, value"`` -> dict (quotes removed)."""
    out = {}
    pos = 0
    pat = re.compile(r'\s*([A-Z0-9-]+)=("[^"\n]*"|[^,]*)\s*(,|$)')
    while pos < len(text):
        m = pat.match(text, pos)
        if not m:
            raise InputError(path, str(line), "an attribute list KEY=value,...", repr(text[pos:pos + 30]))
        v = m.group(2)
        out[m.group(1)] = v[1:-1] if v.startswith('"') else v.strip()
        pos = m.end()
    return out


def _local(base_dir: str, uri: str) -> str:
    u = urlparse(uri)
    rel = unquote(u.path)
    if u.scheme:
        cand = os.path.join(base_dir, rel.lstrip("/"))
        return cand if os.path.exists(cand) else os.path.join(base_dir, os.path.basename(rel))
    return os.path.join(base_dir, rel)


def _media_playlist(path: str, media_dir: str | None) -> tuple[list[int], list[int], list[int] | None]:
    """(durations, sizes, byte offsets or None) of a media playlist."""
    lines = _read_lines(path)
    base = media_dir if media_dir is not None else os.path.dirname(os.path.abspath(path))
    durs, sizes, offsets, uris = [], [], [], []
    dur = size = None
    brange = None  # (length, offset or None, line) of this segment's #EXT-X-BYTERANGE
    prev_end = None  # (URI, first byte after the previous segment's range) if it was a range
    for i, raw in enumerate(lines, 1):
        ln = raw.strip()
        if not ln or ln == "#EXTM3U":
            continue
        if ln.startswith("#EXT-X-STREAM-INF"):
            raise InputError(path, str(i), "a media playlist (segments)", "#EXT-X-STREAM-INF (a master playlist)")
        if ln.startswith("#EXTINF:"):
            m = re.fullmatch(r"#EXTINF:\s*([0-9]+(?:\.[0-9]*)?)\s*(,.*)?", ln)
            if not m or not 0 < float(m.group(1)) <= MAX_SEGMENT_NS / NS_PER_S:
                raise InputError(path, str(i), f"#EXTINF:<seconds > 0 and <= {MAX_SEGMENT_NS // NS_PER_S}>,[title]",
                                 repr(ln)[:50])
            dur = round(float(m.group(1)) * NS_PER_S)
            if dur < 1:   # (1e-10 s rounds to 0 ns: named here, not as the Video's last_segment_duration)
                raise InputError(path, str(i), "#EXTINF:<seconds> of at least 1 ns", repr(ln)[:50])
        elif ln.startswith("#EXT-X-SIZE:"):
            v = ln[len("#EXT-X-SIZE:"):].strip()
            what = "#EXT-X-SIZE:<bytes> (an integer <= 1e12)"
            if not re.fullmatch(r"[0-9]+", v) or int_input(v, path, str(i), what) > MAX_SEGMENT_BYTES:
                raise InputError(path, str(i), what, repr(ln)[:50])
            size = int(v)
        elif ln.startswith("#EXT-X-BYTERANGE:"):
            v = ln[len("#EXT-X-BYTERANGE:"):].strip()
            what = "#EXT-X-BYTERANGE:<n>[@<offset>] (n <= 1e12, offset + n <= 1e14)"
            m = re.fullmatch(r"([0-9]+)(?:@([0-9]+))?", v)
            n_o = m and [int_input(g, path, str(i), what) for g in m.groups("0")]
            if not m or n_o[0] > MAX_SEGMENT_BYTES or n_o[1] + n_o[0] > MAX_FILE_BYTES:
                raise InputError(path, str(i), what, repr(ln)[:50])
            brange = (n_o[0], None if m.group(2) is None else n_o[1], i)
        elif ln.startswith("#"):
            continue
        else:  # a URI line: ends a segment
            if dur is None:
                raise InputError(path, str(i), "#EXTINF before the segment URI", repr(ln)[:50])
            off = None
            if brange is not None:
                n_bytes, off, bline = brange
                if off is None:
                    if prev_end is None or prev_end[0] != ln:
                        raise InputError(path, str(bline), "#EXT-X-BYTERANGE:<n>@<offset> (without an offset the "
                                         "previous segment must be a range of the same URI)", repr(ln)[:50])
                    off = prev_end[1]
                    if off + n_bytes > MAX_FILE_BYTES:
                        raise InputError(path, str(bline), "ranges ending below byte 1e14 of the URI",
                                         f"{off}-{off + n_bytes - 1}")
                elif prev_end is not None and prev_end[0] == ln and off < prev_end[1]:
                    raise InputError(path, str(bline), f"a range after the previous one of the same URI (offset >= "
                                     f"{prev_end[1]}: segments in file order, not overlapping)", f"offset {off}")
                if size is not None and size != n_bytes:
                    raise InputError(path, str(bline), f"the #EXT-X-SIZE of the segment ({size} bytes) as length",
                                     str(n_bytes))
                size = n_bytes
                prev_end = (ln, off + n_bytes)
            else:
                prev_end = None
            if size is None:
                f = _local(base, ln)
                if not os.path.isfile(f):
                    raise InputError(path, str(i), "#EXT-X-SIZE, #EXT-X-BYTERANGE or the local segment file "
                                     f"{_clip(f)}", "none")
                size = os.path.getsize(f)
            durs.append(dur)
            sizes.append(size)
            offsets.append(off)
            uris.append(ln)
            dur = size = brange = None
    if not sizes:
        raise InputError(path, str(len(lines)), "at least one segment (#EXTINF + URI)", "none")
    if dur is not None:
        raise InputError(path, str(len(lines)), "a segment URI after the last #EXTINF", "end of file")
    one_file = None not in offsets and len(set(uris)) == 1
    return durs, sizes, (offsets if one_file else None)


def load_hls(path: str, *, media_dir: str | None = None, name: str | None = None) -> dict:
    """Load an HLS master playlist (and its media playlists) as a Video dict."""
    path = str(path)
    lines = _read_lines(path)
    base = os.path.dirname(os.path.abspath(path))
    variants = []  # (bandwidth, line, resolution, media path)
    pending = None
    for i, raw in enumerate(lines, 1):
        ln = raw.strip()
        if ln.startswith("#EXT-X-STREAM-INF:"):
            attrs = parse_attribute_list(ln[len("#EXT-X-STREAM-INF:"):], path, i)
            bw = attrs.get("BANDWIDTH")
            if bw is None:
                raise InputError(path, str(i), "attribute BANDWIDTH in #EXT-X-STREAM-INF", "nothing")
            what = f"BANDWIDTH=<bit/s, an integer > 0 and <= {MAX_BITRATE_BPS}>"
            if not re.fullmatch(r"[0-9]+", bw) or not 0 < int_input(bw, path, str(i), what) <= MAX_BITRATE_BPS:
                raise InputError(path, str(i), what, _show(bw))
            res = None
            if "RESOLUTION" in attrs:
                what = f"RESOLUTION=<width>x<height> (integers in [1, {MAX_U32}])"
                m = re.fullmatch(r"([0-9]+)x([0-9]+)", attrs["RESOLUTION"])
                res = m and tuple(int_input(g, path, str(i), what) for g in m.groups())
                if not m or not all(0 < x <= MAX_U32 for x in res):
                    raise InputError(path, str(i), what, _show(attrs["RESOLUTION"]))
            pending = (int(bw), i, res)
        elif ln.startswith("#EXTINF") and not variants and pending is None:
            raise InputError(path, str(i), "a master playlist (#EXT-X-STREAM-INF)", "a media playlist")
        elif ln and not ln.startswith("#") and pending is not None:
            variants.append((*pending, _local(base, ln), i))
            pending = None
    if pending is not None:
        raise InputError(path, str(pending[1]), "a media playlist URI after #EXT-X-STREAM-INF", "end of file")
    if not variants:
        raise InputError(path, None, "at least one #EXT-X-STREAM-INF variant", "none")
    variants.sort(key=lambda v: v[0])
    for a, b in zip(variants, variants[1:]):
        if a[0] == b[0]:
            raise InputError(path, str(b[1]), f"distinct BANDWIDTH values (strictly ascending; line {a[1]} has it too)",
                             str(b[0]))
    cols = []
    for bw, line, _res, media, uri_line in variants:
        if not os.path.isfile(media):
            raise InputError(path, str(uri_line), f"the media playlist {_clip(media)}", not_a_file(media))
        cols.append(_media_playlist(media, media_dir))
    n = len(cols[0][1])
    for (bw, line, _r, media, _u), (_d, s, _o) in zip(variants, cols):
        if len(s) != n:
            raise InputError(path, str(line), f"{n} segments in every variant (as in {variants[0][3]})",
                             f"{len(s)} in {media}")
    nominal, last = _durations_to_nominal(cols[0][0])
    sizes = [[c[1][k] for c in cols] for k in range(n)]
    layout = [[c[2][k] for c in cols] for k in range(n)] if all(c[2] is not None for c in cols) else None
    res = [v[2] for v in variants] if all(v[2] for v in variants) else None
    video = make_video(name or os.path.basename(path).rsplit(".", 1)[0], nominal, [v[0] for v in variants], sizes,
                       last_segment_duration=last, resolutions=res, byte_offsets=layout)
    return validate_video(video, path)
