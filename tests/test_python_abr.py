"""ABRs written in Python run inside the simulation, once per decision."""

import os

import pytest

import qoelab
from conftest import qoelab_cli


class Greedy:
    def __init__(self, margin=0.9):
        self.margin = margin
        self.calls = 0
        self.downloads = 0

    def choose(self, obs):
        self.calls += 1
        assert obs["segment"] == self.calls - 1 or obs["history"][-1]["abandoned"]
        assert len(obs["sizes"]) == len(obs["bitrates_bps"])
        if not obs["history"]:
            return 0
        tput = obs["history"][-1]["tput_bps"] * self.margin
        ok = [i for i, b in enumerate(obs["bitrates_bps"]) if b <= tput]
        return {"rung": ok[-1] if ok else 0, "reason": f"greedy {tput / 1e6:.2f}"}

    def on_download(self, obs, record):
        self.downloads += 1


INSTANCES = []


class Tracked(Greedy):
    def __init__(self, **kw):
        super().__init__(**kw)
        INSTANCES.append(self)


def scn(abr, params=None):
    c = {"abr": abr, "video": "synthetic:pensieve", "video_duration": "60s"}
    if params:
        c["abr_params"] = params
    return {"scenario": {"name": "py", "duration": "80s"}, "topology": {"rate": "5Mbps", "rtt": "40ms"},
            "client": [c]}


def test_python_abr_decides_every_segment():
    INSTANCES.clear()
    res = qoelab.run(scn("python:tracked", {"margin": 0.9}), abrs={"python:tracked": Tracked})
    (abr,) = INSTANCES
    seg = res.table("segments")
    assert abr.calls == len(seg) == 15
    assert abr.downloads == 15
    assert seg.abr_reason.iloc[-1].startswith("greedy")
    # 0.9 x the request-to-last-byte sample (~4.76 Mbit/s: the request RTT counts) = 4.28 < 4.3:
    # the rule settles one rung below the top, at 2850 kbit/s
    assert seg.rung.iloc[-1] == 4


def test_python_abr_matches_builtin_behaviour_class():
    # A Python rate rule behaves like a rate rule: no stalls on a 5 Mbit/s link.
    res = qoelab.run(scn("python:g"), abrs={"python:g": Greedy})
    assert res.summary["clients"][0]["stall_count"] == 0


class BadRung:
    def choose(self, obs):
        return 42


def test_bad_return_value_is_a_one_line_error():
    with pytest.raises(qoelab.InputError) as e:
        qoelab.run(scn("python:bad"), abrs={"python:bad": BadRung})
    assert "rung 42" in str(e.value) and "\n" not in str(e.value)


def test_scenario_names_a_file(tmp_path):
    (tmp_path / "mine.py").write_text(
        "class Low:\n    def choose(self, obs):\n        return 0\n")
    (tmp_path / "s.toml").write_text(
        '[scenario]\nduration = "30s"\n[topology]\nrate = "5Mbps"\n[[client]]\nabr = "python:mine.py:Low"\n'
        'video = "synthetic:pensieve"\nvideo_duration = "20s"\n')
    r = qoelab_cli("run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--json")
    assert r.returncode == 0, r.stderr
    (tmp_path / "s.toml").write_text((tmp_path / "s.toml").read_text().replace("Low", "Nope"))
    r = qoelab_cli("run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and "client[0].abr" in r.stderr and "Nope" in r.stderr
    # an ABR that fails during the run names its client too (it said "s.toml:abr")
    (tmp_path / "mine.py").write_text("class Low:\n    def choose(self, obs):\n        raise ValueError('nope')\n")
    (tmp_path / "s.toml").write_text((tmp_path / "s.toml").read_text().replace("Nope", "Low"))
    r = qoelab_cli("run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o3"))
    assert r.returncode == 2 and "s.toml:client[0].abr: python:mine.py:Low: choose() raised ValueError: nope" \
        in r.stderr, r.stderr


class Exits:
    code = 0

    def choose(self, obs):
        raise SystemExit(self.code)


@pytest.mark.parametrize("code", [0, 3])
def test_exit_in_a_hook_is_the_abrs_error(tmp_path, code):
    """`exit(0)` in choose() ended `qoelab run` with status 0, no output and no message."""
    (tmp_path / "ex.py").write_text(f"class E:\n    def choose(self, obs):\n        raise SystemExit({code})\n")
    (tmp_path / "s.toml").write_text(
        '[scenario]\nduration = "30s"\n[topology]\nrate = "5Mbps"\n[[client]]\nabr = "python:ex.py:E"\n'
        'video = "synthetic:pensieve"\nvideo_duration = "20s"\n')
    r = qoelab_cli("run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "SystemExit" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


CALLS = []


class FailsFirst:
    def choose(self, obs):
        CALLS.append(obs["now_s"])
        raise ValueError("nope")


def test_the_run_stops_at_the_abrs_first_error():
    """The ABR was called again for every later decision until the end of the run (minutes for a
    slow one); now it is not called again and the run stops at the next slice."""
    CALLS.clear()
    with pytest.raises(qoelab.InputError, match="choose\\(\\) raised ValueError: nope"):
        qoelab.run(scn("python:f"), abrs={"python:f": FailsFirst})
    assert len(CALLS) == 1


class Chatty(Greedy):
    def choose(self, obs):
        d = super().choose(obs)
        return {"rung": d if isinstance(d, int) else d["rung"], "reason": "x" * 10_000_000}


def test_a_huge_reason_is_cut():
    """A 50 MB reason per decision aborted the process (exit 134); reasons keep 256 bytes."""
    res = qoelab.run(scn("python:c"), abrs={"python:c": Chatty})
    reasons = res.table("segments").abr_reason
    assert len(reasons) == 15 and reasons.str.len().max() == 256


@pytest.mark.parametrize("module,ok", [
    # a dataclass with postponed annotations looks its module up in sys.modules (it was not there)
    ("from __future__ import annotations\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Cfg:\n"
     "    margin: float = 0.9\n\n\nclass A:\n    def __init__(self):\n        self.c = Cfg()\n\n"
     "    def choose(self, obs):\n        return 0\n", True),
    # a BaseException at import was an internal error (exit 1)
    ("class B(BaseException):\n    pass\n\n\nraise B('import base')\n", False),
])
def test_module_import_like_python(tmp_path, module, ok):
    (tmp_path / "m.py").write_text(module)
    (tmp_path / "s.toml").write_text(
        '[scenario]\nduration = "10s"\n[topology]\nrate = "5Mbps"\n[[client]]\nabr = "python:m.py:A"\n'
        'video = "synthetic:pensieve"\nvideo_duration = "8s"\n')
    r = qoelab_cli("validate", str(tmp_path / "s.toml"))
    if ok:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 2 and "client[0].abr: importing m.py failed: B: import base" in r.stderr, r.stderr


@pytest.mark.parametrize("ret,what", [
    (True, "returned True"),                                         # was rung 1
    ((1, True), "returned (1, True)"),                               # was a 1 s delay
    ({"rung": 1, "delay_s": "5"}, '"delay_s" that is not a number'),  # was 0 s
    ({"rung": 1, "rugn": 2}, "the key 'rugn'"),                       # was ignored
    ({"rung": 1, "reason": 42}, '"reason" that is not a string'),     # was "python"
    ({"rung": True}, 'without an int "rung"'),
])
def test_decisions_are_never_silently_changed(ret, what):
    class R:
        def choose(self, obs):
            return ret
    with pytest.raises(qoelab.InputError) as e:
        qoelab.run(scn("python:r"), abrs={"python:r": R})
    assert what in str(e.value), str(e.value)


def test_good_decision_forms_still_run():
    import numpy as np

    class R:
        def choose(self, obs):
            k = obs["segment"] % 3
            return [1, (np.int64(2), 0.0), {"rung": 0, "delay_s": 0, "reason": "ok"}][k]
    res = qoelab.run(scn("python:r"), abrs={"python:r": R})
    assert list(res.table("segments").rung[:3]) == [1, 2, 0]


SEEDS = []


class Seeded:
    def __init__(self, seed, margin=0.9):
        SEEDS.append(seed)
        self.rng = __import__("random").Random(seed)

    def choose(self, obs):
        return self.rng.randrange(len(obs["bitrates_bps"]))


def test_a_class_taking_seed_gets_the_clients_stream():
    """As the built-in randomized ABRs: derived from the scenario seed and the client's name,
    unless [client.abr_params] sets it; a class without a seed parameter gets none."""
    def two(seed=None, params=None):
        d = scn("python:s", params)
        d["client"][0]["count"] = 2
        if seed is not None:
            d["scenario"]["seed"] = seed
        return d
    SEEDS.clear()
    a = qoelab.run(two(), abrs={"python:s": Seeded}).table("segments")
    b = qoelab.run(two(), abrs={"python:s": Seeded}).table("segments")
    first = list(SEEDS)
    assert len(first) == 4 and first[:2] == first[2:] and first[0] != first[1]
    assert a.rung.tolist() == b.rung.tolist()
    SEEDS.clear()
    qoelab.run(two(seed=2), abrs={"python:s": Seeded})
    assert SEEDS[0] not in first and SEEDS[1] not in first
    SEEDS.clear()
    qoelab.run(two(params={"seed": 5}), abrs={"python:s": Seeded})
    assert SEEDS == [5, 5]
    qoelab.run(scn("python:g"), abrs={"python:g": Greedy})   # no seed parameter: none passed


STATEFUL = """import random
RUNS = 0
class Stateful:
    made = 0
    def __init__(self):
        global RUNS
        RUNS += 1
        Stateful.made += 1
    def choose(self, obs):
        # module and class state, and Python's global random: each would make a run depend on the
        # runs before it in the same process
        return (RUNS + Stateful.made + random.randrange(3)) % len(obs["bitrates_bps"])
"""


def test_module_state_and_global_random_do_not_carry_between_runs(tmp_path, monkeypatch):
    """A python:module:Class ABR with module-level state, class attributes and Python's global
    random gave a sweep results that depended on --jobs (the runs a worker had done before)."""
    import random
    (tmp_path / "stateful_abr_mod.py").write_text(STATEFUL)
    monkeypatch.syspath_prepend(str(tmp_path))
    d = scn("python:stateful_abr_mod:Stateful")
    runs = [qoelab.run(d).table("segments").rung.tolist() for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert len(set(runs[0])) > 1   # the draws vary within a run
    random.seed(11)
    want = random.random()
    random.seed(11)
    qoelab.run(d)
    assert random.random() == want   # the caller's generator is as it was
    other = qoelab.run(d, seed=99).table("segments").rung.tolist()
    assert other != runs[0]


def test_a_sweep_of_a_stateful_abr_is_the_same_with_any_jobs(tmp_path):
    (tmp_path / "stateful_abr_mod.py").write_text(STATEFUL)
    (tmp_path / "base.toml").write_text(
        '[scenario]\nduration = "12s"\nseed = 3\n[topology]\nrate = "5Mbps"\n[[client]]\n'
        'abr = "python:stateful_abr_mod:Stateful"\nvideo = "synthetic:pensieve"\nvideo_duration = "10s"\n')
    (tmp_path / "s.toml").write_text('[sweep]\nname = "st"\nbase = "base.toml"\nrepetitions = 3\n'
                                     '[axes]\n"topology.aqm" = ["pfifo", "codel"]\n')
    env = {"PYTHONPATH": str(tmp_path)}
    rows = []
    for jobs in ("1", "2"):
        out = str(tmp_path / f"o{jobs}")
        r = qoelab_cli("sweep", str(tmp_path / "s.toml"), "--out", out, "--jobs", jobs, "--quiet", env=env)
        assert r.returncode == 0, r.stderr
        r = qoelab_cli("query", out, "SELECT rep, aqm, bytes, switches FROM clients ORDER BY 1, 2",
                       "--format", "csv")
        rows.append(r.stdout)
    assert rows[0] == rows[1] and rows[0].count("\n") == 7, rows


def test_a_module_that_changes_directory_moves_no_relative_path(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "m.py").write_text(f"import os\nos.chdir({str(tmp_path / 'sub')!r})\n"
                                   "class A:\n    def choose(self, obs):\n        os.chdir('/')\n        return 0\n")
    (tmp_path / "s.toml").write_text(
        '[scenario]\nduration = "10s"\n[topology]\nrate = "5Mbps"\n[[client]]\nabr = "python:m.py:A"\n'
        'video = "synthetic:pensieve"\nvideo_duration = "8s"\n')
    r = qoelab_cli("run", "s.toml", "--out", "out", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "summary.json").is_file() and not (tmp_path / "sub" / "out").exists()


def test_a_thread_started_by_the_module_does_not_keep_the_command_running(tmp_path):
    (tmp_path / "m.py").write_text("import threading, time\nthreading.Thread(target=lambda: time.sleep(10**6)).start()\n"
                                   "class A:\n    def choose(self, obs):\n        return 0\n")
    (tmp_path / "s.toml").write_text(
        '[scenario]\nduration = "10s"\n[topology]\nrate = "5Mbps"\n[[client]]\nabr = "python:m.py:A"\n'
        'video = "synthetic:pensieve"\nvideo_duration = "8s"\n')
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "qoelab.cli", "run", str(tmp_path / "s.toml"), "--out",
                        str(tmp_path / "o"), "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and '"clients"' in r.stdout, r.stderr   # (waited forever before)


def test_a_sweep_run_key_covers_the_abr_source(tmp_path):
    """The configuration names a python: ABR only, so a sweep resumed after an edit of the ABR kept
    the runs of the old code as done. The module's source is part of each run's key: the edited
    sweep is another sweep (refused without --force, as any other change is)."""
    (tmp_path / "k.py").write_text("class K:\n    def choose(self, obs):\n        return 0\n")
    (tmp_path / "base.toml").write_text(
        '[scenario]\nduration = "6s"\n[topology]\nrate = "5Mbps"\n[[client]]\nabr = "python:k.py:K"\n'
        'video = "synthetic:pensieve"\nvideo_duration = "4s"\n')
    (tmp_path / "s.toml").write_text('[sweep]\nname = "k"\nbase = "base.toml"\n[axes]\n"topology.aqm" = ["pfifo"]\n')
    out = str(tmp_path / "o")
    r = qoelab_cli("sweep", str(tmp_path / "s.toml"), "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    r = qoelab_cli("sweep", str(tmp_path / "s.toml"), "--out", out, "--quiet")
    assert r.returncode == 0 and "1 were already in the store" in r.stdout + r.stderr, (r.stdout, r.stderr)
    (tmp_path / "k.py").write_text("class K:\n    def choose(self, obs):\n        return 1\n")
    r = qoelab_cli("sweep", str(tmp_path / "s.toml"), "--out", out, "--quiet")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = qoelab_cli("sweep", str(tmp_path / "s.toml"), "--out", out, "--quiet", "--force")
    assert r.returncode == 0, r.stderr
    r = qoelab_cli("query", out, "SELECT avg_bitrate_bps FROM clients", "--format", "csv")
    assert r.stdout.split() == ["avg_bitrate_bps", "750000.0"], r.stdout    # rung 1 of the Pensieve ladder
