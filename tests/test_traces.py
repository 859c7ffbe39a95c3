"""Network trace formats: round trips, semantics, real data (skipped without it), malformed inputs."""

import json
import os

import pytest

from qoelab import traces as T
from qoelab.errors import InputError

DATA = T.data_dir()
HAVE_DATA = os.path.isdir(os.path.join(DATA, "traces"))
needs_data = pytest.mark.skipif(not HAVE_DATA, reason=f"reference data not found at {DATA} (set QOELAB_DATA)")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# ------------------------------------------------------------------------------------ mahimahi
def test_mahimahi_semantics(tmp_path):
    p = write(tmp_path, "link.down", "0\n0\n3\n7\n7\n7\n10\n")
    tr = T.load_trace(p)
    assert tr == {"kind": "opportunities", "period_ns": 10_000_000,
                  "times_ns": [0, 0, 3_000_000, 7_000_000, 7_000_000, 7_000_000, 10_000_000],
                  "bytes_per_opportunity": 1504}
    # 7 opportunities of 1504 B per 10 ms
    assert T.mean_rate_bps(tr) == pytest.approx(7 * 1504 * 8 / 0.010)
    assert T.validate_trace(tr) is tr


def test_mahimahi_constant_one_is_12mbps(tmp_path):
    tr = T.load_trace(write(tmp_path, "one", "1\n"))  # detected by content
    assert tr["period_ns"] == 1_000_000 and tr["times_ns"] == [1_000_000]
    assert T.mean_rate_bps(tr) == pytest.approx(1504 * 8 * 1000)


def test_mahimahi_round_trip(tmp_path):
    text = "1\n1\n2\n5\n9\n9\n12\n"
    p = write(tmp_path, "a.up", text)
    tr = T.load_trace(p)
    q = str(tmp_path / "b.up")
    T.save_trace(tr, q, "mahimahi")
    assert open(q).read() == text
    assert T.load_trace(q) == tr


def test_mahimahi_crlf_and_no_final_newline(tmp_path):
    tr = T.load_trace(write(tmp_path, "c.down", "1\r\n2\r\n4"))
    assert tr["times_ns"] == [1_000_000, 2_000_000, 4_000_000]


@pytest.mark.parametrize("text,line,needle", [
    ("1\n\n2\n", "2", "empty line"),
    ("1\n2\n\n", "3", "empty line"),
    ("1\n2.5\n3\n", "2", "'2.5'"),
    ("1\nabc\n", "2", "'abc'"),
    ("1\n-3\n", "2", "'-3'"),
    (" 1\n", "1", "' 1'"),
    ("5\n3\n", "2", "non-decreasing"),
    ("0\n0\n", "2", "last timestamp > 0"),
    # more digits than Python's int() converts: the same line and limit as any too-large timestamp
    ("1\n" + "9" * 5000 + "\n", "2", "a timestamp of at most"),
])
def test_mahimahi_errors(tmp_path, text, line, needle):
    p = write(tmp_path, "bad.down", text)
    with pytest.raises(InputError) as ei:
        T.load_trace(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:{line}: "), msg
    assert needle in msg
    assert "\n" not in msg


def test_mahimahi_empty_file(tmp_path):
    p = write(tmp_path, "empty.down", "")
    with pytest.raises(InputError, match="empty file"):
        T.load_trace(p)


def test_missing_file(tmp_path):
    p = str(tmp_path / "nope.down")
    with pytest.raises(InputError, match="no such file") as ei:
        T.load_trace(p)
    assert str(ei.value).startswith(p)


# ---------------------------------------------------------------------------------------- sabre
def test_sabre_network(tmp_path):
    doc = [{"duration_ms": 1500, "bandwidth_kbps": 5000, "latency_ms": 75},
           {"duration_ms": 500, "bandwidth_kbps": 1000.5, "latency_ms": 20}]
    p = write(tmp_path, "net.json", json.dumps(doc))
    tr = T.load_trace(p)
    assert tr == {"kind": "rates", "loop": True,
                  "segments": [[1_500_000_000, 5_000_000, 75_000_000], [500_000_000, 1_000_500, 20_000_000]]}
    assert T.mean_rate_bps(tr) == pytest.approx((1.5 * 5e6 + 0.5 * 1000500) / 2)
    q = str(tmp_path / "again.json")
    T.save_trace(tr, q, "sabre")
    assert json.load(open(q)) == doc
    assert T.load_trace(q) == tr


@pytest.mark.parametrize("doc,where,needle", [
    ('[{"duration_ms": 1000, "bandwidth_kbps": "5000", "latency_ms": 20}]', "1:[0].bandwidth_kbps", "a number"),
    ('[\n {"duration_ms": 1000, "bandwidth_kbps": 1, "latency_ms": 20},\n {"duration_ms": 1000, "latency_ms": 20}\n]',
     "3:[1].bandwidth_kbps", "key bandwidth_kbps"),
    ('[{"duration_ms": 0, "bandwidth_kbps": 1, "latency_ms": 20}]', "1:[0].duration_ms", "duration >= 0.001 ms"),
    # a 1 ns segment: the link would walk ~10^6 segments per packet (a probe's run never ended)
    ('[{"duration_ms": 0.000001, "bandwidth_kbps": 5000, "latency_ms": 0}]', "1:[0].duration_ms", ">= 0.001 ms"),
    # rounding to ns would overflow: the limit is checked first
    ('[{"duration_ms": 1e308, "bandwidth_kbps": 5000, "latency_ms": 0}]', "1:[0].duration_ms", "a number <="),
    ('[{"duration_ms": 10, "bandwidth_kbps": -1, "latency_ms": 20}]', "1:[0].bandwidth_kbps", ">= 0"),
    ('[{"duration_ms": 10, "bandwidth_kbps": true, "latency_ms": 20}]', "1:[0].bandwidth_kbps", "found true"),
    ('[{"duration_ms": 10, "bandwidth_kbps": 1, "latency_ms": 20, "x": 1}]', "1:[0].x", "key x"),
    ('[5]', "1:[0]", "an object"),
    ('[]', "1", "empty list"),
    ('[{"duration_ms": 10,\n "bandwidth_kbps": 1 "latency_ms": 20}]', "2:", "valid JSON"),
])
def test_sabre_errors(tmp_path, doc, where, needle):
    p = write(tmp_path, "net.json", doc)
    with pytest.raises(InputError) as ei:
        T.load_trace(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:{where}"), msg
    assert needle in msg


def test_all_zero_rates_rejected(tmp_path):
    p = write(tmp_path, "z.json", '[{"duration_ms": 10, "bandwidth_kbps": 0, "latency_ms": 20}]')
    with pytest.raises(InputError, match="rate > 0"):
        T.load_trace(p)


# ------------------------------------------------------------------------------------- pensieve
def test_pensieve_cooked(tmp_path):
    p = write(tmp_path, "trace.log", "0.0\t1.5\n1.0\t2.0\n3.5\t0.5\n")
    tr = T.load_trace(p)
    assert tr["segments"] == [[1_000_000_000, 1_500_000, 0], [2_500_000_000, 2_000_000, 0]]
    prev = T.load_trace(p, pensieve_align="previous")
    assert prev["segments"] == [[1_000_000_000, 2_000_000, 0], [2_500_000_000, 500_000, 0]]
    q = str(tmp_path / "again.log")
    T.save_trace(tr, q, "pensieve")
    assert T.load_trace(q, "pensieve") == tr


def test_pensieve_offset_start(tmp_path):
    tr = T.load_trace(write(tmp_path, "t.log", "117.7 0.25\n118.7 1\n"), "pensieve")
    assert tr["segments"] == [[1_000_000_000, 250_000, 0]]


@pytest.mark.parametrize("text,line,needle", [
    ("0.0 1.0\n\n2.0 1.0\n", "2", "empty line"),
    ("0.0 1.0\n1.0\n", "2", "2 columns"),
    ("0.0 1.0\n1.0 fast\n", "2", "'fast'"),
    ("0.0 1.0\n2.0 1.0\n1.5 1.0\n", "3", "increasing times"),
    ("0.0 1.0\n0.0 1.0\n", "2", "increasing times"),
    ("0.0 1.0\n0.0000005 1.0\n", "2", "at least 1 us apart"),
    ("0.0 1.0\n", "1", "at least 2 samples"),
])
def test_pensieve_errors(tmp_path, text, line, needle):
    p = write(tmp_path, "bad.log", text)
    with pytest.raises(InputError) as ei:
        T.load_trace(p, "pensieve")
    msg = str(ei.value)
    assert msg.startswith(f"{p}:{line}: "), msg
    assert needle in msg


# ---------------------------------------------------------------------------------------- voxel
def test_voxel_sum(tmp_path):
    text = "1 1000\n2 250000\n3 0\n"
    p = write(tmp_path, "x.sum", text)
    tr = T.load_trace(p)
    assert tr["segments"] == [[10**9, 8000, 0], [10**9, 2_000_000, 0], [10**9, 0, 0]]
    q = str(tmp_path / "y.sum")
    T.save_trace(tr, q, "voxel")
    assert open(q).read() == text


@pytest.mark.parametrize("text,line,needle", [
    ("1 100\n\n", "2", "empty line"),
    ("1 100\n3 100\n", "2", "second 2"),
    ("1 100\n2 1.5\n", "2", "'1.5'"),
    ("1 100 7\n", "1", "2 columns"),
])
def test_voxel_errors(tmp_path, text, line, needle):
    p = write(tmp_path, "bad.sum", text)
    with pytest.raises(InputError) as ei:
        T.load_trace(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:{line}: "), msg
    assert needle in msg


# ----------------------------------------------------------------------------- detection, override
def test_detection_by_content(tmp_path):
    assert T.detect_format(write(tmp_path, "a", "12\n13\n")) == "mahimahi"
    assert T.detect_format(write(tmp_path, "b", "1 1000\n")) == "voxel"
    assert T.detect_format(write(tmp_path, "c", "0.0\t1.3\n")) == "pensieve"
    assert T.detect_format(write(tmp_path, "d", "[\n{}]")) == "sabre"
    with pytest.raises(InputError, match="expected a trace line"):
        T.detect_format(write(tmp_path, "e", "hello world foo\n"))


def test_explicit_format_override(tmp_path):
    # two integer columns would be detected as voxel; force pensieve
    p = write(tmp_path, "f.txt", "3 2\n4 3\n")
    assert T.load_trace(p)["segments"] == [[10**9, 16, 0], [10**9, 24, 0]]
    assert T.load_trace(p, format="pensieve")["segments"] == [[10**9, 2_000_000, 0]]
    with pytest.raises(InputError, match="trace format"):
        T.load_trace(p, format="csv")


# -------------------------------------------------------------------------------- converters
def test_rates_to_opportunities_constant():
    # 12.032 Mbit/s = exactly one 1504-byte opportunity per ms
    tr = {"kind": "rates", "segments": [[10_000_000, 12_032_000, 0]], "loop": True}
    op = T.rates_to_opportunities(tr)
    assert op["period_ns"] == 10_000_000
    assert op["times_ns"] == [k * 1_000_000 for k in range(1, 11)]
    assert T.mean_rate_bps(op) == pytest.approx(12_032_000)


def test_rates_to_opportunities_accumulates_credit():
    # 6.016 Mbit/s = one opportunity every 2 ms; then 24.064 Mbit/s = two per ms
    tr = {"kind": "rates", "segments": [[4_000_000, 6_016_000, 0], [2_000_000, 24_064_000, 0]], "loop": True}
    op = T.rates_to_opportunities(tr)
    ms = [t // 1_000_000 for t in op["times_ns"]]
    assert ms == [2, 4, 5, 5, 6, 6]


def test_opportunities_to_rates_per_bin():
    op = {"kind": "opportunities", "period_ns": 2_500_000_000, "bytes_per_opportunity": 1000,
          "times_ns": [0, 500_000_000, 1_200_000_000, 2_500_000_000]}
    r = T.opportunities_to_rates(op)
    assert r["segments"] == [[10**9, 16_000, 0], [10**9, 8_000, 0], [500_000_000, 16_000, 0]]
    assert T.mean_rate_bps(r) == pytest.approx(T.mean_rate_bps(op))


def test_opportunities_to_rates_merges_empty_bins_into_the_same_schedule():
    """Trace mode merges runs of empty bins (a sparse trace with a 10^11 ms period made 10^9 bins,
    MemoryError): the same rate at every instant as one segment per bin."""
    import random
    rng = random.Random(3)
    for _ in range(50):
        period = rng.randrange(1, 40) * 100_000_000 + rng.randrange(0, 2) * 7_000_000
        times = sorted(rng.randrange(0, period + 1) for _ in range(rng.randrange(0, 12)))
        op = {"kind": "opportunities", "period_ns": period, "bytes_per_opportunity": 1500, "times_ns": times}
        per_bin = T.opportunities_to_rates(op, bin_ns=100_000_000)["segments"]
        merged = T.opportunities_to_rates(op, bin_ns=100_000_000, merge_empty=True)["segments"]
        assert len(merged) <= 2 * len(times) + 1
        assert sum(d for d, _, _ in merged) == sum(d for d, _, _ in per_bin) == period

        def rate_at(segs, t):
            for d, r, _ in segs:
                if t < d:
                    return r
                t -= d
        assert all(rate_at(per_bin, t) == rate_at(merged, t) for t in range(0, period, 50_000_000))
    far = {"kind": "opportunities", "period_ns": 10**11 * 10**6, "bytes_per_opportunity": 1500,
           "times_ns": [10**6, 2 * 10**6, 10**11 * 10**6]}
    assert len(T.opportunities_to_rates(far, bin_ns=100_000_000, merge_empty=True)["segments"]) == 3   # bin 0, empty, last


def test_cross_check_round_trip_mean(tmp_path):
    doc = [{"duration_ms": 3000, "bandwidth_kbps": 5000, "latency_ms": 20},
           {"duration_ms": 2000, "bandwidth_kbps": 800, "latency_ms": 20}]
    tr = T.load_trace(write(tmp_path, "n.json", json.dumps(doc)))
    op = T.rates_to_opportunities(tr)
    assert abs(T.mean_rate_bps(op) - T.mean_rate_bps(tr)) <= 1504 * 8 / 5.0
    back = T.opportunities_to_rates(op)
    # per-second averages recover the schedule within one packet per second
    rates = [s[1] for s in back["segments"]]
    assert all(abs(a - b) <= 1504 * 8 for a, b in zip(rates, [5e6, 5e6, 5e6, 8e5, 8e5]))


def test_scale():
    tr = {"kind": "rates", "segments": [[10**9, 1000, 5], [10**9, 3000, 5]], "loop": True}
    s = T.scale(tr, 1.5)
    assert s["segments"] == [[10**9, 1500, 5], [10**9, 4500, 5]]
    op = {"kind": "opportunities", "period_ns": 10, "bytes_per_opportunity": 1504, "times_ns": [1, 2, 3, 4, 10]}
    assert T.scale(op, 2)["times_ns"] == [1, 1, 2, 2, 3, 3, 4, 4, 10, 10]
    assert T.scale(op, 0.5)["times_ns"] == [2, 4]
    with pytest.raises(InputError, match="factor > 0"):
        T.scale(tr, 0)


def test_validate_trace_rejects():
    with pytest.raises(InputError, match=r"times_ns\[1\]"):
        T.validate_trace({"kind": "opportunities", "period_ns": 5, "bytes_per_opportunity": 1504, "times_ns": [3, 2]})
    with pytest.raises(InputError, match=r"segments\[0\]"):
        T.validate_trace({"kind": "rates", "segments": [[0, 1, 0]], "loop": True})


# ------------------------------------------------------------------------------------ real data
# mean rates of seed-systems.md 7.1 (computed there with 1500 B per line) and 7.2
MAHIMAHI_MEANS = {
    "ATT-LTE-driving-2016.down": 4.56, "ATT-LTE-driving-2016.up": 1.91, "ATT-LTE-driving.down": 5.17,
    "ATT-LTE-driving.up": 0.83, "TMobile-LTE-driving.down": 12.77, "TMobile-LTE-short.down": 16.70,
    "TMobile-LTE-short.up": 13.32, "TMobile-UMTS-driving.down": 2.02, "TMobile-UMTS-driving.up": 0.94,
    "Verizon-EVDO-driving.down": 0.52, "Verizon-EVDO-driving.up": 0.84, "Verizon-LTE-short.down": 5.03,
    "Verizon-LTE-short.up": 5.95,
}
VOXEL_MEANS = {
    "3G-report.2010-09-29_1827CEST.log.sum": 2.49, "ATT-LTE-driving.down.sum": 10.00,
    "FCC-trace_32424_samknows1.lax1.level3.net.sum": 10.01, "TMobile-LTE-driving.down.sum": 10.05,
    "Verizon-LTE-driving.down.sum": 10.00,
}


@needs_data
@pytest.mark.parametrize("name,mbps", sorted(MAHIMAHI_MEANS.items()))
def test_real_mahimahi_means(name, mbps):
    p = os.path.join(DATA, "traces", "mahimahi", name)
    if not os.path.exists(p):
        pytest.skip(f"{p} absent")
    tr = T.load_trace(p)
    r = T.mean_rate_bps(tr)
    # the table used 1500 B per line; with mahimahi's 1504 B the rate is 1504/1500 higher
    assert round(r * 1500 / 1504 / 1e6, 2) == pytest.approx(mbps, abs=0.006)


@needs_data
def test_real_att_2016_exact():
    tr = T.load_trace(os.path.join(DATA, "traces", "mahimahi", "ATT-LTE-driving-2016.down"))
    assert len(tr["times_ns"]) == 45604
    assert tr["period_ns"] == 120_002_000_000  # last line of the file: 120002 ms


@needs_data
@pytest.mark.parametrize("name,mbps", sorted(VOXEL_MEANS.items()))
def test_real_voxel_means(name, mbps):
    tr = T.load_trace(os.path.join(DATA, "traces", "voxel", name))
    assert T.mean_rate_bps(tr) / 1e6 == pytest.approx(mbps, abs=0.006)


@needs_data
def test_real_json_and_cooked_folders_parse():
    import glob
    n = 0
    for sub in ("norway-3g", "belgium-4g", "fcc-sabre/hd_fs", "fcc-sabre/sd_fs", "pensieve-cooked"):
        files = sorted(glob.glob(os.path.join(DATA, "traces", sub, "*")))
        files = [f for f in files if f.endswith((".json", ".log"))]
        for f in files[:10]:
            tr = T.load_trace(f)
            assert tr["kind"] == "rates" and T.mean_rate_bps(tr) > 0
            n += 1
    assert n > 0
    ex = T.load_trace(os.path.join(DATA, "traces", "sabre-network-example.json"))
    assert ex["segments"][0] == [30_000_000_000, 5_000_000, 75_000_000]
    assert T.mean_rate_bps(ex) == pytest.approx(3.125e6)


def test_huge_integers_are_input_errors(tmp_path):
    """Integers of more digits than Python converts (4,300) are bad input naming the file, in every
    format: JSON (Sabre) and the line formats (VOXEL)."""
    big = "9" * 5000
    p = write(tmp_path, "n.json", f'[{{"duration_ms": {big}, "bandwidth_kbps": 1, "latency_ms": 0}}]')
    with pytest.raises(InputError, match=r"n\.json:1:18: expected numbers of at most 4300 digits"):
        T.load_trace(p)
    p = write(tmp_path, "v.sum", f"1 1000\n2 {big}\n")
    with pytest.raises(InputError, match=r"v\.sum:2: expected second <= "):
        T.load_trace(p)


def test_line_count_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "MAX_LINES", 5)
    p = write(tmp_path, "m.down", "1\n2\n3\n4\n5\n6\n")
    with pytest.raises(InputError, match=r"m\.down: expected a trace of at most 5 lines, found 6 lines"):
        T.load_trace(p)
    assert T.load_trace(write(tmp_path, "ok.down", "1\n2\n3\n4\n5\n"))["period_ns"] == 5_000_000


def test_mahimahi_rate_limit(tmp_path, monkeypatch):
    """Opportunities in one millisecond are a rate: above the trace rate limit is an error. Shown
    with the limit at 100 Gbit/s (8,311 opportunities of 1504 bytes per ms) to keep the file small;
    at the real 100 Tbit/s a probe's 10^7 lines of "1" (120 Tbit/s) validated and then never ran."""
    monkeypatch.setattr(T, "MAX_RATE_BPS", 10**11)
    p = write(tmp_path, "d.down", "1\n" * 8_311 + "2\n")
    assert len(T.load_trace(p)["times_ns"]) == 8_312
    p = write(tmp_path, "e.down", "1\n" * 8_312)
    with pytest.raises(InputError, match=r"e\.down:8312: expected at most 8,311 opportunities in one millisecond "
                       r"\(0\.1 Tbit/s\), found more at 1 ms"):
        T.load_trace(p)


@pytest.mark.parametrize("name,text", [
    ("p.txt", "".join(f"{i} 1.5\n" for i in range(6))),
    ("v.sum", "".join(f"{i} 1000\n" for i in range(6))),
    ("s.json", json.dumps([{"duration_ms": 1000, "bandwidth_kbps": 1000, "latency_ms": 0}] * 6)),
])
def test_rate_traces_have_their_own_segment_limit(tmp_path, monkeypatch, name, text):
    """A rate trace's segment costs ~1.5 KB at the peak of a run (10^7 Pensieve lines, within the
    10^7-line limit of every line format, ran out of memory at 4 GB): at most 10^6 segments."""
    monkeypatch.setattr(T, "MAX_RATE_SEGMENTS", 5)
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError) as e:
        T.load_trace(str(p))
    assert "expected a trace of at most 5 " in str(e.value) and "found 6 " in str(e.value), str(e.value)
    monkeypatch.setattr(T, "MAX_RATE_SEGMENTS", 6)
    T.load_trace(str(p))


def test_json_too_large_for_memory_is_one_line(tmp_path, monkeypatch):
    from qoelab import errors
    p = tmp_path / "s.json"
    p.write_text("[[]]")

    def oom(*a, **k):
        raise MemoryError
    monkeypatch.setattr(json, "loads", oom)
    with pytest.raises(InputError) as e:
        errors.json_input(p.read_text(), str(p))
    assert str(e.value).endswith("expected valid JSON that fits in memory, found 0 MB of JSON, more than the "
                                 "memory available"), str(e.value)


def test_a_scenario_trace_is_parsed_once_per_unchanged_file(tmp_path, monkeypatch):
    """A sweep builds every run's scenario: the largest reference trace took 0.28 s a run to parse
    again (7.8 h of expansion for 100,000 runs). The same file is parsed once; an edit is seen."""
    from qoelab import scenario as sc
    t = tmp_path / "t.down"
    t.write_text("".join(f"{i}\n" for i in range(1, 101)))
    body = {"scenario": {"duration": "1s"}, "topology": {"trace": str(t), "rate_up": "1Mbps"},
            "flow": [{"kind": "cbr", "rate": "1kbps"}]}
    calls = []
    real = T.load_trace
    monkeypatch.setattr(T, "load_trace", lambda *a, **k: calls.append(1) or real(*a, **k))
    a = sc.from_dict(json.loads(json.dumps(body)), str(tmp_path / "s.toml"))
    b = sc.from_dict(json.loads(json.dumps(body)), str(tmp_path / "s.toml"))
    assert len(calls) == 1 and a.to_json() == b.to_json()
    t.write_text("".join(f"{i}\n" for i in range(1, 51)))
    os.utime(t, ns=(1, 1))   # (another mtime even within the clock's resolution)
    c = sc.from_dict(json.loads(json.dumps(body)), str(tmp_path / "s.toml"))
    assert len(calls) == 2 and c.to_json() != a.to_json()
