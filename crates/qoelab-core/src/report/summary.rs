//! The run summary (summary.json): typed, versioned, deterministic (no wall-clock values).
//!
//! Schema: docs/summary.md. `schema_version` changes whenever a key is renamed, removed or
//! changes meaning (adding a key does not). `config_hash` is the SHA-256 of the normalized
//! configuration (the JSON the core runs, keys sorted), the key a sweep caches results on;
//! `core_version` is the version of the core that produced the summary.

use crate::metrics::{ClientMetrics, FairnessMetrics};
use serde::Serialize;
use std::collections::BTreeMap;

/// Current summary schema version.
pub const SCHEMA_VERSION: u32 = 2;

/// Round to 6 decimals; non-finite values become `None` (null).
pub fn r6(x: f64) -> Option<f64> {
    x.is_finite().then(|| (x * 1e6).round() / 1e6)
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Always "qoelab.summary".
    pub schema: &'static str,
    pub schema_version: u32,
    pub core_version: &'static str,
    pub config_hash: String,
    /// "packet" or "trace".
    pub network: String,
    pub scenario: String,
    pub seed: u64,
    pub duration_s: Option<f64>,
    pub flows: Vec<FlowSummary>,
    /// Jain's index over the goodputs of the bulk flows (null without bulk flows).
    pub jain_index: Option<f64>,
    pub links: Vec<LinkSummary>,
    pub clients: Vec<ClientSummary>,
    /// Fairness across video clients (null without clients).
    pub video: Option<FairnessMetrics>,
    pub packets: PacketCounts,
    /// Web page loads (absent without `[[page]]` entries).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<PageSummary>,
    /// Events processed by the driver's event loop (0 in trace mode).
    pub events: u64,
    /// "ok": every end-of-run invariant held (a run that breaks one writes no summary).
    pub invariants: &'static str,
}

impl Summary {
    /// An empty summary for a configuration (drivers fill in what they have).
    pub fn new(network: &str, scenario: &str, seed: u64, duration_ns: u64, config_hash: String) -> Summary {
        Summary {
            schema: "qoelab.summary",
            schema_version: SCHEMA_VERSION,
            core_version: env!("CARGO_PKG_VERSION"),
            config_hash,
            network: network.to_string(),
            scenario: scenario.to_string(),
            seed,
            duration_s: r6(crate::time::secs(duration_ns)),
            flows: Vec::new(),
            jain_index: None,
            links: Vec::new(),
            clients: Vec::new(),
            video: None,
            packets: PacketCounts::default(),
            pages: Vec::new(),
            events: 0,
            invariants: "ok",
        }
    }
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("summary serializes")
    }
}

/// One flow (half-connection or datagram flow).
#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    pub id: usize,
    pub name: String,
    /// bulk, onoff, web, cbr, video (response half of a video connection), http_req.
    pub kind: &'static str,
    pub src: String,
    pub dst: String,
    pub start_s: Option<f64>,
    /// Time from start to stop, completion or the end of the run.
    pub active_s: Option<f64>,
    pub bytes_received: u64,
    /// bytes_received x 8 / active_s.
    pub goodput_bps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpFlowSummary>,
}

/// TCP statistics of a flow's sender.
#[derive(Clone, Debug, Serialize)]
pub struct TcpFlowSummary {
    /// "quic" for QUIC flows (absent for TCP); then `retransmits` counts packets carrying
    /// retransmitted data, `fast_recoveries` congestion events and `rto_count` PTO expirations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<&'static str>,
    pub cc: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    pub retransmits: u64,
    pub fast_recoveries: u64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicFlowSummary>,
    pub rto_count: u64,
    pub idle_restarts: u64,
    pub srtt_ms_at_end: f64,
    pub min_rtt_ms: f64,
}

/// QUIC-only statistics of a flow's sender and receiver (partial reliability, QUIC*).
#[derive(Clone, Debug, Serialize)]
pub struct QuicFlowSummary {
    /// Stream bytes sent again (in packets counted by `retransmits`).
    pub retransmitted_bytes: u64,
    /// Stream bytes sent in unreliable packets (sent once).
    pub unreliable_bytes_sent: u64,
    /// Of them, declared lost and abandoned.
    pub unreliable_bytes_lost: u64,
    /// Bytes first sent unreliably and sent again (0: the never-retransmitted rule).
    pub unreliable_bytes_retransmitted: u64,
    /// Stream bytes the receiver zero-filled.
    pub hole_bytes: u64,
}

/// A monitored link.
#[derive(Clone, Debug, Serialize)]
pub struct LinkSummary {
    pub name: String,
    pub aqm: &'static str,
    /// Fixed rate, or the mean rate of the trace (bit/s).
    pub rate_bps: Option<f64>,
    /// Bytes transmitted / capacity offered during the run.
    pub utilization: Option<f64>,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub queue_delay_ms: QueueDelay,
    /// Drops by reason (overflow, aqm_enqueue, aqm_dequeue, head_drop, fq_overflow, link_loss);
    /// reasons with no drop are left out.
    pub drops: BTreeMap<&'static str, u64>,
    pub dropped_packets: u64,
    pub marked_packets: u64,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    /// fq_codel: distinct flow hashes that shared a flow queue with another hash while both had
    /// packets queued (hash collisions); absent for other disciplines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fq_collisions: Option<u64>,
}

/// Queueing delay (sojourn time) of the packets dequeued, ms.
#[derive(Clone, Debug, Default, Serialize)]
pub struct QueueDelay {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// Packet counts (the benchmark's "bottleneck packets" is `bottleneck`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PacketCounts {
    /// Packets transmitted by the first monitored link (the downstream bottleneck of a
    /// dumbbell, hop 0 of a chain).
    pub bottleneck: u64,
    pub monitored_links: u64,
    pub all_links: u64,
    /// Packets that arrived for connections discarded by a reset.
    pub discarded_after_reset: u64,
}

/// Loss phases of a client's dropped data packets (Minerva's B/T/C classification).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LossPhaseCounts {
    #[serde(rename = "B")]
    pub b: u64,
    #[serde(rename = "T")]
    pub t: u64,
    #[serde(rename = "C")]
    pub c: u64,
}

/// One web page load.
#[derive(Clone, Debug, Serialize)]
pub struct PageSummary {
    pub name: String,
    pub start_s: Option<f64>,
    /// Page load time: the last object's arrival after the start (null if the load did not
    /// finish within the run).
    pub plt_s: Option<f64>,
    pub objects: usize,
    pub objects_done: usize,
    /// Response bytes of the objects that arrived.
    pub bytes: u64,
    /// TCP connections opened, TLS handshakes, idle connections closed at the global limit.
    pub connections: u64,
    pub tls_handshakes: u64,
    pub closed_at_limit: u64,
    pub requests: u64,
}

/// One video client: its QoE metrics, or the error that prevented them.
#[derive(Clone, Debug, Serialize)]
pub struct ClientSummary {
    pub name: String,
    pub abr: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<ClientMetrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_max_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_rtt_ms: Option<f64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub packet: Option<PacketClientFields>,
    /// The data plane's HTTP counters (absent for the default `sequential` plane).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpSummary>,
    /// The flow controller of the client's provider (absent without a provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_control: Option<FlowControlSummary>,
}

/// A client's congestion-control weights set by its provider's flow controller.
#[derive(Clone, Debug, Serialize)]
pub struct FlowControlSummary {
    pub provider: String,
    pub controller: String,
    /// Weights set (the initial one included).
    pub updates: u64,
    /// Updates whose weight hit a bound of the controller's clamp.
    pub clamped_updates: u64,
    /// Mean over the updates, smallest, largest and last weight (None if no update).
    pub weight_mean: Option<f64>,
    pub weight_min: Option<f64>,
    pub weight_max: Option<f64>,
    pub weight_last: Option<f64>,
}

/// A client's HTTP exchanges under a non-default data plane.
#[derive(Clone, Debug, Serialize)]
pub struct HttpSummary {
    pub data_plane: String,
    pub requests: u64,
    pub completed: u64,
    pub cancelled: u64,
    /// Response bytes received for requests later cancelled (at the HTTP layer; bytes discarded
    /// after a reset are counted per network in `packets.discarded_after_reset`).
    pub wasted_bytes: u64,
    pub resets: u64,
    /// Most requests outstanding at once on one connection.
    pub max_pipeline: u64,
    /// Ranges cancelled because the ABR switched rung (Sprint-x).
    pub switch_cancels: usize,
    /// Trains started (Sprint) and their mean size in bytes.
    pub trains: usize,
    pub train_mean_bytes: Option<f64>,
    /// The VOXEL plane's counters (docs/models/dataplane-voxel.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub voxel: Option<crate::session::dataplane::voxel::VoxelStats>,
}

/// Per-client facts of the packet network.
#[derive(Clone, Debug, Serialize)]
pub struct PacketClientFields {
    pub flow: usize,
    pub connections: u32,
    pub srtt_mean_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_phases: Option<LossPhaseCounts>,
}

/// SHA-256 of the normalized configuration JSON (keys sorted, no whitespace), hex.
pub fn config_hash(config_json: &str) -> String {
    let canonical = match serde_json::from_str::<serde_json::Value>(config_json) {
        Ok(v) => v.to_string(),
        Err(_) => config_json.to_string(),
    };
    crate::sha256::hex(canonical.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn hash_ignores_key_order_and_whitespace() {
        let a = config_hash(r#"{"a": 1, "b": [1, 2]}"#);
        let b = config_hash(r#"{"b":[1,2],"a":1}"#);
        assert_eq!(a, b);
        assert_ne!(a, config_hash(r#"{"b":[2,1],"a":1}"#));
        assert_eq!(a.len(), 64);
    }
    #[test]
    fn summary_serializes_with_schema() {
        let s = Summary::new("packet", "x", 1, 1_000_000_000, "h".into());
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert_eq!(v["duration_s"], 1.0);
        assert!(v["video"].is_null());
    }
}
