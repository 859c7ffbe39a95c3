//! The discrete-event engine: a priority queue of compact events ordered by (time, sequence).
//!
//! The engine knows nothing about packets, TCP or queues: an event is a `(time, seq, target)`
//! triple where `target` is an opaque `u64` the driver ([`crate::net`]) interprets. Ties in time
//! are broken by the insertion sequence number, so the order of simultaneous events is fixed by
//! construction and runs are deterministic. Time never goes backwards (checked on every pop).
//!
//! The queue has two parts: up to `NEAR` events in a small Vec sorted latest first (a pop is
//! `Vec::pop`, an insertion moves the events due before it up one; when it is full, a new event goes
//! there only if it is earlier than its latest, which then moves out) and the others in a 4-ary
//! min-heap. Timers that are usually far ahead (endpoint and client timers) go straight to the heap
//! ([`Engine::schedule_far`]), so that the near queue keeps the packet events. A pop takes the
//! earlier of the two heads. `seq` is unique, so the pop order is exactly the (time, seq) order
//! whatever goes where.

use crate::time::Ns;
use std::cmp::Ordering;

/// One scheduled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: Ns,
    pub seq: u64,
    /// Opaque target (the driver packs a component kind and index into it).
    pub target: u64,
}

impl Event {
    /// Strictly earlier in (time, seq) order.
    #[inline(always)]
    fn before(&self, other: &Event) -> bool {
        self.time < other.time || (self.time == other.time && self.seq < other.seq)
    }
}

impl Ord for Event {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // Inverted, for max-heaps such as BinaryHeap: the earliest (time, seq) is the greatest.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}
impl PartialOrd for Event {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Events kept in the sorted near queue at most.
const NEAR: usize = 32;

/// The event queue and the simulation clock.
#[derive(Debug, Default)]
pub struct Engine {
    /// The earliest events (usually all of them), sorted latest first: a pop takes the last,
    /// an insertion scans from the front (new events are mostly the latest).
    near: Vec<Event>,
    /// The rest, in a 4-ary min-heap: the children of `i` are `4i+1 ..= 4i+4`.
    heap: Vec<Event>,
    seq: u64,
    now: Ns,
    processed: u64,
}

impl Engine {
    pub fn new() -> Engine {
        Engine { near: Vec::with_capacity(NEAR + 1), heap: Vec::new(), seq: 0, now: 0, processed: 0 }
    }
    /// Current simulated time.
    #[inline]
    pub fn now(&self) -> Ns {
        self.now
    }
    /// Events popped so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
    /// Events waiting.
    pub fn pending(&self) -> usize {
        self.near.len() + self.heap.len()
    }
    /// Schedule `target` at `time` (>= now).
    #[inline(always)]
    pub fn schedule(&mut self, time: Ns, target: u64) {
        assert!(time >= self.now, "event scheduled in the past: {time} < now {}", self.now);
        self.seq += 1;
        let e = Event { time, seq: self.seq, target };
        let n = self.near.len();
        // `e` has the largest seq so far: an event at the same time is before it, so comparing
        // times is enough here.
        if n < NEAR || time < self.near[0].time {
            if n == NEAR {
                let out = self.near.remove(0);
                self.heap_push(out);
            }
            // Insertion from the earliest end: the events at or before `time` move up one.
            let v = &mut self.near;
            v.push(e);
            let mut i = v.len() - 1;
            while i > 0 && v[i - 1].time <= time {
                v[i] = v[i - 1];
                i -= 1;
            }
            v[i] = e;
        } else {
            self.heap_push(e);
        }
    }
    /// Schedule `target` at `time` (>= now) straight into the heap: for timers that are usually
    /// far ahead (endpoint and client timers), which would otherwise shift the near queue or
    /// overflow it. The pop order is the same (time, seq) order wherever an event goes.
    #[inline]
    pub fn schedule_far(&mut self, time: Ns, target: u64) {
        assert!(time >= self.now, "event scheduled in the past: {time} < now {}", self.now);
        self.seq += 1;
        self.heap_push(Event { time, seq: self.seq, target });
    }
    /// Sift `e` up from a new hole at the end of the heap.
    #[inline(never)]
    fn heap_push(&mut self, e: Event) {
        // Sift up from a hole at the end.
        let h = &mut self.heap;
        let mut i = h.len();
        h.push(e);
        while i > 0 {
            let parent = (i - 1) / 4;
            let pe = h[parent];
            if !e.before(&pe) {
                break;
            }
            h[i] = pe;
            i = parent;
        }
        h[i] = e;
    }
    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Ns> {
        match (self.near.last(), self.heap.first()) {
            (Some(a), Some(b)) => Some(a.time.min(b.time)),
            (a, b) => a.or(b).map(|e| e.time),
        }
    }
    /// Pop the next event if its time is <= `until`, advancing the clock.
    #[inline]
    pub fn pop_until(&mut self, until: Ns) -> Option<Event> {
        let e = match (self.near.last(), self.heap.first()) {
            (Some(a), Some(b)) if b.before(a) => {
                if b.time > until {
                    return None;
                }
                self.pop_min()
            }
            (Some(a), _) => {
                if a.time > until {
                    return None;
                }
                self.near.pop().expect("non-empty near queue")
            }
            (None, Some(b)) => {
                if b.time > until {
                    return None;
                }
                self.pop_min()
            }
            (None, None) => return None,
        };
        assert!(e.time >= self.now, "time went backwards: {} < {}", e.time, self.now);
        self.now = e.time;
        self.processed += 1;
        Some(e)
    }
    /// Remove and return the root (the heap is not empty).
    #[inline]
    fn pop_min(&mut self) -> Event {
        let h = &mut self.heap;
        let top = h[0];
        let last = h.pop().expect("non-empty heap");
        let n = h.len();
        if n == 0 {
            return top;
        }
        // Sift the last element down from a hole at the root.
        let h = h.as_mut_slice();
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c >= n {
                break;
            }
            let kids = &h[c..(c + 4).min(n)];
            let mut m = 0;
            let mut me = kids[0];
            for (j, k) in kids.iter().enumerate().skip(1) {
                if k.before(&me) {
                    m = j;
                    me = *k;
                }
            }
            if !me.before(&last) {
                break;
            }
            h[i] = me;
            i = c + m;
        }
        h[i] = last;
        top
    }
    /// Advance the clock to `t` with no event (end of run); `t` must not be in the past.
    pub fn advance_to(&mut self, t: Ns) {
        assert!(t >= self.now, "time went backwards");
        self.now = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn orders_by_time_then_insertion() {
        let mut e = Engine::new();
        e.schedule(5, 1);
        e.schedule(3, 2);
        e.schedule(5, 3);
        e.schedule(3, 4);
        let order: Vec<u64> = std::iter::from_fn(|| e.pop_until(u64::MAX)).map(|ev| ev.target).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
        assert_eq!(e.now(), 5);
        assert_eq!(e.processed(), 4);
    }
    #[test]
    #[should_panic(expected = "past")]
    fn refuses_the_past() {
        let mut e = Engine::new();
        e.schedule(10, 0);
        e.pop_until(100);
        e.schedule(5, 0);
    }
    #[test]
    fn heap_pops_in_time_then_seq_order() {
        let mut e = Engine::new();
        let mut rng = crate::rng::Rng::from_seed(7);
        let mut want = Vec::new();
        let mut got = Vec::new();
        for round in 0..200u64 {
            for k in 0..(rng.next_u64() % 9) {
                let t = e.now() + rng.next_u64() % 50;
                // Both entry points: the pop order is (time, seq) whatever part holds an event.
                if rng.next_u64().is_multiple_of(3) {
                    e.schedule_far(t, round * 100 + k);
                } else {
                    e.schedule(t, round * 100 + k);
                }
                want.push((t, e.seq, round * 100 + k));
            }
            for _ in 0..(rng.next_u64() % 7) {
                if let Some(ev) = e.pop_until(u64::MAX) {
                    got.push((ev.time, ev.seq, ev.target));
                    want.sort();
                    assert_eq!(want.remove(0), (ev.time, ev.seq, ev.target));
                }
            }
        }
        while let Some(ev) = e.pop_until(u64::MAX) {
            want.sort();
            assert_eq!(want.remove(0), (ev.time, ev.seq, ev.target));
        }
        assert!(want.is_empty());
        assert!(!got.is_empty());
    }
    #[test]
    fn pop_until_respects_horizon() {
        let mut e = Engine::new();
        e.schedule(10, 0);
        assert!(e.pop_until(9).is_none());
        assert!(e.pop_until(10).is_some());
    }
}
