//! Video, QoE and fairness metrics: pure functions over per-segment logs, rate samples and
//! packet logs. Nothing here depends on the engine, so the same functions score simulated runs,
//! trace-mode runs and (later) real-network runs.
//!
//! Definitions and their sources are in docs/metrics.md:
//! * per-chunk QoE, Minerva Eq. 1: `P(c_k) - beta R_k - gamma |P(c_k) - P(c_k-1)|`;
//! * the HAS-over-AQM testbed (Livi et al.): RBR, ARB, INS, QU, LU, RTTi, loss phases;
//! * Chunklets (Kua et al.): the weighted instability index (k = 10, w(d) = k - d) and the
//!   smoothed achieved rate over 3 chunks;
//! * Sprint: percent of fair share, FESTIVE unfairness `sqrt(1 - JFI)`.

pub mod histogram;
pub mod lossphase;

use crate::player::{PlayerSummary, SegmentLog};
use crate::time::{secs, Ns};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Small helpers over vectors
// ---------------------------------------------------------------------------------------------

/// Arithmetic mean (0 for an empty slice).
pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// Jain's fairness index `(sum x)^2 / (n sum x^2)` over any non-negative vector; 1 for an empty
/// or all-zero vector (nobody is treated differently).
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * s2)
    }
}

/// FESTIVE's unfairness `sqrt(1 - JFI)` (as used by Sprint, Table I); 0 = perfectly fair.
pub fn festive_unfairness(x: &[f64]) -> f64 {
    (1.0 - jain(x)).max(0.0).sqrt()
}

/// Max-min fairness objective: the worst (minimum) value (e.g. the worst client's QoE).
/// `None` for an empty slice.
pub fn min_value(x: &[f64]) -> Option<f64> {
    x.iter().copied().reduce(f64::min)
}

/// Spread `max - min` (the testbed's unfairness form; 0 for fewer than two values).
pub fn spread(x: &[f64]) -> f64 {
    match (x.iter().copied().reduce(f64::max), x.iter().copied().reduce(f64::min)) {
        (Some(a), Some(b)) => a - b,
        _ => 0.0,
    }
}

/// Sprint's percent of fair share: `100 * flow / (total / n_flows)`; the fair share is the total
/// throughput of all flows divided by their number.
pub fn percent_fair_share(flow_bps: f64, total_bps: f64, n_flows: usize) -> f64 {
    if total_bps <= 0.0 || n_flows == 0 {
        return 0.0;
    }
    100.0 * flow_bps / (total_bps / n_flows as f64)
}

/// Time average of a step function given as `(t, value)` samples (each value holds until the
/// next sample; the last until `end`). Samples must be time-ordered; before the first sample
/// nothing is counted.
pub fn time_average(samples: &[(Ns, f64)], end: Ns) -> f64 {
    let mut acc = 0.0;
    let mut span: Ns = 0;
    for (i, &(t, v)) in samples.iter().enumerate() {
        let until = samples.get(i + 1).map_or(end, |s| s.0).min(end);
        let d = until.saturating_sub(t);
        acc += v * d as f64;
        span += d;
    }
    if span == 0 {
        samples.last().map_or(0.0, |s| s.1)
    } else {
        acc / span as f64
    }
}

/// Link utilization (testbed LU): delivered bits per polling interval (10 ms in the testbed)
/// averaged and normalized by the capacity (per-client bandwidth x clients). A fraction (1 = full).
pub fn link_utilization(bytes_per_interval: &[u64], interval: Ns, capacity_bps: u64) -> f64 {
    if bytes_per_interval.is_empty() || interval == 0 || capacity_bps == 0 {
        return 0.0;
    }
    let rates: Vec<f64> = bytes_per_interval.iter().map(|b| *b as f64 * 8.0 / secs(interval)).collect();
    mean(&rates) / capacity_bps as f64
}

/// RTT inflation (testbed RTTi): time average of the RTT samples `(t, rtt)` until `end`, divided
/// by the round-trip propagation delay, in percent (100 = no queueing).
pub fn rtt_inflation_pct(samples: &[(Ns, Ns)], end: Ns, rtd: Ns) -> f64 {
    if rtd == 0 {
        return 0.0;
    }
    let s: Vec<(Ns, f64)> = samples.iter().map(|&(t, r)| (t, r as f64)).collect();
    100.0 * time_average(&s, end) / rtd as f64
}

// ---------------------------------------------------------------------------------------------
// Per-segment sequences
// ---------------------------------------------------------------------------------------------

/// The segments actually played: the completed (non-abandoned) log lines, in order.
pub fn played(log: &[SegmentLog]) -> Vec<&SegmentLog> {
    log.iter().filter(|l| !l.abandoned).collect()
}

/// Number of rung changes between consecutive played segments.
pub fn switches(rungs: &[usize]) -> usize {
    rungs.windows(2).filter(|w| w[0] != w[1]).count()
}

/// Testbed instability INS (%): bitrate switches / number of segments x 100.
pub fn instability_pct(rungs: &[usize]) -> f64 {
    if rungs.is_empty() {
        0.0
    } else {
        100.0 * switches(rungs) as f64 / rungs.len() as f64
    }
}

/// Chunklets' weighted instability index over a sliding window of `k` chunks (k = 10 in the
/// paper), w(d) = k - d:
/// `sum_{d=0}^{k-1} |b_{t-d} - b_{t-d-1}| w(d) / sum_{d=1}^{k} b_{t-d} w(d)`,
/// one value per `t` from `k` to `n - 1` (each window needs `b_{t-k}`), sliding by one.
/// `b` is the per-chunk bitrate (or level value; it must not be all 0 in a window).
pub fn instability_index(b: &[f64], k: usize) -> Vec<f64> {
    if k == 0 || b.len() <= k {
        return Vec::new();
    }
    (k..b.len())
        .map(|t| {
            let w = |d: usize| (k - d) as f64;
            let num: f64 = (0..k).map(|d| (b[t - d] - b[t - d - 1]).abs() * w(d)).sum();
            let den: f64 = (1..=k).map(|d| b[t - d] * w(d)).sum();
            if den == 0.0 {
                0.0
            } else {
                num / den
            }
        })
        .collect()
}

/// Chunklets' instability index on encoding levels (Kua & Armitage, sec. III-C): the levels are
/// 1-based (rung 0 -> level 1, as the paper's Table I numbers them 1..20), k = 10, w(d) = k - d,
/// not clamped (alternating levels 1 and 20 gives about 2.2), one value per chunk once 11 chunks
/// exist. [`instability_index`] with `b = rung + 1`; 1-based levels keep the denominator positive
/// when a client sits at the lowest rung.
pub fn instability_index_levels(rungs: &[usize]) -> Vec<f64> {
    let levels: Vec<f64> = rungs.iter().map(|r| (*r + 1) as f64).collect();
    instability_index(&levels, 10)
}

/// Per-chunk achieved rate (bit/s): bytes over first-to-last-byte time (Chunklets' AR: payload
/// over the time taken to transfer the chunk's packets).
pub fn achieved_rates(log: &[SegmentLog]) -> Vec<f64> {
    played(log).iter().map(|l| l.tput_first_byte_bps).collect()
}

/// Chunklets' smoothed achieved rate: the mean of the last `w` ARs (w = 3), one value per chunk
/// (fewer than `w` at the start: the mean of those available).
pub fn smoothed(ar: &[f64], w: usize) -> Vec<f64> {
    let w = w.max(1);
    (0..ar.len()).map(|i| mean(&ar[(i + 1).saturating_sub(w)..=i])).collect()
}

/// Testbed quality level (%): rungs numbered from 0, mapped to a percentage as
/// mean(rung) / n_rungs x 100 (the testbed's pylibs/log.py convention; the top rung of an
/// 8-rung ladder is 87.5%).
pub fn quality_level_pct(rungs: &[usize], n_rungs: usize) -> f64 {
    if rungs.is_empty() || n_rungs == 0 {
        return 0.0;
    }
    100.0 * mean(&rungs.iter().map(|r| *r as f64).collect::<Vec<_>>()) / n_rungs as f64
}

/// Testbed quality unfairness QU: the absolute difference of the clients' quality levels (%);
/// for more than two clients, max - min.
pub fn quality_unfairness(levels_pct: &[f64]) -> f64 {
    spread(levels_pct)
}

// ---------------------------------------------------------------------------------------------
// QoE (Minerva Eq. 1)
// ---------------------------------------------------------------------------------------------

/// What P(c) is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Pq {
    /// The nominal bitrate in Mbit/s.
    BitrateMbps,
    /// The logged quality (the player's quality metric: VMAF, SSIM...); errors if missing.
    Quality,
}

/// QoE parameters. Defaults: beta = 25 per second of rebuffering, gamma = 2.5 (Minerva's),
/// P = the bitrate in Mbit/s, startup not counted as rebuffering.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QoeParams {
    pub beta: f64,
    pub gamma: f64,
    pub pq: Pq,
    /// Count the startup delay as R_0 (the first chunk's rebuffering), as Pensieve's reward does.
    pub startup_as_rebuffer: bool,
}

impl Default for QoeParams {
    fn default() -> Self {
        QoeParams { beta: 25.0, gamma: 2.5, pq: Pq::BitrateMbps, startup_as_rebuffer: false }
    }
}

/// Per-chunk QoE from the sequences P(c_k) and R_k (seconds):
/// `P(c_k) - beta R_k - gamma |P(c_k) - P(c_{k-1})|`, no smoothness term for the first chunk.
pub fn qoe_chunks(p: &[f64], rebuf_s: &[f64], beta: f64, gamma: f64) -> Vec<f64> {
    assert_eq!(p.len(), rebuf_s.len(), "one rebuffering time per chunk");
    (0..p.len())
        .map(|k| {
            let smooth = if k == 0 { 0.0 } else { (p[k] - p[k - 1]).abs() };
            p[k] - beta * rebuf_s[k] - gamma * smooth
        })
        .collect()
}

/// P(c_k) of the played segments.
pub fn pq_values(log: &[SegmentLog], pq: Pq) -> Result<Vec<f64>, String> {
    played(log)
        .iter()
        .map(|l| match pq {
            Pq::BitrateMbps => Ok(l.bitrate_bps as f64 / 1e6),
            Pq::Quality => l.quality.ok_or_else(|| format!("qoe: segment {} has no quality value", l.segment)),
        })
        .collect()
}

/// Per-chunk QoE of one client's log (R_k = the stall logged for segment k, in seconds; plus the
/// startup delay for k = 0 if `startup_as_rebuffer`).
pub fn qoe_per_chunk(log: &[SegmentLog], startup: Ns, prm: &QoeParams) -> Result<Vec<f64>, String> {
    let p = pq_values(log, prm.pq)?;
    let mut r: Vec<f64> = played(log).iter().map(|l| secs(l.stall)).collect();
    if prm.startup_as_rebuffer {
        if let Some(r0) = r.first_mut() {
            *r0 += secs(startup);
        }
    }
    Ok(qoe_chunks(&p, &r, prm.beta, prm.gamma))
}

// ---------------------------------------------------------------------------------------------
// Per client and across clients
// ---------------------------------------------------------------------------------------------

/// Everything per client (summary.json row).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientMetrics {
    pub segments: usize,
    pub abandoned: usize,
    pub bytes: u64,
    pub avg_bitrate_bps: f64,
    /// Mean logged quality of the played segments (None without a quality table).
    pub avg_quality: Option<f64>,
    /// Testbed quality level (%), mean(rung)/n_rungs x 100.
    pub quality_level_pct: f64,
    pub startup_s: f64,
    pub rebuffer_s: f64,
    pub stall_count: u32,
    /// Stalled / (played + stalled).
    pub rebuffer_ratio: f64,
    /// Testbed RBR: (stalled + startup) / (played + stalled + startup).
    pub rebuffer_ratio_with_startup: f64,
    pub switches: usize,
    /// Testbed INS (%).
    pub instability_pct: f64,
    /// Chunklets' index (k = 10) over bitrates: mean and max over the windows (0 if too short).
    pub instability_index_mean: f64,
    pub instability_index_max: f64,
    pub qoe_mean: f64,
    pub qoe_total: f64,
    /// Mean achieved rate (first-to-last byte), bit/s, and the last 3-chunk smoothed value.
    pub achieved_rate_mean_bps: f64,
    pub smoothed_ar_last_bps: f64,
    /// Bytes of all downloads over the elapsed session time (bit/s): the client's goodput.
    pub goodput_bps: f64,
}

impl ClientMetrics {
    /// Compute from a player's log and summary. Errors if P = quality and a value is missing.
    pub fn compute(
        log: &[SegmentLog],
        s: &PlayerSummary,
        n_rungs: usize,
        prm: &QoeParams,
    ) -> Result<ClientMetrics, String> {
        let pl = played(log);
        let rungs: Vec<usize> = pl.iter().map(|l| l.rung).collect();
        let rates: Vec<f64> = pl.iter().map(|l| l.bitrate_bps as f64).collect();
        let q: Vec<f64> = pl.iter().filter_map(|l| l.quality).collect();
        let qoe = qoe_per_chunk(log, s.startup, prm)?;
        let ii = instability_index(&rates, 10);
        let ar = achieved_rates(log);
        let sa = smoothed(&ar, 3);
        let session = s.startup + s.played + s.stalled;
        let ratio = |a: Ns, b: Ns| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        Ok(ClientMetrics {
            segments: pl.len(),
            abandoned: log.len() - pl.len(),
            bytes: s.bytes,
            avg_bitrate_bps: mean(&rates),
            avg_quality: if q.len() == pl.len() && !q.is_empty() { Some(mean(&q)) } else { None },
            quality_level_pct: quality_level_pct(&rungs, n_rungs),
            startup_s: secs(s.startup),
            rebuffer_s: secs(s.stalled),
            stall_count: s.stall_count,
            rebuffer_ratio: ratio(s.stalled, s.played + s.stalled),
            rebuffer_ratio_with_startup: ratio(s.stalled + s.startup, session),
            switches: switches(&rungs),
            instability_pct: instability_pct(&rungs),
            instability_index_mean: mean(&ii),
            instability_index_max: ii.iter().copied().fold(0.0, f64::max),
            qoe_mean: mean(&qoe),
            // + 0.0: the sum of no chunk is -0.0 in Rust; a client with no segment reports 0
            qoe_total: qoe.iter().sum::<f64>() + 0.0,
            achieved_rate_mean_bps: mean(&ar),
            smoothed_ar_last_bps: sa.last().copied().unwrap_or(0.0),
            goodput_bps: if session == 0 { 0.0 } else { s.bytes as f64 * 8.0 / secs(session) },
        })
    }
}

/// Across clients (summary.json).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FairnessMetrics {
    pub clients: usize,
    /// Jain's index over the clients' goodputs and over their mean QoE.
    pub jfi_goodput: f64,
    pub jfi_qoe: f64,
    /// sqrt(1 - JFI) over goodputs.
    pub festive_unfairness: f64,
    /// Testbed QU (max - min quality level, %).
    pub quality_unfairness_pct: f64,
    /// Testbed bitrate unfairness: max - min average bitrate (bit/s).
    pub bitrate_unfairness_bps: f64,
    /// Max-min QoE: the worst client's mean QoE, and the max - min spread.
    pub min_qoe: f64,
    pub qoe_spread: f64,
}

impl FairnessMetrics {
    pub fn compute(c: &[ClientMetrics]) -> FairnessMetrics {
        let g: Vec<f64> = c.iter().map(|m| m.goodput_bps).collect();
        let q: Vec<f64> = c.iter().map(|m| m.qoe_mean).collect();
        let ql: Vec<f64> = c.iter().map(|m| m.quality_level_pct).collect();
        let br: Vec<f64> = c.iter().map(|m| m.avg_bitrate_bps).collect();
        FairnessMetrics {
            clients: c.len(),
            jfi_goodput: jain(&g),
            // JFI assumes non-negative values; QoE can be negative, so it is shifted by the minimum
            // when any value is negative (documented).
            jfi_qoe: {
                let lo = min_value(&q).unwrap_or(0.0);
                if lo < 0.0 {
                    jain(&q.iter().map(|v| v - lo).collect::<Vec<_>>())
                } else {
                    jain(&q)
                }
            },
            festive_unfairness: festive_unfairness(&g),
            quality_unfairness_pct: quality_unfairness(&ql),
            bitrate_unfairness_bps: spread(&br),
            min_qoe: min_value(&q).unwrap_or(0.0),
            qoe_spread: spread(&q),
        }
    }
}

#[cfg(test)]
mod tests;
