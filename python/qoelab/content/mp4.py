"""Minimal ISO-BMFF reader for the fragmented MP4 files the pipeline writes.

It finds the init segment (``ftyp``+``moov``), every fragment (``moof``+``mdat``; one per DASH segment,
since every segment starts with an IDR frame and ffmpeg's ``frag_keyframe`` cuts there), the sample sizes of
each fragment (``trun``), and the codec string from ``avcC``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from qoelab.errors import InputError


@dataclass
class Fragment:
    start: int  # absolute offset of moof
    end: int  # absolute offset one past the end of mdat
    moof_size: int
    mdat_header: int  # 8 or 16
    data_offset: int  # absolute offset of the first sample byte
    sample_sizes: list[int] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def overhead(self) -> int:
        """Container bytes of the segment that are not frame data (moof box + mdat header)."""
        return self.size - sum(self.sample_sizes)


@dataclass
class Mp4Index:
    init_end: int  # init segment = bytes [0, init_end)
    fragments: list[Fragment]
    codec: str
    timescale: int
    file_size: int


def _boxes(buf: bytes, start: int, end: int, path: str):
    pos = start
    while pos < end:
        if pos + 8 > end:
            raise InputError(path, f"byte {pos}", "an ISO-BMFF box header", "truncated data")
        size, typ = struct.unpack(">I4s", buf[pos:pos + 8])
        hdr = 8
        if size == 1:
            size = struct.unpack(">Q", buf[pos + 8:pos + 16])[0]
            hdr = 16
        elif size == 0:
            size = end - pos
        if size < hdr or pos + size > end:
            raise InputError(path, f"byte {pos}", "a box within the file", f"box {typ!r} of size {size}")
        yield typ.decode("latin-1"), pos, hdr, size
        pos += size


def _find(buf, start, end, path, want):
    for typ, pos, hdr, size in _boxes(buf, start, end, path):
        if typ == want:
            return pos, hdr, size
    return None


def _codec_string(buf, moov, path) -> tuple[str, int]:
    # moov/trak/mdia/(mdhd, minf/stbl/stsd/avc1/avcC)
    pos, hdr, size = moov
    trak = _find(buf, pos + hdr, pos + size, path, "trak")
    if not trak:
        raise InputError(path, "moov", "a trak box", "none")
    mdia = _find(buf, trak[0] + trak[1], trak[0] + trak[2], path, "mdia")
    mdhd = _find(buf, mdia[0] + mdia[1], mdia[0] + mdia[2], path, "mdhd")
    ver = buf[mdhd[0] + 8]
    ts_at = mdhd[0] + (28 if ver == 1 else 20)
    timescale = struct.unpack(">I", buf[ts_at:ts_at + 4])[0]
    minf = _find(buf, mdia[0] + mdia[1], mdia[0] + mdia[2], path, "minf")
    stbl = _find(buf, minf[0] + minf[1], minf[0] + minf[2], path, "stbl")
    stsd = _find(buf, stbl[0] + stbl[1], stbl[0] + stbl[2], path, "stsd")
    entry = stsd[0] + stsd[1] + 8
    esize, etype = struct.unpack(">I4s", buf[entry:entry + 8])
    etype = etype.decode("latin-1")
    if etype not in ("avc1", "avc3"):
        return etype, timescale
    avcc = _find(buf, entry + 8 + 78, entry + esize, path, "avcC")
    if not avcc:
        return etype, timescale
    p = avcc[0] + avcc[1]
    return f"{etype}.{buf[p + 1]:02x}{buf[p + 2]:02x}{buf[p + 3]:02x}", timescale


class _FileBuf:
    """The bytes of an open file as far as the box parsing below asks for them (``buf[a:b]``,
    ``buf[i]``, ``len(buf)``), read through a window: the parsing touches box headers, ``moov`` and
    the ``moof`` boxes, never the media data, so a rung of several GB is indexed in a few MB (it was
    read whole)."""

    WINDOW = 1 << 16

    def __init__(self, f):
        self.f = f
        f.seek(0, 2)
        self.size = f.tell()
        self.base, self.data = 0, b""

    def __len__(self) -> int:
        return self.size

    def _get(self, a: int, b: int) -> bytes:
        a, b = max(0, a), min(max(0, b), self.size)
        if a >= b:
            return b""
        if not (self.base <= a and b <= self.base + len(self.data)):
            self.f.seek(a)
            self.data = self.f.read(max(b - a, self.WINDOW))
            self.base = a
        return self.data[a - self.base:b - self.base]

    def __getitem__(self, k):
        if isinstance(k, slice):
            if k.step is not None or k.start is None or k.stop is None:
                raise ValueError("only buf[a:b] slices")
            return self._get(k.start, k.stop)
        got = self._get(k, k + 1)
        if not got:
            raise IndexError(k)
        return got[0]


def index(path: str) -> Mp4Index:
    try:
        with open(path, "rb") as f:
            return _index(_FileBuf(f), path)
    except OSError as e:
        raise InputError(path, None, "a readable MP4 file", e.strerror) from None
    except (struct.error, TypeError, IndexError, ValueError):   # a box cut short, a box the reader needs missing
        raise InputError(path, None, "a fragmented MP4 (ftyp, moov, then moof + mdat per segment)",
                         "a malformed box structure") from None


def _index(buf, path: str) -> Mp4Index:
    moov = None
    frags: list[Fragment] = []
    init_end = None
    pending_moof = None
    trex_size = None
    for typ, pos, hdr, size in _boxes(buf, 0, len(buf), path):
        if typ == "moov":
            moov = (pos, hdr, size)
            init_end = pos + size
            mvex = _find(buf, pos + hdr, pos + size, path, "mvex")
            trex = _find(buf, mvex[0] + mvex[1], mvex[0] + mvex[2], path, "trex") if mvex else None
            if trex:   # version/flags, track_ID, description index, duration, then the default size
                trex_size = struct.unpack(">I", buf[trex[0] + trex[1] + 16:trex[0] + trex[1] + 20])[0]
        elif typ == "moof":
            pending_moof = (pos, hdr, size)
        elif typ == "mdat" and pending_moof is not None:
            mpos, mhdr, msize = pending_moof
            sizes = []
            data_off = pos + hdr
            traf = _find(buf, mpos + mhdr, mpos + msize, path, "traf")
            if traf:
                # a sample's size: the trun's own, else tfhd's default, else trex's (ISO/IEC 14496-12
                # 8.8.7, 8.8.3); ffmpeg writes a fragment of one sample with the tfhd default only
                default_size = trex_size
                for t2, p2, h2, s2 in _boxes(buf, traf[0] + traf[1], traf[0] + traf[2], path):
                    if t2 == "tfhd":
                        tflags = struct.unpack(">I", buf[p2 + 8:p2 + 12])[0] & 0xFFFFFF
                        q = p2 + 16 + (8 if tflags & 0x1 else 0) + (4 if tflags & 0x2 else 0) \
                            + (4 if tflags & 0x8 else 0)
                        if tflags & 0x10:
                            default_size = struct.unpack(">I", buf[q:q + 4])[0]
                    if t2 == "trun":
                        flags = struct.unpack(">I", buf[p2 + 8:p2 + 12])[0] & 0xFFFFFF
                        count = struct.unpack(">I", buf[p2 + 12:p2 + 16])[0]
                        q = p2 + 16
                        if flags & 0x1:
                            data_off = mpos + struct.unpack(">i", buf[q:q + 4])[0]
                            q += 4
                        if flags & 0x4:
                            q += 4
                        per = sum(4 for bit in (0x100, 0x200, 0x400, 0x800) if flags & bit)
                        for _ in range(count):
                            r = q
                            if flags & 0x100:
                                r += 4
                            if flags & 0x200:
                                sizes.append(struct.unpack(">I", buf[r:r + 4])[0])
                            elif default_size is not None:
                                sizes.append(default_size)
                            else:
                                raise InputError(path, f"byte {p2}", "sample sizes (in trun, or a default in tfhd "
                                                 "or trex)", "none")
                            q += per
            frags.append(Fragment(mpos, pos + size, msize, hdr, data_off, sizes))
            pending_moof = None
    if moov is None or init_end is None:
        raise InputError(path, None, "a fragmented MP4 with a moov box", "no moov")
    codec, ts = _codec_string(buf, moov, path)
    return Mp4Index(init_end, frags, codec, ts, len(buf))
