//! `bb`: the buffer-based baseline of Pensieve (after Huang et al.): reservoir 5 s, cushion 10 s.
//!
//! B < reservoir -> lowest rung; B >= reservoir + cushion -> highest; in between the rung index
//! rises linearly: floor((n_rungs - 1) * (B - reservoir) / cushion).

use super::estimators::s;
use super::{Abr, AbrEntry, AbrObs, Decision};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "reservoir",
        unit: Unit::Duration,
        default: Default::Int(5_000_000_000),
        doc: "below this buffer pick the lowest rung (Pensieve BB RESERVOIR 5 s)",
    },
    ParamSpec {
        name: "cushion",
        unit: Unit::Duration,
        default: Default::Int(10_000_000_000),
        doc: "the rung rises linearly over [reservoir, reservoir + cushion] (Pensieve BB CUSHION 10 s)",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "bb",
    summary: "Pensieve's buffer-based baseline: rung linear in the buffer between 5 s and 15 s",
    reference: "Mao et al. SIGCOMM'17 (Pensieve test/bb); Huang et al. SIGCOMM'14",
    params: PARAMS,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let cushion = s(p.req_u64(PARAMS, "cushion")?);
    if cushion <= 0.0 {
        return Err(crate::params::perr("cushion", "expected > 0"));
    }
    Ok(Box::new(Bb { reservoir: s(p.req_u64(PARAMS, "reservoir")?), cushion }))
}

pub struct Bb {
    reservoir: f64,
    cushion: f64,
}

impl Abr for Bb {
    fn name(&self) -> &'static str {
        "bb"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let b = s(obs.buffer);
        let top = obs.video.n_rungs() - 1;
        let q = if b < self.reservoir {
            0
        } else if b >= self.reservoir + self.cushion {
            top
        } else {
            ((top as f64) * (b - self.reservoir) / self.cushion).floor() as usize
        };
        Decision {
            rung: q.min(top),
            delay: 0,
            reason: format!("B {b:.2}s in [{}, {}] -> rung {q}", self.reservoir, self.reservoir + self.cushion),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs};
    use super::*;
    use crate::time::MS;

    #[test]
    fn bb_linear_map() {
        let v = cbr(&[300, 750, 1200, 1850, 2850, 4300], 4, 10);
        let mut a = build(&Params::new(), &v).unwrap();
        let mut d = |ms: u64| a.choose(&obs(&v, 1, ms * MS, Some(0), &[])).rung;
        assert_eq!(d(4_999), 0); // below the reservoir
        assert_eq!(d(5_000), 0); // 5*(0)/10 = 0
        assert_eq!(d(7_000), 1); // 5*2/10 = 1.0 -> 1
        assert_eq!(d(10_000), 2); // 5*5/10 = 2.5 -> 2
        assert_eq!(d(14_900), 4); // 5*9.9/10 = 4.95 -> 4
        assert_eq!(d(15_000), 5); // reservoir + cushion -> top
    }
}
