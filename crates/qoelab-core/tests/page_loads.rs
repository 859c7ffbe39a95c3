//! Web page loads in the packet simulator (`[[page]]`, session/page.rs + net/pages.rs): times
//! against first principles, connection limits, TLS, determinism and bad input.

use qoelab_core::net::{SimConfig, World};
use serde_json::{json, Value};

const MS: u64 = 1_000_000;

/// Client and server hosts joined by a bottleneck of `rate` bit/s each way with one-way delay
/// `rtt / 2` and a large drop-tail buffer, and page `objects` loaded from t = 0.
fn world(rate: u64, rtt: u64, objects: Value, extra: Value) -> World {
    let mut page = json!({"name": "pg", "server": 1, "client": 0, "cc": "newreno",
                          "load": {"objects": objects}});
    for (k, v) in extra.as_object().unwrap() {
        if k == "load" {
            for (a, b) in v.as_object().unwrap() {
                page["load"][a] = b.clone();
            }
        } else {
            page[k] = v.clone();
        }
    }
    let cfg = json!({
        "name": "page", "seed": 3, "duration": 120_000 * MS,
        "nodes": [{"name": "client"}, {"name": "server"}],
        "links": [
            {"name": "down", "from": 1, "to": 0, "rate_bps": rate, "delay": rtt / 2, "buffer_packets": 10_000,
             "monitor": true},
            {"name": "up", "from": 0, "to": 1, "rate_bps": rate, "delay": rtt / 2, "buffer_packets": 10_000},
        ],
        "pages": [page],
    });
    let cfg: SimConfig = serde_json::from_value(cfg).unwrap();
    let mut w = World::build(cfg).unwrap();
    w.run();
    w.check_invariants().unwrap();
    w
}

fn plt(w: &World) -> f64 {
    let s = w.summary(String::new());
    s.pages[0].plt_s.expect("the load finished")
}

#[test]
fn one_object_takes_handshake_request_and_transfer_time() {
    // 10 kB at 6 Mbit/s over 50 ms: SYN/SYN-ACK (1 RTT), GET + response first byte (1 RTT), the
    // 7 segments fit in IW10: ~2 RTT + 7 x 1500 B / 6 Mbit/s = 100 + 14 ms.
    let w = world(6_000_000, 50 * MS, json!([{"size": 10_000, "origin": 0}]), json!({}));
    let t = plt(&w);
    assert!((0.113..0.120).contains(&t), "{t}");
    // 1 MB: bandwidth-bound after slow start: at least 2 RTT + 1 MB on the wire / rate.
    let w = world(6_000_000, 50 * MS, json!([{"size": 1_000_000, "origin": 0}]), json!({}));
    let t = plt(&w);
    let floor = 0.1 + 1_000_000.0 * 1500.0 / 1460.0 * 8.0 / 6e6;
    assert!(t >= floor && t < floor + 0.35, "{t} vs floor {floor}");
}

#[test]
fn at_most_six_connections_per_origin_and_children_wait_for_their_parent() {
    let mut objs = vec![json!({"size": 20_000, "origin": 0})];
    objs.extend((0..20).map(|_| json!({"size": 10_000, "origin": 0, "parent": 0})));
    let w = world(20_000_000, 40 * MS, Value::Array(objs), json!({}));
    let s = w.summary(String::new());
    let p = &s.pages[0];
    assert_eq!((p.objects, p.objects_done, p.requests), (21, 21, 21));
    assert_eq!(p.connections, 6);
    assert_eq!(p.bytes, 220_000);
    // TCP connections in the flow list: 6 request + 6 response halves.
    assert_eq!(s.flows.iter().filter(|f| f.kind == "page").count(), 6);
    // The children start after the root: a second round of 2 RTT at least.
    assert!(p.plt_s.unwrap() > 0.16, "{:?}", p.plt_s);
}

#[test]
fn tls_adds_two_round_trips() {
    let plain = plt(&world(50_000_000, 100 * MS, json!([{"size": 5_000, "origin": 0}]), json!({})));
    let tls = plt(&world(50_000_000, 100 * MS, json!([{"size": 5_000, "origin": 0, "tls": true}]), json!({})));
    let d = tls - plain;
    assert!((0.2..0.215).contains(&d), "TLS cost {d} s");
}

#[test]
fn same_seed_same_result_and_bad_pages_fail_with_the_key() {
    let objs = json!([{"size": 300_000, "origin": 0}, {"size": 50_000, "origin": 1, "parent": 0, "tls": true},
                      {"size": 70_000, "origin": 1, "parent": 0}]);
    let a = world(5_000_000, 30 * MS, objs.clone(), json!({}));
    let b = world(5_000_000, 30 * MS, objs, json!({}));
    assert_eq!(a.summary(String::new()).to_json(), b.summary(String::new()).to_json());
    let bad = json!({
        "name": "page", "duration": 1_000_000_000u64, "nodes": [{"name": "c"}, {"name": "s"}],
        "links": [{"name": "d", "from": 1, "to": 0, "rate_bps": 1_000_000}, {"name": "u", "from": 0, "to": 1, "rate_bps": 1_000_000}],
        "pages": [{"name": "pg", "server": 1, "client": 0, "load": {"objects": [{"size": 10, "origin": 0, "parent": 0}]}}],
    });
    let err = World::build(serde_json::from_value::<SimConfig>(bad).unwrap()).err().unwrap();
    assert!(err.to_string().contains("pages[0].load.objects[0].parent"), "{err}");
}
