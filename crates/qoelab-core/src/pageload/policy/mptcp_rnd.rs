//! *MPTCP rnd* (public name `mptcp`): like [`super::mptcp_if1`], but the interface order of a new
//! MPTCP connection is a uniformly random permutation drawn at every decision (so the first
//! subflow is on a random interface). Seeded: stream `pageload/policy/mptcp-rnd` of the load's
//! seed (the public simulator's generator is unseeded).

use super::{mptcp_or_pipe, rng_for, Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;
use crate::rng::Rng;

pub struct MptcpRnd {
    rng: Rng,
    order: Vec<u8>,
}

impl Policy for MptcpRnd {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        // Fisher-Yates from the identity
        let n = self.order.len();
        for (i, x) in self.order.iter_mut().enumerate() {
            *x = i as u8;
        }
        for i in (1..n).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            self.order.swap(i, j);
        }
        mptcp_or_pipe(ctx, tid, &self.order).1
    }
}

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "mptcp-rnd",
    paper: "MPTCP rnd",
    public: "mptcp",
    doc: "new MPTCP over a random interface order (seeded, redrawn per decision) vs queueing",
    randomized: true,
    min_ifaces: 1,
    build: |seed, n| Box::new(MptcpRnd { rng: rng_for(seed, "mptcp-rnd"), order: (0..n as u8).collect() }),
};
