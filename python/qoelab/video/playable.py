"""A synthetic video's bytes as playable fragmented MP4, with exactly the synthetic byte layout.

``qoelab serve`` serves a synthetic video (``/synthetic/<ladder>/s<seed>-n<n>/``) as one file per
rung whose bytes follow a counting pattern: right for qoelab's own player, which only counts bytes,
but not media a browser can decode. Under ``.../media/`` it serves the same video as real fMP4
(ISO BMFF, H.264) with the *same* sizes: byte ``[0, INIT_BYTES)`` of every rung file is an init
segment (``ftyp`` + ``moov``, padded with a ``free`` box), and segment ``t`` of rung ``r`` occupies
exactly ``sizes[t][r]`` bytes at ``byte_offsets[t][r]``: a ``moof`` and an ``mdat`` holding a few
tiny H.264 IDR frames (64x64, one colour, encoded once with x264 and embedded below), the last one
followed by a filler-data NAL unit (type 12, which decoders discard) that brings the segment to its
size. So dash.js in Chromium plays the video the simulator plays (same MPD, same segment sizes, the
same ABR inputs), only with a picture that does not change.

The frames: ``ffmpeg -f lavfi -i color=c=0x204060:s=64x64:r=2 -frames:v 2 -c:v libx264 -profile:v
high -level 3.1 -x264-params keyint=1:scenecut=0:bframes=0``, SEI removed, the SPS's constraint
byte set to 0 so that it matches the MPD's ``codecs="avc1.64001f"``. Two IDR pictures with
different ``idr_pic_id`` alternate, as consecutive IDR pictures must differ in it.
"""

from __future__ import annotations

import bisect
import functools
import struct

from qoelab.video.synthetic import INIT_BYTES

__all__ = ["init_segment", "media_segment", "rung_bytes", "MIN_SEGMENT_BYTES", "FRAMES_PER_S"]

SPS = bytes.fromhex("6764001facb884d8088000000300800000030202")
PPS = bytes.fromhex("68ee0f2c8b")
IDR = (bytes.fromhex("65888404bffee8c9fccb2c5b27d3e9c39650af69c7308f4748ffae41d992f208705641e2e271"),
       bytes.fromhex("658882017ffeee82be05370bb03efd1b1abf385cf8ea82f4d0be9d0eea5442b62805bd53aa8660"))
WIDTH = HEIGHT = 64
TIMESCALE = 1000
#: Pictures per second of media time (each an IDR frame).
FRAMES_PER_S = 2
_MATRIX = struct.pack(">9I", 0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)


def _box(kind: bytes, *payload: bytes) -> bytes:
    body = b"".join(payload)
    return struct.pack(">I", 8 + len(body)) + kind + body


def _full(kind: bytes, version: int, flags: int, *payload: bytes) -> bytes:
    return _box(kind, struct.pack(">I", (version << 24) | flags), *payload)


@functools.lru_cache(maxsize=1)
def init_segment() -> bytes:
    """ftyp + moov (one H.264 video track, fragmented), padded with a free box to INIT_BYTES."""
    ftyp = _box(b"ftyp", b"isom", struct.pack(">I", 0x200), b"isomiso5iso6avc1mp41")
    mvhd = _full(b"mvhd", 0, 0, struct.pack(">IIII", 0, 0, TIMESCALE, 0), struct.pack(">IH", 0x10000, 0x100),
                 bytes(10), _MATRIX, bytes(24), struct.pack(">I", 2))
    tkhd = _full(b"tkhd", 0, 3, struct.pack(">IIII", 0, 0, 1, 0), struct.pack(">I", 0), bytes(8),
                 struct.pack(">hhhH", 0, 0, 0, 0), _MATRIX, struct.pack(">II", WIDTH << 16, HEIGHT << 16))
    mdhd = _full(b"mdhd", 0, 0, struct.pack(">IIII", 0, 0, TIMESCALE, 0), struct.pack(">HH", 0x55C4, 0))
    hdlr = _full(b"hdlr", 0, 0, struct.pack(">I", 0), b"vide", bytes(12), b"VideoHandler\0")
    avcc = _box(b"avcC", bytes([1, SPS[1], SPS[2], SPS[3], 0xFF, 0xE1]), struct.pack(">H", len(SPS)), SPS,
                bytes([1]), struct.pack(">H", len(PPS)), PPS, bytes([0xFD, 0xF8, 0xF8, 0]))
    avc1 = _box(b"avc1", bytes(6), struct.pack(">H", 1), bytes(16), struct.pack(">HH", WIDTH, HEIGHT),
                struct.pack(">II", 0x480000, 0x480000), bytes(4), struct.pack(">H", 1), bytes(32),
                struct.pack(">Hh", 0x18, -1), avcc)
    stbl = _box(b"stbl", _full(b"stsd", 0, 0, struct.pack(">I", 1), avc1), _full(b"stts", 0, 0, bytes(4)),
                _full(b"stsc", 0, 0, bytes(4)), _full(b"stsz", 0, 0, bytes(8)), _full(b"stco", 0, 0, bytes(4)))
    minf = _box(b"minf", _full(b"vmhd", 0, 1, bytes(8)),
                _box(b"dinf", _full(b"dref", 0, 0, struct.pack(">I", 1), _full(b"url ", 0, 1))), stbl)
    trak = _box(b"trak", tkhd, _box(b"mdia", mdhd, hdlr, minf))
    mvex = _box(b"mvex", _full(b"trex", 0, 0, struct.pack(">IIIII", 1, 1, 0, 0, 0)))
    head = ftyp + _box(b"moov", mvhd, trak, mvex)
    pad = INIT_BYTES - len(head)
    assert pad >= 8, "the init segment does not fit in INIT_BYTES"
    return head + struct.pack(">I", pad) + b"free" + bytes(pad - 8)


def _moof_size(k: int) -> int:
    # moof(8) + mfhd(16) + traf(8) + tfhd(16) + tfdt(20) + trun(20 + 12 k)
    return 8 + 16 + 8 + 16 + 20 + 20 + 12 * k


#: The smallest segment that can be made playable (one frame, an empty filler NAL).
MIN_SEGMENT_BYTES = _moof_size(1) + 8 + 4 + max(len(f) for f in IDR) + 6


def media_segment(t: int, size: int, duration_ms: int) -> bytes:
    """Segment ``t`` (decode time ``t * duration_ms``) as moof + mdat of exactly ``size`` bytes."""
    k = max(1, round(duration_ms * FRAMES_PER_S / 1000))
    while k > 1 and _moof_size(k) + 8 + sum(4 + len(IDR[(t * k + i) % 2]) for i in range(k)) + 6 > size:
        k -= 1
    frames = [IDR[(t * k + i) % 2] for i in range(k)]
    head = _moof_size(k) + 8
    fill = size - head - sum(4 + len(f) for f in frames) - 6
    if fill < 0:
        raise ValueError(f"segment {t} has {size} bytes; a playable one needs at least {MIN_SEGMENT_BYTES}")
    durs = [duration_ms // k] * k
    durs[-1] += duration_ms - sum(durs)
    samples = [struct.pack(">I", len(f)) + f for f in frames]
    samples[-1] += struct.pack(">I", fill + 2) + b"\x0c" + b"\xff" * fill + b"\x80"
    trun = _full(b"trun", 0, 0x000701, struct.pack(">Ii", k, head),
                 b"".join(struct.pack(">III", d, len(s), 0x02000000) for d, s in zip(durs, samples)))
    traf = _box(b"traf", _full(b"tfhd", 0, 0x020000, struct.pack(">I", 1)),
                _full(b"tfdt", 1, 0, struct.pack(">Q", t * duration_ms)), trun)
    moof = _box(b"moof", _full(b"mfhd", 0, 0, struct.pack(">I", t + 1)), traf)
    mdat = b"".join(samples)
    out = moof + struct.pack(">I", 8 + len(mdat)) + b"mdat" + mdat
    assert len(out) == size and len(moof) + 8 == head
    return out


def rung_bytes(video: dict, r: int, offset: int, n: int, segment=None) -> bytes:
    """Bytes ``[offset, offset + n)`` of rung ``r``'s playable file. ``segment(t)``: the bytes of
    segment ``t`` (default: built here; the server passes a cached builder)."""
    dur_ms = video["segment_duration"] // 1_000_000
    starts = [row[r] for row in video["byte_offsets"]]
    seg = segment or (lambda t: media_segment(t, video["sizes"][t][r], dur_ms))
    out = bytearray()
    end = offset + n
    if offset < INIT_BYTES:
        out += init_segment()[offset:min(end, INIT_BYTES)]
    t = max(0, bisect.bisect_right(starts, offset) - 1)
    while t < len(starts) and starts[t] < end:
        a = starts[t]
        b = a + video["sizes"][t][r]
        if b > offset:
            data = seg(t)
            out += data[max(offset, a) - a:min(end, b) - a]
        t += 1
    return bytes(out)
