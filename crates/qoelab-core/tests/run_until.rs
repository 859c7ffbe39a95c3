//! `World::run_until`: running in slices of simulated time gives exactly the results of `run()`.

use qoelab_core::net::{SimConfig, World};
use serde_json::json;

fn cfg_json() -> serde_json::Value {
    json!({
        "name": "slices", "seed": 3, "duration": 3_000_000_000u64,
        "nodes": [{"name": "a"}, {"name": "r"}, {"name": "b"}],
        "links": [
            {"name": "a-r", "from": 0, "to": 1, "rate_bps": 100_000_000u64, "delay": 1_000_000,
             "loss": {"kind": "iid", "rate": 0.05}},
            {"name": "r-b", "from": 1, "to": 2, "rate_bps": 10_000_000, "delay": 5_000_000,
             "buffer_packets": 50, "monitor": true},
        ],
        "flows": [{"kind": "cbr", "name": "c", "src": 0, "dst": 2, "rate_bps": 12_000_000}],
    })
}

fn cfg() -> SimConfig {
    serde_json::from_value(cfg_json()).unwrap()
}

#[test]
fn slices_give_the_same_run() {
    let mut whole = World::build(cfg()).unwrap();
    whole.run();
    let mut sliced = World::build(cfg()).unwrap();
    let mut t = 0;
    let mut slices = 0;
    while !sliced.run_until(t) {
        t += 7_777_777; // not aligned with anything in the scenario
        slices += 1;
    }
    assert!(slices > 300);
    sliced.check_invariants().unwrap();
    assert_eq!(sliced.engine.now(), 3_000_000_000);
    assert_eq!(whole.summary(String::new()).to_json(), sliced.summary(String::new()).to_json());
    assert_eq!(whole.engine.processed(), sliced.engine.processed());
}

#[test]
fn run_until_past_the_end_completes() {
    let mut w = World::build(cfg()).unwrap();
    assert!(!w.run_until(1_000_000_000));
    assert!(w.engine.now() <= 1_000_000_000);
    assert!(w.run_until(u64::MAX));
    assert_eq!(w.engine.now(), 3_000_000_000);
}

#[test]
fn driver_runs_in_slices_and_honours_the_stop_flag() {
    use qoelab_core::driver::{run_json, Driver, RunError};
    use std::sync::atomic::AtomicBool;
    let json = cfg_json().to_string();
    // A raised flag stops before the first slice.
    let stop = AtomicBool::new(true);
    assert_eq!(run_json(&json, None, Some(&stop)).err(), Some(RunError::Stopped));
    // Otherwise the sliced run gives the summary of one uninterrupted run, with a config hash.
    let out = run_json(&json, None, None).unwrap();
    let mut whole = World::build(cfg()).unwrap();
    whole.run();
    let hash = out.summary.config_hash.clone();
    assert_eq!(hash.len(), 64);
    assert_eq!(out.summary.to_json(), whole.summary(hash).to_json());
    // The packet driver is chosen from `network`; an unknown one is a config error.
    let mut bad = cfg();
    bad.network = "flow".into();
    assert!(matches!(Driver::build(bad, None), Err(e) if e.path == "network"));
}
