//! `huang`: the "Huang-style" buffer ABR of the Sprint evaluation (Sprint sec. V-A), in the reading
//! of ../shared/reference/claims/sprint.md sec. 1.9 and pitfall P6.
//!
//! Target rung `k*(B) = min(K - 1, floor(B / step))` (step 10 s: up one level per 10 s of buffer
//! gained, down one per 10 s lost). The ABR switches to k* only if k* differs from the current
//! rung **and** from the rung used before the current one ("never switches back to the last
//! bitrate": no immediate reversal); otherwise it keeps the current rung. It starts at rung 0 and
//! prefers a 240 s maximum buffer (Huang et al.'s), larger than step x K so that a ladder whose
//! top exceeds the fair share never fills the buffer.
//!
//! `buffer` is the other reading of the same sentence (a moving anchor with one step of
//! hysteresis); see docs/models/abr-huang.md.

use super::estimators::s;
use super::{Abr, AbrEntry, AbrObs, Decision};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::Ns;
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "step",
        unit: Unit::Duration,
        default: Default::Int(10_000_000_000),
        doc: "buffer per level: target rung = min(top, floor(buffer / step)) (Sprint sec. V-A: 10 video-seconds)",
    },
    ParamSpec {
        name: "buffer_max",
        unit: Unit::Duration,
        default: Default::Int(240_000_000_000),
        doc: "maximum buffer this ABR asks the player for (Huang et al.'s 240 s; must exceed step x rungs)",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "huang",
    summary:
        "Sprint's Huang-style buffer ABR: target rung floor(buffer / 10 s), no immediate switch back, 240 s buffer",
    reference: "Sprint (Arye, Sen, Freedman, arXiv 1901.00038) sec. V-A, after Huang et al. SIGCOMM'14",
    params: PARAMS,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let step = p.req_u64(PARAMS, "step")?;
    if step == 0 {
        return Err(crate::params::perr("step", "expected > 0"));
    }
    let buffer_max = p.req_u64(PARAMS, "buffer_max")?;
    if buffer_max == 0 {
        return Err(crate::params::perr("buffer_max", "expected > 0"));
    }
    Ok(Box::new(Huang { step, buffer_max, current: 0, before: None }))
}

pub struct Huang {
    step: Ns,
    buffer_max: Ns,
    /// The rung in use (0 at start).
    current: usize,
    /// The rung used before the current one (None until the first switch).
    before: Option<usize>,
}

impl Abr for Huang {
    fn name(&self) -> &'static str {
        "huang"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let top = obs.video.n_rungs() - 1;
        let target = ((obs.buffer / self.step) as usize).min(top);
        let from = self.current;
        let reason = if target == from {
            format!("B {:.2}s -> k* {target}: stay", s(obs.buffer))
        } else if Some(target) == self.before {
            format!("B {:.2}s -> k* {target} = rung before {from}: no switch back", s(obs.buffer))
        } else {
            self.before = Some(from);
            self.current = target;
            format!("B {:.2}s -> k* {target}: {from} -> {target}", s(obs.buffer))
        };
        Decision { rung: self.current.min(top), delay: 0, reason }
    }
    fn preferred_buffer_max(&self) -> Option<Ns> {
        Some(self.buffer_max)
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs};
    use super::*;
    use crate::time::{MS, SEC};

    #[test]
    fn target_rung_and_no_immediate_reversal() {
        let v = cbr(&[300, 750, 1200, 1850, 2850, 4300], 4, 10);
        let mut a = build(&Params::new(), &v).unwrap();
        assert_eq!(a.preferred_buffer_max(), Some(240 * SEC));
        let mut d = |ms: u64| a.choose(&obs(&v, 1, ms * MS, Some(0), &[])).rung;
        assert_eq!(d(0), 0); // start at rung 0: floor(0 / 10) = 0
        assert_eq!(d(9_999), 0); // floor(9.999 / 10) = 0
        assert_eq!(d(10_000), 1); // floor(10 / 10) = 1: 0 -> 1 (before = 0)
        assert_eq!(d(9_000), 1); // k* = 0 = the rung before 1: no switch back
        assert_eq!(d(35_000), 3); // k* = 3 (jumps are allowed): 1 -> 3 (before = 1)
        assert_eq!(d(25_000), 2); // k* = 2: neither 3 nor 1 -> 3 -> 2 (before = 3)
        assert_eq!(d(30_000), 2); // k* = 3 = the rung before 2: stays at 2
        assert_eq!(d(15_000), 1); // k* = 1: 2 -> 1 (before = 2)
        assert_eq!(d(20_000), 1); // k* = 2 = before: stays
        assert_eq!(d(0), 0); // k* = 0: 1 -> 0 (before = 1)
        assert_eq!(d(999_000), 5); // floor(99.9) = 99, capped at the top rung 5: 0 -> 5
        assert_eq!(d(55_000), 5); // k* = 5 = current
        assert_eq!(d(45_000), 4); // k* = 4: 5 -> 4 (before = 5)
        assert_eq!(d(50_000), 4); // k* = 5 = before: stays at 4
        assert_eq!(d(60_000), 4); // k* = min(5, 6) = 5 = before: stays at 4
    }

    #[test]
    fn parameters() {
        let v = cbr(&[300, 750, 1200], 2, 10);
        let mut a =
            build(&Params::new().with("step", 4_000_000_000u64).with("buffer_max", 60_000_000_000u64), &v).unwrap();
        assert_eq!(a.preferred_buffer_max(), Some(60 * SEC));
        // step 4 s: 7.9 s -> floor(1.975) = 1; 8 s -> 2 (the top of 3 rungs)
        assert_eq!(a.choose(&obs(&v, 1, 7_900 * MS, Some(0), &[])).rung, 1);
        assert_eq!(a.choose(&obs(&v, 2, 8_000 * MS, Some(1), &[])).rung, 2);
        assert_eq!(build(&Params::new().with("step", 0), &v).err().unwrap().param, "step");
        assert_eq!(build(&Params::new().with("buffer_max", 0), &v).err().unwrap().param, "buffer_max");
    }
}
