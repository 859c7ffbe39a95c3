//! The sender's retransmission queue and SACK scoreboard (RFC 6675 with segment granularity).
//!
//! Segments are kept in sequence order from SND.UNA to SND.NXT. They are never re-segmented
//! (retransmissions reuse the original boundaries), so SACK blocks and cumulative ACKs from our
//! receiver always fall on segment boundaries; a cumulative ACK inside a segment trims it.
//!
//! Counters follow Linux: `pipe = outstanding - sacked - lost + retransmitted` (RFC 6675 SetPipe:
//! a not-SACKed byte counts once if not lost and once more if retransmitted).

use super::ranges::RangeSet;
use crate::time::Ns;
use std::collections::VecDeque;

/// One outstanding segment and its delivery-rate bookkeeping (draft-cheng-iccrg-delivery-rate-
/// estimation "P.*" fields, refreshed on every transmission).
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub seq: u64,
    pub len: u64,
    /// Time of the latest transmission.
    pub sent_time: Ns,
    /// C.delivered / C.delivered_time / C.first_sent_time when this segment was (re)sent.
    pub delivered: u64,
    pub delivered_time: Ns,
    pub first_sent_time: Ns,
    pub app_limited: bool,
    pub sacked: bool,
    pub lost: bool,
    /// Retransmitted and the retransmission is still considered in flight.
    pub retrans: bool,
    /// Ever retransmitted (Karn).
    pub ever_retrans: bool,
    /// SND.NXT when the latest retransmission was sent (lost-retransmission detection).
    pub retx_high: u64,
}

impl Seg {
    /// Delivery-rate fields of the latest transmission.
    pub fn send_stamp(&self) -> crate::cc::rate::SendStamp {
        crate::cc::rate::SendStamp {
            sent_time: self.sent_time,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited,
        }
    }
    /// Record a (re)transmission's delivery-rate fields.
    pub fn set_stamp(&mut self, st: &crate::cc::rate::SendStamp) {
        self.sent_time = st.sent_time;
        self.delivered = st.delivered;
        self.delivered_time = st.delivered_time;
        self.first_sent_time = st.first_sent_time;
        self.app_limited = st.app_limited;
    }

    #[inline]
    pub fn end(&self) -> u64 {
        self.seq + self.len
    }
}

#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    segs: VecDeque<Seg>,
    out_bytes: u64,
    sacked_bytes: u64,
    /// Marked lost and not SACKed (retransmitted or not).
    lost_bytes: u64,
    /// Retransmitted, not SACKed, retransmission still in flight.
    retrans_bytes: u64,
    /// Marked lost, not SACKed, not yet retransmitted: what NextSeg rule 1 retransmits.
    lost_pending_bytes: u64,
    /// Number of SACKed segments.
    sacked_segs: u64,
    /// Union of the SACKed segments' spans (merged), so that a SACK block only visits the
    /// segments it newly covers.
    sacked_ranges: RangeSet,
    /// IsLost cursor: every not-SACKed segment below it is marked lost (or was retransmitted);
    /// `below_*` count the SACKed segments/bytes below it.
    lost_cursor: u64,
    below_bytes: u64,
    below_segs: u64,
    /// No segment below this sequence can still need a retransmission (search hint).
    retx_hint: u64,
    /// Retransmissions in the order sent: (seq, retx_high). retx_high never decreases along it.
    retx_fifo: VecDeque<(u64, u64)>,
    /// Highest end of SACKed data seen (Linux `received_upto` of `tcp_mark_lost_retrans`).
    high_sacked: u64,
}

impl Scoreboard {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn len(&self) -> usize {
        self.segs.len()
    }
    pub fn first(&self) -> Option<&Seg> {
        self.segs.front()
    }
    pub fn get(&self, i: usize) -> &Seg {
        &self.segs[i]
    }
    pub fn out_bytes(&self) -> u64 {
        self.out_bytes
    }
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }
    pub fn retrans_bytes(&self) -> u64 {
        self.retrans_bytes
    }
    pub fn lost_pending_bytes(&self) -> u64 {
        self.lost_pending_bytes
    }
    /// RFC 6675 pipe.
    pub fn pipe(&self) -> u64 {
        (self.out_bytes + self.retrans_bytes).saturating_sub(self.sacked_bytes + self.lost_bytes)
    }

    /// Append a newly sent segment (must start at the current end).
    pub fn push(&mut self, seg: Seg) {
        debug_assert!(self.segs.back().is_none_or(|b| b.end() == seg.seq));
        self.out_bytes += seg.len;
        self.segs.push_back(seg);
    }

    fn index_of(&self, seq: u64) -> usize {
        self.segs.partition_point(|s| s.end() <= seq)
    }

    fn unlink(&mut self, s: &Seg) {
        self.out_bytes -= s.len;
        if s.sacked {
            self.sacked_bytes -= s.len;
            self.sacked_segs -= 1;
            if s.seq < self.lost_cursor {
                self.below_bytes -= s.len;
                self.below_segs -= 1;
            }
        } else {
            if s.lost {
                self.lost_bytes -= s.len;
                if !s.retrans {
                    self.lost_pending_bytes -= s.len;
                }
            }
            if s.retrans {
                self.retrans_bytes -= s.len;
            }
        }
    }

    /// Cumulative ACK up to `ack`: remove covered segments. `delivered(seg)` is called for every
    /// segment (or trimmed part) delivered by this ACK that had not been SACKed before.
    /// Returns the bytes newly delivered.
    pub fn ack_cum(&mut self, ack: u64, mut delivered: impl FnMut(&Seg)) -> u64 {
        let mut newly = 0;
        while let Some(front) = self.segs.front().copied() {
            if front.seq >= ack {
                break;
            }
            if front.end() <= ack {
                self.segs.pop_front();
                self.unlink(&front);
                if !front.sacked {
                    newly += front.len;
                    delivered(&front);
                }
            } else {
                // partial ACK inside a segment: trim its head
                let cut = ack - front.seq;
                let mut part = front;
                part.len = cut;
                self.unlink(&part);
                if front.sacked {
                    // the segment stays (trimmed): it is still one SACKed segment
                    self.sacked_segs += 1;
                    if front.seq < self.lost_cursor {
                        self.below_segs += 1;
                    }
                }
                if !front.sacked {
                    newly += cut;
                    delivered(&part);
                }
                let f = self.segs.front_mut().unwrap();
                f.seq = ack;
                f.len -= cut;
                break;
            }
        }
        if self.lost_cursor < ack {
            self.lost_cursor = ack;
        }
        self.sacked_ranges.trim_below(ack);
        self.retx_hint = self.retx_hint.max(ack);
        if self.segs.is_empty() {
            self.retx_fifo.clear();
        }
        newly
    }

    /// Mark segments fully inside the SACK block `[start, end)` as SACKed. Returns newly SACKed
    /// bytes; `delivered(seg)` is called for each newly SACKed segment. Only the parts of the block
    /// not already SACKed are visited.
    pub fn sack(&mut self, start: u64, end: u64, mut delivered: impl FnMut(&Seg)) -> u64 {
        let mut newly = 0;
        let mut cur = start;
        loop {
            if let Some((_, re)) = self.sacked_ranges.last_starting_at_or_before(cur) {
                if re > cur {
                    cur = re;
                }
            }
            if cur >= end {
                break;
            }
            let gap_end = self.sacked_ranges.first_start_in(cur, end).unwrap_or(end);
            let mut i = self.index_of(cur);
            while i < self.segs.len() {
                let s = self.segs[i];
                if s.seq >= gap_end {
                    break;
                }
                if !s.sacked && s.seq >= start && s.end() <= end {
                    self.unlink(&s);
                    let m = &mut self.segs[i];
                    m.sacked = true;
                    m.lost = false;
                    m.retrans = false;
                    self.out_bytes += s.len; // unlink removed it; a SACKed segment stays outstanding
                    self.sacked_bytes += s.len;
                    self.sacked_segs += 1;
                    if s.seq < self.lost_cursor {
                        self.below_bytes += s.len;
                        self.below_segs += 1;
                    }
                    self.insert_range(s.seq, s.end());
                    self.high_sacked = self.high_sacked.max(s.end());
                    newly += s.len;
                    delivered(&s);
                }
                i += 1;
            }
            cur = gap_end;
        }
        newly
    }

    fn insert_range(&mut self, s: u64, e: u64) {
        self.sacked_ranges.insert(s, e, |_| {});
    }

    fn set_lost(&mut self, i: usize) -> u64 {
        let s = &mut self.segs[i];
        if s.sacked || s.lost {
            return 0;
        }
        s.lost = true;
        let (len, seq, retrans) = (s.len, s.seq, s.retrans);
        self.lost_bytes += len;
        if !retrans {
            self.lost_pending_bytes += len;
            self.retx_hint = self.retx_hint.min(seq);
        }
        len
    }

    /// RFC 6675 IsLost for every not-SACKed segment: lost if at least `dupthresh` SACKed segments
    /// or more than `(dupthresh - 1) * mss` SACKed bytes lie above it. Segments already
    /// retransmitted are not re-marked (HighRxt rule). Returns bytes newly marked lost.
    ///
    /// IsLost is monotone (SACKed data above a segment only grows, and a lower segment has at least
    /// as much above it), so a cursor walks up the queue once: amortized O(1) per segment.
    #[inline]
    pub fn mark_lost_rfc6675(&mut self, mss: u64, dupthresh: u64) -> u64 {
        if self.sacked_segs == 0 {
            return 0;
        }
        self.mark_lost_rfc6675_walk(mss, dupthresh)
    }

    fn mark_lost_rfc6675_walk(&mut self, mss: u64, dupthresh: u64) -> u64 {
        let mut newly = 0;
        let mut i = self.index_of(self.lost_cursor);
        while i < self.segs.len() {
            let s = self.segs[i];
            if s.sacked {
                self.below_bytes += s.len;
                self.below_segs += 1;
            } else if !(s.lost || s.retrans) {
                let above_bytes = self.sacked_bytes - self.below_bytes;
                let above_segs = self.sacked_segs - self.below_segs;
                if above_segs >= dupthresh || above_bytes > (dupthresh - 1) * mss {
                    newly += self.set_lost(i);
                } else {
                    break;
                }
            }
            self.lost_cursor = s.end();
            i += 1;
        }
        newly
    }

    /// Mark the first outstanding (not SACKed) segment lost (fast retransmit / NewReno partial
    /// ACK). Returns bytes newly marked.
    pub fn mark_first_lost(&mut self) -> u64 {
        match self.segs.iter().position(|s| !s.sacked) {
            Some(i) if !self.segs[i].retrans => self.set_lost(i),
            _ => 0,
        }
    }

    /// Retransmission timeout: every not-SACKed segment is lost and no retransmission is in flight.
    pub fn mark_all_lost(&mut self) -> u64 {
        let mut newly = 0;
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.sacked {
                continue;
            }
            if s.retrans {
                self.segs[i].retrans = false;
                self.retrans_bytes -= s.len;
                if s.lost {
                    self.lost_pending_bytes += s.len;
                }
            }
            newly += self.set_lost(i);
        }
        self.retx_hint = self.segs.front().map_or(0, |s| s.seq);
        self.retx_fifo.clear();
        if let Some(b) = self.segs.back() {
            self.lost_cursor = b.end();
            self.below_bytes = self.sacked_bytes;
            self.below_segs = self.sacked_segs;
        }
        newly
    }

    /// NextSeg rule 1: index of the lowest lost, not SACKed, not yet retransmitted segment.
    pub fn next_retransmit(&self) -> Option<usize> {
        if self.lost_pending_bytes == 0 {
            return None;
        }
        let mut i = self.index_of(self.retx_hint);
        while i < self.segs.len() {
            let s = &self.segs[i];
            if s.lost && !s.sacked && !s.retrans {
                return Some(i);
            }
            i += 1;
        }
        debug_assert!(false, "lost_pending_bytes without a pending segment");
        None
    }

    /// Lost retransmissions (Linux `tcp_mark_lost_retrans`, the SACK-based precursor of RACK): a
    /// retransmission sent when SND.NXT was `h` is deemed lost once data at or above `h +
    /// reordering` has been SACKed (data sent after it arrived, it did not). The segment becomes
    /// lost-not-retransmitted again, to be resent by NextSeg rule 1. Returns the bytes and the
    /// number of segments re-marked.
    #[inline]
    pub fn mark_lost_retransmits(&mut self, reordering: u64) -> (u64, u64) {
        match self.retx_fifo.front() {
            Some(&(_, high)) if self.high_sacked >= high + reordering => self.mark_lost_retransmits_walk(reordering),
            _ => (0, 0),
        }
    }

    fn mark_lost_retransmits_walk(&mut self, reordering: u64) -> (u64, u64) {
        let mut newly = 0;
        let mut count = 0;
        while let Some(&(seq, high)) = self.retx_fifo.front() {
            if self.high_sacked < high + reordering {
                break;
            }
            self.retx_fifo.pop_front();
            let i = self.index_of(seq);
            if i >= self.segs.len() {
                continue;
            }
            let s = self.segs[i];
            if s.seq != seq || !s.retrans || s.sacked || s.retx_high != high {
                continue; // acknowledged, SACKed, or retransmitted again since
            }
            debug_assert!(s.lost);
            self.segs[i].retrans = false;
            self.retrans_bytes -= s.len;
            self.lost_pending_bytes += s.len;
            self.retx_hint = self.retx_hint.min(seq);
            newly += s.len;
            count += 1;
        }
        (newly, count)
    }

    /// Record the retransmission of segment `i` while SND.NXT is `snd_nxt`; returns the segment
    /// before the update.
    pub fn on_retransmit(&mut self, i: usize, snd_nxt: u64) -> Seg {
        let s = self.segs[i];
        debug_assert!(s.lost && !s.sacked && !s.retrans);
        self.lost_pending_bytes -= s.len;
        self.retrans_bytes += s.len;
        self.retx_fifo.push_back((s.seq, snd_nxt));
        let m = &mut self.segs[i];
        m.retrans = true;
        m.ever_retrans = true;
        m.retx_high = snd_nxt;
        self.retx_hint = s.end();
        s
    }

    /// Update the delivery-rate fields of segment `i` at (re)transmission.
    pub fn stamp(&mut self, i: usize, f: impl FnOnce(&mut Seg)) {
        f(&mut self.segs[i]);
    }

    /// Recount everything and compare with the counters (tests).
    #[cfg(test)]
    pub fn check_counters(&self) {
        let mut out = 0;
        let mut sacked = 0;
        let mut lost = 0;
        let mut retrans = 0;
        let mut pending = 0;
        let (mut nsacked, mut below_b, mut below_n) = (0, 0, 0);
        let mut ranges: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
        for s in &self.segs {
            out += s.len;
            if s.sacked {
                match ranges.last_entry() {
                    Some(mut l) if *l.get() == s.seq => *l.get_mut() = s.end(),
                    _ => {
                        ranges.insert(s.seq, s.end());
                    }
                }
                sacked += s.len;
                nsacked += 1;
                if s.seq < self.lost_cursor {
                    below_b += s.len;
                    below_n += 1;
                }
                continue;
            }
            if s.end() <= self.lost_cursor {
                assert!(s.lost || s.retrans, "not-SACKed segment below the IsLost cursor is not lost");
            }
            if s.lost {
                lost += s.len;
                if !s.retrans {
                    pending += s.len;
                }
            }
            if s.retrans {
                retrans += s.len;
            }
        }
        assert_eq!(
            (out, sacked, lost, retrans, pending),
            (self.out_bytes, self.sacked_bytes, self.lost_bytes, self.retrans_bytes, self.lost_pending_bytes)
        );
        assert_eq!((nsacked, below_b, below_n), (self.sacked_segs, self.below_bytes, self.below_segs));
        assert_eq!(ranges.into_iter().collect::<Vec<_>>(), self.sacked_ranges.as_slice());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u64, len: u64) -> Seg {
        Seg {
            seq,
            len,
            sent_time: 0,
            delivered: 0,
            delivered_time: 0,
            first_sent_time: 0,
            app_limited: false,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
            retx_high: 0,
        }
    }

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new();
        for i in 0..n {
            b.push(seg(i * 100, 100));
        }
        b
    }

    #[test]
    fn pipe_follows_rfc6675_setpipe() {
        let mut b = board(10);
        assert_eq!(b.pipe(), 1000);
        // segment 0 lost, 1..=3 SACKed
        assert_eq!(b.sack(100, 400, |_| {}), 300);
        b.check_counters();
        assert_eq!(b.pipe(), 700);
        // 3 segments SACKed above seg 0 -> IsLost(seg 0) with dupthresh 3
        assert_eq!(b.mark_lost_rfc6675(100, 3), 100);
        assert_eq!(b.pipe(), 600);
        assert_eq!(b.next_retransmit(), Some(0));
        b.on_retransmit(0, 1000);
        assert_eq!(b.pipe(), 700);
        assert_eq!(b.next_retransmit(), None);
        b.check_counters();
        // cumulative ACK of everything up to 400 delivers only segment 0 (the rest was SACKed)
        let mut d = vec![];
        assert_eq!(b.ack_cum(400, |s| d.push(s.seq)), 100);
        assert_eq!(d, vec![0]);
        assert_eq!(b.pipe(), 600);
        b.check_counters();
    }

    #[test]
    fn is_lost_needs_three_segments_or_more_than_two_mss() {
        let mut b = board(10);
        b.sack(200, 400, |_| {}); // two segments above 0 and 1
        assert_eq!(b.mark_lost_rfc6675(100, 3), 0);
        b.sack(500, 600, |_| {}); // third
                                  // segments 0,1 have 3 SACKed above; segment 4 has only one above
        assert_eq!(b.mark_lost_rfc6675(100, 3), 200);
        assert!(b.get(0).lost && b.get(1).lost && !b.get(4).lost);
        b.check_counters();
        // RTO: all not-SACKed lost, retransmissions forgotten
        b.on_retransmit(0, 1000);
        b.mark_all_lost();
        b.check_counters();
        assert_eq!(b.lost_pending_bytes(), 700);
        assert_eq!(b.next_retransmit(), Some(0));
    }

    #[test]
    fn partial_cumulative_ack_trims() {
        let mut b = board(3);
        assert_eq!(b.ack_cum(150, |_| {}), 150);
        assert_eq!(b.first().unwrap().seq, 150);
        assert_eq!(b.out_bytes(), 150);
        b.check_counters();
    }

    #[test]
    fn cursor_matches_brute_force_islost() {
        let mut rng = crate::rng::Rng::from_seed(5);
        for _ in 0..50 {
            let mut b = Scoreboard::new();
            let n = 60;
            for i in 0..n {
                b.push(seg(i * 100, 100));
            }
            let mut una = 0;
            for _ in 0..40 {
                match rng.below(10) {
                    0 => {
                        una = (una + rng.below(4) * 100).min(n * 100);
                        b.ack_cum(una, |_| {});
                    }
                    1 => {
                        if let Some(i) = b.next_retransmit() {
                            b.on_retransmit(i, n * 100);
                        }
                    }
                    _ => {
                        let s = una + rng.below(n) * 100;
                        let e = s + (1 + rng.below(3)) * 100;
                        b.sack(s, e, |_| {});
                    }
                }
                b.mark_lost_rfc6675(100, 3);
                b.check_counters();
                // brute force: a not-SACKed, not retransmitted segment is lost iff IsLost holds
                for i in 0..b.len() {
                    let x = *b.get(i);
                    if x.sacked || x.retrans {
                        continue;
                    }
                    let above: Vec<&Seg> = (i + 1..b.len()).map(|j| b.get(j)).filter(|y| y.sacked).collect();
                    let is_lost = above.len() >= 3 || above.iter().map(|y| y.len).sum::<u64>() > 200;
                    assert_eq!(x.lost, is_lost, "segment {} ", x.seq);
                }
            }
        }
    }
}
