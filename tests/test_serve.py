"""`qoelab serve`: byte ranges, keep-alive, pipelining, path safety, malformed requests, TCP_CONGESTION,
TCP_INFO sampling and synthetic videos (docs/serve.md). Loopback only."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, qoelab_cli
from qoelab import serve
from qoelab.video.synthetic import INIT_BYTES, synthetic_video


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("serve")
    root = base / "root"
    (root / "video").mkdir(parents=True)
    data = os.urandom(1_000_003)
    (root / "video" / "0.mp4").write_bytes(data)
    (root / "manifest.mpd").write_text("<MPD/>\n")
    (root / "empty.bin").write_bytes(b"")
    (root / "with space.txt").write_text("spaced\n")
    secret = base / "secret.txt"
    secret.write_text("TOP-SECRET outside DIR\n")
    (base / "rootsibling").mkdir()
    (base / "rootsibling" / "x.txt").write_text("TOP-SECRET sibling\n")
    os.symlink(secret, root / "link-out.txt")
    os.symlink("/etc", root / "etc-link")
    os.symlink("video/0.mp4", root / "link-in.mp4")
    return root, data


@pytest.fixture(scope="module")
def server(tree, tmp_path_factory):
    log = open(tmp_path_factory.mktemp("serve-log") / "requests.log", "w+")
    s = serve.Server(str(tree[0]), port=0, log=log, max_connections=64, idle_timeout=5.0)
    s.start()
    s.start_thread()
    yield s
    s.stop()
    log.close()


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data: bytes):
        self.sock.sendall(data)

    def _fill(self):
        d = self.sock.recv(1 << 20)
        if not d:
            raise EOFError
        self.buf += d

    def response(self, head_only=False):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = {}
        for ln in lines[1:]:
            k, v = ln.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
        n = 0 if head_only else int(hdrs.get("content-length", 0))
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, hdrs, body

    def closed(self):
        try:
            self.sock.settimeout(2)
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


def get(port, path, headers=(), method="GET"):
    c = Client(port)
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
    c.send(f"{method} {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n".encode("latin-1"))
    r = c.response(head_only=(method == "HEAD"))
    c.close()
    return r


def raw(port, data: bytes):
    c = Client(port)
    c.send(data)
    try:
        r = c.response()
    except EOFError:
        r = (None, {}, b"")
    c.close()
    return r


def multipart(hdrs, body):
    m = re.fullmatch(r"multipart/byteranges; boundary=(\S+)", hdrs["content-type"])
    b = m.group(1).encode()
    parts = []
    pos = 0
    while True:
        i = body.index(b"--" + b, pos)
        j = i + 2 + len(b)
        if body[j:j + 2] == b"--":
            assert body[j:] == b"--\r\n"
            break
        he = body.index(b"\r\n\r\n", j)
        ph = dict(ln.split(": ", 1) for ln in body[j + 2:he].decode().split("\r\n"))
        a, bb, total = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", ph["Content-Range"]).groups()
        start = he + 4
        n = int(bb) - int(a) + 1
        parts.append((int(a), int(bb), int(total), body[start:start + n]))
        assert body[start + n:start + n + 2] == b"\r\n"
        pos = start + n
    return parts


# ---------------------------------------------------------------------------------------------------- ranges

def test_full_get_and_head(server, tree):
    _, data = tree
    st, h, body = get(server.port, "/video/0.mp4")
    assert st == 200 and body == data and h["content-length"] == str(len(data))
    assert h["accept-ranges"] == "bytes" and h["content-type"] == "video/mp4"
    st, h, body = get(server.port, "/video/0.mp4", method="HEAD")
    assert st == 200 and body == b"" and h["content-length"] == str(len(data))
    st, h, body = get(server.port, "/manifest.mpd")
    assert st == 200 and h["content-type"] == "application/dash+xml" and body == b"<MPD/>\n"
    assert get(server.port, "/with%20space.txt")[2] == b"spaced\n"
    assert get(server.port, "/link-in.mp4")[2] == data        # a symlink inside DIR is fine


@pytest.mark.parametrize("spec,first,last", [
    ("bytes=0-0", 0, 0), ("bytes=10-99", 10, 99), ("bytes=999990-2000000", 999990, 1_000_002),
    ("bytes=-500", 1_000_003 - 500, 1_000_002), ("bytes=-2000000", 0, 1_000_002),
    ("bytes=100-", 100, 1_000_002), ("bytes=1000002-", 1_000_002, 1_000_002),
    ("bytes=5-5, 2000000-", 5, 5),          # one satisfiable range of two: a single-part answer
])
def test_single_range_is_byte_exact(server, tree, spec, first, last):
    _, data = tree
    st, h, body = get(server.port, "/video/0.mp4", [("Range", spec)])
    assert st == 206
    assert h["content-range"] == f"bytes {first}-{last}/{len(data)}"
    assert int(h["content-length"]) == last - first + 1
    assert body == data[first:last + 1]


def test_multi_range_is_multipart_and_byte_exact(server, tree):
    _, data = tree
    spec = [(0, 99), (500, 599), (999_000, 1_000_002), (50, 60)]
    st, h, body = get(server.port, "/video/0.mp4", [("Range", "bytes=0-99,500-599, 999000-,50-60")])
    assert st == 206 and int(h["content-length"]) == len(body)
    parts = multipart(h, body)
    assert [(a, b) for a, b, _, _ in parts] == spec
    for a, b, total, chunk in parts:
        assert total == len(data) and chunk == data[a:b + 1]


@pytest.mark.parametrize("spec", ["bytes=1000003-", "bytes=2000000-3000000", "bytes=-0", "bytes=1000003-,-0"])
def test_unsatisfiable_range_is_416(server, tree, spec):
    st, h, _ = get(server.port, "/video/0.mp4", [("Range", spec)])
    assert st == 416 and h["content-range"] == f"bytes */{len(tree[1])}"


@pytest.mark.parametrize("spec", ["bytes=abc", "bytes=5-1", "items=0-1", "bytes", "bytes=-", "bytes=1-2-3",
                                  "bytes=" + ",".join(f"{i}-{i}" for i in range(100))])
def test_malformed_range_is_ignored(server, tree, spec):
    st, h, body = get(server.port, "/video/0.mp4", [("Range", spec)])
    assert st == 200 and body == tree[1]


NINES = "9" * 5000   # longer than int()'s 4300-digit limit: the numbers must be compared, not converted


@pytest.mark.parametrize("spec,expect", [
    ("bytes=0-" + NINES, (0, 1_000_002)),                 # last-pos past the end: clamped
    ("bytes=0-" + "9" * 4300, (0, 1_000_002)),            # just under int()'s limit
    ("bytes=-" + "9" * 4301, (0, 1_000_002)),             # just over it: suffix past the start = everything
    ("bytes=-" + NINES, (0, 1_000_002)),
    ("bytes=" + "0" * 5000 + "10-" + "0" * 5000 + "19", (10, 19)),   # leading zeros are just zeros
    ("bytes=0-99," + NINES + "-", (0, 99)),                # the unsatisfiable one is dropped
    ("bytes=" + NINES + "-", 416),                        # first-pos past the end
    ("bytes=" + NINES + "-" + NINES, 416),
    ("bytes=1000003-" + NINES, 416),
    ("bytes=" + NINES + "-" + "9" * 4999, 200),           # last < first: invalid, ignored
    ("bytes=" + "9" * 25 + "-" + "9" * 21, 200),
])
def test_huge_range_numbers(server, tree, spec, expect):
    """RFC 9110 14.1.1 puts no bound on the digits of a position: huge numbers are numbers, not errors."""
    _, data = tree
    st, h, body = get(server.port, "/video/0.mp4", [("Range", spec)])
    if expect == 416:
        assert st == 416 and h["content-range"] == f"bytes */{len(data)}"
    elif expect == 200:
        assert st == 200 and body == data
    else:
        a, b = expect
        assert st == 206 and h["content-range"] == f"bytes {a}-{b}/{len(data)}" and body == data[a:b + 1]
    assert get(server.port, "/manifest.mpd")[0] == 200


def test_parse_range_huge_numbers_unit():
    assert serve.parse_range("bytes=0-" + NINES, 10) == [(0, 9)]
    assert serve.parse_range("bytes=" + NINES + "-", 10) == []
    assert serve.parse_range("bytes=-" + NINES, 10) == [(0, 9)]
    assert serve.parse_range("bytes=" + "9" * 20 + "-" + "9" * 19, 10) is None
    assert serve.parse_range("bytes=" + "0" * 30 + "5-" + "0" * 30 + "5", 10) == [(5, 5)]
    assert serve.parse_range("bytes=\xa00-1", 10) is None        # only SP and HTAB are whitespace (OWS)
    assert serve.parse_range("bytes=\u0661-\u0662", 10) is None   # only ASCII digits are digits


def test_if_range(server, tree):
    _, h, _ = get(server.port, "/video/0.mp4", method="HEAD")
    st, _, body = get(server.port, "/video/0.mp4", [("Range", "bytes=0-9"), ("If-Range", h["etag"])])
    assert st == 206 and len(body) == 10
    st, _, body = get(server.port, "/video/0.mp4", [("Range", "bytes=0-9"), ("If-Range", '"other"')])
    assert st == 200 and body == tree[1]


def test_empty_file(server):
    st, h, body = get(server.port, "/empty.bin")
    assert st == 200 and body == b"" and h["content-length"] == "0"
    assert get(server.port, "/empty.bin", [("Range", "bytes=0-")])[0] == 416


# ---------------------------------------------------------------------------------------------------- connections

def test_keep_alive_reuses_the_connection(server, tree):
    _, data = tree
    c = Client(server.port)
    for i in range(5):
        c.send(f"GET /video/0.mp4 HTTP/1.1\r\nHost: t\r\nRange: bytes={i * 10}-{i * 10 + 9}\r\n\r\n".encode())
        st, h, body = c.response()
        assert st == 206 and body == data[i * 10:i * 10 + 10] and "connection" not in h
    c.send(b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    st, h, _ = c.response()
    assert st == 200 and h["connection"] == "close" and c.closed()
    c.close()
    # HTTP/1.0 closes unless asked to keep alive
    c = Client(server.port)
    c.send(b"GET /manifest.mpd HTTP/1.0\r\n\r\n")
    assert c.response()[0] == 200 and c.closed()
    c.close()


def test_pipelined_requests_are_answered_in_order(server, tree):
    _, data = tree
    c = Client(server.port)
    reqs = []
    for i in range(20):
        a = i * 37_000
        reqs.append((a, a + 999 + i))
    blob = b"".join(f"GET /video/0.mp4 HTTP/1.1\r\nHost: t\r\nRange: bytes={a}-{b}\r\n\r\n".encode() for a, b in reqs)
    blob += b"HEAD /manifest.mpd HTTP/1.1\r\nHost: t\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\n\r\n"
    blob += b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\n\r\n"
    c.send(blob)   # all at once: one TCP send, the server reads them back to back
    for a, b in reqs:
        st, h, body = c.response()
        assert st == 206 and h["content-range"].startswith(f"bytes {a}-{b}/") and body == data[a:b + 1]
    assert c.response(head_only=True)[:2][0] == 200
    assert c.response()[0] == 404
    assert c.response()[2] == b"<MPD/>\n"
    c.close()


def test_client_reset_does_not_hurt_the_server(server):
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(b"GET /video/0.mp4 HTTP/1.1\r\nHost: t\r\n\r\n")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()   # RST mid-response
    assert get(server.port, "/manifest.mpd")[0] == 200


def _download_rate(port, path):
    """Bits/s of one GET on a fresh connection, counting bytes without keeping them."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    t = time.monotonic()
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
    n, buf = 0, bytearray(1 << 20)
    while True:
        k = s.recv_into(buf)
        if not k:
            break
        n += k
    s.close()
    return n, n * 8 / (time.monotonic() - t)


@pytest.mark.parametrize("path", ["/synthetic/sprint/s0-n4/12.mp4", "/video/0.mp4"])
def test_throughput_on_loopback(server, path):
    n, bps = _download_rate(server.port, path)
    assert n > 1_000_000
    assert bps > 100e6, f"{bps / 1e6:.0f} Mbit/s"    # a DASH client needs tens of Mbit/s per connection


# ---------------------------------------------------------------------------------------------------- safety

TRAVERSALS = [
    "/../secret.txt", "/video/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/..%2fsecret.txt",
    "/..%2Fsecret.txt", "/%2e%2e%2fsecret.txt", "/video/%2e%2e/%2e%2e/secret.txt", "/.%2e/secret.txt",
    "//etc/passwd", "/etc/passwd", "/link-out.txt", "/etc-link/passwd", "/etc-link/hostname",
    "/video/0.mp4%00.txt", "/manifest.mpd\x00", "/..\\secret.txt", "/..%5csecret.txt", "/./manifest.mpd",
    "/%252e%252e/secret.txt", "/../rootsibling/x.txt", "/video/..", "/video/.", "/video/", "/",
    "http://t/../secret.txt", "../secret.txt", "secret.txt", "*", "/%c0%ae%c0%ae/secret.txt",
    "/..%c0%afsecret.txt", "/%", "/%zz",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_path_traversal_is_refused(server, path):
    st, _, body = raw(server.port, f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode("latin-1"))
    assert st in (400, 403, 404), (path, st)
    assert b"TOP-SECRET" not in body and b"root:" not in body
    assert get(server.port, "/manifest.mpd")[0] == 200


def test_resolve_path_unit(tree):
    root = os.path.realpath(tree[0])
    with pytest.raises(serve.HttpError):
        serve.resolve_path(root, ["link-out.txt"])
    with pytest.raises(serve.HttpError):
        serve._decode_target("/a/%2e%2e/b")
    assert serve._decode_target("/a/b%20c") == ["a", "b c"]


MALFORMED = [
    b"GARBAGE\r\n\r\n", b"GET /\r\n\r\n", b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n", b"GET / HTTP/1.1 x\r\n\r\n",
    b"GET / HTTP/9\r\nHost: t\r\n\r\n", b"GET / FTP/1.1\r\nHost: t\r\n\r\n", b"G(T / HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\n\r\n",                                   # no Host
    b"GET /manifest.mpd HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nX-" + b"a" * 20000 + b": 1\r\n\r\n",   # head too long
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nContent-Length: 1, 2\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nBad Header: 1\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nX: a\rb\r\n\r\n",                   # bare CR (RFC 9112 2.2)
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\r\n\r\n",                          # bare CR before CRLF
    b"GET /manifest.mpd HTTP/1.1\rHost: t\r\n\r\n",                             # bare CR as a line end
    b"GET /manifest\r.mpd HTTP/1.1\r\nHost: t\r\n\r\n",                         # bare CR in the target
    b"GET /manifest.mpd HTTP/1.1\r\nHost: [::1\r\n\r\n",                         # invalid Host (RFC 9112 3.2)
    b"GET /manifest.mpd HTTP/1.1\r\nHost: t:99999999\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: user@t\r\n\r\n",
    b"GET /manifest.mpd HTTP/1.1\r\nHost: a b\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40 + b"\r\n\r\n",   # TLS ClientHello-ish
]


@pytest.mark.parametrize("req", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_request_is_400_and_the_server_keeps_serving(server, req):
    st, h, _ = raw(server.port, req)
    assert st == 400, st
    assert h.get("connection") == "close"
    assert get(server.port, "/manifest.mpd")[0] == 200


BAD_AUTHORITIES = [
    "http://[::1/manifest.mpd", "http://x:99999999/manifest.mpd", "http://x:65536/manifest.mpd",
    "http://x:" + "9" * 5000 + "/manifest.mpd", "http://x:8a/manifest.mpd", "http://x:-1/manifest.mpd",
    "http://user@x/manifest.mpd", "http://user:pw@x/manifest.mpd", "http:///manifest.mpd", "http://:80/manifest.mpd",
    "http://[::g]/manifest.mpd", "http://[::1]junk/manifest.mpd", "http://[]/manifest.mpd", "http://x]/manifest.mpd",
    "http://[1.2.3.4]/manifest.mpd", "http://[::1%]/manifest.mpd", "http://x%zz/manifest.mpd",
    "http://x:1:2/manifest.mpd",
    "https://[::1/manifest.mpd", "HTTP://x:99999999/manifest.mpd", "http://[::1?q", "http://x:99999999",
]


@pytest.mark.parametrize("target", BAD_AUTHORITIES)
def test_absolute_form_with_a_bad_authority_is_400(server, target):
    st, h, _ = raw(server.port, f"GET {target} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    assert st == 400 and h.get("connection") == "close", (target, st)
    assert raw(server.port, f"OPTIONS {target} HTTP/1.1\r\nHost: t\r\n\r\n".encode())[0] == 400
    assert get(server.port, "/manifest.mpd")[0] == 200


@pytest.mark.parametrize("target,status", [
    ("http://t/manifest.mpd", 200), ("http://127.0.0.1:65535/manifest.mpd?x=1", 200),
    ("http://[::1]:8080/manifest.mpd", 200), ("HTTP://t:/manifest.mpd", 200),
    ("http://[fe80::1%25eth0]/manifest.mpd", 200), ("http://x:00080/manifest.mpd", 200),
    ("https://my-host.example_1~/manifest.mpd", 200), ("http://t%41/manifest.mpd", 200),
    ("http://t", 404), ("http://t?q", 404), ("http://t/nope", 404),
])
def test_absolute_form_with_a_good_authority(server, target, status):
    assert raw(server.port, f"GET {target} HTTP/1.1\r\nHost: t\r\n\r\n".encode())[0] == status


@pytest.mark.parametrize("host", ["t", "t:8000", "127.0.0.1:8000", "[::1]:8000", "[::1]", "t:", ""])
def test_valid_host_headers(server, host):
    st, _, body = raw(server.port, f"GET /manifest.mpd HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    assert st == 200 and body == b"<MPD/>\n"


@pytest.mark.parametrize("path,status", [
    ("/" + "x" * 300, 404), ("/video/" + "x" * 256, 404), ("/" + "x" * 255, 404), ("/" + "%C3%A9" * 128, 404),
    ("/" + "/".join(["y" * 250] * 20), 404),             # a path longer than PATH_MAX
    ("/manifest.mpd/x", 404),                            # a path through a file (ENOTDIR)
    ("/synthetic/" + "x" * 300 + "/0.mp4", 404),
    ("/" + "x" * 300 + "/%2f", 400), ("/" + "x" * 300 + "/..", 403),   # syntax first, whatever the length
])
def test_long_or_impossible_paths(server, path, status):
    """No file name is longer than NAME_MAX (255 bytes): such a path names nothing, 404 like any missing file."""
    st, h, _ = raw(server.port, f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    assert st == status, (path[:40], st)
    assert get(server.port, "/manifest.mpd")[0] == 200


def test_open_errors_unit():
    import errno
    for e, status in [(errno.ENOENT, 404), (errno.ENAMETOOLONG, 404), (errno.ENOTDIR, 404), (errno.ELOOP, 404),
                      (errno.EACCES, 403), (errno.EPERM, 403), (errno.EMFILE, 503), (errno.EIO, 500)]:
        assert serve._open_error(OSError(e, os.strerror(e))).status == status


@pytest.mark.parametrize("method,status", [("POST", 405), ("PUT", 405), ("DELETE", 405), ("BREW", 501)])
def test_unsupported_methods(server, method, status):
    c = Client(server.port)
    c.send(f"{method} /manifest.mpd HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc".encode()
           + b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\n\r\n")
    st, h, _ = c.response()
    assert st == status
    if status == 405:
        assert "GET" in h["allow"]
    assert c.response()[0] == 200      # the body was skipped, the connection goes on
    c.close()


def test_truncated_and_idle_connections(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"GET /manifest.mpd HTT")
    s.close()
    for _ in range(3):
        socket.create_connection(("127.0.0.1", server.port)).close()
    assert get(server.port, "/manifest.mpd")[0] == 200


class _Log:
    """A thread-safe log sink for a server of a test's own."""
    def __init__(self):
        self.lines = []

    def write(self, s):
        self.lines.append(s)

    def flush(self):
        pass

    def wait_for(self, pattern, timeout=5.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            hit = [ln for ln in "".join(self.lines).splitlines() if re.search(pattern, ln)]
            if hit:
                return hit
            time.sleep(0.02)
        raise AssertionError(f"no log line matches {pattern!r}: {self.lines[-5:]}")


@pytest.fixture
def logged_server(tree):
    log = _Log()
    s = serve.Server(str(tree[0]), port=0, log=log, idle_timeout=5.0)
    s.start()
    s.start_thread()
    yield s, log
    s.stop()


def test_internal_error_is_a_500_and_a_log_line(logged_server, monkeypatch):
    """A bug while answering (here: parse_range raising) gets a 500 and a log line, not a silent close."""
    s, log = logged_server
    def boom(value, total):
        raise ValueError("boom")
    monkeypatch.setattr(serve, "parse_range", boom)
    st, h, body = raw(s.port, b"GET /video/0.mp4 HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1\r\n\r\n")
    assert st == 500 and h["connection"] == "close" and b"boom" not in body
    log.wait_for(r" GET /video/0\.mp4 range=bytes=0-1 500 0 [\d.]+ms internal error ValueError: boom$")
    assert get(s.port, "/manifest.mpd")[0] == 200


def test_aborted_response_is_logged(logged_server):
    s, log = logged_server
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.connect(("127.0.0.1", s.port))
    c.sendall(b"GET /synthetic/has-testbed/7.mp4 HTTP/1.1\r\nHost: t\r\n\r\n")   # 206 MB
    assert c.recv(100).startswith(b"HTTP/1.1 200 ")
    time.sleep(0.1)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    c.close()   # RST mid-body
    [ln] = log.wait_for(r" GET /synthetic/has-testbed/7\.mp4 range=- 200 \d+ [\d.]+ms connection error ")
    assert int(ln.split(" 200 ")[1].split()[0]) < 206_250_801


def test_incomplete_request_head_is_logged(logged_server):
    s, log = logged_server
    c = socket.create_connection(("127.0.0.1", s.port))
    c.sendall(b"GET /manifest.mpd HTT")
    c.close()
    log.wait_for(r" - - range=- - 0 [\d.]+ms incomplete request head \(21 bytes\) at EOF$")
    for _ in range(3):   # connections that send nothing are no failure: no line
        socket.create_connection(("127.0.0.1", s.port)).close()
    assert get(s.port, "/manifest.mpd")[0] == 200
    time.sleep(0.1)
    assert sum("incomplete" in ln for ln in log.lines) == 1 and len(log.lines) == 2


def test_request_log(server):
    get(server.port, "/video/0.mp4", [("Range", "bytes=0-99")])
    status, _, body = get(server.port, "/no-such-file")
    time.sleep(0.05)
    server.log.seek(0)
    lines = server.log.read().splitlines()
    assert any(re.search(r" GET /video/0\.mp4 range=bytes=0-99 206 100 [\d.]+ms$", ln) for ln in lines)
    # an error reply logs the body bytes it sent (it logged 0)
    assert status == 404 and body
    assert any(re.search(rf" GET /no-such-file range=- 404 {len(body)} [\d.]+ms$", ln) for ln in lines), lines


# ---------------------------------------------------------------------------------------------------- synthetic

def test_synthetic_ranges_equal_the_layout(server):
    v = synthetic_video("has-testbed", n_segments=30, seed=7)
    mpd_status, _, mpd = get(server.port, "/synthetic/has-testbed/s7-n30/manifest.mpd")
    assert mpd_status == 200
    ns = {"d": "urn:mpeg:dash:schema:mpd:2011"}
    reps = ET.fromstring(mpd).findall(".//d:Representation", ns)
    assert len(reps) == len(v["bitrates_bps"])
    c = Client(server.port)
    for r, rep in enumerate(reps):
        assert rep.find("d:BaseURL", ns).text == f"{r}.mp4"
        assert rep.find("d:SegmentList/d:Initialization", ns).get("range") == f"0-{INIT_BYTES - 1}"
        urls = rep.findall("d:SegmentList/d:SegmentURL", ns)
        assert len(urls) == 30
        for t in (0, 1, 17, 29):
            a, b = map(int, urls[t].get("mediaRange").split("-"))
            assert a == v["byte_offsets"][t][r] and b - a + 1 == v["sizes"][t][r]
            c.send(f"GET /synthetic/has-testbed/s7-n30/{r}.mp4 HTTP/1.1\r\nHost: t\r\nRange: bytes={a}-{b}\r\n\r\n"
                   .encode())
            st, h, body = c.response()
            assert st == 206 and len(body) == v["sizes"][t][r]
            assert body == serve.pattern_bytes(a, b - a + 1)
        total = v["byte_offsets"][-1][r] + v["sizes"][-1][r]
        c.send(f"HEAD /synthetic/has-testbed/s7-n30/{r}.mp4 HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        assert c.response(head_only=True)[1]["content-length"] == str(total)
    c.close()
    # the default variant is seed 0, 300 segments
    v0 = synthetic_video("has-testbed")
    st, h, body = get(server.port, "/synthetic/has-testbed/3.mp4", [("Range", "bytes=0-799")])
    assert st == 206 and h["content-range"] == f"bytes 0-799/{v0['byte_offsets'][-1][3] + v0['sizes'][-1][3]}"


@pytest.mark.parametrize("path", ["/synthetic/no-such-ladder/0.mp4", "/synthetic/has-testbed/99.mp4",
                                  "/synthetic/has-testbed/s1-n0/0.mp4", "/synthetic/has-testbed/x/0.mp4",
                                  "/synthetic/has-testbed/01.mp4", "/synthetic/"])
def test_synthetic_bad_paths_are_404(server, path):
    assert get(server.port, path)[0] in (400, 404)


# ---------------------------------------------------------------------------------------------------- TCP

def _cc_or_skip(cc):
    try:
        serve.check_cc(cc)
    except ValueError as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_tcp_congestion_is_applied(tree, tmp_path, cc):
    _cc_or_skip(cc)
    info = tmp_path / "tcpinfo.jsonl"
    s = serve.Server(str(tree[0]), port=0, cc=cc, tcp_info_log=str(info), tcp_info_interval=0.01,
                     log=open(os.devnull, "w"))
    s.start()
    s.start_thread()
    try:
        c = Client(s.port)
        c.send(b"GET /video/0.mp4 HTTP/1.1\r\nHost: t\r\n\r\n")
        assert c.response()[0] == 200
        with s._lock:
            conns = list(s.conns.values())
        assert conns and all(serve.get_cc(x.sock) == cc for x in conns)   # read back on the server side
        time.sleep(0.1)
        c.close()
    finally:
        s.stop()
    recs = [json.loads(ln) for ln in info.read_text().splitlines()]
    assert recs and all(r["cc"] == cc for r in recs)
    r = recs[-1]
    for k in ("rtt_us", "rttvar_us", "snd_cwnd", "delivery_rate", "bytes_acked", "min_rtt_us", "bytes_sent"):
        assert k in r
    assert r["bytes_acked"] >= len(tree[1]) and r["snd_cwnd"] > 0 and r["snd_mss"] > 0


def test_parse_tcp_info_layout():
    import struct
    raw = bytearray(serve.TCP_INFO_LEN)
    struct.pack_into("=I", raw, 68, 1234)
    struct.pack_into("=I", raw, 80, 10)
    struct.pack_into("=Q", raw, 120, 99)
    struct.pack_into("=Q", raw, 160, 5555)
    raw[7] = 1
    d = serve.parse_tcp_info(bytes(raw))
    assert (d["rtt_us"], d["snd_cwnd"], d["bytes_acked"], d["delivery_rate"], d["delivery_rate_app_limited"]) == \
        (1234, 10, 99, 5555, 1)
    assert "delivery_rate" not in serve.parse_tcp_info(bytes(raw[:104]))


# ---------------------------------------------------------------------------------------------------- CLI

@pytest.mark.parametrize("args", [["serve"], ["serve", "/no/such/dir"], ["serve", ".", "--port", "x"],
                                  ["serve", ".", "--port", "70000"], ["serve", ".", "--cc", "nosuchcc"],
                                  ["serve", ".", "--cc", "wcubic"],
                                  ["serve", ".", "--tcp-info-interval", "0"], ["serve", ".", "--bind", "203.0.113.9"]])
def test_cli_bad_arguments(args):
    r = qoelab_cli(*args)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    if "nosuchcc" in args:
        assert "modprobe tcp_nosuchcc" in r.stderr, r.stderr
    if "wcubic" in args:   # the simulator's own controller: no module to load
        assert "modprobe" not in r.stderr and "simulated" in r.stderr, r.stderr


@pytest.mark.parametrize("extra", [[], ["--tcp-info-log", "/dev/full"], ["--log", "/dev/full"]])
def test_cli_serves_and_stops_on_ctrl_c(tree, extra):
    # a log on a full device: the close at Ctrl-C was an internal error (exit 1); now a warning, 130
    if extra and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "serve", str(tree[0]), "--port", "0", *extra],
                         cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))
        assert get(port, "/manifest.mpd")[0] == 200
        if extra:
            time.sleep(0.3)   # the log line and the connection's last sample follow the response
        t = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=5)
        assert time.monotonic() - t < 1.0
        assert p.returncode == 130
        err = p.stderr.read()
        assert "internal error" not in err, err
        if extra:
            assert f"warning: {extra[0]}: No space left on device" in err, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# ---------------------------------------------------------------------------------------------------- more

def test_content_pipeline_layout_is_served_segment_by_segment(tmp_path):
    """A directory laid out like `qoelab video prepare` output (manifest.mpd + one fMP4 per rung): every
    segment's mediaRange from the MPD comes back byte-exact."""
    from qoelab.content import mpd
    reps, files = [], {}
    for r, sizes in enumerate([[700, 5000, 4000, 6100], [700, 9000, 8800, 12000]]):
        blob = os.urandom(sum(sizes))
        name = f"rung{r}.mp4"
        (tmp_path / name).write_bytes(blob)
        files[name] = blob
        ends = [sum(sizes[:i + 1]) for i in range(len(sizes))]
        reps.append({"id": r, "file": name, "width": 640, "height": 360, "codec": "avc1.64001e", "timescale": 12800,
                     "init_end": sizes[0], "ranges": list(zip(ends[:-1], ends[1:])), "bandwidth": 1000 * (r + 1)})
    mpd.write(str(tmp_path / "manifest.mpd"), reps, 6.0, 48, 24, 2.0)
    s = serve.Server(str(tmp_path), port=0, log=open(os.devnull, "w"))
    s.start()
    s.start_thread()
    try:
        st, h, body = get(s.port, "/manifest.mpd")
        assert st == 200 and body == (tmp_path / "manifest.mpd").read_bytes()
        c = Client(s.port)
        for rep in mpd.read(str(tmp_path / "manifest.mpd"))["representations"]:
            blob = files[rep["file"]]
            for a, b in [rep["init"]] + rep["segments"]:
                c.send(f"GET /{rep['file']} HTTP/1.1\r\nHost: t\r\nRange: bytes={a}-{b - 1}\r\n\r\n".encode())
                st, h, body = c.response()
                assert st == 206 and body == blob[a:b] and h["content-range"] == f"bytes {a}-{b - 1}/{len(blob)}"
        c.close()
    finally:
        s.stop()


def test_connection_close_is_honoured_on_errors(server):
    c = Client(server.port)
    c.send(b"GET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    st, h, _ = c.response()
    assert st == 404 and h["connection"] == "close" and c.closed()
    c.close()


def test_connection_limit(tree):
    s = serve.Server(str(tree[0]), port=0, log=open(os.devnull, "w"), max_connections=2)
    s.start()
    s.start_thread()
    try:
        held = [Client(s.port) for _ in range(2)]
        for h in held:    # make sure both are accepted and counted
            h.send(b"HEAD /manifest.mpd HTTP/1.1\r\nHost: t\r\n\r\n")
            assert h.response(head_only=True)[0] == 200
        assert raw(s.port, b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\n\r\n")[0] == 503
        for h in held:
            h.close()
        for _ in range(50):
            if not s.conns:
                break
            time.sleep(0.02)
        assert get(s.port, "/manifest.mpd")[0] == 200
    finally:
        s.stop()


def test_binds_only_where_told(server):
    """Bound to 127.0.0.1 only: another loopback address of the same host is refused."""
    assert server._listener.getsockname()[0] == "127.0.0.1" if server._listener.fileno() >= 0 else True
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", server.port), timeout=1).close()


def test_other_http_versions_and_options(server):
    assert raw(server.port, b"GET /manifest.mpd HTTP/2.0\r\nHost: t\r\n\r\n")[0] == 505
    st, h, _ = raw(server.port, b"GET /manifest.mpd HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert st == 200 and h["connection"] == "keep-alive"
    for target in ("/manifest.mpd", "*"):
        st, h, _ = raw(server.port, f"OPTIONS {target} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        assert st == 204 and "HEAD" in h["allow"] and "Range" in h["access-control-allow-headers"]


def test_synthetic_caches_are_bounded_by_size():
    """Caches bounded by count (32 videos of 100,000 segments x 20 rungs) held GBs; by weight, the
    least recently used go first and an entry heavier than the budget is not kept."""
    c = serve._WeightedCache(10)
    built = []

    def build(k):
        built.append(k)
        return k
    for k in ("a", "b", "c"):
        assert c.get(k, lambda k=k: build(k), lambda v: 4) == k
    assert list(c.entries) == ["b", "c"] and c.used == 8          # "a" evicted
    assert c.get("b", lambda: build("x"), lambda v: 4) == "b" and built == ["a", "b", "c"]   # a hit
    assert c.get("big", lambda: build("big"), lambda v: 11) == "big" and "big" not in c.entries
    assert list(c.entries) == ["c", "b"]


def test_synthetic_mpd_text_reads_back_as_the_layout(tmp_path):
    """The MPD is written as text (an XML tree of a large video took ~2 GB): qoelab's MPD loader
    reads it back as the same video, resolutions included (the chunklets ladder has them)."""
    from qoelab.video import load_mpd
    v = serve.synthetic_layout("chunklets", 3, 12)
    p = tmp_path / "m.mpd"
    p.write_bytes(serve.synthetic_mpd(v))
    got = load_mpd(str(p))
    for k in ("bitrates_bps", "sizes", "byte_offsets", "resolutions", "segment_duration"):
        assert got[k] == v[k], k
    ET.fromstring(p.read_bytes())   # well-formed


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_directory_without_its_slash_is_404_and_leaks_nothing(server):
    """`GET /video` got no response and leaked the directory's descriptor (os.fdopen raised before
    the regular-file check): 1,000 such requests left the server answering nothing for good."""
    before = _open_fds()
    for _ in range(50):
        assert get(server.port, "/video")[0] == 404
        assert get(server.port, "/video", method="HEAD")[0] == 404
    time.sleep(0.2)
    assert _open_fds() <= before + 2, (before, _open_fds())
    assert get(server.port, "/video/0.mp4", [("Range", "bytes=0-9")])[0] == 206


def test_tls_or_binary_gets_400_at_once(server):
    """A TLS ClientHello waited for a blank line until the idle timeout (docs: binary -> 400)."""
    t0 = time.monotonic()
    status, _, body = raw(server.port, bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]) + os.urandom(60))
    assert status == 400 and b"not an HTTP/1.x request" in body and time.monotonic() - t0 < 2


def test_cors_preflight_passes_the_cors_check(server):
    c = Client(server.port)
    c.send(b"OPTIONS /video/0.mp4 HTTP/1.1\r\nHost: t\r\nOrigin: http://other\r\n"
           b"Access-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: range\r\n\r\n")
    status, hdrs, _ = c.response(head_only=True)
    c.close()
    assert status == 204 and hdrs["access-control-allow-origin"] == "*" and "content-length" not in hdrs


def test_the_idle_timeout_is_per_wait_not_per_body(tree, tmp_path):
    """A steady reader slower than body / timeout was cut off: sendall's timeout covers the whole
    call (a 17 MB MPD at 1 MB/s, 5 s timeout, ended at 8.6 MB). Here: a file and a synthetic MPD
    (sent from memory) of 1 and 17.7 MB, a 0.3 s timeout, about a second to read each."""
    log = open(tmp_path / "log", "w+")
    s = serve.Server(str(tree[0]), port=0, log=log, max_connections=8, idle_timeout=0.3)
    s.start()
    s.start_thread()
    try:
        for path, chunk in (("/video/0.mp4", 16384), ("/synthetic/chunklets/s0-n15000/manifest.mpd", 131072)):
            c = Client(s.port)
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, chunk)
            c.send(f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
            got = b""
            while True:
                time.sleep(0.01)
                d = c.sock.recv(chunk)
                if not d:
                    break
                got += d
            c.close()
            head, body = got.split(b"\r\n\r\n", 1)
            n = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            assert n > 900_000 and len(body) == n, (path, n, len(body))
            if path.endswith(".mp4"):
                assert body == tree[1]
    finally:
        s.stop()
        log.close()


def test_egregious_overlapping_ranges_are_served_whole(server, tree):
    """RFC 9110 14.2: 64 x "0-" of a 64 MiB file was a 4 GB multipart response."""
    st, h, body = get(server.port, "/video/0.mp4", [("Range", "bytes=" + ",".join(["0-"] * 64))])
    assert st == 200 and body == tree[1]
    st, _, _ = get(server.port, "/video/0.mp4", [("Range", "bytes=0-99,50-60,500-599")])   # twice: served
    assert st == 206


def test_if_range_date_of_a_file_changed_this_second_is_weak(tree):
    """RFC 9110 8.8.2.2/13.1.5: a Last-Modified less than a second before the response is weak; a
    file rewritten within that second was spliced into the client's copy."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "f.bin")
        with open(p, "wb") as f:
            f.write(b"A" * 1000)
        log = open(os.path.join(d, "log"), "w+")
        s = serve.Server(d, port=0, log=log, max_connections=8, idle_timeout=5.0)
        s.start()
        s.start_thread()
        try:
            _, h, _ = get(s.port, "/f.bin", method="HEAD")
            with open(p, "wb") as f:
                f.write(b"B" * 1000)
            st, _, body = get(s.port, "/f.bin", [("Range", "bytes=0-9"), ("If-Range", h["last-modified"])])
            assert st == 200 and body == b"B" * 1000    # not 206 with B bytes for an A copy
            os.utime(p, (time.time() - 10, time.time() - 10))
            _, h, _ = get(s.port, "/f.bin", method="HEAD")
            st, _, body = get(s.port, "/f.bin", [("Range", "bytes=0-9"), ("If-Range", h["last-modified"])])
            assert st == 206 and body == b"B" * 10
        finally:
            s.stop()
            log.close()


def test_expect_100_continue(server):
    """RFC 9110 10.1.1 (a MUST): an immediate final status when the head decides it, else 100."""
    c = Client(server.port)
    c.send(b"POST /manifest.mpd HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
    status, hdrs, _ = c.response()            # before any body byte was sent
    assert status == 405 and hdrs.get("connection") == "close"
    c.close()
    c = Client(server.port)
    c.send(b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
    while b"\r\n\r\n" not in c.buf:
        c._fill()
    assert c.buf.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
    c.buf = c.buf[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
    c.send(b"0123456789")
    status, _, body = c.response()
    assert status == 200 and body == b"<MPD/>\n"
    c.close()


def _own_server(tree, tmp_path, **kw):
    log = open(tmp_path / "log", "w+")
    s = serve.Server(str(tree[0]), port=0, log=log, max_connections=8, **kw)
    s.start()
    s.start_thread()
    return s, log


def test_a_trickling_request_head_times_out(tree, tmp_path):
    """1 byte every 3 s kept a connection open for ever (the idle timeout re-armed on each byte)."""
    s, log = _own_server(tree, tmp_path, idle_timeout=0.6)
    try:
        c = Client(s.port)
        t0 = time.monotonic()
        status = None
        for ch in b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 100:
            try:
                c.send(bytes([ch]))
            except OSError:
                break
            time.sleep(0.15)
            c.sock.settimeout(0.01)
            try:
                d = c.sock.recv(4096)
                if d:
                    status = d.split(b" ")[1]
                    break
            except (TimeoutError, BlockingIOError):
                pass
        c.close()
        assert status == b"408" and time.monotonic() - t0 < 3, (status, time.monotonic() - t0)
    finally:
        s.stop()
        log.close()


def test_an_error_response_survives_the_unread_body(tree, tmp_path):
    """A 400 for a 3 MB body was followed by a reset that destroyed it before the client read it
    (10 of 20 tries): the server now closes in stages."""
    import threading
    s, log = _own_server(tree, tmp_path, idle_timeout=5.0)
    try:
        for _ in range(10):
            c = Client(s.port)
            head = b"GET /manifest.mpd HTTP/1.1\r\nHost: t\r\nContent-Length: 3000000\r\n\r\n"

            def push():
                try:
                    c.sock.sendall(head + b"x" * 3_000_000)
                except OSError:
                    pass
            t = threading.Thread(target=push)
            t.start()
            time.sleep(0.05)
            status, _, body = c.response()
            t.join(5)
            c.close()
            assert status == 400 and b"too large" in body
    finally:
        s.stop()
        log.close()


def test_http10_keep_alive_is_said_after_an_error_too(server):
    c = Client(server.port)
    c.send(b"GET /nope HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /manifest.mpd HTTP/1.0\r\n\r\n")
    status, hdrs, _ = c.response()
    assert status == 404 and hdrs.get("connection") == "keep-alive"
    assert c.response()[0] == 200
    c.close()


@pytest.mark.parametrize("target", [b"/manifest\t.mpd", b"/manifest\x7f.mpd", b"/a\x01b"])
def test_control_characters_in_the_target_are_400(server, target):
    status, _, body = raw(server.port, b"GET " + target + b" HTTP/1.1\r\nHost: t\r\n\r\n")
    assert status == 400 and b"control character" in body, (status, body)
