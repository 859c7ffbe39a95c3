"""Bad input anywhere: exit code 2, one line naming the file and key/line, no output left."""

import os

import pytest

from conftest import qoelab_cli

GOOD = """
[scenario]
name = "t"
duration = "1s"

[topology]
rate = "10Mbps"
rtt = "20ms"

[[flow]]
kind = "cbr"
rate = "1Mbps"
"""


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def check_error(tmp_path, text, *needles):
    path = write(tmp_path, text)
    out = tmp_path / "out"
    r = qoelab_cli("run", path, "--out", str(out))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert path in lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert not out.exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".qoelab-tmp")]
    return lines[0]


def test_good_scenario_runs(tmp_path):
    path = write(tmp_path, GOOD)
    r = qoelab_cli("run", path, "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "summary.json").exists()


def test_malformed_toml_names_the_line(tmp_path):
    line = check_error(tmp_path, GOOD.replace('rate = "10Mbps"', 'rate = "10Mbps'), "invalid TOML")
    assert ":7:" in line


def test_bad_unit_names_the_key(tmp_path):
    check_error(tmp_path, GOOD.replace('"10Mbps"', '"10 parsecs"'), "topology.rate", "expected a rate")


def test_bad_duration(tmp_path):
    check_error(tmp_path, GOOD.replace('duration = "1s"', 'duration = 5'), "scenario.duration",
                "expected a duration")


def test_unknown_key(tmp_path):
    check_error(tmp_path, GOOD.replace('rtt = "20ms"', 'rtt = "20ms"\nbandwith = "5Mbps"'),
                "topology.bandwith", "unknown key")


def test_unknown_aqm(tmp_path):
    check_error(tmp_path, GOOD.replace('rtt = "20ms"', 'rtt = "20ms"\naqm = "codle"'), "topology.aqm",
                "expected one of")


def test_flow_rtt_too_small_for_path(tmp_path):
    # the flow takes the topology's RTT: the topology's keys are named
    text = GOOD.replace('rtt = "20ms"', 'rtt = "20ms"\ndelay = "30ms"')
    check_error(tmp_path, text, ":topology: expected a path propagation delay of at most half the RTT", "30 ms")
    # a flow's own rtt too short for the path is named
    text = GOOD.replace('rtt = "20ms"', 'rtt = "80ms"\ndelay = "30ms"').replace("[[flow]]", '[[flow]]\nrtt = "20ms"', 1)
    check_error(tmp_path, text, "flow[0].rtt")


def test_missing_table(tmp_path):
    check_error(tmp_path, GOOD.split("[topology]")[0], "topology", "missing")


def test_bad_buffer(tmp_path):
    check_error(tmp_path, GOOD.replace('rtt = "20ms"', 'rtt = "20ms"\nbuffer = "lots"'), "topology.buffer",
                "expected a buffer")


def test_missing_scenario_file(tmp_path):
    r = qoelab_cli("run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "nope.toml" in r.stderr and "cannot read" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["run"], ["run", "x.toml"], ["run", "x.toml", "--out", "o", "--seed", "-3"],
                                  ["run", "x.toml", "--out", "o", "--seed", "abc"], ["list", "qdisc"], ["frobnicate"]])
def test_bad_cli_arguments(args):
    r = qoelab_cli(*args)
    assert r.returncode == 2, (args, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "error" in r.stderr


def test_existing_output_dir_is_not_clobbered(tmp_path):
    path = write(tmp_path, GOOD)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    r = qoelab_cli("run", path, "--out", str(out))
    assert r.returncode == 2 and "--force" in r.stderr
    assert (out / "keep.txt").exists()


def test_validate(tmp_path):
    path = write(tmp_path, GOOD)
    r = qoelab_cli("validate", path)
    assert r.returncode == 0 and "ok" in r.stdout


def test_bad_trace_line_names_trace_file_and_line(tmp_path):
    trace = tmp_path / "link.down"
    trace.write_text("1\n2\n\n3\n")
    text = GOOD.replace('rate = "10Mbps"', f'trace = "{trace}"\nrate_up = "10Mbps"')
    path = write(tmp_path, text)
    r = qoelab_cli("run", path, "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "\n" not in line and f"{trace}:3" in line, line
    assert not (tmp_path / "out").exists()


def test_missing_trace_file(tmp_path):
    check_error(tmp_path, GOOD.replace('rate = "10Mbps"', 'trace = "nope.down"\nrate_up = "10Mbps"'),
                "topology.trace", "existing trace file")


def test_trace_driven_bottleneck_runs(tmp_path):
    trace = tmp_path / "link.down"
    trace.write_text("".join(f"{i}\n" for i in range(1, 101)))  # 1 opportunity/ms = 12.03 Mbit/s
    text = GOOD.replace('rate = "10Mbps"', f'trace = "{trace}"\nrate_up = "10Mbps"').replace(
        'rate = "1Mbps"', 'rate = "20Mbps"')
    from qoelab import run
    res = run(write(tmp_path, text))
    bott = res.summary["links"][0]
    assert bott["name"] == "bottleneck"
    assert abs(bott["rate_bps"] - 12.032e6) < 1e3
    assert bott["utilization"] > 0.99
