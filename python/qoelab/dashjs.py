"""``qoelab dashjs``: dash.js 5 in headless Chromium as a real client (docs/realnet.md, "dash.js").

``browser/play.mjs`` (playwright-core, pinned in ``browser/package.json``; ``make setup-real``
installs it with Debian's Chromium) opens a page on the server's own origin (intercepted: only the
MPD and the segments cross the network), plays the MPD with the scenario's ABR settings and prints
dash.js's events as JSON lines; this module turns them into the simulator's schema: a client
summary (docs/metrics.md) and a ``segments`` table (docs/tables.md), so that a dash.js session and a
simulated one can be put side by side. Run it behind the emulated bottleneck with ``qoelab link``::

    qoelab link --rate 4Mbps --rtt 40ms --server "qoelab serve out/enc --bind 10.77.0.1" -- \\
        qoelab dashjs http://10.77.0.1:8000/manifest.mpd --duration 60 --out out/dashjs
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from qoelab.errors import InputError, json_kind

#: --abr -> dash.js 5 ``streaming.abr.rules`` actives (the other rules keep their defaults).
ABR = {
    "dynamic": {"throughputRule": True, "bolaRule": True},     # dash.js's default: DYNAMIC switches between them
    "bola": {"throughputRule": False, "bolaRule": True},
    "throughput": {"throughputRule": True, "bolaRule": False},
    "l2a": {"throughputRule": False, "bolaRule": False, "l2ARule": True},
    "lolp": {"throughputRule": False, "bolaRule": False, "loLPRule": True},
}


def browser_dir() -> str:
    """Where play.mjs and its node_modules are: $QOELAB_BROWSER_DIR, else browser/ of the checkout."""
    env = os.environ.get("QOELAB_BROWSER_DIR")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "browser")


def find_chromium() -> str | None:
    for c in (os.environ.get("QOELAB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


def missing() -> str | None:
    """Why dash.js in Chromium cannot run here (None if it can)."""
    if not shutil.which("node"):
        return "node is not installed (apt-get install nodejs, then make setup-real)"
    if not find_chromium():
        return "Chromium is not installed (make setup-real, or apt-get install chromium)"
    d = browser_dir()
    for need in ("play.mjs", "player.html", os.path.join("node_modules", "dashjs"),
                 os.path.join("node_modules", "playwright-core")):
        if not os.path.exists(os.path.join(d, need)):
            return f"{os.path.join(d, need)} is missing (make setup-real installs the pinned dash.js and playwright-core)"
    return None


def settings(abr: str, buffer_s: float | None = None, stable_buffer_s: float | None = None) -> dict:
    if abr not in ABR:
        raise InputError(None, "--abr", "one of " + ", ".join(ABR), repr(abr))
    rules = {k: {"active": v} for k, v in ABR[abr].items()}
    s = {"streaming": {"abr": {"rules": rules},
                       # static content: no clock synchronization (its default source is a public server)
                       "utcSynchronization": {"enabled": False}}}
    buf = {}
    if buffer_s is not None:
        buf["bufferTimeAtTopQuality"] = buffer_s
        buf["bufferTimeAtTopQualityLongForm"] = buffer_s
    if stable_buffer_s is not None:
        buf["bufferTimeDefault"] = stable_buffer_s
    if buf:
        s["streaming"]["buffer"] = buf
    return s


_KNOWN: dict | None = None
#: dash.js's default settings, as the installed dash.js gives them (``--write-settings`` below).
SETTINGS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dashjs_settings.json")


def known_settings() -> dict:
    """dash.js's default settings (``python/qoelab/dashjs_settings.json``: ``version``, ``settings``),
    written from the installed dash.js by ``python -m qoelab.dashjs --write-settings``."""
    global _KNOWN
    if _KNOWN is None:
        with open(SETTINGS_FILE) as f:
            _KNOWN = json.load(f)
    return _KNOWN


def _json_kind(v) -> str:
    return json_kind(v, obj="a settings object")


def check_setting(key: str, val, item: str) -> None:
    """Refuse a key that dash.js does not have, or a value of another JSON kind than its default's
    (null defaults take anything). dash.js ignores an unknown key and breaks on a wrong kind (a probe:
    ``streaming=5`` stopped the player at 0 s, and the command exited 0)."""
    known = known_settings()
    a_setting = f"a dash.js {known['version']} setting (python/qoelab/dashjs_settings.json)"
    node, parts = known["settings"], key.split(".")
    for i, p in enumerate(parts):
        if not isinstance(node, dict) or p not in node:
            raise InputError(None, "--set", a_setting, ".".join(parts[:i + 1]) + f" in {item!r}")
        node = node[p]

    def kind_ok(default, v, where):
        if default is None or v is None and not isinstance(default, dict):
            return
        if isinstance(default, dict):
            if not isinstance(v, dict):
                raise InputError(None, "--set", f"{where}: a settings object", _json_kind(v) + f" in {item!r}")
            for k, x in v.items():
                if k not in default and default:
                    raise InputError(None, "--set", a_setting, f"{where}.{k} in {item!r}")
                if k in default:
                    kind_ok(default[k], x, f"{where}.{k}")
            return
        if _json_kind(default) != _json_kind(v):
            raise InputError(None, "--set", f"{where}: {_json_kind(default)} (its default: {json.dumps(default)[:40]})",
                             f"{_json_kind(v)} in {item!r}")
    kind_ok(node, val, key)


def apply_sets(s: dict, sets: list[str]) -> dict:
    """``KEY=VALUE`` overrides of dash.js settings (dotted keys under the settings object, JSON values:
    ``streaming.abr.throughput.useResourceTimingApi=false``). A key dash.js does not have, or a value of
    another kind than the setting's default, is refused (:func:`check_setting`)."""
    for item in sets or []:
        key, sep, raw = item.partition("=")
        if not sep or not key or any(not p for p in key.split(".")):
            raise InputError(None, "--set", "KEY=VALUE with a dotted dash.js settings key", repr(item))
        try:
            val = json.loads(raw)
        except ValueError:
            val = raw
        check_setting(key, val, item)
        node = s
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise InputError(None, "--set", f"{p} to be a settings object", repr(item))
        node[parts[-1]] = val
    return s


def play(mpd: str, duration_s: float, abr: str = "dynamic", buffer_s: float | None = None,
         stable_buffer_s: float | None = None, sample_ms: int = 250, log=None, sets=None) -> list[dict]:
    """Play ``mpd`` for at most ``duration_s`` (or to its end); dash.js's events, in order."""
    why = missing()
    if why:
        raise InputError(None, None, message=f"dash.js in Chromium cannot run: {why}")
    _wait_for_server(mpd)
    tmpdir = browser_tmpdir()   # the browser's temporary files, removed below
    try:
        return _play(mpd, duration_s, abr, buffer_s, stable_buffer_s, sample_ms, log, sets, tmpdir)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def browser_tmpdir(kind: str = "dashjs") -> str:
    """A new folder for one browser's temporary files (playwright's profile, Chromium's own), which
    the caller removes: ``qoelab-<kind>-<pid>-*``. Chromium keeps a Unix socket in it
    (`org.chromium.Chromium.*/SingletonSocket`, at most 107 bytes of path: a longer one is fatal), so
    a $TMPDIR longer than 32 characters is passed over for /tmp. Folders of this kind left by a
    process that no longer exists (killed with SIGKILL: no cleanup ran) are removed first."""
    base = tempfile.gettempdir()
    if len(base) > 32:
        base = "/tmp"
    from qoelab.outdir import own_tmp_prefix
    return tempfile.mkdtemp(prefix=own_tmp_prefix(kind, base), dir=base)


def _play(mpd, duration_s, abr, buffer_s, stable_buffer_s, sample_ms, log, sets, tmpdir) -> list[dict]:
    cfg = {"mpd": mpd, "duration_s": duration_s,
           "settings": apply_sets(settings(abr, buffer_s, stable_buffer_s), sets),
           "sample_ms": sample_ms, "chromium": find_chromium(), "tmpdir": tmpdir}
    p = subprocess.Popen(["node", os.path.join(browser_dir(), "play.mjs"), json.dumps(cfg)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=browser_dir(), start_new_session=True)
    events = []
    try:
        for line in p.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            events.append(ev)
            if log and ev.get("ev") in ("startup", "stall_start", "error", "fatal"):
                log(f"dash.js: {ev['ev']} at {ev.get('t', 0):.2f} s" + (f": {ev.get('error')}" if "error" in ev else ""))
        p.wait(timeout=30)
    except BaseException:
        _stop(p)
        raise
    fatal = [e for e in events if e.get("ev") == "fatal"]
    if fatal or p.returncode not in (0, None):
        err = fatal[0]["error"] if fatal else _stderr_line(p.stderr.read())
        raise RuntimeError(f"dash.js in Chromium failed: {err}")
    return events


def _stderr_line(text: str) -> str:
    """The telling line of node's stderr: Chromium's FATAL line or the thrown error, not node's
    closing version banner."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for key in ("FATAL", "Error:"):
        hit = [ln for ln in lines if key in ln]
        if hit:
            return hit[0][:500]
    lines = [ln for ln in lines if not ln.startswith("Node.js v")]
    return (lines or ["?"])[-1][:500]


def _wait_for_server(url: str, timeout_s: float = 15.0) -> None:
    """Wait until the server's port accepts connections (a server started beside the client, as
    under `qoelab link --server`, needs a moment); then dash.js's own retries are not spent on it."""
    import socket
    from urllib.parse import urlsplit
    u = urlsplit(url)
    host, port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError as e:
            if time.monotonic() > deadline:
                raise InputError(None, "MPD", message=f"{host}:{port} does not accept connections after "
                                                      f"{timeout_s:g} s: {e.strerror or e}") from None
            time.sleep(0.1)


def _stop(p) -> None:
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=1.0)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


#: A `waiting`/`playing` pair shorter than this is the browser's media pipeline catching up (seen under
#: CPU load: 1 ms), not an empty buffer; it is counted in `micro_stalls`, not in the stalls.
MIN_STALL_S = 0.05


def summarize(events: list[dict], name: str = "dashjs") -> tuple[dict, list[dict]]:
    """(client summary with the keys of docs/metrics.md that a dash.js session defines, segments
    rows). Rungs are ranked by bandwidth (0 = lowest), as in the simulator."""
    ladder = next((e for e in events if e.get("ev") == "ladder"), None)
    bitrates = sorted(ladder["bitrates"]) if ladder and ladder.get("bitrates") else []
    rung_of = {b: i for i, b in enumerate(bitrates)}
    t_load = next((e["t"] for e in events if e.get("ev") == "load"), 0.0)
    t_start = next((e["t"] for e in events if e.get("ev") == "startup"), None)
    t_end = max((e.get("t", 0.0) for e in events), default=0.0)
    rows, samples = [], [(e["t"], e.get("buffer_s")) for e in events if e.get("ev") == "sample"]
    for e in events:
        if e.get("ev") not in ("segment", "abandoned") or e.get("type") != "MediaSegment":
            continue
        b = e.get("bandwidth")
        tr, tf, tl = e.get("t_request"), e.get("t_first_byte"), e.get("t_end")
        dur_req = (tl - tr) if tr is not None and tl is not None else None
        dur_fb = (tl - tf) if tf is not None and tl is not None else None
        nbytes = e.get("bytes") or 0
        before = [v for t, v in samples if tr is not None and t <= tr]
        rows.append({"client": name, "segment": e.get("index"), "rung": rung_of.get(b, -1),
                     "bitrate_bps": float(b) if b else float("nan"), "bytes": int(nbytes),
                     "t_request_s": tr, "t_first_byte_s": tf, "t_last_byte_s": tl,
                     "tput_request_bps": nbytes * 8 / dur_req if dur_req else float("nan"),
                     "tput_first_byte_bps": nbytes * 8 / dur_fb if dur_fb else float("nan"),
                     "buffer_before_s": before[-1] if before else float("nan"),
                     "buffer_after_s": e.get("buffer_s"), "abandoned": int(e["ev"] == "abandoned")})
    stalls, open_at = [], None
    for e in events:
        if e.get("ev") == "stall_start":
            open_at = e["t"]
        elif e.get("ev") == "stall_end" and open_at is not None:
            stalls.append(e["t"] - open_at)
            open_at = None
    if open_at is not None:
        stalls.append(t_end - open_at)
    micro = [x for x in stalls if x < MIN_STALL_S]
    stalls = [x for x in stalls if x >= MIN_STALL_S]
    # What was played: per segment the last completed download (dash.js's fast switching may fetch
    # a buffered segment again at another quality and replace it; abandoned downloads are not kept).
    last: dict[int, dict] = {}
    for r in rows:                 # in the order dash.js completed them
        if not r["abandoned"]:
            last[r["segment"]] = r
    played = [last[k] for k in sorted(last)]
    replaced = sum(1 for r in rows if not r["abandoned"]) - len(played)
    rungs = [r["rung"] for r in played]
    switches = sum(1 for a, b in zip(rungs, rungs[1:]) if a != b)
    startup = (t_start - t_load) if t_start is not None else None
    stalled = sum(stalls)
    session = max(0.0, t_end - t_load)
    played_s = max(0.0, session - (startup or 0.0) - stalled)
    n = len(played)
    summary = {
        "name": name, "abr": "dashjs", "segments": n, "abandoned": sum(1 for r in rows if r["abandoned"]),
        "replaced": replaced,
        "bytes": sum(r["bytes"] for r in rows),
        "avg_bitrate_bps": sum(r["bitrate_bps"] for r in played) / n if n else None,
        "quality_level_pct": 100.0 * sum(rungs) / n / len(bitrates) if n and bitrates else None,
        "startup_s": startup, "rebuffer_s": stalled, "stall_count": len(stalls),
        "rebuffer_ratio": stalled / (played_s + stalled) if played_s + stalled > 0 else None,
        "rebuffer_ratio_with_startup": (stalled + (startup or 0.0)) / session if session > 0 else None,
        "switches": switches, "instability_pct": 100.0 * switches / n if n else None,
        "micro_stalls": len(micro),
        "errors": [e.get("error") for e in events if e.get("ev") == "error"][:5],
        "ended": any(e.get("ev") == "ended" for e in events),
    }
    return summary, rows


def _cmd(args) -> int:
    from qoelab import outdir
    if not args.mpd.startswith(("http://", "https://")):
        raise InputError(None, "MPD", "an http:// URL of a DASH manifest", repr(args.mpd))
    from urllib.parse import urlsplit
    try:
        u = urlsplit(args.mpd)
        ok = bool(u.hostname) and (u.port is None or u.port > 0)
    except ValueError:   # a port that is not a number or out of range, a bad [IPv6] literal
        ok = False
    if not ok:
        raise InputError(None, "MPD", "an http:// URL with a host (and a port 1-65535, if any)", repr(args.mpd[:200]))
    if not 0 < args.duration <= 86400:
        raise InputError(None, "--duration", "seconds in (0, 86400]", repr(args.duration))
    for opt, v in (("--buffer", args.buffer), ("--stable-buffer", args.stable_buffer)):
        if v is not None and not 0 < v <= 86400:
            raise InputError(None, opt, "seconds in (0, 86400]", repr(v))
    out = outdir.check(args.out, force=args.force)
    t0 = time.perf_counter()
    apply_sets({}, args.set)       # refuse a bad --set before starting anything
    events = play(args.mpd, args.duration, args.abr, args.buffer, args.stable_buffer,
                  log=lambda m: print(m, file=sys.stderr, flush=True), sets=args.set)
    summary, rows = summarize(events)
    summary["abr_settings"] = args.abr
    summary["dashjs_set"] = list(args.set)
    import pandas as pd
    with outdir.atomic_dir(out) as tmp:
        with open(os.path.join(tmp, "events.jsonl"), "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in events)
        doc = {"schema": "qoelab.dashjs", "mpd": args.mpd, "duration_s": args.duration,
               "wall_s": round(time.perf_counter() - t0, 3), "clients": [summary]}
        with open(os.path.join(tmp, "summary.json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        pd.DataFrame(rows).to_parquet(os.path.join(tmp, "segments.parquet"), index=False)
    s = summary
    fmt = (lambda v, f: "n/a" if v is None else f.format(v))
    print(f"dash.js ({args.abr}): {s['segments']} segments, avg bitrate {fmt(s['avg_bitrate_bps'], '{:,.0f}')} bit/s, "
          f"startup {fmt(s['startup_s'], '{:.2f}')} s, {s['stall_count']} stalls ({s['rebuffer_s']:.2f} s), "
          f"{s['switches']} switches{'; errors: ' + '; '.join(s['errors']) if s['errors'] else ''}")
    print(f"results: {out}/ (summary.json, segments.parquet, events.jsonl)")
    return 0


def add_parser(sub) -> None:
    d = sub.add_parser(
        "dashjs", help="play a DASH stream with dash.js in headless Chromium; its metrics in qoelab's schema",
        description="Play MPD (an http:// URL, e.g. `qoelab serve` behind `qoelab link`) with dash.js 5 in headless "
                    "Chromium for DURATION seconds or to its end, and write DIR/summary.json (the client metrics of "
                    "docs/metrics.md), DIR/segments.parquet (docs/tables.md) and DIR/events.jsonl (dash.js's "
                    "events). Needs `make setup-real` (Chromium, node, the pinned dash.js and playwright-core). See "
                    "docs/realnet.md.")
    d.add_argument("mpd", metavar="MPD")
    d.add_argument("--out", required=True, metavar="DIR")
    d.add_argument("--duration", type=float, default=60.0, help="seconds of playback at most (default 60)")
    d.add_argument("--abr", default="dynamic", choices=list(ABR), help=f"dash.js ABR rules: {', '.join(ABR)} (default dynamic: dash.js's "
                                                    "default, throughput and BOLA)")
    d.add_argument("--buffer", type=float, default=None, metavar="S",
                   help="buffer target at the top quality (dash.js bufferTimeAtTopQuality; default dash.js's 30)")
    d.add_argument("--stable-buffer", type=float, default=None, metavar="S",
                   help="buffer target below the top quality (dash.js bufferTimeDefault; default dash.js's 18)")
    d.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any dash.js setting, dotted, JSON value (repeatable), e.g. "
                        "streaming.abr.throughput.useResourceTimingApi=false; unknown keys and values of another "
                        "kind than the default are refused (python/qoelab/dashjs_settings.json)")
    d.add_argument("--force", action="store_true", help="replace DIR if it exists")
    d.set_defaults(func=_cmd)


def live_settings() -> dict:
    """dash.js's version and default settings, read from the installed dash.js in headless Chromium."""
    why = missing()
    if why:
        raise InputError(None, None, message=f"dash.js in Chromium cannot run: {why}")
    tmpdir = browser_tmpdir()
    try:
        cfg = {"mpd": "http://127.0.0.1:9/", "dump_settings": True, "chromium": find_chromium(), "tmpdir": tmpdir}
        r = subprocess.run(["node", os.path.join(browser_dir(), "play.mjs"), json.dumps(cfg)], capture_output=True,
                           text=True, cwd=browser_dir(), timeout=120)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    for line in r.stdout.splitlines():
        ev = json.loads(line) if line.startswith("{") else {}
        if ev.get("ev") == "settings":
            return {"version": ev["version"], "settings": ev["settings"]}
    raise RuntimeError(f"dash.js settings not read: {_stderr_line(r.stderr)}")


if __name__ == "__main__":   # python -m qoelab.dashjs --write-settings: refresh dashjs_settings.json
    if sys.argv[1:] != ["--write-settings"]:
        sys.exit("usage: python -m qoelab.dashjs --write-settings")
    live = live_settings()
    doc = {"source": "dash.js getSettings() of a new MediaPlayer, written by `python -m qoelab.dashjs "
                     "--write-settings` from the dash.js of browser/package.json (make setup-real)", **live}
    with open(SETTINGS_FILE, "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")
    print(f"dash.js {live['version']}: settings written")
