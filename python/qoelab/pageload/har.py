"""HAR 1.2 import (docs/models/pageload.md, "Workloads").

Per entry (``log.entries``): start = ``startedDateTime`` (ISO 8601; without a zone, UTC) relative
to the earliest entry; finish = start + ``time`` (ms); origin = the host (and explicit port) of
``request.url``; TLS = the URL's scheme is https; size = the response's ``Content-Length`` header
(else ``response.bodySize``) + ``response.headersSize`` (-1, HAR's "unknown", counts 0). Entries
whose size is < 1 byte are dropped (counted in ``Page.dropped``), as the public simulator does.

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

from qoelab.errors import InputError
from qoelab.pageload.page import Obj, Page


def _num(v, path, where, what="a number"):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise InputError(path, where, what, json.dumps(v)[:60] if not isinstance(v, float) else repr(v))
    return v


def _size_field(v, path, where):
    """HAR size: an integer >= -1 (-1 = unknown -> 0)."""
    v = _num(v, path, where, "a size in bytes (>= 0, or -1 for unknown)")
    if v < -1 or v != int(v):
        raise InputError(path, where, "a size in bytes (>= 0, or -1 for unknown)", repr(v))
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
        raise InputError(path, where + ".headers", "a list", type(headers).__name__)
    for k, h in enumerate(headers):
        if isinstance(h, dict) and str(h.get("name", "")).lower() == "content-length":
            try:
                body = int(str(h.get("value", "")).strip())
            except ValueError:
                raise InputError(path, f"{where}.headers[{k}]", "an integer Content-Length",
                                 repr(h.get("value"))[:60]) from None
            if body < 0:
                raise InputError(path, f"{where}.headers[{k}]", "a Content-Length >= 0", str(body))
            break
    if body is None:
        if "bodySize" not in resp:
            raise InputError(path, where + ".bodySize", "a size in bytes (>= 0, or -1 for unknown)", "nothing")
        body = _size_field(resp["bodySize"], path, where + ".bodySize")
    hs = _size_field(resp.get("headersSize", -1), path, where + ".headersSize")
    return body + hs


def dependencies(starts: list[int], finishes: list[int]) -> list[int | None]:
    """Parents by the heuristic, for entries already sorted by start (times as integers)."""
    parents: list[int | None] = []
    for j, s in enumerate(starts):
        best = None
        for i in range(j):
            if finishes[i] <= s and (best is None or finishes[i] >= finishes[best]):
                best = i
        parents.append(best)
    return parents


def load_har(path: str, name: str | None = None) -> Page:
    """Read a HAR file into a :class:`Page` (objects sorted by start, parents set)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(path, None, message=f"cannot read: {e.strerror or e}") from None
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        where = str(getattr(e, "lineno", "")) or None
        raise InputError(path, where, "a HAR file (JSON)", f"invalid JSON ({getattr(e, 'msg', e)})") from None
    return page_from_har(doc, path, name)


def page_from_har(doc, path: str = "<har>", name: str | None = None) -> Page:
    if not isinstance(doc, dict) or not isinstance(doc.get("log"), dict):
        raise InputError(path, "log", "a HAR object with a \"log\"", type(doc).__name__ if not isinstance(doc, dict)
                         else "no \"log\"")
    entries = doc["log"].get("entries")
    if not isinstance(entries, list):
        raise InputError(path, "log.entries", "a list of entries", "nothing" if entries is None
                         else type(entries).__name__)
    if not entries:
        raise InputError(path, "log.entries", "at least one entry", "an empty list")
    rows = []
    dropped = 0
    for k, e in enumerate(entries):
        where = f"log.entries[{k}]"
        if not isinstance(e, dict):
            raise InputError(path, where, "an object", type(e).__name__)
        start = parse_date(e.get("startedDateTime"), path, where + ".startedDateTime")
        dur = _num(e.get("time"), path, where + ".time", "a duration in ms (>= 0)")
        if dur < 0:
            raise InputError(path, where + ".time", "a duration in ms (>= 0)", repr(dur))
        req = e.get("request")
        url = req.get("url") if isinstance(req, dict) else None
        if not isinstance(url, str):
            raise InputError(path, where + ".request.url", "a URL", "nothing" if url is None else repr(url)[:60])
        u = urlsplit(url.strip())
        if u.scheme.lower() not in ("http", "https") or not u.hostname:
            raise InputError(path, where + ".request.url", "an http(s) URL", repr(url)[:60])
        try:
            port = u.port
        except ValueError:
            raise InputError(path, where + ".request.url", "a URL with a valid port", repr(url)[:60]) from None
        host = u.hostname.lower() + (f":{port}" if port is not None else "")
        resp = e.get("response")
        if not isinstance(resp, dict):
            raise InputError(path, where + ".response", "an object", "nothing" if resp is None else type(resp).__name__)
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
