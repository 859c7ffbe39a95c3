//! pfifo: droptail FIFO limited in packets (Linux `pfifo`, Mahimahi `droptail` with `packets=`).
//! Siblings: [`super::bfifo`] (bytes), [`super::drophead`] (drop from the head).

use super::util::Fifo;
use super::Item;
use super::{AqmBuildCtx, AqmEntry, DropReason, DropSink, QueueDiscipline};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::Ns;

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "limit",
    unit: Unit::Packets,
    default: Default::Context(
        "link buffer in packets (a byte buffer counts as bytes / 1500), else 1000 (Linux txqueuelen)",
    ),
    doc: "maximum packets queued",
}];

pub const PFIFO: AqmEntry = AqmEntry {
    name: "pfifo",
    summary: "droptail FIFO limited in packets",
    reference: "Linux tc-pfifo(8)",
    params: PARAMS,
    build,
};

fn build(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    let limit = p
        .u64(PARAMS, "limit")?
        .or(ctx.limit_packets)
        .or(ctx.limit_bytes.map(|b| (b / crate::packet::MTU as u64).max(1)))
        .unwrap_or(1000);
    Ok(Box::new(Pfifo { q: Fifo::default(), limit }))
}

pub struct Pfifo {
    q: Fifo,
    limit: u64,
}

impl QueueDiscipline for Pfifo {
    fn enqueue(&mut self, _now: Ns, pkt: Item, sink: &mut DropSink) {
        if self.q.len() >= self.limit {
            sink.reject(pkt, DropReason::Overflow);
        } else {
            self.q.push(pkt);
        }
    }
    fn dequeue(&mut self, _now: Ns, _sink: &mut DropSink) -> Option<Item> {
        self.q.pop()
    }
    fn fifo_limits(&self) -> Option<(u64, u64)> {
        Some((self.limit, u64::MAX))
    }
    fn len_packets(&self) -> u64 {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes
    }
}
