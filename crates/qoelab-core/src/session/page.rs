//! A web page load over HTTP/1.1, sans-IO: the browser side of a page (objects with a size, an
//! origin, a TLS flag and a parent) fetched over persistent connections, several per origin, the
//! way a browser of the HTTP/1.1 era does it (docs/models/page-session.md).
//!
//! - An object is *enabled* when its parent's last byte has arrived (objects without a parent at
//!   the start). Enabled objects wait in a FIFO until a connection can take them.
//! - Dispatch (in enable order, at the start and whenever an object finishes or a TLS handshake
//!   completes): an idle connection of the object's origin (and TLS flag) takes it at once;
//!   otherwise a new connection opens if fewer than `max_per_origin` connections of the origin are
//!   busy or in their handshake and fewer than `max_total` connections are open; at the global
//!   limit the connection idle the longest is closed to make room. Otherwise the object waits.
//!   No pipelining: one request per connection at a time (as browsers ship HTTP/1.1).
//! - A new connection's TCP handshake is the transport's; a TLS connection then exchanges the two
//!   flights of a full TLS 1.2 handshake (RFC 5246 §7.3: ClientHello -> ServerHello ..
//!   ServerHelloDone; ClientKeyExchange, ChangeCipherSpec, Finished -> ChangeCipherSpec,
//!   Finished) as request/response byte counts on the connection before the first GET, so it
//!   costs two round trips plus the transmission of its bytes, as on the wire.
//! - An object's response is exactly its size in bytes (sizes are on the wire, headers included,
//!   as the HAR importer counts them); the GET is `request_bytes` on the request stream.
//!
//! The session never sees packets or a clock: the driver calls it with `now` and a
//! [`Transport`]. A connection slot is opened by the transport on the first write after it was
//! closed ([`PageSession`] closes a slot with [`Transport::reset`] and writes to it only when it
//! reopens it), so connection setup starts when the browser decides to open one.

use super::http::{Delivery, Http, ReqId};
use super::{ConnId, Dir, HttpCfg, Transport};
use crate::time::{Ns, NEVER};
use serde::Deserialize;
use std::collections::VecDeque;

/// One object of a page.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PageObject {
    /// Bytes of the response on the wire (body + headers), >= 1.
    pub size: u64,
    /// Origin index (one server per origin; objects of one origin share connections).
    pub origin: u32,
    #[serde(default)]
    pub tls: bool,
    /// The object whose completion enables this one (an earlier index), or none.
    #[serde(default)]
    pub parent: Option<u32>,
}

/// Byte counts of the two flights of a full TLS 1.2 handshake (typical sizes with an ECDHE key
/// exchange and a two-certificate chain; the handshake's cost is mostly its two round trips).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TlsCfg {
    /// ClientHello.
    pub client_hello: u64,
    /// ServerHello, Certificate, ServerKeyExchange, ServerHelloDone.
    pub server_hello: u64,
    /// ClientKeyExchange, ChangeCipherSpec, Finished.
    pub client_finished: u64,
    /// (NewSessionTicket,) ChangeCipherSpec, Finished.
    pub server_finished: u64,
}

impl Default for TlsCfg {
    fn default() -> Self {
        TlsCfg { client_hello: 517, server_hello: 4_500, client_finished: 126, server_finished: 250 }
    }
}

/// A page load's configuration (the scenario's `[[page]]` entry, less its network placement).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PageLoadCfg {
    pub objects: Vec<PageObject>,
    /// Connections of one origin busy or in their handshake at once.
    #[serde(default = "six")]
    pub max_per_origin: u32,
    /// Open connections (busy + idle) of the page.
    #[serde(default = "seventeen")]
    pub max_total: u32,
    /// GET bytes and server think time (`response_header_bytes` is not used: object sizes include
    /// their headers).
    #[serde(default)]
    pub http: HttpCfg,
    #[serde(default)]
    pub tls: TlsCfg,
}

fn six() -> u32 {
    6
}
fn seventeen() -> u32 {
    17
}

impl PageLoadCfg {
    /// Check the page: sizes >= 1, parents earlier, limits >= 1. The error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.objects.is_empty() {
            return Err("objects: expected at least one object".into());
        }
        if self.objects.len() > u32::MAX as usize / 2 {
            return Err("objects: too many objects".into());
        }
        for (i, o) in self.objects.iter().enumerate() {
            if o.size == 0 {
                return Err(format!("objects[{i}].size: expected >= 1 byte"));
            }
            if o.parent.is_some_and(|p| p as usize >= i) {
                return Err(format!("objects[{i}].parent: expected the index of an earlier object"));
            }
        }
        // at most 64 slots: the packet driver tracks a call's resets in one u64 bit mask
        if self.max_per_origin == 0 || self.max_total == 0 || self.max_total > 64 {
            return Err("max_total: expected 1 <= max_per_origin and 1 <= max_total <= 64".into());
        }
        Ok(())
    }
}

/// What happened to one object (times in ns; NEVER if it did not happen).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectLog {
    /// The parent finished (or the load started).
    pub enabled: Ns,
    /// A connection took it: its GET was written, or the connection that will carry it opened.
    pub dispatched: Ns,
    /// Connection slot and whether the object opened that connection.
    pub slot: u32,
    pub new_connection: bool,
    /// The GET was written (after the TLS handshake of a new TLS connection).
    pub requested: Ns,
    pub first_byte: Ns,
    pub done: Ns,
}

impl Default for ObjectLog {
    fn default() -> Self {
        ObjectLog {
            enabled: NEVER,
            dispatched: NEVER,
            slot: u32::MAX,
            new_connection: false,
            requested: NEVER,
            first_byte: NEVER,
            done: NEVER,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Closed,
    /// TLS flight 1 or 2 outstanding.
    Tls1,
    Tls2,
    Idle,
    Busy,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    phase: Phase,
    origin: u32,
    tls: bool,
    /// The object the slot carries (Busy) or will carry after its TLS handshake.
    obj: u32,
    req: ReqId,
    idle_since: Ns,
}

/// Counters of a page load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    pub connections_opened: u64,
    pub tls_handshakes: u64,
    /// Idle connections closed to stay within `max_total`.
    pub closed_at_limit: u64,
    pub requests: u64,
    pub bytes: u64,
}

/// One page load by one browser.
pub struct PageSession {
    pub name: String,
    cfg: PageLoadCfg,
    /// Children of each object (CSR: `child_start[i]..child_start[i + 1]` in `child`).
    child_start: Vec<u32>,
    child: Vec<u32>,
    log: Vec<ObjectLog>,
    ready: VecDeque<u32>,
    http: Http,
    slots: Vec<Slot>,
    start: Ns,
    started: bool,
    done: usize,
    pub stats: PageStats,
    deliveries: Vec<Delivery>,
}

impl PageSession {
    /// A load of `cfg` (validated) starting at `start`.
    pub fn new(name: String, cfg: PageLoadCfg, start: Ns) -> PageSession {
        let n = cfg.objects.len();
        let mut count = vec![0u32; n + 1];
        for o in &cfg.objects {
            if let Some(p) = o.parent {
                count[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut child = vec![0u32; count[n] as usize];
        for (i, o) in cfg.objects.iter().enumerate() {
            if let Some(p) = o.parent {
                child[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
            }
        }
        let http_cfg = HttpCfg { response_header_bytes: 0, ..cfg.http.clone() };
        let slots = cfg.max_total as usize;
        PageSession {
            name,
            child_start: count,
            child,
            log: vec![ObjectLog::default(); n],
            ready: VecDeque::new(),
            http: Http::new(http_cfg, slots as u32),
            slots: vec![Slot { phase: Phase::Closed, origin: 0, tls: false, obj: 0, req: 0, idle_since: 0 }; slots],
            start,
            started: false,
            done: 0,
            stats: PageStats::default(),
            deliveries: Vec::new(),
            cfg,
        }
    }

    pub fn cfg(&self) -> &PageLoadCfg {
        &self.cfg
    }
    pub fn start(&self) -> Ns {
        self.start
    }
    /// Connection slots (the transport's slot table size).
    pub fn slots(&self) -> u32 {
        self.slots.len() as u32
    }
    pub fn log(&self) -> &[ObjectLog] {
        &self.log
    }
    /// Every object arrived.
    pub fn complete(&self) -> bool {
        self.done == self.log.len()
    }
    /// Page load time: the last object's arrival after the start (None until complete).
    pub fn plt(&self) -> Option<Ns> {
        self.complete().then(|| self.log.iter().map(|l| l.done).max().unwrap_or(self.start) - self.start)
    }

    /// When [`PageSession::on_timer`] must run next.
    pub fn poll_at(&self) -> Ns {
        if self.started {
            self.http.poll_at()
        } else {
            self.start
        }
    }

    /// Timer: start the load when due, serve responses whose think time is over.
    pub fn on_timer(&mut self, now: Ns, t: &mut dyn Transport) {
        if !self.started && now >= self.start {
            self.started = true;
            for i in 0..self.cfg.objects.len() {
                if self.cfg.objects[i].parent.is_none() {
                    self.enable(now, i as u32);
                }
            }
            self.dispatch(now, t);
        }
        self.http.on_timer(now, t);
    }

    fn enable(&mut self, now: Ns, i: u32) {
        self.log[i as usize].enabled = now;
        self.ready.push_back(i);
    }

    /// Bytes arrived on stream `dir` of `conn`.
    pub fn on_delivered(&mut self, now: Ns, conn: ConnId, dir: Dir, t: &mut dyn Transport) {
        let mut ds = std::mem::take(&mut self.deliveries);
        self.http.on_delivered(now, conn, dir, t, &mut ds);
        let mut changed = false;
        for d in ds.drain(..) {
            let k = d.conn.0 as usize;
            let s = self.slots[k];
            if s.req != d.id {
                continue;
            }
            match s.phase {
                Phase::Busy => {
                    let l = &mut self.log[s.obj as usize];
                    if d.first() {
                        l.first_byte = now;
                    }
                    if d.complete() {
                        l.done = now;
                        self.done += 1;
                        self.stats.bytes += self.cfg.objects[s.obj as usize].size;
                        self.slots[k].phase = Phase::Idle;
                        self.slots[k].idle_since = now;
                        let (a, b) = (self.child_start[s.obj as usize], self.child_start[s.obj as usize + 1]);
                        for j in a..b {
                            let c = self.child[j as usize];
                            self.enable(now, c);
                        }
                        changed = true;
                    }
                }
                Phase::Tls1 if d.complete() => {
                    let tls = &self.cfg.tls;
                    let (q, r) = (tls.client_finished, tls.server_finished);
                    self.slots[k].req = self.http.exchange(now, d.conn, q, 0, r, t);
                    self.slots[k].phase = Phase::Tls2;
                }
                Phase::Tls2 if d.complete() => {
                    self.get(now, k, s.obj, t);
                    changed = true;
                }
                _ => {}
            }
        }
        self.deliveries = ds;
        if changed {
            self.dispatch(now, t);
        }
    }

    fn get(&mut self, now: Ns, k: usize, obj: u32, t: &mut dyn Transport) {
        let size = self.cfg.objects[obj as usize].size;
        self.slots[k].req = self.http.get(now, ConnId(k as u32), size, t);
        self.slots[k].phase = Phase::Busy;
        self.slots[k].obj = obj;
        self.log[obj as usize].requested = now;
        self.stats.requests += 1;
    }

    /// Give waiting objects to connections (see the module docs).
    fn dispatch(&mut self, now: Ns, t: &mut dyn Transport) {
        let waiting = std::mem::take(&mut self.ready);
        let mut keep = VecDeque::with_capacity(waiting.len());
        for i in waiting {
            let o = &self.cfg.objects[i as usize];
            let (origin, tls) = (o.origin, o.tls);
            // An idle connection of the origin, the one idle the longest.
            let idle = (0..self.slots.len())
                .filter(|&k| {
                    let s = &self.slots[k];
                    s.phase == Phase::Idle && s.origin == origin && s.tls == tls
                })
                .min_by_key(|&k| (self.slots[k].idle_since, k));
            if let Some(k) = idle {
                self.log[i as usize].dispatched = now;
                self.log[i as usize].slot = k as u32;
                self.get(now, k, i, t);
                continue;
            }
            let active =
                self.slots.iter().filter(|s| s.origin == origin && !matches!(s.phase, Phase::Closed | Phase::Idle));
            if active.count() >= self.cfg.max_per_origin as usize {
                keep.push_back(i);
                continue;
            }
            let slot = match self.slots.iter().position(|s| s.phase == Phase::Closed) {
                Some(k) => Some(k),
                None => {
                    // At the global limit: close the connection idle the longest, if any.
                    let k = (0..self.slots.len())
                        .filter(|&k| self.slots[k].phase == Phase::Idle)
                        .min_by_key(|&k| (self.slots[k].idle_since, k));
                    if let Some(k) = k {
                        self.http.reset(now, ConnId(k as u32), t);
                        self.slots[k].phase = Phase::Closed;
                        self.stats.closed_at_limit += 1;
                    }
                    k
                }
            };
            let Some(k) = slot else {
                keep.push_back(i);
                continue;
            };
            self.stats.connections_opened += 1;
            self.slots[k].origin = origin;
            self.slots[k].tls = tls;
            self.log[i as usize].dispatched = now;
            self.log[i as usize].slot = k as u32;
            self.log[i as usize].new_connection = true;
            if tls {
                self.stats.tls_handshakes += 1;
                let (q, r) = (self.cfg.tls.client_hello, self.cfg.tls.server_hello);
                self.slots[k].req = self.http.exchange(now, ConnId(k as u32), q, 0, r, t);
                self.slots[k].phase = Phase::Tls1;
                self.slots[k].obj = i;
            } else {
                self.get(now, k, i, t);
            }
        }
        // Nothing is enabled during a pass (objects are enabled on deliveries).
        debug_assert!(self.ready.is_empty());
        self.ready = keep;
    }

    /// End-of-run accounting: every finished object was enabled, dispatched, requested and
    /// received in that order, after its parent finished; the done count matches the log.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut done = 0;
        for (i, l) in self.log.iter().enumerate() {
            if l.done == NEVER {
                continue;
            }
            done += 1;
            if !(l.enabled <= l.dispatched && l.dispatched <= l.requested && l.first_byte <= l.done) {
                return Err(format!("page {}: object {i} times out of order: {l:?}", self.name));
            }
            if let Some(p) = self.cfg.objects[i].parent {
                if self.log[p as usize].done > l.enabled {
                    return Err(format!("page {}: object {i} enabled before its parent {p} finished", self.name));
                }
            }
        }
        if done != self.done {
            return Err(format!("page {}: {} objects counted done, {} logged", self.name, self.done, done));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams that carry whatever was written when told to (no network), opening a slot on the
    /// first write after a reset.
    #[derive(Default)]
    struct Net {
        written: Vec<[u64; 2]>,
        delivered: Vec<[u64; 2]>,
        opened: u32,
        open: Vec<bool>,
        resets: u32,
    }
    impl Transport for Net {
        fn write(&mut self, _now: Ns, conn: ConnId, dir: Dir, bytes: u64) {
            let k = conn.0 as usize;
            if self.written.len() <= k {
                self.written.resize(k + 1, [0; 2]);
                self.delivered.resize(k + 1, [0; 2]);
                self.open.resize(k + 1, false);
            }
            if !self.open[k] {
                self.open[k] = true;
                self.opened += 1;
            }
            self.written[k][(dir == Dir::Response) as usize] += bytes;
        }
        fn delivered(&self, conn: ConnId, dir: Dir) -> u64 {
            self.delivered.get(conn.0 as usize).map_or(0, |d| d[(dir == Dir::Response) as usize])
        }
        fn reset(&mut self, _now: Ns, conn: ConnId) {
            let k = conn.0 as usize;
            self.written[k] = [0; 2];
            self.delivered[k] = [0; 2];
            self.open[k] = false;
            self.resets += 1;
        }
    }

    /// Deliver everything written, one stream at a time, until nothing moves; `now` advances by
    /// 1 per delivery.
    fn run(s: &mut PageSession, net: &mut Net, now: &mut Ns) {
        loop {
            let mut moved = false;
            for k in 0..net.written.len() {
                for d in 0..2 {
                    if net.delivered[k][d] < net.written[k][d] {
                        net.delivered[k][d] = net.written[k][d];
                        *now += 1;
                        let dir = if d == 0 { Dir::Request } else { Dir::Response };
                        s.on_delivered(*now, ConnId(k as u32), dir, net);
                        moved = true;
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn obj(size: u64, origin: u32, parent: Option<u32>) -> PageObject {
        PageObject { size, origin, tls: false, parent }
    }

    fn cfg(objects: Vec<PageObject>) -> PageLoadCfg {
        PageLoadCfg {
            objects,
            max_per_origin: 6,
            max_total: 17,
            http: HttpCfg { request_bytes: 100, ..HttpCfg::default() },
            tls: TlsCfg::default(),
        }
    }

    #[test]
    fn six_connections_per_origin_then_reuse() {
        let mut objs = vec![obj(5_000, 0, None)];
        objs.extend((0..10).map(|_| obj(1_000, 0, Some(0))));
        let c = cfg(objs);
        c.validate().unwrap();
        let mut s = PageSession::new("p".into(), c, 10);
        assert_eq!(s.poll_at(), 10);
        let mut net = Net::default();
        s.on_timer(10, &mut net);
        assert_eq!(net.opened, 1);
        assert_eq!(net.written[0], [100, 0]);
        // The server answers the root; 5 more connections open (6 busy), 4 objects wait.
        let mut now = 10;
        net.delivered[0][0] = 100;
        s.on_delivered(11, ConnId(0), Dir::Request, &mut net);
        assert_eq!(net.written[0][1], 5_000);
        net.delivered[0][1] = 5_000;
        s.on_delivered(12, ConnId(0), Dir::Response, &mut net);
        assert_eq!(net.opened, 6);
        assert_eq!(s.ready.len(), 4);
        run(&mut s, &mut net, &mut now);
        assert!(s.complete());
        assert_eq!(s.stats.connections_opened, 6);
        assert_eq!(s.stats.requests, 11);
        assert_eq!(s.stats.bytes, 15_000);
        assert!(s.log()[1..].iter().all(|l| l.enabled == 12));
        assert_eq!(s.log().iter().filter(|l| l.new_connection).count(), 6);
        assert_eq!(s.plt(), Some(s.log().iter().map(|l| l.done).max().unwrap() - 10));
        s.check_invariants().unwrap();
    }

    #[test]
    fn tls_connection_exchanges_two_flights_before_the_get() {
        let mut c = cfg(vec![PageObject { size: 2_000, origin: 0, tls: true, parent: None }]);
        c.tls = TlsCfg { client_hello: 500, server_hello: 4_000, client_finished: 120, server_finished: 60 };
        let mut s = PageSession::new("p".into(), c, 0);
        let mut net = Net::default();
        s.on_timer(0, &mut net);
        assert_eq!(net.written[0], [500, 0]);
        net.delivered[0][0] = 500;
        s.on_delivered(1, ConnId(0), Dir::Request, &mut net);
        assert_eq!(net.written[0], [500, 4_000]);
        net.delivered[0][1] = 4_000;
        s.on_delivered(2, ConnId(0), Dir::Response, &mut net);
        assert_eq!(net.written[0], [620, 4_000]);
        assert_eq!(s.log()[0].requested, NEVER);
        net.delivered[0][0] = 620;
        s.on_delivered(3, ConnId(0), Dir::Request, &mut net);
        net.delivered[0][1] = 4_060;
        s.on_delivered(4, ConnId(0), Dir::Response, &mut net);
        assert_eq!(s.log()[0].requested, 4);
        assert_eq!(net.written[0], [720, 4_060]);
        let mut now = 4;
        run(&mut s, &mut net, &mut now);
        assert_eq!(s.log()[0].done, 6);
        assert_eq!((s.stats.tls_handshakes, s.stats.connections_opened), (1, 1));
        s.check_invariants().unwrap();
    }

    #[test]
    fn global_limit_closes_the_oldest_idle_connection() {
        // Three origins, two connections allowed in all: origin 2 waits until origin 0's
        // connection is idle and is closed for it.
        let mut c = cfg(vec![obj(100, 0, None), obj(100, 1, None), obj(100, 2, None), obj(100, 1, Some(1))]);
        c.max_total = 2;
        let mut s = PageSession::new("p".into(), c, 0);
        let mut net = Net::default();
        s.on_timer(0, &mut net);
        assert_eq!(net.opened, 2);
        assert_eq!(s.ready.len(), 1);
        let mut now = 0;
        run(&mut s, &mut net, &mut now);
        assert!(s.complete());
        assert_eq!(s.stats.closed_at_limit, 1);
        assert_eq!(net.resets, 1);
        assert_eq!(s.log()[2].slot, 0);
        // Object 3 (origin 1) reused origin 1's idle connection.
        assert!(!s.log()[3].new_connection);
        assert_eq!(s.log()[3].slot, 1);
        s.check_invariants().unwrap();
    }

    #[test]
    fn bad_pages_are_refused_with_the_field() {
        let c = cfg(vec![obj(0, 0, None)]);
        assert!(c.validate().unwrap_err().starts_with("objects[0].size"));
        let c = cfg(vec![obj(1, 0, Some(0))]);
        assert!(c.validate().unwrap_err().starts_with("objects[0].parent"));
        assert!(cfg(vec![]).validate().is_err());
    }
}
