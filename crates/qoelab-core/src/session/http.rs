//! HTTP/1.1 over byte streams, sans-IO: persistent connections with a FIFO of pipelined requests,
//! request and response header bytes, `Range` bodies of any length, and cancellation by
//! resetting a connection. Both ends are modelled (the client and the server's per-connection
//! request queue), as byte counts on the two streams of each [`Transport`] connection.
//!
//! - The client writes a GET of `request_bytes` on the request stream and remembers the length of
//!   the response it expects (`response_header_bytes` + the body: the segment, the byte range or
//!   the expanded range). Responses come back in request order, back to back, so the client maps
//!   every response-stream offset to its request.
//! - The server reads requests in order; a request is served when all its bytes have arrived, and
//!   `think` later (and never before the previous response on that connection was written, as a
//!   pipelining HTTP/1.1 server answers in order).
//! - [`Http::reset`] cancels every request of a connection: the transport discards the connection
//!   and opens a fresh one in its slot. What the server had already written keeps travelling until
//!   the reset reaches it (the transport models that); its bytes are waste.
//!
//! The packet simulator drives it over simulated TCP; a real-network driver drives the same code
//! over sockets.

use super::{ConnId, Dir, HttpCfg, Transport};
use crate::time::{Ns, NEVER};
use std::collections::VecDeque;

/// Id of one HTTP request of a session.
pub type ReqId = u64;

/// Progress of one response, reported on every arrival on its connection once it has started
/// (`received` may equal `before` after an out-of-order packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub id: ReqId,
    pub conn: ConnId,
    /// Response bytes (headers + body) received so far, and before this delivery.
    pub received: u64,
    pub before: u64,
    /// Body bytes received so far, and the body length.
    pub body: u64,
    pub body_len: u64,
    /// Response header bytes.
    pub header: u64,
}

impl Delivery {
    /// The first response byte arrived with this delivery.
    pub fn first(&self) -> bool {
        self.before == 0 && self.received > 0
    }
    /// The last byte arrived with this delivery.
    pub fn complete(&self) -> bool {
        self.body >= self.body_len && self.received >= self.header + self.body_len
    }
}

#[derive(Clone, Copy, Debug)]
struct Outstanding {
    id: ReqId,
    /// Offset of this response in the response stream, and its length (headers + body).
    start: u64,
    len: u64,
    header: u64,
    reported: u64,
    issued: Ns,
    /// Cut short without a reset ([`Http::cut_short`]): counted as cancelled, not completed.
    cut: bool,
}

impl Outstanding {
    /// Bytes of this response the client used when it gave up on the rest after its first `kept`
    /// body bytes (those and the header, as far as they arrived): not waste.
    fn used(&self, kept: u64) -> u64 {
        if kept > 0 {
            self.reported.min(self.header + kept)
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct ServerReq {
    /// End offset of the request in the request stream.
    req_end: u64,
    /// Response bytes to write, and of them the last `unreliable` ones sent unreliably.
    len: u64,
    unreliable: u64,
    /// When the response is written (think time after the request arrived); NEVER until then.
    serve_at: Ns,
}

#[derive(Clone, Debug, Default)]
struct Conn {
    req_written: u64,
    resp_expected: u64,
    out: VecDeque<Outstanding>,
    server: VecDeque<ServerReq>,
    resp_written: u64,
    /// Requests ever issued and completed on this slot (all generations).
    issued: u64,
    completed: u64,
}

/// Counters of a session's HTTP exchanges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpStats {
    pub requests: u64,
    pub completed: u64,
    pub cancelled: u64,
    /// Response bytes (headers + body) received for requests later cancelled, but for those the
    /// client used (the completed segments of a cancelled Sprint-x range, the kept part of a
    /// VOXEL segment cut short).
    pub wasted_bytes: u64,
    pub resets: u64,
    /// Most requests outstanding at once on one connection.
    pub max_pipeline: u64,
}

/// The HTTP/1.1 exchanges of one session over `n` connection slots.
#[derive(Clone, Debug)]
pub struct Http {
    cfg: HttpCfg,
    conns: Vec<Conn>,
    next_id: ReqId,
    pub stats: HttpStats,
    /// Earliest `serve_at` at the front of a server queue (NEVER if none): kept up to date where
    /// a front changes or gets a time (`serve`, `reset`), so that `poll_at` does not scan the slots.
    serve_min: Ns,
}

impl Http {
    pub fn new(cfg: HttpCfg, connections: u32) -> Http {
        Http {
            cfg,
            conns: vec![Conn::default(); connections.max(1) as usize],
            next_id: 0,
            stats: HttpStats::default(),
            serve_min: NEVER,
        }
    }

    pub fn cfg(&self) -> &HttpCfg {
        &self.cfg
    }
    /// Connection slots.
    pub fn connections(&self) -> u32 {
        self.conns.len() as u32
    }
    /// Requests outstanding (sent, response not complete) on `conn`.
    pub fn outstanding(&self, conn: ConnId) -> usize {
        self.conns[conn.0 as usize].out.len()
    }
    /// Response bytes (headers + body) still to arrive on `conn`.
    pub fn bytes_outstanding(&self, conn: ConnId) -> u64 {
        self.conns[conn.0 as usize].out.iter().map(|o| o.len - o.reported).sum()
    }
    /// When request `id` was issued, if outstanding.
    pub fn issued_at(&self, id: ReqId) -> Option<Ns> {
        self.conns.iter().flat_map(|c| c.out.iter()).find(|o| o.id == id).map(|o| o.issued)
    }

    /// Send a GET whose response has `body` bytes on `conn`; returns its id.
    pub fn get(&mut self, now: Ns, conn: ConnId, body: u64, t: &mut dyn Transport) -> ReqId {
        let (rq, hdr) = (self.cfg.request_bytes, self.cfg.response_header_bytes);
        self.exchange(now, conn, rq, hdr, body, t)
    }

    /// Send `rq` request bytes whose answer is `hdr` header bytes + `body` bytes on `conn` (a GET,
    /// or a handshake flight such as TLS's); returns its id.
    pub fn exchange(&mut self, now: Ns, conn: ConnId, rq: u64, hdr: u64, body: u64, t: &mut dyn Transport) -> ReqId {
        self.exchange_parts(now, conn, rq, hdr, (body, 0), t)
    }

    /// Send a GET whose response body is `reliable` bytes then `unreliable` bytes that the
    /// server sends unreliably (VOXEL's multi-range request over QUIC*: the reliable ranges, then
    /// droppable frames); returns its id. Over a transport without partial reliability the whole
    /// body is reliable.
    pub fn get_parts(&mut self, now: Ns, conn: ConnId, reliable: u64, unreliable: u64, t: &mut dyn Transport) -> ReqId {
        let (rq, hdr) = (self.cfg.request_bytes, self.cfg.response_header_bytes);
        self.exchange_parts(now, conn, rq, hdr, (reliable, unreliable), t)
    }

    /// The response stream offset where the body of outstanding request `id` on `conn` starts.
    pub fn body_start(&self, conn: ConnId, id: ReqId) -> Option<u64> {
        self.conns[conn.0 as usize].out.iter().find(|o| o.id == id).map(|o| o.start + o.header)
    }

    fn exchange_parts(
        &mut self,
        now: Ns,
        conn: ConnId,
        rq: u64,
        hdr: u64,
        (body, unreliable): (u64, u64),
        t: &mut dyn Transport,
    ) -> ReqId {
        let id = self.next_id;
        self.next_id += 1;
        let c = &mut self.conns[conn.0 as usize];
        c.req_written += rq;
        let len = hdr + body + unreliable;
        c.out.push_back(Outstanding {
            id,
            start: c.resp_expected,
            len,
            header: hdr,
            reported: 0,
            issued: now,
            cut: false,
        });
        c.resp_expected += len;
        c.server.push_back(ServerReq { req_end: c.req_written, len, unreliable, serve_at: NEVER });
        c.issued += 1;
        self.stats.requests += 1;
        self.stats.max_pipeline = self.stats.max_pipeline.max(c.out.len() as u64);
        t.write(now, conn, Dir::Request, rq);
        id
    }

    /// Reset `conn`: every outstanding request on it is cancelled (their ids are returned, oldest
    /// first) and the transport opens a fresh connection in the slot.
    pub fn reset(&mut self, now: Ns, conn: ConnId, t: &mut dyn Transport) -> Vec<ReqId> {
        self.reset_keeping(now, conn, 0, t)
    }

    /// [`Http::reset`] after the client used the first `kept` body bytes of the oldest
    /// outstanding response (with its header): those are not waste.
    pub fn reset_keeping(&mut self, now: Ns, conn: ConnId, kept: u64, t: &mut dyn Transport) -> Vec<ReqId> {
        let c = &mut self.conns[conn.0 as usize];
        let ids: Vec<ReqId> = c.out.iter().map(|o| o.id).collect();
        self.stats.cancelled += ids.len() as u64;
        let used = c.out.front().map_or(0, |o| o.used(kept));
        self.stats.wasted_bytes += c.out.iter().map(|o| o.reported).sum::<u64>() - used;
        self.stats.resets += 1;
        let (issued, completed) = (c.issued, c.completed);
        *c = Conn { issued, completed, ..Conn::default() };
        self.refresh_serve_min();
        t.reset(now, conn);
        ids
    }

    /// The response of `id` on `conn` was cut short without a reset (QUIC: the sender skips the
    /// rest of it) after the client used its first `kept` body bytes: it counts as cancelled, and
    /// the bytes received so far beyond those (with the header) as waste, as [`Http::reset_keeping`]
    /// counts them. Bytes still in flight at the cut, and the skipped range the transport
    /// zero-fills, are not counted. Its end is not counted as completed.
    pub fn cut_short(&mut self, conn: ConnId, id: ReqId, kept: u64) {
        let Some(o) = self.conns[conn.0 as usize].out.iter_mut().find(|o| o.id == id) else { return };
        if o.cut {
            return;
        }
        o.cut = true;
        self.stats.cancelled += 1;
        self.stats.wasted_bytes += o.reported - o.used(kept);
    }

    /// Next think-time expiry of a server response (NEVER if none).
    pub fn poll_at(&self) -> Ns {
        debug_assert_eq!(self.serve_min, self.scan_serve_min());
        self.serve_min
    }

    fn scan_serve_min(&self) -> Ns {
        self.conns.iter().filter_map(|c| c.server.front()).map(|s| s.serve_at).min().unwrap_or(NEVER)
    }

    fn refresh_serve_min(&mut self) {
        self.serve_min = self.scan_serve_min();
    }

    /// Timer: write the responses whose think time is over.
    pub fn on_timer(&mut self, now: Ns, t: &mut dyn Transport) {
        for k in 0..self.conns.len() {
            self.serve(now, ConnId(k as u32), t);
        }
    }

    fn serve(&mut self, now: Ns, conn: ConnId, t: &mut dyn Transport) {
        let c = &mut self.conns[conn.0 as usize];
        while let Some(s) = c.server.front() {
            if s.serve_at > now {
                break;
            }
            c.resp_written += s.len;
            let (len, unrel) = (s.len, s.unreliable);
            c.server.pop_front();
            t.write(now, conn, Dir::Response, len - unrel);
            if unrel > 0 {
                t.write_unreliable(now, conn, Dir::Response, unrel);
            }
        }
        // A front may have been given its time (on_delivered) or popped.
        self.refresh_serve_min();
    }

    /// The one delivery that `got` in-order response bytes on `conn` make when they only advance
    /// the connection's first outstanding response, already started, without completing it (so
    /// without reaching the next one); None otherwise. [`Http::on_delivered`] would report exactly
    /// this delivery and change nothing else but the response's reported bytes
    /// ([`Http::note_reported`]).
    #[inline]
    pub fn quiet_delivery(&self, conn: ConnId, got: u64) -> Option<Delivery> {
        let o = self.conns.get(conn.0 as usize)?.out.front()?;
        if o.reported == 0 || got <= o.start || got - o.start >= o.len {
            return None;
        }
        let r = got - o.start;
        Some(Delivery {
            id: o.id,
            conn,
            received: r,
            before: o.reported,
            body: r.saturating_sub(o.header),
            body_len: o.len - o.header,
            header: o.header,
        })
    }
    /// Record a delivery from [`Http::quiet_delivery`] as reported.
    #[inline]
    pub fn note_reported(&mut self, d: &Delivery) {
        if let Some(o) = self.conns[d.conn.0 as usize].out.front_mut() {
            debug_assert_eq!(o.id, d.id);
            o.reported = d.received;
        }
    }

    /// Bytes arrived on stream `dir` of `conn`: server side for requests (answer the complete
    /// ones), client side for responses (report every response that progressed to `out`).
    pub fn on_delivered(&mut self, now: Ns, conn: ConnId, dir: Dir, t: &mut dyn Transport, out: &mut Vec<Delivery>) {
        let got = t.delivered(conn, dir);
        let think = self.cfg.think;
        let c = &mut self.conns[conn.0 as usize];
        match dir {
            Dir::Request => {
                let mut any = false;
                for s in c.server.iter_mut() {
                    if s.req_end > got {
                        break;
                    }
                    if s.serve_at == NEVER {
                        s.serve_at = now + think;
                        any = true;
                    }
                }
                if any {
                    self.serve(now, conn, t);
                }
            }
            Dir::Response => {
                for o in c.out.iter_mut() {
                    if got <= o.start {
                        break;
                    }
                    // Reported on every arrival, even without new in-order bytes (a packet after a
                    // hole): the player's abandonment rule is polled on arrivals, as before.
                    let r = (got - o.start).min(o.len);
                    {
                        let body = r.saturating_sub(o.header);
                        out.push(Delivery {
                            id: o.id,
                            conn,
                            received: r,
                            before: o.reported,
                            body,
                            body_len: o.len - o.header,
                            header: o.header,
                        });
                        o.reported = r;
                    }
                }
                while let Some(o) = c.out.front().filter(|o| o.reported >= o.len).copied() {
                    c.out.pop_front();
                    c.completed += 1;
                    if !o.cut {
                        self.stats.completed += 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams that deliver every write at once (no network).
    #[derive(Default)]
    struct Instant {
        written: [[u64; 2]; 4],
        resets: u32,
    }
    impl Transport for Instant {
        fn write(&mut self, _now: Ns, conn: ConnId, dir: Dir, bytes: u64) {
            self.written[conn.0 as usize][(dir == Dir::Response) as usize] += bytes;
        }
        fn delivered(&self, conn: ConnId, dir: Dir) -> u64 {
            self.written[conn.0 as usize][(dir == Dir::Response) as usize]
        }
        fn reset(&mut self, _now: Ns, conn: ConnId) {
            self.written[conn.0 as usize] = [0, 0];
            self.resets += 1;
        }
    }

    fn cfg() -> HttpCfg {
        HttpCfg { request_bytes: 100, response_header_bytes: 50, think: 0, ..HttpCfg::default() }
    }

    #[test]
    fn pipelined_responses_map_to_their_requests_in_order() {
        let mut h = Http::new(cfg(), 1);
        let mut t = Instant::default();
        let a = h.get(0, ConnId(0), 1000, &mut t);
        let b = h.get(0, ConnId(0), 500, &mut t);
        assert_eq!(h.outstanding(ConnId(0)), 2);
        assert_eq!(h.bytes_outstanding(ConnId(0)), 1050 + 550);
        assert_eq!(t.written[0][0], 200);
        // Both requests arrive: the server writes both responses back to back.
        let mut ev = Vec::new();
        h.on_delivered(1, ConnId(0), Dir::Request, &mut t, &mut ev);
        assert!(ev.is_empty());
        assert_eq!(t.written[0][1], 1600);
        // Simulate partial delivery of the response stream.
        t.written[0][1] = 1100; // all of a (1050) and 50 bytes of b (its header)
        h.on_delivered(2, ConnId(0), Dir::Response, &mut t, &mut ev);
        assert_eq!(ev.len(), 2);
        assert_eq!((ev[0].id, ev[0].body, ev[0].complete()), (a, 1000, true));
        assert_eq!((ev[1].id, ev[1].body, ev[1].complete(), ev[1].first()), (b, 0, false, true));
        assert_eq!(h.outstanding(ConnId(0)), 1);
        ev.clear();
        t.written[0][1] = 1600;
        h.on_delivered(3, ConnId(0), Dir::Response, &mut t, &mut ev);
        assert_eq!((ev[0].id, ev[0].body, ev[0].complete(), ev[0].first()), (b, 500, true, false));
        assert_eq!(h.stats.completed, 2);
        assert_eq!(h.stats.max_pipeline, 2);
    }

    #[test]
    fn think_time_serves_in_order() {
        let mut h = Http::new(HttpCfg { think: 10, ..cfg() }, 1);
        let mut t = Instant::default();
        h.get(0, ConnId(0), 10, &mut t);
        let mut ev = Vec::new();
        h.on_delivered(5, ConnId(0), Dir::Request, &mut t, &mut ev);
        assert_eq!(t.written[0][1], 0);
        assert_eq!(h.poll_at(), 15);
        h.on_timer(15, &mut t);
        assert_eq!(t.written[0][1], 60);
        assert_eq!(h.poll_at(), NEVER);
    }

    #[test]
    fn bytes_the_client_used_are_not_waste() {
        for (kept, wasted) in [(0, 600), (200, 350), (549, 1), (550, 0), (1000, 0)] {
            let mut h = Http::new(cfg(), 1);
            let mut t = Instant::default();
            let a = h.get(0, ConnId(0), 1000, &mut t);
            let b = h.get(0, ConnId(0), 1000, &mut t);
            let mut ev = Vec::new();
            h.on_delivered(1, ConnId(0), Dir::Request, &mut t, &mut ev);
            // 600 bytes of a's response (50 of header, 550 of body) arrived; b's none
            t.written[0][1] = 600;
            h.on_delivered(2, ConnId(0), Dir::Response, &mut t, &mut ev);
            assert_eq!(h.reset_keeping(3, ConnId(0), kept, &mut t), vec![a, b]);
            assert_eq!(h.stats.wasted_bytes, wasted, "kept {kept}");
        }
    }

    #[test]
    fn reset_cancels_the_connection_and_counts_waste() {
        let mut h = Http::new(cfg(), 2);
        let mut t = Instant::default();
        let a = h.get(0, ConnId(1), 1000, &mut t);
        let b = h.get(0, ConnId(1), 1000, &mut t);
        let c = h.get(0, ConnId(0), 1000, &mut t);
        let mut ev = Vec::new();
        h.on_delivered(1, ConnId(1), Dir::Request, &mut t, &mut ev);
        t.written[1][1] = 300;
        h.on_delivered(2, ConnId(1), Dir::Response, &mut t, &mut ev);
        assert_eq!(ev.len(), 1);
        let gone = h.reset(3, ConnId(1), &mut t);
        assert_eq!(gone, vec![a, b]);
        assert_eq!(h.stats.wasted_bytes, 300);
        assert_eq!(h.stats.cancelled, 2);

        assert_eq!(t.resets, 1);
        assert_eq!(h.outstanding(ConnId(1)), 0);
        assert_eq!(h.outstanding(ConnId(0)), 1);
        // The fresh connection starts its streams at 0.
        let d = h.get(4, ConnId(1), 10, &mut t);
        ev.clear();
        h.on_delivered(5, ConnId(1), Dir::Request, &mut t, &mut ev);
        h.on_delivered(6, ConnId(1), Dir::Response, &mut t, &mut ev);
        assert_eq!((ev[0].id, ev[0].complete()), (d, true));
        assert!(c < d);
    }
}
