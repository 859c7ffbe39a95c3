"""Flow-level page loads from Python: HAR import (sizes, dependency heuristic, errors), the
synthetic generator (determinism, calibration, round trip through HAR), units, the CLI."""

import json
import os

import pyarrow.parquet as pq
import pytest

from conftest import qoelab_cli
from qoelab import _core
from qoelab.errors import InputError
from qoelab.pageload import handcrafted, synth
from qoelab.pageload import units as pu
from qoelab.pageload.har import dependencies, load_har, page_from_har, write_har


def entry(start, ms, url, cl=None, body=1000, hs=200):
    headers = [] if cl is None else [{"name": "Content-Length", "value": str(cl)}]
    return {"startedDateTime": start, "time": ms, "request": {"url": url},
            "response": {"headers": headers, "bodySize": body, "headersSize": hs}}


def har(*entries):
    return {"log": {"version": "1.2", "entries": list(entries)}}


T = "2015-12-07T10:00:00.000+01:00"


def at(ms):
    """T + ms (milliseconds), ISO 8601."""
    s, frac = divmod(ms, 1000)
    return f"2015-12-07T10:00:{s:02d}.{frac:03d}+01:00"


def test_dependency_heuristic_on_a_crafted_file():
    # a  [0, 100]            root
    # b  [10, 50]            started before anything finished -> root
    # c  [60, 200]           after b (finished at 50), a still loading -> child of b
    # d  [120, 130]          a finished at 100, b at 50: the latest finished is a -> child of a
    # e  [205, 300]          finished before 205: a (100), b (50), c (200), d (130) -> child of c
    # f  [200, 210]          c finished at exactly 200 (<= start) -> child of c
    doc = har(entry(at(120), 10, "http://x.org/d"), entry(at(0), 100, "https://x.org/a"),
              entry(at(60), 140, "http://cdn.x.org:8080/c"), entry(at(10), 40, "http://y.org/b"),
              entry(at(205), 95, "http://y.org/e"), entry(at(200), 10, "http://y.org/f"))
    p = page_from_har(doc, "crafted.har")
    names = [o.url.rsplit("/", 1)[1] for o in p.objects]
    assert names == ["a", "b", "c", "d", "f", "e"]      # sorted by start
    parent = {n: (names[o.parent] if o.parent is not None else None) for n, o in zip(names, p.objects)}
    assert parent == {"a": None, "b": None, "c": "b", "d": "a", "f": "c", "e": "c"}
    hosts = [o.host for o in p.objects]
    assert hosts[2] == "cdn.x.org:8080" and hosts[0] == "x.org"
    assert [o.tls for o in p.objects] == [True, False, False, False, False, False]
    # the core accepts it and loads it
    r = _core.pageload_run(p.core_tuple(), [(1_000_000, 20_000_000, [])], "if1")
    assert r["plt_ns"] > 0 and len(r["records"]) == 6


def test_sizes_content_length_then_body_size():
    doc = har(entry(T, 10, "http://a.org/1", cl=5000, body=1234, hs=300),
              entry(T, 10, "http://a.org/2", cl=None, body=1234, hs=300),
              entry(T, 10, "http://a.org/3", cl=None, body=-1, hs=-1),       # unknown: 0 bytes -> dropped
              entry(T, 10, "http://a.org/4", cl=0, body=0, hs=0))            # empty -> dropped
    p = page_from_har(doc, "s.har")
    assert [o.size for o in p.objects] == [5300, 1534]
    assert p.dropped == 2


@pytest.mark.parametrize("doc,where", [
    ({"log": {}}, "log.entries"),
    ({"log": {"entries": []}}, "log.entries"),
    (har(entry(T, 10, "http://a.org/1"), entry("yesterday", 10, "http://a.org/2")), "log.entries[1].startedDateTime"),
    (har(entry(T, 10, "http://a.org/1", body=-5)), "log.entries[0].response.bodySize"),
    (har(entry(T, 10, "http://a.org/1", cl=-3)), "log.entries[0].response.headers[0]"),
    (har(entry(T, -1, "http://a.org/1")), "log.entries[0].time"),
    (har(entry(T, 10, "ftp://a.org/1")), "log.entries[0].request.url"),
    ([1, 2], "log"),
    # oversize and non-finite values: one line naming the key, never an OverflowError
    (har(entry(T, 1e308, "http://a.org/1")), "log.entries[0].time"),
    (har(entry(T, 4e12, "http://a.org/1")), "log.entries[0].time"),               # > 100 years in ms
    (har(entry(T, 10**5000, "http://a.org/1")), "log.entries[0].time"),
    (har(entry(T, 10, "http://a.org/1", body=1e30)), "log.entries[0].response.bodySize"),
    (har(entry(T, 10, "http://a.org/1", body=2**64)), "log.entries[0].response.bodySize"),
    (har(entry(T, 10, "http://a.org/1", body=1e300)), "log.entries[0].response.bodySize"),
    (har(entry(T, 10, "http://a.org/1", body=10**18)), "log.entries[0].response.bodySize"),
    (har(entry(T, 10, "http://a.org/1", body=2**34, hs=2**35)), "log.entries[0].response.headersSize"),
    (har(entry(T, 10, "http://a.org/1", body=2**34, hs=1)), "log.entries[0].response"),   # the sum
    (har(entry(T, 10, "http://a.org/1", cl="99999999999999999999999999")), "log.entries[0].response.headers[0]"),
    (har(entry(T, 10, "http://a.org/1", cl="9" * 5000)), "log.entries[0].response.headers[0]"),
    (har(entry(T, 10, "http://a.org/1"), entry(T, 10, "http://[::1/x")), "log.entries[1].request.url"),
])
def test_malformed_har_names_the_entry(doc, where):
    with pytest.raises(InputError) as e:
        page_from_har(doc, "bad.har")
    msg = str(e.value)
    assert msg.startswith(f"bad.har:{where}:") and "\n" not in msg, msg


def test_size_and_time_bounds_are_inclusive():
    p = page_from_har(har(entry(T, 100 * 365 * 86_400_000, "http://a.org/1", body=2**34 - 200)), "ok.har")
    assert p.objects[0].size == 2**34 and p.objects[0].har_finish_s == 100 * 365 * 86_400
    p = page_from_har(har(entry(T, 10, "http://a.org/1", cl=2**34 - 1, hs=1)), "ok.har")
    assert p.objects[0].size == 2**34


@pytest.mark.parametrize("text,needle", [
    # an integer too long for int(): the file, not an internal ValueError
    ('{"log":{"entries":[{"startedDateTime":"%s","time":%s,"request":{"url":"http://a.org/"},'
     '"response":{"bodySize":10}}]}}' % (T, "9" * 5000), "numbers of at most 4300 digits"),
    ('{"log":{"entries":' + "[" * 100_000, "nested too deeply"),            # not a RecursionError
    (b'{"log": "\xff"}', "invalid UTF-8"),
])
def test_load_har_bad_json_is_input_error(tmp_path, text, needle):
    f = tmp_path / "bad.har"
    if isinstance(text, bytes):
        f.write_bytes(text)
    else:
        f.write_text(text)
    with pytest.raises(InputError) as e:
        load_har(str(f))
    msg = str(e.value)
    assert msg.startswith(str(f)) and needle in msg and "\n" not in msg, msg


def _dependencies_reference(starts, finishes):
    """The heuristic as stated (quadratic): the latest finish <= the start, ties to the later entry."""
    parents = []
    for j, s in enumerate(starts):
        best = None
        for i in range(j):
            if finishes[i] <= s and (best is None or finishes[i] >= finishes[best]):
                best = i
        parents.append(best)
    return parents


def test_dependencies_match_the_quadratic_definition():
    import random
    rng = random.Random(7)
    for _ in range(3000):
        n = rng.randint(1, 25)
        span = rng.choice([2, 5, 50, 10**6])
        starts = sorted(rng.randint(0, span) for _ in range(n))
        fins = [s + rng.choice([0, 0, 1, rng.randint(0, span)]) for s in starts]   # ties, zero durations
        assert dependencies(starts, fins) == _dependencies_reference(starts, fins), (starts, fins)


def test_many_entries_load_as_a_chain():
    # 100,000 entries 1 ms apart, each 0.5 ms long: every entry is the child of the one before
    # (this took minutes with the former quadratic heuristic)
    n = 100_000
    entries = [entry(f"2015-12-07T10:{i // 60_000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}+00:00", 0.5,
                     f"http://h{i % 50}.org/o{i}") for i in range(n)]
    p = page_from_har(har(*entries), "big.har")
    assert len(p.objects) == n and p.objects[0].parent is None
    assert all(o.parent == i for i, o in enumerate(p.objects[1:]))
    assert p.objects[-1].har_finish_s == pytest.approx((n - 1) / 1000 + 0.0005)


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    good = tmp_path / "good.har"
    good.write_text(json.dumps(har(entry(T, 10, "http://a.org/1"))))
    bad = tmp_path / "bad.har"
    bad.write_text(json.dumps(har(entry("2015-13-45T99:00:00", 10, "http://a.org/1"))))
    notjson = tmp_path / "nj.har"
    notjson.write_text("{ not json")
    huge = tmp_path / "huge.har"
    huge.write_text(json.dumps(har(entry(T, 10, "http://a.org/1", body=2**64))))
    ipv6 = tmp_path / "ipv6.har"
    ipv6.write_text(json.dumps(har(entry(T, 10, "http://[::1/x"))))
    deep = tmp_path / "deep.har"
    deep.write_text('{"log":{"entries":' + "[" * 100_000)
    cases = [
        ([str(bad)], "log.entries[0].startedDateTime"),
        ([str(notjson)], "nj.har:1:3: expected a HAR file (valid JSON)"),
        ([str(tmp_path / "missing.har")], "cannot read"),
        ([str(huge)], "log.entries[0].response.bodySize: expected a size in bytes (>= 0 and <= 2^34"),
        ([str(ipv6)], "log.entries[0].request.url: expected a valid URL"),
        ([str(deep)], "nested too deeply"),
        ([str(good), "--if2", "0kbps,50ms"], "--if2"),
        ([str(good), "--if1", "10Mbps"], "--if1"),
        ([str(good), "--policy", "fastest"], "--policy"),
        ([str(good), "--if1-schedule", "2s:5Mbps,1s:1Mbps"], "--if1-schedule"),
        ([str(good), "--if2-schedule", "2s:0Mbps"], "--if2-schedule"),
        (["hand:nothing"], "handcrafted"),
        ([str(good), "--seed", "-3"], "--seed"),
        ([str(good), "--seed", str(2**64)], "--seed"),
        ([str(good), "--json", str(tmp_path)], "--json names a directory"),
        ([str(good), "--json", ""], "--json: expected a file path"),
        # (a probe) 1 B/s stuck the water-filling (an internal error); an RTT over the core's 100 s
        # was named as the HAR's if1.rtt; --packet wrote no --json file, exit 0
        ([str(good), "--if1", "8bps,30ms"], "--if1: expected a bandwidth of at least 1kbps"),
        ([str(good), "--if2-schedule", "1s:100bps"], "--if2-schedule: expected a rate of at least 1kbps"),
        ([str(good), "--if1", "1Mbps,101s"], "--if1: expected an RTT > 0 and at most 100s"),
        ([str(good), "--packet", "--json", str(tmp_path / "p.json")], "--json: the public simulator's JSON"),
    ]
    for args, needle in cases:
        r = qoelab_cli("pageload", *args)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_rate_schedule_slows_the_load():
    base = qoelab_cli("pageload", "hand:8x1MB", "--if1", "8Mbps,20ms", "--policy", "if1")
    slow = qoelab_cli("pageload", "hand:8x1MB", "--if1", "8Mbps,20ms", "--policy", "if1",
                      "--if1-schedule", "1s:2Mbps")
    assert base.returncode == 0 and slow.returncode == 0, slow.stderr
    t0, t1 = float(base.stdout.split(",")[-1]), float(slow.stdout.split(",")[-1])
    # 8 MB at 1 MiB/s: ~8 s; with 256 KiB/s after 1 s, the remaining ~7 MB take 4x longer
    assert t1 > 3 * t0
    assert pu.schedule("1s:2Mbps,2.5s:500kbps") == [(10**9, 262_144), (2_500_000_000, 64_000)]


def test_units_binary_and_decimal():
    assert pu.rate_bytes("50Mbps") == 50 * 1024 * 1024 // 8
    assert pu.rate_bytes("500kbps") == 64_000           # the public grid's "0.5 Mbit/s"
    assert pu.rate_bytes("50Mbps", "decimal") == 6_250_000
    assert pu.iface("20Mbps,30ms") == (2_621_440, 30_000_000)
    with pytest.raises(ValueError):
        pu.iface("0Mbps,30ms")
    with pytest.raises(ValueError):
        pu.iface("20Mbps,0ms")


def test_cli_csv_json_and_result_dir(tmp_path):
    page = handcrafted.mixed()
    page.name = "example.org+2015-12-07+10-00-00"
    path = str(tmp_path / f"{page.name}.har")
    for o in page.objects:     # any timing whose heuristic gives root + children: all start after the root
        o.har_start_s, o.har_finish_s = (0.0, 0.05) if o.parent is None else (0.06, 0.2)
    write_har(page, path)
    out = tmp_path / "res"
    js = tmp_path / "sim.json"
    r = qoelab_cli("pageload", path, "--if1", "6Mbps,50ms", "--if2", "5Mbps,50ms", "--policy", "eaf",
                   "--json", str(js), "--out", str(out))
    assert r.returncode == 0, r.stderr
    f = r.stdout.strip().split(",")
    assert f[:4] == ["example.org", "2015-12-07", "10-00-00", "eaf"]
    assert int(f[4]) == 6 * 1024 * 1024 // 8 and float(f[5]) == 0.05
    plt = float(f[8])
    # EAF on two similar interfaces beats interface 1 alone on the mixed page (792 KB)
    r1 = qoelab_cli("pageload", path, "--if1", "6Mbps,50ms", "--if2", "5Mbps,50ms", "--policy", "only1-1")
    assert r1.returncode == 0 and float(r1.stdout.strip().split(",")[8]) > plt
    sim = json.loads(js.read_text())["simulatorResults"]
    assert len(sim) == 2 and sim[1] == {}
    run = sim[0]
    assert run["policy"] == "eaf" and len(run["transfers"]) == 52
    assert sum(len(c["transfers"]) for c in run["connections"]) == 52
    assert max(t["times"]["finish"] for t in run["transfers"]) == pytest.approx(plt)
    assert run["transfers"][0]["children"] == list(range(1, 52))
    summ = json.loads((out / "summary.json").read_text())
    assert summ["page_load_time_s"] == pytest.approx(plt) and summ["policy"]["name"] == "eaf"
    tbl = pq.read_table(out / "transfers.parquet").to_pydict()
    assert len(tbl["finish_s"]) == 52 and max(tbl["finish_s"]) == pytest.approx(plt)
    assert set(tbl["iface_mask"]) == {1, 2}       # both interfaces used
    # an existing result directory is not replaced without --force
    r2 = qoelab_cli("pageload", path, "--out", str(out))
    assert r2.returncode == 2


def test_synthetic_pages_deterministic_and_round_trip(tmp_path):
    spec = synth.SETS["alexa100"]
    a = synth.generate(spec, sites=6, days=2)
    b = synth.generate(spec, sites=6, days=2)
    pa = synth.write_set(a, str(tmp_path / "a"))
    pb = synth.write_set(b, str(tmp_path / "b"))
    for x, y in zip(pa, pb):
        assert open(x, "rb").read() == open(y, "rb").read()
    # a page does not depend on how many others were generated
    c = synth.generate(spec, sites=3, days=1)
    assert [o.size for o in c[2].objects] == [o.size for o in a[4].objects]
    # the HAR heuristic recovers the generated tree exactly
    for page, path in zip(a, pa):
        back = load_har(path)
        assert [o.size for o in sorted(back.objects, key=lambda o: o.url)] == \
               [o.size for o in sorted(page.objects, key=lambda o: o.url)]
        want = {o.url: (page.objects[o.parent].url if o.parent is not None else None) for o in page.objects}
        got = {o.url: (back.objects[o.parent].url if o.parent is not None else None) for o in back.objects}
        assert got == want, page.name
    # another day of the same site: same structure, jittered sizes
    assert a[0].objects[0].host == a[1].objects[0].host
    assert [o.size for o in a[0].objects] != [o.size for o in a[1].objects]


def test_synthetic_sets_meet_the_acceptance_targets():
    for name in ("alexa100", "alexa1000"):
        spec = synth.SETS[name]
        pages = [synth.make_page(spec, s, d) for s in range(spec.sites) for d in range(spec.days)]
        st = synth.stats(pages)
        assert st["all_targets_met"], (name, st["targets"])


def test_handcrafted_pages():
    ps = handcrafted.pages()
    assert len(ps) == 6 * 4 + 1
    m = handcrafted.mixed()
    assert len(m.objects) == 52 and m.total_bytes == 792_000
    assert all(o.parent == 0 for o in m.objects[1:]) and m.objects[0].parent is None


def test_batch_matches_single_runs_and_is_deterministic():
    pages = synth.generate(synth.SETS["alexa1000"], sites=4)
    tuples = [p.core_tuple() for p in pages]
    ifs = [(pu.rate_bytes("2Mbps"), 20_000_000, []), (pu.rate_bytes("20Mbps"), 100_000_000, [])]
    jobs = [(i, ifs, pol, 3) for i in range(len(pages)) for pol in ("if1", "eaf", "eaf-mptcp", "mptcp-rnd")]
    res = _core.pageload_batch(tuples, jobs)
    assert res == _core.pageload_batch(tuples, jobs)
    for (i, f, pol, seed), r in zip(jobs, res):
        one = _core.pageload_run(tuples[i], f, pol, seed)
        assert one["plt_ns"] == r[0]
    with pytest.raises(ValueError, match="job 0: policy"):
        _core.pageload_batch(tuples, [(0, ifs, "nope", 1)])


def test_flow_level_page_size_is_bounded(tmp_path):
    """The flow-level run is one uninterruptible call: pages above 20,000 objects are refused before
    it (400,000 ran for minutes and ignored SIGTERM)."""
    from conftest import qoelab_cli
    e = {"startedDateTime": "2015-12-07T10:00:00Z", "time": 1, "request": {"url": "http://h.com/"},
         "response": {"bodySize": 1000, "headersSize": -1}}
    p = tmp_path / "big.har"
    p.write_text(json.dumps({"log": {"entries": [e] * 20_001}}))
    r = qoelab_cli("pageload", str(p), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "at most 20,000 objects" in r.stderr and "found 20,001 objects" in r.stderr
    assert not (tmp_path / "o").exists()


def test_a_har_of_too_many_entries_is_refused_before_its_page_is_built(tmp_path, monkeypatch):
    """1.84 x 10^6 entries ran out of memory building the page before the 100,000-object check."""
    from qoelab.pageload import har
    monkeypatch.setattr(har, "MAX_ENTRIES", 2)

    def no_page(*a, **k):
        raise AssertionError("the page was built")
    monkeypatch.setattr(har, "parse_date", no_page)
    doc = {"log": {"entries": [{}, {}, {}]}}
    with pytest.raises(InputError) as e:
        page_from_har(doc, "x.har")
    assert str(e.value) == "x.har:log.entries: expected a page of at most 2 objects, found 3"


@pytest.mark.parametrize("doc, found", [
    ([1, 2], "found a list"),
    ({"log": {"entries": {}}}, "found an object"),
    ({"log": {"entries": [3]}}, "found a number"),
    ({"log": {"entries": [None]}}, "found null"),
])
def test_har_errors_name_json_kinds_not_python_types(doc, found):
    # they said "found list", "found dict", "found int", "found NoneType"
    with pytest.raises(InputError) as e:
        page_from_har(doc, "bad.har")
    assert str(e.value).endswith(found), str(e.value)
