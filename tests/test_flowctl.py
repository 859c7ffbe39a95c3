"""Flow controllers on the packet network (issue 9): [[provider]] runs Minerva over its clients'
sessions and sets their weighted-CUBIC weights. Two videos with the quality curves hard-coded in
the public Minerva code (claims file §1.3), constant across chunks."""

import json

import pyarrow.parquet as pq

from qoelab import _core, results
from qoelab.video import synthetic_video

A = ([375, 1050, 1750, 2350, 3050, 4300], [14.21, 37.89, 49.42, 59.34, 66.39, 77.02])
B = ([375, 750, 1050, 1750, 3050, 4300], [52.15, 69.56, 78.46, 84.85, 92.72, 97.23])


def write_videos(d):
    for name, (rates, q) in (("A", A), ("B", B)):
        v = synthetic_video(rates, n_segments=30, segment_duration=4, seed=1, vbr=False, name=name)
        v["quality"] = {"vmaf": [list(q) for _ in range(30)]}
        (d / f"{name}.json").write_text(json.dumps(v))


def run(tmp_path, clients, providers, duration="120s", rate="5Mbps"):
    write_videos(tmp_path)
    text = f'[scenario]\nname = "fc"\nduration = "{duration}"\n[topology]\nrate = "{rate}"\nrtt = "20ms"\n' \
           'buffer = "1.5bdp"\n'
    for name, video, extra in clients:
        text += f'[[client]]\nname = "{name}"\nvideo = "{video}.json"\ncc = "wcubic"\n' \
                f'player = {{ quality_metric = "vmaf" }}\n{extra}\n'
    text += providers
    p = tmp_path / "s.toml"
    p.write_text(text)
    out = tmp_path / "out"
    results.run(str(p)).write(str(out), force=True)
    return json.loads((out / "summary.json").read_text()), out


def provider(clients, controller="minerva", name="p", extra=""):
    return f'[[provider]]\nname = "{name}"\ncontroller = "{controller}"\nclients = {json.dumps(clients)}\n{extra}\n'


def test_describe_lists_the_family():
    names = [e["name"] for e in json.loads(_core.describe("flow_controller"))]
    assert names == ["none", "minerva"]


def test_identical_videos_converge_to_equal_weights(tmp_path):
    # one entry with count = 2: the base name covers both copies
    s, out = run(tmp_path, [("c", "A", "count = 2")], provider(["c"]), duration="60s")
    fc = [c["flow_control"] for c in s["clients"]]
    assert [c["name"] for c in s["clients"]] == ["c-0", "c-1"]
    assert all(f["provider"] == "p" and f["controller"] == "minerva" and f["updates"] > 20 for f in fc)
    # tolerance: last and mean weights within 10% of each other
    for k in ("weight_last", "weight_mean"):
        a, b = fc[0][k], fc[1][k]
        assert abs(a - b) <= 0.1 * (a + b) / 2, (k, a, b)
    w = pq.read_table(out / "weights.parquet").to_pandas()
    assert list(w.columns) == ["time_s", "client", "provider", "weight", "utility", "rate_bps", "clamped"]
    assert w.weight.between(0.5, 20).all()
    assert set(w.client) == {"c-0", "c-1"}


def test_different_curves_move_toward_equal_quality(tmp_path):
    """App. B direction: the steep/low video A gets the larger weight, and the VMAF gap between the
    two clients shrinks to at most half of the gap without a controller (measured: 29 -> 3)."""
    clients = [("a", "A", ""), ("b", "B", "")]
    (tmp_path / "m").mkdir()
    (tmp_path / "n").mkdir()
    s, _ = run(tmp_path / "m", clients, provider(["a", "b"]))
    s0, _ = run(tmp_path / "n", clients, provider(["a", "b"], controller="none"))
    qa, qb = (c["avg_quality"] for c in s["clients"])
    qa0, qb0 = (c["avg_quality"] for c in s0["clients"])
    fa, fb = (c["flow_control"] for c in s["clients"])
    assert fa["weight_mean"] > 1.5 * fb["weight_mean"], (fa, fb)
    assert qb0 - qa0 > 10, (qa0, qb0)  # the setup has a gap to close
    assert abs(qa - qb) <= 0.5 * abs(qa0 - qb0), (qa, qb, qa0, qb0)
    assert s0["clients"][0]["flow_control"]["updates"] == 0


def test_two_providers_run_independent_controllers(tmp_path):
    clients = [("a", "A", ""), ("b", "B", ""), ("c", "A", ""), ("d", "B", "")]
    provs = provider(["a", "b"], name="vmaf") + provider(["c", "d"], name="other", extra='weight_ewma = 0.3')
    s, out = run(tmp_path, clients, provs, duration="40s", rate="10Mbps")
    assert [c["flow_control"]["provider"] for c in s["clients"]] == ["vmaf", "vmaf", "other", "other"]
    w = pq.read_table(out / "weights.parquet").to_pandas()
    assert set(w[w.provider == "vmaf"].client) == {"a", "b"}
    assert set(w[w.provider == "other"].client) == {"c", "d"}


def test_weights_are_reapplied_after_a_reconnect(tmp_path):
    """Sprint-x resets a connection on every switch cancel; each new response flow must carry
    the client's current weight from its first sample on (tcp table vs weights table)."""
    text = '''[scenario]
name = "rs"
duration = "60s"
[topology]
rate_profile = [["0s", "6Mbps"], ["10s", "0.8Mbps"], ["20s", "6Mbps"], ["30s", "0.8Mbps"], ["40s", "6Mbps"],
                ["50s", "0.8Mbps"]]
rate_up = "10Mbps"
rtt = "20ms"
buffer = "1.5bdp"
[[client]]
name = "a"
count = 2
cc = "wcubic"
video = "synthetic:has-testbed"
video_duration = "60s"
data_plane = { kind = "sprint-x" }
[[provider]]
controller = "minerva"
clients = ["a"]
metric = "bitrate"
'''
    p = tmp_path / "s.toml"
    p.write_text(text)
    out = tmp_path / "out"
    results.run(str(p)).write(str(out), force=True)
    s = json.loads((out / "summary.json").read_text())
    assert all(c["http"]["resets"] >= 3 for c in s["clients"])
    fi = pq.read_table(out / "flow_info.parquet").to_pandas()
    tcp = pq.read_table(out / "tcp.parquet").to_pandas()
    w = pq.read_table(out / "weights.parquet").to_pandas()
    checked = 0
    for _, f in fi[fi.name.str.contains("/resp~")].iterrows():
        client = f["name"].split("/")[0]
        hist = w[w.client == client]
        for _, row in tcp[tcp.flow == f["flow"]].iterrows():
            # the weight set last before the sample (the sample and the update may share a time)
            before = hist[hist.time_s < row.time_s - 1e-9]
            if before.empty or (hist.time_s - row.time_s).abs().min() < 1e-6:
                continue
            assert abs(row.weight - before.weight.iloc[-1]) < 1e-9, (f["name"], row.time_s)
            checked += 1
    assert checked > 20
    # a controller set weights other than 1 on reconnected flows
    assert (tcp[tcp.flow.isin(fi[fi.name.str.contains("/resp~")].flow)].weight != 1.0).any()


def test_value_function_command_and_client_utility(tmp_path):
    """`qoelab minerva value-function` writes the documented format, monotone in rate and buffer;
    a provider with utility = "client" loads one per video and runs."""
    from conftest import qoelab_cli
    write_videos(tmp_path)
    for v in ("A", "B"):
        r = qoelab_cli("minerva", "value-function", str(tmp_path / f"{v}.json"), "--out", str(tmp_path / f"{v}.vf.json"),
                       "--rate-max", "6Mbps", "--rate-step", "200kbps", "--buffer-step", "1s")
        assert r.returncode == 0, r.stderr
    vf = json.loads((tmp_path / "A.vf.json").read_text())
    assert vf["format"] == "qoelab.value_function" and vf["version"] == 1 and vf["video"] == "A"
    assert (vf["horizon"], vf["metric"], len(vf["rates_bps"]), len(vf["buffers_s"])) == (5, "vmaf", 30, 41)
    assert len(vf["values"]) == 6
    for t in vf["values"]:
        for ri in range(len(t)):
            for bi in range(len(t[ri])):
                assert ri == 0 or t[ri][bi] >= t[ri - 1][bi] - 1e-9
                assert bi == 0 or t[ri][bi] >= t[ri][bi - 1] - 1e-9
    (tmp_path / "r").mkdir()
    for v in ("A", "B"):
        (tmp_path / "r" / f"{v}.vf.json").write_text((tmp_path / f"{v}.vf.json").read_text())
    s, out = run(tmp_path / "r", [("a", "A", ""), ("b", "B", "")],
                 provider(["a", "b"], extra='utility = "client"\nvalue_functions = ["A.vf.json", "B.vf.json"]'),
                 duration="60s")
    fa, fb = (c["flow_control"] for c in s["clients"])
    assert fa["updates"] > 10 and fb["updates"] > 10
    assert fa["weight_mean"] > fb["weight_mean"]


def test_sessions_arriving_after_the_first_wake_up_are_controlled(tmp_path):
    """A provider whose clients are all sessions of arrival entries has no member at its first
    wake-up (0 s); the first session wakes it. Until 2026-11-30 its controller, with nothing to
    update, slept for good and no session was ever controlled (Minerva's §8.3 runs then equalled
    Cubic's once the sessions stopped arriving at 0 s)."""
    clients = [("a", "A", 'arrival_rate = 0.05\nvideo_duration = "60s"'),
               ("b", "B", 'arrival_rate = 0.05\nvideo_duration = "60s"')]
    s, out = run(tmp_path, clients, provider(["a", "b"]), duration="120s")
    sessions = [c for c in s["clients"] if "#" in c["name"]]
    assert len(sessions) >= 2, [c["name"] for c in s["clients"]]
    assert all(c["flow_control"]["updates"] > 0 for c in sessions), [c["flow_control"] for c in sessions]
