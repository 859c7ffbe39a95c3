//! `abrstar`: VOXEL's ABR* decision (Palmer's dissertation §6.3; the public client's `--abr=bpp`,
//! seed-systems.md §1.4): BOLA-E on SSIM utilities over every (rung, SSIM level) entry of the
//! segment, with its own insufficient-buffer walk and the placeholder / pause rules.
//!
//! Units follow the public client: time in ms, sizes in bits, rates in kbit/s (= bits/ms).
//!
//! * utilities u_i = `avgSSIM` of rung i (the manifest's `Representation@avgSSIM`), else
//!   ln(b_i / b_0);
//! * α = (b_0 u_1 − b_1 u_0) / (b_1 − b_0); target = max(buffer_size − seg, 10,000 + 2,000 N);
//!   V_p = (target − 10,000) / (u_max + α); g_p = (u_max 10,000 + α target) / (target − 10,000);
//! * score of an entry (σ, S bytes) = (V_p (σ' + g_p) − (buffer + placeholder)) / (8 S), with
//!   σ' = σ − (u_max − u_min) / (N − 1) when its rung is below the previous segment's;
//! * safety: safe bits = tput · f · min(buffer, buffer_size − seg); walk down the SSIM-sorted
//!   entries, only to smaller sizes, until 8 S ≤ safe bits; f starts at 1 and becomes
//!   max(0.9 f, clamp(seg / (buffer_size − seg), 0.5, 0.9)) after each decision;
//! * placeholder at the first decision with a throughput estimate: V_p (g_p − a_q) for the rung q
//!   that fits 0.9 · tput, a_q = (b_{q−1} u_q − b_q u_{q−1}) / (b_q − b_{q−1}) (0 for q = 0);
//! * pause: level = max(V_p (σ + g_p), 10,000); if buffer + placeholder > level the placeholder
//!   becomes level − buffer, and a negative one becomes a pause; a buffer overrun
//!   (buffer − pause + seg − buffer_size > 0) is added to both;
//! * throughput: download-time-weighted EWMAs of per-download throughput with half-lives 3 s and
//!   8 s, zero-bias corrected, the smaller of the two.
//!
//! The decision core ([`AbrStar::decide`]) takes any entries, partial segments included. Through
//! the player ([`Abr::choose`]) it is offered full segments (the public client's `no_drop`), or with
//! `partial = true` every SSIM level of the video's VOXEL table: the player then fetches the
//! reliable part and the level's prefix of droppable frames (reliably: VOXEL rel) and plays the
//! segment at the level's SSIM ([`Abr::partial`]).
//!
//! Abandonment ([`AbrStarAbr::abandonment`], the public client's `BPPShouldAbandon`): once
//! playback has started and after a 500-ms grace from the request, keep going while (requested − received) · 8 / tput < the buffer
//! left; else, if the rung is above 0 or the rung has SSIM levels below the request, re-run the
//! decision on a copy of the core (no state change) with the buffer left, 0.9 · tput and the
//! previous rung = the in-flight one, over every (rung, level) entry of the segment. A lower rung
//! abandons the download ([`ProgressAction::Abandon`]); the same rung at a level smaller than the
//! request keeps the partial segment ([`ProgressAction::KeepPartial`]: the data plane stops once
//! the level's reliable + unreliable-prefix bytes are in; a level already exceeded by the bytes
//! received is raised to the highest one in). `keep_partial = false` is BOLA-SSIM (dash.js-style
//! discard and retry: only abandonment). `abandon_rule = "bola"` / `"bola_enhanced"` are the
//! public client's `bola` rules ([`AbrStarAbr::bola_abandonment`]); with `utility = "log"` this is
//! its plain BOLA (VOXEL's "unmodified BOLA" baseline). docs/models/abr-abrstar.md.

use super::estimators::{dur_param, float_in, Ewma};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord, Partial, Progress, ProgressAction};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{Ns, MS};
use crate::video::Video;

/// One choice the ABR may make for a segment: a rung and how much of it (an SSIM level).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    pub rung: usize,
    /// Index of the level in the segment's `ssims` list (`None`: the full segment, no VOXEL table).
    pub level: Option<usize>,
    /// SSIM (or utility) the segment plays at with this entry.
    pub ssim: f64,
    /// Bytes to fetch (reliable part + the unreliable prefix of the level).
    pub bytes: u64,
}

/// A decision of the core.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub entry: Entry,
    /// Wait before requesting (ms).
    pub pause_ms: f64,
    pub reason: String,
}

/// Constants (published defaults of the public client).
#[derive(Clone, Debug)]
pub struct AbrStarCfg {
    /// kBufferLow (ms).
    pub buffer_low_ms: f64,
    /// kMinThreshold per rung (ms).
    pub min_threshold_ms: f64,
    /// kSafetyFactor.
    pub safety: f64,
    /// Bounds of the insufficient-buffer factor's target.
    pub ibr_min: f64,
    pub ibr_max: f64,
}

impl std::default::Default for AbrStarCfg {
    fn default() -> Self {
        AbrStarCfg { buffer_low_ms: 10_000.0, min_threshold_ms: 2_000.0, safety: 0.9, ibr_min: 0.5, ibr_max: 0.9 }
    }
}

/// ABR*'s state.
#[derive(Clone, Debug)]
pub struct AbrStar {
    pub cfg: AbrStarCfg,
    /// Nominal bitrates (kbit/s) and utilities per rung.
    pub b: Vec<f64>,
    pub u: Vec<f64>,
    pub seg_ms: f64,
    pub buffer_size_ms: f64,
    pub alpha: f64,
    pub vp: f64,
    pub gp: f64,
    pub placeholder_ms: f64,
    /// Insufficient-buffer factor f and its target.
    pub ibr_safety: f64,
    pub ibr_target: f64,
    /// The placeholder has been initialized (first decision with an estimate).
    pub started: bool,
    pub tput: Ewma,
}

impl AbrStar {
    /// `bitrates_kbps` ascending, `utilities` per rung (avgSSIM, or None for ln(b_i/b_0)).
    pub fn new(
        bitrates_kbps: &[f64],
        utilities: Option<&[f64]>,
        seg_ms: f64,
        buffer_size_ms: f64,
        cfg: AbrStarCfg,
    ) -> AbrStar {
        let b = bitrates_kbps.to_vec();
        let u: Vec<f64> = match utilities {
            Some(u) => u.to_vec(),
            None => b.iter().map(|x| (x / b[0]).ln()).collect(),
        };
        let n = b.len();
        let alpha = if n >= 2 { (b[0] * u[1] - b[1] * u[0]) / (b[1] - b[0]) } else { 0.0 };
        let u_max = u.iter().cloned().fold(f64::MIN, f64::max);
        let target = (buffer_size_ms - seg_ms)
            .max(cfg.buffer_low_ms + cfg.min_threshold_ms * n as f64)
            .max(cfg.buffer_low_ms + 1.0);
        let vp = (target - cfg.buffer_low_ms) / (u_max + alpha);
        let gp = (u_max * cfg.buffer_low_ms + alpha * target) / (target - cfg.buffer_low_ms);
        let room = (buffer_size_ms - seg_ms).max(1.0);
        let ibr_target = (seg_ms / room).clamp(cfg.ibr_min, cfg.ibr_max);
        AbrStar {
            cfg,
            b,
            u,
            seg_ms,
            buffer_size_ms,
            alpha,
            vp,
            gp,
            placeholder_ms: 0.0,
            ibr_safety: 1.0,
            ibr_target,
            started: false,
            tput: Ewma::new(3.0, 8.0),
        }
    }

    /// The throughput estimate (kbit/s), if any download finished.
    pub fn tput_kbps(&self) -> Option<f64> {
        self.tput.estimate().map(|bps| bps / 1000.0)
    }

    /// A finished download: `bytes` in `dur_ms`.
    pub fn on_download(&mut self, bytes: u64, dur_ms: f64) {
        let d = dur_ms.max(1e-6);
        self.tput.push(bytes as f64 * 8.0 / d * 1000.0, d / 1000.0);
    }

    /// a_q of BOLA-E's placeholder (0 for the lowest rung).
    fn a(&self, q: usize) -> f64 {
        if q == 0 {
            return 0.0;
        }
        (self.b[q - 1] * self.u[q] - self.b[q] * self.u[q - 1]) / (self.b[q] - self.b[q - 1])
    }

    /// One decision. `buffer_ms`: media buffered; `last_rung`: the previous segment's rung;
    /// `tput_kbps`: the estimate (None before any download: the first media segment is forced to
    /// the lowest rung, as the public client's main loop does); `entries`: this segment's choices.
    pub fn decide(
        &mut self,
        buffer_ms: f64,
        last_rung: Option<usize>,
        tput_kbps: Option<f64>,
        entries: &[Entry],
    ) -> Choice {
        let lowest = *entries
            .iter()
            .min_by(|x, y| (x.rung, x.bytes).cmp(&(y.rung, y.bytes)))
            .expect("a segment has at least one entry");
        let Some(tput) = tput_kbps else {
            // The first media segment: Q0 (its full segment, the largest entry of rung 0).
            let e = entries.iter().filter(|e| e.rung == lowest.rung).max_by_key(|e| e.bytes).copied().unwrap();
            return Choice { entry: e, pause_ms: 0.0, reason: "first segment -> rung 0".into() };
        };
        let mut why = String::new();
        if !self.started {
            self.started = true;
            let q = (0..self.b.len()).rev().find(|&q| self.b[q] <= self.cfg.safety * tput).unwrap_or(0);
            self.placeholder_ms = (self.vp * (self.gp - self.a(q))).max(0.0);
            why = format!("start: rung {q} fits 0.9*{tput:.0}kbps, placeholder {:.0}ms; ", self.placeholder_ms);
        }
        let n = self.u.len();
        let u_max = self.u.iter().cloned().fold(f64::MIN, f64::max);
        let u_min = self.u.iter().cloned().fold(f64::MAX, f64::min);
        let penalty = if n > 1 { (u_max - u_min) / (n - 1) as f64 } else { 0.0 };
        let q_buf = buffer_ms + self.placeholder_ms;
        let score = |e: &Entry| {
            let s = if last_rung.is_some_and(|l| e.rung < l) { e.ssim - penalty } else { e.ssim };
            (self.vp * (s + self.gp) - q_buf) / (8.0 * e.bytes.max(1) as f64)
        };
        let mut best = entries[0];
        for e in &entries[1..] {
            if score(e) > score(&best) {
                best = *e;
            }
        }
        // Safety walk: SSIM-descending order, only ever to smaller sizes, until it fits.
        let safe_bits = tput * self.ibr_safety * buffer_ms.min(self.buffer_size_ms - self.seg_ms).max(0.0);
        let mut chosen = best;
        if 8.0 * chosen.bytes as f64 > safe_bits {
            let mut sorted: Vec<Entry> = entries.to_vec();
            sorted.sort_by(|x, y| y.ssim.total_cmp(&x.ssim).then(y.bytes.cmp(&x.bytes)));
            let from = sorted.iter().position(|e| *e == chosen).unwrap_or(0);
            for e in &sorted[from + 1..] {
                if e.bytes < chosen.bytes {
                    chosen = *e;
                    if 8.0 * chosen.bytes as f64 <= safe_bits {
                        break;
                    }
                }
            }
            why += &format!("safety {:.0} bits -> ", safe_bits);
        }
        self.ibr_safety = (self.ibr_safety * 0.9).max(self.ibr_target);
        // Placeholder and pause.
        let level = (self.vp * (chosen.ssim + self.gp)).max(self.cfg.buffer_low_ms);
        let mut pause = 0.0;
        if buffer_ms + self.placeholder_ms > level {
            self.placeholder_ms = level - buffer_ms;
            if self.placeholder_ms < 0.0 {
                pause = -self.placeholder_ms;
                self.placeholder_ms = 0.0;
            }
        }
        let overrun = buffer_ms - pause + self.seg_ms - self.buffer_size_ms;
        if overrun > 0.0 {
            self.placeholder_ms += overrun;
            pause += overrun;
        }
        let level_s = chosen.level.map_or("full".to_string(), |k| format!("level {k}"));
        Choice {
            entry: chosen,
            pause_ms: pause,
            reason: format!(
                "{why}BOLA-SSIM Q {:.2}s -> rung {} {level_s} (ssim {:.4}){}",
                q_buf / 1000.0,
                chosen.rung,
                chosen.ssim,
                if pause > 0.0 { format!(", pause {:.3}s", pause / 1000.0) } else { String::new() }
            ),
        }
    }
}

/// Grace time of the abandonment rule after the request (the public client's 500 ms).
pub const ABANDON_GRACE_MS: f64 = 500.0;
/// Bandwidth safety factor of the abandonment's re-run (kBandwidthSafetyFactor 0.9).
pub const ABANDON_SAFETY: f64 = 0.9;

/// What `choose` asked for: the segment and its entry (rung, level, bytes); after a
/// keep-partial abandonment, the kept prefix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InFlight {
    pub segment: usize,
    pub entry: Entry,
    /// A [`ProgressAction::KeepPartial`] already returned for this download.
    pub kept: Option<Partial>,
}

/// The ABR of the registry: the core over full segments (see the module docs).
pub struct AbrStarAbr {
    core: AbrStar,
    /// Offer the VOXEL table's partial segments (`partial = true`).
    partial: bool,
    /// Keep-partial abandonment (ABR*); false = abandonment to a lower rung only (BOLA-SSIM).
    keep_partial: bool,
    /// The entry of the last decision when it is a VOXEL level.
    last: Option<Partial>,
    /// What the last decision chose, for the abandonment rule.
    inflight: Option<InFlight>,
    /// Built lazily (the player's buffer size is known at the first decision).
    built: bool,
    avg_ssim: Option<Vec<f64>>,
    cfg: AbrStarCfg,
    /// Log utilities even when the manifest has avgSSIM (`utility = "log"`).
    log_utility: bool,
    /// Which abandonment rule (`abandon_rule`).
    rule: AbandonRule,
    /// The `bola` rules' rate samples of the download in flight (segment, rung, request time).
    vx_download: Option<(usize, usize, Ns)>,
    vx_samples: Vec<f64>,
    /// Playback has started once (before, nothing plays and there is no deadline).
    started_playing: bool,
    /// The abandonment's throughput is the download's own rate (`abandon_tput = "download"`).
    download_tput: bool,
}

/// The abandonment rules of the public client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbandonRule {
    /// `BPPShouldAbandon` (ABR*, BOLA-SSIM).
    Bpp,
    /// `bola_shouldAbandon` (the plain `bola` ABR; claims/voxel.md §5).
    Bola,
    /// `EnhancedBolaShouldAbandon` (`bola` with the `bola_enhanced` feature).
    BolaEnhanced,
    None,
}

pub const PARAMS: [ParamSpec; 8] = [
    ParamSpec {
        name: "partial",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "offer every SSIM level of the VOXEL table (partial segments: reliable ranges + a prefix of the droppable frames, fetched reliably, as VOXEL rel); false = full segments (the public client's no_drop)",
    },
    ParamSpec {
        name: "keep_partial",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "ABR*'s keep-partial abandonment on data planes that can stop a download and keep its prefix (VOXEL); false = BOLA-SSIM (dash.js-style discard and retry: abandonment to a lower rung only)",
    },
    ParamSpec {
        name: "utility",
        unit: Unit::Choice(&["avgssim", "log"]),
        default: Default::Str("avgssim"),
        doc: "rung utilities: the manifest's avgSSIM when it has them (else ln(b/b0)), or always ln(b/b0) with full segments scored by it (VOXEL's unmodified BOLA; not with partial = true)",
    },
    ParamSpec {
        name: "abandon_rule",
        unit: Unit::Choice(&["abrstar", "bola", "bola_enhanced", "none"]),
        default: Default::Str("abrstar"),
        doc: "abandonment: abrstar = ABR*'s (BPPShouldAbandon; keep_partial applies); bola = the public client's plain bola rule (buffer <= 12 s, >= 5 progress samples, > 500 ms, mean-rate total >= 1.8 segments, rung > 0, re-run at 0.9 x that rate on nominal sizes, abort if bytes left > size x b_new / b_cur); bola_enhanced = its bola_enhanced variant (no 12-s limit, actual sizes, abort if bytes left > the new rung's size); none",
    },
    ParamSpec {
        name: "abandon_tput",
        unit: Unit::Choice(&["estimate", "download"]),
        default: Default::Str("estimate"),
        doc: "throughput of the abrstar abandonment rule: the ABR's estimate (3-s/8-s EWMAs of finished downloads), or the download's own rate since the request (closer to the public client's per-download moving average)",
    },
    ParamSpec {
        name: "safety",
        unit: Unit::Float,
        default: Default::Float(0.9),
        doc: "bandwidth safety factor of the start-up pick (public client kSafetyFactor 0.9)",
    },
    ParamSpec {
        name: "buffer_low",
        unit: Unit::Duration,
        default: Default::Int(10_000_000_000),
        doc: "kBufferLow: BOLA's lower buffer bound and the pause level's floor (10 s)",
    },
    ParamSpec {
        name: "min_threshold",
        unit: Unit::Duration,
        default: Default::Int(2_000_000_000),
        doc: "kMinThreshold: buffer per rung in BOLA's target floor 10 s + N x this (2 s)",
    },
];

fn build(p: &Params, video: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let partial = p.bool(&PARAMS, "partial")?;
    let keep_partial = p.bool(&PARAMS, "keep_partial")?;
    let log_utility = p.choice(&PARAMS, "utility")? == "log";
    if log_utility && partial {
        return Err(crate::params::perr("utility", "\"log\" scores full segments only (partial = false)"));
    }
    let download_tput = p.choice(&PARAMS, "abandon_tput")? == "download";
    let rule = match p.choice(&PARAMS, "abandon_rule")? {
        "bola" => AbandonRule::Bola,
        "bola_enhanced" => AbandonRule::BolaEnhanced,
        "none" => AbandonRule::None,
        _ => AbandonRule::Bpp,
    };
    if partial && video.voxel.is_none() {
        return Err(crate::params::perr(
            "partial",
            "needs a video with a VOXEL table (an extended MPD, docs/formats.md)",
        ));
    }
    let safety = float_in(p, &PARAMS, "safety", 0.0, 1.0)?;
    let low = dur_param(p, &PARAMS, "buffer_low")?;
    let thr = dur_param(p, &PARAMS, "min_threshold")?;
    if low <= 0.0 {
        return Err(crate::params::perr("buffer_low", "expected a duration > 0"));
    }
    let cfg =
        AbrStarCfg { buffer_low_ms: low * 1000.0, min_threshold_ms: thr * 1000.0, safety, ..AbrStarCfg::default() };
    let avg_ssim = if log_utility { None } else { video.voxel.as_ref().and_then(|v| v.avg_ssim.clone()) };
    let seg = video.seg_duration(0) as f64 / MS as f64;
    let b: Vec<f64> = video.bitrates_bps.iter().map(|&x| x as f64 / 1000.0).collect();
    Ok(Box::new(AbrStarAbr {
        core: AbrStar::new(&b, avg_ssim.as_deref(), seg, 2.0 * seg, cfg.clone()),
        partial,
        keep_partial,
        last: None,
        inflight: None,
        built: false,
        avg_ssim,
        cfg,
        log_utility,
        rule,
        vx_download: None,
        vx_samples: Vec::new(),
        started_playing: false,
        download_tput,
    }))
}

impl AbrStarAbr {
    /// The entries of `segment`. With `partial`: every SSIM level of each rung's VOXEL segment
    /// (reliable bytes + the level's prefix), and the full segment at the SSIM of all its frames.
    /// Otherwise the full segments: the VOXEL table's full level when the segment has droppable
    /// frames, else the rung's utility; the segment's size.
    fn entries(&self, video: &Video, segment: usize) -> Vec<Entry> {
        self.entries_with(video, segment, self.partial)
    }

    /// As [`AbrStarAbr::entries`], with or without the partial levels.
    fn entries_with(&self, video: &Video, segment: usize, partial: bool) -> Vec<Entry> {
        if partial {
            let mut out = Vec::new();
            for q in 0..video.n_rungs() {
                let full = video.size(segment, q);
                let vs = video.voxel.as_ref().and_then(|v| v.segments.get(segment)).and_then(|s| s.get(q));
                match vs {
                    Some(vs) if !vs.unreliable.is_empty() => {
                        let rel = vs.reliable_bytes();
                        for (i, &(ssim, k, n)) in vs.ssims.iter().enumerate() {
                            if (k as usize) < vs.unreliable.len() && rel + n < full {
                                out.push(Entry { rung: q, level: Some(i), ssim, bytes: rel + n });
                            }
                        }
                        let all = vs.ssim_with(vs.unreliable.len()).unwrap_or(self.core.u[q]);
                        out.push(Entry { rung: q, level: Some(vs.ssims.len()), ssim: all, bytes: full });
                    }
                    _ => out.push(Entry { rung: q, level: None, ssim: self.core.u[q], bytes: full }),
                }
            }
            return out;
        }
        (0..video.n_rungs())
            .map(|q| {
                let full = video.size(segment, q);
                let ssim = video
                    .voxel
                    .as_ref()
                    .and_then(|v| v.segments.get(segment))
                    .and_then(|s| s.get(q))
                    // a segment without droppable frames has no measured levels (the loader lists it
                    // as one reliable range at 1.0): the rung's utility stands for it
                    .filter(|s| !s.unreliable.is_empty() && !self.log_utility)
                    .and_then(|s| s.ssim_with(s.unreliable.len()))
                    .unwrap_or(self.core.u[q]);
                Entry { rung: q, level: None, ssim, bytes: full }
            })
            .collect()
    }
}

impl AbrStarAbr {
    /// ABR*'s abandonment rule for the download in flight (see the module docs); `keep`: the data
    /// plane can keep a prefix of the body. Never returns a [`ProgressAction::KeepPartial`] below
    /// the reliable part or at or above the bytes requested.
    pub fn abandonment(&self, obs: &AbrObs, p: &Progress, keep: bool) -> ProgressAction {
        use ProgressAction::{Abandon, Continue, KeepPartial};
        let mine = self.inflight.filter(|f| f.segment == p.segment && f.entry.rung == p.rung);
        let kept = mine.and_then(|f| f.kept);
        // After a keep-partial decision the download is the kept prefix.
        let requested = kept.map_or(p.bytes_total, |k| k.bytes.min(p.bytes_total));
        let stay = kept.map_or(Continue, KeepPartial);
        // Before playback starts nothing plays: no deadline (the public client never abandons
        // then either: its buffer − elapsed wraps around, see the docs).
        if p.bytes_received >= requested || !(self.started_playing || obs.playing) {
            return stay;
        }
        let elapsed_ms = p.now.saturating_sub(p.t_request) as f64 / MS as f64;
        if elapsed_ms <= ABANDON_GRACE_MS {
            return stay;
        }
        // The ABR's estimate (before any finished download, and with `abandon_tput = "download"`:
        // the download's own rate since the request).
        let own = p.bytes_received as f64 * 8.0 / elapsed_ms;
        let tput = if self.download_tput { own } else { self.core.tput_kbps().unwrap_or(own) };
        if tput.is_nan() || tput <= 0.0 {
            return stay;
        }
        // The player's buffer drains during the download: it is the buffer at the request minus
        // the time since.
        let buffer_ms = obs.buffer as f64 / MS as f64;
        let remaining_ms = (requested - p.bytes_received) as f64 * 8.0 / tput;
        if remaining_ms < buffer_ms {
            return stay;
        }
        let entries = self.entries_with(obs.video, p.segment, obs.video.voxel.is_some() && !self.log_utility);
        let levels_below = entries.iter().any(|e| e.rung == p.rung && e.level.is_some() && e.bytes < requested);
        if p.rung == 0 && !(keep && levels_below) {
            return stay;
        }
        let mut core = self.core.clone();
        let c = core.decide(buffer_ms, Some(p.rung), Some(ABANDON_SAFETY * tput), &entries);
        let e = c.entry;
        if e.rung < p.rung {
            return Abandon(e.rung);
        }
        if !keep || e.rung != p.rung || e.bytes >= requested {
            return stay;
        }
        let Some(vs) = obs.video.voxel.as_ref().and_then(|v| v.segments.get(p.segment)).and_then(|s| s.get(p.rung))
        else {
            return stay;
        };
        let (Some(level), rel) = (e.level, vs.reliable_bytes()) else {
            return stay;
        };
        // Bytes already in beyond the chosen level: keep the highest level they complete.
        let mut best = Partial { level, bytes: e.bytes, ssim: e.ssim };
        for (i, &(ssim, _, n)) in vs.ssims.iter().enumerate() {
            let b = rel + n;
            if b > best.bytes && b <= p.bytes_received && b < requested {
                best = Partial { level: i, bytes: b, ssim };
            }
        }
        if best.bytes < rel || best.bytes >= requested {
            return stay;
        }
        KeepPartial(best)
    }
}

impl AbrStarAbr {
    /// The public client's `bola` abandonment rules on this core (module docs of `bolae` for the
    /// sample rule): each report (while the buffer is <= 12 s for the plain rule) adds a sample
    /// received x 8 / time since the request; with >= 5 samples, > 500 ms and the download
    /// unfinished, the samples' mean m gives a total time size x 8 / m; if that is >= 1.8 segment
    /// durations and the rung is above 0, the decision is re-run without a state change (buffer
    /// left, 0.9 m, previous rung = the in-flight one) over one entry per rung at its utility:
    /// nominal sizes (plain; abort if the bytes left > size x b_new / b_cur) or the segment's
    /// actual sizes (enhanced; abort if the bytes left > the new rung's size).
    pub fn bola_abandonment(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        let enhanced = self.rule == AbandonRule::BolaEnhanced;
        let key = (p.segment, p.rung, p.t_request);
        if self.vx_download != Some(key) {
            self.vx_download = Some(key);
            self.vx_samples.clear();
        }
        let buffer_ms = obs.buffer as f64 / MS as f64;
        let elapsed_ms = p.now.saturating_sub(p.t_request) as f64 / MS as f64;
        if (!enhanced && buffer_ms > 12_000.0) || elapsed_ms <= 0.0 {
            return None;
        }
        self.vx_samples.push(p.bytes_received as f64 * 8.0 / elapsed_ms);
        if self.vx_samples.len() < 5
            || elapsed_ms <= ABANDON_GRACE_MS
            || p.bytes_received >= p.bytes_total
            || p.rung == 0
        {
            return None;
        }
        let m = self.vx_samples.iter().sum::<f64>() / self.vx_samples.len() as f64;
        if m <= 0.0 || p.bytes_total as f64 * 8.0 / m < 1.8 * self.core.seg_ms {
            return None;
        }
        let v = obs.video;
        let size = |q: usize| {
            if enhanced {
                v.size(p.segment, q)
            } else {
                (self.core.b[q] * self.core.seg_ms / 8.0).round() as u64
            }
        };
        let entries: Vec<Entry> =
            (0..v.n_rungs()).map(|q| Entry { rung: q, level: None, ssim: self.core.u[q], bytes: size(q) }).collect();
        let mut core = self.core.clone();
        let q = core.decide(buffer_ms, Some(p.rung), Some(ABANDON_SAFETY * m), &entries).entry.rung;
        if q >= p.rung {
            return None;
        }
        let other = if enhanced {
            v.size(p.segment, q) as f64
        } else {
            p.bytes_total as f64 * self.core.b[q] / self.core.b[p.rung]
        };
        ((p.bytes_total - p.bytes_received) as f64 > other).then_some(q)
    }
}

impl Abr for AbrStarAbr {
    fn name(&self) -> &'static str {
        "abrstar"
    }

    fn choose(&mut self, obs: &AbrObs) -> Decision {
        if !self.built {
            // The buffer size the thesis sweeps is the player's maximum (ms).
            let v = obs.video;
            let b: Vec<f64> = v.bitrates_bps.iter().map(|&x| x as f64 / 1000.0).collect();
            let seg = v.seg_duration(0) as f64 / MS as f64;
            let est = std::mem::replace(&mut self.core.tput, Ewma::new(3.0, 8.0));
            self.core =
                AbrStar::new(&b, self.avg_ssim.as_deref(), seg, obs.buffer_max as f64 / MS as f64, self.cfg.clone());
            self.core.tput = est;
            self.built = true;
        }
        let entries = self.entries(obs.video, obs.segment);
        self.started_playing |= obs.playing;
        let tput = if obs.history.is_empty() { None } else { self.core.tput_kbps() };
        let c = self.core.decide(obs.buffer as f64 / MS as f64, obs.last_rung, tput, &entries);
        self.last = match (self.partial, c.entry.level) {
            (true, Some(level)) => Some(Partial { level, bytes: c.entry.bytes, ssim: c.entry.ssim }),
            _ => None,
        };
        self.inflight = Some(InFlight { segment: obs.segment, entry: c.entry, kept: None });
        Decision { rung: c.entry.rung, delay: (c.pause_ms * MS as f64).round() as Ns, reason: c.reason }
    }

    fn partial(&self) -> Option<Partial> {
        self.last
    }

    fn fetches_partial_segments(&self) -> bool {
        self.partial
    }

    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        let dur = rec.t_last_byte.saturating_sub(rec.t_request) as f64 / MS as f64;
        self.core.on_download(rec.bytes, dur);
    }

    /// Data planes that cannot keep a prefix: the rule's abandonment to a lower rung only.
    fn on_progress(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        self.started_playing |= obs.playing;
        match self.rule {
            AbandonRule::Bpp => {}
            AbandonRule::None => return None,
            _ => return self.bola_abandonment(obs, p),
        }
        match self.abandonment(obs, p, false) {
            ProgressAction::Abandon(r) => Some(r),
            _ => None,
        }
    }

    fn on_progress_partial(&mut self, obs: &AbrObs, p: &Progress) -> ProgressAction {
        self.started_playing |= obs.playing;
        if self.rule != AbandonRule::Bpp {
            return self.on_progress(obs, p).map_or(ProgressAction::Continue, ProgressAction::Abandon);
        }
        let a = self.abandonment(obs, p, self.keep_partial);
        if let ProgressAction::KeepPartial(k) = a {
            if let Some(f) = self.inflight.as_mut().filter(|f| f.segment == p.segment && f.entry.rung == p.rung) {
                f.kept = Some(k);
            } else {
                let entry = Entry { rung: p.rung, level: Some(k.level), ssim: k.ssim, bytes: p.bytes_total };
                self.inflight = Some(InFlight { segment: p.segment, entry, kept: Some(k) });
            }
        }
        a
    }
}

pub const ENTRY: AbrEntry = AbrEntry {
    name: "abrstar",
    summary: "VOXEL's ABR*: BOLA-E on SSIM utilities over (rung, SSIM level) entries, its safety walk and pause rule; partial segments with partial = true; keep-partial abandonment (keep_partial = false: BOLA-SSIM)",
    reference: "Palmer, dissertation §6.3 (VOXEL, CoNEXT'21); public client --abr=bpp (seed-systems.md §1.4)",
    params: &PARAMS,
    build,
};

#[cfg(test)]
mod tests {
    use super::*;

    // Ladder 1000/2000/4000 kbit/s, avgSSIM 0.90/0.95/0.98, 4-s segments, 20-s buffer.
    // α = (1000·0.95 − 2000·0.90)/1000 = −0.85; target = max(16,000, 10,000 + 3·2,000) = 16,000;
    // V_p = 6,000/(0.98 − 0.85) = 46,153.846; g_p = (9,800 − 13,600)/6,000 = −0.633333.
    // V_p(u + g_p): 0.90 → 12,307.69; 0.95 → 14,615.38; 0.96 → 15,076.92; 0.98 → 16,000.
    fn core() -> AbrStar {
        AbrStar::new(&[1000.0, 2000.0, 4000.0], Some(&[0.90, 0.95, 0.98]), 4000.0, 20_000.0, AbrStarCfg::default())
    }

    fn entries() -> Vec<Entry> {
        vec![
            Entry { rung: 0, level: Some(0), ssim: 0.90, bytes: 500_000 },
            Entry { rung: 1, level: Some(0), ssim: 0.95, bytes: 1_000_000 },
            Entry { rung: 2, level: Some(0), ssim: 0.96, bytes: 1_500_000 },
            Entry { rung: 2, level: Some(1), ssim: 0.98, bytes: 2_000_000 },
        ]
    }

    #[test]
    fn constants_from_the_ladder() {
        let c = core();
        assert!((c.alpha + 0.85).abs() < 1e-12);
        assert!((c.vp - 46_153.846_153_846).abs() < 1e-6);
        assert!((c.gp + 0.633_333_333_333).abs() < 1e-9);
        assert!((c.vp * (0.98 + c.gp) - 16_000.0).abs() < 1e-6);
        assert!((c.ibr_target - 0.5).abs() < 1e-12); // clamp(4,000/16,000 = 0.25, 0.5, 0.9)
    }

    #[test]
    fn partial_entry_wins_and_penalty_applies() {
        // buffer 12,000, placeholder 0, previous rung 2 (rungs 0 and 1 penalized by 0.04):
        // r0 (10,461.54 − 12,000)/4e6 < 0; r1 (12,769.23 − 12,000)/8e6 = 9.62e-5;
        // r2 partial (15,076.92 − 12,000)/12e6 = 2.564e-4 > r2 full (16,000 − 12,000)/16e6 = 2.5e-4.
        let mut c = core();
        c.started = true;
        let ch = c.decide(12_000.0, Some(2), Some(1e6), &entries());
        assert_eq!((ch.entry.rung, ch.entry.level, ch.pause_ms), (2, Some(0), 0.0), "{}", ch.reason);
        // Without the penalty (previous rung 0), r1 wins: (14,615.38 − 12,000)/8e6 = 3.269e-4.
        let mut c = core();
        c.started = true;
        assert_eq!(c.decide(12_000.0, Some(0), Some(1e6), &entries()).entry.rung, 1);
    }

    #[test]
    fn pause_when_the_buffer_is_above_the_level() {
        // buffer 18,000: r2 full scores (16,000 − 18,000)/16e6 = −1.25e-4, the best; level 16,000 <
        // 18,000 → placeholder −2,000 → pause 2,000 ms; overrun 18,000 − 2,000 + 4,000 − 20,000 = 0.
        let mut c = core();
        c.started = true;
        let ch = c.decide(18_000.0, Some(2), Some(1e6), &entries());
        assert_eq!((ch.entry.rung, ch.entry.level), (2, Some(1)));
        assert!((ch.pause_ms - 2_000.0).abs() < 1e-6 && c.placeholder_ms == 0.0, "{ch:?}");
    }

    #[test]
    fn safety_walk_and_factor() {
        // buffer 12,000, previous rung 0: r1 wins (above); 500 kbit/s: safe = 500·1·12,000 = 6e6 bits
        // < 8e6 → down the SSIM order to smaller sizes: r0 (4e6 bits) fits. f → max(0.9, 0.5) = 0.9.
        let mut c = core();
        c.started = true;
        let ch = c.decide(12_000.0, Some(0), Some(500.0), &entries());
        assert_eq!(ch.entry.rung, 0, "{}", ch.reason);
        assert!((c.ibr_safety - 0.9).abs() < 1e-12);
        // at 1,500 kbit/s: 18e6 bits >= 8e6, r1 stays.
        let mut c = core();
        c.started = true;
        assert_eq!(c.decide(12_000.0, Some(0), Some(1_500.0), &entries()).entry.rung, 1);
        // the factor decays to its target: 1 → 0.9 → 0.81 → ... → 0.5.
        let mut c = core();
        c.started = true;
        for _ in 0..10 {
            c.decide(12_000.0, Some(0), Some(1e6), &entries());
        }
        assert!((c.ibr_safety - 0.5).abs() < 1e-12);
    }

    #[test]
    fn first_segment_then_start_placeholder() {
        let mut c = core();
        let ch = c.decide(0.0, None, None, &entries());
        assert_eq!((ch.entry.rung, ch.entry.bytes), (0, 500_000));
        assert!(!c.started);
        // 2,300 kbit/s: 0.9·2,300 = 2,070 ≥ 2,000 → q = 1; a_1 = (1000·0.95 − 2000·0.90)/1000 =
        // −0.85; placeholder = V_p(g_p − a_1) = 46,153.85·0.216667 = 10,000.
        // Then Q = 4,000 + 10,000 = 14,000, previous rung 0: r2 full (16,000 − 14,000)/16e6 =
        // 1.25e-4 is the best; safe = 2,300·1·4,000 = 9.2e6 bits: r2 full 16e6 → r2 partial 12e6 →
        // r1 8e6 fits. Level of r1 14,615.38 > 14,000: no change; no overrun; no pause.
        let ch = c.decide(4_000.0, Some(0), Some(2_300.0), &entries());
        assert!((c.placeholder_ms - 10_000.0).abs() < 1e-6, "{}", ch.reason);
        assert_eq!((ch.entry.rung, ch.pause_ms), (1, 0.0), "{}", ch.reason);
    }

    /// The core's ladder as a video with a VOXEL table: rung 2 of segment 0 has a 500,000-B reliable
    /// part and two droppable ranges (1,000,000 B and 500,000 B), levels (0.96, 1 range) and (0.98,
    /// 2 ranges); rungs 0 and 1 have no droppable frames.
    fn voxel_video() -> Video {
        use crate::video::voxel::{VoxelSegment, VoxelTable};
        let mut v = crate::abr::estimators::testutil::cbr(&[1000, 2000, 4000], 4, 2);
        v.byte_offsets = Some(vec![vec![0, 0, 0], vec![500_000, 1_000_000, 2_000_000]]);
        let plain = |first: u64, size: u64| VoxelSegment {
            reliable: vec![(first, first + size - 1)],
            unreliable: vec![],
            ssims: vec![(1.0, 0, 0)],
        };
        let seg0 = vec![
            plain(0, 500_000),
            plain(0, 1_000_000),
            VoxelSegment {
                reliable: vec![(0, 499_999)],
                unreliable: vec![(500_000, 1_499_999), (1_500_000, 1_999_999)],
                ssims: vec![(0.96, 1, 1_000_000), (0.98, 2, 1_500_000)],
            },
        ];
        let seg1 = vec![plain(500_000, 500_000), plain(1_000_000, 1_000_000), plain(2_000_000, 2_000_000)];
        v.voxel = Some(VoxelTable { avg_ssim: Some(vec![0.90, 0.95, 0.98]), segments: vec![seg0, seg1] });
        v
    }

    #[test]
    fn partial_segments_through_the_abr_interface() {
        let v = voxel_video();
        let mut a = AbrStarAbr {
            core: core(),
            partial: true,
            keep_partial: true,
            last: None,
            inflight: None,
            built: true,
            avg_ssim: Some(vec![0.90, 0.95, 0.98]),
            cfg: AbrStarCfg::default(),
            log_utility: false,
            rule: AbandonRule::Bpp,
            vx_download: None,
            vx_samples: Vec::new(),
            started_playing: false,
            download_tput: false,
        };
        assert!(a.fetches_partial_segments());
        // entries: r0 and r1 at their utility, r2's level 0 (500,000 + 1,000,000 B) and its full
        // segment at the SSIM of all frames (the last level, 0.98)
        let e = a.entries(&v, 0);
        assert_eq!(e.len(), 4);
        assert_eq!(e[2], Entry { rung: 2, level: Some(0), ssim: 0.96, bytes: 1_500_000 });
        assert_eq!(e[3], Entry { rung: 2, level: Some(2), ssim: 0.98, bytes: 2_000_000 });
        // as in partial_entry_wins_and_penalty_applies: buffer 12 s after rung 2, tput ample
        a.core.started = true;
        a.core.on_download(4_000_000, 1_000.0);
        let h = [DownloadRecord { segment: 0, rung: 2, bytes: 4_000_000, ..std::default::Default::default() }];
        let o = AbrObs {
            now: 0,
            video: &v,
            segment: 0,
            buffer: 12 * crate::time::SEC,
            buffer_max: 20 * crate::time::SEC,
            last_rung: Some(2),
            playing: true,
            history: &h,
        };
        let d = a.choose(&o);
        assert_eq!(d.rung, 2, "{}", d.reason);
        assert_eq!(a.partial(), Some(Partial { level: 0, bytes: 1_500_000, ssim: 0.96 }));
        // segment 1 has no droppable frames: full segments only, no partial
        let o1 = AbrObs { segment: 1, ..o };
        a.choose(&o1);
        assert_eq!(a.partial(), None);
        // partial = true needs a VOXEL table
        let plain = crate::abr::estimators::testutil::cbr(&[1000, 2000], 4, 2);
        let err = build(&Params::new().with("partial", true), &plain).err().expect("refused");
        assert_eq!(err.param, "partial");
    }

    /// Segment 0 of the core's ladder with a VOXEL table for the abandonment tests: rung 2 has a
    /// 500,000-B reliable part and four droppable ranges (200,000, 100,000, 700,000, 500,000 B);
    /// levels 0.96 (1 range: 700,000 B in all), 0.965 (2: 800,000), 0.97 (3: 1,500,000) and 0.98
    /// (4: the full 2,000,000); rungs 0 (500,000 B) and 1 (1,000,000 B) have no levels.
    fn abandon_video() -> Video {
        use crate::video::voxel::{VoxelSegment, VoxelTable};
        let mut v = crate::abr::estimators::testutil::cbr(&[1000, 2000, 4000], 4, 1);
        v.byte_offsets = Some(vec![vec![0, 0, 0]]);
        let plain =
            |size: u64| VoxelSegment { reliable: vec![(0, size - 1)], unreliable: vec![], ssims: vec![(1.0, 0, 0)] };
        let r2 = VoxelSegment {
            reliable: vec![(0, 499_999)],
            unreliable: vec![(500_000, 699_999), (700_000, 799_999), (800_000, 1_499_999), (1_500_000, 1_999_999)],
            ssims: vec![(0.96, 1, 200_000), (0.965, 2, 300_000), (0.97, 3, 1_000_000), (0.98, 4, 1_500_000)],
        };
        for (i, l) in r2.ssims.iter().enumerate() {
            assert_eq!(r2.unreliable_prefix_bytes(l.1 as usize), l.2, "level {i}");
        }
        v.voxel = Some(VoxelTable {
            avg_ssim: Some(vec![0.90, 0.95, 0.98]),
            segments: vec![vec![plain(500_000), plain(1_000_000), r2]],
        });
        v
    }

    /// ABR* with the core's constants, a throughput estimate of exactly 600 kbit/s (one download
    /// of 75,000 B in 1,000 ms: zero-bias corrected, both EWMAs 600) and rung 2's full segment of
    /// segment 0 in flight.
    fn abandon_abr(keep_partial: bool) -> AbrStarAbr {
        let mut a = AbrStarAbr {
            core: core(),
            partial: true,
            keep_partial,
            last: None,
            inflight: None,
            built: true,
            avg_ssim: Some(vec![0.90, 0.95, 0.98]),
            cfg: AbrStarCfg::default(),
            log_utility: false,
            rule: AbandonRule::Bpp,
            vx_download: None,
            vx_samples: Vec::new(),
            started_playing: false,
            download_tput: false,
        };
        a.core.started = true;
        a.core.on_download(75_000, 1_000.0);
        assert!((a.core.tput_kbps().unwrap() - 600.0).abs() < 1e-9);
        let entry = Entry { rung: 2, level: Some(4), ssim: 0.98, bytes: 2_000_000 };
        a.inflight = Some(InFlight { segment: 0, entry, kept: None });
        a
    }

    fn progress(rung: usize, total: u64, got: u64, elapsed_ms: u64) -> Progress {
        Progress {
            now: 10_000 * MS + elapsed_ms * MS,
            segment: 0,
            rung,
            bytes_total: total,
            bytes_received: got,
            t_request: 10_000 * MS,
            t_first_byte: Some(10_050 * MS),
        }
    }

    fn obs_at(v: &Video, buffer_ms: u64) -> AbrObs<'_> {
        AbrObs {
            now: 0,
            video: v,
            segment: 0,
            buffer: buffer_ms * MS,
            buffer_max: 20 * crate::time::SEC,
            last_rung: Some(2),
            playing: true,
            history: &[],
        }
    }

    // Re-run at buffer 12,000 ms, previous rung 2 (rungs 0 and 1 penalized by 0.04), placeholder 0:
    // V_p(σ + g_p) = 10,461.54 (r0, 0.86), 12,769.23 (r1, 0.91), 15,076.92 (0.96), 15,307.69
    // (0.965), 15,538.46 (0.97), 16,000 (0.98). Scores (· − 12,000)/(8 S): r0 < 0; r1 769.23/8e6 =
    // 9.62e-5; 0.96: 3,076.92/5.6e6 = 5.495e-4; 0.965: 3,307.69/6.4e6 = 5.168e-4; 0.97:
    // 3,538.46/12e6 = 2.949e-4; full 4,000/16e6 = 2.5e-4 -> level 0 (700,000 B). Safety at 0.9 ·
    // 600 = 540 kbit/s, f = 1: 540 · 12,000 = 6.48e6 bits >= 5.6e6: it stays.

    #[test]
    fn abandonment_grace_and_time_left() {
        let v = abandon_video();
        let mut a = abandon_abr(true);
        let o = obs_at(&v, 12_000);
        // 400,000 B in, but only 500 ms since the request: the grace
        assert_eq!(a.on_progress_partial(&o, &progress(2, 2_000_000, 400_000, 500)), ProgressAction::Continue);
        // 1,200,000 B in: 800,000 B left = 6.4e6 bits / 600 kbit/s = 10,667 ms < 12,000 ms: go on
        assert_eq!(a.on_progress_partial(&o, &progress(2, 2_000_000, 1_200_000, 1_000)), ProgressAction::Continue);
        // before playback starts (startup: playing = false, never played): no deadline
        let mut fresh = abandon_abr(true);
        let startup = AbrObs { playing: false, ..obs_at(&v, 12_000) };
        let pr = progress(2, 2_000_000, 400_000, 1_000);
        assert_eq!(fresh.on_progress_partial(&startup, &pr), ProgressAction::Continue);
        // ... but a stall after playback started (playing = false, buffer 0) has one: 0 <= 0 ->
        // re-run at buffer 0: safety 0 bits walks down to rung 0 -> abandon
        let stall = AbrObs { playing: false, ..obs_at(&v, 0) };
        assert_eq!(a.on_progress_partial(&stall, &pr), ProgressAction::Abandon(0));
        // rung 0 without levels: nothing lower, nothing to keep (1.6e6 bits left = 2,667 ms > 1,000 ms)
        let o0 = obs_at(&v, 1_000);
        assert_eq!(a.on_progress_partial(&o0, &progress(0, 500_000, 300_000, 1_000)), ProgressAction::Continue);
    }

    #[test]
    fn keep_partial_at_the_rerun_level() {
        let v = abandon_video();
        let mut a = abandon_abr(true);
        let o = obs_at(&v, 12_000);
        // 400,000 B in: 1,600,000 B left = 12.8e6 bits / 600 = 21,333 ms >= 12,000 ms -> re-run
        // (above): level 0 of rung 2, 500,000 + 200,000 = 700,000 B at 0.96, not in yet
        let keep = ProgressAction::KeepPartial(Partial { level: 0, bytes: 700_000, ssim: 0.96 });
        assert_eq!(a.on_progress_partial(&o, &progress(2, 2_000_000, 400_000, 1_000)), keep);
        assert_eq!(a.inflight.unwrap().kept, Some(Partial { level: 0, bytes: 700_000, ssim: 0.96 }));
        // asked again on the truncated download: the same answer (700,000 B left to reach, the
        // re-run's level is not below it)
        assert_eq!(a.on_progress_partial(&o, &progress(2, 2_000_000, 450_000, 1_050)), keep);
        // the same on a plane that cannot keep: no abandonment (same rung)
        let mut b = abandon_abr(true);
        assert_eq!(b.on_progress(&o, &progress(2, 2_000_000, 400_000, 1_000)), None);
        // BOLA-SSIM (keep_partial = false): the same rung is no abandonment
        let mut c = abandon_abr(false);
        assert_eq!(c.on_progress_partial(&o, &progress(2, 2_000_000, 400_000, 1_000)), ProgressAction::Continue);
    }

    #[test]
    fn keep_partial_raised_to_the_bytes_already_in() {
        let v = abandon_video();
        let mut a = abandon_abr(true);
        let o = obs_at(&v, 12_000);
        // 850,000 B in: 1,150,000 B left = 9.2e6 bits / 600 = 15,333 ms >= 12,000 -> re-run: level
        // 0 (700,000 B), already in; level 1 (800,000 B <= 850,000) is too: keep it at 0.965
        let keep = ProgressAction::KeepPartial(Partial { level: 1, bytes: 800_000, ssim: 0.965 });
        assert_eq!(a.on_progress_partial(&o, &progress(2, 2_000_000, 850_000, 1_000)), keep);
        // requested only level 2 (1,500,000 B, partial), 400,000 B in: 1.1e6 B left = 8.8e6 bits
        // / 600 = 14,667 ms >= 12,000 -> level 0, 700,000 B < 1,500,000 requested
        let mut b = abandon_abr(true);
        b.inflight.as_mut().unwrap().entry = Entry { rung: 2, level: Some(2), ssim: 0.97, bytes: 1_500_000 };
        let keep0 = ProgressAction::KeepPartial(Partial { level: 0, bytes: 700_000, ssim: 0.96 });
        assert_eq!(b.on_progress_partial(&o, &progress(2, 1_500_000, 400_000, 1_000)), keep0);
    }

    #[test]
    fn abandonment_on_the_download_rate() {
        // estimate 600 kbit/s, but this download has 400,000 B in 8 s = 400 kbit/s. Its own rate:
        // 1.6e6 B left = 12.8e6 bits / 400 = 32,000 ms >= 12,000 -> re-run at 0.9 x 400 = 360 kbit/s: level 0 (5.6e6 bits) > 360 x
        // 12,000 = 4.32e6 -> walk: r1 not smaller, r0 (4e6 bits) -> rung 0: abandon. With the
        // estimate (600): 12.8e6 / 600 = 21,333 >= 12,000, safety 6.48e6 >= 5.6e6: keep level 0.
        let v = abandon_video();
        let o = obs_at(&v, 12_000);
        let pr = progress(2, 2_000_000, 400_000, 8_000);
        let mut own = AbrStarAbr { download_tput: true, ..abandon_abr(true) };
        assert_eq!(own.on_progress_partial(&o, &pr), ProgressAction::Abandon(0));
        let mut est = abandon_abr(true);
        let keep = ProgressAction::KeepPartial(Partial { level: 0, bytes: 700_000, ssim: 0.96 });
        assert_eq!(est.on_progress_partial(&o, &pr), keep);
    }

    #[test]
    fn abandon_to_a_lower_rung() {
        // buffer 3,000 ms; 400,000 B in: 12.8e6 bits / 600 = 21,333 ms >= 3,000 -> re-run at Q =
        // 3,000: r0 (10,461.54 − 3,000)/4e6 = 1.865e-3; r1 9,769.23/8e6 = 1.221e-3; level 0
        // 12,076.92/5.6e6 = 2.157e-3 (the best); safety 540 · 3,000 = 1.62e6 bits < 5.6e6: down the
        // SSIM order to smaller sizes: r1 (1,000,000 B) is not smaller, r0 (500,000 B, 4e6 bits)
        // is, and nothing is below it -> rung 0: abandon, with or without keep-partial.
        let v = abandon_video();
        let o = obs_at(&v, 3_000);
        for keep in [true, false] {
            let mut a = abandon_abr(keep);
            assert_eq!(a.on_progress_partial(&o, &progress(2, 2_000_000, 400_000, 1_000)), ProgressAction::Abandon(0));
            assert_eq!(a.on_progress(&o, &progress(2, 2_000_000, 400_000, 1_000)), Some(0));
        }
    }

    #[test]
    fn choose_remembers_the_entry_in_flight() {
        let v = abandon_video();
        let mut a = abandon_abr(true);
        a.inflight = None;
        // first decision of the session (no history): rung 0's full segment
        let d = a.choose(&AbrObs { history: &[], last_rung: None, ..obs_at(&v, 0) });
        assert_eq!(d.rung, 0);
        let e = Entry { rung: 0, level: None, ssim: 0.90, bytes: 500_000 };
        assert_eq!(a.inflight, Some(InFlight { segment: 0, entry: e, kept: None }));
    }

    /// The public client's `bola` on this core: log utilities over full segments. 1,000 / 2,000 /
    /// 4,000 kbit/s, 4-s segments, 20-s buffer: u = 0, 0.693147, 1.386294; α = 0.693147; target
    /// 16,000; V_p = 6,000/2.079442 = 2,885.39; g_p = (13,862.94 + 11,090.35)/6,000 = 4.158882;
    /// V_p(u + g_p) = 12,000 / 14,000 / 16,000; with the down-switch penalty (0.693147) below rung
    /// 2: 10,000 (r0) and 12,000 (r1).
    fn bola_abr(rule: AbandonRule) -> AbrStarAbr {
        let mut core = AbrStar::new(&[1000.0, 2000.0, 4000.0], None, 4000.0, 20_000.0, AbrStarCfg::default());
        core.started = true;
        assert!((core.vp * (core.u[0] + core.gp) - 12_000.0).abs() < 1e-6);
        assert!((core.vp * (core.u[2] + core.gp) - 16_000.0).abs() < 1e-6);
        AbrStarAbr {
            core,
            partial: false,
            keep_partial: true,
            last: None,
            inflight: None,
            built: true,
            avg_ssim: None,
            cfg: AbrStarCfg::default(),
            log_utility: true,
            rule,
            vx_download: None,
            vx_samples: Vec::new(),
            started_playing: false,
            download_tput: false,
        }
    }

    #[test]
    fn bola_abandonment_rules_of_the_public_client() {
        // rung 2 of segment 0 (2,000,000 B) requested at 10 s, arriving at 1 Mbit/s (125 B/ms),
        // reports every 100 ms
        let mut v = crate::abr::estimators::testutil::cbr(&[1000, 2000, 4000], 4, 1);
        let pr = |ms: u64| progress(2, 2_000_000, 125 * ms, ms);
        // plain rule, buffer 6,000 ms: reports 1-5: fewer than 5 samples / not > 500 ms
        let mut a = bola_abr(AbandonRule::Bola);
        let o = obs_at(&v, 6_000);
        for ms in [100, 200, 300, 400, 500] {
            assert_eq!(a.on_progress(&o, &pr(ms)), None, "{ms}");
        }
        // 600 ms: mean 1,000 kbit/s, total 16e6/1,000 = 16,000 ms >= 7,200; re-run at Q = 6,000 on
        // nominal sizes 500,000 / 1,000,000 / 2,000,000 B: r0 4,000/4e6 = 1e-3, r1 6,000/8e6 =
        // 7.5e-4, r2 10,000/16e6 = 6.25e-4 -> r0; safety 900 x 6,000 = 5.4e6 >= 4e6. Bytes left
        // 1,925,000 > 2,000,000 x 1/4 = 500,000 -> abandon to 0 (also through the partial hook).
        assert_eq!(a.on_progress(&o, &pr(600)), Some(0));
        assert_eq!(a.on_progress_partial(&o, &pr(700)), ProgressAction::Abandon(0));
        // buffer 9,000: r0 1,000/4e6 = 2.5e-4, r1 3,000/8e6 = 3.75e-4, r2 7,000/16e6 = 4.375e-4
        // -> r2, but the safety walk: 900 x 9,000 = 8.1e6 bits < 16e6 -> r1 (8e6 fits); bytes left
        // 1,925,000 > 2,000,000 x 2/4 = 1,000,000 -> abandon to 1
        let mut b = bola_abr(AbandonRule::Bola);
        let o9 = obs_at(&v, 9_000);
        for ms in [100, 200, 300, 400, 500] {
            assert_eq!(b.on_progress(&o9, &pr(ms)), None);
        }
        assert_eq!(b.on_progress(&o9, &pr(600)), Some(1));
        // at 4 Mbit/s the total time is 16e6 / 4,000 = 4,000 ms < 7,200: never
        let mut f = bola_abr(AbandonRule::Bola);
        for ms in (100..=1000).step_by(100) {
            assert_eq!(f.on_progress(&o, &progress(2, 2_000_000, 500 * ms, ms)), None);
        }
        // above 12 s the plain rule never abandons
        let mut c = bola_abr(AbandonRule::Bola);
        for ms in (100..=1000).step_by(100) {
            assert_eq!(c.on_progress(&obs_at(&v, 12_500), &pr(ms)), None);
        }
        // actual sizes (enhanced): rung 0 of this segment is 1,000,000 B. Plain (nominal) still
        // goes to 0; enhanced at Q = 6,000: r0 4,000/8e6 = 5e-4, r1 7.5e-4, r2 6.25e-4 -> r1;
        // safety 5.4e6 < 8e6 but r0 is not smaller -> r1; bytes left 1,925,000 > 1,000,000 ->
        // abandon to 1.
        v.sizes[0][0] = 1_000_000;
        let o = obs_at(&v, 6_000);
        let (mut plain, mut enh) = (bola_abr(AbandonRule::Bola), bola_abr(AbandonRule::BolaEnhanced));
        for ms in [100, 200, 300, 400, 500] {
            assert_eq!(plain.on_progress(&o, &pr(ms)), None);
            assert_eq!(enh.on_progress(&o, &pr(ms)), None);
        }
        assert_eq!(plain.on_progress(&o, &pr(600)), Some(0));
        assert_eq!(enh.on_progress(&o, &pr(600)), Some(1));
        // none: never
        let mut n = bola_abr(AbandonRule::None);
        for ms in (100..=1000).step_by(100) {
            assert_eq!(n.on_progress_partial(&o, &pr(ms)), ProgressAction::Continue);
        }
    }

    #[test]
    fn log_utility_scores_full_segments_by_the_rung() {
        // with avgSSIM in the manifest, utility = "log" still gives u = ln(b/b0) and entries at it
        let v = voxel_video();
        let mut a = build(&Params::new().with("utility", "log"), &v).unwrap();
        let d = a.choose(&AbrObs { history: &[], last_rung: None, ..obs_at(&v, 0) });
        assert_eq!(d.rung, 0);
        let err = build(&Params::new().with("utility", "log").with("partial", true), &v).err().unwrap();
        assert_eq!(err.param, "utility");
        let b = AbrStarAbr { log_utility: true, ..bola_abr(AbandonRule::Bola) };
        let e = b.entries(&v, 0);
        assert!((e[2].ssim - 4f64.ln()).abs() < 1e-12, "{e:?}"); // not the table's 0.98
    }

    #[test]
    fn estimator_is_time_weighted_min_of_two_ewmas() {
        let mut c = core();
        assert_eq!(c.tput_kbps(), None);
        c.on_download(500_000, 2_000.0); // 2,000 kbit/s for 2 s
        assert!((c.tput_kbps().unwrap() - 2_000.0).abs() < 1e-6); // zero-bias corrected: exact
        c.on_download(500_000, 4_000.0); // 1,000 kbit/s for 4 s: the fast EWMA (3 s) falls further
        let t = c.tput_kbps().unwrap();
        assert!(t > 1_000.0 && t < 1_500.0, "{t}");
    }
}
