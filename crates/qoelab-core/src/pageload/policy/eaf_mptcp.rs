//! *EAF-MPTCP* (public name `eaf-mptcp`): the earliest predicted finish over queueing on any
//! existing connection of the same origin and TLS flag, a new TCP connection on each interface,
//! and a new MPTCP connection over every ordered list of >= 2 interfaces, evaluated in that
//! order with strict `<` (the first evaluated wins ties).

use super::{best_pipe, mptcp_orders, pick, worst, Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;

pub struct EafMptcp {
    orders: Vec<Vec<u8>>,
}

impl Policy for EafMptcp {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        let mut best = worst();
        if let Some(c) = best_pipe(ctx, tid, None) {
            pick(&mut best, c);
        }
        for k in 0..ctx.n_ifaces() {
            let ch = Choice::tcp(k as u8);
            pick(&mut best, (ctx.predict(tid, &ch), ch));
        }
        for o in &self.orders {
            let ch = Choice::mptcp(o);
            pick(&mut best, (ctx.predict(tid, &ch), ch));
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
