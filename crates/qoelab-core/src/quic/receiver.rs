//! The receiving side of one QUIC stream: packet numbers received, the ACK policy of RFC 9000
//! 13.2, stream reassembly, and which byte ranges arrived.

use super::config::QuicConfig;
use super::frame::AckFrame;
use super::sender::overlap;
use crate::packet::{flags, Packet};
use crate::tcp::ranges::RangeSet;
use crate::tcp::FlowAddr;
use crate::time::{Ns, NEVER};

/// Packet-number ranges kept for ACK frames (older ones are forgotten; an ACK frame carries
/// at most [`super::config::MAX_ACK_RANGES`]).
const KEEP_PN_RANGES: usize = 32;

/// Receiver counters.
#[derive(Clone, Debug, Default)]
pub struct QuicReceiverStats {
    pub packets_received: u64,
    /// Packets arriving below the largest received packet number.
    pub out_of_order: u64,
    /// Packets whose number was already received (none in the simulator unless duplicated).
    pub duplicates: u64,
    /// Stream bytes that were already received (spurious retransmissions).
    pub duplicate_bytes: u64,
    pub acks_sent: u64,
    /// ACKs sent because max_ack_delay expired.
    pub delayed_acks: u64,
    /// Stream bytes zero-filled (holes the sender abandoned, QUIC*).
    pub hole_bytes: u64,
    /// Stream bytes arriving after their range was zero-filled (a spurious loss of unreliable
    /// data; not used: the application already read the zeros).
    pub late_bytes: u64,
}

/// Receiver of one unidirectional stream.
pub struct QuicReceiver {
    cfg: QuicConfig,
    addr: FlowAddr,
    hash: u32,
    /// Received packet numbers as `[start, end)`.
    pns: RangeSet,
    largest: Option<u64>,
    largest_at: Ns,
    /// Ack-eliciting packets received since the last ACK sent.
    unacked: u32,
    ack_now: bool,
    ack_deadline: Ns,
    /// Stream bytes received as `[start, end)`.
    stream: RangeSet,
    /// Highest expiry offset received: every byte below it arrived or was zero-filled.
    expired: u64,
    /// Zero-filled ranges `[start, end)` (final: late data does not remove them).
    holes: RangeSet,
    final_size: Option<u64>,
    stats: QuicReceiverStats,
}

impl QuicReceiver {
    pub fn new(cfg: &QuicConfig, addr: FlowAddr) -> Self {
        QuicReceiver {
            cfg: cfg.clone(),
            addr,
            hash: addr.ack_hash(),
            pns: RangeSet::new(),
            largest: None,
            largest_at: 0,
            unacked: 0,
            ack_now: false,
            ack_deadline: NEVER,
            stream: RangeSet::new(),
            expired: 0,
            holes: RangeSet::new(),
            final_size: None,
            stats: QuicReceiverStats::default(),
        }
    }

    /// Stream bytes delivered in order from offset 0 (what the application can read): received
    /// bytes and zero-filled holes. A hole is zero-filled (and delivered) only once the sender's
    /// expiry signal covers it: nothing below that offset will ever be sent again.
    pub fn bytes_delivered(&self) -> u64 {
        match self.stream.last_starting_at_or_before(self.expired) {
            Some((_, e)) if e >= self.expired => e,
            _ => self.expired,
        }
    }
    /// Received (not zero-filled) bytes among the delivered ones: `bytes_delivered() -
    /// hole_bytes()` (without holes, the in-order prefix as for TCP).
    pub fn bytes_received(&self) -> u64 {
        self.bytes_delivered() - self.stats.hole_bytes
    }
    /// Every stream byte range received, `[start, end)` in offset order (zero-filled ranges
    /// excluded).
    pub fn received_ranges(&self) -> &[(u64, u64)] {
        self.stream.as_slice()
    }
    /// The zero-filled ranges `[start, end)` in offset order (bytes the sender abandoned).
    pub fn holes(&self) -> &[(u64, u64)] {
        self.holes.as_slice()
    }
    /// The zero-filled ranges inside `[a, b)`, clipped to it.
    pub fn holes_in(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let h = self.holes.as_slice();
        let i = h.partition_point(|&(_, e)| e <= a);
        h[i..].iter().take_while(|&&(s, _)| s < b).map(|&(s, e)| (s.max(a), e.min(b))).collect()
    }
    /// Hash ACKs as connection `key`'s (both halves of one connection share a 5-tuple).
    pub fn set_hash_key(&mut self, key: u32, rev: bool) {
        self.addr.hash_key = key;
        self.addr.hash_rev = rev;
        self.hash = self.addr.ack_hash();
    }
    pub fn hole_bytes(&self) -> u64 {
        self.stats.hole_bytes
    }
    /// The highest expiry offset received (0: none).
    pub fn expired_to(&self) -> u64 {
        self.expired
    }
    /// The stream's final size, once the FIN arrived.
    pub fn final_size(&self) -> Option<u64> {
        self.final_size
    }
    /// FIN received and every byte before it delivered (received or zero-filled).
    pub fn is_complete(&self) -> bool {
        self.final_size.is_some_and(|f| self.bytes_delivered() >= f)
    }
    pub fn stats(&self) -> &QuicReceiverStats {
        &self.stats
    }

    fn has_pn(&self, pn: u64) -> bool {
        self.pns.last_starting_at_or_before(pn).is_some_and(|(_, e)| e > pn)
    }

    /// A STREAM (or handshake) packet arrived.
    pub fn on_packet(&mut self, now: Ns, pkt: &Packet) {
        if pkt.flow != self.addr.flow || pkt.src != self.addr.src || pkt.dst != self.addr.dst || pkt.has(flags::ACK) {
            return;
        }
        let pn = pkt.ack;
        self.stats.packets_received += 1;
        if self.has_pn(pn) {
            self.stats.duplicates += 1;
            self.ack_now = true;
            return;
        }
        // RFC 9000 13.2.1: ACK at once when the packet is out of order or opens a gap; the
        // handshake is acknowledged at once too
        match self.largest {
            Some(l) if pn < l => {
                self.stats.out_of_order += 1;
                self.ack_now = true;
            }
            Some(l) if pn > l + 1 => self.ack_now = true,
            None if pn > 0 => self.ack_now = true,
            _ => {}
        }
        if pkt.has(flags::SYN) {
            self.ack_now = true;
        }
        if self.largest.is_none_or(|l| pn > l) {
            self.largest = Some(pn);
            self.largest_at = now;
        }
        self.pns.insert(pn, pn + 1, |_| {});
        let n = self.pns.as_slice().len();
        if n > KEEP_PN_RANGES {
            let cut = self.pns.as_slice()[n - KEEP_PN_RANGES].0;
            self.pns.trim_below(cut);
        }
        if pkt.payload > 0 {
            let (s, e) = (pkt.seq, pkt.seq + pkt.payload as u64);
            // below the expiry offset every byte is received or zero-filled already
            let late = overlap(&self.holes, s, e.min(self.expired));
            self.stats.late_bytes += late;
            let s_new = s.max(self.expired);
            let mut before = e.min(self.expired).saturating_sub(s) - late;
            let s = s_new;
            let mut x = s;
            // count the bytes already held (spurious retransmissions)
            while x < e {
                match self.stream.last_starting_at_or_before(x) {
                    Some((_, re)) if re > x => {
                        before += re.min(e) - x;
                        x = re;
                    }
                    _ => x = self.stream.first_start_in(x, e).unwrap_or(e),
                }
            }
            self.stats.duplicate_bytes += before;
            if s < e {
                self.stream.insert(s, e, |_| {});
            }
        }
        if pkt.ts_ecr > self.expired {
            // expiry signal: zero-fill what is missing below it
            let (a, b) = (self.expired, pkt.ts_ecr);
            let mut x = a;
            while x < b {
                match self.stream.last_starting_at_or_before(x) {
                    Some((_, re)) if re > x => x = re,
                    _ => {
                        let n = self.stream.first_start_in(x, b).unwrap_or(b);
                        self.holes.insert(x, n, |_| {});
                        self.stats.hole_bytes += n - x;
                        x = n;
                    }
                }
            }
            self.expired = b;
        }
        if pkt.has(flags::FIN) {
            self.final_size = Some(pkt.seq + pkt.payload as u64);
            self.ack_now = true;
        }
        self.unacked += 1;
        if self.unacked >= self.cfg.ack_eliciting_threshold {
            self.ack_now = true;
        } else if self.ack_deadline == NEVER {
            self.ack_deadline = now + self.cfg.max_ack_delay;
        }
    }

    /// The ACK frame describing what was received (largest first, at most `max_ack_ranges`).
    pub fn ack_frame(&self, now: Ns) -> Option<AckFrame> {
        let largest = self.largest?;
        let mut f = AckFrame { ack_delay: now.saturating_sub(self.largest_at), ..Default::default() };
        let max = self.cfg.max_ack_ranges.clamp(1, f.ranges.len());
        for &(s, e) in self.pns.as_slice().iter().rev().take(max) {
            f.ranges[f.n] = (s, e - 1);
            f.n += 1;
        }
        debug_assert_eq!(f.largest(), largest);
        Some(f)
    }

    pub fn poll_transmit_into(&mut self, now: Ns, out: &mut Packet) -> bool {
        if !self.ack_now {
            return false;
        }
        let Some(f) = self.ack_frame(now) else {
            self.ack_now = false;
            return false;
        };
        *out = Packet::EMPTY;
        out.flow = self.addr.flow;
        out.src = self.addr.dst;
        out.dst = self.addr.src;
        out.hash = self.hash;
        out.flags = flags::ACK;
        f.encode(out);
        out.size = f.packet_size();
        self.ack_now = false;
        self.unacked = 0;
        self.ack_deadline = NEVER;
        self.stats.acks_sent += 1;
        true
    }

    pub fn poll_transmit(&mut self, now: Ns) -> Option<Packet> {
        let mut p = Packet::EMPTY;
        self.poll_transmit_into(now, &mut p).then_some(p)
    }

    pub fn poll_at(&self) -> Ns {
        if self.ack_now {
            0
        } else {
            self.ack_deadline
        }
    }

    /// max_ack_delay expired: ACK now.
    pub fn on_timer(&mut self, now: Ns) {
        if self.ack_deadline <= now {
            self.ack_deadline = NEVER;
            if self.unacked > 0 {
                self.ack_now = true;
                self.stats.delayed_acks += 1;
            }
        }
    }
}
