//! Network plumbing with datagram traffic: rates, traces, routing, conservation, determinism.

use qoelab_core::net::{SimConfig, World};
use serde_json::json;

fn run(cfg: serde_json::Value) -> World {
    let cfg: SimConfig = serde_json::from_value(cfg).unwrap();
    let mut w = World::build(cfg).unwrap();
    w.run();
    w.check_invariants().unwrap();
    w
}

#[test]
fn cbr_over_a_fixed_rate_bottleneck_gets_the_rate() {
    // 12 Mbit/s offered into a 10 Mbit/s link for 10 s: the sink gets 10 Mbit/s of IP bytes
    // (minus 28 B headers per packet), the queue (100 pkts) overflows.
    let w = run(json!({
        "name": "cbr", "seed": 1, "duration": 10_000_000_000u64,
        "nodes": [{"name": "a"}, {"name": "r"}, {"name": "b"}],
        "links": [
            {"name": "a-r", "from": 0, "to": 1, "rate_bps": 1_000_000_000u64, "delay": 1_000_000},
            {"name": "r-b", "from": 1, "to": 2, "rate_bps": 10_000_000, "delay": 5_000_000,
             "buffer_packets": 100, "monitor": true},
        ],
        "flows": [{"kind": "cbr", "name": "c", "src": 0, "dst": 2, "rate_bps": 12_000_000}],
    }));
    let got = w.flow_bytes_received(qoelab_core::ids::FlowId(0)) as f64 * 8.0 / 10.0;
    let want = 10e6 * 1472.0 / 1500.0;
    assert!((got - want).abs() / want < 0.01, "{got} vs {want}");
    let q = &w.links[qoelab_core::ids::LinkId(1)].queue.stats;
    assert!(q.dropped_pkts() > 1000);
    assert_eq!(q.max_len_pkts, 100);
}

#[test]
fn mahimahi_opportunities_carry_1504_bytes_each() {
    // One opportunity per ms (the Mahimahi "12 Mbit/s" file): 1504 B/ms = 12.032 Mbit/s.
    let times: Vec<u64> = (1..=1000).map(|i| i * 1_000_000).collect();
    let w = run(json!({
        "name": "mm", "duration": 5_000_000_000u64,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "links": [{"name": "l", "from": 0, "to": 1, "buffer_packets": 1000,
                   "trace": {"kind": "opportunities", "period_ns": 1_000_000_000u64, "times_ns": times}}],
        "flows": [{"kind": "cbr", "name": "c", "src": 0, "dst": 1, "rate_bps": 20_000_000, "packet_size": 1500}],
    }));
    // Backlogged queue: the 4 bytes left of each opportunity start serving the next packet
    // (packets span opportunities), so 1500-byte packets leave at 1504/1500 * 1000 pkt/s.
    let pkts = w.links[qoelab_core::ids::LinkId(0)].stats.tx_pkts as f64 / 5.0;
    assert!((pkts - 1504.0 / 1500.0 * 1000.0).abs() <= 0.5, "{pkts}");
    // With 500-byte packets three fit in one opportunity (1500 <= 1504).
    let times: Vec<u64> = (1..=1000).map(|i| i * 1_000_000).collect();
    let w = run(json!({
        "name": "mm", "duration": 1_000_000_000u64,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "links": [{"name": "l", "from": 0, "to": 1, "buffer_packets": 1000,
                   "trace": {"kind": "opportunities", "period_ns": 1_000_000_000u64, "times_ns": times}}],
        "flows": [{"kind": "cbr", "name": "c", "src": 0, "dst": 1, "rate_bps": 20_000_000, "packet_size": 500}],
    }));
    let pkts = w.links[qoelab_core::ids::LinkId(0)].stats.tx_pkts as f64;
    assert!((pkts - 3008.0).abs() <= 3.0, "{pkts}");
}

#[test]
fn rate_schedule_switches_rate() {
    // 1 s at 2 Mbit/s, 1 s at 6 Mbit/s, looping; CBR 10 Mbit/s saturates it: mean 4 Mbit/s.
    let w = run(json!({
        "name": "rates", "duration": 4_000_000_000u64,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "links": [{"name": "l", "from": 0, "to": 1, "buffer_packets": 50,
                   "trace": {"kind": "rates", "segments": [[1_000_000_000u64, 2_000_000, 0], [1_000_000_000u64, 6_000_000, 0]]}}],
        "flows": [{"kind": "cbr", "name": "c", "src": 0, "dst": 1, "rate_bps": 10_000_000}],
    }));
    let rate = w.links[qoelab_core::ids::LinkId(0)].stats.tx_bytes as f64 * 8.0 / 4.0;
    assert!((rate - 4e6).abs() / 4e6 < 0.01, "{rate}");
}

#[test]
fn routing_through_a_chain_and_random_loss() {
    let w = run(json!({
        "name": "chain", "seed": 9, "duration": 2_000_000_000u64,
        "nodes": [{"name": "a"}, {"name": "r1"}, {"name": "r2"}, {"name": "b"}],
        "links": [
            {"name": "a-r1", "from": 0, "to": 1, "rate_bps": 100_000_000u64, "delay": 1_000_000},
            {"name": "r1-r2", "from": 1, "to": 2, "rate_bps": 100_000_000u64, "delay": 1_000_000,
             "loss": {"kind": "iid", "rate": 0.1}},
            {"name": "r2-b", "from": 2, "to": 3, "rate_bps": 100_000_000u64, "delay": 1_000_000},
        ],
        "flows": [{"kind": "cbr", "name": "c", "src": 0, "dst": 3, "rate_bps": 12_000_000}],
    }));
    let s = &w.links[qoelab_core::ids::LinkId(1)].stats;
    let frac = s.lost_pkts as f64 / s.offered_pkts as f64;
    assert!((frac - 0.1).abs() < 0.02, "{frac}");
    assert_eq!(w.links[qoelab_core::ids::LinkId(1)].queue.stats.arrived_pkts, s.offered_pkts - s.lost_pkts);
    assert_eq!(w.links[qoelab_core::ids::LinkId(2)].stats.offered_pkts, s.delivered_pkts);
}

#[test]
fn bad_configs_name_the_field() {
    let cfg: SimConfig = serde_json::from_value(json!({
        "name": "x", "duration": 1000,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "links": [{"name": "l", "from": 0, "to": 1, "rate_bps": 1000, "aqm": "nope"}],
    }))
    .unwrap();
    let e = World::build(cfg).err().unwrap();
    assert_eq!(e.path, "links[0].aqm");
    assert!(e.msg.contains("unknown queue discipline"), "{}", e.msg);
    let cfg: SimConfig = serde_json::from_value(json!({
        "name": "x", "duration": 1000,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "links": [{"name": "l", "from": 0, "to": 1, "rate_bps": 1000}],
        "flows": [{"kind": "cbr", "name": "c", "src": 1, "dst": 0, "rate_bps": 1000}],
    }))
    .unwrap();
    let e = World::build(cfg).err().unwrap();
    assert_eq!(e.path, "flows[0].dst");
}
