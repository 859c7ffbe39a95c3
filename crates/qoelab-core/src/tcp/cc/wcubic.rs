//! Weighted CUBIC (Minerva, SIGCOMM'19 section 5.6): CUBIC that takes a bandwidth share `w`
//! times that of one CUBIC flow, with a real weight `w > 0` settable at any time.
//!
//! It is the [`super::cubic`] core with:
//!
//! * decrease factor `beta'(w) = (beta (w + 1) + w - 1) / (beta (w - 1) + w + 1)`, the solution of
//!   `(1 + beta') / (1 - beta') = w (1 + beta) / (1 - beta)` (paper, eq. in 5.6);
//! * Reno-friendly increase `alpha(w) = 3 w^2 (1 - beta') / (1 + beta')` (= `w * alpha_cubic`),
//!   so that AIMD(alpha(w), beta') has `w` times the rate of AIMD(alpha_cubic, beta), i.e. of Reno;
//!   once `W_est >= cwnd_prior` the increase is `w` per RTT (w Reno flows) instead of RFC 9438's 1;
//! * fast convergence `W_max = cwnd (1 + beta') / 2`;
//! * the cubic term: by default C unchanged (Minerva's implementation, Chromium `CubicBytes`,
//!   only changes beta and alpha); with `scale_c = true`, `C' = w C`, which is exactly the
//!   aggregate of w synchronised CUBIC flows each holding cwnd/w ("every ACK counts for all w
//!   flows"). The paper does not say which; see docs/models/cc-wcubic.md.
//!
//! With `w = 1` every one of these equals plain CUBIC, so the trajectories are identical.

use super::cubic::{alpha_cubic, CubicCore, BETA_CUBIC, C_CUBIC};
use super::{AckSample, CcBuildCtx, CcEntry, Congestion, CongestionControl};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::time::Ns;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "weight",
        unit: Unit::Float,
        default: Default::Float(1.0),
        doc: "weight w > 0: target share relative to one CUBIC flow (Minerva clamps to [0.5, 20])",
    },
    ParamSpec {
        name: "c",
        unit: Unit::Float,
        default: Default::Float(C_CUBIC),
        doc: "cubic scaling constant C (segments/s^3), RFC 9438",
    },
    ParamSpec {
        name: "beta",
        unit: Unit::Float,
        default: Default::Float(BETA_CUBIC),
        doc: "beta_cubic of one flow; the weighted factor is beta'(w)",
    },
    ParamSpec {
        name: "fast_convergence",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "fast convergence with factor (1 + beta'(w)) / 2",
    },
    ParamSpec {
        name: "scale_c",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "scale the cubic term C by w (w synchronised flows); off = Minerva's implementation",
    },
    ParamSpec {
        name: "hystart",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "HyStart++ slow start (RFC 9406)",
    },
];

pub const ENTRY: CcEntry = CcEntry {
    name: "wcubic",
    summary: "weighted CUBIC (Minerva): beta'(w), alpha(w), settable real weight",
    reference: "Nathan et al., Minerva, SIGCOMM 2019, section 5.6; RFC 9438",
    params: PARAMS,
    build,
};

/// Minerva's weighted decrease factor.
pub fn beta_w(beta: f64, w: f64) -> f64 {
    (beta * (w + 1.0) + w - 1.0) / (beta * (w - 1.0) + w + 1.0)
}

/// Minerva's weighted Reno-friendly increase (segments per RTT).
pub fn alpha_w(beta: f64, w: f64) -> f64 {
    let b = beta_w(beta, w);
    3.0 * w * w * (1.0 - b) / (1.0 + b)
}

fn valid_weight(w: f64) -> bool {
    w.is_finite() && w > 0.0
}

fn build(p: &Params, ctx: &CcBuildCtx) -> Result<Box<dyn CongestionControl>, ParamError> {
    let w = p.f64(PARAMS, "weight")?;
    if !valid_weight(w) {
        return Err(perr("weight", format!("must be a positive number, found {w}")));
    }
    let c = p.f64(PARAMS, "c")?;
    if !(c.is_finite() && c > 0.0) {
        return Err(perr("c", format!("must be > 0, found {c}")));
    }
    let beta = p.f64(PARAMS, "beta")?;
    if !(beta > 0.0 && beta < 1.0) {
        return Err(perr("beta", format!("must be in (0, 1), found {beta}")));
    }
    let core = CubicCore::new(ctx, p.bool(PARAMS, "fast_convergence")?, p.bool(PARAMS, "hystart")?);
    let mut cc = WCubic { core, w, c, beta, scale_c: p.bool(PARAMS, "scale_c")? };
    cc.apply();
    Ok(Box::new(cc))
}

pub struct WCubic {
    core: CubicCore,
    w: f64,
    c: f64,
    beta: f64,
    scale_c: bool,
}

impl WCubic {
    fn apply(&mut self) {
        let w = self.w;
        let b = beta_w(self.beta, w);
        // At w = 1 these are bit-identical to CUBIC's values (beta_w(beta, 1) == beta exactly,
        // and alpha is computed by the same expression).
        let alpha = if w == 1.0 { alpha_cubic(self.beta) } else { alpha_w(self.beta, w) };
        let c = if self.scale_c { self.c * w } else { self.c };
        self.core.set_shape(c, b, alpha, w, (1.0 + b) / 2.0);
    }
}

impl CongestionControl for WCubic {
    fn name(&self) -> &'static str {
        "wcubic"
    }
    fn cwnd(&self) -> u64 {
        self.core.cwnd_bytes()
    }
    fn ssthresh(&self) -> u64 {
        self.core.ssthresh_bytes()
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.core.on_ack(s)
    }
    fn on_congestion_event(&mut self, _now: Ns, kind: Congestion, bytes_in_flight: u64) {
        self.core.on_congestion_event(kind, bytes_in_flight)
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
    fn set_weight(&mut self, w: f64) -> bool {
        if !valid_weight(w) {
            return false;
        }
        self.w = w;
        self.apply();
        true
    }
    fn weight(&self) -> Option<f64> {
        Some(self.w)
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

    #[test]
    fn beta_and_alpha_by_hand() {
        // beta'(w) as exact fractions with beta = 7/10; alpha(w) = w * 9/17.
        let cases = [
            (0.5, 11.0 / 23.0, 9.0 / 34.0),  // (1.05 - 0.5) / (-0.35 + 1.5)
            (1.0, 0.7, 9.0 / 17.0),          // plain CUBIC
            (2.0, 31.0 / 37.0, 18.0 / 17.0), // 3.1 / 3.7
            (3.0, 8.0 / 9.0, 27.0 / 17.0),   // 4.8 / 5.4
            (20.0, 337.0 / 343.0, 180.0 / 17.0),
        ];
        for (w, b, a) in cases {
            assert!((beta_w(0.7, w) - b).abs() < 1e-12, "beta'({w}) = {}", beta_w(0.7, w));
            assert!((alpha_w(0.7, w) - a).abs() < 1e-12, "alpha({w}) = {}", alpha_w(0.7, w));
            // the defining identity
            let bw = beta_w(0.7, w);
            assert!(((1.0 + bw) / (1.0 - bw) - w * 1.7 / 0.3).abs() < 1e-9);
        }
        assert_eq!(beta_w(0.7, 1.0), 0.7);
        // numeric values for the docs
        assert!((beta_w(0.7, 2.0) - 0.837838).abs() < 1e-6);
        assert!((beta_w(0.7, 20.0) - 0.982507).abs() < 1e-6);
        assert!((alpha_w(0.7, 20.0) - 10.588235).abs() < 1e-6);
    }

    /// A stream with slow start, loss, CA, app-limited stretch, ECN, RTO, idle restart.
    fn trajectory(cc: &mut dyn CongestionControl) -> Vec<u64> {
        let mut d = Driver::new(30 * MS);
        let mut out = Vec::new();
        let rec = |cc: &dyn CongestionControl, out: &mut Vec<u64>| {
            out.push(cc.cwnd());
            out.push(cc.ssthresh());
        };
        for r in 0..400u32 {
            d.round(cc);
            rec(cc, &mut out);
            match r {
                6 | 90 | 150 => {
                    cc.on_congestion_event(d.now, Congestion::Loss, cc.cwnd());
                    d.in_recovery = true;
                    d.round(cc);
                    d.in_recovery = false;
                    cc.on_recovery_exit(d.now);
                }
                200 => cc.on_congestion_event(d.now, Congestion::Ecn, cc.cwnd() / 2),
                220 => d.cwnd_limited = false,
                240 => d.cwnd_limited = true,
                300 => cc.on_rto(d.now, cc.cwnd()),
                350 => cc.on_idle_restart(d.now, 10 * MSS),
                _ => {}
            }
            rec(cc, &mut out);
        }
        out
    }

    #[test]
    fn weight_one_is_cubic_exactly() {
        let p = Params::new();
        let mut a = super::super::build("cubic", &p, &ctx()).unwrap();
        let mut b = super::super::build("wcubic", &p, &ctx()).unwrap();
        let ta = trajectory(a.as_mut());
        let tb = trajectory(b.as_mut());
        assert_eq!(ta.len(), 1600);
        assert_eq!(ta, tb);
        // also with scale_c (C * 1 == C) and hystart on both
        let mut a = super::super::build("cubic", &p.clone().with("hystart", true), &ctx()).unwrap();
        let mut b = super::super::build("wcubic", &p.with("hystart", true).with("scale_c", true), &ctx()).unwrap();
        assert_eq!(trajectory(a.as_mut()), trajectory(b.as_mut()));
    }

    #[test]
    fn changing_weight_changes_the_next_reduction() {
        let mut cc = super::super::build("wcubic", &Params::new(), &ctx()).unwrap();
        let mut d = Driver::new(30 * MS);
        for _ in 0..4 {
            d.round(cc.as_mut());
        }
        let w0 = cc.cwnd() as f64;
        cc.on_congestion_event(d.now, Congestion::Loss, cc.cwnd());
        cc.on_recovery_exit(d.now);
        assert!((cc.cwnd() as f64 / w0 - 0.7).abs() < 1e-4);
        for _ in 0..20 {
            d.round(cc.as_mut());
        }
        assert!(cc.set_weight(3.0));
        assert_eq!(cc.weight(), Some(3.0));
        let w1 = cc.cwnd() as f64;
        cc.on_congestion_event(d.now, Congestion::Loss, cc.cwnd());
        assert!((cc.cwnd() as f64 / w1 - 8.0 / 9.0).abs() < 1e-4, "{}", cc.cwnd() as f64 / w1);
        assert!(cc.set_weight(0.5));
        let w2 = cc.cwnd() as f64;
        cc.on_congestion_event(d.now, Congestion::Loss, cc.cwnd());
        assert!((cc.cwnd() as f64 / w2 - 11.0 / 23.0).abs() < 1e-4);
        assert!(!cc.set_weight(f64::NAN));
        assert!(!cc.set_weight(-2.0));
        assert_eq!(cc.weight(), Some(0.5));
    }

    #[test]
    fn cubic_term_with_and_without_scale_c() {
        // w = 2, loss at W_max = 1280 segments (RTT 100 ms: cubic region dominates):
        // cwnd = 1280 beta'(2) = 1072.4; K = cbrt((1280 - 1072.4) / C'), C' = 0.4 or 0.8.
        for scale in [false, true] {
            let p = Params::new().with("weight", 2.0).with("scale_c", scale);
            let mut cc = super::super::build("wcubic", &p, &ctx()).unwrap();
            let mut d = Driver::new(100 * MS);
            for _ in 0..7 {
                d.round(cc.as_mut());
            }
            cc.on_congestion_event(d.now, Congestion::Loss, cc.cwnd());
            cc.on_recovery_exit(d.now);
            let c = if scale { 0.8 } else { 0.4 };
            let w0 = 1280.0 * beta_w(0.7, 2.0);
            let k = ((1280.0 - w0) / c).cbrt();
            let t0 = d.now;
            let mut checked = 0;
            for _ in 0..100 {
                d.round(cc.as_mut());
                let t = (d.now - t0) as f64 / crate::time::SEC as f64;
                if [2.0, 5.0, 9.0].iter().any(|x| (t - x).abs() < 0.05) {
                    let expect = c * (t - k).powi(3) + 1280.0;
                    let got = cc.cwnd() as f64 / MSS as f64;
                    eprintln!("wcubic w=2 scale_c={scale}: K {k:.3} s, t={t:.2} cwnd {got:.2} vs {expect:.2}");
                    assert!((got / expect - 1.0).abs() < 0.02, "scale_c={scale} t={t}: {got} vs {expect}");
                    checked += 1;
                }
            }
            assert_eq!(checked, 3);
        }
    }

    #[test]
    fn reno_friendly_growth_scales_with_weight() {
        // Small RTT: the Reno-friendly region dominates; growth per RTT after a loss is
        // alpha(w) = w * 0.529 segments until cwnd_prior, then w.
        for w in [1.0, 2.0, 3.0] {
            let mut cc = super::super::build("wcubic", &Params::new().with("weight", w), &ctx()).unwrap();
            let mut d = Driver::new(2 * MS);
            for _ in 0..4 {
                d.round(cc.as_mut());
            }
            cc.on_congestion_event(d.now, Congestion::Loss, cc.cwnd());
            cc.on_recovery_exit(d.now);
            let start = cc.cwnd() as f64 / MSS as f64;
            assert!((start - 160.0 * beta_w(0.7, w)).abs() < 0.01);
            // 10 rounds: still below cwnd_prior = 160 for every w here (w = 3: 11.2 rounds)
            for _ in 0..10 {
                d.round(cc.as_mut());
            }
            let g = (cc.cwnd() as f64 / MSS as f64 - start) / 10.0;
            eprintln!("wcubic w={w}: reno-friendly growth {g:.4} per RTT, alpha(w) {:.4}", alpha_w(0.7, w));
            assert!((g / alpha_w(0.7, w) - 1.0).abs() < 0.03, "w={w}: {g}");
        }
    }
}
