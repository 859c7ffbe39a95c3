//! Packets: small plain data, `Copy`, no heap. A packet is an IPv4/TCP segment as seen on the wire.
//!
//! Sizes: `size` is the IP total length (what links serialize and queues count). A full data
//! segment carries `MSS = 1448` payload bytes + 20 (IP) + 20 (TCP) + 12 (timestamps option) = 1500.
//! Sequence numbers are 64-bit and relative (0 = first payload byte); the pcap writer maps them to
//! 32-bit wire values.

use crate::time::Ns;

/// IPv4 header bytes.
pub const IP_HEADER: u32 = 20;
/// TCP header bytes including the 12-byte timestamps option (Linux default).
pub const TCP_HEADER: u32 = 32;
/// Header bytes of every TCP segment (IP + TCP + timestamps).
pub const HEADERS: u32 = IP_HEADER + TCP_HEADER;
/// Link MTU (IP bytes).
pub const MTU: u32 = 1500;
/// TCP payload bytes of a full segment for a 1500-byte MTU with timestamps.
pub const MSS: u32 = MTU - HEADERS;

/// Packet flags (bit set).
pub mod flags {
    pub const SYN: u8 = 1 << 0;
    pub const FIN: u8 = 1 << 1;
    /// Carries an acknowledgment field (set on everything but the first SYN).
    pub const ACK: u8 = 1 << 2;
    /// ECN-Echo (receiver -> sender).
    pub const ECE: u8 = 1 << 3;
    /// Congestion Window Reduced (sender -> receiver).
    pub const CWR: u8 = 1 << 4;
    /// This data segment is a retransmission (for logs and pcap analysis only).
    pub const RETX: u8 = 1 << 5;
    /// Not TCP: a datagram (constant-bit-rate or test traffic) with no acknowledgment.
    pub const DGRAM: u8 = 1 << 6;
    /// Reset: the client aborted the connection (sent by the packet driver, not by `tcp/`).
    pub const RST: u8 = 1 << 7;
}

/// ECN codepoint in the IP header.
pub mod ecn {
    pub const NOT_ECT: u8 = 0;
    pub const ECT0: u8 = 2;
    pub const CE: u8 = 3;
}

/// Maximum SACK blocks carried by one ACK (3 with the timestamps option, as on Linux).
pub const MAX_SACK: usize = 3;

/// One packet on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packet {
    /// Half-connection (or datagram flow) id: data of flow `f` travels src->dst, its ACKs dst->src
    /// carry the same `flow`.
    pub flow: u32,
    /// Hash of the 5-tuple in the packet's direction (what FQ schedulers classify on).
    pub hash: u32,
    /// Source node.
    pub src: u16,
    /// Destination node.
    pub dst: u16,
    /// IP total length in bytes.
    pub size: u32,
    /// TCP payload bytes (0 for a pure ACK).
    pub payload: u32,
    /// [`flags`] bits.
    pub flags: u8,
    /// IP ECN field ([`ecn`]).
    pub ecn: u8,
    /// Number of valid entries in `sack`.
    pub nsack: u8,
    /// Receive window advertised (bytes, already scaled).
    pub rwnd: u32,
    /// First payload byte (relative sequence number).
    pub seq: u64,
    /// Cumulative acknowledgment: next byte expected.
    pub ack: u64,
    /// SACK blocks `[start, end)` as 32-bit offsets above `ack`, most recent first (read and
    /// write them with [`Packet::sack_block`] and [`Packet::set_sack_block`]). A receiver only
    /// reports data within its window, so the offsets fit.
    pub sack: [(u32, u32); MAX_SACK],
    /// TCP timestamp value: sender's send time (ns).
    pub ts_val: Ns,
    /// TCP timestamp echo reply (ns); 0 = none.
    pub ts_ecr: Ns,
}

impl Packet {
    /// An empty packet (all zero) for building.
    pub const EMPTY: Packet = Packet {
        flow: 0,
        hash: 0,
        src: 0,
        dst: 0,
        size: 0,
        payload: 0,
        flags: 0,
        ecn: 0,
        nsack: 0,
        rwnd: 0,
        seq: 0,
        ack: 0,
        sack: [(0, 0); MAX_SACK],
        ts_val: 0,
        ts_ecr: 0,
    };

    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    /// True for a TCP segment carrying payload (or SYN/FIN), false for a pure ACK.
    #[inline]
    pub fn is_data(&self) -> bool {
        self.payload > 0 || self.has(flags::SYN) || self.has(flags::FIN)
    }
    #[inline]
    pub fn is_ect(&self) -> bool {
        self.ecn != ecn::NOT_ECT
    }
    /// SACK block `i` (`i < nsack`) as `[start, end)` in sequence space.
    #[inline]
    pub fn sack_block(&self, i: usize) -> (u64, u64) {
        let (s, e) = self.sack[i];
        (self.ack + s as u64, self.ack + e as u64)
    }
    /// Stores SACK block `i` as offsets above `ack`, which must already be set.
    #[inline]
    pub fn set_sack_block(&mut self, i: usize, start: u64, end: u64) {
        debug_assert!(self.ack <= start && start <= end && end - self.ack <= u32::MAX as u64);
        self.sack[i] = ((start - self.ack) as u32, (end - self.ack) as u32);
    }
    /// End of this segment's payload in sequence space.
    #[inline]
    pub fn end_seq(&self) -> u64 {
        self.seq + self.payload as u64
    }
}

/// The stable key of a connection's 5-tuple: a 32-bit FNV-1a hash of the name of the flow that
/// opens it (`bulk0`, `alice/c3/req`). A name does not change when flows or nodes are added
/// before it, as a real connection's addresses and ports do not change when another host opens
/// connections, so adding a flow never moves another one to another FQ flow queue.
pub fn name_key(name: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

/// The hash of one direction of connection `key` (stands in for a 5-tuple hash): `rev` false for
/// the direction in which the connection was opened (client -> server), true for the other.
#[inline]
pub fn direction_hash(key: u32, rev: bool) -> u32 {
    flow_hash(key, rev as u16, !rev as u16)
}

/// Direction-aware flow hash of `flow` from `src` to `dst`.
pub fn flow_hash(flow: u32, src: u16, dst: u16) -> u32 {
    let mut x = (flow as u64) << 32 | (src as u64) << 16 | dst as u64;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn packet_is_small_and_mss_is_linux_like() {
        assert_eq!(MSS, 1448);
        assert!(std::mem::size_of::<Packet>() <= 88, "{}", std::mem::size_of::<Packet>());
        assert_ne!(flow_hash(1, 0, 1), flow_hash(1, 1, 0));
        assert_ne!(direction_hash(1, false), direction_hash(1, true));
    }
    #[test]
    fn name_keys_are_fnv1a_and_tell_names_apart() {
        // FNV-1a 64 of "" is the offset basis; "a" is the published test vector 0xaf63dc4c8601ec8c
        assert_eq!(name_key(""), (0xcbf2_9ce4_8422_2325u64 ^ 0xcbf2_9ce4) as u32);
        assert_eq!(name_key("a"), (0xaf63_dc4c_8601_ec8cu64 ^ 0xaf63_dc4c) as u32);
        let keys: std::collections::BTreeSet<u32> = (0..10_000).map(|i| name_key(&format!("bulk{i}"))).collect();
        assert_eq!(keys.len(), 10_000);
    }
}
