"""Web page loads in the packet simulator (`[[page]]`) and the cross-model validation helpers of
the flow-level page-load model (qoelab.pageload.crossmodel, claims P17/P18)."""

import json
import math

import pytest

import qoelab
from conftest import qoelab_cli
from qoelab.pageload import crossmodel as cm
from qoelab.pageload.har import load_har, write_har
from qoelab.pageload.page import Obj, Page

SCENARIO = """
[scenario]
name = "page"
duration = "20s"

[topology]
rate = "6Mbps"
rtt = "50ms"
aqm = "pfifo"
buffer = 1000

[[page]]
name = "mixed"
{source}
cc = "newreno"
{extra}
"""


def write(tmp_path, source='handcrafted = "mixed"', extra=""):
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.format(source=source, extra=extra))
    return str(p)


def test_handcrafted_page_in_the_packet_simulator(tmp_path):
    res = qoelab.run(write(tmp_path))
    pg = res.summary["pages"][0]
    assert pg["objects"] == pg["objects_done"] == 52 and pg["bytes"] == 792_000
    assert pg["connections"] == 6 and pg["requests"] == 52 and pg["tls_handshakes"] == 0
    # at least the bytes at the link rate plus two round trips; the flow model is faster (P17)
    assert pg["plt_s"] > 792_000 * 8 / 6e6 + 0.1
    flow = cm.flow_plt(Page("m", [Obj(size=o, host="h", tls=False, parent=None if i == 0 else 0)
                                  for i, o in enumerate([1000] * 32 + [10_000] * 16 + [100_000] * 2 + [200_000] * 2)]),
                       750_000, 50_000_000)
    assert flow < pg["plt_s"]
    t = res.table("pages")
    assert len(t) == 52 and (t["done_s"] >= t["first_byte_s"]).all() and (t["first_byte_s"] > t["requested_s"]).all()
    # children are enabled when the root is done
    root_done = t.loc[t["object"] == 0, "done_s"].item()
    assert (t.loc[t["object"] > 0, "enabled_s"] == root_done).all()
    assert t["new_connection"].sum() == 6
    # same scenario, same summary
    again = qoelab.run(write(tmp_path))
    assert json.dumps(again.summary, sort_keys=True) == json.dumps(res.summary, sort_keys=True)


def test_har_page_with_tls_origins(tmp_path):
    page = Page("p", [Obj(size=30_000, host="a.example", tls=True, parent=None, har_start_s=0, har_finish_s=0.1),
                      Obj(size=5_000, host="b.example", tls=True, parent=0, har_start_s=0.1, har_finish_s=0.2),
                      Obj(size=5_000, host="a.example", tls=True, parent=0, har_start_s=0.1, har_finish_s=0.2)])
    write_har(page, str(tmp_path / "p.har"))
    res = qoelab.run(write(tmp_path, 'har = "p.har"'))
    pg = res.summary["pages"][0]
    # two origins: a's connection is reused for object 2, b needs its own (and its own TLS handshake)
    assert pg["connections"] == 2 and pg["tls_handshakes"] == 2 and pg["objects_done"] == 3


@pytest.mark.parametrize("source,extra,where", [
    ('har = "x.har"\nhandcrafted = "mixed"', "", "page[0].har"),
    ('handcrafted = "nope"', "", "page[0].handcrafted"),
    ('handcrafted = "mixed"', "max_per_origin = 0", "page[0].max_per_origin"),
    ('handcrafted = "mixed"', "bogus = 1", "page[0]"),
    ('har = "missing.har"', "", "missing.har"),
])
def test_bad_page_entries_are_one_line_exit_2(tmp_path, source, extra, where):
    r = qoelab_cli("run", write(tmp_path, source, extra), "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert where in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_pages_need_the_packet_network(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text(SCENARIO.format(source='handcrafted = "mixed"', extra="").replace(
        'duration = "20s"', 'duration = "20s"\nnetwork = "trace"'))
    r = qoelab_cli("run", str(p), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "packet network" in r.stderr


def test_bandwidth_estimate_takes_parallel_transfers_into_account():
    # Two 100 kB objects received side by side over the same second: each alone looks like 100 kB/s,
    # together the interface carried 200 kB/s. A small object inside the window adds its bytes.
    objs = [Obj(size=100_000, host="h", tls=False, parent=None, har_start_s=0.0, har_finish_s=1.0,
                timings={"blocked": 0, "connect": 0, "wait": 0, "receive": 1.0}),
            Obj(size=100_000, host="h", tls=False, parent=None, har_start_s=0.0, har_finish_s=1.0,
                timings={"blocked": 0, "connect": 0, "wait": 0, "receive": 1.0}),
            Obj(size=10_000, host="h", tls=False, parent=None, har_start_s=0.0, har_finish_s=0.6,
                timings={"blocked": 0, "connect": 0, "wait": 0.5, "receive": 0.1})]
    assert cm.bandwidth_samples(Page("p", objs)) == [pytest.approx(210_000)] * 2
    # objects <= 50 kB give no sample
    assert cm.bandwidth_samples(Page("p", objs[2:])) == []


def test_packet_timings_round_trip_through_a_har(tmp_path):
    from qoelab.pageload import handcrafted
    pg = handcrafted.by_name("8x100KB")
    res = cm.packet_load({"handcrafted": pg.name}, 750_000, 50_000_000, page_bytes=pg.total_bytes)
    timed = cm.page_with_packet_timings(pg, res)
    write_har(timed, str(tmp_path / "t.har"))
    doc = json.load(open(tmp_path / "t.har"))
    for e in doc["log"]["entries"]:
        t = e["timings"]
        assert sum(v for k, v in t.items() if v >= 0 and k != "ssl") == pytest.approx(e["time"], abs=0.01)
    back = load_har(str(tmp_path / "t.har"))
    # the importer's heuristic recovers the tree (root first, every other object its child)
    assert [o.parent for o in back.objects] == [None] + [0] * 7
    plt = res.summary["pages"][0]["plt_s"]
    assert max(o.har_finish_s for o in back.objects) == pytest.approx(plt, abs=1e-5)
    assert not math.isnan(cm.flow_plt(back, 750_000, 50_000_000))


def test_pageload_cli_packet_mode(tmp_path):
    r = qoelab_cli("pageload", "hand:8x10KB", "--if1", "6Mbps,50ms", "--packet", "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip().splitlines()[-1].split(",")
    assert line[3] == "packet-newreno" and float(line[-1]) > 0.2
    s = json.load(open(tmp_path / "o" / "summary.json"))
    assert s["pages"][0]["plt_s"] == float(line[-1])
    r = qoelab_cli("pageload", "hand:8x10KB", "--packet", "--cc", "nope")
    assert r.returncode == 2 and "--cc" in r.stderr and len(r.stderr.strip().splitlines()) == 1
