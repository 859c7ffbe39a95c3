//! FQ-CoDel (RFC 8290): flow queues classified by `pkt.hash % flows`, deficit round robin with
//! new/old flow lists, and a CoDel instance per flow ([`super::codel::CodelVars`]).

use super::codel::{CodelMode, CodelParams, CodelQueue, CodelVars};
use super::util::Limits;
use super::Item;
use super::{AqmBuildCtx, AqmEntry, DropReason, DropSink, QueueDiscipline};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{Ns, MS};
use std::collections::VecDeque;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "flows",
        unit: Unit::Int,
        default: Default::Int(1024),
        doc: "number of flow queues (RFC 8290 / Linux: 1024)",
    },
    ParamSpec {
        name: "quantum",
        unit: Unit::Bytes,
        default: Default::Int(1514),
        doc: "DRR quantum (Linux: 1514 = 1500-B MTU + 14-B Ethernet header)",
    },
    ParamSpec {
        name: "l2_overhead",
        unit: Unit::Bytes,
        default: Default::Int(0),
        doc: "bytes added to each packet's IP length when charged against the deficit (14 = Linux's L2 accounting)",
    },
    ParamSpec {
        name: "limit",
        unit: Unit::Packets,
        default: Default::Context("link buffer in packets, else 10240 (Linux fq_codel)"),
        doc: "total packets queued; above it packets are dropped from the fattest flow",
    },
    ParamSpec {
        name: "limit_bytes",
        unit: Unit::Bytes,
        default: Default::Context("link buffer in bytes, else none"),
        doc: "total bytes queued (stands in for Linux memory_limit)",
    },
    ParamSpec {
        name: "target",
        unit: Unit::Duration,
        default: Default::Int(5 * MS as i64),
        doc: "CoDel target per flow (5 ms)",
    },
    ParamSpec {
        name: "interval",
        unit: Unit::Duration,
        default: Default::Int(100 * MS as i64),
        doc: "CoDel interval per flow (100 ms)",
    },
    ParamSpec {
        name: "mtu",
        unit: Unit::Bytes,
        default: Default::Int(1500),
        doc: "CoDel MAXPACKET: no drop while at most this many bytes are queued in total",
    },
    ParamSpec {
        name: "ecn",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "CE-mark ECT packets instead of dropping (Linux fq_codel default: on)",
    },
    ParamSpec {
        name: "drop_batch",
        unit: Unit::Int,
        default: Default::Int(64),
        doc: "maximum packets dropped from the fattest flow per overflow (Linux: 64)",
    },
];

pub const FQ_CODEL: AqmEntry = AqmEntry {
    name: "fq_codel",
    summary: "flow queueing (DRR, new/old lists) with CoDel per flow",
    reference: "RFC 8290; Linux tc-fq_codel(8)",
    params: PARAMS,
    build,
};

#[derive(Default)]
struct Flow {
    q: VecDeque<Item>,
    bytes: u64,
    deficit: i64,
    cv: CodelVars,
    /// On the new or old list.
    listed: bool,
}

pub struct FqCodel {
    flows: Vec<Flow>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    quantum: i64,
    overhead: i64,
    lim: Limits,
    drop_batch: u64,
    cp: CodelParams,
    pkts: u64,
    bytes: u64,
}

fn build(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    let nflows = p.req_u64(PARAMS, "flows")?;
    if nflows == 0 || nflows > 65536 {
        return Err(perr("flows", "must be in 1..=65536"));
    }
    let quantum = p.req_u64(PARAMS, "quantum")?;
    if quantum == 0 {
        return Err(perr("quantum", "must be > 0"));
    }
    let interval = p.req_u64(PARAMS, "interval")?;
    if interval == 0 {
        return Err(perr("interval", "must be > 0"));
    }
    let lim = Limits::resolve(p.u64(PARAMS, "limit")?, p.u64(PARAMS, "limit_bytes")?, ctx, 10240);
    Ok(Box::new(FqCodel {
        flows: (0..nflows).map(|_| Flow::default()).collect(),
        new_flows: VecDeque::new(),
        old_flows: VecDeque::new(),
        quantum: quantum as i64,
        overhead: p.req_u64(PARAMS, "l2_overhead")? as i64,
        lim,
        drop_batch: p.req_u64(PARAMS, "drop_batch")?.max(1),
        cp: CodelParams {
            target: p.req_u64(PARAMS, "target")?,
            interval,
            mtu: p.req_u64(PARAMS, "mtu")?,
            ecn: p.bool(PARAMS, "ecn")?,
            mode: CodelMode::Rfc,
        },
        pkts: 0,
        bytes: 0,
    }))
}

/// One flow's queue as CoDel sees it; the 1-MTU rule looks at the whole qdisc backlog (Linux).
struct FlowView<'a> {
    q: &'a mut VecDeque<Item>,
    fbytes: &'a mut u64,
    tbytes: &'a mut u64,
    tpkts: &'a mut u64,
}

impl CodelQueue for FlowView<'_> {
    #[inline]
    fn pop(&mut self) -> Option<Item> {
        let p = self.q.pop_front()?;
        *self.fbytes -= p.size as u64;
        *self.tbytes -= p.size as u64;
        *self.tpkts -= 1;
        Some(p)
    }
    #[inline]
    fn backlog(&self) -> u64 {
        *self.tbytes
    }
}

impl FqCodel {
    /// Drop from the head of the flow with the largest byte backlog until half of its backlog
    /// is gone or `drop_batch` packets were dropped (Linux fq_codel_drop).
    fn drop_fattest(&mut self, sink: &mut DropSink) {
        let mut idx = 0;
        let mut maxb = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.bytes > maxb {
                maxb = f.bytes;
                idx = i;
            }
        }
        let threshold = maxb / 2;
        let f = &mut self.flows[idx];
        let mut len = 0;
        let mut n = 0;
        while let Some(p) = f.q.pop_front() {
            f.bytes -= p.size as u64;
            self.bytes -= p.size as u64;
            self.pkts -= 1;
            len += p.size as u64;
            n += 1;
            sink.drop_queued(p, DropReason::FqOverflow);
            if n >= self.drop_batch || len >= threshold {
                break;
            }
        }
    }
}

impl QueueDiscipline for FqCodel {
    fn enqueue(&mut self, _now: Ns, pkt: Item, sink: &mut DropSink) {
        let idx = (pkt.hash as u64 % self.flows.len() as u64) as usize;
        let f = &mut self.flows[idx];
        f.bytes += pkt.size as u64;
        f.q.push_back(pkt);
        if !f.listed {
            f.listed = true;
            f.deficit = self.quantum;
            self.new_flows.push_back(idx);
        }
        self.pkts += 1;
        self.bytes += pkt.size as u64;
        while self.pkts > self.lim.pkts || self.bytes > self.lim.bytes {
            self.drop_fattest(sink);
        }
    }

    fn dequeue(&mut self, now: Ns, sink: &mut DropSink) -> Option<Item> {
        loop {
            let (idx, from_new) = if let Some(&i) = self.new_flows.front() {
                (i, true)
            } else if let Some(&i) = self.old_flows.front() {
                (i, false)
            } else {
                return None;
            };
            let list = if from_new { &mut self.new_flows } else { &mut self.old_flows };
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                f.deficit += self.quantum;
                list.pop_front();
                self.old_flows.push_back(idx);
                continue;
            }
            let mut view =
                FlowView { q: &mut f.q, fbytes: &mut f.bytes, tbytes: &mut self.bytes, tpkts: &mut self.pkts };
            let p = f.cv.dequeue(now, &self.cp, &mut view, sink);
            match p {
                None => {
                    list.pop_front();
                    if from_new {
                        // RFC 8290 4.2: an emptied new flow goes to the end of the old list.
                        self.old_flows.push_back(idx);
                    } else {
                        f.listed = false;
                    }
                }
                Some(p) => {
                    f.deficit -= p.size as i64 + self.overhead;
                    return Some(p);
                }
            }
        }
    }

    fn len_packets(&self) -> u64 {
        self.pkts
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    /// Number of flows with packets queued.
    fn probe(&self) -> f64 {
        self.flows.iter().filter(|f| !f.q.is_empty()).count() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::super::util::testutil::*;
    use super::super::{DropReason, Queue};
    use super::*;
    use crate::time::US;

    fn fq(p: Params) -> Queue {
        queue("fq_codel", p, &ctx())
    }

    #[test]
    fn fq_sparse_flow_bypasses_backlog() {
        let mut q = fq(Params::new().with("ecn", false));
        let svc = 1200 * US;
        let mut t = 0;
        let mut sparse_soj = vec![];
        let mut bulk_soj = vec![];
        for k in 0..5000u64 {
            // bulk flow (hash 1) kept at >= 100 packets
            while q.len_packets() < 100 {
                q.enqueue(t, pkt(1500, 1), None);
            }
            if k % 40 == 20 {
                // sparse flow (hash 2): one packet every 48 ms, arriving mid-slot
                q.enqueue(t + svc / 2, pkt(200, 2), None);
            }
            t += svc;
            let p = q.dequeue(t, None).unwrap();
            let s = t - p.enq_at;
            if p.hash == 2 {
                sparse_soj.push(s);
            } else {
                bulk_soj.push(s);
            }
        }
        let smax = *sparse_soj.iter().max().unwrap();
        let bmean = bulk_soj.iter().sum::<u64>() / bulk_soj.len() as u64;
        eprintln!(
            "fq sparse n {} max sojourn {} us; bulk mean {} ms",
            sparse_soj.len(),
            smax / 1000,
            bmean / 1_000_000
        );
        assert_eq!(sparse_soj.len(), 125);
        assert!(smax <= svc / 2, "{smax}");
        assert!(bmean > 50 * MS);
        q.check_conservation().unwrap();
    }

    /// Bytes delivered per flow with every flow kept backlogged (>= 30 packets queued).
    fn shares(sizes: &[u32], deq: usize) -> Vec<u64> {
        let mut q = fq(Params::new().with("target", 10_000 * MS));
        let mut got = vec![0u64; sizes.len()];
        let mut queued = vec![0u64; sizes.len()];
        let mut t = 0;
        for _ in 0..deq {
            for (i, &s) in sizes.iter().enumerate() {
                while queued[i] < 30 {
                    q.enqueue(t, pkt(s, i as u32 + 10), None);
                    queued[i] += 1;
                }
            }
            t += 10 * US;
            let p = q.dequeue(t, None).unwrap();
            let i = (p.hash - 10) as usize;
            got[i] += p.size as u64;
            queued[i] -= 1;
        }
        assert_eq!(q.stats.dropped_pkts(), 0);
        q.check_conservation().unwrap();
        got
    }

    fn check_equal(got: &[u64]) -> f64 {
        let mean = got.iter().sum::<u64>() as f64 / got.len() as f64;
        got.iter().map(|&g| (g as f64 - mean).abs() / mean).fold(0.0, f64::max)
    }

    #[test]
    fn fq_equal_byte_shares() {
        let eq = shares(&[1500, 1500, 1500, 1500], 40_000);
        let dev_eq = check_equal(&eq);
        let uneq = shares(&[1500, 1000, 576, 64], 60_000);
        let dev_uneq = check_equal(&uneq);
        eprintln!("fq shares equal {eq:?} dev {dev_eq}; unequal {uneq:?} dev {dev_uneq}");
        assert!(dev_eq < 0.01, "{eq:?}");
        assert!(dev_uneq < 0.01, "{uneq:?}");
    }

    #[test]
    fn fq_overflow_drops_from_fattest_flow() {
        let mut q = fq(Params::new().with("limit", 100));
        for _ in 0..80 {
            q.enqueue(0, pkt(1500, 1), None);
        }
        for _ in 0..20 {
            q.enqueue(0, pkt(1500, 2), None);
        }
        let mut d = vec![];
        q.enqueue(0, pkt(1500, 2), Some(&mut d));
        // flow 1 is fattest (120000 B): drop until >= 60000 B gone -> 40 packets
        assert_eq!(d.len(), 40);
        assert!(d.iter().all(|x| x.pkt.hash == 1 && x.reason == DropReason::FqOverflow && x.was_queued));
        assert_eq!(q.len_packets(), 61);
        d.clear();
        // now flows hold 40 / 21: an arrival to flow 1 at 101... fill to the limit first
        for _ in 0..39 {
            q.enqueue(0, pkt(1500, 2), None);
        }
        assert_eq!(q.len_packets(), 100);
        q.enqueue(0, pkt(1500, 1), Some(&mut d));
        // flow 2 (60 pkts = 90000 B) is now the fattest: 30 packets
        assert_eq!(d.len(), 30);
        assert!(d.iter().all(|x| x.pkt.hash == 2));
        q.check_conservation().unwrap();
        // drop_batch caps one overflow at 64 packets
        let mut q = fq(Params::new().with("limit", 200));
        for _ in 0..200 {
            q.enqueue(0, pkt(1500, 1), None);
        }
        let mut d = vec![];
        q.enqueue(0, pkt(1500, 1), Some(&mut d));
        assert_eq!(d.len(), 64);
        q.check_conservation().unwrap();
    }

    #[test]
    fn fq_single_flow_is_codel() {
        // Same loop as the CoDel test: prefill 1000 at t=0, one in / one out every 10 us.
        let mut q = fq(Params::new().with("ecn", false));
        let mut drops = vec![];
        for _ in 0..1000 {
            q.enqueue(0, pkt(1500, 5), None);
        }
        let mut t = 0;
        while t < 400 * MS {
            t += 10 * US;
            q.enqueue(t, pkt(1500, 5), None);
            let mut d = vec![];
            q.dequeue(t, Some(&mut d));
            drops.extend(d.iter().map(|_| t));
        }
        assert_eq!(&drops[..4], &[105 * MS, 205 * MS, 275_720 * US, 333_450 * US]);
        q.check_conservation().unwrap();
        // ECN on (default): ECT packets are marked, none dropped
        let mut q = fq(Params::new());
        for _ in 0..1000 {
            q.enqueue(0, ect(1500, 5), None);
        }
        let mut t = 0;
        while t < 400 * MS {
            t += 10 * US;
            q.enqueue(t, ect(1500, 5), None);
            q.dequeue(t, None);
        }
        assert_eq!(q.stats.dropped_pkts(), 0);
        // marks at 105, 205, 275.7, 333.4 and 383.4 ms
        assert_eq!(q.stats.marked_pkts, 5);
    }

    #[test]
    fn fq_quantum_and_l2_overhead() {
        // With 14 B of L2 overhead, 1500-B packets use exactly one 1514-B quantum: strict ABAB.
        let run = |overhead: u64| {
            let mut q = fq(Params::new().with("l2_overhead", overhead).with("target", 10_000 * MS));
            for _ in 0..3000 {
                q.enqueue(0, pkt(1500, 1), None);
                q.enqueue(0, pkt(1500, 2), None);
            }
            let seq: Vec<u32> = (0..4000).map(|k| q.dequeue(k, None).unwrap().hash).collect();
            seq.windows(2).filter(|w| w[0] == w[1]).count()
        };
        assert_eq!(run(14), 0);
        // Without it, each flow banks 14 B per round and sends two packets in a row every
        // ~107 rounds.
        let repeats = run(0);
        eprintln!("fq repeats without overhead: {repeats}");
        assert!(repeats > 10 && repeats < 60, "{repeats}");
    }

    #[test]
    fn fq_new_flow_served_first_and_emptied_new_flow_goes_old() {
        let mut q = fq(Params::new());
        for _ in 0..10 {
            q.enqueue(0, pkt(1500, 1), None);
        }
        // flow 1 is new: it is served until its deficit is used, then moves to old
        assert_eq!(q.dequeue(1, None).unwrap().hash, 1);
        q.enqueue(2, pkt(100, 2), None); // new flow 2
        assert_eq!(q.dequeue(3, None).unwrap().hash, 1); // flow 1 still has 14 B deficit (new list head)
        assert_eq!(q.dequeue(4, None).unwrap().hash, 2); // flow 1 rotated to old; new flow 2 first
        assert_eq!(q.dequeue(5, None).unwrap().hash, 1);
        q.check_conservation().unwrap();
    }
}
