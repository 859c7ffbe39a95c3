//! Results, whatever the driver: output tables, the typed run summary (summary.json) and the
//! per-client metrics and `segments` table computed from session views.
//!
//! Drivers (the packet simulator, trace mode, later flow-level and real network) hand
//! [`crate::session::SessionView`]s and, where they have them, per-client transport facts
//! ([`PacketClientInfo`]) to these functions; nothing here knows how the bytes were moved.

pub mod summary;
pub mod table;

use crate::metrics::{ClientMetrics, FairnessMetrics, QoeParams};
use crate::session::SessionView;
use crate::time::Ns;
use summary::{ClientSummary, HttpSummary, LossPhaseCounts, PacketClientFields};
use table::Table;

/// Transport facts about a client that only a packet-level driver has.
#[derive(Clone, Debug, Default)]
pub struct PacketClientInfo {
    /// Flow id of the first response half-connection.
    pub flow: usize,
    pub connections: u32,
    /// Mean smoothed RTT over the response flows' samples (ms).
    pub srtt_mean_ms: Option<f64>,
    pub loss_phases: Option<LossPhaseCounts>,
}

/// Per-client summaries and the fairness metrics across the clients that have metrics and whose
/// player started during the run.
pub fn client_summaries(
    clients: &[(SessionView<'_>, Option<PacketClientInfo>)],
) -> (Vec<ClientSummary>, Option<FairnessMetrics>) {
    if clients.is_empty() {
        return (Vec::new(), None);
    }
    let mut all = Vec::new();
    let mut out = Vec::new();
    for (c, pk) in clients {
        let mut row = ClientSummary {
            name: c.name.to_string(),
            abr: c.abr.to_string(),
            error: None,
            metrics: None,
            video: None,
            buffer_max_s: None,
            base_rtt_ms: None,
            packet: None,
            flow_control: None,
            http: (c.data_plane != "sequential").then(|| {
                let l = c.plane_log;
                let sized: Vec<u64> = l.trains.iter().map(|t| t.1).filter(|&b| b > 0).collect();
                HttpSummary {
                    data_plane: c.data_plane.to_string(),
                    requests: c.http.requests,
                    completed: c.http.completed,
                    cancelled: c.http.cancelled,
                    wasted_bytes: c.http.wasted_bytes,
                    resets: c.http.resets,
                    max_pipeline: c.http.max_pipeline,
                    switch_cancels: l.switch_cancels.len(),
                    trains: l.trains.len(),
                    train_mean_bytes: (!sized.is_empty())
                        .then(|| sized.iter().sum::<u64>() as f64 / sized.len() as f64),
                    voxel: c.voxel,
                }
            }),
        };
        match ClientMetrics::compute(c.log, &c.summary, c.video.n_rungs(), &QoeParams::default()) {
            Ok(m) => {
                // a client whose player never started (it starts at or after the end) is listed but
                // does not compete: it stays out of the fairness metrics
                if c.summary.now > c.summary.start {
                    all.push(m.clone());
                }
                row.metrics = Some(m);
                row.video = Some(c.video.name.clone());
                row.buffer_max_s = Some(crate::time::secs(c.buffer_max));
                row.base_rtt_ms = Some(c.base_rtt as f64 / 1e6);
                row.packet = pk.as_ref().map(|p| PacketClientFields {
                    flow: p.flow,
                    connections: p.connections,
                    srtt_mean_ms: p.srtt_mean_ms,
                    loss_phases: p.loss_phases,
                });
            }
            Err(e) => row.error = Some(e),
        }
        out.push(row);
    }
    (out, Some(FairnessMetrics::compute(&all)))
}

/// The `requests` table: one row per HTTP request of every client whose data plane is not
/// `sequential` (chunklets, ranges, pipelined segments, RTT probes).
/// The empty `tcp` table (docs/tables.md): one row per TCP sender per sample, the same columns in
/// every driver (the packet simulator samples its senders, the real driver TCP_INFO).
pub fn tcp_table() -> Table {
    Table::new(
        "tcp",
        &[
            ("time_s", 'f'),
            ("flow", 'i'),
            ("cwnd", 'i'),
            ("ssthresh", 'i'),
            ("srtt_ms", 'f'),
            ("min_rtt_ms", 'f'),
            ("rto_ms", 'f'),
            ("bytes_in_flight", 'i'),
            ("delivered", 'i'),
            ("delivery_rate_bps", 'f'),
            ("pacing_rate_bps", 'f'),
            ("retransmits", 'i'),
            ("rto_count", 'i'),
            ("weight", 'f'),
            ("tcp_state", 's'),
            ("cc_state", 's'),
        ],
    )
}

/// The empty `queues` table (docs/tables.md): one row per monitored link per sample.
pub fn queues_table() -> Table {
    Table::new(
        "queues",
        &[
            ("time_s", 'f'),
            ("link", 'i'),
            ("len_pkts", 'i'),
            ("len_bytes", 'i'),
            ("sojourn_mean_ms", 'f'),
            ("dropped_pkts", 'i'),
            ("marked_pkts", 'i'),
            ("aqm_state", 'f'),
        ],
    )
}

/// The empty `web` table (docs/tables.md): one row per completed web flow.
pub fn web_table() -> Table {
    Table::new("web", &[("flow", 'i'), ("generator", 's'), ("start_s", 'f'), ("bytes", 'i'), ("fct_s", 'f')])
}

pub fn requests_table(clients: &[SessionView<'_>]) -> Table {
    let mut t = Table::new(
        "requests",
        &[
            ("client", 'i'),
            ("request", 'i'),
            ("conn", 'i'),
            ("kind", 's'),
            ("segment", 'i'),
            ("last_segment", 'i'),
            ("rung", 'i'),
            ("offset", 'i'),
            ("body_bytes", 'i'),
            ("received_bytes", 'i'),
            ("t_issue_s", 'f'),
            ("t_first_byte_s", 'f'),
            ("t_last_byte_s", 'f'),
            ("cancelled", 'i'),
        ],
    );
    let s = crate::time::secs;
    let opt = |x: Option<Ns>| x.map(s).unwrap_or(f64::NAN);
    for (ci, c) in clients.iter().enumerate().filter(|c| c.1.data_plane != "sequential") {
        for r in &c.plane_log.requests {
            t.i(0, ci as i64);
            t.i(1, r.id as i64);
            t.i(2, r.conn as i64);
            t.s(3, r.kind);
            t.i(4, r.segment as i64);
            t.i(5, r.last_segment as i64);
            t.i(6, r.rung as i64);
            t.i(7, r.offset.map(|o| o as i64).unwrap_or(-1));
            t.i(8, r.body as i64);
            t.i(9, r.received as i64);
            t.f(10, s(r.t_issue));
            t.f(11, opt(r.t_first_byte));
            t.f(12, opt(r.t_last_byte));
            t.i(13, r.cancelled as i64);
        }
    }
    t
}

/// The `segments` table: one row per downloaded (or abandoned) segment per client.
pub fn segments_table(clients: &[SessionView<'_>]) -> Table {
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
            ("lost_bytes", 'i'),
            ("extra_bytes", 'i'),
        ],
    );
    let s = crate::time::secs;
    for (ci, c) in clients.iter().enumerate() {
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
            t.i(17, l.lost_bytes as i64);
            t.i(18, l.extra_bytes as i64);
        }
    }
    t
}
