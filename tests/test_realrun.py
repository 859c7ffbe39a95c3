"""Real-network tier, part 2: `qoelab run --real SCENARIO` (crates/qoelab-net/src/real.rs and
python/qoelab/realrun.py): a dumbbell scenario on the emulated bottleneck with kernel TCP bulk, on/off
and web flows,
`qoelab serve` and the core's sans-IO video sessions over real sockets. Skipped, with the reason,
where the machine cannot create network namespaces or TUN devices (the refusal tests run everywhere).
Traffic stays inside the test's own namespaces (10.77.0.1 <-> 10.77.1.1). About 55 s.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO
from test_realnet import _children, _holders, _netns, _reason, run_as_nobody_without_user_namespaces

real = pytest.mark.skipif(_reason is not None, reason=f"real-network tier skipped: {_reason}")

VIDEO_BULK = """
[scenario]
name = "real-video-bulk"
duration = "{duration}"
seed = 1

[topology]
rate = "10Mbps"
rtt = "40ms"
buffer = "100pkts"
aqm = "{aqm}"

[[client]]
name = "viewer"
abr = "dynamic"
video = "synthetic:sabre-bbb"
video_duration = "30s"

[[flow]]
kind = "bulk"
name = "download"
start = "{start}"
stop = "{stop}"

[output]
loss_phases = true
"""

BULK_ALONE = """
[scenario]
name = "real-bulk"
duration = "6s"
seed = 1

[topology]
rate = "10Mbps"
rtt = "40ms"
buffer = "100pkts"

[[flow]]
kind = "bulk"
name = "bulk"
cc = "cubic"
"""


FLOWS = """
[scenario]
name = "real-flows"
duration = "8s"
seed = 7

[topology]
rate = "10Mbps"
rtt = "40ms"
buffer = "100pkts"

[[flow]]
kind = "bulk"
name = "file"
size = "1500KB"
start = "0.5s"

[[flow]]
kind = "onoff"
name = "chunks"
size = "200KB"
period = "2s"
start = "1s"
stop = "8.5s"

[[flow]]
kind = "web"
name = "web"
arrival_rate = 2
sizes = "sizes.txt"
start = "0.5s"
stop = "6s"

[[flow]]
kind = "bulk"
name = "upload"
direction = "up"
size = "500KB"
start = "1s"

[[flow]]
kind = "cbr"
name = "voice"
rate = "1Mbps"
start = "2s"
stop = "6s"
"""

SIZES = "# bytes  cumulative probability\n10000 0\n50000 0.5\n200000 1\n"


def qoelab(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "qoelab.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout)


def key_paths(x, p=""):
    """Every key path of a JSON document (list elements share the path `[]`; the keys of a link's
    `drops` are data, the reasons that dropped, and become `*`)."""
    out = set()
    if isinstance(x, dict):
        for k, v in x.items():
            k = "*" if p.endswith(".drops") else k
            out.add(f"{p}.{k}")
            out |= key_paths(v, f"{p}.{k}")
    elif isinstance(x, list):
        for v in x:
            out |= key_paths(v, p + "[]")
    return out


@real
def test_video_and_bulk_run_has_the_simulated_schema(tmp_path):
    import pandas as pd
    sc = tmp_path / "s.toml"
    sc.write_text(VIDEO_BULK.format(duration="12s", aqm="pfifo", start="4s", stop="10s"))
    sim, rl = tmp_path / "sim", tmp_path / "real"
    r = qoelab("run", str(sc), "--out", str(sim))
    assert r.returncode == 0, r.stderr
    t = time.monotonic()
    r = qoelab("run", "--real", str(sc), "--out", str(rl))
    wall = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    s_sim = json.loads((sim / "summary.json").read_text())
    s = json.loads((rl / "summary.json").read_text())
    # Same keys, recursively (flows, links and clients included), as the simulated run.
    assert key_paths(s) == key_paths(s_sim), (key_paths(s) ^ key_paths(s_sim))
    assert s["network"] == "real" and s_sim["network"] == "packet"
    assert s["config_hash"] == s_sim["config_hash"]
    assert 12 <= wall < 32
    # The same tables, with the same columns.
    for name in ("flow_info", "link_info", "flows", "tcp", "queues", "segments"):
        a, b = pd.read_parquet(sim / f"{name}.parquet"), pd.read_parquet(rl / f"{name}.parquet")
        assert list(a.columns) == list(b.columns), name
        if name != "flow_info":
            assert len(b) > 0, name
    # The DASH session: the core's player and ABR over real HTTP/1.1 against `qoelab serve`:
    # segments completed in order, every body byte equal to the synthetic pattern.
    c = s["clients"][0]
    seg = pd.read_parquet(rl / "segments.parquet")
    assert c["segments"] >= 5 and len(seg) == c["segments"] + c["abandoned"]
    assert list(seg["segment"][seg["abandoned"] == 0]) == list(range(c["segments"]))
    assert 0.08 < c["startup_s"] < 2.0           # >= 2 RTTs: handshake + request
    assert c["stall_count"] == 0
    # Minerva's B/T/C classes of the video's drops, from the packets captured at the ingress.
    lp = c["loss_phases"]
    print("loss phases", lp, "bottleneck drops", s["links"][0]["dropped_packets"])
    assert 0 <= lp["B"] + lp["T"] + lp["C"] <= s["links"][0]["dropped_packets"]
    perf = json.loads((rl / "perf.json").read_text())["realnet"]
    assert perf["clients"][0]["pattern_mismatches"] == 0
    assert perf["clients"][0]["responses"] >= c["segments"]
    # Bulk flow from the kernel: bytes in its active span, TCP_INFO fields, and the video's
    # server-side TCP_INFO (from `qoelab serve`'s log) in the tcp table.
    bulk = next(f for f in s["flows"] if f["kind"] == "bulk")
    assert bulk["active_s"] == 6.0 and bulk["goodput_bps"] > 1e6 and bulk["cc"] == "cubic"
    # It starts with the video's queue built up: at least the configured RTT, at most that plus
    # a full 100-packet buffer (120 ms).
    assert 40 <= bulk["min_rtt_ms"] < 40 + 120 + 5
    video = next(f for f in s["flows"] if f["kind"] == "video")
    # The video connection starts on an idle path: its minimum RTT is the configured 40 ms.
    assert 40 <= video["min_rtt_ms"] < 42
    tcp = pd.read_parquet(rl / "tcp.parquet")
    assert (tcp["flow"] == video["id"]).sum() > 50 and (tcp["flow"] == bulk["id"]).sum() > 50
    # The bottleneck from the emulator: the 100-packet FIFO filled (10 Mbit/s = 1.2 ms per packet).
    down = s["links"][0]
    assert down["name"] == "bottleneck" and down["max_queue_packets"] == 100
    assert 0.85 < down["utilization"] <= 1.0
    assert 60 < down["queue_delay_ms"]["p50"] < 125
    # Timing quality.
    for d in ("downlink", "uplink"):
        lat = perf[d]["lateness_us"]
        print(d, "lateness us", lat)
        assert lat["count"] > 1000 and lat["p50"] < 1000


PLANES = """
[scenario]
name = "real-planes"
duration = "10s"
seed = 1

[topology]
rate = "10Mbps"
rtt = "40ms"
buffer = "100pkts"
aqm = "fq_codel"

[[client]]
name = "chunk"
abr = "dynamic"
video = "synthetic:sabre-bbb"
video_duration = "30s"
[client.data_plane]
kind = "chunklets"
n = 3

[[client]]
name = "sprint"
abr = "dynamic"
video = "synthetic:sprint"
video_duration = "30s"
[client.data_plane]
kind = "sprint"

[[client]]
name = "late"
start = "20s"
video = "synthetic:sabre-bbb"
[client.data_plane]
kind = "chunklets"
n = 2
"""


@real
def test_chunklets_and_sprint_data_planes_on_real_connections(tmp_path):
    import pandas as pd
    sc = tmp_path / "s.toml"
    sc.write_text(PLANES)
    r = qoelab("run", str(sc), "--out", str(tmp_path / "sim"))
    assert r.returncode == 0, r.stderr
    r = qoelab("run", "--real", str(sc), "--out", str(tmp_path / "real"))
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    s = json.loads((tmp_path / "real" / "summary.json").read_text())
    s_sim = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert key_paths(s) == key_paths(s_sim), (key_paths(s) ^ key_paths(s_sim))
    req = pd.read_parquet(tmp_path / "real" / "requests.parquet")
    chunk, sprint, late = s["clients"]
    # A client that starts after the end: its own flows, named as the simulator's (its `flow` was
    # 0, another client's or a bulk flow's), and out of the fairness figures.
    names = [f["name"] for f in s["flows"]]
    assert names[late["flow"]] == "late/resp"
    assert [n for n in names if n.startswith("late/")] == ["late/req", "late/resp", "late/c1/req", "late/c1/resp"]
    assert s["video"]["clients"] == 2
    # The flows table has the sample at the end, whose bytes are the summary's (it stopped one
    # interval early, 0.5-2% short).
    fl = pd.read_parquet(tmp_path / "real" / "flows.parquet")
    assert fl["time_s"].max() == 10.0
    last = fl.sort_values("time_s").groupby("flow").last()
    assert all(int(r.bytes_received) == s["flows"][int(f)]["bytes_received"] for f, r in last.iterrows())
    assert pd.read_parquet(tmp_path / "real" / "tcp.parquet")["time_s"].max() == 10.0
    # Chunklets: each segment as 3 byte ranges at once, one per connection.
    k = req[req["client"] == 0]
    assert set(k["kind"]) == {"chunklet"} and set(k["conn"]) == {0, 1, 2}
    assert chunk["segments"] >= 3 and chunk["http"]["data_plane"] == "chunklets"
    assert chunk["http"]["requests"] == len(k)
    # Sprint: segments pipelined on connection 0, RTT probes on connection 1 (a `probe` flow).
    k = req[req["client"] == 1]
    assert set(k["kind"]) == {"segment", "probe"} and set(k[k["kind"] == "probe"]["conn"]) == {1}
    # Under FQ-CoDel Sprint's connection gets about a quarter of the link beside the 3 chunklet
    # connections: 2-4 segments in 10 s (2 seen in 1 of ~10 runs); pipelining is the point here.
    assert sprint["segments"] >= 2 and sprint["http"]["max_pipeline"] >= 2
    assert any(f["kind"] == "probe" and f["name"] == "sprint/c1/resp" for f in s["flows"])
    perf = json.loads((tmp_path / "real" / "perf.json").read_text())["realnet"]
    assert all(c["pattern_mismatches"] == 0 for c in perf["clients"])


@real
def test_finite_onoff_web_and_upstream_flows_run_for_real(tmp_path):
    """A finite download and a finite upload, an on/off source, a web generator and a CBR flow at 10 Mbit/s
    (8 s): exact byte counts, completion times no shorter than size / rate, the on/off source's
    four bursts, and the web generator's arrival times and sizes equal to the simulator's."""
    import pandas as pd
    (tmp_path / "sizes.txt").write_text(SIZES)
    sc = tmp_path / "flows.toml"
    sc.write_text(FLOWS)
    r = qoelab("run", "--real", str(sc), "--out", str(tmp_path / "real"), timeout=60)
    assert r.returncode == 0, r.stderr
    r = qoelab("run", str(sc), "--out", str(tmp_path / "sim"))
    assert r.returncode == 0, r.stderr
    real = json.loads((tmp_path / "real" / "summary.json").read_text())
    sim = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert real["network"] == "real"
    assert key_paths(real) == key_paths(sim)
    fl = {f["name"]: f for f in real["flows"]}
    for name, size, start, src in (("file", 1_500_000, 0.5, "server"), ("upload", 500_000, 1.0, "client")):
        f = fl[name]
        assert f["kind"] == "bulk" and f["size_bytes"] == size and f["bytes_received"] == size, f
        assert f["src"].endswith(src), f["src"]
        fct = f["completed_s"] - start
        print(f"{name}: {size} bytes in {fct:.3f} s")
        assert size * 8 / 10e6 <= fct < 8 - start
        assert f["active_s"] == pytest.approx(fct, abs=1e-6)
    # bursts at 1, 3, 5 and 7 s (before the stop at 8.5 s), 200 KB each, on one connection
    assert fl["chunks"]["kind"] == "onoff" and fl["chunks"]["bytes_received"] == 4 * 200_000
    assert "completed_s" not in fl["chunks"]
    # cbr: 1500-byte datagrams every 12 ms from 2 s to 6 s, 1472 payload bytes each; the simulator
    # delivers all 334, the real run what the FIFO did not drop (pfifo shared with the bursts)
    v, vs = fl["voice"], next(f for f in sim["flows"] if f["name"] == "voice")
    assert vs["bytes_received"] == 334 * 1472 and v["kind"] == "cbr" and "cc" not in v
    assert v["bytes_received"] % 1472 == 0 and 0.9 * vs["bytes_received"] <= v["bytes_received"] <= vs["bytes_received"]
    print(f"cbr: {v['bytes_received'] // 1472} of 334 datagrams")
    web_r = pd.read_parquet(tmp_path / "real" / "web.parquet").sort_values("start_s")
    web_s = pd.read_parquet(tmp_path / "sim" / "web.parquet").sort_values("start_s")
    assert list(web_r.columns) == list(web_s.columns)
    assert len(web_s) >= 5
    assert web_r["start_s"].tolist() == web_s["start_s"].tolist()
    assert web_r["bytes"].tolist() == web_s["bytes"].tolist()
    assert (web_r["fct_s"] > 0.04).all() and set(web_r["generator"]) == {"web"}
    for row in web_r.itertuples():
        f = real["flows"][row.flow]
        assert f["kind"] == "web" and f["bytes_received"] == f["size_bytes"] == row.bytes
        assert f["completed_s"] == pytest.approx(row.start_s + row.fct_s, abs=1e-5)


@real
def test_kernel_cubic_alone_reaches_90_percent_of_the_link_rate(tmp_path):
    import pandas as pd
    sc = tmp_path / "bulk.toml"
    sc.write_text(BULK_ALONE)
    r = qoelab("run", "--real", str(sc), "--out", str(tmp_path / "o"), "--json")
    assert r.returncode == 0, r.stderr
    # --json: the summary on stdout, the timing quality (printed at the end of every run) on stderr
    assert json.loads(r.stdout)["flows"][0]["name"] == "bulk"
    assert [ln.split(":")[0].strip() for ln in r.stderr.splitlines() if "departure lateness" in ln] == [
        "timing downlink", "timing uplink"]
    fl = pd.read_parquet(tmp_path / "o" / "flows.parquet")
    at = fl.set_index("time_s")["bytes_received"]
    gp = (at.loc[5.0] - at.loc[1.0]) * 8 / 4.0
    print(f"cubic goodput seconds 1-5: {gp / 1e6:.3f} Mbit/s")
    assert gp >= 0.9 * 10e6
    assert gp <= 10e6


@real
def test_sigkill_of_run_real_leaves_nothing_behind(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(VIDEO_BULK.format(duration="30s", aqm="codel", start="6s", stop="14s"))
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "run", "--real", str(sc), "--out", str(out)], cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        own = _netns(os.getpid())
        deadline = time.monotonic() + 20
        tree, spaces = [], set()
        while time.monotonic() < deadline:
            tree = []
            todo = [p.pid]
            while todo:
                k = todo.pop()
                tree.append(k)
                todo += _children(k)
            spaces = {_netns(k) for k in tree} - {None, own}
            if len(spaces) >= 2 and len(tree) >= 3:   # qoelab, the driver, a server
                break
            time.sleep(0.2)
        assert len(spaces) >= 2, (tree, spaces)
        time.sleep(2)   # traffic flowing
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            alive = [k for k in tree if os.path.exists(f"/proc/{k}")]
            if not alive and not _holders(spaces):
                break
            time.sleep(0.1)
        assert not [k for k in tree if os.path.exists(f"/proc/{k}")], "processes left"
        assert not _holders(spaces), "namespaces still held"
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        assert "qrs0" not in links and "qrc0" not in links
        assert not out.exists()
    finally:
        if p.poll() is None:
            p.kill()


@real
def test_a_killed_driver_is_named_and_leaves_nothing_behind(tmp_path):
    """SIGKILL of the driver alone (not of `qoelab run --real`): one line naming the signal (it said
    "exit status -9"), exit 1, no result directory, no process or namespace left."""
    sc = tmp_path / "s.toml"
    sc.write_text(VIDEO_BULK.format(duration="30s", aqm="codel", start="6s", stop="14s"))
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "run", "--real", str(sc), "--out", str(out)], cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        own = _netns(os.getpid())
        deadline = time.monotonic() + 20
        driver, spaces = None, set()
        while time.monotonic() < deadline and driver is None:
            for k in _children(p.pid):
                try:
                    with open(f"/proc/{k}/cmdline", "rb") as f:
                        cmd = f.read()
                except OSError:
                    continue
                if b"qoelab-netemu" in cmd and len({_netns(c) for c in _children(k)} - {None, own}) >= 1:
                    driver = k
            time.sleep(0.2)
        assert driver is not None
        time.sleep(2)   # traffic flowing
        tree = [driver, *_children(driver)]
        spaces = {_netns(k) for k in tree} - {None, own}
        os.kill(driver, signal.SIGKILL)
        _, err = p.communicate(timeout=20)
        assert p.returncode == 1, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "was killed by signal 9 (SIGKILL)" in lines[0], err
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (_holders(spaces) or [k for k in tree if os.path.exists(f"/proc/{k}")]):
            time.sleep(0.1)
        assert not [k for k in tree if os.path.exists(f"/proc/{k}")], "processes left"
        assert not _holders(spaces), "namespaces still held"
        assert not out.exists()
    finally:
        if p.poll() is None:
            p.kill()


@real
def test_ctrl_c_stops_run_real_within_a_second(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(BULK_ALONE)
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "run", "--real", str(sc), "--out", str(tmp_path / "o")],
                         cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=10)
    assert rc == 130 and time.monotonic() - t < 1.0, p.stderr.read()
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("body, what", [
    ('[scenario]\nname="c"\nduration="5s"\n[topology]\nkind="chain"\n[[topology.hop]]\nrate="10Mbps"\n'
     '[[flow]]\nname="a"\n', "topology 'chain'"),
    ('[scenario]\nname="w"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[flow]]\nkind="cbr"\nname="a"\n'
     'rate="1Mbps"\npacket_size=9000\n', "packet_size"),
    ('[scenario]\nname="d"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[client]]\nname="v"\n'
     'video="synthetic:sprint"\nvideo_duration="20s"\narrival_rate=0.5\n', "arrival_rate"),
    # ran with exit 0 and silently without the page loads, the pcap or the packet log
    ('[scenario]\nname="p"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[flow]]\nname="a"\n'
     '[[page]]\nname="b"\nhandcrafted="mixed"\n', "page[0] (b): page loads"),
    ('[scenario]\nname="p"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[flow]]\nname="a"\n'
     '[output]\npcap="bottleneck"\n', "output.pcap"),
    ('[scenario]\nname="p"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[flow]]\nname="a"\n'
     '[output]\npacket_log=true\n', "output.packet_log"),
    ('[scenario]\nname="p"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[flow]]\nname="a"\n'
     '[output]\ntables=["flows","packets"]\n', "output.tables"),
    ('[scenario]\nname="p"\nduration="5s"\n[topology]\nrate="10Mbps"\naccess_rate="5Mbps"\n[[flow]]\nname="a"\n',
     "topology.access_rate"),
    # refused by the driver after the namespaces, servers and browsers were up
    ('[scenario]\nname="q"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[flow]]\nname="a"\ntransport="quic"\n',
     "flow[0] (a).transport"),
    ('[scenario]\nname="q"\nduration="5s"\n[topology]\nrate="10Mbps"\n[[client]]\nname="v"\n'
     'video="synthetic:sprint"\nvideo_duration="20s"\ntransport="quic"\n', "client[0] (v).transport"),
])
def test_unsupported_scenarios_exit_2_with_one_line(tmp_path, body, what):
    sc = tmp_path / "s.toml"
    sc.write_text(body)
    r = qoelab("run", "--real", str(sc), "--out", str(tmp_path / "o"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0], r.stderr
    if _reason is None:
        assert what in lines[0] and str(sc) in lines[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the emulator is Linux-only")
def test_an_emulator_built_from_other_sources_is_refused(tmp_path):
    """`qoelab link` and `run --real` refuse an emulator binary whose source fingerprint is not the
    module's (a target/release/qoelab-netemu left from older sources ran other link, AQM and
    session code than the simulator, silently), with one line, exit 2, nothing written; the
    binary `make build` made beside this module carries the module's fingerprint."""
    from qoelab import _core, realrun
    fake = tmp_path / "qoelab-netemu"
    fake.write_text("#!/bin/sh\necho 0123456789abcdef\n")
    fake.chmod(0o755)
    sc = tmp_path / "s.toml"
    sc.write_text(BULK_ALONE)
    env = {**os.environ, "QOELAB_NETEMU": str(fake)}
    for args in (["link", "--rate", "10Mbps", "--", "true"], ["run", "--real", str(sc), "--out", str(tmp_path / "o")]):
        r = subprocess.run([sys.executable, "-m", "qoelab.cli", *args], capture_output=True, text=True, cwd=REPO,
                           env=env, timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "built from other sources" in lines[0] and "make build" in lines[0], r.stderr
        assert "0123456789abcdef" in lines[0] and _core.source_id() in lines[0]
    assert not (tmp_path / "o").exists()
    binary = realrun.find_driver()
    if binary is not None and "QOELAB_NETEMU" not in os.environ:
        got = subprocess.run([binary, "--source-id"], capture_output=True, text=True, timeout=10).stdout.strip()
        assert got == _core.source_id(), f"{binary} is stale: run `make build`"


@real
def test_driver_without_privileges_one_line_exit_2(tmp_path):
    """The driver run as `nobody` where no user namespace can be made cannot create the namespaces:
    one line naming that, exit 2."""
    import shutil
    import tempfile

    from qoelab import realrun
    from qoelab import scenario as scmod
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("needs runuser to drop privileges")
    sc = tmp_path / "s.toml"
    sc.write_text(VIDEO_BULK.format(duration="5s", aqm="pfifo", start="6s", stop="14s"))
    d = tempfile.mkdtemp(prefix="qoelab-real-")   # readable by nobody, unlike pytest's tmp_path
    try:
        os.chmod(d, 0o755)
        plan = realrun.plan_for(scmod.load(str(sc)), d, d)
        del plan["parent_pid"]
        with open(os.path.join(d, "plan.json"), "w") as f:
            json.dump(plan, f)
        os.chmod(os.path.join(d, "plan.json"), 0o644)
        exe = os.path.join(d, "qoelab-netemu")
        shutil.copy(realrun.find_driver(), exe)
        os.chmod(exe, 0o755)
        r = run_as_nobody_without_user_namespaces([exe, "run", "--plan", os.path.join(d, "plan.json")])
    finally:
        shutil.rmtree(d)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "needs root, or unprivileged user namespaces" in r.stderr, r.stderr
