//! Data planes: how a session turns the player's segment requests into HTTP requests on its
//! connections — one at a time, pipelined, in Sprint trains, as Sprint-x expanded ranges, or as
//! Chunklets' parallel byte ranges. Sans-IO: a plane sees the player, the HTTP layer and the
//! transport through [`Cx`], and returns its next wake-up.
//!
//! Adding a data plane: one file with its parameters (published defaults), `pub const ENTRY:
//! DataPlaneEntry`, tests; one line in [`REGISTRY`]; a page in docs/models/data_plane-<name>.md.

pub mod chunklets;
pub mod pipelined;
pub mod sequential;
pub mod sprint;
pub mod sprintx;
pub mod voxel;

use super::http::{Delivery, Http, ReqId};
use super::{ConnId, Transport};
use crate::params::{ParamError, ParamSpec, Params};
use crate::player::{DlId, Player};
use crate::time::Ns;
use crate::video::Video;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The scenario's `[client.data_plane]`: `kind` and the plane's parameters.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DataPlaneCfg {
    #[serde(default = "sequential_name")]
    pub kind: String,
    #[serde(default)]
    pub params: Value,
}

fn sequential_name() -> String {
    "sequential".into()
}

impl Default for DataPlaneCfg {
    fn default() -> Self {
        DataPlaneCfg { kind: sequential_name(), params: Value::Null }
    }
}

/// One HTTP request as the data plane saw it (the session's `requests` table).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestLog {
    pub id: ReqId,
    pub conn: u32,
    /// "segment", "chunklet", "range" or "probe".
    pub kind: &'static str,
    /// Segments covered (first and last) and rung; for a probe, 0.
    pub segment: usize,
    pub last_segment: usize,
    pub rung: usize,
    /// First byte of the range inside the rung's file, if the video has a byte layout.
    pub offset: Option<u64>,
    /// Response body bytes requested and received.
    pub body: u64,
    pub received: u64,
    pub t_issue: Ns,
    pub t_first_byte: Option<Ns>,
    pub t_last_byte: Option<Ns>,
    pub cancelled: bool,
}

/// The session's record of its HTTP requests and data-plane events.
#[derive(Clone, Debug, Default)]
pub struct PlaneLog {
    pub requests: Vec<RequestLog>,
    /// Instants at which the plane cancelled a request because of a bitrate switch (Sprint-x).
    pub switch_cancels: Vec<Ns>,
    /// Trains started (Sprint) with their size in bytes.
    pub trains: Vec<(Ns, u64)>,
}

impl PlaneLog {
    /// Record a request. The HTTP layer numbers a session's requests 0, 1, 2, ... and every
    /// request is logged, so a request's id is its index in `requests`.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        &mut self,
        now: Ns,
        id: ReqId,
        conn: ConnId,
        kind: &'static str,
        segments: (usize, usize),
        rung: usize,
        offset: Option<u64>,
        body: u64,
    ) {
        debug_assert_eq!(id as usize, self.requests.len(), "every request is logged in order");
        self.requests.push(RequestLog {
            id,
            conn: conn.0,
            kind,
            segment: segments.0,
            last_segment: segments.1,
            rung,
            offset,
            body,
            received: 0,
            t_issue: now,
            t_first_byte: None,
            t_last_byte: None,
            cancelled: false,
        });
    }
    fn open(&mut self, id: ReqId) -> Option<&mut RequestLog> {
        self.requests.get_mut(id as usize).filter(|r| r.id == id && r.t_last_byte.is_none())
    }
    /// Record a delivery; when it completes the request, returns its sample for the ABR.
    pub fn deliver(&mut self, now: Ns, d: &Delivery) -> Option<crate::abr::RequestSample> {
        let r = self.open(d.id)?;
        r.received = d.body;
        if r.t_first_byte.is_none() && d.received > 0 {
            r.t_first_byte = Some(now);
        }
        if !d.complete() {
            return None;
        }
        r.t_last_byte = Some(now);
        Some(crate::abr::RequestSample {
            conn: r.conn,
            segment: r.segment,
            last_segment: r.last_segment,
            rung: r.rung,
            bytes: r.body,
            t_request: r.t_issue,
            t_first_byte: r.t_first_byte.unwrap_or(now),
            t_last_byte: now,
        })
    }

    /// Record a delivery and hand a finished request's sample to the player's ABR (probes
    /// excluded).
    pub fn deliver_to(&mut self, now: Ns, d: &Delivery, player: &mut Player) {
        if let Some(s) = self.deliver(now, d) {
            if self.requests[d.id as usize].kind != "probe" {
                player.request_sample(now, &s);
            }
        }
    }
    /// Body bytes of request `id` delivered so far (0 if unknown).
    pub fn received(&self, id: ReqId) -> u64 {
        self.requests.get(id as usize).filter(|r| r.id == id).map_or(0, |r| r.received)
    }
    pub fn cancel(&mut self, now: Ns, id: ReqId) {
        if let Some(r) = self.open(id) {
            r.cancelled = true;
            r.t_last_byte = Some(now);
        }
    }
}

/// What a data plane works with during one call.
pub struct Cx<'a> {
    pub player: &'a mut Player,
    pub http: &'a mut Http,
    pub t: &'a mut dyn Transport,
    pub log: &'a mut PlaneLog,
}

impl Cx<'_> {
    /// Reset `conn`, recording its cancelled requests.
    pub fn reset(&mut self, now: Ns, conn: ConnId) -> Vec<ReqId> {
        self.reset_keeping(now, conn, 0)
    }
    /// Reset `conn` after using the first `kept` body bytes of its oldest response (not waste).
    pub fn reset_keeping(&mut self, now: Ns, conn: ConnId, kept: u64) -> Vec<ReqId> {
        let ids = self.http.reset_keeping(now, conn, kept, self.t);
        for &id in &ids {
            self.log.cancel(now, id);
        }
        ids
    }
}

/// A data plane.
pub trait DataPlane: Send {
    fn name(&self) -> &'static str;
    /// Connection slots it uses (opened at the start of the session).
    fn connections(&self) -> u32 {
        1
    }
    /// The slot of a connection that carries only probes (not video), if any.
    fn probe_slot(&self) -> Option<u32> {
        None
    }
    /// Issue whatever requests are due now.
    fn pump(&mut self, now: Ns, cx: &mut Cx);
    /// A response progressed. Returns true if the plane may want to issue requests now (the
    /// session then calls [`DataPlane::pump`]).
    fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool;
    /// Fast path of [`DataPlane::on_delivery`] for a delivery that neither starts nor completes
    /// its response (the HTTP layer checked that): when the full call would change nothing but
    /// the plane's own byte counters (no first byte, no completion, no progress report due, nothing
    /// to issue, and the request log's update is the session's), apply those counters and return
    /// true; otherwise change nothing and return false, and the session makes the full call.
    /// Planes that do more per delivery (estimators, per-packet samples) keep the default.
    fn on_quiet_delivery(&mut self, _now: Ns, _d: &Delivery, _interval: Ns) -> bool {
        false
    }
    /// When [`DataPlane::pump`] must run next without a transport event (NEVER if not needed).
    fn poll_at(&self, player: &Player) -> Ns;
    /// The VOXEL plane's counters (None for the others).
    fn voxel_stats(&self) -> Option<voxel::VoxelStats> {
        None
    }
}

/// Builds a data plane from its parameters and the video.
pub type DataPlaneBuildFn = fn(&Params, &Video) -> Result<Box<dyn DataPlane>, ParamError>;

/// A registered data plane.
pub struct DataPlaneEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub reference: &'static str,
    pub params: &'static [ParamSpec],
    /// Needs per-segment byte offsets in the video (a byte layout).
    pub needs_layout: bool,
    pub build: DataPlaneBuildFn,
}

/// Every data plane, one line each.
pub static REGISTRY: &[DataPlaneEntry] =
    &[sequential::ENTRY, pipelined::ENTRY, sprint::ENTRY, sprintx::ENTRY, chunklets::ENTRY, voxel::ENTRY];

/// Build a data plane; errors name the parameter (`kind` for an unknown plane or a video that
/// lacks what it needs).
pub fn build(cfg: &DataPlaneCfg, video: &Video) -> Result<Box<dyn DataPlane>, ParamError> {
    let Some(e) = REGISTRY.iter().find(|e| e.name == cfg.kind) else {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        return Err(crate::params::perr(
            "kind",
            format!("expected one of {}, found \"{}\"", names.join(", "), cfg.kind),
        ));
    };
    let p = Params::from_value(&cfg.params)?;
    p.check_known(e.params)?;
    if e.needs_layout && !video.has_layout() {
        return Err(crate::params::perr(
            "kind",
            format!(
                "data plane \"{}\" requests byte ranges, but video {} has no byte layout (use an MPD with \
                 SegmentList/mediaRange or SegmentBase, an HLS playlist with EXT-X-BYTERANGE, or a synthetic or \
                 corpus video)",
                e.name, video.name
            ),
        ));
    }
    (e.build)(&p, video)
}

/// A segment download being reported to the player: throttles progress reports to the
/// abandonment rule (`progress_interval`) exactly as the sequential session always did.
#[derive(Clone, Copy, Debug)]
pub struct Track {
    pub dl: DlId,
    pub first: bool,
    pub last_progress: Ns,
}

/// What reporting progress to the player led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Nothing,
    Complete,
    /// The ABR abandoned the download (the player cancelled it and every later one).
    Abandoned,
}

impl Track {
    pub fn new(dl: DlId, now: Ns) -> Track {
        Track { dl, first: false, last_progress: now }
    }
    /// [`Track::report`] of `body < total` bytes at `now` would do nothing: the first byte was
    /// reported and no progress report is due (see [`DataPlane::on_quiet_delivery`]).
    #[inline]
    pub fn quiet(&self, now: Ns, body: u64, total: u64, interval: Ns) -> bool {
        self.first && body < total && now < self.last_progress + interval
    }
    /// Report `body` of `total` bytes of the download to the player (first byte when `first_byte`
    /// is set and not reported yet); completes it when `body >= total`.
    pub fn report(
        &mut self,
        now: Ns,
        first_byte: bool,
        body: u64,
        total: u64,
        interval: Ns,
        player: &mut Player,
    ) -> Outcome {
        if first_byte && !self.first {
            self.first = true;
            player.first_byte(now, self.dl);
        }
        let complete = body >= total;
        if complete || now >= self.last_progress + interval {
            self.last_progress = now;
            if player.bytes(now, self.dl, body.min(total)).is_some() {
                return Outcome::Abandoned;
            }
        }
        if complete {
            player.complete(now, self.dl);
            return Outcome::Complete;
        }
        Outcome::Nothing
    }
}

#[cfg(test)]
mod tests;
