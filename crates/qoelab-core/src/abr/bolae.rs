//! `bolae`: BOLA-E (Spiteri, Sitaraman, Sparacio, MMSys'18): BOLA with a placeholder buffer, a
//! throughput-based startup, the BOLA-O up-switch cap and Sabre's insufficient-buffer rule.
//!
//! Utilities u_q = ln(b_q / b_0) + 1 (so u_0 = 1), or, with `utility = <metric>`, the per-rung
//! mean of that quality table rescaled to the same span: u_q = 1 + (m_q - m_0)/(m_top - m_0) *
//! ln(b_top / b_0). Buffer target T = max(buffer_target, 10 s + 2 s * n_rungs); gp = (u_max - 1) /
//! (T / 10 s - 1); V_p = 10 s / gp. Score of rung q at Q = buffer + placeholder:
//! (V_p (u_q + gp) - Q) / b_q.
//!
//! * STARTUP (up to and including the first decision with a throughput sample and at least one
//!   segment buffered, as Sabre and dash.js): rung from 0.9 x throughput (EWMA 3 s/8 s);
//!   placeholder = max(0, minimum level of that rung - buffer), minimum level of q > 0 =
//!   V_p (gp + (b_q u_{q-1} - b_{q-1} u_q) / (b_q - b_{q-1})) (the level where BOLA starts to
//!   prefer q to q-1), 0 for rung 0.
//! * STEADY: argmax of the score; an up-switch above the rung sustainable at 0.9 x throughput is
//!   capped at max(sustainable, previous) (BOLA-O). When Q exceeds the chosen rung's maximum level
//!   V_p (u_q + gp) the excess is taken from the placeholder first, and only the rest becomes a
//!   request delay (none at the top rung).
//! * Placeholder: grows by the idle time between the last byte of the previous segment and this
//!   decision (minus the delay we asked for), decays by `placeholder_decay` per segment, resets to
//!   0 when the buffer is empty after startup (back to STARTUP) and after an abandoned download.
//! * Sabre's IBR: safe bits = s * (buffer - latency) * throughput; the rung is lowered until the
//!   next segment's actual size fits; s starts at 0.9, x0.9 per decision, floor 0.5.

use super::bola::bola_argmax;
use super::estimators::{float_in, mbps, rung_for_rate, s, CountEwma, Estimator, Ewma, Sample};
use super::throughput::RateRule;
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord, Progress};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{from_secs_f64, Ns};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "buffer_target",
        unit: Unit::Duration,
        default: Default::Int(25_000_000_000),
        doc: "buffer target T = max(this, min_buffer + per_level * n_rungs) (Sabre -b 25 s; dash.js bufferTimeDefault 18 s); offered as preferred_buffer_max",
    },
    ParamSpec {
        name: "min_buffer",
        unit: Unit::Duration,
        default: Default::Int(10_000_000_000),
        doc: "minimum buffer level (Sabre/dash.js MINIMUM_BUFFER_S 10)",
    },
    ParamSpec {
        name: "per_level",
        unit: Unit::Duration,
        default: Default::Int(2_000_000_000),
        doc: "extra buffer target per rung (MINIMUM_BUFFER_PER_BITRATE_LEVEL_S 2)",
    },
    ParamSpec {
        name: "safety",
        unit: Unit::Float,
        default: Default::Float(0.9),
        doc: "throughput safety factor of the startup pick and of the up-switch cap (0.9)",
    },
    ParamSpec {
        name: "ibr",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "Sabre's insufficient-buffer rule (Sabre -noibr turns it off)",
    },
    ParamSpec {
        name: "ibr_safety",
        unit: Unit::Float,
        default: Default::Float(0.9),
        doc: "initial IBR safety factor, multiplied by 0.9 per decision (Sabre low_buffer_safety_factor_init 0.9)",
    },
    ParamSpec {
        name: "ibr_safety_min",
        unit: Unit::Float,
        default: Default::Float(0.5),
        doc: "floor of the IBR safety factor (Sabre low_buffer_safety_factor 0.5)",
    },
    ParamSpec {
        name: "placeholder_decay",
        unit: Unit::Float,
        default: Default::Float(0.99),
        doc: "placeholder multiplied by this per segment (dash.js PLACEHOLDER_BUFFER_DECAY 0.99; 1 = no decay)",
    },
    ParamSpec {
        name: "upswitch",
        unit: Unit::Choice(&["bola-o", "bola-u", "none"]),
        default: Default::Str("bola-o"),
        doc: "cap on an up-switch above the throughput rung qt (safety x estimate): bola-o = max(last, qt) (dash.js, Sabre -ao); bola-u = max(last, qt) + 1 (Sabre's default); none = BOLA's pick",
    },
    UPSWITCH_ABANDON,
    ParamSpec {
        name: "abandon_rule",
        unit: Unit::Choice(&["sabre", "voxel"]),
        default: Default::Str("sabre"),
        doc: "with abandon = true: sabre = Sabre's BolaEnh.check_abandon; voxel = the VOXEL release's plain bola (buffer <= 12 s, >= 5 progress samples, > 500 ms, mean-rate total time >= 1.8 segments, rung > 0; BOLA-E re-run at 0.9 x that rate; abort if the bytes left > size x b_new / b_cur)",
    },
    ParamSpec {
        name: "sabre_details",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "follow Sabre's BolaEnh code in the details (latency-aware throughput pick, STEADY right after the startup pick, no STARTUP on an empty buffer, IBR on nominal bitrates in STEADY only, placeholder clamps after downloads and abandonments)",
    },
    ParamSpec {
        name: "utility",
        unit: Unit::Choice(&["log", "vmaf", "vmaf_phone", "vmaf_4k", "ssim", "ms_ssim", "psnr"]),
        default: Default::Str("log"),
        doc: "utility: ln(b/b0)+1, or the per-rung mean of the video's quality table of that metric rescaled to the same span",
    },
];

/// BOLA-E's abandonment switch (shared with `dynamic` as `bola_abandon`).
pub(crate) const UPSWITCH_ABANDON: ParamSpec = ParamSpec {
    name: "abandon",
    unit: Unit::Bool,
    default: Default::Bool(false),
    doc: "Sabre's BOLA-E abandonment: abandon a download for a lower rung whose BOLA score beats that of the bits still to come (Sabre: on unless -noa; dash.js BolaRule: not modelled)",
};

/// The up-switch cap of BOLA-E's STEADY state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upswitch {
    /// max(last, throughput rung): BOLA-O (dash.js, Sabre `-ao`).
    O,
    /// max(last, throughput rung) + 1: Sabre's default BOLA-E.
    U,
    /// No cap.
    None,
}

impl Upswitch {
    pub fn from_name(n: &str) -> Upswitch {
        match n {
            "bola-u" => Upswitch::U,
            "none" => Upswitch::None,
            _ => Upswitch::O,
        }
    }
}

pub const ENTRY: AbrEntry = AbrEntry {
    name: "bolae",
    summary: "BOLA-E: BOLA with placeholder buffer, throughput startup, BOLA-O cap and insufficient-buffer rule",
    reference: "Spiteri, Sitaraman, Sparacio MMSys'18 / TOMM'19 (Sabre bolae, dash.js BolaRule)",
    params: PARAMS,
    build,
};

/// Configuration of [`BolaE`] (also used by `dynamic`).
#[derive(Clone, Debug)]
pub struct BolaECfg {
    pub buffer_target: f64,
    pub min_buffer: f64,
    pub per_level: f64,
    pub safety: f64,
    pub ibr: bool,
    pub ibr_safety: f64,
    pub ibr_safety_min: f64,
    pub decay: f64,
    pub metric: Option<&'static str>,
    pub upswitch: Upswitch,
    pub abandon: bool,
    /// The VOXEL release's abandonment rule instead of Sabre's (`abandon_rule = "voxel"`).
    pub voxel_abandon: bool,
    pub sabre_details: bool,
}

fn build(p: &Params, v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let metric = match p.choice(PARAMS, "utility")? {
        "log" => None,
        m => Some(m),
    };
    let cfg = BolaECfg {
        buffer_target: s(p.req_u64(PARAMS, "buffer_target")?),
        min_buffer: s(p.req_u64(PARAMS, "min_buffer")?),
        per_level: s(p.req_u64(PARAMS, "per_level")?),
        safety: float_in(p, PARAMS, "safety", 0.0, 10.0)?,
        ibr: p.bool(PARAMS, "ibr")?,
        ibr_safety: float_in(p, PARAMS, "ibr_safety", 0.0, 1.0)?,
        ibr_safety_min: float_in(p, PARAMS, "ibr_safety_min", 0.0, 1.0)?,
        decay: float_in(p, PARAMS, "placeholder_decay", 0.0, 1.0)?,
        metric,
        upswitch: Upswitch::from_name(p.choice(PARAMS, "upswitch")?),
        abandon: p.bool(PARAMS, "abandon")?,
        voxel_abandon: p.choice(PARAMS, "abandon_rule")? == "voxel",
        sabre_details: p.bool(PARAMS, "sabre_details")?,
    };
    if cfg.min_buffer <= 0.0 {
        return Err(crate::params::perr("min_buffer", "expected > 0"));
    }
    Ok(Box::new(BolaE::new(cfg, v)?))
}

pub struct BolaE {
    cfg: BolaECfg,
    u: Vec<f64>,
    gp: f64,
    vp: f64,
    target: f64,
    rate: RateRule,
    steady: bool,
    placeholder: f64,
    ibr_safety: f64,
    last_delay: f64,
    seen: usize,
    /// Rung of the last download (abandoned ones included; Sabre's `last_quality`).
    last_download: usize,
    /// The rung our abandonment rule asked for (for the placeholder clamp after it).
    abandoned_to: Option<usize>,
    /// The VOXEL rule's rate samples of the download in flight (segment, rung, request time).
    vx_download: Option<(usize, usize, Ns)>,
    vx_samples: Vec<f64>,
}

impl BolaE {
    pub fn new(cfg: BolaECfg, v: &Video) -> Result<BolaE, ParamError> {
        let br = &v.bitrates_bps;
        let n = br.len();
        let span = (br[n - 1] as f64 / br[0] as f64).ln();
        let u: Vec<f64> = match cfg.metric {
            None => br.iter().map(|b| (*b as f64 / br[0] as f64).ln() + 1.0).collect(),
            Some(m) => {
                let t = v.quality.get(m).ok_or_else(|| {
                    crate::params::perr("utility", format!("video {} has no \"{m}\" quality table", v.name))
                })?;
                let mean: Vec<f64> =
                    (0..n).map(|q| t.iter().map(|row| row[q]).sum::<f64>() / t.len().max(1) as f64).collect();
                if n > 1 && mean[n - 1].partial_cmp(&mean[0]) != Some(std::cmp::Ordering::Greater) {
                    return Err(crate::params::perr(
                        "utility",
                        format!("mean {m} of the top rung is not above the lowest"),
                    ));
                }
                mean.iter()
                    .map(|x| if n > 1 { 1.0 + (x - mean[0]) / (mean[n - 1] - mean[0]) * span } else { 1.0 })
                    .collect()
            }
        };
        let target = cfg.buffer_target.max(cfg.min_buffer + cfg.per_level * n as f64);
        let umax = u[n - 1];
        let gp = if n > 1 { (umax - 1.0) / (target / cfg.min_buffer - 1.0) } else { 1.0 };
        let vp = cfg.min_buffer / gp;
        let rate = RateRule {
            est: Estimator::Ewma(Ewma::new(3.0, 8.0)),
            safety: cfg.safety,
            sample: Sample::FirstByte,
            latency_aware: cfg.sabre_details,
            lat: CountEwma::new(1.0, 2.0),
        };
        let ibr_safety = cfg.ibr_safety;
        Ok(BolaE {
            cfg,
            u,
            gp,
            vp,
            target,
            rate,
            steady: false,
            placeholder: 0.0,
            ibr_safety,
            last_delay: 0.0,
            seen: 0,
            last_download: 0,
            abandoned_to: None,
            vx_download: None,
            vx_samples: Vec::new(),
        })
    }

    /// Buffer level above which BOLA prefers rung q to q-1 (0 for rung 0).
    pub fn min_level(&self, br: &[u64], q: usize) -> f64 {
        if q == 0 {
            return 0.0;
        }
        let (b1, b0) = (br[q] as f64, br[q - 1] as f64);
        let a = (b1 * self.u[q - 1] - b0 * self.u[q]) / (b1 - b0);
        self.vp * (self.gp + a)
    }
    pub fn max_level(&self, q: usize) -> f64 {
        self.vp * (self.u[q] + self.gp)
    }
    pub fn placeholder(&self) -> f64 {
        self.placeholder
    }
    pub fn target(&self) -> f64 {
        self.target
    }
    /// The throughput rung: safety x estimate, latency-aware with `sabre_details`.
    fn tput_rung(&self, obs: &AbrObs, t: f64) -> usize {
        if self.cfg.sabre_details {
            self.rate.choose(obs).0
        } else {
            rung_for_rate(&obs.video.bitrates_bps, self.cfg.safety * t)
        }
    }
}

impl BolaE {
    /// Sabre's BolaEnh.check_abandon: with R bits still to come at the in-flight rate r after the
    /// first byte, ttfb l and an effective level Q = max(0, buffer + placeholder - l) (a new
    /// request pays the latency again), R' = R - l r; continuing scores (V_p (u_q + gp) - Q) / R';
    /// a lower rung q' of nominal size S_q' = S_q b_q'/b_q scores (V_p (u_q' + gp) - Q) / S_q'.
    /// The best lower rung with S_q' < R' that scores higher wins.
    pub fn abandon_to(&self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        let tfb = p.t_first_byte?;
        if p.bytes_received == 0 || p.bytes_received >= p.bytes_total || p.rung == 0 {
            return None;
        }
        let br = &obs.video.bitrates_bps;
        let lat = s(tfb.saturating_sub(p.t_request));
        let dl = s(p.now.saturating_sub(tfb));
        if dl <= 0.0 {
            return None;
        }
        let got = p.bytes_received as f64 * 8.0;
        let tp = got / dl;
        let remain = p.bytes_total as f64 * 8.0 - got;
        let sz = remain - lat * tp;
        if sz <= 0.0 {
            return None;
        }
        let bl = (s(obs.buffer) + self.placeholder - lat).max(0.0);
        let mut score = (self.max_level(p.rung) - bl) / sz;
        let mut to = None;
        for q in 0..p.rung {
            let other = p.bytes_total as f64 * 8.0 * br[q] as f64 / br[p.rung] as f64;
            let sc = (self.max_level(q) - bl) / other;
            if other < sz && sc > score {
                score = sc;
                to = Some(q);
            }
        }
        to
    }
}

impl BolaE {
    /// The VOXEL release's plain `bola` abandonment (dash.js lineage; claims/voxel.md §5): each
    /// report while the buffer is <= 12 s adds a sample received x 8 / (time since the request);
    /// with >= 5 samples, > 500 ms since the request and the download unfinished, the samples'
    /// mean m gives a total time size x 8 / m; if that is >= 1.8 segment durations and the rung
    /// is above 0, BOLA-E is re-run without a state change (argmax of the score at buffer +
    /// placeholder, then lowered while the rung's nominal bits exceed ibr_safety x buffer x 0.9 m)
    /// and the download is abandoned for that rung if the bytes left exceed size x b_new / b_cur.
    pub fn voxel_abandon_to(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        let key = (p.segment, p.rung, p.t_request);
        if self.vx_download != Some(key) {
            self.vx_download = Some(key);
            self.vx_samples.clear();
        }
        let b = s(obs.buffer);
        let elapsed = s(p.now.saturating_sub(p.t_request));
        if b > 12.0 || elapsed <= 0.0 {
            return None;
        }
        self.vx_samples.push(p.bytes_received as f64 * 8.0 / elapsed);
        if self.vx_samples.len() < 5 || elapsed <= 0.5 || p.bytes_received >= p.bytes_total || p.rung == 0 {
            return None;
        }
        let m = self.vx_samples.iter().sum::<f64>() / self.vx_samples.len() as f64;
        let seg = s(obs.video.seg_duration(p.segment));
        if m <= 0.0 || p.bytes_total as f64 * 8.0 / m < 1.8 * seg {
            return None;
        }
        let br = &obs.video.bitrates_bps;
        let mut q = bola_argmax(&self.u, br, self.vp, self.gp, b + self.placeholder);
        let safe_bits = self.ibr_safety * b * 0.9 * m;
        while q > 0 && br[q] as f64 * seg > safe_bits {
            q -= 1;
        }
        if q >= p.rung {
            return None;
        }
        let other = p.bytes_total as f64 * br[q] as f64 / br[p.rung] as f64;
        ((p.bytes_total - p.bytes_received) as f64 > other).then_some(q)
    }
}

impl Abr for BolaE {
    fn name(&self) -> &'static str {
        "bolae"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let v = obs.video;
        let br = &v.bitrates_bps;
        let top = br.len() - 1;
        if top == 0 {
            return Decision { rung: 0, delay: 0, reason: "single rung".into() };
        }
        let b = s(obs.buffer);
        let seg = obs.segment.min(v.n_segments() - 1);
        if obs.history.len() != self.seen {
            self.seen = obs.history.len();
            if let Some(r) = obs.history.last() {
                // Sabre: the buffer-full wait only (decisions come after it; the ABR delay was
                // before the last download)
                let asked = if self.cfg.sabre_details { 0.0 } else { self.last_delay };
                let idle = s(obs.now.saturating_sub(r.t_last_byte)) - asked;
                if idle > 0.0 {
                    self.placeholder += idle;
                }
            }
            self.placeholder *= self.cfg.decay;
        }
        let sabre = self.cfg.sabre_details;
        if !sabre && !obs.history.is_empty() && obs.buffer == 0 && self.steady {
            self.steady = false;
            self.placeholder = 0.0;
        }
        let tput = self.rate.estimate();
        let mut delay = 0.0;
        let (mut q, mut reason);
        let was_steady = self.steady;
        if !self.steady {
            q = tput.map(|t| self.tput_rung(obs, t)).unwrap_or(0);
            self.placeholder = (self.min_level(br, q) - b).max(0.0);
            reason = format!(
                "startup: tput {} -> {q}, placeholder {:.2}s",
                tput.map(mbps).unwrap_or_else(|| "none".into()),
                self.placeholder
            );
            // As Sabre and dash.js: this decision is the startup one; BOLA takes over from the
            // next decision once a segment is buffered (a throughput sample exists). Sabre's
            // BolaEnh does not check the buffer.
            if tput.is_some() && (sabre || obs.buffer >= v.seg_duration(seg)) {
                self.steady = true;
                self.ibr_safety = self.cfg.ibr_safety;
                reason.push_str("; -> steady");
            }
        } else {
            let qb = b + self.placeholder;
            q = bola_argmax(&self.u, br, self.vp, self.gp, qb);
            reason = format!("BOLA-E Q {b:.2}+{:.2}s -> {q}", self.placeholder);
            let last = if sabre { Some(self.last_download) } else { obs.last_rung };
            if let (Some(last), Some(t)) = (last, tput) {
                let qt = self.tput_rung(obs, t);
                if q > last && q > qt && self.cfg.upswitch != Upswitch::None {
                    let cap = qt.max(last);
                    q = if self.cfg.upswitch == Upswitch::U { cap + 1 } else { cap };
                    reason.push_str(&format!("; up-switch capped by tput {} -> {q}", mbps(t)));
                }
            }
            let excess = qb - self.max_level(q);
            if excess > 0.0 {
                if excess <= self.placeholder || q == top {
                    self.placeholder = (self.placeholder - excess).max(0.0);
                } else {
                    delay = excess - self.placeholder;
                    self.placeholder = 0.0;
                    reason.push_str(&format!("; wait {delay:.3}s"));
                }
            }
        }
        if self.cfg.ibr && (was_steady || !sabre) {
            if let Some(t) = tput {
                let lat = self.rate.lat.estimate_max().unwrap_or(0.0);
                let safe_bits = self.ibr_safety * (b - lat).max(0.0) * t;
                let q0 = q;
                // Sabre: nominal bitrate x segment duration (and no clamp of b - lat at 0)
                let bits = |q: usize| {
                    if sabre {
                        br[q] as f64 * v.seg_duration(seg) as f64 / 1e9
                    } else {
                        v.size(seg, q) as f64 * 8.0
                    }
                };
                let safe_bits = if sabre { self.ibr_safety * (b - lat) * t } else { safe_bits };
                while q > 0 && bits(q) > safe_bits {
                    q -= 1;
                }
                if sabre && q < q0 {
                    delay = 0.0;
                    self.placeholder = self.placeholder.min((self.min_level(br, q) - b).max(0.0));
                }
                if q < q0 {
                    reason.push_str(&format!("; IBR {:.3}*({b:.2}-{lat:.3})s*{} -> {q}", self.ibr_safety, mbps(t)));
                }
                self.ibr_safety = (self.ibr_safety * 0.9).max(self.cfg.ibr_safety_min);
            }
        }
        self.last_delay = delay;
        Decision { rung: q, delay: from_secs_f64(delay), reason }
    }
    fn on_download(&mut self, obs: &AbrObs, rec: &DownloadRecord) {
        self.last_download = rec.rung;
        let abandoned_to = self.abandoned_to.take();
        if self.cfg.sabre_details {
            // Sabre's BolaEnh.report_download; obs.buffer is the level right after the download
            let br = &obs.video.bitrates_bps;
            let level = s(obs.buffer);
            if !rec.abandoned {
                // the buffer at the request plus the new segment
                let level_was = level + s(rec.t_last_byte.saturating_sub(rec.t_request));
                let max_ph = (self.max_level(rec.rung) - level_was).max(0.0);
                self.placeholder = self.placeholder.min(max_ph);
                if level > 0.0 {
                    let min_ph = self.min_level(br, rec.rung) - level_was;
                    self.placeholder = self.placeholder.max(min_ph);
                }
            } else {
                let want = match abandoned_to {
                    Some(q) if q > 0 => self.min_level(br, q),
                    _ => self.cfg.min_buffer,
                };
                self.placeholder = self.placeholder.min((want - level).max(0.0));
            }
        } else if rec.abandoned {
            self.placeholder = 0.0;
        }
        self.rate.on_download(rec);
    }
    fn on_progress(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        if !self.cfg.abandon {
            return None;
        }
        let q = if self.cfg.voxel_abandon { self.voxel_abandon_to(obs, p)? } else { self.abandon_to(obs, p)? };
        self.abandoned_to = Some(q);
        Some(q)
    }
    fn preferred_buffer_max(&self) -> Option<Ns> {
        Some(from_secs_f64(self.target))
    }
    fn preferred_buffer_max_param(&self) -> &'static str {
        "buffer_target"
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::SEC;

    // 1, 2, 4 Mbit/s, 4 s segments: u = 1, 1.6931, 2.3863; T = max(25, 10 + 6) = 25 s;
    // gp = 1.3863/(2.5 - 1) = 0.924196; Vp = 10/gp = 10.820213.
    // min levels: 0, Vp(gp + (2*1 - 1*1.6931)/1) = 13.3202, Vp(gp + (4*1.6931 - 2*2.3863)/2) = 20.8202
    // max levels Vp(u+gp): 20.8202, 28.3202, 35.8202.

    #[test]
    fn startup_placeholder_steady_cap_and_delay() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let p = Params::new().with("ibr", false).with("placeholder_decay", 1.0);
        let mut a = build(&p, &v).unwrap();
        assert_eq!(a.preferred_buffer_max(), Some(25 * SEC));
        assert_eq!(a.choose(&obs(&v, 0, 0, None, &[])).rung, 0);
        // sample: 1.25 MB in 4 s after 100 ms ttfb -> 2.5 Mbit/s; 0.9*2.5 = 2.25 -> rung 1;
        // B = 2 s < one segment -> still startup: placeholder = 13.3202 - 2 = 11.3202
        let h1 = [rec(0, 0, 1_250_000, 0, 100, 4000)];
        a.on_download(&obs(&v, 0, 0, None, &[]), &h1[0]);
        assert_eq!(a.choose(&obs(&v, 1, 2 * SEC, Some(0), &h1)).rung, 1);
        // second download (same rate), decided right at its last byte (no idle); B = 6 s >= one
        // segment: still the startup decision (Sabre/dash.js order): rung 1, placeholder =
        // 13.3202 - 6 = 7.3202; the next decision is BOLA's.
        let h2 = [h1[0], rec(1, 1, 1_250_000, 5 * SEC, 100, 4000)];
        a.on_download(&obs(&v, 1, 0, None, &[]), &h2[1]);
        let d = a.choose(&obs(&v, 2, 6 * SEC, Some(1), &h2));
        assert_eq!((d.rung, d.delay), (1, 0), "{}", d.reason);
        assert!(d.reason.starts_with("startup") && d.reason.contains("placeholder 7.32"), "{}", d.reason);
        // third download; the decision comes 5 s after its last byte (player idle): placeholder
        // 7.3202 + 5 = 12.3202; B = 10: Q = 22.3202: scores -1.5, 6/2 = 3.0, 13.5/4 = 3.375 -> 2,
        // but the up-switch is capped at the tput rung 1 (0.9*2.5 = 2.25) -> 1. Q < 28.32: no delay.
        let h3 = [h2[0], h2[1], rec(2, 1, 1_250_000, 10 * SEC, 100, 4000)];
        a.on_download(&obs(&v, 2, 0, None, &[]), &h3[2]);
        let mut o = obs(&v, 3, 10 * SEC, Some(1), &h3);
        o.now += 5 * SEC;
        let d = a.choose(&o);
        assert_eq!((d.rung, d.delay), (1, 0), "{}", d.reason);
        assert!(d.reason.contains("capped"), "{}", d.reason);
        // same history (no new idle): B = 40 s: Q = 52.3202, capped rung 1, max level 28.3202:
        // excess 24.0 > placeholder 12.3202 -> delay 11.6798 s, placeholder 0.
        let mut o = obs(&v, 3, 40 * SEC, Some(1), &h3);
        o.now += 5 * SEC;
        let d = a.choose(&o);
        assert_eq!(d.rung, 1);
        assert!((d.delay as f64 / 1e9 - 11.6798).abs() < 1e-3, "{} {}", d.delay, d.reason);
    }

    /// With playback starting after one segment (Sabre, dash.js VOD), the first decision with a
    /// throughput sample sees exactly one segment buffered. Sabre's BolaEnh and dash.js's BolaRule
    /// take that decision in STARTUP (throughput pick + placeholder) and only then go STEADY; the
    /// old order went STEADY first, so the throughput startup was never used (rung 0 instead).
    #[test]
    fn first_decision_at_one_segment_is_the_startup_pick() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let p = Params::new().with("ibr", false).with("placeholder_decay", 1.0);
        let mut a = build(&p, &v).unwrap();
        assert_eq!(a.choose(&obs(&v, 0, 0, None, &[])).rung, 0);
        // 1.25 MB in 4 s after 100 ms ttfb -> 2.5 Mbit/s; 0.9*2.5 = 2.25 -> rung 1. B = 4 s (one
        // segment). BOLA alone at Q = 4 would give rung 0: (20.82-4)/1 = 16.8 > (28.32-4)/2 = 12.2.
        let h1 = [rec(0, 0, 1_250_000, 0, 100, 4000)];
        a.on_download(&obs(&v, 0, 0, None, &[]), &h1[0]);
        let d = a.choose(&obs(&v, 1, 4 * SEC, Some(0), &h1));
        assert_eq!(d.rung, 1, "{}", d.reason);
        // placeholder = min level of rung 1 (13.3202) - 4 = 9.3202
        assert!(d.reason.starts_with("startup") && d.reason.contains("placeholder 9.32"), "{}", d.reason);
        // next decision is BOLA's: B = 6 s, no idle: Q = 15.3202: scores (20.82-15.32)/1 = 5.5,
        // (28.32-15.32)/2 = 6.5, (35.82-15.32)/4 = 5.125 -> rung 1
        let h2 = [h1[0], rec(1, 1, 1_250_000, 5 * SEC, 100, 4000)];
        a.on_download(&obs(&v, 1, 0, None, &[]), &h2[1]);
        let d = a.choose(&obs(&v, 2, 6 * SEC, Some(1), &h2));
        assert_eq!(d.rung, 1, "{}", d.reason);
        assert!(d.reason.starts_with("BOLA-E Q 6.00+9.32"), "{}", d.reason);
    }

    /// Sabre's default BOLA-E (`upswitch = bola-u`) and the uncapped mode up-switch where BOLA-O
    /// (dash.js, Sabre -ao) holds the throughput rung.
    #[test]
    fn upswitch_modes_bola_o_u_and_none() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let run = |mode: &str, b_s: u64| {
            let p = Params::new().with("ibr", false).with("placeholder_decay", 1.0).with("upswitch", mode);
            let mut a = build(&p, &v).unwrap();
            // as in startup_placeholder_steady_cap_and_delay: tput 2.5 Mbit/s (0.9 x -> rung 1),
            // startup pick rung 1 at B = 6 s (placeholder 7.3202), then BOLA
            let h = [
                rec(0, 0, 1_250_000, 0, 100, 4000),
                rec(1, 1, 1_250_000, 5 * SEC, 100, 4000),
                rec(2, 1, 1_250_000, 10 * SEC, 100, 4000),
            ];
            a.on_download(&obs(&v, 0, 0, None, &[]), &h[0]);
            a.choose(&obs(&v, 1, 2 * SEC, Some(0), &h[..1]));
            a.on_download(&obs(&v, 1, 0, None, &[]), &h[1]);
            assert_eq!(a.choose(&obs(&v, 2, 6 * SEC, Some(1), &h[..2])).rung, 1);
            a.on_download(&obs(&v, 2, 0, None, &[]), &h[2]);
            a.choose(&obs(&v, 3, b_s * SEC, Some(1), &h))
        };
        // B = 15 s: Q = 22.3202: scores (20.82-22.32)/1 = -1.5, (28.32-22.32)/2 = 3.0,
        // (35.82-22.32)/4 = 3.375 -> BOLA wants rung 2 > last 1 = throughput rung 1
        let o = run("bola-o", 15);
        assert_eq!(o.rung, 1, "{}", o.reason);
        assert!(o.reason.contains("capped"), "{}", o.reason);
        let u = run("bola-u", 15);
        assert_eq!(u.rung, 2, "{}", u.reason); // max(last, qt) + 1 = 2
        assert!(u.reason.contains("capped"), "{}", u.reason);
        let n = run("none", 15);
        assert_eq!(n.rung, 2, "{}", n.reason);
        assert!(!n.reason.contains("capped"), "{}", n.reason);
        // no up-switch wanted (B = 8 s: Q = 15.32 -> 5.5, 6.5, 5.125 -> rung 1): all three agree
        for m in ["bola-o", "bola-u", "none"] {
            assert_eq!(run(m, 8).rung, 1, "{m}");
        }
        assert!(build(&Params::new().with("upswitch", "bola-x"), &v).is_err());
    }

    /// Sabre's BolaEnh.check_abandon, by hand.
    #[test]
    fn bola_score_abandonment() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let o = obs(&v, 2, 10 * SEC, Some(1), &[]);
        let pr = |got: u64| Progress {
            now: 1100 * crate::time::MS,
            segment: 2,
            rung: 2,
            bytes_total: 2_000_000,
            bytes_received: got,
            t_request: 0,
            t_first_byte: Some(100 * crate::time::MS),
        };
        // off by default
        let mut off = build(&Params::new(), &v).unwrap();
        assert_eq!(off.on_progress(&o, &pr(100_000)), None);
        let mut a = build(&Params::new().with("abandon", true), &v).unwrap();
        // 0.8 Mbit in 1 s after a 0.1 s ttfb: R' = 15.2 - 0.1*0.8 = 15.12 Mbit; Q = 10 - 0.1 = 9.9
        // (placeholder 0). Keep: (35.8202-9.9)/15.12 = 1.714; rung 0 (4 Mbit): 10.9202/4 = 2.730;
        // rung 1 (8 Mbit): 18.4202/8 = 2.303 -> abandon to 0
        assert_eq!(a.on_progress(&o, &pr(100_000)), Some(0));
        // 1.8 MB received at 14.4 Mbit/s: R' = 1.6 - 1.44 = 0.16 Mbit, smaller than any lower
        // rung's size -> keep
        assert_eq!(a.on_progress(&o, &pr(1_800_000)), None);
    }

    /// The VOXEL release's plain `bola` abandonment, by hand.
    #[test]
    fn voxel_abandonment_rule() {
        // 1, 2, 4 Mbit/s, 4 s: max levels V_p(u + gp) = 20.8202, 28.3202, 35.8202 (above);
        // placeholder 0, ibr_safety 0.9 (fresh). Rung 2 (2,000,000 B) in flight, requested at 0,
        // arriving at 1 Mbit/s (125,000 B/s), reports every 100 ms.
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let pr = |ms: u64, rate_bps: u64| Progress {
            now: ms * crate::time::MS,
            segment: 2,
            rung: 2,
            bytes_total: 2_000_000,
            bytes_received: rate_bps / 8 * ms / 1000,
            t_request: 0,
            t_first_byte: Some(crate::time::MS),
        };
        let p = Params::new().with("abandon", true).with("abandon_rule", "voxel");
        let mut a = build(&p, &v).unwrap();
        let o = obs(&v, 2, 8 * SEC, Some(2), &[]);
        // reports 1-5 (100..500 ms): fewer than 5 samples, then 500 ms is not > 500 ms
        for ms in [100, 200, 300, 400, 500] {
            assert_eq!(a.on_progress(&o, &pr(ms, 1_000_000)), None, "{ms}");
        }
        // 600 ms: 6 samples of 1 Mbit/s; total 16e6 bits / 1e6 = 16 s >= 7.2 s; re-run at Q = 8:
        // scores 12.82/1, 20.32/2 = 10.16, 27.82/4 = 6.955 -> rung 0; safe bits 0.9 x 8 x 0.9e6 =
        // 6.48e6 >= 4e6 (rung 0). Bytes left 2,000,000 - 75,000 = 1,925,000 > 2,000,000 x 1/4 =
        // 500,000 -> abandon to 0.
        assert_eq!(a.on_progress(&o, &pr(600, 1_000_000)), Some(0));
        // a buffer above 12 s: never (and no samples are taken)
        let mut b = build(&p, &v).unwrap();
        let o13 = obs(&v, 2, 13 * SEC, Some(2), &[]);
        for ms in (100..=1000).step_by(100) {
            assert_eq!(b.on_progress(&o13, &pr(ms, 1_000_000)), None);
        }
        // at 4 Mbit/s the total time is 16e6 / 4e6 = 4 s < 1.8 x 4 = 7.2 s: never
        let mut c = build(&p, &v).unwrap();
        for ms in (100..=1000).step_by(100) {
            assert_eq!(c.on_progress(&o, &pr(ms, 4_000_000)), None);
        }
        // Sabre's rule (the default) needs no sample count: at the first report (100 ms, 0.1 Mbit
        // in, ttfb 1 ms) R' = 15.9 Mbit, Q = 8 - 0.001: keep 27.82/15.9 = 1.75 per Mbit < rung 0's
        // 12.82/4 = 3.21 (rung 1: 20.32/8 = 2.54) -> abandon to 0 at once
        let mut d = build(&Params::new().with("abandon", true), &v).unwrap();
        assert_eq!(d.on_progress(&o, &pr(100, 1_000_000)), Some(0));
        assert!(build(&Params::new().with("abandon_rule", "dashjs"), &v).is_err());
    }

    #[test]
    fn sabre_ibr_lowers_the_startup_pick() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let mut a = build(&Params::new(), &v).unwrap();
        let h1 = [rec(0, 0, 1_250_000, 0, 100, 4000)];
        a.on_download(&obs(&v, 0, 0, None, &[]), &h1[0]);
        // startup pick rung 1 (8 Mbit); IBR: 0.9*(2 - 0.1)*2.5 = 4.275 Mbit -> rung 0 (4 Mbit fits)
        let d = a.choose(&obs(&v, 1, 2 * SEC, Some(0), &h1));
        assert_eq!(d.rung, 0, "{}", d.reason);
        // a fresh instance at B = 3.8 s (still startup): 0.9*(3.8-0.1)*2.5 = 8.325 Mbit >= 8 Mbit
        // -> rung 1 stays
        let mut b = build(&Params::new(), &v).unwrap();
        b.on_download(&obs(&v, 0, 0, None, &[]), &h1[0]);
        assert_eq!(b.choose(&obs(&v, 1, 3_800_000_000, Some(0), &h1)).rung, 1);
    }

    #[test]
    fn quality_table_utilities() {
        let mut v = cbr(&[1000, 2000, 4000], 4, 2);
        v.quality.insert("vmaf".into(), vec![vec![40.0, 70.0, 90.0], vec![60.0, 70.0, 90.0]]);
        // means 50, 70, 90 -> u = 1 + (0, 0.5, 1) * ln 4 = 1, 1.6931, 2.3863 (same as log here)
        let a = BolaE::new(
            BolaECfg {
                buffer_target: 25.0,
                min_buffer: 10.0,
                per_level: 2.0,
                safety: 0.9,
                ibr: false,
                ibr_safety: 0.9,
                ibr_safety_min: 0.5,
                decay: 1.0,
                metric: Some("vmaf"),
                upswitch: Upswitch::O,
                abandon: false,
                voxel_abandon: false,
                sabre_details: false,
            },
            &v,
        )
        .unwrap();
        assert!((a.u[1] - (1.0 + 0.5 * 4f64.ln())).abs() < 1e-12);
        assert!((a.max_level(2) - 35.8202128).abs() < 1e-6);
        assert_eq!(build(&Params::new().with("utility", "ssim"), &v).err().unwrap().param, "utility");
    }
}
