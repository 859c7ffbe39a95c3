//! `none`: no flow control. The provider's flows keep the weight their congestion controller was
//! configured with.

use super::{ClientObs, FlowController, FlowCtlCtx, FlowCtlEntry, FlowDecision};
use crate::params::{ParamError, ParamSpec, Params};
use crate::time::{Ns, NEVER};

const PARAMS: &[ParamSpec] = &[];

pub const ENTRY: FlowCtlEntry = FlowCtlEntry {
    name: "none",
    summary: "no controller: flows keep their configured weight",
    reference: "-",
    params: PARAMS,
    build,
};

fn build(_p: &Params, _ctx: &FlowCtlCtx) -> Result<Box<dyn FlowController>, ParamError> {
    Ok(Box::new(NoControl))
}

/// The no-op controller.
pub struct NoControl;

impl FlowController for NoControl {
    fn name(&self) -> &'static str {
        "none"
    }
    fn update(&mut self, _now: Ns, obs: &[ClientObs]) -> FlowDecision {
        FlowDecision { weights: vec![None; obs.len()], next: NEVER }
    }
}
