//! Helpers shared by the disciplines (limits from the build context, ECN marking) and, under
//! `cfg(test)`, the plain-loop test utilities.

use super::AqmBuildCtx;
use super::Item;
use crate::packet::{ecn, MTU};
use std::collections::VecDeque;

/// Linux default queue length in packets (`txqueuelen`).
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
}

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
