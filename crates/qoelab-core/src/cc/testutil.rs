//! Test helpers: drive a controller with hand-made ACK streams (test builds only).

use super::{AckSample, CcBuildCtx, CongestionControl};
use crate::time::Ns;

pub const MSS: u64 = 1448;

pub fn ctx() -> CcBuildCtx {
    CcBuildCtx { mss: MSS, initial_window: 10, abc_l: 1, seed: 7 }
}

/// An idealised path: every RTT the whole window is acknowledged, one ACK per MSS, evenly spaced.
/// No queue, no loss unless the test injects them.
pub struct Driver {
    pub now: Ns,
    pub rtt: Ns,
    pub delivered: u64,
    pub cwnd_limited: bool,
    pub in_recovery: bool,
    /// `delivered` when the packets acked in the current round were sent (start of the round).
    pub round_start_delivered: u64,
    /// Fraction of a segment carried to the next round (a fractional window sends its last
    /// partial segment a round later).
    credit: u64,
}

impl Driver {
    pub fn new(rtt: Ns) -> Driver {
        Driver {
            now: 0,
            rtt,
            delivered: 0,
            cwnd_limited: true,
            in_recovery: false,
            round_start_delivered: 0,
            credit: 0,
        }
    }

    /// One ACK of `bytes` at time `self.now`.
    pub fn ack(&mut self, cc: &mut dyn CongestionControl, bytes: u64) {
        let flight = cc.cwnd();
        let prior_delivered = self.round_start_delivered;
        self.delivered += bytes;
        let s = AckSample {
            now: self.now,
            acked_bytes: bytes,
            rtt: Some(self.rtt),
            srtt: self.rtt,
            min_rtt: self.rtt,
            prior_in_flight: flight,
            bytes_in_flight: flight.saturating_sub(bytes),
            in_recovery: self.in_recovery,
            delivered: self.delivered,
            prior_delivered,
            delivery_rate_bps: None,
            app_limited: !self.cwnd_limited,
            lost_bytes: 0,
            cwnd_limited: self.cwnd_limited,
        };
        cc.on_ack(&s);
    }

    /// One round trip: the current window is acknowledged in MSS-sized ACKs spread over one RTT.
    /// Returns the cwnd at the start of the round.
    pub fn round(&mut self, cc: &mut dyn CongestionControl) -> u64 {
        let w = cc.cwnd();
        self.round_start_delivered = self.delivered;
        self.credit += w;
        let n = (self.credit / MSS).max(1);
        self.credit = self.credit.saturating_sub(n * MSS);
        let start = self.now;
        for i in 1..=n {
            self.now = start + self.rtt * i / n;
            self.ack(cc, MSS);
        }
        self.now = start + self.rtt;
        w
    }
}
