//! *EAF (prototype estimator)*, an ablation (not in Table 3.1): the formula of the Socket
//! Intents prototype (dissertation §3.2.1) instead of prediction runs. Per interface: available
//! rate = bandwidth / (busy TCP connections on it + 1); predicted arrival = size / rate plus
//! 1 RTT if an idle connection of the same origin and TLS flag can be reused there, else
//! 2 RTT for a new connection (TLS ignored, as in the prototype). The earliest wins, ties to the
//! lower interface. It never queues behind a busy connection.

use super::{Policy, PolicyEntry};
use crate::pageload::run::Ctx;
use crate::pageload::Choice;
use crate::time::{Ns, NEVER, SEC};

pub struct EafHeuristic;

impl Policy for EafHeuristic {
    fn decide(&mut self, ctx: &mut Ctx<'_>, tid: u32) -> Choice {
        let size = ctx.object(tid).size as u128;
        let mut best: (Ns, Choice) = (NEVER, Choice::tcp(0));
        for k in 0..ctx.n_ifaces() {
            let f = &ctx.cfg().ifaces[k];
            let mut load = 0u128;
            for c in ctx.conns() {
                if c.busy() && !c.mptcp && c.first_iface() as usize == k {
                    load += 1;
                }
            }
            let idle = ctx.reusable(tid).find(|&i| {
                let c = &ctx.conns()[i];
                !c.busy() && !c.mptcp && c.first_iface() as usize == k
            });
            let xfer = (size * (load + 1) * SEC as u128 / f.rate as u128) as Ns;
            let (rtts, ch) = match idle {
                Some(ci) => (1, Choice::Pipe(ci)),
                None => (2, Choice::tcp(k as u8)),
            };
            let t = xfer + rtts * f.rtt;
            if t < best.0 {
                best = (t, ch);
            }
        }
        best.1
    }
}

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "eaf-heuristic",
    paper: "EAF (prototype estimator, §3.2.1)",
    public: "",
    doc: "EAF with the prototype's estimate: size / (bandwidth / (busy connections + 1)) + 1 or 2 RTT",
    randomized: false,
    min_ifaces: 1,
    build: |_, _| Box::new(EafHeuristic),
};
