//! `throughput`: the rate rule of dash.js (ThroughputRule) / Sabre, with the dash.js
//! InsufficientBufferRule and AbandonRequestsRule.
//!
//! Rung = highest rung whose bitrate <= safety * estimate (safety 0.9). Latency-aware variant
//! (Sabre's `quality_from_throughput`): highest rung with `latency + seg * bitrate / (safety *
//! estimate) <= seg`. The IBR caps the bitrate at `estimate * 0.7 * buffer / seg_dur` (lowest rung
//! when the buffer is empty), ignoring the first 2 segments. The abandonment rule lives in
//! [`Abandon`] and is shared with `dynamic`.

use super::estimators::{
    build_estimator, count_param, dur_param, float_in, mbps, rung_for_rate, s, CountEwma, Estimator, Sample,
    ESTIMATOR_PARAMS, SAMPLE_CHOICES,
};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord, Progress};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::Ns;
use crate::video::Video;

/// dash.js InsufficientBufferRule: cap at `tput * factor * buffer / seg_dur`.
#[derive(Clone, Debug)]
pub struct DashIbr {
    pub factor: f64,
    /// Segments (finished downloads) during which the rule is skipped.
    pub ignore: usize,
}

impl DashIbr {
    /// The cap (a rung) or None when the rule does not apply.
    pub fn cap(&self, obs: &AbrObs, tput_bps: Option<f64>) -> Option<(usize, String)> {
        if obs.history.len() < self.ignore {
            return None;
        }
        if obs.buffer == 0 {
            return Some((0, "IBR: buffer empty -> rung 0".into()));
        }
        let t = tput_bps?;
        let seg = s(obs.video.seg_duration(obs.segment));
        let cap_bps = t * self.factor * s(obs.buffer) / seg;
        let q = rung_for_rate(&obs.video.bitrates_bps, cap_bps);
        Some((q, format!("IBR cap {}*{}*{:.2}s/{:.2}s={}", mbps(t), self.factor, s(obs.buffer), seg, mbps(cap_bps))))
    }
}

/// dash.js AbandonRequestsRule (also Sabre's throughput abandonment).
///
/// Fires at most once per segment, when: the buffer is below `buffer_limit` (if set), the rung is
/// above 0, at least `min_samples` progress reports with bytes have been seen for this download,
/// more than `grace` has passed since the first byte, the projected total download time
/// `bytes_total * elapsed / bytes_received` (from the first byte) exceeds `multiplier * segment
/// duration`, the rung sustainable at `safety * measured throughput` is lower, and the bytes still
/// to download exceed that rung's full size.
#[derive(Clone, Debug)]
pub struct Abandon {
    pub multiplier: f64,
    pub grace: Ns,
    pub min_samples: usize,
    pub safety: f64,
    pub buffer_limit: Option<Ns>,
    seg: Option<usize>,
    samples: usize,
    fired_for: Option<usize>,
}

impl Abandon {
    pub fn new(multiplier: f64, grace: Ns, min_samples: usize, safety: f64, buffer_limit: Option<Ns>) -> Abandon {
        Abandon { multiplier, grace, min_samples, safety, buffer_limit, seg: None, samples: 0, fired_for: None }
    }

    pub fn check(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        if self.seg != Some(p.segment) {
            self.seg = Some(p.segment);
            self.samples = 0;
        }
        let t_fb = p.t_first_byte?;
        if p.bytes_received == 0 {
            return None;
        }
        self.samples += 1;
        if self.fired_for == Some(p.segment) || p.rung == 0 || p.bytes_received >= p.bytes_total {
            return None;
        }
        if let Some(lim) = self.buffer_limit {
            if obs.buffer >= lim {
                return None;
            }
        }
        let elapsed = p.now.saturating_sub(t_fb);
        if elapsed <= self.grace || self.samples < self.min_samples {
            return None;
        }
        // Projected time from first byte to last byte at the rate seen so far (integer ns).
        let projected = (p.bytes_total as u128 * elapsed as u128 / p.bytes_received as u128) as f64;
        let limit = self.multiplier * obs.video.seg_duration(p.segment) as f64;
        if projected <= limit {
            return None;
        }
        let tput = p.bytes_received as f64 * 8e9 / elapsed as f64;
        let q = rung_for_rate(&obs.video.bitrates_bps, self.safety * tput);
        let remaining = p.bytes_total - p.bytes_received;
        if q < p.rung && remaining > obs.video.size(p.segment, q) {
            self.fired_for = Some(p.segment);
            Some(q)
        } else {
            None
        }
    }
}

pub const ABANDON_PARAMS: [ParamSpec; 5] = [
    ParamSpec {
        name: "abandon",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "dash.js AbandonRequestsRule (active by default in dash.js)",
    },
    ParamSpec {
        name: "abandon_multiplier",
        unit: Unit::Float,
        default: Default::Float(1.8),
        doc: "abandon when the projected download time exceeds this many segment durations (dash.js abandonDurationMultiplier 1.8)",
    },
    ParamSpec {
        name: "abandon_grace",
        unit: Unit::Duration,
        default: Default::Int(500_000_000),
        doc: "no abandonment before this time since the first byte (dash.js minSegmentDownloadTimeThresholdInMs 500)",
    },
    ParamSpec {
        name: "abandon_min_samples",
        unit: Unit::Int,
        default: Default::Int(6),
        doc: "progress reports (after the first byte) needed before abandoning (dash.js minThroughputSamplesThreshold 6)",
    },
    ParamSpec {
        name: "abandon_buffer_limit",
        unit: Unit::Duration,
        default: Default::Int(18_000_000_000),
        doc: "abandon only while the buffer is below this (dash.js: bufferTimeDefault 18 s)",
    },
];

pub fn build_abandon(p: &Params, specs: &[ParamSpec], safety: f64) -> Result<Option<Abandon>, ParamError> {
    if !p.bool(specs, "abandon")? {
        return Ok(None);
    }
    let m = float_in(p, specs, "abandon_multiplier", 1.0, 100.0)?;
    let g = p.req_u64(specs, "abandon_grace")?;
    let n = p.req_u64(specs, "abandon_min_samples")? as usize;
    let lim = p.req_u64(specs, "abandon_buffer_limit")?;
    Ok(Some(Abandon::new(m, g, n, safety, Some(lim))))
}

pub const IBR_PARAMS: [ParamSpec; 3] = [
    ParamSpec {
        name: "ibr",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "dash.js InsufficientBufferRule (active by default in dash.js)",
    },
    ParamSpec {
        name: "ibr_factor",
        unit: Unit::Float,
        default: Default::Float(0.7),
        doc: "IBR cap = throughput * factor * buffer / segment duration (dash.js v5 0.7; v4 0.5)",
    },
    ParamSpec {
        name: "ibr_ignore",
        unit: Unit::Int,
        default: Default::Int(2),
        doc: "IBR skipped for this many first segments (dash.js segmentIgnoreCount 2)",
    },
];

pub fn build_ibr(p: &Params, specs: &[ParamSpec]) -> Result<Option<DashIbr>, ParamError> {
    if !p.bool(specs, "ibr")? {
        return Ok(None);
    }
    Ok(Some(DashIbr {
        factor: float_in(p, specs, "ibr_factor", 0.0, 10.0)?,
        ignore: p.req_u64(specs, "ibr_ignore")? as usize,
    }))
}

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "safety",
        unit: Unit::Float,
        default: Default::Float(0.9),
        doc: "bandwidth safety factor applied to the estimate (dash.js bandwidthSafetyFactor, Sabre 0.9)",
    },
    ParamSpec {
        name: "sample",
        unit: Unit::Choice(SAMPLE_CHOICES),
        default: Default::Str("first_byte"),
        doc: "throughput sample: bytes over first-to-last byte (Sabre, dash.js dead-time latency) or request-to-last byte",
    },
    ParamSpec {
        name: "latency_aware",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "Sabre's latency-aware pick: latency + seg*bitrate/(safety*estimate) <= seg (latency: max of 1- and 2-sample EWMAs)",
    },
    ESTIMATOR_PARAMS[0],
    ESTIMATOR_PARAMS[1],
    ESTIMATOR_PARAMS[2],
    ESTIMATOR_PARAMS[3],
    ESTIMATOR_PARAMS[4],
    IBR_PARAMS[0],
    IBR_PARAMS[1],
    IBR_PARAMS[2],
    ABANDON_PARAMS[0],
    ABANDON_PARAMS[1],
    ABANDON_PARAMS[2],
    ABANDON_PARAMS[3],
    ABANDON_PARAMS[4],
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "throughput",
    summary:
        "rate rule: highest rung <= 0.9 x throughput estimate (EWMA/sliding/harmonic), dash.js IBR and abandonment",
    reference: "dash.js v5 ThroughputRule/InsufficientBufferRule/AbandonRequestsRule; Spiteri et al. MMSys'18 (Sabre)",
    params: PARAMS,
    build,
};

/// The rate rule alone (shared with `dynamic`).
#[derive(Clone, Debug)]
pub struct RateRule {
    pub est: Estimator,
    pub safety: f64,
    pub sample: Sample,
    pub latency_aware: bool,
    pub lat: CountEwma,
}

impl RateRule {
    pub fn from_params(p: &Params, specs: &[ParamSpec]) -> Result<RateRule, ParamError> {
        Ok(RateRule {
            est: build_estimator(p, specs)?,
            safety: float_in(p, specs, "safety", 0.0, 10.0)?,
            sample: Sample::from_name(p.choice(specs, "sample")?),
            latency_aware: p.bool(specs, "latency_aware")?,
            lat: CountEwma::new(1.0, 2.0),
        })
    }
    pub fn estimate(&self) -> Option<f64> {
        self.est.estimate()
    }
    pub fn choose(&self, obs: &AbrObs) -> (usize, String) {
        let Some(t) = self.est.estimate() else {
            return (0, "no throughput sample yet -> rung 0".into());
        };
        let b = &obs.video.bitrates_bps;
        if self.latency_aware {
            let seg = s(obs.video.seg_duration(obs.segment));
            let lat = self.lat.estimate_max().unwrap_or(0.0);
            let safe = self.safety * t;
            let mut q = 0;
            for (i, br) in b.iter().enumerate() {
                if lat + seg * *br as f64 / safe <= seg {
                    q = i;
                }
            }
            (q, format!("tput {}*{} latency {:.3}s -> rung {q}", mbps(t), self.safety, lat))
        } else {
            let q = rung_for_rate(b, self.safety * t);
            (q, format!("tput {}*{} -> rung {q}", mbps(t), self.safety))
        }
    }
    pub fn on_download(&mut self, rec: &DownloadRecord) {
        if rec.abandoned {
            return;
        }
        let (x, d) = self.sample.of(rec);
        self.est.push(x, d);
        self.lat.push(s(rec.latency()));
    }
}

fn build(p: &Params, _v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let _ = count_param(p, PARAMS, "window")?;
    let _ = dur_param(p, PARAMS, "fast_half_life")?;
    let rule = RateRule::from_params(p, PARAMS)?;
    let ibr = build_ibr(p, PARAMS)?;
    let abandon = build_abandon(p, PARAMS, rule.safety)?;
    Ok(Box::new(Throughput { rule, ibr, abandon }))
}

pub struct Throughput {
    pub rule: RateRule,
    pub ibr: Option<DashIbr>,
    pub abandon: Option<Abandon>,
}

impl Abr for Throughput {
    fn name(&self) -> &'static str {
        "throughput"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let (mut q, mut reason) = self.rule.choose(obs);
        if let Some(ibr) = &self.ibr {
            if let Some((cap, why)) = ibr.cap(obs, self.rule.estimate()) {
                if cap < q {
                    q = cap;
                    reason = format!("{reason}; {why} -> rung {q}");
                }
            }
        }
        Decision { rung: q, delay: 0, reason }
    }
    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        self.rule.on_download(rec);
    }
    fn on_progress(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        self.abandon.as_mut()?.check(obs, p)
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::{MS, SEC};

    #[test]
    fn rate_rule_with_ewma_and_ibr() {
        let v = cbr(&[500, 1000, 2000, 4000], 2, 10);
        let mut a = build(&Params::new(), &v).unwrap();
        // no sample -> rung 0
        assert_eq!(a.choose(&obs(&v, 0, 0, None, &[])).rung, 0);
        // one sample: 750_000 B in 2 s (first to last byte) = 3 Mbit/s; EWMA first sample exact:
        // 0.9*3 = 2.7 Mbit/s -> rung 2 (2 Mbit/s). IBR ignores the first 2 segments.
        let h = [rec(0, 0, 750_000, 0, 100, 2000)];
        let o = obs(&v, 1, 2 * SEC, Some(0), &h);
        a.on_download(&o, &h[0]);
        assert_eq!(a.choose(&o).rung, 2);
        // second sample identical: estimate still 3 Mbit/s; 2 downloads -> IBR applies:
        // cap = 3 * 0.7 * buffer/2s. buffer 2 s -> 2.1 Mbit/s -> rung 2 (no cap effect);
        // buffer 1 s -> 1.05 Mbit/s -> rung 1.
        let h2 = [h[0], rec(1, 2, 750_000, 3 * SEC, 100, 2000)];
        a.on_download(&o, &h2[1]);
        assert_eq!(a.choose(&obs(&v, 2, 2 * SEC, Some(2), &h2)).rung, 2);
        assert_eq!(a.choose(&obs(&v, 2, SEC, Some(2), &h2)).rung, 1);
        // empty buffer -> rung 0
        assert_eq!(a.choose(&obs(&v, 2, 0, Some(2), &h2)).rung, 0);
    }

    #[test]
    fn sliding_and_latency_aware() {
        let v = cbr(&[500, 1000, 2000, 4000], 2, 10);
        let p = Params::new().with("estimator", "sliding").with("window", 3).with("ibr", false);
        let mut a = build(&p, &v).unwrap();
        // samples (first to last byte): 1, 2, 3, 6 Mbit/s (250/500/750/1500 kB in 2 s)
        let mut h = vec![];
        for (i, b) in [250_000u64, 500_000, 750_000, 1_500_000].iter().enumerate() {
            h.push(rec(i, 0, *b, i as u64 * 3 * SEC, 100, 2000));
            a.on_download(&obs(&v, i, SEC, Some(0), &h), h.last().unwrap());
        }
        // mean(2, 3, 6) = 11/3 = 3.667; *0.9 = 3.3 -> rung 2 (2 Mbit/s)
        assert_eq!(a.choose(&obs(&v, 4, 5 * SEC, Some(0), &h)).rung, 2);
        // latency-aware: latency 1 s, estimate 5 Mbit/s (one sample), safety 0.9 -> 4.5 Mbit/s.
        // rung 2: 1 + 2*2/4.5 = 1.889 <= 2 ok; rung 3: 1 + 2*4/4.5 = 2.78 > 2 -> rung 2.
        let p = Params::new().with("latency_aware", true).with("ibr", false);
        let mut a = build(&p, &v).unwrap();
        let r = rec(0, 0, 1_250_000, 0, 1000, 2000); // 1.25 MB in 2 s = 5 Mbit/s, ttfb 1 s
        a.on_download(&obs(&v, 0, 0, None, &[]), &r);
        assert_eq!(a.choose(&obs(&v, 1, 5 * SEC, Some(0), &[r])).rung, 2);
        // without latency awareness 4.5 Mbit/s -> rung 3
        let mut a = build(&Params::new().with("ibr", false), &v).unwrap();
        a.on_download(&obs(&v, 0, 0, None, &[]), &r);
        assert_eq!(a.choose(&obs(&v, 1, 5 * SEC, Some(0), &[r])).rung, 3);
    }

    fn prog(now_ms: u64, received: u64) -> Progress {
        Progress {
            now: now_ms * MS,
            segment: 3,
            rung: 1,
            bytes_total: 750_000, // 3 Mbit/s * 2 s / 8
            bytes_received: received,
            t_request: 0,
            t_first_byte: Some(100 * MS),
        }
    }

    #[test]
    fn abandonment_fires_exactly_at_1_8x() {
        let v = cbr(&[1000, 3000], 2, 10);
        let o = obs(&v, 3, 4 * SEC, Some(1), &[]);
        let mut a = Abandon::new(1.8, 500 * MS, 6, 0.9, Some(18 * SEC));
        // 5 early progress reports (samples 1..5); even a terrible rate cannot fire in the grace time.
        for t in [200, 300, 400, 500, 600] {
            assert_eq!(a.check(&o, &prog(t, 1000)), None);
        }
        // 6th sample at 700 ms: elapsed since first byte 600 ms > 500 ms grace.
        // Limit 1.8*2 s = 3.6 s. 125_000 B in 0.6 s -> projected 750_000*0.6/125_000 = 3.6 s: not > limit.
        assert_eq!(a.check(&o, &prog(700, 125_000)), None);
        // 124_999 B -> projected 3.600029 s > 3.6 s -> fires; tput = 124_999*8/0.6 = 1.6667 Mbit/s,
        // *0.9 = 1.5 Mbit/s -> rung 0 (1 Mbit/s); remaining 625_001 B > 250_000 B (rung 0 size) -> Some(0)
        assert_eq!(a.check(&o, &prog(700, 124_999)), Some(0));
        // at most once per segment
        assert_eq!(a.check(&o, &prog(800, 124_999)), None);
        // buffer above 18 s: never
        let mut a = Abandon::new(1.8, 500 * MS, 6, 0.9, Some(18 * SEC));
        let full = obs(&v, 3, 18 * SEC, Some(1), &[]);
        for t in [200, 300, 400, 500, 600, 700, 800] {
            assert_eq!(a.check(&full, &prog(t, 10)), None);
        }
        // fewer than 6 samples: never
        let mut a = Abandon::new(1.8, 500 * MS, 6, 0.9, Some(18 * SEC));
        assert_eq!(a.check(&o, &prog(700, 10)), None);
        assert_eq!(a.check(&o, &prog(900, 10)), None);
    }
}
