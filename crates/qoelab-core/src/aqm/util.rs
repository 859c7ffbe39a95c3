//! Helpers shared by the disciplines (the byte-counting packet store, queue limits from the
//! parameters and the build context, ECN marking), the plain FIFO discipline behind pfifo, bfifo
//! and drophead, and, under `cfg(test)`, the plain-loop test utilities.

use super::Item;
use super::{AqmBuildCtx, DropReason, DropSink, QueueDiscipline};
use crate::packet::{ecn, MTU};
use crate::time::Ns;
use std::collections::VecDeque;

/// A FIFO packet store with byte accounting (the storage of every single-queue discipline).
#[derive(Default)]
pub struct Fifo {
    pub q: VecDeque<Item>,
    pub bytes: u64,
}

impl Fifo {
    #[inline]
    pub fn push(&mut self, pkt: Item) {
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Item> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    #[inline]
    pub fn len(&self) -> u64 {
        self.q.len() as u64
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn clear(&mut self) {
        self.q.clear();
        self.bytes = 0;
    }
    /// Tail-drop test: whether `pkt` must be refused under `lim` (the queue already holds
    /// `lim.pkts` packets, or `pkt` would take it above `lim.bytes`).
    #[inline]
    pub fn overflows(&self, pkt: &Item, lim: Limits) -> bool {
        self.len() >= lim.pkts || self.bytes + pkt.size as u64 > lim.bytes
    }
}

/// Packet and byte limits of a queue; `u64::MAX` = not limited in that dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub pkts: u64,
    pub bytes: u64,
}

impl Limits {
    /// The limits of a discipline with `limit` (packets) and `limit_bytes` parameters: the
    /// explicit parameters win as a pair; otherwise the link's buffer; otherwise
    /// `default_pkts` packets. 0 = not limited in that dimension (Linux/Mahimahi convention).
    pub fn resolve(limit: Option<u64>, limit_bytes: Option<u64>, ctx: &AqmBuildCtx, default_pkts: u64) -> Limits {
        let (lp, lb) = if limit.is_some() || limit_bytes.is_some() {
            (limit, limit_bytes)
        } else {
            (ctx.limit_packets.or(if ctx.limit_bytes.is_none() { Some(default_pkts) } else { None }), ctx.limit_bytes)
        };
        Limits { pkts: lp.filter(|&x| x > 0).unwrap_or(u64::MAX), bytes: lb.filter(|&x| x > 0).unwrap_or(u64::MAX) }
    }
    pub fn is_unlimited(&self) -> bool {
        self.pkts == u64::MAX && self.bytes == u64::MAX
    }
}

/// What a [`LimitedFifo`] does when an arrival would exceed its limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenFull {
    /// Refuse the arrival (Overflow) exactly when [`Fifo::overflows`] (Linux pfifo/bfifo).
    DropTail,
    /// Accept it, then drop from the head (HeadDrop) until within the limits (Linux
    /// pfifo_head_drop, Mahimahi drop_head_packet_queue).
    DropHead,
}

/// The plain FIFO disciplines (`pfifo`, `bfifo`, `drophead`): packet/byte limits and a policy
/// for a full queue, nothing else (no marks, no timers, no drops at dequeue).
pub struct LimitedFifo {
    q: Fifo,
    lim: Limits,
    when_full: WhenFull,
}

impl LimitedFifo {
    pub fn new(lim: Limits, when_full: WhenFull) -> LimitedFifo {
        LimitedFifo { q: Fifo::default(), lim, when_full }
    }
}

impl QueueDiscipline for LimitedFifo {
    fn enqueue(&mut self, _now: Ns, pkt: Item, sink: &mut DropSink) {
        match self.when_full {
            WhenFull::DropTail => {
                if self.q.overflows(&pkt, self.lim) {
                    sink.reject(pkt, DropReason::Overflow);
                } else {
                    self.q.push(pkt);
                }
            }
            WhenFull::DropHead => {
                self.q.push(pkt);
                while self.q.len() > self.lim.pkts || self.q.bytes > self.lim.bytes {
                    let h = self.q.pop().expect("non-empty");
                    sink.drop_queued(h, DropReason::HeadDrop);
                }
            }
        }
    }
    fn dequeue(&mut self, _now: Ns, _sink: &mut DropSink) -> Option<Item> {
        self.q.pop()
    }
    /// Head- or tail-drop, a dequeue on an empty FIFO changes nothing.
    fn quiet_when_empty(&self) -> bool {
        true
    }
    /// A tail-drop FIFO may be served analytically by a link; a head-drop one may not.
    fn fifo_limits(&self) -> Option<(u64, u64)> {
        match self.when_full {
            WhenFull::DropTail => Some((self.lim.pkts, self.lim.bytes)),
            WhenFull::DropHead => None,
        }
    }
    fn len_packets(&self) -> u64 {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes
    }
}

/// Linux default queue length in packets (`txqueuelen`).
pub const LINUX_TXQUEUELEN: u64 = 1000;

/// The link buffer in bytes: `limit_bytes`, else `limit_packets` x 1500 B, else None.
pub fn ctx_buffer_bytes(ctx: &AqmBuildCtx) -> Option<u64> {
    ctx.limit_bytes.or(ctx.limit_packets.map(|p| p * MTU as u64))
}

/// Set CE on an ECN-capable packet. Returns false (nothing done) for a Not-ECT packet.
#[inline]
pub fn mark_ce(pkt: &mut Item) -> bool {
    if pkt.ecn == ecn::NOT_ECT {
        false
    } else {
        pkt.ecn = ecn::CE;
        true
    }
}

/// The `limit_bytes` parameter of the single-FIFO AQMs (CoDel, PIE, DOCSIS-PIE): resolved by
/// [`Limits::resolve`].
pub const LIMIT_BYTES: crate::params::ParamSpec = crate::params::ParamSpec {
    name: "limit_bytes",
    unit: crate::params::Unit::Bytes,
    default: crate::params::Default::Context("link buffer in bytes, else none"),
    doc: "maximum bytes queued (0 = none)",
};

#[cfg(test)]
pub mod testutil {
    use super::super::Item;
    use super::super::{AqmBuildCtx, Queue};
    use crate::packet::ecn;
    use crate::params::Params;

    pub fn ctx() -> AqmBuildCtx {
        AqmBuildCtx { limit_packets: None, limit_bytes: None, link_rate_bps: 10_000_000, seed: 7 }
    }
    pub fn pkt(size: u32, hash: u32) -> Item {
        Item { size, hash, handle: hash, ..Item::default() }
    }
    pub fn ect(size: u32, hash: u32) -> Item {
        Item { ecn: ecn::ECT0, ..pkt(size, hash) }
    }
    pub fn queue(name: &str, p: Params, ctx: &AqmBuildCtx) -> Queue {
        Queue::build(name, &p, ctx).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}
