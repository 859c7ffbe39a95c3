//! pfifo: droptail FIFO limited in packets (Linux `pfifo`, Mahimahi `droptail` with `packets=`).
//! Siblings: [`super::bfifo`] (bytes), [`super::drophead`] (drop from the head); all three are
//! [`super::util::LimitedFifo`].

use super::util::{LimitedFifo, Limits, WhenFull, LINUX_TXQUEUELEN};
use super::{AqmBuildCtx, AqmEntry, QueueDiscipline};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};

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
        .unwrap_or(LINUX_TXQUEUELEN);
    Ok(Box::new(LimitedFifo::new(Limits { pkts: limit, bytes: u64::MAX }, WhenFull::DropTail)))
}
