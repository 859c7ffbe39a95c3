//! drophead: FIFO that accepts every arrival and then drops from the head until the queue is
//! within its limits (Mahimahi `drophead`; Linux `pfifo_head_drop` when limited in packets only).
//! The queue is [`super::util::LimitedFifo`] in its head-drop policy.

use super::util::{LimitedFifo, Limits, WhenFull, LINUX_TXQUEUELEN};
use super::{AqmBuildCtx, AqmEntry, QueueDiscipline};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "limit",
        unit: Unit::Packets,
        default: Default::Context("link buffer in packets; if neither limit is set anywhere, 1000 (Linux txqueuelen)"),
        doc: "maximum packets queued (0 = no packet limit)",
    },
    ParamSpec {
        name: "limit_bytes",
        unit: Unit::Bytes,
        default: Default::Context("link buffer in bytes"),
        doc: "maximum bytes (IP length) queued (0 = no byte limit)",
    },
];

pub const DROPHEAD: AqmEntry = AqmEntry {
    name: "drophead",
    summary: "FIFO dropping from the head when full (limit in packets and/or bytes)",
    reference: "Linux tc-pfifo_head_drop; Mahimahi drop_head_packet_queue",
    params: PARAMS,
    build,
};

fn build(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    // Explicit parameters win as a pair; otherwise the link's buffer; otherwise Linux's 1000 pkts.
    // 0 = unlimited in that dimension (Mahimahi convention).
    let lim = Limits::resolve(p.u64(PARAMS, "limit")?, p.u64(PARAMS, "limit_bytes")?, ctx, LINUX_TXQUEUELEN);
    if lim.is_unlimited() {
        return Err(crate::params::perr("limit", "drophead needs a packet or byte limit"));
    }
    Ok(Box::new(LimitedFifo::new(lim, WhenFull::DropHead)))
}

#[cfg(test)]
mod tests {
    use super::super::util::testutil::*;
    use super::super::DropReason;
    use crate::params::Params;

    #[test]
    fn drophead_packet_limit_keeps_newest() {
        let mut q = queue("drophead", Params::new().with("limit", 5), &ctx());
        let mut dropped = Vec::new();
        for i in 0..12u32 {
            let mut p = pkt(1000, 1);
            p.handle = (i as u64) as u32;
            q.enqueue(i as u64, p, Some(&mut dropped));
        }
        assert_eq!(q.len_packets(), 5);
        assert_eq!(dropped.len(), 7);
        assert!(dropped.iter().all(|d| d.was_queued && d.reason == DropReason::HeadDrop));
        let seqs: Vec<u64> = dropped.iter().map(|d| d.pkt.handle as u64).collect();
        assert_eq!(seqs, (0..7).collect::<Vec<u64>>());
        assert_eq!(q.dequeue(20, None).unwrap().handle, 7);
        q.check_conservation().unwrap();
        assert_eq!(q.stats.dropped_later_pkts[DropReason::HeadDrop.index()], 7);
    }

    #[test]
    fn drophead_byte_limit_exact() {
        let mut q = queue("drophead", Params::new().with("limit_bytes", 4000), &ctx());
        for _ in 0..3 {
            q.enqueue(0, pkt(1500, 1), None); // 1500, 3000, 4500 -> drop head -> 3000
        }
        assert_eq!((q.len_packets(), q.len_bytes()), (2, 3000));
        q.enqueue(0, pkt(1000, 1), None); // 4000: fits exactly
        assert_eq!((q.len_packets(), q.len_bytes()), (3, 4000));
        q.enqueue(0, pkt(100, 1), None); // 4100 -> drop one 1500 head -> 2600
        assert_eq!((q.len_packets(), q.len_bytes()), (3, 2600));
        assert_eq!(q.stats.dropped_pkts(), 2);
        assert_eq!(q.stats.dropped_bytes(), 3000);
        q.check_conservation().unwrap();
    }

    #[test]
    fn drophead_both_limits() {
        let mut q = queue("drophead", Params::new().with("limit", 3).with("limit_bytes", 100_000), &ctx());
        for _ in 0..5 {
            q.enqueue(0, pkt(100, 1), None);
        }
        assert_eq!(q.len_packets(), 3);
        q.check_conservation().unwrap();
    }
}
