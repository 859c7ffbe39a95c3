//! `dynamic`: dash.js v5 DYNAMIC strategy. Starts on the ThroughputRule; switches to BOLA (dash.js
//! BolaRule = BOLA-E) when the buffer reaches `switch_on` (bufferTimeDefault, 18 s) and back to
//! throughput when the buffer falls below `switch_off` (half of it, 9 s). Only one of the two is
//! active; the InsufficientBufferRule (0.7, first 2 segments ignored) caps whichever is active
//! (lowest bitrate wins, as in ABRRulesCollection), and the AbandonRequestsRule (1.8 x segment
//! duration, 500 ms grace, 6 samples, only while the buffer < switch_on) runs in `on_progress`.
//! dash.js v4 behaviour: `switch_on = 12s` (stableBufferTime), `switch_off = 6s`, `ibr_factor = 0.5`
//! (v4 also compared with a strict `>`; not modelled). The hysteresis is applied at each decision
//! and at each finished download (buffer level right after it), as dash.js does on buffer events.

use super::bolae::{BolaE, BolaECfg, Upswitch};
use super::estimators::{float_in, s, CountEwma, Estimator, Ewma, Sample};
use super::throughput::{Abandon, DashIbr, RateRule, ABANDON_PARAMS, IBR_PARAMS};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord, Progress};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{from_secs_f64, Ns};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "switch_on",
        unit: Unit::Duration,
        default: Default::Int(18_000_000_000),
        doc: "switch to BOLA when the buffer >= this (dash.js v5 bufferTimeDefault 18 s; v4 stableBufferTime 12 s); also BOLA's buffer target floor and the abandonment buffer limit",
    },
    ParamSpec {
        name: "switch_off",
        unit: Unit::Duration,
        default: Default::Context("switch_on / 2 (9 s)"),
        doc: "switch back to throughput when the buffer < this (dash.js: 0.5 x bufferTimeDefault)",
    },
    ParamSpec {
        name: "safety",
        unit: Unit::Float,
        default: Default::Float(0.9),
        doc: "bandwidth safety factor of the throughput rule and of BOLA's cap (dash.js 0.9)",
    },
    IBR_PARAMS[0],
    IBR_PARAMS[1],
    IBR_PARAMS[2],
    ABANDON_PARAMS[0],
    ABANDON_PARAMS[1],
    ABANDON_PARAMS[2],
    ABANDON_PARAMS[3],
    ParamSpec {
        name: "bola_upswitch",
        unit: Unit::Choice(&["bola-o", "bola-u", "none"]),
        default: Default::Str("bola-o"),
        doc: "BOLA-E's up-switch cap (see bolae `upswitch`): bola-o (dash.js, Sabre -ao), bola-u (Sabre's default), none",
    },
    ParamSpec {
        name: "bola_abandon",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "while BOLA is active, abandon by BOLA-E's score rule (bolae `abandon`; Sabre dynamicdash unless -noa) instead of the throughput rule",
    },
    ParamSpec {
        name: "sabre_details",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "follow Sabre's DynamicDash: strict > switch_on, hysteresis only at decisions, only the active rule decides (BOLA-E starts in STARTUP when first used), BOLA-E with bolae `sabre_details` and Sabre's IBR, the throughput rule latency-aware with Sabre's IBR (0.9 x0.9 per call, floor 0.5; `ibr` switches both, the dash.js IBR parameters are unused), throughput abandonment only while it is active",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "dynamic",
    summary: "dash.js v5 DYNAMIC: throughput rule below 18 s <-> BOLA-E above, hysteresis 9 s, with IBR and abandonment",
    reference: "dash.js v5 AbrController/_updateDynamicAbrStrategy, BolaRule, ThroughputRule, InsufficientBufferRule, AbandonRequestsRule; Spiteri et al. MMSys'18",
    params: PARAMS,
    build,
};

fn build(p: &Params, v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let on = p.req_u64(PARAMS, "switch_on")?;
    let off = p.u64(PARAMS, "switch_off")?.unwrap_or(on / 2);
    if off > on {
        return Err(crate::params::perr("switch_off", "expected <= switch_on"));
    }
    let safety = float_in(p, PARAMS, "safety", 0.0, 10.0)?;
    let ibr = if p.bool(PARAMS, "ibr")? {
        Some(DashIbr {
            factor: float_in(p, PARAMS, "ibr_factor", 0.0, 10.0)?,
            ignore: p.req_u64(PARAMS, "ibr_ignore")? as usize,
        })
    } else {
        None
    };
    let abandon = if p.bool(PARAMS, "abandon")? {
        Some(Abandon::new(
            float_in(p, PARAMS, "abandon_multiplier", 1.0, 100.0)?,
            p.req_u64(PARAMS, "abandon_grace")?,
            p.req_u64(PARAMS, "abandon_min_samples")? as usize,
            safety,
            Some(on),
        ))
    } else {
        None
    };
    let mut d = Dynamic::new(v, on, off, safety, ibr, abandon)?;
    d.set_bola_options(
        v,
        Upswitch::from_name(p.choice(PARAMS, "bola_upswitch")?),
        p.bool(PARAMS, "bola_abandon")?,
        p.bool(PARAMS, "sabre_details")?,
    )?;
    Ok(Box::new(d))
}

pub struct Dynamic {
    seg: Ns,
    on: Ns,
    off: Ns,
    pub(crate) using_bola: bool,
    tput: RateRule,
    bola: BolaE,
    bola_cfg: BolaECfg,
    ibr: Option<DashIbr>,
    abandon: Option<Abandon>,
    bola_abandon: bool,
    sabre: bool,
    tput_ibr_safety: f64,
}

impl Dynamic {
    pub fn new(
        v: &Video,
        on: Ns,
        off: Ns,
        safety: f64,
        ibr: Option<DashIbr>,
        abandon: Option<Abandon>,
    ) -> Result<Dynamic, ParamError> {
        let tput = RateRule {
            est: Estimator::Ewma(Ewma::new(3.0, 8.0)),
            safety,
            sample: Sample::FirstByte,
            latency_aware: false,
            lat: CountEwma::new(1.0, 2.0),
        };
        let bola_cfg = BolaECfg {
            buffer_target: s(on),
            min_buffer: 10.0,
            per_level: 2.0,
            safety,
            ibr: false,
            ibr_safety: 0.9,
            ibr_safety_min: 0.5,
            decay: 0.99,
            metric: None,
            upswitch: Upswitch::O,
            abandon: false,
            voxel_abandon: false,
            sabre_details: false,
        };
        let bola = BolaE::new(bola_cfg.clone(), v)?;
        Ok(Dynamic {
            seg: v.segment_duration,
            on,
            off,
            using_bola: false,
            tput,
            bola,
            bola_cfg,
            ibr,
            abandon,
            bola_abandon: false,
            sabre: false,
            tput_ibr_safety: 0.9,
        })
    }

    /// BOLA-E's up-switch cap, its abandonment rule while BOLA is active, Sabre's DynamicDash
    /// details (rebuilds the inner BOLA-E; call before the first decision).
    pub fn set_bola_options(
        &mut self,
        v: &Video,
        upswitch: Upswitch,
        abandon: bool,
        sabre: bool,
    ) -> Result<(), ParamError> {
        let mut cfg = self.bola_cfg.clone();
        cfg.upswitch = upswitch;
        cfg.abandon = abandon;
        cfg.sabre_details = sabre;
        if sabre {
            // Sabre's BolaEnh inside DynamicDash: its own IBR (if `ibr`), no decay, no safety
            // factor (the raw estimate)
            cfg.ibr = self.ibr.is_some();
            cfg.decay = 1.0;
            cfg.safety = 1.0;
        }
        self.bola = BolaE::new(cfg.clone(), v)?;
        self.bola_cfg = cfg;
        self.bola_abandon = abandon;
        self.sabre = sabre;
        // Sabre's ThroughputRule picks latency-aware
        self.tput.latency_aware = sabre;
        if sabre {
            if let Some(a) = self.abandon.as_mut() {
                a.buffer_limit = None;
            }
        }
        Ok(())
    }
}

impl Dynamic {
    /// The hysteresis, applied on every buffer level we see (dash.js: on every buffer-level event).
    fn update_strategy(&mut self, buffer: Ns) {
        let on = if self.sabre { buffer > self.on } else { buffer >= self.on };
        if !self.using_bola && on {
            self.using_bola = true;
        } else if self.using_bola && buffer < self.off {
            self.using_bola = false;
        }
    }
}

impl Abr for Dynamic {
    fn name(&self) -> &'static str {
        "dynamic"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        self.update_strategy(obs.buffer);
        // BOLA-E keeps its state (placeholder, startup) whether or not it is active (Sabre: only
        // the active rule is asked).
        let bd = if self.using_bola || !self.sabre { Some(self.bola.choose(obs)) } else { None };
        let (mut q, mut reason, delay) = match bd {
            Some(bd) if self.using_bola => (bd.rung, format!("[bola] {}", bd.reason), bd.delay),
            _ => {
                let (q, r) = self.tput.choose(obs);
                (q, format!("[throughput] {r}"), 0)
            }
        };
        if self.sabre {
            // Sabre's ThroughputRule IBR (BOLA-E has its own): safe bits = s (buffer - latency)
            // x estimate against nominal bitrate x segment duration; s = 0.9, x0.9 per call,
            // floor 0.5
            if let (false, Some(_), Some(t)) = (self.using_bola, &self.ibr, self.tput.estimate()) {
                let lat = self.tput.lat.estimate_max().unwrap_or(0.0);
                let safe = self.tput_ibr_safety * (s(obs.buffer) - lat) * t;
                self.tput_ibr_safety = (self.tput_ibr_safety * 0.9).max(0.5);
                let seg = s(obs.video.seg_duration(obs.segment));
                let q0 = q;
                while q > 0 && obs.video.bitrates_bps[q] as f64 * seg > safe {
                    q -= 1;
                }
                if q < q0 {
                    reason.push_str(&format!("; Sabre IBR -> rung {q}"));
                }
            }
        } else if let Some(ibr) = &self.ibr {
            if let Some((cap, why)) = ibr.cap(obs, self.tput.estimate()) {
                if cap < q {
                    q = cap;
                    reason = format!("{reason}; {why} -> rung {q}");
                }
            }
        }
        Decision { rung: q, delay, reason }
    }
    fn on_download(&mut self, obs: &AbrObs, rec: &DownloadRecord) {
        // obs.buffer is the level right after this segment arrived
        if !self.sabre {
            self.update_strategy(obs.buffer);
        }
        self.tput.on_download(rec);
        self.bola.on_download(obs, rec);
    }
    fn on_progress(&mut self, obs: &AbrObs, p: &Progress) -> Option<usize> {
        if self.using_bola && self.bola_abandon {
            return self.bola.on_progress(obs, p);
        }
        if self.sabre && self.using_bola {
            return None;
        }
        self.abandon.as_mut()?.check(obs, p)
    }
    fn preferred_buffer_max(&self) -> Option<Ns> {
        // dash.js requests the next segment while the buffer is below bufferTimeDefault (BOLA's
        // target), so the buffer peaks one segment above it (bufferTimeAtTopQuality: not modelled)
        Some(from_secs_f64(self.bola.target()) + self.seg)
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::{MS, SEC};

    #[test]
    fn switches_at_18_and_back_below_9() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let mut a = Dynamic::new(&v, 18 * SEC, 9 * SEC, 0.9, None, None).unwrap();
        // one sample of 3 Mbit/s (1.5 MB in 4 s): throughput rule 2.7 -> rung 1
        let h = [rec(0, 0, 1_500_000, 0, 100, 4000)];
        a.on_download(&obs(&v, 0, 0, None, &[]), &h[0]);
        let mut step = |ms: u64| {
            let d = a.choose(&obs(&v, 1, ms * MS, Some(1), &h));
            (a.using_bola, d)
        };
        let (b, d) = step(10_000);
        assert!(!b && d.reason.starts_with("[throughput]") && d.rung == 1, "{}", d.reason);
        assert!(!step(17_999).0); // below 18 s: still throughput
        let (b, d) = step(18_000); // >= 18 s: BOLA
        assert!(b && d.reason.starts_with("[bola]"), "{}", d.reason);
        assert!(step(12_000).0); // hysteresis: stays BOLA down to 9 s
        assert!(step(9_000).0); // 9 s is not < 9 s
        let (b, d) = step(8_999); // < 9 s: back to throughput
        assert!(!b && d.reason.starts_with("[throughput]"), "{}", d.reason);
        assert!(!step(17_000).0);
        // v4 thresholds through params: 12 s / 6 s
        let p = Params::new().with("switch_on", 12 * SEC).with("switch_off", 6 * SEC);
        let mut a = build(&p, &v).unwrap();
        assert!(a.choose(&obs(&v, 1, 12 * SEC, Some(1), &h)).reason.starts_with("[bola]"));
        assert!(a.choose(&obs(&v, 1, 6 * SEC, Some(1), &h)).reason.starts_with("[bola]"));
        assert!(a.choose(&obs(&v, 1, 5 * SEC, Some(1), &h)).reason.starts_with("[throughput]"));
    }

    #[test]
    fn sabre_details_strict_threshold_and_bola_options() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let h = [rec(0, 0, 1_500_000, 0, 100, 4000)];
        let p = Params::new()
            .with("switch_on", 10 * SEC)
            .with("switch_off", 5 * SEC)
            .with("sabre_details", true)
            .with("bola_upswitch", "bola-u")
            .with("bola_abandon", true);
        let mut a = build(&p, &v).unwrap();
        a.on_download(&obs(&v, 0, 0, None, &[]), &h[0]);
        // Sabre's DynamicDash: BOLA only when the buffer is strictly above 10 s
        assert!(a.choose(&obs(&v, 1, 10 * SEC, Some(1), &h)).reason.starts_with("[throughput]"));
        // first BOLA decision: BOLA-E still in STARTUP (it was never asked before)
        let d = a.choose(&obs(&v, 1, 10 * SEC + MS, Some(1), &h));
        assert!(d.reason.starts_with("[bola] startup"), "{}", d.reason);
        assert!(build(&Params::new().with("bola_upswitch", "x"), &v).is_err());
    }

    #[test]
    fn ibr_caps_and_abandonment_is_wired() {
        let v = cbr(&[1000, 2000, 4000], 4, 50);
        let mut a = build(&Params::new(), &v).unwrap();
        // two samples of 5 Mbit/s (2.5 MB in 4 s) -> tput rule 4.5 -> rung 2; IBR applies after 2
        // segments: cap = 5*0.7*B/4 s; B = 2 s -> 1.75 Mbit/s -> rung 0.
        let h = [rec(0, 0, 2_500_000, 0, 100, 4000), rec(1, 0, 2_500_000, 5 * SEC, 100, 4000)];
        a.on_download(&obs(&v, 0, 0, None, &[]), &h[0]);
        a.on_download(&obs(&v, 1, 0, None, &[]), &h[1]);
        assert_eq!(a.choose(&obs(&v, 2, 8 * SEC, Some(2), &h)).rung, 2); // 5*0.7*2 = 7 >= 4
        assert_eq!(a.choose(&obs(&v, 2, 2 * SEC, Some(2), &h)).rung, 0);
        // abandonment: rung 2 segment (2 MB), first byte at 100 ms; 6 reports; at 1.1 s only
        // 100_000 B arrived -> projected 2e6*1.0/1e5 = 20 s > 1.8*4 = 7.2 s; tput 0.8 Mbit/s*0.9
        // -> rung 0; remaining 1.9 MB > 0.5 MB -> abandon to 0.
        let o = obs(&v, 2, 4 * SEC, Some(2), &h);
        let pr = |ms: u64, got: u64| Progress {
            now: ms * MS,
            segment: 2,
            rung: 2,
            bytes_total: 2_000_000,
            bytes_received: got,
            t_request: 0,
            t_first_byte: Some(100 * MS),
        };
        for t in [200, 300, 400, 500, 600] {
            assert_eq!(a.on_progress(&o, &pr(t, 10_000)), None);
        }
        assert_eq!(a.on_progress(&o, &pr(1100, 100_000)), Some(0));
    }
}
