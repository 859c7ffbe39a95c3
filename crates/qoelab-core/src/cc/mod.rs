//! Congestion control, sans-IO, behind one trait.
//!
//! A controller owns the congestion window (bytes), ssthresh and optionally a pacing rate. The
//! TCP sender ([`crate::tcp`]) owns everything else (sequence space, SACK scoreboard, loss
//! detection, RTT estimation, RTO, pacing mechanics) and reports events:
//!
//! * [`CongestionControl::on_ack`] for every ACK that advances the cumulative ACK or SACKs new
//!   data, with an [`AckSample`] (newly delivered bytes, RTT sample, delivery-rate sample for
//!   model-based controllers);
//! * [`CongestionControl::on_congestion_event`] once per loss episode (entering fast recovery, RFC
//!   6675/5681) or per ECN-Echo window (RFC 3168);
//! * [`CongestionControl::on_recovery_exit`] when the recovery point is acknowledged;
//! * [`CongestionControl::on_rto`] on a retransmission timeout;
//! * [`CongestionControl::on_idle_restart`] when the sender restarts after idle (slow start after
//!   idle, Linux `tcp_cwnd_restart`).
//!
//! Units: bytes, ns, bits/s. No clock, no engine: `now` is always passed in.
//!
//! Adding a controller: one file with a config struct (published defaults in its docs), `pub
//! const ENTRY: CcEntry`, unit tests driven by hand-made samples; one line in [`REGISTRY`]; a page
//! in docs/models/.

use crate::params::{ParamError, ParamSpec, Params};
use crate::time::Ns;

/// What one ACK told the sender.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    pub now: Ns,
    /// Bytes newly acknowledged (cumulatively or by SACK) by this ACK.
    pub acked_bytes: u64,
    /// RTT sample from this ACK (timestamps echo or Karn-valid), if any.
    pub rtt: Option<Ns>,
    /// Smoothed RTT (RFC 6298) after this ACK.
    pub srtt: Ns,
    /// Minimum RTT seen by the connection (windowed as the sender sees fit).
    pub min_rtt: Ns,
    /// Bytes in flight (RFC 6675 "pipe") before / after processing this ACK.
    pub prior_in_flight: u64,
    pub bytes_in_flight: u64,
    /// Sender is in fast recovery (after processing this ACK).
    pub in_recovery: bool,
    /// Total bytes delivered on the connection so far (delivery-rate estimation, draft-cheng-iccrg-
    /// delivery-rate-estimation).
    pub delivered: u64,
    /// `delivered` when the most recently acked packet was sent (BBR's round counting).
    pub prior_delivered: u64,
    /// Delivery rate sample (bits/s) for this ACK, if one could be formed.
    pub delivery_rate_bps: Option<u64>,
    /// The rate sample was taken while the application limited the sender.
    pub app_limited: bool,
    /// Bytes lost (marked lost by SACK/RACK) detected on this ACK.
    pub lost_bytes: u64,
    /// The sender could have sent more: cwnd was the limit when this data was sent (Linux
    /// `tcp_is_cwnd_limited`). Controllers should not grow cwnd when false (RFC 7661 spirit).
    pub cwnd_limited: bool,
}

/// Kind of congestion signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Congestion {
    /// Loss detected by duplicate ACKs/SACK (fast retransmit).
    Loss,
    /// ECN-Echo received (RFC 3168: reduce as for a loss, no retransmission).
    Ecn,
}

/// The controller interface.
pub trait CongestionControl: Send {
    /// Registered name.
    fn name(&self) -> &'static str;
    /// Congestion window in bytes.
    fn cwnd(&self) -> u64;
    /// Slow-start threshold in bytes (`u64::MAX` = infinite).
    fn ssthresh(&self) -> u64;
    /// Pacing rate wanted by the controller (bits/s), or None to let the sender pace (or not)
    /// from cwnd/srtt.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// Called for a packet sent (new or retransmitted).
    fn on_sent(&mut self, _now: Ns, _bytes: u64, _bytes_in_flight: u64) {}
    fn on_ack(&mut self, s: &AckSample);
    /// Start of a loss episode or an ECN-Echo reaction (at most once per window).
    fn on_congestion_event(&mut self, now: Ns, kind: Congestion, bytes_in_flight: u64);
    /// The recovery point was acknowledged (leave fast recovery).
    fn on_recovery_exit(&mut self, _now: Ns) {}
    /// Retransmission timeout: collapse to the loss window (RFC 5681: 1 MSS).
    fn on_rto(&mut self, now: Ns, bytes_in_flight: u64);
    /// Restart after an idle period (slow start after idle). `restart_cwnd` is the window the
    /// sender computed (Linux: max(cwnd >> (idle/RTO), min(IW, cwnd))). Default: take it, and keep
    /// ssthresh at least 3/4 of the old cwnd.
    fn on_idle_restart(&mut self, now: Ns, restart_cwnd: u64);
    /// Restart after idle in the RFC 5681 / FreeBSD way (`newreno_after_idle`): cwnd =
    /// min(cwnd, `restart_cwnd`), ssthresh unchanged. Default: [`Self::on_idle_restart`] with
    /// that window (controllers that keep their own restart state).
    fn on_idle_restart_keep_ssthresh(&mut self, now: Ns, restart_cwnd: u64) {
        let w = self.cwnd().min(restart_cwnd);
        self.on_idle_restart(now, w)
    }
    /// Minerva-style weight (a real number > 0). Returns false if the controller has no weight.
    fn set_weight(&mut self, _w: f64) -> bool {
        false
    }
    fn weight(&self) -> Option<f64> {
        None
    }
    /// Short name of the controller's state for samples ("slow_start", "cong_avoid",
    /// "recovery", "startup", "probe_bw", ...).
    fn state(&self) -> &'static str;
}

/// What a controller is built from besides its own parameters.
#[derive(Clone, Debug)]
pub struct CcBuildCtx {
    /// Sender maximum segment size (payload bytes).
    pub mss: u64,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window: u64,
    /// RFC 3465 limit L for byte counting in slow start (segments per ACK; 1 = qoelab's
    /// NewReno so far, 2 = FreeBSD). Controllers that do not count bytes ignore it.
    pub abc_l: u64,
    /// Seed of this controller's random stream (BBR's ProbeBW phase).
    pub seed: u64,
}

/// Builds a controller from its parameters and context.
pub type CcBuildFn = fn(&Params, &CcBuildCtx) -> Result<Box<dyn CongestionControl>, ParamError>;

/// A registered controller.
pub struct CcEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub reference: &'static str,
    pub params: &'static [ParamSpec],
    pub build: CcBuildFn,
}

pub mod bbr;
pub mod cubic;
pub mod fast;
pub mod multcp;
pub mod newreno;
pub mod wcubic;

pub mod pacing;
pub mod rate;
pub mod rtt;
#[cfg(test)]
pub(crate) mod testutil;

/// Every controller, one line each.
pub static REGISTRY: &[CcEntry] =
    &[newreno::ENTRY, cubic::ENTRY, multcp::ENTRY, wcubic::ENTRY, fast::ENTRY, bbr::ENTRY];

pub fn find(name: &str) -> Option<&'static CcEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

pub fn build(name: &str, params: &Params, ctx: &CcBuildCtx) -> Result<Box<dyn CongestionControl>, ParamError> {
    let e = find(name).ok_or_else(|| {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        crate::params::perr(
            "cc",
            format!("unknown congestion control \"{name}\"; expected one of: {}", names.join(", ")),
        )
    })?;
    params.check_known(e.params)?;
    (e.build)(params, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_builds_defaults_rejects_unknown_and_starts_at_iw() {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        assert_eq!(names, ["newreno", "cubic", "multcp", "wcubic", "fast", "bbr"]);
        let ctx = testutil::ctx();
        for e in REGISTRY {
            let cc = build(e.name, &Params::new(), &ctx).unwrap();
            assert_eq!(cc.name(), e.name);
            assert_eq!(cc.cwnd(), 10 * ctx.mss, "{}", e.name);
            assert_eq!(cc.ssthresh(), u64::MAX, "{}", e.name);
            let err = build(e.name, &Params::new().with("no_such_param", 1), &ctx).err().unwrap();
            assert_eq!(err.param, "no_such_param");
            // every declared default resolves (the spec table is consistent with build)
            for spec in e.params {
                assert!(!spec.doc.is_empty(), "{}.{}", e.name, spec.name);
            }
            let weighted = cc.weight().is_some();
            assert_eq!(weighted, matches!(e.name, "multcp" | "wcubic" | "fast"), "{}", e.name);
        }
        assert!(build("vegas", &Params::new(), &ctx).is_err());
        assert!(build("bbr", &Params::new(), &ctx).unwrap().pacing_rate().is_some());
    }
}
