//! RED (Linux `red` semantics) and Adaptive RED (Floyd, Gummadi, Shenker 2001, as in Linux
//! `include/net/red.h`). Both entries share this implementation; `ared` turns on the max_p
//! adaptation every 500 ms.

use super::util::{ctx_buffer_bytes, mark_ce, Fifo, LINUX_TXQUEUELEN};
use super::Item;
use super::{AqmBuildCtx, AqmEntry, DropReason, DropSink, QueueDiscipline};
use crate::packet::MTU;
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::rng::Rng;
use crate::time::{Ns, MS, NEVER, SEC};

/// ARED adaptation period (Linux: HZ/2).
pub const ARED_PERIOD: Ns = 500 * MS;
/// ARED bounds on max_p (Linux MAX_P_MIN / MAX_P_MAX).
pub const MAX_P_MIN: f64 = 0.01;
pub const MAX_P_MAX: f64 = 0.5;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "limit",
        unit: Unit::Bytes,
        default: Default::Context("link buffer B in bytes (packets x 1500 B), else 1000 x 1500 B"),
        doc: "hard byte limit of the queue",
    },
    ParamSpec {
        name: "min",
        unit: Unit::Bytes,
        default: Default::Context("B/6 (HAS testbed rule)"),
        doc: "min threshold on the average queue (bytes)",
    },
    ParamSpec {
        name: "max",
        unit: Unit::Bytes,
        default: Default::Context("B/2 (HAS testbed rule)"),
        doc: "max threshold on the average queue (bytes); above it every packet is dropped/marked",
    },
    ParamSpec {
        name: "avpkt",
        unit: Unit::Bytes,
        default: Default::Int(1000),
        doc: "average packet size, for burst/Wlog and the idle decay (tc-red; HAS testbed 1000)",
    },
    ParamSpec {
        name: "burst",
        unit: Unit::Packets,
        default: Default::Context("(2 min + max) / (3 avpkt), the tc default"),
        doc: "burst tolerated by the EWMA; determines Wlog as tc does",
    },
    ParamSpec {
        name: "wlog",
        unit: Unit::Int,
        default: Default::Context("from burst by tc's rule"),
        doc: "EWMA weight w_q = 2^-wlog",
    },
    ParamSpec {
        name: "probability",
        unit: Unit::Float,
        default: Default::Float(0.02),
        doc: "max_p: drop probability at avg = max (tc default 0.02; ARED's initial value)",
    },
    ParamSpec {
        name: "bandwidth",
        unit: Unit::Rate,
        default: Default::Context("link rate, else 10 Mbit/s (tc default)"),
        doc: "rate used to decay the average during idle time",
    },
    ParamSpec {
        name: "ecn",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "CE-mark ECT packets instead of dropping (also above max unless harddrop)",
    },
    ParamSpec {
        name: "harddrop",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "with ecn: drop instead of mark when avg >= max (tc-red harddrop)",
    },
];

pub const RED: AqmEntry = AqmEntry {
    name: "red",
    summary: "Random Early Detection on an EWMA of the byte backlog (Linux semantics, no gentle)",
    reference: "Floyd & Jacobson 1993; Linux sch_red / include/net/red.h; tc-red(8)",
    params: PARAMS,
    build: build_red,
};

pub const ARED: AqmEntry = AqmEntry {
    name: "ared",
    summary: "Adaptive RED: RED whose max_p is adapted every 500 ms toward a target band",
    reference: "Floyd, Gummadi, Shenker 2001 (Adaptive RED); Linux include/net/red.h red_adaptative_algo",
    params: PARAMS,
    build: build_ared,
};

/// tc's rule for Wlog: the smallest wlog in 1..32 such that a burst of `burst` packets arriving
/// on an empty queue does not lift the average above `min` (a = burst + 1 - min/avpkt must be
/// <= (1 - (1-W)^burst) / W with W = 2^-wlog). None when no wlog satisfies it.
pub fn tc_wlog(min: u64, burst: u64, avpkt: u64) -> Option<u32> {
    let a = burst as f64 + 1.0 - min as f64 / avpkt as f64;
    if a < 1.0 {
        return None;
    }
    let mut w = 0.5f64;
    for wlog in 1..32 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Some(wlog);
        }
        w /= 2.0;
    }
    None
}

fn build_red(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    Ok(Box::new(Red::from_params(p, ctx, false)?))
}
fn build_ared(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    Ok(Box::new(Red::from_params(p, ctx, true)?))
}

pub struct Red {
    q: Fifo,
    limit: u64,
    min: f64,
    max: f64,
    w: f64,
    pub wlog: u32,
    max_p: f64,
    /// Transmission time of avpkt at `bandwidth` (ns), the idle-decay unit.
    avpkt_time: f64,
    ecn: bool,
    harddrop: bool,
    adaptive: bool,
    rng: Rng,
    /// EWMA of the byte backlog.
    avg: f64,
    /// Packets since the last mark/drop (-1 = avg was below min / above max).
    qcount: i64,
    /// Uniform draw of the current inter-drop interval.
    qr: f64,
    idle_since: Option<Ns>,
    next_adapt: Ns,
}

impl Red {
    fn from_params(p: &Params, ctx: &AqmBuildCtx, adaptive: bool) -> Result<Red, ParamError> {
        let b = p.u64(PARAMS, "limit")?.or(ctx_buffer_bytes(ctx)).unwrap_or(LINUX_TXQUEUELEN * MTU as u64);
        let min = p.u64(PARAMS, "min")?.unwrap_or(b / 6);
        let max = p.u64(PARAMS, "max")?.unwrap_or(b / 2);
        let avpkt = p.req_u64(PARAMS, "avpkt")?;
        if avpkt == 0 {
            return Err(crate::params::perr("avpkt", "expected an average packet size > 0 bytes"));
        }
        if min >= max {
            return Err(perr("min", format!("need min < max (min {min} B, max {max} B)")));
        }
        if max > b {
            return Err(perr("max", format!("max {max} B exceeds limit {b} B")));
        }
        let burst = p.u64(PARAMS, "burst")?.unwrap_or((2 * min + max) / (3 * avpkt));
        let wlog = match p.u64(PARAMS, "wlog")? {
            Some(w) if (1..32).contains(&w) => w as u32,
            Some(_) => return Err(perr("wlog", "must be in 1..31")),
            // tc refuses configurations where its rule fails (tiny buffers); we fall back to
            // the fastest average (wlog 1) instead.
            None => tc_wlog(min, burst, avpkt).unwrap_or(1),
        };
        let max_p = p.f64(PARAMS, "probability")?;
        if !(max_p > 0.0 && max_p <= 1.0) {
            return Err(perr("probability", "must be in (0, 1]"));
        }
        let bw = p.u64(PARAMS, "bandwidth")?.filter(|&x| x > 0).unwrap_or(if ctx.link_rate_bps > 0 {
            ctx.link_rate_bps
        } else {
            10_000_000
        });
        Ok(Red {
            q: Fifo::default(),
            limit: b,
            min: min as f64,
            max: max as f64,
            w: (0.5f64).powi(wlog as i32),
            wlog,
            max_p,
            avpkt_time: avpkt as f64 * 8.0 * SEC as f64 / bw as f64,
            ecn: p.bool(PARAMS, "ecn")?,
            harddrop: p.bool(PARAMS, "harddrop")?,
            adaptive,
            rng: Rng::from_seed(ctx.seed),
            avg: 0.0,
            qcount: -1,
            qr: 0.0,
            idle_since: None,
            next_adapt: if adaptive { ARED_PERIOD } else { NEVER },
        })
    }

    /// The average decayed over an idle period ending at `t`: avg (1-w)^m, m = idle / avpkt_time.
    fn decayed_avg(&self, t: Ns) -> f64 {
        match self.idle_since {
            Some(s) if t > s => self.avg * (1.0 - self.w).powf((t - s) as f64 / self.avpkt_time),
            _ => self.avg,
        }
    }

    /// ARED (red_adaptative_algo) for every period boundary up to `now`.
    /// ARED target band [min + 0.4 (max - min), min + 0.6 (max - min)].
    fn band(&self) -> (f64, f64) {
        let delta = self.max - self.min;
        (self.min + 0.4 * delta, self.min + 0.6 * delta)
    }

    /// True when the adaptation at `next_adapt` and every later one is a no-op for as long as the
    /// queue stays empty: max_p below MAX_P_MIN and the (idle-decayed) average below the band.
    fn adapt_idle_fixed_point(&self) -> bool {
        self.q.is_empty() && self.max_p < MAX_P_MIN && self.decayed_avg(self.next_adapt) < self.band().0
    }

    fn adapt_until(&mut self, now: Ns) {
        while self.next_adapt <= now {
            if self.adapt_idle_fixed_point() {
                self.next_adapt += ((now - self.next_adapt) / ARED_PERIOD + 1) * ARED_PERIOD;
                break;
            }
            let avg = self.decayed_avg(self.next_adapt);
            let (tmin, tmax) = self.band();
            if avg > tmax && self.max_p <= MAX_P_MAX {
                self.max_p += MAX_P_MIN.min(self.max_p / 4.0);
            } else if avg < tmin && self.max_p >= MAX_P_MIN {
                self.max_p *= 0.9;
            }
            self.next_adapt += ARED_PERIOD;
        }
    }

    /// Current marking probability p_b = max_p (avg - min) / (max - min).
    fn pb(&self) -> f64 {
        if self.avg < self.min {
            0.0
        } else if self.avg >= self.max {
            1.0
        } else {
            self.max_p * (self.avg - self.min) / (self.max - self.min)
        }
    }
}

enum Action {
    None,
    Prob,
    Hard,
}

impl QueueDiscipline for Red {
    fn enqueue(&mut self, now: Ns, mut pkt: Item, sink: &mut DropSink) {
        self.adapt_until(now);
        // red_calc_qavg: decay over idle time, or one EWMA step on the current backlog.
        if self.idle_since.is_some() {
            self.avg = self.decayed_avg(now);
            self.idle_since = None;
        } else {
            self.avg += self.w * (self.q.bytes as f64 - self.avg);
        }
        // red_action
        let action = if self.avg < self.min {
            self.qcount = -1;
            Action::None
        } else if self.avg >= self.max {
            self.qcount = -1;
            Action::Hard
        } else {
            self.qcount += 1;
            if self.qcount > 0 {
                if self.qcount as f64 * self.pb() >= self.qr {
                    self.qcount = 0;
                    self.qr = self.rng.uniform();
                    Action::Prob
                } else {
                    Action::None
                }
            } else {
                self.qr = self.rng.uniform();
                Action::None
            }
        };
        match action {
            Action::None => {}
            Action::Prob => {
                if self.ecn && mark_ce(&mut pkt) {
                    sink.mark();
                } else {
                    sink.reject(pkt, DropReason::AqmEnqueue);
                    return;
                }
            }
            Action::Hard => {
                if !self.harddrop && self.ecn && mark_ce(&mut pkt) {
                    sink.mark();
                } else {
                    sink.reject(pkt, DropReason::AqmEnqueue);
                    return;
                }
            }
        }
        if self.q.bytes + pkt.size as u64 > self.limit {
            sink.reject(pkt, DropReason::Overflow);
            return;
        }
        self.q.push(pkt);
    }

    fn dequeue(&mut self, now: Ns, _sink: &mut DropSink) -> Option<Item> {
        self.adapt_until(now);
        let p = self.q.pop();
        if self.q.is_empty() && self.idle_since.is_none() {
            self.idle_since = Some(now);
        }
        p
    }
    fn len_packets(&self) -> u64 {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes
    }
    fn uses_timer(&self) -> bool {
        true
    }
    fn next_timer(&self) -> Ns {
        if self.adaptive && self.adapt_idle_fixed_point() {
            NEVER
        } else {
            self.next_adapt
        }
    }
    fn on_timer(&mut self, now: Ns) {
        self.adapt_until(now);
    }
    /// max_p for ARED, the current marking probability p_b for RED.
    fn probe(&self) -> f64 {
        if self.adaptive {
            self.max_p
        } else {
            self.pb()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::util::testutil::*;
    use super::super::{DropReason, Queue};
    use super::*;
    use crate::time::US;

    fn red(p: Params, adaptive: bool) -> Red {
        let mut c = ctx();
        c.limit_packets = Some(200); // B = 300 kB: min 50 kB, max 150 kB
        Red::from_params(&p, &c, adaptive).unwrap()
    }

    #[test]
    fn red_defaults_follow_testbed_rule_and_tc_wlog() {
        let r = red(Params::new(), false);
        assert_eq!((r.limit, r.min as u64, r.max as u64), (300_000, 50_000, 150_000));
        // burst = (100000 + 150000) / 3000 = 83; a = 84 - 50 = 34 -> W = 1/64 (wlog 6)
        assert_eq!(tc_wlog(50_000, 83, 1000), Some(6));
        assert_eq!(r.wlog, 6);
        // 100 pkts: min 25000, max 75000, burst 41, a = 17 -> wlog 5
        assert_eq!(tc_wlog(25_000, 41, 1000), Some(5));
        assert_eq!(tc_wlog(25_000, 10, 1000), None);
    }

    #[test]
    fn red_ewma_and_idle_decay_exact() {
        let mut r = red(Params::new(), false);
        let mut s = super::super::DropSink::default();
        let w = 1.0 / 64.0;
        let mut want = 0.0;
        for k in 0..30u64 {
            r.enqueue(0, pkt(1500, 1), &mut s);
            want += w * ((k * 1500) as f64 - want);
        }
        assert!((r.avg - want).abs() < 1e-9);
        while !r.q.is_empty() {
            r.dequeue(10 * MS, &mut s);
        }
        // Idle 8 ms at 10 Mbit/s = 10 avpkt times: avg (1-w)^10.
        r.enqueue(18 * MS, pkt(1500, 1), &mut s);
        let want2 = want * (1.0 - w).powi(10);
        assert!((r.avg - want2).abs() < 1e-6, "{} {want2}", r.avg);
        assert!(s.drops.is_empty());
    }

    /// Hold avg at a given value and count arrivals between drops.
    fn gaps_at(r: &mut Red, avg: f64, n: usize) -> Vec<u64> {
        let mut s = super::super::DropSink::default();
        let mut gaps = vec![];
        let mut since = 0;
        for _ in 0..n {
            r.avg = avg;
            r.w = 0.0; // freeze the average
            since += 1;
            r.enqueue(0, pkt(1500, 1), &mut s);
            r.q.clear();
            if !s.drops.is_empty() {
                gaps.push(since);
                since = 0;
                s.drops.clear();
            }
        }
        gaps
    }

    #[test]
    fn red_count_based_spacing_is_uniform() {
        let mut r = red(Params::new().with("probability", 0.1), false);
        // avg halfway: p_b = 0.05 -> gaps uniform on 1..=20, mean 10.5
        let gaps = gaps_at(&mut r, 100_000.0, 200_000);
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        let max = *gaps.iter().max().unwrap();
        let ones = gaps.iter().filter(|&&g| g == 1).count() as f64 / gaps.len() as f64;
        eprintln!("red gaps mean {mean} max {max} P(gap=1) {ones}");
        // Uniform on 1..=1/p_b (Floyd's count-based spacing), unlike a geometric gap.
        assert_eq!(max, 20);
        assert!((mean - 10.5).abs() < 0.1, "{mean}");
        assert!((ones - 0.05).abs() < 0.005, "{ones}");
        // Below min: never; at/above max: always.
        assert!(gaps_at(&mut r, 49_999.0, 10_000).is_empty());
        assert_eq!(gaps_at(&mut r, 150_000.0, 1000).len(), 1000);
    }

    #[test]
    fn red_ecn_marks_instead_of_dropping() {
        let mut c = ctx();
        c.limit_packets = Some(200);
        let mut q = Queue::new("red", Box::new(Red::from_params(&Params::new().with("ecn", true), &c, false).unwrap()));
        // 2x overload at 10 Mbit/s for 5 s, all ECT
        let mut t = 0;
        for k in 0..8333u64 {
            t = k * 600 * US;
            q.enqueue(t, ect(1500, 1), None);
            if k % 2 == 1 {
                q.dequeue(t, None);
            }
        }
        let _ = t;
        eprintln!("red ecn marks {} drops {:?}", q.stats.marked_pkts, q.stats.dropped_at_enqueue_pkts);
        assert!(q.stats.marked_pkts > 100);
        assert_eq!(q.stats.dropped_at_enqueue_pkts[DropReason::AqmEnqueue.index()], 0);
        q.check_conservation().unwrap();
    }

    #[test]
    fn ared_steps_exact() {
        let mut r = red(Params::new(), true);
        let mut s = super::super::DropSink::default();
        // avg held above the band (target_max = 110 kB): max_p += min(0.01, max_p/4)
        r.avg = 120_000.0;
        r.w = 0.0;
        let mut want = 0.02;
        for k in 1..=60u64 {
            r.on_timer(k * ARED_PERIOD);
            if want <= MAX_P_MAX {
                want += MAX_P_MIN.min(want / 4.0);
            }
            assert!((r.max_p - want).abs() < 1e-12, "step {k}: {} vs {want}", r.max_p);
        }
        assert!(r.max_p > 0.5 && r.max_p <= 0.51, "{}", r.max_p);
        // inside the band: unchanged
        r.avg = 100_000.0;
        r.on_timer(61 * ARED_PERIOD);
        assert!((r.max_p - want).abs() < 1e-12);
        // below: x0.9 until < 0.01
        r.avg = 60_000.0;
        for k in 62..200u64 {
            r.on_timer(k * ARED_PERIOD);
            if want >= MAX_P_MIN {
                want *= 0.9;
            }
        }
        assert!((r.max_p - want).abs() < 1e-12);
        assert!(r.max_p < 0.01 && r.max_p >= 0.009);
        let _ = &mut s;
        // lazy catch-up equals the timer: a queue driven only by enqueues adapts too
        let mut r2 = red(Params::new(), true);
        r2.avg = 120_000.0;
        r2.w = 0.0;
        r2.enqueue(ARED_PERIOD * 3, pkt(1500, 1), &mut s);
        assert!((r2.max_p - 0.0390625).abs() < 1e-12, "{}", r2.max_p);
    }

    /// AIMD aggregate: `n` flows, 100-ms rounds, 10 Mbit/s bottleneck (83.3 pkts per round).
    /// Returns (max_p trace per second, mean avg over the last `tail` seconds).
    fn aimd(n: usize, cwnd_cap: u64, secs: u64, tail: u64, adaptive: bool) -> (Vec<f64>, f64, Queue) {
        let mut c = ctx();
        c.limit_packets = Some(200);
        let red = Red::from_params(&Params::new(), &c, adaptive).unwrap();
        let mut q = Queue::new("ared", Box::new(red));
        let mut cwnd = vec![2u64; n];
        let svc = 1200 * US;
        let round = 100 * MS;
        let mut next_dep = 0;
        let mut trace = vec![];
        let (mut avg_sum, mut avg_n) = (0.0, 0u64);
        for r in 0..(secs * 10) {
            let t0 = r * round;
            let total: u64 = cwnd.iter().sum();
            // interleave flows' packets uniformly over the round
            let mut order = vec![];
            let mut left = cwnd.clone();
            while order.len() < total as usize {
                for (i, l) in left.iter_mut().enumerate() {
                    if *l > 0 {
                        *l -= 1;
                        order.push(i);
                    }
                }
            }
            let mut hit = vec![false; n];
            for (k, &f) in order.iter().enumerate() {
                let ta = t0 + round * k as u64 / total;
                while next_dep <= ta {
                    q.dequeue(next_dep, None);
                    next_dep += svc;
                }
                let mut d = vec![];
                q.enqueue(ta, pkt(1500, f as u32), Some(&mut d));
                if !d.is_empty() {
                    hit[f] = true;
                }
            }
            while next_dep < t0 + round {
                q.dequeue(next_dep, None);
                next_dep += svc;
            }
            for i in 0..n {
                cwnd[i] = if hit[i] { (cwnd[i] / 2).max(1) } else { (cwnd[i] + 1).min(cwnd_cap) };
            }
            if r % 10 == 9 {
                trace.push((q.probe() * 1e4).round() / 1e4);
            }
            if r >= (secs - tail) * 10 {
                // the qdisc's average, read through the probe of a twin RED would be nicer;
                // use the backlog sampled once per round as the EWMA's input instead.
                avg_sum += q.len_bytes() as f64;
                avg_n += 1;
            }
            q.check_conservation().unwrap();
        }
        (trace, avg_sum / avg_n as f64, q)
    }

    #[test]
    fn ared_adapts_into_band_under_overload() {
        let (trace, mean_q, q) = aimd(40, 1000, 120, 60, true);
        eprintln!("ared overload max_p per s {trace:?}");
        eprintln!("ared overload mean backlog last 60 s {mean_q} B; drops {:?}", q.stats.dropped_at_enqueue_pkts);
        // band = [90 kB, 110 kB]
        assert!(trace[trace.len() - 1] > 0.05, "{trace:?}");
        assert!(mean_q > 90_000.0 && mean_q < 110_000.0, "{mean_q}");
        // Plain RED with max_p = 0.02 under the same load sits above the band.
        let (_, mean_red, _) = aimd(40, 1000, 120, 60, false);
        eprintln!("red (max_p 0.02) same load: mean backlog {mean_red} B");
        assert!(mean_red > 110_000.0, "{mean_red}");
    }

    #[test]
    fn ared_decreases_max_p_under_light_load() {
        let (trace, mean_q, _) = aimd(2, 30, 10, 5, true);
        eprintln!("ared light max_p per s {trace:?} mean backlog {mean_q}");
        // 0.02 x 0.9^7 = 0.009566: decreased 7 times, then held at the floor.
        assert!((trace[trace.len() - 1] - 0.0096).abs() < 1e-4, "{trace:?}");
    }
}
