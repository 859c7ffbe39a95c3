//! NewReno window logic (RFC 5681 + RFC 6582, byte counting as in RFC 3465 with L = `abc_l`
//! of the build context, 1 by default).
//!
//! * Slow start (cwnd < ssthresh): `cwnd += min(acked, L x MSS)` per ACK, capped at ssthresh.
//! * Congestion avoidance: `cwnd += MSS * acked / cwnd` per ACK (real-valued, so one MSS per
//!   window of acknowledged bytes).
//! * Congestion event (loss or ECN-Echo): `ssthresh = max(flight / 2, 2 MSS)`, `cwnd = ssthresh`
//!   (RFC 6675: the sender compares pipe with cwnd during recovery; set again on recovery exit).
//! * RTO: `ssthresh = max(flight / 2, 2 MSS)` (held on back-to-back timeouts), `cwnd = 1 MSS`.
//! * No growth while the sender is in recovery or was not cwnd-limited (Linux
//!   `tcp_is_cwnd_limited`).
//!
//! The same core, with a weight `w`, is MulTCP ([`super::multcp`]): CA growth `w` MSS per RTT,
//! decrease factor `1 - 1/(2w)`. With `w = 1` it is exactly NewReno.

use super::{AckSample, CcBuildCtx, CcEntry, Congestion, CongestionControl};
use crate::params::{ParamError, ParamSpec, Params};
use crate::time::Ns;

const PARAMS: &[ParamSpec] = &[];

pub const ENTRY: CcEntry = CcEntry {
    name: "newreno",
    summary: "NewReno: slow start, AIMD(1, 1/2) congestion avoidance with byte counting",
    reference: "RFC 5681, RFC 6582, RFC 3465 (L = the TCP abc_l, 1 by default)",
    params: PARAMS,
    build,
};

fn build(_p: &Params, ctx: &CcBuildCtx) -> Result<Box<dyn CongestionControl>, ParamError> {
    Ok(Box::new(Reno::new(ctx, "newreno", None)))
}

/// Weighted Reno window (shared by `newreno` with w = 1 and `multcp`).
#[derive(Clone, Debug)]
pub(crate) struct RenoCore {
    pub mss: f64,
    /// Congestion window, bytes (real-valued; reported rounded down).
    pub cwnd: f64,
    /// Slow-start threshold, bytes (`f64::INFINITY` initially).
    pub ssthresh: f64,
    pub weight: f64,
    /// RFC 3465 L x MSS: the largest slow-start increase per ACK (bytes).
    abc_limit: f64,
    recovery: bool,
    /// An RTO happened and no new data has been acknowledged since (RFC 5681: hold ssthresh on
    /// repeated timeouts).
    rto_pending: bool,
}

impl RenoCore {
    pub fn new(ctx: &CcBuildCtx, weight: f64) -> RenoCore {
        let mss = ctx.mss as f64;
        RenoCore {
            mss,
            cwnd: (ctx.initial_window * ctx.mss) as f64,
            ssthresh: f64::INFINITY,
            weight,
            abc_limit: (ctx.abc_l.max(1) * ctx.mss) as f64,
            recovery: false,
            rto_pending: false,
        }
    }

    /// Multiplicative decrease factor: the fraction of the window kept after a congestion event.
    pub fn beta(&self) -> f64 {
        1.0 - 1.0 / (2.0 * self.weight)
    }

    pub fn on_ack(&mut self, s: &AckSample) {
        if s.acked_bytes > 0 {
            self.rto_pending = false;
        }
        if !s.in_recovery {
            self.recovery = false;
        }
        if s.in_recovery || !s.cwnd_limited || s.acked_bytes == 0 {
            return;
        }
        let acked = s.acked_bytes as f64;
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + acked.min(self.abc_limit)).min(self.ssthresh);
        } else {
            self.cwnd += self.weight * self.mss * acked / self.cwnd;
        }
    }

    pub fn on_congestion_event(&mut self, bytes_in_flight: u64) {
        self.ssthresh = (bytes_in_flight as f64 * self.beta()).max(2.0 * self.mss);
        self.cwnd = self.ssthresh;
        self.recovery = true;
    }

    pub fn on_recovery_exit(&mut self) {
        if self.recovery {
            self.cwnd = self.ssthresh;
        }
        self.recovery = false;
    }

    pub fn on_rto(&mut self, bytes_in_flight: u64) {
        if !self.rto_pending {
            self.ssthresh = (bytes_in_flight as f64 * self.beta()).max(2.0 * self.mss);
        }
        self.rto_pending = true;
        self.recovery = false;
        self.cwnd = self.mss;
    }

    /// Trait default behaviour: take the sender's restart window, keep ssthresh >= 3/4 old cwnd.
    pub fn on_idle_restart(&mut self, restart_cwnd: u64) {
        self.ssthresh = self.ssthresh.max(0.75 * self.cwnd);
        self.cwnd = restart_cwnd as f64;
    }

    /// FreeBSD `newreno_after_idle`: cwnd = min(cwnd, restart window), ssthresh unchanged.
    pub fn on_idle_restart_keep_ssthresh(&mut self, restart_cwnd: u64) {
        self.cwnd = self.cwnd.min(restart_cwnd as f64);
    }

    pub fn state(&self) -> &'static str {
        if self.recovery {
            "recovery"
        } else if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "cong_avoid"
        }
    }

    pub fn ssthresh_u64(&self) -> u64 {
        if self.ssthresh.is_finite() {
            self.ssthresh as u64
        } else {
            u64::MAX
        }
    }
}

/// The controller of `newreno` (weight fixed at 1) and `multcp` (settable weight): both are the
/// shared [`RenoCore`] window; only the name and whether the weight may change differ.
pub(crate) struct Reno {
    core: RenoCore,
    name: &'static str,
    weighted: bool,
}

impl Reno {
    pub(crate) fn new(ctx: &CcBuildCtx, name: &'static str, weight: Option<f64>) -> Reno {
        Reno { core: RenoCore::new(ctx, weight.unwrap_or(1.0)), name, weighted: weight.is_some() }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        self.name
    }
    fn cwnd(&self) -> u64 {
        self.core.cwnd as u64
    }
    fn ssthresh(&self) -> u64 {
        self.core.ssthresh_u64()
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.core.on_ack(s)
    }
    fn on_congestion_event(&mut self, _now: Ns, _kind: Congestion, bytes_in_flight: u64) {
        self.core.on_congestion_event(bytes_in_flight)
    }
    fn on_recovery_exit(&mut self, _now: Ns) {
        self.core.on_recovery_exit()
    }
    fn on_rto(&mut self, _now: Ns, bytes_in_flight: u64) {
        self.core.on_rto(bytes_in_flight)
    }
    fn on_idle_restart(&mut self, _now: Ns, restart_cwnd: u64) {
        self.core.on_idle_restart(restart_cwnd)
    }
    fn on_idle_restart_keep_ssthresh(&mut self, _now: Ns, restart_cwnd: u64) {
        self.core.on_idle_restart_keep_ssthresh(restart_cwnd)
    }
    fn set_weight(&mut self, w: f64) -> bool {
        if self.weighted && w.is_finite() && w > 0.0 {
            self.core.weight = w;
            true
        } else {
            false
        }
    }
    fn weight(&self) -> Option<f64> {
        self.weighted.then_some(self.core.weight)
    }
    fn state(&self) -> &'static str {
        self.core.state()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, Driver, MSS};
    use super::*;
    use crate::time::MS;

    fn mk() -> Box<dyn CongestionControl> {
        super::super::build("newreno", &Params::new(), &ctx()).unwrap()
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut cc = mk();
        let mut d = Driver::new(50 * MS);
        assert_eq!(cc.cwnd(), 10 * MSS);
        assert_eq!(cc.ssthresh(), u64::MAX);
        for r in 0..5 {
            let w = d.round(cc.as_mut());
            assert_eq!(w, (10 * MSS) << r);
        }
        assert_eq!(cc.cwnd(), 320 * MSS);
        assert_eq!(cc.state(), "slow_start");
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_rtt_and_halves_on_loss() {
        let mut cc = mk();
        let mut d = Driver::new(50 * MS);
        d.round(cc.as_mut());
        d.round(cc.as_mut()); // cwnd = 40 MSS
        let w = cc.cwnd();
        assert_eq!(w, 40 * MSS);
        cc.on_congestion_event(d.now, Congestion::Loss, w);
        assert_eq!(cc.ssthresh(), 20 * MSS);
        assert_eq!(cc.cwnd(), 20 * MSS);
        assert_eq!(cc.state(), "recovery");
        // no growth in recovery
        d.in_recovery = true;
        d.round(cc.as_mut());
        assert_eq!(cc.cwnd(), 20 * MSS);
        d.in_recovery = false;
        cc.on_recovery_exit(d.now);
        assert_eq!(cc.cwnd(), 20 * MSS);
        assert_eq!(cc.state(), "cong_avoid");
        // 20 rounds of CA: +1 MSS per round (within 1%: byte counting over a growing window)
        let start = cc.cwnd() as f64;
        for _ in 0..20 {
            d.round(cc.as_mut());
        }
        let per_rtt = (cc.cwnd() as f64 - start) / 20.0 / MSS as f64;
        eprintln!("newreno CA growth: {per_rtt:.4} MSS per RTT");
        assert!((per_rtt - 1.0).abs() < 0.03, "{per_rtt}");
        // ECN reduces the same way; floor of 2 MSS
        cc.on_congestion_event(d.now, Congestion::Ecn, 3 * MSS);
        assert_eq!(cc.cwnd(), 2 * MSS);
    }

    #[test]
    fn rto_collapses_to_one_mss() {
        let mut cc = mk();
        let mut d = Driver::new(20 * MS);
        d.round(cc.as_mut());
        cc.on_rto(d.now, 20 * MSS);
        assert_eq!(cc.cwnd(), MSS);
        assert_eq!(cc.ssthresh(), 10 * MSS);
        // a second timeout before any progress keeps ssthresh (flight is now tiny)
        cc.on_rto(d.now, MSS);
        assert_eq!(cc.ssthresh(), 10 * MSS);
        // slow start back up to ssthresh, then CA
        for _ in 0..4 {
            d.round(cc.as_mut());
        }
        // 1, 2, 4, 8 MSS; the 4th round: +2 MSS to ssthresh (capped), then 6 CA ACKs of ~0.1 MSS
        let w = cc.cwnd() as f64 / MSS as f64;
        assert!(w > 10.5 && w < 10.7, "{w}");
        assert_eq!(cc.state(), "cong_avoid");
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut cc = mk();
        let mut d = Driver::new(20 * MS);
        d.cwnd_limited = false;
        for _ in 0..5 {
            d.round(cc.as_mut());
        }
        assert_eq!(cc.cwnd(), 10 * MSS);
        d.cwnd_limited = true;
        d.round(cc.as_mut());
        assert_eq!(cc.cwnd(), 20 * MSS);
    }

    #[test]
    fn abc_l_limits_the_slow_start_increase_per_ack() {
        let mk_l = |l: u64| super::super::build("newreno", &Params::new(), &CcBuildCtx { abc_l: l, ..ctx() }).unwrap();
        for (l, want) in [(1, 11), (2, 12), (3, 13)] {
            let mut cc = mk_l(l);
            // one ACK covering 3 segments, cwnd-limited, in slow start
            let s = AckSample { acked_bytes: 3 * MSS, cwnd_limited: true, ..AckSample::default() };
            cc.on_ack(&s);
            assert_eq!(cc.cwnd(), want * MSS, "L = {l}");
        }
        // keep-ssthresh restart: cwnd = min(cwnd, w), ssthresh untouched
        let mut cc = mk_l(2);
        cc.on_congestion_event(0, Congestion::Loss, 40 * MSS);
        cc.on_recovery_exit(0);
        cc.on_idle_restart_keep_ssthresh(0, 4380);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (4380, 20 * MSS));
        cc.on_idle_restart_keep_ssthresh(0, 100 * MSS);
        assert_eq!(cc.cwnd(), 4380);
    }

    #[test]
    fn idle_restart_takes_restart_window() {
        let mut cc = mk();
        let mut d = Driver::new(20 * MS);
        d.round(cc.as_mut());
        d.round(cc.as_mut());
        cc.on_congestion_event(d.now, Congestion::Loss, 40 * MSS);
        cc.on_recovery_exit(d.now);
        cc.on_idle_restart(d.now, 10 * MSS);
        assert_eq!(cc.cwnd(), 10 * MSS);
        assert_eq!(cc.ssthresh(), 20 * MSS); // max(20, 0.75 * 20)
    }
}
