//! `qoelab run --real`: a dumbbell scenario executed on a real network (docs/realnet.md).
//!
//! Two anonymous network namespaces joined by the emulator (one TUN each, as `qoelab link`), whose
//! two directions are the scenario's bottleneck links built by the simulator's own
//! `net::world::build_link` (rate or trace, AQM, buffer, loss), with the path's propagation delay.
//! In the server namespace run `qoelab serve` (one per congestion controller, serving the
//! synthetic videos) and the built-in bulk senders; in the client namespace the bulk receivers and
//! the video clients: the core's `VideoSession` (player + ABR + data plane + HTTP model), unchanged,
//! over a [`Transport`] made of kernel TCP sockets and a real HTTP/1.1 client ([`crate::reader`]).
//!
//! Clients of player "dashjs" are dash.js in headless Chromium instead (`browser/play.mjs` under
//! node, started in the client namespace before time 0, told to start playing at the client's
//! `start` on its stdin, stopped at the end); the Python front turns their events into the
//! client's metrics and segments. Their connections are known from their own `qoelab serve`'s
//! TCP_INFO log.
//!
//! Threads: the emulator (SCHED_FIFO when permitted, timerfd, the queue samples) and this one (a
//! poll loop over the non-blocking sockets, a timerfd for the sessions' `poll_at()`, a signalfd).
//! Time is CLOCK_MONOTONIC in integer ns since the start of the run, for both.
//!
//! The Python front (`python/qoelab/realrun.py`) checks the scenario, writes the plan and turns
//! what this writes (summary.json, tables.json, real.json) into the result directory.

use crate::emu::{self, Direction};
use crate::reader::{self, Expect, Reader};
use crate::run::{self, Fatal, CLIENT_ADDR, CLIENT_NET, SERVER_ADDR, SERVER_NET};
use crate::sys;
use crate::tcpinfo::TcpInfo;
use qoelab_core::ids::Id;
use qoelab_core::metrics::histogram::LogHistogram;
use qoelab_core::net::clients::session_parts;
use qoelab_core::net::config::{FlowCfg, SimConfig};
use qoelab_core::net::summary::{jain, link_summary};
use qoelab_core::net::world::{web_draw, web_rng};
use qoelab_core::player::Player;
use qoelab_core::report::summary::{config_hash, r6, FlowSummary, PacketCounts, Summary, TcpFlowSummary};
use qoelab_core::report::table::{Column, Table};
use qoelab_core::report::{self as rep, PacketClientInfo};
use qoelab_core::rng::Rng;
use qoelab_core::session::{ConnId, Dir, Transport, VideoSession};
use qoelab_core::time::{secs, Ns, NEVER};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SERVER_TUN: &str = "qrs0";
const CLIENT_TUN: &str = "qrc0";
/// Unsent bytes a bulk sender keeps in its socket (TCP_NOTSENT_LOWAT): bounds what still leaves
/// after the flow's stop time.
const BULK_LOWAT: i32 = 128 * 1024;

fn fatal(m: impl Into<String>) -> Fatal {
    Fatal(m.into())
}

/// A `qoelab serve` to start in the server namespace.
pub struct ServerPlan {
    pub argv: Vec<String>,
    pub port: u16,
    pub tcp_info_log: String,
    pub stderr: String,
}

/// dash.js in Chromium for one client: `node play.mjs CONFIG` in the client namespace.
pub struct BrowserPlan {
    pub argv: Vec<String>,
    pub cwd: String,
    /// Its stdout (dash.js's events, JSON lines) and stderr.
    pub events: String,
    pub stderr: String,
}

/// What the Python front hands over (plan.json).
pub struct Plan {
    /// The process that runs the driver (`qoelab run --real`): the driver dies with it.
    pub parent_pid: Option<u32>,
    pub config: SimConfig,
    pub config_hash: String,
    /// Link indices of the bottleneck (server -> client, client -> server).
    pub down: usize,
    pub up: usize,
    /// One-way propagation delay of each direction (the path's, ns).
    pub delay_down: Ns,
    pub delay_up: Ns,
    pub servers: Vec<ServerPlan>,
    /// Per client: the URL path of its video's rung files (`/synthetic/<ladder>/s<S>-n<N>/`) and
    /// its server.
    pub clients: Vec<(String, usize)>,
    /// Per client: dash.js in Chromium (player "dashjs") or None (the core's VideoSession).
    pub browsers: Vec<Option<BrowserPlan>>,
    /// Per bulk flow: upstream (sender on the client side).
    pub bulk_upstream: Vec<bool>,
    pub out: String,
    pub rt: bool,
}

fn get<'a>(v: &'a Value, k: &str) -> Result<&'a Value, Fatal> {
    v.get(k).ok_or_else(|| fatal(format!("plan: missing key {k}")))
}
fn get_u64(v: &Value, k: &str) -> Result<u64, Fatal> {
    get(v, k)?.as_u64().ok_or_else(|| fatal(format!("plan: {k}: expected an integer")))
}
fn get_str(v: &Value, k: &str) -> Result<String, Fatal> {
    Ok(get(v, k)?.as_str().ok_or_else(|| fatal(format!("plan: {k}: expected a string")))?.to_string())
}

impl Plan {
    pub fn parse(text: &str) -> Result<Plan, Fatal> {
        let v: Value = serde_json::from_str(text).map_err(|e| fatal(format!("plan: {e}")))?;
        let cfg_v = get(&v, "config")?;
        let cfg_json = cfg_v.to_string();
        let config = SimConfig::from_json(&cfg_json).map_err(Fatal)?;
        let mut servers = Vec::new();
        for s in get(&v, "servers")?.as_array().ok_or_else(|| fatal("plan: servers"))? {
            let argv = get(s, "argv")?
                .as_array()
                .ok_or_else(|| fatal("plan: argv"))?
                .iter()
                .map(|a| a.as_str().unwrap_or("").to_string())
                .collect();
            servers.push(ServerPlan {
                argv,
                port: get_u64(s, "port")? as u16,
                tcp_info_log: get_str(s, "tcp_info_log")?,
                stderr: get_str(s, "stderr")?,
            });
        }
        let mut clients = Vec::new();
        let mut browsers = Vec::new();
        for c in get(&v, "clients")?.as_array().ok_or_else(|| fatal("plan: clients"))? {
            clients.push((get_str(c, "path")?, get_u64(c, "server")? as usize));
            browsers.push(match c.get("browser") {
                Some(b) if !b.is_null() => Some(BrowserPlan {
                    argv: get(b, "argv")?
                        .as_array()
                        .ok_or_else(|| fatal("plan: browser.argv"))?
                        .iter()
                        .map(|a| a.as_str().unwrap_or("").to_string())
                        .collect(),
                    cwd: get_str(b, "cwd")?,
                    events: get_str(b, "events")?,
                    stderr: get_str(b, "stderr")?,
                }),
                _ => None,
            });
        }
        // The players are part of what was run: a scenario with a dash.js client hashes differently
        // from the same scenario with the sans-IO player.
        let hashed = match v.get("players") {
            Some(p) if !p.is_null() && p.as_object().is_none_or(|o| !o.is_empty()) => format!("{cfg_json}{p}"),
            _ => cfg_json.clone(),
        };
        Ok(Plan {
            parent_pid: v.get("parent_pid").and_then(|p| p.as_u64()).map(|p| p as u32),
            config,
            config_hash: config_hash(&hashed),
            down: get_u64(&v, "down")? as usize,
            up: get_u64(&v, "up")? as usize,
            delay_down: get_u64(&v, "delay_down_ns")?,
            delay_up: get_u64(&v, "delay_up_ns")?,
            servers,
            clients,
            browsers,
            bulk_upstream: get(&v, "bulk_upstream")?
                .as_array()
                .ok_or_else(|| fatal("plan: bulk_upstream"))?
                .iter()
                .map(|b| b.as_bool().unwrap_or(false))
                .collect(),
            out: get_str(&v, "out")?,
            rt: get(&v, "rt")?.as_bool().unwrap_or(true),
        })
    }
}

/// Entry point of `qoelab-netemu run --plan FILE`: the exit status (0, 2 with one line, 128 +
/// signal when interrupted).
pub fn main(args: &[String]) -> i32 {
    let path = match args {
        [flag, p] if flag == "--plan" => p,
        _ => {
            eprintln!("qoelab run --real: error: usage: qoelab-netemu run --plan FILE");
            return 2;
        }
    };
    let r = std::fs::read_to_string(path)
        .map_err(|e| fatal(format!("cannot read {path}: {e}")))
        .and_then(|t| Plan::parse(&t))
        .and_then(|p| run_plan(&p));
    match r {
        Ok(code) => code,
        Err(e) => run::fatal_exit("qoelab run --real", &e),
    }
}

// ---------------------------------------------------------------------------------------------
// Flows and the emulator thread

/// A flow as the summary and the tables report it.
struct Flow {
    name: String,
    kind: &'static str,
    src: usize,
    dst: usize,
    cc: String,
    start: Ns,
    end: Option<Ns>,
    bytes: u64,
    prev_bytes: u64,
    /// Last TCP_INFO of its sender.
    info: Option<TcpInfo>,
    /// Client-side port of a video connection (to match the server's TCP_INFO log).
    port: u16,
    /// Smoothed RTT samples of the server's side (video responses), µs.
    rtt_samples: Vec<f64>,
    /// A finite transfer's size (bulk with `size`, web) and when its last byte arrived.
    size: Option<u64>,
    done: Option<Ns>,
}

impl Flow {
    /// A flow that has carried nothing yet.
    fn new(name: String, kind: &'static str, (src, dst): (usize, usize), cc: &str, start: Ns, port: u16) -> Flow {
        Flow {
            name,
            kind,
            src,
            dst,
            cc: cc.to_string(),
            start,
            end: None,
            bytes: 0,
            prev_bytes: 0,
            info: None,
            port,
            rtt_samples: Vec::new(),
            size: None,
            done: None,
        }
    }
}

/// What the emulator thread hands back.
struct EmuResult {
    down: Direction,
    up: Direction,
    queues: Table,
    wakeups: u64,
    fifo: bool,
    cpu_s: f64,
}

/// The emulator loop of `qoelab link` without children: until `stop`, with queue samples every
/// `interval` (link indices `ids`).
#[allow(clippy::too_many_arguments)]
fn emulate(
    mut down: Direction,
    mut up: Direction,
    mut stun: File,
    mut ctun: File,
    t0: u64,
    stop: Arc<AtomicBool>,
    interval: Ns,
    ids: (usize, usize),
    rt: bool,
) -> Result<EmuResult, String> {
    sys::set_timer_slack_1ns();
    let fifo = rt && sys::try_sched_fifo(50);
    let cpu0 = sys::thread_cpu_seconds();
    let timer = sys::timerfd_new().map_err(|e| format!("timerfd: {e}"))?;
    let mut timer_file = timer.try_clone().map_err(|e| format!("timerfd: {e}"))?;
    let fds = [stun.as_raw_fd(), ctun.as_raw_fd(), timer.as_raw_fd()];
    let mut ready = [false; 3];
    let mut buf = vec![0u8; 65536];
    let mut armed = u64::MAX;
    let mut wakeups = 0u64;
    let mut queues = qoelab_core::report::queues_table();
    let mut next_sample = interval;
    let mut prev = [(0u64, 0u128); 2];
    while !stop.load(Ordering::Relaxed) {
        let deadline = emu::next_deadline(&down, &up).min(next_sample);
        if deadline != armed {
            sys::timerfd_set_abs(&timer, (deadline != NEVER).then(|| t0 + deadline))
                .map_err(|e| format!("timerfd_settime: {e}"))?;
            armed = deadline;
        }
        sys::poll_readable(&fds, 20, &mut ready).map_err(|e| format!("poll: {e}"))?;
        wakeups += 1;
        let now = sys::monotonic_ns().saturating_sub(t0);
        down.run_due(now, t0, &mut ctun);
        up.run_due(now, t0, &mut stun);
        if ready[0] {
            emu::read_batch(&mut stun, &mut down, now, &mut buf, 256)
                .map_err(|e| format!("read from the server-side TUN: {e}"))?;
        }
        if ready[1] {
            emu::read_batch(&mut ctun, &mut up, now, &mut buf, 256)
                .map_err(|e| format!("read from the client-side TUN: {e}"))?;
        }
        if ready[2] {
            let _ = timer_file.read(&mut buf[..8]);
            armed = u64::MAX;
        }
        while now >= next_sample {
            for (k, (d, id)) in [(&down, ids.0), (&up, ids.1)].into_iter().enumerate() {
                let q = &d.link.queue;
                let s = &q.stats;
                let (pd, ps) = prev[k];
                let n = s.dequeued_pkts - pd;
                let sum = s.sojourn_sum - ps;
                prev[k] = (s.dequeued_pkts, s.sojourn_sum);
                queues.f(0, secs(next_sample));
                queues.i(1, id as i64);
                queues.i(2, q.len_packets() as i64);
                queues.i(3, q.len_bytes() as i64);
                queues.f(4, if n > 0 { sum as f64 / n as f64 / 1e6 } else { f64::NAN });
                queues.i(5, s.dropped_pkts() as i64);
                queues.i(6, s.marked_pkts as i64);
                queues.f(7, q.probe());
            }
            next_sample += interval;
        }
    }
    let end = sys::monotonic_ns().saturating_sub(t0);
    down.finish(end);
    up.finish(end);
    Ok(EmuResult { down, up, queues, wakeups, fifo, cpu_s: sys::thread_cpu_seconds() - cpu0 })
}

// ---------------------------------------------------------------------------------------------
// Video clients: the session's Transport on real sockets

/// One real TCP connection of a session's connection slot.
struct Conn {
    sock: Option<TcpStream>,
    connected: bool,
    eof: bool,
    out: Vec<u8>,
    out_pos: usize,
    /// Real bytes written to the socket, and (real end offset, model bytes) of requests not yet
    /// completely written.
    written: u64,
    req_ends: VecDeque<(u64, u64)>,
    /// Model request bytes written completely, and how many the session was told about.
    req_model: u64,
    req_told: u64,
    reader: Reader,
    req_flow: usize,
    resp_flow: usize,
}

impl Conn {
    fn fresh() -> Conn {
        Conn {
            sock: None,
            connected: false,
            eof: false,
            out: Vec::new(),
            out_pos: 0,
            written: 0,
            req_ends: VecDeque::new(),
            req_model: 0,
            req_told: 0,
            reader: Reader::default(),
            req_flow: usize::MAX,
            resp_flow: usize::MAX,
        }
    }

    /// Write what is pending; returns the bytes written.
    fn flush(&mut self) -> Result<u64, Fatal> {
        let before = self.written;
        let Some(s) = &mut self.sock else { return Ok(0) };
        if !self.connected {
            return Ok(0);
        }
        while self.out_pos < self.out.len() {
            match s.write(&self.out[self.out_pos..]) {
                Ok(0) => break,
                Ok(n) => {
                    self.out_pos += n;
                    self.written += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => break,
                Err(e) => return Err(fatal(format!("writing a request: {e}"))),
            }
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        while let Some(&(end, model)) = self.req_ends.front() {
            if end > self.written {
                break;
            }
            self.req_ends.pop_front();
            self.req_model += model;
        }
        Ok(self.written - before)
    }
}

/// The session's view of a client's connections during one call.
struct Slots<'a> {
    conns: &'a mut Vec<Conn>,
    /// Connections discarded by resets during the call (closed after it).
    retired: &'a mut Vec<Conn>,
}

impl Transport for Slots<'_> {
    /// Requests are sent after the call, from the data plane's request log (which names the
    /// segment, rung and byte range); responses are written by the real server.
    fn write(&mut self, _now: Ns, _conn: ConnId, _dir: Dir, _bytes: u64) {}
    fn delivered(&self, conn: ConnId, dir: Dir) -> u64 {
        let c = &self.conns[conn.0 as usize];
        match dir {
            Dir::Request => c.req_told,
            Dir::Response => c.reader.delivered(),
        }
    }
    fn reset(&mut self, _now: Ns, conn: ConnId) {
        let old = std::mem::replace(&mut self.conns[conn.0 as usize], Conn::fresh());
        self.retired.push(old);
    }
}

struct Client {
    idx: usize,
    session: VideoSession,
    conns: Vec<Conn>,
    retired: Vec<Conn>,
    /// Next entry of the data plane's request log to send.
    cursor: usize,
    started: bool,
    opened: u32,
    path: String,
    server: SocketAddrV4,
    cc: String,
    model_request: u64,
    model_header: u64,
    /// Flow ids of the response connections (the first is the main one).
    resp_flows: Vec<usize>,
}

/// Everything the app loop owns.
struct App<'a> {
    cfg: &'a SimConfig,
    flows: Vec<Flow>,
    clients: Vec<Client>,
    server_ns: &'a File,
    client_ns: &'a File,
    /// Lateness of the sessions' timer calls (now - poll_at), ns.
    timer_lateness: LogHistogram,
}

fn in_ns<T>(ns: &File, back: &File, f: impl FnOnce() -> std::io::Result<T>) -> Result<T, Fatal> {
    sys::setns_net(ns).map_err(|e| fatal(format!("setns: {e}")))?;
    let r = f();
    sys::setns_net(back).map_err(|e| fatal(format!("setns: {e}")))?;
    r.map_err(|e| fatal(format!("socket: {e}")))
}

impl App<'_> {
    /// Open a connection for slot `k` of client `ci` (in the client namespace).
    fn open_conn(&mut self, ci: usize, k: usize, now: Ns) -> Result<(), Fatal> {
        let c = &mut self.clients[ci];
        let sock = in_ns(self.client_ns, self.client_ns, || sys::tcp_connect_nb(c.server, &c.cc))?;
        let port = sock.local_addr().map(|a| a.port()).unwrap_or(0);
        let (req, resp) = self.push_conn_flows(ci, k, now, port);
        let c = &mut self.clients[ci];
        let conn = &mut c.conns[k];
        conn.sock = Some(sock);
        conn.req_flow = req;
        conn.resp_flow = resp;
        c.opened += 1;
        Ok(())
    }

    /// The two flow records (request, response) of client `ci`'s connection in slot `k`, named as
    /// the simulator names them (`~n` after the n-th reset), starting at `start`; the response
    /// flow joins the client's `resp_flows` unless it is the probe slot. Returns their ids.
    fn push_conn_flows(&mut self, ci: usize, k: usize, start: Ns, port: u16) -> (usize, usize) {
        let c = &mut self.clients[ci];
        let cfg = &self.cfg.clients[c.idx];
        let suffix = if c.opened as usize >= c.conns.len() {
            format!("~{}", c.opened as usize + 1 - c.conns.len())
        } else {
            String::new()
        };
        let slot = if k == 0 { String::new() } else { format!("/c{k}") };
        let mk = |name: String, kind, src, dst| Flow::new(name, kind, (src, dst), &cfg.cc, start, port);
        let probe = c.session.probe_slot() == Some(k as u32);
        let kind = if probe { "probe" } else { "video" };
        let (req, resp) = (self.flows.len(), self.flows.len() + 1);
        if !probe {
            c.resp_flows.push(resp);
        }
        self.flows.push(mk(format!("{}{slot}/req{suffix}", cfg.name), "http_req", cfg.client, cfg.server));
        self.flows.push(mk(format!("{}{slot}/resp{suffix}", cfg.name), kind, cfg.server, cfg.client));
        (req, resp)
    }

    /// The flow records of a client that never started (it starts at or after the end), named
    /// and numbered as `open_conn` would have, as the simulator lists them: no socket, no bytes.
    fn register_unstarted(&mut self, ci: usize) {
        let start = self.cfg.clients[self.clients[ci].idx].start;
        for k in 0..self.clients[ci].conns.len() {
            self.push_conn_flows(ci, k, start, 0);
        }
    }

    /// After a session call: close the connections it reset, open fresh ones, send the requests
    /// it issued, and tell it about request bytes written; until nothing changes.
    fn settle(&mut self, ci: usize, now: Ns) -> Result<(), Fatal> {
        loop {
            let retired = std::mem::take(&mut self.clients[ci].retired);
            for mut old in retired {
                for f in [old.req_flow, old.resp_flow] {
                    if let Some(fl) = self.flows.get_mut(f) {
                        fl.end = Some(now);
                    }
                }
                if let (Some(s), Some(fl)) = (&old.sock, self.flows.get_mut(old.req_flow)) {
                    fl.info = TcpInfo::of(s.as_raw_fd());
                }
                old.sock = None; // closed with unread data: the kernel resets the connection
            }
            for k in 0..self.clients[ci].conns.len() {
                if self.clients[ci].conns[k].sock.is_none() {
                    self.open_conn(ci, k, now)?;
                }
            }
            let c = &mut self.clients[ci];
            let log = &c.session.plane_log().requests;
            while c.cursor < log.len() {
                let r = &log[c.cursor];
                c.cursor += 1;
                if r.cancelled {
                    continue;
                }
                // An RTT probe (Sprint) asks for the first bytes of rung 0 (the init segment).
                let off = match (r.offset, r.kind) {
                    (Some(o), _) => o,
                    (None, "probe") => 0,
                    _ => return Err(fatal("a request without a byte range (the video has no layout)")),
                };
                let rung_path = format!("{}{}.mp4", c.path, r.rung);
                let bytes = reader::request(&c.server.to_string(), &rung_path, off, r.body);
                let conn = &mut c.conns[r.conn as usize];
                if conn.eof {
                    return Err(fatal("the server closed a connection the session still uses"));
                }
                conn.out.extend_from_slice(&bytes);
                conn.req_ends.push_back((conn.written + (conn.out.len() - conn.out_pos) as u64, c.model_request));
                conn.reader.queue.push_back(Expect { model_header: c.model_header, body: r.body, offset: off });
            }
            let mut tell = Vec::new();
            for (k, conn) in c.conns.iter_mut().enumerate() {
                let n = conn.flush()?;
                if let Some(f) = self.flows.get_mut(conn.req_flow) {
                    f.bytes += n;
                }
                if conn.req_model > conn.req_told {
                    tell.push(k);
                }
            }
            if tell.is_empty() {
                return Ok(());
            }
            for k in tell {
                let c = &mut self.clients[ci];
                c.conns[k].req_told = c.conns[k].req_model;
                let mut slots = Slots { conns: &mut c.conns, retired: &mut c.retired };
                c.session.on_delivered(now, ConnId(k as u32), Dir::Request, &mut slots);
            }
        }
    }

    fn on_timer(&mut self, ci: usize, now: Ns) -> Result<(), Fatal> {
        let c = &mut self.clients[ci];
        let due = c.session.poll_at();
        if due != NEVER && due <= now {
            self.timer_lateness.record(now - due);
        }
        let mut slots = Slots { conns: &mut c.conns, retired: &mut c.retired };
        c.session.on_timer(now, &mut slots);
        self.settle(ci, now)
    }

    /// Socket events of connection `k` of client `ci`.
    fn on_socket(&mut self, ci: usize, k: usize, now: Ns, revents: i16, buf: &mut [u8]) -> Result<(), Fatal> {
        let conn = &mut self.clients[ci].conns[k];
        let Some(s) = &mut conn.sock else { return Ok(()) };
        if !conn.connected && revents & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0 {
            if let Ok(Some(e)) | Err(e) = s.take_error() {
                return Err(fatal(format!("cannot connect to the server: {e}")));
            }
            conn.connected = true;
        }
        let mut got = 0u64;
        if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            loop {
                match s.read(buf) {
                    Ok(0) => {
                        conn.eof = true;
                        if conn.reader.outstanding() > 0 {
                            return Err(fatal("the server closed a connection with a response outstanding"));
                        }
                        break;
                    }
                    Ok(n) => {
                        conn.reader.feed(&buf[..n]).map_err(|e| fatal(format!("HTTP response: {e}")))?;
                        got += n as u64;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => break,
                    Err(e) => return Err(fatal(format!("reading a response: {e}"))),
                }
            }
        }
        let (req_flow, resp_flow) = (conn.req_flow, conn.resp_flow);
        let sent = conn.flush()?;
        self.flows[req_flow].bytes += sent;
        if got > 0 {
            self.flows[resp_flow].bytes += got;
            let c = &mut self.clients[ci];
            let mut slots = Slots { conns: &mut c.conns, retired: &mut c.retired };
            c.session.on_delivered(now, ConnId(k as u32), Dir::Response, &mut slots);
        }
        self.settle(ci, now)
    }
}

// ---------------------------------------------------------------------------------------------
// Bulk, on/off and web flows: senders in the server namespace, receivers in the client namespace
// (the other way round upstream). A `Source` is a `[[flow]]` entry; each of its TCP connections is
// an `Xfer` (one for bulk and onoff, one per arrival for web).

enum SrcKind {
    /// Unlimited between start and stop, or `size` bytes.
    Bulk { size: Option<u64>, flow: usize },
    /// `bytes` every `period` on one connection (world.rs AppAction::Burst): bursts at
    /// start + k x period while before stop.
    Onoff { bytes: u64, period: Ns, next: Ns, xfer: usize, flow: usize },
    /// Poisson arrivals of finite transfers, drawn as the simulator draws them (world::web_draw).
    Web { rng: Rng, cdf: Vec<(f64, f64)>, mean_gap_s: f64, next: Ns, count: u64 },
    /// Datagrams of `size` IP bytes (UDP payload `size` - 28) every tx_time(size, rate) from start
    /// to stop, as the simulator's CbrSource; the receiver counts the payload bytes.
    Cbr { rate_bps: u64, size: u32, next: Ns, flow: usize, tx: Option<UdpSocket>, rx: UdpSocket },
}

struct Source {
    name: String,
    src: usize,
    dst: usize,
    cc: String,
    /// Upstream: the sender is on the client side, the receiver on the server side.
    up: bool,
    start: Ns,
    stop: Option<Ns>,
    listener: TcpListener,
    kind: SrcKind,
    started: bool,
    stopped: bool,
}

struct Xfer {
    flow: usize,
    source: usize,
    /// The sender's local port (matches the accepted connection to its transfer).
    port: u16,
    sender: Option<TcpStream>,
    receiver: Option<TcpStream>,
    /// Bytes the application still has to write (None: unlimited).
    quota: Option<u64>,
    /// Finite: the write side is shut once the quota is written.
    fin: bool,
    shut: bool,
    accepted: bool,
}

/// Opens a transfer's sending socket (non-blocking connect to its source's listener, with the
/// flow's congestion controller).
fn open_xfer(app: &App, src: &Source, si: usize, flow: usize, quota: Option<u64>) -> Result<Xfer, Fatal> {
    let port = src.listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let (tx_ns, rx_addr) = if src.up { (app.client_ns, SERVER_ADDR) } else { (app.server_ns, CLIENT_ADDR) };
    let addr = SocketAddrV4::new(rx_addr.parse().unwrap(), port);
    let s = in_ns(tx_ns, app.client_ns, || sys::tcp_connect_nb(addr, &src.cc))?;
    sys::set_tcp_int(s.as_raw_fd(), libc::TCP_NOTSENT_LOWAT, BULK_LOWAT)
        .map_err(|e| fatal(format!("TCP_NOTSENT_LOWAT: {e}")))?;
    let local = s.local_addr().map(|a| a.port()).map_err(|e| fatal(format!("flow {}: {e}", src.name)))?;
    Ok(Xfer {
        flow,
        source: si,
        port: local,
        sender: Some(s),
        receiver: None,
        quota,
        fin: quota.is_some() && !matches!(src.kind, SrcKind::Onoff { .. }),
        shut: false,
        accepted: false,
    })
}

/// A flow's end: its stop or its completion, whichever came first.
fn end_at(f: &mut Flow, t: Ns) {
    f.end = Some(f.end.map_or(t, |e| e.min(t)));
}

impl Xfer {
    fn wants_write(&self) -> bool {
        !self.shut && self.quota != Some(0)
    }
}

/// The `flows` and `tcp` tables' rows of every sample due at or before `upto`.
fn take_samples(
    upto: Ns,
    next_sample: &mut Ns,
    si: Ns,
    app: &mut App,
    xfers: &[Xfer],
    flows_tab: &mut Table,
    tcp: &mut Table,
) {
    while upto >= *next_sample {
        let t = secs(*next_sample);
        let from = next_sample.saturating_sub(si);
        for (fid, f) in app.flows.iter_mut().enumerate() {
            let d = f.bytes - f.prev_bytes;
            f.prev_bytes = f.bytes;
            let ended = f.end.is_some_and(|e| e <= from);
            if *next_sample < f.start || (ended && d == 0) {
                continue;
            }
            flows_tab.f(0, t);
            flows_tab.i(1, fid as i64);
            flows_tab.i(2, f.bytes as i64);
            flows_tab.f(3, d as f64 * 8.0 / secs(si));
        }
        for x in xfers.iter() {
            if let Some(s) = &x.sender {
                if let Some(i) = TcpInfo::of(s.as_raw_fd()) {
                    tcp_row(tcp, t, x.flow, &i);
                }
            }
        }
        for c in &app.clients {
            for conn in &c.conns {
                if let (Some(s), true) = (&conn.sock, conn.connected) {
                    if let Some(x) = TcpInfo::of(s.as_raw_fd()) {
                        tcp_row(tcp, t, conn.req_flow, &x);
                    }
                }
            }
        }
        *next_sample += si;
    }
}

fn tcp_row(t: &mut Table, time: f64, flow: usize, x: &TcpInfo) {
    t.f(0, time);
    t.i(1, flow as i64);
    t.i(2, x.cwnd_bytes() as i64);
    t.i(3, x.ssthresh_bytes().min(i64::MAX as u64) as i64);
    t.f(4, x.rtt_us as f64 / 1e3);
    t.f(5, x.min_rtt_us as f64 / 1e3);
    t.f(6, x.rto_us as f64 / 1e3);
    t.i(7, x.in_flight_bytes() as i64);
    t.i(8, x.bytes_acked as i64);
    t.f(9, x.delivery_rate as f64 * 8.0);
    t.f(10, x.pacing_rate as f64 * 8.0);
    t.i(11, x.total_retrans as i64);
    t.i(12, 0);
    t.f(13, f64::NAN);
    t.s(14, x.tcp_state());
    t.s(15, if x.snd_cwnd < x.snd_ssthresh { "slow_start" } else { "congestion_avoidance" });
}

fn table_json(t: &Table) -> Value {
    let cols: Vec<Value> = t
        .columns
        .iter()
        .map(|(name, c)| match c {
            Column::I64(v) => json!([name, "i64", v]),
            Column::F64(v) => json!([name, "f64", v.iter().map(|x| Value::from(*x)).collect::<Vec<_>>()]),
            Column::Str(v) => json!([name, "str", v]),
        })
        .collect();
    json!({"name": t.name, "columns": cols})
}

fn spawn_server(s: &ServerPlan, ns: &File, pid_ns: &File) -> Result<Child, Fatal> {
    use std::os::unix::process::CommandExt;
    let err = File::create(&s.stderr).map_err(|e| fatal(format!("cannot write {}: {e}", s.stderr)))?;
    let mut cmd = Command::new(&s.argv[0]);
    cmd.args(&s.argv[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(err).process_group(0);
    sys::spawn_in(&mut cmd, ns, Some(pid_ns)).map_err(|e| fatal(format!("cannot run {:?}: {e}", s.argv[0])))
}

/// A client of player "dashjs": node + Chromium (`browser/play.mjs`) in the client namespace.
struct Browser {
    /// Index of the client in the config, and of its server in the plan.
    idx: usize,
    server: usize,
    /// Index of its process in the run's children (stopped with them).
    child: usize,
    stdin: Option<std::process::ChildStdin>,
    started: bool,
    /// When it was told to start (ns since time 0).
    go: Option<Ns>,
    /// Flow ids of its connections (from its server's TCP_INFO log, at the end).
    resp_flows: Vec<usize>,
}

fn spawn_browser(b: &BrowserPlan, ns: &File, pid_ns: &File) -> Result<Child, Fatal> {
    use std::os::unix::process::CommandExt;
    let out = File::create(&b.events).map_err(|e| fatal(format!("cannot write {}: {e}", b.events)))?;
    let err = File::create(&b.stderr).map_err(|e| fatal(format!("cannot write {}: {e}", b.stderr)))?;
    let mut cmd = Command::new(&b.argv[0]);
    cmd.args(&b.argv[1..]).current_dir(&b.cwd).stdin(Stdio::piped()).stdout(out).stderr(err).process_group(0);
    sys::spawn_in(&mut cmd, ns, Some(pid_ns)).map_err(|e| fatal(format!("cannot run {:?}: {e}", b.argv[0])))
}

/// Wait until the browser's page has loaded dash.js and waits for its start (`ready` on stdout).
fn wait_ready(b: &BrowserPlan, ch: &mut Child, by: std::time::Instant) -> Result<(), Fatal> {
    loop {
        let text = std::fs::read_to_string(&b.events).unwrap_or_default();
        if text.lines().any(|l| l.contains("\"ev\":\"ready\"")) {
            return Ok(());
        }
        if let Some(l) = text.lines().find(|l| l.contains("\"ev\":\"fatal\"")) {
            return Err(fatal(format!("dash.js in Chromium failed to start: {l}")));
        }
        if let Ok(Some(st)) = ch.try_wait() {
            return Err(fatal(format!(
                "dash.js in Chromium exited ({st}) before it was ready: {}",
                last_line(&b.stderr)
            )));
        }
        if std::time::Instant::now() > by {
            return Err(fatal("dash.js in Chromium was not ready within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// GET one byte of rung 0 of `path` and read the answer (blocking, at most 10 s).
fn warm(addr: SocketAddrV4, path: &str) -> std::io::Result<()> {
    let mut s = TcpStream::connect_timeout(&addr.into(), Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(&reader::request(&addr.to_string(), &format!("{path}0.mp4"), 0, 1))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    Ok(())
}

fn last_line(path: &str) -> String {
    std::fs::read_to_string(path).ok().and_then(|t| t.lines().last().map(String::from)).unwrap_or_default()
}

/// Run the plan; the exit status.
pub fn run_plan(plan: &Plan) -> Result<i32, Fatal> {
    let cfg = &plan.config;
    if let Some(pp) = plan.parent_pid {
        // Killed (even by SIGKILL), the front takes the driver with it, and the driver its
        // namespaces, TUN devices and servers (docs/realnet.md, cleanup).
        if !sys::die_with_parent(pp, libc::SIGKILL) {
            return Err(fatal("the calling process is gone"));
        }
    }
    run::privileges()?;
    let mut down_link = qoelab_core::net::world::build_link::<crate::ip::IpPacket>(
        &format!("links[{}]", plan.down),
        &cfg.links[plan.down],
        cfg.seed,
    )
    .map_err(|e| fatal(format!("{}: {}", e.path, e.msg)))?;
    let mut up_link = qoelab_core::net::world::build_link::<crate::ip::IpPacket>(
        &format!("links[{}]", plan.up),
        &cfg.links[plan.up],
        cfg.seed,
    )
    .map_err(|e| fatal(format!("{}: {}", e.path, e.msg)))?;
    down_link.delay = plan.delay_down;
    up_link.delay = plan.delay_up;
    down_link.queue.record_sojourns();
    up_link.queue.record_sojourns();
    let mut down = Direction::from_link("downlink", down_link);
    let mut up = Direction::from_link("uplink", up_link);
    if cfg.output.loss_phases {
        // Every packet of the video connections at the bottleneck's ingress, for Minerva's B/T/C
        // classification of the video flows' drops (as the simulator does from its packet log).
        for d in [&mut down, &mut up] {
            d.link.record = true;
            d.capture_ports = plan.servers.iter().map(|s| s.port).collect();
        }
    }

    let mut sessions = Vec::new();
    for (i, c) in cfg.clients.iter().enumerate() {
        if plan.browsers.get(i).is_some_and(|b| b.is_some()) {
            continue;
        }
        let p = format!("clients[{i}]");
        let (video, abr, pcfg, plane) =
            session_parts(&p, c, cfg, None).map_err(|e| fatal(format!("{}: {}", e.path, e.msg)))?;
        let player = Player::new(pcfg, video, abr, c.start);
        sessions
            .push((i, VideoSession::with_plane(c.name.clone(), c.abr.clone(), player, c.http.clone(), plane, c.rtt)));
    }

    // Signals through a file descriptor (blocked here, so also in the emulator thread).
    let sigfd = sys::signalfd_for(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD])
        .map_err(|e| fatal(format!("signalfd: {e}")))?;
    let server = run::make_side(SERVER_TUN, SERVER_ADDR, CLIENT_NET, false)?;
    let client = run::make_side(CLIENT_TUN, CLIENT_ADDR, SERVER_NET, true)?;
    // This thread stays in the client namespace; sockets of the server side are made after a
    // setns there and back.
    let pid_ns = File::open("/proc/self/ns/pid").map_err(|e| fatal(format!("cannot open own pid namespace: {e}")))?;
    let mut children = Vec::new();
    for s in &plan.servers {
        children.push(spawn_server(s, &server.ns, &pid_ns)?);
    }
    let stop_children = |children: &mut Vec<Child>| {
        for ch in children.iter_mut() {
            run::stop(ch, true, Duration::from_millis(1000));
        }
    };
    // Wait until every server listens (connecting from inside the server namespace: local).
    let ready_by = std::time::Instant::now() + Duration::from_secs(20);
    for (s, ch) in plan.servers.iter().zip(children.iter_mut()) {
        loop {
            let addr = SocketAddrV4::new(SERVER_ADDR.parse::<Ipv4Addr>().unwrap(), s.port);
            let ok = in_ns(&server.ns, &client.ns, || {
                Ok(TcpStream::connect_timeout(&addr.into(), Duration::from_millis(200)).is_ok())
            })?;
            if ok {
                // One byte of every video this server serves: its first request builds the
                // layout (Python imports), which must not count as the first segment's latency.
                for (path, _) in plan.clients.iter().filter(|c| plan.servers.get(c.1).is_some_and(|x| x.port == s.port))
                {
                    in_ns(&server.ns, &client.ns, || warm(addr, path))?;
                }
                break;
            }
            if let Ok(Some(st)) = ch.try_wait() {
                let line = last_line(&s.stderr);
                stop_children(&mut children);
                return Err(fatal(format!("qoelab serve exited ({st}) before listening: {line}")));
            }
            if std::time::Instant::now() > ready_by {
                stop_children(&mut children);
                return Err(fatal(format!("qoelab serve did not listen on port {} within 20 s", s.port)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    // dash.js clients: their browsers start now (Chromium takes a second or two) and wait in their
    // loaded page for the word to start playing at the client's start time.
    let mut browsers = Vec::new();
    for (i, b) in plan.browsers.iter().enumerate() {
        let Some(b) = b else { continue };
        let ch = match spawn_browser(b, &client.ns, &pid_ns) {
            Ok(ch) => ch,
            Err(e) => {
                stop_children(&mut children);
                return Err(e);
            }
        };
        children.push(ch);
        let k = children.len() - 1;
        let stdin = children[k].stdin.take();
        let server = plan.clients.get(i).map(|c| c.1).unwrap_or(0);
        browsers.push(Browser { idx: i, server, child: k, stdin, started: false, go: None, resp_flows: Vec::new() });
    }
    let ready_by = std::time::Instant::now() + Duration::from_secs(60);
    for b in &browsers {
        let bp = plan.browsers[b.idx].as_ref().expect("a browser plan");
        if let Err(e) = wait_ready(bp, &mut children[b.child], ready_by) {
            stop_children(&mut children);
            return Err(e);
        }
    }

    // Flows: the scenario's bulk and onoff flows first (ids in config order), then the clients'
    // connections and the web transfers as they come.
    let mut flows = Vec::new();
    let mut sources = Vec::new();
    if let Some((i, t)) =
        cfg.clients.iter().enumerate().find_map(|(i, c)| c.transport.as_deref().filter(|t| *t != "tcp").map(|t| (i, t)))
    {
        stop_children(&mut children);
        return Err(fatal(format!(
            "clients[{i}].transport: \"{t}\" runs in the packet simulator only; the real network runs kernel TCP"
        )));
    }
    for (i, f) in cfg.flows.iter().enumerate() {
        if let FlowCfg::Bulk { transport: Some(t), .. } = f {
            if t != "tcp" {
                stop_children(&mut children);
                return Err(fatal(format!(
                    "flows[{i}].transport: \"{t}\" runs in the packet simulator only; the real network runs kernel TCP"
                )));
            }
        }
        let (name, src, dst, cc, start, stop, kind) = match f {
            FlowCfg::Bulk { name, src, dst, cc, start, stop, bytes, .. } => {
                (name, src, dst, cc, start, stop, SrcKind::Bulk { size: *bytes, flow: flows.len() })
            }
            FlowCfg::Onoff { name, src, dst, cc, start, stop, bytes, period, .. } => (
                name,
                src,
                dst,
                cc,
                start,
                stop,
                SrcKind::Onoff { bytes: *bytes, period: *period, next: *start, xfer: 0, flow: flows.len() },
            ),
            FlowCfg::Web { name, src, dst, cc, start, stop, arrival_rate, sizes, .. } => (
                name,
                src,
                dst,
                cc,
                start,
                stop,
                SrcKind::Web {
                    rng: web_rng(cfg.seed, name),
                    cdf: sizes.clone(),
                    mean_gap_s: 1.0 / arrival_rate,
                    next: *start,
                    count: 0,
                },
            ),
            FlowCfg::Cbr { name, src, dst, rate_bps, packet_size, start, stop } => {
                let up = plan.bulk_upstream.get(i).copied().unwrap_or(false);
                let (rx_ns, rx_addr) = if up { (&server.ns, SERVER_ADDR) } else { (&client.ns, CLIENT_ADDR) };
                let rx = in_ns(rx_ns, &client.ns, || {
                    let u = UdpSocket::bind((rx_addr, 0))?;
                    u.set_nonblocking(true)?;
                    Ok(u)
                })?;
                let kind = SrcKind::Cbr {
                    rate_bps: *rate_bps,
                    size: *packet_size,
                    next: *start,
                    flow: flows.len(),
                    tx: None,
                    rx,
                };
                (name, src, dst, &String::new(), start, stop, kind)
            }
        };
        let up = plan.bulk_upstream.get(i).copied().unwrap_or(false);
        let (rx_ns, rx_addr) = if up { (&server.ns, SERVER_ADDR) } else { (&client.ns, CLIENT_ADDR) };
        let listener = in_ns(rx_ns, &client.ns, || {
            let l = TcpListener::bind((rx_addr, 0))?;
            l.set_nonblocking(true)?;
            Ok(l)
        })?;
        if !matches!(kind, SrcKind::Web { .. }) {
            let fk = match kind {
                SrcKind::Onoff { .. } => "onoff",
                SrcKind::Cbr { .. } => "cbr",
                _ => "bulk",
            };
            let mut f = Flow::new(name.clone(), fk, (*src, *dst), cc, *start, 0);
            f.size = if let SrcKind::Bulk { size, .. } = kind { size } else { None };
            flows.push(f);
        }
        sources.push(Source {
            name: name.clone(),
            src: *src,
            dst: *dst,
            cc: cc.clone(),
            up,
            start: *start,
            stop: *stop,
            listener,
            kind,
            started: false,
            stopped: false,
        });
    }
    let mut clients = Vec::new();
    for (i, s) in sessions {
        let c = &cfg.clients[i];
        let (path, sv) = plan.clients.get(i).cloned().ok_or_else(|| fatal("plan: a client without a path"))?;
        let port = plan.servers.get(sv).map(|s| s.port).ok_or_else(|| fatal("plan: no such server"))?;
        let slots = s.connection_slots() as usize;
        clients.push(Client {
            idx: i,
            conns: (0..slots).map(|_| Conn::fresh()).collect(),
            retired: Vec::new(),
            session: s,
            cursor: 0,
            started: false,
            opened: 0,
            path,
            server: SocketAddrV4::new(SERVER_ADDR.parse().unwrap(), port),
            cc: c.cc.clone(),
            model_request: c.http.request_bytes,
            model_header: c.http.response_header_bytes,
            resp_flows: Vec::new(),
        });
    }
    let mut app =
        App { cfg, flows, clients, server_ns: &server.ns, client_ns: &client.ns, timer_lateness: LogHistogram::new() };

    // Go: time 0 of the scenario is now.
    let t0 = sys::monotonic_ns();
    let stop = Arc::new(AtomicBool::new(false));
    let stun = server.tun.try_clone().map_err(|e| fatal(format!("dup: {e}")))?;
    let ctun = client.tun.try_clone().map_err(|e| fatal(format!("dup: {e}")))?;
    let si = cfg.output.sample_interval;
    let emu_thread = {
        let stop = stop.clone();
        let ids = (plan.down, plan.up);
        let rt = plan.rt;
        std::thread::Builder::new()
            .name("qoelab-emu".into())
            .spawn(move || emulate(down, up, stun, ctun, t0, stop, si, ids, rt))
            .map_err(|e| fatal(format!("cannot start the emulator thread: {e}")))?
    };
    let mut xfers = Vec::new();
    let mut web_rows = Vec::new();
    let res = app_loop(&mut app, &mut sources, &mut xfers, &mut web_rows, &mut browsers, &sigfd, t0, si);
    stop.store(true, Ordering::Relaxed);
    let emu = emu_thread.join().map_err(|_| fatal("the emulator thread panicked"))?;
    // The browsers first (their pages stop requesting), then the servers.
    for b in &mut browsers {
        b.stdin = None;
        run::stop(&mut children[b.child], true, Duration::from_millis(2000));
    }
    stop_children(&mut children);
    let (interrupted, tcp, flows_tab, loops) = res?;
    let emu = emu.map_err(Fatal)?;
    if let Some(sig) = interrupted {
        return Ok(128 + sig);
    }
    finish(plan, app, browsers, emu, tcp, flows_tab, web_rows, loops, t0)?;
    Ok(0)
}

type LoopOut = (Option<i32>, Table, Table, u64);

#[allow(clippy::too_many_arguments)]
fn app_loop(
    app: &mut App,
    sources: &mut [Source],
    xfers: &mut Vec<Xfer>,
    web_rows: &mut Vec<usize>,
    browsers: &mut [Browser],
    sigfd: &File,
    t0: u64,
    si: Ns,
) -> Result<LoopOut, Fatal> {
    let cfg = app.cfg;
    let dur = cfg.duration;
    let timer = sys::timerfd_new().map_err(|e| fatal(format!("timerfd: {e}")))?;
    let mut timer_file = timer.try_clone().map_err(|e| fatal(format!("timerfd: {e}")))?;
    let mut sigfile = sigfd.try_clone().map_err(|e| fatal(format!("signalfd: {e}")))?;
    sys::set_timer_slack_1ns();
    let mut buf = vec![0u8; 256 * 1024];
    let mut tcp = qoelab_core::report::tcp_table();
    let mut flows_tab =
        Table::new("flows", &[("time_s", 'f'), ("flow", 'i'), ("bytes_received", 'i'), ("goodput_bps", 'f')]);
    let mut next_sample = si;
    let mut armed = u64::MAX;
    let mut loops = 0u64;
    static ZEROS: [u8; 65536] = [0; 65536];
    loop {
        loops += 1;
        let now = sys::monotonic_ns() - t0;
        if now >= dur {
            // The samples due up to the end, the one at `dur` included (as the simulator's).
            take_samples(dur, &mut next_sample, si, app, xfers, &mut flows_tab, &mut tcp);
            // The senders still running end with the run: their last TCP_INFO.
            for x in xfers.iter() {
                if let Some(s) = &x.sender {
                    app.flows[x.flow].info = TcpInfo::of(s.as_raw_fd());
                }
            }
            // The players' clocks to the end of the run, as the simulator's (startup, playback
            // and stalls count up to it).
            for c in app.clients.iter_mut().filter(|c| c.started) {
                c.session.finish(dur);
            }
            for ci in 0..app.clients.len() {
                if !app.clients[ci].started {
                    app.register_unstarted(ci);
                }
            }
            break;
        }
        // Flow starts, bursts, arrivals and stops.
        for (sx, src) in sources.iter_mut().enumerate() {
            let stop_reached = src.stop.is_some_and(|s| now >= s);
            match src.kind {
                SrcKind::Bulk { size, flow } => {
                    if !src.started && now >= src.start {
                        src.started = true;
                        xfers.push(open_xfer(app, src, sx, flow, size)?);
                    }
                }
                SrcKind::Onoff { .. } => {
                    if !src.started && now >= src.start {
                        src.started = true;
                        let flow = if let SrcKind::Onoff { flow, .. } = src.kind { flow } else { 0 };
                        let x = open_xfer(app, src, sx, flow, Some(0))?;
                        if let SrcKind::Onoff { xfer, .. } = &mut src.kind {
                            *xfer = xfers.len();
                        }
                        xfers.push(x);
                    }
                    if let SrcKind::Onoff { bytes, period, next, xfer, .. } = &mut src.kind {
                        while src.started && *next <= now && src.stop.is_none_or(|s| *next < s) {
                            if let Some(q) = &mut xfers[*xfer].quota {
                                *q += *bytes;
                            }
                            *next += *period;
                        }
                    }
                }
                SrcKind::Cbr { .. } => {
                    if !src.started && now >= src.start {
                        src.started = true;
                        let (tx_ns, tx_addr) =
                            if src.up { (app.client_ns, CLIENT_ADDR) } else { (app.server_ns, SERVER_ADDR) };
                        let SrcKind::Cbr { rx, tx, .. } = &mut src.kind else { unreachable!() };
                        let to = rx.local_addr().map_err(|e| fatal(format!("flow {}: {e}", src.name)))?;
                        *tx = Some(in_ns(tx_ns, app.client_ns, || {
                            let u = UdpSocket::bind((tx_addr, 0))?;
                            u.connect(to)?;
                            u.set_nonblocking(true)?;
                            Ok(u)
                        })?);
                    }
                    if let SrcKind::Cbr { rate_bps, size, next, tx: Some(u), .. } = &mut src.kind {
                        let payload = (*size as usize).saturating_sub(28);
                        while *next <= now && src.stop.is_none_or(|s| *next < s) {
                            match u.send(&ZEROS[..payload]) {
                                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                                // Sent, or lost at the sender (an ICMP error of an earlier
                                // datagram): the schedule goes on, as on the simulated link.
                                _ => *next += qoelab_core::time::tx_time(*size as u64, *rate_bps),
                            }
                        }
                    }
                }
                SrcKind::Web { .. } => {
                    while let SrcKind::Web { rng, cdf, mean_gap_s, next, count } = &mut src.kind {
                        if *next > now || *next >= dur || src.stop.is_some_and(|s| *next >= s) {
                            break;
                        }
                        let (size, gap) = web_draw(rng, cdf, *mean_gap_s);
                        *count += 1;
                        let t = *next;
                        *next += gap;
                        let name = format!("{}#{}", src.name, count);
                        src.started = true;
                        let fid = app.flows.len();
                        let mut f = Flow::new(name, "web", (src.src, src.dst), &src.cc, t, 0);
                        f.size = Some(size);
                        app.flows.push(f);
                        xfers.push(open_xfer(app, src, sx, fid, Some(size))?);
                    }
                }
            }
            if src.started && !src.stopped && stop_reached {
                src.stopped = true;
                let stop = src.stop.unwrap_or(now);
                match src.kind {
                    // An unlimited sender stops writing; the kernel still sends what is queued
                    // (at most BULK_LOWAT unsent).
                    SrcKind::Bulk { size: None, flow } => {
                        if let Some(x) = xfers.iter_mut().find(|x| x.flow == flow) {
                            if let Some(s) = x.sender.take() {
                                app.flows[flow].info = TcpInfo::of(s.as_raw_fd());
                                let _ = s.shutdown(std::net::Shutdown::Write);
                            }
                            x.shut = true;
                        }
                        end_at(&mut app.flows[flow], stop);
                    }
                    // A finite transfer goes on (its bytes were all written at its start, as in
                    // the simulator); only its active span ends. Onoff: no more bursts.
                    SrcKind::Bulk { flow, .. } | SrcKind::Onoff { flow, .. } => end_at(&mut app.flows[flow], stop),
                    SrcKind::Cbr { flow, ref mut tx, .. } => {
                        *tx = None;
                        end_at(&mut app.flows[flow], stop);
                    }
                    SrcKind::Web { .. } => {}
                }
            }
        }
        // Browsers that start playing.
        for b in browsers.iter_mut() {
            if !b.started && now >= cfg.clients[b.idx].start {
                b.started = true;
                b.go = Some(now);
                let told = b.stdin.as_mut().is_some_and(|w| w.write_all(b"go\n").and_then(|_| w.flush()).is_ok());
                if !told {
                    return Err(fatal(format!(
                        "client {}: dash.js in Chromium exited before its start",
                        cfg.clients[b.idx].name
                    )));
                }
            }
        }
        // Sessions that start, and timers.
        for ci in 0..app.clients.len() {
            let start = cfg.clients[app.clients[ci].idx].start;
            if !app.clients[ci].started {
                if now >= start {
                    app.clients[ci].started = true;
                    for k in 0..app.clients[ci].conns.len() {
                        app.open_conn(ci, k, now)?;
                    }
                    app.on_timer(ci, now)?;
                }
            } else if app.clients[ci].session.poll_at() <= now {
                app.on_timer(ci, now)?;
            }
        }
        // Samples.
        take_samples(now, &mut next_sample, si, app, xfers, &mut flows_tab, &mut tcp);

        // Wait.
        let mut deadline = dur.min(next_sample);
        for src in sources.iter() {
            if !src.started {
                deadline = deadline.min(src.start);
            }
            if !src.stopped {
                if let Some(s) = src.stop {
                    deadline = deadline.min(s.max(src.start));
                }
            }
            if let SrcKind::Onoff { next, .. } | SrcKind::Web { next, .. } | SrcKind::Cbr { next, .. } = src.kind {
                if src.stop.is_none_or(|s| next < s) {
                    deadline = deadline.min(next);
                }
            }
        }
        for c in &app.clients {
            deadline = deadline.min(if c.started { c.session.poll_at() } else { cfg.clients[c.idx].start });
        }
        for b in browsers.iter().filter(|b| !b.started) {
            deadline = deadline.min(cfg.clients[b.idx].start);
        }
        if deadline != armed {
            sys::timerfd_set_abs(&timer, Some(t0 + deadline)).map_err(|e| fatal(format!("timerfd_settime: {e}")))?;
            armed = deadline;
        }
        // The poll set: timer, signals, then per source its listener, per transfer its sender and
        // receiver, then per client connection.
        let mut pfd = vec![
            libc::pollfd { fd: timer.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: sigfd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        let none = libc::pollfd { fd: -1, events: 0, revents: 0 };
        for src in sources.iter() {
            let fd = match &src.kind {
                SrcKind::Cbr { rx, .. } => rx.as_raw_fd(),
                _ => src.listener.as_raw_fd(),
            };
            pfd.push(if src.started { libc::pollfd { fd, events: libc::POLLIN, revents: 0 } } else { none });
        }
        // Transfers still open (index into `xfers`).
        let open: Vec<usize> =
            (0..xfers.len()).filter(|&i| xfers[i].sender.is_some() || xfers[i].receiver.is_some()).collect();
        for &i in &open {
            let x = &xfers[i];
            pfd.push(match &x.sender {
                Some(s) if x.wants_write() => libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLOUT, revents: 0 },
                _ => none,
            });
            pfd.push(match &x.receiver {
                Some(s) => libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                None => none,
            });
        }
        let mut where_: Vec<(usize, usize)> = Vec::new();
        for (ci, c) in app.clients.iter().enumerate() {
            for (k, conn) in c.conns.iter().enumerate() {
                if let Some(s) = &conn.sock {
                    let mut ev = libc::POLLIN;
                    if !conn.connected || conn.out_pos < conn.out.len() {
                        ev |= libc::POLLOUT;
                    }
                    pfd.push(libc::pollfd { fd: s.as_raw_fd(), events: ev, revents: 0 });
                    where_.push((ci, k));
                }
            }
        }
        sys::poll(&mut pfd, 100).map_err(|e| fatal(format!("poll: {e}")))?;
        let now = sys::monotonic_ns() - t0;
        if pfd[0].revents != 0 {
            let _ = timer_file.read(&mut buf[..8]);
            armed = u64::MAX;
        }
        if pfd[1].revents != 0 {
            while let Ok(n) = sigfile.read(&mut buf[..128]) {
                if n < 4 {
                    break;
                }
                let signo = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as i32;
                if signo != libc::SIGCHLD {
                    return Ok((Some(signo), tcp, flows_tab, loops));
                }
            }
        }
        for (sx, src) in sources.iter().enumerate() {
            if pfd[2 + sx].revents == 0 {
                continue;
            }
            if let SrcKind::Cbr { rx, flow, .. } = &src.kind {
                while let Ok(n) = rx.recv(&mut buf) {
                    app.flows[*flow].bytes += n as u64;
                }
                continue;
            }
            while let Ok((s, peer)) = src.listener.accept() {
                if let Some(x) = xfers.iter_mut().find(|x| x.source == sx && !x.accepted && x.port == peer.port()) {
                    let _ = s.set_nonblocking(true);
                    x.receiver = Some(s);
                    x.accepted = true;
                }
            }
        }
        let base = 2 + sources.len();
        for (j, &xi) in open.iter().enumerate() {
            let x = &mut xfers[xi];
            let flow = x.flow;
            if pfd[base + 2 * j].revents != 0 {
                if let Some(s) = &mut x.sender {
                    if pfd[base + 2 * j].revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                        return Err(fatal(format!(
                            "flow {}: the connection failed ({:?})",
                            app.flows[flow].name,
                            s.take_error().ok().flatten()
                        )));
                    }
                    for _ in 0..64 {
                        let n = x.quota.map_or(ZEROS.len(), |q| q.min(ZEROS.len() as u64) as usize);
                        if n == 0 {
                            break;
                        }
                        match s.write(&ZEROS[..n]) {
                            Ok(k) => {
                                if let Some(q) = &mut x.quota {
                                    *q -= k as u64;
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => break,
                            Err(e) => return Err(fatal(format!("flow {}: {e}", app.flows[flow].name))),
                        }
                    }
                    if x.fin && x.quota == Some(0) {
                        // All written: FIN after the data, as the simulator's stop_writing.
                        let _ = s.shutdown(std::net::Shutdown::Write);
                        x.shut = true;
                    }
                }
            }
            if pfd[base + 2 * j + 1].revents != 0 {
                let mut eof = false;
                if let Some(s) = &mut x.receiver {
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) => {
                                eof = true;
                                break;
                            }
                            Ok(n) => app.flows[flow].bytes += n as u64,
                            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => break,
                            Err(_) => {
                                eof = true;
                                break;
                            }
                        }
                    }
                }
                let f = &mut app.flows[flow];
                if f.done.is_none() && f.size.is_some_and(|sz| f.bytes >= sz) {
                    f.done = Some(now);
                    end_at(f, now);
                    if f.kind == "web" {
                        web_rows.push(flow);
                    }
                }
                if eof {
                    x.receiver = None;
                    if x.fin {
                        if let Some(s) = x.sender.take() {
                            app.flows[flow].info = TcpInfo::of(s.as_raw_fd());
                        }
                    }
                }
            }
        }
        let base = base + 2 * open.len();
        for (j, &(ci, k)) in where_.iter().enumerate() {
            let re = pfd[base + j].revents;
            if re != 0 {
                app.on_socket(ci, k, now, re, &mut buf)?;
            }
        }
    }
    Ok((None, tcp, flows_tab, loops))
}

/// Loss phases (B, T, C) of the video connections' dropped data packets, by client port: the
/// core's classifier on the packets captured at the bottleneck's ingress (data from the
/// downlink, pure ACKs from the uplink; sequence numbers relative to the connection's first).
fn loss_phases(down: &Direction, up: &Direction) -> std::collections::BTreeMap<u16, [u64; 3]> {
    use qoelab_core::metrics::lossphase::{classify_losses, LossPhase, LossPhaseRules, PktEvent, PktKind};
    use std::collections::HashMap;
    let mut base: HashMap<u16, u32> = HashMap::new();
    for c in &down.captured {
        base.entry(c.client_port).or_insert(c.seq);
    }
    let rel = |port: u16, x: u32| x.wrapping_sub(base[&port]) as u64;
    let mut events: Vec<PktEvent> = Vec::new();
    let mut last: HashMap<(u16, u32), usize> = HashMap::new();
    for c in down.captured.iter().filter(|c| c.payload > 0) {
        let ev = PktEvent {
            t: c.time,
            flow: c.client_port as u64,
            kind: PktKind::Data { seq: rel(c.client_port, c.seq) },
            dropped: c.dropped,
        };
        match (c.dropped, last.get(&(c.client_port, c.seq))) {
            // A drop by the queue discipline follows the packet's arrival.
            (true, Some(&j)) if !events[j].dropped => events[j].dropped = true,
            _ => {
                if !c.dropped {
                    last.insert((c.client_port, c.seq), events.len());
                }
                events.push(ev);
            }
        }
    }
    for c in up.captured.iter().filter(|c| c.payload == 0 && !c.dropped && base.contains_key(&c.client_port)) {
        events.push(PktEvent {
            t: c.time,
            flow: c.client_port as u64,
            kind: PktKind::Ack { ack: rel(c.client_port, c.ack) },
            dropped: false,
        });
    }
    events.sort_by_key(|e| e.t);
    let mut out = std::collections::BTreeMap::new();
    for (i, ph) in classify_losses(&events, &LossPhaseRules::default()) {
        let e: &mut [u64; 3] = out.entry(events[i].flow as u16).or_insert([0; 3]);
        match ph {
            LossPhase::B => e[0] += 1,
            LossPhase::T => e[1] += 1,
            LossPhase::C => e[2] += 1,
        }
    }
    out
}

/// The server's TCP_INFO log: rows of the `tcp` table for the video flows, their last sample
/// and SRTT samples.
fn read_server_logs(plan: &Plan, app: &mut App, tcp: &mut Table, t0: u64) {
    let t0_s = t0 as f64 / 1e9;
    for s in &plan.servers {
        let Ok(text) = std::fs::read_to_string(&s.tcp_info_log) else { continue };
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            let peer = v.get("peer").and_then(|p| p.as_str()).unwrap_or("");
            let Some(port) = peer.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()) else { continue };
            let Some(mono) = v.get("mono_s").and_then(|m| m.as_f64()) else { continue };
            let t = mono - t0_s;
            let Some(fid) = app.flows.iter().rposition(|f| matches!(f.kind, "video" | "probe") && f.port == port)
            else {
                continue;
            };
            let x = TcpInfo::from_json(&v);
            if x.snd_mss == 0 {
                continue;
            }
            let f = &mut app.flows[fid];
            if t >= 0.0 && t <= secs(app.cfg.duration) {
                tcp_row(tcp, t, fid, &x);
                if x.rtt_us > 0 {
                    f.rtt_samples.push(x.rtt_us as f64);
                }
            }
            f.info = Some(x);
        }
    }
}

/// A dash.js client's connections, from its own server's TCP_INFO log: one `video` flow per
/// connection (`<client>/resp`, then `<client>/c<k>/resp`, in the order they appear), its bytes the
/// server's `bytes_acked`, and rows of the `flows` table at the log's sample times.
fn browser_flows(plan: &Plan, app: &mut App, b: &mut Browser, flows_tab: &mut Table, t0: u64) {
    let Some(s) = plan.servers.get(b.server) else { return };
    let Ok(text) = std::fs::read_to_string(&s.tcp_info_log) else { return };
    let cfg = &app.cfg.clients[b.idx];
    let t0_s = t0 as f64 / 1e9;
    let dur = secs(app.cfg.duration);
    let mut last: Vec<(u16, usize, f64, u64)> = Vec::new(); // port, flow, time, bytes acked
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let peer = v.get("peer").and_then(|p| p.as_str()).unwrap_or("");
        // Only the browser's connections (not the driver's warm-up request from the server side).
        let Some((addr, port)) = peer.rsplit_once(':') else { continue };
        let Ok(port) = port.parse::<u16>() else { continue };
        let Some(t) = v.get("mono_s").and_then(|m| m.as_f64()).map(|m| m - t0_s) else { continue };
        if addr != CLIENT_ADDR || !(0.0..=dur).contains(&t) {
            continue;
        }
        let acked = v.get("bytes_acked").and_then(|x| x.as_u64()).unwrap_or(0);
        let k = match last.iter().position(|l| l.0 == port) {
            Some(k) => k,
            None => {
                let n = b.resp_flows.len();
                let slot = if n == 0 { String::new() } else { format!("/c{n}") };
                let fid = app.flows.len();
                // Chromium may open it early (preconnect): it counts from the client's start.
                let start = ((t * 1e9) as Ns).max(cfg.start);
                let name = format!("{}{slot}/resp", cfg.name);
                app.flows.push(Flow::new(name, "video", (cfg.server, cfg.client), &cfg.cc, start, port));
                b.resp_flows.push(fid);
                last.push((port, fid, t, 0));
                last.len() - 1
            }
        };
        let (_, fid, tp, bp) = last[k];
        let f = &mut app.flows[fid];
        f.bytes = f.bytes.max(acked);
        if t > tp {
            flows_tab.f(0, t);
            flows_tab.i(1, fid as i64);
            flows_tab.i(2, f.bytes as i64);
            flows_tab.f(3, f.bytes.saturating_sub(bp) as f64 * 8.0 / (t - tp));
            last[k] = (port, fid, t, f.bytes);
        }
    }
}

/// Rewrite a table's `client` column (indices among the sans-IO sessions) to the clients' indices
/// in the scenario (dash.js clients are not sessions).
fn remap_clients(t: &mut Table, idx: &[usize]) {
    if let Some((_, Column::I64(v))) = t.columns.iter_mut().find(|(n, _)| n == "client") {
        for x in v.iter_mut() {
            *x = idx.get(*x as usize).map_or(*x, |&i| i as i64);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn finish(
    plan: &Plan,
    mut app: App,
    mut browsers: Vec<Browser>,
    emu: EmuResult,
    mut tcp: Table,
    mut flows_tab: Table,
    web_rows: Vec<usize>,
    loops: u64,
    t0: u64,
) -> Result<(), Fatal> {
    let cfg = app.cfg;
    let dur = cfg.duration;
    // Connections and senders still open at the end.
    for c in &app.clients {
        for conn in &c.conns {
            if let Some(s) = &conn.sock {
                if let Some(f) = app.flows.get_mut(conn.req_flow) {
                    f.info = TcpInfo::of(s.as_raw_fd());
                }
            }
        }
    }
    for b in &mut browsers {
        browser_flows(plan, &mut app, b, &mut flows_tab, t0);
    }
    read_server_logs(plan, &mut app, &mut tcp, t0);
    let mut out = Summary::new("real", &cfg.name, cfg.seed, dur, plan.config_hash.clone());
    let mut goodputs = Vec::new();
    for (id, f) in app.flows.iter().enumerate() {
        let a = f.start.min(dur);
        let b = f.end.unwrap_or(dur).min(dur).max(a);
        let gp = if b > a { f.bytes as f64 * 8.0 / secs(b - a) } else { 0.0 };
        if f.kind == "bulk" {
            goodputs.push(gp);
        }
        let x = f.info.unwrap_or_default();
        out.flows.push(FlowSummary {
            id,
            name: f.name.clone(),
            kind: f.kind,
            src: cfg.nodes[f.src].name.clone(),
            dst: cfg.nodes[f.dst].name.clone(),
            start_s: r6(secs(f.start)),
            active_s: r6(secs(b - a)),
            bytes_received: f.bytes,
            goodput_bps: r6(gp),
            completed_s: f.done.and_then(|d| r6(secs(d))),
            size_bytes: f.size,
            tcp: (f.kind != "cbr").then(|| TcpFlowSummary {
                transport: None,
                cc: Some(f.cc.clone()),
                weight: None,
                retransmits: x.total_retrans as u64,
                fast_recoveries: 0,
                quic: None,
                rto_count: 0,
                idle_restarts: 0,
                srtt_ms_at_end: (x.rtt_us as f64 / 1e3 * 1000.0).round() / 1000.0,
                min_rtt_ms: (x.min_rtt_us as f64 / 1e3 * 1000.0).round() / 1000.0,
            }),
        });
    }
    out.jain_index = jain(&goodputs).and_then(r6);
    let elapsed = dur;
    out.links.push(link_summary(&emu.down.link, elapsed));
    out.links.push(link_summary(&emu.up.link, elapsed));
    out.packets = PacketCounts {
        bottleneck: emu.down.link.stats.tx_pkts,
        monitored_links: emu.down.link.stats.tx_pkts + emu.up.link.stats.tx_pkts,
        all_links: emu.down.link.stats.tx_pkts + emu.up.link.stats.tx_pkts,
        discarded_after_reset: 0,
    };
    let phases = cfg.output.loss_phases.then(|| loss_phases(&emu.down, &emu.up));
    let info_of = |resp_flows: &[usize], connections| {
        let samples: Vec<f64> = resp_flows.iter().flat_map(|&f| app.flows[f].rtt_samples.iter().copied()).collect();
        PacketClientInfo {
            flow: resp_flows.first().copied().unwrap_or(0),
            connections,
            srtt_mean_ms: (!samples.is_empty())
                .then(|| samples.iter().sum::<f64>() / samples.len() as f64 / 1e3)
                .map(|v| (v * 1000.0).round() / 1000.0),
            loss_phases: phases.as_ref().map(|ph| {
                let mut k = qoelab_core::report::summary::LossPhaseCounts::default();
                for &f in resp_flows {
                    if let Some(e) = ph.get(&app.flows[f].port) {
                        k.b += e[0];
                        k.t += e[1];
                        k.c += e[2];
                    }
                }
                k
            }),
        }
    };
    let mut infos = Vec::new();
    for c in &app.clients {
        infos.push(info_of(&c.resp_flows, c.session.connections()));
    }
    let dashjs: Vec<Value> = browsers
        .iter()
        .map(|b| {
            let i = info_of(&b.resp_flows, b.resp_flows.len() as u32);
            let bp = plan.browsers[b.idx].as_ref().expect("a browser plan");
            json!({"client": b.idx, "name": cfg.clients[b.idx].name, "events": bp.events, "stderr": bp.stderr,
                   "go_s": b.go.map(secs), "flow": (!b.resp_flows.is_empty()).then_some(i.flow),
                   "connections": i.connections,
                   "srtt_mean_ms": i.srtt_mean_ms,
                   "loss_phases": i.loss_phases.map(|k| json!({"b": k.b, "t": k.t, "c": k.c}))})
        })
        .collect();
    let views: Vec<_> = app.clients.iter().map(|c| c.session.view()).collect();
    let rows: Vec<_> = app.clients.iter().zip(infos).map(|(c, i)| (c.session.view(), Some(i))).collect();
    let (cs, video) = rep::client_summaries(&rows);
    out.clients = cs;
    out.video = video;
    out.events = loops;
    // End-of-run invariants.
    for c in &app.clients {
        c.session.check_invariants().map_err(|e| fatal(format!("client {}: invariant: {e}", c.session.name)))?;
    }
    for d in [&emu.down, &emu.up] {
        d.link.queue.check_conservation().map_err(|e| fatal(format!("{}: invariant: {}", d.name, e.0)))?;
        d.link.check_accounting().map_err(|e| fatal(format!("{}: invariant: {e}", d.name)))?;
    }

    // Tables.
    let want = |t: &str| cfg.output.tables.iter().any(|x| x == t);
    let mut tables = Vec::new();
    let mut fl = Table::new(
        "flow_info",
        &[("flow", 'i'), ("name", 's'), ("kind", 's'), ("src", 's'), ("dst", 's'), ("start_s", 'f')],
    );
    for (i, f) in app.flows.iter().enumerate() {
        fl.i(0, i as i64);
        fl.s(1, &f.name);
        fl.s(2, f.kind);
        fl.s(3, &cfg.nodes[f.src].name);
        fl.s(4, &cfg.nodes[f.dst].name);
        fl.f(5, secs(f.start));
    }
    tables.push(fl);
    let mut li = Table::new(
        "link_info",
        &[("link", 'i'), ("name", 's'), ("from", 's'), ("to", 's'), ("rate_bps", 'f'), ("delay_ms", 'f'), ("aqm", 's')],
    );
    for (i, d) in [(plan.down, &emu.down), (plan.up, &emu.up)] {
        let l = &d.link;
        li.i(0, i as i64);
        li.s(1, &l.name);
        li.s(2, &cfg.nodes[l.from.index()].name);
        li.s(3, &cfg.nodes[l.to.index()].name);
        li.f(4, l.nominal_rate_bps());
        li.f(5, l.delay as f64 / 1e6);
        li.s(6, l.queue.kind);
    }
    tables.push(li);
    if want("flows") {
        tables.push(flows_tab);
    }
    if want("tcp") {
        tables.push(tcp);
    }
    if want("queues") {
        tables.push(emu.queues);
    }
    if want("web") {
        // As the simulator's (world.rs flow_completed): one row per completed web transfer, in
        // the order they completed.
        let mut t = qoelab_core::report::web_table();
        for &fid in &web_rows {
            let f = &app.flows[fid];
            let gen = f.name.rsplit_once('#').map(|x| x.0).unwrap_or(&f.name);
            t.i(0, fid as i64);
            t.s(1, gen);
            t.f(2, secs(f.start));
            t.i(3, f.size.unwrap_or(0) as i64);
            t.f(4, secs(f.done.unwrap_or(f.start) - f.start));
        }
        tables.push(t);
    }
    let idx: Vec<usize> = app.clients.iter().map(|c| c.idx).collect();
    if want("segments") && !views.is_empty() {
        let mut t = rep::segments_table(&views);
        remap_clients(&mut t, &idx);
        tables.push(t);
        if views.iter().any(|v| v.data_plane != "sequential") {
            let mut t = rep::requests_table(&views);
            remap_clients(&mut t, &idx);
            tables.push(t);
        }
    }
    for t in &tables {
        t.check().map_err(Fatal)?;
    }

    // Timing quality and what else the run measured.
    let lat = |d: &Direction| serde_json::from_str::<Value>(&emu::hist_json(&d.lateness, 1e-3)).unwrap_or(Value::Null);
    let dir = |d: &Direction| {
        json!({"read_pkts": d.read_pkts, "written_pkts": d.written_pkts, "non_ipv4_pkts": d.non_ipv4,
               "malformed_pkts": d.malformed, "write_errors": d.write_errors, "lateness_us": lat(d)})
    };
    let clients: Vec<Value> = app
        .clients
        .iter()
        .map(|c| {
            let all = c.conns.iter().chain(c.retired.iter());
            json!({"name": c.session.name, "pattern_mismatches": all.clone().map(|x| x.reader.mismatches).sum::<u64>(),
                   "responses": all.map(|x| x.reader.completed).sum::<u64>()})
        })
        .collect();
    let real = json!({
        "sched_fifo": emu.fifo,
        "user_namespace": run::in_user_namespace(),
        "emulator_wakeups": emu.wakeups,
        "emulator_cpu_s": (emu.cpu_s * 1000.0).round() / 1000.0,
        "app_loops": loops,
        "downlink": dir(&emu.down),
        "uplink": dir(&emu.up),
        "session_timer_lateness_us": serde_json::from_str::<Value>(&emu::hist_json(&app.timer_lateness, 1e-3)).unwrap_or(Value::Null),
        "clients": clients,
        "dashjs": dashjs,
        "server_addr": SERVER_ADDR,
        "client_addr": CLIENT_ADDR,
    });
    let w = |name: &str, text: String| {
        let p = format!("{}/{name}", plan.out);
        std::fs::write(&p, text).map_err(|e| fatal(format!("cannot write {p}: {e}")))
    };
    w("summary.json", out.to_json())?;
    w("tables.json", Value::Array(tables.iter().map(table_json).collect()).to_string())?;
    w("real.json", real.to_string())?;
    Ok(())
}
