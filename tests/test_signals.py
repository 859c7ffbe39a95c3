"""Ctrl-C and SIGTERM stop a run within a second: one line on stderr, exit 130/143, no output left.

Also: an existing --out is refused before simulating, stale temporary directories are cleaned, a
Python ABR sees KeyboardInterrupt as an interruption (not as its own error), results have normal
permissions.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import REPO

LONG = textwrap.dedent("""\
    [scenario]
    name = "long"
    duration = "3000s"
    seed = 1

    [topology]
    kind = "dumbbell"
    rate = "100Mbps"
    rtt = "20ms"
    buffer = "1000pkts"
    aqm = "fq_codel"

    [[flow]]
    kind = "bulk"
    name = "cubic"
    cc = "cubic"
    count = 4
    """)


def _start(tmp_path, *extra):
    sc = tmp_path / "long.toml"
    sc.write_text(LONG)
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "run", str(sc), "--out", str(out), *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    return p, out


def _wait_simulating(p, seconds=2.0):
    # past imports and scenario loading, well into the simulation (which takes minutes)
    time.sleep(seconds)
    assert p.poll() is None, p.communicate()


@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated"),
                                            (signal.SIGHUP, 129, "terminated (SIGHUP)")])
def test_signal_stops_run_quickly_and_leaves_nothing(tmp_path, sig, code, word):
    p, out = _start(tmp_path)
    _wait_simulating(p)
    t0 = time.monotonic()
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=10)
    dt = time.monotonic() - t0
    assert p.returncode == code, (stdout, stderr)
    assert dt < 1.5, f"took {dt:.2f} s to stop"
    assert stderr.count("\n") == 1 and word in stderr, stderr
    assert "Traceback" not in stderr
    assert sorted(os.listdir(tmp_path)) == ["long.toml"]     # no out/, no .qoelab-tmp-*


@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted (SIGINT)"),
                                            (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_signal_while_the_command_loads_is_one_line(sig, code, word):
    """A signal while the subcommands' modules load (before any work; about 0.1 s) was a
    KeyboardInterrupt traceback (SIGINT) or a silent death (SIGTERM). The child says when it is
    inside build_parser, so the signal lands there."""
    prog = ("import sys, time\nfrom qoelab import cli\nbuild = cli.build_parser\n"
            "def slow():\n    print('building', flush=True)\n    time.sleep(5)\n    return build()\n"
            "cli.build_parser = slow\nsys.exit(cli.main(['list', 'aqm']))\n")
    p = subprocess.Popen([sys.executable, "-c", prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=REPO)
    assert p.stdout.readline().strip() == "building"
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=10)
    assert p.returncode == code, stderr
    assert stderr.strip().splitlines() == [f"qoelab: {word}"], stderr


@pytest.mark.parametrize("cmd", ["validate", "run"])
def test_ctrl_c_while_the_core_builds_a_large_scenario(tmp_path, cmd):
    """Building a scenario at the node limit takes seconds in the core (the routing table: about
    2 s at 15,000 nodes here), and Ctrl-C waited for it. The child says when the core's check
    begins (`run` checks, then builds again); the signal lands 0.3 s later, inside the build."""
    sc = tmp_path / "big.toml"
    sc.write_text('[scenario]\nduration = "1s"\n[topology]\nrate = "10Mbps"\n'
                  '[[flow]]\ncount = 7498\nkind = "cbr"\nrate = "1kbps"\n')
    argv = [cmd, str(sc)] + (["--out", str(tmp_path / "o")] if cmd == "run" else [])
    prog = ("import sys\nfrom qoelab import _core, cli\ncheck = _core.check\n"
            "def announced(*a):\n    print('checking', flush=True)\n    return check(*a)\n"
            f"_core.check = announced\nsys.exit(cli.main({argv!r}))\n")
    p = subprocess.Popen([sys.executable, "-c", prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=REPO)
    assert p.stdout.readline().strip() == "checking", p.communicate()
    time.sleep(0.3)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 1.0, stderr
    assert p.returncode == 130 and stderr.strip().splitlines() == [f"qoelab {cmd}: interrupted (SIGINT)"], stderr
    assert not (tmp_path / "o").exists()


def test_existing_out_is_refused_before_simulating(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("x")
    t0 = time.monotonic()
    p, out = _start(tmp_path)
    _, stderr = p.communicate(timeout=60)
    assert p.returncode == 2 and stderr.count("\n") == 1 and "--force" in stderr, stderr
    assert time.monotonic() - t0 < 20                      # the 3000 s run was never started
    assert (out / "keep").read_text() == "x"


def test_out_never_names_the_current_directory_or_a_foreign_one(tmp_path):
    """An empty --out (an unset shell variable) and a directory holding the current one are refused
    even with --force; `video prepare` and `demo` replace only their own earlier output."""
    from conftest import qoelab_cli
    from qoelab.content.pipeline import is_prepare_output
    sc = tmp_path / "long.toml"
    sc.write_text(LONG)
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "keep").write_text("x")
    for argv, cwd, needle in (
            (["run", str(sc), "--out", "", "--force"], work, "--out: expected a directory path, found an empty"),
            (["run", str(sc), "--out", ".", "--force"], work, "holds the current directory"),
            (["run", str(sc), "--out", "..", "--force"], work / "sub", "holds the current directory"),
            # an empty current directory was replaced, deleted from under the caller
            (["run", str(sc), "--out", "."], work / "sub", "holds the current directory"),
            (["sweep", os.path.join(REPO, "examples", "aqm-buffer-sweep.toml"), "--out", ""], work,
             "--out: expected a directory path"),
            (["demo", "--out", ""], work, "--out: expected a directory path"),
            (["demo", "--out", str(tmp_path)], work, "is not the output of an earlier run"),
            (["video", "prepare", "gen:testsrc2", "--out", str(work)], work, "use --force"),
            (["video", "prepare", "gen:testsrc2", "--out", ""], work, "--out: expected a directory path")):
        if argv[0] == "demo" and argv[-1] == str(tmp_path):
            (tmp_path / "pie").mkdir()
            (tmp_path / "pie" / "mine").write_text("y")
        r = qoelab_cli(*argv, cwd=str(cwd))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, (argv, r.stderr)
    assert (work / "keep").read_text() == "x" and (tmp_path / "pie" / "mine").read_text() == "y"
    assert sorted(os.listdir(work)) == ["keep", "sub"] and os.listdir(work / "sub") == []
    assert not is_prepare_output(str(work))
    (work / "table.json").write_text('{"format": "qoelab-content/1"}')
    assert is_prepare_output(str(work))


def test_out_that_cannot_be_created_is_refused_before_the_work(tmp_path):
    """--out under a regular file, or where no directory can be made (/proc), is one line naming the
    path before the 3000 s run starts (both were internal errors after it)."""
    from conftest import qoelab_cli
    sc = tmp_path / "long.toml"
    sc.write_text(LONG)
    (tmp_path / "afile").write_text("x")
    for out, needle in ((tmp_path / "afile" / "sub", f"{tmp_path / 'afile'} is not a directory"),
                        ("/proc/qoelab-no-such-dir", "/proc/qoelab-no-such-dir: cannot be created: ")):
        t0 = time.monotonic()
        r = qoelab_cli("run", str(sc), "--out", str(out))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
        assert time.monotonic() - t0 < 20
    assert sorted(os.listdir(tmp_path)) == ["afile", "long.toml"]


def test_summary_of_a_run_without_link_capacity(tmp_path):
    """A 1 ns run: no link had capacity, so utilization is undefined; printed as n/a (was an
    internal error after the results were written)."""
    from conftest import qoelab_cli
    sc = tmp_path / "short.toml"
    sc.write_text(LONG.replace('duration = "3000s"', 'duration = "1ns"'))
    r = qoelab_cli("run", str(sc), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "utilization n/a" in r.stdout


def test_stale_temporary_directories_are_cleaned(tmp_path):
    from qoelab import outdir
    # a pid that cannot exist (above pid_max) stands for a killed process
    stale = tmp_path / f"{outdir.TMP_PREFIX}4194399-abc"
    stale.mkdir()
    (stale / "summary.json").write_text("{}")
    mine = tmp_path / f"{outdir.TMP_PREFIX}{os.getpid()}-live"
    mine.mkdir()
    with outdir.atomic_dir(str(tmp_path / "res")) as tmp:
        open(os.path.join(tmp, "a.txt"), "w").close()
    assert not stale.exists() and mine.exists()
    assert sorted(os.listdir(tmp_path)) == sorted([mine.name, "res"])


def test_atomic_dir_keeps_the_old_result_on_failure(tmp_path):
    from qoelab import outdir
    res = tmp_path / "res"
    with outdir.atomic_dir(str(res)) as tmp:
        open(os.path.join(tmp, "v1"), "w").close()
    with pytest.raises(KeyboardInterrupt):
        with outdir.atomic_dir(str(res)) as tmp:
            open(os.path.join(tmp, "v2"), "w").close()
            raise KeyboardInterrupt
    assert os.listdir(res) == ["v1"] and os.listdir(tmp_path) == ["res"]


@pytest.mark.parametrize("other", ["files", "empty"])
def test_atomic_dir_never_replaces_an_output_that_appeared_meanwhile(tmp_path, other):
    """Two commands writing the same new output at once: both reported success and the later
    silently replaced the earlier's results. Now the later one is refused (InputError, its own
    temporary folder removed); an empty folder made meanwhile is simply taken."""
    from qoelab import outdir
    from qoelab.errors import InputError
    res = tmp_path / "res"
    if other == "empty":
        with outdir.atomic_dir(str(res)) as tmp:
            open(os.path.join(tmp, "mine"), "w").close()
            res.mkdir()
        assert os.listdir(res) == ["mine"]
        return
    with pytest.raises(InputError, match="appeared while this command was writing it"):
        with outdir.atomic_dir(str(res)) as tmp:
            open(os.path.join(tmp, "mine"), "w").close()
            with outdir.atomic_dir(str(res)) as tmp2:       # the other command, finishing first
                open(os.path.join(tmp2, "theirs"), "w").close()
    assert os.listdir(res) == ["theirs"] and os.listdir(tmp_path) == ["res"]


def test_results_have_normal_permissions(tmp_path):
    import qoelab
    old = os.umask(0o022)
    try:
        res = qoelab.run(os.path.join(REPO, "scenarios", "weighted-cubic.toml"))
        out = res.write(str(tmp_path / "r"))
    finally:
        os.umask(old)
    assert os.stat(out).st_mode & 0o777 == 0o755
    for f in os.listdir(out):
        assert os.stat(os.path.join(out, f)).st_mode & 0o777 == 0o644, f


class _Interrupting:
    """A Python ABR that is 'interrupted' (as by Ctrl-C) at its third decision."""
    calls = 0

    def choose(self, obs):
        type(self).calls += 1
        if type(self).calls == 3:
            raise KeyboardInterrupt
        return 0


def test_python_abr_keyboard_interrupt_is_an_interruption():
    import tomllib

    import qoelab
    with open(os.path.join(REPO, "scenarios", "video-two-clients-fqcodel.toml"), "rb") as f:
        d = tomllib.load(f)
    for c in d["client"]:
        c["abr"] = "python:interrupting"
    _Interrupting.calls = 0
    with pytest.raises(KeyboardInterrupt):
        qoelab.run(d, abrs={"python:interrupting": _Interrupting})
    assert _Interrupting.calls == 3          # no further Python calls after the interruption


def test_qoelab_alone_lists_the_commands():
    from conftest import qoelab_cli
    p = qoelab_cli()
    assert p.returncode == 2 and "Traceback" not in p.stderr
    for cmd in ("run", "validate", "list", "bench", "video", "reproduce"):
        assert f"    {cmd}" in p.stderr, cmd


def test_list_prints_durations_and_rates_with_units():
    from conftest import qoelab_cli
    out = qoelab_cli("list", "aqm").stdout
    assert "target             duration         default 5ms " in out
    assert "default 5000000" not in out
    tcp = qoelab_cli("list", "tcp").stdout
    assert "default 200ms" in tcp and "default 1448B" in tcp and "default true" in tcp
    from qoelab.cli import _with_unit
    assert _with_unit(10_000_000, "rate") == "10Mbps" and _with_unit(1_500_000, "rate") == "1.5Mbps"
    assert _with_unit(250_000, "duration") == "250us" and _with_unit("<link buffer>", "packets") == "<link buffer>"


def test_temporary_names_of_another_pid_namespace_are_left_alone(tmp_path):
    """A writer in another PID namespace (a command under `qoelab link`) cannot see our pids: its stale-file
    cleaning must not take our temporary directory for a dead writer's (and ours not take its)."""
    import time as _t
    from qoelab import outdir
    mine = tmp_path / (outdir.tmp_prefix() + "x")
    mine.mkdir()
    other_ns = tmp_path / f"{outdir.TMP_PREFIX}2n1-live"          # pid 2 of another namespace, fresh
    other_ns.mkdir()
    old_other = tmp_path / f"{outdir.TMP_PREFIX}3n1-old"          # another namespace, two days old
    old_other.mkdir()
    os.utime(old_other, (_t.time() - 2 * 86400, _t.time() - 2 * 86400))
    dead = tmp_path / f"{outdir.TMP_PREFIX}999999n{outdir._pidns()}-dead"   # our namespace, no such pid
    dead.mkdir()
    legacy_dead = tmp_path / f"{outdir.TMP_PREFIX}999998-dead"    # the old naming, no such pid
    legacy_dead.mkdir()
    removed = set(outdir.clean_stale(str(tmp_path)))
    assert removed == {old_other.name, dead.name, legacy_dead.name}
    assert mine.exists() and other_ns.exists()
