//! The video model: a bitrate ladder, per-segment sizes per rung (VBR), optional per-segment
//! quality per rung in any metric, optional frame tables.
//!
//! Loaders (Sabre movie JSON, the corpus format, DASH MPD, HLS with `#EXT-X-SIZE`) live in the
//! Python front and hand the core a normalized JSON document of [`Video`].
//!
//! Byte layout (optional): `byte_offsets[segment][rung]` is the offset of the first byte of that
//! segment inside the single file of that rung (the file may start with an init segment or a
//! `sidx`, so the offsets need not start at 0). Data planes that send HTTP `Range` requests
//! (Sprint-x over several segments, Chunklets inside one segment) need it; `byte_range` and
//! `span_range` give the inclusive ranges they request. Which loaders produce a layout:
//! docs/formats.md, "Byte layout".

pub mod voxel;

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
    /// Optional byte layout: `byte_offsets[segment][rung]` = offset of the segment's first byte in
    /// the one file of that rung. Per rung the segments are in file order and never overlap
    /// (`off[s+1][r] >= off[s][r] + size[s][r]`); gaps (e.g. a `sidx` or `styp` box) are allowed.
    #[serde(default)]
    pub byte_offsets: Option<Vec<Vec<u64>>>,
    /// Optional VOXEL table (extended manifest: reliable and unreliable ranges, SSIM levels per
    /// segment and rung; [`voxel`]). Needs `byte_offsets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voxel: Option<voxel::VoxelTable>,
}

/// A layout that tiles each rung's file exactly: rung `r` starts with `init_bytes[r]` bytes (the
/// init segment), then the segments back to back, so `offset[s][r] = init_bytes[r] + sum of
/// sizes[0..s][r]`. `init_bytes` has one entry per rung (every row of `sizes` must have as many).
pub fn layout_from_sizes(sizes: &[Vec<u64>], init_bytes: &[u64]) -> Vec<Vec<u64>> {
    let mut next = init_bytes.to_vec();
    sizes
        .iter()
        .map(|row| {
            assert_eq!(row.len(), next.len(), "layout_from_sizes: one init size per rung");
            row.iter()
                .zip(next.iter_mut())
                .map(|(&size, n)| {
                    let off = *n;
                    *n = n.saturating_add(size);
                    off
                })
                .collect()
        })
        .collect()
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

    /// Whether the video has a byte layout (`byte_offsets`).
    pub fn has_layout(&self) -> bool {
        self.byte_offsets.is_some()
    }
    /// Offset of the first byte of (segment, rung) in the rung's file; None without a layout or
    /// for indices outside the video.
    pub fn offset(&self, segment: usize, rung: usize) -> Option<u64> {
        self.byte_offsets.as_ref()?.get(segment)?.get(rung).copied()
    }
    /// Inclusive byte range `(first, last)` of (segment, rung) in the rung's file, i.e.
    /// `(off, off + size - 1)` as an HTTP `Range: bytes=first-last`; None without a layout, for
    /// indices outside the video, or for a 0-byte segment.
    pub fn byte_range(&self, segment: usize, rung: usize) -> Option<(u64, u64)> {
        let off = self.offset(segment, rung)?;
        let size = *self.sizes.get(segment)?.get(rung)?;
        if size == 0 {
            return None;
        }
        Some((off, off + size - 1))
    }
    /// Inclusive byte range from the first byte of `first_segment` to the last byte of
    /// `last_segment` at `rung` (one range request for several segments). None without a layout,
    /// if `first_segment > last_segment`, for indices outside the video, if the span holds no
    /// bytes, or if the segments are not contiguous in the file (a gap between two of them).
    pub fn span_range(&self, first_segment: usize, last_segment: usize, rung: usize) -> Option<(u64, u64)> {
        if first_segment > last_segment {
            return None;
        }
        let start = self.offset(first_segment, rung)?;
        let mut end = start; // exclusive end of the span so far
        for s in first_segment..=last_segment {
            if self.offset(s, rung)? != end {
                return None;
            }
            end += *self.sizes.get(s)?.get(rung)?;
        }
        if end == start {
            return None;
        }
        Some((start, end - 1))
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
        if let Some(offs) = &self.byte_offsets {
            let n = self.n_segments();
            if offs.len() != n {
                return Err(format!("byte_offsets: expected {n} segments x {r} rungs, found {} segments", offs.len()));
            }
            for (i, row) in offs.iter().enumerate() {
                if row.len() != r {
                    return Err(format!("byte_offsets[{i}]: expected {r} offsets (one per rung), found {}", row.len()));
                }
            }
            // ends[r]: first byte after the previous segment of rung r
            let mut ends = vec![0u64; r];
            for (s, (row, sizes)) in offs.iter().zip(&self.sizes).enumerate() {
                for (rung, ((&off, &size), end)) in row.iter().zip(sizes).zip(ends.iter_mut()).enumerate() {
                    if s > 0 && off < *end {
                        return Err(format!(
                            "byte_offsets[{s}][{rung}]: expected >= {end} (segments in file order, not \
                             overlapping segment {}), found {off}",
                            s - 1
                        ));
                    }
                    *end = off.checked_add(size).ok_or_else(|| {
                        format!("byte_offsets[{s}][{rung}]: expected offset + size < 2^64, found {off}")
                    })?;
                }
            }
        }
        if let Some(v) = &self.voxel {
            if self.byte_offsets.is_none() {
                return Err("voxel: expected a byte layout (byte_offsets) with the VOXEL table".into());
            }
            if v.segments.len() != self.n_segments() || v.segments.iter().any(|row| row.len() != r) {
                return Err(format!("voxel.segments: expected {} segments x {r} rungs", self.n_segments()));
            }
            if v.avg_ssim.as_ref().is_some_and(|a| a.len() != r) {
                return Err(format!("voxel.avg_ssim: expected {r} entries (one per rung)"));
            }
            for (s, row) in v.segments.iter().enumerate() {
                for (rung, seg) in row.iter().enumerate() {
                    let (a, b) = self.byte_range(s, rung).expect("a layout");
                    seg.validate(a, b).map_err(|e| format!("voxel.segments[{s}][{rung}]: {e}"))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    /// 3 segments x 2 rungs; rung files start with 100 and 250 bytes of init.
    fn laid_out() -> Video {
        let sizes = vec![vec![10, 40], vec![20, 50], vec![5, 60]];
        let byte_offsets = Some(layout_from_sizes(&sizes, &[100, 250]));
        Video {
            name: "t".into(),
            segment_duration: 2 * SEC,
            last_segment_duration: None,
            bitrates_bps: vec![100_000, 300_000],
            sizes,
            quality: Default::default(),
            resolutions: None,
            byte_offsets,
            voxel: None,
        }
    }

    #[test]
    fn voxel_table_is_checked_against_the_layout() {
        let mut v = laid_out();
        let table = |v: &Video| voxel::VoxelTable {
            avg_ssim: Some(vec![0.97, 0.99]),
            segments: (0..v.n_segments())
                .map(|s| {
                    (0..v.n_rungs())
                        .map(|r| {
                            let (a, b) = v.byte_range(s, r).unwrap();
                            let half = (b - a).div_ceil(2);
                            voxel::VoxelSegment {
                                reliable: vec![(a, a + half - 1)],
                                unreliable: vec![(a + half, b)],
                                ssims: vec![(0.9, 0, 0), (1.0, 1, b - a + 1 - half)],
                            }
                        })
                        .collect()
                })
                .collect(),
        };
        v.voxel = Some(table(&v));
        v.validate().unwrap();
        let seg = &v.voxel.as_ref().unwrap().segments[1][1];
        assert_eq!((seg.ssim_with(0), seg.ssim_with(1)), (Some(0.9), Some(1.0)));
        // a range shifted out of its segment
        v.voxel.as_mut().unwrap().segments[1][0].unreliable[0].1 += 1;
        assert!(v.validate().unwrap_err().starts_with("voxel.segments[1][0]: expected the ranges to end"));
        // no layout
        let mut w = laid_out();
        w.voxel = Some(table(&w));
        w.byte_offsets = None;
        assert!(w.validate().unwrap_err().starts_with("voxel: expected a byte layout"));
    }

    #[test]
    fn layout_from_sizes_tiles_each_file_exactly() {
        let sizes: Vec<Vec<u64>> = (0..7).map(|s| vec![s * 3 + 1, 0, 1000 + s]).collect();
        let init = [800, 0, 17];
        let offs = layout_from_sizes(&sizes, &init);
        for r in 0..3 {
            // every byte of the file after the init is covered by exactly one segment
            let file_len = init[r] + sizes.iter().map(|row| row[r]).sum::<u64>();
            let mut cover = vec![0u32; file_len as usize];
            for s in 0..sizes.len() {
                for b in offs[s][r]..offs[s][r] + sizes[s][r] {
                    cover[b as usize] += 1;
                }
            }
            assert!(cover[..init[r] as usize].iter().all(|&c| c == 0), "rung {r}: init not covered");
            assert!(cover[init[r] as usize..].iter().all(|&c| c == 1), "rung {r}: every media byte once");
        }
        assert_eq!(offs[0], vec![800, 0, 17]);
        assert_eq!(offs[1], vec![801, 0, 1017]);
        assert!(layout_from_sizes(&[], &[1, 2]).is_empty());
    }

    #[test]
    fn offsets_and_ranges() {
        let v = laid_out();
        assert!(v.validate().is_ok());
        assert!(v.has_layout());
        assert_eq!(v.offset(0, 0), Some(100));
        assert_eq!(v.offset(2, 1), Some(250 + 40 + 50));
        assert_eq!(v.offset(3, 0), None);
        assert_eq!(v.offset(0, 2), None);
        assert_eq!(v.byte_range(0, 0), Some((100, 109)));
        assert_eq!(v.byte_range(1, 1), Some((290, 339)));
        assert_eq!(v.byte_range(3, 1), None);
        // a range covers exactly `size` bytes
        for s in 0..3 {
            for r in 0..2 {
                let (a, b) = v.byte_range(s, r).unwrap();
                assert_eq!(b - a + 1, v.size(s, r));
            }
        }
        let mut none = laid_out();
        none.byte_offsets = None;
        assert!(!none.has_layout());
        assert_eq!(none.offset(0, 0), None);
        assert_eq!(none.byte_range(0, 0), None);
        assert_eq!(none.span_range(0, 2, 0), None);
    }

    #[test]
    fn zero_byte_segment_has_no_range() {
        let mut v = laid_out();
        v.sizes[1][0] = 0;
        v.byte_offsets = Some(layout_from_sizes(&v.sizes, &[100, 250]));
        assert!(v.validate().is_ok());
        assert_eq!(v.byte_range(1, 0), None);
        assert_eq!(v.span_range(1, 1, 0), None);
        // a 0-byte segment inside a span is fine
        assert_eq!(v.span_range(0, 2, 0), Some((100, 114)));
    }

    #[test]
    fn span_range_over_contiguous_segments() {
        let v = laid_out();
        assert_eq!(v.span_range(0, 2, 0), Some((100, 134)));
        assert_eq!(v.span_range(1, 2, 1), Some((290, 399)));
        assert_eq!(v.span_range(1, 1, 1), v.byte_range(1, 1));
        assert_eq!(v.span_range(2, 1, 0), None);
        assert_eq!(v.span_range(1, 3, 0), None);
        assert_eq!(v.span_range(0, 0, 2), None);
        // a gap (e.g. a styp/sidx box) between segments 1 and 2 of rung 1
        let mut g = laid_out();
        g.byte_offsets.as_mut().unwrap()[2][1] += 8;
        assert!(g.validate().is_ok());
        assert_eq!(g.span_range(0, 1, 1), Some((250, 339)));
        assert_eq!(g.span_range(1, 2, 1), None);
        assert_eq!(g.span_range(0, 2, 1), None);
        assert_eq!(g.span_range(2, 2, 1), Some((348, 407)));
        assert_eq!(g.span_range(0, 2, 0), Some((100, 134)));
    }

    #[test]
    fn validate_byte_offsets() {
        let err = |f: &dyn Fn(&mut Vec<Vec<u64>>)| {
            let mut v = laid_out();
            f(v.byte_offsets.as_mut().unwrap());
            v.validate().unwrap_err()
        };
        assert_eq!(
            err(&|o| {
                o.pop();
            }),
            "byte_offsets: expected 3 segments x 2 rungs, found 2 segments"
        );
        assert_eq!(
            err(&|o| {
                o[1].push(9);
            }),
            "byte_offsets[1]: expected 2 offsets (one per rung), found 3"
        );
        // overlapping the previous segment by one byte
        let e = err(&|o| o[1][0] -= 1);
        assert!(e.starts_with("byte_offsets[1][0]: expected >= 110 "), "{e}");
        assert!(e.ends_with("found 109"), "{e}");
        // out of file order
        let e = err(&|o| o.swap(0, 2));
        assert!(e.starts_with("byte_offsets[1][0]: expected >= "), "{e}");
        // offset + size past u64
        let e = err(&|o| o[2][1] = u64::MAX - 1);
        assert!(e.starts_with("byte_offsets[2][1]: expected offset + size < 2^64"), "{e}");
        // touching segments and gaps are fine
        let mut v = laid_out();
        v.byte_offsets.as_mut().unwrap()[2][0] += 1000;
        assert!(v.validate().is_ok());
    }

    #[test]
    fn json_round_trip_and_old_json() {
        let v = laid_out();
        let text = serde_json::to_string(&v).unwrap();
        assert!(text.contains("\"byte_offsets\":[[100,250],[110,290],[130,340]]"), "{text}");
        let back: Video = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
        // documents written before the field existed (or with null) load without a layout
        let old = r#"{"name": "old", "segment_duration": 2000000000, "bitrates_bps": [1000, 2000],
                      "sizes": [[1, 2], [3, 4]]}"#;
        let o: Video = serde_json::from_str(old).unwrap();
        assert!(!o.has_layout());
        assert!(o.validate().is_ok());
        let null = old.replace("\"sizes\"", "\"byte_offsets\": null, \"sizes\"");
        assert_eq!(serde_json::from_str::<Video>(&null).unwrap(), o);
        // an unknown field is still refused
        let bad = old.replace("\"sizes\"", "\"byte_offset\": [], \"sizes\"");
        assert!(serde_json::from_str::<Video>(&bad).is_err());
    }
}
