//! *Round Robin* (public name `rr-1`): the interfaces one after the other, starting on interface
//! 1; the counter advances on every decision, then the decision is "only that interface".

use super::{only_iface, Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;
use crate::time::NEVER;

pub struct RoundRobin {
    next: usize,
}

impl Policy for RoundRobin {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        let k = self.next % ctx.n_ifaces();
        self.next += 1;
        only_iface(ctx, tid, k as u8, NEVER).1
    }
}

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "rr",
    paper: "Round Robin",
    public: "rr-1",
    doc: "interfaces in turn per decision, starting on interface 1, then as 'only that interface'",
    randomized: false,
    min_ifaces: 1,
    build: |_, _| Box::new(RoundRobin { next: 0 }),
};
