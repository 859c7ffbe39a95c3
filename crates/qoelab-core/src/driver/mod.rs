//! Drivers, chosen at the top level: the same sans-IO algorithms (link, AQMs, transports,
//! sessions, players, ABRs) driven by different models of the network.
//!
//! * `packet`: the discrete-event packet simulator ([`crate::net::World`]).
//! * `trace`: chunk-level trace mode ([`trace::TraceDriver`]).
//!
//! A flow-level driver and the real-network emulator plug in here as further variants. Every
//! driver offers the same life cycle: build (checks the whole configuration, nothing runs),
//! `run_until` in slices (so that a caller can report progress and stop), end-of-run invariants,
//! the typed [`Summary`] and the output tables.

pub mod flow;
pub mod trace;

use crate::abr::AbrFactory;
use crate::net::{SimConfig, SimError, World};
use crate::report::summary::{config_hash, Summary};
use crate::report::table::Table;
use crate::time::Ns;
use std::sync::atomic::{AtomicBool, Ordering};

/// What one run produces.
pub struct RunOutput {
    pub summary: Summary,
    pub tables: Vec<Table>,
    /// (link name, pcap file bytes).
    pub pcaps: Vec<(String, Vec<u8>)>,
}

/// Why a run did not produce a result.
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// The configuration is invalid (path in the normalized config, message).
    Config(SimError),
    /// The stop flag was raised.
    Stopped,
    /// An end-of-run invariant failed (a bug: please report).
    Invariant(String),
}

/// A driver chosen from the configuration's `network`.
pub enum Driver {
    Packet(Box<World>),
    Trace(Box<trace::TraceDriver>),
}

impl Driver {
    /// Build (and fully check) the driver for `cfg`.
    pub fn build(cfg: SimConfig, factory: Option<AbrFactory>) -> Result<Driver, SimError> {
        match cfg.network.as_str() {
            "packet" => Ok(Driver::Packet(Box::new(World::build_with(cfg, factory)?))),
            "trace" => Ok(Driver::Trace(Box::new(trace::TraceDriver::build(cfg, factory)?))),
            other => Err(SimError {
                path: "network".into(),
                msg: format!("expected \"packet\" or \"trace\", found \"{other}\""),
            }),
        }
    }

    /// Simulated time reached.
    pub fn now(&self) -> Ns {
        match self {
            Driver::Packet(w) => w.engine.now(),
            Driver::Trace(t) => t.now(),
        }
    }

    pub fn duration(&self) -> Ns {
        match self {
            Driver::Packet(w) => w.cfg.duration,
            Driver::Trace(t) => t.duration(),
        }
    }

    /// [`World::heap_estimate`] of the packet driver; the trace driver holds nothing that grows
    /// with the run beyond its per-segment logs (0).
    pub fn heap_estimate(&self) -> usize {
        match self {
            Driver::Packet(w) => w.heap_estimate(),
            Driver::Trace(_) => 0,
        }
    }

    pub fn run_until(&mut self, t: Ns) {
        match self {
            Driver::Packet(w) => {
                w.run_until(t);
            }
            Driver::Trace(d) => d.run_until(t),
        }
    }

    /// Run to the end in slices of `slice` simulated ns, calling `between(now)` after each;
    /// stops early (Err(Stopped)) when `stop` is raised.
    pub fn run_sliced(
        &mut self,
        slice: Ns,
        stop: Option<&AtomicBool>,
        mut between: impl FnMut(Ns),
    ) -> Result<(), RunError> {
        let end = self.duration();
        let slice = slice.max(1);
        while self.now() < end {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Err(RunError::Stopped);
            }
            let next = self.now().saturating_add(slice).min(end);
            self.run_until(next);
            between(self.now());
        }
        Ok(())
    }

    /// Check invariants and collect the results.
    pub fn finish(mut self, config_hash: String) -> Result<RunOutput, RunError> {
        match &mut self {
            Driver::Packet(w) => {
                w.check_invariants().map_err(RunError::Invariant)?;
                let summary = w.summary(config_hash);
                Ok(RunOutput { summary, tables: w.take_tables(), pcaps: w.take_pcaps() })
            }
            Driver::Trace(t) => {
                t.check_invariants().map_err(RunError::Invariant)?;
                let summary = t.summary(config_hash);
                Ok(RunOutput { summary, tables: t.take_tables(), pcaps: Vec::new() })
            }
        }
    }
}

/// Parse, build, run and finish a normalized configuration (JSON).
pub fn run_json(
    config_json: &str,
    factory: Option<AbrFactory>,
    stop: Option<&AtomicBool>,
) -> Result<RunOutput, RunError> {
    let cfg =
        SimConfig::from_json(config_json).map_err(|e| RunError::Config(SimError { path: "config".into(), msg: e }))?;
    let hash = config_hash(config_json);
    let mut d = Driver::build(cfg, factory).map_err(RunError::Config)?;
    d.run_sliced(crate::time::SEC, stop, |_| {})?;
    d.finish(hash)
}
