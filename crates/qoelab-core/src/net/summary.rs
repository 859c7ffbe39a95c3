//! The packet driver's part of the run summary: flows, monitored links, packet counts, and the
//! clients through the driver-neutral [`crate::report`] functions.

use super::link::Link;
use super::world::World;
use crate::aqm::DropReason;
use crate::ids::{FlowId, Id};
use crate::report::summary::{r6, FlowSummary, LinkSummary, PacketCounts, QueueDelay, Summary};
use crate::time::secs;

/// Jain's fairness index of `x` ([`crate::metrics::jain`]); None if empty or all 0 (where the
/// metrics' version reports 1).
pub fn jain(x: &[f64]) -> Option<f64> {
    x.iter().any(|v| *v != 0.0).then(|| crate::metrics::jain(x))
}

/// Queueing delay of a queue (ms): mean (exact) and percentiles (from the sojourn histogram).
pub fn queue_delay(q: &crate::aqm::Queue) -> QueueDelay {
    let mut d = QueueDelay::default();
    if q.stats.dequeued_pkts > 0 {
        d.mean = r6(q.stats.sojourn_sum as f64 / q.stats.dequeued_pkts as f64 / 1e6);
    }
    if let Some(h) = &q.sojourn_hist {
        d.p50 = h.quantile(50.0).and_then(|x| r6(x / 1e6));
        d.p95 = h.quantile(95.0).and_then(|x| r6(x / 1e6));
        d.p99 = h.quantile(99.0).and_then(|x| r6(x / 1e6));
        d.max = h.max().and_then(|x| r6(x as f64 / 1e6));
    }
    d
}

/// The summary of a monitored link after `dur` ns, whatever drives it (the packet simulator or
/// the real-network emulator).
pub fn link_summary<P>(l: &Link<P>, dur: u64) -> LinkSummary {
    let q = &l.queue.stats;
    let cap = l.capacity_bytes(dur);
    let util = if cap > 0 { l.stats.tx_bytes as f64 / cap as f64 } else { f64::NAN };
    let mut drops = std::collections::BTreeMap::new();
    for r in DropReason::ALL {
        let n = q.dropped_at_enqueue_pkts[r.index()] + q.dropped_later_pkts[r.index()];
        if n > 0 {
            drops.insert(r.name(), n);
        }
    }
    if l.stats.lost_pkts > 0 {
        drops.insert("link_loss", l.stats.lost_pkts);
    }
    LinkSummary {
        name: l.name.clone(),
        aqm: l.queue.kind,
        rate_bps: r6(l.nominal_rate_bps()),
        utilization: r6(util),
        tx_packets: l.stats.tx_pkts,
        tx_bytes: l.stats.tx_bytes,
        queue_delay_ms: queue_delay(&l.queue),
        drops,
        dropped_packets: q.dropped_pkts() + l.stats.lost_pkts,
        marked_packets: q.marked_pkts,
        max_queue_packets: q.max_len_pkts,
        max_queue_bytes: q.max_len_bytes,
        fq_collisions: l.queue.flow_collisions(),
    }
}

impl World {
    /// Active span of a flow within the run (ns): from its start to its stop, completion, reset (the
    /// client closing its connection; it ran to the end of the run before) or the end.
    pub fn flow_span(&self, fid: FlowId) -> (u64, u64) {
        let f = &self.flows[fid];
        let end = self.cfg.duration;
        let mut stop = f.stop.unwrap_or(end).min(end);
        for t in [f.done_at, f.closed_at].into_iter().flatten() {
            stop = stop.min(t);
        }
        (f.start.min(end), stop.max(f.start.min(end)))
    }

    /// The typed run summary; `config_hash` identifies the configuration.
    pub fn summary(&self, config_hash: String) -> Summary {
        let dur = self.cfg.duration;
        let mut out = Summary::new(&self.cfg.network, &self.cfg.name, self.seed, dur, config_hash);
        let mut goodputs: Vec<f64> = Vec::new();
        for (fid, f) in self.flows.iter_enumerated() {
            let (a, b) = self.flow_span(fid);
            let bytes = self.flow_bytes_received(fid);
            let gp = if b > a { bytes as f64 * 8.0 / secs(b - a) } else { 0.0 };
            // a bulk flow that was never active (it starts at or after the end) does not compete
            if f.kind == "bulk" && b > a {
                goodputs.push(gp);
            }
            out.flows.push(FlowSummary {
                id: fid.index(),
                name: f.name.clone(),
                kind: f.kind,
                src: self.cfg.nodes[f.src.index()].name.clone(),
                dst: self.cfg.nodes[f.dst.index()].name.clone(),
                start_s: r6(secs(f.start)),
                active_s: r6(secs(b - a)),
                bytes_received: bytes,
                goodput_bps: r6(gp),
                completed_s: f.done_at.and_then(|d| r6(secs(d))),
                size_bytes: f.size,
                tcp: self.tcp_flow_summary(fid),
            });
        }
        out.jain_index = jain(&goodputs).and_then(r6);
        let mut monitored_pkts = 0u64;
        for l in self.links.iter().filter(|l| l.monitor) {
            monitored_pkts += l.stats.tx_pkts;
            out.links.push(link_summary(&l.link, dur));
        }
        out.packets = PacketCounts {
            bottleneck: self.links.iter().find(|l| l.monitor).map(|l| l.stats.tx_pkts).unwrap_or(0),
            monitored_links: monitored_pkts,
            all_links: self.links.iter().map(|l| l.stats.tx_pkts).sum(),
            discarded_after_reset: self.dead_drops,
        };
        let (clients, video) = crate::report::client_summaries(&self.client_reports());
        out.clients = clients;
        self.provider_summaries(&mut out.clients);
        out.video = video;
        out.pages = self.page_summaries();
        out.events = self.engine.processed();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn jain_index() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
    }
}
