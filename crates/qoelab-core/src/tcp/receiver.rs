//! The receiving half of a TCP connection: cumulative ACK, SACK blocks (RFC 2018), out-of-order
//! buffering, delayed ACKs (RFC 5681 4.2, Linux quick-ACK rules for out-of-order data), timestamp
//! echo (RFC 7323 4.3) and ECN-Echo (RFC 3168).

use super::config::{FlowAddr, TcpConfig};
use super::ranges::RangeSet;
use crate::packet::{ecn, flags, Packet, MAX_SACK};
use crate::time::{Ns, NEVER};
use std::collections::VecDeque;

/// Receiver counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpReceiverStats {
    /// Data segments received (including duplicates).
    pub segments_received: u64,
    /// Segments received above rcv_nxt (out of order).
    pub out_of_order: u64,
    /// Segments entirely below rcv_nxt or already buffered.
    pub duplicates: u64,
    /// Pure ACKs sent (including SYN-ACKs).
    pub acks_sent: u64,
    /// ACKs sent by the delayed-ACK timer.
    pub delayed_acks: u64,
    /// Segments received with CE.
    pub ce_received: u64,
}

/// Receiver state machine of a half-connection (data arrives `addr.src -> addr.dst`).
pub struct TcpReceiver {
    cfg: TcpConfig,
    addr: FlowAddr,
    hash: u32,
    rcv_nxt: u64,
    /// Out-of-order data: start -> end, disjoint, non-adjacent, all above rcv_nxt.
    ooo: RangeSet,
    /// SACK block starts in order of most recent update (RFC 2018 ordering).
    sack_recent: Vec<u64>,
    /// RFC 7323 TS.Recent and Last.ACK.sent.
    ts_recent: Ns,
    last_ack_sent: u64,
    /// Bytes received in order since the last ACK sent.
    unacked_bytes: u64,
    delack_at: Ns,
    /// Quick-ACK segments left (Linux `icsk_ack.quick`) and time of the last data segment.
    quick: u32,
    last_data_rx: Option<Ns>,
    /// RFC 3168: echo ECE on every ACK until a CWR arrives.
    ece: bool,
    out: VecDeque<Packet>,
    stats: TcpReceiverStats,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig, addr: FlowAddr) -> Self {
        TcpReceiver {
            cfg: cfg.clone(),
            addr,
            hash: addr.ack_hash(),
            rcv_nxt: 0,
            ooo: RangeSet::new(),
            sack_recent: Vec::new(),
            ts_recent: 0,
            last_ack_sent: 0,
            unacked_bytes: 0,
            delack_at: NEVER,
            quick: 0,
            last_data_rx: None,
            ece: false,
            out: VecDeque::new(),
            stats: TcpReceiverStats::default(),
        }
    }

    /// Hash this half's ACKs on connection key `key` instead of its own (see
    /// [`super::TcpSender::set_hash_key`]).
    pub fn set_hash_key(&mut self, key: u32, rev: bool) {
        self.addr.hash_key = key;
        self.addr.hash_rev = rev;
        self.hash = self.addr.ack_hash();
    }

    /// In-order bytes delivered to the application.
    pub fn bytes_received(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn stats(&self) -> &TcpReceiverStats {
        &self.stats
    }
    /// Bytes held out of order.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo.as_slice().iter().map(|(s, e)| e - s).sum()
    }

    pub fn on_packet(&mut self, now: Ns, pkt: &Packet) {
        // only segments of this half-connection (same flow id, direction src -> dst)
        if pkt.flow != self.addr.flow || pkt.src != self.addr.src || pkt.dst != self.addr.dst || pkt.has(flags::DGRAM) {
            return;
        }
        if pkt.has(flags::SYN) {
            // (Re)transmitted SYN: answer with a SYN-ACK echoing its timestamp.
            if self.cfg.timestamps {
                self.ts_recent = pkt.ts_val;
            }
            let mut p = self.ack_packet(now);
            p.flags |= flags::SYN;
            p.size = self.cfg.syn_bytes();
            p.nsack = 0;
            self.push_ack(p);
            return;
        }
        if pkt.payload == 0 {
            return; // handshake ACK or stray pure ACK
        }
        self.stats.segments_received += 1;
        let mut ack_now = !self.cfg.delayed_ack;
        if self.cfg.quickack {
            // Linux tcp_event_data_recv: first data, or a gap longer than the RTO (min_rto here)
            let gap = self.last_data_rx.map(|t| now.saturating_sub(t));
            if gap.is_none_or(|g| g > self.cfg.min_rto) {
                let q = (self.cfg.rwnd / (2 * self.cfg.mss.max(1) as u64)).clamp(2, 16) as u32;
                self.quick = self.quick.max(q);
            }
            if self.quick > 0 {
                ack_now = true;
            }
        }
        self.last_data_rx = Some(now);

        // RFC 3168 6.1.3: CWR stops the echo; a new CE restarts it.
        if pkt.has(flags::CWR) {
            self.ece = false;
        }
        if pkt.ecn == ecn::CE {
            self.stats.ce_received += 1;
            if !self.ece {
                ack_now = true; // Linux: quick ACK on the first CE
            }
            self.ece = true;
        }
        // RFC 7323 4.3 (2): update TS.Recent if SEG.SEQ <= Last.ACK.sent.
        if self.cfg.timestamps && pkt.seq <= self.last_ack_sent && pkt.ts_val >= self.ts_recent {
            self.ts_recent = pkt.ts_val;
        }

        let (s, e) = (pkt.seq, pkt.end_seq());
        if e <= self.rcv_nxt {
            self.stats.duplicates += 1;
            ack_now = true; // RFC 5681: duplicate segment -> immediate ACK
        } else if s > self.rcv_nxt {
            self.stats.out_of_order += 1;
            self.insert_ooo(s, e);
            ack_now = true; // RFC 5681 4.2: out-of-order -> immediate (duplicate) ACK
        } else {
            // in order (possibly overlapping rcv_nxt)
            let had_hole = !self.ooo.is_empty();
            let old = self.rcv_nxt;
            self.rcv_nxt = e;
            // pull in buffered data now contiguous
            if had_hole {
                self.rcv_nxt = self.ooo.absorb_front(e);
                let rcv_nxt = self.rcv_nxt;
                self.sack_recent.retain(|&b| b > rcv_nxt);
            }
            self.unacked_bytes += self.rcv_nxt - old;
            if had_hole {
                ack_now = true; // RFC 5681 4.2: segment filling (part of) a hole -> immediate ACK
            }
            let mss = self.cfg.mss as u64;
            if self.unacked_bytes > (self.cfg.ack_every.max(1) as u64 - 1) * mss {
                ack_now = true;
            }
        }
        if ack_now {
            let p = self.ack_packet(now);
            self.push_ack(p);
        } else if self.delack_at == NEVER {
            self.delack_at = now + self.cfg.delack_timeout;
        }
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        // already buffered entirely: a duplicate
        if let Some((ps, pe)) = self.ooo.last_starting_at_or_before(s) {
            if pe >= e {
                self.stats.duplicates += 1;
                self.stats.out_of_order -= 1;
                // still report it first (RFC 2018: block containing the most recent segment)
                self.touch_sack(ps);
                return;
            }
        }
        // merge with every range it overlaps or touches; their SACK blocks become the new one
        let recent = &mut self.sack_recent;
        let (ns, _) = self.ooo.insert(s, e, |a| recent.retain(|&x| x != a));
        self.sack_recent.retain(|&x| x != ns);
        self.touch_sack(ns);
    }

    fn touch_sack(&mut self, start: u64) {
        self.sack_recent.retain(|&x| x != start);
        self.sack_recent.insert(0, start);
    }

    fn ack_packet(&mut self, now: Ns) -> Packet {
        let mut p = Packet::EMPTY;
        p.flow = self.addr.flow;
        p.src = self.addr.dst;
        p.dst = self.addr.src;
        p.hash = self.hash;
        p.flags = flags::ACK;
        if self.ece {
            p.flags |= flags::ECE;
        }
        p.ack = self.rcv_nxt;
        p.rwnd = self.cfg.rwnd.min(u32::MAX as u64) as u32;
        if self.cfg.timestamps {
            p.ts_val = now;
            p.ts_ecr = self.ts_recent;
        }
        let mut n = 0;
        if self.cfg.sack {
            for &start in &self.sack_recent {
                if n == MAX_SACK {
                    break;
                }
                if let Some(end) = self.ooo.get(start) {
                    p.set_sack_block(n, start, end);
                    n += 1;
                }
            }
        }
        p.nsack = n as u8;
        // TCP options: SACK = 2 NOPs + kind/len (4) + 8 per block (Linux TCPOLEN_SACK_BASE_ALIGNED)
        p.size = self.cfg.header_bytes() + if n > 0 { 4 + 8 * n as u32 } else { 0 };
        p
    }

    fn push_ack(&mut self, p: Packet) {
        self.quick = self.quick.saturating_sub(1);
        self.last_ack_sent = p.ack;
        self.unacked_bytes = 0;
        self.delack_at = NEVER;
        self.stats.acks_sent += 1;
        self.out.push_back(p);
    }

    pub fn poll_transmit(&mut self, _now: Ns) -> Option<Packet> {
        self.out.pop_front()
    }

    /// [`TcpReceiver::poll_transmit`] writing into the caller's packet (see
    /// [`crate::tcp::TcpSender::poll_transmit_into`]).
    #[inline]
    pub fn poll_transmit_into(&mut self, _now: Ns, out: &mut Packet) -> bool {
        match self.out.pop_front() {
            Some(p) => {
                *out = p;
                true
            }
            None => false,
        }
    }

    pub fn poll_at(&self) -> Ns {
        self.delack_at
    }

    pub fn on_timer(&mut self, now: Ns) {
        if now >= self.delack_at {
            self.delack_at = NEVER;
            if self.unacked_bytes > 0 {
                self.stats.delayed_acks += 1;
                let p = self.ack_packet(now);
                self.push_ack(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::HEADERS;

    fn data(seq: u64, len: u32, ts: Ns) -> Packet {
        let mut p = Packet::EMPTY;
        p.flow = 1;
        p.src = 0;
        p.dst = 1;
        p.seq = seq;
        p.payload = len;
        p.size = HEADERS + len;
        p.ts_val = ts;
        p.flags = flags::ACK;
        p
    }
    fn rx() -> TcpReceiver {
        TcpReceiver::new(&TcpConfig::default(), FlowAddr::new(1, 0, 1, 1))
    }

    #[test]
    fn delayed_ack_every_second_segment_and_timer() {
        let mut r = rx();
        r.on_packet(1000, &data(0, 1448, 1000));
        assert!(r.poll_transmit(1000).is_none());
        assert_eq!(r.poll_at(), 1000 + 40_000_000);
        r.on_packet(2000, &data(1448, 1448, 2000));
        let a = r.poll_transmit(2000).unwrap();
        assert_eq!(a.ack, 2896);
        assert_eq!(a.ts_ecr, 1000, "RFC 7323: echo the earliest unacknowledged segment");
        assert_eq!(a.size, HEADERS);
        assert_eq!(a.src, 1);
        assert_eq!(r.poll_at(), NEVER);
        r.on_packet(3000, &data(2896, 100, 3000));
        r.on_timer(3000 + 40_000_000);
        let a = r.poll_transmit(0).unwrap();
        assert_eq!(a.ack, 2996);
        assert_eq!(r.stats().delayed_acks, 1);
    }

    #[test]
    fn sack_blocks_most_recent_first_and_hole_fill() {
        let mut r = rx();
        let m = 1000u64;
        r.on_packet(0, &data(0, 1000, 1));
        r.on_packet(0, &data(2 * m, 1000, 2)); // hole at 1000
        let a = r.poll_transmit(0).unwrap();
        assert_eq!((a.ack, a.nsack, a.sack_block(0)), (1000, 1, (2000, 3000)));
        r.on_packet(0, &data(4 * m, 1000, 3)); // hole at 3000
        r.on_packet(0, &data(6 * m, 1000, 4));
        r.poll_transmit(0).unwrap();
        let a = r.poll_transmit(0).unwrap();
        assert_eq!(a.nsack, 3);
        assert_eq!(
            &(0..3).map(|i| a.sack_block(i)).collect::<Vec<_>>()[..],
            &[(6000, 7000), (4000, 5000), (2000, 3000)]
        );
        r.on_packet(0, &data(8 * m, 1000, 5));
        let a = r.poll_transmit(0).unwrap();
        assert_eq!(
            &(0..3).map(|i| a.sack_block(i)).collect::<Vec<_>>()[..],
            &[(8000, 9000), (6000, 7000), (4000, 5000)]
        );
        assert_eq!(a.size, HEADERS + 4 + 24);
        // extend (4000,5000) -> (4000,6000): it becomes first; merges with 6000..7000
        r.on_packet(0, &data(5 * m, 1000, 6));
        let a = r.poll_transmit(0).unwrap();
        assert_eq!(
            &(0..3).map(|i| a.sack_block(i)).collect::<Vec<_>>()[..],
            &[(4000, 7000), (8000, 9000), (2000, 3000)]
        );
        // fill the first hole: immediate ACK, cumulative jumps to 3000
        r.on_packet(0, &data(m, 1000, 7));
        let a = r.poll_transmit(0).unwrap();
        assert_eq!(a.ack, 3000);
        assert_eq!(a.ts_ecr, 7, "the hole-filling segment's timestamp is echoed");
        assert_eq!(&(0..2).map(|i| a.sack_block(i)).collect::<Vec<_>>()[..], &[(4000, 7000), (8000, 9000)]);
        assert_eq!(a.nsack, 2);
        assert_eq!(r.bytes_received(), 3000);
        assert_eq!(r.ooo_bytes(), 4000);
    }

    #[test]
    fn ece_until_cwr() {
        let cfg = TcpConfig { ecn: true, delayed_ack: false, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(&cfg, FlowAddr::new(1, 0, 1, 1));
        let mut p = data(0, 1000, 1);
        p.ecn = ecn::CE;
        r.on_packet(0, &p);
        assert!(r.poll_transmit(0).unwrap().has(flags::ECE));
        r.on_packet(0, &data(1000, 1000, 1));
        assert!(r.poll_transmit(0).unwrap().has(flags::ECE));
        let mut c = data(2000, 1000, 1);
        c.flags |= flags::CWR;
        r.on_packet(0, &c);
        assert!(!r.poll_transmit(0).unwrap().has(flags::ECE));
    }

    #[test]
    fn ignores_other_directions_and_flows() {
        let mut r = rx();
        let mut p = data(0, 1000, 1);
        p.src = 1;
        p.dst = 0; // the reverse half of the same connection id
        r.on_packet(0, &p);
        let mut q = data(0, 1000, 1);
        q.flow = 2;
        r.on_packet(0, &q);
        assert_eq!(r.bytes_received(), 0);
        assert!(r.poll_transmit(0).is_none());
    }

    #[test]
    fn linux_quickack_at_start_and_after_idle() {
        let cfg = TcpConfig { quickack: true, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(&cfg, FlowAddr::new(1, 0, 1, 1));
        let m = 1448u64;
        let mut acks = 0;
        for i in 0..40 {
            r.on_packet(i * 10_000, &data(i * m, 1448, i * 10_000 + 1));
            while r.poll_transmit(0).is_some() {
                acks += 1;
            }
        }
        // 16 quick ACKs, then one per 2 segments: 16 + 24 / 2
        assert_eq!(acks, 28);
        // idle longer than min_rto: quick mode again
        let t = 40 * 10_000 + 300_000_000;
        r.on_packet(t, &data(40 * m, 1448, t));
        assert!(r.poll_transmit(t).is_some());
        r.on_packet(t + 1, &data(41 * m, 1448, t));
        assert!(r.poll_transmit(t).is_some());
    }
}
