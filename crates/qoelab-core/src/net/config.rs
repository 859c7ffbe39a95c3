//! The normalized simulation config: what the core runs. Units are canonical (ns, bit/s, bytes,
//! packets). The Python front turns scenario TOML files (with unit strings, topologies such as
//! dumbbell/chain, defaults) into this document; Rust tests and benches build it directly.

use super::loss::LossCfg;
use super::trace::TraceCfg;
use crate::time::{Ns, MS};
use serde::Deserialize;
use serde_json::Value;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub name: String,
    #[serde(default)]
    pub seed: u64,
    /// Simulated time to run (ns).
    pub duration: Ns,
    pub nodes: Vec<NodeCfg>,
    pub links: Vec<LinkCfg>,
    #[serde(default)]
    pub flows: Vec<FlowCfg>,
    /// Videos referenced by clients (by index).
    #[serde(default)]
    pub videos: Vec<crate::video::Video>,
    /// Video clients (player + ABR over HTTP/TCP).
    #[serde(default)]
    pub clients: Vec<ClientCfg>,
    #[serde(default)]
    pub output: OutputCfg,
    /// "packet" (default): the packet-level network. "trace": every video client runs alone on
    /// the chunk-level model of `trace_schedule` (Sabre/Pensieve style); flows are not simulated.
    #[serde(default = "packet")]
    pub network: String,
    /// The rate schedule of trace mode (the bottleneck's rate over time).
    #[serde(default)]
    pub trace_schedule: Option<crate::tracemode::Schedule>,
    /// Video providers running a flow controller over their clients (packet network only).
    #[serde(default)]
    pub providers: Vec<ProviderCfg>,
    /// Web page loads (a browser fetching a page over HTTP/1.1; packet network only).
    #[serde(default)]
    pub pages: Vec<PageCfg>,
}

/// A web page load: a browser on `client` loading a page whose origins are all served by
/// `server` (one path, one RTT), over TCP connections opened as the browser needs them
/// (`crate::session::page`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageCfg {
    pub name: String,
    pub server: usize,
    pub client: usize,
    #[serde(default = "cubic")]
    pub cc: String,
    #[serde(default)]
    pub cc_params: Value,
    #[serde(default)]
    pub tcp: Value,
    /// When the load starts (ns).
    #[serde(default)]
    pub start: Ns,
    /// The page and the browser's limits.
    pub load: crate::session::page::PageLoadCfg,
}

/// A provider: a flow controller (`crate::flowctl`) setting the congestion-control weights of
/// the response flows of its clients.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderCfg {
    pub name: String,
    /// A `flowctl::REGISTRY` name.
    pub controller: String,
    /// Client names (`ClientCfg::name`); a name also covers the sessions of an arrival entry
    /// (`name#k`).
    pub clients: Vec<String>,
    /// The controller's parameters (canonical units).
    #[serde(default)]
    pub params: serde_json::Value,
    /// Value functions (Minerva's client-aware utility), one per video.
    #[serde(default)]
    pub value_functions: Vec<crate::flowctl::value::ValueFunction>,
    /// Corpus-wide normalization table (Minerva's `normalization = "file"`).
    #[serde(default)]
    pub normalization_table: Option<crate::flowctl::norm::Normalization>,
}

fn packet() -> String {
    "packet".into()
}

/// A video client: a player with an ABR fetching segments from `server` over persistent
/// HTTP/1.1 connections, as its data plane decides.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCfg {
    pub name: String,
    /// Node of the HTTP server and of the client (player).
    pub server: usize,
    pub client: usize,
    /// Index into `SimConfig::videos`.
    pub video: usize,
    pub abr: String,
    #[serde(default)]
    pub abr_params: Value,
    #[serde(default)]
    pub player: Option<crate::player::PlayerConfig>,
    #[serde(default = "cubic")]
    pub cc: String,
    #[serde(default)]
    pub cc_params: Value,
    #[serde(default)]
    pub tcp: Value,
    /// "tcp" (absent) or "quic" (docs/models/transport-quic.md).
    #[serde(default)]
    pub transport: Option<String>,
    /// QUIC options (`QuicConfig` fields; only with transport "quic").
    #[serde(default)]
    pub quic: Value,
    /// Session start (ns).
    #[serde(default)]
    pub start: Ns,
    #[serde(default)]
    pub http: HttpCfg,
    /// How segment requests map onto HTTP requests and connections (`[client.data_plane]`).
    #[serde(default)]
    pub data_plane: crate::session::dataplane::DataPlaneCfg,
    /// Base RTT of the client's path (ns): the time to first byte in trace mode.
    #[serde(default)]
    pub rtt: Ns,
    /// If set, this entry generates sessions: new clients (each with its own player, ABR and
    /// connection, on this client's hosts) arrive as a Poisson process with this mean rate per
    /// second from `start` until `stop`; each leaves when its video has played.
    #[serde(default)]
    pub arrival_rate: Option<f64>,
    #[serde(default)]
    pub stop: Option<Ns>,
}

pub use crate::session::HttpCfg;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeCfg {
    pub name: String,
}

/// A unidirectional link `from -> to` with its queue.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkCfg {
    pub name: String,
    pub from: usize,
    pub to: usize,
    /// bit/s (ignored when `trace` is set).
    #[serde(default)]
    pub rate_bps: u64,
    /// One-way propagation delay (ns).
    #[serde(default)]
    pub delay: Ns,
    /// Buffer limit in packets and/or bytes (given to the queue discipline as its limit).
    #[serde(default)]
    pub buffer_packets: Option<u64>,
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    #[serde(default = "pfifo")]
    pub aqm: String,
    #[serde(default)]
    pub aqm_params: Value,
    #[serde(default)]
    pub trace: Option<TraceCfg>,
    #[serde(default)]
    pub loss: Option<LossCfg>,
    /// Monitor this link: queue samples, sojourn-time percentiles, utilization in the summary.
    #[serde(default)]
    pub monitor: bool,
    /// Log every packet event (enqueue, dequeue, drop) of this link.
    #[serde(default)]
    pub packet_log: bool,
    /// Capture packets leaving this link's queue (transmitted) into a pcap.
    #[serde(default)]
    pub pcap: bool,
}

fn pfifo() -> String {
    "pfifo".into()
}

/// A traffic source.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum FlowCfg {
    /// A TCP transfer: unlimited (iperf-like) between start and stop, or `bytes` long.
    Bulk {
        name: String,
        src: usize,
        dst: usize,
        #[serde(default = "cubic")]
        cc: String,
        #[serde(default)]
        cc_params: Value,
        #[serde(default)]
        tcp: Value,
        #[serde(default)]
        start: Ns,
        #[serde(default)]
        stop: Option<Ns>,
        #[serde(default)]
        bytes: Option<u64>,
        /// (time, weight) changes applied to the controller while running (Minerva).
        #[serde(default)]
        weight_schedule: Vec<(Ns, f64)>,
        /// "tcp" (absent) or "quic" (docs/models/transport-quic.md).
        #[serde(default)]
        transport: Option<String>,
        /// QUIC options (`QuicConfig` fields; only with transport "quic").
        #[serde(default)]
        quic: Value,
    },
    /// ON/OFF TCP source on one persistent connection: writes `bytes` every `period` (chunked
    /// downloads without a player; idle gaps exercise slow start after idle).
    Onoff {
        name: String,
        src: usize,
        dst: usize,
        #[serde(default = "cubic")]
        cc: String,
        #[serde(default)]
        cc_params: Value,
        #[serde(default)]
        tcp: Value,
        #[serde(default)]
        start: Ns,
        #[serde(default)]
        stop: Option<Ns>,
        bytes: u64,
        period: Ns,
    },
    /// Constant bit rate datagrams (no congestion control, no ACKs).
    Cbr {
        name: String,
        src: usize,
        dst: usize,
        rate_bps: u64,
        #[serde(default = "mtu")]
        packet_size: u32,
        #[serde(default)]
        start: Ns,
        #[serde(default)]
        stop: Option<Ns>,
    },
    /// Web-like cross traffic: TCP flows arriving as a Poisson process with sizes drawn from an
    /// empirical CDF `[(bytes, cumulative probability)]` (linear interpolation between points).
    Web {
        name: String,
        src: usize,
        dst: usize,
        #[serde(default = "cubic")]
        cc: String,
        #[serde(default)]
        cc_params: Value,
        #[serde(default)]
        tcp: Value,
        #[serde(default)]
        start: Ns,
        #[serde(default)]
        stop: Option<Ns>,
        /// Mean arrivals per second.
        arrival_rate: f64,
        sizes: Vec<(f64, f64)>,
    },
}

fn cubic() -> String {
    "cubic".into()
}
fn mtu() -> u32 {
    crate::packet::MTU
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputCfg {
    /// Period of flow/TCP/queue samples (ns).
    #[serde(default = "hundred_ms")]
    pub sample_interval: Ns,
    /// Tables to record: any of "flows", "tcp", "queues", "packets" (packets also needs a link
    /// with packet_log), "web".
    #[serde(default = "default_tables")]
    pub tables: Vec<String>,
    /// Classify every drop of a video flow at the monitored links into loss phases (needs the
    /// packet log of the monitored links).
    #[serde(default)]
    pub loss_phases: bool,
}

impl Default for OutputCfg {
    fn default() -> Self {
        OutputCfg { sample_interval: hundred_ms(), tables: default_tables(), loss_phases: false }
    }
}

fn hundred_ms() -> Ns {
    100 * MS
}
fn default_tables() -> Vec<String> {
    vec!["flows".into(), "tcp".into(), "queues".into(), "web".into(), "segments".into(), "pages".into()]
}

/// Most samples per sampled table row kind a run may record (duration / sample_interval).
pub const MAX_SAMPLES: u64 = 100_000_000;
/// Most expected arrivals (web flows or video sessions) of one generator over the run.
pub const MAX_EXPECTED_ARRIVALS: f64 = 1e7;

impl SimConfig {
    pub fn from_json(s: &str) -> Result<SimConfig, String> {
        serde_json::from_str(s).map_err(|e| format!("config: {e}"))
    }

    /// Values the types accept but that make no sense or would exhaust memory or time (zero
    /// buffers, zero sample intervals, non-finite or runaway arrival rates). `World::build`
    /// checks what needs the built world (nodes, routes, models). Errors are (path, message).
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |p: String, m: &str| Err((p, m.to_string()));
        if self.duration == 0 {
            return e("duration".into(), "expected > 0");
        }
        let si = self.output.sample_interval;
        if si == 0 || self.duration / si > MAX_SAMPLES {
            return e(
                "output.sample_interval".into(),
                &format!("expected > 0 and at most {MAX_SAMPLES} samples per run"),
            );
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.buffer_packets == Some(0) || l.buffer_bytes == Some(0) {
                return e(format!("links[{i}].buffer"), "expected a buffer of at least one packet");
            }
            // (the scenario layer allows 60 s; near 2^64 ns an arrival time wrapped and the engine
            // panicked with an event in the past)
            if l.delay > 3600 * crate::time::SEC {
                return e(format!("links[{i}].delay"), "expected at most 1 h");
            }
        }
        let expected = |rate: f64, start: Ns, stop: Option<Ns>| {
            let end = stop.unwrap_or(self.duration).min(self.duration);
            rate * end.saturating_sub(start) as f64 / 1e9
        };
        for (i, f) in self.flows.iter().enumerate() {
            match f {
                FlowCfg::Cbr { rate_bps, packet_size, .. } => {
                    if *rate_bps == 0 {
                        return e(format!("flows[{i}].rate_bps"), "expected a rate > 0");
                    }
                    if *packet_size < 28 || *packet_size > 65_535 {
                        return e(format!("flows[{i}].packet_size"), "expected 28..65535 bytes");
                    }
                }
                FlowCfg::Onoff { bytes, period, .. } => {
                    if *bytes == 0 || *period == 0 {
                        return e(format!("flows[{i}].period"), "expected bytes > 0 and period > 0");
                    }
                }
                FlowCfg::Web { arrival_rate, start, stop, sizes, .. } => {
                    if !(arrival_rate.is_finite() && *arrival_rate > 0.0) {
                        return e(format!("flows[{i}].arrival_rate"), "expected a finite rate > 0 per second");
                    }
                    if expected(*arrival_rate, *start, *stop) > MAX_EXPECTED_ARRIVALS {
                        return e(format!("flows[{i}].arrival_rate"), "expected at most 1e7 arrivals over the run");
                    }
                    if sizes.is_empty() || sizes.iter().any(|(b, p)| !(b.is_finite() && p.is_finite() && *b >= 0.0)) {
                        return e(
                            format!("flows[{i}].sizes"),
                            "expected a CDF of finite (bytes >= 0, probability) points",
                        );
                    }
                }
                FlowCfg::Bulk { weight_schedule, .. } => {
                    if weight_schedule.iter().any(|(_, w)| !(w.is_finite() && *w >= 0.0)) {
                        return e(format!("flows[{i}].weight_schedule"), "expected finite weights >= 0");
                    }
                }
            }
        }
        for (i, c) in self.clients.iter().enumerate() {
            if let Some(r) = c.arrival_rate {
                if !(r.is_finite() && r > 0.0) {
                    return e(format!("clients[{i}].arrival_rate"), "expected a finite rate > 0 per second");
                }
                if expected(r, c.start, c.stop) > MAX_EXPECTED_ARRIVALS {
                    return e(format!("clients[{i}].arrival_rate"), "expected at most 1e7 sessions over the run");
                }
            }
            if c.http.progress_interval == 0 {
                return e(format!("clients[{i}].http.progress_interval"), "expected > 0");
            }
        }
        Ok(())
    }
}
