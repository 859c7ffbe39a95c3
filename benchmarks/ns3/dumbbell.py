#!/usr/bin/env python3
"""ns-3 (PyPI package `ns3`, 3.44) driver for qoelab's dumbbell, for cross-validation.

Topology (the same nodes and links as qoelab's `kind = "dumbbell"`, see python/qoelab/scenario.py):

    server_i --(access, 1 Gbit/s, rtt/2)--> R1 --(bottleneck, 10 Mbit/s, 0 ms)--> R2 --(1 Gbit/s, 0 ms)--> client_i

All of the base RTT sits on the server's access link (both directions), as in qoelab. The
bottleneck queue disc on R1's device is the case's AQM; the NetDevice queue under it holds
1 packet, so the queue disc is the bottleneck queue. Every other device gets a large pfifo
(10000 packets; the reverse bottleneck direction pfifo 1000 packets, qoelab's defaults).

TCP: ns3::TcpCubic (HyStart off, as qoelab's `cubic` default), SACK + timestamps + window
scaling on, MSS 1448 (1500-B IP packets), IW 10, delayed ACK every 2 segments with a 40 ms
timer (qoelab/Linux; ns-3's default is 200 ms), min RTO 200 ms (Linux; ns-3's default 1 s),
send/receive buffers 6 MiB (qoelab's rwnd). Loss recovery: ns-3's default PRR.

Bulk flows: BulkSendApplication -> PacketSink, all starting at t = 0.

Output (JSON on stdout, or --out FILE): per-flow goodput, Jain index, bottleneck utilization
(IP bytes dequeued from the bottleneck queue disc / (rate x duration), qoelab's definition),
per-packet queue-disc sojourn mean/p50/p95/p99/max (nearest rank, as qoelab), drops,
packets through the bottleneck (both directions, as qoelab's `packets.bottleneck`), wall time
of Simulator::Run() and bottleneck packets per wall second.

Usage: python dumbbell.py --aqm fq_codel --flows 4 --duration 200 [--buffer 17] [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

MTU = 1500
MSS = 1448

AQMS = ("pfifo", "pie", "codel", "fq_codel")

# Our own C++ helpers (JIT-compiled by cppyy inside the ns3 package): trace sinks that keep the
# per-packet sojourn times without a Python call per packet.
_HELPERS = r"""
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>
namespace qoelab_ns3 {
static std::vector<int64_t> g_sojourn;
static void OnSojourn(ns3::Time t) { g_sojourn.push_back(t.GetNanoSeconds()); }
void ConnectSojourn(ns3::Ptr<ns3::QueueDisc> q) {
    g_sojourn.reserve(1 << 20);
    q->TraceConnectWithoutContext("SojournTime", ns3::MakeCallback(&OnSojourn));
}
// Delay from the queue disc enqueue to the start of transmission on the wire (qoelab's
// "sojourn" ends when a packet enters service): the queue disc sojourn plus the wait in the
// 1-packet device queue. Matched by packet UID (kept across header additions).
static std::unordered_map<uint64_t, int64_t> g_enq;
static std::vector<int64_t> g_wire;
static void OnEnqueue(ns3::Ptr<const ns3::QueueDiscItem> item) {
    g_enq[item->GetPacket()->GetUid()] = ns3::Simulator::Now().GetNanoSeconds();
}
static void OnDrop(ns3::Ptr<const ns3::QueueDiscItem> item) { g_enq.erase(item->GetPacket()->GetUid()); }
static void OnTxBegin(ns3::Ptr<const ns3::Packet> p) {
    auto it = g_enq.find(p->GetUid());
    if (it == g_enq.end()) return;
    g_wire.push_back(ns3::Simulator::Now().GetNanoSeconds() - it->second);
    g_enq.erase(it);
}
void ConnectWire(ns3::Ptr<ns3::QueueDisc> q, ns3::Ptr<ns3::NetDevice> dev) {
    g_wire.reserve(1 << 20);
    q->TraceConnectWithoutContext("Enqueue", ns3::MakeCallback(&OnEnqueue));
    q->TraceConnectWithoutContext("Drop", ns3::MakeCallback(&OnDrop));
    dev->TraceConnectWithoutContext("PhyTxBegin", ns3::MakeCallback(&OnTxBegin));
}
static std::vector<int64_t>& Vec(int which) { return which == 0 ? g_sojourn : g_wire; }
size_t Count(int which) { return Vec(which).size(); }
double MeanNs(int which) {
    auto& v = Vec(which);
    if (v.empty()) return NAN;
    long double s = 0;
    for (auto x : v) s += x;
    return (double)(s / v.size());
}
void Sort(int which) { std::sort(Vec(which).begin(), Vec(which).end()); }
double PercentileNs(int which, double q) {
    auto& v = Vec(which);
    if (v.empty()) return NAN;
    size_t n = v.size();
    double r = std::ceil(q / 100.0 * (double)n);
    size_t rank = r < 1.0 ? 1 : (size_t)r;
    if (rank > n) rank = n;
    return (double)v[rank - 1];
}
// TCP congestion-state entries of all senders (fast recovery, RTO loss state), counted from
// the sockets' CongState trace, connected once the sockets exist.
static uint64_t g_recovery = 0, g_loss = 0;
static void OnCongState(ns3::TcpSocketState::TcpCongState_t from, ns3::TcpSocketState::TcpCongState_t to) {
    if (to == ns3::TcpSocketState::CA_RECOVERY && from != to) g_recovery++;
    if (to == ns3::TcpSocketState::CA_LOSS && from != to) g_loss++;
}
static void ConnectCongStateNow() {
    ns3::Config::ConnectWithoutContextFailSafe(
        "/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/CongState", ns3::MakeCallback(&OnCongState));
}
void ConnectCongState(double at_s) { ns3::Simulator::Schedule(ns3::Seconds(at_s), &ConnectCongStateNow); }
uint64_t Recoveries() { return g_recovery; }
uint64_t LossStates() { return g_loss; }
uint64_t SinkRx(ns3::Ptr<ns3::Application> a) {
    return ns3::DynamicCast<ns3::PacketSink>(a)->GetTotalRx();
}
}
"""


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--aqm", choices=AQMS, default="pfifo")
    p.add_argument("--buffer", type=int, default=None,
                   help="queue disc limit in packets (default: 17 = 1 BDP for pfifo, 1000 for AQMs)")
    p.add_argument("--flows", type=int, default=1)
    p.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    p.add_argument("--rate", type=float, default=10e6, help="bottleneck rate, bit/s")
    p.add_argument("--rtt", type=float, default=0.020, help="base RTT, s")
    p.add_argument("--access-rate", type=float, default=1e9)
    p.add_argument("--delack-timeout", type=float, default=0.040, help="s (ns-3 default 0.2)")
    p.add_argument("--min-rto", type=float, default=0.200, help="s (ns-3 default 1.0)")
    p.add_argument("--recovery", default="ns3::TcpPrrRecovery",
                   help="ns3::TcpPrrRecovery (ns-3 default) or ns3::TcpClassicRecovery")
    p.add_argument("--hystart", action="store_true", help="TcpCubic HyStart (ns-3 default on; qoelab off)")
    p.add_argument("--codel-min-bytes", type=int, default=None,
                   help="ns3::CoDelQueueDisc::MinBytes (default 1500; FQ-CoDel's per-flow CoDels use it too)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="extra ns-3 default, e.g. ns3::PieQueueDisc::MeanPktSize=1500 (repeatable)")
    p.add_argument("--seed", type=int, default=1, help="ns-3 RngRun")
    p.add_argument("--no-trace", action="store_true",
                   help="speed runs: connect no per-packet trace sink (no delay statistics)")
    p.add_argument("--out", default=None)
    return p


def run(args) -> dict:
    t_import = time.perf_counter()
    from ns import ns  # PyPI ns3 (cppyy bindings)
    import cppyy
    cppyy.cppdef(_HELPERS)
    H = cppyy.gbl.qoelab_ns3
    import_s = time.perf_counter() - t_import

    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(args.seed)

    sd = ns.Config.SetDefault
    sd("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpCubic"))
    sd("ns3::TcpL4Protocol::RecoveryType", ns.StringValue(args.recovery))
    sd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    sd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    sd("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    sd("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Seconds(args.delack_timeout)))
    sd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(6291456))
    sd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(6291456))
    sd("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    sd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    sd("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    sd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(args.min_rto)))
    sd("ns3::TcpCubic::HyStart", ns.BooleanValue(bool(args.hystart)))
    for kv in args.set:
        name, _, value = kv.partition("=")
        sd(name, ns.StringValue(value))
    if args.codel_min_bytes is not None:
        sd("ns3::CoDelQueueDisc::MinBytes", ns.UintegerValue(args.codel_min_bytes))

    n = args.flows
    servers = ns.NodeContainer()
    servers.Create(n)
    clients = ns.NodeContainer()
    clients.Create(n)
    routers = ns.NodeContainer()
    routers.Create(2)
    stack = ns.InternetStackHelper()
    stack.Install(servers)
    stack.Install(clients)
    stack.Install(routers)

    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(args.access_rate))))
    access.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(args.rtt / 2)))
    edge = ns.PointToPointHelper()
    edge.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(args.access_rate))))
    edge.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(0)))
    bott = ns.PointToPointHelper()
    bott.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(args.rate))))
    bott.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(0)))
    bott.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))

    big = ns.TrafficControlHelper()
    big.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize("10000p")))

    buf = args.buffer if args.buffer is not None else (17 if args.aqm == "pfifo" else 1000)
    lim = ns.QueueSizeValue(ns.QueueSize(f"{buf}p"))
    tch = ns.TrafficControlHelper()
    if args.aqm == "pfifo":
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", lim)
    elif args.aqm == "pie":
        tch.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", lim)
    elif args.aqm == "codel":
        tch.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", lim)
    else:
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", lim)
    rev = ns.TrafficControlHelper()
    rev.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize("1000p")))

    addr = ns.Ipv4AddressHelper()
    subnet = [0]

    def assign(devs):
        k = subnet[0]
        subnet[0] += 1
        addr.SetBase(ns.Ipv4Address(f"10.{k // 250}.{k % 250}.0"), ns.Ipv4Mask("255.255.255.0"))
        return addr.Assign(devs)

    r1, r2 = routers.Get(0), routers.Get(1)
    bdevs = bott.Install(r1, r2)
    qd = tch.Install(bdevs.Get(0)).Get(0)
    qd_rev = rev.Install(bdevs.Get(1)).Get(0)
    assign(bdevs)
    client_addrs = []
    for i in range(n):
        d = access.Install(servers.Get(i), r1)
        big.Install(d)
        assign(d)
        d = edge.Install(r2, clients.Get(i))
        big.Install(d)
        ifc = assign(d)
        client_addrs.append(ifc.GetAddress(1))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    sinks = []
    port0 = 5000
    stop = ns.Seconds(args.duration)
    for i in range(n):
        sink_h = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                     ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port0 + i).ConvertTo())
        sapp = sink_h.Install(clients.Get(i))
        sapp.Start(ns.Seconds(0))
        sinks.append(sapp.Get(0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(client_addrs[i], port0 + i).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(MSS))
        bapp = bulk.Install(servers.Get(i))
        bapp.Start(ns.Seconds(0))
        bapp.Stop(stop)

    if not args.no_trace:
        H.ConnectCongState(1e-6)
        H.ConnectSojourn(qd)
        H.ConnectWire(qd, bdevs.Get(0))
    ns.Simulator.Stop(stop)
    t0 = time.perf_counter()
    c0 = time.process_time()
    ns.Simulator.Run()
    cpu = time.process_time() - c0
    wall = time.perf_counter() - t0

    st = qd.GetStats()
    st_rev = qd_rev.GetStats()
    goodputs = []
    for s in sinks:
        rx = int(H.SinkRx(s))
        goodputs.append(rx * 8 / args.duration)
    jfi = (sum(goodputs) ** 2) / (len(goodputs) * sum(g * g for g in goodputs)) if any(goodputs) else float("nan")

    def ms(x):
        return None if math.isnan(x) else round(x / 1e6, 6)

    def dist(which):
        H.Sort(which)
        return {"samples": int(H.Count(which)), "mean": ms(float(H.MeanNs(which))),
                **{k: ms(float(H.PercentileNs(which, q))) for k, q in
                   (("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("max", 100.0))}}

    # ns-3 counts packets that an AQM drops at dequeue (CoDel, FQ-CoDel) as dequeued too; qoelab
    # counts only the packets handed to the link. Subtract them.
    fwd_pkts = int(st.nTotalDequeuedPackets) - int(st.nTotalDroppedPacketsAfterDequeue)
    fwd_bytes = int(st.nTotalDequeuedBytes) - int(st.nTotalDroppedBytesAfterDequeue)
    rev_pkts = int(st_rev.nTotalDequeuedPackets) - int(st_rev.nTotalDroppedPacketsAfterDequeue)
    out = {
        "simulator": "ns-3",
        "ns3_version": _ns3_version(),
        "case": {"aqm": args.aqm, "buffer_packets": buf, "flows": n, "duration_s": args.duration,
                 "rate_bps": args.rate, "rtt_s": args.rtt, "delack_timeout_s": args.delack_timeout,
                 "min_rto_s": args.min_rto, "recovery": args.recovery, "hystart": bool(args.hystart),
                 "seed": args.seed, "trace": not args.no_trace,
                 "codel_min_bytes": args.codel_min_bytes, "set": list(args.set)},
        "flows": [{"id": i, "goodput_bps": round(g, 1)} for i, g in enumerate(goodputs)],
        "goodput_total_bps": round(sum(goodputs), 1),
        "tcp": {"fast_recoveries": int(H.Recoveries()), "rto_loss_states": int(H.LossStates())},
        "jain_index": round(jfi, 6),
        "bottleneck": {
            "utilization": round(fwd_bytes * 8 / (args.rate * args.duration), 6),
            "dequeued_packets": fwd_pkts,
            "dequeued_bytes": fwd_bytes,
            "dropped_packets": int(st.nTotalDroppedPackets),
            "dropped_before_enqueue": int(st.nTotalDroppedPacketsBeforeEnqueue),
            "dropped_after_dequeue": int(st.nTotalDroppedPacketsAfterDequeue),
            "marked_packets": int(st.nTotalMarkedPackets),
            # per packet leaving the queue disc, queue disc only (ns-3's SojournTime trace, what its
            # AQMs see; includes packets CoDel/FQ-CoDel drop at dequeue)
            "queue_delay_ms": dist(0),
            # per transmitted packet, queue disc enqueue -> start of transmission (qoelab's sojourn)
            "queue_to_wire_delay_ms": dist(1),
            "reverse_dequeued_packets": rev_pkts,
        },
        "packets_bottleneck": fwd_pkts + rev_pkts,
        "perf": {
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "bottleneck_packets_per_cpu_s": round((fwd_pkts + rev_pkts) / cpu, 1),
            "import_s": round(import_s, 3),
            "bottleneck_packets_per_s": round((fwd_pkts + rev_pkts) / wall, 1),
            "simulated_s_per_wall_s": round(args.duration / wall, 3),
        },
    }
    ns.Simulator.Destroy()
    return out


def _ns3_version():
    try:
        from importlib.metadata import version
        return version("ns3")
    except Exception:  # pragma: no cover
        return None


def main(argv=None):
    args = build_parser().parse_args(argv)
    out = run(args)
    text = json.dumps(out, indent=2)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)
    sys.stdout.flush()
    # cppyy/cling teardown can be slow or noisy; the results are written already
    os._exit(0)


if __name__ == "__main__":
    main()
