"""Issue 8: data planes in the packet simulator — pipelining, byte ranges, several connections,
resets as on a real host, byte conservation per connection and per segment."""

import qoelab


def scen(plane=None, abr="fixed", abr_params=None, rate="10Mbps", aqm="fq_codel", duration="60s", bulk=0,
         video="synthetic:chunklets", video_duration="50s", buffer="1000pkts"):
    c = {"name": "v", "abr": abr, "video": video, "video_duration": video_duration}
    if abr_params is not None:
        c["abr_params"] = abr_params
    if plane is not None:
        c["data_plane"] = plane
    s = {"scenario": {"name": "dp", "duration": duration, "seed": 3},
         "topology": {"rate": rate, "rtt": "20ms", "buffer": buffer, "aqm": aqm},
         "client": [c]}
    if bulk:
        s["flow"] = [{"name": "bulk", "count": bulk}]
    return s


def test_chunklets_with_one_connection_equal_sequential_at_packet_level():
    a = qoelab.run(scen(abr="dynamic", bulk=2))
    b = qoelab.run(scen({"kind": "chunklets", "n": 1}, abr="dynamic", bulk=2))
    ca, cb = a.summary["clients"][0], b.summary["clients"][0]
    assert "http" not in ca and cb["http"]["data_plane"] == "chunklets"
    for k in ("segments", "bytes", "avg_bitrate_bps", "rebuffer_s", "switches", "goodput_bps", "achieved_rate_mean_bps"):
        assert ca[k] == cb[k], k
    assert a.table("segments").equals(b.table("segments"))
    assert a.summary["packets"] == b.summary["packets"]


def test_chunklets_bytes_are_conserved_per_connection_and_per_segment():
    r = qoelab.run(scen({"kind": "chunklets", "n": 5}, abr_params={"rung": 15}))
    c = r.summary["clients"][0]
    assert c["connections"] == 5 and c["http"]["resets"] == 0
    req = r.table("requests")
    seg = r.table("segments")
    assert (req.kind == "chunklet").all() and set(req.conn) == set(range(5))
    # every range arrived whole; per segment the ranges add up to the segment, in byte order
    assert (req.received_bytes == req.body_bytes).all()
    per_seg = req.groupby("segment").body_bytes.sum()
    done = seg[seg.abandoned == 0].set_index("segment").bytes
    assert (per_seg.loc[done.index] == done).all()
    for _, g in req.groupby("segment"):
        g = g.sort_values("conn")
        assert (g.offset.values[1:] == (g.offset + g.body_bytes).values[:-1]).all()
    # per connection: the response flow delivered exactly the headers + bodies of its ranges
    hdr = 300
    flows = {f["name"]: f for f in r.summary["flows"]}
    for k in range(5):
        name = "v/resp" if k == 0 else f"v/c{k}/resp"
        want = int((req[req.conn == k].body_bytes + hdr).sum())
        got = flows[name]["bytes"] if "bytes" in flows[name] else None
        if got is not None:
            assert got == want, (name, got, want)


def test_pipelining_keeps_the_connection_busy_between_segments():
    r = qoelab.run(scen({"kind": "pipelined", "depth": 2}, abr_params={"rung": 12}, bulk=1, aqm="bfifo",
                        buffer="256KB"))
    c = r.summary["clients"][0]
    assert c["http"]["max_pipeline"] == 2
    seg = r.table("segments").sort_values("segment")
    # the next request leaves before the previous response's last byte
    overlap = (seg.t_request_s.values[1:] < seg.t_last_byte_s.values[:-1]).mean()
    assert overlap > 0.8


def test_sprint_x_switch_cancels_a_range_and_wastes_what_the_server_sent():
    # A throughput ABR under a bulk flow switches rungs; every switch inside a range resets the
    # connection; the server's in-flight data reaches the closed client and is discarded.
    r = qoelab.run(scen({"kind": "sprint-x", "eps": 0.05}, abr="throughput", bulk=1, aqm="bfifo", buffer="128KB",
                        duration="120s", video_duration="110s"))
    h = r.summary["clients"][0]["http"]
    assert h["switch_cancels"] >= 1, h
    assert h["resets"] >= h["switch_cancels"]
    assert h["wasted_bytes"] > 0 or r.summary["packets"]["discarded_after_reset"] > 0
    assert r.summary["packets"]["discarded_after_reset"] > 0
    req = r.table("requests")
    ranges = req[req.kind == "range"]
    assert (ranges.last_segment > ranges.segment).any()
    assert ranges.cancelled.sum() == h["cancelled"] - int(req[req.kind == "probe"].cancelled.sum())


def test_sprint_probe_runs_on_its_own_connection_and_trains_start():
    r = qoelab.run(scen({"kind": "sprint"}, abr_params={"rung": 8}, duration="90s", video_duration="80s"))
    c = r.summary["clients"][0]
    req = r.table("requests")
    assert set(req[req.kind == "probe"].conn) == {1}
    assert set(req[req.kind == "segment"].conn) == {0}
    assert c["http"]["trains"] >= 1
    kinds = {f["name"]: f.get("kind") for f in r.summary["flows"]}
    assert kinds.get("v/c1/resp") in (None, "probe")


def test_adding_a_flow_leaves_the_other_connections_in_their_fq_codel_queues():
    # FQ-CoDel classifies on a connection's 5-tuple, which another host's connections do not
    # change: a flow appended to the scenario (here one that starts after the end, so it never
    # sends) must leave every other connection's flow queue, and so every result, as it was.
    # With 16 flow queues for 4 bulk flows and 8 chunklets connections, queues are shared.
    def run(extra):
        s = scen({"kind": "chunklets", "n": 8}, abr="dynamic", bulk=4, duration="40s", video_duration="40s")
        s["topology"]["aqm_params"] = {"flows": 16}
        if extra:
            s["flow"].append({"name": "late", "start": "50s"})
        return qoelab.run(s)
    a, b = run(False), run(True)
    link = [x for x in a.summary["links"] if x.get("fq_collisions")]
    assert link, "no flow queue was shared: the case tests nothing"
    # a client's `flow` and a flow's `id` are indexes in `flows`, which the appended flow moves
    ca, cb = ({k: v for k, v in c.items() if k != "flow"} for c in (a.summary["clients"][0], b.summary["clients"][0]))
    assert ca == cb
    fa = {f["name"]: {k: v for k, v in f.items() if k != "id"} for f in a.summary["flows"]}
    fb = {f["name"]: {k: v for k, v in f.items() if k != "id"} for f in b.summary["flows"]}
    assert set(fb) == set(fa) | {"late"}
    for name, f in fa.items():
        assert fb[name] == f, name
    assert a.summary["links"] == b.summary["links"]
    assert a.table("segments").equals(b.table("segments"))


def test_sequential_written_out_is_the_default_configuration():
    a = qoelab.run(scen(duration="10s", video_duration="10s"))
    b = qoelab.run(scen({"kind": "sequential"}, duration="10s", video_duration="10s"))
    assert a.summary["config_hash"] == b.summary["config_hash"]
    assert a.summary["clients"] == b.summary["clients"]
