"""Engine v2: driver-neutral session layer, typed summary, per-client ABR randomness."""

import os
import re

import pytest

import qoelab


def video(clients, duration="60s", network="packet", seed=1, tables=("segments",)):
    return {"scenario": {"name": "e", "duration": duration, "network": network, "seed": seed},
            "topology": {"rate": "6Mbps", "rtt": "40ms", "buffer": "1bdp"},
            "client": clients, "output": {"tables": list(tables)}}


def test_poisson_sessions_listed_before_a_fixed_client():
    # The config index of a [[client]] used to be taken as a runtime index: a Poisson entry
    # before a fixed one panicked at build.
    s = video([{"name": "p", "abr": "throughput", "video": "synthetic:has-testbed", "video_duration": "10s",
                "arrival_rate": 0.5, "stop": "30s"},
               {"name": "fixed", "abr": "bba0", "video": "synthetic:has-testbed", "video_duration": "40s"}])
    r = qoelab.run(s)
    names = [c["name"] for c in r.summary["clients"]]
    assert "fixed" in names and any(n.startswith("p#") for n in names), names
    fixed = next(c for c in r.summary["clients"] if c["name"] == "fixed")
    assert fixed["segments"] == 20 and fixed["stall_count"] == 0


def test_summary_is_typed_and_versioned():
    s = video([{"name": "v", "abr": "bolae", "video": "synthetic:has-testbed", "video_duration": "20s"}])
    a = qoelab.run(s).summary
    assert a["schema"] == "qoelab.summary" and a["schema_version"] == 2
    assert re.fullmatch(r"[0-9a-f]{64}", a["config_hash"])
    assert a["core_version"] == qoelab._core.version()
    assert a["network"] == "packet"
    b = qoelab.run(s).summary
    assert a == b
    c = qoelab.run(s, seed=2).summary
    assert c["config_hash"] != a["config_hash"]


def test_trace_mode_summary_has_no_links():
    s = video([{"name": "v", "abr": "bolae", "video": "synthetic:has-testbed", "video_duration": "20s"}],
              network="trace")
    r = qoelab.run(s)
    assert r.summary["network"] == "trace" and r.summary["links"] == [] and r.summary["events"] == 0
    assert r.summary["clients"][0]["segments"] == 10  # 2 s segments
    assert len(r.table("segments")) == 10


def festive_requests(seed, names=("a", "b")):
    # FESTIVE's randomized scheduling needs a buffer above its 30 s target.
    cl = [{"name": n, "abr": "festive", "video": "synthetic:has-testbed", "video_duration": "120s",
           "player": {"buffer_max": "60s"}} for n in names]
    r = qoelab.run(video(cl, duration="150s", seed=seed))
    seg = r.table("segments")
    return [tuple(seg[seg.client == i].t_request_s.round(6)) for i in range(len(names))]


def test_festive_draws_from_the_scenario_seed_and_the_client_name():
    a = festive_requests(1)
    assert a == festive_requests(1)
    assert a[0] != a[1]            # two clients: two streams
    assert a != festive_requests(2)  # another scenario seed: other draws


def test_festive_randomizes_with_the_default_player():
    """At the player's default limit (30 s, FESTIVE's target) every delay was 0: the randomized
    scheduling and its seed changed nothing. The player now adopts target + 2 segments."""
    def run(seed):
        cl = [{"name": "a", "abr": "festive", "video": "synthetic:has-testbed", "video_duration": "120s"}]
        r = qoelab.run(video(cl, duration="150s", seed=seed))
        seg = r.table("segments")
        return seg, r.summary["clients"][0]
    a, summ = run(1)
    b, _ = run(2)
    assert (a.abr_delay_s > 0).sum() > 10, a.abr_delay_s.describe()
    assert list(a.t_request_s) != list(b.t_request_s)
    assert a.buffer_after_s.max() <= 34.0 + 1e-9 and a.buffer_after_s.max() > 30.0


def test_bench_reports_speed_and_peak_memory_per_case():
    import json
    import subprocess
    import sys
    chunk = "video-4clients-chunklets10-fqcodel"
    bulk40 = "dumbbell-40cubic-10M-fqcodel-200s"
    p = subprocess.run([sys.executable, "-m", "qoelab.cli", "bench", "--quick", "--json",
                        "--case", "dumbbell-4cubic-10M-fqcodel-200s", "--case", chunk, "--case", bulk40],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    case, bulk, other = out["cases"]
    assert [c["case"] for c in out["cases"]] == ["dumbbell-4cubic-10M-fqcodel-200s", bulk40, chunk]
    assert case["bottleneck_packets"] > 10_000 and case["bottleneck_packets_per_s"] > 0
    assert 5 < case["peak_rss_mb"] < 2000
    assert case["events_per_packet"] == round(case["events"] / case["bottleneck_packets"], 2)
    # the data-plane comparison of the same run: packets/s and engine events per packet (the
    # chunklets case's 40 connections do more events per packet: delayed-ACK and RTO timers)
    vs = out["vs_reference"][chunk]
    assert vs["packets_per_s"] == round(other["bottleneck_packets_per_s"] / case["bottleneck_packets_per_s"], 3)
    assert 1.1 < vs["events_per_packet"] < 2
    # and paired: the two cases alternated in one process, round by round
    pr = vs["packets_per_s_paired"]
    assert pr["rounds"] == 7 and 0 < pr["min"] <= pr["median"] <= pr["max"] < 10
    # and against the bulk case with as many connections (40) and no data plane
    vb = out["vs_bulk"][chunk]
    assert vb["bulk_case"] == bulk40
    assert vb["packets_per_s"] == round(other["bottleneck_packets_per_s"] / bulk["bottleneck_packets_per_s"], 3)
    assert 0.8 < vb["events_per_packet"] < 1.25   # 40 connections either way: similar timers and ACKs
    assert 0 < vb["packets_per_s_paired"]["min"] <= vb["packets_per_s_paired"]["max"] < 10
    # what the machine was doing: load averages before and after, and its clock on Linux
    m = out["machine"]
    assert len(m["load_before"]) == 3 and len(m["load_after"]) == 3
    if os.path.exists("/proc/cpuinfo") and "cpu MHz" in open("/proc/cpuinfo").read():
        assert m["cpu_mhz"] > 0
    # which build was measured (tools/build-core): never the instrumented training build
    assert out["core_build"] in ("pgo+x86-64-v3", "pgo", "release", "debug"), out["core_build"]


def test_bench_cases_leave_no_temporary_folder(tmp_path):
    """Listing the bench cases writes the trace case's trace into a temporary folder of the process
    (it used to leave one folder behind per call: 508 of them on a development machine)."""
    import subprocess
    import sys
    env = dict(os.environ, TMPDIR=str(tmp_path))
    code = ("from qoelab import bench\n"
            "a = bench.cases(True); b = bench.cases(False)\n"
            "import os\n"
            "t = [s for n, _, s in a if 'trace' in s.get('topology', {})][0]['topology']['trace']\n"
            "assert os.path.exists(t)\n"
            "print(len(os.listdir(os.environ['TMPDIR'])))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "1"          # one folder while the process runs
    assert os.listdir(tmp_path) == []       # none after it


def test_aqm_parameters_that_would_hang_or_divide_by_zero_are_refused(tmp_path):
    import pytest
    from qoelab.errors import InputError
    base = {"scenario": {"name": "a", "duration": "5s"}, "topology": {"rate": "10Mbps", "rtt": "20ms"},
            "flow": [{"kind": "bulk"}]}
    for aqm, params, key in [("pie", {"tupdate": "1ns"}, "tupdate"), ("docsis-pie", {"tupdate": "1us"}, "tupdate"),
                             ("pie", {"dq_threshold": "0B"}, "dq_threshold"), ("red", {"avpkt": "0B"}, "avpkt")]:
        s = {**base, "topology": {**base["topology"], "aqm": aqm, "aqm_params": params}}
        with pytest.raises((InputError, ValueError)) as e:
            qoelab.run(s)
        assert key in str(e.value)


def test_core_stubs_match_the_extension():
    import ast
    import inspect
    import os
    from qoelab import _core
    stub = os.path.join(os.path.dirname(qoelab.__file__), "_core.pyi")
    declared = {n.name for n in ast.parse(open(stub).read()).body if isinstance(n, ast.FunctionDef)}
    actual = {n for n, f in inspect.getmembers(_core) if callable(f) and not n.startswith("_")}
    assert declared == actual, (declared ^ actual)


def test_callgrind_total_reads_the_summary_line(tmp_path):
    from qoelab.bench import callgrind_total
    f = tmp_path / "callgrind.out"
    f.write_text("version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfl=(1) a.rs\nfn=(1) f\n3 12\n"
                 "summary: 1234567\ntotals: 1234567\n")
    assert callgrind_total(str(f)) == 1234567
    f.write_text("events: Ir\ntotals: 42\n")  # older files: totals only
    assert callgrind_total(str(f)) == 42
    f.write_text("events: Ir\n")
    with pytest.raises(RuntimeError, match="no summary line"):
        callgrind_total(str(f))


def test_bench_instructions_without_valgrind_is_one_line(tmp_path):
    import subprocess
    import sys
    env = {**os.environ, "PATH": str(tmp_path)}  # no valgrind there
    p = subprocess.run([sys.executable, "-m", "qoelab.cli", "bench", "--instructions", "--quick"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "qoelab bench: error: --instructions: expected valgrind on the PATH (Debian: apt install valgrind), found none"]
    p = subprocess.run([sys.executable, "-m", "qoelab.cli", "bench", "--instructions", "--sweep", "20"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "does not apply to --sweep" in p.stderr
    p = subprocess.run([sys.executable, "-m", "qoelab.cli", "bench", "--instructions", "--case", "memory-1G-1h"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1
    assert "--case: expected a case other than the memory case" in p.stderr


def test_bench_instructions_count_the_event_loop():
    """`qoelab bench --instructions`: callgrind's count of the core's event loop, which grows with
    the simulated traffic (not the interpreter's start or the scenario's parsing)."""
    import shutil
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (Debian: apt install valgrind)")
    from qoelab import bench

    def child(duration):
        scn = bench._dumbbell("tiny", 1, "10Mbps", "fq_codel", duration)
        return ("import json\nfrom qoelab import _core, scenario\n"
                f"s = json.loads(_core.run(scenario.from_dict({scn!r}, '<t>').to_json())[0])\n"
                "print(json.dumps({'bottleneck_packets': s['packets']['bottleneck'], 'events': s['events'],"
                " 'simulated_s': s['duration_s']}))")
    a = bench.count_instructions("tiny", True, code=child("2s"))
    b = bench.count_instructions("tiny", True, code=child("4s"))
    assert 1_000 < a["bottleneck_packets"] < b["bottleneck_packets"]
    assert a["instructions_per_packet"] == round(a["instructions"] / a["bottleneck_packets"])
    assert a["instructions_per_event"] == round(a["instructions"] / a["events"])
    assert 500 < a["instructions_per_packet"] < 50_000, a
    # twice the traffic, about twice the instructions: the loop is counted, not a fixed cost
    assert 1.6 < b["instructions"] / a["instructions"] < 2.4, (a, b)


def _fake_build(root, packets):
    """A stand-in for a built qoelab package whose core 'runs' for 20 ms and reports `packets`
    bottleneck packets: two of them differ in speed by the ratio of their packet counts."""
    pkg = root / "qoelab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bench.py").write_text("def cases(quick):\n    return [('c1', 'x', {}), ('c2', 'y', {})]\n")
    (pkg / "scenario.py").write_text(
        "class _S:\n    def to_json(self):\n        return '{}'\n"
        "def from_dict(d, name):\n    return _S()\n")
    (pkg / "_core.py").write_text(
        "import json, os, time\n"
        "def run(cfg):\n"
        f"    open({str(root / 'pids')!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "    t = time.perf_counter()\n"
        "    while time.perf_counter() - t < 0.02:\n        pass\n"
        f"    return json.dumps({{'packets': {{'bottleneck': {packets}}}}}), None, None\n")
    return str(root)


def test_ab_bench_pairs_two_builds(tmp_path):
    """tools/ab_bench.py runs each build from its own directory, alternately, and reports B/A per
    case; bad input is one line, exit 2."""
    import json
    import subprocess
    import sys
    tool = os.path.join(os.path.dirname(__file__), "..", "tools", "ab_bench.py")
    a, b = _fake_build(tmp_path / "a", 1000), _fake_build(tmp_path / "b", 3000)
    p = subprocess.run([sys.executable, tool, a, b, "--rounds", "6", "--case", "c1", "--case", "c2", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)["cases"]
    assert set(res) == {"c1", "c2"}
    # The children are started again every 5 rounds (a child keeps its placement for life):
    # 6 rounds = two children per build, each with its own warm-up runs.
    for d in (a, b):
        pids = open(os.path.join(d, "pids")).read().split()
        assert len(set(pids)) == 2 and len(pids) == 2 * 2 + 6 * 2, pids
    for r in res.values():
        assert r["rounds"] == 6
        # 3x the packets in the same busy 20 ms: B is about three times A (loose: a shared machine)
        assert 1.5 < r["b_over_a_median"] < 6, r
        assert r["b_over_a_q1"] <= r["b_over_a_median"] <= r["b_over_a_q3"]
    for args, msg in [([a, str(tmp_path)], f"ab_bench: B: {tmp_path}: expected a directory holding the qoelab"),
                      ([a, b, "--case", "nope"], "ab_bench: A: unknown case nope"),
                      ([a, b, "--rounds", "0"], "ab_bench: --rounds: expected a count >= 1, got 0")]:
        p = subprocess.run([sys.executable, tool, *args], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and p.stdout == "", (args, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith(msg), p.stderr


def test_ab_bench_runs_the_real_package_against_itself():
    import json
    import subprocess
    import sys
    root = os.path.join(os.path.dirname(__file__), "..")
    pkg = os.path.dirname(os.path.dirname(qoelab.__file__))
    p = subprocess.run([sys.executable, os.path.join(root, "tools", "ab_bench.py"), pkg, pkg, "--quick", "--rounds", "1",
                        "--case", "dumbbell-4cubic-10M-fqcodel-200s", "--json"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["cases"]["dumbbell-4cubic-10M-fqcodel-200s"]
    assert r["a_packets_per_s_median"] > 1e4 and r["b_packets_per_s_median"] > 1e4, r


def test_perf_lines_maps_samples_to_core_lines(tmp_path):
    """tools/perf_lines.py: a cpu-clock profile of a run, by line of crates/qoelab-core."""
    import shutil
    import subprocess
    import sys
    if shutil.which("perf") is None or shutil.which("addr2line") is None:
        pytest.skip("perf or addr2line is not installed (Debian: apt install linux-perf binutils)")
    from qoelab import bench
    scn = bench._dumbbell("tiny", 2, "10Mbps", "fq_codel", "60s")
    code = ("from qoelab import _core, scenario\n"
            f"cfg = scenario.from_dict({scn!r}, '<t>').to_json()\n"
            "for _ in range(3):\n    _core.run(cfg)\n")
    data = tmp_path / "perf.data"
    p = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-o", str(data), sys.executable, "-c",
                        code], capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not data.exists():
        pytest.skip(f"perf record does not work here: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    tool = os.path.join(os.path.dirname(__file__), "..", "tools", "perf_lines.py")
    p = subprocess.run([sys.executable, tool, str(data), "--top", "10"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = p.stdout.strip().splitlines()
    assert "samples" in rows[0] and len(rows) == 11
    shares = [float(r.split("%")[0]) for r in rows[1:]]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 100.01
    # the engine's own files, not the standard library's, name the lines
    assert sum(bool(re.search(r"\s(sim|net|tcp|aqm|cc)/\w+\.rs:\d+", r)) for r in rows[1:]) >= 5, p.stdout
    p = subprocess.run([sys.executable, tool, str(tmp_path / "none.data")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [f"perf_lines: {tmp_path / 'none.data'}: no such file"]


def test_a_bulk_flow_that_never_runs_does_not_count_in_jain_index():
    def scn(extra):
        s = {"scenario": {"name": "j", "duration": "20s"},
             "topology": {"rate": "10Mbps", "rtt": "20ms", "aqm": "fq_codel"},
             "flow": [{"name": "a", "count": 2}]}
        if extra:
            s["flow"].append({"name": "late", "start": "30s"})
        return s
    a, b = qoelab.run(scn(False)), qoelab.run(scn(True))
    assert a.summary["jain_index"] > 0.9
    assert b.summary["jain_index"] == a.summary["jain_index"]


def test_a_client_that_never_starts_does_not_count_in_the_video_fairness():
    def scn(extra):
        v = {"video": "synthetic:sabre-bbb", "video_duration": "30s"}
        clients = [{"name": "a", "abr": "dynamic", **v}, {"name": "b", "abr": "bola", **v}]
        if extra:
            clients.append({"name": "late", "abr": "dynamic", "start": "40s", **v})
        return video(clients, duration="30s")
    a, b = qoelab.run(scn(False)), qoelab.run(scn(True))
    assert a.summary["video"]["clients"] == 2
    assert b.summary["video"] == a.summary["video"]
    assert [c["name"] for c in b.summary["clients"]] == ["a", "b", "late"]


def test_poisson_sessions_do_not_all_begin_at_start():
    """A Poisson process from `start` has its first arrival an exponential gap after it: 16 entries
    of 0.01 sessions/s each (0.16/s in all) begin no session at 0 and about 0.16 x 60 s ~ 10 in a
    minute. Until 2026-11-30 each entry's first session was at `start`: 16 sessions at 0 s."""
    cl = [{"name": f"p{i}", "abr": "throughput", "video": "synthetic:has-testbed", "video_duration": "10s",
           "arrival_rate": 0.01} for i in range(16)]
    r = qoelab.run(video(cl, duration="60s"))
    seg = r.table("segments")
    first = seg.groupby("client")["t_request_s"].min()
    sessions = [c for c in r.summary["clients"] if "#" in c["name"]]
    assert (first > 0.5).all(), first.sort_values().head()
    assert 3 <= len(sessions) <= 18, len(sessions)
