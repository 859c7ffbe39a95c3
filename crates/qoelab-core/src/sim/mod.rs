//! The discrete-event engine: a priority queue of compact events ordered by (time, sequence).
//!
//! The engine knows nothing about packets, TCP or queues: an event is a `(time, seq, target)`
//! triple where `target` is an opaque `u64` the driver ([`crate::net`]) interprets. Ties in time
//! are broken by the insertion sequence number, so the order of simultaneous events is fixed by
//! construction and runs are deterministic. Time never goes backwards (checked on every pop).

use crate::time::Ns;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One scheduled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: Ns,
    pub seq: u64,
    /// Opaque target (the driver packs a component kind and index into it).
    pub target: u64,
}

impl Ord for Event {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: invert so the earliest (time, seq) is on top.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}
impl PartialOrd for Event {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The event queue and the simulation clock.
#[derive(Debug, Default)]
pub struct Engine {
    heap: BinaryHeap<Event>,
    seq: u64,
    now: Ns,
    processed: u64,
}

impl Engine {
    pub fn new() -> Engine {
        Engine { heap: BinaryHeap::with_capacity(1024), seq: 0, now: 0, processed: 0 }
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
        self.heap.len()
    }
    /// Schedule `target` at `time` (>= now).
    #[inline]
    pub fn schedule(&mut self, time: Ns, target: u64) {
        assert!(time >= self.now, "event scheduled in the past: {time} < now {}", self.now);
        self.seq += 1;
        self.heap.push(Event { time, seq: self.seq, target });
    }
    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|e| e.time)
    }
    /// Pop the next event if its time is <= `until`, advancing the clock.
    #[inline]
    pub fn pop_until(&mut self, until: Ns) -> Option<Event> {
        if self.heap.peek()?.time > until {
            return None;
        }
        let e = self.heap.pop()?;
        assert!(e.time >= self.now, "time went backwards: {} < {}", e.time, self.now);
        self.now = e.time;
        self.processed += 1;
        Some(e)
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
    fn pop_until_respects_horizon() {
        let mut e = Engine::new();
        e.schedule(10, 0);
        assert!(e.pop_until(9).is_none());
        assert!(e.pop_until(10).is_some());
    }
}
