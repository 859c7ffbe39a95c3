//! A unidirectional link: ingress loss, a queue discipline, a service model (fixed rate, rate
//! schedule, or Mahimahi opportunities) and a propagation delay line.
//!
//! The delay line is FIFO (constant delay), so only its head needs an event in the engine: the
//! number of pending events is bounded by the number of links and endpoints, not by the packets
//! in flight.

use super::loss::Loss;
use super::trace::{Opportunities, RateSchedule};
use crate::aqm::Queue;
use crate::packet::Packet;
use crate::time::{tx_time, Ns};
use std::collections::VecDeque;

/// How the link serves its queue.
#[derive(Clone, Debug)]
pub enum Service {
    Fixed(u64),
    Schedule(RateSchedule),
    Opportunities(Opportunities),
}

/// Counters of a link.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Packets/bytes that finished transmission.
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Packets/bytes dropped by the link's random loss model (before the queue).
    pub lost_pkts: u64,
    pub lost_bytes: u64,
    /// Packets offered to the link (before loss).
    pub offered_pkts: u64,
    /// Packets handed to the next node after propagation.
    pub delivered_pkts: u64,
}

pub struct Link {
    pub name: String,
    pub from: usize,
    pub to: usize,
    pub service: Service,
    pub delay: Ns,
    pub queue: Queue,
    pub loss: Option<Loss>,
    pub stats: LinkStats,
    /// A service event is pending (transmission end or next opportunity).
    pub busy: bool,
    /// Rate-based services: when the transmission in progress ends (the link is free from then).
    /// A packet that leaves an otherwise empty queue goes straight into the delay line with its
    /// arrival time; no event marks the end of its serialization, only this field.
    pub busy_until: Ns,
    /// Packet being served and, for opportunity service, its bytes still to serve.
    pub in_service: Option<Packet>,
    pub remaining: u64,
    pub line: VecDeque<(Ns, Packet)>,
    /// Time of the pending AQM timer event (NEVER if none).
    pub aqm_timer: Ns,
    pub monitor: bool,
    pub packet_log: bool,
    pub pcap: bool,
}

impl Link {
    /// Time at which the service of `pkt` (starting now) ends, for rate-based services.
    #[inline]
    pub fn finish_time(&self, now: Ns, pkt: &Packet) -> Option<Ns> {
        match &self.service {
            Service::Fixed(r) => Some(now + tx_time(pkt.size as u64, *r)),
            Service::Schedule(s) => s.finish_time(now, pkt.size as u64),
            Service::Opportunities(_) => None,
        }
    }
    /// Capacity in bytes offered during [0, t).
    pub fn capacity_bytes(&self, t: Ns) -> u64 {
        match &self.service {
            Service::Fixed(r) => (*r as u128 * t as u128 / 8 / 1_000_000_000) as u64,
            Service::Schedule(s) => s.capacity_bytes(t),
            Service::Opportunities(o) => o.capacity_bytes(t),
        }
    }
    /// Nominal rate for reports (bit/s): fixed rate, or mean rate of the trace.
    pub fn nominal_rate_bps(&self) -> f64 {
        match &self.service {
            Service::Fixed(r) => *r as f64,
            Service::Schedule(s) => s.capacity_bytes(s.period) as f64 * 8.0 / crate::time::secs(s.period),
            Service::Opportunities(o) => {
                o.times.len() as f64 * o.bytes_per_opp as f64 * 8.0 / crate::time::secs(o.period)
            }
        }
    }
}
