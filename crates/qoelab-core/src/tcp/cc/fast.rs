//! FAST TCP with a weight (Jin, Wei, Low, IEEE/ACM ToN 2006; Wei et al. 2006), and Minerva's
//! FAST variant (SIGCOMM'19 section 5.6).
//!
//! Once per RTT (the update period is the mean RTT of the previous period):
//!
//! * `variant = "fast"`: `W <- min(2 W, (1 - gamma) W + gamma (baseRTT / RTT * W + alpha))` with
//!   `alpha = weight * alpha_base` packets;
//! * `variant = "minerva"`: `W <- 0.2 W + 0.8 (minRTT / RTT * W + 5 w MSS)` (Minerva's constants;
//!   `gamma` and `alpha` are not used).
//!
//! baseRTT is the minimum RTT sample seen; RTT is the mean of the RTT samples of the period.
//! In equilibrium `W (1 - baseRTT / RTT) = alpha`: the flow keeps `alpha` packets in the
//! bottleneck queue, and flows share the link in proportion to their alphas (weights).
//!
//! Start: NewReno slow start until the estimated own queue `W (1 - baseRTT/RTT)` reaches alpha
//! (checked once per period), then the FAST update. Loss (and ECN): halve, `cwnd = ssthresh =
//! max(cwnd / 2, 2 MSS)` (the FAST papers leave loss to Reno-style halving), no update during
//! recovery. RTO: `ssthresh = max(cwnd / 2, 2 MSS)`, `cwnd = 1 MSS`, slow start. While the sender
//! is not cwnd-limited the update may only lower the window.

use super::{AckSample, CcBuildCtx, CcEntry, Congestion, CongestionControl};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::time::Ns;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "variant",
        unit: Unit::Choice(&["fast", "minerva"]),
        default: Default::Str("fast"),
        doc: "fast: Wei et al. 2006 update; minerva: W <- 0.2 W + 0.8 (minRTT/RTT W + 5 w MSS)",
    },
    ParamSpec {
        name: "weight",
        unit: Unit::Float,
        default: Default::Float(1.0),
        doc: "weight w > 0: alpha = w * alpha_base (fast) or 5 w (minerva) packets queued",
    },
    ParamSpec {
        name: "alpha",
        unit: Unit::Float,
        default: Default::Float(5.0),
        doc: "alpha_base: packets the flow keeps queued at weight 1 (variant fast); 5 = Minerva's value",
    },
    ParamSpec {
        name: "gamma",
        unit: Unit::Float,
        default: Default::Float(0.5),
        doc: "update gain gamma in (0, 1] (variant fast; FAST TCP papers: 0.5)",
    },
];

pub const ENTRY: CcEntry = CcEntry {
    name: "fast",
    summary: "FAST TCP (delay-based, alpha packets queued) with a weight; Minerva variant",
    reference: "Jin, Wei, Low, IEEE/ACM ToN 14(6) 2006; Minerva SIGCOMM 2019 section 5.6",
    params: PARAMS,
    build,
};

/// Minerva's constants: gain 0.8 and 5 packets per unit weight.
const MINERVA_GAMMA: f64 = 0.8;
const MINERVA_ALPHA: f64 = 5.0;

fn build(p: &Params, ctx: &CcBuildCtx) -> Result<Box<dyn CongestionControl>, ParamError> {
    let minerva = p.choice(PARAMS, "variant")? == "minerva";
    let w = p.f64(PARAMS, "weight")?;
    if !(w.is_finite() && w > 0.0) {
        return Err(perr("weight", format!("must be a positive number, found {w}")));
    }
    let alpha = p.f64(PARAMS, "alpha")?;
    if !(alpha.is_finite() && alpha > 0.0) {
        return Err(perr("alpha", format!("must be > 0 packets, found {alpha}")));
    }
    let gamma = p.f64(PARAMS, "gamma")?;
    if !(gamma > 0.0 && gamma <= 1.0) {
        return Err(perr("gamma", format!("must be in (0, 1], found {gamma}")));
    }
    let mss = ctx.mss as f64;
    Ok(Box::new(Fast {
        minerva,
        w,
        alpha_base: if minerva { MINERVA_ALPHA } else { alpha },
        gamma: if minerva { MINERVA_GAMMA } else { gamma },
        mss,
        cwnd: (ctx.initial_window * ctx.mss) as f64,
        ssthresh: f64::INFINITY,
        base_rtt: Ns::MAX,
        sum_rtt: 0.0,
        n_rtt: 0,
        period_end: None,
        limited: false,
        recovery: false,
        rto_pending: false,
        last_avg_rtt: 0.0,
    }))
}

pub struct Fast {
    minerva: bool,
    w: f64,
    alpha_base: f64,
    gamma: f64,
    mss: f64,
    cwnd: f64,
    ssthresh: f64,
    base_rtt: Ns,
    sum_rtt: f64,
    n_rtt: u64,
    period_end: Option<Ns>,
    /// Some ACK of the period was not cwnd-limited.
    limited: bool,
    recovery: bool,
    rto_pending: bool,
    last_avg_rtt: f64,
}

impl Fast {
    /// Packets this flow should keep queued.
    fn alpha_bytes(&self) -> f64 {
        self.w * self.alpha_base * self.mss
    }

    fn end_period(&mut self, now: Ns) {
        if self.n_rtt == 0 || self.base_rtt == Ns::MAX {
            return;
        }
        let avg = self.sum_rtt / self.n_rtt as f64;
        self.last_avg_rtt = avg;
        self.sum_rtt = 0.0;
        self.n_rtt = 0;
        let limited = std::mem::replace(&mut self.limited, false);
        self.period_end = Some(now + avg.max(1.0) as Ns);
        let ratio = (self.base_rtt as f64 / avg).min(1.0);
        let w = self.cwnd;
        if w < self.ssthresh {
            // slow start until the own queue estimate reaches alpha
            if w * (1.0 - ratio) >= self.alpha_bytes() {
                self.ssthresh = w;
            } else {
                return;
            }
        }
        let target = (1.0 - self.gamma) * w + self.gamma * (ratio * w + self.alpha_bytes());
        let mut next = if self.minerva { target } else { target.min(2.0 * w) };
        if limited {
            next = next.min(w);
        }
        self.cwnd = next.max(2.0 * self.mss);
        self.ssthresh = self.ssthresh.min(self.cwnd);
    }

    /// Queue (packets) this flow estimates it holds: W (1 - baseRTT / RTT).
    pub fn queue_estimate(&self) -> f64 {
        if self.last_avg_rtt <= 0.0 || self.base_rtt == Ns::MAX {
            return 0.0;
        }
        self.cwnd / self.mss * (1.0 - self.base_rtt as f64 / self.last_avg_rtt)
    }
}

impl CongestionControl for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }
    fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }
    fn ssthresh(&self) -> u64 {
        if self.ssthresh.is_finite() {
            self.ssthresh as u64
        } else {
            u64::MAX
        }
    }
    fn on_ack(&mut self, s: &AckSample) {
        if s.acked_bytes > 0 {
            self.rto_pending = false;
        }
        if !s.in_recovery {
            self.recovery = false;
        }
        if let Some(r) = s.rtt {
            self.base_rtt = self.base_rtt.min(r);
            self.sum_rtt += r as f64;
            self.n_rtt += 1;
        }
        if s.min_rtt > 0 {
            self.base_rtt = self.base_rtt.min(s.min_rtt);
        }
        if !s.cwnd_limited {
            self.limited = true;
        }
        if s.in_recovery {
            // hold the window; restart the measurement period after recovery
            self.sum_rtt = 0.0;
            self.n_rtt = 0;
            self.period_end = None;
            return;
        }
        if self.cwnd < self.ssthresh && s.cwnd_limited && s.acked_bytes > 0 {
            self.cwnd = (self.cwnd + (s.acked_bytes as f64).min(self.mss)).min(self.ssthresh);
        }
        match self.period_end {
            None => {
                let rtt = if s.srtt > 0 { s.srtt } else { s.rtt.unwrap_or(0) };
                if rtt > 0 {
                    self.period_end = Some(s.now + rtt);
                }
            }
            Some(end) if s.now >= end => self.end_period(s.now),
            _ => {}
        }
    }
    fn on_congestion_event(&mut self, _now: Ns, _kind: Congestion, _bytes_in_flight: u64) {
        self.cwnd = (self.cwnd / 2.0).max(2.0 * self.mss);
        self.ssthresh = self.cwnd;
        self.recovery = true;
        self.period_end = None;
    }
    fn on_recovery_exit(&mut self, _now: Ns) {
        self.recovery = false;
    }
    fn on_rto(&mut self, _now: Ns, _bytes_in_flight: u64) {
        if !self.rto_pending {
            self.ssthresh = (self.cwnd / 2.0).max(2.0 * self.mss);
        }
        self.rto_pending = true;
        self.recovery = false;
        self.cwnd = self.mss;
        self.period_end = None;
        self.sum_rtt = 0.0;
        self.n_rtt = 0;
    }
    fn on_idle_restart(&mut self, _now: Ns, restart_cwnd: u64) {
        self.ssthresh = self.ssthresh.max(0.75 * self.cwnd);
        self.cwnd = restart_cwnd as f64;
        self.period_end = None;
        self.sum_rtt = 0.0;
        self.n_rtt = 0;
    }
    fn set_weight(&mut self, w: f64) -> bool {
        if w.is_finite() && w > 0.0 {
            self.w = w;
            true
        } else {
            false
        }
    }
    fn weight(&self) -> Option<f64> {
        Some(self.w)
    }
    fn state(&self) -> &'static str {
        if self.recovery {
            "recovery"
        } else if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "fast"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, Driver, MSS};
    use super::*;
    use crate::time::{MS, SEC};

    /// Fluid bottleneck: capacity `cap` packets/s, base RTT `base`; the queue holds whatever the
    /// window exceeds the BDP by. Returns (window packets, queue packets) after `rounds` RTTs.
    fn fluid(cc: &mut dyn CongestionControl, cap: f64, base: Ns, rounds: u32) -> (f64, f64) {
        let mut d = Driver::new(base);
        let bdp = cap * base as f64 / SEC as f64;
        let mut q = 0.0;
        for _ in 0..rounds {
            let w = cc.cwnd() as f64 / MSS as f64;
            q = (w - bdp).max(0.0);
            d.rtt = base + (q / cap * SEC as f64) as Ns;
            d.round(cc);
        }
        (cc.cwnd() as f64 / MSS as f64, q)
    }

    #[test]
    fn converges_to_alpha_packets_queued() {
        // 10 Mbit/s of 1500-byte packets = 833.3 pkt/s, base RTT 50 ms: BDP 41.7 packets.
        let cap = 10e6 / 8.0 / 1500.0;
        let cases: [(&str, f64, f64, f64); 5] = [
            ("fast", 1.0, 5.0, 5.0),
            ("fast", 1.0, 20.0, 20.0),
            ("fast", 3.0, 5.0, 15.0),
            ("minerva", 1.0, 5.0, 5.0),
            ("minerva", 2.0, 99.0, 10.0), // alpha is ignored by the Minerva variant
        ];
        for (variant, w, alpha, expect_q) in cases {
            let p = Params::new().with("variant", variant).with("weight", w).with("alpha", alpha);
            let mut cc = super::super::build("fast", &p, &ctx()).unwrap();
            let (win, q) = fluid(cc.as_mut(), cap, 50 * MS, 200);
            assert_eq!(cc.state(), "fast");
            eprintln!("fast {variant} w={w} alpha={alpha}: window {win:.2} queue {q:.3}");
            assert!((q / expect_q - 1.0).abs() < 0.05, "{variant} w={w}: queue {q:.2} (window {win:.1})");
            assert!((win - 41.67 - expect_q).abs() < 0.05 * expect_q + 0.5, "{win}");
        }
    }

    #[test]
    fn two_flows_share_in_proportion_to_weights() {
        // Same fluid bottleneck shared by two flows with weights 1 and 3 (both see the same RTT).
        let cap = 10e6 / 8.0 / 1500.0;
        let base = 50 * MS;
        let bdp = cap * 0.05;
        let mk = |w: f64| super::super::build("fast", &Params::new().with("weight", w), &ctx()).unwrap();
        let (mut a, mut b) = (mk(1.0), mk(3.0));
        let (mut da, mut db) = (Driver::new(base), Driver::new(base));
        let mut q = 0.0;
        for _ in 0..300 {
            let w = (a.cwnd() + b.cwnd()) as f64 / MSS as f64;
            q = (w - bdp).max(0.0);
            let rtt = base + (q / cap * SEC as f64) as Ns;
            da.rtt = rtt;
            db.rtt = rtt;
            da.round(a.as_mut());
            db.round(b.as_mut());
        }
        let ratio = b.cwnd() as f64 / a.cwnd() as f64;
        eprintln!(
            "fast two flows: windows {} / {} packets, ratio {ratio:.3}, queue {q:.2}",
            a.cwnd() / MSS,
            b.cwnd() / MSS
        );
        assert!((ratio - 3.0).abs() < 0.1, "{ratio}");
        assert!((q - 20.0).abs() < 1.0, "{q}");
    }

    #[test]
    fn loss_halves_and_weight_is_settable() {
        let mut cc = super::super::build("fast", &Params::new(), &ctx()).unwrap();
        assert_eq!(cc.cwnd(), 10 * MSS);
        cc.on_congestion_event(0, Congestion::Loss, 10 * MSS);
        assert_eq!(cc.cwnd(), 5 * MSS);
        assert_eq!(cc.ssthresh(), 5 * MSS);
        cc.on_rto(0, 5 * MSS);
        assert_eq!(cc.cwnd(), MSS);
        assert!(cc.set_weight(2.5));
        assert_eq!(cc.weight(), Some(2.5));
        assert!(!cc.set_weight(0.0));
        assert!(super::super::build("fast", &Params::new().with("variant", "vegas"), &ctx()).is_err());
        assert!(super::super::build("fast", &Params::new().with("gamma", 1.5), &ctx()).is_err());
    }
}
