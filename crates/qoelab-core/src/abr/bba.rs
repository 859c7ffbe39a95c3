//! `bba0` .. `bba3`: the buffer-based algorithms of Huang et al. (SIGCOMM'14) as implemented in
//! the VLC player of the HAS-over-AQM testbed (serl/vlc httplive), with its constants.
//!
//! * BBA-0: reservoir r = 90 s, cushion cu = 126 s, maximum buffer 240 s. The rate map f(B) is
//!   linear from the lowest to the highest nominal bitrate between B = r and B = r + cu.
//!   B <= r -> lowest rung; B >= r + cu -> highest; otherwise switch up only if f(B) >= the rate of
//!   the rung above the previous one (to the highest rate < f(B)), down only if f(B) <= the rate of
//!   the rung below (to the lowest rate > f(B)); else keep the previous rung.
//! * BBA-1: reservoir from the lowest rung's actual sizes: walk segments from the current one,
//!   adding each download time at the lowest nominal rate (size*8/r_min) until the total reaches
//!   X = 480 s; reservoir = total download time - media time of those segments, clamped to
//!   [2, 35] segment durations. The chunk map uses the next segment's actual per-rung rates
//!   (size*8/duration) instead of the nominal ones. Result limited to +-1 level per decision.
//! * BBA-2: BBA-1 plus a startup phase: step up one level when the last segment's throughput
//!   exceeds s * its actual rate, s = 8 - 6 * B / (r + cu); startup ends for good when the buffer
//!   decreases between decisions or when BBA-1 proposes a higher level than startup.
//! * BBA-3: BBA-2, the reservoir never decreases, and after startup an up-switch is confirmed only
//!   if the chunk map averaged over the next L segments (L = segments in the buffer; halved when
//!   `aggressive`) also goes up; down-switches pass unchanged.

use super::estimators::{mbps, s, Sample, SAMPLE_CHOICES};
use super::{Abr, AbrEntry, AbrObs, Decision};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::Ns;
use crate::video::Video;

const CUSHION: ParamSpec = ParamSpec {
    name: "cushion",
    unit: Unit::Duration,
    default: Default::Int(126_000_000_000),
    doc: "cushion: f(B) rises from the lowest to the highest rate over [r, r + cushion] (testbed 126 s)",
};
const BUFFER_MAX: ParamSpec = ParamSpec {
    name: "buffer_max",
    unit: Unit::Duration,
    default: Default::Int(240_000_000_000),
    doc: "maximum buffer (testbed 240 s; no download above it); offered to the player via preferred_buffer_max",
};
const RESERVOIR: ParamSpec = ParamSpec {
    name: "reservoir",
    unit: Unit::Duration,
    default: Default::Int(90_000_000_000),
    doc: "fixed reservoir (testbed BBA-0: 90 s)",
};
const LOOKAHEAD: ParamSpec = ParamSpec {
    name: "lookahead",
    unit: Unit::Duration,
    default: Default::Int(480_000_000_000),
    doc: "X: download time at the lowest rate over which the dynamic reservoir is computed (480 s)",
};
const RES_MIN: ParamSpec = ParamSpec {
    name: "reservoir_min_segments",
    unit: Unit::Int,
    default: Default::Int(2),
    doc: "lower clamp of the dynamic reservoir, in segment durations (testbed 2)",
};
const RES_MAX: ParamSpec = ParamSpec {
    name: "reservoir_max_segments",
    unit: Unit::Int,
    default: Default::Int(35),
    doc: "upper clamp of the dynamic reservoir, in segment durations (testbed 35)",
};
const SAMPLE: ParamSpec = ParamSpec {
    name: "sample",
    unit: Unit::Choice(SAMPLE_CHOICES),
    default: Default::Str("request"),
    doc: "throughput sample of the startup rule (VLC keep-alive: request-to-last-byte)",
};
const AGGRESSIVE: ParamSpec = ParamSpec {
    name: "aggressive",
    unit: Unit::Bool,
    default: Default::Bool(false),
    doc: "BBA3-a: halve the lookahead L of the up-switch check",
};

const P0: &[ParamSpec] = &[RESERVOIR, CUSHION, BUFFER_MAX];
const P1: &[ParamSpec] = &[CUSHION, BUFFER_MAX, LOOKAHEAD, RES_MIN, RES_MAX];
const P2: &[ParamSpec] = &[CUSHION, BUFFER_MAX, LOOKAHEAD, RES_MIN, RES_MAX, SAMPLE];
const P3: &[ParamSpec] = &[CUSHION, BUFFER_MAX, LOOKAHEAD, RES_MIN, RES_MAX, SAMPLE, AGGRESSIVE];

const REF: &str = "Huang et al. SIGCOMM'14; testbed constants of serl/vlc httplive (Livi et al. HAS-over-AQM)";

pub const BBA0: AbrEntry = AbrEntry {
    name: "bba0",
    summary: "BBA-0: reservoir 90 s, cushion 126 s, linear rate map with hysteresis",
    reference: REF,
    params: P0,
    build: |p, v| build(p, v, 0, P0),
};
pub const BBA1: AbrEntry = AbrEntry {
    name: "bba1",
    summary: "BBA-1: dynamic reservoir (X = 480 s), chunk map on actual next-segment sizes, +-1 level",
    reference: REF,
    params: P1,
    build: |p, v| build(p, v, 1, P1),
};
pub const BBA2: AbrEntry = AbrEntry {
    name: "bba2",
    summary: "BBA-2: BBA-1 plus throughput-driven startup (s = 8 - 6B/(r+cu))",
    reference: REF,
    params: P2,
    build: |p, v| build(p, v, 2, P2),
};
pub const BBA3: AbrEntry = AbrEntry {
    name: "bba3",
    summary: "BBA-3: BBA-2 with monotone reservoir and up-switches checked on the next L segments",
    reference: REF,
    params: P3,
    build: |p, v| build(p, v, 3, P3),
};

fn build(p: &Params, _v: &Video, variant: u8, specs: &[ParamSpec]) -> Result<Box<dyn Abr>, ParamError> {
    let get = |n: &str| -> Result<f64, ParamError> {
        if specs.iter().any(|x| x.name == n) {
            Ok(s(p.req_u64(specs, n)?))
        } else {
            Ok(0.0)
        }
    };
    let cushion = get("cushion")?;
    if cushion <= 0.0 {
        return Err(crate::params::perr("cushion", "expected > 0"));
    }
    let (rmin, rmax) = if variant >= 1 {
        let a = p.req_u64(specs, "reservoir_min_segments")? as f64;
        let b = p.req_u64(specs, "reservoir_max_segments")? as f64;
        if a > b {
            return Err(crate::params::perr("reservoir_min_segments", "expected <= reservoir_max_segments"));
        }
        (a, b)
    } else {
        (0.0, 0.0)
    };
    Ok(Box::new(Bba {
        variant,
        reservoir: get("reservoir")?,
        cushion,
        buffer_max: p.req_u64(specs, "buffer_max")?,
        lookahead: get("lookahead")?,
        res_min_segs: rmin,
        res_max_segs: rmax,
        sample: if variant >= 2 { Sample::from_name(p.choice(specs, "sample")?) } else { Sample::Request },
        aggressive: variant == 3 && p.bool(specs, "aggressive")?,
        startup: variant >= 2,
        prev_buffer: None,
        prev_reservoir: 0.0,
    }))
}

pub struct Bba {
    variant: u8,
    reservoir: f64,
    cushion: f64,
    buffer_max: Ns,
    lookahead: f64,
    res_min_segs: f64,
    res_max_segs: f64,
    sample: Sample,
    aggressive: bool,
    startup: bool,
    prev_buffer: Option<Ns>,
    prev_reservoir: f64,
}

/// f(B): linear from rates[0] at B = r to rates[top] at B = r + cu (clamped outside).
pub fn rate_map(b: f64, r: f64, cu: f64, rates: &[f64]) -> f64 {
    let lo = rates[0];
    let hi = rates[rates.len() - 1];
    if b <= r {
        lo
    } else if b >= r + cu {
        hi
    } else {
        lo + (b - r) / cu * (hi - lo)
    }
}

/// BBA-0's rule (Huang et al. Algorithm 1) on a rate list (ascending by rung).
pub fn bba_rule(b: f64, r: f64, cu: f64, rates: &[f64], prev: usize) -> (usize, f64) {
    let top = rates.len() - 1;
    let f = rate_map(b, r, cu, rates);
    let up = rates[(prev + 1).min(top)];
    let down = rates[prev.saturating_sub(1)];
    let q = if b <= r {
        0
    } else if b >= r + cu {
        top
    } else if f >= up {
        // highest rate strictly below f(B)
        (0..=top).rev().find(|&i| rates[i] < f).unwrap_or(0)
    } else if f <= down {
        // lowest rate strictly above f(B)
        (0..=top).find(|&i| rates[i] > f).unwrap_or(top)
    } else {
        prev
    };
    (q, f)
}

impl Bba {
    /// Dynamic reservoir (BBA-1+) in seconds, before the BBA-3 monotonicity.
    fn dynamic_reservoir(&self, v: &Video, seg: usize) -> f64 {
        let r0 = v.bitrates_bps[0] as f64;
        let (mut t, mut m) = (0.0, 0.0);
        for j in seg..v.n_segments() {
            t += v.size(j, 0) as f64 * 8.0 / r0;
            m += s(v.seg_duration(j));
            if t >= self.lookahead {
                break;
            }
        }
        let d = s(v.segment_duration);
        (t - m).clamp(self.res_min_segs * d, self.res_max_segs * d)
    }

    /// The actual rates (bit/s) of segment `seg` at each rung.
    fn seg_rates(v: &Video, seg: usize) -> Vec<f64> {
        let d = s(v.seg_duration(seg));
        (0..v.n_rungs()).map(|q| v.size(seg, q) as f64 * 8.0 / d).collect()
    }

    /// Rates averaged over segments seg..seg+l (clipped at the end of the video).
    fn avg_rates(v: &Video, seg: usize, l: usize) -> Vec<f64> {
        let end = (seg + l.max(1)).min(v.n_segments());
        let mut acc = vec![0.0; v.n_rungs()];
        for j in seg..end {
            for (q, r) in Self::seg_rates(v, j).iter().enumerate() {
                acc[q] += r;
            }
        }
        let n = (end - seg).max(1) as f64;
        acc.iter().map(|x| x / n).collect()
    }

    fn limit1(q: usize, prev: usize) -> usize {
        q.clamp(prev.saturating_sub(1), prev + 1)
    }
}

impl Abr for Bba {
    fn name(&self) -> &'static str {
        ["bba0", "bba1", "bba2", "bba3"][self.variant as usize]
    }

    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let v = obs.video;
        let seg = obs.segment.min(v.n_segments() - 1);
        let b = s(obs.buffer);
        let prev = obs.last_rung.unwrap_or(0).min(v.n_rungs() - 1);
        let top = v.n_rungs() - 1;
        if self.variant == 0 {
            let rates: Vec<f64> = v.bitrates_bps.iter().map(|x| *x as f64).collect();
            let (q, f) = bba_rule(b, self.reservoir, self.cushion, &rates, prev);
            return Decision {
                rung: q,
                delay: 0,
                reason: format!("B {b:.2}s r {:.0}s f(B) {} prev {prev} -> {q}", self.reservoir, mbps(f)),
            };
        }
        let mut res = self.dynamic_reservoir(v, seg);
        if self.variant == 3 {
            res = res.max(self.prev_reservoir);
            self.prev_reservoir = res;
        }
        let rates = Self::seg_rates(v, seg);
        let (raw, f) = bba_rule(b, res, self.cushion, &rates, prev);
        let bba1 = Self::limit1(raw, prev);
        let mut reason = format!("B {b:.2}s r {res:.2}s f(B) {} prev {prev} -> bba1 {bba1}", mbps(f));
        let mut q = bba1;

        if self.variant >= 2 {
            if self.startup {
                if let Some(pb) = self.prev_buffer {
                    if obs.buffer < pb {
                        self.startup = false;
                        reason.push_str("; buffer decreased: startup over");
                    }
                }
            }
            if self.startup {
                let st = match obs.history.last() {
                    None => 0,
                    Some(r) => {
                        let tput = self.sample.of(r).0;
                        let rate_last = r.bytes as f64 * 8.0 / s(v.seg_duration(r.segment.min(v.n_segments() - 1)));
                        let sf = 8.0 - 6.0 * (b / (res + self.cushion)).min(1.0);
                        let st = if tput > sf * rate_last { (prev + 1).min(top) } else { prev };
                        reason.push_str(&format!(
                            "; startup tput {} vs {sf:.3}*{} -> {st}",
                            mbps(tput),
                            mbps(rate_last)
                        ));
                        st
                    }
                };
                if bba1 > st {
                    self.startup = false;
                    reason.push_str("; bba1 above startup: startup over");
                    q = bba1;
                } else {
                    q = st;
                }
            } else if self.variant == 3 && bba1 > prev {
                let mut l = (b / s(v.segment_duration)).floor() as usize;
                if self.aggressive {
                    l /= 2;
                }
                let avg = Self::avg_rates(v, seg, l.max(1));
                let (re, _) = bba_rule(b, res, self.cushion, &avg, prev);
                let re = Self::limit1(re, prev);
                q = bba1.min(re).max(prev);
                reason.push_str(&format!("; up-check over {} segs -> {re} => {q}", l.max(1)));
            }
            self.prev_buffer = Some(obs.buffer);
        }
        Decision { rung: q, delay: 0, reason }
    }

    fn preferred_buffer_max(&self) -> Option<Ns> {
        Some(self.buffer_max)
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::{MS, SEC};

    const LADDER: [u64; 8] = [350, 470, 630, 845, 1130, 1520, 2040, 2750];

    #[test]
    fn bba0_map_edges_and_hysteresis() {
        let v = cbr(&LADDER, 2, 10);
        let rates: Vec<f64> = v.bitrates_bps.iter().map(|x| *x as f64).collect();
        // f(90 s) = 350k (reservoir edge), f(216 s) = 2750k (reservoir + cushion), midpoint 153 s:
        // 350 + 63/126*(2750-350) = 350 + 1200 = 1550k
        assert_eq!(rate_map(90.0, 90.0, 126.0, &rates), 350_000.0);
        assert_eq!(rate_map(216.0, 90.0, 126.0, &rates), 2_750_000.0);
        assert!((rate_map(153.0, 90.0, 126.0, &rates) - 1_550_000.0).abs() < 1e-6);
        let mut a = build(&Params::new(), &v, 0, P0).unwrap();
        assert_eq!(a.preferred_buffer_max(), Some(240 * SEC));
        let d = |a: &mut Box<dyn Abr>, b: u64, prev| a.choose(&obs(&v, 3, b * SEC, Some(prev), &[])).rung;
        // at the reservoir edge (B = 90 s) -> rung 0 from anywhere
        assert_eq!(d(&mut a, 90, 5), 0);
        // at r + cu = 216 s -> top
        assert_eq!(d(&mut a, 216, 0), 7);
        // 153 s, f = 1550k: from 0, f >= 470k -> highest rate < 1550k = 1520k (rung 5)
        assert_eq!(d(&mut a, 153, 0), 5);
        // from 5: up needs f >= 2040k, down needs f <= 1130k -> stay 5
        assert_eq!(d(&mut a, 153, 5), 5);
        // from 7: f <= 2040k -> lowest rate > 1550k = 2040k (rung 6)
        assert_eq!(d(&mut a, 153, 7), 6);
        // just above the reservoir: 91 s -> f = 350 + 1/126*2400 = 369.05k: from 0, < 470 -> stay 0
        assert_eq!(d(&mut a, 91, 0), 0);
    }

    fn video_with_r0_factor(n: usize, factor_num: u64, factor_den: u64) -> Video {
        let mut v = cbr(&LADDER, 2, n);
        for row in v.sizes.iter_mut() {
            row[0] = row[0] * factor_num / factor_den;
        }
        v
    }

    #[test]
    fn bba1_dynamic_reservoir_and_chunk_map() {
        // Rung-0 segments 1.25x nominal: 350k*2/8*1.25 = 109_375 B -> 2.5 s each at 350 kbit/s.
        // 50 segments: total download 125 s < 480 s, media 100 s -> reservoir 25 s (in [4, 70]).
        let v = video_with_r0_factor(50, 5, 4);
        let a = build_bba(&v, 1);
        assert!((a.dynamic_reservoir(&v, 0) - 25.0).abs() < 1e-9);
        // from segment 40: 10 segments -> 25 - 20 = 5 s
        assert!((a.dynamic_reservoir(&v, 40) - 5.0).abs() < 1e-9);
        // from segment 48: 2 segments -> 5 - 4 = 1 s -> clamped to 2 segments = 4 s
        assert!((a.dynamic_reservoir(&v, 48) - 4.0).abs() < 1e-9);
        // 400 segments: stop when download time reaches 480 s = 192 segments, media 384 s ->
        // 96 s -> clamped to 35*2 = 70 s
        let v2 = video_with_r0_factor(400, 5, 4);
        assert!((a.dynamic_reservoir(&v2, 0) - 70.0).abs() < 1e-9);

        // Chunk map on actual sizes, +-1 level: segment 0 reservoir 25 s, cushion 126 s.
        // Actual rates of segment 0: rung 0 = 437.5k (1.25x), others nominal; top 2750k.
        // B = 88 s: f = 437.5 + (88-25)/126*(2750-437.5) = 437.5 + 0.5*2312.5 = 1593.75k.
        // From rung 0 the raw rule gives the highest rate < 1593.75k = 1520k (rung 5); +-1 -> rung 1.
        let mut b1 = build(&Params::new(), &v, 1, P1).unwrap();
        assert_eq!(b1.choose(&obs(&v, 0, 88 * SEC, Some(0), &[])).rung, 1);
        // From rung 7: f <= 2040k -> lowest rate > f = 2040k (rung 6); within +-1 -> 6.
        assert_eq!(b1.choose(&obs(&v, 0, 88 * SEC, Some(7), &[])).rung, 6);
        // B below the reservoir (20 s) from rung 4 -> raw 0, limited to 3
        assert_eq!(b1.choose(&obs(&v, 0, 20 * SEC, Some(4), &[])).rung, 3);
    }

    fn build_bba(v: &Video, variant: u8) -> Box<Bba> {
        let specs = [P0, P1, P2, P3][variant as usize];
        let p = Params::new();
        let get = |n: &str| s(p.req_u64(specs, n).unwrap());
        let _ = v;
        Box::new(Bba {
            variant,
            reservoir: if variant == 0 { get("reservoir") } else { 0.0 },
            cushion: get("cushion"),
            buffer_max: 240 * SEC,
            lookahead: 480.0,
            res_min_segs: 2.0,
            res_max_segs: 35.0,
            sample: Sample::Request,
            aggressive: false,
            startup: variant >= 2,
            prev_buffer: None,
            prev_reservoir: 0.0,
        })
    }

    #[test]
    fn bba2_startup_steps_and_exits_permanently() {
        // CBR video: 100 segments, actual = nominal; reservoir = clamp(0) = 4 s; r + cu = 130 s.
        let v = cbr(&LADDER, 2, 100);
        let mut a = build(&Params::new(), &v, 2, P2).unwrap();
        assert_eq!(a.choose(&obs(&v, 0, 0, None, &[])).rung, 0);
        // Segment 0 at rung 0 (87_500 B) took 0.1 s request-to-last-byte -> 7 Mbit/s.
        // B = 2 s: s = 8 - 6*2/130 = 7.9077; 7.9077*350k = 2.768 Mbit/s < 7 -> step up to 1.
        // BBA-1: f(2 s) with B <= r (4 s) -> 0, not above startup.
        let h = vec![rec(0, 0, 87_500, 0, 50, 50)];
        let d = a.choose(&obs(&v, 1, 2 * SEC, Some(0), &h));
        assert_eq!(d.rung, 1, "{}", d.reason);
        // Segment 1 at rung 1 (117_500 B) took 1 s -> 0.94 Mbit/s; B = 3 s: s = 8 - 18/130 = 7.86;
        // 7.86*470k = 3.69 Mbit/s > 0.94 -> stay at 1.
        let h = vec![h[0], rec(1, 1, 117_500, 0, 100, 900)];
        assert_eq!(a.choose(&obs(&v, 2, 3 * SEC, Some(1), &h)).rung, 1);
        // Buffer decreases (3 s -> 2.5 s): startup ends for good. BBA-1 at 2.5 s (<= r = 4 s)
        // -> raw 0, from 1 -> 0.
        let fast = vec![rec(2, 1, 117_500, 0, 10, 10)]; // 47 Mbit/s would step up in startup
        let d = a.choose(&obs(&v, 3, 2_500 * MS, Some(1), &fast));
        assert_eq!(d.rung, 0, "{}", d.reason);
        // Even with the buffer rising again and a huge throughput, no startup step any more:
        // B = 5 s: f = 350 + 1/126*2400 = 369k < 470 -> stay 0 (BBA-1 rule).
        assert_eq!(a.choose(&obs(&v, 4, 5 * SEC, Some(0), &fast)).rung, 0);
        // Control: a fresh BBA-2 in startup with the same input steps up to 1.
        let mut b = build(&Params::new(), &v, 2, P2).unwrap();
        assert_eq!(b.choose(&obs(&v, 4, 5 * SEC, Some(0), &fast)).rung, 1);
    }

    #[test]
    fn bba3_upswitch_checked_on_lookahead() {
        // 100 CBR segments, reservoir 4 s (clamp). Make segments 1..=5 at rung 2 large (2x).
        let mut v = cbr(&LADDER, 2, 100);
        for j in 1..=5 {
            v.sizes[j][2] *= 2;
        }
        let mut a = build(&Params::new(), &v, 3, P3).unwrap();
        // leave startup: first decision records B = 20 s, second sees 10 s (decrease)
        a.choose(&obs(&v, 0, 20 * SEC, Some(1), &[]));
        // B = 10 s at segment 0, prev 1: f = 350 + 6/126*2400 = 464.3k; up needs >= 630k: stay.
        assert_eq!(a.choose(&obs(&v, 0, 10 * SEC, Some(1), &[])).rung, 1);
        // B = 30 s, segment 0, prev 1: f = 350 + 26/126*2400 = 845.2k >= 630k -> raw: highest
        // rate < 845.2k = 845k (rung 3), +-1 -> 2. Up-check with L = 15 segments (0..15): rung-2
        // average = (10*630k + 5*1260k)/15 = 840k; rung 3 845k, top 2750k (unchanged), rung 0 350k:
        // f same 845.2k >= rate[2] = 840k -> highest avg rate < 845.2k = 845k (rung 3) -> +-1 2: up ok.
        assert_eq!(a.choose(&obs(&v, 0, 30 * SEC, Some(1), &[])).rung, 2);
        // B = 24 s: f = 350 + 20/126*2400 = 730.95k >= 630k: raw rung 2 (630k < 731k). Up-check
        // L = 12 (segments 0..12): rung-2 average = (7*630 + 5*1260)/12 = 892.5k > f; f <= 630 no ->
        // stays prev 1. So BBA-3 keeps rung 1 where BBA-2 would go to 2.
        let d = a.choose(&obs(&v, 0, 24 * SEC, Some(1), &[]));
        assert_eq!(d.rung, 1, "{}", d.reason);
        let mut b2 = build(&Params::new(), &v, 2, P2).unwrap();
        b2.choose(&obs(&v, 0, 20 * SEC, Some(1), &[]));
        b2.choose(&obs(&v, 0, 10 * SEC, Some(1), &[]));
        assert_eq!(b2.choose(&obs(&v, 0, 24 * SEC, Some(1), &[])).rung, 2);
        // down-switches pass unchanged: B = 5 s from rung 3 -> f = 369k <= 630k -> lowest > f =
        // 470k (rung 1), +-1 -> 2
        assert_eq!(a.choose(&obs(&v, 0, 5 * SEC, Some(3), &[])).rung, 2);
    }
}
