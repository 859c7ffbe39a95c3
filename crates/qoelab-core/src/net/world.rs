//! The simulator's driver: nodes, links and endpoints wired to the engine.
//!
//! This is the only module that owns time for the algorithms: it pops events from
//! [`crate::sim::Engine`], calls the sans-IO components (queue disciplines, TCP, applications)
//! with `now`, forwards the packets they emit, and schedules their next wake-ups.

use super::config::{FlowCfg, LinkCfg, SimConfig};
use super::link::{Link, LinkEventKind, Service, SimLink};
use super::loss::Loss;
use super::trace::{Opportunities, RateSchedule, TraceCfg};
use crate::aqm::{AqmBuildCtx, Queue};
use crate::ids::{ClientId, EpId, FlowId, Id, IdVec, LinkId, NodeId};
use crate::packet::{direction_hash, flags, name_key, Packet};
use crate::params::Params;
use crate::quic::{QuicConfig, QuicReceiver, QuicSender};
use crate::report::table::Table;
use crate::rng::Rng;
use crate::sim::Engine;
use crate::tcp::cc::{self, CcBuildCtx};
use crate::tcp::{FlowAddr, TcpConfig, TcpReceiver, TcpSender};
use crate::time::{Ns, NEVER};

use super::endpoint::{bytes_received, tcp_config, CbrSource, Ep, FlowRt, Sink};
use super::error::{serr, SimError};

const K_TX: u64 = 1;
const K_ARR: u64 = 2;
const K_EP: u64 = 3;
const K_AQM: u64 = 4;
const K_APP: u64 = 5;
const K_SAMPLE: u64 = 6;
pub(crate) const K_CLIENT: u64 = 7;
pub(crate) const K_PROVIDER: u64 = 8;
pub(crate) const K_PAGE: u64 = 9;
const IDX_MASK: u64 = (1 << 56) - 1;

#[inline]
pub(crate) fn target(kind: u64, idx: impl Id) -> u64 {
    kind << 56 | idx.index() as u64
}

/// A web-like traffic generator: Poisson arrivals of TCP flows with sizes from a CDF.
struct WebGen {
    name: String,
    src: NodeId,
    dst: NodeId,
    cc: String,
    cc_params: Params,
    tcp: TcpConfig,
    stop: Option<Ns>,
    /// Mean inter-arrival time (s).
    mean_gap_s: f64,
    cdf: Vec<(f64, f64)>,
    rng: Rng,
    count: u64,
    action: usize,
}

/// The random stream of web generator `name` (`[[flow]] kind = "web"`), shared by the simulator and
/// the real-network runtime so that the same scenario and seed give the same arrivals in both.
pub fn web_rng(seed: u64, name: &str) -> Rng {
    Rng::for_component(seed, &format!("web/{name}"))
}

/// One web arrival's draws, in the simulator's order: the flow's size (inverse-transform sample of
/// the piecewise-linear CDF, bytes, at least 1), then the gap to the next arrival (exponential with
/// mean `mean_gap_s`, at least 1 ns).
pub fn web_draw(rng: &mut Rng, cdf: &[(f64, f64)], mean_gap_s: f64) -> (u64, Ns) {
    let u = rng.uniform();
    let i = cdf.partition_point(|p| p.1 <= u).clamp(1, cdf.len() - 1);
    let (x0, p0) = cdf[i - 1];
    let (x1, p1) = cdf[i];
    let x = if p1 > p0 { x0 + (u - p0) / (p1 - p0) * (x1 - x0) } else { x1 };
    let size = x.round().max(1.0) as u64;
    let gap = crate::time::from_secs_f64(rng.exp(mean_gap_s)).max(1);
    (size, gap)
}

#[derive(Clone, Debug)]
enum AppAction {
    Start(FlowId),
    Stop(FlowId),
    Weight(FlowId, f64),
    WebArrival(usize),
    /// ON/OFF source: write `bytes` now and again every `period` (flow, bytes, period).
    Burst(FlowId, u64, Ns),
    /// A video session arrives (session generator index).
    Session(usize),
}

/// Tables recorded during a run.
pub struct Recorder {
    pub flows: Option<Table>,
    pub tcp: Option<Table>,
    pub web: Option<Table>,
    pub queues: Option<Table>,
    pub packets: Option<Table>,
}

pub use crate::abr::AbrFactory;

/// Per-endpoint driver data.
#[derive(Clone, Copy, Debug)]
struct EpMeta {
    node: NodeId,
    flow: FlowId,
    /// Time of the endpoint's pending timer event (`NEVER` if none).
    sched: Ns,
    /// Closed (its flow is dead, or it is the client's side of a reset connection): it sends
    /// nothing and its timers are ignored.
    closed: bool,
}

/// The simulated world.
pub struct World {
    pub cfg: SimConfig,
    pub engine: Engine,
    pub links: IdVec<LinkId, SimLink>,
    /// routes[node * nodes + dst] = link index (u32::MAX = unreachable).
    routes: Vec<u32>,
    /// Number of nodes (the stride of `routes`).
    nodes: usize,
    pub eps: IdVec<EpId, Ep>,
    /// Node, flow and scheduled timer of each endpoint.
    ep_meta: IdVec<EpId, EpMeta>,
    pub flows: IdVec<FlowId, FlowRt>,
    actions: Vec<AppAction>,
    pub rec: Recorder,
    /// Queue counters at the previous sample (for interval sojourn means).
    prev_q: Vec<(u64, u128)>,
    pub seed: u64,
    /// pcap writers of links with capture enabled (by link index).
    pcaps: Vec<(LinkId, super::pcap::PcapWriter)>,
    webgens: Vec<WebGen>,
    pub(crate) clients: IdVec<ClientId, super::clients::ClientRt>,
    /// Scratch buffer of session operations (see `clients::with_session`).
    pub(crate) conn_ops: Vec<super::clients::ConnOp>,
    /// The clients' video response flows not yet dead, in the order opened: those whose smoothed
    /// RTT every sample adds to (a scan of every flow touched each dead connection's flows too).
    pub(crate) video_flows: Vec<FlowId>,
    /// Packets that arrived for discarded connections.
    pub dead_drops: u64,
    pub(crate) abr_factory: Option<AbrFactory>,
    /// Video session generators: (client config index, arrival stream, sessions so far).
    session_gens: Vec<(usize, Rng, u32)>,
    /// Video providers and their flow controllers (net/providers.rs).
    pub(crate) providers: super::providers::Providers,
    /// Web page loads (net/pages.rs).
    pub(crate) pages: IdVec<crate::ids::PageId, super::pages::PageRt>,
}

impl World {
    pub fn build(cfg: SimConfig) -> Result<World, SimError> {
        World::build_with(cfg, None)
    }

    /// Build with a factory for ABR names outside the registry (names starting with "python:").
    pub fn build_with(cfg: SimConfig, abr_factory: Option<AbrFactory>) -> Result<World, SimError> {
        let n = cfg.nodes.len();
        if n == 0 || n > u16::MAX as usize {
            return Err(serr("nodes", "expected 1..65535 nodes"));
        }
        if cfg.duration == 0 {
            return Err(serr("duration", "expected > 0"));
        }
        let seed = cfg.seed;
        let mut links = Vec::with_capacity(cfg.links.len());
        for (i, l) in cfg.links.iter().enumerate() {
            let p = format!("links[{i}]");
            if l.from >= n || l.to >= n || l.from == l.to {
                return Err(serr(format!("{p}.from"), "expected two different existing nodes"));
            }
            let mut link = build_link(&p, l, seed)?;
            link.record = l.packet_log || l.pcap;
            if !l.monitor {
                // Unmonitored plain FIFOs at a fixed rate (access links) are served analytically;
                // monitored links keep the queue for their length statistics.
                link.enable_pipe();
            }
            links.push(SimLink {
                link,
                monitor: l.monitor,
                packet_log: l.packet_log,
                pcap: l.pcap,
                tx_event: NEVER,
                arr_event: NEVER,
                aqm_timer: NEVER,
            });
        }
        let routes = compute_routes(n, &links);
        let want = |t: &str| cfg.output.tables.iter().any(|x| x == t);
        let rec = Recorder {
            flows: want("flows").then(|| {
                Table::new("flows", &[("time_s", 'f'), ("flow", 'i'), ("bytes_received", 'i'), ("goodput_bps", 'f')])
            }),
            tcp: want("tcp").then(crate::report::tcp_table),
            web: want("web").then(crate::report::web_table),
            queues: want("queues").then(crate::report::queues_table),
            packets: (want("packets") || links.iter().any(|l| l.packet_log)).then(|| {
                Table::new(
                    "packets",
                    &[
                        ("time_ns", 'i'),
                        ("link", 'i'),
                        ("event", 'i'),
                        ("flow", 'i'),
                        ("seq", 'i'),
                        ("ack", 'i'),
                        ("size", 'i'),
                        ("payload", 'i'),
                        ("flags", 'i'),
                        ("reason", 'i'),
                    ],
                )
            }),
        };
        let nl = links.len();
        let mut w = World {
            cfg,
            engine: Engine::new(),
            links: links.into(),
            routes,
            nodes: n,
            eps: IdVec::new(),
            ep_meta: IdVec::new(),
            flows: IdVec::new(),
            actions: Vec::new(),
            rec,
            prev_q: vec![(0, 0); nl],
            seed,
            pcaps: Vec::new(),
            webgens: Vec::new(),
            clients: IdVec::new(),
            conn_ops: Vec::new(),
            video_flows: Vec::new(),
            dead_drops: 0,
            abr_factory,
            session_gens: Vec::new(),
            providers: Default::default(),
            pages: IdVec::new(),
        };
        for i in w.links.ids() {
            if w.links[i].pcap {
                w.pcaps.push((i, super::pcap::PcapWriter::new()));
            }
        }
        let flows = w.cfg.flows.clone();
        for (i, f) in flows.iter().enumerate() {
            w.add_flow(i, f)?;
        }
        let clients = w.cfg.clients.clone();
        if w.cfg.network != "packet" {
            return Err(serr(
                "network",
                format!("the packet simulator runs \"packet\" networks, not \"{}\"", w.cfg.network),
            ));
        }
        for (i, c) in clients.iter().enumerate() {
            let p = format!("clients[{i}]");
            match c.arrival_rate {
                None => w.add_client(&p, c)?,
                Some(r) => {
                    if !(r.is_finite() && r > 0.0) {
                        return Err(serr(format!("{p}.arrival_rate"), "expected > 0 sessions per second"));
                    }
                    // Check the entry once (ABR, player, nodes) without keeping a client.
                    w.build_session(&p, c)?;
                    w.check_nodes(&p, c.server, c.client, true)?;
                    // A Poisson process from `start`: the first session an exponential gap after it
                    // (until 2026-11-30 the first was at `start`: n entries began with n sessions
                    // at once)
                    let mut rng = Rng::for_component(w.seed, &format!("sessions/{}", c.name));
                    let first = c.start + crate::time::from_secs_f64(rng.exp(1.0 / r)).max(1);
                    w.session_gens.push((i, rng, 0));
                    w.actions.push(AppAction::Session(w.session_gens.len() - 1));
                    let ai = w.actions.len() - 1;
                    w.engine.schedule(first, target(K_APP, ai));
                }
            }
        }
        w.build_providers()?;
        let pages = w.cfg.pages.clone();
        for (i, pg) in pages.iter().enumerate() {
            w.add_page(&format!("pages[{i}]"), pg)?;
        }
        for i in w.links.ids() {
            w.schedule_aqm_timer(i);
        }
        if w.rec.flows.is_some() || w.rec.queues.is_some() || w.rec.tcp.is_some() || !w.clients.is_empty() {
            let si = w.cfg.output.sample_interval;
            if si > 0 {
                w.engine.schedule(si, target(K_SAMPLE, 0));
            }
        }
        Ok(w)
    }

    /// Both nodes exist and are connected (both ways when `two_way`, as TCP needs for ACKs).
    /// Returns the typed ids of the two nodes.
    pub(crate) fn check_nodes(
        &self,
        p: &str,
        src: usize,
        dst: usize,
        two_way: bool,
    ) -> Result<(NodeId, NodeId), SimError> {
        let n = self.cfg.nodes.len();
        if src >= n || dst >= n || src == dst {
            return Err(serr(format!("{p}.src"), "expected two different existing nodes"));
        }
        if self.routes[src * n + dst] == u32::MAX || (two_way && self.routes[dst * n + src] == u32::MAX) {
            return Err(serr(
                format!("{p}.dst"),
                format!("no route between {} and {}", self.cfg.nodes[src].name, self.cfg.nodes[dst].name),
            ));
        }
        Ok((NodeId::from_index(src), NodeId::from_index(dst)))
    }

    /// Close an endpoint: it sends nothing more and its timers are ignored.
    pub(crate) fn close_ep(&mut self, ep: EpId) {
        self.ep_meta[ep].closed = true;
    }

    fn new_ep(&mut self, ep: Ep, node: NodeId, flow: FlowId) -> EpId {
        self.ep_meta.push(EpMeta { node, flow, sched: NEVER, closed: false });
        self.eps.push(ep)
    }

    fn add_flow(&mut self, i: usize, f: &FlowCfg) -> Result<(), SimError> {
        let p = format!("flows[{i}]");
        match f {
            FlowCfg::Cbr { name, src, dst, rate_bps, packet_size, start, stop } => {
                let (src, dst) = self.check_nodes(&p, *src, *dst, false)?;
                let (src, dst) = (&src, &dst);
                if *rate_bps == 0 {
                    return Err(serr(format!("{p}.rate"), "expected > 0"));
                }
                if *packet_size < 28 || *packet_size > crate::packet::MTU {
                    return Err(serr(
                        format!("{p}.packet_size"),
                        format!("expected an IP datagram of 28 to 1500 bytes, found {packet_size}"),
                    ));
                }
                let fid = self.flows.next_id();
                let tx = self.new_ep(
                    Ep::Cbr(CbrSource {
                        rate_bps: *rate_bps,
                        size: *packet_size,
                        next: *start,
                        active: false,
                        seq: 0,
                        sent_bytes: 0,
                    }),
                    *src,
                    fid,
                );
                let rx = self.new_ep(Ep::Sink(Sink::default()), *dst, fid);
                let mut f = FlowRt::new(name, "cbr", *src, *dst, tx, rx, *start);
                f.stop = *stop;
                self.flows.push(f);
                self.schedule_action(*start, AppAction::Start(fid));
                if let Some(s) = stop {
                    self.schedule_action(*s, AppAction::Stop(fid));
                }
                Ok(())
            }
            FlowCfg::Bulk {
                name,
                src,
                dst,
                cc,
                cc_params,
                tcp,
                start,
                stop,
                bytes,
                weight_schedule,
                transport,
                quic,
            } => {
                let (src, dst) = self.check_nodes(&p, *src, *dst, true)?;
                let (src, dst) = (&src, &dst);
                let tcfg = tcp_config(&p, tcp)?;
                let ccp = Params::from_value(cc_params).map_err(|e| serr(format!("{p}.cc_params"), e.msg))?;
                if bytes == &Some(0) {
                    return Err(serr(format!("{p}.size"), "expected > 0 bytes"));
                }
                let is_quic = transport.as_deref() == Some("quic");
                if !is_quic && !quic.is_null() {
                    return Err(serr(format!("{p}.quic"), "QUIC options apply only to transport \"quic\""));
                }
                let fid = match transport.as_deref() {
                    None | Some("tcp") => self.add_tcp_flow(&p, name, "bulk", *src, *dst, cc, &ccp, &tcfg, *start)?,
                    Some("quic") => {
                        if !tcp.is_null() && tcp.as_object().is_none_or(|o| !o.is_empty()) {
                            return Err(serr(format!("{p}.tcp"), "TCP options do not apply to a QUIC flow"));
                        }
                        let qcfg = quic_config(&p, quic)?;
                        self.add_quic_flow(&p, name, "bulk", *src, *dst, cc, &ccp, &qcfg, *start)?
                    }
                    Some(t) => {
                        return Err(serr(
                            format!("{p}.transport"),
                            format!("expected \"tcp\" or \"quic\", not \"{t}\""),
                        ))
                    }
                };
                self.flows[fid].stop = *stop;
                self.flows[fid].size = *bytes;
                self.schedule_action(*start, AppAction::Start(fid));
                if let Some(s) = stop {
                    self.schedule_action(*s, AppAction::Stop(fid));
                }
                for (i, (t, wgt)) in weight_schedule.iter().enumerate() {
                    if !(wgt.is_finite() && *wgt > 0.0) {
                        return Err(serr(format!("{p}.weight_schedule[{i}]"), "expected a weight > 0"));
                    }
                    let tx = self.flows[fid].tx;
                    let ccw = match &self.eps[tx] {
                        Ep::TcpTx(s) => Some(s.cc()),
                        Ep::QuicTx(s) => Some(s.cc()),
                        _ => None,
                    };
                    if let Some(c) = ccw {
                        if c.weight().is_none() {
                            return Err(serr(
                                format!("{p}.weight_schedule"),
                                format!("congestion control {cc} has no weight"),
                            ));
                        }
                    }
                    self.schedule_action(*t, AppAction::Weight(fid, *wgt));
                }
                Ok(())
            }
            FlowCfg::Onoff { name, src, dst, cc, cc_params, tcp, start, stop, bytes, period } => {
                let (src, dst) = self.check_nodes(&p, *src, *dst, true)?;
                let (src, dst) = (&src, &dst);
                let tcfg = tcp_config(&p, tcp)?;
                let ccp = Params::from_value(cc_params).map_err(|e| serr(format!("{p}.cc_params"), e.msg))?;
                if *bytes == 0 || *period == 0 {
                    return Err(serr(format!("{p}.period"), "expected size > 0 and period > 0"));
                }
                let fid = self.add_tcp_flow(&p, name, "onoff", *src, *dst, cc, &ccp, &tcfg, *start)?;
                self.flows[fid].stop = *stop;
                self.schedule_action(*start, AppAction::Burst(fid, *bytes, *period));
                Ok(())
            }
            FlowCfg::Web { name, src, dst, cc, cc_params, tcp, start, stop, arrival_rate, sizes } => {
                let (src, dst) = self.check_nodes(&p, *src, *dst, true)?;
                let (src, dst) = (&src, &dst);
                let tcfg = tcp_config(&p, tcp)?;
                let ccp = Params::from_value(cc_params).map_err(|e| serr(format!("{p}.cc_params"), e.msg))?;
                // Check the controller builds now rather than at the first arrival.
                cc::build(
                    cc,
                    &ccp,
                    &CcBuildCtx {
                        mss: tcfg.mss as u64,
                        initial_window: tcfg.initial_window as u64,
                        abc_l: tcfg.abc_l as u64,
                        seed: 0,
                    },
                )
                .map_err(|e| cc_err(&p, e))?;
                if !(arrival_rate.is_finite() && *arrival_rate > 0.0) {
                    return Err(serr(format!("{p}.arrival_rate"), "expected > 0 flows per second"));
                }
                if sizes.len() < 2
                    || sizes.windows(2).any(|w| w[1].0 < w[0].0 || w[1].1 < w[0].1)
                    || sizes.last().unwrap().1 != 1.0
                {
                    return Err(serr(
                        format!("{p}.sizes"),
                        "expected a CDF: non-decreasing (bytes, probability) points ending at 1",
                    ));
                }
                let gi = self.webgens.len();
                self.actions.push(AppAction::WebArrival(gi));
                let action = self.actions.len() - 1;
                self.webgens.push(WebGen {
                    name: name.clone(),
                    src: *src,
                    dst: *dst,
                    cc: cc.clone(),
                    cc_params: ccp,
                    tcp: tcfg,
                    stop: *stop,
                    mean_gap_s: 1.0 / arrival_rate,
                    cdf: sizes.clone(),
                    rng: web_rng(self.seed, name),
                    count: 0,
                    action,
                });
                self.engine.schedule(*start, target(K_APP, action));
                Ok(())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_tcp_flow(
        &mut self,
        p: &str,
        name: &str,
        kind: &'static str,
        src: NodeId,
        dst: NodeId,
        cc_name: &str,
        ccp: &Params,
        tcfg: &TcpConfig,
        start: Ns,
    ) -> Result<FlowId, SimError> {
        let window = (tcfg.mss as u64, tcfg.initial_window as u64, tcfg.abc_l as u64);
        self.add_transport_flow(p, name, kind, (src, dst), cc_name, ccp, window, start, |addr, ctl| {
            (Ep::TcpTx(Box::new(TcpSender::new(tcfg, addr, ctl))), Ep::TcpRx(Box::new(TcpReceiver::new(tcfg, addr))))
        })
    }

    /// A QUIC half-connection: sender at `src`, receiver at `dst` (one unidirectional stream).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_quic_flow(
        &mut self,
        p: &str,
        name: &str,
        kind: &'static str,
        src: NodeId,
        dst: NodeId,
        cc_name: &str,
        ccp: &Params,
        qcfg: &QuicConfig,
        start: Ns,
    ) -> Result<FlowId, SimError> {
        // RFC 9002 counts the window in UDP payload bytes of max_datagram_size packets
        let window = (qcfg.max_datagram as u64, qcfg.initial_window as u64, 1);
        self.add_transport_flow(p, name, kind, (src, dst), cc_name, ccp, window, start, |addr, ctl| {
            (
                Ep::QuicTx(Box::new(QuicSender::new(qcfg, addr, ctl))),
                Ep::QuicRx(Box::new(QuicReceiver::new(qcfg, addr))),
            )
        })
    }

    /// A half-connection of a transport: its congestion controller (from `window` = (mss, initial
    /// window, ABC L) and the flow's RNG stream), its sender at `src` and receiver at `dst` made
    /// by `eps`, and the flow record.
    #[allow(clippy::too_many_arguments)]
    fn add_transport_flow(
        &mut self,
        p: &str,
        name: &str,
        kind: &'static str,
        (src, dst): (NodeId, NodeId),
        cc_name: &str,
        ccp: &Params,
        (mss, initial_window, abc_l): (u64, u64, u64),
        start: Ns,
        eps: impl FnOnce(FlowAddr, Box<dyn cc::CongestionControl>) -> (Ep, Ep),
    ) -> Result<FlowId, SimError> {
        let fid = self.flows.next_id();
        let ctx = CcBuildCtx {
            mss,
            initial_window,
            abc_l,
            seed: Rng::for_component(self.seed, &format!("flow/{name}/cc")).next_u64(),
        };
        let ctl = cc::build(cc_name, ccp, &ctx).map_err(|e| cc_err(p, e))?;
        let (tx, rx) = eps(FlowAddr::new(fid.0, src.0, dst.0, name_key(name)), ctl);
        let tx = self.new_ep(tx, src, fid);
        let rx = self.new_ep(rx, dst, fid);
        let mut f = FlowRt::new(name, kind, src, dst, tx, rx, start);
        f.cc = Some(cc_name.to_string());
        self.flows.push(f);
        Ok(fid)
    }

    fn web_arrival(&mut self, gi: usize) {
        let now = self.engine.now();
        let g = &mut self.webgens[gi];
        if g.stop.is_some_and(|s| now >= s) {
            return;
        }
        let (size, gap) = web_draw(&mut g.rng, &g.cdf, g.mean_gap_s);
        g.count += 1;
        let name = format!("{}#{}", g.name, g.count);
        let (src, dst, ccn, ccp, tcfg, action) =
            (g.src, g.dst, g.cc.clone(), g.cc_params.clone(), g.tcp.clone(), g.action);
        let fid = self
            .add_tcp_flow("web", &name, "web", src, dst, &ccn, &ccp, &tcfg, now)
            .expect("web flow parameters were checked at build");
        self.flows[fid].size = Some(size);
        let tx = self.flows[fid].tx;
        if let Ep::TcpTx(s) = &mut self.eps[tx] {
            s.write(now, size);
            s.stop_writing();
        }
        self.drain_ep(tx);
        self.engine.schedule(now + gap, target(K_APP, action));
    }

    fn session_arrival(&mut self, gi: usize, ai: usize) {
        let now = self.engine.now();
        let (ci, ref mut rng, ref mut k) = self.session_gens[gi];
        let mut c = self.cfg.clients[ci].clone();
        if c.stop.is_some_and(|s| now >= s) {
            return;
        }
        *k += 1;
        let gap = rng.exp(1.0 / c.arrival_rate.unwrap_or(1.0));
        c.name = format!("{}#{}", c.name, k);
        c.start = now;
        c.arrival_rate = None;
        self.add_client("clients", &c).expect("session parameters were checked at build");
        self.provider_new_clients();
        self.engine.schedule(now + crate::time::from_secs_f64(gap).max(1), target(K_APP, ai));
    }

    fn schedule_action(&mut self, t: Ns, a: AppAction) {
        self.actions.push(a);
        self.engine.schedule(t, target(K_APP, self.actions.len() - 1));
    }

    fn schedule_aqm_timer(&mut self, li: LinkId) {
        let t = self.links[li].queue.next_timer();
        if t < self.links[li].aqm_timer {
            let t = t.max(self.engine.now());
            self.links[li].aqm_timer = t;
            self.engine.schedule(t, target(K_AQM, li));
        }
    }

    // ----- packets -----

    /// A node emits or forwards `pkt` toward `pkt.dst`.
    #[inline]
    fn forward(&mut self, node: NodeId, pkt: &Packet) {
        let li = self.routes[node.index() * self.nodes + pkt.dst as usize];
        debug_assert!(li != u32::MAX, "no route");
        self.link_ingress(LinkId(li), pkt);
    }

    fn log_packet(&mut self, li: LinkId, ev: i64, p: &Packet, reason: i64) {
        if let Some(t) = &mut self.rec.packets {
            t.i(0, self.engine.now() as i64);
            t.i(1, li.0 as i64);
            t.i(2, ev);
            t.i(3, p.flow as i64);
            t.i(4, p.seq as i64);
            t.i(5, p.ack as i64);
            t.i(6, p.size as i64);
            t.i(7, p.payload as i64);
            t.i(8, p.flags as i64);
            t.i(9, reason);
        }
    }

    #[inline]
    fn link_ingress(&mut self, li: LinkId, pkt: &Packet) {
        let now = self.engine.now();
        self.links[li].arrive_ref(now, pkt);
        self.link_settle(li);
        let l = &self.links[li];
        if l.aqm_timer == NEVER && l.queue.uses_timer() {
            self.schedule_aqm_timer(li);
        }
    }

    /// After a call into link `li`: log/capture what it recorded, deliver what left with no
    /// delay, then schedule its pending wake-ups (delay line first, then service, the order in
    /// which the link used to schedule them).
    #[inline(always)]
    fn link_settle(&mut self, li: LinkId) {
        if !self.links[li].events.is_empty() {
            self.link_events(li);
        }
        let now = self.engine.now();
        let mut l = &mut self.links[li];
        if l.delay == 0 && l.line_head() == Some(now) {
            self.link_deliver_now(li);
            l = &mut self.links[li];
        }
        if l.arr_event == NEVER {
            if let Some(t) = l.line_head() {
                l.arr_event = t;
                self.engine.schedule(t, target(K_ARR, li));
            }
        }
        if l.tx_event == NEVER {
            if let Some(t) = l.service_wakeup() {
                l.tx_event = t;
                self.engine.schedule(t, target(K_TX, li));
            }
        }
    }

    /// Deliver the packets leaving a zero-delay link now.
    #[inline(never)]
    fn link_deliver_now(&mut self, li: LinkId) {
        let now = self.engine.now();
        while self.links[li].line_head() == Some(now) {
            let p = self.links[li].pop_departure();
            let to = self.links[li].to;
            self.arrive(to, &p);
        }
    }

    /// Packet log rows and pcap records of what link `li` recorded.
    #[cold]
    #[inline(never)]
    fn link_events(&mut self, li: LinkId) {
        let mut evs = std::mem::take(&mut self.links[li].link.events);
        let (log, pcap) = (self.links[li].packet_log, self.links[li].pcap);
        for e in &evs {
            match e.kind {
                LinkEventKind::Transmit if pcap => {
                    let data_dir = e.pkt.src == self.flows[FlowId(e.pkt.flow)].src.0;
                    if let Some((_, w)) = self.pcaps.iter_mut().find(|(i, _)| *i == li) {
                        w.write(e.time, &e.pkt, data_dir);
                    }
                }
                LinkEventKind::Transmit => {}
                k if log => {
                    let (ev, reason) = match k {
                        LinkEventKind::Enqueue => (0, -1),
                        LinkEventKind::Dequeue => (1, -1),
                        LinkEventKind::Drop(r) => (2, r.index() as i64),
                        _ => (3, -1),
                    };
                    self.log_packet(li, ev, &e.pkt, reason);
                }
                _ => {}
            }
        }
        evs.clear();
        self.links[li].link.events = evs;
    }

    fn on_tx(&mut self, li: LinkId) {
        let now = self.engine.now();
        self.links[li].tx_event = NEVER;
        self.links[li].finish_service(now);
        if !matches!(self.links[li].service, Service::Opportunities(_)) {
            // Deliver a packet leaving with no delay before serving the next one.
            if self.links[li].delay == 0 {
                self.link_settle(li);
            }
            if !self.links[li].is_busy() {
                self.links[li].start_service(now);
            }
        }
        self.link_settle(li);
    }

    fn on_arrival(&mut self, li: LinkId) {
        let now = self.engine.now();
        debug_assert_eq!(self.links[li].line_head(), Some(now));
        let link = &mut self.links[li];
        link.arr_event = NEVER;
        let pkt = link.pop_departure();
        let to = link.to;
        if link.delay > 0 {
            if let Some(next) = link.line_head() {
                link.arr_event = next;
                self.engine.schedule(next, target(K_ARR, li));
            }
            self.arrive(to, &pkt);
        } else {
            // A zero-delay line holds packets only on analytically served links; their next
            // departure is the end of the next serialization, scheduled after the delivery as
            // the serialization event used to be.
            self.arrive(to, &pkt);
            self.link_settle(li);
        }
    }

    /// `pkt` reaches `node`.
    fn arrive(&mut self, node: NodeId, pkt: &Packet) {
        if pkt.dst != node.0 {
            self.forward(node, pkt);
            return;
        }
        let f = &self.flows[FlowId(pkt.flow)];
        if f.dead || f.closing.is_some() {
            self.arrive_reset(node, pkt);
            return;
        }
        let ep = if node == f.dst { f.rx } else { f.tx };
        self.arrive_ep(ep, pkt);
    }

    /// `pkt` reaches an endpoint of a flow that is dead or whose connection the client reset.
    #[cold]
    fn arrive_reset(&mut self, node: NodeId, pkt: &Packet) {
        let fid = FlowId(pkt.flow);
        let f = &self.flows[fid];
        if f.dead {
            self.dead_drops += 1;
            return;
        }
        let peer = f.closing.expect("closing");
        let ep = if node == f.dst { f.rx } else { f.tx };
        if pkt.flags & flags::RST != 0 {
            // The reset reached the server: the connection is gone.
            for x in [fid, peer] {
                self.flows[x].dead = true;
                let (tx, rx) = (self.flows[x].tx, self.flows[x].rx);
                self.ep_meta[tx].closed = true;
                self.ep_meta[rx].closed = true;
            }
            return;
        }
        if !self.ep_meta[ep].closed {
            self.arrive_ep(ep, pkt); // the server side runs until the reset reaches it
            return;
        }
        self.dead_drops += 1;
        if pkt.payload > 0 {
            // Data for a socket the client closed: answered with a reset (RFC 9293 3.10.7.1).
            self.send_reset(fid, node);
        }
    }

    /// Send a reset from `node` (the client) to the server on the request half of `fid`'s
    /// connection.
    pub(crate) fn send_reset(&mut self, fid: FlowId, node: NodeId) {
        let f = &self.flows[fid];
        // The request half's data direction is client -> server.
        let req = if f.src == node { fid } else { f.closing.or(Some(fid)).expect("peer") };
        let r = &self.flows[req];
        let p = Packet {
            flow: req.0,
            src: r.src.0,
            dst: r.dst.0,
            size: 40,
            payload: 0,
            flags: flags::RST | flags::ACK,
            hash: direction_hash(r.hash_key, r.hash_rev),
            ..Packet::EMPTY
        };
        self.forward(node, &p);
    }

    /// `pkt` reaches endpoint `ep` at `node`.
    #[inline(always)]
    fn arrive_ep(&mut self, ep: EpId, pkt: &Packet) {
        let now = self.engine.now();
        match &mut self.eps[ep] {
            Ep::Sink(s) => {
                s.bytes += pkt.payload as u64;
                s.pkts += 1;
            }
            Ep::Cbr(_) => {}
            Ep::TcpTx(s) => s.on_packet(now, pkt),
            Ep::QuicTx(s) => s.on_packet(now, pkt),
            Ep::QuicRx(r) => {
                r.on_packet(now, pkt);
                let got = r.bytes_delivered();
                let fid = FlowId(pkt.flow);
                let f = &self.flows[fid];
                let client = f.client;
                if f.done_at.is_none() && f.size.is_some_and(|sz| got >= sz) {
                    self.flow_completed(fid);
                }
                if let Some(ci) = client {
                    self.drain_ep(ep);
                    self.client_on_rx(ci, fid);
                    return;
                }
            }
            Ep::TcpRx(r) => {
                r.on_packet(now, pkt);
                let got = r.bytes_received();
                let fid = FlowId(pkt.flow);
                let f = &self.flows[fid];
                if let Some(peer) = f.peer {
                    // the other half's sender on this host (World::pair_halves)
                    let tx = self.flows[peer].tx;
                    if let Ep::TcpTx(s) = &mut self.eps[tx] {
                        s.note_peer_rx(now);
                    }
                }
                let f = &self.flows[fid];
                let (client, page) = (f.client, f.page);
                if f.done_at.is_none() && f.size.is_some_and(|sz| got >= sz) {
                    self.flow_completed(fid);
                }
                if let Some(ci) = client {
                    self.drain_ep(ep);
                    self.client_on_rx(ci, fid);
                    return;
                }
                if let Some(pi) = page {
                    self.drain_ep(ep);
                    self.page_on_rx(pi, fid);
                    return;
                }
            }
        }
        self.drain_ep(ep);
    }

    // ----- endpoints -----

    fn flow_completed(&mut self, fid: FlowId) {
        let now = self.engine.now();
        let f = &mut self.flows[fid];
        f.done_at = Some(now);
        if f.kind == "web" {
            if let Some(t) = &mut self.rec.web {
                let gen = f.name.rsplit_once('#').map(|x| x.0).unwrap_or(&f.name).to_string();
                t.i(0, fid.0 as i64);
                t.s(1, &gen);
                t.f(2, crate::time::secs(f.start));
                t.i(3, f.size.unwrap_or(0) as i64);
                t.f(4, crate::time::secs(now - f.start));
            }
        }
    }

    /// Writes the endpoint's next packet into `out` (true) or returns false.
    #[inline(always)]
    fn ep_poll_transmit(&mut self, ep: EpId, now: Ns, out: &mut Packet) -> bool {
        match &mut self.eps[ep] {
            Ep::TcpTx(s) => s.poll_transmit_into(now, out),
            Ep::TcpRx(r) => r.poll_transmit_into(now, out),
            Ep::QuicTx(s) => s.poll_transmit_into(now, out),
            Ep::QuicRx(r) => r.poll_transmit_into(now, out),
            Ep::Cbr(c) => {
                if c.active && c.next <= now {
                    c.next += crate::time::tx_time(c.size as u64, c.rate_bps);
                    c.seq += c.size as u64;
                    c.sent_bytes += c.size as u64;
                    *out =
                        Packet { size: c.size, payload: c.size - 28, seq: c.seq, flags: flags::DGRAM, ..Packet::EMPTY };
                    true
                } else {
                    false
                }
            }
            Ep::Sink(_) => false,
        }
    }

    fn ep_poll_at(&self, ep: EpId) -> Ns {
        match &self.eps[ep] {
            Ep::Cbr(c) if c.active => c.next,
            Ep::TcpTx(s) => s.poll_at(),
            Ep::TcpRx(r) => r.poll_at(),
            Ep::QuicTx(s) => s.poll_at(),
            Ep::QuicRx(r) => r.poll_at(),
            _ => NEVER,
        }
    }

    /// Emit everything the endpoint wants to send now; reschedule its timer.
    pub(crate) fn drain_ep(&mut self, ep: EpId) {
        let now = self.engine.now();
        let EpMeta { node, flow: fid, closed, .. } = self.ep_meta[ep];
        if closed {
            return;
        }
        let mut p = Packet::EMPTY;
        while self.ep_poll_transmit(ep, now, &mut p) {
            if p.flags & flags::DGRAM != 0 {
                let f = &self.flows[fid];
                p.flow = fid.0;
                p.src = f.src.0;
                p.dst = f.dst.0;
                p.hash = direction_hash(f.hash_key, f.hash_rev);
            }
            self.forward(node, &p);
        }
        let t = self.ep_poll_at(ep);
        if t < self.ep_meta[ep].sched {
            let t = t.max(now);
            self.ep_meta[ep].sched = t;
            self.engine.schedule_far(t, target(K_EP, ep));
        }
    }

    fn on_ep_timer(&mut self, ep: EpId) {
        let now = self.engine.now();
        let m = &mut self.ep_meta[ep];
        if m.sched != now {
            return; // stale
        }
        m.sched = NEVER;
        if m.closed {
            return;
        }
        match &mut self.eps[ep] {
            Ep::TcpTx(s) => {
                // A timer event scheduled for an RTO that an ACK has since moved later: re-arm
                // at the new deadline without polling (what drain_ep would do, see early_rto).
                if let Some(t) = s.early_rto(now) {
                    if t != NEVER {
                        self.ep_meta[ep].sched = t;
                        self.engine.schedule_far(t, target(K_EP, ep));
                    }
                    return;
                }
                s.on_timer(now)
            }
            Ep::TcpRx(r) => r.on_timer(now),
            Ep::QuicTx(s) => s.on_timer(now),
            Ep::QuicRx(r) => r.on_timer(now),
            _ => {}
        }
        self.drain_ep(ep);
    }

    fn on_app(&mut self, ai: usize) {
        let now = self.engine.now();
        match self.actions[ai].clone() {
            AppAction::Start(fid) => {
                let tx = self.flows[fid].tx;
                let size = self.flows[fid].size;
                match &mut self.eps[tx] {
                    Ep::Cbr(c) => {
                        c.active = true;
                        c.next = now;
                    }
                    Ep::TcpTx(s) => match size {
                        Some(b) => {
                            s.write(now, b);
                            s.stop_writing();
                        }
                        None => s.set_unlimited(),
                    },
                    Ep::QuicTx(s) => match size {
                        Some(b) => {
                            s.write(now, b);
                            s.stop_writing();
                        }
                        None => s.set_unlimited(),
                    },
                    _ => {}
                }
                self.drain_ep(tx);
            }
            AppAction::Stop(fid) => {
                let tx = self.flows[fid].tx;
                match &mut self.eps[tx] {
                    Ep::Cbr(c) => c.active = false,
                    Ep::TcpTx(s) => s.stop_writing(),
                    Ep::QuicTx(s) => s.stop_writing(),
                    _ => {}
                }
            }
            AppAction::Weight(fid, wgt) => {
                let tx = self.flows[fid].tx;
                match &mut self.eps[tx] {
                    Ep::TcpTx(s) => {
                        s.cc_mut().set_weight(wgt);
                    }
                    Ep::QuicTx(s) => {
                        s.cc_mut().set_weight(wgt);
                    }
                    _ => {}
                }
            }
            AppAction::WebArrival(gi) => self.web_arrival(gi),
            AppAction::Session(gi) => self.session_arrival(gi, ai),
            AppAction::Burst(fid, bytes, period) => {
                if self.flows[fid].stop.is_some_and(|s| now >= s) {
                    return;
                }
                let tx = self.flows[fid].tx;
                if let Ep::TcpTx(s) = &mut self.eps[tx] {
                    s.write(now, bytes);
                }
                self.drain_ep(tx);
                self.engine.schedule(now + period, target(K_APP, ai));
            }
        }
    }

    fn on_aqm_timer(&mut self, li: LinkId) {
        let now = self.engine.now();
        if self.links[li].aqm_timer != now {
            return;
        }
        self.links[li].aqm_timer = NEVER;
        if self.links[li].queue.next_timer() <= now {
            self.links[li].queue.on_timer(now);
        }
        self.schedule_aqm_timer(li);
    }

    fn on_sample(&mut self) {
        let now = self.engine.now();
        let t = crate::time::secs(now);
        let si = crate::time::secs(self.cfg.output.sample_interval);
        if let Some(mut tab) = self.rec.flows.take() {
            // Rows only for flows that exist during the interval: started, and not completed,
            // stopped or reset before it began (unless bytes still arrived).
            let from = now.saturating_sub(self.cfg.output.sample_interval);
            for fid in self.flows.ids() {
                let got = self.flow_bytes_received(fid);
                let f = &mut self.flows[fid];
                let d = got - f.prev_bytes;
                f.prev_bytes = got;
                let ended = f.dead || f.done_at.is_some_and(|x| x <= from) || f.stop.is_some_and(|x| x <= from);
                if now < f.start || (ended && d == 0) {
                    continue;
                }
                tab.f(0, t);
                tab.i(1, fid.0 as i64);
                tab.i(2, got as i64);
                tab.f(3, d as f64 * 8.0 / si);
            }
            self.rec.flows = Some(tab);
        }
        // (each flow keeps its own sums, so the order of the flows does not matter; a dead flow
        // never revives)
        let (flows, eps) = (&mut self.flows, &self.eps);
        self.video_flows.retain(|&fid| {
            let f = &mut flows[fid];
            if f.dead {
                return false;
            }
            if now >= f.start {
                let srtt = match &eps[f.tx] {
                    Ep::TcpTx(s) => s.srtt().unwrap_or(0),
                    Ep::QuicTx(s) => s.srtt().unwrap_or(0),
                    _ => 0,
                };
                if srtt > 0 {
                    f.srtt_sum += srtt as f64;
                    f.srtt_n += 1;
                }
            }
            true
        });
        if let Some(tab) = &mut self.rec.tcp {
            let from = now.saturating_sub(self.cfg.output.sample_interval);
            for (fid, f) in self.flows.iter_enumerated() {
                if now < f.start || f.done_at.is_some() || f.dead {
                    continue;
                }
                let (x, weight) = match &self.eps[f.tx] {
                    Ep::TcpTx(s) => (s.sample(now), s.cc().weight()),
                    Ep::QuicTx(s) => (s.sample(now), s.cc().weight()),
                    _ => continue,
                };
                // a sender stopped before the interval with nothing left in flight has no more rows,
                // as a completed one (its state no longer changes; under --real its socket is closed)
                if f.stop.is_some_and(|s| s <= from) && x.bytes_in_flight == 0 {
                    continue;
                }
                {
                    tab.f(0, t);
                    tab.i(1, fid.0 as i64);
                    tab.i(2, x.cwnd as i64);
                    tab.i(3, x.ssthresh.min(i64::MAX as u64) as i64);
                    tab.f(4, x.srtt as f64 / 1e6);
                    tab.f(5, x.min_rtt as f64 / 1e6);
                    tab.f(6, x.rto as f64 / 1e6);
                    tab.i(7, x.bytes_in_flight as i64);
                    tab.i(8, x.delivered as i64);
                    tab.f(9, x.delivery_rate_bps as f64);
                    tab.f(10, x.pacing_rate_bps as f64);
                    tab.i(11, x.retransmits as i64);
                    tab.i(12, x.rto_count as i64);
                    tab.f(13, weight.unwrap_or(f64::NAN));
                    tab.s(14, x.tcp_state);
                    tab.s(15, x.cc_state);
                }
            }
        }
        if let Some(tab) = &mut self.rec.queues {
            for (li, l) in self.links.iter().enumerate() {
                if !l.monitor {
                    continue;
                }
                let s = &l.queue.stats;
                let (pd, ps) = self.prev_q[li];
                let n = s.dequeued_pkts - pd;
                let sum = s.sojourn_sum - ps;
                self.prev_q[li] = (s.dequeued_pkts, s.sojourn_sum);
                tab.f(0, t);
                tab.i(1, li as i64);
                tab.i(2, l.queue.len_packets() as i64);
                tab.i(3, l.queue.len_bytes() as i64);
                tab.f(4, if n > 0 { sum as f64 / n as f64 / 1e6 } else { f64::NAN });
                tab.i(5, s.dropped_pkts() as i64);
                tab.i(6, s.marked_pkts as i64);
                tab.f(7, l.queue.probe());
            }
        }
        let next = now + self.cfg.output.sample_interval;
        if next <= self.cfg.duration {
            self.engine.schedule(next, target(K_SAMPLE, 0));
        }
    }

    /// TCP statistics of a flow's sender for the summary (None for datagram flows).
    pub(crate) fn tcp_flow_summary(&self, fid: FlowId) -> Option<crate::report::summary::TcpFlowSummary> {
        let f = &self.flows[fid];
        if let Ep::QuicTx(s) = &self.eps[f.tx] {
            let st = s.stats();
            return Some(crate::report::summary::TcpFlowSummary {
                transport: Some("quic"),
                cc: f.cc.clone(),
                weight: s.cc().weight(),
                retransmits: st.retransmits,
                fast_recoveries: st.congestion_events,
                quic: Some(crate::report::summary::QuicFlowSummary {
                    retransmitted_bytes: st.retransmitted_bytes,
                    unreliable_bytes_sent: st.unreliable_bytes_sent,
                    unreliable_bytes_lost: st.unreliable_lost_bytes,
                    unreliable_bytes_retransmitted: st.unreliable_retransmitted_bytes,
                    hole_bytes: match &self.eps[f.rx] {
                        Ep::QuicRx(r) => r.hole_bytes(),
                        _ => 0,
                    },
                }),
                rto_count: st.pto_count,
                idle_restarts: 0,
                srtt_ms_at_end: (s.srtt().unwrap_or(0) as f64 / 1e3).round() / 1e3,
                min_rtt_ms: (s.min_rtt().unwrap_or(0) as f64 / 1e3).round() / 1e3,
            });
        }
        let Ep::TcpTx(s) = &self.eps[f.tx] else { return None };
        let st = s.stats();
        let x = s.sample(self.engine.now());
        Some(crate::report::summary::TcpFlowSummary {
            transport: None,
            cc: f.cc.clone(),
            weight: s.cc().weight(),
            retransmits: st.retransmits,
            fast_recoveries: st.fast_recoveries,
            quic: None,
            rto_count: st.rto_count,
            idle_restarts: st.idle_restarts,
            srtt_ms_at_end: (x.srtt as f64 / 1e3).round() / 1e3,
            min_rtt_ms: (x.min_rtt as f64 / 1e3).round() / 1e3,
        })
    }

    /// Application bytes received by a flow's receiver.
    pub fn flow_bytes_received(&self, fid: FlowId) -> u64 {
        bytes_received(&self.eps, &self.flows[fid])
    }

    /// Hand over the recorded tables (with metadata tables about flows and links).
    pub fn take_tables(&mut self) -> Vec<Table> {
        let mut out = Vec::new();
        let mut fl = Table::new(
            "flow_info",
            &[("flow", 'i'), ("name", 's'), ("kind", 's'), ("src", 's'), ("dst", 's'), ("start_s", 'f')],
        );
        for (i, f) in self.flows.iter().enumerate() {
            fl.i(0, i as i64);
            fl.s(1, &f.name);
            fl.s(2, f.kind);
            fl.s(3, &self.cfg.nodes[f.src.index()].name);
            fl.s(4, &self.cfg.nodes[f.dst.index()].name);
            fl.f(5, crate::time::secs(f.start));
        }
        out.push(fl);
        let mut li = Table::new(
            "link_info",
            &[
                ("link", 'i'),
                ("name", 's'),
                ("from", 's'),
                ("to", 's'),
                ("rate_bps", 'f'),
                ("delay_ms", 'f'),
                ("aqm", 's'),
            ],
        );
        for (i, l) in self.links.iter().enumerate() {
            li.i(0, i as i64);
            li.s(1, &l.name);
            li.s(2, &self.cfg.nodes[l.from.index()].name);
            li.s(3, &self.cfg.nodes[l.to.index()].name);
            li.f(4, l.nominal_rate_bps());
            li.f(5, l.delay as f64 / 1e6);
            li.s(6, l.queue.kind);
        }
        out.push(li);
        let keep_packets = self.cfg.output.tables.iter().any(|t| t == "packets");
        let packets = self.rec.packets.take().filter(|_| keep_packets);
        for t in [self.rec.flows.take(), self.rec.tcp.take(), self.rec.queues.take(), self.rec.web.take(), packets]
            .into_iter()
            .flatten()
        {
            out.push(t);
        }
        out.extend(self.take_provider_tables());
        if self.cfg.output.tables.iter().any(|t| t == "pages") {
            out.extend(self.pages_table());
        }
        if !self.clients.is_empty() && self.cfg.output.tables.iter().any(|t| t == "segments") {
            let views: Vec<_> = self.clients.iter().map(|c| c.session.view()).collect();
            out.push(crate::report::segments_table(&views));
            if views.iter().any(|v| v.data_plane != "sequential") {
                out.push(crate::report::requests_table(&views));
            }
        }
        out
    }

    /// Captured pcaps: (link name, pcap file bytes).
    /// Heap bytes held by what grows with the traffic and the run's length, estimated in
    /// O(links + tables): packets held by links (queues, delay lines: their allocated capacity),
    /// recorded tables and pcap captures. Tables and captures count three times: they are copied
    /// when handed to the caller and again when written (measured: a 4.29 x 10^6-row packet log,
    /// 343 MB of rows, peaked at 734 MB of RSS for the whole process; estimated 1.03 GB).
    /// Drivers check it between slices against a memory limit.
    pub fn heap_estimate(&self) -> usize {
        let links: usize = self.links.iter().map(|l| l.link.heap_bytes()).sum();
        let r = &self.rec;
        let tables: usize =
            [&r.flows, &r.tcp, &r.web, &r.queues, &r.packets].into_iter().flatten().map(|t| t.data_bytes()).sum();
        let pcaps: usize = self.pcaps.iter().map(|(_, w)| w.buf.len()).sum();
        links + 3 * (tables + pcaps)
    }

    pub fn take_pcaps(&mut self) -> Vec<(String, Vec<u8>)> {
        std::mem::take(&mut self.pcaps).into_iter().map(|(i, w)| (self.links[i].name.clone(), w.buf)).collect()
    }

    /// Run until the configured duration.
    pub fn run(&mut self) {
        while !self.run_until(self.cfg.duration) {}
    }

    /// Run the events up to `until` (capped at the configured duration); the clock ends at
    /// `until`. Drivers call this in slices to report progress and honour a stop request.
    /// Returns true when the run is complete.
    pub fn run_until(&mut self, until: Ns) -> bool {
        let end = until.min(self.cfg.duration);
        while let Some(ev) = self.engine.pop_until(end) {
            let idx = (ev.target & IDX_MASK) as usize;
            match ev.target >> 56 {
                K_TX => self.on_tx(LinkId(idx as u32)),
                K_ARR => self.on_arrival(LinkId(idx as u32)),
                K_EP => self.on_ep_timer(EpId(idx as u32)),
                K_AQM => self.on_aqm_timer(LinkId(idx as u32)),
                K_APP => self.on_app(idx),
                K_SAMPLE => self.on_sample(),
                K_CLIENT => self.on_client_timer(ClientId(idx as u32)),
                K_PROVIDER => self.on_provider_timer(idx),
                K_PAGE => self.on_page_timer(crate::ids::PageId(idx as u32)),
                k => unreachable!("event kind {k}"),
            }
        }
        self.engine.advance_to(end);
        if end >= self.cfg.duration {
            for c in self.clients.iter_mut().filter(|c| c.started) {
                c.session.finish(end);
            }
        }
        end >= self.cfg.duration
    }

    /// End-of-run invariants: queue conservation on every link, link packet accounting.
    pub fn check_invariants(&self) -> Result<(), String> {
        for l in &self.links {
            l.queue.check_conservation().map_err(|e| e.0)?;
            l.check_accounting()?;
        }
        for c in &self.clients {
            c.session.check_invariants().map_err(|e| format!("client {}: {e}", c.session.name))?;
        }
        for pg in &self.pages {
            pg.session.check_invariants()?;
        }
        for t in
            [&self.rec.flows, &self.rec.tcp, &self.rec.queues, &self.rec.web, &self.rec.packets].into_iter().flatten()
        {
            t.check()?;
        }
        Ok(())
    }
}

/// Shortest-hop routes by BFS from every node (ties: lowest link index first).
fn compute_routes(n: usize, links: &[SimLink]) -> Vec<u32> {
    let mut out_links: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, l) in links.iter().enumerate() {
        out_links[l.from.index()].push(i);
    }
    let mut routes = vec![u32::MAX; n * n];
    for (src, row) in routes.chunks_mut(n.max(1)).enumerate() {
        // BFS recording the first link taken from src.
        let mut first = vec![u32::MAX; n];
        let mut seen = vec![false; n];
        seen[src] = true;
        let mut q = std::collections::VecDeque::new();
        for &li in &out_links[src] {
            let to = links[li].to.index();
            if !seen[to] {
                seen[to] = true;
                first[to] = li as u32;
                q.push_back(to);
            }
        }
        while let Some(u) = q.pop_front() {
            for &li in &out_links[u] {
                let to = links[li].to.index();
                if !seen[to] {
                    seen[to] = true;
                    first[to] = first[u];
                    q.push_back(to);
                }
            }
        }
        row.copy_from_slice(&first);
    }
    routes
}

pub(crate) fn cc_err(p: &str, e: crate::params::ParamError) -> SimError {
    if e.param == "cc" {
        serr(format!("{p}.cc"), e.msg)
    } else {
        serr(format!("{p}.cc_params.{}", e.param), e.msg)
    }
}

/// Build the sans-IO link of config entry `p` = `links[i]` (service from the rate or trace, the AQM
/// through `Queue::build` with its seed stream `link/<name>/aqm`, loss with `link/<name>/loss`,
/// sojourn recording on monitored links). Shared by the packet simulator and the real-network
/// emulator (`qoelab-net`), so both run the same link for the same scenario.
pub fn build_link<P: crate::net::link::LinkPacket>(p: &str, l: &LinkCfg, seed: u64) -> Result<Link<P>, SimError> {
    let service = match &l.trace {
        Some(t) => {
            t.validate().map_err(|e| serr(format!("{p}.trace"), e))?;
            match t {
                TraceCfg::Opportunities { period_ns, times_ns, bytes_per_opportunity, once } => {
                    Service::Opportunities(Opportunities {
                        period: *period_ns,
                        times: times_ns.clone(),
                        bytes_per_opp: *bytes_per_opportunity,
                        once: *once,
                    })
                }
                TraceCfg::Rates { segments, looping } => Service::Schedule(RateSchedule::new(segments, *looping)),
            }
        }
        None => {
            if l.rate_bps == 0 {
                return Err(serr(format!("{p}.rate"), "expected a rate > 0 (or a trace)"));
            }
            Service::Fixed(l.rate_bps)
        }
    };
    let params = Params::from_value(&l.aqm_params).map_err(|e| serr(format!("{p}.aqm_params"), e.msg))?;
    let ctx = AqmBuildCtx {
        limit_packets: l.buffer_packets,
        limit_bytes: l.buffer_bytes,
        link_rate_bps: l.rate_bps,
        seed: Rng::for_component(seed, &format!("link/{}/aqm", l.name)).next_u64(),
    };
    let mut queue = Queue::build(&l.aqm, &params, &ctx).map_err(|e| {
        if e.param == "kind" {
            serr(format!("{p}.aqm"), e.msg)
        } else {
            serr(format!("{p}.aqm_params.{}", e.param), e.msg)
        }
    })?;
    if l.monitor {
        queue.record_sojourns();
    }
    let loss = match &l.loss {
        Some(lc) => {
            lc.validate().map_err(|e| serr(format!("{p}.loss.{e}"), ""))?;
            Some(Loss::new(lc.clone(), Rng::for_component(seed, &format!("link/{}/loss", l.name))))
        }
        None => None,
    };
    Ok(Link::new(l.name.clone(), NodeId::from_index(l.from), NodeId::from_index(l.to), service, l.delay, queue, loss))
}

/// A bulk flow's `quic` table as a [`QuicConfig`] (docs/models/transport-quic.md, Parameters).
pub(crate) fn quic_config(p: &str, v: &serde_json::Value) -> Result<QuicConfig, SimError> {
    let mut c = QuicConfig::default();
    if v.is_null() {
        return Ok(c);
    }
    let Some(o) = v.as_object() else {
        return Err(serr(format!("{p}.quic"), "expected a table"));
    };
    for (k, x) in o {
        let key = format!("{p}.quic.{k}");
        let int = |lo: u64, hi: u64| -> Result<u64, SimError> {
            x.as_u64()
                .filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| serr(&key, format!("expected an integer in {lo}..={hi}")))
        };
        let boolean = || x.as_bool().ok_or_else(|| serr(&key, "expected true or false"));
        match k.as_str() {
            "max_datagram" => c.max_datagram = int(1200, 1472)? as u32,
            "initial_window" => c.initial_window = int(1, 1000)? as u32,
            "max_ack_delay" => c.max_ack_delay = int(0, 16_383 * crate::time::MS)?,
            "ack_eliciting_threshold" => c.ack_eliciting_threshold = int(1, 100)? as u32,
            "max_ack_ranges" => c.max_ack_ranges = int(1, crate::quic::config::MAX_ACK_RANGES as u64)? as usize,
            "pacing" => c.pacing = boolean()?,
            "handshake" => c.handshake = boolean()?,
            "unreliable_fraction" => {
                c.unreliable_fraction = x
                    .as_f64()
                    .filter(|f| (0.0..=1.0).contains(f))
                    .ok_or_else(|| serr(&key, "expected a number in [0, 1]"))?
            }
            "unreliable_period" => c.unreliable_period = int(1, 1 << 40)?,
            _ => return Err(serr(&key, "unknown QUIC option")),
        }
    }
    Ok(c)
}
