//! DOCSIS-PIE (RFC 8034): PIE as required in DOCSIS 3.1 cable modems — 16-ms updates, an
//! extended auto-tuning ladder (drop_prob is per MEAN_PKTSIZE and may exceed 1), drop
//! probability scaled by packet size, mandatory de-randomisation, LATENCY_LOW decay and
//! LATENCY_HIGH boost, and the INACTIVE / ACTIVE / QUIESCENT state machine that grants the burst
//! allowance. Queue delay = backlog / link rate (see docs: simplification of the token-bucket
//! estimate).

use super::pie::{autotune_divisor, derandomized_drop, pi_step, PeriodicUpdate};
use super::util::{Fifo, Limits};
use super::Item;
use super::{AqmBuildCtx, AqmEntry, DropReason, DropSink, QueueDiscipline};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::rng::Rng;
use crate::time::{Ns, MS, SEC};

pub use super::pie::{PROB_HIGH, PROB_LOW};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "target",
        unit: Unit::Duration,
        default: Default::Int(10 * MS as i64),
        doc: "LATENCY_TARGET (RFC 8034: 10 ms)",
    },
    ParamSpec {
        name: "alpha",
        unit: Unit::Float,
        default: Default::Float(0.25),
        doc: "gain on (qdelay - target), 1/s (RFC 8034: 0.25)",
    },
    ParamSpec {
        name: "beta",
        unit: Unit::Float,
        default: Default::Float(2.5),
        doc: "gain on (qdelay - qdelay_old), 1/s (RFC 8034: 2.5)",
    },
    ParamSpec {
        name: "tupdate",
        unit: Unit::Duration,
        default: Default::Int(16 * MS as i64),
        doc: "drop-probability update INTERVAL (RFC 8034: 16 ms)",
    },
    ParamSpec {
        name: "max_burst",
        unit: Unit::Duration,
        default: Default::Int(142 * MS as i64),
        doc: "MAX_BURST (RFC 8034: 142 ms)",
    },
    ParamSpec {
        name: "burst_reset_timeout",
        unit: Unit::Duration,
        default: Default::Int(SEC as i64),
        doc: "quiet time in QUIESCENT before returning to INACTIVE, i.e. before a new burst allowance (RFC 8034: 1 s)",
    },
    ParamSpec {
        name: "mean_pktsize",
        unit: Unit::Bytes,
        default: Default::Int(1024),
        doc: "MEAN_PKTSIZE: drop_prob is per packet of this size (RFC 8034: 1024 B)",
    },
    ParamSpec {
        name: "min_pktsize",
        unit: Unit::Bytes,
        default: Default::Int(64),
        doc: "MIN_PKTSIZE: smaller packets are scaled as this size (RFC 8034: 64 B)",
    },
    ParamSpec {
        name: "latency_low",
        unit: Unit::Duration,
        default: Default::Int(5 * MS as i64),
        doc: "both delays below: drop_prob x 0.98 (RFC 8034: 5 ms)",
    },
    ParamSpec {
        name: "latency_high",
        unit: Unit::Duration,
        default: Default::Int(200 * MS as i64),
        doc: "delay above: drop_prob + 0.02 (RFC 8034: 200 ms)",
    },
    ParamSpec {
        name: "rate",
        unit: Unit::Rate,
        default: Default::Context("link rate; 0 (trace links) = per-packet timestamps"),
        doc: "drain rate for the queue-delay estimate backlog / rate",
    },
    ParamSpec {
        name: "limit",
        unit: Unit::Packets,
        default: Default::Context("link buffer in packets, else 1000"),
        doc: "maximum packets queued (0 = none)",
    },
    super::util::LIMIT_BYTES,
];

pub const DOCSIS_PIE: AqmEntry = AqmEntry {
    name: "docsis-pie",
    summary: "DOCSIS 3.1 PIE (packet-size-scaled, de-randomised PIE)",
    reference: "RFC 8034",
    params: PARAMS,
    build,
};

/// RFC 8034 auto-tuning factor (multiplier) at drop probability `p`: below 1 the RFC 8033
/// ladder (1 / [`autotune_divisor`], exact as the divisors are powers of 2), extended upwards
/// because a DOCSIS drop_prob (per MEAN_PKTSIZE packet) may exceed 1.
pub fn docsis_factor(p: f64) -> f64 {
    if p < 1.0 {
        1.0 / autotune_divisor(p)
    } else if p < 10.0 {
        2.0
    } else if p < 100.0 {
        8.0
    } else {
        32.0
    }
}

/// RFC 8034 AQM state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// No early drops until the queue reaches BUFFER/3; then ACTIVE with a fresh burst allowance.
    Inactive,
    Active,
    /// Quiet (both delays < target/2, drop_prob 0, no allowance left); a drop returns to ACTIVE,
    /// `burst_reset_timeout` of quiet returns to INACTIVE.
    Quiescent,
}

pub struct DocsisPie {
    state: State,
    /// BUFFER: the queue's byte capacity (byte limit, or packet limit x 1500 B).
    buffer_bytes: u64,
    fifo: Fifo,
    lim: Limits,
    target: Ns,
    alpha: f64,
    beta: f64,
    tupdate: Ns,
    max_burst: Ns,
    burst_reset_timeout: Ns,
    mean_pktsize: f64,
    min_pktsize: u64,
    latency_low: Ns,
    latency_high: Ns,
    rate_bps: u64,
    rng: Rng,
    drop_prob: f64,
    qdelay_old: Ns,
    burst_allowance: Ns,
    burst_reset: Ns,
    accu_prob: f64,
    last_sojourn: Ns,
    next_update: Ns,
}

fn build(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    Ok(Box::new(from_params(p, ctx)?))
}

fn from_params(p: &Params, ctx: &AqmBuildCtx) -> Result<DocsisPie, ParamError> {
    let tupdate = p.req_u64(PARAMS, "tupdate")?;
    // A sub-millisecond update interval is outside every spec and would flood the run with
    // timer events (1 ns: one per nanosecond).
    if tupdate < 100 * crate::time::US {
        return Err(perr("tupdate", "expected >= 100us (RFC 8033: 15 ms, RFC 8034: 16 ms)"));
    }
    let mean = p.req_u64(PARAMS, "mean_pktsize")?;
    let minp = p.req_u64(PARAMS, "min_pktsize")?;
    if mean == 0 || minp == 0 {
        return Err(perr("mean_pktsize", "packet sizes must be > 0"));
    }
    let lim = Limits::resolve(p.u64(PARAMS, "limit")?, p.u64(PARAMS, "limit_bytes")?, ctx, 1000);
    let max_burst = p.req_u64(PARAMS, "max_burst")?;
    let buffer_bytes = lim.bytes.min(lim.pkts.saturating_mul(crate::packet::MTU as u64));
    Ok(DocsisPie {
        state: State::Inactive,
        buffer_bytes,
        fifo: Fifo::default(),
        lim,
        target: p.req_u64(PARAMS, "target")?,
        alpha: p.f64(PARAMS, "alpha")?,
        beta: p.f64(PARAMS, "beta")?,
        tupdate,
        max_burst,
        burst_reset_timeout: p.req_u64(PARAMS, "burst_reset_timeout")?,
        mean_pktsize: mean as f64,
        min_pktsize: minp,
        latency_low: p.req_u64(PARAMS, "latency_low")?,
        latency_high: p.req_u64(PARAMS, "latency_high")?,
        rate_bps: p.u64(PARAMS, "rate")?.unwrap_or(ctx.link_rate_bps),
        rng: Rng::from_seed(ctx.seed),
        drop_prob: 0.0,
        qdelay_old: 0,
        burst_allowance: 0,
        burst_reset: 0,
        accu_prob: 0.0,
        last_sojourn: 0,
        next_update: tupdate,
    })
}

impl PeriodicUpdate for DocsisPie {
    fn period(&self) -> Ns {
        self.tupdate
    }
    fn next_update_mut(&mut self) -> &mut Ns {
        &mut self.next_update
    }

    fn update(&mut self) {
        let cur = self.qdelay();
        if self.burst_allowance > 0 {
            // Burst protection: no drops, no controller update.
            self.drop_prob = 0.0;
            self.burst_allowance = self.burst_allowance.saturating_sub(self.tupdate);
        } else {
            let scale = docsis_factor(self.drop_prob);
            self.drop_prob += pi_step(self.alpha, self.beta, cur, self.target, self.qdelay_old, self.drop_prob, scale);
            if cur < self.latency_low && self.qdelay_old < self.latency_low {
                self.drop_prob *= 0.98;
            } else if cur > self.latency_high {
                self.drop_prob += 0.02;
            }
            self.drop_prob = self.drop_prob.clamp(0.0, self.prob_max());
        }
        let quiet = cur < self.target / 2
            && self.qdelay_old < self.target / 2
            && self.drop_prob == 0.0
            && self.burst_allowance == 0;
        match self.state {
            State::Active if quiet => {
                self.state = State::Quiescent;
                self.burst_reset = 0;
            }
            State::Quiescent => {
                if quiet {
                    self.burst_reset += self.tupdate;
                    if self.burst_reset > self.burst_reset_timeout {
                        self.state = State::Inactive;
                        self.burst_reset = 0;
                    }
                } else {
                    self.burst_reset = 0;
                }
            }
            _ => {}
        }
        self.qdelay_old = cur;
    }

    /// True when an update would leave the state unchanged (INACTIVE, empty queue, drop_prob 0,
    /// previous delay 0, no allowance): no timer needed, skipped updates are no-ops.
    fn quiet_fixed_point(&self) -> bool {
        self.state == State::Inactive
            && self.fifo.q.is_empty()
            && self.drop_prob == 0.0
            && self.qdelay_old == 0
            && self.burst_allowance == 0
    }
}

impl DocsisPie {
    /// Upper bound of drop_prob: a MIN_PKTSIZE packet's probability stays <= PROB_LOW.
    fn prob_max(&self) -> f64 {
        PROB_LOW * self.mean_pktsize / self.min_pktsize as f64
    }

    fn qdelay(&self) -> Ns {
        if self.fifo.q.is_empty() {
            0
        } else if self.rate_bps > 0 {
            crate::time::tx_time(self.fifo.bytes, self.rate_bps)
        } else {
            self.last_sojourn
        }
    }

    /// Item-size-scaled, de-randomised early drop decision (true = drop).
    fn drop_early(&mut self, size: u32) -> bool {
        if self.state == State::Inactive || self.burst_allowance > 0 {
            return false;
        }
        let p1 = self.drop_prob * (size as u64).max(self.min_pktsize) as f64 / self.mean_pktsize;
        derandomized_drop(&mut self.accu_prob, self.drop_prob, p1, &mut self.rng)
    }
}

impl QueueDiscipline for DocsisPie {
    fn enqueue(&mut self, now: Ns, pkt: Item, sink: &mut DropSink) {
        self.run_due_updates(now);
        if self.fifo.overflows(&pkt, self.lim) {
            self.accu_prob = 0.0;
            sink.reject(pkt, DropReason::Overflow);
            return;
        }
        if self.state == State::Inactive && self.fifo.bytes >= self.buffer_bytes / 3 {
            self.state = State::Active;
            self.burst_allowance = self.max_burst;
        }
        if self.drop_early(pkt.size) {
            self.accu_prob = 0.0;
            self.state = State::Active;
            sink.reject(pkt, DropReason::AqmEnqueue);
            return;
        }
        self.fifo.push(pkt);
    }
    fn dequeue(&mut self, now: Ns, _sink: &mut DropSink) -> Option<Item> {
        self.run_due_updates(now);
        let p = self.fifo.pop()?;
        self.last_sojourn = now - p.enq_at;
        Some(p)
    }
    fn len_packets(&self) -> u64 {
        self.fifo.q.len() as u64
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.bytes
    }
    fn uses_timer(&self) -> bool {
        true
    }
    fn next_timer(&self) -> Ns {
        if self.quiet_fixed_point() {
            crate::time::NEVER
        } else {
            self.next_update
        }
    }
    fn on_timer(&mut self, now: Ns) {
        self.run_due_updates(now);
    }
    /// drop_prob (per MEAN_PKTSIZE packet; may exceed 1).
    fn probe(&self) -> f64 {
        self.drop_prob
    }
}

#[cfg(test)]
mod tests {
    use super::super::util::testutil::*;
    use super::super::DropReason;
    use super::*;
    use crate::time::{NEVER, US};

    /// The published defaults on a 10 Mbit/s link with no buffer given (1000 packets: BUFFER
    /// = 1.5 MB), random stream seed 3, already ACTIVE.
    fn raw() -> DocsisPie {
        let mut d = from_params(&Params::new(), &AqmBuildCtx { seed: 3, ..ctx() }).unwrap();
        d.state = State::Active;
        d
    }

    #[test]
    fn docsis_ladder_and_update_rules() {
        let cases =
            [(0.0, 1.0 / 2048.0), (5e-3, 0.125), (0.05, 0.5), (0.5, 1.0), (2.0, 2.0), (12.0, 8.0), (200.0, 32.0)];
        for (p, f) in cases {
            assert_eq!(docsis_factor(p), f, "{p}");
        }
        let mut d = raw();
        // 25000 B at 10 Mbit/s = 20 ms; old 30 ms; prob 2.0 -> factor 2 on a negative step
        d.fifo.q.push_back(pkt(1500, 1));
        d.fifo.bytes = 25_000;
        d.qdelay_old = 30 * MS;
        d.drop_prob = 2.0;
        d.update();
        let want = 2.0 + (0.25 * 0.010 + 2.5 * -0.010) * 2.0;
        assert!((d.drop_prob - want).abs() < 1e-12, "{}", d.drop_prob);
        // positive steps are capped at 0.02 once drop_prob >= 0.1 (old 15 ms: step 0.03 -> 0.02)
        d.qdelay_old = 15 * MS;
        d.drop_prob = 2.0;
        d.update();
        assert!((d.drop_prob - 2.02).abs() < 1e-12, "{}", d.drop_prob);
        // above LATENCY_HIGH: + 0.02 on top of the (capped) PI step (250 ms, old 250 ms, prob 0.5)
        d.fifo.bytes = 312_500;
        d.qdelay_old = 250 * MS;
        d.drop_prob = 0.5;
        d.update();
        assert!((d.drop_prob - 0.54).abs() < 1e-12, "{}", d.drop_prob);
        // both below LATENCY_LOW: x0.98 (4 ms, old 3 ms, prob 0.5)
        d.fifo.bytes = 5_000;
        d.qdelay_old = 3 * MS;
        d.drop_prob = 0.5;
        d.update();
        let want = (0.5 + 0.25 * -0.006 + 2.5 * 0.001) * 0.98;
        assert!((d.drop_prob - want).abs() < 1e-12, "{}", d.drop_prob);
        // the bound: PROB_LOW x 1024 / 64 = 13.6
        d.fifo.bytes = 10_000_000;
        d.drop_prob = 13.59;
        d.update();
        assert!((d.drop_prob - 13.6).abs() < 1e-12);
        // during a burst allowance drop_prob is held at 0 and the allowance counts down
        d.burst_allowance = 20 * MS;
        d.update();
        assert_eq!((d.drop_prob, d.burst_allowance), (0.0, 4 * MS));
        d.update();
        assert_eq!(d.burst_allowance, 0);
    }

    #[test]
    fn docsis_drop_probability_scales_with_packet_size() {
        let frac = |size: u32| {
            let mut d = raw();
            d.drop_prob = 0.2;
            let n = 200_000;
            let drops = (0..n)
                .filter(|_| {
                    let x = d.drop_early(size);
                    if x {
                        d.accu_prob = 0.0;
                    }
                    x
                })
                .count();
            drops as f64 / n as f64
        };
        let (big, small, tiny) = (frac(1500), frac(128), frac(40));
        eprintln!("docsis drop fraction 1500 B {big} 128 B {small} 40 B {tiny}");
        // 1500-B p1 = 0.293, 128-B p1 = 0.025, 40 B is scaled as 64 B (p1 = 0.0125)
        assert!(big / small > 8.0 && big / small < 16.0, "{big} {small}");
        assert!((small / tiny - 2.0).abs() < 0.3, "{small} {tiny}");
        // de-randomisation: at p1 = 0.0125 no drop before 68 packets; forced at 680
        assert!(tiny > 1.0 / 681.0 && tiny < 1.0 / 68.0);
    }

    #[test]
    fn docsis_overload_burst_then_control_then_decay() {
        // 300-packet buffer: BUFFER/3 = 150 000 B = 100 packets.
        let mut c = ctx();
        c.limit_packets = Some(300);
        let mut q = queue("docsis-pie", Params::new(), &c);
        let svc = 1200 * US;
        let (mut t_arr, mut t_dep) = (0, 0);
        let mut first_drop = None;
        let mut third = None;
        let mut delays = vec![];
        let mut t = 0;
        // 2x overload for 5 s
        while t < 5 * SEC {
            let tt = q.next_timer();
            t = t_arr.min(t_dep).min(tt);
            let mut d = vec![];
            if t == tt {
                q.on_timer(t);
            } else if t == t_arr {
                q.enqueue(t, pkt(1500, 1), Some(&mut d));
                t_arr += 600 * US;
                if third.is_none() && q.len_bytes() >= 150_000 {
                    third = Some(t);
                }
            } else {
                if let Some(p) = q.dequeue(t, None) {
                    if t > 3 * SEC {
                        delays.push(t - p.enq_at);
                    }
                }
                t_dep += svc;
            }
            if !d.is_empty() && first_drop.is_none() {
                assert_eq!(d[0].reason, DropReason::AqmEnqueue);
                first_drop = Some(t);
            }
        }
        let fd = first_drop.unwrap();
        let th = third.unwrap();
        let mean = delays.iter().sum::<u64>() as f64 / delays.len() as f64 / 1e6;
        eprintln!(
            "docsis queue at BUFFER/3 at {} ms, first drop {} ms; prob {}; mean delay 3-5 s {mean} ms",
            th / 1_000_000,
            fd / 1_000_000,
            q.probe()
        );
        // INACTIVE until BUFFER/3 (~100 packets at 2x overload: ~120 ms), then 142 ms allowance
        assert!(fd >= th + 142 * MS, "{th} {fd}");
        assert!(mean > 5.0 && mean < 30.0, "{mean}");
        assert!(q.probe() > 0.3 && q.probe() < 1.0, "{}", q.probe());
        eprintln!("docsis overflow drops {}", q.stats.dropped_at_enqueue_pkts[DropReason::Overflow.index()]);
        // stop arrivals: drain and decay to 0
        while q.dequeue(t, None).is_some() {
            t += svc;
        }
        while q.next_timer() != NEVER {
            t = q.next_timer();
            q.on_timer(t);
        }
        // decayed to exactly 0 and back to INACTIVE (> 1 s quiet): no timer needed any more
        eprintln!("docsis idle fixed point reached {} ms after the arrivals stopped", (t - 5 * SEC) / 1_000_000);
        assert!(t < 30 * SEC);
        assert_eq!(q.probe(), 0.0);
        q.check_conservation().unwrap();
    }

    #[test]
    fn docsis_state_machine() {
        let mut d = raw();
        let mut s = crate::aqm::DropSink::default();
        // ACTIVE + quiet update -> QUIESCENT; 62 more quiet updates (992 ms) keep it there,
        // the 63rd (1008 ms > 1 s) -> INACTIVE.
        d.update();
        assert_eq!(d.state, State::Quiescent);
        for _ in 0..62 {
            d.update();
        }
        assert_eq!(d.state, State::Quiescent);
        d.update();
        assert_eq!(d.state, State::Inactive);
        // INACTIVE: no early drop whatever drop_prob is, until the queue reaches BUFFER/3.
        d.drop_prob = 13.6;
        for _ in 0..333 {
            d.enqueue(0, pkt(1500, 1), &mut s);
        }
        assert!(s.drops.is_empty());
        assert_eq!(d.state, State::Inactive);
        d.enqueue(0, pkt(1500, 1), &mut s); // queue 499 500 B < BUFFER/3 = 500 000 B: still INACTIVE
        assert_eq!(d.state, State::Inactive);
        d.enqueue(0, pkt(1500, 1), &mut s); // queue 501 000 B >= BUFFER/3 -> ACTIVE
        assert_eq!(d.state, State::Active);
        assert_eq!(d.burst_allowance, 142 * MS);
        assert!(s.drops.is_empty());
    }
}
