//! A QUIC-like transport, sans-IO: one unidirectional stream per half-connection, split like TCP
//! into a [`QuicSender`] and a [`QuicReceiver`] driven by `now` and packets.
//!
//! Modelled on RFC 9000 (packet numbers, STREAM and ACK frames, the receiver's ACK policy) and
//! RFC 9002 (RTT estimation, loss detection by packet and time threshold, PTO, persistent
//! congestion, congestion control through the transport-neutral [`crate::cc`] controllers and
//! the shared pacer). Simplifications are listed in docs/models/transport-quic.md.
//!
//! * [`rtt`]: RFC 9002 section 5 estimator (min_rtt, smoothed_rtt, rttvar, ack_delay).
//! * [`frame`]: how STREAM and ACK frames ride in the simulator's [`crate::packet::Packet`], and
//!   their sizes.
//! * [`recovery`]: sent-packet records, ACK processing, loss detection, PTO (RFC 9002 section 6,
//!   appendix A).
//! * [`sender`]: the stream's send side (new data, retransmission queue, FIN), congestion
//!   control and pacing.
//! * [`receiver`]: received packet numbers, ACK policy (every 2nd ack-eliciting packet, gaps at
//!   once, else after max_ack_delay), stream reassembly and which byte ranges arrived.
//!
//! Partial reliability (VOXEL's QUIC*): stream ranges may be unreliable — sent once, abandoned
//! when declared lost (still a congestion event), signalled to the receiver by an expiry offset
//! below which it zero-fills what is missing ([`QuicReceiver::holes`]).

pub mod config;
pub mod frame;
pub mod receiver;
pub mod recovery;
pub mod rtt;
pub mod sender;

pub use config::QuicConfig;
pub use receiver::{QuicReceiver, QuicReceiverStats};
pub use sender::{QuicSender, QuicStats};
#[cfg(test)]
mod tests;
