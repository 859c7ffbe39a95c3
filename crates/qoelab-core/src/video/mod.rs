//! The video model: a bitrate ladder, per-segment sizes per rung (VBR), optional per-segment
//! quality per rung in any metric, optional frame tables.
//!
//! Loaders (Sabre movie JSON, the corpus format, DASH MPD, HLS with `#EXT-X-SIZE`) live in the
//! Python front and hand the core a normalized JSON document of [`Video`].

use crate::time::Ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One video as the player and the ABRs see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Video {
    pub name: String,
    /// Nominal segment duration (ns). The last segment may be shorter (see `last_segment_duration`).
    pub segment_duration: Ns,
    /// Duration of the last segment (ns); None = same as the others.
    #[serde(default)]
    pub last_segment_duration: Option<Ns>,
    /// Nominal (advertised) bitrate of each rung, bit/s, strictly ascending.
    pub bitrates_bps: Vec<u64>,
    /// `sizes[segment][rung]`: bytes of that segment at that rung (media bytes as requested).
    pub sizes: Vec<Vec<u64>>,
    /// Optional quality tables: metric name ("vmaf", "ssim", "psnr", ...) -> `[segment][rung]`.
    #[serde(default)]
    pub quality: BTreeMap<String, Vec<Vec<f64>>>,
    /// Optional display resolution of each rung as (width, height).
    #[serde(default)]
    pub resolutions: Option<Vec<(u32, u32)>>,
}

impl Video {
    pub fn n_segments(&self) -> usize {
        self.sizes.len()
    }
    pub fn n_rungs(&self) -> usize {
        self.bitrates_bps.len()
    }
    /// Duration of segment `i` (ns).
    pub fn seg_duration(&self, i: usize) -> Ns {
        if i + 1 == self.n_segments() {
            self.last_segment_duration.unwrap_or(self.segment_duration)
        } else {
            self.segment_duration
        }
    }
    /// Total media duration (ns).
    pub fn duration(&self) -> Ns {
        let n = self.n_segments() as u64;
        if n == 0 {
            return 0;
        }
        (n - 1) * self.segment_duration + self.seg_duration(self.n_segments() - 1)
    }
    pub fn size(&self, segment: usize, rung: usize) -> u64 {
        self.sizes[segment][rung]
    }
    /// Quality of (segment, rung) in `metric`, if that table exists.
    pub fn quality(&self, metric: &str, segment: usize, rung: usize) -> Option<f64> {
        self.quality.get(metric).map(|t| t[segment][rung])
    }

    /// Check the invariants loaders must guarantee; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.bitrates_bps.is_empty() {
            return Err("bitrates_bps: expected at least one rung".into());
        }
        if self.bitrates_bps.windows(2).any(|w| w[0] >= w[1]) {
            return Err("bitrates_bps: expected strictly ascending bitrates".into());
        }
        if self.segment_duration == 0 {
            return Err("segment_duration: expected > 0".into());
        }
        if self.sizes.is_empty() {
            return Err("sizes: expected at least one segment".into());
        }
        let r = self.n_rungs();
        for (i, s) in self.sizes.iter().enumerate() {
            if s.len() != r {
                return Err(format!("sizes[{i}]: expected {r} sizes (one per rung), found {}", s.len()));
            }
        }
        for (m, t) in &self.quality {
            if t.len() != self.n_segments() || t.iter().any(|row| row.len() != r) {
                return Err(format!("quality.{m}: expected {} segments x {r} rungs", self.n_segments()));
            }
        }
        if let Some(res) = &self.resolutions {
            if res.len() != r {
                return Err(format!("resolutions: expected {r} entries"));
            }
        }
        Ok(())
    }
}
