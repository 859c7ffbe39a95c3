//! `festive`: FESTIVE (Jiang, Sekar, Zhang, CoNEXT'12), as parameterised in Pensieve's baseline.
//!
//! * Estimate: harmonic mean of the last 20 throughput samples; target = highest rung with
//!   bitrate <= p * estimate, p = 0.85.
//! * Gradual switching: up by one level only when the target has been above the current rung for
//!   more than k consecutive decisions, k = current rung index (so from rung 0 at once); down by
//!   one level as soon as the target is below.
//! * Delayed update: the candidate b_ref replaces the current b_cur only if its score is lower,
//!   score(b) = stability(b) + alpha * efficiency(b), stability = 2^(switches among the last 5
//!   decisions, +1 if b != b_cur), efficiency = |b / min(w, b_ref) - 1|, w = p * estimate,
//!   alpha = 12.
//! * Randomized scheduling (optional, on by default): once the buffer exceeds a target drawn
//!   uniformly in [target_buffer - segment, target_buffer + segment) for each request (a seeded
//!   stream: set `seed` per client), the request waits until the buffer drains to it.

use super::estimators::{count_param, float_in, mbps, rung_for_rate, s, HarmonicMean, Sample, SAMPLE_CHOICES};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::rng::Rng;
use crate::time::{from_secs_f64, Ns};
use crate::video::Video;
use std::collections::VecDeque;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "p",
        unit: Unit::Float,
        default: Default::Float(0.85),
        doc: "fraction of the estimate used as the reference bitrate (FESTIVE p = 0.85)",
    },
    ParamSpec {
        name: "window",
        unit: Unit::Int,
        default: Default::Int(20),
        doc: "samples of the harmonic-mean estimate (FESTIVE: last 20)",
    },
    ParamSpec {
        name: "alpha",
        unit: Unit::Float,
        default: Default::Float(12.0),
        doc: "weight of efficiency against stability (FESTIVE alpha = 12)",
    },
    ParamSpec {
        name: "switch_window",
        unit: Unit::Int,
        default: Default::Int(5),
        doc: "decisions over which switches are counted for the stability score (Pensieve FESTIVE: 5)",
    },
    ParamSpec {
        name: "sample",
        unit: Unit::Choice(SAMPLE_CHOICES),
        default: Default::Str("request"),
        doc: "throughput sample (FESTIVE: segment size / download time)",
    },
    ParamSpec {
        name: "random_scheduling",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "FESTIVE's randomized request scheduling around target_buffer",
    },
    ParamSpec {
        name: "target_buffer",
        unit: Unit::Duration,
        default: Default::Int(30_000_000_000),
        doc:
            "buffer around which requests are randomized (FESTIVE 30 s); the player's buffer_max defaults to it plus two segments",
    },
    ParamSpec {
        name: "seed",
        unit: Unit::Int,
        default: Default::Int(1),
        doc: "seed of the scheduling randomness (give each client its own)",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "festive",
    summary: "FESTIVE: harmonic mean of 20 samples x 0.85, gradual up-switching, stability/efficiency score, randomized scheduling",
    reference: "Jiang, Sekar, Zhang CoNEXT'12; Pensieve FESTIVE baseline",
    params: PARAMS,
    build,
};

fn build(p: &Params, v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    Ok(Box::new(Festive {
        p: float_in(p, PARAMS, "p", 0.0, 10.0)?,
        alpha: float_in(p, PARAMS, "alpha", 0.0, 1e6)?,
        hm: HarmonicMean::new(count_param(p, PARAMS, "window")?),
        switch_window: count_param(p, PARAMS, "switch_window")?,
        sample: Sample::from_name(p.choice(PARAMS, "sample")?),
        random: p.bool(PARAMS, "random_scheduling")?,
        target_buffer: p.req_u64(PARAMS, "target_buffer")?,
        rng: Rng::for_component(p.req_u64(PARAMS, "seed")?, "abr/festive"),
        segment: v.segment_duration,
        ups: 0,
        switches: VecDeque::new(),
    }))
}

pub struct Festive {
    p: f64,
    alpha: f64,
    hm: HarmonicMean,
    switch_window: usize,
    sample: Sample,
    random: bool,
    target_buffer: Ns,
    rng: Rng,
    segment: Ns,
    ups: usize,
    switches: VecDeque<bool>,
}

impl Abr for Festive {
    fn name(&self) -> &'static str {
        "festive"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let v = obs.video;
        let br = &v.bitrates_bps;
        let cur = obs.last_rung.unwrap_or(0).min(br.len() - 1);
        let delay = if self.random {
            let seg = s(v.segment_duration);
            let rb = s(self.target_buffer) - seg + 2.0 * seg * self.rng.uniform();
            (s(obs.buffer) - rb).max(0.0)
        } else {
            0.0
        };
        let Some(est) = self.hm.estimate() else {
            return Decision {
                rung: 0,
                delay: from_secs_f64(delay),
                reason: "no throughput sample yet -> rung 0".into(),
            };
        };
        let w = self.p * est;
        let target = rung_for_rate(br, w);
        if target > cur {
            self.ups += 1;
        } else {
            self.ups = 0;
        }
        let b_ref = if target > cur && self.ups > cur {
            cur + 1
        } else if target < cur {
            cur - 1
        } else {
            cur
        };
        let n_sw = self.switches.iter().filter(|x| **x).count() as i32;
        let rref = br[b_ref] as f64;
        let score = |b: usize| {
            let stab = 2f64.powi(n_sw + if b != cur { 1 } else { 0 });
            let eff = (br[b] as f64 / w.min(rref) - 1.0).abs();
            stab + self.alpha * eff
        };
        let q = if b_ref != cur && score(b_ref) < score(cur) { b_ref } else { cur };
        let reason = format!(
            "hm {}*{} -> target {target}, ups {}, b_ref {b_ref}: score(ref) {:.3} vs score(cur) {:.3} -> {q}{}",
            mbps(est),
            self.p,
            self.ups,
            score(b_ref),
            score(cur),
            if delay > 0.0 { format!("; wait {delay:.3}s") } else { String::new() }
        );
        if q != cur {
            self.ups = 0;
        }
        self.switches.push_back(q != cur);
        while self.switches.len() > self.switch_window {
            self.switches.pop_front();
        }
        Decision { rung: q, delay: from_secs_f64(delay), reason }
    }
    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        if !rec.abandoned {
            self.hm.push(self.sample.of(rec).0);
        }
    }
    /// With randomized scheduling, a buffer that can reach the top of the random range: the player
    /// asks for a segment once one fits (buffer <= max - segment), so a maximum of target_buffer +
    /// 2 segments lets every draw in [target - segment, target + segment) govern the request. The
    /// player's default (30 s, the target itself) left every delay at 0, so the scheduling (and the
    /// seed) changed nothing.
    fn preferred_buffer_max(&self) -> Option<Ns> {
        self.random.then(|| self.target_buffer.saturating_add(self.segment.saturating_mul(2)))
    }
    fn preferred_buffer_max_param(&self) -> &'static str {
        "target_buffer"
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::SEC;

    #[test]
    fn gradual_up_and_scores() {
        let v = cbr(&[300, 750, 1200, 1850, 2850, 4300], 4, 50);
        let mut a = build(&Params::new().with("random_scheduling", false), &v).unwrap();
        // samples 2 and 6 Mbit/s: hm = 2/(1/2 + 1/6) = 3 Mbit/s; w = 0.85*3 = 2.55 -> target rung 3.
        let h = [rec(0, 0, 1_000_000, 0, 0, 4000), rec(1, 0, 3_000_000, 5 * SEC, 0, 4000)];
        for r in &h {
            a.on_download(&obs(&v, 0, 0, None, &[]), r);
        }
        // at rung 1: 1st up-signal, 1 > k = 1? no -> b_ref = cur -> stay 1
        let d = a.choose(&obs(&v, 2, 10 * SEC, Some(1), &h));
        assert_eq!(d.rung, 1, "{}", d.reason);
        // 2nd consecutive signal: 2 > 1 -> b_ref = 2. No past switches (n = 0):
        // score(2) = 2^1 + 12*|1200/min(2550, 1200) - 1| = 2; score(1) = 2^0 + 12*|750/1200 - 1| =
        // 1 + 4.5 = 5.5 -> switch to 2.
        let d = a.choose(&obs(&v, 3, 10 * SEC, Some(1), &h));
        assert_eq!(d.rung, 2, "{}", d.reason);
        // at rung 2 the counter restarted: needs 3 signals: two stays, then up to 3. Past switches
        // in the last 5 = 1: score(3) = 2^2 + 12*|1850/1850 - 1| = 4; score(2) = 2 + 12*|1200/1850 - 1| = 6.22
        assert_eq!(a.choose(&obs(&v, 4, 10 * SEC, Some(2), &h)).rung, 2);
        assert_eq!(a.choose(&obs(&v, 5, 10 * SEC, Some(2), &h)).rung, 2);
        assert_eq!(a.choose(&obs(&v, 6, 10 * SEC, Some(2), &h)).rung, 3);
        // from rung 5 (4.3 Mbit/s): target 3 < 5 -> b_ref = 4 (2850): switches in the window = 2:
        // score(4) = 2^3 + 12*|2850/min(2550, 2850) - 1| = 8 + 12*0.1176 = 9.41;
        // score(5) = 4 + 12*|4300/2550 - 1| = 4 + 8.235 = 12.24 -> down to 4.
        assert_eq!(a.choose(&obs(&v, 7, 10 * SEC, Some(5), &h)).rung, 4);
    }

    #[test]
    fn randomized_delay_is_seeded_and_bounded() {
        let v = cbr(&[300, 750], 4, 50);
        let run = |seed: u64| {
            let mut a = build(&Params::new().with("seed", seed), &v).unwrap();
            (0..5).map(|_| a.choose(&obs(&v, 1, 40 * SEC, None, &[])).delay).collect::<Vec<_>>()
        };
        let x = run(7);
        assert_eq!(x, run(7));
        assert_ne!(x, run(8));
        // randbuf in [26, 34) s -> delay in (6, 14] s at a 40 s buffer
        assert!(x.iter().all(|d| *d > 6 * SEC && *d <= 14 * SEC), "{x:?}");
        // below 26 s never waits
        let mut a = build(&Params::new(), &v).unwrap();
        assert_eq!(a.choose(&obs(&v, 1, 25 * SEC, None, &[])).delay, 0);
    }
}
