//! RTT estimation and the retransmission timeout (RFC 6298).

use crate::time::{Ns, MS};

/// Clock granularity G of RFC 6298 (Linux jiffies at HZ=1000).
pub const CLOCK_GRANULARITY: Ns = MS;

/// RFC 6298 estimator: srtt, rttvar, RTO with bounds and exponential backoff; all-time min RTT.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Ns>,
    rttvar: Ns,
    min_rtt: Option<Ns>,
    latest: Option<Ns>,
    /// RTO before backoff.
    base_rto: Ns,
    backoff: u32,
    min_rto: Ns,
    max_rto: Ns,
}

impl RttEstimator {
    pub fn new(initial_rto: Ns, min_rto: Ns, max_rto: Ns) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            min_rtt: None,
            latest: None,
            base_rto: initial_rto.min(max_rto),
            backoff: 0,
            min_rto,
            max_rto,
        }
    }

    /// Take an RTT measurement (RFC 6298 2.2/2.3). Clears the backoff (5.7: a new sample after
    /// backoff recomputes the RTO).
    pub fn on_sample(&mut self, r: Ns) {
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
        self.base_rto = rto.clamp(self.min_rto, self.max_rto);
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
