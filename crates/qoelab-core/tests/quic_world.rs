//! QUIC flows in the packet driver: exact finite transfers over lossy paths, beside TCP,
//! with the end-of-run invariants, and determinism.

use qoelab_core::ids::FlowId;
use qoelab_core::net::{SimConfig, World};
use serde_json::{json, Value};

fn cfg(loss: Value, size: u64) -> Value {
    json!({
        "name": "quic", "seed": 7, "duration": 60_000_000_000u64,
        "nodes": [{"name": "s"}, {"name": "r"}, {"name": "c"}],
        "links": [
            {"name": "s-r", "from": 0, "to": 1, "rate_bps": 1_000_000_000u64, "delay": 10_000_000},
            {"name": "r-s", "from": 1, "to": 0, "rate_bps": 1_000_000_000u64, "delay": 10_000_000},
            {"name": "r-c", "from": 1, "to": 2, "rate_bps": 10_000_000, "delay": 0,
             "buffer_packets": 20, "monitor": true, "loss": loss},
            {"name": "c-r", "from": 2, "to": 1, "rate_bps": 10_000_000, "delay": 0},
        ],
        "flows": [
            {"kind": "bulk", "name": "q", "src": 0, "dst": 2, "cc": "cubic", "transport": "quic", "bytes": size},
            {"kind": "bulk", "name": "qb", "src": 0, "dst": 2, "cc": "bbr", "transport": "quic", "bytes": size},
            {"kind": "bulk", "name": "t", "src": 0, "dst": 2, "cc": "cubic", "bytes": size},
        ],
    })
}

fn run(c: Value) -> World {
    let c: SimConfig = serde_json::from_value(c).unwrap();
    let mut w = World::build(c).unwrap();
    w.run();
    w.check_invariants().unwrap();
    w
}

#[test]
fn finite_quic_transfers_deliver_exactly_their_size_through_loss() {
    for loss in
        [Value::Null, json!({"kind": "iid", "rate": 0.02}), json!({"kind": "bursty", "p_enter": 0.01, "p_leave": 0.3})]
    {
        let w = run(cfg(loss.clone(), 3_000_000));
        for f in 0..3 {
            assert_eq!(w.flow_bytes_received(FlowId(f)), 3_000_000, "flow {f} with {loss}");
            assert!(w.flows[FlowId(f)].done_at.is_some(), "flow {f} with {loss}");
        }
        let s = w.summary(String::new());
        assert_eq!(s.flows[0].tcp.as_ref().unwrap().transport, Some("quic"));
        assert_eq!(s.flows[2].tcp.as_ref().unwrap().transport, None);
        if !loss.is_null() {
            assert!(s.flows[0].tcp.as_ref().unwrap().retransmits > 0);
        }
    }
}

#[test]
fn quic_runs_are_deterministic() {
    let a = run(cfg(json!({"kind": "iid", "rate": 0.01}), 2_000_000)).summary(String::new()).to_json();
    let b = run(cfg(json!({"kind": "iid", "rate": 0.01}), 2_000_000)).summary(String::new()).to_json();
    assert_eq!(a, b);
}

#[test]
fn bad_transport_names_the_key() {
    let mut c = cfg(Value::Null, 1000);
    c["flows"][0]["transport"] = json!("sctp");
    let c: SimConfig = serde_json::from_value(c).unwrap();
    let e = World::build(c).err().unwrap();
    assert!(format!("{e}").contains("flows[0].transport"), "{e}");
}

#[test]
fn half_unreliable_quic_flow_zero_fills_lost_unreliable_bytes_only() {
    let size = 3_000_000;
    let mut c = cfg(json!({"kind": "iid", "rate": 0.02}), size);
    c["flows"][0]["quic"] = json!({"unreliable_fraction": 0.5});
    let w = run(c.clone());
    let s = w.summary(String::new());
    let f = &s.flows[0];
    let v: Value = serde_json::from_str(&s.to_json()).unwrap();
    let j = &v["flows"][0];
    let (sent, lost, holes) = (
        j["unreliable_bytes_sent"].as_u64().unwrap(),
        j["unreliable_bytes_lost"].as_u64().unwrap(),
        j["hole_bytes"].as_u64().unwrap(),
    );
    // about half the stream goes unreliably; 2 % of it is lost and zero-filled, never resent
    assert!(sent > size / 3 && sent <= size / 2, "{j}");
    assert!(holes > 0 && holes <= lost && lost <= sent, "{j}");
    assert_eq!(j["unreliable_bytes_retransmitted"], 0, "{j}");
    // the transfer completes: received + zero-filled = size
    assert!(w.flows[FlowId(0)].done_at.is_some());
    assert_eq!(f.bytes_received + holes, size, "{j}");
    // reliable data was still repaired, and the losses (unreliable ones too) cut the window
    let t = f.tcp.as_ref().unwrap();
    assert!(t.retransmits > 0 && t.fast_recoveries > 0, "{j}");
    // TCP flows carry none of the QUIC keys; a reliable QUIC flow has no holes
    assert!(v["flows"][2].get("hole_bytes").is_none());
    assert_eq!(v["flows"][1]["hole_bytes"], 0);
    assert_eq!(v["flows"][1]["unreliable_bytes_sent"], 0);
    // deterministic
    assert_eq!(run(c).summary(String::new()).to_json(), s.to_json());
}

#[test]
fn bad_quic_options_name_the_key() {
    for (k, v, needle) in [
        ("unreliable_fraction", json!(1.5), "[0, 1]"),
        ("max_datagram", json!(9000), "1200..=1472"),
        ("pacing", json!(1), "true or false"),
        ("nope", json!(1), "unknown"),
    ] {
        let mut c = cfg(Value::Null, 1000);
        c["flows"][0]["quic"] = json!({ k: v });
        let c: SimConfig = serde_json::from_value(c).unwrap();
        let e = World::build(c).err().unwrap();
        assert!(format!("{e}").contains(&format!("flows[0].quic.{k}")) && format!("{e}").contains(needle), "{e}");
    }
    let mut c = cfg(Value::Null, 1000);
    c["flows"][2]["quic"] = json!({"pacing": false});
    let e = World::build(serde_json::from_value(c).unwrap()).err().unwrap();
    assert!(format!("{e}").contains("flows[2].quic"), "{e}");
}
