//! The network model and the simulator's driver of the sans-IO algorithms.

pub mod clients;
pub mod config;
mod connection;
pub mod endpoint;
pub mod error;
pub mod link;
pub mod loss;
pub mod pages;
pub mod pcap;
pub mod providers;
/// Output tables (moved to [`crate::report::table`]).
pub mod record {
    pub use crate::report::table::*;
}
pub mod session_adapter;
pub mod summary;
pub mod trace;
pub mod world;

pub use config::SimConfig;
pub use error::SimError;
pub use world::World;
