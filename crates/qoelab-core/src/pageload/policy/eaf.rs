//! *Earliest Arrival First* (public name `eaf`), the simulator's oracle version: for each
//! interface in order, the "only that interface" choice and its predicted finish (a full
//! prediction run with exact sizes, RTTs and bandwidths); the earliest wins, ties to the lower
//! interface.

use super::{only_iface, pick, worst, Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;

pub struct Eaf;

impl Policy for Eaf {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        let mut best = worst();
        for k in 0..ctx.n_ifaces() {
            // a later interface must be strictly earlier to win
            let c = only_iface(ctx, tid, k as u8, best.0.saturating_sub(1));
            pick(&mut best, c);
        }
        best.1
    }
}

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "eaf",
    paper: "EAF",
    public: "eaf",
    doc: "earliest predicted arrival over the interfaces (prediction runs: the simulator's oracle)",
    randomized: false,
    min_ifaces: 1,
    build: |_, _| Box::new(Eaf),
};
