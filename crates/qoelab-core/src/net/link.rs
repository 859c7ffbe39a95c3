//! A unidirectional link, sans-IO: ingress loss, a queue discipline, a service model (fixed rate,
//! rate schedule, or Mahimahi opportunities) and a propagation delay line. See docs/link.md.
//!
//! [`Link`] never reads a clock: it is driven with `arrive(now, pkt)`, asked when it next needs
//! to run (`poll_at`) and run with `advance(now, out)`, which hands out the packets leaving the far
//! end of the delay line. The simulator (`net::world`) drives the finer steps (`start_service`,
//! `finish_service`, `pop_departure`, AQM timers) itself so that its engine events keep their
//! order; a real-network emulator can use the three calls above with its own packets.
//!
//! The link is generic over the packet type through [`LinkPacket`]: packets waiting in the queue
//! stay in a slab owned by the link and the queue discipline only sees an [`Item`] (size, hash,
//! ECN, enqueue time, slab index). ECN marks made on the item are copied to the packet when it
//! leaves the queue.
//!
//! The delay line is FIFO (constant delay), so a driver needs at most one wake-up for its head.

use super::loss::Loss;
use super::trace::{Opportunities, RateSchedule};
use crate::aqm::{DropReason, Dropped, Item, Queue};
use crate::packet::Packet;
use crate::time::{tx_time, Ns, NEVER, SEC};
use std::collections::VecDeque;

/// [`tx_time`] in 64-bit arithmetic when it cannot overflow (any packet size): the same value
/// without a 128-bit division.
#[inline]
fn ser_time(bytes: u64, rate: u64) -> Ns {
    if bytes < 1 << 31 {
        (bytes * 8 * SEC).div_ceil(rate)
    } else {
        tx_time(bytes, rate)
    }
}

/// What a link needs to know about a packet.
pub trait LinkPacket: Clone {
    /// IP total length (bytes serialized and counted by queues).
    fn size(&self) -> u32;
    /// Flow hash in the packet's direction (FQ classification).
    fn flow_hash(&self) -> u32;
    /// IP ECN codepoint.
    fn ecn(&self) -> u8;
    fn set_ecn(&mut self, ecn: u8);
}

impl LinkPacket for Packet {
    #[inline]
    fn size(&self) -> u32 {
        self.size
    }
    #[inline]
    fn flow_hash(&self) -> u32 {
        self.hash
    }
    #[inline]
    fn ecn(&self) -> u8 {
        self.ecn
    }
    #[inline]
    fn set_ecn(&mut self, ecn: u8) {
        self.ecn = ecn;
    }
}

/// How the link serves its queue.
#[derive(Clone, Debug)]
pub enum Service {
    Fixed(u64),
    Schedule(RateSchedule),
    Opportunities(Opportunities),
}

/// Counters of a link.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Packets/bytes that finished transmission (or, when serialization ends in the future and
    /// no event marks its end, whose end is already decided).
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Packets/bytes dropped by the link's random loss model (before the queue).
    pub lost_pkts: u64,
    pub lost_bytes: u64,
    /// Packets offered to the link (before loss).
    pub offered_pkts: u64,
    /// Packets handed to the next node after propagation.
    pub delivered_pkts: u64,
}

/// What happened to a packet, recorded only when [`Link::record`] is on (packet logs, pcap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEventKind {
    /// Passed the loss model and was offered to the queue.
    Enqueue,
    /// Left the queue: its serialization starts.
    Dequeue,
    /// Dropped by the queue discipline.
    Drop(DropReason),
    /// Dropped by the random loss model.
    Lost,
    /// Serialization ends at the event's `time` (then the packet enters the delay line).
    Transmit,
}

#[derive(Clone, Debug)]
pub struct LinkEvent<P> {
    pub time: Ns,
    pub kind: LinkEventKind,
    pub pkt: P,
}

/// Analytic service of a tail-drop FIFO on a fixed-rate, loss-free link (see docs/link.md).
#[derive(Clone, Copy, Debug)]
struct Pipe {
    rate: u64,
    limit_pkts: u64,
    limit_bytes: u64,
}

pub struct Link<P> {
    pub name: String,
    pub from: crate::ids::NodeId,
    pub to: crate::ids::NodeId,
    pub service: Service,
    pub delay: Ns,
    pub queue: Queue,
    pub loss: Option<Loss>,
    pub stats: LinkStats,
    /// Record [`LinkEvent`]s into `events` (the owner drains them).
    pub record: bool,
    pub events: Vec<LinkEvent<P>>,
    /// Packets the queue holds, by the handle of their item.
    slab: Vec<Option<P>>,
    free: Vec<u32>,
    /// Drops reported by the queue during one call.
    drops: Vec<Dropped>,
    /// A service wake-up is pending (end of serialization or next opportunity) at `service_at`
    /// (NEVER: the packet in service never leaves, zero rate for ever).
    busy: bool,
    service_at: Ns,
    /// Rate-based services: when the transmission in progress ends (the link is free from then).
    /// A packet that leaves an otherwise empty queue goes straight into the delay line with its
    /// arrival time; no wake-up marks the end of its serialization, only this field.
    busy_until: Ns,
    /// Slab handle of the packet being served (it stays in the slab until it is transmitted)
    /// and, for opportunity service, its bytes still to serve.
    in_service: Option<u32>,
    remaining: u64,
    /// (time it leaves the far end, packet), in order.
    line: VecDeque<(Ns, P)>,
    /// Bytes in `line` (maintained in pipe mode only).
    line_bytes: u64,
    pipe: Option<Pipe>,
    /// The last serialization time computed: (bytes, rate, time). Packet sizes repeat, and this
    /// saves a 64-bit division per packet.
    ser_memo: std::cell::Cell<(u64, u64, Ns)>,
}

impl<P> Link<P> {
    /// Heap bytes held for packets: the queue's slab, the delay line and the event buffer (their
    /// capacity: what the link's busiest moment allocated).
    pub fn heap_bytes(&self) -> usize {
        self.slab.capacity() * std::mem::size_of::<Option<P>>()
            + self.line.capacity() * std::mem::size_of::<(Ns, P)>()
            + self.events.capacity() * std::mem::size_of::<LinkEvent<P>>()
    }
    /// [`ser_time`] through the one-entry memo.
    #[inline(always)]
    fn ser(&self, bytes: u64, rate: u64) -> Ns {
        let (b, r, t) = self.ser_memo.get();
        if b == bytes && r == rate {
            return t;
        }
        let t = ser_time(bytes, rate);
        self.ser_memo.set((bytes, rate, t));
        t
    }
}

impl<P: LinkPacket> Link<P> {
    pub fn new(
        name: String,
        from: crate::ids::NodeId,
        to: crate::ids::NodeId,
        service: Service,
        delay: Ns,
        queue: Queue,
        loss: Option<Loss>,
    ) -> Link<P> {
        Link {
            name,
            from,
            to,
            service,
            delay,
            queue,
            loss,
            stats: LinkStats::default(),
            record: false,
            events: Vec::new(),
            slab: Vec::new(),
            free: Vec::new(),
            drops: Vec::new(),
            busy: false,
            service_at: NEVER,
            busy_until: 0,
            in_service: None,
            remaining: 0,
            line: VecDeque::new(),
            line_bytes: 0,
            pipe: None,
            ser_memo: std::cell::Cell::new((u64::MAX, 0, 0)),
        }
    }

    /// Serve the queue analytically when that is exact: a fixed rate, no random loss, a plain
    /// tail-drop FIFO discipline, no event recording, and the queue untouched so far. Returns
    /// whether it is on. Queue lengths (`max_len_*`) are then not tracked.
    pub fn enable_pipe(&mut self) -> bool {
        let ok = matches!(self.service, Service::Fixed(_))
            && self.loss.is_none()
            && !self.record
            && self.queue.stats.arrived_pkts == 0
            && self.stats.offered_pkts == 0;
        if let (true, Service::Fixed(rate), Some((lp, lb))) = (ok, &self.service, self.queue.fifo_limits()) {
            self.pipe = Some(Pipe { rate: *rate, limit_pkts: lp, limit_bytes: lb });
        }
        self.pipe.is_some()
    }
    pub fn is_pipe(&self) -> bool {
        self.pipe.is_some()
    }

    // ----- the sans-IO interface -----

    /// When the link next needs [`Link::advance`] (NEVER if idle).
    pub fn poll_at(&self) -> Ns {
        let s = if self.busy { self.service_at } else { NEVER };
        s.min(self.line_head().unwrap_or(NEVER)).min(self.queue.next_timer())
    }

    /// Run everything due at `now`: the queue's timer, the end of a serialization or an
    /// opportunity, and departures from the delay line (appended to `out`, in order).
    pub fn advance(&mut self, now: Ns, out: &mut Vec<P>) {
        if self.queue.next_timer() <= now {
            self.queue.on_timer(now);
        }
        if self.busy && self.service_at <= now {
            self.finish_service(now);
            if !self.busy && !matches!(self.service, Service::Opportunities(_)) {
                self.start_service(now);
            }
        }
        while self.line_head().is_some_and(|t| t <= now) {
            out.push(self.pop_departure());
        }
    }

    /// A packet arrives at the link's ingress.
    #[inline]
    pub fn arrive(&mut self, now: Ns, pkt: P) {
        self.arrive_ref(now, &pkt);
    }

    /// [`Link::arrive`] with the packet borrowed: it is copied once, where the link keeps it.
    #[inline]
    pub fn arrive_ref(&mut self, now: Ns, pkt: &P) {
        self.stats.offered_pkts += 1;
        if let Some(loss) = &mut self.loss {
            if loss.drop_next() {
                self.stats.lost_pkts += 1;
                self.stats.lost_bytes += pkt.size() as u64;
                if self.record {
                    self.events.push(LinkEvent { time: now, kind: LinkEventKind::Lost, pkt: pkt.clone() });
                }
                return;
            }
        }
        if let Some(pipe) = self.pipe {
            self.pipe_arrive(now, pkt, pipe);
            return;
        }
        if self.record {
            self.events.push(LinkEvent { time: now, kind: LinkEventKind::Enqueue, pkt: pkt.clone() });
        }
        let item = Item { enq_at: now, size: pkt.size(), hash: pkt.flow_hash(), handle: 0, ecn: pkt.ecn() };
        let handle = self.put(pkt.clone());
        self.queue.enqueue(now, Item { handle, ..item }, Some(&mut self.drops));
        if !self.drops.is_empty() {
            self.flush_drops(now);
        }
        if !self.busy {
            self.start_service(now);
        }
    }

    /// A plain FIFO served at a fixed rate: the packet's serialization starts at
    /// max(now, busy_until) whatever else happens, so it goes straight into the delay line.
    #[inline]
    fn pipe_arrive(&mut self, now: Ns, pkt: &P, pipe: Pipe) {
        let size = pkt.size() as u64;
        if self.line.len() as u64 >= pipe.limit_pkts || self.line_bytes + size > pipe.limit_bytes {
            // The line holds every packet not yet delivered, so it bounds the backlog; only
            // here is the backlog counted exactly.
            let (qp, qb) = self.pipe_backlog(now, pipe);
            if qp >= pipe.limit_pkts || qb + size > pipe.limit_bytes {
                self.queue.bypass_reject(size);
                return;
            }
        }
        let start = now.max(self.busy_until);
        let end = start + self.ser(size, pipe.rate);
        self.busy_until = end;
        self.queue.bypass(size, start - now);
        self.stats.tx_pkts += 1;
        self.stats.tx_bytes += size;
        self.line_bytes += size;
        self.line.push_back((end + self.delay, pkt.clone()));
    }

    /// Packets and bytes whose serialization starts after `now` (the FIFO's backlog; a start at
    /// exactly `now` counts as started).
    fn pipe_backlog(&self, now: Ns, pipe: Pipe) -> (u64, u64) {
        let (mut n, mut b) = (0, 0);
        for (t, p) in self.line.iter().rev() {
            let size = p.size() as u64;
            if t - self.delay - ser_time(size, pipe.rate) <= now {
                break;
            }
            n += 1;
            b += size;
        }
        (n, b)
    }

    /// No service wake-up is pending: begin serving the queue.
    pub fn start_service(&mut self, now: Ns) {
        debug_assert!(!self.busy);
        if let Service::Opportunities(o) = &self.service {
            if self.in_service.is_none() && self.queue.len_packets() == 0 {
                return;
            }
            if let Some(t) = o.next_at_or_after(now) {
                self.busy = true;
                self.service_at = t;
            }
            return;
        }
        if now < self.busy_until {
            // Still serializing a packet that went straight to the delay line: come back when
            // the link is free.
            if self.queue.len_packets() > 0 {
                self.busy = true;
                self.service_at = self.busy_until;
            }
            return;
        }
        let Some(item) = self.queue.dequeue(now, Some(&mut self.drops)) else {
            if !self.drops.is_empty() {
                self.flush_drops(now);
            }
            return;
        };
        let h = self.mark(item);
        let done = self.finish_time_bytes(now, item.size as u64);
        if !self.drops.is_empty() {
            self.flush_drops(now);
        }
        if self.record {
            let pkt = self.slab[h as usize].clone().expect("served packet");
            self.events.push(LinkEvent { time: now, kind: LinkEventKind::Dequeue, pkt });
        }
        if let Some(t) = done {
            self.busy_until = t;
            if self.delay > 0 && self.queue.len_packets() == 0 && self.queue.quiet_when_empty() {
                // Nothing waits behind this packet and the discipline would not change on the
                // empty dequeue at the end of its serialization, so that end needs no wake-up;
                // the packet leaves the far end at t + delay.
                self.transmitted(h, t);
                return;
            }
            self.service_at = t;
        } else {
            self.service_at = NEVER;
        }
        self.in_service = Some(h);
        self.busy = true;
    }

    /// The pending service wake-up is due: end the serialization in progress (rate services;
    /// the owner then calls `start_service`) or serve the opportunities at `now`.
    pub fn finish_service(&mut self, now: Ns) {
        self.busy = false;
        self.service_at = NEVER;
        if let Service::Opportunities(o) = &self.service {
            let mut budget = o.count_at(now) * o.bytes_per_opp;
            loop {
                if self.in_service.is_none() {
                    match self.queue.dequeue(now, Some(&mut self.drops)) {
                        Some(item) => {
                            let h = self.mark(item);
                            self.remaining = item.size as u64;
                            if self.record {
                                let pkt = self.slab[h as usize].clone().expect("served packet");
                                self.events.push(LinkEvent { time: now, kind: LinkEventKind::Dequeue, pkt });
                            }
                            self.in_service = Some(h);
                        }
                        None => break,
                    }
                }
                if self.remaining <= budget {
                    budget -= self.remaining;
                    self.remaining = 0;
                    let h = self.in_service.take().expect("in service");
                    self.transmitted(h, now);
                } else {
                    self.remaining -= budget;
                    break;
                }
            }
            if !self.drops.is_empty() {
                self.flush_drops(now);
            }
            if self.in_service.is_some() || self.queue.len_packets() > 0 {
                if let Service::Opportunities(o) = &self.service {
                    if let Some(t) = o.next_after(now) {
                        self.busy = true;
                        self.service_at = t;
                    }
                }
            }
            return;
        }
        if let Some(h) = self.in_service.take() {
            self.transmitted(h, now);
        }
    }

    /// Time of the pending service wake-up (None if none is pending or it never comes).
    #[inline]
    pub fn service_wakeup(&self) -> Option<Ns> {
        (self.busy && self.service_at != NEVER).then_some(self.service_at)
    }
    #[inline]
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// When the head of the delay line leaves its far end.
    #[inline]
    pub fn line_head(&self) -> Option<Ns> {
        self.line.front().map(|e| e.0)
    }
    /// Take the head of the delay line (the owner calls this when it is due).
    #[inline]
    pub fn pop_departure(&mut self) -> P {
        let (_, p) = self.line.pop_front().expect("departure from an empty line");
        self.stats.delivered_pkts += 1;
        if self.pipe.is_some() {
            self.line_bytes -= p.size() as u64;
        }
        p
    }
    /// Packets in the delay line.
    pub fn propagating(&self) -> usize {
        self.line.len()
    }

    /// Serialization of the packet in slab slot `h` ends at `at` (>= now): into the delay line.
    #[inline]
    fn transmitted(&mut self, h: u32, at: Ns) {
        let pkt = self.slab[h as usize].take().expect("served packet");
        self.free.push(h);
        if self.record {
            self.events.push(LinkEvent { time: at, kind: LinkEventKind::Transmit, pkt: pkt.clone() });
        }
        self.stats.tx_pkts += 1;
        self.stats.tx_bytes += pkt.size() as u64;
        self.line.push_back((at + self.delay, pkt));
    }

    fn flush_drops(&mut self, now: Ns) {
        let mut drops = std::mem::take(&mut self.drops);
        for d in &drops {
            let p = self.take(d.pkt);
            if self.record {
                self.events.push(LinkEvent { time: now, kind: LinkEventKind::Drop(d.reason), pkt: p });
            }
        }
        drops.clear();
        self.drops = drops;
    }

    #[inline]
    fn put(&mut self, p: P) -> u32 {
        match self.free.pop() {
            Some(h) => {
                self.slab[h as usize] = Some(p);
                h
            }
            None => {
                self.slab.push(Some(p));
                (self.slab.len() - 1) as u32
            }
        }
    }
    /// Give the packet of a dequeued item the item's ECN codepoint (marks); the packet stays in
    /// the slab (the handle is returned).
    #[inline]
    fn mark(&mut self, item: Item) -> u32 {
        let p = self.slab[item.handle as usize].as_mut().expect("queue item without a packet");
        if p.ecn() != item.ecn {
            p.set_ecn(item.ecn);
        }
        item.handle
    }
    /// The packet of a queue item, with the item's ECN codepoint (marks).
    #[inline]
    fn take(&mut self, item: Item) -> P {
        let mut p = self.slab[item.handle as usize].take().expect("queue item without a packet");
        self.free.push(item.handle);
        if p.ecn() != item.ecn {
            p.set_ecn(item.ecn);
        }
        p
    }

    /// End-of-run accounting identities (besides the queue's own conservation):
    /// offered = lost + queue arrivals; dequeued = transmitted + in service;
    /// transmitted = delivered + propagating; every queued or served item has its packet.
    pub fn check_accounting(&self) -> Result<(), String> {
        let s = &self.stats;
        let q = &self.queue.stats;
        if s.offered_pkts != s.lost_pkts + q.arrived_pkts {
            return Err(format!(
                "link {}: offered {} != lost {} + queue arrivals {}",
                self.name, s.offered_pkts, s.lost_pkts, q.arrived_pkts
            ));
        }
        let serving = self.in_service.is_some() as u64;
        if q.dequeued_pkts != s.tx_pkts + serving {
            return Err(format!(
                "link {}: dequeued {} != transmitted {} + in service {serving}",
                self.name, q.dequeued_pkts, s.tx_pkts
            ));
        }
        if s.tx_pkts != s.delivered_pkts + self.line.len() as u64 {
            return Err(format!(
                "link {}: transmitted {} != delivered {} + propagating {}",
                self.name,
                s.tx_pkts,
                s.delivered_pkts,
                self.line.len()
            ));
        }
        let stored = (self.slab.len() - self.free.len()) as u64;
        if stored != self.queue.len_packets() + serving {
            return Err(format!("link {}: {stored} packets stored for {} queued", self.name, self.queue.len_packets()));
        }
        Ok(())
    }
}

impl<P> Link<P> {
    /// Time at which the service of `pkt` (starting now) ends, for rate-based services.
    #[inline]
    pub fn finish_time(&self, now: Ns, pkt: &P) -> Option<Ns>
    where
        P: LinkPacket,
    {
        self.finish_time_bytes(now, pkt.size() as u64)
    }
    /// [`Link::finish_time`] of a packet of `bytes`.
    #[inline]
    fn finish_time_bytes(&self, now: Ns, bytes: u64) -> Option<Ns> {
        match &self.service {
            Service::Fixed(r) => Some(now + self.ser(bytes, *r)),
            Service::Schedule(s) => s.finish_time(now, bytes),
            Service::Opportunities(_) => None,
        }
    }
    /// Capacity in bytes offered during [0, t).
    pub fn capacity_bytes(&self, t: Ns) -> u64 {
        match &self.service {
            Service::Fixed(r) => (*r as u128 * t as u128 / 8 / 1_000_000_000) as u64,
            Service::Schedule(s) => s.capacity_bytes(t),
            Service::Opportunities(o) => o.capacity_bytes(t),
        }
    }
    /// Nominal rate for reports (bit/s): fixed rate, or mean rate of the trace.
    pub fn nominal_rate_bps(&self) -> f64 {
        match &self.service {
            Service::Fixed(r) => *r as f64,
            Service::Schedule(s) => s.capacity_bytes(s.period) as f64 * 8.0 / crate::time::secs(s.period),
            Service::Opportunities(o) => {
                o.times.len() as f64 * o.bytes_per_opp as f64 * 8.0 / crate::time::secs(o.period)
            }
        }
    }
}

/// The simulator's link: a [`Link`] of [`Packet`]s plus what the driver keeps about it (the
/// engine events pending for it, what to record). Dereferences to the link.
pub struct SimLink {
    pub link: Link<Packet>,
    pub monitor: bool,
    pub packet_log: bool,
    pub pcap: bool,
    /// Time of the pending service event (NEVER if none).
    pub tx_event: Ns,
    /// Time of the pending delay-line event (NEVER if none).
    pub arr_event: Ns,
    /// Time of the pending AQM timer event (NEVER if none).
    pub aqm_timer: Ns,
}

impl std::ops::Deref for SimLink {
    type Target = Link<Packet>;
    #[inline]
    fn deref(&self) -> &Link<Packet> {
        &self.link
    }
}
impl std::ops::DerefMut for SimLink {
    #[inline]
    fn deref_mut(&mut self) -> &mut Link<Packet> {
        &mut self.link
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::AqmBuildCtx;
    use crate::params::Params;
    use crate::rng::Rng;

    #[derive(Clone, Debug, PartialEq)]
    struct P {
        id: u32,
        /// The queue's flow hash.
        flow: u32,
        len: u32,
    }
    impl LinkPacket for P {
        fn size(&self) -> u32 {
            self.len
        }
        fn flow_hash(&self) -> u32 {
            self.flow
        }
        fn ecn(&self) -> u8 {
            0
        }
        fn set_ecn(&mut self, _: u8) {}
    }

    fn test_link(aqm: &str, limit: u64, delay: Ns) -> Link<P> {
        let ctx = AqmBuildCtx {
            limit_packets: Some(limit),
            limit_bytes: Some(limit * 1000),
            link_rate_bps: 10_000_000,
            seed: 1,
        };
        let q = Queue::build(aqm, &Params::new(), &ctx).unwrap();
        Link::new("l".into(), crate::ids::NodeId(0), crate::ids::NodeId(1), Service::Fixed(10_000_000), delay, q, None)
    }

    /// Drive a link with a plain loop; returns (departure time, id) and the queue counters.
    fn run(mut l: Link<P>, arrivals: &[(Ns, P)]) -> (Vec<(Ns, u32)>, crate::aqm::QueueStats, LinkStats) {
        let (mut out, mut got) = (Vec::new(), Vec::new());
        let mut i = 0;
        loop {
            let t = l.poll_at();
            if i < arrivals.len() && arrivals[i].0 <= t {
                l.arrive(arrivals[i].0, arrivals[i].1.clone());
                i += 1;
            } else if t == NEVER {
                break;
            } else {
                l.advance(t, &mut out);
                got.extend(out.drain(..).map(|p| (t, p.id)));
            }
        }
        l.queue.check_conservation().unwrap();
        l.check_accounting().unwrap();
        (got, l.queue.stats.clone(), l.stats.clone())
    }

    /// `n` arrivals in bursts (gaps up to `short` ns with probability `p`, else up to `long` ns)
    /// at odd nanoseconds (no exact ties), 40-1500 B; each its own flow, or one of `flows`.
    fn bursts(rng: &mut Rng, n: u32, p: f64, short: f64, long: f64, flows: Option<u32>) -> Vec<(Ns, P)> {
        let (mut t, mut arrivals) = (0, Vec::new());
        for id in 0..n {
            t += if rng.uniform() < p { 1 + (rng.uniform() * short) as Ns } else { (rng.uniform() * long) as Ns } * 2
                + 1;
            let flow = flows.map_or(id, |k| (rng.uniform() * k as f64) as u32);
            arrivals.push((t, P { id, flow, len: 40 + (rng.uniform() * 1460.0) as u32 }));
        }
        arrivals
    }

    /// The analytic FIFO gives the same departures, drops and sojourns as the event-driven path,
    /// also when the buffer overflows (bursts into a small pfifo / bfifo).
    #[test]
    fn pipe_equals_event_driven_fifo() {
        for (aqm, delay) in [("pfifo", 0), ("pfifo", 3_000_000), ("bfifo", 3_000_000), ("bfifo", 0)] {
            let arrivals = bursts(&mut Rng::for_component(5, aqm), 5000, 0.8, 200_000.0, 20e6, None);
            let a = run(test_link(aqm, 8, delay), &arrivals);
            let mut pipe = test_link(aqm, 8, delay);
            assert!(pipe.enable_pipe());
            let b = run(pipe, &arrivals);
            assert_eq!(a.0, b.0, "{aqm} delay {delay}: departures");
            assert!(a.1.dropped_pkts() > 100, "{aqm}: the test must overflow the buffer");
            let (mut qa, mut qb) = (a.1.clone(), b.1.clone());
            (qa.max_len_pkts, qa.max_len_bytes, qb.max_len_pkts, qb.max_len_bytes) = (0, 0, 0, 0);
            assert_eq!(qa, qb, "{aqm} delay {delay}: queue counters");
            assert_eq!((a.2.tx_pkts, a.2.delivered_pkts), (b.2.tx_pkts, b.2.delivered_pkts));
        }
    }
    /// Propagation delay only shifts departures: for every discipline, a link with delay `d`
    /// hands out the same packets in the same order as the same link with no delay, `d` later.
    /// (A discipline's dequeue on an empty queue can change its state, e.g. FQ-CoDel unlisting
    /// an emptied flow so that its next packet is a new flow's; the delayed link must make that
    /// call at the end of the serialization as the undelayed one does.)
    #[test]
    fn delay_only_shifts_departures() {
        for aqm in ["fq_codel", "codel", "pie", "red", "pfifo", "bfifo"] {
            // Three flows; the idle gaps often drain the queue.
            let arrivals = bursts(&mut Rng::for_component(9, aqm), 20_000, 0.85, 900_000.0, 30e6, Some(3));
            let a = run(test_link(aqm, 30, 0), &arrivals);
            let mut b = run(test_link(aqm, 30, 3_000_000), &arrivals);
            b.0.iter_mut().for_each(|d| d.0 -= 3_000_000);
            assert!(a.0.len() > 10_000, "{aqm}: {} departures", a.0.len());
            assert_eq!(a.0.len(), b.0.len(), "{aqm}: departures");
            let first = a.0.iter().zip(&b.0).position(|(x, y)| x != y);
            assert_eq!(first, None, "{aqm}: first difference at departure {first:?}");
            assert_eq!(a.1.dropped_pkts(), b.1.dropped_pkts(), "{aqm}: drops");
        }
    }
    #[test]
    fn ser_time_equals_tx_time() {
        for (b, r) in
            [(1500, 10_000_000), (1, 3), (64, 1_000_000_000), (1 << 31, 7), ((1 << 31) - 1, 999_999_937), (9000, 1)]
        {
            assert_eq!(ser_time(b, r), tx_time(b, r), "{b} B at {r} bit/s");
        }
    }
}
