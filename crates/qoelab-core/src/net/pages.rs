//! Web page loads in the packet simulator: the driver side of [`PageSession`].
//!
//! A page load is a browser on the client host fetching a page from the server host (all its
//! origins are served there: one path, one RTT). Its connection slots are opened lazily: the
//! first write to a closed slot opens a TCP connection (two half-connections, as for video
//! clients; the request half's three-way handshake is the connection setup), and a reset closes
//! the slot's connection (the reset travels to the server as for a video client) without opening
//! another. Writes and resets are buffered during a session call and applied after it, in order.

use super::clients::{Buffered, ConnOp, CLOSED};
use super::config::PageCfg;
use super::connection::ConnTransport::Tcp;
use super::connection::{lower_timer, stream_of};
use super::endpoint::tcp_config;
use super::error::{serr, SimError};
use super::world::{target, World, K_PAGE};
use crate::ids::{FlowId, Id, NodeId, PageId};
use crate::params::Params;
use crate::report::table::Table;
use crate::session::page::PageSession;
use crate::session::{ConnId, Dir, Transport};
use crate::time::{Ns, NEVER};

/// A page load of the packet driver.
pub(crate) struct PageRt {
    pub session: PageSession,
    pub cfg: PageCfg,
    /// Per slot: the current connection's (request, response) flows, or [`CLOSED`].
    pub conns: Vec<(FlowId, FlowId)>,
    /// Connections opened so far.
    pub opened: u32,
    pub sched: Ns,
}

impl World {
    /// Check page entry `p` and schedule its start.
    pub(crate) fn add_page(&mut self, p: &str, c: &PageCfg) -> Result<(), SimError> {
        c.load.validate().map_err(|e| serr(format!("{p}.load.{e}"), ""))?;
        self.check_nodes(p, c.server, c.client, true)?;
        let tcfg = tcp_config(p, &c.tcp)?;
        let ccp = Params::from_value(&c.cc_params).map_err(|e| serr(format!("{p}.cc_params"), e.msg))?;
        // the controller's parameters are checked here; connections build their own when they open
        let ctx = crate::cc::CcBuildCtx {
            mss: tcfg.mss as u64,
            initial_window: tcfg.initial_window as u64,
            abc_l: tcfg.abc_l as u64,
            seed: 0,
        };
        crate::cc::build(&c.cc, &ccp, &ctx).map_err(|e| super::world::cc_err(p, e))?;
        let session = PageSession::new(c.name.clone(), c.load.clone(), c.start);
        let pi = self.pages.next_id();
        let slots = session.slots() as usize;
        self.pages.push(PageRt { session, cfg: c.clone(), conns: vec![CLOSED; slots], opened: 0, sched: NEVER });
        self.page_sched(pi, c.start);
        Ok(())
    }

    fn page_sched(&mut self, pi: PageId, t: Ns) {
        let now = self.engine.now();
        if let Some(t) = lower_timer(&mut self.pages[pi].sched, t, now) {
            self.engine.schedule_far(t, target(K_PAGE, pi));
        }
    }

    pub(crate) fn on_page_timer(&mut self, pi: PageId) {
        if self.pages[pi].sched != self.engine.now() {
            return;
        }
        self.pages[pi].sched = NEVER;
        self.with_page(pi, |s, now, t| s.on_timer(now, t));
    }

    /// A TCP receiver of page `pi`'s connection got a packet (called after on_packet).
    pub(crate) fn page_on_rx(&mut self, pi: PageId, fid: FlowId) {
        let k = self.flows[fid].slot;
        let Some(dir) = stream_of(self.pages[pi].conns.get(k as usize), fid) else { return };
        self.with_page(pi, |s, now, t| s.on_delivered(now, ConnId(k), dir, t));
    }

    fn with_page(&mut self, pi: PageId, f: impl FnOnce(&mut PageSession, Ns, &mut dyn Transport)) {
        let now = self.engine.now();
        let mut ops = std::mem::take(&mut self.conn_ops);
        let pg = &mut self.pages[pi];
        let mut t = Buffered { flows: &self.flows, eps: &self.eps, conns: &pg.conns, ops: &mut ops, reset: 0 };
        f(&mut pg.session, now, &mut t);
        for op in ops.drain(..) {
            match op {
                ConnOp::Write(conn, dir, bytes, _) => {
                    let k = conn.0 as usize;
                    if self.pages[pi].conns[k] == CLOSED {
                        self.page_open(pi, conn.0);
                    }
                    let (rq, rs) = self.pages[pi].conns[k];
                    self.write_stream(now, if dir == Dir::Request { rq } else { rs }, bytes);
                }
                ConnOp::Reset(conn) => self.page_close(pi, conn.0),
                ConnOp::Skip(..) => {} // page loads run over TCP
            }
        }
        self.conn_ops = ops;
        let t = self.pages[pi].session.poll_at();
        self.page_sched(pi, t);
    }

    /// Open a TCP connection in `slot` of page `pi` now.
    fn page_open(&mut self, pi: PageId, slot: u32) {
        let now = self.engine.now();
        let c = &self.pages[pi].cfg;
        let (server, client) = (NodeId::from_index(c.server), NodeId::from_index(c.client));
        let p = format!("pages[{}]", pi.index());
        let tcfg = tcp_config(&p, &c.tcp).expect("checked at build");
        let ccp = Params::from_value(&c.cc_params).expect("checked at build");
        let (cc, base) = (c.cc.clone(), format!("{}/c{}", c.name, self.pages[pi].opened));
        let (req, resp) = self
            .open_halves(&p, (&base, ""), ("page_req", "page"), (client, server), (&cc, &ccp), Tcp(&tcfg), slot, now)
            .expect("checked at build");
        self.flows[req].page = Some(pi);
        self.flows[resp].page = Some(pi);
        let pg = &mut self.pages[pi];
        pg.conns[slot as usize] = (req, resp);
        pg.opened += 1;
    }

    /// Close the connection in `slot` of page `pi`: the client's side closes at once, a reset
    /// travels to the server.
    fn page_close(&mut self, pi: PageId, slot: u32) {
        let (rq, rs) = self.pages[pi].conns[slot as usize];
        if (rq, rs) == CLOSED {
            return;
        }
        self.close_connection(rq, rs);
        self.pages[pi].conns[slot as usize] = CLOSED;
    }

    /// Page loads for the summary: (name, page load time, objects done / all, bytes, connections
    /// opened, TLS handshakes, requests).
    pub(crate) fn page_summaries(&self) -> Vec<crate::report::summary::PageSummary> {
        self.pages
            .iter()
            .map(|pg| {
                let s = &pg.session;
                crate::report::summary::PageSummary {
                    name: s.name.clone(),
                    start_s: crate::report::summary::r6(crate::time::secs(s.start())),
                    plt_s: s.plt().and_then(|x| crate::report::summary::r6(crate::time::secs(x))),
                    objects: s.log().len(),
                    objects_done: s.log().iter().filter(|l| l.done != NEVER).count(),
                    bytes: s.stats.bytes,
                    connections: s.stats.connections_opened,
                    tls_handshakes: s.stats.tls_handshakes,
                    closed_at_limit: s.stats.closed_at_limit,
                    requests: s.stats.requests,
                }
            })
            .collect()
    }

    /// The `pages` table: one row per object of every page load.
    pub(crate) fn pages_table(&self) -> Option<Table> {
        if self.pages.is_empty() {
            return None;
        }
        let mut t = Table::new(
            "pages",
            &[
                ("page", 's'),
                ("object", 'i'),
                ("origin", 'i'),
                ("tls", 'i'),
                ("parent", 'i'),
                ("size", 'i'),
                ("slot", 'i'),
                ("new_connection", 'i'),
                ("enabled_s", 'f'),
                ("dispatched_s", 'f'),
                ("requested_s", 'f'),
                ("first_byte_s", 'f'),
                ("done_s", 'f'),
            ],
        );
        let sec = |x: Ns| if x == NEVER { f64::NAN } else { crate::time::secs(x) };
        for pg in &self.pages {
            let s = &pg.session;
            for (i, (o, l)) in s.cfg().objects.iter().zip(s.log()).enumerate() {
                t.s(0, &s.name);
                t.i(1, i as i64);
                t.i(2, o.origin as i64);
                t.i(3, o.tls as i64);
                t.i(4, o.parent.map_or(-1, |p| p as i64));
                t.i(5, o.size as i64);
                t.i(6, if l.slot == u32::MAX { -1 } else { l.slot as i64 });
                t.i(7, l.new_connection as i64);
                t.f(8, sec(l.enabled));
                t.f(9, sec(l.dispatched));
                t.f(10, sec(l.requested));
                t.f(11, sec(l.first_byte));
                t.f(12, sec(l.done));
            }
        }
        Some(t)
    }
}
