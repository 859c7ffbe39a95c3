//! Packet pacing mechanics (the sender side of Linux's `sk_pacing_rate` + sch_fq / internal TCP
//! pacing): after a packet of `size` bytes is released at `now`, the next one may leave at
//! `max(next, now) + size * 8 / rate`. No credit accumulates while idle.

use crate::time::{tx_time, Ns};

#[derive(Clone, Debug, Default)]
pub struct Pacer {
    next_send: Ns,
}

impl Pacer {
    pub fn new() -> Self {
        Self::default()
    }
    /// Earliest time the next packet may leave.
    pub fn next_send(&self) -> Ns {
        self.next_send
    }
    pub fn may_send(&self, now: Ns) -> bool {
        now >= self.next_send
    }
    /// A packet of `size` bytes left at `now` under pacing rate `rate_bps` (None: not paced).
    pub fn on_sent(&mut self, now: Ns, size: u64, rate_bps: Option<u64>) {
        match rate_bps {
            Some(r) if r > 0 => self.next_send = self.next_send.max(now) + tx_time(size, r),
            _ => self.next_send = now,
        }
    }
}

/// Linux `tcp_update_pacing_rate`: `ratio * cwnd / srtt` in bits/s, with the slow-start ratio while
/// `cwnd < ssthresh / 2` (Linux's test) and the congestion-avoidance ratio otherwise.
pub fn rate_from_cwnd(cwnd: u64, ssthresh: u64, srtt: Ns, ss_ratio: f64, ca_ratio: f64) -> Option<u64> {
    if srtt == 0 {
        return None;
    }
    let ratio = if cwnd < ssthresh / 2 { ss_ratio } else { ca_ratio };
    let bps = cwnd as f64 * 8.0 * 1e9 / srtt as f64 * ratio;
    Some(bps.max(1.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;
    #[test]
    fn pacing_spacing_and_rate() {
        let mut p = Pacer::new();
        p.on_sent(0, 1500, Some(12_000_000)); // 1 ms per 1500 B
        assert_eq!(p.next_send(), MS);
        assert!(!p.may_send(MS - 1));
        p.on_sent(MS, 1500, Some(12_000_000));
        assert_eq!(p.next_send(), 2 * MS);
        // idle: no credit
        p.on_sent(10 * MS, 1500, Some(12_000_000));
        assert_eq!(p.next_send(), 11 * MS);
        // 10 segments of 1448 B in 20 ms, CA ratio 1.2
        let r = rate_from_cwnd(14480, 10_000, 20 * MS, 2.0, 1.2).unwrap();
        assert_eq!(r, (14480.0 * 8.0 / 0.02 * 1.2) as u64);
        let r = rate_from_cwnd(14480, u64::MAX, 20 * MS, 2.0, 1.2).unwrap();
        assert_eq!(r, (14480.0 * 8.0 / 0.02 * 2.0) as u64);
    }
}
