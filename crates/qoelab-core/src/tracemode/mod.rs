//! Trace mode: a chunk-level network model (no packets), as Sabre and Pensieve do it.
//!
//! A [`Schedule`] is a piecewise-constant list of periods (duration, rate, latency) that loops.
//! A download issued at `t` pays one latency first (Sabre semantics: the latency of the current
//! period, a fraction of it carried into the next period when the period ends during the wait),
//! then its bytes are integrated over the rates. [`run_trace_mode`] drives the same
//! [`Player`] and [`Abr`] code the packet simulator drives.
//!
//! The network position is a function of absolute time (`(t + offset) mod loop length`), so idle
//! periods (buffer full, ABR delays) advance the network clock as in Sabre.
//!
//! See docs/trace-mode.md for what matches Sabre and Pensieve and what does not.

use crate::abr::Abr;
use crate::player::{Player, PlayerConfig, PlayerSummary, SegmentLog};
use crate::time::{Ns, MS, NEVER, SEC};
use crate::video::Video;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One period of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Period {
    pub duration: Ns,
    pub rate_bps: u64,
    /// Time to first byte of a request issued in this period (ns).
    pub latency: Ns,
}

/// A looping piecewise-constant rate schedule. (De)serializes as its list of periods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Period>", into = "Vec<Period>")]
pub struct Schedule {
    periods: Vec<Period>,
    /// Cumulative start of each period within one loop.
    starts: Vec<Ns>,
    total: Ns,
}

impl TryFrom<Vec<Period>> for Schedule {
    type Error = String;
    fn try_from(p: Vec<Period>) -> Result<Schedule, String> {
        Schedule::new(p)
    }
}

impl From<Schedule> for Vec<Period> {
    fn from(s: Schedule) -> Vec<Period> {
        s.periods
    }
}

/// Sabre's network JSON entry: `{"duration_ms": .., "bandwidth_kbps": .., "latency_ms": ..}`.
#[derive(Clone, Copy, Debug, Deserialize)]
struct SabrePeriod {
    duration_ms: f64,
    bandwidth_kbps: f64,
    latency_ms: f64,
}

impl Schedule {
    /// A schedule; errors name the offending period. At least one period must have a positive
    /// duration and rate, and every period a positive duration.
    pub fn new(periods: Vec<Period>) -> Result<Schedule, String> {
        if periods.is_empty() {
            return Err("schedule: expected at least one period".into());
        }
        let mut starts = Vec::with_capacity(periods.len());
        let mut total: Ns = 0;
        for (i, p) in periods.iter().enumerate() {
            if p.duration == 0 {
                return Err(format!("schedule[{i}].duration: expected > 0"));
            }
            starts.push(total);
            total = total.checked_add(p.duration).ok_or("schedule: total duration overflows")?;
        }
        if periods.iter().all(|p| p.rate_bps == 0) {
            return Err("schedule: every period has rate 0; nothing could ever be downloaded".into());
        }
        Ok(Schedule { periods, starts, total })
    }

    /// A constant rate with a constant latency.
    pub fn constant(rate_bps: u64, latency: Ns) -> Schedule {
        Schedule::new(vec![Period { duration: 3600 * SEC, rate_bps, latency }]).expect("valid constant schedule")
    }

    /// Parse Sabre's network JSON (a list of `{duration_ms, bandwidth_kbps, latency_ms}`), with
    /// Sabre's `-nm` bandwidth multiplier.
    pub fn from_sabre_json(text: &str, multiplier: f64) -> Result<Schedule, String> {
        let v: Vec<SabrePeriod> = serde_json::from_str(text)
            .map_err(|e| format!("network JSON: line {} column {}: {e}", e.line(), e.column()))?;
        let periods = v
            .iter()
            .map(|p| Period {
                duration: (p.duration_ms * MS as f64).round() as Ns,
                rate_bps: (p.bandwidth_kbps * multiplier * 1000.0).round() as u64,
                latency: (p.latency_ms * MS as f64).round() as Ns,
            })
            .collect();
        Schedule::new(periods)
    }

    /// From Pensieve's cooked samples `(time_s, Mbit/s)`: the rate of sample i holds over
    /// (t[i-1], t[i]] (Pensieve integrates the interval ending at a sample with that sample's
    /// rate); the first sample only marks the origin. Latency 0 (Pensieve adds its RTT separately,
    /// see [`TraceOpts::pensieve`]).
    pub fn from_pensieve_samples(samples: &[(f64, f64)]) -> Result<Schedule, String> {
        if samples.len() < 2 {
            return Err("trace: expected at least two samples".into());
        }
        let mut periods = Vec::new();
        for (i, w) in samples.windows(2).enumerate() {
            let d = ((w[1].0 - w[0].0) * SEC as f64).round();
            if d <= 0.0 {
                return Err(format!("trace line {}: time does not increase", i + 2));
            }
            periods.push(Period { duration: d as Ns, rate_bps: (w[1].1 * 1e6).round() as u64, latency: 0 });
        }
        Schedule::new(periods)
    }

    pub fn periods(&self) -> &[Period] {
        &self.periods
    }
    /// Length of one loop (ns).
    pub fn loop_len(&self) -> Ns {
        self.total
    }

    /// (period index, ns left in it) at absolute time `t`.
    fn locate(&self, t: Ns) -> (usize, Ns) {
        let off = t % self.total;
        let i = self.starts.partition_point(|&s| s <= off) - 1;
        let end = self.starts[i] + self.periods[i].duration;
        (i, end - off)
    }

    /// Time (ns) of the latency wait of a request issued at `t`, Sabre semantics: one latency
    /// unit; while the current period has latency L and `left` ns remain in it, a fraction
    /// `left / L` of the unit is paid there and the rest carries into the next period.
    pub fn latency_from(&self, t: Ns) -> Ns {
        const UNIT: u128 = 1_000_000_000_000; // the unit in parts per 1e12
        let mut frac = UNIT;
        let mut now = t;
        let mut guard = 0usize;
        loop {
            let (i, left) = self.locate(now);
            let lat = self.periods[i].latency as u128;
            let need = (frac * lat).div_ceil(UNIT);
            if need <= left as u128 {
                now += need as Ns;
                return now - t;
            }
            now += left;
            frac -= (left as u128 * UNIT) / lat;
            guard += 1;
            if guard > 10 * self.periods.len() + 1_000_000 {
                return now - t;
            }
        }
    }

    /// Payload units (bit-ns x 1e6, see [`Schedule::transfer_end`]) one loop of the schedule
    /// carries at `fraction_ppm`.
    fn loop_units(&self, fraction_ppm: u64) -> u128 {
        self.periods.iter().map(|p| p.rate_bps as u128 * fraction_ppm as u128 * p.duration as u128).sum()
    }

    /// The instant the last of `bytes` arrives when the transfer starts at `t0` at the schedule's
    /// rates times `fraction_ppm / 1e6` (1e6 = the full rate). [`NEVER`] if beyond the clock's
    /// range. Whole loops of the schedule are skipped arithmetically, so a transfer spanning
    /// many loops (a tiny rate, a short trace) costs one pass over the periods.
    pub fn transfer_end(&self, t0: Ns, bytes: u64, fraction_ppm: u64) -> Ns {
        // Work in bit-ns * 1e6: each ns at rate r (bit/s) carries r * ppm units of 1e-15 bit.
        let mut need: u128 = bytes as u128 * 8 * SEC as u128 * 1_000_000;
        let mut now = t0 as u128;
        if need == 0 {
            return t0;
        }
        if fraction_ppm == 0 {
            return NEVER;
        }
        let per_loop = self.loop_units(fraction_ppm);
        if per_loop > 0 && need > 2 * per_loop {
            let k = need / per_loop - 1;
            now += k * self.total as u128;
            need -= k * per_loop;
        }
        loop {
            if now >= NEVER as u128 {
                return NEVER;
            }
            let (i, left) = self.locate(now as Ns);
            let r = self.periods[i].rate_bps as u128 * fraction_ppm as u128;
            if r > 0 {
                let cap = r * left as u128;
                if need <= cap {
                    return (now + need.div_ceil(r)).min(NEVER as u128) as Ns;
                }
                need -= cap;
            }
            now += left as u128;
        }
    }

    /// Payload units delivered between `t0` and `t1` (exact; additive over adjacent intervals).
    fn units_between(&self, t0: Ns, t1: Ns, fraction_ppm: u64) -> u128 {
        let mut units: u128 = 0;
        let mut now = t0;
        while now < t1 {
            let (i, left) = self.locate(now);
            let d = left.min(t1 - now);
            units += self.periods[i].rate_bps as u128 * fraction_ppm as u128 * d as u128;
            now += d;
        }
        units
    }

    /// Bytes delivered between `t0` and `t1` (floor), at the rates times `fraction_ppm / 1e6`.
    pub fn bytes_between(&self, t0: Ns, t1: Ns, fraction_ppm: u64) -> u64 {
        (self.units_between(t0, t1, fraction_ppm) / UNITS_PER_BYTE) as u64
    }
}

/// Payload units (bit-ns x 1e6) per byte.
const UNITS_PER_BYTE: u128 = 8 * SEC as u128 * 1_000_000;

/// Options of the trace-mode driver (missing fields take the Sabre values when deserialized).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceOpts {
    /// Share of the rate that carries payload, in ppm (1_000_000 = all: Sabre; 950_000: Pensieve's
    /// PACKET_PAYLOAD_PORTION 0.95).
    pub payload_ppm: u64,
    /// Extra fixed delay before the first byte of every request, on top of the period latency
    /// (0: Sabre; 80 ms: Pensieve's LINK_RTT).
    pub extra_rtt: Ns,
    /// Report progress to the player (and so to the ABR's abandonment rule) every this often
    /// while bytes flow (Sabre checks every 50 ms); None = only first and last byte.
    pub progress_interval: Option<Ns>,
    /// The session (and the player's media clock) starts at this absolute time; the schedule is
    /// read at absolute time, so a non-zero start enters the schedule mid-way.
    pub start: Ns,
    /// The run ends at this absolute time: a session still playing then is cut there (a
    /// download in progress keeps the bytes received so far) and reported as it stands, like a
    /// packet-level run that ends before the video does. Not an error.
    pub max_time: Ns,
}

impl Default for TraceOpts {
    fn default() -> Self {
        TraceOpts::sabre()
    }
}

impl TraceOpts {
    /// Sabre's model: full rate, period latency only, progress every 50 ms.
    pub fn sabre() -> TraceOpts {
        TraceOpts {
            payload_ppm: 1_000_000,
            extra_rtt: 0,
            progress_interval: Some(50 * MS),
            start: 0,
            max_time: 48 * 3600 * SEC,
        }
    }
    /// Pensieve's model: 95% payload, 80 ms RTT per chunk, no intra-chunk progress.
    pub fn pensieve() -> TraceOpts {
        TraceOpts {
            payload_ppm: 950_000,
            extra_rtt: 80 * MS,
            progress_interval: None,
            start: 0,
            max_time: 48 * 3600 * SEC,
        }
    }
}

/// What a trace-mode run returns.
#[derive(Clone, Debug, Serialize)]
pub struct TraceModeResult {
    pub log: Vec<SegmentLog>,
    pub summary: PlayerSummary,
    /// Absolute time playback ended (or the run stopped).
    pub end: Ns,
    /// Body bytes received, abandoned downloads included.
    pub bytes: u64,
    /// `check_invariants()` of the player, plus driver errors (timeout, stuck).
    pub error: Option<String>,
}

/// Run one player over a schedule, no packets. Deterministic.
pub fn run_trace_mode(
    video: Arc<Video>,
    abr: Box<dyn Abr>,
    player_cfg: PlayerConfig,
    schedule: &Schedule,
    opts: &TraceOpts,
) -> TraceModeResult {
    let mut p = Player::new(player_cfg, video, abr, opts.start);
    let mut t = opts.start;
    let mut error = None;
    if opts.payload_ppm == 0 {
        error = Some("trace mode: payload_ppm: expected > 0".to_string());
    }
    let mut bytes_total = 0u64;
    let end = opts.max_time;
    while error.is_none() && !p.is_done() && t < end {
        if let Some(req) = p.poll(t) {
            let t_first = t
                .saturating_add(opts.extra_rtt)
                .saturating_add(schedule.latency_from(t.saturating_add(opts.extra_rtt)));
            if t_first >= end {
                t = end; // cut while waiting for the first byte
                break;
            }
            let t_last = schedule.transfer_end(t_first, req.bytes, opts.payload_ppm);
            p.on_first_byte(t_first);
            let mut abandoned = false;
            // Bytes are integrated incrementally from the previous progress point (exact).
            let mut units: u128 = 0;
            let mut prev = t_first;
            let got_by = |units: u128| ((units / UNITS_PER_BYTE) as u64).min(req.bytes);
            if let Some(step) = opts.progress_interval.filter(|s| *s > 0) {
                let mut tp = t_first.saturating_add(step);
                while tp < t_last && tp < end {
                    units += schedule.units_between(prev, tp, opts.payload_ppm);
                    prev = tp;
                    if let Some(a) = p.on_bytes(tp, got_by(units)) {
                        bytes_total += a.bytes_received;
                        t = tp;
                        abandoned = true;
                        break;
                    }
                    tp = tp.saturating_add(step);
                }
            }
            if abandoned {
                continue;
            }
            if t_last > end {
                // Cut mid-download: report what arrived by the end.
                units += schedule.units_between(prev, end, opts.payload_ppm);
                let got = got_by(units);
                match p.on_bytes(end, got) {
                    Some(a) => bytes_total += a.bytes_received,
                    None => bytes_total += got,
                }
                t = end;
                break;
            }
            p.on_bytes(t_last, req.bytes);
            p.on_complete(t_last);
            bytes_total += req.bytes;
            t = t_last;
            continue;
        }
        let next = p.poll_at();
        if next == NEVER {
            error = Some(format!("trace mode: player stuck at {t} (no request, no wake-up)"));
            break;
        }
        if next <= t {
            // poll(t) just returned nothing although a request is due: a player bug.
            error = Some(format!("trace mode: player asks to be polled at {next} but issues nothing"));
            break;
        }
        t = next.min(end);
        p.advance(t);
    }
    if error.is_none() && !p.is_done() && t < end {
        t = end;
    }
    if error.is_none() && !p.is_done() {
        p.advance(t);
    }
    if let Err(e) = p.check_invariants() {
        error = Some(error.map_or(e.clone(), |x| format!("{x}; {e}")));
    }
    let summary = p.summary();
    TraceModeResult { log: p.log().to_vec(), end: summary.now, summary, bytes: bytes_total, error }
}

#[cfg(test)]
mod tests;
