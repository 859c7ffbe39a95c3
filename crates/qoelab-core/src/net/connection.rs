//! TCP connections of the packet driver: one connection is two half-connections (flows), the
//! request half (data client -> server, its ACKs server -> client) and the response half (data
//! server -> client, its ACKs client -> server). [`World::pair_halves`] makes them behave as one
//! connection where a real host would see one.

use super::endpoint::Ep;
use super::error::SimError;
use super::world::World;
use crate::ids::{FlowId, NodeId};
use crate::params::Params;
use crate::session::Dir;
use crate::tcp::TcpConfig;
use crate::time::{Ns, NEVER};

/// The transport of a connection and its options.
#[derive(Clone, Copy)]
pub(crate) enum ConnTransport<'a> {
    Tcp(&'a TcpConfig),
    Quic(&'a crate::quic::QuicConfig),
}

/// Which stream of a connection `fid` is, if it is one of the current halves `conn` of its slot.
pub(crate) fn stream_of(conn: Option<&(FlowId, FlowId)>, fid: FlowId) -> Option<Dir> {
    let &(rq, rs) = conn?;
    if fid == rq {
        Some(Dir::Request)
    } else if fid == rs {
        Some(Dir::Response)
    } else {
        None
    }
}

/// Lower a session's pending timer `sched` to `t` (not before `now`): the time to schedule, if
/// it moved.
pub(crate) fn lower_timer(sched: &mut Ns, t: Ns, now: Ns) -> Option<Ns> {
    if t != NEVER && t < *sched {
        *sched = t.max(now);
        Some(*sched)
    } else {
        None
    }
}

impl World {
    /// Open a connection from `client` to `server` as two half-connections of transport `tr`,
    /// `<base>/req<suffix>` (kind `req_kind`, with the handshake that models the connection setup)
    /// and `<base>/resp<suffix>` (kind `resp_kind`, established), paired; both in slot `slot`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open_halves(
        &mut self,
        p: &str,
        (base, suffix): (&str, &str),
        (req_kind, resp_kind): (&'static str, &'static str),
        (client, server): (NodeId, NodeId),
        (cc, ccp): (&str, &Params),
        tr: ConnTransport,
        slot: u32,
        start: Ns,
    ) -> Result<(FlowId, FlowId), SimError> {
        let (rq, rs) = (format!("{base}/req{suffix}"), format!("{base}/resp{suffix}"));
        let (req, resp) = match tr {
            ConnTransport::Tcp(tcfg) => {
                let req = self.add_tcp_flow(p, &rq, req_kind, client, server, cc, ccp, tcfg, start)?;
                let down = TcpConfig { handshake: false, ..tcfg.clone() };
                (req, self.add_tcp_flow(p, &rs, resp_kind, server, client, cc, ccp, &down, start)?)
            }
            ConnTransport::Quic(qcfg) => {
                let req = self.add_quic_flow(p, &rq, req_kind, client, server, cc, ccp, qcfg, start)?;
                let down = crate::quic::QuicConfig { handshake: false, ..qcfg.clone() };
                (req, self.add_quic_flow(p, &rs, resp_kind, server, client, cc, ccp, &down, start)?)
            }
        };
        self.flows[req].slot = slot;
        self.flows[resp].slot = slot;
        self.pair_halves(req, resp);
        Ok((req, resp))
    }

    /// Append `bytes` to the sending side of flow `fid` (a TCP half-connection) and send what it can.
    pub(crate) fn write_stream(&mut self, now: Ns, fid: FlowId, bytes: u64) {
        self.write_stream_with(now, fid, bytes, true)
    }

    /// Append `bytes` to the sending side of flow `fid` (a TCP or QUIC half-connection), reliably
    /// or not (QUIC; TCP is always reliable), and send what it can.
    pub(crate) fn write_stream_with(&mut self, now: Ns, fid: FlowId, bytes: u64, reliable: bool) {
        let tx = self.flows[fid].tx;
        match &mut self.eps[tx] {
            Ep::TcpTx(s) => s.write(now, bytes),
            Ep::QuicTx(s) => s.write_with(now, bytes, reliable),
            _ => {}
        }
        self.drain_ep(tx);
    }

    /// Stop sending stream bytes `[a, b)` of flow `fid` (QUIC; see [`crate::quic::QuicSender::skip`]).
    pub(crate) fn skip_stream(&mut self, fid: FlowId, a: u64, b: u64) {
        let tx = self.flows[fid].tx;
        if let Ep::QuicTx(s) = &mut self.eps[tx] {
            s.skip(a, b);
        }
        self.drain_ep(tx);
    }

    /// Close the client's side of connection (`rq`, `rs`) at once and send a reset to the server,
    /// whose side keeps sending until it arrives.
    pub(crate) fn close_connection(&mut self, rq: FlowId, rs: FlowId) {
        let now = self.engine.now();
        self.flows[rq].closing = Some(rs);
        self.flows[rs].closing = Some(rq);
        self.flows[rq].closed_at.get_or_insert(now);
        self.flows[rs].closed_at.get_or_insert(now);
        let (a, b) = (self.flows[rq].tx, self.flows[rs].rx);
        self.close_ep(a);
        self.close_ep(b);
        let client = self.flows[rq].src;
        self.send_reset(rq, client);
    }

    /// Make `req` and `resp` the two halves of one TCP connection (`resp` runs opposite to `req`).
    ///
    /// * **FQ classification** (unless the request half's TCP config has `connection_hash =
    ///   false`): the response half hashes on the request half's key (the key of its name), so
    ///   that the packets of both halves in one direction carry one hash, as the 5-tuple of one
    ///   connection does: client -> server (the requests and the ACKs of the responses)
    ///   `direction_hash(key, false)`, server -> client (the responses and the ACKs of the
    ///   requests) `direction_hash(key, true)`.
    /// * **Receive time**: each half's sender is told when the other half's receiver on the same
    ///   host gets a segment ([`crate::tcp::TcpSender::note_peer_rx`]; FreeBSD's restart after
    ///   idle looks at the last segment received on the connection).
    ///
    /// Call it right after creating both halves, before any packet is sent. Panics if the flows
    /// are not two TCP half-connections in opposite directions (a driver bug).
    pub(crate) fn pair_halves(&mut self, req: FlowId, resp: FlowId) {
        let (a, b) = (&self.flows[req], &self.flows[resp]);
        assert!(req != resp && a.src == b.dst && a.dst == b.src, "pair_halves: halves must run in opposite directions");
        let (req_tx, resp_tx, resp_rx, key) = (a.tx, b.tx, b.rx, a.hash_key);
        // QUIC always shares the connection's hash; TCP unless its config opts out
        let (quic, share) = match &self.eps[req_tx] {
            Ep::QuicTx(_) => (true, true),
            Ep::TcpTx(s) => (false, s.config().connection_hash),
            _ => panic!("pair_halves: the request half is not TCP"),
        };
        if share {
            match &mut self.eps[resp_tx] {
                Ep::QuicTx(s) if quic => s.set_hash_key(key, true),
                Ep::TcpTx(s) if !quic => s.set_hash_key(key, true),
                _ => panic!("pair_halves: the response half is not {}", if quic { "QUIC" } else { "TCP" }),
            }
            match &mut self.eps[resp_rx] {
                Ep::QuicRx(r) => r.set_hash_key(key, true),
                Ep::TcpRx(r) => r.set_hash_key(key, true),
                _ => {}
            }
            (self.flows[resp].hash_key, self.flows[resp].hash_rev) = (key, true);
        }
        self.flows[req].peer = Some(resp);
        self.flows[resp].peer = Some(req);
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::FlowId;
    use crate::net::config::SimConfig;
    use crate::net::World;
    use crate::packet::{direction_hash, flags, name_key};
    use crate::time::{MS, SEC};

    /// Two hosts and a link each way; the world gets two TCP halves opened by hand as the
    /// session adapter opens a connection (the test drives their endpoints itself).
    fn world(tcp: &str) -> (World, FlowId, FlowId) {
        let cfg = format!(
            r#"{{"name": "pair", "seed": 1, "duration": {dur},
            "nodes": [{{"name": "client"}}, {{"name": "server"}}],
            "links": [
              {{"name": "up", "from": 0, "to": 1, "rate_bps": 10000000, "delay": {d}}},
              {{"name": "down", "from": 1, "to": 0, "rate_bps": 10000000, "delay": {d}}}]}}"#,
            dur = 2 * SEC,
            d = 10 * MS
        );
        let mut w = World::build(SimConfig::from_json(&cfg).unwrap()).unwrap();
        let tcfg = crate::net::endpoint::tcp_config("t", &serde_json::from_str(tcp).unwrap()).unwrap();
        let p = crate::params::Params::new();
        let (c, s) = (crate::ids::NodeId(0), crate::ids::NodeId(1));
        let req = w.add_tcp_flow("t", "req", "http_req", c, s, "newreno", &p, &tcfg, 0).unwrap();
        let mut down = tcfg.clone();
        down.handshake = false;
        let resp = w.add_tcp_flow("t", "resp", "video", s, c, "newreno", &p, &down, 0).unwrap();
        (w, req, resp)
    }

    /// Run a request (300 B) and a response (200 kB) by driving the four endpoints directly
    /// (instant delivery, 1-ms steps, timers honoured) and collect every packet they emit:
    /// [(from node, flow, carries data or SYN, hash)].
    fn exchange(w: &mut World, req: FlowId, resp: FlowId) -> Vec<(u16, u32, bool, u32)> {
        use crate::net::endpoint::Ep;
        let eps: Vec<_> = [req, resp].iter().flat_map(|&f| [w.flows[f].tx, w.flows[f].rx]).collect();
        for (f, bytes) in [(req, 300), (resp, 200_000)] {
            if let Ep::TcpTx(s) = &mut w.eps[w.flows[f].tx] {
                s.write(0, bytes);
            }
        }
        let mut seen = Vec::new();
        let mut now = 0;
        while now < 2 * SEC {
            let mut moved = true;
            while moved {
                moved = false;
                for &ep in &eps {
                    let p = match &mut w.eps[ep] {
                        Ep::TcpTx(s) => {
                            if s.poll_at() <= now {
                                s.on_timer(now);
                            }
                            s.poll_transmit(now)
                        }
                        Ep::TcpRx(r) => {
                            if r.poll_at() <= now {
                                r.on_timer(now);
                            }
                            r.poll_transmit(now)
                        }
                        _ => None,
                    };
                    let Some(p) = p else { continue };
                    moved = true;
                    seen.push((p.src, p.flow, p.payload > 0 || p.has(flags::SYN), p.hash));
                    let f = &w.flows[FlowId(p.flow)];
                    let to = if p.dst == f.dst.0 { f.rx } else { f.tx };
                    match &mut w.eps[to] {
                        Ep::TcpTx(s) => s.on_packet(now, &p),
                        Ep::TcpRx(r) => r.on_packet(now, &p),
                        _ => {}
                    }
                }
            }
            now += MS;
        }
        assert_eq!(w.flow_bytes_received(req), 300);
        assert_eq!(w.flow_bytes_received(resp), 200_000);
        seen
    }

    #[test]
    fn paired_halves_share_one_hash_per_direction() {
        let (mut w, req, resp) = world("{}");
        w.pair_halves(req, resp);
        let seen = exchange(&mut w, req, resp);
        let key = name_key(&w.flows[req].name);
        let (up, down) = (direction_hash(key, false), direction_hash(key, true));
        assert_ne!(up, down);
        let mut kinds = std::collections::BTreeSet::new();
        for (from, flow, data, hash) in &seen {
            // node 0 = client: client -> server packets hash as `up`
            assert_eq!(*hash, if *from == 0 { up } else { down }, "from {from} flow {flow} data {data}");
            kinds.insert((*from, *flow, *data));
        }
        // every kind of packet was seen: GET data and response ACKs up, response data and
        // request ACKs down
        for k in [(0, req.0, true), (0, resp.0, false), (1, resp.0, true), (1, req.0, false)] {
            assert!(kinds.contains(&k), "{k:?} missing from {kinds:?}");
        }
        assert_eq!(w.flows[req].peer, Some(resp));
        assert_eq!(w.flows[resp].peer, Some(req));
    }

    #[test]
    fn unpaired_or_opted_out_halves_hash_per_half() {
        for (tcp, pair) in [("{}", false), (r#"{"connection_hash": false}"#, true)] {
            let (mut w, req, resp) = world(tcp);
            if pair {
                w.pair_halves(req, resp);
            }
            let seen = exchange(&mut w, req, resp);
            for (from, flow, _, hash) in &seen {
                // each half on the key of its own name, data forward, ACKs reversed
                let f = &w.flows[FlowId(*flow)];
                assert_eq!(*hash, direction_hash(name_key(&f.name), *from != f.src.0));
            }
            assert!(seen.iter().any(|x| x.1 == resp.0) && seen.iter().any(|x| x.1 == req.0));
        }
    }
}
