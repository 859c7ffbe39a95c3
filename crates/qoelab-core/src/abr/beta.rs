//! `beta`: a BETA-like baseline, **reconstructed** (BETA: Cyriac/James et al., MMSys'19, not
//! public; Palmer's dissertation §4.1 and §6.6.1 describe it and compare VOXEL against their own
//! re-implementation; ../shared/reference/claims/voxel.md §5, "Proposed BETA-like
//! implementation").
//!
//! * **Threshold** per (segment, rung): the total bytes (reliable part + unreliable prefix) of the
//!   smallest SSIM level of the video's VOXEL table with SSIM ≥ `target` (0.95); if no level
//!   reaches it (or the rung has no droppable frames), the full segment.
//! * **Rung**: BOLA-E on the threshold sizes — ABR*'s decision core ([`AbrStar::decide`]) with one
//!   entry per rung, of the threshold's size, at the rung's utility (avgSSIM, else ln(b/b_0)).
//! * **Request**: the whole segment (no partial request).
//! * **Deadline** ([`Abr::on_progress_partial`], data planes that can keep a prefix): once playback
//!   has started and the buffer left (the player's buffer, which drains during the download) is ≤
//!   `deadline_margin` (0.1 s: two ~50-ms progress reports before the stall): if the threshold's
//!   bytes are in, keep the segment truncated at the highest level whose bytes are in
//!   ([`ProgressAction::KeepPartial`], quality = that level's SSIM); else abandon it and fetch the
//!   segment at rung 0 (BETA's fallback), or go on if it is rung 0 already. Planes that cannot
//!   keep a prefix ([`Abr::on_progress`]) get only the fallback.
//! * Without a VOXEL table: BOLA-E (the core on full segments) with no abandonment.
//!
//! Deviation: BETA drops only unreferenced B-frames, moved to the segment's tail by rewriting the
//! file; here the truncation follows the manifest's importance order, which favours BETA.
//! docs/models/abr-beta.md.

use super::abrstar::{AbrStar, AbrStarCfg, Entry};
use super::estimators::{dur_param, float_in};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord, Partial, Progress, ProgressAction};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{Ns, MS};
use crate::video::voxel::VoxelSegment;
use crate::video::Video;

pub const PARAMS: [ParamSpec; 2] = [
    ParamSpec {
        name: "target",
        unit: Unit::Float,
        default: Default::Float(0.95),
        doc: "virtual-quality target: the threshold of a (segment, rung) is the smallest SSIM level >= this (0.95 = Zinner's 'good'; BETA's own target is not published)",
    },
    ParamSpec {
        name: "deadline_margin",
        unit: Unit::Duration,
        default: Default::Int(100_000_000),
        doc: "the playback deadline is reached when the buffer left is <= this (0.1 s: two ~50-ms progress reports before the stall)",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "beta",
    summary: "BETA-like (reconstructed): BOLA-E on per-rung threshold sizes (smallest SSIM level >= target), full-segment requests, at the playback deadline keep the truncated segment if the threshold is in, else refetch at rung 0",
    reference: "Palmer, dissertation §4.1 / §6.6.1 (after Cyriac/James et al., BETA, MMSys'19, not public); claims/voxel.md §5",
    params: &PARAMS,
    build,
};

/// The BETA-like ABR.
pub struct Beta {
    core: AbrStar,
    built: bool,
    avg_ssim: Option<Vec<f64>>,
    cfg: AbrStarCfg,
    target: f64,
    margin_ms: f64,
    /// Playback has started once (afterwards a stopped player is a stall, with a deadline).
    started_playing: bool,
}

fn build(p: &Params, video: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let target = float_in(p, &PARAMS, "target", 0.0, 1.0)?;
    let margin_ms = dur_param(p, &PARAMS, "deadline_margin")? * 1000.0;
    let cfg = AbrStarCfg::default();
    let avg_ssim = video.voxel.as_ref().and_then(|v| v.avg_ssim.clone());
    let seg = video.seg_duration(0) as f64 / MS as f64;
    let b: Vec<f64> = video.bitrates_bps.iter().map(|&x| x as f64 / 1000.0).collect();
    Ok(Box::new(Beta {
        core: AbrStar::new(&b, avg_ssim.as_deref(), seg, 2.0 * seg, cfg.clone()),
        built: false,
        avg_ssim,
        cfg,
        target,
        margin_ms,
        started_playing: false,
    }))
}

fn voxel_segment(video: &Video, segment: usize, rung: usize) -> Option<&VoxelSegment> {
    video.voxel.as_ref()?.segments.get(segment)?.get(rung).filter(|s| !s.unreliable.is_empty())
}

impl Beta {
    /// The threshold of (segment, rung): (level, total bytes, SSIM) of the smallest level with
    /// SSIM ≥ target, None = the full segment.
    pub fn threshold(&self, video: &Video, segment: usize, rung: usize) -> Option<Partial> {
        let vs = voxel_segment(video, segment, rung)?;
        let rel = vs.reliable_bytes();
        let (level, &(ssim, _, n)) = vs.ssims.iter().enumerate().find(|(_, l)| l.0 >= self.target)?;
        Some(Partial { level, bytes: rel + n, ssim })
    }

    /// One entry per rung: the threshold's size at the rung's utility.
    fn entries(&self, video: &Video, segment: usize) -> Vec<Entry> {
        (0..video.n_rungs())
            .map(|q| {
                let bytes = self.threshold(video, segment, q).map_or(video.size(segment, q), |t| t.bytes);
                Entry { rung: q, level: None, ssim: self.core.u[q], bytes }
            })
            .collect()
    }

    /// The deadline rule (see the module docs); `keep`: the data plane can keep a prefix.
    pub fn deadline(&self, obs: &AbrObs, p: &Progress, keep: bool) -> ProgressAction {
        use ProgressAction::{Abandon, Continue, KeepPartial};
        let started = self.started_playing || obs.playing;
        let buffer_ms = obs.buffer as f64 / MS as f64;
        if obs.video.voxel.is_none() || !started || buffer_ms > self.margin_ms || p.bytes_received >= p.bytes_total {
            return Continue;
        }
        let fallback = if p.rung > 0 { Abandon(0) } else { Continue };
        let Some(t) = self.threshold(obs.video, p.segment, p.rung) else {
            return fallback;
        };
        if p.bytes_received < t.bytes {
            return fallback;
        }
        if !keep || t.bytes >= p.bytes_total {
            return Continue;
        }
        let vs = voxel_segment(obs.video, p.segment, p.rung).expect("a threshold has a table");
        let rel = vs.reliable_bytes();
        let mut best = t;
        for (level, &(ssim, _, n)) in vs.ssims.iter().enumerate() {
            let b = rel + n;
            if b > best.bytes && b <= p.bytes_received && b < p.bytes_total {
                best = Partial { level, bytes: b, ssim };
            }
        }
        KeepPartial(best)
    }
}

impl Abr for Beta {
    fn name(&self) -> &'static str {
        "beta"
    }

    fn choose(&mut self, obs: &AbrObs) -> Decision {
        self.started_playing |= obs.playing;
        if !self.built {
            let v = obs.video;
            let b: Vec<f64> = v.bitrates_bps.iter().map(|&x| x as f64 / 1000.0).collect();
            let seg = v.seg_duration(0) as f64 / MS as f64;
            let est = std::mem::replace(&mut self.core.tput, crate::abr::estimators::Ewma::new(3.0, 8.0));
            self.core =
                AbrStar::new(&b, self.avg_ssim.as_deref(), seg, obs.buffer_max as f64 / MS as f64, self.cfg.clone());
            self.core.tput = est;
            self.built = true;
        }
        let entries = self.entries(obs.video, obs.segment);
        let tput = if obs.history.is_empty() { None } else { self.core.tput_kbps() };
        let c = self.core.decide(obs.buffer as f64 / MS as f64, obs.last_rung, tput, &entries);
        let thr = if obs.video.voxel.is_some() {
            format!(" threshold {} B", c.entry.bytes)
        } else {
            " (no VOXEL table: BOLA-E)".to_string()
        };
        Decision {
            rung: c.entry.rung,
            delay: (c.pause_ms * MS as f64).round() as Ns,
            reason: format!("BETA-like{thr}: {}", c.reason),
        }
    }

    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        let dur = rec.t_last_byte.saturating_sub(rec.t_request) as f64 / MS as f64;
        self.core.on_download(rec.bytes, dur);
    }

    fn on_progress(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        self.started_playing |= obs.playing;
        match self.deadline(obs, p, false) {
            ProgressAction::Abandon(r) => Some(r),
            _ => None,
        }
    }

    fn on_progress_partial(&mut self, obs: &AbrObs, p: &Progress) -> ProgressAction {
        self.started_playing |= obs.playing;
        self.deadline(obs, p, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::voxel::VoxelTable;

    /// 1,000 / 2,000 / 4,000 kbit/s, avgSSIM 0.90 / 0.95 / 0.98, 4-s segments, one segment. Rung 2
    /// (2,000,000 B): reliable 500,000 B, droppable ranges 200,000, 100,000, 700,000, 500,000 B,
    /// levels 0.93 (700,000 B in all), 0.95 (800,000), 0.97 (1,500,000), 0.98 (2,000,000). Rung 1
    /// (1,000,000 B): reliable 400,000 B, ranges 300,000 and 300,000 B, levels 0.90 (700,000 B),
    /// 0.94 (1,000,000): none reaches 0.95. Rung 0 (500,000 B): no droppable frames.
    fn video() -> Video {
        let mut v = crate::abr::estimators::testutil::cbr(&[1000, 2000, 4000], 4, 1);
        v.byte_offsets = Some(vec![vec![0, 0, 0]]);
        let r0 = VoxelSegment { reliable: vec![(0, 499_999)], unreliable: vec![], ssims: vec![(1.0, 0, 0)] };
        let r1 = VoxelSegment {
            reliable: vec![(0, 399_999)],
            unreliable: vec![(400_000, 699_999), (700_000, 999_999)],
            ssims: vec![(0.90, 1, 300_000), (0.94, 2, 600_000)],
        };
        let r2 = VoxelSegment {
            reliable: vec![(0, 499_999)],
            unreliable: vec![(500_000, 699_999), (700_000, 799_999), (800_000, 1_499_999), (1_500_000, 1_999_999)],
            ssims: vec![(0.93, 1, 200_000), (0.95, 2, 300_000), (0.97, 3, 1_000_000), (0.98, 4, 1_500_000)],
        };
        r1.validate(0, 999_999).unwrap();
        r2.validate(0, 1_999_999).unwrap();
        v.voxel = Some(VoxelTable { avg_ssim: Some(vec![0.90, 0.95, 0.98]), segments: vec![vec![r0, r1, r2]] });
        v
    }

    fn beta(v: &Video) -> Beta {
        let mut b = Beta {
            core: AbrStar::new(
                &[1000.0, 2000.0, 4000.0],
                Some(&[0.90, 0.95, 0.98]),
                4000.0,
                20_000.0,
                AbrStarCfg::default(),
            ),
            built: true,
            avg_ssim: Some(vec![0.90, 0.95, 0.98]),
            cfg: AbrStarCfg::default(),
            target: 0.95,
            margin_ms: 100.0,
            started_playing: false,
        };
        assert_eq!(v.n_rungs(), 3);
        b.core.started = true;
        b
    }

    fn obs(v: &Video, buffer_ms: u64, playing: bool) -> AbrObs<'_> {
        AbrObs {
            now: 0,
            video: v,
            segment: 0,
            buffer: buffer_ms * MS,
            buffer_max: 20 * crate::time::SEC,
            last_rung: Some(2),
            playing,
            history: &[],
        }
    }

    fn progress(rung: usize, total: u64, got: u64) -> Progress {
        Progress {
            now: 2_000 * MS,
            segment: 0,
            rung,
            bytes_total: total,
            bytes_received: got,
            t_request: 0,
            t_first_byte: Some(50 * MS),
        }
    }

    #[test]
    fn thresholds_and_entries() {
        let v = video();
        let b = beta(&v);
        // rung 2: the smallest level >= 0.95 is level 1: 500,000 + 300,000 B
        assert_eq!(b.threshold(&v, 0, 2), Some(Partial { level: 1, bytes: 800_000, ssim: 0.95 }));
        // rung 1: no level reaches 0.95 -> the full segment; rung 0: no droppable frames
        assert_eq!(b.threshold(&v, 0, 1), None);
        assert_eq!(b.threshold(&v, 0, 0), None);
        let sizes: Vec<u64> = b.entries(&v, 0).iter().map(|e| e.bytes).collect();
        assert_eq!(sizes, vec![500_000, 1_000_000, 800_000]);
        // a lower target picks a smaller level
        let b2 = Beta { target: 0.93, ..beta(&v) };
        assert_eq!(b2.threshold(&v, 0, 2).unwrap().bytes, 700_000);
    }

    #[test]
    fn rung_by_bola_e_on_threshold_sizes() {
        // buffer 12,000 ms, previous rung 2 (r0, r1 penalized by 0.04), placeholder 0: V_p(σ + g_p)
        // = 10,461.54 (r0), 12,769.23 (r1), 16,000 (r2); scores (· − 12,000)/(8 S): r0 < 0; r1
        // 769.23/8e6 = 9.6e-5; r2 on its threshold 4,000/6.4e6 = 6.25e-4 -> rung 2 (on the full
        // 2,000,000 B it would score 4,000/16e6 = 2.5e-4). Safety at 1,000 kbit/s: 12e6 bits >= 6.4e6.
        let v = video();
        let mut b = beta(&v);
        b.core.on_download(125_000, 1_000.0); // 1,000 kbit/s
        let h = [DownloadRecord::default()];
        let d = b.choose(&AbrObs { history: &h, ..obs(&v, 12_000, true) });
        assert_eq!(d.rung, 2, "{}", d.reason);
        assert!(d.reason.starts_with("BETA-like threshold 800000 B"), "{}", d.reason);
        assert_eq!(b.partial(), None); // the whole segment is requested
    }

    #[test]
    fn deadline_keeps_the_truncated_segment_or_falls_back_to_rung_0() {
        let v = video();
        let mut b = beta(&v);
        // buffer 150 ms > 100 ms: not yet
        assert_eq!(
            b.on_progress_partial(&obs(&v, 150, true), &progress(2, 2_000_000, 900_000)),
            ProgressAction::Continue
        );
        // 100 ms: the deadline; 900,000 B in >= the 800,000-B threshold: keep the highest level in
        // (level 1, 800,000 B at 0.95; level 2 needs 1,500,000)
        let keep = ProgressAction::KeepPartial(Partial { level: 1, bytes: 800_000, ssim: 0.95 });
        assert_eq!(b.on_progress_partial(&obs(&v, 100, true), &progress(2, 2_000_000, 900_000)), keep);
        // 1,600,000 B in: level 2 (1,500,000 B at 0.97)
        let keep2 = ProgressAction::KeepPartial(Partial { level: 2, bytes: 1_500_000, ssim: 0.97 });
        assert_eq!(b.on_progress_partial(&obs(&v, 100, true), &progress(2, 2_000_000, 1_600_000)), keep2);
        // 700,000 B in < threshold: discard, refetch at rung 0 (also on planes that cannot keep)
        assert_eq!(
            b.on_progress_partial(&obs(&v, 100, true), &progress(2, 2_000_000, 700_000)),
            ProgressAction::Abandon(0)
        );
        assert_eq!(b.on_progress(&obs(&v, 100, true), &progress(2, 2_000_000, 700_000)), Some(0));
        // a plane that cannot keep goes on with a threshold that is in
        assert_eq!(b.on_progress(&obs(&v, 100, true), &progress(2, 2_000_000, 900_000)), None);
        // stalled (playing = false after playback started, buffer 0), rung 1 has no threshold
        // below the full segment: abandon to rung 0
        assert_eq!(
            b.on_progress_partial(&obs(&v, 0, false), &progress(1, 1_000_000, 999_000)),
            ProgressAction::Abandon(0)
        );
        // rung 0: nothing lower, go on
        assert_eq!(b.on_progress_partial(&obs(&v, 0, true), &progress(0, 500_000, 100_000)), ProgressAction::Continue);
    }

    #[test]
    fn no_deadline_before_playback_starts_and_no_table_is_bola_e() {
        let v = video();
        let mut b = beta(&v);
        // startup (never played): buffer 0 is no deadline
        assert_eq!(
            b.on_progress_partial(&obs(&v, 0, false), &progress(2, 2_000_000, 700_000)),
            ProgressAction::Continue
        );
        // without a VOXEL table: full sizes, never an abandonment
        let plain = crate::abr::estimators::testutil::cbr(&[1000, 2000, 4000], 4, 1);
        let mut p = build(&Params::new(), &plain).unwrap();
        let d = p.choose(&obs(&plain, 0, false));
        assert!(d.reason.contains("no VOXEL table"), "{}", d.reason);
        assert_eq!(p.on_progress_partial(&obs(&plain, 0, true), &progress(2, 2_000_000, 1)), ProgressAction::Continue);
        assert_eq!(build(&Params::new().with("target", 1.5), &plain).err().unwrap().param, "target");
    }
}
