//! Hand-computed cases (the public simulator's unit validation, within +-1 RTT), limits,
//! invariants over random pages, determinism.

use super::page::{Object, Page};
use super::policy::{lookup, Policy, REGISTRY};
use super::run::{load, Ctx, LoadResult};
use super::{Choice, Config, Iface};
use crate::driver::flow::run_one;
use crate::rng::Rng;
use crate::time::{Ns, MS, SEC};

const MSS: f64 = 1460.0;

/// Closed form of one transfer of `s` bytes after the handshake, alone on bandwidth `b` (B/s):
/// slow-start rounds from IW10 while the window rate is below `b`, then the rest at `b`.
fn ftime(s: f64, b: f64, rtt: f64) -> f64 {
    let (mut rem, mut ws, mut t) = (s, 10.0, 0.0);
    while ws * MSS / rtt < b && rem > ws * MSS {
        rem -= ws * MSS;
        t += rtt;
        ws *= 2.0;
    }
    t + rem / b
}

fn obj(size: u64, origin: u32, parent: Option<u32>) -> Object {
    Object { size, origin, tls: false, parent }
}

fn cfg2(b1: u64, r1: Ns, b2: u64, r2: Ns) -> Config {
    Config::new(vec![Iface::new(b1, r1), Iface::new(b2, r2)])
}

fn plt(page: &Page, cfg: &Config, policy: &str) -> f64 {
    run_one(page, cfg, policy, 1).unwrap().plt as f64 / SEC as f64
}

fn within_rtt(got: f64, want: f64, rtt: f64) {
    assert!((got - want).abs() <= rtt, "got {got:.4} s, hand-computed {want:.4} s (+-{rtt} s)");
}

#[test]
fn one_object_matches_closed_form() {
    // 1 MB at 8 Mbit/s (1e6 B/s), 20 ms
    let (b, rtt) = (1e6, 0.02);
    let page = Page::new(vec![obj(1_000_000, 0, None)]).unwrap();
    let cfg = cfg2(1_000_000, 20 * MS, 1_000_000, 20 * MS);
    let want = 2.0 * rtt + ftime(1e6, b, rtt);
    within_rtt(plt(&page, &cfg, "if1"), want, rtt);
    // the model is exact here: 2 RTT handshake, one IW10 round, the rest at full rate
    assert_eq!(run_one(&page, &cfg, "if1", 1).unwrap().plt, 40 * MS + 20 * MS + 985_400_000);
    // TLS adds two RTTs
    let tls = Page::new(vec![Object { tls: true, ..obj(1_000_000, 0, None) }]).unwrap();
    within_rtt(plt(&tls, &cfg, "if1"), want + 2.0 * rtt, rtt);
    // small object: slow start bound (several rounds)
    let small = Page::new(vec![obj(100_000, 0, None)]).unwrap();
    let fast = cfg2(100_000_000, 50 * MS, 1_000_000, 20 * MS);
    within_rtt(plt(&small, &fast, "if1"), 0.1 + ftime(1e5, 1e8, 0.05), 0.05);
}

#[test]
fn dependent_objects_match_closed_form() {
    let (b, rtt) = (1e6, 0.02);
    let cfg = cfg2(1_000_000, 20 * MS, 1_000_000, 20 * MS);
    let first = 2.0 * rtt + ftime(1e6, b, rtt);
    for n in [2u32, 14] {
        // 1 MB, then n x 200 KB on n other origins, in parallel: bw / n each
        let mut v = vec![obj(1_000_000, 0, None)];
        for k in 0..n {
            v.push(obj(200_000, k + 1, Some(0)));
        }
        let page = Page::new(v).unwrap();
        let want = first + 2.0 * rtt + ftime(2e5, b / n as f64, rtt);
        within_rtt(plt(&page, &cfg, "if1"), want, rtt);
    }
    // same origin as the parent: the idle connection is reused at once (no request RTT), so the
    // 200 KB child runs at the full rate
    let page = Page::new(vec![obj(1_000_000, 0, None), obj(200_000, 0, Some(0))]).unwrap();
    within_rtt(plt(&page, &cfg, "if1"), first + 0.2, rtt);
    // with the text's request RTT on reuse, one RTT more
    let mut c1 = cfg.clone();
    c1.reuse_rtts = 1;
    within_rtt(plt(&page, &c1, "if1"), first + 0.2 + rtt, rtt / 2.0);
}

#[test]
fn eaf_and_mptcp_use_both_interfaces() {
    let (b, rtt) = (1e6, 0.02);
    let cfg = cfg2(1_000_000, 20 * MS, 1_000_000, 20 * MS);
    // two 1 MB objects on two origins: if1 shares one interface, EAF puts one on each
    let page = Page::new(vec![obj(1_000_000, 0, None), obj(1_000_000, 1, None)]).unwrap();
    within_rtt(plt(&page, &cfg, "if1"), 2.0 * rtt + ftime(1e6, b / 2.0, rtt), rtt);
    within_rtt(plt(&page, &cfg, "eaf"), 2.0 * rtt + ftime(1e6, b, rtt), rtt);
    // one object with MPTCP: the second subflow joins after the first handshake (+2 RTT) and
    // the connection then gets both interfaces
    let one = Page::new(vec![obj(2_000_000, 0, None)]).unwrap();
    let t_if1 = plt(&one, &cfg, "if1");
    let t_mp = plt(&one, &cfg, "mptcp-if1");
    let want_mp = 2.0 * rtt + ftime(2e6, 2.0 * b, rtt) + rtt;
    within_rtt(t_mp, want_mp, 2.0 * rtt);
    assert!(t_mp < 0.6 * t_if1, "{t_mp} vs {t_if1}");
    // if2 far better: EAF sends everything there, if1 does not
    let cfg = cfg2(64_000, 50 * MS, 6_000_000, 20 * MS);
    let r = run_one(&page, &cfg, "eaf", 1).unwrap();
    assert_eq!(r.off_first, 2);
    assert!(plt(&page, &cfg, "eaf") < plt(&page, &cfg, "if1") / 10.0);
}

/// A policy that opens a new connection on interface 1 every time, and checks the limits at
/// every decision.
struct AlwaysNew {
    max_busy_same: usize,
    max_open: usize,
}

impl Policy for AlwaysNew {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        let o = ctx.object(tid);
        let same = ctx.conns().iter().filter(|c| c.busy() && c.origin == o.origin).count();
        self.max_busy_same = self.max_busy_same.max(same);
        self.max_open = self.max_open.max(ctx.conns().len());
        Choice::tcp(0)
    }
}

#[test]
fn connection_limits() {
    let cfg = cfg2(1_000_000, 20 * MS, 1_000_000, 20 * MS);
    // 8 objects of one origin at t = 0: 6 connections at once, the 7th and 8th wait for a free one
    let page = Page::new((0..8).map(|_| obj(100_000, 0, None)).collect()).unwrap();
    let mut c = cfg.clone();
    c.record = true;
    let mut p = AlwaysNew { max_busy_same: 0, max_open: 0 };
    let r = load(&page, &c, &mut p).unwrap();
    assert!(r.limit_blocked);
    assert_eq!(p.max_busy_same, 5, "decided with 6 busy connections of one origin");
    assert_eq!(r.records.iter().filter(|x| x.enqueue == 0).count(), 6);
    assert!(r.records[6].enqueue > 0 && r.records[6].enqueue == r.records[..6].iter().map(|x| x.finish).min().unwrap());
    // 40 origins: at most 17 connections open at any decision (the oldest idle one is closed)
    let mut v = vec![obj(10_000, 0, None)];
    for k in 0..40 {
        v.push(obj(50_000 + 1000 * k as u64, k + 1, Some(0)));
    }
    for k in 0..40 {
        v.push(obj(5_000, k + 1, Some(1 + k)));
    }
    let page = Page::new(v).unwrap();
    let mut p = AlwaysNew { max_busy_same: 0, max_open: 0 };
    let r = load(&page, &c, &mut p).unwrap();
    assert!(p.max_open <= 17, "{} connections open", p.max_open);
    assert_eq!(p.max_open, 17);
    assert!(r.limit_blocked);
    // the policies obey the limits too
    for e in REGISTRY {
        let mut pol = (e.build)(3, 2);
        let r = load(&page, &cfg, pol.as_mut()).unwrap();
        assert!(r.plt > 0);
    }
}

#[test]
fn idle_connections_time_out() {
    // a child enabled long after its parent's connection went idle: with a 30 s idle timeout
    // the connection is gone and the child pays a new handshake; with a long timeout it reuses
    let cfg = cfg2(10_000, 20 * MS, 10_000, 20 * MS);
    let page = Page::new(vec![obj(1000, 0, None), obj(400_000, 1, None), obj(1000, 0, Some(1))]).unwrap();
    let r30 = run_one(&page, &cfg, "if1", 1).unwrap();
    let mut long = cfg.clone();
    long.idle_timeout = 1000 * SEC;
    let rl = run_one(&page, &long, "if1", 1).unwrap();
    assert!(r30.plt > 30 * SEC);
    assert_eq!(r30.conns_opened, 3);
    assert_eq!(rl.conns_opened, 2);
    assert!(rl.plt < r30.plt);
}

/// A random page: a root and children/grandchildren over a few origins.
fn random_page(rng: &mut Rng) -> Page {
    let n = 1 + rng.below(60) as usize;
    let hosts = 1 + rng.below(8) as u32;
    let mut v = Vec::new();
    for i in 0..n {
        let size = (rng.exp(20_000.0) as u64).max(1) + if rng.chance(0.05) { 500_000 } else { 0 };
        let parent = if i == 0 || rng.chance(0.1) { None } else { Some(rng.below(i as u64) as u32) };
        v.push(Object { size, origin: rng.below(hosts as u64) as u32, tls: rng.chance(0.5), parent });
    }
    Page::new(v).unwrap()
}

fn random_iface(rng: &mut Rng) -> Iface {
    let bw = [64_000u64, 262_144, 786_432, 2_621_440, 6_553_600][rng.below(5) as usize];
    Iface::new(bw, (10 + rng.below(190)) * MS)
}

#[test]
fn invariants_over_random_pages() {
    let mut rng = Rng::from_seed(11);
    for _ in 0..60 {
        let page = random_page(&mut rng);
        let cfg = Config::new(vec![random_iface(&mut rng), random_iface(&mut rng)]);
        let total_bw: u64 = cfg.ifaces.iter().map(|f| f.rate).sum();
        let min_rtt = cfg.ifaces.iter().map(|f| f.rtt).min().unwrap();
        let bound = page.total_bytes as f64 / total_bw as f64 + 2.0 * min_rtt as f64 / 1e9;
        for e in REGISTRY {
            let r = run_one(&page, &cfg, e.name, 5).unwrap();
            let t = r.plt as f64 / 1e9;
            assert!(t >= bound * (1.0 - 1e-9), "{}: {t} below the bound {bound}", e.name);
            if e.name == "if1" || e.name == "if2" {
                let b = cfg.ifaces[(e.name == "if2") as usize].rate as f64;
                assert!(t >= page.total_bytes as f64 / b, "{}", e.name);
            }
        }
    }
}

/// With two identical interfaces, MPTCP if1's first subflow is if1's connection and the second
/// only adds bandwidth, so a single object is never slower. On whole pages the greedy per-object
/// decisions are path-dependent (a prediction cannot see transfers not yet scheduled, so MPTCP
/// if1 sometimes queues an object where if1 opened a new connection, or objects are enabled at
/// other times and meet other queues), and a few pages load slightly slower: the
/// dissertation's "practically never" (P5 allows <= 0.5% of cases below 0.99).
#[test]
fn mptcp_if1_never_slower_than_if1_with_identical_interfaces() {
    let mut rng = Rng::from_seed(23);
    let (mut faster, mut slower, mut worst) = (0, 0, 1.0f64);
    let n = 400;
    for k in 0..n {
        let mut page = random_page(&mut rng);
        if k % 2 == 0 {
            let objs = page.objects.iter().map(|o| Object { parent: None, ..*o }).collect();
            page = Page::new(objs).unwrap();
        }
        let f = random_iface(&mut rng);
        let cfg = Config::new(vec![f.clone(), f]);
        let a = run_one(&page, &cfg, "if1", 1).unwrap().plt;
        let b = run_one(&page, &cfg, "mptcp-if1", 1).unwrap().plt;
        faster += (b < a) as u32;
        slower += (b > a) as u32;
        worst = worst.max(b as f64 / a as f64);
    }
    assert!(faster > n * 3 / 4, "MPTCP if1 faster in only {faster} of {n} pages");
    assert!(slower * 50 <= n, "MPTCP if1 slower in {slower} of {n} pages");
    assert!(worst < 1.10, "MPTCP if1 {worst:.3} x slower than if1 on some page");
    // one object (any size): never slower, strictly faster once it is large
    for size in [1u64, 1000, 14_600, 50_000, 1_000_000, 10_000_000] {
        for f in [Iface::new(64_000, 200 * MS), Iface::new(6_553_600, 10 * MS)] {
            let cfg = Config::new(vec![f.clone(), f]);
            let page = Page::new(vec![obj(size, 0, None)]).unwrap();
            let a = run_one(&page, &cfg, "if1", 1).unwrap().plt;
            let b = run_one(&page, &cfg, "mptcp-if1", 1).unwrap().plt;
            assert!(b <= a && (size < 1_000_000 || b < a), "{size} B: {b} vs {a}");
        }
    }
}

#[test]
fn pruned_predictions_are_exact() {
    let mut rng = Rng::from_seed(41);
    for _ in 0..40 {
        let page = random_page(&mut rng);
        let cfg = Config::new(vec![random_iface(&mut rng), random_iface(&mut rng)]);
        let mut full = cfg.clone();
        full.prune_predictions = false;
        for e in REGISTRY {
            let a = run_one(&page, &cfg, e.name, 3).unwrap();
            let b = run_one(&page, &full, e.name, 3).unwrap();
            assert_eq!(a.plt, b.plt, "{}", e.name);
            assert_eq!((a.conns_opened, a.off_first), (b.conns_opened, b.off_first), "{}", e.name);
        }
    }
}

#[test]
fn deterministic_per_seed() {
    let mut rng = Rng::from_seed(5);
    let mut differs = 0;
    for _ in 0..30 {
        let page = random_page(&mut rng);
        let cfg = cfg2(262_144, 20 * MS, 2_621_440, 100 * MS);
        let a: LoadResult = run_one(&page, &cfg, "mptcp-rnd", 7).unwrap();
        let b = run_one(&page, &cfg, "mptcp-rnd", 7).unwrap();
        assert_eq!(a, b);
        let c = run_one(&page, &cfg, "mptcp-rnd", 8).unwrap();
        differs += (a.plt != c.plt) as u32;
        for e in REGISTRY.iter().filter(|e| !e.randomized) {
            assert_eq!(run_one(&page, &cfg, e.name, 1).unwrap(), run_one(&page, &cfg, e.name, 2).unwrap());
        }
    }
    assert!(differs > 0, "the seed never changes MPTCP rnd");
}

#[test]
fn bad_input_is_one_line() {
    let page = Page::new(vec![obj(1000, 0, None)]).unwrap();
    let cfg = cfg2(0, 20 * MS, 1000, 20 * MS);
    let e = run_one(&page, &cfg, "if1", 1).unwrap_err();
    assert!(e.contains("if1.bandwidth") && !e.contains('\n'), "{e}");
    let cfg = cfg2(1000, 20 * MS, 1000, 20 * MS);
    let e = run_one(&page, &cfg, "fastest", 1).unwrap_err();
    assert!(e.contains("policy") && e.contains("fastest"), "{e}");
    let one = Config::new(vec![Iface::new(1000, MS)]);
    assert!(run_one(&page, &one, "if2", 1).unwrap_err().contains("needs 2"));
    assert!(lookup("eaf").is_some());
}

#[test]
fn rate_schedule_changes_the_rate() {
    let page = Page::new(vec![obj(1_000_000, 0, None)]).unwrap();
    let mut cfg = cfg2(1_000_000, 20 * MS, 1_000_000, 20 * MS);
    let base = run_one(&page, &cfg, "if1", 1).unwrap().plt;
    // halve the rate from 0.5 s on: the last ~0.5 MB take twice as long
    cfg.ifaces[0].schedule = vec![(500 * MS, 500_000)];
    let slow = run_one(&page, &cfg, "if1", 1).unwrap().plt;
    let rem_at_half = 1e6 - (1e6 - 14_600.0) * 0.0 - 14_600.0 - (0.5 - 0.06) * 1e6;
    let want = 0.5 + rem_at_half / 5e5;
    assert!(((slow as f64 / 1e9) - want).abs() < 1e-6, "{slow} vs {want}");
    assert!(slow > base);
}

#[test]
fn a_transfer_end_ends_the_slow_start_round() {
    // 50 chained 10,000 B objects on one origin at 1 Gbit/s, 30 ms: each fits in one round, so
    // each ends its round and the next (on the reused connection) wants window / RTT, the
    // window having grown by every byte delivered (the public simulator's event "every RTT or
    // at transfer end if sooner"). Before 2026-11-30 the wanted rate stayed at the initial
    // window's: 1.087 s.
    let rtt = 0.03;
    let mut v = vec![obj(10_000, 0, None)];
    for k in 1..50 {
        v.push(obj(10_000, 0, Some(k - 1)));
    }
    let page = Page::new(v).unwrap();
    let cfg = cfg2(125_000_000, 30 * MS, 125_000_000, 30 * MS);
    let mut want = 2.0 * rtt;
    for k in 0..50 {
        want += 10_000.0 / ((10.0 * MSS + 10_000.0 * k as f64) / rtt);
    }
    let got = plt(&page, &cfg, "if1");
    // one ns of rounding per object at most
    assert!((got - want).abs() < 1e-6, "got {got:.6} s, hand-computed {want:.6} s");
    assert!(got < 0.25, "{got}");
}
