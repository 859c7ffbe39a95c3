//! bfifo: droptail FIFO limited in bytes (Linux `bfifo`, Mahimahi `droptail` with `bytes=`).
//! The queue is [`super::util::LimitedFifo`] (shared with pfifo and drophead).

use super::util::{ctx_buffer_bytes, LimitedFifo, Limits, WhenFull, LINUX_TXQUEUELEN};
use super::{AqmBuildCtx, AqmEntry, QueueDiscipline};
use crate::packet::MTU;
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "limit",
    unit: Unit::Bytes,
    default: Default::Context("link buffer in bytes (packets x 1500 B), else 1000 x 1500 B (Linux txqueuelen x MTU)"),
    doc: "maximum bytes (IP length) queued; an arrival that would exceed it is dropped",
}];

pub const BFIFO: AqmEntry = AqmEntry {
    name: "bfifo",
    summary: "droptail FIFO limited in bytes",
    reference: "Linux tc-bfifo(8)",
    params: PARAMS,
    build,
};

fn build(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    let limit = p.u64(PARAMS, "limit")?.or(ctx_buffer_bytes(ctx)).unwrap_or(LINUX_TXQUEUELEN * MTU as u64);
    Ok(Box::new(LimitedFifo::new(Limits { pkts: u64::MAX, bytes: limit }, WhenFull::DropTail)))
}

#[cfg(test)]
mod tests {
    use super::super::util::testutil::*;
    use crate::params::Params;

    #[test]
    fn bfifo_byte_limit_exact() {
        let mut q = queue("bfifo", Params::new().with("limit", 10_000), &ctx());
        // 6 x 1500 = 9000 fit, the 7th (10500) does not; a 1000-B packet then fits exactly.
        for _ in 0..7 {
            q.enqueue(0, pkt(1500, 1), None);
        }
        assert_eq!(q.len_packets(), 6);
        assert_eq!(q.len_bytes(), 9000);
        q.enqueue(0, pkt(1000, 1), None);
        assert_eq!(q.len_bytes(), 10_000);
        q.enqueue(0, pkt(40, 1), None);
        assert_eq!(q.stats.dropped_pkts(), 2);
        assert_eq!(q.stats.dropped_bytes(), 1540);
        let mut n = 0;
        while q.dequeue(1, None).is_some() {
            n += 1;
        }
        assert_eq!(n, 7);
        q.check_conservation().unwrap();
    }

    #[test]
    fn bfifo_default_from_link_buffer() {
        let mut c = ctx();
        c.limit_packets = Some(4);
        let mut q = queue("bfifo", Params::new(), &c);
        for _ in 0..10 {
            q.enqueue(0, pkt(1500, 1), None);
        }
        assert_eq!(q.len_bytes(), 6000);
        q.check_conservation().unwrap();
    }
}
