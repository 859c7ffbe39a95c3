//! `bola`: BOLA (Spiteri, Urgaonkar, Sitaraman, INFOCOM'16), as in Sabre.
//!
//! Utilities u_q = ln(b_q / b_0). With buffer capacity Q_max (Sabre `-b`, 25 s), segment duration
//! p and gamma*p = gp (5): V_p = (Q_max - p) / (u_max + gp). Each decision picks the rung
//! maximising (V_p (u_q + gp) - Q) / b_q, Q the buffer in seconds (nominal bitrate stands for the
//! segment size, as Sabre and dash.js do). If even the best score is negative the request waits
//! until it is zero: delay = Q - V_p (u_q + gp).
//!
//! Variants (`variant`):
//! * `basic`: the above.
//! * `u` (BOLA-U): near the start and the end of the video the capacity is shrunk to
//!   max(min(i, N - i) / 2, 3) segments (Sabre's non-basic mode); an up-switch is capped at one
//!   rung above the rung sustainable by the throughput estimate (Sabre's latency-aware
//!   `quality_from_throughput` on the EWMA 3 s/8 s estimate), and never below the previous rung.
//! * `o` (BOLA-O): as `u` but the cap is the sustainable rung itself, and the request waits until
//!   the buffer has drained to the level where BOLA would choose that rung.
//!
//!
//! Abandonment (`u` and `o`, as Sabre's non-basic BOLA): while a segment at rung q downloads, with
//! R bits still to come and buffer Q, continuing scores (V_p (u_q + gp) - Q) / R; a lower rung q'
//! scores (V_p (u_q' + gp) - Q) / S_q' with S_q' its full size. If the best lower rung scores higher
//! the download is abandoned for it (at most once per segment).

use super::estimators::{s, CountEwma, Estimator, Ewma, Sample};
use super::throughput::RateRule;
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord, Progress};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{from_secs_f64, Ns};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "variant",
        unit: Unit::Choice(&["basic", "u", "o"]),
        default: Default::Str("basic"),
        doc: "BOLA-BASIC, BOLA-U (up-switch capped at sustainable+1), BOLA-O (capped at sustainable, with a delay)",
    },
    ParamSpec {
        name: "gp",
        unit: Unit::Float,
        default: Default::Float(5.0),
        doc: "gamma*p, the rebuffering-avoidance weight (Sabre -gp 5)",
    },
    ParamSpec {
        name: "buffer_size",
        unit: Unit::Duration,
        default: Default::Int(25_000_000_000),
        doc: "buffer capacity Q_max used to set V_p (Sabre -b 25 s); offered to the player via preferred_buffer_max",
    },
    ParamSpec {
        name: "abandon",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "abandonment by the score of the remaining bits (u and o only; Sabre: on unless -noa)",
    },
    ParamSpec {
        name: "sabre_details",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "follow Sabre's Bola code: o waits only down to the capped rung's maximum level V_p (u_q + gp), no wait when every score is negative, the cap compares with the last decision (abandonments included), abandonment with nominal-bitrate sizes and possibly more than once per segment",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "bola",
    summary: "BOLA (Lyapunov buffer-based utility maximisation): BASIC, U or O variant",
    reference: "Spiteri et al. INFOCOM'16 and TON'20; Sabre (MMSys'18)",
    params: PARAMS,
    build,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Basic,
    U,
    O,
}

fn build(p: &Params, v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let variant = match p.choice(PARAMS, "variant")? {
        "basic" => Variant::Basic,
        "u" => Variant::U,
        _ => Variant::O,
    };
    let gp = p.f64(PARAMS, "gp")?;
    if gp.is_nan() || gp <= 0.0 {
        return Err(crate::params::perr("gp", "expected > 0"));
    }
    let buffer_size = p.req_u64(PARAMS, "buffer_size")?;
    if buffer_size <= v.segment_duration {
        return Err(crate::params::perr("buffer_size", "expected more than one segment duration"));
    }
    let mut b = Bola::new(variant, gp, buffer_size);
    b.abandon = p.bool(PARAMS, "abandon")?;
    b.sabre = p.bool(PARAMS, "sabre_details")?;
    Ok(Box::new(b))
}

pub struct Bola {
    variant: Variant,
    gp: f64,
    buffer_size: Ns,
    rate: RateRule,
    abandoned_for: Option<usize>,
    abandon: bool,
    sabre: bool,
    /// Our last decision (or abandonment target): Sabre's `last_quality`.
    last: usize,
}

impl Bola {
    pub fn new(variant: Variant, gp: f64, buffer_size: Ns) -> Bola {
        let rate = RateRule {
            est: Estimator::Ewma(Ewma::new(3.0, 8.0)),
            safety: 1.0,
            sample: Sample::FirstByte,
            latency_aware: true,
            lat: CountEwma::new(1.0, 2.0),
        };
        Bola { variant, gp, buffer_size, rate, abandoned_for: None, abandon: true, sabre: false, last: 0 }
    }
}

/// ln(b_q / b_0) for every rung.
pub fn log_utilities(bitrates: &[u64]) -> Vec<f64> {
    bitrates.iter().map(|b| (*b as f64 / bitrates[0] as f64).ln()).collect()
}

/// argmax_q (vp (u_q + gp) - q_buf) / b_q; ties go to the lower rung.
pub fn bola_argmax(u: &[f64], bitrates: &[u64], vp: f64, gp: f64, q_buf: f64) -> usize {
    let mut best = 0;
    let mut best_score = f64::NEG_INFINITY;
    for (q, b) in bitrates.iter().enumerate() {
        let score = (vp * (u[q] + gp) - q_buf) / (*b as f64 / 1e6);
        if score > best_score {
            best = q;
            best_score = score;
        }
    }
    best
}

/// Buffer level above which rung `b` is preferred to rung `a` (a < b): the two scores are equal.
pub fn switch_level(u: &[f64], bitrates: &[u64], vp: f64, gp: f64, a: usize, b: usize) -> f64 {
    let (ba, bb) = (bitrates[a] as f64, bitrates[b] as f64);
    vp * ((u[a] + gp) * bb - (u[b] + gp) * ba) / (bb - ba)
}

impl Bola {
    /// V_p for segment `seg` (the capacity shrinks near the start and the end unless BASIC).
    fn vp(&self, v: &Video, seg: usize, umax: f64) -> f64 {
        let p = s(v.segment_duration);
        let mut cap = s(self.buffer_size);
        if self.variant != Variant::Basic {
            let n = v.n_segments();
            let i = seg.min(n);
            let t = ((i.min(n - i)) as f64 / 2.0).max(3.0) * p;
            cap = cap.min(t);
        }
        (cap - p).max(1e-9) / (umax + self.gp)
    }
}

impl Abr for Bola {
    fn name(&self) -> &'static str {
        "bola"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let v = obs.video;
        let br = &v.bitrates_bps;
        let u = log_utilities(br);
        let umax = u[u.len() - 1];
        let vp = self.vp(v, obs.segment, umax);
        let b = s(obs.buffer);
        let mut q = bola_argmax(&u, br, vp, self.gp, b);
        let mut reason = format!("BOLA Q {b:.2}s Vp {vp:.3} -> {q}");
        let mut delay = 0.0f64;
        if self.variant != Variant::Basic {
            let last = if self.sabre { Some(self.last) } else { obs.last_rung };
            if let (Some(last), Some(_)) = (last, self.rate.estimate()) {
                if q > last {
                    let qt = self.rate.choose(obs).0;
                    let capped = if q <= qt {
                        q
                    } else if last > qt {
                        last
                    } else if self.variant == Variant::U {
                        (qt + 1).min(q)
                    } else {
                        qt
                    };
                    if capped != q {
                        reason.push_str(&format!("; up-switch capped by tput rung {qt} -> {capped}"));
                    }
                    if self.variant == Variant::O && capped == qt && capped < q {
                        let lvl = if self.sabre {
                            vp * (u[capped] + self.gp)
                        } else {
                            switch_level(&u, br, vp, self.gp, capped, capped + 1)
                        };
                        delay = delay.max(b - lvl);
                    }
                    q = capped;
                }
            }
        }
        // no positive score: wait until the chosen rung's score reaches 0 (not in Sabre)
        if !self.sabre {
            delay = delay.max(b - vp * (u[q] + self.gp));
        }
        self.last = q;
        if delay > 0.0 {
            reason.push_str(&format!("; wait {delay:.3}s"));
        }
        Decision { rung: q, delay: from_secs_f64(delay), reason }
    }
    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        self.rate.on_download(rec);
    }
    fn on_progress(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        if !self.abandon
            || self.variant == Variant::Basic
            || p.rung == 0
            || (!self.sabre && self.abandoned_for == Some(p.segment))
        {
            return None;
        }
        if p.t_first_byte.is_none() || p.bytes_received >= p.bytes_total {
            return None;
        }
        let v = obs.video;
        let br = &v.bitrates_bps;
        let u = log_utilities(br);
        let vp = self.vp(v, p.segment, u[u.len() - 1]);
        let q_buf = s(obs.buffer);
        let remaining = (p.bytes_total - p.bytes_received) as f64 * 8.0 / 1e6;
        let keep = (vp * (u[p.rung] + self.gp) - q_buf) / remaining;
        let mut best: Option<(usize, f64)> = None;
        if self.sabre && keep < 0.0 {
            return None;
        }
        for (q, uq) in u.iter().enumerate().take(p.rung) {
            // Sabre: the lower rung's size scaled by nominal bitrates, and only if smaller than
            // the bits still to come
            let size = if self.sabre {
                p.bytes_total as f64 * 8.0 / 1e6 * br[q] as f64 / br[p.rung] as f64
            } else {
                v.size(p.segment, q) as f64 * 8.0 / 1e6
            };
            if self.sabre && size >= remaining {
                continue;
            }
            let score = (vp * (uq + self.gp) - q_buf) / size;
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((q, score));
            }
        }
        let (q, score) = best?;
        if score > keep {
            self.abandoned_for = Some(p.segment);
            self.last = q;
            Some(q)
        } else {
            None
        }
    }
    fn preferred_buffer_max(&self) -> Option<Ns> {
        Some(self.buffer_size)
    }
    fn preferred_buffer_max_param(&self) -> &'static str {
        "buffer_size"
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::{MS, SEC};

    #[test]
    fn bola_basic_three_rungs() {
        // 1, 2, 4 Mbit/s, 4 s segments, Q_max 25 s, gp 5: u = (0, ln 2, ln 4) = (0, 0.6931, 1.3863)
        // Vp = (25 - 4)/(1.3863 + 5) = 3.28829. V(u+gp) = 16.4415, 18.7207, 21.0.
        let v = cbr(&[1000, 2000, 4000], 4, 100);
        let mut a = build(&Params::new(), &v).unwrap();
        let mut d = |ms: u64| a.choose(&obs(&v, 50, ms * MS, Some(0), &[]));
        // B = 10: scores (16.44-10)/1 = 6.44, (18.72-10)/2 = 4.36, (21-10)/4 = 2.75 -> rung 0
        assert_eq!(d(10_000).rung, 0);
        // B = 15: 1.44, 3.72/2 = 1.86, 6/4 = 1.5 -> rung 1
        assert_eq!(d(15_000).rung, 1);
        // B = 18: -1.56, 0.72/2 = 0.36, 3/4 = 0.75 -> rung 2
        let x = d(18_000);
        assert_eq!((x.rung, x.delay), (2, 0));
        // switch levels: 0|1 at Vp*(5*2 - 5.6931*1)/1 = 14.162 s, 1|2 at Vp*(5.6931*4 - 6.3863*2)/2 = 16.441 s
        assert_eq!(d(14_100).rung, 0);
        assert_eq!(d(14_200).rung, 1);
        assert_eq!(d(16_400).rung, 1);
        assert_eq!(d(16_500).rung, 2);
        // B = 22 s: every score negative; best rung 2 ((21-22)/4 = -0.25); wait 22 - 21 = 1 s
        let x = d(22_000);
        assert_eq!(x.rung, 2);
        assert!((x.delay as i64 - SEC as i64).abs() < 1_000, "{}", x.delay);
    }

    #[test]
    fn bola_u_and_o_cap_upswitches() {
        let v = cbr(&[1000, 2000, 4000], 4, 100);
        // one sample: 750_000 B in 4 s after a 0 ms ttfb -> 1.5 Mbit/s (EWMA first sample exact).
        // Sustainable (latency 0): 1 Mbit/s rung 0 (2 Mbit/s needs 8 s > 4 s).
        let r = rec(0, 0, 750_000, 0, 0, 4000);
        for (variant, rung, delay_s) in [("u", 1, 0.0), ("o", 0, 18.0 - 14.162189228)] {
            let mut a = build(&Params::new().with("variant", variant), &v).unwrap();
            a.on_download(&obs(&v, 0, 0, None, &[]), &r);
            // segment 50 of 100: capacity min(25 s, max(50/2, 3)*4 s) = 25 s (unchanged).
            // BOLA at B = 18 s picks 2 (see basic test). U: cap at sustainable+1 = 1.
            // O: cap at 0 and wait until B = 14.162 s (0|1 switch level): delay 3.838 s
            // (larger than the no-positive-score wait 18 - 16.4415 = 1.5585 s).
            let x = a.choose(&obs(&v, 50, 18 * SEC, Some(0), &[r]));
            assert_eq!(x.rung, rung, "{variant}: {}", x.reason);
            assert!((x.delay as f64 / 1e9 - delay_s).abs() < 1e-6, "{variant}: {}", x.delay);
            // down or equal picks are not capped: B = 10 -> 0
            assert_eq!(a.choose(&obs(&v, 50, 10 * SEC, Some(2), &[r])).rung, 0);
        }
        // Sabre's code (`sabre_details`): BOLA-O waits only down to the capped rung's maximum
        // level V_p (u_0 + gp) = 16.4415 s: delay 1.5585 s
        let mut a = build(&Params::new().with("variant", "o").with("sabre_details", true), &v).unwrap();
        a.on_download(&obs(&v, 0, 0, None, &[]), &r);
        let x = a.choose(&obs(&v, 50, 18 * SEC, Some(0), &[r]));
        assert_eq!(x.rung, 0);
        assert!((x.delay as f64 / 1e9 - (18.0 - 16.4414634)).abs() < 1e-4, "{}", x.delay);
        // and never waits on negative scores (B = 22 s: the basic test waits 1 s)
        let mut a = build(&Params::new().with("sabre_details", true), &v).unwrap();
        let x = a.choose(&obs(&v, 50, 22 * SEC, Some(2), &[]));
        assert_eq!((x.rung, x.delay), (2, 0));
        // near the start the capacity shrinks: segment 2 -> max(2/2, 3) = 3 segments = 12 s;
        // Vp = (12-4)/6.3863 = 1.25268; V(u+gp) = 6.2634, 7.1317, 8.0. B = 6 s: scores 0.263,
        // 1.132/2 = 0.566, 2/4 = 0.5 -> rung 1 (BASIC with 25 s would pick 0).
        let mut u = build(&Params::new().with("variant", "u"), &v).unwrap();
        assert_eq!(u.choose(&obs(&v, 2, 6 * SEC, None, &[])).rung, 1);
        let mut b = build(&Params::new(), &v).unwrap();
        assert_eq!(b.choose(&obs(&v, 2, 6 * SEC, None, &[])).rung, 0);
    }

    #[test]
    fn bola_u_abandons_on_the_score_of_the_remaining_bits() {
        // Vp = 3.28829 (segment 50 of 100). Rung-2 segment of 2 MB (16 Mbit), Q = 10 s.
        // Lower rungs, full size: rung 0 (16.4415 - 10)/4 Mbit = 1.6104, rung 1 (18.7207 - 10)/8 = 1.0901.
        // Continue: (21 - 10)/R -> abandon to 0 when 11/R < 1.6104, i.e. R > 6.8306 Mbit.
        let v = cbr(&[1000, 2000, 4000], 4, 100);
        let o = obs(&v, 50, 10 * SEC, Some(2), &[]);
        let pr = |got: u64| Progress {
            now: 2 * SEC,
            segment: 50,
            rung: 2,
            bytes_total: 2_000_000,
            bytes_received: got,
            t_request: 0,
            t_first_byte: Some(100 * MS),
        };
        let mut a = build(&Params::new().with("variant", "u"), &v).unwrap();
        // 800_000 B left = 6.4 Mbit: 11/6.4 = 1.71875 > 1.6104 -> keep
        assert_eq!(a.on_progress(&o, &pr(1_200_000)), None);
        // 1_000_000 B left = 8 Mbit: 11/8 = 1.375 < 1.6104 -> abandon to rung 0, once
        assert_eq!(a.on_progress(&o, &pr(1_000_000)), Some(0));
        assert_eq!(a.on_progress(&o, &pr(1_000_000)), None);
        // BASIC never abandons, nor u with abandon = false (Sabre -noa)
        let mut b = build(&Params::new(), &v).unwrap();
        assert_eq!(b.on_progress(&o, &pr(10)), None);
        let mut c = build(&Params::new().with("variant", "u").with("abandon", false), &v).unwrap();
        assert_eq!(c.on_progress(&o, &pr(1_000_000)), None);
        // Sabre's code: rung 0's size is 16 Mbit x 1/4 = 4 Mbit < 8 Mbit left, score 1.61 > 1.375
        // (rung 1, 8 Mbit, is not smaller than what is left); and it may fire again
        let mut d = build(&Params::new().with("variant", "u").with("sabre_details", true), &v).unwrap();
        assert_eq!(d.on_progress(&o, &pr(1_000_000)), Some(0));
        assert_eq!(d.on_progress(&o, &pr(1_000_000)), Some(0));
    }
}
