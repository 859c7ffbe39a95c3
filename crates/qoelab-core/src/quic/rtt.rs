//! RTT estimation of RFC 9002 section 5: min_rtt, smoothed_rtt, rttvar and the peer's ack_delay.
//!
//! Unlike RFC 6298 ([`crate::cc::rtt`]) the sample is corrected by the ACK delay the receiver
//! reports (capped at max_ack_delay once the handshake is confirmed) when that does not take it
//! below min_rtt, min_rtt itself is never corrected, and there is no RTO: the PTO is computed
//! by [`super::recovery`] from [`QuicRtt::pto_base`].

use super::config::{GRANULARITY, INITIAL_RTT};
use crate::time::Ns;

#[derive(Clone, Debug)]
pub struct QuicRtt {
    latest: Ns,
    min: Ns,
    smoothed: Ns,
    rttvar: Ns,
    has_sample: bool,
}

impl Default for QuicRtt {
    fn default() -> Self {
        Self::new(INITIAL_RTT)
    }
}

impl QuicRtt {
    /// Before any sample: smoothed_rtt = initial_rtt, rttvar = initial_rtt / 2 (5.3).
    pub fn new(initial_rtt: Ns) -> Self {
        QuicRtt { latest: 0, min: 0, smoothed: initial_rtt, rttvar: initial_rtt / 2, has_sample: false }
    }

    /// Take a sample `latest` (ns from sending the largest newly acknowledged packet to its
    /// ACK) with the ACK frame's `ack_delay`.
    pub fn on_sample(&mut self, latest: Ns, ack_delay: Ns, max_ack_delay: Ns, handshake_confirmed: bool) {
        self.latest = latest;
        if !self.has_sample {
            self.has_sample = true;
            self.min = latest;
            self.smoothed = latest;
            self.rttvar = latest / 2;
            return;
        }
        self.min = self.min.min(latest);
        let ack_delay = if handshake_confirmed { ack_delay.min(max_ack_delay) } else { ack_delay };
        let adjusted = if latest >= self.min.saturating_add(ack_delay) { latest - ack_delay } else { latest };
        self.rttvar = (3 * self.rttvar + self.smoothed.abs_diff(adjusted)) / 4;
        self.smoothed = (7 * self.smoothed + adjusted) / 8;
    }

    /// smoothed_rtt + max(4 rttvar, kGranularity) + `max_ack_delay` (the PTO before backoff).
    pub fn pto_base(&self, max_ack_delay: Ns) -> Ns {
        self.smoothed + (4 * self.rttvar).max(GRANULARITY) + max_ack_delay
    }

    pub fn has_sample(&self) -> bool {
        self.has_sample
    }
    pub fn latest(&self) -> Ns {
        self.latest
    }
    /// min_rtt (0 before the first sample).
    pub fn min_rtt(&self) -> Ns {
        self.min
    }
    pub fn smoothed(&self) -> Ns {
        self.smoothed
    }
    pub fn rttvar(&self) -> Ns {
        self.rttvar
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn rfc9002_rtt_update_with_ack_delay() {
        let mut r = QuicRtt::default();
        // before a sample: 333 ms, rttvar 166.5 ms -> PTO 333 + 666 = 999 ms (no max_ack_delay)
        assert_eq!(r.pto_base(0), 999 * MS);
        r.on_sample(100 * MS, 7 * MS, 25 * MS, true);
        // first sample: ack_delay ignored
        assert_eq!((r.min_rtt(), r.smoothed(), r.rttvar()), (100 * MS, 100 * MS, 50 * MS));
        // 130 ms with 20 ms delay: 130 >= 100 + 20 -> adjusted 110;
        // rttvar = 3/4 50 + 1/4 |100 - 110| = 40; srtt = 7/8 100 + 1/8 110 = 101.25
        r.on_sample(130 * MS, 20 * MS, 25 * MS, true);
        assert_eq!(r.rttvar(), 40 * MS);
        assert_eq!(r.smoothed(), 101_250_000);
        assert_eq!(r.latest(), 130 * MS);
        // 105 ms with 10 ms delay: 105 < 100 + 10 -> not adjusted (min_rtt floor)
        // rttvar = 30 + 1/4 * 3.75 = 30.9375; srtt = (7 * 101.25 + 105) / 8 = 101.71875
        r.on_sample(105 * MS, 10 * MS, 25 * MS, true);
        assert_eq!(r.rttvar(), 30_937_500);
        assert_eq!(r.smoothed(), 101_718_750);
        // ack_delay above max_ack_delay is capped once confirmed: 200 - 25 = 175
        let mut a = QuicRtt::default();
        a.on_sample(100 * MS, 0, 25 * MS, true);
        a.on_sample(200 * MS, 80 * MS, 25 * MS, true);
        assert_eq!(a.smoothed(), (700 * MS + 175 * MS) / 8);
        // ... but not before the handshake is confirmed: 200 - 80 = 120
        let mut b = QuicRtt::default();
        b.on_sample(100 * MS, 0, 25 * MS, false);
        b.on_sample(200 * MS, 80 * MS, 25 * MS, false);
        assert_eq!(b.smoothed(), (700 * MS + 120 * MS) / 8);
        // min_rtt never takes the delay off
        assert_eq!(b.min_rtt(), 100 * MS);
        // PTO base: srtt + max(4 rttvar, 1 ms) + max_ack_delay
        let mut c = QuicRtt::default();
        for _ in 0..300 {
            c.on_sample(40 * MS, 0, 25 * MS, true);
        }
        assert_eq!(c.rttvar(), 0);
        assert_eq!(c.pto_base(25 * MS), 40 * MS + GRANULARITY + 25 * MS);
    }
}
