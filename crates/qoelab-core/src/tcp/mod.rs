//! TCP, sans-IO: a sender and a receiver half-connection driven by `now` and packets, and
//! congestion control ([`cc`]).
//!
//! A connection's data flows one way (sender -> receiver) and ACKs the other way; an HTTP
//! connection is two such halves sharing a connection id. The driver (simulator link layer or
//! userspace emulator) calls `on_packet`, `on_timer`, drains `poll_transmit` and schedules
//! `poll_at`.
//!
//! * [`TcpSender`]: handshake, segmentation, cwnd/rwnd limits, SACK (RFC 6675) or NewReno (RFC
//!   6582) loss recovery, RTO (RFC 6298), slow start after idle, pacing, delivery-rate estimation,
//!   ECN. The window belongs to a [`cc::CongestionControl`].
//! * [`TcpReceiver`]: cumulative + SACK ACKs, delayed ACKs, timestamp echo, ECN-Echo.
//!
//! See docs/models/tcp.md.

/// Congestion control is transport-neutral: [`crate::cc`].
pub use crate::cc;
pub mod config;
pub use crate::cc::pacing;
pub mod params;
pub mod ranges;
pub mod receiver;
pub use crate::cc::rtt;
pub mod scoreboard;
pub mod sender;
#[cfg(test)]
pub(crate) mod testing;

pub use config::{FlowAddr, TcpConfig};
pub use receiver::{TcpReceiver, TcpReceiverStats};
pub use sender::{TcpSample, TcpSender, TcpStats};
