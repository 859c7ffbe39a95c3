//! CoDel (RFC 8289), with a `mahimahi` mode reproducing Mahimahi's `codel` queue.
//!
//! The state machine ([`CodelVars::dequeue`]) is generic over the packet store ([`CodelQueue`])
//! so that FQ-CoDel runs one instance per flow.

use super::util::{mark_ce, Fifo, Limits};
use super::Item;
use super::{AqmBuildCtx, AqmEntry, DropReason, DropSink, QueueDiscipline};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{Ns, MS};

/// Mahimahi's packet-size threshold (max TUN payload), used instead of the 1500-B MTU.
pub const MAHIMAHI_PACKET_SIZE: u64 = 1504;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "target",
        unit: Unit::Duration,
        default: Default::Int(5 * MS as i64),
        doc: "acceptable standing sojourn time (RFC 8289 TARGET, 5 ms)",
    },
    ParamSpec {
        name: "interval",
        unit: Unit::Duration,
        default: Default::Int(100 * MS as i64),
        doc: "sliding-minimum window and control-law base (RFC 8289 INTERVAL, 100 ms)",
    },
    ParamSpec {
        name: "limit",
        unit: Unit::Packets,
        default: Default::Context("link buffer in packets, else 1000 (Linux codel)"),
        doc: "maximum packets queued (arrivals beyond are dropped)",
    },
    super::util::LIMIT_BYTES,
    ParamSpec {
        name: "mtu",
        unit: Unit::Bytes,
        default: Default::Context("1500 (rfc) or 1504 (mahimahi)"),
        doc: "never drop while at most this many bytes remain queued (RFC 8289 MAXPACKET)",
    },
    ParamSpec {
        name: "ecn",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "CE-mark ECT packets instead of dropping them (Linux codel default: off)",
    },
    ParamSpec {
        name: "mode",
        unit: Unit::Choice(&["rfc", "mahimahi"]),
        default: Default::Str("rfc"),
        doc: "rfc = RFC 8289; mahimahi = Mahimahi's codel (ms clock, 1504 B, drops the packets after the one returned)",
    },
];

pub const CODEL: AqmEntry = AqmEntry {
    name: "codel",
    summary: "Controlled Delay AQM (sojourn time, dequeue-side drops)",
    reference: "RFC 8289; Mahimahi codel_packet_queue (mode=mahimahi)",
    params: PARAMS,
    build,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodelMode {
    Rfc,
    Mahimahi,
    /// FreeBSD dummynet (the ACM Queue 2012 pseudocode): the count grows only for drops after
    /// which the queue stays in the dropping state, and re-entering the dropping state resumes at
    /// `count - 2` if `count > 2` and the last drop was less than 8 intervals ago (RFC 8289 /
    /// Linux: `count - lastcount`, 16 intervals). Used by `fq_codel` with `variant = "dummynet"`.
    Dummynet,
}

/// Parameters of one CoDel instance.
#[derive(Clone, Debug)]
pub struct CodelParams {
    pub target: Ns,
    pub interval: Ns,
    /// MAXPACKET: no drop while at most this many bytes remain queued.
    pub mtu: u64,
    pub ecn: bool,
    pub mode: CodelMode,
}

impl CodelParams {
    pub fn rfc_default() -> CodelParams {
        CodelParams {
            target: 5 * MS,
            interval: 100 * MS,
            mtu: crate::packet::MTU as u64,
            ecn: false,
            mode: CodelMode::Rfc,
        }
    }
}

/// The packet store a CoDel instance dequeues from.
pub trait CodelQueue {
    /// Remove and return the head packet.
    fn pop(&mut self) -> Option<Item>;
    /// Bytes still queued after the last pop (what the 1-MTU rule looks at).
    fn backlog(&self) -> u64;
    /// The "at most one MTU queued" test of `dodequeue` (no drop then). Default: the backlog
    /// against `mtu`.
    #[inline]
    fn below_mtu(&self, mtu: u64) -> bool {
        self.backlog() <= mtu
    }
}

/// The CoDel state variables (RFC 8289 section 5).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// 0 = sojourn below target (the RFC's sentinel; never a valid "now + interval").
    pub first_above_time: Ns,
    pub drop_next: Ns,
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
}

struct DoDeq {
    p: Option<Item>,
    ok_to_drop: bool,
}

impl CodelVars {
    #[inline]
    fn dodequeue<Q: CodelQueue + ?Sized>(&mut self, now: Ns, cp: &CodelParams, q: &mut Q) -> DoDeq {
        let Some(p) = q.pop() else {
            self.first_above_time = 0;
            return DoDeq { p: None, ok_to_drop: false };
        };
        let enq = match cp.mode {
            CodelMode::Rfc | CodelMode::Dummynet => p.enq_at,
            CodelMode::Mahimahi => p.enq_at / MS * MS,
        };
        let sojourn = now.saturating_sub(enq);
        let mut ok = false;
        if sojourn < cp.target || q.below_mtu(cp.mtu) {
            self.first_above_time = 0;
        } else if self.first_above_time == 0 {
            self.first_above_time = now + cp.interval;
        } else if now >= self.first_above_time {
            ok = true;
        }
        DoDeq { p: Some(p), ok_to_drop: ok }
    }

    /// next = t + interval / sqrt(count) (truncated to ns; to whole ms in mahimahi mode).
    pub fn control_law(t: Ns, count: u32, cp: &CodelParams) -> Ns {
        let c = (count.max(1) as f64).sqrt();
        match cp.mode {
            CodelMode::Rfc | CodelMode::Dummynet => t + (cp.interval as f64 / c) as Ns,
            CodelMode::Mahimahi => t + ((cp.interval / MS) as f64 / c) as Ns * MS,
        }
    }

    fn reenter_count(&self, now: Ns, cp: &CodelParams) -> u32 {
        if cp.mode == CodelMode::Dummynet {
            let recent = (now as i128 - self.drop_next as i128) < 8 * cp.interval as i128;
            return if self.count > 2 && recent { self.count - 2 } else { 1 };
        }
        let delta = self.count.wrapping_sub(self.lastcount);
        let recent = match cp.mode {
            // Linux/RFC: signed time difference.
            CodelMode::Rfc => (now as i128 - self.drop_next as i128) < 16 * cp.interval as i128,
            // Mahimahi: unsigned (a drop_next in the future wraps to a huge value).
            CodelMode::Mahimahi => now.wrapping_sub(self.drop_next) < 16 * cp.interval,
            CodelMode::Dummynet => unreachable!(),
        };
        if delta > 1 && recent {
            delta
        } else {
            1
        }
    }

    /// RFC 8289 dequeue(): returns the packet to send; drops go to `sink` (reason AqmDequeue).
    pub fn dequeue<Q: CodelQueue + ?Sized>(
        &mut self,
        now: Ns,
        cp: &CodelParams,
        q: &mut Q,
        sink: &mut DropSink,
    ) -> Option<Item> {
        let now = match cp.mode {
            CodelMode::Rfc | CodelMode::Dummynet => now,
            CodelMode::Mahimahi => now / MS * MS,
        };
        let mut r = self.dodequeue(now, cp, q);
        if r.p.is_none() {
            self.dropping = false;
            return None;
        }
        if cp.mode == CodelMode::Mahimahi {
            return self.dequeue_mahimahi(now, cp, q, sink, r);
        }
        if self.dropping {
            if !r.ok_to_drop {
                self.dropping = false;
            }
            let dn = cp.mode == CodelMode::Dummynet;
            while self.dropping && now >= self.drop_next {
                if !dn {
                    self.count += 1;
                }
                let mut p = r.p.take().expect("packet");
                if cp.ecn && mark_ce(&mut p) {
                    // Linux: mark, schedule the next signal, deliver the marked packet.
                    if dn {
                        self.count += 1;
                    }
                    sink.mark();
                    self.drop_next = Self::control_law(self.drop_next, self.count, cp);
                    return Some(p);
                }
                sink.drop_queued(p, DropReason::AqmDequeue);
                r = self.dodequeue(now, cp, q);
                if !r.ok_to_drop {
                    self.dropping = false;
                } else {
                    if dn {
                        self.count += 1;
                    }
                    self.drop_next = Self::control_law(self.drop_next, self.count, cp);
                }
            }
        } else if r.ok_to_drop {
            let mut p = r.p.take().expect("packet");
            if cp.ecn && mark_ce(&mut p) {
                sink.mark();
                r.p = Some(p);
            } else {
                sink.drop_queued(p, DropReason::AqmDequeue);
                r = self.dodequeue(now, cp, q);
            }
            self.dropping = true;
            self.count = self.reenter_count(now, cp);
            self.drop_next = Self::control_law(now, self.count, cp);
            self.lastcount = self.count;
        }
        r.p
    }

    /// Mahimahi's variant: the inner `dodequeue` results shadow the outer one, so the packet
    /// returned is the first one dequeued and the packets dequeued after it are dropped.
    fn dequeue_mahimahi<Q: CodelQueue + ?Sized>(
        &mut self,
        now: Ns,
        cp: &CodelParams,
        q: &mut Q,
        sink: &mut DropSink,
        r: DoDeq,
    ) -> Option<Item> {
        if self.dropping {
            if !r.ok_to_drop {
                self.dropping = false;
            }
            while now >= self.drop_next && self.dropping {
                let r2 = self.dodequeue(now, cp, q);
                if let Some(p) = r2.p {
                    sink.drop_queued(p, DropReason::AqmDequeue);
                }
                self.count += 1;
                if !r2.ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next = Self::control_law(self.drop_next, self.count, cp);
                }
            }
        } else if r.ok_to_drop {
            let r2 = self.dodequeue(now, cp, q);
            if let Some(p) = r2.p {
                sink.drop_queued(p, DropReason::AqmDequeue);
            }
            self.dropping = true;
            self.count = self.reenter_count(now, cp);
            self.drop_next = Self::control_law(now, self.count, cp);
            self.lastcount = self.count;
        }
        r.p
    }
}

impl CodelQueue for Fifo {
    fn pop(&mut self) -> Option<Item> {
        Fifo::pop(self)
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

fn build(p: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    let mode = match p.choice(PARAMS, "mode")? {
        "mahimahi" => CodelMode::Mahimahi,
        _ => CodelMode::Rfc,
    };
    let ecn = p.bool(PARAMS, "ecn")?;
    if ecn && mode == CodelMode::Mahimahi {
        return Err(perr("ecn", "Mahimahi's codel has no ECN; use mode = \"rfc\""));
    }
    let target = p.req_u64(PARAMS, "target")?;
    let interval = p.req_u64(PARAMS, "interval")?;
    if interval == 0 {
        return Err(perr("interval", "must be > 0"));
    }
    if mode == CodelMode::Mahimahi && (target % MS != 0 || interval % MS != 0) {
        return Err(perr("target", "mahimahi mode takes whole milliseconds for target and interval"));
    }
    let mtu = p.u64(PARAMS, "mtu")?.unwrap_or(match mode {
        CodelMode::Rfc | CodelMode::Dummynet => crate::packet::MTU as u64,
        CodelMode::Mahimahi => MAHIMAHI_PACKET_SIZE,
    });
    let lim = Limits::resolve(p.u64(PARAMS, "limit")?, p.u64(PARAMS, "limit_bytes")?, ctx, 1000);
    Ok(Box::new(Codel {
        cp: CodelParams { target, interval, mtu, ecn, mode },
        vars: CodelVars::default(),
        fifo: Fifo::default(),
        lim,
    }))
}

pub struct Codel {
    cp: CodelParams,
    vars: CodelVars,
    fifo: Fifo,
    lim: Limits,
}

impl QueueDiscipline for Codel {
    fn enqueue(&mut self, _now: Ns, pkt: Item, sink: &mut DropSink) {
        if self.fifo.overflows(&pkt, self.lim) {
            sink.reject(pkt, DropReason::Overflow);
        } else {
            self.fifo.push(pkt);
        }
    }
    fn dequeue(&mut self, now: Ns, sink: &mut DropSink) -> Option<Item> {
        self.vars.dequeue(now, &self.cp, &mut self.fifo, sink)
    }
    fn len_packets(&self) -> u64 {
        self.fifo.q.len() as u64
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.bytes
    }
    /// The drop count (RFC 8289 `count`).
    fn probe(&self) -> f64 {
        self.vars.count as f64
    }
}

#[cfg(test)]
mod tests {
    use super::super::util::testutil::*;
    use super::super::{DropReason, Queue};
    use super::*;
    use crate::packet::ecn;
    use crate::time::US;

    /// One arrival and one departure every `dt`, starting with `prefill` packets queued at t=0.
    struct Loop {
        q: Queue,
        t: Ns,
        dt: Ns,
        seq: u64,
        drop_times: Vec<Ns>,
        mark_times: Vec<Ns>,
        /// (time, returned seq, dropped seqs) at each dequeue that dropped.
        events: Vec<(Ns, u64, Vec<u64>)>,
        max_sojourn_delivered: Ns,
    }
    impl Loop {
        fn new(q: Queue, dt: Ns, prefill: u64, ect: bool) -> Loop {
            let mut l = Loop {
                q,
                t: 0,
                dt,
                seq: 0,
                drop_times: vec![],
                mark_times: vec![],
                events: vec![],
                max_sojourn_delivered: 0,
            };
            for _ in 0..prefill {
                l.arrive(ect);
            }
            l
        }
        fn arrive(&mut self, ect_on: bool) {
            let mut p = if ect_on { ect(1500, 1) } else { pkt(1500, 1) };
            p.handle = (self.seq) as u32;
            self.seq += 1;
            self.q.enqueue(self.t, p, None);
        }
        fn depart(&mut self) {
            let mut d = Vec::new();
            let m0 = self.q.stats.marked_pkts;
            let p = self.q.dequeue(self.t, Some(&mut d));
            if self.q.stats.marked_pkts > m0 {
                self.mark_times.push(self.t);
                assert_eq!(p.unwrap().ecn, ecn::CE);
            }
            if let Some(p) = &p {
                self.max_sojourn_delivered = self.max_sojourn_delivered.max(self.t - p.enq_at);
            }
            if !d.is_empty() {
                assert!(d.iter().all(|x| x.reason == DropReason::AqmDequeue && x.was_queued));
                self.drop_times.extend(d.iter().map(|_| self.t));
                self.events.push((
                    self.t,
                    p.map(|p| p.handle as u64).unwrap_or(u64::MAX),
                    d.iter().map(|x| x.pkt.handle as u64).collect(),
                ));
            }
        }
        /// Run until `until` with `arr` arrivals and `dep` departures per step.
        fn run(&mut self, until: Ns, arr: u32, dep: u32, ect: bool) {
            while self.t < until {
                self.t += self.dt;
                for _ in 0..arr {
                    self.arrive(ect);
                }
                for _ in 0..dep {
                    self.depart();
                }
            }
        }
    }

    fn codel(p: Params) -> Queue {
        queue("codel", p.with("limit", 100_000), &ctx())
    }

    /// Expected drop instants on a `dt` grid: first drop at `t1`, then drop_next_k = drop_next_{k-1}
    /// + interval/sqrt(k), each drop at the first grid point >= drop_next.
    fn expected(t1: Ns, n: usize, dt: Ns) -> Vec<Ns> {
        let mut v = vec![t1];
        let mut next = t1 + 100 * MS; // count = 1
        for k in 2..=n as u32 {
            v.push(next.div_ceil(dt) * dt);
            next += (100e6 / (k as f64).sqrt()) as Ns;
        }
        v
    }

    #[test]
    fn codel_no_drop_below_target() {
        // Standing queue of 499 x 10 us = 4.99 ms sojourn (< 5 ms target) for 3 s.
        let mut l = Loop::new(codel(Params::new()), 10 * US, 499, false);
        l.run(3 * crate::time::SEC, 1, 1, false);
        assert_eq!(l.q.stats.dropped_pkts(), 0);
        assert!(l.max_sojourn_delivered >= 4_980 * US && l.max_sojourn_delivered < 5 * MS);
        l.q.check_conservation().unwrap();
        // A single packet waiting 50 ms (only <= 1 MTU queued) is never dropped either.
        let mut q = codel(Params::new());
        for k in 0..50u64 {
            q.enqueue(k * 200 * MS, pkt(1500, 1), None);
            assert!(q.dequeue(k * 200 * MS + 50 * MS, None).is_some());
        }
        assert_eq!(q.stats.dropped_pkts(), 0);
    }

    #[test]
    fn codel_drop_times_follow_control_law() {
        // Prefill 1000 packets at t=0, then one in/one out every 10 us: sojourn = t for the
        // prefilled packets (reaches 5 ms at t=5 ms), then ~10 ms. first_above_time = 105 ms.
        let mut l = Loop::new(codel(Params::new()), 10 * US, 1000, false);
        l.run(1_200 * MS, 1, 1, false);
        let exp = expected(105 * MS, l.drop_times.len(), 10 * US);
        assert!(l.drop_times.len() >= 20, "{}", l.drop_times.len());
        assert_eq!(l.drop_times, exp);
        assert_eq!(&l.drop_times[..4], &[105 * MS, 205 * MS, 275_720 * US, 333_450 * US]);
        // count == number of drops (one dropping episode)
        assert_eq!(l.q.probe() as usize, l.drop_times.len());
        // RFC: the head is dropped and the next packet is delivered.
        let (_, ret, dropped) = &l.events[0];
        assert_eq!(*ret, dropped[0] + 1);
        l.q.check_conservation().unwrap();
    }

    #[test]
    fn codel_ecn_marks_instead_of_dropping() {
        let mut l = Loop::new(
            queue("codel", Params::new().with("limit", 100_000).with("ecn", true), &ctx()),
            10 * US,
            1000,
            true,
        );
        l.run(1_200 * MS, 1, 1, true);
        assert_eq!(l.q.stats.dropped_pkts(), 0);
        // With marking nothing leaves the queue, so the schedule is the pure control law.
        let n = l.mark_times.len();
        assert!(n >= 20);
        assert_eq!(l.mark_times, expected(105 * MS, n, 10 * US));
        l.q.check_conservation().unwrap();
    }

    #[test]
    fn codel_reentry_count_rule() {
        let mut l = Loop::new(codel(Params::new()), 10 * US, 1000, false);
        l.run(800 * MS, 1, 1, false);
        let c1 = l.q.probe() as u32;
        let n1 = l.drop_times.len() as u32;
        assert_eq!(c1, n1);
        assert!(c1 >= 10, "{c1}");
        // Drain: 3 departures per step until the sojourn is below target -> dropping ends.
        let t_leave = l.t;
        l.run(l.t + 4 * MS, 1, 250, false);
        let q_left = l.q.len_packets();
        assert!(q_left < 500, "{q_left}");
        let drops_before = l.drop_times.len();
        // Build the queue again: 2 arrivals per departure until the sojourn exceeds target.
        l.run(l.t + 20 * MS, 2, 1, false);
        l.run(l.t + 400 * MS, 1, 1, false);
        let re = l.drop_times[drops_before..].to_vec();
        assert!(!re.is_empty());
        // Re-entry happened within 16 intervals of drop_next: count = count - lastcount = c_end - 1.
        let c_end = l.drop_times[..drops_before].len() as u32; // count when the episode ended
        let reentry = re[0];
        assert!(reentry - t_leave < 1600 * MS);
        // The second drop of the new episode is interval/sqrt(delta) after the re-entry.
        let delta = c_end - 1;
        let gap = (100e6 / (delta as f64).sqrt()) as Ns;
        eprintln!("reentry c_end={c_end} delta={delta} re0={} re1={}", re[0], re[1]);
        assert_eq!(re[1], (reentry + gap).div_ceil(10 * US) * 10 * US, "delta {delta}");
        l.q.check_conservation().unwrap();
    }

    #[test]
    fn dummynet_mode_reentry_count_is_count_minus_2_within_8_intervals() {
        let dn = CodelParams { mode: CodelMode::Dummynet, ..CodelParams::rfc_default() };
        let rfc = CodelParams::rfc_default();
        let iv = rfc.interval;
        let v = CodelVars { count: 10, lastcount: 3, drop_next: 100 * iv, ..CodelVars::default() };
        assert_eq!(v.reenter_count(105 * iv, &dn), 8);
        assert_eq!(v.reenter_count(105 * iv, &rfc), 7);
        assert_eq!(v.reenter_count(110 * iv, &dn), 1);
        assert_eq!(v.reenter_count(110 * iv, &rfc), 7);
        let v = CodelVars { count: 2, ..v };
        assert_eq!(v.reenter_count(101 * iv, &dn), 1);
    }

    #[test]
    fn codel_reentry_after_16_intervals_resets_count() {
        let mut l = Loop::new(codel(Params::new()), 10 * US, 1000, false);
        l.run(800 * MS, 1, 1, false);
        // Drain completely and stay idle for 2 s.
        while l.q.dequeue(l.t, None).is_some() {}
        l.t += 2 * crate::time::SEC;
        let before = l.drop_times.len();
        for _ in 0..1000 {
            l.arrive(false);
        }
        let t0 = l.t;
        l.run(t0 + 400 * MS, 1, 1, false);
        let re = &l.drop_times[before..];
        // count = 1: drops at first_above + 0, + 100 ms
        assert_eq!(re[0], t0 + 105 * MS);
        assert_eq!(re[1], t0 + 205 * MS);
        l.q.check_conservation().unwrap();
    }

    #[test]
    fn codel_mahimahi_mode_ms_clock_and_following_packet_drop() {
        let q = queue("codel", Params::new().with("limit", 100_000).with("mode", "mahimahi"), &ctx());
        let mut l = Loop::new(q, 10 * US, 1000, false);
        l.run(600 * MS, 1, 1, false);
        // ms clock: first drop at 105 ms, then 205 ms, then 205 + floor(100/sqrt 2) = 275 ms,
        // then 275 + floor(100/sqrt 3) = 332 ms.
        assert_eq!(&l.drop_times[..4], &[105 * MS, 205 * MS, 275 * MS, 332 * MS]);
        // Quirk: the packet returned precedes the dropped one.
        let (_, ret, dropped) = &l.events[0];
        assert_eq!(*ret + 1, dropped[0]);
        l.q.check_conservation().unwrap();
    }

    #[test]
    fn codel_rejects_bad_params() {
        let e = super::super::build("codel", &Params::new().with("mode", "mahimahi").with("ecn", true), &ctx());
        assert!(e.is_err());
        let e = super::super::build("codel", &Params::new().with("mode", "nope"), &ctx());
        assert!(e.is_err());
    }
}
