//! `panda`: PANDA, probe AND adapt (Li et al., IEEE JSAC 2014).
//!
//! Per request n, with T the actual inter-request time (s) since request n-1 and x~ the TCP
//! throughput measured on segment n-1 (size / download time, bit/s):
//! 1. estimate: x^ += T * kappa * (w - max(0, x^ - x~ + w))   (additive-increase probing)
//! 2. smooth:   y^ -= T * alpha * (y^ - x^)                    (EWMA, T*alpha capped at 1)
//! 3. quantize with a dead zone: r_up = highest rung <= y^ * (1 - epsilon), r_down = highest rung
//!    <= y^; keep the previous rung if r_up <= prev <= r_down, go to r_up if prev < r_up, else to
//!    r_down.
//! 4. schedule: target inter-request time T^ = r * tau / y^ + beta * (B - B_min); the next request
//!    is issued at max(previous request + T^, end of the previous download), i.e. `Decision.delay`
//!    = max(0, t_request(n-1) + T^(n-1) - now).
//!
//! Defaults: kappa 0.14 /s, w 0.3 Mbit/s, alpha 0.2 /s, beta 0.2, epsilon 0.15, B_min 26 s.
//! x^ and y^ start at the first measured throughput; the first segment is rung 0; x^ is kept at or
//! above 1 kbit/s.

use super::estimators::{float_in, mbps, rung_for_rate, s, Sample, SAMPLE_CHOICES};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{from_secs_f64, Ns};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "kappa",
        unit: Unit::Float,
        default: Default::Float(0.14),
        doc: "probing convergence rate, 1/s (PANDA kappa 0.14)",
    },
    ParamSpec {
        name: "w",
        unit: Unit::Rate,
        default: Default::Int(300_000),
        doc: "probing additive increase (PANDA w 0.3 Mbit/s)",
    },
    ParamSpec {
        name: "alpha",
        unit: Unit::Float,
        default: Default::Float(0.2),
        doc: "smoothing rate, 1/s (PANDA alpha 0.2)",
    },
    ParamSpec {
        name: "beta",
        unit: Unit::Float,
        default: Default::Float(0.2),
        doc: "buffer convergence rate of the scheduler (PANDA beta 0.2)",
    },
    ParamSpec {
        name: "epsilon",
        unit: Unit::Float,
        default: Default::Float(0.15),
        doc: "dead-zone margin of the up-switch (PANDA epsilon 0.15)",
    },
    ParamSpec {
        name: "buffer_min",
        unit: Unit::Duration,
        default: Default::Int(26_000_000_000),
        doc: "buffer the scheduler converges to (PANDA B_min 26 s)",
    },
    ParamSpec {
        name: "sample",
        unit: Unit::Choice(SAMPLE_CHOICES),
        default: Default::Str("request"),
        doc: "TCP throughput measurement x~ (PANDA: segment size / download duration)",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "panda",
    summary: "PANDA: probe-and-adapt estimate, EWMA smoothing, dead-zone quantizer, target inter-request time",
    reference: "Li et al., Probe and Adapt: Rate Adaptation for HTTP Video Streaming At Scale, IEEE JSAC 32(4), 2014",
    params: PARAMS,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    Ok(Box::new(Panda {
        kappa: float_in(p, PARAMS, "kappa", 0.0, 100.0)?,
        w: p.req_u64(PARAMS, "w")? as f64,
        alpha: float_in(p, PARAMS, "alpha", 0.0, 100.0)?,
        beta: float_in(p, PARAMS, "beta", 0.0, 100.0)?,
        eps: float_in(p, PARAMS, "epsilon", 0.0, 1.0)?,
        bmin: s(p.req_u64(PARAMS, "buffer_min")?),
        sample: Sample::from_name(p.choice(PARAMS, "sample")?),
        x_hat: None,
        y_hat: 0.0,
        x_tilde: 0.0,
        last_req: 0,
        t_hat: 0.0,
    }))
}

pub struct Panda {
    kappa: f64,
    w: f64,
    alpha: f64,
    beta: f64,
    eps: f64,
    bmin: f64,
    sample: Sample,
    x_hat: Option<f64>,
    y_hat: f64,
    x_tilde: f64,
    last_req: Ns,
    t_hat: f64,
}

impl Panda {
    pub fn state(&self) -> (Option<f64>, f64, f64) {
        (self.x_hat, self.y_hat, self.t_hat)
    }
}

impl Abr for Panda {
    fn name(&self) -> &'static str {
        "panda"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let Some(mut x_hat) = self.x_hat else {
            return Decision { rung: 0, delay: 0, reason: "no throughput sample yet -> rung 0".into() };
        };
        let v = obs.video;
        let br = &v.bitrates_bps;
        let target = self.last_req as f64 + self.t_hat * 1e9;
        let delay = (target - obs.now as f64).max(0.0) / 1e9;
        let t = s((obs.now + from_secs_f64(delay)).saturating_sub(self.last_req));
        x_hat += t * self.kappa * (self.w - (x_hat - self.x_tilde + self.w).max(0.0));
        x_hat = x_hat.max(1e3);
        self.y_hat -= (t * self.alpha).min(1.0) * (self.y_hat - x_hat);
        self.x_hat = Some(x_hat);
        let y = self.y_hat;
        let r_up = rung_for_rate(br, y * (1.0 - self.eps));
        let r_down = rung_for_rate(br, y);
        let prev = obs.last_rung.unwrap_or(0).min(br.len() - 1);
        let q = if prev < r_up {
            r_up
        } else if prev <= r_down {
            prev
        } else {
            r_down
        };
        let b = (s(obs.buffer) - delay).max(0.0);
        self.t_hat =
            br[q] as f64 * s(v.seg_duration(obs.segment.min(v.n_segments() - 1))) / y + self.beta * (b - self.bmin);
        Decision {
            rung: q,
            delay: from_secs_f64(delay),
            reason: format!(
                "T {t:.3}s x^ {} y^ {} dead zone [{r_up}, {r_down}] prev {prev} -> {q}; next T^ {:.3}s{}",
                mbps(x_hat),
                mbps(y),
                self.t_hat,
                if delay > 0.0 { format!("; wait {delay:.3}s") } else { String::new() }
            ),
        }
    }
    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        self.last_req = rec.t_request;
        if rec.abandoned {
            return;
        }
        self.x_tilde = self.sample.of(rec).0;
        if self.x_hat.is_none() {
            self.x_hat = Some(self.x_tilde);
            self.y_hat = self.x_tilde;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::{MS, SEC};

    #[test]
    fn probe_smooth_quantize_schedule() {
        let v = cbr(&[500, 1000, 2000, 4000], 2, 50);
        let mut a = build(&Params::new(), &v).unwrap();
        assert_eq!(a.choose(&obs(&v, 0, 0, None, &[])).rung, 0);
        // segment 0: 250 kB requested at 0, last byte 1.0 s -> x~ = 2 Mbit/s; x^ = y^ = 2.
        let h1 = [rec(0, 0, 250_000, 0, 0, 1000)];
        a.on_download(&obs(&v, 0, 0, None, &[]), &h1[0]);
        // decision at 1.0 s (T^ = 0 -> no wait): T = 1.0 s; x^ += 1*0.14*(0.3 - max(0, 2-2+0.3)) = 0
        // -> 2.0; y^ = 2.0. r_up = rung(2*0.85 = 1.7) = 1, r_down = rung(2.0) = 2; prev 0 < 1 -> 1.
        // T^ = 1*2/2 + 0.2*(2 - 26) = -3.8 s
        let d = a.choose(&obs(&v, 1, 2 * SEC, Some(0), &h1));
        assert_eq!((d.rung, d.delay), (1, 0), "{}", d.reason);
        // segment 1: 250 kB requested at 1.0 s, last byte 1.5 s -> x~ = 4 Mbit/s.
        let h2 = [h1[0], rec(1, 1, 250_000, SEC, 0, 500)];
        a.on_download(&obs(&v, 1, 0, None, &[]), &h2[1]);
        // decision at 1.5 s: target 1.0 - 3.8 < now -> no wait; T = 0.5 s.
        // x^ = 2 + 0.5*0.14*(0.3 - max(0, 2 - 4 + 0.3)) = 2 + 0.021 = 2.021 Mbit/s
        // y^ = 2 - 0.5*0.2*(2 - 2.021) = 2.0021; dead zone [rung(1.7018) = 1, rung(2.0021) = 2];
        // prev 1 inside -> 1. B = 36 s: T^ = 1*2/2.0021 + 0.2*(36 - 26) = 0.99895 + 2 = 2.99895 s
        let d = a.choose(&obs(&v, 2, 36 * SEC, Some(1), &h2));
        assert_eq!((d.rung, d.delay), (1, 0), "{}", d.reason);
        // segment 2 requested at 1.5 s, done at 2.0 s; decision at 2.0 s must wait until
        // 1.5 + 2.99895 = 4.49895 s -> delay 2.49895 s.
        let h3 = [h2[0], h2[1], rec(2, 1, 250_000, 1_500 * MS, 0, 500)];
        a.on_download(&obs(&v, 2, 0, None, &[]), &h3[2]);
        let d = a.choose(&obs(&v, 3, 36 * SEC, Some(1), &h3));
        assert!((d.delay as f64 / 1e9 - 2.49895).abs() < 1e-4, "{} {}", d.delay, d.reason);
        // T = 2.99895 s; x~ = 4: x^ = 2.021 + 2.99895*0.14*(0.3 - 0) = 2.021 + 0.12596 = 2.14696;
        // y^ = 2.0021 - min(0.5998, 1)*(2.0021 - 2.14696) = 2.0021 + 0.08689 = 2.08899;
        // dead zone [rung(1.7756) = 1, rung(2.089) = 2] -> stay 1
        assert_eq!(d.rung, 1, "{}", d.reason);
    }
}
