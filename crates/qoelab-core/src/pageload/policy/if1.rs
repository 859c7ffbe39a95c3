//! *Interface 1* (the baseline): always interface 1 (public name `only1-1`). Per transfer, a new
//! TCP connection on interface 1 vs the best queueing candidate there, by prediction.

use super::{only_iface, Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;
use crate::time::NEVER;

pub struct Only(pub u8);

impl Policy for Only {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        only_iface(ctx, tid, self.0, NEVER).1
    }
}

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "if1",
    paper: "Interface 1",
    public: "only1-1",
    doc: "always interface 1: new connection vs queueing on an existing one, by predicted finish",
    randomized: false,
    min_ifaces: 1,
    build: |_, _| Box::new(Only(0)),
};
