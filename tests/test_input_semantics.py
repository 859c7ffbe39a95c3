"""What bad-input fixes changed in the meaning of valid inputs: trace mode ends at the scenario's
duration (partial session) and needs no rate_up; a synthetic video's default seed derives from
the scenario seed (and `--seed`); `validate` runs the core's build."""

import json

from conftest import qoelab_cli

TRACE = """
[scenario]
duration = "{dur}"
network = "trace"
{seed}
[topology]
rate = "{rate}"
rtt = "20ms"

[[client]]
video = "synthetic:has-testbed"
video_duration = "60s"
"""


def _run(tmp_path, text, *extra):
    p = tmp_path / "s.toml"
    p.write_text(text)
    out = tmp_path / "out"
    r = qoelab_cli("run", str(p), "--out", str(out), "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_trace_mode_shorter_than_video_reports_partial_session(tmp_path):
    s = _run(tmp_path, TRACE.format(dur="10s", seed="", rate="5Mbps"))
    assert s["duration_s"] == 10
    (c,) = s["clients"]
    assert 0 < c["segments"] < 30, c  # 60 s of 2 s segments, cut at 10 s


def test_trace_mode_tiny_rate_ends_at_duration(tmp_path):
    s = _run(tmp_path, TRACE.format(dur="30s", seed="", rate="1kbps"))
    assert s["duration_s"] == 30


def _segment_sizes(tmp_path, seed_line, *extra):
    text = """
[scenario]
duration = "2s"
{seed}
[topology]
rate = "10Mbps"

[[client]]
video = "synthetic:has-testbed"
video_duration = "10s"
""".format(seed=seed_line)
    p = tmp_path / "s.toml"
    p.write_text(text)
    from qoelab import scenario
    sc = scenario.load(str(p))
    for a in extra:
        sc = sc.with_seed(a)
    return sc.config["videos"][0]["sizes"]


def test_synthetic_video_seed_derives_from_scenario_seed(tmp_path):
    a = _segment_sizes(tmp_path, "seed = 5")
    assert a == _segment_sizes(tmp_path, "seed = 5")
    assert a != _segment_sizes(tmp_path, "seed = 6")
    # --seed (with_seed) re-derives the video
    assert _segment_sizes(tmp_path, "seed = 6", 5) == a


def test_cli_seed_changes_video_run(tmp_path):
    text = TRACE.format(dur="20s", seed="", rate="5Mbps")
    s1 = _run(tmp_path, text, "--seed", "1", "--force")
    s1b = _run(tmp_path, text, "--seed", "1", "--force")
    s2 = _run(tmp_path, text, "--seed", "2", "--force")
    assert s1 == s1b
    assert s1["clients"] != s2["clients"]


def test_validate_runs_core_build(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(TRACE.format(dur="10s", seed="", rate="5Mbps").replace(
        'video_duration = "60s"', 'video_duration = "60s"\narrival_rate = 1.0'))
    r = qoelab_cli("validate", str(p))
    assert r.returncode == 2
    assert f"{p}:client[0].arrival_rate" in r.stderr, r.stderr


def test_trace_mode_with_trace_file_needs_no_rate_up(tmp_path):
    (tmp_path / "n.json").write_text('[{"duration_ms": 1000, "bandwidth_kbps": 3000, "latency_ms": 20}, '
                                     '{"duration_ms": 1000, "bandwidth_kbps": 1000, "latency_ms": 20}]')
    text = TRACE.format(dur="10s", seed="", rate="x").replace('rate = "x"', 'trace = "n.json"')
    s = _run(tmp_path, text)
    (c,) = s["clients"]
    assert c["segments"] > 0


# --- limits of memory and run time (docs/scenario-format.md, "Limits"): each is checked when the
# scenario loads, so `validate` refuses what `run` could not finish; nothing here runs a simulation.

import os  # noqa: E402

import pytest  # noqa: E402

from qoelab import scenario  # noqa: E402
from qoelab.errors import InputError  # noqa: E402

BASE = """
[scenario]
duration = "{dur}"
[topology]
rate = "{rate}"
{topo}
"""


def _scn(dur="10s", rate="10Mbps", topo="", body=""):
    return BASE.format(dur=dur, rate=rate, topo=topo) + body


def _err(tmp_path, text, files=None):
    """The one-line error of loading `text` (as `qoelab validate` does), or None if it loads."""
    for name, content in (files or {}).items():
        (tmp_path / name).write_text(content)
    p = tmp_path / "s.toml"
    p.write_text(text)
    try:
        scenario.load(str(p), standalone=True)
    except InputError as e:
        line = str(e)
        assert "\n" not in line and len(line) < 700, line
        assert line.startswith(f"{p}:"), line
        return line[len(str(p)) + 1:]
    return None


def _where(err):
    return err.split(": ", 1)[0]


def test_cbr_rate_the_clock_cannot_honour(tmp_path):
    topo = 'access_rate = "12000Gbps"\nrtt = "1ms"'   # (the fastest link rate: 1 ns per 1500 B)
    for rate in ("100000Gbps", "10000Gbps"):  # 0.12 ns per packet; 1.2 ns rounded up to 2 ns (6 Tbit/s)
        e = _err(tmp_path, _scn("10ms", "12000Gbps", topo, f'[[flow]]\nkind = "cbr"\nrate = "{rate}"\n'))
        assert _where(e) == "flow[0].rate" and "1 ns" in e and "12000Gbps" in e, e
    # exactly 1 ns per 1500-byte packet, and a 28-byte packet every 2 ns
    assert _err(tmp_path, _scn("10ms", "12000Gbps", topo, '[[flow]]\nkind = "cbr"\nrate = "12000Gbps"\n')) is None
    assert _err(tmp_path, _scn("10ms", "12000Gbps", topo,
                               '[[flow]]\nkind = "cbr"\nrate = "112Gbps"\npacket_size = 28\n')) is None


def test_packets_in_flight_on_a_link(tmp_path):
    big = 'access_rate = "12000Gbps"'
    bulk = '[[flow]]\nkind = "bulk"\n'
    # 12 Tbit/s with the default 40 ms RTT: 2 x 10^7 packets on the access link
    e = _err(tmp_path, _scn("1s", "12000Gbps", big, bulk))
    assert _where(e) == "topology.access_rate" and "packets in flight" in e and "8,000,000" in e, e
    e = _err(tmp_path, _scn("1s", "12000Gbps", big + '\nrtt = "60s"', bulk))
    assert _where(e) == "topology.rtt", e
    e = _err(tmp_path, _scn("1s", "12000Gbps", big, bulk + 'rtt = "2s"\n'))
    assert _where(e) == "flow[0].rtt", e
    e = _err(tmp_path, _scn("1s", "12000Gbps", 'delay = "1s"\nrtt = "2s"', bulk))
    assert _where(e) == "topology.delay", e
    # a slow CBR of small packets over a long path is counted at its own rate
    assert _err(tmp_path, _scn("1s", "1Gbps", 'rtt = "60s"',
                               '[[flow]]\nkind = "cbr"\nrate = "1Mbps"\npacket_size = 28\n')) is None


def test_cbr_and_onoff_work_per_run(tmp_path):
    # 1 Gbit/s of CBR for a week: 5 x 10^10 packets
    e = _err(tmp_path, _scn("168h", "1Gbps", "", '[[flow]]\nkind = "cbr"\nrate = "1Gbps"\n[output]\ntables = []\n'))
    assert _where(e) == "flow[0].rate" and "1,000,000,000 CBR packets" in e, e
    onoff = '[[flow]]\nkind = "onoff"\nsize = "1B"\nperiod = "{}"\n'
    e = _err(tmp_path, _scn(body=onoff.format("1ns")))
    assert _where(e) == "flow[0].period" and "100,000,000 writes" in e, e
    assert _err(tmp_path, _scn(body=onoff.format("1ms"))) is None
    # the total over entries: the second crosses it
    e = _err(tmp_path, _scn(body=onoff.format("150ns") + onoff.format("150ns")))
    assert _where(e) == "flow[1].period", e


@pytest.mark.parametrize("body,key", [
    ('[[flow]]\nkind = "bulk"\ncount = 16000\n', "flow[0].count"),
    ('[[page]]\nhandcrafted = "mixed"\ncount = 32000\n', "page[0].count"),
    ('[[client]]\ncount = 7500\n', "client[0].count"),
    ('[[flow]]\nkind = "cbr"\nrate = "1Mbps"\ncount = 7000\n[[flow]]\nkind = "cbr"\nrate = "1Mbps"\ncount = 500\n',
     "flow[1].count"),
])
def test_node_count_bounds_the_routing_table(tmp_path, body, key):
    e = _err(tmp_path, _scn(body=body))
    assert _where(e) == key and "15,000 nodes" in e and "square of the nodes" in e, e


def test_node_count_of_many_entries_and_hops(tmp_path):
    e = _err(tmp_path, _scn("1s", body='[[flow]]\nkind = "cbr"\nrate = "1Mbps"\n' * 7500))
    assert _where(e) == "flow[7499]" and "15,002" in e, e
    chain = '[scenario]\nduration = "1s"\n[topology]\nkind = "chain"\n' + '[[topology.hop]]\nrate = "1Mbps"\n' * 15000
    e = _err(tmp_path, chain + '[[flow]]\nkind = "bulk"\n')
    assert _where(e) == "topology.hop", e


def test_web_flows_and_sessions_over_the_run(tmp_path):
    web = '[[flow]]\nkind = "web"\narrival_rate = {}\n'
    assert _err(tmp_path, _scn("1s", body=web.format(200000.0))) is None
    e = _err(tmp_path, _scn("1s", body=web.format(200001.0)))
    assert _where(e) == "flow[0].arrival_rate" and "200,000 web flows" in e, e
    e = _err(tmp_path, _scn("1s", body=web.format(150000.0) + web.format(150000.0)))
    assert _where(e) == "flow[1].arrival_rate", e
    e = _err(tmp_path, _scn("1s", body=web.format(150000.0) + "count = 2\n"))
    assert _where(e) == "flow[0].arrival_rate", e
    e = _err(tmp_path, _scn("10s", body="[[client]]\narrival_rate = 9990.0\n"))
    assert _where(e) == "client[0].arrival_rate" and "10,000 video sessions" in e, e
    assert _err(tmp_path, _scn("10s", body="[[client]]\narrival_rate = 999.0\n")) is None


def test_client_video_copies(tmp_path):
    # every client and session holds its own copy of its video: 200 x 100,000 segments x 8 rungs
    e = _err(tmp_path, _scn(body='[[client]]\ncount = 200\nvideo_duration = "200000s"\n'))
    assert _where(e) == "client[0].count" and "30,000,000 video values" in e, e
    e = _err(tmp_path, _scn(body='[[client]]\narrival_rate = 100.0\nvideo_duration = "20000s"\n'))
    assert _where(e) == "client[0].arrival_rate" and "video values" in e, e


def test_page_objects_over_all_copies(tmp_path):
    entries = ",".join('{"startedDateTime": "2015-12-07T10:00:00.%06d+00:00", "time": 1.0, '
                       '"request": {"url": "http://h.example/o%d"}, "response": {"bodySize": 1000}}' % (i, i)
                       for i in range(2000))
    e = _err(tmp_path, _scn(body='[[page]]\nhar = "p.har"\ncount = 501\n'), {"p.har": '{"log": {"entries": [%s]}}'
                                                                              % entries})
    assert _where(e) == "page[0].count" and "1,000,000 page objects" in e, e


def test_pcap_size(tmp_path):
    pcap = '[[flow]]\nkind = "bulk"\n[output]\npcap = "bottleneck"\n'
    e = _err(tmp_path, _scn("600s", "10Gbps", "", pcap))
    assert _where(e) == "output.pcap" and "1 GiB" in e, e
    assert _err(tmp_path, _scn("60s", "100Mbps", "", pcap)) is None


def test_sampled_rows(tmp_path):
    e = _err(tmp_path, _scn("12h", body='[[flow]]\nkind = "bulk"\ncount = 4\n'))
    assert _where(e) == "scenario.duration" and "2,500,000 rows" in e, e
    assert _err(tmp_path, _scn("1h", body='[[flow]]\nkind = "bulk"\ncount = 4\n')) is None


def test_error_lines_stay_short(tmp_path):
    e = _err(tmp_path, _scn(topo='buffer = "1e300bdp"', body="[[flow]]\n"))
    assert _where(e) == "topology.buffer" and "1e300bdp" in e and "e+301" in e and len(e) < 150, e
    e = _err(tmp_path, _scn(body='[[client]]\n[client.data_plane]\nkind = "sprint"\neps = 1e300\n'))
    assert _where(e) == "client[0].data_plane.eps" and "1.00e+300" in e and len(e) < 150, e
    e = _err(tmp_path, _scn(rate="9" * 5000 + "Mbps", body="[[flow]]\n"))
    assert _where(e) == "topology.rate" and len(e) < 300, e
    e = _err(tmp_path, _scn(body="[[flow]]\ncount = 1" + "0" * 300 + "\n"))
    assert _where(e) == "flow[0].count" and len(e) < 200, e
    e = _err(tmp_path, _scn(body='[[flow]]\nkind = "' + "x" * 5000 + '"\n'))
    assert _where(e) == "flow[0].kind" and len(e) < 300, e


@pytest.mark.parametrize("body,key", [
    ('[[flow]]\nname = "a"\n[[flow]]\nname = "a"\n', "flow[1].name"),
    ('[[flow]]\nname = "a"\ncount = 2\n[[flow]]\nname = "a"\n', "flow[1].name"),
    ('[[flow]]\nname = "a"\ncount = 2\n[[flow]]\nname = "a-1"\n', "flow[1].name"),
    ('[[client]]\nname = "a"\ncount = 2\n[[client]]\nname = "a-1"\n', "client[1].name"),
    ('[[client]]\nname = "a"\ncount = 2\n[[client]]\nname = "a"\n', "client[1].name"),
    ('[[flow]]\nname = "a"\n[[client]]\nname = "a"\n', "client[0].name"),
    ('[[page]]\nname = "a"\nhandcrafted = "mixed"\n[[page]]\nname = "a"\nhandcrafted = "mixed"\n', "page[1].name"),
    ('[[flow]]\nname = "router"\n', "flow[0].name"),  # the dumbbell's router-server / router-client
])
def test_duplicate_names(tmp_path, body, key):
    e = _err(tmp_path, _scn(body=body))
    assert _where(e) == key, e


def test_distinct_names_and_default_names_load(tmp_path):
    body = ('[[flow]]\ncount = 2\n[[flow]]\nkind = "cbr"\nrate = "1Mbps"\n[[flow]]\nname = "a"\ncount = 2\n'
            '[[client]]\ncount = 2\n[[client]]\nname = "b"\n[[page]]\nhandcrafted = "mixed"\n')
    assert _err(tmp_path, _scn(body=body)) is None


def test_scenario_file_must_be_a_small_regular_file(tmp_path):
    for argv in (["validate", "/dev/zero"], ["run", "/dev/zero", "--out", str(tmp_path / "o")],
                 ["validate", str(tmp_path)]):
        r = qoelab_cli(*argv)
        assert r.returncode == 2, r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert argv[1] in line and "a regular file" in line, line
    assert not (tmp_path / "o").exists()
    p = tmp_path / "big.toml"
    p.write_text(_scn(body="[[flow]]\n") + "#" * (16 * 2**20) + "\n")
    with pytest.raises(InputError) as e:
        scenario.load(str(p))
    assert "at most 16 MiB" in str(e.value) and str(p) in str(e.value)
    p.write_text(_scn(body="[[flow]]\n") + "#" * (2**20) + "\n")  # a long comment is fine
    assert scenario.load(str(p)).config["duration"] == 10**10
    assert os.path.getsize(p) > 2**20


def test_toml_integers_beyond_the_digit_limit_name_the_line(tmp_path):
    """tomllib converts integers with int(): more than 4,300 digits was an internal error in a
    scenario, a sweep file and a sweep's base scenario."""
    big = "9" * 5000
    p = tmp_path / "s.toml"
    p.write_text(_scn(body="[[flow]]\n").replace("[scenario]\n", f"[scenario]\nseed = {big}\n", 1))
    sw = tmp_path / "sw.toml"
    sw.write_text('[sweep]\nbase = "s.toml"\n[axes]\n"topology.rate" = ["1Mbps"]\n')
    sw2 = tmp_path / "sw2.toml"
    sw2.write_text(f"[sweep]\nseeds = [{big}]\n")
    for argv, where in ((["validate", str(p)], f"{p}:3"),   # (BASE starts with an empty line)
                        (["sweep", str(sw), "--out", str(tmp_path / "o"), "--dry-run"], f"{p}:3"),
                        (["sweep", str(sw2), "--out", str(tmp_path / "o"), "--dry-run"], f"{sw2}:2"),
                        (["sweep", "/dev/zero", "--out", str(tmp_path / "o"), "--dry-run"], "/dev/zero")):
        r = qoelab_cli(*argv)
        assert r.returncode == 2, r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert f"{where}: expected" in line, line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("topo,where", [
    ('buffer = "8000001pkts"', "topology.buffer"),
    ('buffer = "2GB"', "topology.buffer"),
    ('buffer_up = "9000000pkts"', "topology.buffer_up"),
    ('aqm = "fq_codel"\n[topology.aqm_params]\nlimit = 100000000', "topology.aqm_params.limit"),
    ('aqm = "codel"\n[topology.aqm_params]\nlimit_bytes = 2000000000', "topology.aqm_params.limit_bytes"),
    ('aqm = "red"\n[topology.aqm_params]\nlimit = 2000000000', "topology.aqm_params.limit"),
])
def test_queue_limits_bounded_by_memory(tmp_path, topo, where):
    """A queue keeps ~100 bytes per packet up to its limit and TCP fills any limit: limits above
    what memory holds were accepted (up to 10^9 packets) and aborted out of memory under load."""
    err = _err(tmp_path, _scn(topo=topo, body="[[flow]]\n"))
    assert err is not None and _where(err) == where, err
    assert _err(tmp_path, _scn(topo='buffer = "8000000pkts"', body="[[flow]]\n")) is None
    assert _err(tmp_path, _scn(topo='buffer = "1GiB"', body="[[flow]]\n")) is None


def test_tiled_byte_layout_beyond_2_64_names_video_duration(tmp_path):
    """A Video JSON whose byte offsets end near 2^64, tiled by video_duration: the core's u64 offsets
    overflowed ("s.toml: a value is out of range"); now the key that tiles it is named."""
    big = 2**64 - 3000
    v = {"name": "x", "segment_duration": 2_000_000_000, "bitrates_bps": [1_000_000], "sizes": [[1000], [1000]],
         "byte_offsets": [[big - 2500], [big - 1500]]}
    files = {"v.json": json.dumps(v)}
    body = '[[client]]\nvideo = "v.json"\n'
    assert _err(tmp_path, _scn(body=body), files) is None
    err = _err(tmp_path, _scn(body=body + 'video_duration = "40s"\n'), files)
    assert err is not None and _where(err) == "client[0].video_duration" and "2^64" in err, err


@pytest.mark.parametrize("rate,ok", [("100000Gbps", False), ("10000Gbps", False), ("7000Gbps", False),
                                     ("6000Gbps", True), ("1100Gbps", True), ("400Gbps", True)])
def test_link_rate_the_clock_cannot_honour(tmp_path, rate, ok):
    """A 1500-byte packet's serialization is rounded up to whole ns: 100 Tbit/s ran as 12, 10 as 6,
    7 as 6 (1.71 ns -> 2 ns); refused like CBR rates. 1.1 Tbit/s is 10.9 ns -> 11 (0.9%)."""
    e = _err(tmp_path, _scn("10ms", rate, 'access_rate = "12000Gbps"\nrtt = "100us"', "[[flow]]\n"))
    if ok:
        assert e is None, e
    else:
        assert _where(e) == "topology.rate" and "whole number of ns" in e, e


def test_run_stops_at_its_memory_limit(tmp_path):
    """What the estimates before the run cannot know (web flows on an overloaded link are sampled
    until they end, which they may never do) is caught while it runs: one line naming output, exit 2,
    nothing written. Shown with a 20 MB limit; by default 2 GB (that scenario for 100 s aborted out of
    memory at 2.5 GB before)."""
    import subprocess
    import sys

    from conftest import REPO
    p = tmp_path / "s.toml"
    p.write_text(_scn("100s", "1Mbps", "", '[[flow]]\nkind = "web"\narrival_rate = 199.0\n'))
    out = tmp_path / "o"

    def run(limit):
        env = dict(os.environ, QOELAB_RUN_MEMORY_MB=limit)
        return subprocess.run([sys.executable, "-m", "qoelab.cli", "run", str(p), "--out", str(out)], env=env,
                              capture_output=True, text=True, cwd=REPO, timeout=300)
    r = run("20")
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert f"{p}:output: the run outgrew its memory limit" in line and "(limit 0.02 GB" in line, line
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["s.toml"]
    r = run("lots")
    assert r.returncode == 2 and "QOELAB_RUN_MEMORY_MB" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_delay_longer_than_the_default_rtt_names_the_topology(tmp_path):
    """topology.delay of 60 s with the default 40 ms RTT was blamed on flow[0].rtt, a key the file
    does not set; a flow's own rtt is still named when it is the one too short."""
    e = _err(tmp_path, _scn(topo='delay = "60s"', body="[[flow]]\n"))
    assert _where(e) == "topology" and "60000 ms" in e, e
    e = _err(tmp_path, _scn(topo='delay = "1s"\nrtt = "3s"', body='[[flow]]\nrtt = "1s"\n'))
    assert _where(e) == "flow[0].rtt", e


def test_tera_and_peta_units_read_as_the_limits_are_written():
    """The limits are written in Tbps, PB and TiB (docs, error messages); those units parse, at the
    limits and one step beyond them."""
    from qoelab import units
    assert units.rate("12Tbps") == units.rate("12000Gbps") == 12 * 10**12
    assert units.rate("1.1Tbit/s") == 11 * 10**11
    assert units.rate("100Tbps") == units.MAX_RATE_BPS
    assert units.size("1PB") == units.MAX_SIZE_BYTES and units.size("1TB") == 10**12
    assert units.size("1TiB") == 2**40
    for bad, fn in (("101Tbps", units.rate), ("1.1PB", units.size)):
        with pytest.raises(ValueError, match="at most"):
            fn(bad)
