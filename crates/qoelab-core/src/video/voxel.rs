//! VOXEL's extended manifest in the video model (Palmer's dissertation, §6.2, Listing 6.1;
//! docs/formats.md, "VOXEL"): per (segment, rung) the byte ranges that must arrive reliably (the
//! container boxes, the I-frame, every droppable frame's first bytes), the payload ranges of the
//! droppable frames in importance order (most important first), and SSIM levels: with the first
//! `k` unreliable ranges (`bytes` in all) the segment plays at `ssim`. Ranges are inclusive byte
//! ranges in the rung's one file, so a video with a VOXEL table has a byte layout.

use serde::{Deserialize, Serialize};

/// One segment at one rung.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoxelSegment {
    /// Inclusive byte ranges to fetch reliably.
    pub reliable: Vec<(u64, u64)>,
    /// Inclusive byte ranges of the droppable frames' payloads, most important first.
    pub unreliable: Vec<(u64, u64)>,
    /// (ssim, k, bytes): the first `k` unreliable ranges (`bytes` in all) give `ssim`; `k`
    /// strictly ascending, `ssim` non-decreasing.
    pub ssims: Vec<(f64, u32, u64)>,
}

/// The VOXEL table of a video.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoxelTable {
    /// `Representation@avgSSIM` per rung (the public client's BOLA utilities), if given.
    #[serde(default)]
    pub avg_ssim: Option<Vec<f64>>,
    /// `segments[segment][rung]`.
    pub segments: Vec<Vec<VoxelSegment>>,
}

impl VoxelSegment {
    /// Bytes of the reliable ranges.
    pub fn reliable_bytes(&self) -> u64 {
        self.reliable.iter().map(|&(a, b)| b - a + 1).sum()
    }
    /// Bytes of the first `k` unreliable ranges.
    pub fn unreliable_prefix_bytes(&self, k: usize) -> u64 {
        self.unreliable.iter().take(k).map(|&(a, b)| b - a + 1).sum()
    }
    /// The SSIM the segment plays at when its reliable bytes and the first `k` unreliable ranges
    /// arrived: the level of the largest listed `k' <= k`; None if no level is listed for so few
    /// ranges (the manifest lists only levels above its bound).
    pub fn ssim_with(&self, k: usize) -> Option<f64> {
        self.ssims.iter().take_while(|e| e.1 as usize <= k).last().map(|e| e.0)
    }

    /// Check against the segment's inclusive range `(first, last)` in the rung's file: the ranges
    /// tile it without gaps or overlaps; the levels as documented. The error names the field.
    pub fn validate(&self, first: u64, last: u64) -> Result<(), String> {
        let mut all: Vec<(u64, u64)> = self.reliable.iter().chain(&self.unreliable).copied().collect();
        all.sort_unstable();
        let mut at = first;
        for &(a, b) in &all {
            if b < a {
                return Err(format!("expected ranges first-last with first <= last, found {a}-{b}"));
            }
            if a != at {
                return Err(format!(
                    "expected the reliable and unreliable ranges to tile the segment's bytes {first}-{last} \
                     without gaps or overlaps, found {a}-{b} where byte {at} was next"
                ));
            }
            at = b.saturating_add(1);
        }
        if at != last.saturating_add(1) {
            return Err(format!("expected the ranges to end at the segment's last byte {last}, found {}", at - 1));
        }
        let mut prev: Option<(f64, u32)> = None;
        for &(q, k, n) in &self.ssims {
            if !(0.0..=1.0).contains(&q) {
                return Err(format!("ssims: expected SSIM levels in [0, 1], found {q}"));
            }
            if k as usize > self.unreliable.len() {
                return Err(format!(
                    "ssims: expected k <= {} (the unreliable ranges), found {k}",
                    self.unreliable.len()
                ));
            }
            let want = self.unreliable_prefix_bytes(k as usize);
            if n != want {
                return Err(format!("ssims: expected {want} bytes for the first {k} unreliable ranges, found {n}"));
            }
            if let Some((pq, pk)) = prev {
                if k <= pk || q < pq {
                    return Err(format!(
                        "ssims: expected k ascending and SSIM non-decreasing, found {q}:{k} after {pq}:{pk}"
                    ));
                }
            }
            prev = Some((q, k));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg() -> VoxelSegment {
        // segment bytes 100-199: reliable 100-139 and 170-179, droppable payloads 150-169 (most
        // important), 140-149, 180-199
        VoxelSegment {
            reliable: vec![(100, 139), (170, 179)],
            unreliable: vec![(150, 169), (140, 149), (180, 199)],
            ssims: vec![(0.95, 1, 20), (0.97, 2, 30), (1.0, 3, 50)],
        }
    }

    #[test]
    fn levels_by_complete_prefix() {
        let s = seg();
        s.validate(100, 199).unwrap();
        assert_eq!(s.reliable_bytes(), 50);
        assert_eq!(s.ssim_with(0), None);
        assert_eq!(s.ssim_with(1), Some(0.95));
        assert_eq!(s.ssim_with(2), Some(0.97));
        assert_eq!(s.ssim_with(3), Some(1.0));
    }

    #[test]
    fn bad_tables_name_what_is_wrong() {
        let mut s = seg();
        s.reliable[1] = (171, 179);
        assert!(s.validate(100, 199).unwrap_err().contains("tile"));
        let mut s = seg();
        s.unreliable[2] = (180, 209);
        assert!(s.validate(100, 199).unwrap_err().contains("end at"));
        let mut s = seg();
        s.ssims[1] = (0.90, 2, 30);
        assert!(s.validate(100, 199).unwrap_err().contains("non-decreasing"));
        let mut s = seg();
        s.ssims[0] = (0.95, 1, 21);
        assert!(s.validate(100, 199).unwrap_err().contains("20 bytes"));
        let mut s = seg();
        s.ssims.push((1.0, 4, 50));
        assert!(s.validate(100, 199).unwrap_err().contains("k <= 3"));
    }
}
