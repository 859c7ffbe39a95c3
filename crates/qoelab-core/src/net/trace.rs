//! Trace-driven link service.
//!
//! Two normalized forms (the Python front parses the file formats into these):
//! * **Opportunities** (Mahimahi): sorted delivery-opportunity times within a period that repeats
//!   (wrap-around); each opportunity can carry `bytes_per_opportunity` bytes (1504 in Mahimahi's
//!   code). Byte-level accounting: a packet may span opportunities, several small packets may
//!   share one; bytes of an opportunity that finds the queue empty are wasted.
//! * **Rates**: a piecewise-constant rate schedule `(duration, rate)` that loops (Sabre network
//!   JSON, Pensieve "time Mbit/s", VOXEL "second bytes"). Packets are serialized at the rate in
//!   force, integrated across segment boundaries. Per-segment latency values of Sabre traces are
//!   not applied in packet mode (the topology's propagation delays are).

use crate::time::{Ns, SEC};
use serde::Deserialize;

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum TraceCfg {
    Opportunities {
        period_ns: Ns,
        times_ns: Vec<Ns>,
        #[serde(default = "mm_bytes")]
        bytes_per_opportunity: u64,
        /// Play the trace once (Mahimahi `--once`): no opportunities after the period.
        #[serde(default)]
        once: bool,
    },
    Rates {
        /// `(duration_ns, rate_bps, latency_ns)`; the latency is ignored in packet mode.
        segments: Vec<(Ns, u64, Ns)>,
        #[serde(default = "yes", rename = "loop")]
        looping: bool,
    },
}

fn mm_bytes() -> u64 {
    1504
}
fn yes() -> bool {
    true
}

impl TraceCfg {
    pub fn validate(&self) -> Result<(), String> {
        match self {
            TraceCfg::Opportunities { period_ns, times_ns, bytes_per_opportunity, .. } => {
                if *period_ns == 0 {
                    return Err("period_ns: expected > 0".into());
                }
                if times_ns.is_empty() {
                    return Err("times_ns: expected at least one opportunity".into());
                }
                if times_ns.windows(2).any(|w| w[0] > w[1]) || *times_ns.last().unwrap() > *period_ns {
                    return Err("times_ns: expected non-decreasing times within the period".into());
                }
                if *bytes_per_opportunity == 0 {
                    return Err("bytes_per_opportunity: expected > 0".into());
                }
            }
            TraceCfg::Rates { segments, .. } => {
                if segments.is_empty() {
                    return Err("segments: expected at least one (duration, rate) segment".into());
                }
                if segments.iter().any(|s| s.0 == 0) {
                    return Err("segments: expected durations > 0".into());
                }
                if segments.iter().all(|s| s.1 == 0) {
                    return Err("segments: expected at least one non-zero rate".into());
                }
            }
        }
        Ok(())
    }
}

/// Mahimahi-style opportunity schedule.
#[derive(Clone, Debug)]
pub struct Opportunities {
    pub period: Ns,
    pub times: Vec<Ns>,
    pub bytes_per_opp: u64,
    pub once: bool,
}

impl Opportunities {
    /// The first opportunity at or after `t`, or None if the trace is over (`once`).
    ///
    /// Opportunity instants are `{c * period + x : x in times, c >= 0}` (only c = 0 with
    /// `once`); a timestamp equal to the period therefore falls on the next cycle's start.
    pub fn next_at_or_after(&self, t: Ns) -> Option<Ns> {
        let cycle = t / self.period;
        let off = t - cycle * self.period;
        if off == 0 && cycle >= 1 && *self.times.last().unwrap() == self.period && (!self.once || cycle == 1) {
            return Some(t);
        }
        if self.once && cycle > 0 {
            return None;
        }
        let i = self.times.partition_point(|&x| x < off);
        if i < self.times.len() {
            Some(cycle * self.period + self.times[i])
        } else if self.once {
            None
        } else {
            Some((cycle + 1) * self.period + self.times[0])
        }
    }
    /// The opportunity strictly after `t`.
    pub fn next_after(&self, t: Ns) -> Option<Ns> {
        // Opportunities can repeat (several in the same ms): the caller serves them one by one
        // via `count_at`.
        self.next_at_or_after(t + 1)
    }
    /// Number of opportunities at exactly time `t` (repeated timestamps).
    pub fn count_at(&self, t: Ns) -> u64 {
        let off = t % self.period;
        let lo = self.times.partition_point(|&x| x < off);
        let hi = self.times.partition_point(|&x| x <= off);
        let mut n = (hi - lo) as u64;
        // A timestamp equal to the period is the same instant as offset 0 of the next cycle.
        if off == 0 && t > 0 {
            n += self.times.iter().rev().take_while(|&&x| x == self.period).count() as u64;
        }
        n
    }
    /// Capacity (bytes) offered in [0, t).
    pub fn capacity_bytes(&self, t: Ns) -> u64 {
        let cycles = t / self.period;
        let last = if self.once { 0 } else { cycles };
        let mut n = 0u64;
        for c in 0..=last {
            let lim = t - c * self.period; // t >= c * period here
            n += self.times.partition_point(|&x| x < lim) as u64;
        }
        n * self.bytes_per_opp
    }
}

/// Piecewise-constant rate schedule.
#[derive(Clone, Debug)]
pub struct RateSchedule {
    /// (start offset within the period, rate bit/s)
    pub starts: Vec<(Ns, u64)>,
    pub period: Ns,
    pub looping: bool,
}

impl RateSchedule {
    pub fn new(segments: &[(Ns, u64, Ns)], looping: bool) -> RateSchedule {
        let mut t = 0;
        let mut starts = Vec::with_capacity(segments.len());
        for s in segments {
            starts.push((t, s.1));
            t += s.0;
        }
        RateSchedule { starts, period: t, looping }
    }
    /// Rate in force at time t and the time the current segment ends.
    pub fn rate_at(&self, t: Ns) -> (u64, Ns) {
        let cycle = t / self.period;
        if !self.looping && cycle > 0 {
            let last = self.starts.last().unwrap().1;
            return (last, Ns::MAX);
        }
        let off = t % self.period;
        let i = self.starts.partition_point(|s| s.0 <= off) - 1;
        let end = if i + 1 < self.starts.len() { self.starts[i + 1].0 } else { self.period };
        (self.starts[i].1, cycle * self.period + end)
    }
    /// When a transmission of `bytes` starting at `t` finishes (integrating across segments).
    /// Returns None if it never finishes (zero rate forever).
    pub fn finish_time(&self, t: Ns, bytes: u64) -> Option<Ns> {
        let mut remaining_bits: u128 = bytes as u128 * 8 * SEC as u128; // bit*ns units
        let mut now = t;
        for _ in 0..(4 * self.starts.len() + 4) * 1000 {
            let (rate, end) = self.rate_at(now);
            let span = end.saturating_sub(now);
            let can = rate as u128 * span as u128;
            if rate > 0 && can >= remaining_bits {
                return Some(now + remaining_bits.div_ceil(rate as u128) as Ns);
            }
            if end == Ns::MAX {
                return None;
            }
            remaining_bits -= can;
            now = end;
        }
        None
    }
    /// Capacity (bytes) offered in [0, t).
    pub fn capacity_bytes(&self, t: Ns) -> u64 {
        let mut bits: u128 = 0;
        let mut now = 0;
        while now < t {
            let (rate, end) = self.rate_at(now);
            let e = end.min(t);
            bits += rate as u128 * (e - now) as u128;
            now = e;
        }
        (bits / 8 / SEC as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;
    #[test]
    fn opportunities_wrap() {
        let o = Opportunities {
            period: 10 * MS,
            times: vec![2 * MS, 2 * MS, 7 * MS, 10 * MS],
            bytes_per_opp: 1504,
            once: false,
        };
        assert_eq!(o.next_at_or_after(0), Some(2 * MS));
        assert_eq!(o.count_at(2 * MS), 2);
        assert_eq!(o.next_after(2 * MS), Some(7 * MS));
        assert_eq!(o.next_after(7 * MS), Some(10 * MS));
        // 10 ms: the last timestamp of cycle 0 (= offset 0 of cycle 1)
        assert_eq!(o.count_at(10 * MS), 1);
        assert_eq!(o.next_after(10 * MS), Some(12 * MS));
        assert_eq!(o.capacity_bytes(10 * MS), 3 * 1504);
        assert_eq!(o.capacity_bytes(20 * MS + 1), 8 * 1504);
        let once = Opportunities { once: true, ..o };
        assert_eq!(once.next_after(10 * MS), None);
    }
    #[test]
    fn rate_schedule_integrates() {
        // 1 s at 8 kbit/s (1000 B/s) then 1 s at 16 kbit/s, looping
        let r = RateSchedule::new(&[(SEC, 8_000, 0), (SEC, 16_000, 0)], true);
        assert_eq!(r.finish_time(0, 500), Some(SEC / 2));
        // start at 0.5 s: 500 B in the first segment, 1000 B more at 2000 B/s = 0.5 s
        assert_eq!(r.finish_time(SEC / 2, 1500), Some(SEC + SEC / 2));
        // loops: at 2.25 s we are in segment 0 again
        assert_eq!(r.rate_at(2 * SEC + SEC / 4).0, 8_000);
        assert_eq!(r.capacity_bytes(2 * SEC), 3000);
        let z = RateSchedule::new(&[(SEC, 0, 0)], false);
        assert_eq!(z.finish_time(0, 1), None);
    }
}
