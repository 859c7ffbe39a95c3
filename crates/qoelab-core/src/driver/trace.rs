//! The trace-mode driver: every client alone on the scenario's rate schedule, at chunk level
//! (Sabre/Pensieve style), with the same player and ABR code as the packet simulator
//! ([`crate::tracemode`] is the model; this is its driver for scenarios).

use crate::abr::AbrFactory;
use crate::net::clients::session_parts;
use crate::net::{SimConfig, SimError};
use crate::player::SegmentLog;
use crate::report::summary::Summary;
use crate::report::table::Table;
use crate::session::SessionView;
use crate::time::Ns;
use crate::tracemode::{run_trace_mode, Period, Schedule, TraceModeResult, TraceOpts};
use std::sync::Arc;

/// A trace-mode client's outcome.
struct TraceClient {
    name: String,
    abr: String,
    video: Arc<crate::video::Video>,
    buffer_max: Ns,
    base_rtt: Ns,
    result: TraceModeResult,
}

pub struct TraceDriver {
    cfg: SimConfig,
    factory: Option<AbrFactory>,
    clients: Vec<TraceClient>,
    now: Ns,
    /// The clients' sessions have run (trace mode runs them whole, in the first slice).
    ran: bool,
}

fn serr(path: impl Into<String>, msg: impl Into<String>) -> SimError {
    SimError { path: path.into(), msg: msg.into() }
}

impl TraceDriver {
    /// Check the configuration: a rate schedule, and every client's video, ABR and player.
    pub fn build(cfg: SimConfig, factory: Option<AbrFactory>) -> Result<TraceDriver, SimError> {
        if cfg.duration == 0 {
            return Err(serr("duration", "expected > 0"));
        }
        if let Some(i) = cfg.clients.iter().position(|c| c.arrival_rate.is_some()) {
            return Err(serr(format!("clients[{i}].arrival_rate"), "session arrivals need the packet network"));
        }
        if cfg.trace_schedule.is_none() {
            return Err(serr("trace_schedule", "trace mode needs a rate schedule"));
        }
        for (i, c) in cfg.clients.iter().enumerate() {
            if c.transport.as_deref().is_some_and(|t| t != "tcp") {
                return Err(serr(
                    format!("clients[{i}].transport"),
                    "trace mode has no transport model; a QUIC client needs the packet network",
                ));
            }
            let plane = session_parts(&format!("clients[{i}]"), c, &cfg, factory.as_ref())?.3;
            if plane.name() != "sequential" {
                return Err(serr(
                    format!("clients[{i}].data_plane.kind"),
                    format!(
                        "trace mode fetches one segment at a time; data plane \"{}\" needs the packet network",
                        plane.name()
                    ),
                ));
            }
        }
        Ok(TraceDriver { cfg, factory, clients: Vec::new(), now: 0, ran: false })
    }

    pub fn now(&self) -> Ns {
        self.now
    }

    pub fn duration(&self) -> Ns {
        self.cfg.duration
    }

    /// Run every client to the end of its session or of the run (trace mode is not sliced: a
    /// client's session runs in one call).
    pub fn run_until(&mut self, until: Ns) {
        let end = until.min(self.cfg.duration);
        if !self.ran && end > 0 {
            self.ran = true;
            self.run_clients();
        }
        self.now = end.max(self.now);
    }

    fn run_clients(&mut self) {
        let sched = self.cfg.trace_schedule.clone().expect("checked at build");
        for (i, c) in self.cfg.clients.iter().enumerate() {
            let (video, abr, pcfg, _) =
                session_parts(&format!("clients[{i}]"), c, &self.cfg, self.factory.as_ref()).expect("checked at build");
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
            self.clients.push(TraceClient {
                name: c.name.clone(),
                abr: c.abr.clone(),
                video,
                buffer_max,
                base_rtt: c.rtt,
                result,
            });
        }
    }

    fn views(&self) -> Vec<SessionView<'_>> {
        static EMPTY_LOG: std::sync::LazyLock<crate::session::dataplane::PlaneLog> =
            std::sync::LazyLock::new(Default::default);
        self.clients
            .iter()
            .map(|t| SessionView {
                name: &t.name,
                abr: &t.abr,
                video: &t.video,
                log: &t.result.log as &[SegmentLog],
                summary: t.result.summary.clone(),
                buffer_max: t.buffer_max,
                base_rtt: t.base_rtt,
                data_plane: "sequential",
                http: Default::default(),
                plane_log: &EMPTY_LOG,
                voxel: None,
            })
            .collect()
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        for t in &self.clients {
            if let Some(e) = &t.result.error {
                return Err(format!("client {} (trace mode): {e}", t.name));
            }
        }
        Ok(())
    }

    pub fn summary(&self, config_hash: String) -> Summary {
        let mut out = Summary::new(&self.cfg.network, &self.cfg.name, self.cfg.seed, self.cfg.duration, config_hash);
        let rows: Vec<_> = self.views().into_iter().map(|v| (v, None)).collect();
        let (clients, video) = crate::report::client_summaries(&rows);
        out.clients = clients;
        out.video = video;
        out
    }

    pub fn take_tables(&mut self) -> Vec<Table> {
        if self.clients.is_empty() || !self.cfg.output.tables.iter().any(|t| t == "segments") {
            return Vec::new();
        }
        vec![crate::report::segments_table(&self.views())]
    }
}
