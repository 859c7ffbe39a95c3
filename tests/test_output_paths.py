"""Output paths given on the command line: refused in one line (exit 2) before the work when they
cannot be written, never replaced when they name a device, pipe or socket (as root, `--out
/dev/zero` renamed a temporary file over the machine's /dev/zero), and hand-written ladders and
corpus subsets bounded (they were internal errors)."""

import os
import stat

import pytest

from conftest import qoelab_cli


def _one_line(r, needle, code=2):
    assert r.returncode == code and r.stderr.count("\n") == 1 and needle in r.stderr, (r.returncode, r.stderr)


@pytest.mark.parametrize("cmd", [
    ["video", "export", "--format", "sabre", "talking-head", "--out"],
    ["video", "export", "--format", "minerva", "talking-head", "--out"],
    ["minerva", "value-function", "synthetic:has-testbed", "--metric", "bitrate", "--no-cache", "--out"],
    ["pageload", "hand:mixed", "--json"],
])
def test_output_file_that_is_a_pipe_is_refused_and_kept(tmp_path, cmd):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = qoelab_cli(*cmd, str(fifo))
    _one_line(r, "names a device, pipe or socket; expected a regular file path")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["fifo"]


def test_names_longer_than_the_file_system_takes_are_refused_before_the_work(tmp_path):
    """A 300-byte name in --out failed with "File name too long" after the whole run."""
    long = tmp_path / ("b" * 300)
    r = qoelab_cli("run", os.path.join(os.path.dirname(__file__), "..", "scenarios", "pie-vs-codel.toml"),
                   "--out", str(long))
    _one_line(r, "a name of 300 bytes in the path (at most 255)")
    r = qoelab_cli("video", "export", "--format", "sabre", "talking-head", "--out", str(tmp_path / "a" / ("c" * 256)))
    _one_line(r, "a name of 256 bytes in the path (at most 255)")
    assert os.listdir(tmp_path) == []


def test_serve_logs_that_cannot_be_opened(tmp_path):
    (tmp_path / "f").write_text("x")
    for opt in ("--log", "--tcp-info-log"):
        for path, why in (("/proc/qoelab-no-such-dir/log", "No such file or directory"), (str(tmp_path), "Is a directory"),
                          (str(tmp_path / "f" / "log"), "Not a directory")):
            r = qoelab_cli("serve", str(tmp_path), "--port", "0", opt, path)
            _one_line(r, f"{opt}: cannot open the log: {why}")
    os.mkfifo(tmp_path / "fifo")   # nobody reads it: the open blocked, silently, before serving
    _one_line(qoelab_cli("serve", str(tmp_path), "--port", "0", "--log", str(tmp_path / "fifo")),
              "--log: cannot open the log: a pipe with no reader")


def test_corpus_plot_out(tmp_path):
    (tmp_path / "f").write_text("x")
    for out, needle in ((str(tmp_path), "names a directory"), ("", "--out: expected a file path"),
                        (str(tmp_path / "x.txt"), "a PNG file name ending in .png"),
                        (str(tmp_path / "f" / "x.png"), "is not a directory")):
        _one_line(qoelab_cli("video", "corpus", "plot", "--out", out), needle)
    out = tmp_path / "sub" / "q.png"
    r = qoelab_cli("video", "corpus", "plot", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(os.listdir(tmp_path)) == ["f", "sub"] and os.listdir(tmp_path / "sub") == ["q.png"]


@pytest.mark.parametrize("spec,needle", [
    ("0x0@0", "WIDTHxHEIGHT from 16 to 8192 pixels a side"),
    ("100000x100000@1M", "WIDTHxHEIGHT from 16 to 8192 pixels a side"),
    ("640x360@1", "a RATE from 10k to 1000M bit/s"),
    ("640x360@1..2", "WxH@RATE"),
    (",".join(f"640x360@{100 + i}k" for i in range(33)), "at most 32 rungs"),
])
def test_hand_written_ladders_are_bounded(spec, needle):
    from qoelab.content import ladder
    from qoelab.errors import InputError
    with pytest.raises(InputError, match="--ladder") as e:
        ladder.parse(spec)
    assert needle in str(e.value)


def test_display_and_cache_options(tmp_path):
    r = qoelab_cli("video", "prepare", "gen:testsrc2", "--out", str(tmp_path / "o"), "--display", "0x0")
    _one_line(r, "argument --display: expected WIDTHxHEIGHT from 16 to 8192 pixels a side")
    (tmp_path / "f").write_text("x")
    r = qoelab_cli("video", "prepare", "gen:testsrc2", "--out", str(tmp_path / "o"), "--duration", "1",
                   "--cache", str(tmp_path / "f"))
    _one_line(r, "cannot use it as the content cache (--cache, $QOELAB_CACHE): it is not a directory")
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_corpus_verify_subsets_are_checked():
    from qoelab.content import corpus
    from qoelab.errors import InputError
    for rungs, needle in (([99], "found 99"), ([-1], "found -1"), ([1, 1], "found 1,1")):
        with pytest.raises(InputError, match="--rungs: expected distinct rung indices from 0 to 7") as e:
            corpus.verify("talking-head", rungs=rungs, progress=False, segments=1)
        assert needle in str(e.value)
    with pytest.raises(InputError, match="--segments: expected fewer segments than the clip's"):
        corpus.verify("talking-head", segments=10**29, progress=False)


def test_python_abr_and_prepared_video_inputs_are_regular_files(tmp_path):
    """A `python:` ABR module or a prepared video's table.json that is a FIFO blocked the command;
    one that is /dev/zero filled memory (the import, or json.load)."""
    from qoelab import abr
    from qoelab.errors import InputError
    os.mkfifo(tmp_path / "fifo.py")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    for name in ("fifo.py", "zero.py"):
        with pytest.raises(InputError, match="expected a regular Python file") as e:
            abr.resolve(f"python:{name}:X", str(tmp_path), "s.toml", "client[0].abr")
        assert "(a device, pipe or socket)" in str(e.value)
    vx = tmp_path / "vx"
    vx.mkdir()
    os.mkfifo(vx / "table.json")
    _one_line(qoelab_cli("video", "voxel", str(vx)), "table.json: expected a regular file (a prepared video's table)")
    (vx / "table.json").unlink()
    (vx / "table.json").write_text("[" * 100_000)
    _one_line(qoelab_cli("video", "voxel", str(vx)), "table.json: expected valid JSON, found lists or objects nested")


def test_more_output_paths_and_the_emulator_binary(tmp_path):
    """A trailing slash on --out FILE was an internal NotADirectoryError after the work; a dangling
    link was called a device; `link --json-stats FIFO` blocked the emulator, deaf to SIGTERM and
    SIGINT; QOELAB_NETEMU naming a folder was an internal PermissionError."""
    base = ["minerva", "value-function", "synthetic:has-testbed", "--metric", "bitrate", "--horizon", "1", "--no-cache"]
    _one_line(qoelab_cli(*base, "--out", str(tmp_path / "x.json") + "/"), "--out names a directory")
    os.symlink(tmp_path / "nowhere" / "x", tmp_path / "dangling")
    _one_line(qoelab_cli(*base, "--out", str(tmp_path / "dangling")), "a dangling symbolic link or a link loop")
    _one_line(qoelab_cli("pageload", "hand:mixed", "--json", str(tmp_path / "p.json") + "/"), "--json names a directory")
    os.mkfifo(tmp_path / "fifo")
    for opt in ("--json-stats", "--downlink-log", "--uplink-log"):
        _one_line(qoelab_cli("link", "--rate", "10Mbps", "--rtt", "20ms", opt, str(tmp_path / "fifo"), "--", "true"),
                  f"{opt} names a device, pipe or socket")
    from qoelab import realnet
    old = os.environ.get("QOELAB_NETEMU")
    os.environ["QOELAB_NETEMU"] = str(tmp_path)
    try:
        assert realnet.find_emulator() is None
    finally:
        if old is None:
            del os.environ["QOELAB_NETEMU"]
        else:
            os.environ["QOELAB_NETEMU"] = old
    assert sorted(os.listdir(tmp_path)) == ["dangling", "fifo"]


def test_python_abr_that_exits_on_import(tmp_path):
    """`raise SystemExit(0)` in a `python:` ABR module ended `run` with exit 0 and nothing written."""
    from qoelab import abr
    from qoelab.errors import InputError
    (tmp_path / "m.py").write_text("raise SystemExit(0)\n")
    with pytest.raises(InputError, match="importing m.py failed: SystemExit"):
        abr.resolve("python:m.py:X", str(tmp_path), "s.toml", "client[0].abr")


def test_content_cache_entries_that_are_not_sound(tmp_path):
    """A content-cache entry with a FIFO (blocked, deaf to SIGTERM), a /dev/zero link (out of memory)
    or a file where its folder goes (internal error) is made again; a sound entry whose JSON is not
    what it should be is one line naming it."""
    from qoelab.content import pipeline as pl
    from qoelab.errors import InputError
    cache = pl.Cache(str(tmp_path / "c"))
    made = []

    def make(tmp):
        made.append(1)
        with open(os.path.join(tmp, "metrics.json"), "w") as f:
            f.write('{"psnr": [1.0]}')
        return {"seconds": 0.1}
    d, hit = cache.get_or_make("meas", "k", make)
    assert not hit and cache.get_or_make("meas", "k", make) == (d, True)
    for damage in ("fifo", "zero", "file"):
        if damage == "file":
            import shutil
            shutil.rmtree(d)
            open(d, "w").close()
        else:
            os.unlink(os.path.join(d, "metrics.json"))
            if damage == "fifo":
                os.mkfifo(os.path.join(d, "metrics.json"))
            else:
                os.symlink("/dev/zero", os.path.join(d, "metrics.json"))
        assert cache.get_or_make("meas", "k", make) == (d, False)
        assert pl._entry_json(os.path.join(d, "metrics.json"), dict) == {"psnr": [1.0]}
    assert len(made) == 4
    with open(os.path.join(d, "metrics.json"), "w") as f:
        f.write("[" * 100_000)
    with pytest.raises(InputError, match="a damaged content-cache entry \\(RecursionError\\); remove"):
        pl._entry_json(os.path.join(d, "metrics.json"), dict)


def test_measurement_ffmpeg_is_stopped_with_the_others(tmp_path):
    """measure_file ran ffmpeg outside ff.run, so SIGTERM to the pid waited ~5 s for the measurement
    to end (the executor joins its threads): now it is one of the processes stop_all kills, and none
    starts once stopping."""
    from qoelab.content import ffmpeg as ff
    from qoelab.content import measure
    ff.stop_all()
    try:
        with pytest.raises(KeyboardInterrupt):
            measure.measure_file("ffmpeg", str(tmp_path / "d.mp4"), str(tmp_path / "r.nut"), 64, 64, 1, ["psnr"])
    finally:
        ff.resume()
