//! `fixed`: always the same rung (param `rung`).

use super::{Abr, AbrEntry, AbrObs, Decision};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "rung",
    unit: Unit::Int,
    default: Default::Int(0),
    doc: "the rung of every segment (0 = lowest bitrate)",
}];

pub const ENTRY: AbrEntry =
    AbrEntry { name: "fixed", summary: "fixed rung, no adaptation", reference: "-", params: PARAMS, build };

fn build(p: &Params, v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let rung = p.req_u64(PARAMS, "rung")? as usize;
    if rung >= v.n_rungs() {
        return Err(crate::params::perr("rung", format!("expected < {} (rungs of video {})", v.n_rungs(), v.name)));
    }
    Ok(Box::new(Fixed { rung }))
}

pub struct Fixed {
    rung: usize,
}

impl Abr for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn choose(&mut self, _obs: &AbrObs) -> Decision {
        Decision { rung: self.rung, delay: 0, reason: format!("fixed rung {}", self.rung) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs};
    use super::*;

    #[test]
    fn fixed_rung_and_range_check() {
        let v = cbr(&[300, 750, 1200], 4, 3);
        let mut a = build(&Params::new().with("rung", 2), &v).unwrap();
        assert_eq!(a.choose(&obs(&v, 0, 0, None, &[])).rung, 2);
        assert_eq!(build(&Params::new().with("rung", 3), &v).err().unwrap().param, "rung");
    }
}
