//! The sending side of one QUIC stream: packet numbers, STREAM frames (new data first after
//! retransmissions), loss recovery ([`super::recovery`]), congestion control ([`crate::cc`])
//! and pacing ([`crate::cc::pacing`]). Sans-IO: `on_packet`, `on_timer`, `poll_transmit_into`,
//! `poll_at`.

use super::config::{QuicConfig, HANDSHAKE_BYTES, PERSISTENT_CONGESTION_THRESHOLD, UDP_IP_HEADER};
use super::config::{EXPIRE_FRAME_BYTES, GRANULARITY, STREAM_FRAME_HEADER};
use super::frame::AckFrame;
use super::recovery::{PktState, Recovery, SentPacket, StreamChunk};
use super::rtt::QuicRtt;
use crate::cc::pacing::{rate_from_cwnd, Pacer};
use crate::cc::rate::{RateEstimator, RateSample};
use crate::cc::{AckSample, Congestion, CongestionControl};
use crate::packet::{flags, Packet};
use crate::tcp::ranges::RangeSet;
use crate::tcp::{FlowAddr, TcpSample};
use crate::time::Ns;

/// Pacing ratio in slow start (Linux `tcp_pacing_ss_ratio` 200%).
const PACING_SS_RATIO: f64 = 2.0;
/// Pacing ratio after slow start (RFC 9002 7.7: N = 1.25).
const PACING_CA_RATIO: f64 = 1.25;
/// Probe packets sent when the PTO fires (RFC 9002 6.2.4: "up to two").
const PTO_PROBES: u32 = 2;

/// Sender counters.
#[derive(Clone, Debug, Default)]
pub struct QuicStats {
    pub packets_sent: u64,
    /// IP bytes sent.
    pub bytes_sent: u64,
    /// Stream bytes sent (new and retransmitted).
    pub stream_bytes_sent: u64,
    /// Packets carrying retransmitted stream data (in new packet numbers).
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Packets declared lost (and of them, acknowledged later: spurious).
    pub packets_lost: u64,
    pub spurious_losses: u64,
    /// Congestion events (recovery periods entered, RFC 9002 7.3.2).
    pub congestion_events: u64,
    /// PTO expirations.
    pub pto_count: u64,
    pub persistent_congestion: u64,
    pub acks_received: u64,
    /// Stream bytes sent in unreliable packets (every byte unreliable, no FIN): sent once.
    pub unreliable_bytes_sent: u64,
    /// Of them, declared lost (abandoned: never sent again, the receiver zero-fills them).
    pub unreliable_lost_bytes: u64,
    /// Stream bytes first sent in an unreliable packet and sent again (0 by construction: the
    /// check of the "never retransmitted" rule).
    pub unreliable_retransmitted_bytes: u64,
    /// Packets mixing reliable and unreliable STREAM frames (sent, and treated, as reliable).
    pub mixed_packets: u64,
    /// Packets sent only to carry an expiry signal (no STREAM frame).
    pub expire_packets: u64,
    /// Stream bytes the application skipped before they were sent ([`QuicSender::skip`]).
    pub skipped_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handshake {
    /// Nothing sent yet (or the handshake packet was lost: send it again).
    Pending,
    Sent,
    Done,
}

/// Sender of one unidirectional stream.
pub struct QuicSender {
    cfg: QuicConfig,
    addr: FlowAddr,
    hash: u32,
    cc: Box<dyn CongestionControl>,
    rtt: QuicRtt,
    rec: Recovery,
    pacer: Pacer,
    rate: RateEstimator,
    next_pn: u64,
    hs: Handshake,
    first_sample_at: Option<Ns>,
    /// Bytes the application wrote (and whether it keeps writing without end).
    written: u64,
    unlimited: bool,
    /// The application is done: the stream ends at `written` (FIN).
    closed: bool,
    fin_sent: bool,
    fin_acked: bool,
    fin_lost: bool,
    /// Next new byte.
    next_offset: u64,
    /// Stream ranges to send again (lost, reliable).
    retx: RangeSet,
    /// Stream ranges acknowledged.
    acked: RangeSet,
    /// Unreliable stream ranges written with `write_unreliable` (used when no pattern is set).
    unreliable: RangeSet,
    /// Unreliable pattern (period, unreliable bytes at the end of each period), from
    /// `QuicConfig::unreliable_fraction`.
    pattern: Option<(u64, u64)>,
    /// Ranges sent in unreliable packets.
    sent_unreliable: RangeSet,
    /// Unreliable ranges declared lost (abandoned).
    abandoned: RangeSet,
    /// Ranges the application skipped ([`QuicSender::skip`]): never sent or sent again.
    skipped: RangeSet,
    /// Acknowledged or abandoned ranges: nothing below the prefix of this set is ever sent again.
    settled: RangeSet,
    /// Highest expiry offset carried by a packet sent and not declared lost.
    expire_sent: u64,
    /// Highest expiry offset carried by an acknowledged packet (the receiver knows it).
    expire_told: u64,
    pto_probes: u32,
    /// congestion_recovery_start_time (RFC 9002 7.3.2).
    recovery_start: Option<Ns>,
    in_recovery: bool,
    /// The application ran out of data while the window allowed more (RFC 9002 7.8).
    app_limited: bool,
    stats: QuicStats,
}

impl QuicSender {
    pub fn new(cfg: &QuicConfig, addr: FlowAddr, cc: Box<dyn CongestionControl>) -> Self {
        QuicSender {
            cfg: cfg.clone(),
            addr,
            hash: addr.data_hash(),
            cc,
            rtt: QuicRtt::default(),
            rec: Recovery::default(),
            pacer: Pacer::new(),
            rate: RateEstimator::default(),
            next_pn: 0,
            hs: if cfg.handshake { Handshake::Pending } else { Handshake::Done },
            first_sample_at: None,
            written: 0,
            unlimited: false,
            closed: false,
            fin_sent: false,
            fin_acked: false,
            fin_lost: false,
            next_offset: 0,
            retx: RangeSet::new(),
            acked: RangeSet::new(),
            unreliable: RangeSet::new(),
            pattern: unreliable_pattern(cfg),
            sent_unreliable: RangeSet::new(),
            abandoned: RangeSet::new(),
            skipped: RangeSet::new(),
            settled: RangeSet::new(),
            expire_sent: 0,
            expire_told: 0,
            pto_probes: 0,
            recovery_start: None,
            in_recovery: false,
            app_limited: false,
            stats: QuicStats::default(),
        }
    }

    // ----- application side -----

    /// Append `bytes` of reliable data to the stream.
    pub fn write(&mut self, _now: Ns, bytes: u64) {
        if !self.closed {
            self.written += bytes;
        }
    }
    /// Append `bytes` sent without retransmission (an unreliable range; its loss still counts
    /// for congestion control).
    pub fn write_unreliable(&mut self, now: Ns, bytes: u64) {
        if !self.closed && bytes > 0 {
            self.unreliable.insert(self.written, self.written + bytes, |_| {});
            self.write(now, bytes);
        }
    }
    /// Append `bytes`, reliable or not.
    pub fn write_with(&mut self, now: Ns, bytes: u64, reliable: bool) {
        if reliable {
            self.write(now, bytes)
        } else {
            self.write_unreliable(now, bytes)
        }
    }
    /// Stop sending stream bytes `[a, b)` (the application cut a response short, as a
    /// STOP_SENDING / RESET_STREAM of one HTTP/3 response would): bytes not sent yet are never
    /// sent, bytes in flight are not retransmitted if lost; the receiver zero-fills what does not
    /// arrive (the expiry signal). Applied at once (the peer's STOP_SENDING takes RTT/2 on a real
    /// host). Bytes beyond what was written are ignored.
    pub fn skip(&mut self, a: u64, b: u64) {
        let b = b.min(self.written);
        if b <= a {
            return;
        }
        self.skipped.insert(a, b, |_| {});
        // queued retransmissions inside it are dropped
        if !self.retx.is_empty() {
            let keep: Vec<(u64, u64)> = self.retx.as_slice().to_vec();
            self.retx = RangeSet::new();
            for (s, e) in keep {
                self.queue_retx(s, e);
            }
        }
        self.skip_ahead();
    }
    /// `next_offset` jumps over a skipped range it reached (its unsent bytes are abandoned then).
    fn skip_ahead(&mut self) {
        if let Some((_, e)) = self.skipped.last_starting_at_or_before(self.next_offset) {
            if e > self.next_offset {
                let (s0, e0) = (self.next_offset, e.min(self.written));
                if e0 > s0 {
                    self.stats.skipped_bytes += e0 - s0;
                    self.abandoned.insert(s0, e0, |_| {});
                    self.settled.insert(s0, e0, |_| {});
                }
                self.next_offset = e;
            }
        }
    }
    /// Infinite data (bulk until stopped).
    pub fn set_unlimited(&mut self) {
        self.unlimited = true;
    }
    /// No more data: the stream ends (FIN) after what was written (an unlimited stream ends at
    /// what was sent so far).
    pub fn stop_writing(&mut self) {
        if self.unlimited {
            self.unlimited = false;
            self.written = self.next_offset;
        }
        self.closed = true;
    }

    // ----- state -----

    /// Stream bytes acknowledged in order from offset 0.
    pub fn bytes_acked(&self) -> u64 {
        match self.acked.first() {
            Some((0, e)) => e,
            _ => 0,
        }
    }
    pub fn bytes_written(&self) -> u64 {
        self.written
    }
    /// Stream bytes from offset 0 acknowledged or abandoned (unreliable and declared lost).
    pub fn bytes_settled(&self) -> u64 {
        match self.settled.first() {
            Some((0, e)) => e,
            _ => 0,
        }
    }
    /// Everything written is acknowledged or abandoned, the FIN is acknowledged and the receiver
    /// was told (by an acknowledged expiry signal) about every abandoned range.
    pub fn all_acked(&self) -> bool {
        self.closed
            && self.bytes_settled() >= self.written
            && (self.fin_acked || !self.fin_sent && self.written == 0)
            && !self.has_abandoned_in(self.expire_told, self.bytes_settled())
    }
    /// Whether stream byte `x` is unreliable, and where its run of equal reliability ends.
    pub fn unreliable_run(&self, x: u64) -> (bool, u64) {
        if let Some((period, unrel)) = self.pattern {
            let base = x - x % period;
            let rel_end = base + period - unrel;
            return if x < rel_end { (false, rel_end) } else { (true, base.saturating_add(period)) };
        }
        match self.unreliable.last_starting_at_or_before(x) {
            Some((_, e)) if e > x => (true, e),
            _ => (false, self.unreliable.first_start_in(x, u64::MAX).unwrap_or(u64::MAX)),
        }
    }
    /// Some abandoned byte lies in `[a, b)`.
    fn has_abandoned_in(&self, a: u64, b: u64) -> bool {
        b > a && self.abandoned.last_starting_at_or_before(b - 1).is_some_and(|(_, e)| e > a)
    }
    /// The expiry offset to send: the settled prefix, when abandoned bytes lie between the
    /// last one sent (and not lost) and it.
    fn expire_needed(&self) -> Option<u64> {
        let s = self.bytes_settled();
        self.has_abandoned_in(self.expire_sent, s).then_some(s)
    }
    /// Hash packets as connection `key`'s (both halves of one connection share a 5-tuple).
    pub fn set_hash_key(&mut self, key: u32, rev: bool) {
        self.addr.hash_key = key;
        self.addr.hash_rev = rev;
        self.hash = self.addr.data_hash();
    }
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
    pub fn cc_mut(&mut self) -> &mut dyn CongestionControl {
        self.cc.as_mut()
    }
    pub fn stats(&self) -> &QuicStats {
        &self.stats
    }
    pub fn config(&self) -> &QuicConfig {
        &self.cfg
    }
    pub fn rtt(&self) -> &QuicRtt {
        &self.rtt
    }
    pub fn bytes_in_flight(&self) -> u64 {
        self.rec.bytes_in_flight
    }
    /// The next packet number (packet numbers are never reused).
    pub fn next_packet_number(&self) -> u64 {
        self.next_pn
    }
    pub fn srtt(&self) -> Option<Ns> {
        self.rtt.has_sample().then_some(self.rtt.smoothed())
    }
    pub fn min_rtt(&self) -> Option<Ns> {
        self.rtt.has_sample().then_some(self.rtt.min_rtt())
    }
    fn confirmed(&self) -> bool {
        self.hs == Handshake::Done
    }
    fn max_ack_delay(&self) -> Ns {
        if self.confirmed() {
            self.cfg.max_ack_delay
        } else {
            0
        }
    }
    /// Current PTO (with backoff).
    pub fn pto(&self) -> Ns {
        self.rtt.pto_base(self.max_ack_delay()) << self.rec.pto_count.min(40)
    }
    fn pacing_rate(&self) -> Option<u64> {
        if !self.cfg.pacing {
            return None;
        }
        self.cc.pacing_rate().or_else(|| {
            let srtt = self.srtt()?;
            rate_from_cwnd(self.cc.cwnd(), self.cc.ssthresh(), srtt, PACING_SS_RATIO, PACING_CA_RATIO)
        })
    }

    /// A row for the `tcp` table (the fields QUIC has; docs/models/transport-quic.md).
    pub fn sample(&self, now: Ns) -> TcpSample {
        TcpSample {
            now,
            cwnd: self.cc.cwnd(),
            ssthresh: self.cc.ssthresh(),
            srtt: self.srtt().unwrap_or(0),
            rttvar: self.rtt.rttvar(),
            min_rtt: self.rtt.min_rtt(),
            latest_rtt: self.rtt.latest(),
            rto: self.pto(),
            bytes_in_flight: self.rec.bytes_in_flight,
            snd_una: self.bytes_settled(),
            snd_nxt: self.next_offset,
            delivered: self.rate.delivered,
            delivery_rate_bps: self.rate.last_rate_bps,
            retransmits: self.stats.retransmits,
            rto_count: self.stats.pto_count,
            pacing_rate_bps: self.pacing_rate().unwrap_or(0),
            send_window: self.cc.cwnd(),
            tcp_state: match self.hs {
                Handshake::Done if self.in_recovery => "recovery",
                Handshake::Done => "open",
                _ => "handshake",
            },
            cc_state: self.cc.state(),
        }
    }

    // ----- sending -----

    fn stream_end(&self) -> u64 {
        if self.unlimited {
            u64::MAX
        } else {
            self.written
        }
    }

    /// The next stream chunk to send (retransmissions first, skipping acknowledged bytes; new
    /// data in runs of equal reliability, one STREAM frame per run; a lone FIN; a lone expiry
    /// signal), without taking it.
    fn next_chunk(&self) -> Option<StreamChunk> {
        let expire = self.expire_needed();
        let ex = expire.unwrap_or(0);
        let mut budget = self.cfg.max_stream_payload() as u64;
        if expire.is_some() {
            budget -= EXPIRE_FRAME_BYTES as u64;
        }
        let fin_at = self.closed.then_some(self.written);
        if let Some((s, e)) = self.retx.first() {
            // lost data of reliable packets: one frame, reliable
            let len = (e - s).min(budget);
            let fin = fin_at == Some(s + len);
            return Some(StreamChunk { offset: s, len, fin, reliable: true, frames: 1, expire_to: ex });
        }
        let end = self.stream_end();
        if self.next_offset < end {
            let mut x = self.next_offset;
            let mut frames = 0u8;
            let mut cur = false;
            let mut any_reliable = false;
            loop {
                let (unrel, run_end) = self.unreliable_run(x);
                if frames == 0 {
                    frames = 1;
                } else if unrel != cur {
                    // a new STREAM frame: its header, and at least one byte
                    if budget <= STREAM_FRAME_HEADER as u64 || frames == u8::MAX {
                        break;
                    }
                    budget -= STREAM_FRAME_HEADER as u64;
                    frames += 1;
                }
                cur = unrel;
                any_reliable |= !unrel;
                let stop = self.skipped.first_start_in(x, end).unwrap_or(end);
                let take = (run_end.min(stop) - x).min(budget);
                x += take;
                budget -= take;
                if x >= end || x >= stop || budget == 0 {
                    break;
                }
            }
            let fin = fin_at == Some(x);
            let len = x - self.next_offset;
            // a packet with any reliable frame or the FIN is reliable (QUIC*)
            let reliable = any_reliable || fin;
            return Some(StreamChunk { offset: self.next_offset, len, fin, reliable, frames, expire_to: ex });
        }
        if self.closed && (!self.fin_sent || self.fin_lost) && !self.fin_acked {
            let offset = self.written;
            return Some(StreamChunk { offset, len: 0, fin: true, reliable: true, frames: 1, expire_to: ex });
        }
        let offset = self.next_offset;
        expire.map(|e| StreamChunk { offset, len: 0, fin: false, reliable: true, frames: 0, expire_to: e })
    }

    /// Stream data for a PTO probe: what `next_chunk` would send, else the oldest outstanding
    /// reliable data again, else a PING (unreliable data is never sent twice).
    fn probe_chunk(&self) -> StreamChunk {
        self.next_chunk().or_else(|| self.rec.oldest_outstanding().and_then(|p| p.chunk)).unwrap_or(StreamChunk {
            offset: self.next_offset,
            len: 0,
            fin: false,
            reliable: true,
            frames: 0,
            expire_to: 0,
        })
    }

    fn base_packet(&self, out: &mut Packet) {
        *out = Packet::EMPTY;
        out.flow = self.addr.flow;
        out.src = self.addr.src;
        out.dst = self.addr.dst;
        out.hash = self.hash;
    }

    fn take_chunk(&mut self, c: &StreamChunk) {
        let (s, e) = (c.offset, c.offset + c.len);
        if c.len > 0 && self.retx.first().is_some_and(|(rs, _)| rs == s) {
            self.retx.trim_below(e);
            self.stats.retransmits += 1;
            self.stats.retransmitted_bytes += c.len;
            self.stats.unreliable_retransmitted_bytes += overlap(&self.sent_unreliable, s, e);
        } else if s == self.next_offset && c.len > 0 {
            self.next_offset = e;
            self.skip_ahead();
            if !c.reliable {
                self.stats.unreliable_bytes_sent += c.len;
                self.sent_unreliable.insert(s, e, |_| {});
            } else if c.frames > 1 {
                self.stats.mixed_packets += 1;
            }
        } else if c.len > 0 {
            // a PTO probe repeating outstanding data
            self.stats.retransmits += 1;
            self.stats.retransmitted_bytes += c.len;
            self.stats.unreliable_retransmitted_bytes += overlap(&self.sent_unreliable, s, e);
        }
        if c.expire_to > 0 {
            self.expire_sent = self.expire_sent.max(c.expire_to);
            if c.frames == 0 {
                self.stats.expire_packets += 1;
            }
        }
        if c.fin {
            self.fin_sent = true;
            self.fin_lost = false;
        }
    }

    fn emit(&mut self, now: Ns, out: &mut Packet, chunk: Option<StreamChunk>, handshake: bool, rate: Option<u64>) {
        self.base_packet(out);
        let pn = self.next_pn;
        self.next_pn += 1;
        out.ack = pn;
        let udp = if handshake {
            out.flags = flags::SYN;
            HANDSHAKE_BYTES
        } else {
            let c = chunk.expect("stream data");
            self.take_chunk(&c);
            out.seq = c.offset;
            out.payload = c.len as u32;
            out.ts_ecr = c.expire_to;
            if c.fin {
                out.flags |= flags::FIN;
            }
            self.stats.stream_bytes_sent += c.len;
            c.udp_size()
        };
        out.size = UDP_IP_HEADER + udp;
        if self.rec.bytes_in_flight == 0 {
            self.rate.restart_interval(now);
        }
        let sp = SentPacket {
            pn,
            time_sent: now,
            size: udp as u64,
            ack_eliciting: true,
            in_flight: true,
            handshake,
            chunk,
            stamp: self.rate.stamp(now),
            state: PktState::Outstanding,
        };
        self.rec.on_sent(sp);
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += out.size as u64;
        self.cc.on_sent(now, udp as u64, self.rec.bytes_in_flight);
        self.pacer.on_sent(now, out.size as u64, rate);
    }

    /// Next packet allowed at `now` into `out` (true), or false.
    pub fn poll_transmit_into(&mut self, now: Ns, out: &mut Packet) -> bool {
        if self.hs != Handshake::Done {
            let send = self.hs == Handshake::Pending || self.pto_probes > 0;
            if send {
                self.pto_probes = self.pto_probes.saturating_sub(1);
                self.hs = Handshake::Sent;
                self.emit(now, out, None, true, None);
            }
            return send;
        }
        if self.pto_probes > 0 {
            // probes ignore the congestion window and pacing (RFC 9002 7.5)
            let c = self.probe_chunk();
            self.pto_probes -= 1;
            self.emit(now, out, Some(c), false, None);
            return true;
        }
        let Some(c) = self.next_chunk() else {
            if self.rec.bytes_in_flight < self.cc.cwnd() {
                self.app_limited = true;
                self.rate.set_app_limited(self.rec.bytes_in_flight);
            }
            return false;
        };
        self.app_limited = false;
        let udp = c.udp_size() as u64;
        if self.rec.bytes_in_flight + udp > self.cc.cwnd() {
            return false;
        }
        let rate = self.pacing_rate();
        if rate.is_some() && !self.pacer.may_send(now) {
            return false;
        }
        self.emit(now, out, Some(c), false, rate);
        true
    }

    /// Convenience wrapper of [`QuicSender::poll_transmit_into`].
    pub fn poll_transmit(&mut self, now: Ns) -> Option<Packet> {
        let mut p = Packet::EMPTY;
        self.poll_transmit_into(now, &mut p).then_some(p)
    }

    fn loss_timer(&self) -> Ns {
        self.rec.timer(self.rtt.pto_base(self.max_ack_delay()))
    }

    /// Earliest time `on_timer` / `poll_transmit` must run (`NEVER` if none).
    pub fn poll_at(&self) -> Ns {
        if self.hs == Handshake::Pending || self.pto_probes > 0 {
            return 0;
        }
        let mut t = self.loss_timer();
        if self.hs == Handshake::Done && self.pacing_rate().is_some() {
            if let Some(c) = self.next_chunk() {
                let udp = c.udp_size() as u64;
                if self.rec.bytes_in_flight + udp <= self.cc.cwnd() {
                    t = t.min(self.pacer.next_send());
                }
            }
        }
        t
    }

    /// Loss-detection timer (A.9): time-threshold losses, or a PTO.
    pub fn on_timer(&mut self, now: Ns) {
        let t = self.loss_timer();
        if t > now {
            return;
        }
        if self.rec.loss_time.is_some() {
            let prior = self.rec.bytes_in_flight;
            self.rec.detect_lost(now, &self.rtt);
            self.on_lost(now, prior);
            self.rec.compact();
            return;
        }
        self.rec.pto_count += 1;
        self.stats.pto_count += 1;
        self.pto_probes = if self.hs == Handshake::Done { PTO_PROBES } else { 1 };
    }

    /// React to the packets in `rec.lost`: queue reliable data again, congestion event,
    /// persistent congestion. Returns the bytes lost.
    fn on_lost(&mut self, now: Ns, prior_in_flight: u64) -> u64 {
        if self.rec.lost.is_empty() {
            return 0;
        }
        let mut lost_bytes = 0;
        let mut latest_sent = 0;
        for i in 0..self.rec.lost.len() {
            let p = self.rec.lost[i];
            self.stats.packets_lost += 1;
            lost_bytes += p.size;
            latest_sent = latest_sent.max(p.time_sent);
            if p.handshake {
                if self.hs == Handshake::Sent {
                    self.hs = Handshake::Pending;
                }
                continue;
            }
            let Some(c) = p.chunk else { continue };
            if c.reliable {
                if c.len > 0 {
                    self.queue_retx(c.offset, c.offset + c.len);
                }
            } else {
                // QUIC*: abandoned, never sent again; the loss still counts below
                self.stats.unreliable_lost_bytes += c.len;
                self.abandoned.insert(c.offset, c.offset + c.len, |_| {});
                self.settled.insert(c.offset, c.offset + c.len, |_| {});
            }
            if c.expire_to > self.expire_told {
                // the signal may not have arrived: send it again
                self.expire_sent = self.expire_sent.min(self.expire_told);
            }
            if c.fin && !self.fin_acked {
                self.fin_lost = true;
            }
        }
        // a congestion event per recovery period (7.3.2): a loss of a packet sent after it began
        if self.recovery_start.is_none_or(|s| latest_sent > s) {
            self.recovery_start = Some(now);
            self.in_recovery = true;
            self.stats.congestion_events += 1;
            self.cc.on_congestion_event(now, Congestion::Loss, prior_in_flight);
        }
        let duration = (self.rtt.smoothed() + (4 * self.rtt.rttvar()).max(GRANULARITY) + self.cfg.max_ack_delay)
            * PERSISTENT_CONGESTION_THRESHOLD;
        if self.rec.persistent_congestion(duration, self.first_sample_at) {
            self.stats.persistent_congestion += 1;
            self.cc.on_rto(now, self.rec.bytes_in_flight);
        }
        lost_bytes
    }

    /// Queue `[s, e)` for retransmission, minus what was acknowledged meanwhile.
    fn queue_retx(&mut self, s: u64, e: u64) {
        let mut x = s;
        while x < e {
            if let Some((_, ae)) = self.acked.last_starting_at_or_before(x) {
                if ae > x {
                    x = ae;
                    continue;
                }
            }
            if let Some((_, se)) = self.skipped.last_starting_at_or_before(x) {
                if se > x {
                    // skipped by the application: abandoned instead of sent again
                    let to = se.min(e);
                    self.abandoned.insert(x, to, |_| {});
                    self.settled.insert(x, to, |_| {});
                    x = to;
                    continue;
                }
            }
            let next = self.acked.first_start_in(x, e).unwrap_or(e);
            let next = self.skipped.first_start_in(x, next).unwrap_or(next);
            self.retx.insert(x, next, |_| {});
            x = next;
        }
    }

    /// An ACK arrived.
    pub fn on_packet(&mut self, now: Ns, pkt: &Packet) {
        if pkt.flow != self.addr.flow || pkt.src != self.addr.dst || pkt.dst != self.addr.src || !pkt.has(flags::ACK) {
            return;
        }
        let Some(f) = AckFrame::decode(pkt) else { return };
        if f.largest() >= self.next_pn {
            return; // acknowledges a packet never sent
        }
        self.stats.acks_received += 1;
        let prior_in_flight = self.rec.bytes_in_flight;
        let largest_time = self.rec.on_ack(&f);
        // RTT (A.7): the largest acknowledged is newly acked and something ack-eliciting was
        let mut rtt_sample = None;
        if let Some(t) = largest_time {
            let latest = now - t;
            let confirmed = self.confirmed();
            self.rtt.on_sample(latest, f.ack_delay, self.cfg.max_ack_delay, confirmed);
            if self.first_sample_at.is_none() {
                self.first_sample_at = Some(now);
            }
            rtt_sample = Some(latest);
        }
        // newly acknowledged packets
        let mut rs = RateSample::default();
        let mut acked_bytes = 0;
        let mut exit_recovery = false;
        for i in 0..self.rec.acked.len() {
            let p = self.rec.acked[i];
            acked_bytes += p.size;
            self.rate.on_delivered(&mut rs, p.size, &p.stamp, now);
            if self.recovery_start.is_some_and(|s| p.time_sent > s) {
                exit_recovery = true;
            }
            if p.handshake {
                self.hs = Handshake::Done;
            }
            self.on_chunk_acked(p.chunk);
        }
        for i in 0..self.rec.spurious.len() {
            let p = self.rec.spurious[i];
            self.stats.spurious_losses += 1;
            if p.handshake {
                self.hs = Handshake::Done;
            }
            self.on_chunk_acked(p.chunk);
        }
        // nothing below the settled prefix is sent again: forget those unreliable ranges
        self.sent_unreliable.trim_below(self.bytes_settled());
        self.abandoned.trim_below(self.expire_told.min(self.bytes_settled()));
        if exit_recovery && self.in_recovery {
            self.in_recovery = false;
            self.cc.on_recovery_exit(now);
        }
        if !self.rec.acked.is_empty() {
            self.rec.pto_count = 0;
        }
        self.rec.detect_lost(now, &self.rtt);
        let lost_bytes = self.on_lost(now, prior_in_flight);
        self.rec.compact();
        let delivery_rate = self.rate.sample(&rs, self.rtt.min_rtt());
        if acked_bytes > 0 {
            let s = AckSample {
                now,
                acked_bytes,
                rtt: rtt_sample,
                srtt: self.srtt().unwrap_or(0),
                min_rtt: self.rtt.min_rtt(),
                prior_in_flight,
                bytes_in_flight: self.rec.bytes_in_flight,
                in_recovery: self.in_recovery,
                delivered: self.rate.delivered,
                prior_delivered: rs.prior_delivered,
                delivery_rate_bps: delivery_rate,
                app_limited: rs.is_app_limited,
                lost_bytes,
                cwnd_limited: !self.app_limited,
            };
            self.cc.on_ack(&s);
        }
    }

    fn on_chunk_acked(&mut self, c: Option<StreamChunk>) {
        let Some(c) = c else { return };
        if c.expire_to > 0 {
            self.expire_told = self.expire_told.max(c.expire_to);
        }
        if c.len > 0 {
            self.acked.insert(c.offset, c.offset + c.len, |_| {});
            self.settled.insert(c.offset, c.offset + c.len, |_| {});
            // acknowledged data needs no retransmission
            let overlaps =
                self.retx.last_starting_at_or_before(c.offset + c.len - 1).is_some_and(|(_, e)| e > c.offset);
            if overlaps {
                let keep: Vec<(u64, u64)> = self.retx.as_slice().to_vec();
                self.retx = RangeSet::new();
                for (s, e) in keep {
                    self.queue_retx(s, e);
                }
            }
        }
        if c.fin {
            self.fin_acked = true;
            self.fin_lost = false;
        }
    }
}

/// The unreliable pattern of a configuration: (period, unreliable bytes per period), None when
/// nothing is unreliable.
fn unreliable_pattern(cfg: &QuicConfig) -> Option<(u64, u64)> {
    let period = cfg.unreliable_period.max(1);
    let f = cfg.unreliable_fraction.clamp(0.0, 1.0);
    let unrel = ((f * period as f64).round() as u64).min(period);
    (unrel > 0).then_some((period, unrel))
}

/// Bytes of `[s, e)` in `set`.
pub(super) fn overlap(set: &RangeSet, s: u64, e: u64) -> u64 {
    let mut n = 0;
    let mut x = s;
    while x < e {
        match set.last_starting_at_or_before(x) {
            Some((_, re)) if re > x => {
                n += re.min(e) - x;
                x = re;
            }
            _ => x = set.first_start_in(x, e).unwrap_or(e),
        }
    }
    n
}
