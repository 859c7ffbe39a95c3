//! `mpc` (fastMPC's objective solved exactly) and `robustmpc` (Yin et al., SIGCOMM'15), with
//! Pensieve's settings.
//!
//! Predictor: harmonic mean of the last 5 throughput samples (Pensieve: size / download time,
//! request to last byte); RobustMPC divides it by 1 + the maximum absolute relative error of the
//! last 5 predictions. Every rung sequence over the next `horizon` (5) segments is enumerated
//! (exhaustive search, actual segment sizes): download time = size * 8 / prediction, rebuffer =
//! max(download - buffer, 0), buffer = max(buffer - download, 0) + segment duration, and
//! QoE_lin = sum bitrate_Mbps - 4.3 * rebuffer_s - 1 * |bitrate change Mbps| (the first change is
//! against the previous rung). The first rung of the best sequence is chosen (ties: the sequence
//! met first in lexicographic order, i.e. lower rungs). Before any sample: rung 0. Branches that
//! cannot beat the best sequence found so far are pruned (exact: penalties are non-negative).
//!
//! VOXEL's MPC (the public client's `mpc`, claims/voxel.md §5): `robustmpc` with
//! `rebuf_penalty = 3` (its 3 per ms of rebuffering against kbit/s), `sizes = "nominal"` (bitrate
//! x segment duration) and `buffer_cap = true` (before each step of the search the buffer is
//! capped at buffer_max - one segment, as its buffer model pauses there).

use super::estimators::{count_param, float_in, mbps, s, HarmonicMean, Robust, Sample, SAMPLE_CHOICES};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "horizon",
        unit: Unit::Int,
        default: Default::Int(5),
        doc: "look-ahead in segments (Pensieve MPC_FUTURE_CHUNK_COUNT 5); n_rungs^horizon sequences",
    },
    ParamSpec {
        name: "rebuf_penalty",
        unit: Unit::Float,
        default: Default::Float(4.3),
        doc: "QoE_lin weight of a second of rebuffering, in Mbit/s (Pensieve REBUF_PENALTY 4.3)",
    },
    ParamSpec {
        name: "smooth_penalty",
        unit: Unit::Float,
        default: Default::Float(1.0),
        doc: "QoE_lin weight of |bitrate change| in Mbit/s (Pensieve SMOOTH_PENALTY 1)",
    },
    ParamSpec {
        name: "window",
        unit: Unit::Int,
        default: Default::Int(5),
        doc: "samples of the harmonic-mean predictor and predictions of the robust error (Pensieve 5)",
    },
    ParamSpec {
        name: "sample",
        unit: Unit::Choice(SAMPLE_CHOICES),
        default: Default::Str("request"),
        doc: "throughput sample (Pensieve: chunk size / delay from request to last byte)",
    },
    ParamSpec {
        name: "sizes",
        unit: Unit::Choice(&["actual", "nominal"]),
        default: Default::Str("actual"),
        doc: "segment sizes in the search: the video's actual sizes (Pensieve) or bitrate x segment duration (the VOXEL client's MpcAbr)",
    },
    ParamSpec {
        name: "buffer_cap",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "cap the search's buffer at buffer_max - one segment before each step (the VOXEL client's MpcAbr); false = uncapped (Pensieve)",
    },
];

pub const MPC: AbrEntry = AbrEntry {
    name: "mpc",
    summary: "MPC: exhaustive 5-segment look-ahead maximising QoE_lin with a harmonic-mean throughput prediction",
    reference: "Yin et al. SIGCOMM'15; Pensieve (Mao et al. SIGCOMM'17) baselines",
    params: PARAMS,
    build: |p, v| build(p, v, false),
};

pub const ROBUSTMPC: AbrEntry = AbrEntry {
    name: "robustmpc",
    summary: "RobustMPC: MPC with the prediction divided by 1 + max relative error of the last 5 predictions",
    reference: "Yin et al. SIGCOMM'15; Pensieve (Mao et al. SIGCOMM'17) baselines",
    params: PARAMS,
    build: |p, v| build(p, v, true),
};

/// Most rung sequences one decision may enumerate (n_rungs^horizon): 8 rungs at horizon 8 are
/// 1.7 x 10^7; a 2,000-rung video at horizon 5 never finished one decision (deaf to signals).
pub const MAX_SEQUENCES: u64 = 20_000_000;

fn build(p: &Params, v: &Video, robust: bool) -> Result<Box<dyn Abr>, ParamError> {
    let horizon = count_param(p, PARAMS, "horizon")?;
    if horizon > 8 {
        return Err(crate::params::perr("horizon", "expected <= 8 (the search is n_rungs^horizon)"));
    }
    let rungs = v.n_rungs() as u64;
    if rungs.saturating_pow(horizon as u32) > MAX_SEQUENCES {
        let most = (1..=horizon).rev().find(|h| rungs.saturating_pow(*h as u32) <= MAX_SEQUENCES).unwrap_or(1);
        return Err(crate::params::perr(
            "horizon",
            format!(
                "at most {MAX_SEQUENCES} rung sequences per decision (n_rungs^horizon); the video has {rungs} \
                 rungs: horizon {most} at most"
            ),
        ));
    }
    let n = count_param(p, PARAMS, "window")?;
    Ok(Box::new(Mpc {
        robust,
        horizon,
        rebuf: float_in(p, PARAMS, "rebuf_penalty", 0.0, 1e6)?,
        smooth: float_in(p, PARAMS, "smooth_penalty", 0.0, 1e6)?,
        sample: Sample::from_name(p.choice(PARAMS, "sample")?),
        nominal: p.choice(PARAMS, "sizes")? == "nominal",
        buffer_cap: p.bool(PARAMS, "buffer_cap")?,
        hm: HarmonicMean::new(n),
        rob: Robust::new(n, n),
    }))
}

pub struct Mpc {
    robust: bool,
    horizon: usize,
    rebuf: f64,
    smooth: f64,
    sample: Sample,
    nominal: bool,
    buffer_cap: bool,
    hm: HarmonicMean,
    rob: Robust,
}

/// Options of the search beyond Pensieve's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SearchOpts {
    /// Sizes = bitrate x segment duration instead of the video's sizes.
    pub nominal: bool,
    /// Cap the buffer at this (s) before each step.
    pub cap_s: Option<f64>,
}

/// Search state shared by the recursion.
struct Search<'a> {
    v: &'a Video,
    start: usize,
    depth: usize,
    pred_bps: f64,
    rebuf: f64,
    smooth: f64,
    seq: Vec<usize>,
    best: f64,
    best_first: usize,
    opts: SearchOpts,
}

impl Search<'_> {
    fn go(&mut self, k: usize, buffer: f64, prev: usize, qoe: f64) {
        // bound: the remaining segments add at most the top bitrate each (penalties are >= 0), so a
        // branch that cannot beat the best so far is skipped (same result as the full enumeration,
        // ties included: a later equal sequence never replaces the first).
        let top = *self.v.bitrates_bps.last().unwrap() as f64 / 1e6;
        if qoe + top * (self.depth - k) as f64 <= self.best {
            return;
        }
        if k == self.depth {
            if qoe > self.best {
                self.best = qoe;
                self.best_first = self.seq[0];
            }
            return;
        }
        let seg = self.start + k;
        let buffer = self.opts.cap_s.map_or(buffer, |c| buffer.min(c));
        for q in 0..self.v.n_rungs() {
            let bits = if self.opts.nominal {
                self.v.bitrates_bps[q] as f64 * s(self.v.seg_duration(seg))
            } else {
                self.v.size(seg, q) as f64 * 8.0
            };
            let dl = bits / self.pred_bps;
            let rb = (dl - buffer).max(0.0);
            let nb = (buffer - dl).max(0.0) + s(self.v.seg_duration(seg));
            let br = self.v.bitrates_bps[q] as f64 / 1e6;
            let pb = self.v.bitrates_bps[prev] as f64 / 1e6;
            let r = br - self.rebuf * rb - self.smooth * (br - pb).abs();
            self.seq.push(q);
            self.go(k + 1, nb, q, qoe + r);
            self.seq.pop();
        }
    }
}

/// Best first rung and its QoE for `depth` segments from `start` (exposed for tests).
#[allow(clippy::too_many_arguments)]
pub fn mpc_search(
    v: &Video,
    start: usize,
    depth: usize,
    buffer_s: f64,
    prev: usize,
    pred_bps: f64,
    rebuf: f64,
    smooth: f64,
) -> (usize, f64) {
    mpc_search_with(v, start, depth, buffer_s, prev, pred_bps, rebuf, smooth, SearchOpts::default())
}

/// [`mpc_search`] with [`SearchOpts`].
#[allow(clippy::too_many_arguments)]
pub fn mpc_search_with(
    v: &Video,
    start: usize,
    depth: usize,
    buffer_s: f64,
    prev: usize,
    pred_bps: f64,
    rebuf: f64,
    smooth: f64,
    opts: SearchOpts,
) -> (usize, f64) {
    let mut st =
        Search { v, start, depth, pred_bps, rebuf, smooth, seq: vec![], best: f64::NEG_INFINITY, best_first: 0, opts };
    st.go(0, buffer_s, prev, 0.0);
    (st.best_first, st.best)
}

impl Abr for Mpc {
    fn name(&self) -> &'static str {
        if self.robust {
            "robustmpc"
        } else {
            "mpc"
        }
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let pred = if self.robust { self.rob.estimate() } else { self.hm.estimate() };
        let Some(pred) = pred else {
            return Decision { rung: 0, delay: 0, reason: "no throughput sample yet -> rung 0".into() };
        };
        let v = obs.video;
        let start = obs.segment.min(v.n_segments() - 1);
        let depth = self.horizon.min(v.n_segments() - start);
        let prev = obs.last_rung.unwrap_or(0).min(v.n_rungs() - 1);
        let seg = s(v.seg_duration(start));
        let opts =
            SearchOpts { nominal: self.nominal, cap_s: self.buffer_cap.then(|| (s(obs.buffer_max) - seg).max(0.0)) };
        let (q, best) = mpc_search_with(v, start, depth, s(obs.buffer), prev, pred, self.rebuf, self.smooth, opts);
        let extra = if self.robust { format!(" (hm / (1 + {:.3}))", self.rob.max_error()) } else { String::new() };
        Decision {
            rung: q,
            delay: 0,
            reason: format!("pred {}{extra}, horizon {depth}: best QoE {best:.3} -> {q}", mbps(pred)),
        }
    }
    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        if rec.abandoned {
            return;
        }
        let x = self.sample.of(rec).0;
        self.hm.push(x);
        self.rob.push(x);
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::SEC;

    #[test]
    fn search_size_is_bounded_by_the_ladder() {
        // 30 rungs: 30^5 = 24.3 M sequences per decision > 2 x 10^7 (a 2,000-rung video never
        // finished one decision); horizon 4 (810,000) is fine, and 8 rungs at horizon 8 (16.8 M) too
        let kbps: Vec<u64> = (1..=30).map(|k| 100 * k).collect();
        let v = cbr(&kbps, 4, 10);
        for name in ["mpc", "robustmpc"] {
            let build = super::super::find(name).unwrap().build;
            let e = build(&Params::new().with("horizon", 5), &v).err().expect("refused");
            assert_eq!(e.param, "horizon");
            assert!(e.msg.contains("the video has 30 rungs: horizon 4 at most"), "{}", e.msg);
            assert!(build(&Params::new().with("horizon", 4), &v).is_ok());
            let v8 = cbr(&kbps[..8], 4, 10);
            assert!(build(&Params::new().with("horizon", 8), &v8).is_ok());
        }
    }

    #[test]
    fn two_rungs_horizon_two_by_hand() {
        // 1 and 3 Mbit/s, 4 s segments (500 kB / 1.5 MB), prediction 2 Mbit/s: downloads take
        // 2 s (rung 0) and 6 s (rung 1). Previous rung 0.
        let v = cbr(&[1000, 3000], 4, 10);
        // B = 2 s:
        //  (0,0): dl 2 <= 2 -> B 4; dl 2 -> B 6. QoE 1 + 1 = 2
        //  (0,1): 1; then dl 6 > 4 -> rebuf 2: 3 - 8.6 - 2 = -7.6 -> -6.6
        //  (1,0): dl 6 > 2 -> rebuf 4: 3 - 17.2 - 2 = -16.2, B 4; 1 - 2 = -1 -> -17.2
        //  (1,1): -16.2; dl 6 > 4 -> rebuf 2: 3 - 8.6 = -5.6 -> -21.8      => (0,0), rung 0, QoE 2
        let (q, best) = mpc_search(&v, 0, 2, 2.0, 0, 2e6, 4.3, 1.0);
        assert_eq!(q, 0);
        assert!((best - 2.0).abs() < 1e-9);
        // B = 10 s:
        //  (0,0): 2;  (0,1): 1 + (3 - 2) = 2  (B 12 then dl 6 <= 12)
        //  (1,0): 3 - 2 = 1, B 10 - 6 + 4 = 8; 1 - 2 = -1 -> 0
        //  (1,1): 1, B 8; dl 6 <= 8: 3 -> 4                               => (1,1), rung 1, QoE 4
        let (q, best) = mpc_search(&v, 0, 2, 10.0, 0, 2e6, 4.3, 1.0);
        assert_eq!(q, 1);
        assert!((best - 4.0).abs() < 1e-9);

        // Through the ABR: samples 4 then 2 Mbit/s (request to last byte: 2 MB in 4 s, 1 MB in 4 s).
        // MPC: hm(4, 2) = 2/(1/4 + 1/2) = 2.667 Mbit/s -> rung 1 takes 4.5 s, rung 0 1.5 s.
        //   B = 10: (1,1): 1 + 3 = 4 (B 9.5, no rebuffer) is the best -> rung 1.
        // RobustMPC: the prediction for the second sample was 4, error |4-2|/2 = 1 ->
        //   2.667/2 = 1.333 Mbit/s: rung 1 takes 9 s, rung 0 3 s. B = 10:
        //   (0,0): 2; (0,1): 1 + (3 - 2) = 2 (B 11 >= 9); (1,0): 1 + (1 - 2) = 0 (B 5);
        //   (1,1): 1, B 5, dl 9 -> rebuf 4: 3 - 17.2 -> -13.2 => rung 0.
        let h = [rec(0, 0, 2_000_000, 0, 0, 4000), rec(1, 0, 1_000_000, 5 * SEC, 0, 4000)];
        for (name, want) in [("mpc", 1), ("robustmpc", 0)] {
            let mut a = (super::super::find(name).unwrap().build)(&Params::new().with("horizon", 2), &v).unwrap();
            for r in &h {
                a.on_download(&obs(&v, 0, 0, None, &[]), r);
            }
            let d = a.choose(&obs(&v, 2, 10 * SEC, Some(0), &h));
            assert_eq!(d.rung, want, "{name}: {}", d.reason);
        }
    }

    #[test]
    fn horizon_clipped_at_the_end() {
        // last segment: horizon 1 only. B = 10, pred 2: rung 1 alone: 3 - 2 = 1; rung 0: 1 -> tie,
        // lower first -> 0. With prev = 1: rung 1: 3; rung 0: 1 - 2 = -1 -> 1.
        let v = cbr(&[1000, 3000], 4, 3);
        assert_eq!(mpc_search(&v, 2, 1, 10.0, 0, 2e6, 4.3, 1.0).0, 0);
        assert_eq!(mpc_search(&v, 2, 1, 10.0, 1, 2e6, 4.3, 1.0).0, 1);
        let mut a = build(&Params::new(), &v, false).unwrap();
        let r = rec(0, 0, 1_000_000, 0, 0, 4000);
        a.on_download(&obs(&v, 0, 0, None, &[]), &r);
        assert_eq!(a.choose(&obs(&v, 2, 10 * SEC, Some(1), &[r])).rung, 1);
    }

    #[test]
    fn voxel_options_nominal_sizes_and_buffer_cap() {
        // 1 and 3 Mbit/s, 4-s segments, horizon 1, prev 0, prediction 2 Mbit/s, rebuffer penalty 3
        // (VOXEL), smooth penalty 0. Segment 0's rung 1 is 2,000,000 B (16 Mbit: 8 s), its nominal
        // size 12 Mbit (6 s); rung 0 takes 2 s (QoE 1). B = 7 s:
        // actual: rung 1 rebuffers 1 s: 3 - 3 = 0 < 1 -> rung 0 (QoE 1);
        // nominal: 6 s <= 7 s: 3 -> rung 1;
        // nominal, buffer capped at 4 s: rung 1 rebuffers 2 s: 3 - 6 = -3 -> rung 0.
        let mut v = cbr(&[1000, 3000], 4, 3);
        v.sizes[0][1] = 2_000_000;
        let nominal = SearchOpts { nominal: true, cap_s: None };
        assert_eq!(mpc_search_with(&v, 0, 1, 7.0, 0, 2e6, 3.0, 0.0, SearchOpts::default()), (0, 1.0));
        let (q, best) = mpc_search_with(&v, 0, 1, 7.0, 0, 2e6, 3.0, 0.0, nominal);
        assert_eq!(q, 1);
        assert!((best - 3.0).abs() < 1e-9);
        // the cap: buffer_max 8 s - one segment = 4 s
        let capped = SearchOpts { nominal: true, cap_s: Some(4.0) };
        assert_eq!(mpc_search_with(&v, 0, 1, 7.0, 0, 2e6, 3.0, 0.0, capped), (0, 1.0));
        // through the ABR: buffer_max 8 s, same as the capped search (smooth 0)
        let p = Params::new()
            .with("horizon", 1)
            .with("rebuf_penalty", 3.0)
            .with("smooth_penalty", 0.0)
            .with("sizes", "nominal")
            .with("buffer_cap", true);
        let mut a = build(&p, &v, false).unwrap();
        let r = rec(0, 0, 1_000_000, 0, 0, 4000); // 2 Mbit/s
        a.on_download(&obs(&v, 0, 0, None, &[]), &r);
        let h = [r];
        let mut o = obs(&v, 0, 7 * SEC, Some(0), &h);
        o.buffer_max = 8 * SEC;
        assert_eq!(a.choose(&o).rung, 0);
        o.buffer_max = 60 * SEC; // cap 56 s: no effect -> nominal rung 1
        assert_eq!(a.choose(&o).rung, 1);
    }

    /// Plain enumeration without pruning, to check that the bound never changes the answer.
    fn brute(v: &Video, start: usize, depth: usize, b0: f64, prev0: usize, pred: f64) -> (usize, f64) {
        let n = v.n_rungs();
        let mut best = (0, f64::NEG_INFINITY);
        for code in 0..n.pow(depth as u32) {
            let (mut c, mut b, mut prev, mut qoe, mut first) = (code, b0, prev0, 0.0, 0);
            let mut seq = vec![];
            for _ in 0..depth {
                seq.push(c % n);
                c /= n;
            }
            seq.reverse(); // most significant digit first: lexicographic order = code order
            for (k, q) in seq.iter().enumerate() {
                let seg = start + k;
                let dl = v.size(seg, *q) as f64 * 8.0 / pred;
                let rb = (dl - b).max(0.0);
                b = (b - dl).max(0.0) + s(v.seg_duration(seg));
                let br = v.bitrates_bps[*q] as f64 / 1e6;
                qoe += br - 4.3 * rb - (br - v.bitrates_bps[prev] as f64 / 1e6).abs();
                prev = *q;
                if k == 0 {
                    first = *q;
                }
            }
            if qoe > best.1 {
                best = (first, qoe);
            }
        }
        best
    }

    #[test]
    fn pruned_search_equals_full_enumeration() {
        let mut v = cbr(&[300, 750, 1200, 1850], 2, 12);
        let mut rng = crate::rng::Rng::from_seed(11);
        for row in v.sizes.iter_mut() {
            for x in row.iter_mut() {
                *x = (*x as f64 * (0.5 + rng.uniform())) as u64;
            }
        }
        for _ in 0..200 {
            let start = rng.below(8) as usize;
            let b = rng.uniform() * 12.0;
            let prev = rng.below(4) as usize;
            let pred = 2e5 + rng.uniform() * 3e6;
            let (q, best) = mpc_search(&v, start, 4, b, prev, pred, 4.3, 1.0);
            let (q2, best2) = brute(&v, start, 4, b, prev, pred);
            assert_eq!(q, q2);
            assert!((best - best2).abs() < 1e-9);
        }
    }
}
