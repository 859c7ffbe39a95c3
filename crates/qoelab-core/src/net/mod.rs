//! The network model and the simulator's driver of the sans-IO algorithms.

pub mod clients;
pub mod config;
pub mod link;
pub mod loss;
pub mod pcap;
/// Output tables (moved to [`crate::report::table`]).
pub mod record {
    pub use crate::report::table::*;
}
pub mod summary;
pub mod trace;
pub mod world;

pub use config::SimConfig;
pub use world::{SimError, World};
