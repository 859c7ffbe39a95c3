"""`[[client]] player = "dashjs"`: dash.js 5 in headless Chromium as a client of `qoelab run --real`
(python/qoelab/realrun.py, crates/qoelab-net/src/real.rs, browser/play.mjs), playing the synthetic
video as playable fMP4 (python/qoelab/video/playable.py) from its own `qoelab serve`.

The real runs are skipped, with the reason, where the machine cannot make network namespaces or TUN
devices, or lacks Chromium, node or the pinned npm packages (`make setup-real`); the scenario checks
and the playable-media checks run everywhere. Traffic stays inside the test's own namespaces.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO
from test_realnet import _children, _holders, _netns, _reason
from test_realrun import key_paths

from qoelab import dashjs

_why = _reason or dashjs.missing()
real = pytest.mark.skipif(_why is not None, reason=f"dash.js real-run tier skipped: {_why}")
if _why is not None:
    print(f"test_realrun_dashjs: real runs skipped: {_why}", file=sys.stderr)

SCENARIO = """
[scenario]
name = "real-dashjs"
duration = "{duration}"
seed = 1

[topology]
rate = "10Mbps"
rtt = "40ms"
buffer = "100pkts"

[[client]]
name = "browser"
{player}abr = "{abr}"
video = "synthetic:sabre-bbb"
video_duration = "60s"

[[flow]]
kind = "bulk"
name = "download"
start = "6s"
stop = "14s"
{extra}"""


def qoelab(*args, timeout=120, env=None):
    return subprocess.run([sys.executable, "-m", "qoelab.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout, env=env)


def write(tmp_path, name="s.toml", duration="18s", player='player = "dashjs"\n', abr="dynamic", extra=""):
    p = tmp_path / name
    p.write_text(SCENARIO.format(duration=duration, player=player, abr=abr, extra=extra))
    return p


def one_line_exit_2(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------------------------------------------------
# Scenario checks (everywhere)

def test_simulator_refuses_a_dashjs_client(tmp_path):
    r = qoelab("run", str(write(tmp_path)), "--out", str(tmp_path / "o"))
    one_line_exit_2(r, "client[0].player", "--real")
    assert not (tmp_path / "o").exists()
    r = qoelab("validate", str(write(tmp_path)))
    one_line_exit_2(r, "client[0].player")


def test_bad_dashjs_clients_are_refused_with_one_line(tmp_path):
    cases = [
        (dict(player='player = "vlc"\n'), ["client[0].player", "qoelab, dashjs"]),
        (dict(abr="mpc"), ["client[0].abr", "dash.js ABR", "l2a"]),
        (dict(abr="python:x:Y"), ["client[0].abr"]),
        (dict(extra='[client.abr_params]\nsafety = 0.8\n'), None),
        (dict(player="", extra='[client.player]\nkind = "dashjs"\nstartup = "2s"\n'), ["client[0].player.startup"]),
        (dict(player="", extra='[client.player]\nkind = "dashjs"\nset = ["nodots"]\n'), ["client[0].player.set"]),
        (dict(player="", extra='[client.player]\nkind = "chrome"\n'), ["client[0].player.kind"]),
    ]
    for kw, words in cases:
        if "abr_params" in kw.get("extra", ""):
            # [client.abr_params] must follow the [[client]] table: append it to the client's table
            p = tmp_path / "ap.toml"
            p.write_text(SCENARIO.format(duration="18s", player='player = "dashjs"\n', abr="dynamic", extra="")
                         .replace('video_duration = "60s"\n', 'video_duration = "60s"\nabr_params = { safety = 0.8 }\n'))
            words = ["client[0].abr_params", "dashjs"]
        else:
            p = write(tmp_path, **kw)
        r = qoelab("run", "--real", str(p), "--out", str(tmp_path / "o"))
        one_line_exit_2(r, *words)
        assert not (tmp_path / "o").exists()


def test_a_dashjs_client_loads_for_the_real_network(tmp_path):
    from qoelab import scenario
    sc = scenario.load(str(write(tmp_path, player="", extra='[client.player]\nkind = "dashjs"\nbuffer_max = "12s"\n'
                                                          'set = ["streaming.abr.throughput.useResourceTimingApi=false"]\n')),
                       real=True)
    pl = sc.meta["players"][0]
    assert pl["kind"] == "dashjs" and pl["abr"] == "dynamic" and pl["buffer_max_s"] == 12.0
    assert pl["set"] == ["streaming.abr.throughput.useResourceTimingApi=false"]
    # the simulator's counterpart of the rule stands in the normalized config; l2a has none
    assert sc.config["clients"][0]["abr"] == "dynamic"
    sc = scenario.load(str(write(tmp_path, abr="l2a")), real=True)
    assert sc.meta["players"][0]["abr"] == "l2a"
    # the default player is qoelab's own
    sc = scenario.load(str(write(tmp_path, player='player = "qoelab"\n')))
    assert sc.meta["players"] == {}


@pytest.mark.skipif(not os.path.exists("/dev/net/tun"), reason="needs /dev/net/tun to get as far as the browser check")
def test_missing_browser_packages_exit_2_naming_make_setup_real(tmp_path):
    from qoelab import realrun
    if realrun.find_driver() is None:
        pytest.skip("the qoelab-netemu binary is not built")
    env = dict(os.environ, QOELAB_BROWSER_DIR=str(tmp_path / "nowhere"))
    r = qoelab("run", "--real", str(write(tmp_path)), "--out", str(tmp_path / "o"), env=env)
    one_line_exit_2(r, "client[0]", "make setup-real")
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------------------------------------
# The synthetic video as playable fMP4 (everywhere)

def test_playable_media_has_the_synthetic_layout_and_decodes(tmp_path):
    import av
    from qoelab.serve import synthetic_layout
    from qoelab.video.playable import init_segment, media_segment, rung_bytes
    from qoelab.video.synthetic import INIT_BYTES
    v = synthetic_layout("sabre-bbb", 1, 6)
    dur_ms = v["segment_duration"] // 1_000_000
    assert len(init_segment()) == INIT_BYTES
    for r in (0, len(v["bitrates_bps"]) - 1):
        for t in range(6):
            assert len(media_segment(t, v["sizes"][t][r], dur_ms)) == v["sizes"][t][r]
        total = v["byte_offsets"][-1][r] + v["sizes"][-1][r]
        whole = rung_bytes(v, r, 0, total)
        assert len(whole) == total
        a = v["byte_offsets"][2][r]
        assert rung_bytes(v, r, a - 5, 100) == whole[a - 5:a + 95]      # any byte range
        f = tmp_path / f"r{r}.mp4"
        f.write_bytes(whole)
        with av.open(str(f)) as c:
            frames = sum(1 for _ in c.decode(video=0))
        assert frames == 6 * round(dur_ms * 2 / 1000)                     # 2 pictures per second


# ---------------------------------------------------------------------------------------------------------
# Real runs

@real
def test_dashjs_client_and_bulk_flow_on_the_real_network(tmp_path):
    import pandas as pd
    sc = write(tmp_path)
    t = time.monotonic()
    r = qoelab("run", "--real", str(sc), "--out", str(tmp_path / "real"))
    wall = time.monotonic() - t
    print(r.stdout, r.stderr[-2000:])
    assert r.returncode == 0, r.stderr[-2000:]
    assert wall < 40, wall
    # the same scenario with qoelab's own player, simulated: the same summary keys
    plain = write(tmp_path, "plain.toml", player="")
    r = qoelab("run", str(plain), "--out", str(tmp_path / "sim"))
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "real" / "summary.json").read_text())
    s_sim = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert key_paths(s) == key_paths(s_sim), key_paths(s) ^ key_paths(s_sim)
    assert set(s["clients"][0]) == set(s_sim["clients"][0])
    c = s["clients"][0]
    assert c["abr"] == "dashjs:dynamic" and c["name"] == "browser"
    # dash.js played: segments in order from 0, no error, the browser's connections seen by the server
    assert c["segments"] >= 5 and c["startup_s"] is not None and 0 < c["startup_s"] < 5, c
    perf = json.loads((tmp_path / "real" / "perf.json").read_text())["realnet"]
    d = perf["dashjs_clients"][0]
    assert d["errors"] == [] and 0 <= d["go_s"] < 0.2, d
    seg = pd.read_parquet(tmp_path / "real" / "segments.parquet")
    played = seg[(seg["client"] == 0) & (seg["abandoned"] == 0)]
    assert set(range(5)) <= set(played["segment"]), played
    # every segment dash.js downloaded has the synthetic video's size at its rung
    from qoelab import scenario
    v = scenario.load(str(plain)).config["videos"][0]
    for row in played.itertuples():
        assert row.bytes == v["sizes"][row.segment][row.rung], row
    assert (played["t_last_byte_s"] >= played["t_request_s"]).all()
    assert (played["t_request_s"] >= 0).all() and (played["t_last_byte_s"] <= 18.0).all()
    # the browser's connections (Chromium's pool may open more than one: browser/resp,
    # browser/c1/resp, ...): video flows with the server's TCP_INFO; the bulk flow's goodput
    flows = {f["name"]: f for f in s["flows"]}
    browser = [f for n, f in flows.items() if n == "browser/resp" or (n.startswith("browser/c") and n.endswith("/resp"))]
    assert "browser/resp" in flows and all(f["kind"] == "video" for f in browser), sorted(flows)
    assert sum(f["bytes_received"] for f in browser) >= c["bytes"] * 0.9, (browser, c["bytes"])
    assert c["connections"] >= 1 and c["srtt_mean_ms"] and c["srtt_mean_ms"] >= 40
    assert flows["download"]["goodput_bps"] > 1e6
    tcp = pd.read_parquet(tmp_path / "real" / "tcp.parquet")
    assert tcp["flow"].isin([f["id"] for f in browser]).sum() > 10


@real
def test_sigkill_during_a_dashjs_run_leaves_nothing_behind(tmp_path):
    sc = write(tmp_path, duration="30s")
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "run", "--real", str(sc), "--out", str(out)], cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        own = _netns(os.getpid())
        deadline = time.monotonic() + 30
        tree, spaces, browser = [], set(), False
        while time.monotonic() < deadline and not browser:
            tree, todo = [], [p.pid]
            while todo:
                k = todo.pop()
                tree.append(k)
                todo += _children(k)
            spaces = {_netns(k) for k in tree} - {None, own}
            for k in tree:
                try:
                    with open(f"/proc/{k}/cmdline", "rb") as f:
                        browser |= b"chrom" in f.read()
                except OSError:
                    pass
            time.sleep(0.2)
        assert browser and len(spaces) >= 2, (tree, spaces)
        time.sleep(3)   # playing
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (_holders(spaces) or any(os.path.exists(f"/proc/{k}") for k in tree)):
            time.sleep(0.1)
        assert not _holders(spaces), "a process is left in the run's namespaces"
        assert not [k for k in tree if os.path.exists(f"/proc/{k}")], "a process of the run survived"
        assert not out.exists()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_browser_temporary_folders_of_dead_processes_are_swept(tmp_path, monkeypatch):
    """A run killed with SIGKILL runs no cleanup: the next one removes the browser folders it left."""
    import subprocess as sp
    base = tempfile_short()
    try:
        gone = sp.Popen(["true"])
        gone.wait()
        stale = os.path.join(base, f"qoelab-browser-{gone.pid}-abc")
        os.makedirs(os.path.join(stale, "org.chromium.Chromium.x"))
        mine = os.path.join(base, f"qoelab-browser-{os.getpid()}-def")
        os.makedirs(mine)
        other = os.path.join(base, "qoelab-browser-x")            # not of this pattern: kept
        os.makedirs(other)
        monkeypatch.setenv("TMPDIR", base)
        import tempfile
        monkeypatch.setattr(tempfile, "tempdir", None)
        from qoelab import dashjs
        d = dashjs.browser_tmpdir("browser")
        assert os.path.dirname(d) == base and os.path.basename(d).startswith(f"qoelab-browser-{os.getpid()}-")
        assert not os.path.exists(stale) and os.path.exists(mine) and os.path.exists(other)
    finally:
        import shutil
        shutil.rmtree(base, ignore_errors=True)


def tempfile_short():
    import tempfile
    return tempfile.mkdtemp(prefix="qt-", dir="/tmp")
