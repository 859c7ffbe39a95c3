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
