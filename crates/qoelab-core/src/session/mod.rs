//! The session layer: a video session (player + ABR + HTTP exchanges with its server) over
//! transport connections, sans-IO.
//!
//! A [`VideoSession`] owns its [`Player`], the state of its HTTP exchanges and the client's
//! metrics. It never sees packets, a clock or a driver: the driver calls it with `now` and an
//! implementation of [`Transport`], a small byte-stream interface (write bytes on a
//! connection's request or response stream, read how many bytes were delivered in order, reset a
//! connection). The packet simulator implements [`Transport`] on simulated TCP
//! (`net::clients`); a flow-level or real-network driver implements it on its own streams.
//!
//! HTTP/1.1 ([`http`]): persistent connections, each with a FIFO of pipelined requests; a GET is
//! `request_bytes` on the request stream; when the server has received all of it, it waits
//! `think` and writes `response_header_bytes` + the body (a segment, a byte range, an expanded
//! range) on the response stream, in request order. Cancelling resets a connection (as a browser
//! aborting an HTTP/1.1 request does); the transport discards the old connection and opens a
//! fresh one in the same slot, whose streams start again at offset 0.
//!
//! How segment requests map onto HTTP requests and connections is the session's data plane
//! ([`dataplane`]): sequential (the default), pipelined, Sprint, Sprint-x, Chunklets.
//!
//! A web page load ([`page::PageSession`]) is the other kind of session: a browser fetching a
//! page's objects over several HTTP/1.1 connections per origin, on the same [`Transport`].

pub mod chunk_sizing;
pub mod dataplane;
pub mod http;
pub mod page;

use crate::player::{Player, PlayerSummary, SegmentLog};
use crate::time::Ns;
use dataplane::{Cx, DataPlane, DataPlaneCfg, PlaneLog};
use http::{Delivery, Http, HttpStats};
use serde::Deserialize;

/// A connection slot of a session (0 = the first connection). Slots survive resets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u32);

/// The two byte streams of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Client -> server (requests).
    Request,
    /// Server -> client (responses).
    Response,
}

/// What a session needs of a transport.
pub trait Transport {
    /// Append `bytes` to stream `dir` of connection `conn`.
    fn write(&mut self, now: Ns, conn: ConnId, dir: Dir, bytes: u64);
    /// Bytes of stream `dir` of `conn` delivered in order to the receiving side so far (since
    /// the connection was last opened).
    fn delivered(&self, conn: ConnId, dir: Dir) -> u64;
    /// Discard connection `conn` (data in flight is lost) and open a fresh one in its slot.
    fn reset(&mut self, now: Ns, conn: ConnId);
    /// Append `bytes` that are never retransmitted (VOXEL's QUIC*: their loss still counts for
    /// congestion control; the receiver zero-fills them and they count as delivered once the
    /// sender gave them up). A transport without partial reliability sends them reliably.
    fn write_unreliable(&mut self, now: Ns, conn: ConnId, dir: Dir, bytes: u64) {
        self.write(now, conn, dir, bytes)
    }
    /// Whether [`Transport::write_unreliable`] and [`Transport::skip`] are honoured on `conn`.
    fn partial_reliability(&self, _conn: ConnId) -> bool {
        false
    }
    /// Stop sending bytes `[a, b)` of stream `dir` of `conn` (a response cut short without
    /// closing the connection: an HTTP/3 stream reset); they are delivered as zero-filled holes.
    /// False if the transport cannot (the session then resets the connection).
    fn skip(&mut self, _now: Ns, _conn: ConnId, _dir: Dir, _a: u64, _b: u64) -> bool {
        false
    }
    /// The zero-filled ranges of stream `dir` of `conn` inside `[a, b)` (lost unreliable or
    /// skipped bytes, given up by the sender), in offset order.
    fn holes(&self, _conn: ConnId, _dir: Dir, _a: u64, _b: u64) -> Vec<(u64, u64)> {
        Vec::new()
    }
}

/// HTTP/1.1 overheads and timing (the scenario's `[client.http]`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HttpCfg {
    /// Bytes of a GET request (request line + headers).
    pub request_bytes: u64,
    /// Bytes of response headers before the body.
    pub response_header_bytes: u64,
    /// Server think time between the end of the request and the first response byte (ns).
    pub think: Ns,
    /// How often the player is told about download progress (abandonment rules), ns.
    pub progress_interval: Ns,
}

impl Default for HttpCfg {
    fn default() -> Self {
        HttpCfg { request_bytes: 300, response_header_bytes: 300, think: 0, progress_interval: 50 * crate::time::MS }
    }
}

/// One viewer: player + ABR + the HTTP exchanges of its segment downloads, fetched by its data
/// plane.
pub struct VideoSession {
    pub name: String,
    /// ABR name as configured (e.g. "bolae" or "python:mod:Class").
    pub abr: String,
    pub player: Player,
    http: Http,
    plane: Box<dyn DataPlane>,
    log: PlaneLog,
    deliveries: Vec<Delivery>,
    /// Base RTT of the client's path (reported in the summary).
    pub base_rtt: Ns,
}

impl VideoSession {
    /// A session fetching with the `sequential` data plane (one request at a time).
    pub fn new(name: String, abr: String, player: Player, http: HttpCfg, base_rtt: Ns) -> VideoSession {
        let plane = dataplane::build(&DataPlaneCfg::default(), player.video()).expect("the sequential plane");
        VideoSession::with_plane(name, abr, player, http, plane, base_rtt)
    }

    pub fn with_plane(
        name: String,
        abr: String,
        player: Player,
        http: HttpCfg,
        plane: Box<dyn DataPlane>,
        base_rtt: Ns,
    ) -> VideoSession {
        let http = Http::new(http, plane.connections());
        VideoSession { name, abr, player, http, plane, log: PlaneLog::default(), deliveries: Vec::new(), base_rtt }
    }

    /// Connection slots the session uses (the transport opens them at the start).
    pub fn connection_slots(&self) -> u32 {
        self.http.connections()
    }
    /// Connections opened so far (one per slot + one per reset).
    pub fn connections(&self) -> u32 {
        self.http.connections() + self.http.stats.resets as u32
    }
    /// The slot of the data plane's probe connection, if any.
    pub fn probe_slot(&self) -> Option<u32> {
        self.plane.probe_slot()
    }
    pub fn http_stats(&self) -> HttpStats {
        self.http.stats
    }
    pub fn data_plane(&self) -> &'static str {
        self.plane.name()
    }
    pub fn plane_log(&self) -> &PlaneLog {
        &self.log
    }

    /// Timer or start: serve responses whose think time is over, advance the player, let the data
    /// plane issue what is due.
    pub fn on_timer(&mut self, now: Ns, t: &mut dyn Transport) {
        self.http.on_timer(now, t);
        self.player.advance(now);
        let mut cx = Cx { player: &mut self.player, http: &mut self.http, t, log: &mut self.log };
        self.plane.pump(now, &mut cx);
    }

    /// When [`VideoSession::on_timer`] must run next (NEVER if not needed).
    pub fn poll_at(&self) -> Ns {
        self.plane.poll_at(&self.player).min(self.http.poll_at())
    }

    /// Bytes arrived on stream `dir` of `conn`.
    pub fn on_delivered(&mut self, now: Ns, conn: ConnId, dir: Dir, t: &mut dyn Transport) {
        let mut ds = std::mem::take(&mut self.deliveries);
        self.http.on_delivered(now, conn, dir, t, &mut ds);
        let mut pump = false;
        let mut cx = Cx { player: &mut self.player, http: &mut self.http, t, log: &mut self.log };
        for d in ds.drain(..) {
            pump |= self.plane.on_delivery(now, &d, &mut cx);
        }
        self.deliveries = ds;
        if pump {
            self.on_timer(now, t);
        }
    }

    /// Fast path of [`VideoSession::on_delivered`] for `got` in-order response bytes on `conn`:
    /// when the full call would only advance byte counters (the response already started and not
    /// complete, the data plane sure nothing else is due: see [`DataPlane::on_quiet_delivery`]),
    /// apply them and return true, with the same state as the full call left; otherwise change
    /// nothing and return false (the driver then makes the full call). The driver must also know
    /// that [`VideoSession::poll_at`] needs no new wake-up (a quiet delivery does not move it).
    pub fn on_delivered_quiet(&mut self, now: Ns, conn: ConnId, got: u64) -> bool {
        let Some(d) = self.http.quiet_delivery(conn, got) else { return false };
        if !self.plane.on_quiet_delivery(now, &d, self.http.cfg().progress_interval) {
            return false;
        }
        self.http.note_reported(&d);
        let sample = self.log.deliver(now, &d);
        debug_assert!(sample.is_none(), "a quiet delivery completed a request");
        true
    }

    /// The end of the run at `now`: the player's clock goes there, so that startup, playback and
    /// stalls count up to the end of the run (as trace mode does), not to the session's last event.
    pub fn finish(&mut self, now: Ns) {
        self.player.advance(now);
    }

    /// Player and session accounting at the end of a run.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.player.check_invariants()
    }
}

/// What the summary and the tables need of a client, whatever the driver: see
/// [`crate::report`].
pub struct SessionView<'a> {
    pub name: &'a str,
    pub abr: &'a str,
    pub video: &'a crate::video::Video,
    pub log: &'a [SegmentLog],
    pub summary: PlayerSummary,
    pub buffer_max: Ns,
    pub base_rtt: Ns,
    /// The data plane, its HTTP counters and request log.
    pub data_plane: &'static str,
    pub http: HttpStats,
    pub plane_log: &'a PlaneLog,
    /// The VOXEL plane's counters.
    pub voxel: Option<dataplane::voxel::VoxelStats>,
}

impl VideoSession {
    pub fn view(&self) -> SessionView<'_> {
        SessionView {
            name: &self.name,
            abr: &self.abr,
            video: self.player.video(),
            log: self.player.log(),
            summary: self.player.summary(),
            buffer_max: self.player.buffer_max(),
            base_rtt: self.base_rtt,
            data_plane: self.plane.name(),
            http: self.http.stats,
            plane_log: &self.log,
            voxel: self.plane.voxel_stats(),
        }
    }
}

#[cfg(test)]
mod tests;
