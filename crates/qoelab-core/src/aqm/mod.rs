//! Queue disciplines (AQMs), sans-IO.
//!
//! A discipline stores packets and decides drops/marks; it is driven with `now` by whoever owns
//! time (the simulator's link, or the real-network emulator). It never reads a clock and never
//! imports the engine. All accounting lives in the shared wrapper [`Queue`], so a discipline only
//! implements [`QueueDiscipline`]:
//!
//! * `enqueue(now, pkt, sink)`: take the arriving packet, or reject it through `sink.reject`.
//!   It may also drop packets already queued (`sink.drop_queued`, e.g. drophead, FQ overflow).
//! * `dequeue(now, sink)`: hand out the next packet; packets dropped on the way out (CoDel) go to
//!   `sink.drop_queued`.
//! * `next_timer` / `on_timer`: optional periodic work (PIE's probability update every T_UPDATE,
//!   ARED's max_p adaptation).
//!
//! Disciplines store and hand out [`Item`]s, small records standing for packets (size, flow hash,
//! ECN field, enqueue time and an opaque handle the owner of the packets resolves), so they do not
//! depend on any packet layout: the simulator's link keeps its packets in a slab and passes the
//! slab index as the handle; a real-network bottleneck can do the same with its buffers.
//!
//! ECN: a discipline marks instead of dropping by setting `item.ecn = ecn::CE` on an ECN-capable
//! item and calling `sink.mark()`; the owner copies the codepoint to the packet on dequeue.
//!
//! Adding a discipline: one file with a config struct (published defaults and units in its docs),
//! `pub const ENTRY: AqmEntry`, unit tests; then one line in [`REGISTRY`] and a page in
//! docs/models/.

use crate::metrics::histogram::LogHistogram;
use crate::params::{ParamError, ParamSpec, Params};
use crate::time::{Ns, NEVER};

pub mod bfifo;
pub mod codel;
pub mod docsis_pie;
pub mod drophead;
pub mod fq_codel;
pub mod pfifo;
pub mod pie;
pub mod red;
#[cfg(test)]
mod registry_tests;
pub mod util;

/// What a queue stores for one packet (24 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Item {
    /// Set by [`Queue::enqueue`] (sojourn = dequeue time - enq_at).
    pub enq_at: Ns,
    /// IP total length in bytes (what the queue counts and the link serializes).
    pub size: u32,
    /// Flow hash in the packet's direction (what FQ schedulers classify on).
    pub hash: u32,
    /// Opaque to the discipline: the owner's reference to the packet.
    pub handle: u32,
    /// IP ECN field (`crate::packet::ecn`); a discipline may set CE.
    pub ecn: u8,
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The queue was full (packet or byte limit) when the packet arrived.
    Overflow,
    /// An AQM's early drop at enqueue (RED/ARED, PIE).
    AqmEnqueue,
    /// An AQM's drop at dequeue (CoDel and FQ-CoDel's CoDel).
    AqmDequeue,
    /// Dropped from the head to make room (drophead).
    HeadDrop,
    /// FQ overflow: dropped from the flow with the largest backlog.
    FqOverflow,
}

impl DropReason {
    pub const ALL: [DropReason; 5] = [
        DropReason::Overflow,
        DropReason::AqmEnqueue,
        DropReason::AqmDequeue,
        DropReason::HeadDrop,
        DropReason::FqOverflow,
    ];
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Overflow => "overflow",
            DropReason::AqmEnqueue => "aqm_enqueue",
            DropReason::AqmDequeue => "aqm_dequeue",
            DropReason::HeadDrop => "head_drop",
            DropReason::FqOverflow => "fq_overflow",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A dropped packet and whether it had been queued (counted as enqueued) before.
#[derive(Clone, Copy, Debug)]
pub struct Dropped {
    pub pkt: Item,
    pub reason: DropReason,
    pub was_queued: bool,
}

/// Where a discipline reports drops and marks during one call.
#[derive(Debug, Default)]
pub struct DropSink {
    pub drops: Vec<Dropped>,
    pub marks: u64,
}

impl DropSink {
    /// The arriving packet is not accepted.
    #[inline]
    pub fn reject(&mut self, pkt: Item, reason: DropReason) {
        self.drops.push(Dropped { pkt, reason, was_queued: false });
    }
    /// A packet that had been accepted earlier is dropped.
    #[inline]
    pub fn drop_queued(&mut self, pkt: Item, reason: DropReason) {
        self.drops.push(Dropped { pkt, reason, was_queued: true });
    }
    /// One packet was CE-marked instead of dropped.
    #[inline]
    pub fn mark(&mut self) {
        self.marks += 1;
    }
}

/// The algorithm interface. See the module docs.
pub trait QueueDiscipline: Send {
    fn enqueue(&mut self, now: Ns, pkt: Item, sink: &mut DropSink);
    fn dequeue(&mut self, now: Ns, sink: &mut DropSink) -> Option<Item>;
    /// Packets currently stored.
    fn len_packets(&self) -> u64;
    /// Bytes (IP length) currently stored.
    fn len_bytes(&self) -> u64;
    /// When `on_timer` must next run (NEVER if not needed).
    fn next_timer(&self) -> Ns {
        NEVER
    }
    fn on_timer(&mut self, _now: Ns) {}
    /// Whether `next_timer` can ever return a time (false: the owner may skip asking).
    fn uses_timer(&self) -> bool {
        false
    }
    /// `Some((packets, bytes))` if this discipline is a plain tail-drop FIFO that rejects an
    /// arrival exactly when `len_packets() >= packets` or `len_bytes() + size > bytes` (and does
    /// nothing else: no marks, no timers, no drops at dequeue). A link may then serve it
    /// analytically (see docs/link.md).
    fn fifo_limits(&self) -> Option<(u64, u64)> {
        None
    }
    /// Whether `dequeue` on an empty queue leaves the discipline exactly as it was (plain
    /// FIFOs). A link serves a packet that leaves an otherwise empty queue without waking up at
    /// the end of its serialization only then: other disciplines change state on that call
    /// (FQ-CoDel unlists an emptied flow, CoDel leaves its dropping state, PIE and ARED catch up
    /// their periodic updates), and the link must make it when the undelayed link would
    /// (docs/link.md).
    fn quiet_when_empty(&self) -> bool {
        false
    }
    /// A scalar of the algorithm's state for queue samples (drop probability for RED/PIE,
    /// max_p for ARED, drop count for CoDel); NaN if none.
    fn probe(&self) -> f64 {
        f64::NAN
    }
    /// Flow-queueing disciplines: the number of distinct flow hashes that shared a flow queue
    /// with another hash while both had packets queued (hash collisions). None otherwise.
    fn flow_collisions(&self) -> Option<u64> {
        None
    }
}

/// What a discipline is built from besides its own parameters.
#[derive(Clone, Debug)]
pub struct AqmBuildCtx {
    /// Buffer limit in packets from the link's `buffer` (None = not limited in packets).
    pub limit_packets: Option<u64>,
    /// Buffer limit in bytes from the link's `buffer` (None = not limited in bytes).
    pub limit_bytes: Option<u64>,
    /// Link rate (bit/s) at build time (0 for trace-driven links); used by RED's idle decay.
    pub link_rate_bps: u64,
    /// Seed of this queue's random stream (already derived from the scenario seed and the
    /// component name).
    pub seed: u64,
}

/// Builds a discipline from its parameters and context.
pub type AqmBuildFn = fn(&Params, &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError>;

/// A registered discipline.
pub struct AqmEntry {
    pub name: &'static str,
    /// One line: what it is.
    pub summary: &'static str,
    /// The specification it follows (RFC / paper).
    pub reference: &'static str,
    pub params: &'static [ParamSpec],
    pub build: AqmBuildFn,
}

/// Every discipline, one line each.
pub static REGISTRY: &[AqmEntry] = &[
    pfifo::PFIFO,
    bfifo::BFIFO,
    drophead::DROPHEAD,
    codel::CODEL,
    pie::PIE,
    docsis_pie::DOCSIS_PIE,
    red::RED,
    red::ARED,
    fq_codel::FQ_CODEL,
];

pub fn find(name: &str) -> Option<&'static AqmEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Build a discipline by name from parameters (unknown names are rejected).
pub fn build(name: &str, params: &Params, ctx: &AqmBuildCtx) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    let e = find(name).ok_or_else(|| {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        crate::params::perr(
            "kind",
            format!("unknown queue discipline \"{name}\"; expected one of: {}", names.join(", ")),
        )
    })?;
    params.check_known(e.params)?;
    (e.build)(params, ctx)
}

/// Counters of one queue, in packets and bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueStats {
    pub arrived_pkts: u64,
    pub arrived_bytes: u64,
    pub enqueued_pkts: u64,
    pub enqueued_bytes: u64,
    pub dequeued_pkts: u64,
    pub dequeued_bytes: u64,
    /// Drops of arriving packets (never queued), by [`DropReason::index`].
    pub dropped_at_enqueue_pkts: [u64; 5],
    pub dropped_at_enqueue_bytes: [u64; 5],
    /// Drops of packets that had been queued, by reason.
    pub dropped_later_pkts: [u64; 5],
    pub dropped_later_bytes: [u64; 5],
    pub marked_pkts: u64,
    /// Sum and count of sojourn times of dequeued packets (ns).
    pub sojourn_sum: u128,
    /// Largest queue length seen after an enqueue (not tracked for packets a link serves
    /// analytically, see [`Queue::bypass`]).
    pub max_len_pkts: u64,
    pub max_len_bytes: u64,
}

impl QueueStats {
    pub fn dropped_pkts(&self) -> u64 {
        self.dropped_at_enqueue_pkts.iter().sum::<u64>() + self.dropped_later_pkts.iter().sum::<u64>()
    }
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_at_enqueue_bytes.iter().sum::<u64>() + self.dropped_later_bytes.iter().sum::<u64>()
    }
}

/// Conservation failure (a bug in a discipline or in the driver).
#[derive(Clone, Debug, PartialEq)]
pub struct ConservationError(pub String);

/// The shared wrapper: a discipline plus all accounting.
pub struct Queue {
    pub kind: &'static str,
    inner: Box<dyn QueueDiscipline>,
    pub stats: QueueStats,
    sink: DropSink,
    /// Histogram of the sojourn times (ns) of dequeued packets, only if enabled (for
    /// percentiles; bounded memory, relative error <= 0.39%).
    pub sojourn_hist: Option<LogHistogram>,
    uses_timer: bool,
    /// Packets and bytes queued, kept by the wrapper (= the discipline's own count, checked by
    /// `check_conservation`), so that lengths cost no call into the discipline.
    len_pkts: u64,
    len_bytes: u64,
}

impl Queue {
    pub fn new(kind: &'static str, inner: Box<dyn QueueDiscipline>) -> Queue {
        let uses_timer = inner.uses_timer();
        Queue {
            kind,
            inner,
            stats: QueueStats::default(),
            sink: DropSink::default(),
            sojourn_hist: None,
            uses_timer,
            len_pkts: 0,
            len_bytes: 0,
        }
    }

    /// Build from the registry.
    pub fn build(name: &str, params: &Params, ctx: &AqmBuildCtx) -> Result<Queue, ParamError> {
        let e =
            find(name).ok_or_else(|| crate::params::perr("kind", format!("unknown queue discipline \"{name}\"")))?;
        Ok(Queue::new(e.name, build(name, params, ctx)?))
    }

    /// Keep a histogram of sojourn times for percentiles.
    pub fn record_sojourns(&mut self) {
        self.sojourn_hist = Some(LogHistogram::new());
    }

    fn account_drops(&mut self) {
        let s = &mut self.stats;
        for d in &self.sink.drops {
            let i = d.reason.index();
            if d.was_queued {
                self.len_pkts -= 1;
                self.len_bytes -= d.pkt.size as u64;
                s.dropped_later_pkts[i] += 1;
                s.dropped_later_bytes[i] += d.pkt.size as u64;
            } else {
                s.dropped_at_enqueue_pkts[i] += 1;
                s.dropped_at_enqueue_bytes[i] += d.pkt.size as u64;
            }
        }
        s.marked_pkts += self.sink.marks;
        self.sink.marks = 0;
    }

    /// Offer an arriving packet. Drops (of it or of others) are appended to `dropped` when given.
    #[inline]
    pub fn enqueue(&mut self, now: Ns, mut pkt: Item, dropped: Option<&mut Vec<Dropped>>) {
        pkt.enq_at = now;
        self.stats.arrived_pkts += 1;
        self.stats.arrived_bytes += pkt.size as u64;
        let size = pkt.size as u64;
        self.inner.enqueue(now, pkt, &mut self.sink);
        let rejected = self.sink.drops.iter().any(|d| !d.was_queued);
        if !rejected {
            self.stats.enqueued_pkts += 1;
            self.stats.enqueued_bytes += size;
            self.len_pkts += 1;
            self.len_bytes += size;
        }
        self.after_call(dropped);
        self.stats.max_len_pkts = self.stats.max_len_pkts.max(self.len_pkts);
        self.stats.max_len_bytes = self.stats.max_len_bytes.max(self.len_bytes);
    }

    /// Take the next packet to transmit.
    #[inline]
    pub fn dequeue(&mut self, now: Ns, dropped: Option<&mut Vec<Dropped>>) -> Option<Item> {
        let p = self.inner.dequeue(now, &mut self.sink);
        if let Some(p) = &p {
            debug_assert!(now >= p.enq_at);
            let soj = now - p.enq_at;
            self.stats.dequeued_pkts += 1;
            self.stats.dequeued_bytes += p.size as u64;
            self.len_pkts -= 1;
            self.len_bytes -= p.size as u64;
            self.stats.sojourn_sum += soj as u128;
            if let Some(h) = &mut self.sojourn_hist {
                h.record(soj);
            }
        }
        self.after_call(dropped);
        p
    }

    #[inline]
    fn after_call(&mut self, dropped: Option<&mut Vec<Dropped>>) {
        if !self.sink.drops.is_empty() || self.sink.marks > 0 {
            self.account_drops();
            if let Some(out) = dropped {
                out.extend(self.sink.drops.iter().copied());
            }
            self.sink.drops.clear();
        }
    }

    /// The discipline's next timer (NEVER if none; not asked if it never uses timers).
    #[inline]
    pub fn next_timer(&self) -> Ns {
        if self.uses_timer {
            self.inner.next_timer()
        } else {
            NEVER
        }
    }
    /// See [`QueueDiscipline::fifo_limits`].
    pub fn fifo_limits(&self) -> Option<(u64, u64)> {
        self.inner.fifo_limits()
    }
    /// See [`QueueDiscipline::quiet_when_empty`].
    pub fn quiet_when_empty(&self) -> bool {
        self.inner.quiet_when_empty()
    }

    /// Account a packet that a plain FIFO would have taken and handed out after `sojourn` ns,
    /// without storing it (the owner serves the FIFO analytically): arrival, enqueue and
    /// dequeue at once, so the conservation identities hold.
    #[inline]
    pub fn bypass(&mut self, size: u64, sojourn: Ns) {
        let s = &mut self.stats;
        s.arrived_pkts += 1;
        s.arrived_bytes += size;
        s.enqueued_pkts += 1;
        s.enqueued_bytes += size;
        s.dequeued_pkts += 1;
        s.dequeued_bytes += size;
        s.sojourn_sum += sojourn as u128;
        if let Some(h) = &mut self.sojourn_hist {
            h.record(sojourn);
        }
    }
    /// Account an arrival that the analytically served FIFO rejects (overflow).
    pub fn bypass_reject(&mut self, size: u64) {
        let s = &mut self.stats;
        s.arrived_pkts += 1;
        s.arrived_bytes += size;
        let i = DropReason::Overflow.index();
        s.dropped_at_enqueue_pkts[i] += 1;
        s.dropped_at_enqueue_bytes[i] += size;
    }
    pub fn on_timer(&mut self, now: Ns) {
        self.inner.on_timer(now)
    }
    #[inline]
    pub fn len_packets(&self) -> u64 {
        self.len_pkts
    }
    #[inline]
    pub fn len_bytes(&self) -> u64 {
        self.len_bytes
    }
    /// Whether the discipline has periodic work (`next_timer` can return a time).
    #[inline]
    pub fn uses_timer(&self) -> bool {
        self.uses_timer
    }
    pub fn probe(&self) -> f64 {
        self.inner.probe()
    }
    /// See [`QueueDiscipline::flow_collisions`].
    pub fn flow_collisions(&self) -> Option<u64> {
        self.inner.flow_collisions()
    }

    /// arrived = enqueued + dropped at enqueue; enqueued = dequeued + dropped later + queued
    /// (in packets and in bytes).
    pub fn check_conservation(&self) -> Result<(), ConservationError> {
        let s = &self.stats;
        let de_p: u64 = s.dropped_at_enqueue_pkts.iter().sum();
        let de_b: u64 = s.dropped_at_enqueue_bytes.iter().sum();
        let dl_p: u64 = s.dropped_later_pkts.iter().sum();
        let dl_b: u64 = s.dropped_later_bytes.iter().sum();
        let (qp, qb) = (self.inner.len_packets(), self.inner.len_bytes());
        if s.arrived_pkts != s.enqueued_pkts + de_p || s.arrived_bytes != s.enqueued_bytes + de_b {
            return Err(ConservationError(format!(
                "queue {}: arrived {} pkts/{} B != enqueued {}/{} + dropped at enqueue {}/{}",
                self.kind, s.arrived_pkts, s.arrived_bytes, s.enqueued_pkts, s.enqueued_bytes, de_p, de_b
            )));
        }
        if s.enqueued_pkts != s.dequeued_pkts + dl_p + qp || s.enqueued_bytes != s.dequeued_bytes + dl_b + qb {
            return Err(ConservationError(format!(
                "queue {}: enqueued {} pkts/{} B != dequeued {}/{} + dropped later {}/{} + queued {}/{}",
                self.kind, s.enqueued_pkts, s.enqueued_bytes, s.dequeued_pkts, s.dequeued_bytes, dl_p, dl_b, qp, qb
            )));
        }
        if (qp, qb) != (self.len_pkts, self.len_bytes) {
            return Err(ConservationError(format!(
                "queue {}: the discipline holds {qp} pkts/{qb} B, the counters say {}/{}",
                self.kind, self.len_pkts, self.len_bytes
            )));
        }
        Ok(())
    }
}
