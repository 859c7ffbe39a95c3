//! `buffer`: the buffer-step ABR of the Sprint evaluation (Sprint, sec. V-A), "modeled after"
//! Huang et al.: every time the buffer rises by 10 media-seconds the rung goes up one level, every
//! time it falls by 10 s it goes down one level, and it "never switches back to the last bitrate".
//!
//! Our reading (the paper gives no code): the rung k and an anchor A (the buffer level at which k
//! was reached, starting at k = 0, A = 0). Up one level when B >= A + step (then A += step); down
//! one level when B <= A - step (then A -= step); at most one level per decision. After an
//! up-switch at A the previous rung comes back only once the buffer has fallen a whole step below
//! A, never on a small dip: that hysteresis is how we implement "never switches back". There is no
//! separate reservoir or cushion: the reservoir is the first step (rung 0 below 10 s) and the
//! cushion is (n_rungs - 1) * step.

use super::estimators::s;
use super::{Abr, AbrEntry, AbrObs, Decision};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "step",
    unit: Unit::Duration,
    default: Default::Int(10_000_000_000),
    doc: "buffer change (media seconds) per one-level switch (Sprint sec. V-A: 10 s)",
}];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "buffer",
    summary: "Sprint's buffer-step ABR: one level up (down) per 10 s of buffer gained (lost), with hysteresis",
    reference: "Sprint (chunk sizing) sec. V-A, after Huang et al. SIGCOMM'14",
    params: PARAMS,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let step = s(p.req_u64(PARAMS, "step")?);
    if step <= 0.0 {
        return Err(crate::params::perr("step", "expected > 0"));
    }
    Ok(Box::new(BufferStep { step, rung: 0, anchor: 0.0 }))
}

pub struct BufferStep {
    step: f64,
    rung: usize,
    anchor: f64,
}

impl Abr for BufferStep {
    fn name(&self) -> &'static str {
        "buffer"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let b = s(obs.buffer);
        let top = obs.video.n_rungs() - 1;
        let from = self.rung;
        if b >= self.anchor + self.step && self.rung < top {
            self.rung += 1;
            self.anchor += self.step;
        } else if b <= self.anchor - self.step && self.rung > 0 {
            self.rung -= 1;
            self.anchor -= self.step;
        }
        Decision {
            rung: self.rung,
            delay: 0,
            reason: format!("B {b:.2}s anchor {:.0}s step {:.0}s: {from} -> {}", self.anchor, self.step, self.rung),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs};
    use super::*;
    use crate::time::SEC;

    #[test]
    fn steps_with_hysteresis() {
        let v = cbr(&[300, 750, 1200, 1850], 4, 10);
        let mut a = build(&Params::new(), &v).unwrap();
        let mut d = |b: u64| a.choose(&obs(&v, 1, b * SEC, None, &[])).rung;
        assert_eq!(d(9), 0); // 9 < 0 + 10
        assert_eq!(d(10), 1); // 10 >= 10 -> 1, anchor 10
        assert_eq!(d(35), 2); // one level per decision: anchor 20
        assert_eq!(d(35), 3); // anchor 30
        assert_eq!(d(45), 3); // top
        assert_eq!(d(21), 3); // 21 > 30 - 10: no switch back on a dip
        assert_eq!(d(20), 2); // 20 <= 30 - 10 -> 2, anchor 20
        assert_eq!(d(15), 2); // 15 > 10
        assert_eq!(d(19), 2); // back up needs 30
        assert_eq!(d(30), 3);
    }
}
