"""HAR 1.2 import (docs/models/pageload.md, "Model": workloads come from HAR files).

Per entry (``log.entries``): start = ``startedDateTime`` (ISO 8601; without a zone, UTC) relative
to the earliest entry; finish = start + ``time`` (ms); origin = the host (and explicit port) of
``request.url``; TLS = the URL's scheme is https; size = the response's ``Content-Length`` header
(else ``response.bodySize``) + ``response.headersSize`` (-1, HAR's "unknown", counts 0). Entries
whose size is < 1 byte are dropped (counted in ``Page.dropped``), as the public simulator does.
Limits: a size (each of ``Content-Length``, ``bodySize``, ``headersSize``, and their sum) of at
most 2^34 bytes (16 GiB), as the model's core requires (it counts nano-bytes in 64 bits); ``time`` at most 100 years in ms
(``qoelab.units.MAX_DURATION_NS``, the bound of every duration qoelab reads); integers of at
most 4300 digits and JSON nested no deeper than the parser's limit (``qoelab.errors.json_input``).

Dependencies (dissertation §3.3.3, the public simulator's heuristic): sort by start time (ties:
file order); every entry becomes the child of the entry that finished latest among those that
finished no later than it started (ties: the one started last); if none had finished it is
enabled at t = 0. The result is a tree.

Every problem raises :class:`qoelab.errors.InputError` naming the file and the entry
(``page.har:log.entries[3].startedDateTime: expected ..., found ...``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from urllib.parse import urlsplit

from qoelab.errors import InputError, int_input, json_input, json_kind, read_input
from qoelab.pageload.page import Obj, Page

MAX_ENTRIES = 100_000   # the packet model's page limit (scenario.MAX_PAGE_OBJECTS); the flow-level model takes 20,000
from qoelab.units import MAX_DURATION_NS

# The largest object the model's core accepts (crates/qoelab-core/src/pageload/page.rs).
MAX_SIZE = 1 << 34
MAX_TIME_MS = MAX_DURATION_NS // 1_000_000  # 100 years
_SIZE_WHAT = "a size in bytes (>= 0 and <= 2^34, or -1 for unknown)"


def _shown(v) -> str:
    """A short one-line rendering of a JSON value for an error message."""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, int) and not isinstance(v, bool):  # (str() of more than 4300 digits raises)
        return str(v) if -10**40 < v < 10**40 else "an integer of more than 40 digits"
    try:
        t = json.dumps(v)
    except (ValueError, RecursionError):
        t = type(v).__name__
    return t if len(t) <= 60 else t[:57] + "..."


def _kind(v) -> str:
    """What a JSON value is, in JSON's words (not Python's type names)."""
    return json_kind(v, bool_values=True)


def _num(v, path, where, what="a number"):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise InputError(path, where, what, _shown(v))
    return v


def _size_field(v, path, where):
    """HAR size: an integer >= -1 (-1 = unknown -> 0), at most 2^34."""
    v = _num(v, path, where, _SIZE_WHAT)
    if v < -1 or v > MAX_SIZE or v != int(v):
        raise InputError(path, where, _SIZE_WHAT, _shown(v))
    return max(int(v), 0)


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def parse_date(text, path, where) -> int:
    """ISO 8601 -> integer microseconds since 1970 (naive times are UTC); exact, so that the
    dependency heuristic's comparisons do not suffer from float rounding."""
    if not isinstance(text, str):
        raise InputError(path, where, "an ISO 8601 date", json.dumps(text)[:60])
    t = text.strip()
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    try:
        d = _dt.datetime.fromisoformat(t)
    except ValueError:
        raise InputError(path, where, "an ISO 8601 date like 2015-12-07T10:00:00.123+01:00",
                         repr(text)[:60]) from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return (d - _EPOCH) // _dt.timedelta(microseconds=1)


def entry_size(resp: dict, path: str, where: str) -> int:
    """Content-Length (else bodySize) + headersSize, in bytes."""
    body = None
    headers = resp.get("headers", [])
    if not isinstance(headers, list):
        raise InputError(path, where + ".headers", "a list", _kind(headers))
    for k, h in enumerate(headers):
        name = h.get("name") if isinstance(h, dict) else None
        if isinstance(name, str) and name.lower() == "content-length":
            v = h.get("value", "")
            hw = f"{where}.headers[{k}]"
            if isinstance(v, int) and not isinstance(v, bool):
                body = v
            else:
                body = int_input(str(v).strip() if isinstance(v, str) else _shown(v), path, hw,
                                 "an integer Content-Length")
            if body < 0 or body > MAX_SIZE:
                raise InputError(path, hw, "a Content-Length >= 0 and <= 2^34", _shown(body))
            break
    if body is None:
        if "bodySize" not in resp:
            raise InputError(path, where + ".bodySize", "a size in bytes (>= 0, or -1 for unknown)", "nothing")
        body = _size_field(resp["bodySize"], path, where + ".bodySize")
    hs = _size_field(resp.get("headersSize", -1), path, where + ".headersSize")
    if body + hs > MAX_SIZE:
        raise InputError(path, where, "a size (body + headersSize) <= 2^34 bytes", str(body + hs))
    return body + hs


def dependencies(starts: list[int], finishes: list[int]) -> list[int | None]:
    """Parents by the heuristic, for entries already sorted by start (times as integers).

    Entry ``j``'s parent is the ``i < j`` with ``finishes[i] <= starts[j]`` and the largest
    ``(finishes[i], i)``. As ``starts`` does not decrease, an entry once a candidate stays one, so a
    running maximum suffices: entries join it in order of finish (O(n log n) for the sort). An
    entry that has finished by ``starts[j]`` but is not before ``j`` (same start, zero duration)
    joins right after its own turn."""
    n = len(starts)
    by_finish = sorted(range(n), key=finishes.__getitem__)
    parents: list[int | None] = []
    finished = [False] * n  # finished by the current start, not yet a candidate (index >= j)
    best = None
    k = 0
    for j, s in enumerate(starts):
        while k < n and finishes[by_finish[k]] <= s:
            i = by_finish[k]
            k += 1
            if i >= j:
                finished[i] = True
            elif best is None or (finishes[i], i) > (finishes[best], best):
                best = i
        parents.append(best)
        if finished[j] and (best is None or (finishes[j], j) > (finishes[best], best)):
            best = j
    return parents


def load_har(path: str, name: str | None = None) -> Page:
    """Read a HAR file into a :class:`Page` (objects sorted by start, parents set)."""
    raw = read_input(path, "a HAR file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, f"byte {e.start}", "a HAR file (UTF-8 JSON)", "invalid UTF-8") from None
    doc = json_input(text, path, "a HAR file (valid JSON)")
    return page_from_har(doc, path, name)


def page_from_har(doc, path: str = "<har>", name: str | None = None) -> Page:
    if not isinstance(doc, dict) or not isinstance(doc.get("log"), dict):
        raise InputError(path, "log", "a HAR object with a \"log\"", _kind(doc) if not isinstance(doc, dict)
                         else "no \"log\"")
    entries = doc["log"].get("entries")
    if not isinstance(entries, list):
        raise InputError(path, "log.entries", "a list of entries", "nothing" if entries is None
                         else _kind(entries))
    if not entries:
        raise InputError(path, "log.entries", "at least one entry", "an empty list")
    if len(entries) > MAX_ENTRIES:   # (before building a page: 1.84 x 10^6 entries ran out of memory)
        raise InputError(path, "log.entries", f"a page of at most {MAX_ENTRIES:,} objects", f"{len(entries):,}")
    rows = []
    dropped = 0
    for k, e in enumerate(entries):
        where = f"log.entries[{k}]"
        if not isinstance(e, dict):
            raise InputError(path, where, "an object", _kind(e))
        start = parse_date(e.get("startedDateTime"), path, where + ".startedDateTime")
        time_what = "a duration in ms (>= 0 and <= 100 years)"
        dur = _num(e.get("time"), path, where + ".time", time_what)
        if dur < 0 or dur > MAX_TIME_MS:
            raise InputError(path, where + ".time", time_what, _shown(dur))
        req = e.get("request")
        url = req.get("url") if isinstance(req, dict) else None
        if not isinstance(url, str):
            raise InputError(path, where + ".request.url", "a URL", "nothing" if url is None else repr(url)[:60])
        try:
            u = urlsplit(url.strip())
            hostname = u.hostname
        except ValueError as err:  # "Invalid IPv6 URL", NFKC netloc characters
            raise InputError(path, where + ".request.url", f"a valid URL ({str(err)[:60]})", repr(url)[:60]) from None
        if u.scheme.lower() not in ("http", "https") or not hostname:
            raise InputError(path, where + ".request.url", "an http(s) URL", repr(url)[:60])
        try:
            port = u.port
        except ValueError:
            raise InputError(path, where + ".request.url", "a URL with a valid port", repr(url)[:60]) from None
        host = hostname.lower() + (f":{port}" if port is not None else "")
        resp = e.get("response")
        if not isinstance(resp, dict):
            raise InputError(path, where + ".response", "an object", "nothing" if resp is None else _kind(resp))
        size = entry_size(resp, path, where + ".response")
        if size < 1:
            dropped += 1
            continue
        rows.append((start, k, start + int(round(dur * 1000.0)), size, host, u.scheme.lower() == "https", url))
    if not rows:
        raise InputError(path, "log.entries", "at least one entry with a size >= 1 byte",
                         f"{dropped} entries of size 0")
    rows.sort(key=lambda r: (r[0], r[1]))
    t0 = rows[0][0]
    starts = [r[0] - t0 for r in rows]  # integer microseconds
    fins = [r[2] - t0 for r in rows]
    parents = dependencies(starts, fins)
    if name is None:
        name = os.path.splitext(os.path.basename(path))[0]
    objs = [Obj(size=r[3], host=r[4], tls=r[5], parent=p, url=r[6], har_start_s=s / 1e6, har_finish_s=f / 1e6)
            for r, p, s, f in zip(rows, parents, starts, fins)]
    return Page(name=name, objects=objs, dropped=dropped)


def _timings_ms(o: Obj, dur_ms: float) -> dict:
    t = o.timings
    if not t:
        return {"send": 0, "wait": 0, "receive": dur_ms}
    ms = {k: round(t[k] * 1000.0, 3) for k in ("blocked", "connect", "wait", "receive")}
    # the phases add up to the entry's time (HAR 1.2); rounding goes to "receive"
    ms["receive"] = round(dur_ms - ms["blocked"] - ms["connect"] - ms["wait"], 3)
    return {"blocked": ms["blocked"], "dns": -1, "connect": ms["connect"], "ssl": -1, "send": 0, "wait": ms["wait"],
            "receive": ms["receive"]}


def har_doc(page: Page, t0_iso: str = "2015-12-07T10:00:00+00:00", creator: str = "qoelab") -> dict:
    """``page`` as a HAR 1.2 document (the dict :func:`write_har` writes): timings are the objects'
    ``har_start_s`` / ``har_finish_s`` at microsecond resolution (sizes: Content-Length = size -
    headersSize), with the phases of ``Obj.timings`` where recorded (else all of the time is
    "receive")."""
    base = _dt.datetime.fromisoformat(t0_iso)
    entries = []
    for i, o in enumerate(page.objects):
        hs = min(300, o.size - 1)
        body = o.size - hs
        url = o.url or f"{'https' if o.tls else 'http'}://{o.host}/o{i}"
        st_us = int(round(o.har_start_s * 1e6))
        dur_ms = (int(round(o.har_finish_s * 1e6)) - st_us) / 1000.0
        st = base + _dt.timedelta(microseconds=st_us)
        entries.append({
            "startedDateTime": st.isoformat(timespec="microseconds"),
            "time": dur_ms,
            "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1", "headers": [], "queryString": [],
                        "cookies": [], "headersSize": -1, "bodySize": 0},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "Content-Length", "value": str(body)}], "cookies": [],
                         "content": {"size": body, "mimeType": "application/octet-stream"},
                         "redirectURL": "", "headersSize": hs, "bodySize": body},
            "cache": {}, "timings": _timings_ms(o, dur_ms),
        })
    return {"log": {"version": "1.2", "creator": {"name": creator, "version": "1"}, "pages": [], "entries": entries}}


def write_har(page: Page, path: str, t0_iso: str = "2015-12-07T10:00:00+00:00", creator: str = "qoelab") -> None:
    """Write :func:`har_doc` of ``page`` to ``path`` (atomically)."""
    doc = har_doc(page, t0_iso, creator)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)
