//! The packet driver's video-client methods: build clients, run their sessions on timer and
//! packet events with a buffered [`Transport`](crate::session::Transport), apply their
//! operations on simulated TCP, and report them. Types are in [`super::clients`].

use super::clients::{session_parts, stream_delivered, Buffered, ClientRt, ConnOp};
use super::config::ClientCfg;
use super::connection::{lower_timer, stream_of, ConnTransport};
use super::endpoint::tcp_config;
use super::error::{serr, SimError};
use super::world::{target, World, K_CLIENT};
use crate::ids::{ClientId, FlowId, Id, LinkId, NodeId};
use crate::params::Params;
use crate::player::Player;
use crate::report::summary::LossPhaseCounts;
use crate::report::PacketClientInfo;
use crate::session::{ConnId, Dir, Transport, VideoSession};
use crate::time::{Ns, NEVER};

/// A client's QUIC configuration when its transport is "quic" (None: TCP).
pub(crate) fn client_quic(p: &str, c: &ClientCfg) -> Result<Option<crate::quic::QuicConfig>, SimError> {
    match c.transport.as_deref() {
        None | Some("tcp") => {
            if !empty(&c.quic) {
                return Err(serr(format!("{p}.quic"), "QUIC options apply only to transport \"quic\""));
            }
            Ok(None)
        }
        Some("quic") => {
            if !empty(&c.tcp) {
                return Err(serr(format!("{p}.tcp"), "TCP options do not apply to transport \"quic\""));
            }
            Ok(Some(super::world::quic_config(p, &c.quic)?))
        }
        Some(t) => Err(serr(format!("{p}.transport"), format!("expected \"tcp\" or \"quic\", not \"{t}\""))),
    }
}

/// An absent or empty options table.
fn empty(v: &serde_json::Value) -> bool {
    v.is_null() || v.as_object().is_some_and(|o| o.is_empty())
}

impl World {
    /// Build a client's session (player + ABR + data plane) from its config entry `p`, checking
    /// everything.
    pub(crate) fn build_session(&self, p: &str, c: &ClientCfg) -> Result<VideoSession, SimError> {
        let (video, abr, pcfg, plane) = session_parts(p, c, &self.cfg, self.abr_factory.as_ref())?;
        let player = Player::new(pcfg, video, abr, c.start);
        Ok(VideoSession::with_plane(c.name.clone(), c.abr.clone(), player, c.http.clone(), plane, c.rtt))
    }

    /// Create a client from config entry `p` (at build time or when a session arrives).
    pub(crate) fn add_client(&mut self, p: &str, c: &ClientCfg) -> Result<(), SimError> {
        let session = self.build_session(p, c)?;
        self.check_nodes(p, c.server, c.client, true)?;
        let ci = self.clients.next_id();
        let slots = session.connection_slots();
        let probe = session.probe_slot();
        let mut conns = Vec::with_capacity(slots as usize);
        for slot in 0..slots {
            conns.push(self.open_connection(p, ci, c, slot, 0, probe == Some(slot), c.start)?);
        }
        let resp_flows = conns.iter().enumerate().filter(|(k, _)| probe != Some(*k as u32)).map(|x| x.1 .1).collect();
        self.clients.push(ClientRt {
            session,
            cfg: c.clone(),
            conns,
            resp_flows,
            resets: 0,
            sched: NEVER,
            started: false,
        });
        self.clients_sched(ci, c.start);
        Ok(())
    }

    /// Open connection number `k` of client `ci` in slot `slot`: (request flow, response flow).
    #[allow(clippy::too_many_arguments)]
    fn open_connection(
        &mut self,
        p: &str,
        ci: ClientId,
        c: &ClientCfg,
        slot: u32,
        k: u32,
        probe: bool,
        start: Ns,
    ) -> Result<(FlowId, FlowId), SimError> {
        let (server, client) = (NodeId::from_index(c.server), NodeId::from_index(c.client));
        let ccp = Params::from_value(&c.cc_params).map_err(|e| serr(format!("{p}.cc_params"), e.msg))?;
        let suffix = if k == 0 { String::new() } else { format!("~{k}") };
        let name = if slot == 0 { c.name.clone() } else { format!("{}/c{slot}", c.name) };
        let kind = if probe { "probe" } else { "video" };
        let (quic, tcp);
        let tr = match client_quic(p, c)? {
            Some(q) => {
                quic = q;
                ConnTransport::Quic(&quic)
            }
            None => {
                tcp = tcp_config(p, &c.tcp)?;
                ConnTransport::Tcp(&tcp)
            }
        };
        let (req, resp) = self.open_halves(
            p,
            (&name, &suffix),
            ("http_req", kind),
            (client, server),
            (&c.cc, &ccp),
            tr,
            slot,
            start,
        )?;
        self.flows[req].client = Some(ci);
        self.flows[resp].client = Some(ci);
        if kind == "video" {
            self.video_flows.push(resp);
        }
        Ok((req, resp))
    }

    fn clients_sched(&mut self, ci: ClientId, t: Ns) {
        let now = self.engine.now();
        if let Some(t) = lower_timer(&mut self.clients[ci].sched, t, now) {
            self.engine.schedule_far(t, target(K_CLIENT, ci));
        }
    }

    /// Client timer.
    pub(crate) fn on_client_timer(&mut self, ci: ClientId) {
        let now = self.engine.now();
        if self.clients[ci].sched != now {
            return;
        }
        self.clients[ci].sched = NEVER;
        if !self.clients[ci].started {
            self.clients[ci].started = true;
            for k in 0..self.clients[ci].conns.len() {
                let tx = self.flows[self.clients[ci].conns[k].0].tx;
                self.drain_ep(tx);
            }
        }
        self.with_session(ci, |s, now, t| s.on_timer(now, t));
    }

    /// A TCP receiver of client `ci`'s connection got a packet (called after on_packet).
    pub(crate) fn client_on_rx(&mut self, ci: ClientId, fid: FlowId) {
        // The flow's slot; the flow is one of the slot's current halves unless it was replaced.
        let k = self.flows[fid].slot;
        let Some(dir) = stream_of(self.clients[ci].conns.get(k as usize), fid) else { return };
        if dir == Dir::Response && self.client_rx_quiet(ci, fid, k) {
            return;
        }
        self.with_session(ci, |s, now, t| s.on_delivered(now, ConnId(k), dir, t));
    }

    /// Most response packets only advance byte counters (`VideoSession::on_delivered_quiet`):
    /// then the session is updated without the buffered transport and the timer bookkeeping of
    /// a full call, which would issue nothing and keep the same wake-up. Same results.
    #[inline]
    fn client_rx_quiet(&mut self, ci: ClientId, fid: FlowId, k: u32) -> bool {
        let now = self.engine.now();
        let got = stream_delivered(&self.eps, &self.flows[fid]);
        let c = &mut self.clients[ci];
        // (a quiet delivery does not move the session's wake-up; if the full call would lower
        // the client's timer anyway, let it)
        let t = c.session.poll_at();
        if t != NEVER && t < c.sched {
            return false;
        }
        c.session.on_delivered_quiet(now, ConnId(k), got)
    }

    /// Call the session with a buffered transport, apply its operations, reschedule its timer.
    fn with_session(&mut self, ci: ClientId, f: impl FnOnce(&mut VideoSession, Ns, &mut dyn Transport)) {
        let now = self.engine.now();
        let mut ops = std::mem::take(&mut self.conn_ops);
        let c = &mut self.clients[ci];
        let mut t = Buffered { flows: &self.flows, eps: &self.eps, conns: &c.conns, ops: &mut ops, reset: 0 };
        f(&mut c.session, now, &mut t);
        for op in ops.drain(..) {
            match op {
                ConnOp::Write(conn, dir, bytes, reliable) => {
                    let (rq, rs) = self.clients[ci].conns[conn.0 as usize];
                    self.write_stream_with(now, if dir == Dir::Request { rq } else { rs }, bytes, reliable);
                }
                ConnOp::Skip(conn, dir, a, b) => {
                    let (rq, rs) = self.clients[ci].conns[conn.0 as usize];
                    self.skip_stream(if dir == Dir::Request { rq } else { rs }, a, b);
                }
                ConnOp::Reset(conn) => self.client_reset(ci, conn.0),
            }
        }
        self.conn_ops = ops;
        let t = self.clients[ci].session.poll_at();
        self.clients_sched(ci, t);
    }

    /// Reset the connection in `slot`: the client's side closes at once and a reset travels to
    /// the server, whose side keeps sending until it arrives; a new connection opens in the slot.
    fn client_reset(&mut self, ci: ClientId, slot: u32) {
        let now = self.engine.now();
        let (rq, rs) = self.clients[ci].conns[slot as usize];
        self.close_connection(rq, rs);
        self.clients[ci].resets += 1;
        let k = self.clients[ci].resets;
        let cfg = self.clients[ci].cfg.clone();
        let probe = self.clients[ci].session.probe_slot() == Some(slot);
        let (nq, ns) = self
            .open_connection("clients", ci, &cfg, slot, k, probe, now)
            .expect("connection parameters were checked at build");
        let c = &mut self.clients[ci];
        c.conns[slot as usize] = (nq, ns);
        if !probe {
            c.resp_flows.push(ns);
        }
        self.provider_reconnect(ci);
        let tx = self.flows[nq].tx;
        self.drain_ep(tx);
    }
}

impl World {
    /// Session views of the clients, with what only the packet network knows of them.
    pub(crate) fn client_reports(&self) -> Vec<(crate::session::SessionView<'_>, Option<PacketClientInfo>)> {
        let phases = self.loss_phases();
        self.clients
            .iter()
            .map(|c| {
                let flows = &c.resp_flows;
                let (sum, n) =
                    flows.iter().fold((0.0, 0u64), |a, &f| (a.0 + self.flows[f].srtt_sum, a.1 + self.flows[f].srtt_n));
                let loss_phases = phases.as_ref().map(|ph| {
                    let mut k = LossPhaseCounts::default();
                    for (&f, &x) in ph.iter() {
                        if flows.contains(&FlowId(f as u32)) {
                            k.b += x[0];
                            k.t += x[1];
                            k.c += x[2];
                        }
                    }
                    k
                });
                let info = PacketClientInfo {
                    flow: flows[0].index(),
                    connections: c.session.connections(),
                    srtt_mean_ms: (n > 0).then(|| (sum / n as f64 / 1e3).round() / 1e3),
                    loss_phases,
                };
                (c.session.view(), Some(info))
            })
            .collect()
    }

    /// Loss phases of every dropped data packet of a video flow at the monitored links, from the
    /// packet log: per flow id, counts [B, T, C].
    fn loss_phases(&self) -> Option<std::collections::BTreeMap<u64, [u64; 3]>> {
        use crate::metrics::lossphase::{classify_losses, LossPhase, LossPhaseRules, PktEvent, PktKind};
        if !self.cfg.output.loss_phases {
            return None;
        }
        let t = self.rec.packets.as_ref()?;
        let col = |name: &str| -> &Vec<i64> {
            match &t.columns.iter().find(|c| c.0 == name).expect("packet log column").1 {
                crate::report::table::Column::I64(v) => v,
                _ => unreachable!(),
            }
        };
        let (tm, link, ev, flow, seq, ack, payload) =
            (col("time_ns"), col("link"), col("event"), col("flow"), col("seq"), col("ack"), col("payload"));
        let video: std::collections::BTreeSet<i64> =
            self.flows.iter().enumerate().filter(|(_, f)| f.kind == "video").map(|(i, _)| i as i64).collect();
        let mut events: Vec<PktEvent> = Vec::new();
        // The latest arrival index of (link, flow, seq), to mark it dropped.
        let mut last: std::collections::HashMap<(i64, i64, i64), usize> = std::collections::HashMap::new();
        for i in 0..tm.len() {
            if !video.contains(&flow[i]) || !self.links[LinkId(link[i] as u32)].monitor {
                continue;
            }
            let is_data = payload[i] > 0;
            match ev[i] {
                0 => {
                    let kind = if is_data {
                        PktKind::Data { seq: seq[i] as u64 }
                    } else {
                        PktKind::Ack { ack: ack[i] as u64 }
                    };
                    if is_data {
                        last.insert((link[i], flow[i], seq[i]), events.len());
                    }
                    events.push(PktEvent { t: tm[i] as u64, flow: flow[i] as u64, kind, dropped: false });
                }
                2 if is_data => {
                    if let Some(&j) = last.get(&(link[i], flow[i], seq[i])) {
                        events[j].dropped = true;
                    }
                }
                // a link loss is drawn at the ingress, before the queue: the packet has no arrival
                // row, its loss row is its arrival (a dropped one)
                3 if is_data => {
                    let kind = PktKind::Data { seq: seq[i] as u64 };
                    events.push(PktEvent { t: tm[i] as u64, flow: flow[i] as u64, kind, dropped: true });
                }
                _ => {}
            }
        }
        let mut out = std::collections::BTreeMap::new();
        for (i, ph) in classify_losses(&events, &LossPhaseRules::default()) {
            let e: &mut [u64; 3] = out.entry(events[i].flow).or_insert([0; 3]);
            match ph {
                LossPhase::B => e[0] += 1,
                LossPhase::T => e[1] += 1,
                LossPhase::C => e[2] += 1,
            }
        }
        Some(out)
    }
}
