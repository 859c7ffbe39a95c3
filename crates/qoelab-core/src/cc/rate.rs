//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation), transport-neutral.
//!
//! A transport stamps every packet it sends with [`RateEstimator::stamp`] (the draft's P.*
//! fields), tells the estimator when it is application-limited, feeds every newly delivered
//! (acknowledged or selectively acknowledged) packet to [`RateEstimator::on_delivered`] while
//! processing an ACK, and takes the ACK's sample with [`RateEstimator::sample`]. Units: bytes,
//! ns, bit/s.

use crate::time::Ns;

/// What a packet carries from its (latest) transmission (the draft's P.delivered,
/// P.delivered_time, P.first_sent_time, P.is_app_limited, and the send time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendStamp {
    pub sent_time: Ns,
    pub delivered: u64,
    pub delivered_time: Ns,
    pub first_sent_time: Ns,
    pub app_limited: bool,
}

/// Connection-level state (the draft's C.*).
#[derive(Clone, Debug, Default)]
pub struct RateEstimator {
    /// C.delivered: bytes delivered so far.
    pub delivered: u64,
    delivered_time: Ns,
    first_sent_time: Ns,
    /// C.app_limited: delivered mark at which the app-limited phase ends (0 = not app-limited).
    app_limited: u64,
    /// Latest sample (bit/s), 0 if none yet.
    pub last_rate_bps: u64,
}

/// The rate sample being built while one ACK is processed (the draft's rs.*).
#[derive(Clone, Debug, Default)]
pub struct RateSample {
    pub has: bool,
    pub prior_delivered: u64,
    prior_sent_time: Ns,
    send_elapsed: Ns,
    ack_elapsed: Ns,
    pub is_app_limited: bool,
}

impl RateEstimator {
    /// Nothing is in flight and a new packet is sent: restart the rate interval (draft 3.2).
    pub fn restart_interval(&mut self, now: Ns) {
        self.first_sent_time = now;
        self.delivered_time = now;
    }

    /// The stamp of a packet sent at `now`.
    pub fn stamp(&self, now: Ns) -> SendStamp {
        SendStamp {
            sent_time: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited != 0,
        }
    }

    /// CheckIfApplicationLimited (draft 3.4): the sender has nothing to send although the
    /// window allows it; `in_flight` bytes are outstanding.
    pub fn set_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }

    /// A packet of `len` bytes with stamp `s` was delivered at `now` (draft 3.3 UpdateRateSample).
    pub fn on_delivered(&mut self, rs: &mut RateSample, len: u64, s: &SendStamp, now: Ns) {
        self.delivered += len;
        self.delivered_time = now;
        let newer = !rs.has
            || s.delivered > rs.prior_delivered
            || (s.delivered == rs.prior_delivered && s.sent_time > rs.prior_sent_time);
        if newer {
            rs.has = true;
            rs.prior_delivered = s.delivered;
            rs.prior_sent_time = s.sent_time;
            rs.is_app_limited = s.app_limited;
            rs.send_elapsed = s.sent_time.saturating_sub(s.first_sent_time);
            rs.ack_elapsed = now.saturating_sub(s.delivered_time);
            self.first_sent_time = s.sent_time;
        }
    }

    /// End of an ACK: leave the app-limited phase if its mark was passed, and compute the
    /// sample (bit/s) unless its interval is shorter than `min_rtt` (draft 3.3 GenerateRateSample).
    pub fn sample(&mut self, rs: &RateSample, min_rtt: Ns) -> Option<u64> {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if !rs.has {
            return None;
        }
        let interval = rs.send_elapsed.max(rs.ack_elapsed);
        let d = self.delivered - rs.prior_delivered;
        if interval > 0 && interval >= min_rtt {
            let bps = (d as u128 * 8 * 1_000_000_000 / interval as u128) as u64;
            self.last_rate_bps = bps;
            return Some(bps);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn steady_stream_measures_its_rate() {
        // 10 packets of 1000 B sent 1 ms apart, each delivered 20 ms after it was sent:
        // 8 Mbit/s.
        let mut r = RateEstimator::default();
        r.restart_interval(0);
        let stamps: Vec<SendStamp> = (0..10).map(|i| r.stamp(i * MS)).collect();
        let mut last = None;
        for (i, s) in stamps.iter().enumerate() {
            let mut rs = RateSample::default();
            r.on_delivered(&mut rs, 1000, s, i as u64 * MS + 20 * MS);
            last = r.sample(&rs, 0).or(last);
        }
        // The first sample spans 20 ms for 1000 B; later ones grow with the delivered count.
        assert_eq!(r.delivered, 10_000);
        assert!(last.unwrap() > 0);
    }

    #[test]
    fn app_limited_flag_clears_after_its_mark() {
        let mut r = RateEstimator::default();
        r.set_app_limited(3000);
        let s = r.stamp(0);
        assert!(s.app_limited);
        let mut rs = RateSample::default();
        r.on_delivered(&mut rs, 4000, &s, 10 * MS);
        assert!(rs.is_app_limited);
        r.sample(&rs, 0);
        assert!(!r.stamp(10 * MS).app_limited);
    }

    #[test]
    fn short_intervals_give_no_sample() {
        let mut r = RateEstimator::default();
        let s = r.stamp(0);
        let mut rs = RateSample::default();
        r.on_delivered(&mut rs, 1000, &s, MS);
        assert_eq!(r.sample(&rs, 5 * MS), None);
        assert_eq!(r.last_rate_bps, 0);
    }
}
