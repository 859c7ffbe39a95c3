//! `sprint`: Sprint's data plane (Arye, Sen, Freedman, "Poor Video Streaming Performance Explained
//! (and Fixed)", sec. IV-B1). Segment requests are pipelined on one persistent connection so that
//! the server always has at least one BDP of response queued (at least `min_depth` requests
//! outstanding), and every time downloading starts or resumes after a buffer-full pause the plane
//! enforces a minimum *train*: it keeps requesting, past the buffer cap if need be, until the
//! requested bytes reach the chunk size of Program 1 for its bandwidth and RTT estimates.
//!
//! Estimates (sec. IV-A): bandwidth = an EWMA of per-segment throughputs, each measured from the
//! later of its first response byte and the end of the previous response to its last byte,
//! weighted down for small transfers (`a = ewma_a0 * min(1, bytes / ewma_ref)`); RTT = the latency
//! of a small request (`probe_bytes` of body) sent every `probe_interval` on a second persistent
//! connection through the same bottleneck. Before `min_samples` bandwidth samples and one RTT
//! sample, the train is one segment (the paper leaves start-up open).

use super::pipelined::Pipeline;
use super::{Cx, DataPlane, DataPlaneEntry, Outcome};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::player::Player;
use crate::session::chunk_sizing::get_chunk_size;
use crate::session::http::{Delivery, ReqId};
use crate::session::ConnId;
use crate::time::{Ns, NEVER, SEC};
use crate::video::Video;

pub(super) const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "eps",
        unit: Unit::Float,
        default: Default::Float(0.1),
        doc: "ε of Program 1 (efficiency >= 1 - ε); the paper's value is lost, 0.1 is the abstract's 90%",
    },
    ParamSpec {
        name: "min_depth",
        unit: Unit::Int,
        default: Default::Int(2),
        doc: "minimum requests outstanding (sec. IV-B1: at least 2, and at least one BDP of response)",
    },
    ParamSpec {
        name: "train",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "enforce the minimum train on every start and resume (false: the plain-pipelining ablation)",
    },
    ParamSpec {
        name: "mss",
        unit: Unit::Bytes,
        default: Default::Int(1460),
        doc: "MSS used by Program 1 (the paper's 1460 B: 10 MSS = 116.8 kbit)",
    },
    ParamSpec {
        name: "probe_interval",
        unit: Unit::Duration,
        default: Default::Int(SEC as i64),
        doc: "RTT probe period (sec. IV-A: a 10-byte XHR every second)",
    },
    ParamSpec {
        name: "probe_bytes",
        unit: Unit::Bytes,
        default: Default::Int(10),
        doc: "response body of the RTT probe (sec. IV-A: 10 bytes)",
    },
    ParamSpec {
        name: "ewma_a0",
        unit: Unit::Float,
        default: Default::Float(0.3),
        doc: "EWMA gain of the bandwidth estimate for a transfer of ewma_ref or more (unspecified; proposed)",
    },
    ParamSpec {
        name: "ewma_ref",
        unit: Unit::Bytes,
        default: Default::Int(1_000_000),
        doc: "transfers smaller than this are down-weighted in proportion (\"downweighting smaller requests\")",
    },
    ParamSpec {
        name: "min_samples",
        unit: Unit::Int,
        default: Default::Int(3),
        doc: "bandwidth samples before Program 1 is used (before: a one-segment train)",
    },
];

pub const ENTRY: DataPlaneEntry = DataPlaneEntry {
    name: "sprint",
    summary: "pipelined requests keeping >= 1 BDP outstanding, minimum trains sized by Program 1",
    reference: "Arye, Sen, Freedman, Poor Video Streaming Performance Explained (and Fixed), sec. IV",
    params: PARAMS,
    needs_layout: false,
    build,
};

/// Sprint's parameters (shared with `sprint-x`).
#[derive(Clone, Debug)]
pub struct SprintCfg {
    pub eps: f64,
    pub min_depth: usize,
    pub train: bool,
    pub mss: f64,
    pub probe_interval: Ns,
    pub probe_bytes: u64,
    pub ewma_a0: f64,
    pub ewma_ref: f64,
    pub min_samples: u32,
}

pub(super) fn parse(p: &Params) -> Result<SprintCfg, ParamError> {
    let eps = p.f64(PARAMS, "eps")?;
    if !(eps > 0.0 && eps < 1.0) {
        return Err(perr("eps", format!("expected a number in (0, 1), found {eps}")));
    }
    let min_depth = p.req_u64(PARAMS, "min_depth")?;
    if !(1..=64).contains(&min_depth) {
        return Err(perr("min_depth", format!("expected 1 to 64, found {min_depth}")));
    }
    let mss = p.req_u64(PARAMS, "mss")?;
    if !(100..=65_535).contains(&mss) {
        return Err(perr("mss", format!("expected 100 to 65535 bytes, found {mss}")));
    }
    let probe_interval = p.req_u64(PARAMS, "probe_interval")?;
    if probe_interval < crate::time::MS {
        return Err(perr("probe_interval", format!("expected at least 1ms, found {probe_interval} ns")));
    }
    let ewma_a0 = p.f64(PARAMS, "ewma_a0")?;
    if !(ewma_a0 > 0.0 && ewma_a0 <= 1.0) {
        return Err(perr("ewma_a0", format!("expected a number in (0, 1], found {ewma_a0}")));
    }
    let ewma_ref = p.req_u64(PARAMS, "ewma_ref")?;
    if ewma_ref == 0 {
        return Err(perr("ewma_ref", "expected > 0 bytes, found 0"));
    }
    // a probe is a small request: at most 1 MB (a larger one is a second download)
    let probe_bytes = p.req_u64(PARAMS, "probe_bytes")?;
    if probe_bytes > 1_000_000 {
        return Err(perr("probe_bytes", format!("expected at most 1MB (a small request), found {probe_bytes} bytes")));
    }
    let min_samples = p.req_u64(PARAMS, "min_samples")?;
    if min_samples > 1000 {
        return Err(perr("min_samples", format!("expected 0 to 1000, found {min_samples}")));
    }
    Ok(SprintCfg {
        eps,
        min_depth: min_depth as usize,
        train: p.bool(PARAMS, "train")?,
        mss: mss as f64,
        probe_interval,
        probe_bytes,
        ewma_a0,
        ewma_ref: ewma_ref as f64,
        min_samples: min_samples as u32,
    })
}

fn build(p: &Params, _v: &Video) -> Result<Box<dyn DataPlane>, ParamError> {
    let cfg = parse(p)?;
    Ok(Box::new(Sprint {
        est: Estimates::new(cfg.clone()),
        cfg,
        p: Pipeline::default(),
        train_left: 0,
        paused: true,
        depth_full: false,
    }))
}

/// Sprint's bandwidth and RTT estimates and its RTT probe on connection 1.
#[derive(Clone, Debug)]
pub struct Estimates {
    pub cfg: SprintCfg,
    /// Bytes/s.
    pub bw: Option<f64>,
    pub samples: u32,
    /// Seconds.
    pub rtt: Option<f64>,
    probe: Option<ReqId>,
    probe_issued: Option<Ns>,
    next_probe: Ns,
    /// End of the previous response on the video connection (for per-response samples).
    prev_end: Ns,
    /// When the current response's first byte arrived.
    cur_start: Option<(ReqId, Ns)>,
}

impl Estimates {
    pub fn new(cfg: SprintCfg) -> Estimates {
        Estimates {
            cfg,
            bw: None,
            samples: 0,
            rtt: None,
            probe: None,
            probe_issued: None,
            next_probe: 0,
            prev_end: 0,
            cur_start: None,
        }
    }
    /// Program 1's chunk size from the current estimates; 0 before they exist.
    pub fn chunk_size(&self) -> u64 {
        match (self.bw, self.rtt) {
            (Some(bw), Some(rtt)) if self.samples >= self.cfg.min_samples => {
                let s = get_chunk_size(bw, rtt, self.cfg.eps, self.cfg.mss);
                if s.is_finite() && s > 0.0 {
                    s.min(1e15) as u64
                } else {
                    0
                }
            }
            _ => 0,
        }
    }
    /// The BDP estimate (bytes); 0 before the estimates exist.
    pub fn bdp(&self) -> u64 {
        match (self.bw, self.rtt) {
            (Some(bw), Some(rtt)) => (bw * rtt).min(1e15) as u64,
            _ => 0,
        }
    }
    /// A bandwidth sample of `bytes` over [start, end].
    pub fn sample(&mut self, bytes: u64, start: Ns, end: Ns) {
        if end <= start {
            return;
        }
        let x = bytes as f64 * 1e9 / (end - start) as f64;
        let a = self.cfg.ewma_a0 * (bytes as f64 / self.cfg.ewma_ref).min(1.0);
        self.bw = Some(match self.bw {
            None => x,
            Some(b) => (1.0 - a) * b + a * x,
        });
        self.samples += 1;
    }
    /// Track a delivery of the probe: the RTT sample. Returns true if `d` was the probe's
    /// (consumed).
    pub fn on_probe_delivery(&mut self, now: Ns, d: &Delivery) -> bool {
        if Some(d.id) != self.probe {
            return false;
        }
        if d.complete() {
            self.probe = None;
            if let Some(t0) = self.probe_issued {
                self.rtt = Some((now - t0) as f64 / 1e9);
            }
        }
        true
    }
    /// Track a delivery on the video connection: per-response samples. Returns true if `d` was
    /// the probe's (consumed).
    pub fn on_delivery(&mut self, now: Ns, d: &Delivery) -> bool {
        if self.on_probe_delivery(now, d) {
            return true;
        }
        if d.received > 0 && self.cur_start.map(|c| c.0) != Some(d.id) {
            self.cur_start = Some((d.id, now));
        }
        if d.complete() {
            let start = self.cur_start.map(|c| c.1).unwrap_or(now).max(self.prev_end);
            self.sample(d.body_len, start, now);
            self.prev_end = now;
            self.cur_start = None;
        }
        false
    }
    /// Send the probe if due.
    pub fn pump(&mut self, now: Ns, cx: &mut Cx) {
        if self.probe.is_none() && now >= self.next_probe {
            let id = cx.http.get(now, ConnId(1), self.cfg.probe_bytes, cx.t);
            cx.log.issue(now, id, ConnId(1), "probe", (0, 0), 0, None, self.cfg.probe_bytes);
            self.probe = Some(id);
            self.probe_issued = Some(now);
            self.next_probe = now + self.cfg.probe_interval;
        }
    }
    pub fn poll_at(&self) -> Ns {
        if self.probe.is_none() {
            self.next_probe
        } else {
            NEVER
        }
    }
}

pub struct Sprint {
    cfg: SprintCfg,
    est: Estimates,
    p: Pipeline,
    /// Bytes still to request in the current train.
    train_left: u64,
    /// Downloading is paused (pipeline empty, buffer full): the next request starts a train.
    paused: bool,
    /// The pipeline was deep enough at the end of the last pump (only a delivery can change that).
    depth_full: bool,
}

impl Sprint {
    fn want_more(&self, cx: &Cx) -> bool {
        self.p.q.len() < self.cfg.min_depth || cx.http.bytes_outstanding(ConnId(0)) < self.est.bdp()
    }
}

impl DataPlane for Sprint {
    fn name(&self) -> &'static str {
        "sprint"
    }
    fn connections(&self) -> u32 {
        2
    }
    fn probe_slot(&self) -> Option<u32> {
        Some(1)
    }
    fn pump(&mut self, now: Ns, cx: &mut Cx) {
        self.est.pump(now, cx);
        loop {
            self.depth_full = !self.want_more(cx);
            if self.depth_full {
                break;
            }
            cx.player.advance(now);
            if self.p.q.is_empty() && self.train_left == 0 && cx.player.buffer_full() {
                self.paused = true;
            }
            if self.paused && !cx.player.buffer_full() && !cx.player.all_requested() {
                self.paused = false;
                if self.cfg.train {
                    self.train_left = self.est.chunk_size();
                    cx.log.trains.push((now, self.train_left));
                }
            }
            match cx.player.poll_next(now, self.train_left > 0) {
                Some(req) => {
                    self.train_left = self.train_left.saturating_sub(req.bytes);
                    self.p.issue(now, cx, &req);
                }
                None => break,
            }
        }
    }
    fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        if self.est.on_delivery(now, d) {
            cx.log.deliver_to(now, d, cx.player);
            return d.complete();
        }
        match self.p.on_delivery(now, d, cx) {
            Outcome::Nothing => false,
            Outcome::Complete => true,
            Outcome::Abandoned => {
                self.est.prev_end = now;
                true
            }
        }
    }
    fn poll_at(&self, player: &Player) -> Ns {
        // While the pipeline could take more, wake when the player could issue (the last pump
        // stopped on an ABR delay, the buffer cap or the end of the video).
        let req = if self.depth_full { NEVER } else { player.request_at() };
        req.min(player.playback_at()).min(self.est.poll_at())
    }
}
