//! STREAM and ACK frames in the simulator's [`Packet`] (plain `Copy` data shared with TCP).
//!
//! A QUIC packet carries either one STREAM frame (sender -> receiver) or one ACK frame (receiver
//! -> sender); sizes on the wire follow the constants of [`super::config`]. Field mapping:
//!
//! | frame | field | meaning |
//! |---|---|---|
//! | STREAM | `ack` | packet number |
//! | STREAM | `seq`, `payload` | stream offset and length of the frame's data |
//! | STREAM | `flags::FIN` | the frame carries the stream's FIN |
//! | STREAM | `flags::SYN` | the modelled handshake packet (no stream data) |
//! | ACK | `flags::ACK` | an ACK frame (a packet without it is a STREAM packet) |
//! | ACK | `ack` | Largest Acknowledged |
//! | ACK | `seq` | First ACK Range (RFC 9000 19.3.1) |
//! | ACK | `ts_ecr` | ACK Delay in ns (unscaled) |
//! | ACK | `sack[i]`, `nsack` | (Gap, ACK Range Length) of each further range, RFC 9000 encoding |

use super::config::{ACK_FRAME_BASE, ACK_RANGE_BYTES, MAX_ACK_RANGES, PACKET_OVERHEAD, UDP_IP_HEADER};
use crate::packet::Packet;
use crate::time::Ns;

/// An ACK frame, decoded: ranges of acknowledged packet numbers `[smallest, largest]`
/// (inclusive, as RFC 9000 counts them), largest first, disjoint and not adjacent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AckFrame {
    pub ack_delay: Ns,
    pub n: usize,
    pub ranges: [(u64, u64); MAX_ACK_RANGES],
}

impl AckFrame {
    pub fn largest(&self) -> u64 {
        self.ranges[0].1
    }
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges[..self.n]
    }
    /// IP bytes of a packet carrying only this frame.
    pub fn packet_size(&self) -> u32 {
        UDP_IP_HEADER + PACKET_OVERHEAD + ACK_FRAME_BASE + ACK_RANGE_BYTES * (self.n.max(1) as u32 - 1)
    }

    /// Writes the frame into `p` (whose addressing is set by the caller).
    pub fn encode(&self, p: &mut Packet) {
        debug_assert!(self.n >= 1);
        let (s0, l0) = self.ranges[0];
        p.ack = l0;
        p.seq = l0 - s0;
        p.ts_ecr = self.ack_delay;
        let mut prev_smallest = s0;
        let mut k = 0;
        for &(s, l) in &self.ranges[1..self.n] {
            // RFC 9000 19.3.1: largest = previous smallest - gap - 2; smallest = largest - length
            let gap = prev_smallest - l - 2;
            let len = l - s;
            if gap > u32::MAX as u64 || len > u32::MAX as u64 {
                break;
            }
            p.sack[k] = (gap as u32, len as u32);
            k += 1;
            prev_smallest = s;
        }
        p.nsack = k as u8;
    }

    /// Reads the frame from an ACK packet. None if the encoding is inconsistent (a range
    /// below packet number 0).
    pub fn decode(p: &Packet) -> Option<AckFrame> {
        let mut f = AckFrame { ack_delay: p.ts_ecr, n: 1, ..Default::default() };
        let largest = p.ack;
        let s0 = largest.checked_sub(p.seq)?;
        f.ranges[0] = (s0, largest);
        let mut prev_smallest = s0;
        for i in 0..(p.nsack as usize).min(MAX_ACK_RANGES - 1) {
            let (gap, len) = p.sack[i];
            let l = prev_smallest.checked_sub(gap as u64 + 2)?;
            let s = l.checked_sub(len as u64)?;
            f.ranges[f.n] = (s, l);
            f.n += 1;
            prev_smallest = s;
        }
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_ranges_of_a_hole_pattern_encode_as_rfc9000_gaps() {
        // received 0..=4, 7..=9, 11, 14..=20: largest first
        let mut f = AckFrame { ack_delay: 3_000_000, n: 4, ..Default::default() };
        f.ranges[..4].copy_from_slice(&[(14, 20), (11, 11), (7, 9), (0, 4)]);
        let mut p = Packet::EMPTY;
        f.encode(&mut p);
        assert_eq!(p.ack, 20); // Largest Acknowledged
        assert_eq!(p.seq, 6); // First ACK Range: 20 - 14
                              // 14 - 11 - 2 = 1 (the two missing packets 12, 13), length 0
                              // 11 - 9 - 2 = 0 (missing 10), length 2
                              // 7 - 4 - 2 = 1 (missing 5, 6), length 4
        assert_eq!(p.nsack, 3);
        assert_eq!(&p.sack[..3], &[(1, 0), (0, 2), (1, 4)]);
        assert_eq!(p.ts_ecr, 3_000_000);
        assert_eq!(AckFrame::decode(&p), Some(f));
        // 28 + 27 + 10 + 3 x 4
        assert_eq!(f.packet_size(), 77);
        // inconsistent: first range below 0
        let mut bad = p;
        bad.seq = 21;
        assert_eq!(AckFrame::decode(&bad), None);
    }
}
