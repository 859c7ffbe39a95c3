//! Perceptual-quality curves for flow controllers: a video's chunk-averaged PQ as a
//! piecewise-linear function of rate (Minerva Eq. 2), its inverse and its slope.

use crate::video::Video;

/// A monotone piecewise-linear curve through `(rate bit/s, value)` points, starting at (0, 0)
/// (Minerva's public code interpolates from the origin below the lowest rung) and flat above the
/// last point.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub pts: Vec<(f64, f64)>,
}

impl Curve {
    /// From points with increasing rates; values are made monotone by their running maximum (the
    /// upper monotone envelope; non-monotone PQ tables have no inverse otherwise). The origin is
    /// prepended unless the first rate is 0.
    pub fn new(points: &[(f64, f64)]) -> Curve {
        let mut pts = Vec::with_capacity(points.len() + 1);
        if points.first().is_none_or(|p| p.0 > 0.0) {
            pts.push((0.0, 0.0));
        }
        let mut m = f64::NEG_INFINITY;
        for &(r, v) in points {
            m = m.max(v);
            pts.push((r, m));
        }
        Curve { pts }
    }

    /// Eq. 2: the chunk-averaged quality `metric` of `video` at each rung's nominal bitrate
    /// (`metric` "bitrate" = the bitrate in Mbit/s). None if the video has no such table.
    pub fn of_video(video: &Video, metric: &str) -> Option<Curve> {
        let n = video.n_segments().max(1) as f64;
        let pts: Option<Vec<(f64, f64)>> = (0..video.n_rungs())
            .map(|r| {
                let b = video.bitrates_bps[r] as f64;
                if metric == "bitrate" {
                    return Some((b, b / 1e6));
                }
                let t = video.quality.get(metric)?;
                Some((b, t.iter().map(|row| row[r]).sum::<f64>() / n))
            })
            .collect();
        Some(Curve::new(&pts?))
    }

    /// Value at rate `r` (bit/s): linear interpolation, flat above the last point.
    pub fn at(&self, r: f64) -> f64 {
        let p = &self.pts;
        if r <= p[0].0 {
            return p[0].1;
        }
        let i = p.partition_point(|q| q.0 < r);
        if i >= p.len() {
            return p[p.len() - 1].1;
        }
        let (x0, y0) = p[i - 1];
        let (x1, y1) = p[i];
        if x1 <= x0 {
            y1
        } else {
            y0 + (r - x0) / (x1 - x0) * (y1 - y0)
        }
    }

    /// Smallest rate with value `u` (clamped: 0 below the first value, the last rate above the
    /// last value).
    pub fn inverse(&self, u: f64) -> f64 {
        let p = &self.pts;
        if u <= p[0].1 {
            return p[0].0;
        }
        let i = p.partition_point(|q| q.1 < u);
        if i >= p.len() {
            return p[p.len() - 1].0;
        }
        let (x0, y0) = p[i - 1];
        let (x1, y1) = p[i];
        if y1 <= y0 {
            x1
        } else {
            x0 + (u - y0) / (y1 - y0) * (x1 - x0)
        }
    }

    /// Slope (value per bit/s) at rate `r`: of the segment right of `r` (0 above the last point).
    pub fn slope(&self, r: f64) -> f64 {
        let p = &self.pts;
        let i = p.partition_point(|q| q.0 <= r);
        if i == 0 || i >= p.len() {
            return 0.0;
        }
        let (x0, y0) = p[i - 1];
        let (x1, y1) = p[i];
        if x1 > x0 {
            (y1 - y0) / (x1 - x0)
        } else {
            0.0
        }
    }

    /// The largest value.
    pub fn top(&self) -> f64 {
        self.pts[self.pts.len() - 1].1
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::time::SEC;

    /// A video with `n` 4-s segments, CBR sizes and a constant VMAF table.
    pub(crate) fn video_with_vmaf(name: &str, rates: &[f64], vmaf: &[f64], n: usize) -> Video {
        let row_sizes: Vec<u64> = rates.iter().map(|r| (r * 4.0 / 8.0) as u64).collect();
        let mut quality = std::collections::BTreeMap::new();
        quality.insert("vmaf".to_string(), vec![vmaf.to_vec(); n]);
        Video {
            name: name.into(),
            segment_duration: 4 * SEC,
            last_segment_duration: None,
            bitrates_bps: rates.iter().map(|r| *r as u64).collect(),
            sizes: vec![row_sizes; n],
            quality,
            resolutions: None,
            byte_offsets: None,
            voxel: None,
        }
    }

    #[test]
    fn interpolation_inverse_and_slope_by_hand() {
        let c = Curve::new(&[(1e6, 40.0), (3e6, 80.0)]);
        assert_eq!(c.at(0.5e6), 20.0); // from the origin
        assert_eq!(c.at(2e6), 60.0);
        assert_eq!(c.at(9e6), 80.0); // flat above
        assert_eq!(c.inverse(60.0), 2e6);
        assert_eq!(c.inverse(20.0), 0.5e6);
        assert_eq!(c.inverse(95.0), 3e6); // clamped
        assert_eq!(c.inverse(-3.0), 0.0);
        assert_eq!(c.slope(2e6), 20.0 / 1e6);
        assert_eq!(c.slope(4e6), 0.0);
        // non-monotone tables get their running maximum
        let m = Curve::new(&[(1e6, 60.0), (2e6, 40.0), (3e6, 70.0)]);
        assert_eq!(m.at(2e6), 60.0);
        assert_eq!(m.inverse(65.0), 2.5e6);
    }

    #[test]
    fn of_video_averages_chunks() {
        let mut v = video_with_vmaf("a", &[1e6, 2e6], &[50.0, 80.0], 2);
        v.quality.get_mut("vmaf").unwrap()[1] = vec![30.0, 60.0];
        let c = Curve::of_video(&v, "vmaf").unwrap();
        assert_eq!(c.pts, vec![(0.0, 0.0), (1e6, 40.0), (2e6, 70.0)]);
        assert!(Curve::of_video(&v, "psnr").is_none());
        assert_eq!(Curve::of_video(&v, "bitrate").unwrap().at(2e6), 2.0);
    }
}
