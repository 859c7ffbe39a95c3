//! Minerva's corpus-wide normalization f (§5.4): `f(u) = (1/alpha) sum_i p_i U_i^-1(u)`, the
//! popularity-weighted **horizontal** average of the videos' utility curves (the mean rate a video
//! needs for utility u) divided by alpha, so that a flow whose video is "typical" gets weight
//! alpha at its fair share. Stored as a monotone table u -> mean rate, linear in between and
//! clamped at both ends.
//!
//! File format (JSON, `qoelab minerva normalize`): docs/models/flow_controller-minerva.md.

use super::minerva::z_curve;
use super::pq::Curve;
use crate::video::Video;
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "qoelab.normalization";
pub const VERSION: u32 = 1;

/// A normalization table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Normalization {
    pub format: String,
    pub version: u32,
    /// Quality metric of the curves (`vmaf`, `psnr`, `ssim` or `bitrate`).
    pub metric: String,
    /// `maxmin` (curves U = P) or `propfair` (curves Z = pf_c - P'/P, App. D).
    pub objective: String,
    pub pf_c: f64,
    /// Target mean weight; f(u) = mean_rate_bps(u) / alpha (a provider's explicit alpha wins).
    pub alpha: f64,
    /// The videos and their popularity (normalized to sum 1).
    pub videos: Vec<String>,
    pub popularity: Vec<f64>,
    /// Increasing utility (score) grid.
    pub utility: Vec<f64>,
    /// Popularity-weighted mean rate (bit/s) that the videos need for each utility: nondecreasing.
    pub mean_rate_bps: Vec<f64>,
}

impl Normalization {
    /// Check the structure; the error names the key.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |k: &str, m: &str| Err((k.to_string(), m.to_string()));
        if self.format != FORMAT || self.version != VERSION {
            return e("format", &format!("expected format \"{FORMAT}\" version {VERSION}"));
        }
        if !["maxmin", "propfair"].contains(&self.objective.as_str()) {
            return e("objective", "expected \"maxmin\" or \"propfair\"");
        }
        if !(self.alpha > 0.0 && self.alpha.is_finite()) {
            return e("alpha", "expected a number > 0");
        }
        let u = &self.utility;
        if u.len() < 2 || !u.windows(2).all(|w| w[0] < w[1]) || !u.iter().all(|x| x.is_finite()) {
            return e("utility", "expected at least 2 finite, increasing values");
        }
        let m = &self.mean_rate_bps;
        if m.len() != u.len() {
            return e("mean_rate_bps", &format!("expected {} values (as utility), found {}", u.len(), m.len()));
        }
        if !m.iter().all(|x| x.is_finite() && *x >= 0.0) || !m.windows(2).all(|w| w[0] <= w[1]) {
            return e("mean_rate_bps", "expected finite, non-negative, nondecreasing rates");
        }
        if m[m.len() - 1] <= 0.0 {
            return e("mean_rate_bps", "expected a positive rate at the top");
        }
        if self.videos.len() != self.popularity.len() {
            return e("popularity", "expected one weight per video");
        }
        Ok(())
    }

    /// The mean rate (bit/s) needed for utility `u`: linear in the table, clamped at both ends.
    pub fn mean_rate(&self, u: f64) -> f64 {
        let (x, y) = (&self.utility, &self.mean_rate_bps);
        if u.is_nan() || u <= x[0] {
            return y[0];
        }
        let i = x.partition_point(|v| *v < u);
        if i >= x.len() {
            return y[y.len() - 1];
        }
        let f = (u - x[i - 1]) / (x[i] - x[i - 1]);
        y[i - 1] + f * (y[i] - y[i - 1])
    }
}

/// Compute the normalization of `videos` with popularity weights `popularity` (any positive
/// scale; normalized here). The table is exact for the piecewise-linear curves: its grid is the
/// union of the curves' breakpoint values (and a value just above a flat stretch of a curve, where
/// its inverse jumps).
pub fn compute(
    videos: &[&Video],
    popularity: &[f64],
    metric: &str,
    objective: &str,
    pf_c: f64,
    alpha: f64,
) -> Result<Normalization, String> {
    if videos.is_empty() {
        return Err("expected at least one video".into());
    }
    if popularity.len() != videos.len() {
        return Err(format!(
            "expected {} popularity weights (one per video), found {}",
            videos.len(),
            popularity.len()
        ));
    }
    if popularity.iter().any(|p| !(p.is_finite() && *p >= 0.0)) || popularity.iter().sum::<f64>() <= 0.0 {
        return Err("popularity: expected non-negative weights with a positive sum".into());
    }
    if !(alpha > 0.0 && alpha.is_finite()) {
        return Err("alpha: expected a number > 0".into());
    }
    let maxmin = match objective {
        "maxmin" => true,
        "propfair" => false,
        o => return Err(format!("objective: expected maxmin or propfair, found \"{o}\"")),
    };
    let total: f64 = popularity.iter().sum();
    let p: Vec<f64> = popularity.iter().map(|x| x / total).collect();
    let mut curves = Vec::with_capacity(videos.len());
    for v in videos {
        let c = Curve::of_video(v, metric)
            .ok_or_else(|| format!("video \"{}\" has no \"{metric}\" quality table", v.name))?;
        curves.push(z_curve(&c, maxmin, pf_c));
    }
    let mut grid: Vec<f64> = Vec::new();
    for c in &curves {
        for (k, &(x, y)) in c.pts.iter().enumerate() {
            grid.push(y);
            if c.pts.get(k + 1).is_some_and(|q| q.1 == y && q.0 > x) {
                grid.push(y + 1e-9 * y.abs().max(1.0));
            }
        }
    }
    grid.retain(|y| y.is_finite());
    grid.sort_by(f64::total_cmp);
    grid.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * b.abs().max(1.0));
    if grid.len() < 2 {
        return Err("the curves are flat: no utility range to normalize over".into());
    }
    let mean_rate_bps: Vec<f64> =
        grid.iter().map(|&u| curves.iter().zip(&p).map(|(c, pi)| pi * c.inverse(u)).sum()).collect();
    let n = Normalization {
        format: FORMAT.into(),
        version: VERSION,
        metric: metric.into(),
        objective: objective.into(),
        pf_c,
        alpha,
        videos: videos.iter().map(|v| v.name.clone()).collect(),
        popularity: p,
        utility: grid,
        mean_rate_bps,
    };
    n.validate().map_err(|(k, m)| format!("{k}: {m}"))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowctl::pq::tests::video_with_vmaf;

    #[test]
    fn single_video_is_its_own_inverse_and_monotone() {
        let v = video_with_vmaf("a", &[1e6, 2e6, 4e6], &[40.0, 70.0, 90.0], 4);
        let n = compute(&[&v], &[1.0], "vmaf", "maxmin", 1.0, 1.65).unwrap();
        assert!(n.mean_rate_bps.windows(2).all(|w| w[0] <= w[1]));
        let c = Curve::of_video(&v, "vmaf").unwrap();
        for r in [0.5e6, 1e6, 1.5e6, 3e6, 3.9e6] {
            // the video's fair share r: weight r / f(U(r)) = alpha
            let w = r / (n.mean_rate(c.at(r)) / n.alpha);
            assert!((w - 1.65).abs() < 1e-6, "r {r}: w {w}");
        }
        // clamped at both ends
        assert_eq!(n.mean_rate(-5.0), 0.0);
        assert!((n.mean_rate(1e3) - 4e6).abs() < 1e-6);
    }

    #[test]
    fn popularity_weights_the_horizontal_average() {
        let a = video_with_vmaf("a", &[1e6, 2e6], &[50.0, 80.0], 4);
        let b = video_with_vmaf("b", &[1e6, 2e6], &[70.0, 90.0], 4);
        let n = compute(&[&a, &b], &[3.0, 1.0], "vmaf", "maxmin", 1.0, 1.0).unwrap();
        assert_eq!(n.popularity, vec![0.75, 0.25]);
        // u = 75: a needs 1.8333 Mbit/s, b needs 1.25 Mbit/s
        let want = 0.75 * (1e6 + 25.0 / 30.0 * 1e6) + 0.25 * (1e6 + 5.0 / 20.0 * 1e6);
        assert!((n.mean_rate(75.0) - want).abs() < 1.0, "{}", n.mean_rate(75.0));
        let t = serde_json::to_string(&n).unwrap();
        let back: Normalization = serde_json::from_str(&t).unwrap();
        assert_eq!(back.utility.len(), n.utility.len());
        for (x, y) in back.mean_rate_bps.iter().zip(&n.mean_rate_bps) {
            assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0));
        }
        assert!(back.validate().is_ok());
    }

    #[test]
    fn bad_inputs_name_the_key() {
        let a = video_with_vmaf("a", &[1e6, 2e6], &[50.0, 80.0], 4);
        assert!(compute(&[&a], &[1.0, 2.0], "vmaf", "maxmin", 1.0, 1.0).is_err());
        assert!(compute(&[&a], &[1.0], "psnr", "maxmin", 1.0, 1.0).unwrap_err().contains("psnr"));
        let mut n = compute(&[&a], &[1.0], "vmaf", "maxmin", 1.0, 1.0).unwrap();
        n.mean_rate_bps.reverse();
        assert_eq!(n.validate().unwrap_err().0, "mean_rate_bps");
        n.utility.pop();
        assert_eq!(n.validate().unwrap_err().0, "mean_rate_bps");
    }
}
