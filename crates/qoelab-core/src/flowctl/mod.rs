//! Sans-IO flow controllers: per-flow congestion-control weights computed from the state of the
//! video sessions a provider serves (Minerva, SIGCOMM 2019, and later ones).
//!
//! A controller never reads a clock and never touches a flow. Every time it asked for (its
//! `next` wake-up), the driver hands it `now` and one [`ClientObs`] per client of its provider
//! (in a stable order: a client keeps its index; clients that arrive later are appended), and
//! the controller returns a [`FlowDecision`]: per client an optional new weight (with the
//! utility and rate it came from, for the reports) and its next wake-up. The driver applies
//! the weights to every response flow of the client through
//! [`CongestionControl::set_weight`](crate::cc::CongestionControl::set_weight), and again to
//! the flows of any connection opened later (a reconnect).
//!
//! Rates are the controller's business: an observation carries the client's cumulative response
//! bytes and the cumulative time a download was outstanding, so a controller measures the rate
//! over whatever windows it chooses by differencing two observations.
//!
//! Adding a controller: one file with `const PARAMS` (published defaults), the controller,
//! `pub const ENTRY: FlowCtlEntry` and hand-computed unit tests; one line in [`REGISTRY`]; a page
//! docs/models/flow_controller-<name>.md.

pub mod minerva;
pub mod none;
pub mod norm;
pub mod pq;
pub mod value;

use crate::params::{perr, ParamError, ParamSpec, Params};
use crate::player::SegmentLog;
use crate::time::Ns;
use crate::video::Video;

/// The download in progress (the earliest one in flight).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurrentChunk {
    pub segment: usize,
    pub rung: usize,
    pub bytes_total: u64,
    pub bytes_received: u64,
    pub t_request: Ns,
}

/// What a controller sees of one client at `now`.
#[derive(Clone, Copy, Debug)]
pub struct ClientObs<'a> {
    pub name: &'a str,
    pub video: &'a Video,
    /// The session has started (its start time has passed) and has not ended.
    pub active: bool,
    /// Response bytes delivered to the client so far, over all its connections (cumulative).
    pub delivered_bytes: u64,
    /// Time (ns) during which a download was outstanding, so far (cumulative; overlapping
    /// downloads of a pipelined data plane count once each).
    pub busy_ns: Ns,
    /// Media buffered ahead of the playhead (ns) at `now`.
    pub buffer: Ns,
    /// Rung of the download in progress, else of the last completed segment.
    pub rung: Option<usize>,
    pub current: Option<CurrentChunk>,
    /// Completed (and abandoned) segments, oldest first: the past per-chunk QoE comes from it.
    pub log: &'a [SegmentLog],
    /// Smallest RTT seen on the client's response flows (None before a sample).
    pub min_rtt: Option<Ns>,
}

/// A new weight for one client, with what it was computed from (for reports).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WeightUpdate {
    pub weight: f64,
    /// The (normalized-objective) utility behind the weight (NaN if none).
    pub utility: f64,
    /// The rate estimate behind the weight (bit/s; NaN if none).
    pub rate_bps: f64,
    /// The weight hit a bound of the clamp.
    pub clamped: bool,
}

/// A controller's answer: per client (same order as the observations) an optional new weight,
/// and the next wake-up (`NEVER` for none).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowDecision {
    pub weights: Vec<Option<WeightUpdate>>,
    pub next: Ns,
}

/// A flow controller (sans-IO).
pub trait FlowController: Send {
    fn name(&self) -> &'static str;
    /// Observe the clients at `now` and decide. `obs` grows over a run (arrivals) but never
    /// reorders.
    fn update(&mut self, now: Ns, obs: &[ClientObs]) -> FlowDecision;
}

/// What a controller is built with besides its parameters: the videos of the provider's clients
/// known at build time (clients that arrive later play one of them).
pub struct FlowCtlCtx<'a> {
    pub videos: &'a [&'a Video],
    /// Value functions given to the provider (Minerva's client-aware utility), one per video.
    pub value_functions: &'a [value::ValueFunction],
    /// The corpus-wide normalization table given to the provider (Minerva's `file` normalization).
    pub normalization: Option<&'a norm::Normalization>,
}

pub type FlowCtlBuildFn = fn(&Params, &FlowCtlCtx) -> Result<Box<dyn FlowController>, ParamError>;

/// A registered flow controller.
pub struct FlowCtlEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub reference: &'static str,
    pub params: &'static [ParamSpec],
    pub build: FlowCtlBuildFn,
}

/// Every flow controller, one line each.
pub static REGISTRY: &[FlowCtlEntry] = &[none::ENTRY, minerva::ENTRY];

pub fn find(name: &str) -> Option<&'static FlowCtlEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Build controller `name`; an unknown name is an error on the parameter "controller".
pub fn build(name: &str, params: &Params, ctx: &FlowCtlCtx) -> Result<Box<dyn FlowController>, ParamError> {
    let Some(e) = find(name) else {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        return Err(perr(
            "controller",
            format!("unknown flow controller \"{name}\"; expected one of: {}", names.join(", ")),
        ));
    };
    params.check_known(e.params)?;
    (e.build)(params, ctx)
}

/// Congestion controllers that take a weight (`set_weight` returns true).
pub const WEIGHTED_CC: &[&str] = &["wcubic", "multcp", "fast"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_builds_defaults_and_rejects_unknown() {
        let v = pq::tests::video_with_vmaf("a", &[1e6, 2e6], &[50.0, 80.0], 4);
        let ctx = FlowCtlCtx { videos: &[&v], value_functions: &[], normalization: None };
        for e in REGISTRY {
            let c = build(e.name, &Params::new(), &ctx).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(c.name(), e.name);
            let bad = build(e.name, &Params::new().with("no_such_param", 1), &ctx);
            assert!(bad.is_err(), "{}", e.name);
            for s in e.params {
                assert!(!s.doc.is_empty(), "{}.{}", e.name, s.name);
            }
        }
        assert!(build("nope", &Params::new(), &ctx).is_err());
    }
}
