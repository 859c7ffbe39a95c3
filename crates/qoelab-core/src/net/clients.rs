//! Video clients in the packet simulator: the driver side of the session layer.
//!
//! Each client is a [`VideoSession`] (player + ABR + HTTP exchanges + data plane, sans-IO) whose
//! [`Transport`] is simulated TCP: one connection = two TCP half-connections (requests client ->
//! server, responses server -> client); a session has one or more connection slots (its data
//! plane's). A connection persists across segments, so cwnd, the RTT estimate and
//! slow-start-after-idle carry over as on a real host. A reset (abandonment, a Sprint-x switch)
//! closes the client's side at once and sends a reset to the server, whose side keeps sending
//! until the reset reaches it; the client discards what still arrives (answering data with a
//! reset) — the in-flight bytes are waste that still crossed the bottleneck. A fresh connection
//! opens in the slot. Pure ACKs are not piggybacked on the opposite half's data (small requests
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

/// A client's video, ABR, player configuration and data plane.
pub type SessionParts =
    (Arc<crate::video::Video>, Box<dyn crate::abr::Abr>, PlayerConfig, Box<dyn crate::session::dataplane::DataPlane>);

/// The parts of a client's session, checked: (video, ABR, player configuration, data plane). Randomized
/// ABRs get a seed derived from the scenario seed and the client's name.
pub fn session_parts(
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
    let seed = crate::abr::component_seed(cfg.seed, &c.name);
    let abr = crate::abr::build_with(&c.abr, &params, &video, seed, factory).map_err(|e| {
        if e.param == "abr" {
            serr(format!("{p}.abr"), e.msg)
        } else {
            serr(format!("{p}.abr_params.{}", e.param), e.msg)
        }
    })?;
    let pcfg: PlayerConfig = c.player.clone().unwrap_or_default();
    Player::validate_config(&pcfg, &video).map_err(|e| serr(format!("{p}.player.{e}"), ""))?;
    // The player adopts the ABR's own buffer limit where the scenario sets none: below one segment
    // it stalled before every segment (the same value in [client.player] is refused).
    if let Some(b) = abr.preferred_buffer_max().filter(|&b| pcfg.abr_buffer_max && b < video.segment_duration) {
        return Err(serr(
            format!("{p}.abr_params.{}", abr.preferred_buffer_max_param()),
            format!(
                "expected at least one segment duration ({} s; it is the player's buffer limit), found {} s",
                video.segment_duration as f64 / 1e9,
                b as f64 / 1e9
            ),
        ));
    }
    let plane = crate::session::dataplane::build(&c.data_plane, &video)
        .map_err(|e| serr(format!("{p}.data_plane.{}", e.param), e.msg))?;
    if abr.fetches_partial_segments() && plane.name() == "sprint-x" {
        return Err(serr(
            format!("{p}.data_plane.kind"),
            "sprint-x fetches whole segments by its own ranges; an ABR with partial segments needs another data plane",
        ));
    }
    Ok((video, abr, pcfg, plane))
}

/// A video client of the packet driver.
pub(crate) struct ClientRt {
    pub session: VideoSession,
    pub cfg: ClientCfg,
    /// Per connection slot: flow ids of the current connection's request and response halves.
    pub conns: Vec<(FlowId, FlowId)>,
    /// Response-half flows of every connection used (the first is the main one).
    pub resp_flows: Vec<FlowId>,
    /// Connections reset so far.
    pub resets: u32,
    pub sched: Ns,
    pub started: bool,
}

/// A session operation on the transport, applied after the session call returns.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ConnOp {
    /// Append bytes, reliably (true) or not.
    Write(ConnId, Dir, u64, bool),
    Reset(ConnId),
    /// Stop sending `[a, b)` (QUIC only).
    Skip(ConnId, Dir, u64, u64),
}

/// The flows of a connection slot that holds no connection (page loads open slots lazily).
pub(crate) const CLOSED: (FlowId, FlowId) = (FlowId(u32::MAX), FlowId(u32::MAX));

/// The packet driver's [`Transport`] during one session call.
pub(crate) struct Buffered<'a> {
    pub flows: &'a IdVec<FlowId, FlowRt>,
    pub eps: &'a IdVec<EpId, Ep>,
    pub conns: &'a [(FlowId, FlowId)],
    pub ops: &'a mut Vec<ConnOp>,
    /// Slots reset during this call (their fresh connections have delivered nothing yet).
    pub reset: u64,
}

impl Buffered<'_> {
    /// The flow of stream `dir` of the connection in slot `conn` (None: reset during this call, or
    /// no connection).
    fn flow(&self, conn: ConnId, dir: Dir) -> Option<FlowId> {
        if self.reset & (1 << (conn.0 & 63)) != 0 {
            return None;
        }
        let (req, resp) = self.conns[conn.0 as usize];
        if (req, resp) == CLOSED {
            return None;
        }
        Some(if dir == Dir::Request { req } else { resp })
    }
}

/// In-order bytes a session sees on the stream of flow `f`.
#[inline]
pub(crate) fn stream_delivered(eps: &IdVec<EpId, Ep>, f: &FlowRt) -> u64 {
    match &eps[f.rx] {
        // received bytes and zero-filled holes, in order
        Ep::QuicRx(r) => r.bytes_delivered(),
        _ => bytes_received(eps, f),
    }
}

impl Transport for Buffered<'_> {
    fn write(&mut self, _now: Ns, conn: ConnId, dir: Dir, bytes: u64) {
        self.ops.push(ConnOp::Write(conn, dir, bytes, true));
    }
    fn write_unreliable(&mut self, _now: Ns, conn: ConnId, dir: Dir, bytes: u64) {
        self.ops.push(ConnOp::Write(conn, dir, bytes, false));
    }
    fn partial_reliability(&self, conn: ConnId) -> bool {
        self.flow(conn, Dir::Response).is_some_and(|f| matches!(self.eps[self.flows[f].tx], Ep::QuicTx(_)))
    }
    fn skip(&mut self, _now: Ns, conn: ConnId, dir: Dir, a: u64, b: u64) -> bool {
        if !self.partial_reliability(conn) {
            return false;
        }
        self.ops.push(ConnOp::Skip(conn, dir, a, b));
        true
    }
    fn holes(&self, conn: ConnId, dir: Dir, a: u64, b: u64) -> Vec<(u64, u64)> {
        match self.flow(conn, dir).map(|f| &self.eps[self.flows[f].rx]) {
            Some(Ep::QuicRx(r)) => r.holes_in(a, b),
            _ => Vec::new(),
        }
    }
    fn delivered(&self, conn: ConnId, dir: Dir) -> u64 {
        let Some(f) = self.flow(conn, dir) else { return 0 };
        stream_delivered(self.eps, &self.flows[f])
    }
    fn reset(&mut self, _now: Ns, conn: ConnId) {
        self.ops.push(ConnOp::Reset(conn));
        self.reset |= 1 << (conn.0 & 63);
    }
}
