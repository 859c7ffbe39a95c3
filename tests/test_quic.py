"""The QUIC-like transport of the packet simulator (docs/models/transport-quic.md): utilization,
exact finite transfers, determinism, and the `transport` key's bad values."""

import json

from conftest import qoelab_cli

ALONE = """
[scenario]
name = "quic-alone"
duration = "{dur}"
seed = 1

[topology]
kind = "dumbbell"
rate = "10Mbps"
rtt = "40ms"
buffer = "1bdp"
aqm = "pfifo"

[[flow]]
kind = "bulk"
name = "q"
transport = {transport}
cc = "cubic"
{extra}
"""


def run(tmp_path, text, name="s"):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    out = tmp_path / f"out-{name}"
    r = qoelab_cli("run", str(p), "--out", str(out))
    return r, out


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_quic_cubic_alone_fills_the_bottleneck(tmp_path):
    r, out = run(tmp_path, ALONE.format(dur="30s", transport='"quic"', extra=""))
    assert r.returncode == 0, r.stderr
    s = summary(out)
    [f] = s["flows"]
    assert f["transport"] == "quic" and f["cc"] == "cubic"
    bottleneck = next(link for link in s["links"] if link["name"] == "bottleneck")
    assert bottleneck["utilization"] >= 0.90, bottleneck
    # goodput: the stream payload share of the link (1437 of 1500 bytes) at >= 90 %
    assert f["goodput_bps"] >= 0.90 * 10e6 * 1437 / 1500, f
    # a 1-BDP FIFO overflows now and then: losses are recovered in fresh packets
    assert f["retransmits"] > 0 and f["rto_count"] == 0
    assert s["invariants"] == "ok"


def test_finite_quic_transfer_delivers_exactly_its_size(tmp_path):
    r, out = run(tmp_path, ALONE.format(dur="20s", transport='"quic"', extra='size = "1MB"'))
    assert r.returncode == 0, r.stderr
    [f] = summary(out)["flows"]
    assert f["size_bytes"] == 1_000_000
    assert f["bytes_received"] == 1_000_000
    assert f["completed_s"] is not None and f["completed_s"] < 5


def test_quic_runs_are_deterministic(tmp_path):
    text = ALONE.format(dur="10s", transport='"quic"', extra="") + """
[[flow]]
kind = "bulk"
name = "t"
cc = "bbr"
"""
    r1, o1 = run(tmp_path, text, "a")
    r2, o2 = run(tmp_path, text, "b")
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    assert (o1 / "summary.json").read_bytes() == (o2 / "summary.json").read_bytes()
    assert summary(o1)["flows"][1].get("transport") is None  # TCP flows keep their keys


def test_bad_transport_is_one_line_exit_2(tmp_path):
    for value, needle in (('"sctp"', "sctp"), ("3", "expected a string")):
        p = tmp_path / "bad.toml"
        p.write_text(ALONE.format(dur="1s", transport=value, extra=""))
        out = tmp_path / "out-bad"
        r = qoelab_cli("run", str(p), "--out", str(out))
        assert r.returncode == 2, (r.returncode, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert str(p) in lines[0] and "transport" in lines[0] and needle in lines[0], lines[0]
        assert not out.exists()


def test_tcp_options_are_refused_for_quic(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(ALONE.format(dur="1s", transport='"quic"', extra="[flow.tcp]\nsack = false\n"))
    r = qoelab_cli("run", str(p), "--out", str(tmp_path / "o"))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "tcp" in r.stderr, r.stderr


LOSSY = ALONE.replace('aqm = "pfifo"', 'aqm = "pfifo"\nloss = "2%"')


def test_half_unreliable_quic_transfer_zero_fills_lost_bytes(tmp_path):
    extra = 'size = "3MB"\n[flow.quic]\nunreliable_fraction = 0.5\n'
    r, out = run(tmp_path, LOSSY.format(dur="30s", transport='"quic"', extra=extra))
    assert r.returncode == 0, r.stderr
    s = summary(out)
    [f] = s["flows"]
    # about half the stream is sent unreliably; what of it was lost is zero-filled, never resent
    assert 1_000_000 < f["unreliable_bytes_sent"] <= 1_500_000, f
    assert 0 < f["hole_bytes"] <= f["unreliable_bytes_lost"] <= f["unreliable_bytes_sent"], f
    assert f["unreliable_bytes_retransmitted"] == 0, f
    # the transfer completes with every byte accounted as received or zero-filled
    assert f["completed_s"] is not None, f
    assert f["bytes_received"] + f["hole_bytes"] == 3_000_000, f
    # reliable data is repaired; losses (of unreliable data too) are congestion events
    assert f["retransmits"] > 0 and f["fast_recoveries"] > 0, f
    assert s["invariants"] == "ok"


def test_tcp_flow_summary_has_no_quic_keys(tmp_path):
    r, out = run(tmp_path, ALONE.format(dur="2s", transport='"tcp"', extra=""))
    assert r.returncode == 0, r.stderr
    [f] = summary(out)["flows"]
    assert not {"hole_bytes", "unreliable_bytes_sent", "retransmitted_bytes"} & set(f), f


def test_bad_quic_options_are_one_line_exit_2(tmp_path):
    cases = (
        ('"quic"', "[flow.quic]\nunreliable_fraction = 1.5\n", "flow[0].quic.unreliable_fraction"),
        ('"quic"', "[flow.quic]\nmax_ack_ranges = 9\n", "flow[0].quic.max_ack_ranges"),
        ('"quic"', "[flow.quic]\npacing = 1\n", "flow[0].quic.pacing"),
        ('"quic"', "[flow.quic]\nunreliable_period = 10\n", "flow[0].quic.unreliable_period"),
        ('"quic"', "[flow.quic]\nunrelaible_fraction = 0.5\n", "flow[0].quic.unrelaible_fraction"),
        ('"tcp"', "[flow.quic]\npacing = false\n", "flow[0].quic"),
    )
    for transport, extra, key in cases:
        p = tmp_path / "bad.toml"
        p.write_text(ALONE.format(dur="1s", transport=transport, extra=extra))
        out = tmp_path / "out-bad"
        r = qoelab_cli("run", str(p), "--out", str(out))
        assert r.returncode == 2, (extra, r.returncode, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert str(p) in lines[0] and key in lines[0], lines[0]
        assert not out.exists()
