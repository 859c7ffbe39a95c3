"""Malformed and extreme inputs, tried as a new user would: every one gets exit code 2, one line
on stderr naming the user's file and key (or line), no traceback, no hang, no out-of-memory kill,
and no output directory left behind. `qoelab validate` and `qoelab run` give the same line.

Each case runs `validate` then `run` in one child process (address space capped at 3 GB, a
timeout per case), see _DRIVER.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

_DRIVER = r"""
import contextlib, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from qoelab import cli
out = []
for argv in json.loads(sys.argv[1]):
    e, o = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(e), contextlib.redirect_stdout(o):
        try:
            rc = cli.main(argv)
        except SystemExit as x:
            rc = x.code
    out.append([rc, e.getvalue(), o.getvalue()])
print(json.dumps(out))
"""


def run_cli_many(argvs, timeout=60):
    r = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(argvs)], capture_output=True, text=True,
                       cwd=REPO, timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def scen(*, scenario="", topology='rate = "10Mbps"\nrtt = "20ms"', flow='kind = "cbr"\nrate = "1Mbps"',
         client=None, extra=""):
    parts = [f'[scenario]\nname = "t"\nduration = "1s"\n{scenario}', f"[topology]\n{topology}"]
    if flow is not None:
        parts.append(f"[[flow]]\n{flow}")
    if client is not None:
        parts.append(f"[[client]]\n{client}")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts) + "\n"


VIDEO = 'video = "synthetic:has-testbed"\nvideo_duration = "4s"'


def vscen(client="", **kw):
    return scen(flow=None, client=VIDEO + "\n" + client, **kw)


def tscen(client="", topology='rate = "5Mbps"\nrtt = "20ms"', **kw):
    return scen(flow=None, client=VIDEO + "\n" + client, topology=topology, scenario='network = "trace"', **kw)


MPD_HUGE_R = """<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT10S">
<Period><AdaptationSet mimeType="video/mp4"><SegmentTemplate timescale="1" media="$Number$.m4s">
<SegmentTimeline><S t="0" d="2" r="1000000000"/></SegmentTimeline></SegmentTemplate>
<Representation id="a" bandwidth="1000000"/></AdaptationSet></Period></MPD>
"""
MPD_RANGES = """<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S">
<Period><AdaptationSet mimeType="video/mp4"><SegmentList timescale="1" duration="2">
<SegmentURL mediaRange="0-999"/><SegmentURL mediaRange="RANGE"/></SegmentList>
<Representation id="a" bandwidth="1000000"/></AdaptationSet></Period></MPD>
"""
HLS_MASTER = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000000\nv.m3u8\n"
HLS_RANGES = "#EXTM3U\n#EXTINF:2,\n#EXT-X-BYTERANGE:1000@0\nf.mp4\n#EXTINF:2,\n#EXT-X-BYTERANGE:{R}\nf.mp4\n"
VIDEO_JSON_OFFSETS = '{"name": "v", "segment_duration": 2000000000, "bitrates_bps": [500000], ' \
                     '"sizes": [[1000], [1000]], "byte_offsets": [[800], [1700]]}'
SABRE_MOVIE = '{"segment_duration_ms": 2000, "bitrates_kbps": [500, 1000], ' \
              '"segment_sizes_bits": [[1000000, 2000000], [1000000, 2000000]]}'

PV = {"v.json": '{"name": "v", "segment_duration": 2000000000, "bitrates_bps": [500000, 1000000], '
                '"sizes": [[125000, 250000], [125000, 250000]], "quality": {"vmaf": [[40, 80], [40, 80]]}}'}


VF_BAD_SHAPE = json.dumps({"format": "qoelab.value_function", "version": 1, "video": "v", "metric": "vmaf",
                           "horizon": 5, "beta": 25, "gamma": 2.5, "buffer_max_s": 60, "segment_s": 2,
                           "bitrates_bps": [500000, 1000000], "rates_bps": [1e6, 2e6], "buffers_s": [0, 1],
                           "values": [[[1, 2], [3, 4]]]})

NORM_BAD = json.dumps({"format": "qoelab.normalization", "version": 1, "metric": "vmaf", "objective": "maxmin",
                       "pf_c": 1.0, "alpha": 1.65, "videos": ["v"], "popularity": [1.0], "utility": [0.0, 80.0],
                       "mean_rate_bps": [2000000.0, 1000000.0]})


def pscen(provider, video='video = "v.json"', cc="wcubic", controller="minerva"):
    return scen(flow=None, client=f'name = "a"\n{video}\ncc = "{cc}"',
                extra=f'[[provider]]\ncontroller = "{controller}"\n{provider}')


# (id, scenario text, expected "file:key" (file "s.toml" unless given), extra files {name: text or bytes})
CASES = [
    # --- unit strings: overflow, non-finite, absurd magnitudes ---
    ("rate-inf", scen(topology='rate = "infMbps"'), "topology.rate", {}),
    ("rate-nan", scen(topology='rate = "nanMbps"'), "topology.rate", {}),
    ("rate-1e400", scen(topology='rate = "1e400Mbps"'), "topology.rate", {}),
    ("rate-overflow-u64", scen(topology='rate = "1e30Gbps"'), "topology.rate", {}),
    ("duration-1e400", scen(scenario='duration = "1e400s"').replace('duration = "1s"\n', "", 1), "scenario.duration", {}),
    ("duration-overflow", scen().replace('"1s"', '"1e12h"', 1), "scenario.duration", {}),
    ("duration-zero", scen().replace('"1s"', '"0s"', 1), "scenario.duration", {}),
    ("duration-negative-int", scen().replace('"1s"', "-1", 1), "scenario.duration", {}),
    ("duration-datetime", scen().replace('"1s"', "1979-05-27T07:32:00Z", 1), "scenario.duration", {}),
    ("duration-date", scen().replace('"1s"', "1979-05-27", 1), "scenario.duration", {}),
    ("duration-time", scen().replace('"1s"', "07:32:00", 1), "scenario.duration", {}),
    ("duration-table", scen().replace('"1s"', "{ a = { b = { c = 1 } } }", 1), "scenario.duration", {}),
    ("duration-array", scen().replace('"1s"', '["1s"]', 1), "scenario.duration", {}),
    ("rtt-1e400", scen(topology='rate = "10Mbps"\nrtt = "1e400ms"'), "topology.rtt", {}),
    ("rtt-nan", scen(topology='rate = "10Mbps"\nrtt = "nanms"'), "topology.rtt", {}),
    ("delay-overflow", scen(topology='rate = "10Mbps"\ndelay = "1e15h"'), "topology.delay", {}),
    ("rate-datetime", scen(topology="rate = 1979-05-27T07:32:00"), "topology.rate", {}),
    ("rate-nested", scen(topology="rate = { a = { b = { c = { d = 1 } } } }"), "topology.rate", {}),
    ("rate-deeply-nested-array", scen(topology="rate = " + "[" * 5000 + "]" * 5000), "", {}),
    ("rate-deeply-nested-table", scen(topology="rate = " + "{a=" * 3000 + "1" + "}" * 3000), "", {}),
    ("rate-10bps", scen(topology='rate = "10bps"'), "topology.rate", {}),
    ("rate-zero", scen(topology='rate = "0Mbps"'), "topology.rate", {}),
    ("rate-up-1bps", scen(topology='rate = "10Mbps"\nrate_up = "1bps"'), "topology.rate_up", {}),
    ("access-rate-inf", scen(topology='rate = "10Mbps"\naccess_rate = "infGbps"'), "topology.access_rate", {}),
    ("buffer-0pkts", scen(topology='rate = "10Mbps"\nbuffer = "0pkts"'), "topology.buffer", {}),
    ("buffer-0", scen(topology='rate = "10Mbps"\nbuffer = 0'), "topology.buffer", {}),
    ("buffer-0B", scen(topology='rate = "10Mbps"\nbuffer = "0B"'), "topology.buffer", {}),
    ("buffer-1e400KB", scen(topology='rate = "10Mbps"\nbuffer = "1e400KB"'), "topology.buffer", {}),
    ("buffer-1e30pkts", scen(topology='rate = "10Mbps"\nbuffer = "1e30pkts"'), "topology.buffer", {}),
    ("buffer-huge-int", scen(topology='rate = "10Mbps"\nbuffer = 100000000000000000000'), "topology.buffer", {}),
    ("buffer-infbdp", scen(topology='rate = "10Mbps"\nbuffer = "infbdp"'), "topology.buffer", {}),
    ("buffer-up-0bdp", scen(topology='rate = "10Mbps"\nbuffer_up = "0bdp"'), "topology.buffer_up", {}),
    ("rate-profile-inf", scen(topology='rate_profile = [["0s", "infMbps"]]'), "topology.rate_profile", {}),
    ("rate-profile-datetime", scen(topology='rate_profile = [["0s", 1979-05-27]]'), "topology.rate_profile", {}),
    ("loss-nan", scen(topology='rate = "10Mbps"\nloss = nan'), "topology.loss", {}),
    ("loss-inf-percent", scen(topology='rate = "10Mbps"\nloss = "inf%"'), "topology.loss", {}),
    # --- integers out of range ---
    ("seed-huge", scen(scenario="seed = 99999999999999999999999"), "scenario.seed", {}),
    ("seed-negative", scen(scenario="seed = -1"), "scenario.seed", {}),
    ("flow-count-1e12", scen(flow='kind = "cbr"\nrate = "1Mbps"\ncount = 1000000000000'), "flow[0].count", {}),
    ("client-count-1e12", vscen("count = 1000000000000"), "client[0].count", {}),
    # an n out of range in a run long enough that n connections' table rows would be too many:
    # the key is n, not the duration
    ("chunklets-n-80-long-run", scen(scenario='duration = "3600s"', flow=None,
                                     client='video = "synthetic:chunklets"\ndata_plane = {kind = "chunklets", n = 80}'
                                     ).replace('duration = "1s"\n', "", 1), "client[0].data_plane.n", {}),
    ("sprint-probe-bytes-huge", vscen('data_plane = {kind = "sprint", probe_bytes = "1000TB"}'),
     "client[0].data_plane.probe_bytes", {}),
    ("sprint-min-samples-huge", vscen('data_plane = {kind = "sprint-x", min_samples = 1000000}'),
     "client[0].data_plane.min_samples", {}),
    # names the run gives its own flows: a bulk flow "w#1" beside web flow "w"'s first flow, a
    # flow "a/c1/req" beside client "a"'s second connection (one FQ hash, one random stream)
    ("flow-name-of-a-web-flow", scen(flow='name = "w#1"', extra='[[flow]]\nkind = "web"\nname = "w"\n'
                                                               'arrival_rate = 2'), "flow[0].name", {}),
    ("flow-name-of-a-connection", scen(flow='name = "a/c1/req"', client='name = "a"\n' + VIDEO),
     "flow[0].name", {}),
    ("client-name-with-slash", vscen('name = "a/b"'), "client[0].name", {}),
    ("page-name-with-hash", scen(flow=None, extra='[[page]]\nname = "p#1"\nhandcrafted = "simple"'),
     "page[0].name", {}),
    ("flow-count-nodes", scen(flow='kind = "cbr"\nrate = "1Mbps"\ncount = 40000'), "flow[0].count", {}),
    ("packet-size-u32", scen(flow='kind = "cbr"\nrate = "1Mbps"\npacket_size = 10000000000'), "flow[0].packet_size", {}),
    ("packet-size-huge", scen(flow='kind = "cbr"\nrate = "1Mbps"\npacket_size = 100000'), "flow[0].packet_size", {}),
    ("from-hop-huge", scen(flow='kind = "cbr"\nrate = "1Mbps"\nfrom_hop = 100000000000000000000'), "flow[0].from_hop", {}),
    ("video-seed-huge", vscen("video_seed = 99999999999999999999999"), "client[0].video_seed", {}),
    ("cc-int-param-huge", scen(flow='kind = "bulk"\ncc = "cubic"\n[flow.tcp]\ninitial_window = 100000000000000000000000'),
     "flow[0].tcp.initial_window", {}),
    # --- floats: non-finite, negative, absurd ---
    ("web-arrival-inf", scen(flow='kind = "web"\narrival_rate = inf'), "flow[0].arrival_rate", {}),
    ("web-arrival-nan", scen(flow='kind = "web"\narrival_rate = nan'), "flow[0].arrival_rate", {}),
    ("web-arrival-1e9", scen(flow='kind = "web"\narrival_rate = 1e9'), "flow[0].arrival_rate", {}),
    ("web-arrival-zero", scen(flow='kind = "web"\narrival_rate = 0'), "flow[0].arrival_rate", {}),
    ("client-arrival-1e9", vscen("arrival_rate = 1e9"), "client[0].arrival_rate", {}),
    ("client-arrival-nan", vscen("arrival_rate = nan"), "client[0].arrival_rate", {}),
    ("pie-alpha-negative", scen(topology='rate = "10Mbps"\naqm = "pie"\n[topology.aqm_params]\nalpha = -1.0'),
     "topology.aqm_params.alpha", {}),
    ("pie-alpha-nan", scen(topology='rate = "10Mbps"\naqm = "pie"\n[topology.aqm_params]\nalpha = nan'),
     "topology.aqm_params.alpha", {}),
    ("pie-beta-inf", scen(topology='rate = "10Mbps"\naqm = "pie"\n[topology.aqm_params]\nbeta = inf'),
     "topology.aqm_params.beta", {}),
    ("red-max-p-negative", scen(topology='rate = "10Mbps"\naqm = "red"\n[topology.aqm_params]\nprobability = -0.5'),
     "topology.aqm_params.probability", {}),
    ("codel-target-inf", scen(topology='rate = "10Mbps"\naqm = "codel"\n[topology.aqm_params]\ntarget = "infms"'),
     "topology.aqm_params.target", {}),
    # an ABR's own buffer limit, adopted by the player, below one segment: a stall before every segment
    ("bba0-buffer-max-0s", vscen('abr = "bba0"\n[client.abr_params]\nbuffer_max = "0s"'),
     "client[0].abr_params.buffer_max", {}),
    ("bola-buffer-size-1s", vscen('abr = "bola"\n[client.abr_params]\nbuffer_size = "1s"'),
     "client[0].abr_params.buffer_size", {}),
    # sampled rows counted per connection of a client (200 chunklets clients of 64 connections
    # were counted as 200 flows: 1.5 GB in 10 s, stopped by the run's memory guard)
    ("chunklets-sampled-rows", vscen('count = 200\n[client.data_plane]\nkind = "chunklets"\nn = 64',
                                     extra='[output]\nsample_interval = "1ms"'),
     "output.sample_interval", {}),
    # limits below one full packet took nothing: every flow carried 0 bytes, exit 0
    ("pfifo-limit-0", scen(topology='rate = "10Mbps"\naqm = "pfifo"\n[topology.aqm_params]\nlimit = 0'),
     "topology.aqm_params.limit", {}),
    ("bfifo-limit-1B", scen(topology='rate = "10Mbps"\naqm = "bfifo"\n[topology.aqm_params]\nlimit = "1B"'),
     "topology.aqm_params.limit", {}),
    ("codel-limit-bytes-1B", scen(topology='rate = "10Mbps"\naqm = "codel"\n[topology.aqm_params]\n'
                                           'limit_bytes = "1499B"'),
     "topology.aqm_params.limit_bytes", {}),
    ("red-limit-1B", scen(topology='rate = "10Mbps"\naqm = "red"\n[topology.aqm_params]\nlimit = "1B"'),
     "topology.aqm_params.limit", {}),
    # a packet cost (size + l2_overhead) / quantum DRR rounds: 1 B against 1 GB never finished
    ("fq-codel-quantum-1B", scen(topology='rate = "10Mbps"\naqm = "fq_codel"\n[topology.aqm_params]\n'
                                          'quantum = "1B"'),
     "topology.aqm_params.quantum", {}),
    ("fq-codel-l2-overhead-1GB", scen(topology='rate = "10Mbps"\naqm = "fq_codel"\n[topology.aqm_params]\n'
                                               'l2_overhead = "1GB"'),
     "topology.aqm_params.l2_overhead", {}),
    ("weight-schedule-datetime", scen(flow='kind = "bulk"\nweight_schedule = [["1s", 1979-05-27]]'),
     "flow[0].weight_schedule", {}),
    ("weight-schedule-nan", scen(flow='kind = "bulk"\nweight_schedule = [["1s", nan]]'), "flow[0].weight_schedule", {}),
    ("weight-schedule-zero", scen(flow='kind = "bulk"\ncc = "wcubic"\nweight_schedule = [["1s", 0]]'),
     "flow[0].weight_schedule", {}),
    ("cbr-rate-zero", scen(flow='kind = "cbr"\nrate = "0bps"'), "flow[0].rate", {}),
    ("cbr-rate-above-access", scen(flow='kind = "cbr"\nrate = "90000Gbps"\npacket_size = 28'), "flow[0].rate", {}),
    ("cbr-rate-inf", scen(flow='kind = "cbr"\nrate = "infbps"'), "flow[0].rate", {}),
    ("flow-size-1e400", scen(flow='kind = "bulk"\nsize = "1e400B"'), "flow[0].size", {}),
    ("flow-size-zero", scen(flow='kind = "bulk"\nsize = "0B"'), "flow[0].size", {}),
    ("onoff-period-zero", scen(flow='kind = "onoff"\nsize = "100KB"\nperiod = "0s"'), "flow[0].period", {}),
    ("http-request-bytes-huge", vscen('[client.http]\nrequest_bytes = "1e30B"'), "client[0].http.request_bytes", {}),
    ("http-progress-zero", vscen('[client.http]\nprogress_interval = "0s"'), "client[0].http.progress_interval", {}),
    ("stagger-overflow", scen(flow='kind = "cbr"\nrate = "1Mbps"\ncount = 30000\nstagger = "90000h"'),
     "flow[0].stagger", {}),
    ("client-stagger-overflow", vscen('count = 30000\nstagger = "90000h"'), "client[0].stagger", {}),
    # --- output ---
    ("sample-rows-too-many", scen(scenario="", flow='kind = "cbr"\nrate = "1Mbps"\ncount = 2000').replace(
        'duration = "1s"', 'duration = "2h"'), "scenario.duration", {}),
    ("sample-rows-interval", scen(flow='kind = "cbr"\nrate = "1Mbps"\ncount = 2000',
                                  extra='[output]\nsample_interval = "1ms"').replace('duration = "1s"', 'duration = "1h"'),
     "output.sample_interval", {}),
    ("packet-log-too-big", scen(topology='rate = "10Gbps"', extra="[output]\npacket_log = true").replace(
        'duration = "1s"', 'duration = "2h"'), "output.packet_log", {}),
    ("sample-interval-0s", scen(extra='[output]\nsample_interval = "0s"'), "output.sample_interval", {}),
    ("sample-interval-1ns", scen(extra='[output]\nsample_interval = "1ns"'), "output.sample_interval", {}),
    ("sample-interval-inf", scen(extra='[output]\nsample_interval = "infs"'), "output.sample_interval", {}),
    ("output-tables-bad", scen(extra='[output]\ntables = ["flows", 3]'), "output.tables", {}),
    ("output-pcap-unknown", scen(extra='[output]\npcap = "nolink"'), "output.pcap", {}),
    # --- video ---
    ("video-duration-zero", vscen().replace('video_duration = "4s"', 'video_duration = "0s"'),
     "client[0].video_duration", {}),
    ("video-duration-huge-synthetic", vscen().replace('video_duration = "4s"', 'video_duration = "100000000h"'),
     "client[0].video_duration", {}),
    ("video-duration-huge-file", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.json"').replace(
        'video_duration = "4s"', 'video_duration = "1000000h"'), "client[0].video_duration", {"m.json": SABRE_MOVIE}),
    ("mpd-huge-repeat", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.mpd"'), "m.mpd:", {"m.mpd": MPD_HUGE_R}),
    ("mpd-malformed", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.mpd"'), "m.mpd:",
     {"m.mpd": "<MPD><Period>"}),
    ("movie-json-infinity", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.json"'), "m.json",
     {"m.json": SABRE_MOVIE.replace("2000,", "Infinity,", 1)}),
    ("movie-json-garbage", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.json"'), "m.json:",
     {"m.json": '{"segment_duration_ms": '}),
    ("movie-json-huge-size", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.json"'), "m.json",
     {"m.json": SABRE_MOVIE.replace("2000000]", "1e300]", 1)}),
    ("mpd-range-reversed", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.mpd"'), "m.mpd:4:",
     {"m.mpd": MPD_RANGES.replace("RANGE", "10-5")}),
    ("mpd-range-not-numeric", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.mpd"'), "m.mpd:4:",
     {"m.mpd": MPD_RANGES.replace("RANGE", "1000-x")}),
    ("mpd-range-overlap", vscen().replace('video = "synthetic:has-testbed"', 'video = "m.mpd"'), "m.mpd:4:",
     {"m.mpd": MPD_RANGES.replace("RANGE", "999-1999")}),
    ("hls-byterange-overlap", vscen().replace('video = "synthetic:has-testbed"', 'video = "p.m3u8"'), "v.m3u8:6",
     {"p.m3u8": HLS_MASTER, "v.m3u8": HLS_RANGES.replace("{R}", "1000@500")}),
    ("hls-byterange-first-without-offset", vscen().replace('video = "synthetic:has-testbed"', 'video = "p.m3u8"'),
     "v.m3u8:3", {"p.m3u8": HLS_MASTER, "v.m3u8": HLS_RANGES.replace("1000@0", "1000").replace("{R}", "10")}),
    ("video-json-offsets-overlap", vscen().replace('video = "synthetic:has-testbed"', 'video = "v.json"'),
     "v.json:byte_offsets[1][0]", {"v.json": VIDEO_JSON_OFFSETS}),
    ("hls-bad-extinf", vscen().replace('video = "synthetic:has-testbed"', 'video = "p.m3u8"'), "p.m3u8:",
     {"p.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:abc,\nseg1.ts\n#EXT-X-ENDLIST\n"}),
    ("video-unknown-ladder", vscen().replace("synthetic:has-testbed", "synthetic:nope"), "client[0].video", {}),
    ("startup-0seg", vscen('[client.player]\nstartup = "0seg"'), "client[0].player.startup", {}),
    ("buffer-max-zero", vscen('[client.player]\nbuffer_max = "0s"'), "client[0].player.buffer_max", {}),
    # 40 s segments against the default 30 s buffer: the key is not in the file, so the line says so
    ("buffer-max-default-below-segment", vscen().replace('video = "synthetic:has-testbed"', 'video = "v.json"'),
     "client[0].player.buffer_max: expected at least one segment duration (40 s), found 30 s (the default",
     {"v.json": PV["v.json"].replace("2000000000", "40000000000")}),
    ("buffer-max-inf", vscen('[client.player]\nbuffer_max = "infs"'), "client[0].player.buffer_max", {}),
    ("buffer-max-1ns", vscen('[client.player]\nbuffer_max = "1ns"'), "client[0].player.buffer_max", {}),
    ("startup-beyond-buffer-max", vscen('[client.player]\nstartup = "1000h"'), "client[0].player.startup", {}),
    ("rebuffer-resume-huge", vscen('[client.player]\nrebuffer_resume = "1000h"'), "client[0].player.rebuffer_resume", {}),
    ("mpc-horizon-huge", vscen('abr = "mpc"\n[client.abr_params]\nhorizon = 100000'), "client[0].abr_params.horizon", {}),
    ("tcp-mss-huge", scen(flow='kind = "bulk"\n[flow.tcp]\nmss = "1GB"'), "flow[0].tcp.mss", {}),
    ("tcp-ack-every-zero", scen(flow='kind = "bulk"\n[flow.tcp]\nack_every = 0'), "flow[0].tcp.ack_every", {}),
    ("tcp-profile-unknown", vscen('[client.tcp]\nprofile = "freebsd"'), "client[0].tcp.profile", {}),
    ("data-plane-unknown", vscen('[client.data_plane]\nkind = "quic"'), "client[0].data_plane.kind", {}),
    ("data-plane-n-zero", vscen('[client.data_plane]\nkind = "chunklets"\nn = 0'), "client[0].data_plane.n", {}),
    ("data-plane-n-65", vscen('[client.data_plane]\nkind = "chunklets"\nn = 65'), "client[0].data_plane.n", {}),
    ("data-plane-n-float", vscen('[client.data_plane]\nkind = "chunklets"\nn = 2.5'), "client[0].data_plane.n", {}),
    ("data-plane-eps-one", vscen('[client.data_plane]\nkind = "sprint"\neps = 1.0'), "client[0].data_plane.eps", {}),
    ("data-plane-eps-zero", vscen('[client.data_plane]\nkind = "sprint-x"\neps = 0'), "client[0].data_plane.eps", {}),
    ("data-plane-eps-negative", vscen('[client.data_plane]\nkind = "sprint"\neps = -0.1'), "client[0].data_plane.eps", {}),
    ("data-plane-depth-zero", vscen('[client.data_plane]\nkind = "pipelined"\ndepth = 0'), "client[0].data_plane.depth", {}),
    ("data-plane-unknown-param", vscen('[client.data_plane]\nkind = "sprint"\nepsilon = 0.1'), "client[0].data_plane.epsilon", {}),
    ("data-plane-param-of-other-plane", vscen('[client.data_plane]\nkind = "chunklets"\neps = 0.1'), "client[0].data_plane.eps", {}),
    ("data-plane-not-a-table", vscen('data_plane = "chunklets"'), "client[0].data_plane", {}),
    ("data-plane-needs-layout", vscen('[client.data_plane]\nkind = "chunklets"').replace('video = "synthetic:has-testbed"', 'video = "m.json"'),
     "client[0].data_plane.kind", {"m.json": SABRE_MOVIE}),
    ("data-plane-trace-mode", tscen('[client.data_plane]\nkind = "pipelined"'), "client[0].data_plane.kind", {}),
    ("tcp-profile-unknown-flow", scen(flow='kind = "bulk"\n[flow.tcp]\nprofile = 10'), "flow[0].tcp.profile", {}),
    ("tcp-idle-restart-unknown", vscen('[client.tcp]\nidle_restart = "bsd"'), "client[0].tcp.idle_restart", {}),
    ("tcp-abc-l-zero", scen(flow='kind = "bulk"\n[flow.tcp]\nabc_l = 0'), "flow[0].tcp.abc_l", {}),
    ("fq-codel-variant-unknown", scen(topology='rate = "10Mbps"\naqm = "fq_codel"\n[topology.aqm_params]\nvariant = "bsd"'),
     "topology.aqm_params.variant", {}),
    ("pie-decay-above-one", scen(topology='rate = "10Mbps"\naqm = "pie"\n[topology.aqm_params]\ndecay = 1.5'),
     "topology.aqm_params.decay", {}),
    ("fq-codel-flows-huge", scen(topology='rate = "10Mbps"\naqm = "fq_codel"\n[topology.aqm_params]\nflows = 100000000'),
     "topology.aqm_params.flows", {}),
    ("pie-tupdate-zero", scen(topology='rate = "10Mbps"\naqm = "pie"\n[topology.aqm_params]\ntupdate = "0s"'),
     "topology.aqm_params.tupdate", {}),
    ("red-wlog-huge", scen(topology='rate = "10Mbps"\naqm = "red"\n[topology.aqm_params]\nwlog = 100'),
     "topology.aqm_params.wlog", {}),
    ("aqm-upstream-param-negative", scen(topology='rate = "10Mbps"\naqm_up = "pie"\n[topology.aqm_params_up]\nalpha = -2.0'),
     "topology.aqm_params_up.alpha", {}),
    ("chain-hop-aqm-param-negative", scen(topology='kind = "chain"\n[[topology.hop]]\nrate = "10Mbps"\naqm = "pie"\n'
                                                  '[topology.hop.aqm_params]\nbeta = -1.0'),
     "topology.hop[0].aqm_params.beta", {}),
    ("abr-python-bare-name", vscen('abr = "python:foo"'), "client[0].abr", {}),
    ("abr-python-no-module", vscen('abr = "python:nomodule_xyz:Cls"'), "client[0].abr", {}),
    ("quality-metric-missing", vscen('[client.player]\nquality_metric = "vmaf"'), "client[0].player.quality_metric", {}),
    ("abr-unknown", vscen('abr = "dynamik"'), "client[0].abr", {}),
    ("abr-param-unknown", vscen('abr = "bola"\n[client.abr_params]\nfoo = 1'), "client[0].abr_params.foo", {}),
    # --- trace mode ---
    ("trace-mode-10bps", tscen(topology='rate = "10bps"'), "topology.rate", {}),
    ("trace-mode-flow", scen(scenario='network = "trace"'), "flow", {}),
    ("trace-mode-arrivals", tscen("arrival_rate = 1.0"), "client[0].arrival_rate", {}),
    # trace mode writes summary.json and segments only: packet outputs were accepted and not written
    ("trace-mode-pcap", tscen(extra='[output]\npcap = "bottleneck"'), "output.pcap", {}),
    ("trace-mode-packet-log", tscen(extra='[output]\npacket_log = true'), "output.packet_log", {}),
    ("trace-mode-tables", tscen(extra='[output]\ntables = ["segments", "flows"]'), "output.tables", {}),
    # both drove nothing together: the trace the downlink, the rate only the upstream's default
    ("rate-and-trace", scen(topology='rate = "1Mbps"\ntrace = "t.down"'), "topology.trace", {"t.down": "1\n2\n"}),
    ("network-unknown", scen(scenario='network = "pigeon"'), "scenario.network", {}),
    # --- trace files ---
    ("trace-garbage-line", scen(topology='trace = "t.down"\nrate_up = "10Mbps"'), "t.down:3", {"t.down": "1\n2\nx\n"}),
    ("trace-binary", scen(topology='trace = "t.down"\nrate_up = "10Mbps"'), "t.down", {"t.down": b"\xff\xfe\x00\x01"}),
    ("trace-empty", scen(topology='trace = "t.down"\nrate_up = "10Mbps"'), "t.down", {"t.down": ""}),
    ("trace-huge-number", scen(topology='trace = "t.down"\nrate_up = "10Mbps"'), "t.down:2",
     {"t.down": "1\n" + "9" * 40 + "\n"}),
    ("sabre-trace-inf", scen(topology='trace = "n.json"\ntrace_format = "sabre"\nrate_up = "10Mbps"'), "n.json",
     {"n.json": '[{"duration_ms": 1000, "bandwidth_kbps": Infinity, "latency_ms": 20}]'}),
    # a key twice in one object: the last one was kept, silently
    ("sabre-trace-repeated-key", scen(topology='trace = "n.json"\ntrace_format = "sabre"\nrate_up = "10Mbps"'),
     "n.json", {"n.json": '[{"duration_ms": 1000, "duration_ms": 2000, "bandwidth_kbps": 5, "latency_ms": 20}]'}),
    ("sabre-trace-negative", scen(topology='trace = "n.json"\ntrace_format = "sabre"\nrate_up = "10Mbps"'), "n.json",
     {"n.json": '[{"duration_ms": 1000, "bandwidth_kbps": -5, "latency_ms": 20}]'}),
    ("pensieve-trace-nan", scen(topology='trace = "p.txt"\ntrace_format = "pensieve"\nrate_up = "10Mbps"'), "p.txt:2",
     {"p.txt": "0 1.0\nnan 2.0\n2 3.0\n"}),
    ("trace-dev-zero", scen(topology='trace = "/dev/zero"\nrate_up = "10Mbps"'), "topology.trace", {}),
    ("trace-is-folder", scen(topology='trace = "."\nrate_up = "10Mbps"'), "topology.trace", {}),
    ("video-dev-zero", vscen().replace('video = "synthetic:has-testbed"', 'video = "/dev/zero"'), "client[0].video", {}),
    ("sizes-dev-zero", scen(flow='kind = "web"\narrival_rate = 5\nsizes = "/dev/zero"'), "flow[0].sizes", {}),
    ("sizes-cdf-huge-number", scen(flow='kind = "web"\narrival_rate = 5\nsizes = "c.txt"'), "c.txt:1",
     {"c.txt": "9" * 400 + " 1.0\n"}),
    ("sizes-cdf-garbage", scen(flow='kind = "web"\narrival_rate = 5\nsizes = "c.txt"'), "c.txt", {"c.txt": "a b\n"}),
    # --- structure and keys ---
    ("unknown-key-scenario", scen(scenario='duraton = "1s"'), "scenario.duraton", {}),
    ("unknown-key-topology", scen(topology='rate = "10Mbps"\nrat = "5Mbps"'), "topology.rat", {}),
    ("unknown-table", scen(extra='[outptu]\nsample_interval = "1s"'), "outptu", {}),
    ("unknown-key-with-newline", scen(topology='rate = "10Mbps"\n"ra\\nte" = 1'), "topology.ra\\nte", {}),
    ("video-json-key-with-newline", vscen().replace('video = "synthetic:has-testbed"', 'video = "v.json"'), "v.json",
     {"v.json": '{"name": "v", "segm\\nt_duration": 2000000000, "bitrates_bps": [500000, 1000000], "sizes": {}}'}),
    ("flow-not-array", scen(flow=None, extra="flow = 3"), "flow", {}),
    ("scenario-not-table", "scenario = [1, 2]\n", "scenario", {}),
    ("count-zero", scen(flow='kind = "cbr"\nrate = "1Mbps"\ncount = 0'), "flow[0].count", {}),
    ("to-hop-out-of-range", scen(flow='kind = "cbr"\nrate = "1Mbps"\nto_hop = 5'), "flow[0].to_hop", {}),
    ("stop-before-start", scen(flow='kind = "cbr"\nrate = "1Mbps"\nstart = "2s"\nstop = "1s"'), "flow[0].stop", {}),
    ("chain-no-hops", scen(topology='kind = "chain"'), "topology.hop", {}),
    ("empty-file", "", "scenario", {}),
    ("not-utf8", b"\xff\xfe[scenario]\n", "", {}),
    ("toml-syntax", scen().replace('rate = "10Mbps"', 'rate = "10Mbps'), "", {}),
    # --- [[provider]] flow controllers ---
    ("provider-no-clients", pscen("clients = []"), "provider[0].clients", PV),
    ("provider-unknown-client", pscen('clients = ["zz"]'), "provider[0].clients", PV),
    ("provider-bounds-inverted", pscen('clients = ["a"]\nw_min = 5\nw_max = 2'), "provider[0].w_min", PV),
    ("provider-w-init-outside", pscen('clients = ["a"]\nw_init = 30'), "provider[0].w_init", PV),
    ("provider-no-quality-metric", pscen('clients = ["a"]', video='video = "synthetic:has-testbed"'),
     "provider[0].metric", {}),
    ("provider-metric-missing", pscen('clients = ["a"]\nmetric = "psnr"'), "provider[0].metric", PV),
    ("provider-unweighted-cc", pscen('clients = ["a"]', cc="cubic"), "client[0].cc", PV),
    ("provider-unknown-controller", pscen('clients = ["a"]', controller="nope"), "provider[0].controller", PV),
    ("provider-unknown-param", pscen('clients = ["a"]\nwmax = 3'), "provider[0].wmax", PV),
    ("provider-client-twice", pscen('clients = ["a"]') + '\n[[provider]]\ncontroller = "minerva"\nclients = ["a"]\n',
     "provider[1].clients", PV),
    ("provider-value-function-not-json", pscen('clients = ["a"]\nutility = "client"\nvalue_functions = ["vf.json"]'),
     "provider[0].value_functions", {**PV, "vf.json": "{not json"}),
    ("provider-value-function-wrong-format", pscen('clients = ["a"]\nutility = "client"\nvalue_functions = ["vf.json"]'),
     "provider[0].value_functions", {**PV, "vf.json": '{"format": "interp", "version": 1}'}),
    ("provider-value-function-missing", pscen('clients = ["a"]\nutility = "client"\nvalue_functions = ["nope.json"]'),
     "provider[0].value_functions", PV),
    ("provider-value-function-bad-shape", pscen('clients = ["a"]\nutility = "client"\nvalue_functions = ["vf.json"]'),
     "provider[0].value_functions", {**PV, "vf.json": VF_BAD_SHAPE}),
    ("provider-value-function-basic-utility", pscen('clients = ["a"]\nvalue_functions = ["vf.json"]'),
     "provider[0].value_functions", {**PV, "vf.json": VF_BAD_SHAPE}),
    ("provider-normalization-not-json", pscen('clients = ["a"]\nnormalization_file = "n.json"'),
     "provider[0].normalization_file", {**PV, "n.json": "{not json"}),
    ("provider-normalization-wrong-format", pscen('clients = ["a"]\nnormalization_file = "n.json"'),
     "provider[0].normalization_file", {**PV, "n.json": '{"format": "fit", "version": 1}'}),
    ("provider-normalization-missing", pscen('clients = ["a"]\nnormalization_file = "nope.json"'),
     "provider[0].normalization_file", PV),
    ("provider-normalization-not-monotone", pscen('clients = ["a"]\nnormalization_file = "n.json"'),
     "provider[0].normalization_file", {**PV, "n.json": NORM_BAD}),
    ("provider-normalization-other-metric", pscen('clients = ["a"]\nnormalization_file = "n.json"\nmetric = "bitrate"'),
     "provider[0].normalization_file", {**PV, "n.json": NORM_BAD.replace("[2000000.0, 1000000.0]", "[1e6, 2e6]")}),
    ("provider-normalization-not-file", pscen('clients = ["a"]\nnormalization_file = "n.json"\nnormalization = "run"'),
     "provider[0].normalization_file", {**PV, "n.json": NORM_BAD}),
    ("provider-normalization-file-without-table", pscen('clients = ["a"]\nnormalization = "file"'),
     "provider[0].normalization", PV),
    # a run of nothing: named at `flow` (it said `flows`, an alias few write)
    ("no-entry", scen(flow=None), "s.toml:flow:", {}),
    # session arrivals run on the packet network only
    ("session-arrivals-trace", vscen('arrival_rate = 0.1', scenario='network = "trace"'), "client[0].arrival_rate", {}),
    ("provider-trace-network", pscen('clients = ["a"]').replace('duration = "1s"', 'duration = "1s"\nnetwork = "trace"', 1),
     "provider", PV),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, case):
    _, text, key, files = case
    for name, body in files.items():
        (tmp_path / name).write_bytes(body if isinstance(body, bytes) else body.encode())
    p = tmp_path / "s.toml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "out"
    res = run_cli_many([["validate", str(p)], ["run", str(p), "--out", str(out)]])
    lines = {}
    for cmd, (rc, err, _) in zip(("validate", "run"), res):
        assert rc == 2, (cmd, rc, err)
        assert "Traceback" not in err and "internal error" not in err, err
        got = err.strip().splitlines()
        assert len(got) == 1, (cmd, err)
        line = got[0]
        assert line.startswith(f"qoelab {cmd}: error: "), line
        where = key if (":" in key or key in files) else f"s.toml:{key}"
        assert str(tmp_path) in line, line
        assert where in line, (where, line)
        # never internal paths of the normalized config
        for internal in ("links[", "flows[", "clients[", "config:", "column", "trace_schedule", "videos["):
            assert internal not in line, (internal, line)
        lines[cmd] = line.split(": error: ", 1)[1]
    assert lines["validate"] == lines["run"]
    assert not out.exists()
    assert not [x for x in os.listdir(tmp_path) if x.startswith(".qoelab-tmp")]


@pytest.mark.parametrize("typo,suggestion", [("rat", "rate"), ("acess_rate", "access_rate"), ("buffr", "buffer"),
                                             ("aqm_param", "aqm_params")])
def test_unknown_key_suggests_nearest(tmp_path, typo, suggestion):
    p = tmp_path / "s.toml"
    p.write_text(scen(topology=f'rate = "10Mbps"\n{typo} = 1'))
    (rc, err, _), = run_cli_many([["validate", str(p)]])
    assert rc == 2 and f"did you mean {suggestion!r}" in err or f'did you mean "{suggestion}"' in err, err


@pytest.mark.parametrize("argv", [
    ["run", "s.toml", "--out", "o", "--seed", "99999999999999999999999"],
    ["run", "s.toml", "--out", "o", "--seed", "1e3"],
    ["validate"],
    ["validate", "nope.toml"],
    ["validate", "."],
    ["run", ".", "--out", "o"],
    ["run", "s.toml", "--out", "o", "--bogus"],
    ["run", "s.toml", "--out", "o", "--seed", "-3"],
    ["run", "s.toml", "--out", "o", "--seed", "-3x"],   # (was "expected one argument": read as an option)
    # an empty path named the current directory; empty or repeated systems were dropped silently
    ["query", "", "SELECT 1"],
    ["report", ""],
    ["sweep", "", "--out", "o"],
    ["compare", "--systems", "dash,,sprint", "--out", "o"],
    ["compare", "--systems", "dash,dash", "--out", "o"],
    ["bench", "--sweep", "20", "--case", "dumbbell-4cubic-10M-fqcodel-200s"],
])
def test_bad_cli_arguments(tmp_path, argv):
    (tmp_path / "s.toml").write_text(scen())
    argv = [str(tmp_path / a) if a in ("s.toml", "nope.toml", "o") else (str(tmp_path) if a == "." else a)
            for a in argv]
    (rc, err, _), = run_cli_many([argv])
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    assert err.startswith(f"qoelab {argv[0]}: error: "), err      # (unknown options were "qoelab: error:")
    assert not (tmp_path / "o").exists()
    assert "expected one argument" not in err, err   # a value beginning "-<digit>" is checked as a value


def test_a_negative_rate_is_checked_as_a_rate():
    """`qoelab link --rate -1Mbps` said "expected one argument" (argparse read the value as an
    option); the emulator now checks it (the command execs it, so not in run_cli_many)."""
    from conftest import qoelab_cli
    r = qoelab_cli("link", "--rate", "-1Mbps", "--rtt", "20ms", "--", "true")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        'qoelab link: error: --rate: expected a rate such as 10Mbps, found "-1Mbps"'], r.stderr


@pytest.mark.parametrize("text,where,found", [
    ("1\n\n2\n", ":2:", "found an empty line"),
    ("1\n+2\n", ":2:", "found '+2'"),
    (" 1\n2\n", ":1:", "found ' 1'"),
])
def test_link_reads_a_trace_as_run_does(tmp_path, text, where, found):
    """`qoelab link --trace` took blank lines, spaces and "+2" that `qoelab run` refuses (docs: it
    reads a trace "as qoelab run reads one")."""
    from conftest import qoelab_cli
    t = tmp_path / "t.down"
    t.write_text(text)
    r = qoelab_cli("link", "--trace", str(t), "--rtt", "20ms", "--", "true")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"qoelab link: error: {t}{where} expected") and found in r.stderr, r.stderr


def test_abr_seeds_take_the_scenario_seed_range_and_show_exactly(tmp_path):
    """An ABR's `seed` parameter takes 0..2^64 - 1 like scenario.seed (it stopped at 2^63 - 1), and a
    64-bit value beyond it is shown exactly: not "expected an integer <= 1.84e+19, found 1.84e+19"."""
    body = VIDEO + '\nabr = "festive"\n[client.abr_params]\nseed = {}'
    ok, bad = tmp_path / "ok.toml", tmp_path / "bad.toml"
    ok.write_text(scen(flow=None, client=body.format(2**64 - 1)))
    bad.write_text(scen(flow=None, client=body.format(2**64)))
    (rc_ok, err_ok, _), (rc_bad, err_bad, _) = run_cli_many([["validate", str(ok)], ["validate", str(bad)]])
    assert rc_ok == 0, err_ok
    assert rc_bad == 2 and err_bad.strip().endswith(
        f"client[0].abr_params.seed: expected an integer <= {2**64 - 1}, found {2**64}"), err_bad


def test_a_full_disk_is_one_line_not_an_internal_error(monkeypatch, capsys):
    """ENOSPC (a probe filled a 300 KiB tmpfs under `run`, `sweep`, `reproduce`, `video prepare`) was
    "internal error: OSError ..."; other OSErrors stay internal errors (they are bugs)."""
    import errno
    from qoelab import cli, scenario

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", "/out/summary.json")
    monkeypatch.setattr(scenario, "load", full)
    assert cli.main(["validate", "a.toml"]) == 1
    err = capsys.readouterr().err
    assert err == "qoelab validate: error: cannot write /out/summary.json: No space left on device\n", err

    def other(*a, **k):
        raise OSError(errno.EBADF, "Bad file descriptor")
    monkeypatch.setattr(scenario, "load", other)
    assert cli.main(["validate", "a.toml"]) == 1
    assert "internal error: OSError" in capsys.readouterr().err
