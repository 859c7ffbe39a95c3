"""``qoelab serve``: a small HTTP/1.1 origin server for the real-network runtime (docs/serve.md).

Standard library only. One thread per connection (blocking sockets, ``socket.sendfile`` for files),
the accept loop in the calling thread. Each connection reads requests back to back from one buffer
and answers them one after the other, so pipelined requests are answered strictly in order.

What it serves:

* regular files under DIR (the content pipeline's output: ``manifest.mpd`` and one MP4 per rung),
  after a path check that refuses ``..``, encoded slashes, NUL bytes, empty segments and anything
  whose real path (symlinks resolved) is outside DIR;
* virtual synthetic videos under ``/synthetic/`` (see :func:`_synthetic`): one file per rung with
  the byte layout of :func:`qoelab.video.synthetic.synthetic_video`, and a generated MPD.

Per accepted socket it can set the congestion controller (``TCP_CONGESTION``) and sample
``TCP_INFO`` into a JSONL file (layout in :data:`TCP_INFO_FIELDS`).
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import json
import os
import re
import selectors
import socket
import stat
import struct
import sys
import threading
import time
import zlib
from email.utils import formatdate

__all__ = ["Server", "parse_range", "resolve_path", "split_target", "check_authority", "parse_tcp_info",
           "TCP_INFO_FIELDS", "synthetic_layout", "pattern_bytes"]

MAX_HEAD = 16 * 1024          # request line + header fields, bytes
MAX_HEADERS = 100             # header fields per request
NAME_MAX = 255                # bytes in one file name (Linux); a longer path segment is 404
MAX_RANGES = 64               # more ranges than this: Range is ignored (RFC 9110 14.2 allows it)
MAX_SYNTH_SEGMENTS = 100_000
CHUNK = 256 * 1024
_TCHAR = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ALLOWED = "GET, HEAD, OPTIONS"
KNOWN_METHODS = {"POST", "PUT", "DELETE", "PATCH", "CONNECT", "TRACE"}
TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
REASONS = {200: "OK", 204: "No Content", 206: "Partial Content", 304: "Not Modified", 400: "Bad Request",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           416: "Range Not Satisfiable",
           500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable",
           505: "HTTP Version Not Supported"}
TYPES = {".mpd": "application/dash+xml", ".mp4": "video/mp4", ".m4s": "video/iso.segment", ".m4v": "video/mp4",
         ".m4a": "audio/mp4", ".ts": "video/mp2t", ".m3u8": "application/vnd.apple.mpegurl",
         ".json": "application/json", ".html": "text/html; charset=utf-8", ".js": "text/javascript",
         ".css": "text/css", ".txt": "text/plain; charset=utf-8", ".xml": "application/xml",
         ".parquet": "application/vnd.apache.parquet"}


class HttpError(Exception):
    """A request that gets an error response; ``close``: the connection cannot be reused after it."""

    def __init__(self, status: int, why: str, close: bool = True, headers: list | None = None):
        super().__init__(why)
        self.status, self.why, self.close, self.headers = status, why, close, headers or []


# ----------------------------------------------------------------------------------------------------------
# Range (RFC 9110 14.1.1, 14.2)

_HUGE = 10 ** 19   # greater than any representation length (off_t is below 2**63 < 10**19)


def _digits(s: str) -> int:
    """The value of the ASCII digit string ``s``, or :data:`_HUGE` if it has more than 19 significant digits.

    RFC 9110 14.1.1 puts no bound on the length of a first-pos, last-pos or suffix-length, and int() refuses
    strings of more than 4300 digits (``sys.get_int_max_str_digits``). Any number of 20 or more significant
    digits is larger than every representation, and that is all the range code needs to know about it."""
    s = s.lstrip("0") or "0"
    return int(s) if len(s) <= 19 else _HUGE


def _digits_lt(a: str, b: str) -> bool:
    """``int(a) < int(b)`` for ASCII digit strings of any length, without converting them."""
    a, b = a.lstrip("0") or "0", b.lstrip("0") or "0"
    return (len(a), a) < (len(b), b)


def parse_range(value: str | None, total: int):
    """The ranges a ``Range`` header asks for, against a representation of ``total`` bytes.

    Returns None when the header is absent, not a ``bytes`` range, syntactically invalid, or asks for more
    than :data:`MAX_RANGES` ranges (the caller then ignores it and answers 200, which RFC 9110 14.2 allows);
    ``[]`` when it is valid but no range is satisfiable (416); otherwise a list of ``(first, last)`` inclusive
    byte positions, clamped to the representation, in the order asked for (not coalesced).
    Positions may have any number of digits: one beyond the representation is handled as the number it is
    (a first-pos past the end is unsatisfiable, a last-pos past the end is clamped, a suffix-length past
    the start means the whole representation).
    """
    if value is None:
        return None
    unit, sep, spec = value.partition("=")
    if not sep or unit.strip(" \t").lower() != "bytes":
        return None
    parts = [p.strip(" \t") for p in spec.split(",")]
    parts = [p for p in parts if p]           # RFC 9110 5.6.1: empty list elements are ignored
    if not parts or len(parts) > MAX_RANGES:
        return None
    out = []
    for p in parts:
        m = re.fullmatch(r"([0-9]*)-([0-9]*)", p)
        if not m or (not m.group(1) and not m.group(2)):
            return None
        a, b = m.group(1), m.group(2)
        if a:
            if b and _digits_lt(b, a):
                return None                     # invalid range-spec: the whole header is ignored
            first = _digits(a)
            last = _digits(b) if b else None
            if first >= total:
                continue                         # unsatisfiable
            out.append((first, total - 1 if last is None else min(last, total - 1)))
        else:
            n = _digits(b)
            if n == 0 or total == 0:
                continue
            out.append((max(0, total - n), total - 1))
    if len(out) > 2:
        # RFC 9110 14.2: "SHOULD ignore ... egregious range requests, such as requests for more than two
        # overlapping ranges" (64 x "0-" of a 64 MiB file was a 4 GB response): a byte asked for more
        # than twice, and the representation is served whole instead
        depth = 0
        for _, step in sorted([(a, 1) for a, _ in out] + [(b + 1, -1) for _, b in out]):
            depth += step
            if depth > 2:
                return None
    return out


# ----------------------------------------------------------------------------------------------------------
# Paths

def _decode_target(target: str) -> list[str]:
    """Percent-decode an origin-form path into its segments, refusing everything that could escape."""
    if "\x00" in target or "\\" in target:
        raise HttpError(400, "NUL or backslash in the path")
    if not target.startswith("/"):
        raise HttpError(400, "the request target is not an absolute path")
    raw = target.split("/")[1:]
    segs = []
    for i, r in enumerate(raw):
        low = r.lower()
        if "%2f" in low or "%5c" in low or "%00" in low:
            raise HttpError(400, "encoded slash, backslash or NUL in the path")
        try:
            s = _pct_decode(r)
        except ValueError:
            raise HttpError(400, "bad percent-encoding in the path") from None
        if s in (".", ".."):
            raise HttpError(403, "dot segment in the path")
        if s == "":
            if i == len(raw) - 1:
                raise HttpError(404, "directory")       # "/dir/": no listings
            raise HttpError(400, "empty path segment")
        if "\x00" in s or "/" in s or "\\" in s:
            raise HttpError(400, "forbidden character in the path")
        segs.append(s)
    # no file has a name longer than NAME_MAX bytes: such a path names nothing (checked after the syntax
    # checks above, so a malformed path is 400 whatever its length)
    if any(len(s.encode("utf-8")) > NAME_MAX for s in segs):
        raise HttpError(404, "path segment longer than 255 bytes", close=False)
    return segs


_SCHEME = re.compile(r"(https?)://", re.IGNORECASE)
_REG_NAME = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+")
_ZONE = re.compile(r"(?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})+")


def check_authority(auth: str, what: str = "authority") -> None:
    """Raise HttpError(400) unless ``auth`` is ``host[:port]`` (RFC 3986 3.2, RFC 9110 4.2.1 and 4.2.4):
    host a reg-name, an IPv4 address or a bracketed IPv6 literal (zone ID allowed, RFC 6874); port empty or
    decimal up to 65535; no userinfo; not empty."""
    if "@" in auth:
        raise HttpError(400, f"userinfo in the {what}")
    if auth.startswith("["):
        end = auth.find("]")
        if end < 0:
            raise HttpError(400, f"unterminated IPv6 literal in the {what}")
        addr, pct, zone = auth[1:end].partition("%")
        if pct and not _ZONE.fullmatch(zone):     # "%25eth0" (RFC 6874) or the common raw "%eth0"
            raise HttpError(400, f"bad IPv6 zone ID in the {what}")
        try:
            ipaddress.IPv6Address(addr)
        except ValueError:
            raise HttpError(400, f"bad IPv6 literal in the {what}") from None
        rest = auth[end + 1:]
        if rest and not rest.startswith(":"):
            raise HttpError(400, f"bad {what}")
        port = rest[1:]
    else:
        host, _, port = auth.partition(":")
        if not _REG_NAME.fullmatch(host):
            raise HttpError(400, f"bad or empty host in the {what}")
    if port and (not (port.isascii() and port.isdigit()) or _digits(port) > 65535):
        raise HttpError(400, f"bad port in the {what}")


def split_target(target: str) -> str:
    """The path of a request target (RFC 9112 3.2): origin form ``/p?q`` gives ``/p``, absolute form
    ``http://authority/p?q`` gives ``/p`` (``/`` when there is no path) after :func:`check_authority`;
    anything else (``*``, a relative path) comes back as it is, for the caller to refuse."""
    path = target.split("?", 1)[0].split("#", 1)[0]
    m = _SCHEME.match(target)
    if m:
        rest = target[m.end():]
        cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
        check_authority(rest[:cut])
        path = rest[cut:].split("?", 1)[0].split("#", 1)[0] or "/"
    return path


def _pct_decode(s: str) -> str:
    if "%" not in s:
        return s
    out = bytearray()
    i = 0
    b = s.encode("utf-8")
    while i < len(b):
        c = b[i]
        if c == 0x25:
            h = b[i + 1:i + 3]
            if len(h) != 2 or not all(x in b"0123456789abcdefABCDEF" for x in h):
                raise ValueError("bad escape")
            out.append(int(h, 16))
            i += 3
        else:
            out.append(c)
            i += 1
    return out.decode("utf-8")   # ValueError (UnicodeDecodeError) on bad UTF-8


def _open_error(e: OSError) -> HttpError:
    """The answer when opening a file under DIR fails: no such file (also: a path through a non-directory,
    a name or path too long, a symlink loop) 404; permission 403; out of descriptors or memory 503; else 500."""
    if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP):
        return HttpError(404, "not found", close=False)
    if e.errno in (errno.EACCES, errno.EPERM):
        return HttpError(403, "permission denied", close=False)
    if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
        return HttpError(503, "out of file descriptors", close=False, headers=[("Retry-After", "1")])
    return HttpError(500, f"cannot open: {e.strerror}", close=False)


def resolve_path(root_real: str, segs: list[str]) -> str:
    """The real path of ``segs`` under ``root_real`` (itself a realpath); HttpError if outside or not a file."""
    if not segs:
        raise HttpError(404, "no index")
    cand = os.path.join(root_real, *segs)
    real = os.path.realpath(cand)
    if real != root_real and not real.startswith(root_real + os.sep):
        raise HttpError(403, "outside the served directory")
    return real


# ----------------------------------------------------------------------------------------------------------
# Synthetic videos

_PERIOD = 251   # the pattern: byte at offset o of every synthetic file is o % 251
_PATTERN = bytes(i % _PERIOD for i in range(CHUNK + _PERIOD))


def pattern_bytes(offset: int, n: int) -> bytes:
    """The ``n`` bytes of a synthetic rung file starting at ``offset`` (byte o is ``o % 251``)."""
    out = bytearray()
    while n > 0:
        k = min(n, CHUNK)
        s = offset % _PERIOD
        out += _PATTERN[s:s + k]
        offset += k
        n -= k
    return bytes(out)


class _WeightedCache:
    """A least-recently-used cache bounded by the summed weight of its entries (an entry heavier
    than the budget is built but not kept), built under one lock: synthetic videos of 100,000
    segments x 20 rungs weigh ~150 MB each as Python lists, and their MPD ~1 GB while it is built;
    32 of them by count, built by several connections at once, ran a server out of memory."""

    def __init__(self, budget: int):
        import collections
        self.budget, self.used = budget, 0
        self.entries: collections.OrderedDict = collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, key, build, weigh):
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key][0]
            value = build()
            w = weigh(value)
            if w <= self.budget:
                self.entries[key] = (value, w)
                self.used += w
                while self.used > self.budget:
                    _, (_, old) = self.entries.popitem(last=False)
                    self.used -= old
            return value


_LAYOUTS = _WeightedCache(4_000_000)       # segment x rung values (~300 MB)
_MPDS = _WeightedCache(256 * 2**20)         # bytes


def synthetic_layout(ladder: str, seed: int = 0, n_segments: int = 300) -> dict:
    """The synthetic video served under ``/synthetic/<ladder>/[s<seed>-n<n>/]``: its Video dict
    (cached; treat it as read-only)."""
    from qoelab.video.synthetic import synthetic_video
    return _LAYOUTS.get((ladder, seed, n_segments),
                        lambda: synthetic_video(ladder, n_segments=n_segments, seed=seed),
                        lambda v: len(v["sizes"]) * len(v["bitrates_bps"]))


def _rung_total(video: dict, r: int) -> int:
    offs = video["byte_offsets"]
    return offs[-1][r] + video["sizes"][-1][r]


def synthetic_mpd(video: dict) -> bytes:
    """A static DASH MPD (SegmentList, ``Initialization@range``, ``SegmentURL@mediaRange``) for ``video``.
    Written as text, line by line (an XML tree of a 100,000-segment, 20-rung video took ~2 GB while
    it was built; the text is 121 MB); the same bytes as ElementTree's indented output."""
    from qoelab.video.synthetic import INIT_BYTES
    dur_ms = video["segment_duration"] // 1_000_000
    n = len(video["sizes"])
    total_s = n * video["segment_duration"] / 1e9
    out = ["<?xml version='1.0' encoding='utf-8'?>\n",
           '<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:full:2011" type="static" '
           f'mediaPresentationDuration="PT{total_s:.3f}S" minBufferTime="PT2.000S">\n',
           '  <Period id="0" start="PT0S">\n',
           '    <AdaptationSet id="0" contentType="video" mimeType="video/mp4" segmentAlignment="true" '
           'startWithSAP="1">\n']
    res = video.get("resolutions")
    offs, sizes = video["byte_offsets"], video["sizes"]
    for r, bw in enumerate(video["bitrates_bps"]):
        wh = f' width="{res[r][0]}" height="{res[r][1]}"' if res else ""
        out.append(f'      <Representation id="{r}" bandwidth="{int(bw)}" codecs="avc1.64001f"{wh}>\n'
                   f'        <BaseURL>{r}.mp4</BaseURL>\n'
                   f'        <SegmentList timescale="1000" duration="{dur_ms}">\n'
                   f'          <Initialization range="0-{INIT_BYTES - 1}" />\n')
        out.extend(f'          <SegmentURL mediaRange="{offs[t][r]}-{offs[t][r] + sizes[t][r] - 1}" />\n'
                   for t in range(n))
        out.append("        </SegmentList>\n      </Representation>\n")
    out.append("    </AdaptationSet>\n  </Period>\n</MPD>\n")
    return "".join(out).encode()


_VARIANT = re.compile(r"s([0-9]{1,9})-n([0-9]{1,6})")     # ASCII digits only: no "s١-n٤" aliases
_RUNG = re.compile(r"(0|[1-9][0-9]{0,3})\.mp4")


def _synthetic(segs: list[str]):
    """``segs`` after ``synthetic``: ("mpd", bytes) or ("rung", video, r, media); HttpError(404) otherwise.
    ``<ladder>/s<seed>-n<n>/media/<name>``: the same video as playable fMP4 (``media`` True; see
    :mod:`qoelab.video.playable`), for browsers."""
    media = len(segs) == 4 and segs[2] == "media"
    if media:
        segs = segs[:2] + segs[3:]
    if len(segs) not in (2, 3):
        raise HttpError(404, "not a synthetic path", close=False)
    ladder, rest = segs[0], segs[1:]
    seed, n = 0, 300
    if len(rest) == 2:
        m = _VARIANT.fullmatch(rest[0])
        if not m:
            raise HttpError(404, "not a synthetic variant (s<seed>-n<segments>)", close=False)
        seed, n = int(m.group(1)), int(m.group(2))
        if not 1 <= n <= MAX_SYNTH_SEGMENTS:
            raise HttpError(404, "segment count out of range", close=False)
    # the ladder and the name are checked before the layout is built (under the caches' lock: a HEAD of a
    # rung that does not exist in a 100,000-segment variant took 2.3 s, and every other synthetic
    # request waited)
    from qoelab.errors import InputError
    from qoelab.video.ladders import LADDERS
    if ladder not in LADDERS:
        raise HttpError(404, "unknown ladder", close=False)
    name = rest[-1]
    m = _RUNG.fullmatch(name)
    if name != "manifest.mpd" and (not m or int(m.group(1)) >= len(LADDERS[ladder].bitrates_kbps)):
        raise HttpError(404, "no such rung", close=False)
    try:
        video = synthetic_layout(ladder, seed, n)
    except InputError:
        raise HttpError(404, "unknown ladder", close=False) from None
    if name == "manifest.mpd":
        return ("mpd", _synthetic_mpd_cached(ladder, seed, n))
    if media and _min_size(ladder, seed, n) < _playable_min():
        raise HttpError(404, "segments too small to be playable", close=False)
    return ("rung", video, int(m.group(1)), media)


def _playable_min() -> int:
    from qoelab.video.playable import MIN_SEGMENT_BYTES
    return MIN_SEGMENT_BYTES


@functools.lru_cache(maxsize=32)
def _min_size(ladder: str, seed: int, n: int) -> int:
    return min(min(row) for row in synthetic_layout(ladder, seed, n)["sizes"])


_SEGMENTS = _WeightedCache(128 * 2**20)    # bytes of playable media segments


def _playable_segment(ladder: str, seed: int, n: int, r: int, t: int) -> bytes:
    """Segment ``t`` of rung ``r`` as playable fMP4 (cached by size: 64 by count, up to 19.5 MB each,
    held 1.25 GB after 64 one-byte requests)."""
    from qoelab.video.playable import media_segment

    def build():
        video = synthetic_layout(ladder, seed, n)
        return media_segment(t, video["sizes"][t][r], video["segment_duration"] // 1_000_000)
    return _SEGMENTS.get((ladder, seed, n, r, t), build, len)


def _synthetic_mpd_cached(ladder: str, seed: int, n: int) -> bytes:
    return _MPDS.get((ladder, seed, n), lambda: synthetic_mpd(synthetic_layout(ladder, seed, n)), len)


# ----------------------------------------------------------------------------------------------------------
# TCP_INFO (struct tcp_info, include/uapi/linux/tcp.h); offsets in bytes, stable since Linux 4.x:
# fields are only ever appended, and a field is parsed only if the kernel returned that many bytes.

TCP_INFO_FIELDS = [  # (name, offset, struct format)
    ("state", 0, "B"), ("ca_state", 1, "B"), ("retransmits", 2, "B"),
    ("rto_us", 8, "I"), ("snd_mss", 16, "I"), ("unacked", 24, "I"), ("sacked", 28, "I"), ("lost", 32, "I"),
    ("retrans", 36, "I"), ("pmtu", 60, "I"), ("rtt_us", 68, "I"), ("rttvar_us", 72, "I"),
    ("snd_ssthresh", 76, "I"), ("snd_cwnd", 80, "I"), ("total_retrans", 100, "I"),
    ("pacing_rate", 104, "Q"), ("bytes_acked", 120, "Q"), ("segs_out", 136, "I"), ("notsent_bytes", 144, "I"),
    ("min_rtt_us", 148, "I"), ("delivery_rate", 160, "Q"), ("busy_time_us", 168, "Q"),
    ("rwnd_limited_us", 176, "Q"), ("sndbuf_limited_us", 184, "Q"), ("delivered", 192, "I"),
    ("delivered_ce", 196, "I"), ("bytes_sent", 200, "Q"), ("bytes_retrans", 208, "Q"), ("snd_wnd", 228, "I"),
]
TCP_INFO_LEN = 232
_APP_LIMITED_BYTE = 7   # bit 0: tcpi_delivery_rate_app_limited


def parse_tcp_info(raw: bytes) -> dict:
    """The fields of :data:`TCP_INFO_FIELDS` present in ``raw`` (rates in bytes/s, as the kernel gives them)."""
    out = {}
    for name, off, fmt in TCP_INFO_FIELDS:
        size = struct.calcsize(fmt)
        if off + size <= len(raw):
            out[name] = struct.unpack_from("=" + fmt, raw, off)[0]
    if len(raw) > _APP_LIMITED_BYTE:
        out["delivery_rate_app_limited"] = raw[_APP_LIMITED_BYTE] & 1
    return out


def available_cc() -> list[str]:
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            return f.read().split()
    except OSError:
        return []


# Congestion controllers of qoelab's simulator that no kernel has (no `modprobe` will find them).
_SIMULATED_ONLY = {"wcubic", "multcp", "fast"}


def check_cc(cc: str) -> None:
    """Raise ValueError with a one-line reason if sockets cannot use ``cc``."""
    if not hasattr(socket, "TCP_CONGESTION"):
        raise ValueError("TCP_CONGESTION is not supported on this platform")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    except OSError as e:
        avail = " ".join(available_cc()) or "unknown"
        hint = (f"{cc} is one of qoelab's simulated controllers, not a kernel module" if cc in _SIMULATED_ONLY
                else f"try `modprobe tcp_{cc}`")
        raise ValueError(f"congestion control {cc!r} is not usable here ({e.strerror}; available: {avail}; "
                         f"{hint})") from None
    finally:
        s.close()


def get_cc(sock: socket.socket) -> str:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0", 1)[0].decode()


# ----------------------------------------------------------------------------------------------------------
# The server

def _writable(sock, timeout) -> bool:
    """Whether ``sock`` has room to send within ``timeout`` seconds (None: wait without limit)."""
    with selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_WRITE)
        return bool(sel.select(timeout))


class _Conn:
    """One connection. ``req``: ``[method, target, range, t0]`` of the request being answered (None between
    requests); ``status``: the status of the response being sent (None before its head); ``sent``: body
    bytes handed to the kernel so far. A connection that fails mid-request is logged from these."""
    __slots__ = ("id", "sock", "peer", "cc", "opened", "req", "status", "sent")

    def __init__(self, cid, sock, peer):
        self.id, self.sock, self.peer, self.cc, self.opened = cid, sock, peer, None, time.monotonic()
        self.req, self.status, self.sent = None, None, 0


class Server:
    """``Server(root, ...)``; ``start()`` binds; ``serve_forever()`` or ``start_thread()``; ``stop()``."""

    def __init__(self, root: str, bind: str = "127.0.0.1", port: int = 8000, cc: str | None = None,
                 tcp_info_log: str | None = None, tcp_info_interval: float = 0.1, log=None,
                 max_connections: int = 256, idle_timeout: float = 60.0):
        self.root = os.path.realpath(root)
        self.bind, self.port, self.cc = bind, port, cc
        self.tcp_info_log, self.tcp_info_interval = tcp_info_log, tcp_info_interval
        self.log = log if log is not None else sys.stderr
        self.max_connections, self.idle_timeout = max_connections, idle_timeout
        self.head_timeout = min(idle_timeout, 10.0)   # a whole request head, from its first byte
        self.conns: dict[int, _Conn] = {}
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._next_id = 0
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._info_file = None
        self.log_failed = None   # a log that could not be written (shown when the server stops)
        self._t_start = time.monotonic()

    # -- lifecycle
    def start(self) -> None:
        if self.cc:
            check_cc(self.cc)
        fam = socket.AF_INET6 if ":" in self.bind else socket.AF_INET
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        if self.cc:
            ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.cc.encode())
        try:
            ls.bind((self.bind, self.port))
        except OSError:
            ls.close()
            raise
        ls.listen(128)
        ls.setblocking(False)
        self._listener = ls
        self.port = ls.getsockname()[1]
        if self.tcp_info_log:
            self._info_file = open(self.tcp_info_log, "w", buffering=1)
            self._t_start = time.monotonic()
            t = threading.Thread(target=self._sample_loop, name="qoelab-serve-tcpinfo", daemon=True)
            t.start()
            self._threads.append(t)

    def serve_forever(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                if not sel.select(timeout=0.2):
                    continue
                try:
                    sock, peer = self._listener.accept()
                except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                    continue
                except OSError as e:   # EMFILE and friends: back off, keep serving
                    if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                        time.sleep(0.05)
                        continue
                    raise
                self._accepted(sock, peer)
        finally:
            sel.close()
            self._listener.close()

    def start_thread(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="qoelab-serve", daemon=True)
        t.start()
        return t

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            conns = list(self.conns.values())
        for c in conns:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + 0.5   # one budget for all threads (1 s each took > 1 s with many)
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._log_lock:
            if self._info_file:
                try:
                    self._info_file.close()
                except OSError as e:   # (a full device: it was an internal error at Ctrl-C)
                    self.note_log_failure("--tcp-info-log", e)
                self._info_file = None

    def note_log_failure(self, opt: str, e: OSError) -> None:
        """Remember the first log write that failed (shown once when the server stops)."""
        self.log_failed = self.log_failed or f"{opt}: {e.strerror or e}"

    # -- connections
    def _accepted(self, sock: socket.socket, peer) -> None:
        sock.setblocking(True)
        with self._lock:
            full = len(self.conns) >= self.max_connections
            self._next_id += 1
            conn = _Conn(self._next_id, sock, peer)
            if not full:
                self.conns[conn.id] = conn
        if full:
            self._refuse_503(sock, peer)
            return
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.cc:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.cc.encode())
            if hasattr(socket, "TCP_CONGESTION"):
                conn.cc = get_cc(sock)
        except OSError:
            pass
        t = threading.Thread(target=self._serve_conn, args=(conn,), name=f"qoelab-serve-{conn.id}", daemon=True)
        try:
            t.start()
        except RuntimeError:     # no more threads: refuse it like a connection over the limit, keep accepting
            with self._lock:
                self.conns.pop(conn.id, None)
            self._refuse_503(sock, peer, note="cannot start a thread")

    def _refuse_503(self, sock, peer, note: str = "") -> None:
        """A connection not served (over --max-connections, or no thread for it): 503, closed, logged."""
        try:
            sock.settimeout(1.0)
            sock.sendall(self._head(503, [("Content-Length", "0"), ("Connection", "close"), ("Retry-After", "1")]))
        except OSError:
            pass
        sock.close()
        self._log_line(peer, "-", "-", "-", 503, 0, 0.0, note=note)

    def _serve_conn(self, conn: _Conn) -> None:
        sock = conn.sock
        sock.settimeout(self.idle_timeout)
        buf = bytearray()
        try:
            while not self._stop.is_set():
                head = self._read_head(sock, buf)
                if head is None:
                    if buf.strip(b"\r\n"):      # EOF inside a request head
                        self._log_line(conn.peer, "-", "-", None, "-", 0, 0.0,
                                       note=f"incomplete request head ({len(buf)} bytes) at EOF")
                    return
                t0 = time.monotonic()
                keep = self._handle(conn, head, buf, t0)
                if not keep:
                    self._linger(sock)
                    return
        except OSError as e:            # reset, timeout, broken pipe: the connection just ends ...
            self._log_failure(conn, buf, f"connection error {type(e).__name__}: {e}")   # ... logged if mid-request
            return
        except Exception as e:          # a bug: a 500 if nothing was sent yet, a log line, end this connection
            self._internal_error(conn, e)
            return
        finally:
            if self._info_file is not None:
                self._sample(conn, time.monotonic())     # the last sample: what the connection ended with
            with self._lock:
                self.conns.pop(conn.id, None)
            try:
                sock.close()
            except OSError:
                pass

    @staticmethod
    def _linger(sock) -> None:
        """Close in stages (RFC 9112 9.6): closed with request data unread, the kernel sends a reset that
        can destroy the response before the client reads it (a 400 for a 3 MB body was lost half the
        time). Our side is shut, then what the client still sends is read and dropped until it closes,
        for at most 1 s or 1 MiB."""
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(0.25)
            deadline, n = time.monotonic() + 1.0, 0
            while n < 1 << 20 and time.monotonic() < deadline:
                d = sock.recv(65536)
                if not d:
                    break
                n += len(d)
        except OSError:
            pass

    def _read_head(self, sock, buf: bytearray):
        """The next request head (bytes, without the blank line), removed from ``buf``; None at a clean EOF.
        Returns HttpError(400) when the head exceeds :data:`MAX_HEAD`, HttpError(408) when it is not complete
        within ``head_timeout``."""
        started = None
        while True:
            # RFC 9112 2.2: empty lines before the request line are ignored
            while buf[:2] == b"\r\n" or buf[:1] == b"\n":
                del buf[:2 if buf[:2] == b"\r\n" else 1]
            m = re.search(rb"\r?\n\r?\n", buf)
            if m:
                head = bytes(buf[:m.start()])
                del buf[:m.end()]
                if len(head) > MAX_HEAD:
                    return HttpError(400, "request head too long")
                return head
            if len(buf) > MAX_HEAD:
                return HttpError(400, "request head too long")
            if buf.startswith(b"PRI * HTTP/2.0"):
                return HttpError(400, "HTTP/2 connection preface")
            # the method is a token (RFC 9110 5.6.2): anything else before the first space is not HTTP/1.x
            # (a TLS ClientHello begins 0x16 0x03) and waited for a blank line until the idle timeout
            sp = buf.find(b" ")
            if buf and buf[:sp if sp >= 0 else len(buf)].translate(None, _TCHAR):
                return HttpError(400, "not an HTTP/1.x request (TLS or binary data)")
            if buf.strip(b"\r\n"):
                # a head is under way: it must be complete within the head timeout, however it trickles
                # in (1 byte every 3 s kept a connection, and --max-connections of them every client, out)
                if started is None:
                    started = time.monotonic()
                elif time.monotonic() - started > self.head_timeout:
                    return HttpError(408, f"request head not complete within {self.head_timeout:g} s")
            data = sock.recv(65536)
            if not data:
                return None
            buf += data

    def _log_failure(self, conn: _Conn, buf: bytearray, note: str) -> None:
        """Log a connection that ended with an OSError: mid-request (with what was sent) or inside a request
        head. Between requests (idle timeout, the client closing or resetting) it is an ordinary end: no line."""
        if conn.req is not None:
            method, target, rng, t0 = conn.req
            status = conn.status if conn.status is not None else "-"
            self._log_line(conn.peer, method, target, rng, status, conn.sent, time.monotonic() - t0, note=note)
        elif buf.strip(b"\r\n"):
            self._log_line(conn.peer, "-", "-", None, "-", 0, 0.0,
                           note=f"incomplete request head ({len(buf)} bytes): {note}")

    def _internal_error(self, conn: _Conn, e: Exception) -> None:
        method, target, rng, t0 = conn.req if conn.req is not None else ("-", "-", None, time.monotonic())
        status = conn.status if conn.req is not None else None     # (a finished request's status is stale)
        if status is None:       # no response started: tell the client
            status = 500
            body = b"500 Internal Server Error: internal error\n"
            hdrs = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))),
                    ("Connection", "close")]
            try:
                conn.sock.sendall(self._head(500, hdrs) + (b"" if method == "HEAD" else body))
            except OSError:
                pass
        self._log_line(conn.peer, method, target, rng, status, conn.sent, time.monotonic() - t0,
                       note=f"internal error {type(e).__name__}: {e}")

    # -- one request
    def _handle(self, conn: _Conn, head, buf: bytearray, t0: float) -> bool:
        """Answer one request; True if the connection goes on. An exception leaves ``conn.req`` set, so the
        caller can log the request that failed."""
        conn.req, conn.status, conn.sent = ["-", "-", None, t0], None, 0
        keep = self._handle_request(conn, head, buf, t0)
        conn.req = None
        return keep

    def _handle_request(self, conn: _Conn, head, buf: bytearray, t0: float) -> bool:
        method, target, rng, keep, version = "-", "-", None, False, "HTTP/1.1"
        try:
            if isinstance(head, HttpError):
                raise head
            method, target, version, headers = self._parse_head(head)
            rng = headers.get("range")
            conn.req = [method, target, rng, t0]
            if headers.get("expect", "").strip().lower() == "100-continue" and version != "HTTP/1.0":
                # RFC 9110 10.1.1: a status the head alone decides is sent at once, without waiting for the
                # body (which is then left unread: the connection closes); otherwise 100 (Continue) first.
                # The client waited for its own timeout (curl: 1 s) or forever.
                if method not in ("GET", "HEAD", "OPTIONS"):
                    self._check_method(method)
                cl = headers.get("content-length", "").strip()
                if cl.isascii() and cl.isdigit() and len(cl) <= 8 and 0 < int(cl) <= 1 << 20 and len(buf) < int(cl):
                    conn.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            self._skip_body(conn.sock, buf, headers)
            keep = self._keep_alive(version, headers)
            self._check_method(method)
            # an HTTP/1.0 client learns that the connection persists from the response (RFC 9112 9.3)
            mode = "keep-alive" if keep and version == "HTTP/1.0" else keep
            return self._respond(conn, method, target, headers, mode, t0) and keep
        except HttpError as e:
            close = e.close or not keep
            body = (f"{e.status} {REASONS.get(e.status, '')}: {e.why}\n").encode()
            hdrs = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))] + e.headers
            if close:
                hdrs.append(("Connection", "close"))
            conn.status = e.status
            # (an HTTP/1.0 client is told the connection persists after an error too, as after a 200)
            mode = "keep-alive" if not close and version == "HTTP/1.0" else True
            conn.sock.sendall(self._head(e.status, hdrs, mode) + (b"" if method == "HEAD" else body))
            # the body bytes sent, as for any response (it logged 0)
            self._log_line(conn.peer, method, target, rng, e.status, 0 if method == "HEAD" else len(body),
                           time.monotonic() - t0)
            return not close

    def _parse_head(self, head: bytes):
        lines = re.split(rb"\r?\n", head)
        if b"\r" in head.replace(b"\r\n", b""):
            # RFC 9112 2.2: a bare CR must be treated as invalid or replaced with SP; rejected, like NUL
            raise HttpError(400, "bare CR in the request head")
        try:
            reqline = lines[0].decode("ascii")
        except UnicodeDecodeError:
            raise HttpError(400, "non-ASCII request line") from None
        parts = reqline.split(" ")
        if len(parts) != 3 or not all(parts):
            raise HttpError(400, "bad request line")
        method, target, version = parts
        if not TOKEN.match(method.encode()):
            raise HttpError(400, "bad method")
        if any(c < "!" or c == "\x7f" for c in target):   # (RFC 3986: no controls or white space; a tab was a 404)
            raise HttpError(400, "control character or white space in the request target")
        vm = re.fullmatch(r"HTTP/(\d)\.(\d)", version)
        if not vm:
            raise HttpError(400, "bad HTTP version")
        if method == "PRI" and version == "HTTP/2.0":
            raise HttpError(400, "HTTP/2 connection preface")
        if vm.group(1) != "1":
            raise HttpError(505, "only HTTP/1.x")
        if len(lines) - 1 > MAX_HEADERS:
            raise HttpError(400, f"more than {MAX_HEADERS} header fields")
        headers: dict[str, str] = {}
        counts: dict[str, int] = {}
        for ln in lines[1:]:
            if ln[:1] in (b" ", b"\t"):
                raise HttpError(400, "obsolete line folding")
            name, sep, value = ln.partition(b":")
            if not sep or not TOKEN.match(name):
                raise HttpError(400, "bad header field")
            if b"\0" in value:
                raise HttpError(400, "NUL in a header field")
            k = name.decode("ascii").lower()
            v = value.strip(b" \t").decode("latin-1")
            counts[k] = counts.get(k, 0) + 1
            headers[k] = v if k not in headers else headers[k] + ", " + v
        if vm.group(2) != "0" and counts.get("host", 0) != 1:   # (HTTP/1.2 is read as 1.1, RFC 9112 2.3)
            raise HttpError(400, "HTTP/1.1 request needs exactly one Host header")
        if counts.get("host", 0) > 1:
            raise HttpError(400, "more than one Host header")
        if headers.get("host"):        # RFC 9112 3.2: an invalid Host field value is a 400 (empty is allowed)
            check_authority(headers["host"], "Host header")
        return method, target, version, headers

    @staticmethod
    def _check_method(method: str) -> None:
        if method in ("GET", "HEAD", "OPTIONS"):
            return
        if method in KNOWN_METHODS:
            raise HttpError(405, f"method {method} not allowed", close=False, headers=[("Allow", ALLOWED)])
        raise HttpError(501, f"method {method} not implemented", close=False)

    def _skip_body(self, sock, buf: bytearray, headers: dict) -> None:
        if "transfer-encoding" in headers:
            raise HttpError(501 if "content-length" not in headers else 400,
                            "request bodies with Transfer-Encoding are not supported")
        cl = headers.get("content-length")
        if cl is None:
            return
        vals = {v.strip() for v in cl.split(",")}
        if len(vals) != 1 or not all(v.isdigit() and v.isascii() for v in vals) or len(next(iter(vals))) > 15:
            raise HttpError(400, "bad Content-Length")
        n = int(next(iter(vals)))
        if n > 1 << 20:
            raise HttpError(400, "request body too large")
        while len(buf) < n:
            data = sock.recv(65536)
            if not data:
                raise OSError("eof in request body")
            buf += data
        del buf[:n]

    @staticmethod
    def _keep_alive(version: str, headers: dict) -> bool:
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        if "close" in tokens:
            return False
        if version == "HTTP/1.0":
            return "keep-alive" in tokens
        return True

    def _respond(self, conn: _Conn, method: str, target: str, headers: dict, keep: bool, t0: float) -> bool:
        path = split_target(target)     # absolute form (RFC 9112 3.2.2): the authority checked, then dropped
        if method == "OPTIONS":
            # (the preflight passes the CORS check only with Allow-Origin; a 204 has no Content-Length,
            # RFC 9110 8.6)
            hdrs = [("Allow", ALLOWED), ("Access-Control-Allow-Origin", "*"), ("Access-Control-Allow-Methods", ALLOWED),
                    ("Access-Control-Allow-Headers", "Range"), ("Access-Control-Max-Age", "86400")]
            conn.status = 204
            conn.sock.sendall(self._head(204, hdrs, keep))
            self._log_line(conn.peer, method, target, headers.get("range"), 204, 0, time.monotonic() - t0)
            return True
        segs = _decode_target(path)
        ctype = "application/octet-stream"
        src = None          # (kind, payload)
        etag = last_mod = None
        date_strong = True
        if segs and segs[0] == "synthetic":
            syn = _synthetic(segs[1:])
            if syn[0] == "mpd":
                data = syn[1]
                total, src, ctype = len(data), ("bytes", data), TYPES[".mpd"]
            else:
                video, r, media = syn[1], syn[2], syn[3]
                total, ctype = _rung_total(video, r), TYPES[".mp4"]
                src = ("media", (video, r, segs[1:3])) if media else ("pattern", None)
            etag = f'"syn-{zlib.crc32(path.encode()):x}-{total:x}"'
        else:
            real = resolve_path(self.root, segs)
            try:
                fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
            except OSError as e:
                raise _open_error(e) from None
            # checked on the descriptor itself, before a file object owns it: os.fdopen raises on a
            # directory (`GET /sub`) without closing the descriptor, and each such request leaked one
            # and got no response until the server ran out of descriptors for good
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise HttpError(404, "not a regular file", close=False)
                f = os.fdopen(fd, "rb")
            except BaseException:
                os.close(fd)
                raise
            total, src = st.st_size, ("file", f)
            ctype = TYPES.get(os.path.splitext(real)[1].lower(), "application/octet-stream")
            etag = f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"'
            last_mod = formatdate(st.st_mtime, usegmt=True)
            # RFC 9110 8.8.2.2: a modification date less than a second before now is a weak validator,
            # which If-Range must not accept (a file rewritten within that second was spliced)
            date_strong = time.time() - st.st_mtime >= 1.0
        try:
            return self._send_representation(conn, method, target, headers, keep, t0, src, total, ctype,
                                             etag, last_mod, date_strong)
        finally:
            if src[0] == "file":
                src[1].close()

    def _send_representation(self, conn, method, target, headers, keep, t0, src, total, ctype, etag, last_mod,
                             date_strong=True):
        rng_hdr = headers.get("range")
        ranges = parse_range(rng_hdr, total) if rng_hdr is not None else None
        if ranges is not None and "if-range" in headers:
            ir = headers["if-range"].strip()
            if ir != etag and (last_mod is None or ir != last_mod or not date_strong):
                ranges = None
        common = [("Accept-Ranges", "bytes"), ("Access-Control-Allow-Origin", "*"),
                  ("Access-Control-Expose-Headers", "Content-Range, Content-Length, Accept-Ranges")]
        if etag:
            common.append(("ETag", etag))
        if last_mod:
            common.append(("Last-Modified", last_mod))
        if ranges == []:
            raise HttpError(416, "range not satisfiable", close=False,
                            headers=[("Content-Range", f"bytes */{total}")] + common)
        sock = conn.sock
        if ranges is None:
            status, pieces = 200, [(None, 0, total)]
            hdrs = [("Content-Type", ctype), ("Content-Length", str(total))]
        elif len(ranges) == 1:
            a, b = ranges[0]
            status, pieces = 206, [(None, a, b - a + 1)]
            hdrs = [("Content-Type", ctype), ("Content-Range", f"bytes {a}-{b}/{total}"),
                    ("Content-Length", str(b - a + 1))]
        else:
            status = 206
            boundary = "qoelab-" + os.urandom(12).hex()
            pieces = []
            for i, (a, b) in enumerate(ranges):
                pre = ("\r\n" if i else "") + f"--{boundary}\r\nContent-Type: {ctype}\r\n" \
                      f"Content-Range: bytes {a}-{b}/{total}\r\n\r\n"
                pieces.append((pre.encode(), a, b - a + 1))
            tail = f"\r\n--{boundary}--\r\n".encode()
            length = sum(len(p[0]) + p[2] for p in pieces) + len(tail)
            pieces.append((tail, 0, 0))
            hdrs = [("Content-Type", f"multipart/byteranges; boundary={boundary}"), ("Content-Length", str(length))]
        body_len = sum((len(p[0]) if p[0] else 0) + p[2] for p in pieces)
        head = self._head(status, hdrs + common, keep)
        conn.status = status
        if method == "HEAD" or body_len == 0:
            sock.sendall(head)
        else:
            sock.sendall(head, socket.MSG_MORE)
            for pre, off, n in pieces:
                if pre:
                    sock.sendall(pre, socket.MSG_MORE)
                if n:
                    self._send_body(conn, src, off, n)
        self._log_line(conn.peer, method, target, headers.get("range"), status, conn.sent, time.monotonic() - t0)
        return True

    @staticmethod
    def _send_view(conn: _Conn, data) -> None:
        """``data`` sent by ``socket.send`` calls, each waiting at most the idle timeout for room, and
        counted in ``conn.sent`` as the kernel takes it. ``sendall`` applies the timeout to the whole
        call: a client reading a 17 MB MPD steadily at 1 MB/s was cut off at the 5 s timeout."""
        view = memoryview(data)
        while view:
            k = conn.sock.send(view[:CHUNK])
            conn.sent += k
            view = view[k:]

    @staticmethod
    def _send_file(conn: _Conn, f, off: int, n: int) -> None:
        """``n`` bytes of the file ``f`` from ``off`` by ``os.sendfile``, waiting at most the idle timeout
        for room each time and counting what the kernel took (a failed transfer's log line gives it)."""
        sock = conn.sock
        timeout = sock.gettimeout()
        while n > 0:
            try:
                k = os.sendfile(sock.fileno(), f.fileno(), off, min(n, 4 * CHUNK))
            except BlockingIOError:
                if not _writable(sock, timeout):
                    raise TimeoutError("timed out") from None
                continue
            if k == 0:   # the file shrank under us: the framing is broken, close
                raise OSError("short file")
            conn.sent += k
            off += k
            n -= k

    @staticmethod
    def _send_body(conn: _Conn, src, off: int, n: int) -> None:
        """Send ``n`` bytes of ``src`` from ``off``, counting them in ``conn.sent``."""
        kind, obj = src
        if kind == "file":
            Server._send_file(conn, obj, off, n)
        elif kind == "bytes":
            Server._send_view(conn, memoryview(obj)[off:off + n])
        elif kind == "media":
            from qoelab.video.playable import rung_bytes
            video, r, (ladder, variant) = obj
            m = _VARIANT.fullmatch(variant)
            seed, nseg = (int(m.group(1)), int(m.group(2))) if m else (0, 300)
            seg = functools.partial(_playable_segment, ladder, seed, nseg, r)
            while n > 0:
                k = min(n, 4 * CHUNK)
                Server._send_view(conn, rung_bytes(video, r, off, k, segment=seg))
                off += k
                n -= k
        else:
            while n > 0:
                k = min(n, CHUNK)
                s = off % _PERIOD
                Server._send_view(conn, memoryview(_PATTERN)[s:s + k])
                off += k
                n -= k

    @staticmethod
    def _head(status: int, headers: list, keep: bool | str = True) -> bytes:
        lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}", f"Date: {formatdate(usegmt=True)}",
                 "Server: qoelab"]
        lines += [f"{k}: {v}" for k, v in headers]
        if not any(k == "Connection" for k, _ in headers):
            if keep == "keep-alive":
                lines.append("Connection: keep-alive")
            elif not keep:
                lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    # -- logs
    def _log_line(self, peer, method, target, rng, status, nbytes, dur_s, note: str = "") -> None:
        who = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        tgt = target if len(target) <= 200 else target[:200] + "..."
        tgt = tgt.encode("unicode_escape").decode("ascii").replace(" ", "%20")
        r = (rng or "-").replace(" ", "")[:100].encode("unicode_escape").decode("ascii")
        if note:    # exception texts may quote request bytes: one line, printable, bounded
            note = note[:300].encode("unicode_escape").decode("ascii")
        line = (f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {who} {method} {tgt} range={r} {status} {nbytes} "
                f"{dur_s * 1000:.1f}ms{' ' + note if note else ''}\n")
        with self._log_lock:
            try:
                self.log.write(line)
                self.log.flush()
            except OSError as e:   # the server goes on; shown once when it stops
                self.note_log_failure("--log", e)
            except ValueError:
                pass

    def _sample_loop(self) -> None:
        while not self._stop.wait(self.tcp_info_interval):
            with self._lock:
                conns = list(self.conns.values())
            now = time.monotonic()
            for c in conns:
                self._sample(c, now)

    def _sample(self, c: _Conn, now: float) -> None:
        try:
            raw = c.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
        except OSError:
            return
        rec = {"t_s": round(now - self._t_start, 6), "mono_s": round(now, 6), "conn": c.id,
               "peer": f"{c.peer[0]}:{c.peer[1]}", "cc": c.cc}
        rec.update(parse_tcp_info(raw))
        line = json.dumps(rec) + "\n"
        with self._log_lock:
            f = self._info_file
            if f is not None:
                try:
                    f.write(line)
                except OSError as e:
                    self.note_log_failure("--tcp-info-log", e)
                except ValueError:
                    pass


# ----------------------------------------------------------------------------------------------------------
# CLI

def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve a directory (and synthetic videos) over real HTTP/1.1",
                       description="Serve the regular files under DIR (e.g. the output of `qoelab video "
                       "prepare`) and synthetic videos under /synthetic/<ladder>/ over HTTP/1.1 with keep-alive, "
                       "pipelining and byte ranges, for the real-network runtime (docs/serve.md). Ctrl-C stops it.")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDR", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, metavar="N", help="TCP port (default 8000; 0 = any free)")
    p.add_argument("--cc", default=None, metavar="CC",
                   help="congestion control for accepted sockets (TCP_CONGESTION): cubic, reno, bbr, ...")
    p.add_argument("--tcp-info-log", default=None, metavar="FILE",
                   help="sample TCP_INFO of every open connection into FILE (JSON lines)")
    p.add_argument("--tcp-info-interval", type=_interval, default=0.1, metavar="SECONDS",
                   help="sampling interval (default 0.1 s)")
    p.add_argument("--log", default=None, metavar="FILE", help="request log (default: stderr)")
    p.add_argument("--max-connections", type=_pos_int, default=256, metavar="N",
                   help="open connections at most; more get 503 (default 256)")
    p.add_argument("--idle-timeout", type=_interval, default=60.0, metavar="SECONDS",
                   help="close a connection idle this long, 0.001-3600 (default 60 s); a request head must arrive within min(this, 10 s)")
    p.set_defaults(func=_cmd_serve)


def _port(s):
    import argparse
    if not (s.isascii() and s.isdigit()) or _digits(s) > 65535:     # isdigit() alone accepts "²", "٣"
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, found {s[:40]!r}")
    return _digits(s)


def _pos_int(s):
    import argparse
    if not (s.isascii() and s.isdigit()) or _digits(s) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found {s[:40]!r}")
    return _digits(s)


def _interval(s):
    import argparse
    import math
    try:
        v = float(s)
    except ValueError:
        v = -1.0
    if not math.isfinite(v) or not 0.001 <= v <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds in [0.001, 3600], found {s!r}")
    return v


def _cmd_serve(args) -> int:
    from qoelab.errors import InputError
    if not os.path.isdir(args.dir):
        raise InputError(args.dir, None, "a directory to serve", "not a directory")
    if args.cc is not None and not re.fullmatch(r"[a-z0-9_]{1,15}", args.cc):
        raise InputError(None, "--cc", "a congestion control name like cubic, reno or bbr", repr(args.cc))
    from qoelab import outdir
    if args.tcp_info_log is not None:   # (opened by the server once it listens; checked before)
        outdir.open_log(args.tcp_info_log, "--tcp-info-log", "a").close()
    log = outdir.open_log(args.log, "--log") if args.log is not None else sys.stderr
    srv = Server(args.dir, bind=args.bind, port=args.port, cc=args.cc, tcp_info_log=args.tcp_info_log,
                 tcp_info_interval=args.tcp_info_interval, log=log, max_connections=args.max_connections,
                 idle_timeout=args.idle_timeout)
    try:
        srv.start()
    except ValueError as e:
        raise InputError(None, "--cc", message=str(e)) from None
    except OSError as e:
        raise InputError(None, "--bind/--port", "an address and port this host can bind",
                         f"{args.bind} port {args.port}: {e.strerror}") from None
    host = f"[{args.bind}]" if ":" in args.bind else args.bind
    print(f"qoelab serve: serving {srv.root} on http://{host}:{srv.port}/ (cc {args.cc or 'system default'})",
          file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    finally:
        srv.stop()
        if log is not sys.stderr:
            try:
                log.close()
            except OSError as e:
                srv.note_log_failure("--log", e)
        if srv.log_failed:   # one line; the exit status stays the command's (0, 130, 143)
            print(f"qoelab serve: warning: {srv.log_failed} (the log is incomplete)", file=sys.stderr)
    return 0
