//! Test-only ABRs and videos (the real ABR library lives in `abr/`, written separately).

use crate::abr::{Abr, AbrObs, Decision, DownloadRecord, Progress};
use crate::time::{Ns, SEC};
use crate::video::{layout_from_sizes, Video};
use std::sync::Arc;

/// A CBR video: every segment of rung r has bitrate_r * duration / 8 bytes. Laid out like the
/// Python front's synthetic videos: one file per rung, an 800-byte init segment, then the segments
/// back to back.
pub fn cbr_video(n: usize, seg: Ns, bitrates: &[u64]) -> Arc<Video> {
    let sizes: Vec<Vec<u64>> = (0..n).map(|_| bitrates.iter().map(|b| b * seg / 8 / SEC).collect()).collect();
    let byte_offsets = Some(layout_from_sizes(&sizes, &vec![800; bitrates.len()]));
    Arc::new(Video {
        name: "cbr".into(),
        segment_duration: seg,
        last_segment_duration: None,
        bitrates_bps: bitrates.to_vec(),
        sizes,
        quality: Default::default(),
        resolutions: None,
        byte_offsets,
        voxel: None,
    })
}

/// The Pensieve/Envivio ladder plus one rung above 5 Mbit/s (kbit/s * 1000).
pub const LADDER: [u64; 7] = [300_000, 750_000, 1_200_000, 1_850_000, 2_850_000, 4_300_000, 6_000_000];

/// Always the same rung, optionally with a fixed delay before each request.
pub struct Fixed {
    pub rung: usize,
    pub delay: Ns,
}
impl Abr for Fixed {
    fn name(&self) -> &'static str {
        "test-fixed"
    }
    fn choose(&mut self, _obs: &AbrObs) -> Decision {
        Decision { rung: self.rung, delay: self.delay, reason: format!("fixed {}", self.rung) }
    }
}

/// Highest rung whose bitrate <= safety * the last completed download's first-to-last-byte
/// throughput; rung 0 before any sample.
pub struct Rate {
    pub safety: f64,
}
impl Abr for Rate {
    fn name(&self) -> &'static str {
        "test-rate"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let Some(last) = obs.history.iter().rev().find(|r| !r.abandoned) else {
            return Decision { rung: 0, delay: 0, reason: "no sample".into() };
        };
        let est = last.tput_first_byte_bps() * self.safety;
        let rung = obs.video.bitrates_bps.iter().rposition(|&b| b as f64 <= est).unwrap_or(0);
        Decision { rung, delay: 0, reason: format!("tput {est:.0} -> {rung}") }
    }
    fn on_download(&mut self, _obs: &AbrObs, _rec: &DownloadRecord) {}
}

/// Random rung (deterministic stream) — exercises switches.
pub struct RandomRung {
    pub rng: crate::rng::Rng,
}
impl Abr for RandomRung {
    fn name(&self) -> &'static str {
        "test-random"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let r = self.rng.below(obs.video.n_rungs() as u64) as usize;
        Decision { rung: r, delay: 0, reason: "random".into() }
    }
}

/// Starts at `rung`; abandons to rung 0 once a download has run longer than `after` without
/// finishing (and the rung is above 0).
pub struct Abandoner {
    pub rung: usize,
    pub after: Ns,
    pub abandons: u32,
}
impl Abr for Abandoner {
    fn name(&self) -> &'static str {
        "test-abandoner"
    }
    fn choose(&mut self, _obs: &AbrObs) -> Decision {
        Decision { rung: self.rung, delay: 0, reason: "abandoner".into() }
    }
    fn on_progress(&mut self, _obs: &AbrObs, p: &Progress) -> Option<usize> {
        if p.rung > 0 && p.now - p.t_request > self.after {
            self.abandons += 1;
            Some(0)
        } else {
            None
        }
    }
}
