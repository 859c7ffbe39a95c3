//! Video clients in the packet simulator: a sans-IO [`Player`] + ABR driving HTTP/1.1 over a
//! persistent simulated TCP connection.
//!
//! HTTP model: one connection per client = two TCP half-connections (requests client -> server,
//! responses server -> client). A GET is `request_bytes` on the request half; when the server
//! has received all of it, it waits `think` and writes `response_header_bytes` + the segment's
//! bytes on the response half. The connection persists across segments, so cwnd, the RTT
//! estimate and slow-start-after-idle carry over as on a real host. Abandoning a download resets
//! the connection (as a browser aborting an HTTP/1.1 request does): the old halves are discarded
//! (their packets still in flight are dropped on arrival) and a new connection is opened for the
//! retry. Pure ACKs are not piggybacked on the opposite half's data (one-segment requests make
//! this immaterial).

use super::config::ClientCfg;
use super::world::{Ep, World};
use crate::params::Params;
use crate::player::{Player, PlayerConfig};
use crate::time::{Ns, NEVER};
use std::sync::Arc;

/// The request in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HttpReq {
    /// End offset of this request in the request half's byte stream.
    req_end: u64,
    /// Offset where this response starts in the response half's stream (set when the server
    /// writes it).
    resp_start: Option<u64>,
    body: u64,
    first_byte: bool,
    last_progress: Ns,
    /// When the server writes the response (think time), if pending.
    serve_at: Ns,
}

pub(crate) struct VideoClient {
    pub name: String,
    pub abr: String,
    pub player: Player,
    /// Flow ids of the current connection's request and response halves.
    pub req_flow: usize,
    pub resp_flow: usize,
    /// Response-half flows of every connection used (the first is the main one).
    pub resp_flows: Vec<usize>,
    pub cfg: ClientCfg,
    pub cur: Option<HttpReq>,
    pub req_written: u64,
    pub resp_written: u64,
    pub sched: Ns,
    pub started: bool,
    pub connections: u32,
}

impl World {
    /// Create client `ci` from its config (called at build time).
    pub(crate) fn add_client(&mut self, ci: usize, c: &ClientCfg) -> Result<(), super::world::SimError> {
        let p = format!("clients[{ci}]");
        let video = self
            .cfg
            .videos
            .get(c.video)
            .ok_or_else(|| super::world::serr(format!("{p}.video"), "no such video"))?
            .clone();
        video.validate().map_err(|e| super::world::serr(format!("{p}.video.{e}"), ""))?;
        let video = Arc::new(video);
        let params =
            Params::from_value(&c.abr_params).map_err(|e| super::world::serr(format!("{p}.abr_params"), e.msg))?;
        let abr = self.build_abr(&c.abr, &params, &video).map_err(|e| {
            if e.param == "abr" {
                super::world::serr(format!("{p}.abr"), e.msg)
            } else {
                super::world::serr(format!("{p}.abr_params.{}", e.param), e.msg)
            }
        })?;
        let pcfg: PlayerConfig = c.player.clone().unwrap_or_default();
        Player::validate_config(&pcfg, &video).map_err(|e| super::world::serr(format!("{p}.player.{e}"), ""))?;
        self.check_nodes(&p, c.server, c.client, true)?;
        let player = Player::new(pcfg, video, abr, c.start);
        let (req_flow, resp_flow) = self.open_connection(&p, c, &c.name, 0)?;
        self.clients.push(VideoClient {
            name: c.name.clone(),
            abr: c.abr.clone(),
            player,
            req_flow,
            resp_flow,
            resp_flows: vec![resp_flow],
            cfg: c.clone(),
            cur: None,
            req_written: 0,
            resp_written: 0,
            sched: NEVER,
            started: false,
            connections: 1,
        });
        let t = c.start;
        self.clients_sched(ci, t);
        Ok(())
    }

    /// Open a connection for a client: (request flow, response flow).
    fn open_connection(
        &mut self,
        p: &str,
        c: &ClientCfg,
        name: &str,
        k: u32,
    ) -> Result<(usize, usize), super::world::SimError> {
        let tcfg = super::world::tcp_config(p, &c.tcp)?;
        let ccp = Params::from_value(&c.cc_params).map_err(|e| super::world::serr(format!("{p}.cc_params"), e.msg))?;
        let suffix = if k == 0 { String::new() } else { format!("~{k}") };
        let req = self.add_tcp_flow(
            p,
            &format!("{name}/req{suffix}"),
            "http_req",
            c.client,
            c.server,
            &c.cc,
            &ccp,
            &tcfg,
            c.start,
        )?;
        // The response half starts established: the request half's handshake models the
        // connection setup.
        let mut down = tcfg.clone();
        down.handshake = false;
        let resp = self.add_tcp_flow(
            p,
            &format!("{name}/resp{suffix}"),
            "video",
            c.server,
            c.client,
            &c.cc,
            &ccp,
            &down,
            c.start,
        )?;
        let ci = self.clients.len() as u32;
        self.flows[req].client = Some(ci);
        self.flows[resp].client = Some(ci);
        Ok((req, resp))
    }

    fn clients_sched(&mut self, ci: usize, t: Ns) {
        if t < self.clients[ci].sched {
            let t = t.max(self.engine.now());
            self.clients[ci].sched = t;
            self.engine.schedule(t, super::world::target(super::world::K_CLIENT, ci));
        }
    }

    /// Client timer.
    pub(crate) fn on_client_timer(&mut self, ci: usize) {
        let now = self.engine.now();
        if self.clients[ci].sched != now {
            return;
        }
        self.clients[ci].sched = NEVER;
        self.client_step(ci);
    }

    /// Serve pending response (think time over), poll the player, reschedule.
    fn client_step(&mut self, ci: usize) {
        let now = self.engine.now();
        if !self.clients[ci].started {
            self.clients[ci].started = true;
            let rf = self.clients[ci].req_flow;
            let tx = self.flows[rf].tx;
            self.drain_ep(tx);
        }
        // A response whose think time is over.
        if let Some(r) = self.clients[ci].cur {
            if r.resp_start.is_none() && r.serve_at <= now {
                self.server_respond(ci);
            }
        }
        self.clients[ci].player.advance(now);
        if self.clients[ci].cur.is_none() {
            if let Some(req) = self.clients[ci].player.poll(now) {
                self.client_request(ci, req.bytes);
            }
        }
        let mut t = self.clients[ci].player.poll_at();
        if let Some(r) = self.clients[ci].cur {
            if r.resp_start.is_none() && r.serve_at != NEVER {
                t = t.min(r.serve_at);
            }
        }
        if t != NEVER {
            let t = t.max(now);
            if t < self.clients[ci].sched {
                self.clients[ci].sched = t;
                self.engine.schedule(t, super::world::target(super::world::K_CLIENT, ci));
            }
        }
    }

    fn client_request(&mut self, ci: usize, body: u64) {
        let now = self.engine.now();
        let c = &mut self.clients[ci];
        c.req_written += c.cfg.http.request_bytes;
        c.cur = Some(HttpReq {
            req_end: c.req_written,
            resp_start: None,
            body,
            first_byte: false,
            last_progress: now,
            serve_at: NEVER,
        });
        let tx = self.flows[c.req_flow].tx;
        let rb = c.cfg.http.request_bytes;
        if let Ep::TcpTx(s) = &mut self.eps[tx] {
            s.write(now, rb);
        }
        self.drain_ep(tx);
    }

    fn server_respond(&mut self, ci: usize) {
        let now = self.engine.now();
        let c = &mut self.clients[ci];
        let Some(r) = &mut c.cur else { return };
        let total = c.cfg.http.response_header_bytes + r.body;
        r.resp_start = Some(c.resp_written);
        c.resp_written += total;
        let tx = self.flows[c.resp_flow].tx;
        if let Ep::TcpTx(s) = &mut self.eps[tx] {
            s.write(now, total);
        }
        self.drain_ep(tx);
    }

    /// A TCP receiver of client `ci`'s connection got a packet (called after on_packet).
    pub(crate) fn client_on_rx(&mut self, ci: usize, fid: usize) {
        let now = self.engine.now();
        let (req_flow, resp_flow) = (self.clients[ci].req_flow, self.clients[ci].resp_flow);
        let Some(mut r) = self.clients[ci].cur else { return };
        let received = self.flow_bytes_received(fid);
        if fid == req_flow {
            // Server side: the whole request arrived?
            if r.resp_start.is_none() && r.serve_at == NEVER && received >= r.req_end {
                let think = self.clients[ci].cfg.http.think;
                r.serve_at = now + think;
                self.clients[ci].cur = Some(r);
                if think == 0 {
                    self.server_respond(ci);
                } else {
                    self.clients_sched(ci, now + think);
                }
            }
            return;
        }
        if fid != resp_flow {
            return;
        }
        let Some(start) = r.resp_start else { return };
        if received <= start {
            return;
        }
        let hdr = self.clients[ci].cfg.http.response_header_bytes;
        if !r.first_byte {
            r.first_byte = true;
            self.clients[ci].player.on_first_byte(now);
        }
        let body = (received - start).saturating_sub(hdr).min(r.body);
        let complete = body >= r.body;
        let interval = self.clients[ci].cfg.http.progress_interval;
        if complete || now >= r.last_progress + interval {
            r.last_progress = now;
            self.clients[ci].cur = Some(r);
            if let Some(_ab) = self.clients[ci].player.on_bytes(now, body) {
                self.client_abandon(ci);
                self.client_step(ci);
                return;
            }
        }
        self.clients[ci].cur = Some(r);
        if complete {
            self.clients[ci].cur = None;
            self.clients[ci].player.on_complete(now);
            self.client_step(ci);
        }
    }

    /// Reset the connection after an abandonment: discard both halves, open a new connection.
    fn client_abandon(&mut self, ci: usize) {
        let (rq, rs) = (self.clients[ci].req_flow, self.clients[ci].resp_flow);
        self.flows[rq].dead = true;
        self.flows[rs].dead = true;
        let k = self.clients[ci].connections;
        self.clients[ci].connections += 1;
        let cfg = self.clients[ci].cfg.clone();
        let name = self.clients[ci].name.clone();
        // Build the new connection with the client index already registered.
        let (nq, ns) =
            self.open_connection_for(ci, &cfg, &name, k).expect("connection parameters were checked at build");
        let c = &mut self.clients[ci];
        c.req_flow = nq;
        c.resp_flow = ns;
        c.resp_flows.push(ns);
        c.cur = None;
        c.req_written = 0;
        c.resp_written = 0;
        let now = self.engine.now();
        for f in [nq, ns] {
            self.flows[f].start = now;
        }
        let tx = self.flows[nq].tx;
        self.drain_ep(tx);
    }

    fn open_connection_for(
        &mut self,
        ci: usize,
        c: &ClientCfg,
        name: &str,
        k: u32,
    ) -> Result<(usize, usize), super::world::SimError> {
        let (a, b) = self.open_connection("clients", c, name, k)?;
        self.flows[a].client = Some(ci as u32);
        self.flows[b].client = Some(ci as u32);
        Ok((a, b))
    }
}

/// A trace-mode client's outcome.
pub(crate) struct TraceClient {
    pub name: String,
    pub abr: String,
    pub video: Arc<crate::video::Video>,
    pub buffer_max: Ns,
    pub result: crate::tracemode::TraceModeResult,
}

/// What the summary and tables need of a client, in either network mode.
struct ClientView<'a> {
    name: &'a str,
    abr: &'a str,
    video: &'a crate::video::Video,
    log: &'a [crate::player::SegmentLog],
    summary: crate::player::PlayerSummary,
    buffer_max: Ns,
    /// Packet mode: (response flows, connections).
    packet: Option<(&'a [usize], u32)>,
    base_rtt: Ns,
}

impl World {
    fn client_views(&self) -> Vec<ClientView<'_>> {
        let mut v: Vec<ClientView> = self
            .clients
            .iter()
            .map(|c| ClientView {
                name: &c.name,
                abr: &c.abr,
                video: c.player.video(),
                log: c.player.log(),
                summary: c.player.summary(),
                buffer_max: c.player.buffer_max(),
                packet: Some((&c.resp_flows, c.connections)),
                base_rtt: c.cfg.rtt,
            })
            .collect();
        v.extend(self.trace_results.iter().map(|t| ClientView {
            name: &t.name,
            abr: &t.abr,
            video: &t.video,
            log: &t.result.log,
            summary: t.result.summary.clone(),
            buffer_max: t.buffer_max,
            packet: None,
            base_rtt: self.cfg.clients.iter().find(|c| c.name == t.name).map(|c| c.rtt).unwrap_or(0),
        }));
        v
    }

    /// Trace mode: check a client's config (ABR, player) at build time.
    pub(crate) fn check_trace_client(&self, ci: usize, c: &ClientCfg) -> Result<(), super::world::SimError> {
        let p = format!("clients[{ci}]");
        let video =
            self.cfg.videos.get(c.video).ok_or_else(|| super::world::serr(format!("{p}.video"), "no such video"))?;
        video.validate().map_err(|e| super::world::serr(format!("{p}.video.{e}"), ""))?;
        let params =
            Params::from_value(&c.abr_params).map_err(|e| super::world::serr(format!("{p}.abr_params"), e.msg))?;
        self.build_abr(&c.abr, &params, video)
            .map_err(|e| super::world::serr(format!("{p}.abr_params.{}", e.param), e.msg))?;
        let pcfg: PlayerConfig = c.player.clone().unwrap_or_default();
        Player::validate_config(&pcfg, video).map_err(|e| super::world::serr(format!("{p}.player.{e}"), ""))?;
        Ok(())
    }

    /// Trace mode: every client alone on the schedule, latency = its base RTT.
    pub(crate) fn run_trace_clients(&mut self) {
        use crate::tracemode::{run_trace_mode, Period, Schedule, TraceOpts};
        let sched = self.cfg.trace_schedule.clone().expect("checked at build");
        for c in self.cfg.clients.clone() {
            let video = Arc::new(self.cfg.videos[c.video].clone());
            let params = Params::from_value(&c.abr_params).expect("checked");
            let abr = self.build_abr(&c.abr, &params, &video).expect("checked");
            let pcfg: PlayerConfig = c.player.clone().unwrap_or_default();
            let periods: Vec<Period> = sched.periods().iter().map(|p| Period { latency: c.rtt, ..*p }).collect();
            let s = Schedule::new(periods).expect("valid schedule");
            // The scenario's rate is an IP-level link rate: payload flows at rate x MSS/MTU.
            let opts = TraceOpts {
                start: c.start,
                max_time: self.cfg.duration,
                payload_ppm: crate::packet::MSS as u64 * 1_000_000 / crate::packet::MTU as u64,
                ..TraceOpts::sabre()
            };
            let buffer_max = if pcfg.abr_buffer_max {
                abr.preferred_buffer_max().unwrap_or(pcfg.buffer_max)
            } else {
                pcfg.buffer_max
            };
            let result = run_trace_mode(video.clone(), abr, pcfg, &s, &opts);
            self.trace_results.push(TraceClient {
                name: c.name.clone(),
                abr: c.abr.clone(),
                video,
                buffer_max,
                result,
            });
        }
    }

    /// The `segments` table: one row per downloaded (or abandoned) segment per client.
    pub(crate) fn client_tables(&mut self) -> Vec<super::record::Table> {
        use super::record::Table;
        let views = self.client_views();
        if views.is_empty() || !self.cfg.output.tables.iter().any(|t| t == "segments") {
            return Vec::new();
        }
        let mut t = Table::new(
            "segments",
            &[
                ("client", 'i'),
                ("segment", 'i'),
                ("rung", 'i'),
                ("bitrate_bps", 'i'),
                ("bytes", 'i'),
                ("quality", 'f'),
                ("t_request_s", 'f'),
                ("t_first_byte_s", 'f'),
                ("t_last_byte_s", 'f'),
                ("tput_request_bps", 'f'),
                ("tput_first_byte_bps", 'f'),
                ("buffer_before_s", 'f'),
                ("buffer_after_s", 'f'),
                ("stall_s", 'f'),
                ("abr_delay_s", 'f'),
                ("abandoned", 'i'),
                ("abr_reason", 's'),
            ],
        );
        let s = crate::time::secs;
        for (ci, c) in views.iter().enumerate() {
            for l in c.log {
                t.i(0, ci as i64);
                t.i(1, l.segment as i64);
                t.i(2, l.rung as i64);
                t.i(3, l.bitrate_bps as i64);
                t.i(4, l.bytes as i64);
                t.f(5, l.quality.unwrap_or(f64::NAN));
                t.f(6, s(l.t_request));
                t.f(7, s(l.t_first_byte));
                t.f(8, s(l.t_last_byte));
                t.f(9, l.tput_request_bps);
                t.f(10, l.tput_first_byte_bps);
                t.f(11, s(l.buffer_before));
                t.f(12, s(l.buffer_after));
                t.f(13, s(l.stall));
                t.f(14, s(l.abr_delay));
                t.i(15, l.abandoned as i64);
                t.s(16, &l.abr_reason);
            }
        }
        vec![t]
    }

    /// Per-client metrics, video fairness and loss phases for the summary.
    pub(crate) fn client_summary(&self) -> Option<(serde_json::Value, serde_json::Value)> {
        use crate::metrics::{ClientMetrics, FairnessMetrics, QoeParams};
        use serde_json::json;
        let views = self.client_views();
        if views.is_empty() {
            return None;
        }
        let phases = self.loss_phases();
        let mut all = Vec::new();
        let mut out = Vec::new();
        for c in &views {
            let m = match ClientMetrics::compute(c.log, &c.summary, c.video.n_rungs(), &QoeParams::default()) {
                Ok(m) => m,
                Err(e) => {
                    out.push(json!({"name": c.name, "abr": c.abr, "error": e}));
                    continue;
                }
            };
            let mut v = serde_json::to_value(&m).unwrap_or(json!({}));
            if let serde_json::Value::Object(o) = &mut v {
                o.insert("name".into(), json!(c.name));
                o.insert("abr".into(), json!(c.abr));
                o.insert("video".into(), json!(c.video.name));
                o.insert("buffer_max_s".into(), json!(crate::time::secs(c.buffer_max)));
                o.insert("base_rtt_ms".into(), json!(c.base_rtt as f64 / 1e6));
                if let Some((flows, conns)) = c.packet {
                    let (sum, n) = flows
                        .iter()
                        .fold((0.0, 0u64), |a, &f| (a.0 + self.flows[f].srtt_sum, a.1 + self.flows[f].srtt_n));
                    o.insert("flow".into(), json!(flows[0]));
                    o.insert("connections".into(), json!(conns));
                    o.insert(
                        "srtt_mean_ms".into(),
                        if n > 0 { json!((sum / n as f64 / 1e3).round() / 1e3) } else { serde_json::Value::Null },
                    );
                    if let Some(ph) = &phases {
                        let mut cnt = [0u64; 3];
                        for (&f, &k) in ph.iter() {
                            if flows.contains(&(f as usize)) {
                                cnt[0] += k[0];
                                cnt[1] += k[1];
                                cnt[2] += k[2];
                            }
                        }
                        o.insert("loss_phases".into(), json!({"B": cnt[0], "T": cnt[1], "C": cnt[2]}));
                    }
                }
            }
            out.push(v);
            all.push(m);
        }
        let fair = FairnessMetrics::compute(&all);
        Some((json!(out), serde_json::to_value(&fair).unwrap_or(json!({}))))
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
                super::record::Column::I64(v) => v,
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
            if !video.contains(&flow[i]) || !self.links[link[i] as usize].monitor {
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
                2 | 3 if is_data => {
                    if let Some(&j) = last.get(&(link[i], flow[i], seq[i])) {
                        events[j].dropped = true;
                    }
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
