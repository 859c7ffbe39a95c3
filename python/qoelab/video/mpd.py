"""DASH MPD -> Video dict.

Supported addressing (per Representation, inherited from AdaptationSet / Period as DASH specifies):

* ``SegmentList`` with ``SegmentURL@mediaRange="first-last"`` (inclusive byte range; size = last - first
  + 1), or ``SegmentURL@media`` naming a local file (size = file size).
* ``SegmentBase@indexRange="first-last"``: the ``sidx`` box is read from that byte range of the local
  media file (``BaseURL`` resolved against ``media_dir``, default the MPD's folder); segment sizes =
  the ``referenced_size`` of each reference, durations = ``subsegment_duration / timescale``.
* ``SegmentTemplate`` (``@duration``/``@timescale`` or ``SegmentTimeline``) with the sizes given
  alongside: a JSON *sizes table* ``{"<Representation@id>": [bytes of segment 1, 2, ...], ...}``
  (argument ``sizes`` = a path or a dict; default ``<mpd name without .mpd>.sizes.json`` next to the
  MPD when it exists), else the local files the ``@media`` template names (``$RepresentationID$``,
  ``$Number[%0Nd]$``, ``$Bandwidth$``, ``$Time$``) under ``media_dir``.

Byte layout (``byte_offsets``, docs/formats.md "Byte layout"): a ``SegmentList`` whose SegmentURLs all
have ``mediaRange`` in one file (no ``@media``, or the same one on all) keeps each range's first byte; a
``SegmentBase`` keeps the ``sidx`` offsets (first subsegment at the first byte after the box plus
``first_offset``, then the ``referenced_size``s back to back). The video gets a layout only when every
Representation has one; ``SegmentTemplate`` (a file per segment) has none. Ranges of one file must
be in segment order and must not overlap (nor the ``Initialization@range``).

Errors name the MPD file, the line and the element path, e.g.
``x.mpd:14:/MPD/Period[1]/AdaptationSet[1]/Representation[2]@bandwidth: expected ...``.
"""

from __future__ import annotations

import gc
import math
import os
import re
import struct
import xml.parsers.expat
from collections import Counter
from urllib.parse import unquote, urlparse

from qoelab.errors import InputError, int_input, json_input, not_a_file, read_input
from qoelab.video.model import (MAX_BITRATE_BPS, MAX_SEGMENT_BYTES, MAX_SEGMENT_NS, MAX_SEGMENTS, NS_PER_S, make_video,
                                 validate_video)

__all__ = ["load_mpd", "parse_sidx", "parse_sidx_layout", "parse_iso_duration"]

# Bounds of manifest numbers. Byte positions (ranges, sidx offsets) stay below MAX_FILE_BYTES (100 TB):
# a video tiled to MAX_SEGMENTS segments (a scenario's video_duration) then keeps every offset within
# the core's u64. @timescale, @startNumber, @width and @height are xs:unsignedInt (u32), other
# integers xs:unsignedLong. A $Number%0<width>d$ width is a few digits, not a memory size.
MAX_FILE_BYTES = 10**14
MAX_U32 = 2**32 - 1
MAX_U64 = 2**64 - 1
MAX_TEMPLATE_WIDTH = 64


def _show(s: str, n: int = 40) -> str:
    """``repr`` of a user string, at most ``n`` characters of it (an error stays one short line)."""
    return repr(s) if len(s) <= n else f"{s[:n]!r}... ({len(s)} characters)"


def _clip(s: str, n: int = 200) -> str:
    """A path or URL built from user input, at most ``n`` characters of it, for an error message."""
    return s if len(s) <= n else f"{s[:n]}... ({len(s)} characters)"


class _Node:
    __slots__ = ("tag", "attrib", "children", "line", "index", "text", "parent", "counts")

    def __init__(self, tag, attrib, line, index, parent):
        self.tag = tag
        self.attrib = attrib
        self.children = []
        self.line = line
        self.index = index      # 1-based among the parent's children of this tag; 0 for the root
        self.text = ""
        self.parent = parent
        self.counts = None      # children per tag while parsing

    @property
    def xpath(self) -> str:
        """``/MPD/Period[1]/AdaptationSet[2]``: built when an error names the element (building it for
        every element cost a third of the parse time of a large SegmentList)."""
        parts = []
        node = self
        while node is not None:
            parts.append(f"/{node.tag}[{node.index}]" if node.parent is not None else f"/{node.tag}")
            node = node.parent
        return "".join(reversed(parts))

    def find_all(self, tag):
        return [c for c in self.children if c.tag == tag]

    def find(self, tag):
        for c in self.children:
            if c.tag == tag:
                return c
        return None


def _local(name: str) -> str:
    if " " in name:
        name = name.rsplit(" ", 1)[-1]  # namespace-expanded names are not used, but be safe
    return name.rsplit(":", 1)[-1] if ":" in name else name


# Bounds of the XML an MPD may be: a DASH MPD nests a few levels (MPD/Period/AdaptationSet/
# Representation/SegmentList/SegmentURL), holds up to MAX_SEGMENTS x rungs elements, and its text is
# URLs. Past them a file made expat's tree cost memory with depth^2 (xpaths) or count, or its text
# time with size^2: one line naming the place instead.
MAX_XML_DEPTH = 64
MAX_INDEX_RANGE = 16 * 2**20    # bytes of SegmentBase@indexRange read to find the sidx box
MAX_XML_ELEMENTS = 3_000_000
MAX_XML_TEXT = 65_536          # characters of text in one element
MAX_XML_ATTRIBUTES = 256       # attributes of one element (a DASH element has a few dozen at most)
MAX_XML_MARKUP = 1 << 20       # bytes from a "<" to its ">" (a start tag and its attributes, a comment)
MAX_REPRESENTATIONS = 10_000   # over the whole MPD (real ladders have a few dozen)


# (expected, found) of the refusals both parses make
_NO_DOCTYPE = ("an MPD without a DOCTYPE (DASH uses none; entity declarations are not read)", "a DOCTYPE")


def _too_many() -> tuple[str, str]:
    return f"at most {MAX_XML_ELEMENTS:,} XML elements", "more"   # (read at call time: tests lower the limit)


class _Refused(Exception):
    """Raised from an expat handler: the InputError to report (expat passes it through Parse)."""


def _parse_xml(path: str) -> _Node:
    if not os.path.exists(path):
        raise InputError(path, None, "an existing MPD file", "no such file")
    data = read_input(path, "an MPD file")   # a regular file of at most 256 MiB
    if len(data) > MAX_XML_MARKUP:
        # expat hands a start tag's attributes over whole: 8 x 10^6 of them (95 MB) took 3.5 GB and 30 s
        # before a handler could count them
        m = re.search(rb"<[^<>]{%d}" % MAX_XML_MARKUP, data)
        if m:
            raise InputError(path, str(data.count(b"\n", 0, m.start()) + 1),
                             f"markup (a tag, a comment) of at most {MAX_XML_MARKUP >> 20} MiB", "more")
    if len(data) > 4 * MAX_XML_ELEMENTS:   # (<a/> is 4 bytes: a shorter file cannot hold too many elements)
        _count_elements(path, data)        # 1.4 s to refuse 3 x 10^6 elements instead of 10 s and 1.5 GB of tree
    p = xml.parsers.expat.ParserCreate()
    stack: list[_Node] = []
    root: list[_Node] = []
    count = [0]
    reps = [0]

    def refuse(expected, found):
        raise _Refused(InputError(path, str(p.CurrentLineNumber), expected, found))

    def doctype(*_):   # entity declarations could expand without bound ("billion laughs")
        refuse(*_NO_DOCTYPE)

    def start(name, attrs):
        count[0] += 1
        if count[0] > MAX_XML_ELEMENTS:
            refuse(*_too_many())
        if len(attrs) > MAX_XML_ATTRIBUTES:   # (8 x 10^6 on one element: 95 MB of file, 3.7 GB of dict)
            refuse(f"at most {MAX_XML_ATTRIBUTES:,} attributes on one element", f"{len(attrs):,} on <{_local(name)}>")
        if len(stack) >= MAX_XML_DEPTH:
            refuse(f"XML elements nested at most {MAX_XML_DEPTH} deep", "deeper")
        tag = _local(name)
        if tag == "Representation":
            reps[0] += 1
            if reps[0] > MAX_REPRESENTATIONS:   # (each is read in Python: 10^6 of them took minutes)
                refuse(f"at most {MAX_REPRESENTATIONS:,} Representations (rungs)", "more")
        parent = stack[-1] if stack else None
        index = 0
        if parent is not None:
            counts = parent.counts
            if counts is None:
                counts = parent.counts = {}
            index = counts[tag] = counts.get(tag, 0) + 1
        node = _Node(tag, {_local(k): v for k, v in attrs.items()} if attrs else {}, p.CurrentLineNumber, index,
                     parent)
        if parent is not None:
            parent.children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(name):
        stack.pop().counts = None

    def chars(data):
        if stack:
            node = stack[-1]
            # white space between elements (an indented SegmentList: 11 characters a segment) or before
            # an element's text is not text: counted, it refused the pipeline's own MPDs past ~5,960 segments
            if (node.children or not node.text) and data.isspace():
                return
            if len(node.text) + len(data) > MAX_XML_TEXT:
                refuse(f"at most {MAX_XML_TEXT:,} characters of text in <{node.tag}>", "more")
            node.text += data

    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = chars
    p.StartDoctypeDeclHandler = doctype
    gc_was_on = gc.isenabled()
    gc.disable()   # millions of new nodes made the cyclic collector run over the growing tree again and again
    try:
        _parse(path, p, data)
    finally:
        if gc_was_on:
            gc.enable()
    return root[0]


def _parse(path: str, p, data: bytes) -> None:
    try:
        p.Parse(data, True)
    except _Refused as r:
        raise r.args[0] from None
    except MemoryError:   # (attributes are parsed into memory before a handler can count them)
        raise InputError(path, None, "an MPD that fits in memory", "more than the memory available") from None
    except xml.parsers.expat.ExpatError as e:
        raise InputError(path, f"{e.lineno}:{e.offset + 1}", "well-formed XML",
                         xml.parsers.expat.ErrorString(e.code)) from None


def _count_elements(path: str, data: bytes) -> None:
    """Refuse a file of more than MAX_XML_ELEMENTS elements (or with a DOCTYPE) before building its tree."""
    p = xml.parsers.expat.ParserCreate()
    count = [0]

    def start(_name, _attrs):
        count[0] += 1
        if count[0] > MAX_XML_ELEMENTS:
            raise _Refused(InputError(path, str(p.CurrentLineNumber), *_too_many()))

    def doctype(*_):
        raise _Refused(InputError(path, str(p.CurrentLineNumber), *_NO_DOCTYPE))

    p.StartElementHandler = start
    p.StartDoctypeDeclHandler = doctype
    _parse(path, p, data)


def _where(node: _Node, attr: str | None) -> str:
    return f"{node.line}:{node.xpath}" + (f"@{attr}" if attr else "")


def _err(path: str, node: _Node, attr: str | None, expected: str, found: str) -> InputError:
    return InputError(path, _where(node, attr), expected, found)


def _req(path, node, attr, expected):
    if attr not in node.attrib:
        raise _err(path, node, attr, f"attribute {attr} ({expected})", "nothing")
    return node.attrib[attr]


def _int_value(path, node, attr, v, minimum=0, maximum=MAX_U64):
    """The integer ``v`` (the value of ``node@attr``, maybe inherited) in [minimum, maximum]."""
    what = f"an integer >= {minimum} and <= {maximum}"
    s = v.strip()
    if re.fullmatch(r"[0-9]+", s):
        n = int_input(s, path, _where(node, attr), what)
        if minimum <= n <= maximum:
            return n
    raise _err(path, node, attr, what, _show(v))


def _int_attr(path, node, attr, default=None, minimum=0, maximum=MAX_U64):
    if attr not in node.attrib:
        if default is None:
            raise _err(path, node, attr, f"attribute {attr} (an integer >= {minimum})", "nothing")
        return default
    return _int_value(path, node, attr, node.attrib[attr], minimum, maximum)


def _range(path, node, attr, v=None):
    """``node@attr`` (or its inherited value ``v``) ``first-last`` -> (first, last), inclusive."""
    if v is None:
        v = _req(path, node, attr, "a byte range 'first-last'")
    what = "a byte range 'first-last' with first <= last < 1e14"
    m = re.fullmatch(r"\s*([0-9]+)-([0-9]+)\s*", v)
    if m:
        a, b = (int_input(g, path, _where(node, attr), what) for g in m.groups())
        if a <= b < MAX_FILE_BYTES:
            return a, b
    raise _err(path, node, attr, what, _show(v))


_NUM = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_DUR_RE = re.compile(f"P(?:{_NUM}Y)?(?:{_NUM}M)?(?:{_NUM}W)?(?:{_NUM}D)?(?:T(?:{_NUM}H)?(?:{_NUM}M)?(?:{_NUM}S)?)?")


def parse_iso_duration(text: str) -> int | None:
    """ISO 8601 duration (``PT1H2M3.5S``, ``P1DT2H``) -> ns; None if malformed. Years/months are
    not allowed (ambiguous)."""
    m = _DUR_RE.fullmatch(text.strip())
    if not m or text.strip() in ("P", "PT") or m.group(1) or m.group(2):
        return None
    w, d, h, mi, s = (float(g) if g else 0.0 for g in m.groups()[2:])
    ns = (((w * 7 + d) * 24 + h) * 60 + mi) * 60 * NS_PER_S + s * NS_PER_S
    return round(ns) if math.isfinite(ns) else None


def _presentation_ns(path, mpd, period):
    for node, attr in ((period, "duration"), (mpd, "mediaPresentationDuration")):
        if attr in node.attrib:
            v = node.attrib[attr]
            ns = parse_iso_duration(v)
            m = _DUR_RE.fullmatch(v.strip())
            if m and (m.group(1) or m.group(2)):
                raise _err(path, node, attr, "a duration in weeks, days, hours, minutes and seconds (years and months "
                           "have no fixed length), like PT193.68S", _show(v))
            if ns is None:
                raise _err(path, node, attr, "an ISO 8601 duration like PT193.68S", _show(v))
            if ns <= 0:
                raise _err(path, node, attr, "a duration > 0, like PT193.68S", _show(v))
            return ns
    return None


# ------------------------------------------------------------------------------------------ sidx
def parse_sidx(data: bytes, file: str, base_offset: int = 0) -> tuple[int, list[tuple[int, int]]]:
    """Find and parse the first ``sidx`` box in ``data`` (ISO/IEC 14496-12 8.16.3).

    Returns ``(timescale, [(referenced_size, subsegment_duration), ...])``. Errors name ``file`` and
    the byte offset (``base_offset`` = file offset of ``data[0]``).
    """
    timescale, refs, _first = parse_sidx_layout(data, file, base_offset)
    return timescale, refs


def parse_sidx_layout(data: bytes, file: str, base_offset: int = 0,
                      file_size: int | None = None) -> tuple[int, list[tuple[int, int]], int]:
    """:func:`parse_sidx` plus the file offset of the first referenced subsegment: the first byte
    after the ``sidx`` box (its anchor point) plus the box's ``first_offset``. The subsegments follow
    back to back (``referenced_size`` each); with ``file_size`` they must end inside the file."""
    pos = 0
    seen: list[str] = []
    while True:
        if pos + 8 > len(data):
            found = ("only boxes " + ", ".join(seen)) if seen else "no box"
            raise InputError(file, f"byte {base_offset}", "a sidx box in the index range", found)
        size, typ = struct.unpack_from(">I4s", data, pos)
        seen.append(typ.decode("latin-1"))
        hdr = 8
        if size == 1:
            if pos + 16 > len(data):
                raise InputError(file, f"byte {base_offset + pos}", "a 64-bit box size", "truncated data")
            size = struct.unpack_from(">Q", data, pos + 8)[0]
            hdr = 16
        elif size == 0:
            size = len(data) - pos
        if size < hdr:
            raise InputError(file, f"byte {base_offset + pos}", "an ISO BMFF box size >= 8", str(size))
        if typ == b"sidx":
            break
        pos += size
    box = data[pos:pos + size]
    if len(box) < size:
        raise InputError(file, f"byte {base_offset + pos}", f"a complete sidx box of {size} bytes "
                         "(indexRange must cover it)", f"{len(box)} bytes")
    off = hdr
    try:
        version = struct.unpack_from(">B", box, off)[0]
        if version not in (0, 1):
            raise InputError(file, f"byte {base_offset + pos + off}", "sidx version 0 or 1", str(version))
        off += 4
        _ref_id, timescale = struct.unpack_from(">II", box, off)
        off += 8
        if version == 0:
            _ept, first_offset = struct.unpack_from(">II", box, off)
            off += 8
        else:
            _ept, first_offset = struct.unpack_from(">QQ", box, off)
            off += 16
        _reserved, count = struct.unpack_from(">HH", box, off)
        off += 4
        refs = []
        for k in range(count):
            a, dur, _sap = struct.unpack_from(">III", box, off)
            if a >> 31:
                raise InputError(file, f"byte {base_offset + pos + off}", "media references (reference_type 0)",
                                 f"a hierarchical sidx reference (#{k})")
            refs.append((a & 0x7FFFFFFF, dur))
            off += 12
    except struct.error:
        raise InputError(file, f"byte {base_offset + pos}", "a well-formed sidx box", "truncated fields") from None
    if timescale == 0:
        raise InputError(file, f"byte {base_offset + pos}", "sidx timescale > 0", "0")
    if not refs:
        raise InputError(file, f"byte {base_offset + pos}", "at least one sidx reference", "0")
    first = base_offset + pos + size + first_offset
    if file_size is not None:
        end = first + sum(s for s, _ in refs)
        if end > file_size:
            raise InputError(file, f"byte {base_offset + pos}", f"sidx references inside the file ({file_size} bytes)",
                             f"{len(refs)} subsegments from byte {first} to byte {end - 1}")
    return timescale, refs, first


# --------------------------------------------------------------------------------------- helpers
def _inherited(levels: list[_Node], tag: str) -> tuple[_Node | None, dict]:
    """The innermost ``tag`` element among levels (outer -> inner) and the merged attributes."""
    found = None
    attrs: dict = {}
    for lv in levels:
        el = lv.find(tag) if lv is not None else None
        if el is not None:
            attrs.update(el.attrib)
            found = el
    return found, attrs


def _base_url(levels: list[_Node]) -> str | None:
    url = None
    for lv in levels:
        b = lv.find("BaseURL") if lv is not None else None
        if b is not None and b.text.strip():
            url = b.text.strip()
    return url


def _local_file(media_dir: str, url: str) -> str:
    u = urlparse(url)
    rel = unquote(u.path)
    if u.scheme:
        rel = rel.lstrip("/")
        cand = os.path.join(media_dir, rel)
        return cand if os.path.exists(cand) else os.path.join(media_dir, os.path.basename(rel))
    return os.path.join(media_dir, rel)


_TEMPLATE_RE = re.compile(r"\$(RepresentationID|Number|Bandwidth|Time|)(%0([0-9]+)d)?\$")


def _check_template(path, node, template: str) -> None:
    """The ``$...%0<width>d$`` widths of a ``@media`` template are at most MAX_TEMPLATE_WIDTH."""
    for m in _TEMPLATE_RE.finditer(template):
        w = m.group(3)
        if w is not None and (len(w.lstrip("0")) > 3 or int(w) > MAX_TEMPLATE_WIDTH):
            raise _err(path, node, "media", f"a format width of at most {MAX_TEMPLATE_WIDTH} in $<name>%0<width>d$",
                       _show(m.group(0)))


def _expand(template: str, rep_id: str, bandwidth: int, number: int, time: int | None) -> str:
    def sub(m):
        ident, fmt = m.group(1), m.group(2)
        if ident == "":
            return "$"
        val = {"RepresentationID": rep_id, "Number": number, "Bandwidth": bandwidth, "Time": time}[ident]
        if fmt and ident != "RepresentationID":
            return ("%" + fmt[1:]) % val
        return str(val)
    return _TEMPLATE_RE.sub(sub, template)


def _to_ns(path, node, attr, units: int, ts: int) -> int:
    """A segment duration of ``units`` at timescale ``ts`` -> ns, at least 1 ns and at most an hour."""
    ns = round(units * NS_PER_S / ts)
    if not 0 < ns <= MAX_SEGMENT_NS:
        raise _err(path, node, attr, f"a segment duration of 1 ns to 1 h (at timescale {ts} per second)", str(units))
    return ns


def _timeline(path, tl: _Node, ts: int) -> list[tuple[int, int]]:
    """SegmentTimeline -> [(start, duration)] in timescale units (time order, no overlaps)."""
    out = []
    t = 0
    for s in tl.find_all("S"):
        if "t" in s.attrib:
            st = _int_attr(path, s, "t")
            if out and st < t:
                raise _err(path, s, "t", f"a start >= {t} (the end of the previous S: segments in time order, "
                           "not overlapping)", str(st))
            t = st
        d = _int_attr(path, s, "d", minimum=1)
        _to_ns(path, s, "d", d, ts)
        r = 0
        if "r" in s.attrib:
            rv = s.attrib["r"].strip()
            if not re.fullmatch(r"[0-9]+", rv):
                raise _err(path, s, "r", "a repeat count >= 0 (negative r is not supported)", _show(rv))
            r = int_input(rv, path, _where(s, "r"), f"at most {MAX_SEGMENTS:,} segments in the timeline")
        if len(out) + r + 1 > MAX_SEGMENTS:
            raise _err(path, s, "r", f"at most {MAX_SEGMENTS:,} segments in the timeline", _show(s.attrib["r"]))
        for _ in range(r + 1):
            out.append((t, d))
            t += d
    if not out:
        raise _err(path, tl, None, "at least one S element", "none")
    return out


def _durations_to_nominal(durs_ns: list[int]) -> tuple[int, int | None]:
    """Explicit per-segment durations -> (nominal, last or None): nominal = most common duration of
    all but the last segment (the first one on ties)."""
    if len(durs_ns) == 1:
        return durs_ns[0], None
    body = durs_ns[:-1]
    counts = Counter(body)
    best = max(counts.values())
    nominal = next(d for d in body if counts[d] == best)
    last = durs_ns[-1]
    return nominal, (None if last == nominal else last)


def _parse_list(text, node, attr, path, pattern, conv):
    items = [x.strip() for x in text.split(",") if x.strip()]
    out = []
    for x in items:
        m = re.fullmatch(pattern, x)
        if not m:
            raise _err(path, node, attr, f"a comma list of {pattern.replace(chr(92), '')}", _show(x))
        try:
            out.append(conv(m))
        except ValueError:  # more digits than Python converts
            raise _err(path, node, attr, f"a comma list of {pattern.replace(chr(92), '')} (numbers of at most "
                       "4300 digits)", _show(x)) from None
    return out


VOXEL_ATTRS = ("reliable", "unreliable", "reliableSize", "ssims")


def _voxel_segment_extra(path, su: _Node, media: tuple | None = None) -> dict | None:
    """A SegmentURL's VOXEL attributes (Listing 6.1), checked against its ``mediaRange`` (inclusive)
    when given: the ranges tile it, ``reliableSize`` is the reliable ranges' bytes, the ``ssims``
    triples are monotone and their byte counts are prefixes of the unreliable ranges. Errors name
    the file, line and element."""
    from qoelab.video.model import voxel_segment_problem
    a = su.attrib
    if not any(k in a for k in VOXEL_ATTRS):
        return None
    ext: dict = {}
    rng = r"([0-9]+)-([0-9]+)"
    if "reliable" in a:
        ext["reliable"] = _parse_list(a["reliable"], su, "reliable", path, rng, lambda m: [int(m[1]), int(m[2])])
    if "unreliable" in a:
        ext["unreliable"] = _parse_list(a["unreliable"], su, "unreliable", path, rng,
                                        lambda m: [int(m[1]), int(m[2])])
    if "reliableSize" in a:
        ext["reliableSize"] = _int_attr(path, su, "reliableSize")
    if "ssims" in a:
        ext["ssims"] = _parse_list(a["ssims"], su, "ssims", path, r"([0-9]*\.?[0-9]+):([0-9]+):([0-9]+)",
                                   lambda m: [float(m[1]), int(m[2]), int(m[3])])
    if media is not None:
        missing = [k for k in VOXEL_ATTRS if k not in a]
        if missing:
            raise _err(path, su, missing[0], "all of reliable, unreliable, reliableSize and ssims (VOXEL)", "nothing")
        for k in ("reliable", "unreliable"):
            for x, y in ext[k]:
                if y < x:
                    raise _err(path, su, k, "byte ranges first-last with first <= last", f"{x}-{y}")
        bad = voxel_segment_problem({k: ext[k] for k in ("reliable", "unreliable", "ssims")}, media[0], media[1])
        if bad:
            raise _err(path, su, bad[0], bad[1], bad[2])
        rel = sum(y - x + 1 for x, y in ext["reliable"])
        if ext["reliableSize"] != rel:
            raise _err(path, su, "reliableSize", f"{rel} (the bytes of the reliable ranges)", str(ext["reliableSize"]))
    return ext


# ------------------------------------------------------------------------------------------ main
def load_mpd(path: str, *, media_dir: str | None = None, sizes=None, adaptation_set: int | None = None,
             name: str | None = None, with_extra: bool = False):
    """Load a DASH MPD (single Period, one video AdaptationSet) as a Video dict.

    ``media_dir``: folder for local media files (default: the MPD's folder). ``sizes``: sizes table
    for SegmentTemplate (path or dict; see module doc). ``adaptation_set``: 0-based index among the
    Period's AdaptationSets (default: the first video one). ``with_extra=True`` returns
    ``(video, extra)`` where ``extra`` keeps what the Video model has no place for: per
    Representation ``id``, ``bandwidth``, ``init_range``, VOXEL's ``avgSSIM`` and per-segment
    ``reliable``/``unreliable`` byte ranges, ``reliableSize`` and ``ssims`` ([ssim, frames, bytes]).
    """
    path = str(path)
    media_dir = media_dir if media_dir is not None else os.path.dirname(os.path.abspath(path))
    mpd = _parse_xml(path)
    if mpd.tag != "MPD":
        raise InputError(path, f"{mpd.line}:{_clip(mpd.xpath, 40)}", "root element MPD", _clip(mpd.tag, 40))
    periods = mpd.find_all("Period")
    if len(periods) != 1:
        raise _err(path, mpd, None, "exactly one Period", f"{len(periods)} Period elements")
    period = periods[0]
    sets = period.find_all("AdaptationSet")
    if not sets:
        raise _err(path, period, None, "an AdaptationSet", "none")

    def kind(aset):
        ct = aset.attrib.get("contentType", "")
        mt = aset.attrib.get("mimeType", "")
        reps = aset.find_all("Representation")
        if ct:
            return ct
        if mt:
            return mt.split("/")[0]
        rmt = {r.attrib.get("mimeType", "").split("/")[0] for r in reps} - {""}
        return rmt.pop() if len(rmt) == 1 else "video"

    if adaptation_set is not None:
        if not 0 <= adaptation_set < len(sets):
            raise _err(path, period, None, f"AdaptationSet index in [0, {len(sets) - 1}]", str(adaptation_set))
        aset = sets[adaptation_set]
    else:
        vids = [s for s in sets if kind(s) == "video"]
        if not vids:
            raise _err(path, period, None, "a video AdaptationSet", "only " + ", ".join(kind(s) for s in sets))
        aset = vids[0]
    reps = aset.find_all("Representation")
    if not reps:
        raise _err(path, aset, None, "a Representation", "none")

    total_ns = _presentation_ns(path, mpd, period)
    table, table_path = _sizes_table(path, sizes)

    rows = []  # (bandwidth, rep node, sizes list, durations info, extra)
    ids: dict = {}  # Representation@id -> the Representation (ids are unique in a Period)
    for rep in reps:
        bw = _int_attr(path, rep, "bandwidth", minimum=1, maximum=MAX_BITRATE_BPS)
        levels = [mpd, period, aset, rep]
        rep_id = rep.attrib.get("id", "")
        if "id" in rep.attrib:
            if rep_id in ids:
                raise _err(path, rep, "id", f"distinct Representation@id values ({ids[rep_id].xpath} has it too)",
                           _show(rep_id))
            ids[rep_id] = rep
        extra = {"id": rep_id, "bandwidth": bw}
        if "avgSSIM" in rep.attrib:
            try:
                extra["avgSSIM"] = float(rep.attrib["avgSSIM"])
                if not math.isfinite(extra["avgSSIM"]):
                    raise ValueError
            except ValueError:
                raise _err(path, rep, "avgSSIM", "a number", _show(rep.attrib["avgSSIM"])) from None
        # the innermost level that has any addressing element decides the kind; its attributes
        # are inherited from the same kind at outer levels
        kind_tag = None
        for lv in reversed(levels[1:]):
            for tag in ("SegmentList", "SegmentTemplate", "SegmentBase"):
                if lv.find(tag) is not None:
                    kind_tag = tag
                    break
            if kind_tag:
                break
        if kind_tag is None:
            raise _err(path, rep, None, "SegmentList, SegmentTemplate or SegmentBase", "none")
        el, el_attr = _inherited(levels[1:], kind_tag)
        offsets = None  # first byte of each segment in the Representation's one file, if known
        if kind_tag == "SegmentList":
            seg_sizes, durs, fixed, offsets = _from_list(path, rep, el, el_attr, levels, media_dir, extra)
        elif kind_tag == "SegmentTemplate":
            seg_sizes, durs, fixed = _from_template(path, rep, el, el_attr, media_dir, table, table_path,
                                                    total_ns, rep_id, bw)
        else:
            seg_sizes, durs, fixed, offsets = _from_base(path, rep, el, el_attr, levels, media_dir, extra)
        rows.append((bw, rep, seg_sizes, durs, fixed, extra, offsets))

    rows.sort(key=lambda r: r[0])
    for a, b in zip(rows, rows[1:]):
        if b[0] == a[0]:
            raise _err(path, b[1], "bandwidth", f"distinct bandwidths (strictly ascending; {a[1].xpath} has it too)",
                       str(b[0]))
    n = len(rows[0][2])
    for r in rows[1:]:
        if len(r[2]) != n:
            raise _err(path, r[1], None, f"{n} segments like {rows[0][1].xpath}", f"{len(r[2])} segments")

    # durations: from the lowest Representation
    _, _, _, durs, fixed, _, _ = rows[0]
    if fixed is not None:
        nominal, last = fixed, None
        if total_ns is not None:
            rest = total_ns - (n - 1) * fixed
            if 0 < rest < fixed:
                last = rest
    else:
        nominal, last = _durations_to_nominal(durs)
    sizes_t = [[r[2][s] for r in rows] for s in range(n)]
    res = None
    if all("width" in r[1].attrib and "height" in r[1].attrib for r in rows):
        res = [(_int_attr(path, r[1], "width", minimum=1, maximum=MAX_U32),
                _int_attr(path, r[1], "height", minimum=1, maximum=MAX_U32)) for r in rows]
    layout = None
    if all(r[6] is not None for r in rows):
        layout = [[r[6][s] for r in rows] for s in range(n)]
    video = make_video(name or os.path.basename(path).rsplit(".", 1)[0], nominal, [r[0] for r in rows], sizes_t,
                       last_segment_duration=last, resolutions=res, byte_offsets=layout)
    vox = _voxel_table(path, rows, layout)
    if vox is not None:
        video["voxel"] = vox
    validate_video(video, path)
    if with_extra:
        return video, {"representations": [r[5] for r in rows]}
    return video


def _voxel_table(path, rows, layout) -> dict | None:
    """The Video's ``voxel`` table from the Representations' VOXEL attributes (rows sorted by
    bandwidth), or None if no SegmentURL has them. The ranges need one byte-ranged file per
    Representation; a SegmentURL without the attributes is one reliable range at SSIM 1.0 (the
    rung's own quality)."""
    per = [r[5].get("segments") for r in rows]
    if all(p is None for p in per):
        return None
    if layout is None:
        raise _err(path, rows[0][1], None, "VOXEL ranges in one byte-ranged file per Representation (mediaRange on "
                   "every SegmentURL)", "another addressing")
    n = len(layout)
    sizes = [r[2] for r in rows]

    def entry(j, s):
        x = per[j][s] if per[j] is not None else None
        if x is None:   # no VOXEL attributes: fetched reliably in full, at the rung's own quality
            a = layout[s][j]
            return {"reliable": [[a, a + sizes[j][s] - 1]], "unreliable": [], "ssims": [[1.0, 0, 0]]}
        return {"reliable": x["reliable"], "unreliable": x["unreliable"], "ssims": x["ssims"]}
    avg = [r[5].get("avgSSIM") for r in rows]
    return {"avg_ssim": avg if all(a is not None for a in avg) else None,
            "segments": [[entry(j, s) for j in range(len(rows))] for s in range(n)]}


def _timescale(path, node, attrs):
    return _int_value(path, node, "timescale", attrs.get("timescale", "1"), minimum=1, maximum=MAX_U32)


def _fixed_duration(path, node, attrs, ts):
    v = attrs.get("duration")
    if v is None:
        return None
    return _to_ns(path, node, "duration", _int_value(path, node, "duration", v, minimum=1), ts)


def _from_list(path, rep, sl, attrs, levels, media_dir, extra):
    ts = _timescale(path, sl, attrs)
    fixed = _fixed_duration(path, sl, attrs, ts)
    tl = sl.find("SegmentTimeline")
    durs = None
    if tl is not None:
        durs = [round(d * NS_PER_S / ts) for _, d in _timeline(path, tl, ts)]
        fixed = None
    elif fixed is None:
        raise _err(path, sl, "duration", "attribute duration (or a SegmentTimeline)", "nothing")
    init = sl.find("Initialization")
    init_end = None  # last byte of the init segment when it is in the media file
    if init is not None and "range" in init.attrib:
        a, b = _range(path, init, "range")
        extra["init_range"] = [a, b]
        if "sourceURL" not in init.attrib:
            init_end = b
    urls = sl.find_all("SegmentURL")
    if not urls:
        raise _err(path, sl, None, "SegmentURL elements", "none")
    # a layout needs every segment as a range of the same file (no @media, or the same on all)
    one_file = all("mediaRange" in su.attrib for su in urls) and len({su.attrib.get("media") for su in urls}) == 1
    out = []
    offsets = []
    segx = []
    prev = None  # (last byte, what ends there) of the previous range in the file
    if one_file and init_end is not None and "media" not in urls[0].attrib:
        prev = (init_end, "the Initialization range")
    for su in urls:
        if "mediaRange" in su.attrib:
            a, b = _range(path, su, "mediaRange")
            if one_file and prev is not None and a <= prev[0]:
                raise _err(path, su, "mediaRange", f"a byte range after {prev[1]} (first > {prev[0]}: segments "
                           "in file order, not overlapping)", repr(su.attrib["mediaRange"]))
            if b - a + 1 > MAX_SEGMENT_BYTES:   # (named here, not as the Video's sizes[i][r] later)
                raise _err(path, su, "mediaRange", f"a segment of at most {MAX_SEGMENT_BYTES:,} bytes",
                           f"{b - a + 1:,} bytes")
            prev = (b, "the previous SegmentURL's range")
            out.append(b - a + 1)
            offsets.append(a)
        elif "media" in su.attrib:
            f = _local_file(media_dir, su.attrib["media"])
            if not os.path.isfile(f):
                raise _err(path, su, "media", f"mediaRange or the local media file {_clip(f)}", not_a_file(f))
            out.append(os.path.getsize(f))
        else:
            raise _err(path, su, "mediaRange", "attribute mediaRange ('first-last') or media", "nothing")
        segx.append(_voxel_segment_extra(path, su, (a, b) if "mediaRange" in su.attrib else None))
    if any(x is not None for x in segx):
        extra["segments"] = segx
    if durs is not None and len(durs) != len(out):
        raise _err(path, sl, None, f"as many SegmentTimeline entries as SegmentURLs ({len(out)})", str(len(durs)))
    return out, durs, fixed, (offsets if one_file else None)


def _from_base(path, rep, sb, attrs, levels, media_dir, extra):
    if "indexRange" not in attrs:
        raise _err(path, sb, "indexRange", "attribute indexRange ('first-last', where the sidx box is)", "nothing")
    a, b = _range(path, sb, "indexRange", attrs["indexRange"])
    init = sb.find("Initialization")
    init_range = None  # the init segment's bytes when they are in the media file
    if init is not None and "range" in init.attrib and "sourceURL" not in init.attrib:
        init_range = _range(path, init, "range")
        if init_range[0] <= b and a <= init_range[1]:
            raise _err(path, init, "range", f"a byte range not overlapping the indexRange {a}-{b}",
                       _show(init.attrib["range"]))
    url = _base_url(levels)
    if url is None:
        raise _err(path, rep, None, "a BaseURL naming the media file (SegmentBase)", "none")
    f = _local_file(media_dir, url)
    if not os.path.isfile(f):
        raise _err(path, sb, "indexRange", f"the local media file {_clip(f)} to read its sidx box", not_a_file(f))
    fsize = os.path.getsize(f)
    if b >= fsize:  # before reading: the read would allocate the range's size
        raise InputError(f, f"byte {fsize}", f"indexRange {a}-{b} inside the file ({fsize} bytes)", "end of file")
    if b - a + 1 > MAX_INDEX_RANGE:   # a sidx box of 100,000 references is 1.2 MB; reading 6 GB ran out of memory
        raise _err(path, sb, "indexRange", f"a range of at most {MAX_INDEX_RANGE // 2**20} MiB (the sidx box)",
                   f"{b - a + 1:,} bytes")
    with open(f, "rb") as fh:
        fh.seek(a)
        data = fh.read(b - a + 1)
    if len(data) < b - a + 1:
        raise InputError(f, f"byte {a + len(data)}", f"indexRange {a}-{b} inside the file", "end of file")
    timescale, refs, first = parse_sidx_layout(data, f, a, fsize)
    if init_range is not None and init_range[0] < first + sum(s for s, _ in refs) and first <= init_range[1]:
        raise _err(path, init, "range", f"a byte range not overlapping the subsegments (bytes {first}-"
                   f"{first + sum(s for s, _ in refs) - 1} of {_clip(f)}, by its sidx)", _show(init.attrib["range"]))
    extra["sidx_timescale"] = timescale
    durs = [round(d * NS_PER_S / timescale) for _, d in refs]
    for k, d in enumerate(durs):
        if not 0 < d <= MAX_SEGMENT_NS:   # (named here, not as the Video's segment_duration later)
            raise InputError(f, f"byte {a}", f"sidx subsegment durations > 0 and at most {MAX_SEGMENT_NS / NS_PER_S:g} s",
                             f"{refs[k][1]}/{timescale} s (subsegment #{k})")
    sizes = [s for s, _ in refs]
    offsets = []
    for sz in sizes:
        offsets.append(first)
        first += sz
    return sizes, durs, None, offsets


def _sizes_table(path, sizes):
    if sizes is None:
        cand = (path[:-4] if path.lower().endswith(".mpd") else path) + ".sizes.json"
        if not os.path.isfile(cand):
            return None, None
        sizes = cand
    if isinstance(sizes, dict):
        return sizes, "sizes"
    sp = str(sizes)
    if not os.path.exists(sp):
        raise InputError(sp, None, "a sizes table file", "no such file")
    try:
        text = read_input(sp, "a sizes table").decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(sp, None, "a readable UTF-8 sizes table", str(e)) from None
    doc = json_input(text, sp)
    if not isinstance(doc, dict):
        raise InputError(sp, "1", 'an object {"<Representation@id>": [bytes, ...]}', type(doc).__name__)
    return doc, sp


def _from_template(path, rep, st, attrs, media_dir, table, table_path, total_ns, rep_id, bw):
    ts = _timescale(path, st, attrs)
    fixed = _fixed_duration(path, st, attrs, ts)
    tl = st.find("SegmentTimeline")
    timeline = _timeline(path, tl, ts) if tl is not None else None
    if timeline is not None:
        fixed = None
    elif fixed is None:
        raise _err(path, st, "duration", "attribute duration (or a SegmentTimeline)", "nothing")
    start = 1
    if "startNumber" in attrs:
        start = _int_value(path, st, "startNumber", attrs["startNumber"], maximum=MAX_U32)
    if table is not None:
        if rep_id not in table:
            raise InputError(table_path, _clip(rep_id, 40) or "?",
                             f"sizes for Representation@id {_show(rep_id)} ({rep.xpath})", "nothing")
        col = table[rep_id]
        if not isinstance(col, list) or not col or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_SEGMENT_BYTES for x in col):
            raise InputError(table_path, _clip(rep_id, 40),
                             f"a non-empty list of byte counts (integers 0 .. {MAX_SEGMENT_BYTES:,})",
                             _clip(repr(col), 40))
        n = len(col)
        sizes = list(col)
    else:
        if "media" not in attrs:
            raise _err(path, st, "media", "attribute media (a template) or a sizes table", "nothing")
        if "$Time" in attrs["media"] and timeline is None:
            raise _err(path, st, "media", "a SegmentTimeline when the template uses $Time$", "none")
        _check_template(path, st, attrs["media"])
        if timeline is not None:
            n = len(timeline)
        elif total_ns is not None:
            n = math.ceil(total_ns / fixed - 1e-9)
            if n > MAX_SEGMENTS:
                raise _err(path, st, "duration", f"at most {MAX_SEGMENTS:,} segments in the presentation", str(n))
        else:
            raise _err(path, st, None, "a SegmentTimeline, Period@duration or MPD@mediaPresentationDuration "
                       "to count segments", "none")
        sizes = []
        for k in range(n):
            t = timeline[k][0] if timeline is not None else None
            f = _local_file(media_dir, _expand(attrs["media"], rep_id, bw, start + k, t))
            if not os.path.isfile(f):
                raise _err(path, st, "media", f"the local segment file {_clip(f)} (or a sizes table "
                           f"{os.path.basename(path).rsplit('.', 1)[0]}.sizes.json)", "no such file")
            sizes.append(os.path.getsize(f))
    durs = None
    if timeline is not None:
        if len(timeline) != n:
            raise _err(path, tl, None, f"{n} segments (as in the sizes table)", f"{len(timeline)}")
        durs = [round(d * NS_PER_S / ts) for _, d in timeline]
    return sizes, durs, fixed
