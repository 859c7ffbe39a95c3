//! Throughput estimators and small helpers shared by the ABRs.
//!
//! All estimators take samples in bit/s with the sample's download duration in seconds (the
//! weight of the EWMA) and return an estimate in bit/s, or `None` before the first sample.
//!
//! * [`Ewma`]: dash.js / Sabre two-speed EWMA. Each sample of duration `d` s updates
//!   `est = a*est + (1-a)*x` with `a = 0.5^(d/h)`; the estimate is zero-bias corrected by
//!   dividing by `1 - 0.5^(W/h)` where `W` is the total duration seen. The result is the minimum
//!   of the fast (3 s) and slow (8 s) half-life averages.
//! * [`SlidingWindow`]: arithmetic mean of the last N samples (Sabre 3, dash.js VOD 4).
//! * [`HarmonicMean`]: harmonic mean of the last N samples (Pensieve RB / MPC: 5).
//! * [`Robust`]: harmonic mean divided by `1 + max` absolute relative prediction error over the
//!   last 5 predictions (RobustMPC).
//! * [`SizeWeightedEwma`]: Sprint's EWMA `est <- (1-a) est + a x`, `a = a0 min(1, bytes / ref)`
//!   (takes the sample's bytes, not its duration, as the weight).

use super::DownloadRecord;
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{secs, Ns};
use std::collections::VecDeque;

/// Two half-life EWMA with zero-bias correction; estimate = min(fast, slow).
#[derive(Clone, Debug)]
pub struct Ewma {
    half_lives: [f64; 2],
    est: [f64; 2],
    total_weight: f64,
}

impl Ewma {
    /// Half-lives in seconds (dash.js/Sabre: fast 3, slow 8).
    pub fn new(fast_s: f64, slow_s: f64) -> Ewma {
        Ewma { half_lives: [fast_s, slow_s], est: [0.0; 2], total_weight: 0.0 }
    }
    pub fn push(&mut self, x_bps: f64, weight_s: f64) {
        let w = weight_s.max(1e-9);
        for i in 0..2 {
            let a = 0.5f64.powf(w / self.half_lives[i]);
            self.est[i] = a * self.est[i] + (1.0 - a) * x_bps;
        }
        self.total_weight += w;
    }
    /// The zero-bias-corrected average of half-life `i` (0 fast, 1 slow).
    pub fn corrected(&self, i: usize) -> Option<f64> {
        if self.total_weight <= 0.0 {
            return None;
        }
        let z = 1.0 - 0.5f64.powf(self.total_weight / self.half_lives[i]);
        Some(self.est[i] / z)
    }
    pub fn estimate(&self) -> Option<f64> {
        Some(self.corrected(0)?.min(self.corrected(1)?))
    }
}

/// EWMA over samples counted one by one (latency: dash.js half-lives of 1 and 2 samples); the
/// estimate is the maximum of the two (conservative for a latency).
#[derive(Clone, Debug)]
pub struct CountEwma(Ewma);

impl CountEwma {
    pub fn new(fast: f64, slow: f64) -> CountEwma {
        CountEwma(Ewma::new(fast, slow))
    }
    pub fn push(&mut self, x: f64) {
        self.0.push(x, 1.0);
    }
    pub fn estimate_max(&self) -> Option<f64> {
        Some(self.0.corrected(0)?.max(self.0.corrected(1)?))
    }
}

/// Arithmetic mean of the last `n` samples.
#[derive(Clone, Debug)]
pub struct SlidingWindow {
    n: usize,
    xs: VecDeque<f64>,
}

impl SlidingWindow {
    pub fn new(n: usize) -> SlidingWindow {
        SlidingWindow { n: n.max(1), xs: VecDeque::new() }
    }
    pub fn push(&mut self, x: f64) {
        self.xs.push_back(x);
        while self.xs.len() > self.n {
            self.xs.pop_front();
        }
    }
    pub fn estimate(&self) -> Option<f64> {
        if self.xs.is_empty() {
            return None;
        }
        Some(self.xs.iter().sum::<f64>() / self.xs.len() as f64)
    }
    pub fn len(&self) -> usize {
        self.xs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }
}

/// Harmonic mean of the last `n` samples.
#[derive(Clone, Debug)]
pub struct HarmonicMean {
    n: usize,
    xs: VecDeque<f64>,
}

impl HarmonicMean {
    pub fn new(n: usize) -> HarmonicMean {
        HarmonicMean { n: n.max(1), xs: VecDeque::new() }
    }
    pub fn push(&mut self, x: f64) {
        self.xs.push_back(x.max(1e-9));
        while self.xs.len() > self.n {
            self.xs.pop_front();
        }
    }
    pub fn estimate(&self) -> Option<f64> {
        if self.xs.is_empty() {
            return None;
        }
        Some(self.xs.len() as f64 / self.xs.iter().map(|x| 1.0 / x).sum::<f64>())
    }
}

/// RobustMPC's predictor: harmonic mean of the last `n` samples divided by
/// `1 + max(|pred - actual| / actual)` over the last `err_n` predictions. The error of a sample
/// is measured against the (undiscounted) harmonic mean that was current before the sample.
#[derive(Clone, Debug)]
pub struct Robust {
    hm: HarmonicMean,
    err_n: usize,
    errs: VecDeque<f64>,
}

impl Robust {
    pub fn new(n: usize, err_n: usize) -> Robust {
        Robust { hm: HarmonicMean::new(n), err_n: err_n.max(1), errs: VecDeque::new() }
    }
    pub fn push(&mut self, x: f64) {
        if let Some(pred) = self.hm.estimate() {
            self.errs.push_back((pred - x).abs() / x.max(1e-9));
            while self.errs.len() > self.err_n {
                self.errs.pop_front();
            }
        }
        self.hm.push(x);
    }
    pub fn max_error(&self) -> f64 {
        self.errs.iter().cloned().fold(0.0, f64::max)
    }
    pub fn harmonic(&self) -> Option<f64> {
        self.hm.estimate()
    }
    pub fn estimate(&self) -> Option<f64> {
        Some(self.hm.estimate()? / (1.0 + self.max_error()))
    }
}

/// Sprint's bandwidth EWMA (sprint.md sec. 1.6, "downweighting smaller requests"):
/// `est <- (1 - a) est + a x` with `a = a0 min(1, bytes / ref_bytes)`; the first sample sets the
/// estimate. Sprint's data plane and the `tputfrac` ABR share it.
#[derive(Clone, Debug)]
pub struct SizeWeightedEwma {
    a0: f64,
    ref_bytes: f64,
    est: Option<f64>,
}

impl SizeWeightedEwma {
    /// `a0` in (0, 1] (Sprint's reading: 0.3), `ref_bytes` > 0 (1 MB).
    pub fn new(a0: f64, ref_bytes: f64) -> SizeWeightedEwma {
        SizeWeightedEwma { a0, ref_bytes: ref_bytes.max(1e-9), est: None }
    }
    /// A sample of `x` (any rate unit) measured over a download of `bytes`.
    pub fn push(&mut self, x: f64, bytes: f64) {
        self.est = Some(match self.est {
            None => x,
            Some(e) => {
                let a = self.a0 * (bytes / self.ref_bytes).clamp(0.0, 1.0);
                (1.0 - a) * e + a * x
            }
        });
    }
    pub fn estimate(&self) -> Option<f64> {
        self.est
    }
}

/// Any of the estimators, selected by name.
#[derive(Clone, Debug)]
pub enum Estimator {
    Ewma(Ewma),
    Sliding(SlidingWindow),
    Harmonic(HarmonicMean),
    Robust(Robust),
}

impl Estimator {
    pub fn push(&mut self, x_bps: f64, dur_s: f64) {
        match self {
            Estimator::Ewma(e) => e.push(x_bps, dur_s),
            Estimator::Sliding(e) => e.push(x_bps),
            Estimator::Harmonic(e) => e.push(x_bps),
            Estimator::Robust(e) => e.push(x_bps),
        }
    }
    pub fn estimate(&self) -> Option<f64> {
        match self {
            Estimator::Ewma(e) => e.estimate(),
            Estimator::Sliding(e) => e.estimate(),
            Estimator::Harmonic(e) => e.estimate(),
            Estimator::Robust(e) => e.estimate(),
        }
    }
}

/// Which interval a throughput sample divides the bytes by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// Request sent to last byte (includes the first-byte latency).
    Request,
    /// First byte to last byte.
    FirstByte,
}

pub const SAMPLE_CHOICES: &[&str] = &["request", "first_byte"];

impl Sample {
    pub fn from_name(s: &str) -> Sample {
        if s == "request" {
            Sample::Request
        } else {
            Sample::FirstByte
        }
    }
    /// (throughput bit/s, duration s) of a record.
    pub fn of(self, r: &DownloadRecord) -> (f64, f64) {
        match self {
            Sample::Request => (r.tput_request_bps(), secs(r.t_last_byte.saturating_sub(r.t_request).max(1))),
            Sample::FirstByte => (r.tput_first_byte_bps(), secs(r.t_last_byte.saturating_sub(r.t_first_byte).max(1))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the ABRs.

/// Highest rung whose bitrate is <= `rate_bps` (rung 0 if none).
pub fn rung_for_rate(bitrates: &[u64], rate_bps: f64) -> usize {
    let mut q = 0;
    for (i, b) in bitrates.iter().enumerate() {
        if (*b as f64) <= rate_bps {
            q = i;
        }
    }
    q
}

/// Mbit/s for reasons.
pub fn mbps(bps: f64) -> String {
    format!("{:.3}Mbps", bps / 1e6)
}

/// Seconds of an Ns, as f64.
pub fn s(d: Ns) -> f64 {
    secs(d)
}

/// A duration parameter, in seconds (f64).
pub fn dur_param(p: &Params, specs: &[ParamSpec], name: &str) -> Result<f64, ParamError> {
    Ok(secs(p.req_u64(specs, name)?))
}

/// A float parameter that must be within [lo, hi].
pub fn float_in(p: &Params, specs: &[ParamSpec], name: &str, lo: f64, hi: f64) -> Result<f64, ParamError> {
    let v = p.f64(specs, name)?;
    if !(v >= lo && v <= hi) {
        return Err(crate::params::perr(name, format!("expected a value in [{lo}, {hi}], found {v}")));
    }
    Ok(v)
}

/// A positive integer parameter.
pub fn count_param(p: &Params, specs: &[ParamSpec], name: &str) -> Result<usize, ParamError> {
    let v = p.req_u64(specs, name)?;
    if v == 0 {
        return Err(crate::params::perr(name, "expected an integer >= 1"));
    }
    Ok(v as usize)
}

/// The estimator parameters shared by the rate rules.
pub const ESTIMATOR_PARAMS: [ParamSpec; 5] = [
    ParamSpec {
        name: "estimator",
        unit: Unit::Choice(&["ewma", "sliding", "harmonic", "robust"]),
        default: Default::Str("ewma"),
        doc: "throughput estimator: dash.js v5/Sabre EWMA (min of fast and slow), sliding-window mean, harmonic mean (Pensieve RB), robust harmonic (RobustMPC)",
    },
    ParamSpec {
        name: "fast_half_life",
        unit: Unit::Duration,
        default: Default::Int(3_000_000_000),
        doc: "EWMA fast half-life in download seconds (dash.js/Sabre 3 s)",
    },
    ParamSpec {
        name: "slow_half_life",
        unit: Unit::Duration,
        default: Default::Int(8_000_000_000),
        doc: "EWMA slow half-life in download seconds (dash.js/Sabre 8 s)",
    },
    ParamSpec {
        name: "window",
        unit: Unit::Int,
        default: Default::Int(4),
        doc: "samples of the sliding window (dash.js VOD 4; Sabre 3)",
    },
    ParamSpec {
        name: "harmonic_window",
        unit: Unit::Int,
        default: Default::Int(5),
        doc: "samples of the harmonic / robust estimators (Pensieve RB and MPC: 5)",
    },
];

/// Build the estimator selected by [`ESTIMATOR_PARAMS`].
pub fn build_estimator(p: &Params, specs: &[ParamSpec]) -> Result<Estimator, ParamError> {
    let fast = dur_param(p, specs, "fast_half_life")?;
    let slow = dur_param(p, specs, "slow_half_life")?;
    if fast <= 0.0 || slow <= 0.0 {
        return Err(crate::params::perr("fast_half_life", "half-lives must be > 0"));
    }
    let window = count_param(p, specs, "window")?;
    let hw = count_param(p, specs, "harmonic_window")?;
    Ok(match p.choice(specs, "estimator")? {
        "ewma" => Estimator::Ewma(Ewma::new(fast, slow)),
        "sliding" => Estimator::Sliding(SlidingWindow::new(window)),
        "harmonic" => Estimator::Harmonic(HarmonicMean::new(hw)),
        _ => Estimator::Robust(Robust::new(hw, 5)),
    })
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::super::{AbrObs, DownloadRecord};
    use crate::time::{Ns, MS, SEC};
    use crate::video::Video;

    /// A CBR video: `n` segments of `seg_s` seconds, sizes = bitrate * duration / 8.
    pub fn cbr(bitrates_kbps: &[u64], seg_s: u64, n: usize) -> Video {
        let bitrates_bps: Vec<u64> = bitrates_kbps.iter().map(|k| k * 1000).collect();
        let sizes = (0..n).map(|_| bitrates_bps.iter().map(|b| b * seg_s / 8).collect()).collect();
        Video {
            name: "test".into(),
            segment_duration: seg_s * SEC,
            last_segment_duration: None,
            bitrates_bps,
            sizes,
            quality: Default::default(),
            resolutions: None,
            byte_offsets: None,
            voxel: None,
        }
    }

    pub fn obs<'a>(v: &'a Video, seg: usize, buffer: Ns, last: Option<usize>, h: &'a [DownloadRecord]) -> AbrObs<'a> {
        let now = h.last().map(|r| r.t_last_byte).unwrap_or(0);
        AbrObs {
            now,
            video: v,
            segment: seg,
            buffer,
            buffer_max: 240 * SEC,
            last_rung: last,
            playing: true,
            history: h,
        }
    }

    /// A record: `bytes` downloaded, request at `t0`, first byte `lat_ms` later, last byte
    /// `dur_ms` after the first byte.
    pub fn rec(seg: usize, rung: usize, bytes: u64, t0: Ns, lat_ms: u64, dur_ms: u64) -> DownloadRecord {
        DownloadRecord {
            segment: seg,
            rung,
            bytes,
            t_request: t0,
            t_first_byte: t0 + lat_ms * MS,
            t_last_byte: t0 + (lat_ms + dur_ms) * MS,
            abandoned: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn ewma_zero_bias_exact() {
        let mut e = Ewma::new(3.0, 8.0);
        assert_eq!(e.estimate(), None);
        // 4 Mbit/s over 3 s. Fast: a = 0.5^(3/3) = 0.5, est = 0.5*4 = 2, correction 1-0.5^(3/3) = 0.5
        // -> 4. Slow: est = (1-0.5^(3/8))*4, correction 1-0.5^(3/8) -> 4. A first sample is exact.
        e.push(4e6, 3.0);
        assert!(close(e.corrected(0).unwrap(), 4e6));
        assert!(close(e.corrected(1).unwrap(), 4e6));
        // 1 Mbit/s over 3 s. Fast: est = 0.5*2 + 0.5*1 = 1.5, total 6 s, correction 1-0.25 = 0.75
        // -> 2.0 Mbit/s exactly.
        // Slow: a = 0.5^0.375 = 0.7711054127; est = a*(1-a)*4 + (1-a)*1
        //   = 0.7711054127*0.2288945873*4 + 0.2288945873 = 0.7060074 + 0.2288946 = 0.9349020;
        //   correction 1-0.5^0.75 = 1-0.5946035575 = 0.4053964425 -> 2.306143 Mbit/s.
        e.push(1e6, 3.0);
        assert!(close(e.corrected(0).unwrap(), 2.0e6));
        let a = 0.5f64.powf(0.375);
        let slow = (a * (1.0 - a) * 4.0 + (1.0 - a)) / (1.0 - 0.5f64.powf(0.75)) * 1e6;
        assert!((e.corrected(1).unwrap() - 2.306143e6).abs() < 1.0, "{}", e.corrected(1).unwrap());
        assert!(close(e.corrected(1).unwrap(), slow));
        // min(fast, slow) = 2.0 Mbit/s
        assert!(close(e.estimate().unwrap(), 2.0e6));
    }

    #[test]
    fn sliding_harmonic_robust_values() {
        let mut w = SlidingWindow::new(3);
        for x in [1.0, 2.0, 3.0, 6.0] {
            w.push(x);
        }
        // last 3 = 2, 3, 6 -> mean 11/3
        assert!(close(w.estimate().unwrap(), 11.0 / 3.0));
        let mut h = HarmonicMean::new(2);
        for x in [9.0, 1.0, 4.0] {
            h.push(x);
        }
        // last 2 = 1, 4 -> 2/(1 + 1/4) = 1.6
        assert!(close(h.estimate().unwrap(), 1.6));
        let mut r = Robust::new(5, 5);
        r.push(2.0); // no prediction yet: no error
        assert!(close(r.estimate().unwrap(), 2.0));
        r.push(1.0); // predicted 2, actual 1 -> error |2-1|/1 = 1.0
                     // hm(2, 1) = 2/(0.5+1) = 4/3; robust = (4/3)/(1+1) = 2/3
        assert!(close(r.max_error(), 1.0));
        assert!(close(r.estimate().unwrap(), 2.0 / 3.0));
        r.push(4.0 / 3.0); // predicted 4/3 exactly -> error 0, max stays 1
                           // hm(2,1,4/3) = 3/(0.5+1+0.75) = 3/2.25 = 4/3; robust = (4/3)/2 = 2/3
        assert!(close(r.estimate().unwrap(), 2.0 / 3.0));
        for _ in 0..5 {
            r.push(4.0 / 3.0);
        }
        // predictions before the 5 pushes (window of 5 samples):
        //   hm(2,1,4/3) = 4/3 -> err 0; hm(2,1,4/3,4/3) = 4/3 -> 0; hm(2,1,4/3,4/3,4/3) = 4/3 -> 0;
        //   hm(1,4/3,4/3,4/3,4/3) = 5/(1+4*0.75) = 1.25 -> |1.25-4/3|/(4/3) = 0.0625; hm(4/3 x5) -> 0.
        // last 5 errors = [0, 0, 0, 0.0625, 0] (the 1.0 has left) -> max 0.0625;
        // estimate = (4/3)/1.0625 = 1.2549
        assert!((r.max_error() - 0.0625).abs() < 1e-12, "{}", r.max_error());
        assert!((r.estimate().unwrap() - (4.0 / 3.0) / 1.0625).abs() < 1e-12);
    }

    #[test]
    fn size_weighted_ewma_by_hand() {
        let mut e = SizeWeightedEwma::new(0.3, 1e6);
        assert_eq!(e.estimate(), None);
        e.push(4e6, 250_000.0); // the first sample sets the estimate
        assert_eq!(e.estimate(), Some(4e6));
        // 500 kB: a = 0.3 * 0.5 = 0.15 -> 0.85 * 4 + 0.15 * 2 = 3.7 Mbit/s
        e.push(2e6, 500_000.0);
        assert!(close(e.estimate().unwrap(), 3.7e6));
        // 3 MB: a = 0.3 * min(1, 3) = 0.3 -> 0.7 * 3.7 + 0.3 * 1 = 2.89 Mbit/s
        e.push(1e6, 3e6);
        assert!(close(e.estimate().unwrap(), 2.89e6));
        // 0 bytes: a = 0, unchanged
        e.push(9e9, 0.0);
        assert!(close(e.estimate().unwrap(), 2.89e6));
    }

    #[test]
    fn rung_for_rate_edges() {
        let b = [300_000, 750_000, 1_200_000];
        assert_eq!(rung_for_rate(&b, 100_000.0), 0);
        assert_eq!(rung_for_rate(&b, 750_000.0), 1); // equal counts as <=
        assert_eq!(rung_for_rate(&b, 749_999.0), 0);
        assert_eq!(rung_for_rate(&b, 9e9), 2);
    }
}
