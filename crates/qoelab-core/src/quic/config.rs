//! QUIC endpoint configuration and the packet-size constants (see docs/models/transport-quic.md).

use crate::time::{Ns, MS};

/// IPv4 (20) + UDP (8) header bytes.
pub const UDP_IP_HEADER: u32 = 28;
/// Short (1-RTT) header: first byte, an 8-byte Destination Connection ID (a common choice of
/// deployed stacks), a 2-byte packet number (enough for the packets in flight, RFC 9000 A.2).
pub const SHORT_HEADER: u32 = 1 + 8 + 2;
/// AEAD authentication tag (AES-GCM / ChaCha20-Poly1305: 16 bytes).
pub const AEAD_TAG: u32 = 16;
/// Bytes of one packet besides its frames (short header + tag), excluding UDP/IP.
pub const PACKET_OVERHEAD: u32 = SHORT_HEADER + AEAD_TAG;
/// STREAM frame header with offset and length fields: type (1), stream id (1), offset (4-byte
/// varint, offsets below 2^30), length (2-byte varint).
pub const STREAM_FRAME_HEADER: u32 = 1 + 1 + 4 + 2;
/// Expiry signal (partial reliability, QUIC*): type (1), stream id (1), offset (4-byte varint).
/// Tells the receiver that every stream byte below the offset it carries was delivered or
/// abandoned (docs/models/transport-quic.md, "Partial reliability").
pub const EXPIRE_FRAME_BYTES: u32 = 1 + 1 + 4;
/// A PING frame (a PTO probe with nothing reliable to repeat).
pub const PING_FRAME_BYTES: u32 = 1;
/// ACK frame without additional ranges: type (1), largest acknowledged (4), ack delay (2), range
/// count (1), first range (2).
pub const ACK_FRAME_BASE: u32 = 1 + 4 + 2 + 1 + 2;
/// Bytes per additional ACK range: gap (2) + range length (2).
pub const ACK_RANGE_BYTES: u32 = 4;
/// UDP payload of the handshake flight modelled before stream data (an Initial padded to the
/// RFC 9000 section 14.1 minimum of 1200 bytes).
pub const HANDSHAKE_BYTES: u32 = 1200;
/// Most ACK ranges one ACK frame can carry in the simulator's packet: the largest acknowledged
/// and first range in two fields, plus the 3 slots TCP uses for SACK blocks.
pub const MAX_ACK_RANGES: usize = 1 + crate::packet::MAX_SACK;
/// RFC 9002 kPacketThreshold.
pub const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 kTimeThreshold = 9/8 (numerator, denominator).
pub const TIME_THRESHOLD: (u64, u64) = (9, 8);
/// RFC 9002 kGranularity.
pub const GRANULARITY: Ns = MS;
/// RFC 9002 kPersistentCongestionThreshold.
pub const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// RFC 9002 kInitialRtt.
pub const INITIAL_RTT: Ns = 333 * MS;

/// Configuration of one QUIC half-connection (sender and receiver).
#[derive(Clone, Debug, PartialEq)]
pub struct QuicConfig {
    /// Largest UDP payload of a packet (RFC 9000 max_datagram_size). Default 1472: a 1500-byte
    /// IP packet, the same MTU as TCP's segments, so that the two compare on one link.
    pub max_datagram: u32,
    /// Initial window in packets of `max_datagram` (RFC 9002 7.2: 10, giving 14720 bytes).
    pub initial_window: u32,
    /// Receiver: max_ack_delay (RFC 9000 18.2 default 25 ms); the sender adds it to the PTO.
    pub max_ack_delay: Ns,
    /// Receiver: ACK after this many ack-eliciting packets (RFC 9000 13.2.2: 2).
    pub ack_eliciting_threshold: u32,
    /// Receiver: most ACK ranges per ACK frame (1..=[`MAX_ACK_RANGES`]).
    pub max_ack_ranges: usize,
    /// Pace packets (RFC 9002 7.7): the controller's pacing rate, or
    /// `ratio x cwnd / smoothed_rtt` with ratio 2 in slow start and 1.25 (RFC 9002's N) after.
    pub pacing: bool,
    /// Model a 1-RTT handshake: one 1200-byte ack-eliciting packet, ACKed at once, before any
    /// stream data (as TCP's SYN exchange).
    pub handshake: bool,
    /// Partial reliability (QUIC*): share of the stream sent unreliably, in [0, 1]. In every
    /// period of `unreliable_period` stream bytes from offset 0, the last
    /// `round(unreliable_fraction x unreliable_period)` bytes are unreliable (sent once, never
    /// retransmitted). 0: everything reliable (explicit `write_unreliable` ranges still apply).
    pub unreliable_fraction: f64,
    /// Period of the unreliable pattern in stream bytes (default 14,370: 10 full packets).
    pub unreliable_period: u64,
}

impl Default for QuicConfig {
    fn default() -> Self {
        QuicConfig {
            max_datagram: 1472,
            initial_window: 10,
            max_ack_delay: 25 * MS,
            ack_eliciting_threshold: 2,
            max_ack_ranges: MAX_ACK_RANGES,
            pacing: true,
            handshake: true,
            unreliable_fraction: 0.0,
            unreliable_period: 14_370,
        }
    }
}

impl QuicConfig {
    /// Stream payload bytes of a full packet: 1472 - 27 - 8 = 1437 by default.
    pub fn max_stream_payload(&self) -> u32 {
        self.max_datagram - PACKET_OVERHEAD - STREAM_FRAME_HEADER
    }
}
