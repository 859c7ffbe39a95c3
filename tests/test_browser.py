"""Browser tier: dash.js 5 in headless Chromium (`qoelab dashjs`, browser/play.mjs) playing the content
pipeline's DASH output from `qoelab serve`, over loopback and behind the emulated bottleneck
(`qoelab link`). Skipped, with the reason, where Chromium, node or the pinned npm packages are
missing (`make setup-real` installs them) or, for the emulated link, where namespaces cannot be made.
Traffic stays on loopback and inside the test's own namespaces."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import REPO, qoelab_cli

from qoelab import dashjs

_reason = dashjs.missing()
pytestmark = pytest.mark.skipif(_reason is not None, reason=f"browser tier skipped: {_reason}")
if _reason is not None:
    print(f"test_browser: skipped: {_reason}", file=sys.stderr)

QOELAB = [sys.executable, "-m", "qoelab.cli"]


@pytest.fixture(scope="module")
def content(tmp_path_factory):
    """24 s of a generated source in the corpus ladder (8 rungs to 2.35 Mbit/s), 2-s segments."""
    out = tmp_path_factory.mktemp("enc") / "enc"
    r = qoelab_cli("video", "prepare", "gen:testsrc2", "--out", str(out), "--duration", "24", "--ladder", "corpus",
                   "--segment", "2s", "--preset", "ultrafast", "--metrics", "psnr", "--no-progress")
    assert r.returncode == 0, r.stderr
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _summary(d):
    s = json.load(open(os.path.join(d, "summary.json")))
    return s["clients"][0]


def test_dashjs_plays_over_loopback(content, tmp_path):
    import pandas as pd
    port = _free_port()
    srv = subprocess.Popen(QOELAB + ["serve", str(content), "--port", str(port), "--log", str(tmp_path / "srv.log")],
                           cwd=REPO, stderr=subprocess.PIPE)
    # the run's TMPDIR (short: Chromium puts a socket in it): Chromium and playwright leave nothing there
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix="qt-", dir="/tmp")
    try:
        r = subprocess.run(QOELAB + ["dashjs", f"http://127.0.0.1:{port}/manifest.mpd", "--duration", "60", "--out",
                                     str(tmp_path / "o")], capture_output=True, text=True, cwd=REPO, timeout=600,
                           env=dict(os.environ, TMPDIR=str(tmp)))
    finally:
        srv.terminate()
        srv.wait(timeout=10)
    left = os.listdir(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    assert r.returncode == 0, r.stderr
    assert left == [], left
    c = _summary(tmp_path / "o")
    assert c["ended"] and not c["errors"], c
    assert c["segments"] >= 12 and c["startup_s"] < 3.0 and c["stall_count"] == 0
    seg = pd.read_parquet(tmp_path / "o" / "segments.parquet")
    assert set(range(12)) <= set(seg["segment"])
    # byte-exact: each downloaded segment has the size of its byte range in the MPD (table.json)
    table = json.load(open(content / "table.json"))
    sizes = table["video"]["sizes"] if "video" in table else table["sizes"]
    for row in seg.itertuples():
        assert row.bytes == sizes[row.segment][row.rung], row
    assert (seg["t_last_byte_s"] >= seg["t_request_s"]).all()
    log = (tmp_path / "srv.log").read_text()
    assert "range=" in log and " 206 " in log          # dash.js fetched byte ranges


def _why_no_netns():
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        return "needs root and /dev/net/tun"
    r = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    return None if r.returncode == 0 else "cannot create a network namespace"


def test_the_settings_snapshot_is_the_installed_dashjs():
    # --set and [client.player] set are checked against python/qoelab/dashjs_settings.json; it must
    # be the dash.js that plays (refresh: python -m qoelab.dashjs --write-settings)
    live = dashjs.live_settings()
    snap = dashjs.known_settings()
    assert live["version"] == snap["version"] and live["settings"] == snap["settings"]


def test_bad_arguments_one_line_exit_2(tmp_path):
    r = qoelab_cli("dashjs", "not-a-url", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "MPD" in r.stderr
    r = qoelab_cli("dashjs", "http://127.0.0.1:9/manifest.mpd", "--abr", "nonesuch", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "--abr" in r.stderr
    for opt, v in (("--buffer", "nan"), ("--stable-buffer", "-5"), ("--duration", "0")):
        r = qoelab_cli("dashjs", "http://127.0.0.1:9/manifest.mpd", opt, v, "--out", str(tmp_path / "o"))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and f"{opt}: expected" in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(_why_no_netns() is not None, reason=f"emulated link skipped: {_why_no_netns()}")
def test_compare_sim_real(content, tmp_path):
    """The same 2 Mbit/s session simulated (sans-IO dynamic) and played by dash.js (Resource Timing off)
    behind the emulator (`qoelab link` around `qoelab serve` and `qoelab dashjs`)."""
    import pandas as pd
    sc = tmp_path / "sr.toml"
    sc.write_text(f"""[scenario]
name = "sr"
duration = "30s"
[topology]
rate = "2Mbps"
rtt = "40ms"
aqm = "fq_codel"
buffer = "1bdp"
[[client]]
name = "dash"
abr = "dynamic"
video = "{content}/manifest.mpd"
""")
    r = qoelab_cli("compare", "sim-real", str(sc), "--out", str(tmp_path / "o"), "--variants", "no-rt")
    assert r.returncode == 0, r.stderr[-2000:]
    table = json.load(open(tmp_path / "o" / "agreement.json"))
    assert [t["run"] for t in table] == ["simulator", "dash.js (no-rt)"]
    sim, real = table
    assert sim["segments"] >= 12 and real["segments"] >= 12
    # the goal: average bitrate within 15%, stall count within 1
    assert abs(real["bitrate_vs_sim"]) <= 0.15 and abs(real["stall_count"] - sim["stall_count"]) <= 1, table
    assert real["goal_met"] is True and "lateness" in real["lateness"]
    assert "<svg" in (tmp_path / "o" / "report.html").read_text()
    # The emulator, not loopback, sets the pace: no large segment arrives faster than the 2 Mbit/s
    # link, and dash.js stays below the 2.35 Mbit/s top rung at the end.
    seg = pd.read_parquet(tmp_path / "o" / "segments-dashjs_no-rt.parquet")
    big = seg[seg["bytes"] > 100_000]
    assert len(big) and big["tput_request_bps"].max() <= 2.1e6, big["tput_request_bps"].tolist()
    assert seg["rung"].iloc[-4:].max() < 7, seg["rung"].tolist()


