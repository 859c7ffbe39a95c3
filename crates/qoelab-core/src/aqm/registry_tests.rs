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
                    p.handle = (arrived) as u32;
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

/// Drive a queue with a seeded random load; `timers` = call on_timer at every next_timer.
/// Returns every drop (time, seq, reason), every dequeued seq, and the probe after each step.
type Trace = (Vec<(u64, u64, usize)>, Vec<u64>, Vec<u64>);

fn trace(name: &str, c: &AqmBuildCtx, timers: bool) -> Trace {
    let mut q = Queue::build(name, &Params::new(), c).unwrap();
    let mut rng = Rng::from_seed(99);
    let (mut drops, mut deq, mut probes) = (vec![], vec![], vec![]);
    let mut t = 0;
    let mut seq = 0;
    for step in 0..20_000u64 {
        // bursts, idle gaps of up to 3 s, and overload phases
        t += if step % 2000 == 1999 { rng.below(3000) * 1000 * US } else { rng.below(400) * US };
        if timers {
            while q.next_timer() <= t {
                let nt = q.next_timer();
                q.on_timer(nt);
            }
        }
        let overload = (step / 3000) % 2 == 0;
        let mut d = vec![];
        for _ in 0..(if overload { rng.below(5) } else { rng.below(2) }) {
            let mut p = pkt(1500, rng.below(4) as u32);
            p.handle = seq as u32;
            seq += 1;
            q.enqueue(t, p, Some(&mut d));
        }
        for _ in 0..(if rng.chance(0.5) { 2 } else { 1 }) {
            if let Some(p) = q.dequeue(t, Some(&mut d)) {
                deq.push(p.handle as u64);
            }
        }
        drops.extend(d.iter().map(|x| (t, x.pkt.handle as u64, x.reason.index())));
        probes.push(q.probe().to_bits());
    }
    q.check_conservation().unwrap();
    (drops, deq, probes)
}

#[test]
fn timer_calls_do_not_change_results() {
    // Periodic updates (PIE, DOCSIS-PIE, ARED) catch up lazily at every enqueue/dequeue, so a
    // driver that never calls on_timer sees exactly the same drops, departures and probes.
    let mut c = ctx();
    c.limit_packets = Some(100);
    for e in REGISTRY {
        let a = trace(e.name, &c, true);
        let b = trace(e.name, &c, false);
        assert!(!a.0.is_empty(), "{}: no drops at all", e.name);
        assert_eq!(a.0, b.0, "{}: drops differ", e.name);
        assert_eq!(a.1, b.1, "{}: departures differ", e.name);
        assert_eq!(a.2, b.2, "{}: probes differ", e.name);
    }
}

#[test]
fn idle_queues_need_no_timer() {
    // After a busy period and a long idle time, no discipline keeps a periodic timer alive.
    let mut c = ctx();
    c.limit_packets = Some(100);
    for e in REGISTRY {
        let mut q = Queue::build(e.name, &Params::new(), &c).unwrap();
        let mut t = 0;
        for k in 0..3000u64 {
            t = k * 600 * US;
            q.enqueue(t, pkt(1500, 1), None);
            if k % 2 == 0 {
                q.dequeue(t, None);
            }
        }
        while q.dequeue(t, None).is_some() {}
        let mut wakeups = 0;
        while q.next_timer() != crate::time::NEVER {
            let nt = q.next_timer();
            q.on_timer(nt);
            wakeups += 1;
            assert!(wakeups < 100_000, "{}: timer never stops", e.name);
        }
        eprintln!("{}: {} timer wake-ups after the queue emptied", e.name, wakeups);
    }
}
