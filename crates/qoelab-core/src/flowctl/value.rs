//! Minerva's value function V_h(buffer, rate, current rung) (§5.3, App. C): the expected per-chunk
//! QoE (Eq. 1) of the next h chunks if the client keeps download rate r, with its ABR an MPC of
//! horizon h whose objective is Eq. 1 on the provider's quality metric. With a constant-rate
//! predictor and no discount, MPC's plan is the optimal h-chunk plan (App. C's recursion with
//! gamma = 1), computed here exactly by a bounded depth-first search over rung sequences.
//!
//! File format (JSON, `qoelab minerva value-function`): docs/models/flow_controller-minerva.md.

use crate::video::Video;
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "qoelab.value_function";
pub const VERSION: u32 = 1;

/// A value function on a grid: `values[rung][rate][buffer]`, bilinear in (buffer, rate) per
/// rung, clamped at the grid's edges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueFunction {
    pub format: String,
    pub version: u32,
    /// Name of the video it was computed for.
    pub video: String,
    pub metric: String,
    pub horizon: usize,
    pub beta: f64,
    pub gamma: f64,
    /// The player's buffer cap assumed (s).
    pub buffer_max_s: f64,
    /// Mean segment duration (s) and chunk-averaged segment sizes per rung (bytes) used.
    pub segment_s: f64,
    pub bitrates_bps: Vec<u64>,
    pub rates_bps: Vec<f64>,
    pub buffers_s: Vec<f64>,
    pub values: Vec<Vec<Vec<f64>>>,
}

fn bracket(axis: &[f64], x: f64) -> (usize, usize, f64) {
    if x <= axis[0] || axis.len() == 1 {
        return (0, 0, 0.0);
    }
    let i = axis.partition_point(|a| *a < x);
    if i >= axis.len() {
        return (axis.len() - 1, axis.len() - 1, 0.0);
    }
    let (a, b) = (axis[i - 1], axis[i]);
    (i - 1, i, if b > a { (x - a) / (b - a) } else { 0.0 })
}

impl ValueFunction {
    /// A bare grid (tests, importers): the other fields are placeholders.
    pub fn from_grid(horizon: usize, rates_bps: Vec<f64>, buffers_s: Vec<f64>, values: Vec<Vec<Vec<f64>>>) -> Self {
        ValueFunction {
            format: FORMAT.into(),
            version: VERSION,
            video: String::new(),
            metric: String::new(),
            horizon,
            beta: 25.0,
            gamma: 2.5,
            buffer_max_s: 0.0,
            segment_s: 0.0,
            bitrates_bps: Vec::new(),
            rates_bps,
            buffers_s,
            values,
        }
    }

    /// Check the shape: the format tag, non-empty increasing axes, one finite table per rung.
    pub fn validate(&self, rungs: usize) -> Result<(), String> {
        if self.format != FORMAT || self.version != VERSION {
            return Err(format!("expected format \"{FORMAT}\" version {VERSION}"));
        }
        let inc = |a: &[f64]| !a.is_empty() && a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|x| x.is_finite());
        if !inc(&self.rates_bps) || !inc(&self.buffers_s) {
            return Err("rates_bps and buffers_s must be non-empty and increasing".into());
        }
        if self.values.len() != rungs {
            return Err(format!("values: expected {rungs} rungs (the video's), found {}", self.values.len()));
        }
        for t in &self.values {
            if t.len() != self.rates_bps.len() || t.iter().any(|row| row.len() != self.buffers_s.len()) {
                return Err("values: expected [rung][rate][buffer] on the axes' sizes".into());
            }
            if t.iter().flatten().any(|x| !x.is_finite()) {
                return Err("values: expected finite numbers".into());
            }
        }
        Ok(())
    }

    /// V at (buffer s, rate bit/s, rung).
    pub fn eval(&self, buffer_s: f64, rate_bps: f64, rung: usize) -> f64 {
        let t = &self.values[rung.min(self.values.len() - 1)];
        let (r0, r1, fr) = bracket(&self.rates_bps, rate_bps);
        let (b0, b1, fb) = bracket(&self.buffers_s, buffer_s);
        let at = |r: usize| t[r][b0] + fb * (t[r][b1] - t[r][b0]);
        at(r0) + fr * (at(r1) - at(r0))
    }
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct VfParams {
    pub metric: String,
    pub horizon: usize,
    pub beta: f64,
    pub gamma: f64,
    pub buffer_max_s: f64,
    pub rates_bps: Vec<f64>,
    pub buffers_s: Vec<f64>,
}

impl Default for VfParams {
    /// h = 5, beta 25, gamma 2.5 (Fig. 4, Eq. 1); rates 0.1-8 Mbit/s by 0.1 and buffers 0-40 s by
    /// 0.5 s (§6.2's rate grid, §7's coarser buffer grid); a 60 s player buffer.
    fn default() -> Self {
        VfParams {
            metric: "vmaf".into(),
            horizon: 5,
            beta: 25.0,
            gamma: 2.5,
            buffer_max_s: 60.0,
            rates_bps: (1..=80).map(|k| k as f64 * 1e5).collect(),
            buffers_s: (0..=80).map(|k| k as f64 * 0.5).collect(),
        }
    }
}

struct Search<'a> {
    p: &'a [f64],
    /// Segment size per rung (bits).
    bits: &'a [f64],
    seg: f64,
    beta: f64,
    gamma: f64,
    bmax: f64,
    rate: f64,
    pmax: f64,
    best: f64,
}

impl Search<'_> {
    /// Depth-first search over the rung sequences of `left` chunks; `acc` is the QoE so far.
    fn dfs(&mut self, left: usize, b: f64, prev: usize, acc: f64) {
        if left == 0 {
            self.best = self.best.max(acc);
            return;
        }
        // bound: no sequence can add more than left x max P
        if acc + left as f64 * self.pmax <= self.best {
            return;
        }
        for e in (0..self.p.len()).rev() {
            let dl = self.bits[e] / self.rate;
            let rebuf = (dl - b).max(0.0);
            let q = self.p[e] - self.beta * rebuf - self.gamma * (self.p[e] - self.p[prev]).abs();
            let b2 = ((b - dl).max(0.0) + self.seg).min(self.bmax);
            self.dfs(left - 1, b2, e, acc + q);
        }
    }
}

/// Compute V_h of `video` on the grid of `prm` (chunk-averaged sizes and qualities).
pub fn compute(video: &Video, prm: &VfParams) -> Result<ValueFunction, String> {
    let n = video.n_segments();
    let rungs = video.n_rungs();
    if n == 0 || rungs == 0 {
        return Err("the video has no segments".into());
    }
    if prm.horizon == 0 || prm.horizon > 8 {
        return Err("horizon: expected 1 to 8 chunks".into());
    }
    let p: Vec<f64> = if prm.metric == "bitrate" {
        video.bitrates_bps.iter().map(|b| *b as f64 / 1e6).collect()
    } else {
        let t = video.quality.get(&prm.metric).ok_or_else(|| format!("the video has no \"{}\" table", prm.metric))?;
        (0..rungs).map(|r| t.iter().map(|row| row[r]).sum::<f64>() / n as f64).collect()
    };
    let bits: Vec<f64> =
        (0..rungs).map(|r| (0..n).map(|s| video.size(s, r) as f64).sum::<f64>() * 8.0 / n as f64).collect();
    let seg = crate::time::secs(video.duration()) / n as f64;
    let pmax = p.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let h = prm.horizon;
    let mut values = vec![vec![vec![0.0; prm.buffers_s.len()]; prm.rates_bps.len()]; rungs];
    for (ri, &rate) in prm.rates_bps.iter().enumerate() {
        if rate.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err("rates_bps: expected rates > 0".into());
        }
        for (e, table) in values.iter_mut().enumerate() {
            for (bi, &b) in prm.buffers_s.iter().enumerate() {
                let mut s = Search {
                    p: &p,
                    bits: &bits,
                    seg,
                    beta: prm.beta,
                    gamma: prm.gamma,
                    bmax: prm.buffer_max_s,
                    rate,
                    pmax,
                    best: f64::NEG_INFINITY,
                };
                s.dfs(h, b.min(prm.buffer_max_s), e, 0.0);
                table[ri][bi] = s.best / h as f64;
            }
        }
    }
    let vf = ValueFunction {
        format: FORMAT.into(),
        version: VERSION,
        video: video.name.clone(),
        metric: prm.metric.clone(),
        horizon: h,
        beta: prm.beta,
        gamma: prm.gamma,
        buffer_max_s: prm.buffer_max_s,
        segment_s: seg,
        bitrates_bps: video.bitrates_bps.clone(),
        rates_bps: prm.rates_bps.clone(),
        buffers_s: prm.buffers_s.clone(),
        values,
    };
    vf.validate(rungs)?;
    Ok(vf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowctl::pq::tests::video_with_vmaf;

    fn small() -> VfParams {
        VfParams {
            rates_bps: (1..=40).map(|k| k as f64 * 2e5).collect(),
            buffers_s: (0..=40).map(|k| k as f64).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn by_hand_one_chunk() {
        // h = 1, rungs 1 and 3 Mbit/s (40, 80 VMAF), 4-s chunks (4 and 12 Mbit), rate 2 Mbit/s,
        // buffer 0, previous rung 0: rung 0 = 40 - 25 x 2 = -10; rung 1 = 80 - 25 x 6 - 2.5 x 40 = -170
        let v = video_with_vmaf("a", &[1e6, 3e6], &[40.0, 80.0], 3);
        let prm = VfParams { horizon: 1, rates_bps: vec![2e6], buffers_s: vec![0.0, 10.0], ..Default::default() };
        let vf = compute(&v, &prm).unwrap();
        assert!((vf.values[0][0][0] - -10.0).abs() < 1e-9);
        // buffer 10: rung 1 downloads in 6 s, no stall: 80 - 100 = -20 < rung 0's 40
        assert!((vf.values[0][0][1] - 40.0).abs() < 1e-9);
        // from rung 1 with 10 s: rung 1 = 80, rung 0 = 40 - 100
        assert!((vf.values[1][0][1] - 80.0).abs() < 1e-9);
        // h = 2 from rung 1, buffer 10, 2 Mbit/s: (1, 1): 6 s download, 8 s left + 4, again no
        // stall: (80 + 80) / 2 = 80
        let prm2 = VfParams { horizon: 2, ..prm };
        let vf2 = compute(&v, &prm2).unwrap();
        assert!((vf2.values[1][0][1] - 80.0).abs() < 1e-9, "{}", vf2.values[1][0][1]);
        // buffer 0 from rung 0: (0, 0) = (40 - 50) + 40 (2 s left + 4 = 6 > 2 s download) = 30 -> 15;
        // (0, 1): -10 + (80 - 25 x 0 ... 6 s download with 4 s buffer: 2 s stall) = -10 + 80 - 50 - 100 < 15
        assert!((vf2.values[0][0][0] - 15.0).abs() < 1e-9, "{}", vf2.values[0][0][0]);
    }

    #[test]
    fn monotone_in_rate_and_buffer() {
        let v = video_with_vmaf(
            "A",
            &[0.375e6, 1.05e6, 1.75e6, 2.35e6, 3.05e6, 4.3e6, 5.8e6, 7.5e6],
            &[14.21, 37.89, 49.42, 59.34, 66.39, 77.02, 85.14, 91.19],
            30,
        );
        let vf = compute(&v, &small()).unwrap();
        for t in &vf.values {
            for ri in 0..t.len() {
                for bi in 0..t[ri].len() {
                    if ri > 0 {
                        assert!(t[ri][bi] >= t[ri - 1][bi] - 1e-9, "rate: {ri} {bi}");
                    }
                    if bi > 0 {
                        assert!(t[ri][bi] >= t[ri][bi - 1] - 1e-9, "buffer: {ri} {bi}");
                    }
                }
            }
        }
        // diminishing returns in buffer at a mid rate (M21 direction): gain 0 -> 4 s >= gain 20 -> 24 s
        let ri = vf.rates_bps.iter().position(|r| (*r - 3e6).abs() < 1.0).unwrap();
        let t = &vf.values[3][ri];
        assert!(t[4] - t[0] >= t[24] - t[20]);
        let json = serde_json::to_string(&vf).unwrap();
        let back: ValueFunction = serde_json::from_str(&json).unwrap();
        let diff = back.values.iter().flatten().flatten().zip(vf.values.iter().flatten().flatten());
        assert!(diff.map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) < 1e-9);
        assert_eq!((back.horizon, &back.video, back.rates_bps.len()), (5, &vf.video, 40));
        assert!((vf.eval(2.5, 3e6, 3) - (t[2] + t[3]) / 2.0).abs() < 1e-9);
    }
}
