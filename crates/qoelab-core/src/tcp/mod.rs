//! TCP, sans-IO: a sender and a receiver half-connection driven by `now` and packets, and
//! congestion control ([`cc`]).
//!
//! A connection's data flows one way (sender -> receiver) and ACKs the other way; an HTTP
//! connection is two such halves sharing a connection id. The driver (simulator link layer or
//! userspace emulator) calls `on_packet`, `on_timer`, drains `poll_transmit` and schedules
//! `poll_at`.

pub mod cc;
