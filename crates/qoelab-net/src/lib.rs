//! qoelab's real-network runtime (Linux only): a userspace bottleneck emulator that runs the
//! core's sans-IO link model (`qoelab_core::net::link::Link`: rate or Mahimahi trace service,
//! loss, any registered AQM through `Queue`, delay line) on real IP packets read from TUN devices
//! in two anonymous network namespaces. See docs/realnet.md.
//!
//! `unsafe` is confined to [`sys`].
#![cfg(target_os = "linux")]

pub mod emu;
pub mod ip;
pub mod opts;
pub mod reader;
pub mod real;
pub mod run;
pub mod sys;
pub mod tcpinfo;
