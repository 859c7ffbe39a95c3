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
//! HTTP/1.1 model (one persistent connection today): a GET is `request_bytes` on the request
//! stream; when the server has received all of it, it waits `think` and writes
//! `response_header_bytes` + the segment's bytes on the response stream. Abandoning a download
//! resets the connection (as a browser aborting an HTTP/1.1 request does); the transport
//! discards the old connection and opens a fresh one in the same slot, whose streams start again
//! at offset 0.

pub mod chunk_sizing;

use crate::player::{Player, PlayerSummary, SegmentLog};
use crate::time::{Ns, NEVER};
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

/// The request in flight.
#[derive(Clone, Copy, Debug)]
struct HttpReq {
    /// End offset of this request in the request stream.
    req_end: u64,
    /// Offset where this response starts in the response stream (set when the server writes it).
    resp_start: Option<u64>,
    body: u64,
    first_byte: bool,
    last_progress: Ns,
    /// When the server writes the response (think time), if pending.
    serve_at: Ns,
}

/// One viewer: player + ABR + the HTTP exchanges of its segment downloads.
pub struct VideoSession {
    pub name: String,
    /// ABR name as configured (e.g. "bolae" or "python:mod:Class").
    pub abr: String,
    pub player: Player,
    http: HttpCfg,
    cur: Option<HttpReq>,
    req_written: u64,
    resp_written: u64,
    connections: u32,
    /// Base RTT of the client's path (reported in the summary).
    pub base_rtt: Ns,
}

impl VideoSession {
    pub fn new(name: String, abr: String, player: Player, http: HttpCfg, base_rtt: Ns) -> VideoSession {
        VideoSession { name, abr, player, http, cur: None, req_written: 0, resp_written: 0, connections: 1, base_rtt }
    }

    /// Connections opened so far (1 + resets).
    pub fn connections(&self) -> u32 {
        self.connections
    }

    /// Timer or start: serve a response whose think time is over, advance the player, issue the
    /// next request if the player wants one.
    pub fn on_timer(&mut self, now: Ns, t: &mut dyn Transport) {
        if let Some(r) = self.cur {
            if r.resp_start.is_none() && r.serve_at <= now {
                self.server_respond(now, t);
            }
        }
        self.player.advance(now);
        if self.cur.is_none() {
            if let Some(req) = self.player.poll(now) {
                self.req_written += self.http.request_bytes;
                self.cur = Some(HttpReq {
                    req_end: self.req_written,
                    resp_start: None,
                    body: req.bytes,
                    first_byte: false,
                    last_progress: now,
                    serve_at: NEVER,
                });
                t.write(now, ConnId(0), Dir::Request, self.http.request_bytes);
            }
        }
    }

    /// When [`VideoSession::on_timer`] must run next (NEVER if not needed).
    pub fn poll_at(&self) -> Ns {
        let mut t = self.player.poll_at();
        if let Some(r) = self.cur {
            if r.resp_start.is_none() && r.serve_at != NEVER {
                t = t.min(r.serve_at);
            }
        }
        t
    }

    fn server_respond(&mut self, now: Ns, t: &mut dyn Transport) {
        let Some(r) = &mut self.cur else { return };
        let total = self.http.response_header_bytes + r.body;
        r.resp_start = Some(self.resp_written);
        self.resp_written += total;
        t.write(now, ConnId(0), Dir::Response, total);
    }

    /// Bytes arrived on stream `dir` of `conn`.
    pub fn on_delivered(&mut self, now: Ns, conn: ConnId, dir: Dir, t: &mut dyn Transport) {
        let Some(mut r) = self.cur else { return };
        let received = t.delivered(conn, dir);
        if dir == Dir::Request {
            // Server side: the whole request arrived?
            if r.resp_start.is_none() && r.serve_at == NEVER && received >= r.req_end {
                r.serve_at = now + self.http.think;
                self.cur = Some(r);
                if self.http.think == 0 {
                    self.server_respond(now, t);
                }
            }
            return;
        }
        let Some(start) = r.resp_start else { return };
        if received <= start {
            return;
        }
        if !r.first_byte {
            r.first_byte = true;
            self.player.on_first_byte(now);
        }
        let body = (received - start).saturating_sub(self.http.response_header_bytes).min(r.body);
        let complete = body >= r.body;
        if complete || now >= r.last_progress + self.http.progress_interval {
            r.last_progress = now;
            self.cur = Some(r);
            if self.player.on_bytes(now, body).is_some() {
                // Abandoned: reset the connection, then request the segment again.
                t.reset(now, conn);
                self.connections += 1;
                self.cur = None;
                self.req_written = 0;
                self.resp_written = 0;
                self.on_timer(now, t);
                return;
            }
        }
        self.cur = Some(r);
        if complete {
            self.cur = None;
            self.player.on_complete(now);
            self.on_timer(now, t);
        }
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
        }
    }
}

#[cfg(test)]
mod tests;
