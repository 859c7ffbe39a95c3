//! Minerva (Nathan et al., "End-to-End Transport for Video QoE Fairness", SIGCOMM 2019, §5-6):
//! per client, every update period T, measure the download rate, compute a utility U(r) of the
//! client (Eq. 2, or the client-aware utility of §5.3), normalize it (§5.4) and set the weight
//! `w = r / f(U(r))` (Eq. 3), smoothed by an EWMA and clamped to [0.5, 20] (§6.2). Weighted
//! CUBIC / MulTCP / FAST then share the link in proportion to the weights; the fixed point
//! equalizes the utilities (App. B).
//!
//! Profiles: `paper` (§6.2) and `code` (the public minerva_quic server's constants); every
//! individual parameter overrides its profile value. See docs/models/flow_controller-minerva.md.

use super::norm::Normalization;
use super::pq::Curve;
pub use super::value::ValueFunction;
use super::{ClientObs, FlowController, FlowCtlCtx, FlowCtlEntry, FlowDecision, WeightUpdate};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{secs, Ns, MS, NEVER, SEC};
use std::collections::VecDeque;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "profile",
        unit: Unit::Choice(&["paper", "code"]),
        default: Default::Str("paper"),
        doc: "constants of the paper (§6.2) or of the public minerva_quic code; single parameters override",
    },
    ParamSpec {
        name: "objective",
        unit: Unit::Choice(&["maxmin", "propfair"]),
        default: Default::Str("maxmin"),
        doc: "max-min QoE fairness (Z = U, §5.2) or proportional fairness (Z = C - U'(r_r)/q, App. D)",
    },
    ParamSpec {
        name: "utility",
        unit: Unit::Choice(&["basic", "client"]),
        default: Default::Str("basic"),
        doc: "Eq. 2 bandwidth utility, or the client-aware utility of §5.3 (past, current chunk, V_h)",
    },
    ParamSpec {
        name: "normalization",
        unit: Unit::Choice(&["run", "file", "exp", "none"]),
        default: Default::Str("run"),
        doc: "f: horizontal average of the provider's videos' curves / alpha (§5.4), the corpus table of the scenario's normalization_file (qoelab minerva normalize), one curve a-b*exp(-c r), or f(u) = u/alpha",
    },
    ParamSpec {
        name: "metric",
        unit: Unit::Choice(&["vmaf", "psnr", "ssim", "bitrate"]),
        default: Default::Str("vmaf"),
        doc: "perceptual quality P of Eq. 1-2: a quality table of the videos (bitrate = Mbit/s)",
    },
    ParamSpec {
        name: "alpha",
        unit: Unit::Float,
        default: Default::Context("profile: paper 1.65 (QUIC Cubic emulating 2 flows), code 1.66 (2 x 0.83)"),
        doc: "normalization target: mean weight of the flows; use 0.825 against one-connection cubic",
    },
    ParamSpec { name: "w_min", unit: Unit::Float, default: Default::Float(0.5), doc: "lower weight bound (§6.2)" },
    ParamSpec { name: "w_max", unit: Unit::Float, default: Default::Float(20.0), doc: "upper weight bound (§6.2)" },
    ParamSpec {
        name: "w_init",
        unit: Unit::Float,
        default: Default::Float(1.0),
        doc: "weight until the first update (not stated in the paper; the code's 1.0)",
    },
    ParamSpec {
        name: "update_rtts",
        unit: Unit::Float,
        default: Default::Float(25.0),
        doc: "update period T in min RTTs (§6.2), 1 to 10^6; used unless update_period is set",
    },
    ParamSpec {
        name: "update_period",
        unit: Unit::Duration,
        default: Default::Context("profile: paper unset (update_rtts x min RTT), code 2 s (wait 1 s, measure 1 s)"),
        doc: "fixed update period T (1 ms to 1 h): wait T/2, then measure the rate over T/2",
    },
    ParamSpec {
        name: "conservative",
        unit: Unit::Bool,
        default: Default::Context("profile: paper true, code false"),
        doc: "rate estimate max(0.8 r, r - 0.5 sigma of the last 4 samples) (§6.2)",
    },
    ParamSpec {
        name: "rate_ewma",
        unit: Unit::Float,
        default: Default::Context("profile: paper 0.1, code 1 (the latest sample)"),
        doc: "gain of the rate EWMA (1 = no smoothing)",
    },
    ParamSpec {
        name: "weight_ewma",
        unit: Unit::Float,
        default: Default::Context("profile: paper 0.1, code 0.3"),
        doc: "gain of the weight EWMA (§6.2)",
    },
    ParamSpec {
        name: "beta",
        unit: Unit::Float,
        default: Default::Float(25.0),
        doc: "rebuffering penalty per second in the client-aware utility (Eq. 1)",
    },
    ParamSpec {
        name: "gamma",
        unit: Unit::Float,
        default: Default::Context("profile: paper 2.5, code 1"),
        doc: "smoothness penalty in the client-aware utility (Eq. 1)",
    },
    ParamSpec {
        name: "softplus",
        unit: Unit::Bool,
        default: Default::Context("profile: paper false (floor at 1e-3), code true"),
        doc: "keep the utility positive with ln(1 + e^U) (code) instead of a floor",
    },
    ParamSpec {
        name: "dash_overhead",
        unit: Unit::Duration,
        default: Default::Context("profile: paper 0, code 600 ms"),
        doc: "subtracted from the buffer before use (the code's dash.js per-chunk overhead)",
    },
    ParamSpec {
        name: "past_weighting",
        unit: Unit::Choice(&["thirds", "chunks"]),
        default: Default::Context("profile: paper thirds, code chunks"),
        doc: "client-aware mix: equal thirds (§6.2 intent) or value x5, current x1, past x min(10, n) (code)",
    },
    ParamSpec {
        name: "min_busy",
        unit: Unit::Float,
        default: Default::Float(0.5),
        doc: "a measuring window gives a rate sample only if a download was outstanding this fraction of it",
    },
    ParamSpec {
        name: "pf_c",
        unit: Unit::Float,
        default: Default::Float(1.0),
        doc: "the constant C of Z = C - U'(r_r)/q (propfair; U' per Mbit/s), arbitrary (App. D)",
    },
    ParamSpec {
        name: "norm_a",
        unit: Unit::Float,
        default: Default::Float(100.0),
        doc: "exp normalization: reference curve a - b exp(-c r), a",
    },
    ParamSpec { name: "norm_b", unit: Unit::Float, default: Default::Float(100.0), doc: "exp normalization: b" },
    ParamSpec {
        name: "norm_c",
        unit: Unit::Float,
        default: Default::Float(0.5),
        doc: "exp normalization: c (per Mbit/s)",
    },
];

pub const ENTRY: FlowCtlEntry = FlowCtlEntry {
    name: "minerva",
    summary: "Minerva: weights w = r / f(U(r)) that equalize (normalized) QoE, for weighted Cubic/FAST",
    reference: "Nathan et al., End-to-End Transport for Video QoE Fairness, SIGCOMM 2019, §5-6, App. B-D",
    params: PARAMS,
    build,
};

/// Fixed weight for client-aware past/current/future terms of the `chunks` mix (the code's horizon).
const CODE_HORIZON: f64 = 5.0;
/// Update period before a min RTT is known.
const MIN_UPDATE_PERIOD: Ns = MS;
const MAX_UPDATE_PERIOD: Ns = 3_600 * SEC;
const DEFAULT_PERIOD: Ns = 500 * MS;
/// Floor of the utility (paper profile) so that f stays positive.
const U_FLOOR: f64 = 1e-3;

/// Resolved constants.
#[derive(Clone, Debug)]
struct Cfg {
    maxmin: bool,
    client: bool,
    normalization: &'static str,
    metric: &'static str,
    alpha: f64,
    w_min: f64,
    w_max: f64,
    w_init: f64,
    update_rtts: f64,
    update_period: Option<Ns>,
    conservative: bool,
    rate_ewma: f64,
    weight_ewma: f64,
    beta: f64,
    gamma: f64,
    softplus: bool,
    dash_overhead: Ns,
    chunk_mix: bool,
    min_busy: f64,
    pf_c: f64,
    norm: (f64, f64, f64),
}

fn build(p: &Params, ctx: &FlowCtlCtx) -> Result<Box<dyn FlowController>, ParamError> {
    Ok(Box::new(Minerva::new(p, ctx)?))
}

/// Per-client state.
#[derive(Clone, Debug, Default)]
struct ClientState {
    /// In the measuring half of the period (else waiting).
    measuring: bool,
    next: Ns,
    bytes0: u64,
    busy0: Ns,
    t0: Ns,
    samples: VecDeque<f64>,
    rate: Option<f64>,
    weight: f64,
    announced: bool,
    curve: Option<Curve>,
    /// Index of the client's value function in `value_fns`.
    vf: Option<usize>,
}

/// The Minerva controller.
pub struct Minerva {
    cfg: Cfg,
    /// Z curves of the provider's videos, for the `run` normalization.
    z_curves: Vec<Curve>,
    value_fns: Vec<ValueFunction>,
    /// The corpus table of the `file` normalization.
    table: Option<Normalization>,
    clients: Vec<ClientState>,
}

pub(crate) fn z_curve(pq: &Curve, maxmin: bool, pf_c: f64) -> Curve {
    if maxmin {
        return pq.clone();
    }
    // Z(r) = C - P'(r)/P(r) (App. D with q = P(r), r_r = r), tabulated on 200 rates.
    let top = pq.pts.last().map_or(1.0, |p| p.0).max(1.0) * 1.5;
    let pts: Vec<(f64, f64)> = (1..=200)
        .map(|k| {
            let r = top * k as f64 / 200.0;
            let q = pq.at(r).max(U_FLOOR);
            (r, pf_c - pq.slope(r) * 1e6 / q)
        })
        .collect();
    let mut c = Curve::new(&pts);
    // no origin point for Z: start at the first sample
    c.pts.retain(|p| p.0 > 0.0);
    c
}

impl Minerva {
    pub fn new(p: &Params, ctx: &FlowCtlCtx) -> Result<Minerva, ParamError> {
        let code = p.choice(PARAMS, "profile")? == "code";
        let has = |k: &str| p.0.contains_key(k);
        let fl = |k: &str, paper: f64, c: f64| -> Result<f64, ParamError> {
            if has(k) {
                p.f64(PARAMS, k)
            } else {
                Ok(if code { c } else { paper })
            }
        };
        let bo = |k: &str, paper: bool, c: bool| -> Result<bool, ParamError> {
            if has(k) {
                p.bool(PARAMS, k)
            } else {
                Ok(if code { c } else { paper })
            }
        };
        let chunk_mix = if has("past_weighting") { p.choice(PARAMS, "past_weighting")? == "chunks" } else { code };
        let update_period = if has("update_period") {
            Some(p.req_u64(PARAMS, "update_period")?)
        } else if code {
            Some(2 * SEC)
        } else {
            None
        };
        let dash_overhead = if has("dash_overhead") {
            p.req_u64(PARAMS, "dash_overhead")?
        } else if code {
            600 * MS
        } else {
            0
        };
        let cfg = Cfg {
            maxmin: p.choice(PARAMS, "objective")? == "maxmin",
            client: p.choice(PARAMS, "utility")? == "client",
            normalization: p.choice(PARAMS, "normalization")?,
            metric: p.choice(PARAMS, "metric")?,
            alpha: match ctx.normalization {
                Some(t) if !has("alpha") => t.alpha,
                _ => fl("alpha", 1.65, 1.66)?,
            },
            w_min: p.f64(PARAMS, "w_min")?,
            w_max: p.f64(PARAMS, "w_max")?,
            w_init: p.f64(PARAMS, "w_init")?,
            update_rtts: p.f64(PARAMS, "update_rtts")?,
            update_period,
            conservative: bo("conservative", true, false)?,
            rate_ewma: fl("rate_ewma", 0.1, 1.0)?,
            weight_ewma: fl("weight_ewma", 0.1, 0.3)?,
            beta: p.f64(PARAMS, "beta")?,
            gamma: fl("gamma", 2.5, 1.0)?,
            softplus: bo("softplus", false, true)?,
            dash_overhead,
            chunk_mix,
            min_busy: p.f64(PARAMS, "min_busy")?,
            pf_c: p.f64(PARAMS, "pf_c")?,
            norm: (p.f64(PARAMS, "norm_a")?, p.f64(PARAMS, "norm_b")?, p.f64(PARAMS, "norm_c")?),
        };
        if cfg.w_min <= 0.0 {
            return Err(perr("w_min", "expected > 0"));
        }
        if cfg.w_min > cfg.w_max {
            return Err(perr("w_min", format!("expected w_min <= w_max, found {} > {}", cfg.w_min, cfg.w_max)));
        }
        if !(cfg.w_min..=cfg.w_max).contains(&cfg.w_init) {
            return Err(perr("w_init", format!("expected within [w_min, w_max] = [{}, {}]", cfg.w_min, cfg.w_max)));
        }
        for (k, v) in [("rate_ewma", cfg.rate_ewma), ("weight_ewma", cfg.weight_ewma)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(perr(k, format!("expected a gain in (0, 1], found {v}")));
            }
        }
        if cfg.min_busy > 1.0 {
            return Err(perr("min_busy", "expected a fraction in [0, 1]"));
        }
        if cfg.alpha <= 0.0 {
            return Err(perr("alpha", "expected > 0"));
        }
        // Bounds of the update period (1 ns made a 10 s run take 8 minutes: an update per nanosecond):
        // at least 1 ms, or one min RTT; at most an hour, or 10^6 min RTTs.
        if update_period.is_some_and(|t| !(MIN_UPDATE_PERIOD..=MAX_UPDATE_PERIOD).contains(&t)) {
            return Err(perr("update_period", "expected a period from 1ms to 1h"));
        }
        if cfg.update_period.is_none() && !(1.0..=1e6).contains(&cfg.update_rtts) {
            return Err(perr("update_rtts", "expected 1 to 1000000 min RTTs"));
        }
        if cfg.normalization == "exp" && !(cfg.norm.1 > 0.0 && cfg.norm.2 > 0.0) {
            return Err(perr("norm_b", "expected norm_b > 0 and norm_c > 0"));
        }
        match (cfg.normalization, ctx.normalization) {
            ("file", None) => {
                return Err(perr("normalization", "normalization = \"file\" needs the provider's normalization_file"))
            }
            ("file", Some(t)) => {
                t.validate().map_err(|(k, m)| perr("normalization_file", format!("{k}: {m}")))?;
                let obj = if cfg.maxmin { "maxmin" } else { "propfair" };
                if t.metric != cfg.metric || t.objective != obj {
                    return Err(perr(
                        "normalization_file",
                        format!(
                            "the table is for metric {} and objective {}, the provider's are {} and {obj}",
                            t.metric, t.objective, cfg.metric
                        ),
                    ));
                }
                if !cfg.maxmin && t.pf_c != cfg.pf_c {
                    return Err(perr(
                        "normalization_file",
                        format!("the table has pf_c {}, the provider {}", t.pf_c, cfg.pf_c),
                    ));
                }
            }
            (n, Some(_)) => {
                return Err(perr(
                    "normalization_file",
                    format!("a normalization file is used by normalization = \"file\" only, found \"{n}\""),
                ))
            }
            _ => {}
        }
        let mut z_curves = Vec::new();
        for v in ctx.videos {
            let Some(c) = Curve::of_video(v, cfg.metric) else {
                return Err(perr("metric", format!("video \"{}\" has no \"{}\" quality table", v.name, cfg.metric)));
            };
            z_curves.push(z_curve(&c, cfg.maxmin, cfg.pf_c));
        }
        let table = ctx.normalization.cloned();
        let mut m = Minerva { cfg, z_curves, value_fns: Vec::new(), table, clients: Vec::new() };
        for vf in ctx.value_functions {
            if !m.cfg.client {
                return Err(perr("value_functions", "value functions are used by utility = \"client\" only"));
            }
            let Some(v) = ctx.videos.iter().find(|v| v.name == vf.video) else {
                return Err(perr(
                    "value_functions",
                    format!("a value function of video \"{}\", which no client plays", vf.video),
                ));
            };
            if vf.metric != m.cfg.metric {
                return Err(perr(
                    "value_functions",
                    format!(
                        "the value function of \"{}\" is on {}, the provider's metric is {}",
                        vf.video, vf.metric, m.cfg.metric
                    ),
                ));
            }
            vf.validate(v.n_rungs()).map_err(|e| perr("value_functions", format!("video \"{}\": {e}", vf.video)))?;
            m.value_fns.push(vf.clone());
        }
        Ok(m)
    }

    /// Use a value function for V_h in the client-aware utility (for clients whose video has the
    /// value function's name; an unnamed one serves every client).
    pub fn with_value_function(mut self, v: ValueFunction) -> Minerva {
        self.value_fns.push(v);
        self
    }

    fn value_fn_for(&self, o: &ClientObs) -> Option<usize> {
        self.value_fns.iter().position(|v| v.video == o.video.name || v.video.is_empty())
    }

    fn period(&self, o: &ClientObs) -> Ns {
        match (self.cfg.update_period, o.min_rtt) {
            (Some(t), _) => t,
            (None, Some(r)) if r > 0 => ((r as f64 * self.cfg.update_rtts) as Ns).max(1),
            _ => DEFAULT_PERIOD,
        }
    }

    /// P(segment, rung) in the provider's metric.
    fn pq(&self, o: &ClientObs, seg: usize, rung: usize) -> f64 {
        if self.cfg.metric == "bitrate" {
            return o.video.bitrates_bps[rung] as f64 / 1e6;
        }
        o.video.quality(self.cfg.metric, seg.min(o.video.n_segments() - 1), rung).unwrap_or(0.0)
    }

    /// The utility q of a client at rate `r` (bit/s).
    fn utility(&self, o: &ClientObs, curve: &Curve, r: f64, vf: Option<usize>) -> f64 {
        let basic = curve.at(r);
        let q = if !self.cfg.client {
            basic
        } else {
            let c = &self.cfg;
            // past per-chunk QoE (Eq. 1) of the completed segments
            let played: Vec<_> = o.log.iter().filter(|l| !l.abandoned).collect();
            let p: Vec<f64> = played.iter().map(|l| self.pq(o, l.segment, l.rung)).collect();
            let rb: Vec<f64> = played.iter().map(|l| secs(l.stall)).collect();
            let past = crate::metrics::qoe_chunks(&p, &rb, c.beta, c.gamma);
            let n = past.len();
            let past_mean = if n > 0 { past.iter().sum::<f64>() / n as f64 } else { 0.0 };
            let b = secs(o.buffer.saturating_sub(c.dash_overhead));
            let mut cur = None;
            let mut b_after = b;
            let mut rung = o.rung.unwrap_or(0);
            if let Some(ch) = o.current {
                let rem_s = ch.bytes_total.saturating_sub(ch.bytes_received) as f64 * 8.0 / r.max(1.0);
                let pc = self.pq(o, ch.segment, ch.rung);
                let prev = p.last().copied().unwrap_or(pc);
                cur = Some(pc - c.beta * (rem_s - b).max(0.0) - c.gamma * (pc - prev).abs());
                b_after = (b - rem_s).max(0.0) + secs(o.video.seg_duration(ch.segment));
                rung = ch.rung;
            }
            // V_h; without a value function, its h -> infinity limit, Eq. 2
            let v = vf.map_or(basic, |k| self.value_fns[k].eval(b_after, r, rung));
            if c.chunk_mix {
                // the code: value x h, current x 1, past mean x min(10, n), the missing past
                // weight filled by the value
                let wp = (n as f64).min(10.0);
                let mut s = v * CODE_HORIZON + (10.0 - wp) * v + past_mean * wp;
                let mut wsum = CODE_HORIZON + 10.0;
                if let Some(x) = cur {
                    s += x;
                    wsum += 1.0;
                }
                s / wsum
            } else {
                let mut terms = vec![v];
                terms.extend(cur);
                if n > 0 {
                    terms.push(past_mean);
                }
                terms.iter().sum::<f64>() / terms.len() as f64
            }
        };
        if self.cfg.softplus {
            // ln(1 + e^q) without overflow
            if q > 30.0 {
                q
            } else {
                q.exp().ln_1p()
            }
        } else {
            q.max(U_FLOOR)
        }
    }

    /// The objective's score Z of utility q on the client's curve (max-min: Z = q).
    fn score(&self, curve: &Curve, q: f64) -> f64 {
        if self.cfg.maxmin {
            return q;
        }
        let rr = curve.inverse(q);
        self.cfg.pf_c - curve.slope(rr) * 1e6 / q
    }

    /// f(z): the rate (bit/s; Mbit/s for `none`) that a flow of mean weight alpha gets at score z.
    pub fn normalize(&self, z: f64) -> f64 {
        let a = self.cfg.alpha;
        match self.cfg.normalization {
            "none" => z / a,
            "exp" => {
                let (na, nb, nc) = self.cfg.norm;
                let x = ((na - z) / nb).clamp(1e-12, 1.0);
                -x.ln() / nc * 1e6 / a
            }
            "file" => self.table.as_ref().map_or(f64::NAN, |t| t.mean_rate(z) / a),
            _ => {
                if self.z_curves.is_empty() {
                    return f64::NAN;
                }
                self.z_curves.iter().map(|c| c.inverse(z)).sum::<f64>() / self.z_curves.len() as f64 / a
            }
        }
    }

    /// The target weight r / f(z) (before the EWMA and the clamp).
    pub fn target(&self, r_bps: f64, z: f64) -> f64 {
        let r = if self.cfg.normalization == "none" { r_bps / 1e6 } else { r_bps };
        let f = self.normalize(z);
        if f > 0.0 && f.is_finite() {
            r / f
        } else {
            self.cfg.w_max
        }
    }

    /// One rate sample in: the rate estimate the weight uses (bit/s).
    fn rate_estimate(&self, st: &mut ClientState, r: f64) -> f64 {
        st.samples.push_back(r);
        if st.samples.len() > 4 {
            st.samples.pop_front();
        }
        let rc = if self.cfg.conservative {
            let n = st.samples.len() as f64;
            let m = st.samples.iter().sum::<f64>() / n;
            let sd = (st.samples.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt();
            (0.8 * r).max(r - 0.5 * sd)
        } else {
            r
        };
        let g = self.cfg.rate_ewma;
        let e = st.rate.map_or(rc, |prev| g * rc + (1.0 - g) * prev);
        st.rate = Some(e);
        e
    }
}

impl FlowController for Minerva {
    fn name(&self) -> &'static str {
        "minerva"
    }

    fn update(&mut self, now: Ns, obs: &[ClientObs]) -> FlowDecision {
        let mut out = vec![None; obs.len()];
        let mut next = NEVER;
        let mut clients = std::mem::take(&mut self.clients);
        while clients.len() < obs.len() {
            clients.push(ClientState { weight: self.cfg.w_init, next: now, ..std::default::Default::default() });
        }
        for (i, o) in obs.iter().enumerate() {
            let st = &mut clients[i];
            if st.curve.is_none() {
                st.curve = Some(Curve::of_video(o.video, self.cfg.metric).unwrap_or_else(|| Curve::new(&[])));
                st.vf = self.value_fn_for(o);
            }
            let half = (self.period(o) / 2).max(1);
            if !o.active {
                st.measuring = false;
                st.next = now + half;
                next = next.min(st.next);
                continue;
            }
            if !st.announced {
                st.announced = true;
                out[i] =
                    Some(WeightUpdate { weight: st.weight, utility: f64::NAN, rate_bps: f64::NAN, clamped: false });
            }
            if now < st.next {
                next = next.min(st.next);
                continue;
            }
            if !st.measuring {
                st.measuring = true;
                st.bytes0 = o.delivered_bytes;
                st.busy0 = o.busy_ns;
                st.t0 = now;
            } else {
                st.measuring = false;
                let window = now.saturating_sub(st.t0);
                let busy = o.busy_ns.saturating_sub(st.busy0).min(window);
                let bytes = o.delivered_bytes.saturating_sub(st.bytes0);
                let sample = busy > 0 && bytes > 0 && busy as f64 >= self.cfg.min_busy * window as f64;
                // weight updates start once the first chunk is complete (§6.2)
                let started = o.log.iter().any(|l| !l.abandoned);
                if sample {
                    let r = bytes as f64 * 8.0 / secs(busy);
                    let rate = self.rate_estimate(st, r);
                    if started {
                        let curve = st.curve.clone().expect("set above");
                        let q = self.utility(o, &curve, rate, st.vf);
                        let z = self.score(&curve, q);
                        let w = self.target(rate, z);
                        let g = self.cfg.weight_ewma;
                        let raw = g * w + (1.0 - g) * st.weight;
                        let clamped = raw <= self.cfg.w_min || raw >= self.cfg.w_max;
                        st.weight = raw.clamp(self.cfg.w_min, self.cfg.w_max);
                        out[i] = Some(WeightUpdate { weight: st.weight, utility: q, rate_bps: rate, clamped });
                    }
                }
            }
            st.next = now + half;
            next = next.min(st.next);
        }
        self.clients = clients;
        FlowDecision { weights: out, next }
    }
}

#[cfg(test)]
mod tests;
