//! MulTCP (Crowcroft & Oechslin, CCR 1998): a weighted NewReno that behaves like `w` Reno flows.
//!
//! * Congestion avoidance: `cwnd += w * MSS * acked / cwnd` (w segments per RTT).
//! * Congestion event: `ssthresh = max(flight * (1 - 1/(2w)), 2 MSS)`, `cwnd = ssthresh`
//!   (of w flows sharing the window, one halves its share).
//! * Slow start: unchanged NewReno slow start (doubling per RTT from the common initial window).
//!   w slow-starting Reno flows also double their aggregate every RTT, so the only difference the
//!   paper's modified slow start addresses is the initial window (w * IW); we keep IW so that all
//!   controllers start alike. RTO and idle restart as NewReno; ssthresh after an RTO also uses
//!   `1 - 1/(2w)`.
//!
//! The weight is real-valued (> 0) and can be changed at any time ([`CongestionControl::set_weight`]);
//! it takes effect at the next ACK / congestion event. With w = 1 this is exactly `newreno`.

use super::newreno::Reno;
use super::{CcBuildCtx, CcEntry, CongestionControl};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "weight",
    unit: Unit::Float,
    default: Default::Float(1.0),
    doc: "number of Reno flows emulated (real, > 0); CA growth w MSS/RTT, decrease factor 1 - 1/(2w)",
}];

pub const ENTRY: CcEntry = CcEntry {
    name: "multcp",
    summary: "MulTCP: weighted NewReno emulating w Reno flows",
    reference: "Crowcroft & Oechslin, CCR 28(3) 1998",
    params: PARAMS,
    build,
};

fn build(p: &Params, ctx: &CcBuildCtx) -> Result<Box<dyn CongestionControl>, ParamError> {
    let w = p.f64(PARAMS, "weight")?;
    if !(w.is_finite() && w > 0.0) {
        return Err(perr("weight", format!("must be a positive number, found {w}")));
    }
    Ok(Box::new(Reno::new(ctx, "multcp", Some(w))))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, Driver, MSS};
    use super::super::Congestion;
    use super::*;
    use crate::time::MS;

    /// Window after: slow start to 40 MSS, a loss, recovery exit, then `rounds` CA rounds.
    fn ca_growth(name: &str, w: Option<f64>, rounds: u32) -> (f64, f64) {
        let mut p = Params::new();
        if let Some(w) = w {
            p = p.with("weight", w);
        }
        let mut cc = super::super::build(name, &p, &ctx()).unwrap();
        let mut d = Driver::new(40 * MS);
        d.round(cc.as_mut());
        d.round(cc.as_mut());
        assert_eq!(cc.cwnd(), 40 * MSS);
        cc.on_congestion_event(d.now, Congestion::Loss, 40 * MSS);
        cc.on_recovery_exit(d.now);
        let after_loss = cc.cwnd() as f64 / MSS as f64;
        for _ in 0..rounds {
            d.round(cc.as_mut());
        }
        (after_loss, (cc.cwnd() as f64 / MSS as f64 - after_loss) / rounds as f64)
    }

    #[test]
    fn growth_is_w_times_newreno_and_decrease_is_1_minus_1_over_2w() {
        let (reno_after, reno_g) = ca_growth("newreno", None, 10);
        assert_eq!(reno_after, 20.0);
        for w in [1.0, 2.0, 3.0, 4.5] {
            let (after, g) = ca_growth("multcp", Some(w), 10);
            let beta = 1.0 - 1.0 / (2.0 * w);
            assert!((after - 40.0 * beta).abs() < 1.0 / MSS as f64 + 1e-9, "w={w}: {after}");
            // per-RTT growth w MSS; relative to NewReno within 5% (the windows differ in size,
            // so the per-ACK increments w*MSS/cwnd are not exactly proportional)
            eprintln!("multcp w={w}: after loss {after:.3} segs (40 x {beta:.4}), growth {g:.4} per RTT (newreno {reno_g:.4})");
            assert!((g / w - 1.0).abs() < 0.05, "w={w}: {g} per RTT");
            assert!((g / reno_g / w - 1.0).abs() < 0.05, "w={w}: {g} vs {reno_g}");
        }
        let (after, g) = ca_growth("multcp", Some(1.0), 10);
        assert_eq!((after, g), (reno_after, reno_g)); // w = 1 is NewReno exactly
    }

    #[test]
    fn weight_is_settable_and_validated() {
        let mut cc = super::super::build("multcp", &Params::new(), &ctx()).unwrap();
        assert_eq!(cc.weight(), Some(1.0));
        assert!(cc.set_weight(4.0));
        assert!(!cc.set_weight(0.0));
        assert_eq!(cc.weight(), Some(4.0));
        cc.on_congestion_event(0, Congestion::Loss, 80 * MSS);
        assert_eq!(cc.cwnd(), 70 * MSS); // 1 - 1/8
        assert!(super::super::build("multcp", &Params::new().with("weight", -1.0), &ctx()).is_err());
    }
}
