"""`qoelab minerva normalize` and the cache of `qoelab minerva` results (docs/minerva-tools.md)."""

import json
import os

import pytest

from conftest import qoelab_cli
from qoelab import minerva as mv

A = {"name": "a", "segment_duration": 4000000000, "bitrates_bps": [1000000, 3000000],
     "sizes": [[500000, 1500000]] * 3, "quality": {"vmaf": [[40, 80]] * 3}}
B = {"name": "b", "segment_duration": 4000000000, "bitrates_bps": [1000000, 3000000],
     "sizes": [[500000, 1500000]] * 3, "quality": {"vmaf": [[60, 90]] * 3}}


def _interp(xs, ys, x):
    for i in range(1, len(xs)):
        if x <= xs[i]:
            return ys[i - 1] + (x - xs[i - 1]) / (xs[i] - xs[i - 1]) * (ys[i] - ys[i - 1])
    return ys[-1]


def test_normalization_is_monotone_and_one_video_gets_alpha_at_its_fair_share(tmp_path, monkeypatch):
    monkeypatch.setenv("QOELAB_CACHE", str(tmp_path / "c"))
    n = mv.normalization([A], alpha=1.65)
    u, m = n["utility"], n["mean_rate_bps"]
    assert all(x < y for x, y in zip(u, u[1:])) and all(x <= y for x, y in zip(m, m[1:]))
    for r in (0.5e6, 1e6, 2e6, 2.9e6):
        q = _interp([0, 1e6, 3e6], [0, 40, 80], r)        # U(r), Eq. 2
        w = r / (_interp(u, m, q) / n["alpha"])
        assert w == pytest.approx(1.65, rel=1e-6)
    both = mv.normalization([A, B], popularity=[3, 1], alpha=1.0)
    assert both["popularity"] == [0.75, 0.25]
    # u = 75: a needs 2.75 Mbit/s, b 2 Mbit/s
    assert _interp(both["utility"], both["mean_rate_bps"], 75) == pytest.approx(0.75 * 2.75e6 + 0.25 * 2e6)


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return str(p)


def test_normalize_cli_round_trip_into_a_scenario(tmp_path):
    env = {"QOELAB_CACHE": str(tmp_path / "c")}
    a, b = _write(tmp_path, "a.json", A), _write(tmp_path, "b.json", B)
    out = tmp_path / "n.json"
    r = qoelab_cli_env(env, "minerva", "normalize", "--videos", a, b, "--alpha", "0.825", "--out", str(out))
    assert r.returncode == 0, r.stderr
    n = json.loads(out.read_text())
    assert n["format"] == "qoelab.normalization" and n["version"] == 1 and n["alpha"] == 0.825
    assert n == mv.load_normalization(str(out), "x")
    s = tmp_path / "s.toml"
    s.write_text(f"""[scenario]
duration = "8s"
[topology]
rate = "4Mbps"
rtt = "20ms"
[[client]]
name = "a"
video = "a.json"
cc = "wcubic"
[[provider]]
controller = "minerva"
clients = ["a"]
normalization_file = "n.json"
""")
    r = qoelab_cli("run", str(s), "--out", str(tmp_path / "out"), "--json")
    assert r.returncode == 0, r.stderr


def qoelab_cli_env(env, *args):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return qoelab_cli(*args)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_cache_hits_on_same_inputs_and_misses_on_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("QOELAB_CACHE", str(tmp_path / "c"))
    s0 = dict(mv.CACHE_STATS)
    n1 = mv.normalization([A, B])
    (f,) = os.listdir(tmp_path / "c")
    t = os.stat(tmp_path / "c" / f).st_mtime_ns
    n2 = mv.normalization([A, B])
    assert n1 == n2 and os.stat(tmp_path / "c" / f).st_mtime_ns == t
    assert mv.CACHE_STATS["hits"] == s0["hits"] + 1 and mv.CACHE_STATS["misses"] == s0["misses"] + 1
    mv.normalization([A, B], alpha=1.0)                      # changed parameter
    b2 = dict(B, quality={"vmaf": [[61, 90]] * 3})
    mv.normalization([A, b2])                                # changed video
    assert mv.CACHE_STATS["misses"] == s0["misses"] + 3 and len(os.listdir(tmp_path / "c")) == 3
    mv.normalization([A, B], use_cache=False)
    assert mv.CACHE_STATS["misses"] == s0["misses"] + 3 and mv.CACHE_STATS["hits"] == s0["hits"] + 1
    v1 = mv.value_function(A, rate_max_bps=2e6, rate_step_bps=5e5, buffer_max_s=4, buffer_step_s=2)
    v2 = mv.value_function(A, rate_max_bps=2e6, rate_step_bps=5e5, buffer_max_s=4, buffer_step_s=2)
    assert v1 == v2 and mv.CACHE_STATS["hits"] == s0["hits"] + 2
    mv.value_function(A, horizon=3, rate_max_bps=2e6, rate_step_bps=5e5, buffer_max_s=4, buffer_step_s=2)
    assert mv.CACHE_STATS["misses"] == s0["misses"] + 5


@pytest.mark.parametrize("argv,key", [
    (["--videos", "a.json", "--popularity", "1", "2"], "--popularity"),
    (["--videos", "a.json", "--popularity", "-1"], "--popularity"),
    (["--videos", "a.json", "--alpha", "0"], "--alpha"),
    (["--videos", "a.json", "--objective", "propfair", "--pf-c", "inf"], "--pf-c"),
    (["--videos", "a.json", "--metric", "psnr"], "--metric"),
    (["--videos", "nope.json"], "nope.json"),
    (["--videos", "a.json", "a.json"], "--videos"),
])
def test_normalize_bad_arguments(tmp_path, argv, key):
    _write(tmp_path, "a.json", A)
    argv = [str(tmp_path / x) if x.endswith(".json") else x for x in argv]
    r = qoelab_cli("minerva", "normalize", *argv, "--no-cache", "--out", str(tmp_path / "n.json"))
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert key in line and "Traceback" not in line
    assert not (tmp_path / "n.json").exists()


def _ladder_video(name, q, n=30):
    return {"name": name, "segment_duration": 4000000000, "bitrates_bps": [1000000, 2000000, 4000000],
            "sizes": [[500000, 1000000, 2000000]] * n, "quality": {"vmaf": [q] * n}}


def test_fixed_rate_optimal_gives_the_steep_video_more_rate_and_equal_qoe():
    steep, flat = _ladder_video("steep", [20, 50, 90]), _ladder_video("flat", [70, 80, 90])
    r = mv.fixed_rate_optimal([steep, flat], 4e6, abr="eq2", tol=0.001, use_cache=False)
    s, f = r["videos"]
    assert s["rate_bps"] > f["rate_bps"]
    assert s["qoe"] == pytest.approx(f["qoe"], abs=0.001) and r["min_qoe"] == pytest.approx(70, abs=0.002)
    assert s["rate_bps"] == pytest.approx(3e6, rel=1e-3) and f["rate_bps"] == pytest.approx(1e6, rel=1e-3)
    assert r["spare_bps"] >= 0 and r["spare_bps"] < 1e3
    assert r["min_qoe"] > 50 + 10  # the equal split gives the steep video 50


def test_fixed_rate_optimal_in_trace_mode_and_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("QOELAB_CACHE", str(tmp_path / "c"))
    steep, flat = _ladder_video("steep", [20, 50, 90], 15), _ladder_video("flat", [70, 80, 90], 15)
    r = mv.fixed_rate_optimal([steep, flat], 4e6, abr="bb", grid_points=8, window_s=60)
    s, f = r["videos"]
    assert s["rate_bps"] >= f["rate_bps"] and sum(v["rate_bps"] for v in r["videos"]) <= 4e6 + 1
    assert r["min_qoe"] == min(s["qoe"], f["qoe"])
    # The curves are cached per video: a combination sharing a video reuses that video's curve, and a
    # video's curve is the same whichever video it is combined with.
    mid = _ladder_video("mid", [40, 60, 90], 15)
    s0 = dict(mv.CACHE_STATS)
    r2 = mv.fixed_rate_optimal([mid, steep], 4e6, abr="bb", grid_points=8, window_s=60)
    assert mv.CACHE_STATS["hits"] == s0["hits"] + 1 and mv.CACHE_STATS["misses"] == s0["misses"] + 1
    assert r2["curves"][1] == r["curves"][0]
    alone = [mv.constant_rate_qoe([steep], g, "bb", window_s=60)[0] for g in r["curves"][0]["rates_bps"]]
    both = [mv.constant_rate_qoe([mid, steep], g, "bb", window_s=60)[1] for g in r["curves"][0]["rates_bps"]]
    assert alone == both
    a, b = _write(tmp_path, "s.json", steep), _write(tmp_path, "f.json", flat)
    out = tmp_path / "fro.json"
    res = qoelab_cli_env({"QOELAB_CACHE": str(tmp_path / "c")}, "minerva", "fixed-rate-optimal", "--videos", a, b,
                         "--rate", "4Mbps", "--out", str(out))
    assert res.returncode == 0, res.stderr
    got = json.loads(out.read_text())
    assert got["format"] == "qoelab.fixed_rate_optimal" and got["min_qoe"] == pytest.approx(70, abs=0.01)
    bad = qoelab_cli("minerva", "fixed-rate-optimal", "--videos", a, "--rate", "4Mbps", "--abr", "nope",
                     "--out", str(tmp_path / "x.json"))
    assert bad.returncode == 2 and "--abr" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_output_file_that_is_a_directory_is_refused_before_the_work(tmp_path):
    _write(tmp_path, "a.json", A)
    for cmd in (["normalize", "--videos", str(tmp_path / "a.json")],
                ["value-function", str(tmp_path / "a.json")]):
        r = qoelab_cli("minerva", *cmd, "--no-cache", "--out", str(tmp_path))
        assert r.returncode == 2, r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert "--out names a directory" in line, line


def test_value_function_grid_is_bounded_and_interruptible(tmp_path):
    """--rate-step 1bps ran out of memory (a Rust abort, exit 134) and a long computation ignored
    Ctrl-C and SIGTERM (the core call held the main thread): a grid over 5 x 10^6 values is one line,
    and a signal ends the command within a second, writing nothing (515,200 values at horizon 8,
    about 20 s of work)."""
    import signal
    import subprocess
    import sys
    import time
    from conftest import REPO, qoelab_cli
    base = ["minerva", "value-function", "synthetic:has-testbed", "--metric", "bitrate", "--no-cache"]
    for extra, needle in ((["--rate-step", "1bps"], "--rate-step/--buffer-step: expected a grid of at most 5,000,000"),
                          (["--buffer-step", "1ns"], "80 rates x 40,000,000,001 buffers"),
                          (["--rate-max", "1bps"], "--rate-max: expected a rate >= --rate-step")):
        r = qoelab_cli(*base, "--out", str(tmp_path / "vf.json"), *extra)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", *base, "--horizon", "8", "--rate-step", "20kbps",
                              "--buffer-step", "0.25s", "--out", str(tmp_path / "vf.json")], cwd=REPO,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)
        assert p.poll() is None, "the computation ended before the signal"
        p.send_signal(sig)
        t0 = time.monotonic()
        _, err = p.communicate(timeout=30)
        assert time.monotonic() - t0 < 5.0 and p.returncode == code, (p.returncode, err)   # (was > 30 s)
        assert err.count("\n") == 1 and ("interrupted" if code == 130 else "terminated") in err, err
    assert os.listdir(tmp_path) == []


def test_referenced_files_are_regular_and_their_keys_named(tmp_path):
    """normalization_file and value_functions read a FIFO (blocked) or /dev/zero (filled memory); a
    value-function file without `beta` was "a value is out of range" of the scenario."""
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    for load in (mv.load_normalization, mv.load_value_function):
        for p, needle in ((str(fifo), "found a device, pipe or socket"), ("/dev/zero", "found a device, pipe or socket"),
                          (str(tmp_path), "found a folder")):
            with pytest.raises(mv.InputError, match="provider\\[0\\].x") as e:
                load(p, "provider[0].x")
            assert needle in str(e.value) and "\n" not in str(e.value)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    with pytest.raises(mv.InputError, match="is not JSON: lists or objects nested too deeply"):
        mv.load_value_function(str(deep), "provider[0].value_functions")
    vf = mv.value_function(mv.load_video_spec("synthetic:has-testbed"), metric="bitrate", horizon=1,
                           rate_step_bps=1e6, buffer_step_s=10.0, use_cache=False)
    for key, val, needle in (("beta", None, "key beta: expected a finite number, found nothing"),
                             ("horizon", 0, "key horizon: expected an integer from 1 to 8, found 0"),
                             ("values", [[["x"]]], "key values: expected a list (rungs)"),
                             ("video", 3, "key video: expected a string, found 3")):
        doc = dict(vf)
        if val is None:
            del doc[key]
        else:
            doc[key] = val
        p = tmp_path / f"vf-{key}.json"
        p.write_text(json.dumps(doc))
        with pytest.raises(mv.InputError) as e:
            mv.load_value_function(str(p), "provider[0].value_functions")
        assert f"provider[0].value_functions: {p}: {needle}" in str(e.value), str(e.value)


def test_fixed_rate_optimal_tolerance_and_params(tmp_path):
    """--tol 1e-300 never ended (the bisection stops narrowing one float step apart); 20,000 nested
    brackets in --abr-params were an internal RecursionError; a 60-rung video at horizon 5 ran for
    minutes in value-function."""
    base = ["minerva", "fixed-rate-optimal", "--videos", "synthetic:has-testbed", "--metric", "bitrate",
            "--rate", "4Mbps", "--out", str(tmp_path / "o.json"), "--no-cache"]
    for extra, needle in ((["--tol", "1e-300"], "--tol: expected a tolerance >= 1e-09"),
                          (["--abr-params", "[" * 20_000], "--abr-params: expected a JSON object, found lists or "
                                                           "objects nested too deeply"),
                          (["--window", "0s"], "--window: expected a session of 1 s to 1 day")):
        r = qoelab_cli(*base, *extra)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
    video = mv.load_video_spec("synthetic:has-testbed")
    wide = dict(video, bitrates_bps=[100_000 * (k + 1) for k in range(60)],
                sizes=[[50_000 * (k + 1) for k in range(60)] for _ in video["sizes"]], quality={})
    with pytest.raises(mv.InputError, match="--horizon: expected a search of at most 1e\\+13 rung sequences"):
        mv.value_function(wide, metric="bitrate", horizon=5, use_cache=False)
    assert mv.MIN_TOL == 1e-9
    assert not os.path.exists(tmp_path / "o.json")


def test_damaged_cache_entries_are_computed_again(tmp_path, monkeypatch):
    """docs: "an unreadable entry is recomputed". A FIFO entry blocked, a /dev/zero link filled
    memory, a deeply nested or foreign object was an internal error (RecursionError, KeyError)."""
    monkeypatch.setenv("QOELAB_CACHE", str(tmp_path))
    video = mv.load_video_spec("synthetic:has-testbed")
    kw = dict(metric="bitrate", horizon=1, rate_step_bps=1e6, buffer_step_s=10.0)
    want = mv.value_function(video, **kw)
    (entry,) = [p for p in os.listdir(tmp_path) if p.startswith("value_function-")]
    entry = tmp_path / entry
    for damage in ("fifo", "zero", "deep", "foreign"):
        entry.unlink()
        if damage == "fifo":
            os.mkfifo(entry)
        elif damage == "zero":
            os.symlink("/dev/zero", entry)
        else:
            entry.write_text("[" * 100_000 if damage == "deep" else '{"format": "x"}')
        assert mv.value_function(video, **kw) == want
        assert json.loads(entry.read_text()) == want   # made again
