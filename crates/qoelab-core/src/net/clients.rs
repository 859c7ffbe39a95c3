//! Video clients in the packet simulator: the driver side of the session layer.
//!
//! Each client is a [`VideoSession`] (player + ABR + HTTP exchanges, sans-IO) whose
//! [`Transport`] is simulated TCP: one connection = two TCP half-connections (requests client ->
//! server, responses server -> client). The connection persists across segments, so cwnd, the RTT
//! estimate and slow-start-after-idle carry over as on a real host. A reset (abandonment)
//! discards both halves (their packets still in flight are dropped on arrival) and opens a new
//! connection. Pure ACKs are not piggybacked on the opposite half's data (one-segment requests
//! make this immaterial).
//!
//! This module holds the client types and the buffered [`Transport`]; the driver's client
//! methods (`impl World`) are in `net/session_adapter.rs`, so that this module does not import
//! the driver.
//!
//! The session's writes and resets are buffered during a call and applied in order right after
//! it, so that a packet delivered synchronously by a write cannot re-enter the session.

use super::config::ClientCfg;
use super::endpoint::{bytes_received, Ep, FlowRt};
use super::error::{serr, SimError};
use crate::ids::{EpId, FlowId, IdVec};
use crate::params::Params;
use crate::player::{Player, PlayerConfig};
use crate::session::{ConnId, Dir, Transport, VideoSession};
use crate::time::Ns;
use std::sync::Arc;

/// A client's video, ABR and player configuration.
pub(crate) type SessionParts = (Arc<crate::video::Video>, Box<dyn crate::abr::Abr>, PlayerConfig);

/// The parts of a client's session, checked: (video, ABR, player configuration). Randomized
/// ABRs get a seed derived from the scenario seed and the client's name.
pub(crate) fn session_parts(
    p: &str,
    c: &ClientCfg,
    cfg: &super::SimConfig,
    factory: Option<&crate::abr::AbrFactory>,
) -> Result<SessionParts, SimError> {
    let video = cfg.videos.get(c.video).ok_or_else(|| serr(format!("{p}.video"), "no such video"))?.clone();
    video.validate().map_err(|e| serr(format!("{p}.video.{e}"), ""))?;
    let video = Arc::new(video);
    let params = Params::from_value(&c.abr_params).map_err(|e| serr(format!("{p}.abr_params"), e.msg))?;
    let params = crate::abr::with_default_seed(&c.abr, params, cfg.seed, &c.name);
    let abr = crate::abr::build_with(&c.abr, &params, &video, factory).map_err(|e| {
        if e.param == "abr" {
            serr(format!("{p}.abr"), e.msg)
        } else {
            serr(format!("{p}.abr_params.{}", e.param), e.msg)
        }
    })?;
    let pcfg: PlayerConfig = c.player.clone().unwrap_or_default();
    Player::validate_config(&pcfg, &video).map_err(|e| serr(format!("{p}.player.{e}"), ""))?;
    Ok((video, abr, pcfg))
}

/// A video client of the packet driver.
pub(crate) struct ClientRt {
    pub session: VideoSession,
    pub cfg: ClientCfg,
    /// Flow ids of the current connection's request and response halves.
    pub req_flow: FlowId,
    pub resp_flow: FlowId,
    /// Response-half flows of every connection used (the first is the main one).
    pub resp_flows: Vec<FlowId>,
    pub sched: Ns,
    pub started: bool,
}

/// A session operation on the transport, applied after the session call returns.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ConnOp {
    Write(Dir, u64),
    Reset,
}

/// The packet driver's [`Transport`] during one session call.
pub(crate) struct Buffered<'a> {
    pub flows: &'a IdVec<FlowId, FlowRt>,
    pub eps: &'a IdVec<EpId, Ep>,
    pub req: FlowId,
    pub resp: FlowId,
    pub ops: &'a mut Vec<ConnOp>,
    pub reset: bool,
}

impl Transport for Buffered<'_> {
    fn write(&mut self, _now: Ns, _conn: ConnId, dir: Dir, bytes: u64) {
        self.ops.push(ConnOp::Write(dir, bytes));
    }
    fn delivered(&self, _conn: ConnId, dir: Dir) -> u64 {
        if self.reset {
            return 0;
        }
        let f = if dir == Dir::Request { self.req } else { self.resp };
        bytes_received(self.eps, &self.flows[f])
    }
    fn reset(&mut self, _now: Ns, _conn: ConnId) {
        self.ops.push(ConnOp::Reset);
        self.reset = true;
    }
}
