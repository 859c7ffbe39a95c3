//! *EAF-MPTCP* (public name `eaf-mptcp`): the earliest predicted finish over queueing on any
//! existing connection of the same origin and TLS flag, a new TCP connection on each interface,
//! and a new MPTCP connection over every ordered list of >= 2 interfaces, evaluated in that
//! order with strict `<` (the first evaluated wins ties).

use super::{best_pipe, mptcp_orders, pick, worst, Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;
use crate::time::NEVER;

pub struct EafMptcp {
    orders: Vec<Vec<u8>>,
}

impl Policy for EafMptcp {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        let mut best = worst();
        if let Some(c) = best_pipe(ctx, tid, None, NEVER) {
            pick(&mut best, c);
        }
        // every later candidate must be strictly earlier than the best so far to win
        for k in 0..ctx.n_ifaces() {
            let ch = Choice::tcp(k as u8);
            let t = ctx.predict_within(tid, &ch, best.0.saturating_sub(1));
            pick(&mut best, (t, ch));
        }
        for o in &self.orders {
            let ch = Choice::mptcp(o);
            let t = ctx.predict_within(tid, &ch, best.0.saturating_sub(1));
            pick(&mut best, (t, ch));
        }
        best.1
    }
}

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "eaf-mptcp",
    paper: "EAF-MPTCP",
    public: "eaf-mptcp",
    doc: "earliest predicted arrival over queueing, TCP per interface and MPTCP per interface order",
    randomized: false,
    min_ifaces: 1,
    build: |_, n| Box::new(EafMptcp { orders: mptcp_orders(n) }),
};
