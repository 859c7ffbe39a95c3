//! Socket Intents policies: per transfer, which connection or interface(s) to use. One file per
//! policy with `pub const ENTRY`, one line each in [`REGISTRY`], a docs page each
//! (docs/models/policy-<name>.md).
//!
//! Policies see the state read-only through [`Ctx`] and compare candidates by prediction runs
//! ([`Ctx::predict`]). Ties and the order of evaluation follow the public simulator: a new
//! connection vs the best queueing candidate goes to queueing on a tie; comparisons between
//! candidates are strict `<`, so the first one evaluated wins a tie.

pub mod eaf;
pub mod eaf_heuristic;
pub mod eaf_mptcp;
pub mod if1;
pub mod if2;
pub mod mptcp_if1;
pub mod mptcp_rnd;
pub mod rr;

use super::run::Ctx;
use super::Choice;
use crate::time::{Ns, NEVER};

pub trait Policy {
    /// The connection or interface(s) for transfer `tid` (enabled, not yet scheduled).
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice;
}

/// A registered policy.
pub struct PolicyEntry {
    /// qoelab's name (CLI `--policy`).
    pub name: &'static str,
    /// The dissertation's name (Table 3.1).
    pub paper: &'static str,
    /// The public simulator's command-line name ("" if it has none).
    pub public: &'static str,
    pub doc: &'static str,
    /// Uses its random stream (seeded per load).
    pub randomized: bool,
    /// Interfaces it needs at least.
    pub min_ifaces: usize,
    /// Build for a load with `n_ifaces` interfaces, seed `seed`.
    pub build: fn(seed: u64, n_ifaces: usize) -> Box<dyn Policy>,
}

/// Every policy. Table 3.1's seven first, in the dissertation's order.
pub const REGISTRY: &[PolicyEntry] = &[
    if1::ENTRY,
    if2::ENTRY,
    rr::ENTRY,
    mptcp_if1::ENTRY,
    mptcp_rnd::ENTRY,
    eaf::ENTRY,
    eaf_mptcp::ENTRY,
    eaf_heuristic::ENTRY,
];

/// A policy by qoelab name or public simulator name.
pub fn lookup(name: &str) -> Option<&'static PolicyEntry> {
    REGISTRY.iter().find(|e| e.name == name || (!e.public.is_empty() && e.public == name))
}

/// The random stream of a randomized policy.
pub fn rng_for(seed: u64, name: &str) -> crate::rng::Rng {
    crate::rng::Rng::for_component(seed, &format!("pageload/policy/{name}"))
}

/// The best queueing candidate for `tid` (same origin and TLS): on TCP connections of interface
/// `iface`, or on any connection when `iface` is None. Strict `<`: the oldest wins ties. Only
/// candidates finishing no later than `limit` are considered (None if there is none).
pub fn best_pipe(ctx: &mut Ctx<'_>, tid: u32, iface: Option<u8>, limit: Ns) -> Option<(Ns, Choice)> {
    let mut best: Option<(Ns, Choice)> = None;
    let mut cands = [0usize; 64];
    let mut n = 0;
    for i in ctx.reusable(tid) {
        let c = &ctx.conns()[i];
        let ok = match iface {
            Some(k) => !c.mptcp && c.first_iface() == k,
            None => true,
        };
        if ok && n < cands.len() {
            cands[n] = i;
            n += 1;
        }
    }
    for &ci in &cands[..n] {
        let ch = Choice::Pipe(ci);
        // to win, a later candidate must be strictly earlier than the best so far
        let lim = best.map_or(limit, |(b, _)| b.saturating_sub(1).min(limit));
        let t = ctx.predict_within(tid, &ch, lim);
        if t != NEVER && best.is_none_or(|(b, _)| t < b) {
            best = Some((t, ch));
        }
    }
    best
}

/// "Only interface k": a new TCP connection on k vs the best queueing candidate on k, by
/// predicted finish time; a tie goes to queueing. Exact when the result is <= `limit`;
/// otherwise the time returned is NEVER (the caller would not take it anyway).
pub fn only_iface(ctx: &mut Ctx<'_>, tid: u32, k: u8, limit: Ns) -> (Ns, Choice) {
    let new = Choice::tcp(k);
    let t_new = ctx.predict_within(tid, &new, limit);
    match best_pipe(ctx, tid, Some(k), t_new.min(limit)) {
        Some((t, ch)) => (t, ch),
        None => (t_new, new),
    }
}

/// A new MPTCP connection over `order` vs the best queueing candidate on any connection; a tie
/// goes to queueing.
pub fn mptcp_or_pipe(ctx: &mut Ctx<'_>, tid: u32, order: &[u8]) -> (Ns, Choice) {
    let new = Choice::mptcp(order);
    let t_new = ctx.predict(tid, &new);
    match best_pipe(ctx, tid, None, t_new) {
        Some((t, ch)) => (t, ch),
        None => (t_new, new),
    }
}

/// Ordered interface lists for MPTCP: every permutation of every subset of >= 2 of the `n`
/// interfaces, by size, then lexicographically ((0,1), (1,0) for two interfaces).
pub fn mptcp_orders(n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for size in 2..=n {
        let mut cur = Vec::new();
        perms(n as u8, size, &mut cur, &mut out);
    }
    out
}

fn perms(n: u8, size: usize, cur: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
    if cur.len() == size {
        out.push(cur.clone());
        return;
    }
    for i in 0..n {
        if !cur.contains(&i) {
            cur.push(i);
            perms(n, size, cur, out);
            cur.pop();
        }
    }
}

/// NEVER-safe minimum with strict `<` (the first candidate wins ties).
pub fn pick(best: &mut (Ns, Choice), cand: (Ns, Choice)) {
    if cand.0 < best.0 {
        *best = cand;
    }
}

/// Start value for [`pick`].
pub fn worst() -> (Ns, Choice) {
    (NEVER, Choice::tcp(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_unique_and_found() {
        for (i, e) in REGISTRY.iter().enumerate() {
            assert!(lookup(e.name).is_some());
            for f in &REGISTRY[i + 1..] {
                assert_ne!(e.name, f.name);
                assert!(e.public.is_empty() || e.public != f.public);
            }
        }
        assert!(lookup("nope").is_none());
        assert_eq!(lookup("only1-1").unwrap().name, "if1");
    }

    #[test]
    fn orders() {
        assert_eq!(mptcp_orders(2), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(mptcp_orders(3).len(), 6 + 6);
        assert!(mptcp_orders(1).is_empty());
    }
}
