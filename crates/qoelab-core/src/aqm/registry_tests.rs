//! Tests over the whole registry: default build, unknown parameters, conservation under a
//! seeded random arrival/departure loop.

use super::util::testutil::*;
use super::{build, AqmBuildCtx, Queue, REGISTRY};
use crate::params::Params;
use crate::rng::Rng;
use crate::time::US;

fn ctxs() -> Vec<AqmBuildCtx> {
    let mut a = ctx();
    a.limit_packets = Some(50);
    let mut b = ctx();
    b.limit_bytes = Some(60_000);
    vec![ctx(), a, b]
}

#[test]
fn every_entry_builds_with_defaults() {
    for e in REGISTRY {
        for c in ctxs() {
            let q = build(e.name, &Params::new(), &c).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(q.len_packets(), 0, "{}", e.name);
        }
        assert!(!e.summary.is_empty() && !e.reference.is_empty());
        for s in e.params {
            assert!(!s.doc.is_empty(), "{}.{}", e.name, s.name);
        }
    }
}

#[test]
fn every_entry_rejects_unknown_parameter() {
    for e in REGISTRY {
        let err = build(e.name, &Params::new().with("no_such_param", 1), &ctx()).err();
        let err = err.unwrap_or_else(|| panic!("{} accepted an unknown parameter", e.name));
        assert_eq!(err.param, "no_such_param");
    }
    assert!(build("no_such_queue", &Params::new(), &ctx()).is_err());
}

#[test]
fn conservation_under_random_load_every_discipline() {
    for e in REGISTRY {
        for (ci, c) in ctxs().into_iter().enumerate() {
            let mut q = Queue::build(e.name, &Params::new(), &c).unwrap();
            let mut rng = Rng::from_seed(1234 + ci as u64);
            let mut t = 0;
            let mut arrived = 0u64;
            for step in 0..40_000u64 {
                t += rng.below(400) * US;
                // Phases: overload (2.2 arrivals per departure), then underload.
                let overload = (step / 5000) % 2 == 0;
                let n_arr = if overload { rng.below(5) } else { rng.below(2) };
                for _ in 0..n_arr {
                    let size = [40u32, 576, 1000, 1500][rng.below(4) as usize];
                    let h = rng.below(8) as u32;
                    let mut p = if rng.chance(0.5) { ect(size, h) } else { pkt(size, h) };
                    p.seq = arrived;
                    arrived += 1;
                    q.enqueue(t, p, None);
                }
                while q.next_timer() <= t {
                    let nt = q.next_timer();
                    q.on_timer(nt);
                }
                let n_dep = if rng.chance(0.5) { 2 } else { 1 };
                for _ in 0..n_dep {
                    q.dequeue(t, None);
                }
                q.check_conservation().unwrap_or_else(|err| panic!("{}: {:?}", e.name, err));
            }
            while q.dequeue(t, None).is_some() {}
            q.check_conservation().unwrap();
            assert_eq!((q.len_packets(), q.len_bytes()), (0, 0), "{}", e.name);
            assert!(q.stats.dequeued_pkts > 10_000, "{}: {}", e.name, q.stats.dequeued_pkts);
        }
    }
}

#[test]
fn pfifo_packet_limit_exact() {
    let mut q = queue("pfifo", Params::new().with("limit", 3), &ctx());
    for _ in 0..5 {
        q.enqueue(0, pkt(700, 1), None);
    }
    assert_eq!((q.len_packets(), q.len_bytes()), (3, 2100));
    assert_eq!(q.stats.dropped_pkts(), 2);
    q.check_conservation().unwrap();
}
