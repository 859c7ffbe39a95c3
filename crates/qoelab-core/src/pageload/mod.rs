//! Sans-IO flow-level model of web page loads over several access interfaces (the data-transfer
//! simulator of Palmer's dissertation, ch. 3, "Socket Intents"; docs/models/pageload.md).
//!
//! A page ([`page::Page`]: objects with sizes, origins, TLS flags and a dependency tree) is
//! loaded over interfaces characterised by (RTT, bandwidth, optional rate schedule). Transfers
//! run over HTTP/1.1 persistent connections (FIFO queue per connection, reuse per origin and TLS
//! flag, at most 6 busy connections per origin and 17 in all, idle timeout, the oldest idle
//! connection closed at the global limit) on a fluid TCP model: handshake 2 RTT (+2 with TLS),
//! slow start from IW10 doubling once per RTT until the interface's fair share is reached, then
//! the fair share at once; the share is water-filling per interface. MPTCP connections have one
//! subflow per interface, each with its own slow start. A [`policy::Policy`] decides per object
//! which connection or interface(s) to use; most policies compare candidates by *prediction
//! runs*: the state is cloned, the candidate applied, and the clone simulated until the
//! candidate transfer finishes (transfers not yet enabled are not part of the clone).
//!
//! Nothing here reads a clock or does I/O: [`run::load`] takes the page and configuration and
//! returns the page load time and per-transfer records. Times are integer ns, rates bytes/s,
//! fluid amounts nano-bytes (exact integer arithmetic). The driver is `driver::flow`.

pub mod page;
pub mod policy;
pub mod run;
pub mod state;

use crate::time::{Ns, MS, SEC};

/// Most interfaces a configuration may have (connections keep their subflows inline).
pub const MAX_IFACES: usize = 4;

/// One access interface: the same RTT to every server, a bandwidth in bytes/s, optionally
/// changing at given times (`schedule`: (time, bytes/s), increasing times).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    pub rtt: Ns,
    pub rate: u64,
    pub schedule: Vec<(Ns, u64)>,
}

impl Iface {
    pub fn new(rate: u64, rtt: Ns) -> Iface {
        Iface { rtt, rate, schedule: Vec::new() }
    }
}

/// How an interface's bandwidth is shared among its busy flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// The public simulator's procedure: integer floor of the equal share, repeated until the
    /// satisfied set is stable (the bytes/s lost to the floor stay unused).
    WaterFill,
    /// Exact max-min: the same, with the floor's remainder handed out (work-conserving).
    MaxMin,
}

/// Model constants and the interfaces. `Config::new` sets the dissertation's defaults.
#[derive(Clone, Debug)]
pub struct Config {
    pub ifaces: Vec<Iface>,
    /// Maximum segment size (bytes).
    pub mss: u64,
    /// Initial congestion window in segments.
    pub iw_segments: u64,
    /// RTTs before the first data byte of a new connection.
    pub handshake_rtts: u32,
    /// Extra RTTs of a TLS handshake.
    pub tls_rtts: u32,
    /// RTTs before data flows when an idle connection is reused (0 in the public simulator; the
    /// dissertation's text says 1).
    pub reuse_rtts: u32,
    pub idle_timeout: Ns,
    /// Busy connections per origin.
    pub max_per_origin: usize,
    /// Connections in all (busy + idle).
    pub max_total: usize,
    pub sharing: Sharing,
    /// Keep per-transfer records in the result.
    pub record: bool,
    /// Prediction runs simulate only the connections that share an interface with the candidate
    /// (exact; off only to test that it is).
    pub prune_predictions: bool,
}

impl Config {
    pub fn new(ifaces: Vec<Iface>) -> Config {
        Config {
            ifaces,
            mss: 1460,
            iw_segments: 10,
            handshake_rtts: 2,
            tls_rtts: 2,
            reuse_rtts: 0,
            idle_timeout: 30 * SEC,
            max_per_origin: 6,
            max_total: 17,
            sharing: Sharing::WaterFill,
            record: false,
            prune_predictions: true,
        }
    }

    /// Check the configuration; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        if self.ifaces.is_empty() || self.ifaces.len() > MAX_IFACES {
            return Err(format!("ifaces: expected 1 to {MAX_IFACES} interfaces, found {}", self.ifaces.len()));
        }
        for (i, f) in self.ifaces.iter().enumerate() {
            let n = i + 1;
            if f.rate == 0 {
                return Err(format!("if{n}.bandwidth: expected > 0 bytes/s, found 0"));
            }
            if f.rtt == 0 || f.rtt > 100 * SEC {
                return Err(format!("if{n}.rtt: expected 1 ns to 100 s, found {} ns", f.rtt));
            }
            let mut last = 0;
            for (k, &(t, r)) in f.schedule.iter().enumerate() {
                if r == 0 {
                    return Err(format!("if{n}.schedule[{k}]: expected a rate > 0 bytes/s, found 0"));
                }
                if k > 0 && t <= last {
                    return Err(format!("if{n}.schedule[{k}]: expected increasing times, found {t} ns"));
                }
                last = t;
            }
        }
        // bounded so that the nano-byte and ns arithmetic stays within 64 bits (RTT counts x an RTT
        // of up to 100 s; the window in nano-bytes)
        if !(1..=65_535).contains(&self.mss) || !(1..=1000).contains(&self.iw_segments) {
            return Err(format!(
                "mss, iw_segments: expected 1 to 65535 bytes and 1 to 1000 segments, found {} and {}",
                self.mss, self.iw_segments
            ));
        }
        for (name, v) in
            [("handshake_rtts", self.handshake_rtts), ("tls_rtts", self.tls_rtts), ("reuse_rtts", self.reuse_rtts)]
        {
            if v > 100 {
                return Err(format!("{name}: expected 0 to 100 RTTs, found {v}"));
            }
        }
        if self.max_per_origin == 0 || self.max_total == 0 || self.max_total > 1000 {
            return Err("connection limits: expected 1 <= per origin, 1 <= total <= 1000".into());
        }
        if self.idle_timeout < MS {
            return Err("idle_timeout: expected >= 1 ms".into());
        }
        Ok(())
    }
}

/// A policy's answer for one transfer: an existing connection (index into the open
/// connections) or a new connection over an ordered list of interfaces (one: TCP; more: MPTCP
/// with the first subflow on the first interface).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    Pipe(usize),
    New { ifaces: [u8; MAX_IFACES], n: u8 },
}

impl Choice {
    pub fn tcp(iface: u8) -> Choice {
        let mut ifaces = [0; MAX_IFACES];
        ifaces[0] = iface;
        Choice::New { ifaces, n: 1 }
    }

    pub fn mptcp(order: &[u8]) -> Choice {
        let mut ifaces = [0; MAX_IFACES];
        ifaces[..order.len()].copy_from_slice(order);
        Choice::New { ifaces, n: order.len() as u8 }
    }
}

#[cfg(test)]
mod tests;
