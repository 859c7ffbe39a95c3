//! `tputfrac`: the throughput-fraction ABR of the Sprint evaluation (Sprint sec. V-C, Fig. 11):
//! the highest rung whose bitrate is at most `alpha` x the throughput estimate (alpha is the
//! "aggressiveness"; DASH's default 90 %).
//!
//! The estimate is Sprint's bandwidth EWMA (sprint.md sec. 1.6): `est <- (1 - a) est + a x` with
//! `a = a0 min(1, bytes / ref)` (a0 0.3, ref 1 MB), over per-segment throughput samples measured
//! from the first body byte to the last byte ([`DownloadRecord::tput_first_byte_bps`]); the first
//! sample sets the estimate, abandoned downloads are not samples. Rung 0 before any sample.

use super::estimators::{float_in, mbps, rung_for_rate, SizeWeightedEwma};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "alpha",
        unit: Unit::Float,
        default: Default::Float(0.9),
        doc: "aggressiveness: highest rung <= alpha x estimate (Sprint sec. V-C: DASH's default 90 %)",
    },
    ParamSpec {
        name: "a0",
        unit: Unit::Float,
        default: Default::Float(0.3),
        doc: "EWMA gain for a sample of at least ref_bytes: a = a0 min(1, bytes / ref_bytes) (sprint.md sec. 1.6)",
    },
    ParamSpec {
        name: "ref_bytes",
        unit: Unit::Bytes,
        default: Default::Int(1_000_000),
        doc: "download size at which a sample gets the full gain a0 (smaller downloads weigh less; 1 MB)",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "tputfrac",
    summary: "Sprint's throughput-fraction ABR: highest rung <= alpha (0.9) x size-weighted EWMA of segment throughput",
    reference: "Sprint (Arye, Sen, Freedman, arXiv 1901.00038) sec. IV-A (estimator) and V-C (Fig. 11)",
    params: PARAMS,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let alpha = float_in(p, PARAMS, "alpha", 1e-9, 100.0)?;
    let a0 = float_in(p, PARAMS, "a0", 1e-9, 1.0)?;
    let r = p.req_u64(PARAMS, "ref_bytes")?;
    if r == 0 {
        return Err(crate::params::perr("ref_bytes", "expected > 0"));
    }
    Ok(Box::new(TputFrac { alpha, est: SizeWeightedEwma::new(a0, r as f64) }))
}

pub struct TputFrac {
    alpha: f64,
    est: SizeWeightedEwma,
}

impl Abr for TputFrac {
    fn name(&self) -> &'static str {
        "tputfrac"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let Some(t) = self.est.estimate() else {
            return Decision { rung: 0, delay: 0, reason: "no throughput sample yet -> rung 0".into() };
        };
        let q = rung_for_rate(&obs.video.bitrates_bps, self.alpha * t);
        Decision { rung: q, delay: 0, reason: format!("ewma {}*{} -> rung {q}", mbps(t), self.alpha) }
    }
    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        if rec.abandoned || rec.bytes == 0 {
            return;
        }
        self.est.push(rec.tput_first_byte_bps(), rec.bytes as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::SEC;

    #[test]
    fn fraction_of_the_size_weighted_ewma() {
        let v = cbr(&[500, 1000, 2000, 4000], 2, 10);
        let mut a = build(&Params::new(), &v).unwrap();
        // no sample: rung 0
        assert_eq!(a.choose(&obs(&v, 0, 0, None, &[])).rung, 0);
        // 1 MB in 2 s after a 500 ms first-byte latency: 4 Mbit/s (first to last byte, not 3.2 from the request)
        let h = [rec(0, 0, 1_000_000, 0, 500, 2000)];
        a.on_download(&obs(&v, 0, 0, None, &h), &h[0]);
        // 0.9 * 4 = 3.6 -> rung 2 (2 Mbit/s)
        assert_eq!(a.choose(&obs(&v, 1, 2 * SEC, Some(0), &h)).rung, 2);
        // 250 kB in 2 s = 1 Mbit/s: a = 0.3 * 0.25 = 0.075 -> 0.925 * 4 + 0.075 * 1 = 3.775; * 0.9 = 3.3975 -> rung 2
        let r = rec(1, 2, 250_000, 3 * SEC, 100, 2000);
        a.on_download(&obs(&v, 1, 0, Some(0), &[]), &r);
        assert_eq!(a.choose(&obs(&v, 2, 2 * SEC, Some(2), &[])).rung, 2);
        // 2 MB in 8 s = 2 Mbit/s: a = 0.3 -> 0.7 * 3.775 + 0.3 * 2 = 3.2425; * 0.9 = 2.91825 -> still rung 2
        let r = rec(2, 2, 2_000_000, 6 * SEC, 100, 8000);
        a.on_download(&obs(&v, 2, 0, Some(2), &[]), &r);
        assert_eq!(a.choose(&obs(&v, 3, 2 * SEC, Some(2), &[])).rung, 2);
        // again: 0.7 * 3.2425 + 0.6 = 2.86975; * 0.9 = 2.582775 -> rung 2; once more: 2.608825 * 0.9 = 2.3479 -> 2;
        // once more: 2.4261775 * 0.9 = 2.18356 -> 2; once more: 2.29832425 * 0.9 = 2.0685 -> 2;
        // once more: 2.208826975 * 0.9 = 1.98794 -> rung 1
        let mut rungs = vec![];
        for _ in 0..5 {
            a.on_download(&obs(&v, 2, 0, Some(2), &[]), &r);
            rungs.push(a.choose(&obs(&v, 3, 2 * SEC, Some(2), &[])).rung);
        }
        assert_eq!(rungs, vec![2, 2, 2, 2, 1]);
        // an abandoned download is not a sample
        let mut ab = rec(3, 2, 10, 0, 100, 2000);
        ab.abandoned = true;
        a.on_download(&obs(&v, 3, 0, Some(2), &[]), &ab);
        assert_eq!(a.choose(&obs(&v, 3, 2 * SEC, Some(2), &[])).rung, 1);
    }

    #[test]
    fn alpha_and_bad_parameters() {
        let v = cbr(&[500, 1000, 2000, 4000], 2, 10);
        // alpha 0.5: 4 Mbit/s -> 2 -> rung 2; alpha 1.0: 4 -> rung 3 (equal counts as <=)
        for (alpha, want) in [(0.5, 2), (1.0, 3), (0.2, 0)] {
            let mut a = build(&Params::new().with("alpha", alpha), &v).unwrap();
            let r = rec(0, 0, 1_000_000, 0, 500, 2000);
            a.on_download(&obs(&v, 0, 0, None, &[]), &r);
            assert_eq!(a.choose(&obs(&v, 1, 2 * SEC, Some(0), &[])).rung, want, "alpha {alpha}");
        }
        assert_eq!(build(&Params::new().with("alpha", 0.0), &v).err().unwrap().param, "alpha");
        assert_eq!(build(&Params::new().with("a0", 1.5), &v).err().unwrap().param, "a0");
        assert_eq!(build(&Params::new().with("ref_bytes", 0), &v).err().unwrap().param, "ref_bytes");
    }
}
