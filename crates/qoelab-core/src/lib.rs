//! # qoelab-core
//!
//! The core of qoelab, a lab for video streaming over shared networks.
//!
//! Layers (lower never imports higher; algorithms never import the engine):
//!
//! * [`time`], [`rng`], [`packet`], [`params`]: plain data shared by everything.
//! * Algorithms, sans-IO (time and observations in, decisions and next wake-up out):
//!   [`aqm`] (queue disciplines), [`tcp`] (sender/receiver state machines and [`tcp::cc`]).
//! * [`sim`]: the discrete-event engine (event queue ordered by (time, sequence)).
//! * [`net`]: nodes, links, traces, loss models and the simulator's drivers of the algorithms.
//!
//! See docs/architecture.md in the repository.
#![forbid(unsafe_code)]

pub mod abr;
pub mod aqm;
pub mod cc;
pub mod driver;
pub mod flowctl;
pub mod ids;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod pageload;
pub mod params;
pub mod player;
pub mod quic;
pub mod report;
pub mod rng;
pub mod session;
pub mod sha256;
pub mod sim;
pub mod tcp;
pub mod time;
pub mod tracemode;
pub mod video;
