//! The loss-phase classifier of the HAS-over-AQM testbed (Livi et al., after Esteban et al.):
//! every dropped data packet of a video flow is labelled
//!
//! * **B** (initial burst): it lies inside a *burst*, a maximal run of more than 5 data packets
//!   of the flow with no ACK of the flow in between, the run lasting less than 18 ms (first to
//!   last packet);
//! * **T** (ACK trailing): its sequence number lies in the range acknowledged by a *trailing
//!   group*, a maximal run of more than 5 pure ACKs of the flow with no data packet in between,
//!   each advancing the ack number. The range is `[ack before the group, last ack of the group]`
//!   inclusive: the bytes the group acknowledges plus the first byte it leaves unacknowledged
//!   (where the loss that ends a trailing phase sits);
//! * **C** (ACK clocking): everything else.
//!
//! B wins over T. The input is a plain list of packet events as seen at the bottleneck's ingress
//! (data packets in one direction, pure ACKs in the other, time-ordered, with a dropped flag),
//! so the same function classifies the simulator's packet log and a real pcap (tshark rows).

use crate::time::{Ns, MS};
use serde::Serialize;
use std::collections::BTreeMap;

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PktKind {
    /// A data packet: the sequence number of its first byte (unwrapped, e.g. tshark's relative
    /// sequence numbers; a retransmission carries the original number).
    Data { seq: u64 },
    /// A pure ACK (no payload): its cumulative ack number.
    Ack { ack: u64 },
}

/// One packet seen at the bottleneck ingress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PktEvent {
    pub t: Ns,
    /// Any flow identifier (a TCP stream index, a 5-tuple hash).
    pub flow: u64,
    pub kind: PktKind,
    /// Dropped at the bottleneck (seen at the ingress, not at the egress). Only data drops are
    /// classified.
    pub dropped: bool,
}

/// A loss phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum LossPhase {
    /// Initial burst.
    B,
    /// ACK trailing.
    T,
    /// ACK clocking.
    C,
}

/// The rule constants (the testbed's: > 5 packets, < 18 ms, > 5 ACKs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LossPhaseRules {
    /// A burst has more than this many data packets.
    pub burst_more_than: usize,
    /// A burst lasts less than this (first to last packet).
    pub burst_less_than: Ns,
    /// A trailing group has more than this many advancing pure ACKs.
    pub trailing_more_than: usize,
}

impl Default for LossPhaseRules {
    fn default() -> Self {
        LossPhaseRules { burst_more_than: 5, burst_less_than: 18 * MS, trailing_more_than: 5 }
    }
}

/// Label every dropped data packet: `(index into events, phase)`, in input order.
pub fn classify_losses(events: &[PktEvent], rules: &LossPhaseRules) -> Vec<(usize, LossPhase)> {
    let mut flows: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        flows.entry(e.flow).or_default().push(i);
    }
    let mut out = Vec::new();
    for idx in flows.values() {
        classify_flow(events, idx, rules, &mut out);
    }
    out.sort_unstable_by_key(|x| x.0);
    out
}

/// Counts of (B, T, C).
pub fn phase_counts(labels: &[(usize, LossPhase)]) -> (usize, usize, usize) {
    let n = |p| labels.iter().filter(|x| x.1 == p).count();
    (n(LossPhase::B), n(LossPhase::T), n(LossPhase::C))
}

fn classify_flow(ev: &[PktEvent], idx: &[usize], rules: &LossPhaseRules, out: &mut Vec<(usize, LossPhase)>) {
    // Bursts: maximal runs of data packets (positions in idx).
    let mut in_burst = vec![false; idx.len()];
    let mut i = 0;
    while i < idx.len() {
        if !matches!(ev[idx[i]].kind, PktKind::Data { .. }) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < idx.len() && matches!(ev[idx[j + 1]].kind, PktKind::Data { .. }) {
            j += 1;
        }
        let n = j - i + 1;
        let span = ev[idx[j]].t - ev[idx[i]].t;
        if n > rules.burst_more_than && span < rules.burst_less_than {
            in_burst[i..=j].iter_mut().for_each(|b| *b = true);
        }
        i = j + 1;
    }
    // Trailing groups: maximal runs of strictly advancing pure ACKs -> sequence ranges.
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    let mut prev_ack: Option<u64> = None; // the last ack number seen before the current run
    let mut run: Vec<u64> = Vec::new();
    let mut run_prev: Option<u64> = None;
    let close = |run: &mut Vec<u64>, run_prev: Option<u64>, ranges: &mut Vec<(u64, u64)>| {
        if run.len() > rules.trailing_more_than {
            ranges.push((run_prev.unwrap_or(run[0]), *run.last().expect("non-empty run")));
        }
        run.clear();
    };
    for &k in idx {
        match ev[k].kind {
            PktKind::Data { .. } => {
                close(&mut run, run_prev, &mut ranges);
            }
            PktKind::Ack { ack } => {
                if run.last().is_some_and(|&last| ack <= last) {
                    close(&mut run, run_prev, &mut ranges);
                }
                if run.is_empty() {
                    run_prev = prev_ack;
                }
                run.push(ack);
                prev_ack = Some(ack);
            }
        }
    }
    close(&mut run, run_prev, &mut ranges);
    for (p, &k) in idx.iter().enumerate() {
        let e = &ev[k];
        let PktKind::Data { seq } = e.kind else { continue };
        if !e.dropped {
            continue;
        }
        let phase = if in_burst[p] {
            LossPhase::B
        } else if ranges.iter().any(|&(lo, hi)| lo <= seq && seq <= hi) {
            LossPhase::T
        } else {
            LossPhase::C
        };
        out.push((k, phase));
    }
}
