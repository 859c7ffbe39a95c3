//! Random loss on a link's ingress: i.i.d. (Bernoulli) and two-state bursty (Gilbert-Elliott).

use crate::rng::Rng;
use serde::Deserialize;

/// Loss model configuration (scenario `loss = {...}` of a link).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum LossCfg {
    /// Drop each packet independently with probability `rate` (Mahimahi `mm-loss`).
    Iid { rate: f64 },
    /// Two states, good and bad. In the bad state a packet is dropped with probability `rate`
    /// (default 1); per packet, the state moves good->bad with probability `p_enter` and bad->good
    /// with `p_leave` (the state update precedes the drop decision). Mean loss =
    /// rate * p_enter / (p_enter + p_leave).
    Bursty {
        #[serde(default = "one")]
        rate: f64,
        p_enter: f64,
        p_leave: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl LossCfg {
    pub fn validate(&self) -> Result<(), String> {
        let prob = |name: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(format!("{name}: expected a probability in [0, 1], found {p}"))
            }
        };
        match *self {
            LossCfg::Iid { rate } => prob("rate", rate),
            LossCfg::Bursty { rate, p_enter, p_leave } => {
                prob("rate", rate)?;
                prob("p_enter", p_enter)?;
                prob("p_leave", p_leave)
            }
        }
    }
    /// Long-run loss probability.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossCfg::Iid { rate } => rate,
            LossCfg::Bursty { rate, p_enter, p_leave } => {
                if p_enter + p_leave == 0.0 {
                    0.0
                } else {
                    rate * p_enter / (p_enter + p_leave)
                }
            }
        }
    }
}

/// A loss process with its own random stream.
#[derive(Clone, Debug)]
pub struct Loss {
    cfg: LossCfg,
    rng: Rng,
    bad: bool,
}

impl Loss {
    pub fn new(cfg: LossCfg, rng: Rng) -> Loss {
        Loss { cfg, rng, bad: false }
    }
    /// Should this packet be dropped?
    #[inline]
    pub fn drop_next(&mut self) -> bool {
        match self.cfg {
            LossCfg::Iid { rate } => rate > 0.0 && self.rng.chance(rate),
            LossCfg::Bursty { rate, p_enter, p_leave } => {
                self.bad = if self.bad { !self.rng.chance(p_leave) } else { self.rng.chance(p_enter) };
                self.bad && self.rng.chance(rate)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn iid_and_bursty_rates() {
        let mut l = Loss::new(LossCfg::Iid { rate: 0.1 }, Rng::from_seed(3));
        let n = 200_000;
        let d = (0..n).filter(|_| l.drop_next()).count() as f64 / n as f64;
        assert!((d - 0.1).abs() < 0.005, "{d}");
        let cfg = LossCfg::Bursty { rate: 1.0, p_enter: 0.01, p_leave: 0.25 };
        let mut b = Loss::new(cfg.clone(), Rng::from_seed(4));
        let seq: Vec<bool> = (0..n).map(|_| b.drop_next()).collect();
        let d = seq.iter().filter(|x| **x).count() as f64 / n as f64;
        assert!((d - cfg.mean_loss()).abs() < 0.006, "{d} vs {}", cfg.mean_loss());
        // bursts: mean run length of drops = 1/p_leave = 4
        let mut runs = 0;
        let mut in_run = false;
        for x in &seq {
            if *x && !in_run {
                runs += 1;
            }
            in_run = *x;
        }
        let mean_run = seq.iter().filter(|x| **x).count() as f64 / runs as f64;
        assert!((mean_run - 4.0).abs() < 0.4, "{mean_run}");
    }
}
