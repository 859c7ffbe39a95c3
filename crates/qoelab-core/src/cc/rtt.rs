//! RTT estimation and the retransmission timeout (RFC 6298).

use crate::time::{Ns, MS};

/// Clock granularity G of RFC 6298 (Linux jiffies at HZ=1000).
pub const CLOCK_GRANULARITY: Ns = MS;

/// RFC 6298 estimator: srtt, rttvar, RTO with bounds and exponential backoff; all-time min RTT.
///
/// Optional Linux mode (`tcp_rtt_estimator` / `__tcp_set_rto`): `RTO = srtt + rttvar4` where
/// `rttvar4` (in units of 4 x mean deviation) follows the largest `4 * mdev` of the current window of
/// data but never below `min_rto`, and decays by a quarter per window towards it; decreases of the
/// RTT enter `mdev` with weight 1/32 instead of 1/4. For small RTTs this gives `RTO ~ srtt +
/// min_rto` instead of `max(min_rto, srtt + 4 rttvar)`.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    linux: bool,
    /// Linux: 4 x mean deviation, its maximum over the current window, and the RTO variance term.
    mdev4: i128,
    mdev_max4: i128,
    rttvar4: i128,
    srtt: Option<Ns>,
    rttvar: Ns,
    min_rtt: Option<Ns>,
    latest: Option<Ns>,
    /// RTO before backoff.
    base_rto: Ns,
    backoff: u32,
    min_rto: Ns,
    max_rto: Ns,
    /// Added to the computed RTO before the upper bound (FreeBSD `tcp_rexmit_slop`).
    slop: Ns,
}

impl RttEstimator {
    pub fn new(initial_rto: Ns, min_rto: Ns, max_rto: Ns) -> Self {
        RttEstimator {
            linux: false,
            mdev4: 0,
            mdev_max4: 0,
            rttvar4: 0,
            srtt: None,
            rttvar: 0,
            min_rtt: None,
            latest: None,
            base_rto: initial_rto.min(max_rto),
            backoff: 0,
            min_rto,
            max_rto,
            slop: 0,
        }
    }

    /// Add `slop` to every computed RTO (FreeBSD `TCPT_RANGESET`: RTO = max(min_rto, srtt + 4
    /// rttvar) + `net.inet.tcp.rexmit_slop`), bounded by max_rto. Not to the initial RTO.
    pub fn with_slop(mut self, slop: Ns) -> Self {
        self.slop = slop;
        self
    }

    /// Linux-style RTO (see the type's docs).
    pub fn new_linux(initial_rto: Ns, min_rto: Ns, max_rto: Ns) -> Self {
        RttEstimator { linux: true, ..Self::new(initial_rto, min_rto, max_rto) }
    }

    /// Linux mode: take a sample; `new_window` is true when SND.UNA passed the end of the window
    /// that was outstanding at the previous window start (Linux `rtt_seq`).
    pub fn on_sample_windowed(&mut self, r: Ns, new_window: bool) {
        if !self.linux {
            return self.on_sample(r);
        }
        let m = r as i128;
        let min_rto = self.min_rto as i128;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.mdev4 = 2 * m;
                self.mdev_max4 = self.mdev4.max(min_rto);
                self.rttvar4 = self.mdev_max4;
                self.rttvar = r / 2;
            }
            Some(s) => {
                let err = m - s as i128;
                let srtt = (s as i128 + err / 8).max(1);
                self.srtt = Some(srtt as Ns);
                let mut e = err.abs() - self.mdev4 / 4;
                if err < 0 && e > 0 {
                    e /= 8;
                }
                self.mdev4 = (self.mdev4 + e).max(0);
                self.rttvar = (self.mdev4 / 4) as Ns;
                if self.mdev4 > self.mdev_max4 {
                    self.mdev_max4 = self.mdev4;
                    if self.mdev_max4 > self.rttvar4 {
                        self.rttvar4 = self.mdev_max4;
                    }
                }
                if new_window {
                    if self.mdev_max4 < self.rttvar4 {
                        self.rttvar4 -= (self.rttvar4 - self.mdev_max4) / 4;
                    }
                    self.mdev_max4 = min_rto;
                }
            }
        }
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |x| x.min(r)));
        let rto = self.srtt.unwrap_or(r) as i128 + self.rttvar4 + self.slop as i128;
        self.base_rto = (rto.max(0) as u128).min(self.max_rto as u128) as Ns;
        self.backoff = 0;
    }

    /// Take an RTT measurement (RFC 6298 2.2/2.3). Clears the backoff (5.7: a new sample after
    /// backoff recomputes the RTO).
    pub fn on_sample(&mut self, r: Ns) {
        if self.linux {
            return self.on_sample_windowed(r, false);
        }
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                // rttvar = 3/4 rttvar + 1/4 |srtt - r|; srtt = 7/8 srtt + 1/8 r
                let diff = s.abs_diff(r);
                self.rttvar = (3 * self.rttvar + diff) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let s = self.srtt.unwrap_or(r);
        let rto = s + CLOCK_GRANULARITY.max(4 * self.rttvar);
        self.base_rto = (rto.max(self.min_rto) + self.slop).min(self.max_rto);
        self.backoff = 0;
    }

    /// Timer expired: double the RTO (RFC 6298 5.5), bounded by max_rto.
    pub fn on_backoff(&mut self) {
        if self.backoff < 32 {
            self.backoff += 1;
        }
    }

    /// Current RTO including backoff.
    pub fn rto(&self) -> Ns {
        let shift = self.backoff.min(32);
        let r = (self.base_rto as u128) << shift;
        (r.min(self.max_rto as u128) as Ns).max(self.min_rto.min(self.max_rto))
    }
    pub fn srtt(&self) -> Option<Ns> {
        self.srtt
    }
    pub fn rttvar(&self) -> Ns {
        self.rttvar
    }
    pub fn min_rtt(&self) -> Option<Ns> {
        self.min_rtt
    }
    pub fn latest(&self) -> Option<Ns> {
        self.latest
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    #[test]
    fn rfc6298_first_and_second_sample() {
        let mut e = RttEstimator::new(SEC, 200 * MS, 120 * SEC);
        assert_eq!(e.rto(), SEC);
        e.on_sample(100 * MS);
        assert_eq!(e.srtt(), Some(100 * MS));
        assert_eq!(e.rttvar(), 50 * MS);
        // 100 + 4*50 = 300 ms
        assert_eq!(e.rto(), 300 * MS);
        e.on_sample(180 * MS);
        // rttvar = 3/4*50 + 1/4*80 = 57.5; srtt = 7/8*100 + 1/8*180 = 110
        assert_eq!(e.rttvar(), 57_500_000);
        assert_eq!(e.srtt(), Some(110 * MS));
        assert_eq!(e.rto(), 110 * MS + 230 * MS);
        assert_eq!(e.min_rtt(), Some(100 * MS));
    }

    #[test]
    fn linux_mode_rto_is_srtt_plus_min_rto_floor() {
        let mut e = RttEstimator::new_linux(SEC, 200 * MS, 120 * SEC);
        e.on_sample_windowed(20 * MS, false);
        // rttvar4 = max(2 * 20 ms, 200 ms): RTO 220 ms (RFC mode: max(200, 20 + 40) = 200 ms)
        assert_eq!(e.rto(), 220 * MS);
        // a jump to 300 ms: err 280, srtt 55, mdev4 = 40 + 280 - 10 = 310 ms -> RTO 365 ms
        e.on_sample_windowed(300 * MS, false);
        assert_eq!(e.srtt(), Some(55 * MS));
        assert_eq!(e.rto(), 55 * MS + 310 * MS);
        // decreases are damped by 1/8: sample 55 (err 0) then new windows decay rttvar4 by 1/4
        // of its excess over min_rto each
        e.on_sample_windowed(55 * MS, true);
        // mdev4 = 310 - 77.5 = 232.5; mdev_max4 reset to 200 after decaying rttvar4 to
        // 310 - (310 - 310)/4 = 310
        assert_eq!(e.rto(), 55 * MS + 310 * MS);
        e.on_sample_windowed(55 * MS, true);
        // mdev4 = 232.5 - 58.125 = 174.375 < mdev_max4 200; rttvar4 -= (310 - 200)/4 = 27.5
        assert_eq!(e.rto(), 55 * MS + 282_500_000);
        assert!(e.rto() > 200 * MS);
    }

    #[test]
    fn freebsd_slop_is_added_above_the_floor() {
        // FreeBSD: max(30 ms, srtt + 4 rttvar) + 200 ms
        let mut e = RttEstimator::new(3 * SEC, 30 * MS, 64 * SEC).with_slop(200 * MS);
        assert_eq!(e.rto(), 3 * SEC);
        e.on_sample(20 * MS); // 20 + 4 x 10 = 60 ms -> 260 ms
        assert_eq!(e.rto(), 260 * MS);
        let mut e = RttEstimator::new(3 * SEC, 30 * MS, 64 * SEC).with_slop(200 * MS);
        e.on_sample(4 * MS); // 4 + 8 = 12 ms -> floor 30 ms -> 230 ms
        assert_eq!(e.rto(), 230 * MS);
        e.on_backoff();
        assert_eq!(e.rto(), 460 * MS);
    }

    #[test]
    fn min_rto_and_backoff_and_max() {
        let mut e = RttEstimator::new(SEC, 200 * MS, 120 * SEC);
        e.on_sample(10 * MS); // 10 + 20 = 30 ms -> 200 ms
        assert_eq!(e.rto(), 200 * MS);
        e.on_backoff();
        assert_eq!(e.rto(), 400 * MS);
        e.on_backoff();
        assert_eq!(e.rto(), 800 * MS);
        for _ in 0..20 {
            e.on_backoff();
        }
        assert_eq!(e.rto(), 120 * SEC);
        e.on_sample(10 * MS);
        assert_eq!(e.rto(), 200 * MS);
        // G: a constant RTT drives rttvar to 0; RTO = srtt + G (bounded below by min_rto)
        let mut f = RttEstimator::new(SEC, 0, 120 * SEC);
        for _ in 0..200 {
            f.on_sample(50 * MS);
        }
        assert_eq!(f.rto(), 50 * MS + CLOCK_GRANULARITY);
    }
}
