//! Sent-packet records, ACK processing, loss detection and the PTO of RFC 9002 (section 6 and
//! appendix A), for one packet number space.
//!
//! Packet numbers increase by one per packet and are never reused; a record stays in the queue
//! until it is acknowledged or declared lost and every older record is too.

use super::config::{EXPIRE_FRAME_BYTES, PACKET_OVERHEAD, PING_FRAME_BYTES, STREAM_FRAME_HEADER};
use super::config::{GRANULARITY, PACKET_THRESHOLD, TIME_THRESHOLD};
use super::frame::AckFrame;
use super::rtt::QuicRtt;
use crate::cc::rate::SendStamp;
use crate::time::{Ns, NEVER};
use std::collections::VecDeque;

/// What happened to a sent packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktState {
    Outstanding,
    Acked,
    Lost,
}

/// The stream data a packet carried: `len` contiguous bytes from `offset` in `frames` STREAM
/// frames (one per run of equal reliability; 0 for a packet with no STREAM frame), plus an
/// optional expiry signal (`expire_to`, see docs/models/transport-quic.md "Partial reliability").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamChunk {
    pub offset: u64,
    pub len: u64,
    pub fin: bool,
    /// Retransmitted when lost. False only for a packet whose every stream byte is unreliable
    /// and which carries no FIN (QUIC*): sent once, its loss still counts for congestion control.
    pub reliable: bool,
    /// STREAM frames in the packet (0: none, the packet is an expiry signal or a PING).
    pub frames: u8,
    /// Expiry offset carried (0: none): every stream byte below it is delivered or abandoned.
    pub expire_to: u64,
}

impl StreamChunk {
    /// UDP payload of a packet carrying this chunk.
    pub fn udp_size(&self) -> u32 {
        let mut n = PACKET_OVERHEAD + self.frames as u32 * STREAM_FRAME_HEADER + self.len as u32;
        if self.expire_to > 0 {
            n += EXPIRE_FRAME_BYTES;
        }
        if self.frames == 0 && self.expire_to == 0 {
            n += PING_FRAME_BYTES;
        }
        n
    }
}

/// A sent packet (RFC 9002 A.1.1).
#[derive(Clone, Copy, Debug)]
pub struct SentPacket {
    pub pn: u64,
    pub time_sent: Ns,
    /// Bytes counted in flight (the UDP payload, as RFC 9002 counts them).
    pub size: u64,
    pub ack_eliciting: bool,
    pub in_flight: bool,
    pub handshake: bool,
    pub chunk: Option<StreamChunk>,
    pub stamp: SendStamp,
    pub state: PktState,
}

/// Loss-detection state of one packet number space.
#[derive(Debug, Default)]
pub struct Recovery {
    sent: VecDeque<SentPacket>,
    pub largest_acked: Option<u64>,
    /// Time threshold loss timer (None when no packet waits for it).
    pub loss_time: Option<Ns>,
    pub time_of_last_ack_eliciting: Ns,
    /// PTO backoff exponent (reset by an ACK).
    pub pto_count: u32,
    pub bytes_in_flight: u64,
    ack_eliciting_in_flight: u64,
    /// Newly acknowledged by the last [`Recovery::on_ack`] (packet number order).
    pub acked: Vec<SentPacket>,
    /// Acknowledged after having been declared lost (spurious losses) by the last ACK.
    pub spurious: Vec<SentPacket>,
    /// Declared lost by the last [`Recovery::detect_lost`] (packet number order).
    pub lost: Vec<SentPacket>,
}

impl Recovery {
    pub fn on_sent(&mut self, p: SentPacket) {
        debug_assert!(self.sent.back().is_none_or(|b| b.pn < p.pn), "packet numbers increase");
        if p.in_flight {
            self.bytes_in_flight += p.size;
            if p.ack_eliciting {
                self.ack_eliciting_in_flight += 1;
                self.time_of_last_ack_eliciting = p.time_sent;
            }
        }
        self.sent.push_back(p);
    }

    pub fn ack_eliciting_in_flight(&self) -> u64 {
        self.ack_eliciting_in_flight
    }

    /// Records still kept (outstanding, or resolved but behind an outstanding one).
    pub fn records(&self) -> usize {
        self.sent.len()
    }

    fn idx(&self, pn: u64) -> Option<usize> {
        let f = self.sent.front()?.pn;
        let i = pn.checked_sub(f)? as usize;
        (i < self.sent.len()).then_some(i)
    }

    fn leave_flight(&mut self, i: usize) {
        let p = &self.sent[i];
        if p.in_flight {
            self.bytes_in_flight -= p.size;
            if p.ack_eliciting {
                self.ack_eliciting_in_flight -= 1;
            }
        }
    }

    /// Process an ACK frame (A.7 up to the RTT update): marks newly acknowledged packets (into
    /// [`Recovery::acked`]) and returns the send time of the largest acknowledged packet when it
    /// is newly acknowledged and an ack-eliciting packet was newly acknowledged (an RTT sample).
    pub fn on_ack(&mut self, f: &AckFrame) -> Option<Ns> {
        self.acked.clear();
        self.spurious.clear();
        let largest = f.largest();
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));
        let (Some(front), Some(back)) = (self.sent.front().map(|p| p.pn), self.sent.back().map(|p| p.pn)) else {
            return None;
        };
        let mut largest_time = None;
        let mut eliciting = false;
        // ranges are largest first; walk them smallest first to keep `acked` in order
        for &(s, l) in f.ranges().iter().rev() {
            let (s, l) = (s.max(front), l.min(back));
            if s > l {
                continue;
            }
            for pn in s..=l {
                let i = (pn - front) as usize;
                match self.sent[i].state {
                    PktState::Outstanding => {
                        self.leave_flight(i);
                        let p = &mut self.sent[i];
                        p.state = PktState::Acked;
                        eliciting |= p.ack_eliciting;
                        if pn == largest {
                            largest_time = Some(p.time_sent);
                        }
                        self.acked.push(*p);
                    }
                    PktState::Lost => {
                        let p = &mut self.sent[i];
                        p.state = PktState::Acked;
                        self.spurious.push(*p);
                    }
                    PktState::Acked => {}
                }
            }
        }
        largest_time.filter(|_| eliciting)
    }

    /// Loss detection (A.10): packets sent before the largest acknowledged one that are
    /// kPacketThreshold packets older, or sent more than 9/8 x max(smoothed_rtt, latest_rtt)
    /// (at least kGranularity) ago, are lost (into [`Recovery::lost`]); arms the loss timer for
    /// the others.
    pub fn detect_lost(&mut self, now: Ns, rtt: &QuicRtt) {
        self.lost.clear();
        self.loss_time = None;
        let Some(la) = self.largest_acked else { return };
        let base = rtt.latest().max(rtt.smoothed());
        let loss_delay = (base * TIME_THRESHOLD.0 / TIME_THRESHOLD.1).max(GRANULARITY);
        for i in 0..self.sent.len() {
            let p = self.sent[i];
            if p.pn > la {
                break;
            }
            if p.state != PktState::Outstanding {
                continue;
            }
            if p.time_sent + loss_delay <= now || la >= p.pn + PACKET_THRESHOLD {
                self.leave_flight(i);
                self.sent[i].state = PktState::Lost;
                self.lost.push(self.sent[i]);
            } else {
                let t = p.time_sent + loss_delay;
                self.loss_time = Some(self.loss_time.map_or(t, |x| x.min(t)));
            }
        }
    }

    /// Persistent congestion (7.6.2) among the packets [`Recovery::detect_lost`] just declared
    /// lost: two ack-eliciting lost packets sent after the first RTT sample (`first_sample`)
    /// more than `duration` apart with no packet between them acknowledged.
    pub fn persistent_congestion(&self, duration: Ns, first_sample: Option<Ns>) -> bool {
        let (Some(t0), Some(a), Some(b)) = (first_sample, self.lost.first(), self.lost.last()) else {
            return false;
        };
        let (Some(i), Some(j)) = (self.idx(a.pn), self.idx(b.pn)) else { return false };
        let mut start: Option<Ns> = None;
        for p in self.sent.range(i..=j) {
            match p.state {
                PktState::Acked => start = None,
                PktState::Lost if p.ack_eliciting && p.time_sent > t0 => match start {
                    None => start = Some(p.time_sent),
                    Some(s) if p.time_sent - s > duration => return true,
                    Some(_) => {}
                },
                _ => {}
            }
        }
        false
    }

    /// Drop the resolved records at the front.
    pub fn compact(&mut self) {
        while self.sent.front().is_some_and(|p| p.state != PktState::Outstanding) {
            self.sent.pop_front();
        }
    }

    /// The oldest outstanding packet carrying reliable stream data (bytes or FIN) or the
    /// handshake (PTO probes resend it when nothing new is available; unreliable data is never
    /// sent twice).
    pub fn oldest_outstanding(&self) -> Option<&SentPacket> {
        self.sent.iter().find(|p| {
            p.state == PktState::Outstanding
                && (p.handshake || p.chunk.is_some_and(|c| c.reliable && (c.len > 0 || c.fin)))
        })
    }

    /// When the loss-detection timer fires (A.8): the loss time if set, else the PTO
    /// `time_of_last_ack_eliciting + pto_base x 2^pto_count` while ack-eliciting packets are in
    /// flight, else never.
    pub fn timer(&self, pto_base: Ns) -> Ns {
        if let Some(t) = self.loss_time {
            return t;
        }
        if self.ack_eliciting_in_flight == 0 {
            return NEVER;
        }
        let d = (pto_base as u128) << self.pto_count.min(40);
        (self.time_of_last_ack_eliciting as u128 + d).min(NEVER as u128 - 1) as Ns
    }
}
