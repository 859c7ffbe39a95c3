//! The run summary (deterministic: no wall-clock values).

use super::world::World;
use crate::aqm::DropReason;
use crate::time::secs;
use serde_json::{json, Map, Value};

/// Jain's fairness index of `x` (1 = equal shares; 1/n = one takes all). None if empty or all 0.
pub fn jain(x: &[f64]) -> Option<f64> {
    if x.is_empty() {
        return None;
    }
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return None;
    }
    Some(s * s / (x.len() as f64 * s2))
}

/// Percentile (nearest-rank on sorted data), q in [0, 100].
pub fn percentile(sorted: &[u32], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1] as f64)
}

fn r6(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1e6).round() / 1e6)
    } else {
        Value::Null
    }
}

impl World {
    /// Active span of a flow within the run (ns): from its start to its stop, completion or the end.
    pub fn flow_span(&self, fid: usize) -> (u64, u64) {
        let f = &self.flows[fid];
        let end = self.cfg.duration;
        let mut stop = f.stop.unwrap_or(end).min(end);
        if let Some(d) = f.done_at {
            stop = stop.min(d);
        }
        (f.start.min(end), stop.max(f.start.min(end)))
    }

    pub fn summary(&self) -> Value {
        let dur = self.cfg.duration;
        let mut flows = Vec::new();
        let mut goodputs: Vec<f64> = Vec::new();
        for (fid, f) in self.flows.iter().enumerate() {
            let (a, b) = self.flow_span(fid);
            let bytes = self.flow_bytes_received(fid);
            let gp = if b > a { bytes as f64 * 8.0 / secs(b - a) } else { 0.0 };
            if f.kind == "bulk" {
                goodputs.push(gp);
            }
            let mut m = Map::new();
            m.insert("id".into(), json!(fid));
            m.insert("name".into(), json!(f.name));
            m.insert("kind".into(), json!(f.kind));
            m.insert("src".into(), json!(self.cfg.nodes[f.src as usize].name));
            m.insert("dst".into(), json!(self.cfg.nodes[f.dst as usize].name));
            m.insert("start_s".into(), r6(secs(f.start)));
            m.insert("active_s".into(), r6(secs(b - a)));
            m.insert("bytes_received".into(), json!(bytes));
            m.insert("goodput_bps".into(), r6(gp));
            if let Some(d) = f.done_at {
                m.insert("completed_s".into(), r6(secs(d)));
            }
            self.flow_summary_extra(fid, &mut m);
            flows.push(Value::Object(m));
        }
        let mut links = Vec::new();
        // "Bottleneck packets": packets transmitted by the first monitored link (the downstream
        // bottleneck of a dumbbell, hop 0 of a chain); `monitored` adds the other monitored links.
        let bottleneck_pkts = self.links.iter().find(|l| l.monitor).map(|l| l.stats.tx_pkts).unwrap_or(0);
        let mut monitored_pkts = 0u64;
        for l in self.links.iter().filter(|l| l.monitor) {
            let q = &l.queue.stats;
            monitored_pkts += l.stats.tx_pkts;
            let cap = l.capacity_bytes(dur);
            let util = if cap > 0 { l.stats.tx_bytes as f64 / cap as f64 } else { f64::NAN };
            let mut delay = Map::new();
            if q.dequeued_pkts > 0 {
                delay.insert("mean".into(), r6(q.sojourn_sum as f64 / q.dequeued_pkts as f64 / 1e6));
            }
            if let Some(h) = &l.queue.sojourn_hist {
                for (k, p) in [("p50", 50.0), ("p95", 95.0), ("p99", 99.0)] {
                    if let Some(x) = h.quantile(p) {
                        delay.insert(k.into(), r6(x / 1e6));
                    }
                }
                if let Some(x) = h.max() {
                    delay.insert("max".into(), r6(x as f64 / 1e6));
                }
            }
            let mut drops = Map::new();
            for r in DropReason::ALL {
                let n = q.dropped_at_enqueue_pkts[r.index()] + q.dropped_later_pkts[r.index()];
                if n > 0 {
                    drops.insert(r.name().into(), json!(n));
                }
            }
            if l.stats.lost_pkts > 0 {
                drops.insert("link_loss".into(), json!(l.stats.lost_pkts));
            }
            links.push(json!({
                "name": l.name,
                "aqm": l.queue.kind,
                "rate_bps": r6(l.nominal_rate_bps()),
                "utilization": r6(util),
                "tx_packets": l.stats.tx_pkts,
                "tx_bytes": l.stats.tx_bytes,
                "queue_delay_ms": Value::Object(delay),
                "drops": Value::Object(drops),
                "dropped_packets": q.dropped_pkts() + l.stats.lost_pkts,
                "marked_packets": q.marked_pkts,
                "max_queue_packets": q.max_len_pkts,
                "max_queue_bytes": q.max_len_bytes,
            }));
        }
        let total_pkts: u64 = self.links.iter().map(|l| l.stats.tx_pkts).sum();
        let (clients, video) = self.client_summary().unwrap_or((json!([]), Value::Null));
        json!({
            "scenario": self.cfg.name,
            "seed": self.seed,
            "duration_s": r6(secs(dur)),
            "flows": flows,
            "jain_index": jain(&goodputs).map(r6).unwrap_or(Value::Null),
            "links": links,
            "clients": clients,
            "video": video,
            "packets": {"bottleneck": bottleneck_pkts, "monitored_links": monitored_pkts, "all_links": total_pkts,
                        "discarded_after_reset": self.dead_drops},
            "events": self.engine.processed(),
            "invariants": "ok",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn jain_and_percentiles() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
    }
}
