//! *MPTCP if1* (public name `mptcp-1`): a new full-mesh MPTCP connection over all interfaces
//! with the first subflow on interface 1, vs the best queueing candidate on any existing
//! connection, by prediction (a tie goes to queueing).

use super::{mptcp_or_pipe, Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;

pub struct MptcpIf1 {
    order: Vec<u8>,
}

impl Policy for MptcpIf1 {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        mptcp_or_pipe(ctx, tid, &self.order).1
    }
}

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "mptcp-if1",
    paper: "MPTCP if1",
    public: "mptcp-1",
    doc: "new MPTCP over all interfaces, first subflow on interface 1, vs queueing, by prediction",
    randomized: false,
    min_ifaces: 1,
    build: |_, n| Box::new(MptcpIf1 { order: (0..n as u8).collect() }),
};
