//! A streaming, log-bucketed histogram of non-negative integers (e.g. queue sojourn times in ns)
//! with a bounded relative error, for percentiles whose memory does not grow with the number of
//! samples.
//!
//! Buckets: values below 2^(B+1) = 256 have a bucket each (exact). Above, every octave
//! [2^e, 2^(e+1)) is split into 2^B = 128 equal buckets, so a bucket [lo, hi] has a width of
//! 2^(e-B) and lo >= 2^e. A quantile is reported as the midpoint of the bucket holding the
//! sample of that rank, so it differs from the exact sample by at most half a bucket width:
//!
//! |reported - exact| <= 2^(e-B-1) <= exact / 2^(B+1) = exact / 256  (relative error <= 0.39%).
//!
//! Memory: at most 56 x 128 + 256 = 7,424 counters (u64, 58 KB), allocated up to the largest value
//! seen; for sojourn times up to ~17 s (2^34 ns) about 3,700 counters (29 KB), independent of the
//! number of samples and of the simulated duration. `min`/`max` are exact.

/// Sub-bucket bits per octave.
const B: u32 = 7;
/// Values below this have one bucket each.
const EXACT: u64 = 1 << (B + 1);

/// Upper bound of the relative error of [`LogHistogram::quantile`]: 1/256.
pub const RELATIVE_ERROR: f64 = 1.0 / (1u64 << (B + 1)) as f64;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogHistogram {
    counts: Vec<u64>,
    n: u64,
    min: u64,
    max: u64,
}

#[inline]
fn index(v: u64) -> usize {
    if v < EXACT {
        v as usize
    } else {
        let e = 63 - v.leading_zeros();
        let shift = e - B;
        ((shift as usize) << B) + (v >> shift) as usize
    }
}

/// Smallest and largest value of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    if (i as u64) < EXACT {
        (i as u64, i as u64)
    } else {
        let shift = (i >> B) as u32 - 1;
        let m = (i - ((shift as usize) << B)) as u64;
        let lo = m << shift;
        (lo, lo + ((1u64 << shift) - 1))
    }
}

impl LogHistogram {
    pub fn new() -> LogHistogram {
        LogHistogram::default()
    }

    /// Add one sample.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += 1;
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }
    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    /// Nearest-rank percentile (`q` in [0, 100]): the sample of rank ceil(q/100 x n) (at least 1),
    /// approximated by its bucket's midpoint (clamped to the exact min/max). None if empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = (((q / 100.0) * self.n as f64).ceil().max(1.0) as u64).min(self.n);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bounds(i);
                let mid = lo as f64 + (hi - lo) as f64 / 2.0;
                return Some(mid.clamp(self.min as f64, self.max as f64));
            }
        }
        unreachable!("rank <= n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn exact(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank.min(sorted.len()) - 1]
    }

    #[test]
    fn buckets_are_contiguous_and_bounded() {
        let mut prev_hi: Option<u64> = None;
        for i in 0..(60usize << B) {
            let (lo, hi) = bounds(i);
            if let Some(p) = prev_hi {
                assert_eq!(lo, p + 1, "bucket {i}");
            }
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            assert!((hi - lo) as f64 / 2.0 <= lo as f64 * RELATIVE_ERROR + 0.5, "bucket {i}");
            prev_hi = Some(hi);
            if hi > (1 << 60) {
                break;
            }
        }
        assert_eq!(index(u64::MAX), index(u64::MAX - 1));
    }

    #[test]
    fn quantiles_within_bound_on_random_data() {
        let mut rng = Rng::for_component(1, "histogram-test");
        for case in 0..6 {
            let mut h = LogHistogram::new();
            let mut v = Vec::new();
            for _ in 0..20_000 {
                let x = match case {
                    0 => (rng.uniform() * 300.0) as u64,               // exact range
                    1 => (rng.uniform() * 50e6) as u64,                // uniform 0..50 ms
                    2 => rng.exp(5e6) as u64,                          // exponential, mean 5 ms
                    3 => (rng.uniform() * 30.0).exp() as u64,          // log-uniform up to ~1e13
                    4 => 20_000_000 + (rng.uniform() * 1000.0) as u64, // narrow around 20 ms
                    _ => {
                        if rng.uniform() < 0.5 {
                            0
                        } else {
                            1 << 40
                        }
                    } // two atoms
                };
                h.record(x);
                v.push(x);
            }
            v.sort_unstable();
            for q in [0.0, 1.0, 10.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
                let e = exact(&v, q) as f64;
                let got = h.quantile(q).unwrap();
                assert!((got - e).abs() <= e * RELATIVE_ERROR + 0.5, "case {case} q {q}: {got} vs {e}");
            }
            assert_eq!(h.max(), v.last().copied());
            assert_eq!(h.min(), v.first().copied());
            assert_eq!(h.count(), v.len() as u64);
        }
        assert_eq!(LogHistogram::new().quantile(50.0), None);
    }

    #[test]
    fn memory_is_bounded() {
        let mut h = LogHistogram::new();
        for i in 0..1_000_000u64 {
            h.record(i * 17 % 20_000_000_000);
        }
        assert!(h.counts.len() < 64 << B, "{}", h.counts.len());
        h.record(u64::MAX);
        assert_eq!(h.counts.len(), (56 << B) + 256);
    }
}
