//! The sending half of a TCP connection, sans-IO.
//!
//! Handshake (SYN / SYN-ACK / ACK), segmentation in MSS units, cwnd (RFC 6675 pipe) and receive
//! window limits, SACK loss recovery (RFC 6675) or NewReno (RFC 6582) without SACK, RTT/RTO (RFC
//! 6298, RFC 7323 timestamps), RTO recovery, slow start after idle (Linux `tcp_cwnd_restart`),
//! pacing, delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation), ECN (RFC 3168).
//! The congestion window itself belongs to the [`CongestionControl`] passed in.

use super::cc::{AckSample, Congestion, CongestionControl};
use super::config::{rfc3390_window, FlowAddr, IdleRestart, TcpConfig};
use super::pacing::{self, Pacer};
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, Seg};
use crate::cc::rate::{RateEstimator, RateSample};
use crate::packet::{ecn, flags, Packet};
use crate::time::{Ns, NEVER};

/// RFC 6675 DupThresh.
pub const DUP_THRESH: u64 = 3;

/// Sender counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpStats {
    /// Packets sent of any kind (SYN, handshake ACK, data).
    pub packets_sent: u64,
    /// IP bytes of all packets sent.
    pub bytes_sent: u64,
    /// Data segments sent (new and retransmitted).
    pub data_segments_sent: u64,
    /// Payload bytes sent (new and retransmitted).
    pub payload_bytes_sent: u64,
    /// Retransmitted data segments (fast, NewReno partial-ACK, SACK and RTO retransmissions).
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Fast-recovery episodes entered (each starts with a fast retransmit).
    pub fast_recoveries: u64,
    /// Retransmission timeouts of data.
    pub rto_count: u64,
    /// Retransmissions detected as lost by SACK (and retransmitted again without an RTO).
    pub lost_retransmits: u64,
    pub syn_retransmits: u64,
    /// ECN-Echo reactions (congestion events of kind Ecn).
    pub ecn_reductions: u64,
    /// ACKs received (after the handshake).
    pub acks_received: u64,
    /// Duplicate ACKs (RFC 5681; with SACK: ACKs that SACK new data without advancing SND.UNA).
    pub dupacks: u64,
    /// Slow-start-after-idle restarts applied.
    pub idle_restarts: u64,
}

/// A snapshot of the sender for logs (Linux `tcp_info`-like).
#[derive(Clone, Debug, PartialEq)]
pub struct TcpSample {
    pub now: Ns,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// 0 until the first RTT sample.
    pub srtt: Ns,
    pub rttvar: Ns,
    /// 0 until the first RTT sample.
    pub min_rtt: Ns,
    pub latest_rtt: Ns,
    pub rto: Ns,
    /// RFC 6675 pipe.
    pub bytes_in_flight: u64,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Total bytes delivered (cumulatively or selectively acknowledged).
    pub delivered: u64,
    /// Latest delivery-rate sample (bit/s), 0 if none yet.
    pub delivery_rate_bps: u64,
    pub retransmits: u64,
    pub rto_count: u64,
    /// Pacing rate in force (bit/s), 0 when not pacing.
    pub pacing_rate_bps: u64,
    /// Window in force (cwnd, or the PRR window during fast recovery / CWR).
    pub send_window: u64,
    /// "open", "recovery" (fast recovery), "loss" (after an RTO) or "cwr" (ECN reduction).
    pub tcp_state: &'static str,
    /// The controller's own state name.
    pub cc_state: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conn {
    /// SYN not yet sent.
    Closed,
    SynSent,
    Established,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recovery {
    Open,
    /// Fast recovery (RFC 6675 / RFC 6582) until `recovery_point` is acknowledged.
    Fast,
    /// After an RTO until `recovery_point` is acknowledged (Linux TCP_CA_Loss).
    Loss,
}

/// Proportional Rate Reduction state (RFC 6937, Linux `tcp_cwnd_reduction`).
#[derive(Clone, Debug)]
struct Prr {
    /// RecoverFS: max(cwnd before the reduction (Linux `prior_cwnd`), pipe before it (RFC
    /// 6937)); the larger keeps the proportional phase from sending more than was delivered when
    /// a controller's ssthresh exceeds the old cwnd (FlightSize-based ssthresh after NewReno
    /// inflation).
    prior_cwnd: u64,
    delivered: u64,
    out: u64,
    /// Window in force during the reduction: pipe + sndcnt at the latest ACK.
    cwnd: u64,
}

/// What poll_transmit would send next (ignoring pacing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Retransmit(usize),
    New(u64),
    /// Nothing to send: application has no data.
    NoData,
    /// cwnd full.
    Cwnd,
    /// Receive window full.
    Rwnd,
}

/// Sender state machine of a half-connection (data `addr.src -> addr.dst`).
pub struct TcpSender {
    cfg: TcpConfig,
    addr: FlowAddr,
    hash: u32,
    mss: u64,
    cc: Box<dyn CongestionControl>,
    conn: Conn,
    syn_sent_at: Ns,
    syn_deadline: Ns,
    syn_retransmitted: bool,
    /// Handshake ACK to send.
    ack_pending: bool,
    /// Application data end (exclusive) unless `unlimited`.
    write_end: u64,
    unlimited: bool,
    snd_una: u64,
    snd_nxt: u64,
    snd_wnd: u64,
    sb: Scoreboard,
    rtt: RttEstimator,
    /// Linux `rtt_seq`: end of the window whose acknowledgment starts a new RTO-variance window.
    rtt_seq: u64,
    rto_at: Ns,
    recovery: Recovery,
    recovery_point: u64,
    /// First retransmission of a recovery episode / NewReno partial ACK goes out regardless of cwnd.
    force_retx: bool,
    dupacks: u64,
    /// NewReno: duplicate ACKs counted as delivered segments (Linux "reno SACK" emulation).
    reno_sacked: u64,
    /// PRR during fast recovery / CWR (None: the controller's cwnd applies).
    prr: Option<Prr>,
    /// ECN: in CWR until this sequence is acknowledged.
    cwr_until: Option<u64>,
    /// ECN: set CWR on the next new data segment.
    cwr_pending: bool,
    last_data_send: Option<Ns>,
    /// Last time anything of the connection was received at this host: a packet of this half
    /// (ACK, SYN-ACK) or, through [`TcpSender::note_peer_rx`], of the other half (FreeBSD
    /// `t_rcvtime`).
    last_rcv: Option<Ns>,
    pacer: Pacer,
    rate: RateEstimator,
    // cwnd-limited tracking (Linux tcp_cwnd_validate / is_cwnd_limited / max_packets_out)
    cwnd_limited_cur: bool,
    cwnd_limited_prev: bool,
    max_pipe_cur: u64,
    max_pipe_prev: u64,
    cwnd_window_end: u64,
    stats: TcpStats,
}

impl TcpSender {
    pub fn new(cfg: &TcpConfig, addr: FlowAddr, cc: Box<dyn CongestionControl>) -> Self {
        TcpSender {
            cfg: cfg.clone(),
            addr,
            hash: addr.data_hash(),
            mss: cfg.mss as u64,
            cc,
            conn: if cfg.handshake { Conn::Closed } else { Conn::Established },
            syn_sent_at: 0,
            syn_deadline: NEVER,
            syn_retransmitted: false,
            ack_pending: false,
            write_end: 0,
            unlimited: false,
            snd_una: 0,
            snd_nxt: 0,
            snd_wnd: cfg.rwnd,
            sb: Scoreboard::new(),
            rtt: if cfg.linux_rto {
                RttEstimator::new_linux(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
            } else {
                RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
            }
            .with_slop(cfg.rto_slop),
            rtt_seq: 0,
            rto_at: NEVER,
            recovery: Recovery::Open,
            recovery_point: 0,
            force_retx: false,
            dupacks: 0,
            reno_sacked: 0,
            prr: None,
            cwr_until: None,
            cwr_pending: false,
            last_data_send: None,
            last_rcv: None,
            pacer: Pacer::new(),
            rate: RateEstimator::default(),
            cwnd_limited_cur: false,
            cwnd_limited_prev: false,
            max_pipe_cur: 0,
            max_pipe_prev: 0,
            cwnd_window_end: 0,
            stats: TcpStats::default(),
        }
    }

    // ------------------------------------------------------------------ application side

    /// The application appends `bytes` to the send buffer.
    pub fn write(&mut self, _now: Ns, bytes: u64) {
        if !self.unlimited {
            self.write_end += bytes;
        }
    }
    /// Bulk source: the send buffer is never empty.
    pub fn set_unlimited(&mut self) {
        self.unlimited = true;
    }
    /// The bulk source stops: nothing beyond what has already been sent is written.
    pub fn stop_writing(&mut self) {
        if self.unlimited {
            self.unlimited = false;
            self.write_end = self.snd_nxt;
        }
    }
    /// Bytes cumulatively acknowledged.
    pub fn bytes_acked(&self) -> u64 {
        self.snd_una
    }
    /// Bytes handed to TCP by the application (for a bulk source: bytes sent so far).
    pub fn bytes_written(&self) -> u64 {
        if self.unlimited {
            self.snd_nxt
        } else {
            self.write_end
        }
    }
    /// Every written byte is acknowledged (never true for an unlimited source).
    pub fn all_acked(&self) -> bool {
        !self.unlimited && self.snd_una == self.write_end
    }
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
    pub fn cc_mut(&mut self) -> &mut dyn CongestionControl {
        self.cc.as_mut()
    }
    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    pub fn is_established(&self) -> bool {
        self.conn == Conn::Established
    }
    pub fn addr(&self) -> FlowAddr {
        self.addr
    }
    /// Hash this half's data packets on connection key `key` instead of its own, reversed or not
    /// (`FlowAddr::hash_key`; the driver pairs the two halves of one connection this way).
    pub fn set_hash_key(&mut self, key: u32, rev: bool) {
        self.addr.hash_key = key;
        self.addr.hash_rev = rev;
        self.hash = self.addr.data_hash();
    }
    /// A segment of the same connection arrived at this host on the reverse half-connection
    /// (the request that precedes a response, or the response data at the client). FreeBSD
    /// tests idleness against the last segment received on the connection (`t_rcvtime`), so this
    /// matters only with `idle_restart = freebsd`.
    pub fn note_peer_rx(&mut self, now: Ns) {
        self.last_rcv = Some(self.last_rcv.map_or(now, |t| t.max(now)));
    }
    /// RFC 6675 pipe (bytes in flight).
    pub fn bytes_in_flight(&self) -> u64 {
        self.pipe()
    }

    /// Smallest RTT sample so far (None before the first sample).
    pub fn min_rtt(&self) -> Option<Ns> {
        self.rtt.min_rtt()
    }

    /// Smoothed RTT (None before the first sample).
    pub fn srtt(&self) -> Option<Ns> {
        self.rtt.srtt()
    }

    pub fn sample(&self, now: Ns) -> TcpSample {
        TcpSample {
            now,
            cwnd: self.cc.cwnd(),
            ssthresh: self.cc.ssthresh(),
            srtt: self.rtt.srtt().unwrap_or(0),
            rttvar: self.rtt.rttvar(),
            min_rtt: self.rtt.min_rtt().unwrap_or(0),
            latest_rtt: self.rtt.latest().unwrap_or(0),
            rto: self.rtt.rto(),
            bytes_in_flight: self.pipe(),
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            delivered: self.rate.delivered,
            delivery_rate_bps: self.rate.last_rate_bps,
            retransmits: self.stats.retransmits,
            rto_count: self.stats.rto_count,
            pacing_rate_bps: self.pacing_rate().unwrap_or(0),
            send_window: self.send_window(),
            tcp_state: match (self.recovery, self.cwr_until) {
                (Recovery::Fast, _) => "recovery",
                (Recovery::Loss, _) => "loss",
                (Recovery::Open, Some(_)) => "cwr",
                (Recovery::Open, None) => "open",
            },
            cc_state: self.cc.state(),
        }
    }

    /// Recount the scoreboard (tests).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        self.sb.check_counters();
        assert!(self.snd_una <= self.snd_nxt);
        assert_eq!(self.sb.out_bytes(), self.snd_nxt - self.snd_una);
    }

    // ------------------------------------------------------------------ internals

    fn pipe(&self) -> u64 {
        self.sb.pipe().saturating_sub(self.reno_sacked)
    }

    /// The window in force: the controller's cwnd, or the PRR window during fast recovery / CWR.
    pub fn send_window(&self) -> u64 {
        match &self.prr {
            Some(p) => p.cwnd,
            None => self.cc.cwnd(),
        }
    }

    /// Start a PRR reduction (Linux `tcp_init_cwnd_reduction`) if configured and the controller
    /// does not pace itself (Linux: controllers with their own `cong_control`, such as BBR, bypass
    /// PRR; here, those that set a pacing rate).
    fn start_prr(&mut self, prior_cwnd: u64, prior_in_flight: u64) {
        if self.cfg.prr && self.cc.pacing_rate().is_none() {
            self.prr = Some(Prr {
                prior_cwnd: prior_cwnd.max(prior_in_flight).max(1),
                delivered: 0,
                out: 0,
                cwnd: self.cc.cwnd(),
            });
        }
    }

    /// RFC 6937 with Linux's slow-start reduction bound: on an ACK delivering `delivered` bytes.
    #[inline]
    fn prr_update(&mut self, delivered: u64, newly_lost: u64, una_advanced: bool) {
        if self.prr.is_none() {
            return;
        }
        let pipe = self.pipe();
        let ssthresh = self.cc.ssthresh();
        let mss = self.mss;
        let Some(p) = self.prr.as_mut() else { return };
        if delivered == 0 {
            return;
        }
        p.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            // proportional part: ceil(ssthresh * prr_delivered / prior_cwnd) - prr_out
            let target = (ssthresh as u128 * p.delivered as u128).div_ceil(p.prior_cwnd as u128);
            (target.min(u64::MAX as u128) as u64).saturating_sub(p.out)
        } else {
            let mut lim = p.delivered.saturating_sub(p.out).max(delivered);
            if una_advanced && newly_lost == 0 {
                lim += mss;
            }
            (ssthresh - pipe).min(lim)
        };
        p.cwnd = pipe + sndcnt;
    }

    fn in_recovery(&self) -> bool {
        self.recovery == Recovery::Fast || self.cwr_until.is_some()
    }

    /// Pacing rate in force: the controller's, else cwnd-based if configured.
    fn pacing_rate(&self) -> Option<u64> {
        if let Some(r) = self.cc.pacing_rate() {
            return Some(r);
        }
        if self.cfg.pacing {
            return pacing::rate_from_cwnd(
                self.cc.cwnd(),
                self.cc.ssthresh(),
                self.rtt.srtt().unwrap_or(0),
                self.cfg.pacing_ss_ratio,
                self.cfg.pacing_ca_ratio,
            );
        }
        None
    }

    fn cwnd_limited(&self) -> bool {
        let cwnd = self.cc.cwnd();
        if cwnd < self.cc.ssthresh() {
            cwnd < 2 * self.max_pipe_cur.max(self.max_pipe_prev)
        } else {
            self.cwnd_limited_cur || self.cwnd_limited_prev
        }
    }

    fn app_data_available(&self) -> u64 {
        if self.unlimited {
            u64::MAX
        } else {
            self.write_end - self.snd_nxt
        }
    }

    fn next(&self) -> Next {
        let cwnd = self.send_window();
        let pipe = self.pipe();
        if let Some(i) = self.sb.next_retransmit() {
            let len = self.sb.get(i).len;
            if self.force_retx || pipe + len <= cwnd || pipe == 0 {
                return Next::Retransmit(i);
            }
            return Next::Cwnd;
        }
        let avail = self.app_data_available();
        if avail == 0 {
            return Next::NoData;
        }
        let len = avail.min(self.mss);
        if !(pipe + len <= cwnd || pipe == 0) {
            return Next::Cwnd;
        }
        if self.snd_nxt + len > self.snd_una + self.snd_wnd && !self.sb.is_empty() {
            return Next::Rwnd;
        }
        Next::New(len)
    }

    /// Overwrites `p` with the fields every segment of this sender carries.
    #[inline(always)]
    fn base_packet(&self, now: Ns, p: &mut Packet) {
        *p = Packet::EMPTY;
        p.flow = self.addr.flow;
        p.src = self.addr.src;
        p.dst = self.addr.dst;
        p.hash = self.hash;
        p.flags = flags::ACK;
        p.rwnd = self.cfg.rwnd.min(u32::MAX as u64) as u32;
        if self.cfg.timestamps {
            p.ts_val = now;
        }
    }

    fn count_sent(&mut self, size: u32) {
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size as u64;
    }

    fn syn_packet(&mut self, now: Ns, p: &mut Packet) {
        self.base_packet(now, p);
        p.flags = flags::SYN;
        p.size = self.cfg.syn_bytes();
        if self.cfg.ecn {
            // RFC 3168 ECN-setup SYN (ECE|CWR)
            p.flags |= flags::ECE | flags::CWR;
        }
        self.syn_deadline = now + self.rtt.rto();
        self.count_sent(p.size);
    }

    // ------------------------------------------------------------------ driver side

    /// Next packet allowed at `now` (SYN, handshake ACK, retransmission, new data), or None.
    pub fn poll_transmit(&mut self, now: Ns) -> Option<Packet> {
        let mut p = Packet::EMPTY;
        self.poll_transmit_into(now, &mut p).then_some(p)
    }

    /// [`TcpSender::poll_transmit`] writing into the caller's packet: true if `out` now holds
    /// a packet to send (overwritten entirely), false if there is nothing to send (`out` is then
    /// unspecified).
    pub fn poll_transmit_into(&mut self, now: Ns, out: &mut Packet) -> bool {
        match self.conn {
            Conn::Closed => {
                self.conn = Conn::SynSent;
                self.syn_sent_at = now;
                self.syn_packet(now, out);
                return true;
            }
            Conn::SynSent => return false,
            Conn::Established => {}
        }
        if self.ack_pending {
            self.ack_pending = false;
            self.base_packet(now, out);
            out.size = self.cfg.header_bytes();
            self.count_sent(out.size);
            return true;
        }
        let next = self.next();
        match next {
            Next::NoData => {
                // draft-cheng 3.4 CheckIfApplicationLimited (send buffer empty, pipe < cwnd, no
                // retransmission pending)
                if self.pipe() < self.send_window() && self.sb.lost_pending_bytes() == 0 {
                    self.rate.set_app_limited(self.pipe());
                }
                return false;
            }
            Next::Cwnd => {
                self.cwnd_limited_cur = true;
                return false;
            }
            Next::Rwnd => return false,
            _ => {}
        }
        let rate = self.pacing_rate();
        if rate.is_some() && !self.pacer.may_send(now) {
            return false;
        }
        self.base_packet(now, out);
        let p = out;
        let seg = match next {
            Next::Retransmit(i) => {
                self.force_retx = false;
                let s = self.sb.on_retransmit(i, self.snd_nxt);
                self.stamp(i, now);
                p.flags |= flags::RETX;
                self.stats.retransmits += 1;
                self.stats.retransmitted_bytes += s.len;
                s
            }
            Next::New(len) => {
                if self.sb.is_empty() {
                    self.maybe_idle_restart(now);
                    // draft-cheng 3.2: nothing in flight -> restart the rate interval
                    self.rate.restart_interval(now);
                }
                let s = Seg {
                    seq: self.snd_nxt,
                    len,
                    sent_time: now,
                    delivered: 0,
                    delivered_time: 0,
                    first_sent_time: 0,
                    app_limited: false,
                    sacked: false,
                    lost: false,
                    retrans: false,
                    ever_retrans: false,
                    retx_high: 0,
                };
                self.sb.push(s);
                let i = self.sb.len() - 1;
                self.stamp(i, now);
                self.snd_nxt += len;
                if self.cfg.ecn {
                    // RFC 3168 6.1.5: ECT on new data only, never on retransmissions
                    p.ecn = ecn::ECT0;
                    if self.cwr_pending {
                        p.flags |= flags::CWR;
                        self.cwr_pending = false;
                    }
                }
                s
            }
            _ => unreachable!(),
        };
        p.seq = seg.seq;
        p.payload = seg.len as u32;
        p.size = self.cfg.header_bytes() + seg.len as u32;
        self.stats.data_segments_sent += 1;
        self.stats.payload_bytes_sent += seg.len;
        self.count_sent(p.size);
        let pipe = self.pipe();
        if let Some(prr) = self.prr.as_mut() {
            prr.out += seg.len;
        }
        self.max_pipe_cur = self.max_pipe_cur.max(pipe);
        self.cc.on_sent(now, seg.len, pipe);
        self.pacer.on_sent(now, p.size as u64, rate);
        self.last_data_send = Some(now);
        if self.rto_at == NEVER {
            self.rto_at = now + self.rtt.rto();
        }
        true
    }

    fn stamp(&mut self, i: usize, now: Ns) {
        let st = self.rate.stamp(now);
        self.sb.stamp(i, |s| s.set_stamp(&st));
    }

    /// Restart after idle, when new data is sent with nothing outstanding ([`IdleRestart`]):
    ///
    /// * Linux `tcp_cwnd_restart`: after an idle period (since the last data sent) longer than
    ///   the RTO, the window is halved once per RTO elapsed, but not below min(IW, cwnd).
    /// * RFC 5681 4.1: idle (since the last data sent) longer than the RTO -> cwnd = min(cwnd,
    ///   RW), RW = min(4 MSS, max(2 MSS, 4380 B)), ssthresh unchanged.
    /// * FreeBSD 10 (`tcp_output`: `ticks - t_rcvtime >= t_rxtcur` -> `newreno_after_idle`): the
    ///   same window when nothing was received on the connection for at least the RTO.
    fn maybe_idle_restart(&mut self, now: Ns) {
        if !self.cfg.slow_start_after_idle {
            return;
        }
        let rto = self.rtt.rto();
        match self.cfg.idle_restart {
            IdleRestart::Linux => {
                let Some(last) = self.last_data_send else { return };
                let idle = now.saturating_sub(last);
                if idle <= rto {
                    return;
                }
                let cwnd = self.cc.cwnd();
                let restart_base = (self.cfg.initial_window as u64 * self.mss).min(cwnd);
                let mut c = cwnd;
                let mut n = idle / rto;
                while n > 0 && c > restart_base {
                    c >>= 1;
                    n -= 1;
                }
                let restart = c.max(restart_base);
                self.stats.idle_restarts += 1;
                self.cc.on_idle_restart(now, restart);
            }
            IdleRestart::Rfc5681 | IdleRestart::FreeBsd => {
                let idle = if self.cfg.idle_restart == IdleRestart::Rfc5681 {
                    matches!(self.last_data_send, Some(last) if now.saturating_sub(last) > rto)
                } else {
                    matches!(self.last_rcv, Some(last) if now.saturating_sub(last) >= rto)
                };
                if !idle {
                    return;
                }
                let restart = self.cc.cwnd().min(rfc3390_window(self.mss));
                self.stats.idle_restarts += 1;
                self.cc.on_idle_restart_keep_ssthresh(now, restart);
            }
        }
    }

    /// Earliest time `on_timer` / `poll_transmit` must run (`NEVER` if none; a value <= now means
    /// immediately).
    pub fn poll_at(&self) -> Ns {
        match self.conn {
            Conn::Closed => return 0,
            Conn::SynSent => return self.syn_deadline,
            Conn::Established => {}
        }
        if self.ack_pending {
            return 0;
        }
        let mut t = self.rto_at;
        if self.pacing_rate().is_some() && matches!(self.next(), Next::Retransmit(_) | Next::New(_)) {
            t = t.min(self.pacer.next_send());
        }
        t
    }

    /// The retransmission timer is the only thing pending and it is not due at `now`: an
    /// unpaced, established sender with no ACK to send whose RTO moved later since its timer
    /// event was scheduled. Then `on_timer(now)` does nothing and, if nothing happened to the
    /// sender since the driver last polled it (the driver polls after every call that changes
    /// it), `poll_transmit` has nothing to send: the driver only re-arms the timer at `rto_at`
    /// (the returned time).
    #[inline]
    pub fn early_rto(&self, now: Ns) -> Option<Ns> {
        let idle = matches!(self.conn, Conn::Established) && !self.ack_pending && now < self.rto_at;
        (idle && self.pacing_rate().is_none()).then_some(self.rto_at)
    }

    pub fn on_timer(&mut self, now: Ns) {
        match self.conn {
            Conn::Closed => {}
            Conn::SynSent => {
                if now >= self.syn_deadline {
                    // SYN timeout: back off and resend (poll_transmit sends it).
                    self.rtt.on_backoff();
                    self.syn_retransmitted = true;
                    self.stats.syn_retransmits += 1;
                    self.conn = Conn::Closed;
                }
            }
            Conn::Established => {
                if now >= self.rto_at {
                    if self.sb.is_empty() {
                        self.rto_at = NEVER;
                    } else {
                        self.on_rto(now);
                    }
                }
            }
        }
    }

    fn on_rto(&mut self, now: Ns) {
        self.stats.rto_count += 1;
        self.cc.on_rto(now, self.pipe());
        self.sb.mark_all_lost();
        self.reno_sacked = 0;
        self.dupacks = 0;
        self.force_retx = false;
        self.recovery = Recovery::Loss;
        self.recovery_point = self.snd_nxt;
        self.cwr_until = None;
        self.prr = None;
        self.rtt.on_backoff();
        self.rto_at = now + self.rtt.rto();
    }

    /// An ACK (or SYN-ACK) from the receiver.
    pub fn on_packet(&mut self, now: Ns, pkt: &Packet) {
        // only ACKs of this half-connection (same flow id, direction dst -> src)
        if pkt.flow != self.addr.flow
            || pkt.src != self.addr.dst
            || pkt.dst != self.addr.src
            || !pkt.has(flags::ACK)
            || pkt.has(flags::DGRAM)
        {
            return;
        }
        self.last_rcv = Some(now);
        if pkt.has(flags::SYN) {
            if self.conn == Conn::SynSent {
                self.conn = Conn::Established;
                self.syn_deadline = NEVER;
                self.snd_wnd = pkt.rwnd as u64;
                let r = if self.cfg.timestamps && pkt.ts_ecr != 0 && pkt.ts_ecr <= now {
                    Some(now - pkt.ts_ecr)
                } else if !self.syn_retransmitted {
                    Some(now - self.syn_sent_at)
                } else {
                    None
                };
                if let Some(r) = r {
                    self.rtt.on_sample(r);
                }
                self.ack_pending = true;
            }
            return;
        }
        if self.conn != Conn::Established {
            return;
        }
        self.stats.acks_received += 1;
        let ack = pkt.ack;
        if ack > self.snd_nxt || ack < self.snd_una {
            return; // acknowledges unsent data, or old
        }
        let prior_in_flight = self.pipe();
        let prior_una = self.snd_una;
        self.snd_wnd = pkt.rwnd as u64;

        // --- cumulative ACK
        let mut rs = RateSample::default();
        let mut karn_first: Option<Ns> = None;
        let mut retx_acked = false;
        let rate = &mut self.rate;
        let newly_cum = self.sb.ack_cum(ack, |s| {
            rate.on_delivered(&mut rs, s.len, &s.send_stamp(), now);
            if s.ever_retrans {
                retx_acked = true;
            } else if karn_first.is_none() {
                karn_first = Some(s.sent_time);
            }
        });
        self.snd_una = ack;

        // --- SACK blocks
        let mut newly_sacked = 0;
        if self.cfg.sack {
            for i in 0..(pkt.nsack as usize).min(pkt.sack.len()) {
                let (s, e) = pkt.sack_block(i);
                if e <= ack || s >= e {
                    continue;
                }
                let rate = &mut self.rate;
                newly_sacked += self.sb.sack(s.max(ack), e.min(self.snd_nxt), |seg| {
                    rate.on_delivered(&mut rs, seg.len, &seg.send_stamp(), now)
                });
            }
        }

        // --- RTT (RFC 7323: every ACK advancing SND.UNA with a timestamp echo; else Karn)
        let mut rtt_sample = None;
        if ack > prior_una {
            if self.cfg.timestamps && pkt.ts_ecr != 0 && pkt.ts_ecr <= now {
                rtt_sample = Some(now - pkt.ts_ecr);
            } else if !retx_acked {
                rtt_sample = karn_first.map(|t| now - t);
            }
            if let Some(r) = rtt_sample {
                let new_window = self.snd_una > self.rtt_seq;
                if new_window {
                    self.rtt_seq = self.snd_nxt;
                }
                self.rtt.on_sample_windowed(r, new_window);
            }
        }

        // --- duplicate ACKs
        let is_dup = ack == prior_una
            && !self.sb.is_empty()
            && pkt.payload == 0
            && if self.cfg.sack { newly_sacked > 0 } else { true };
        if is_dup {
            self.dupacks += 1;
            self.stats.dupacks += 1;
        } else if ack > prior_una && self.recovery == Recovery::Open {
            self.dupacks = 0;
        }

        // --- cwnd-limited window rollover (once per window of data)
        if self.snd_una >= self.cwnd_window_end {
            self.cwnd_limited_prev = self.cwnd_limited_cur;
            self.max_pipe_prev = self.max_pipe_cur;
            self.cwnd_limited_cur = false;
            self.max_pipe_cur = self.pipe();
            self.cwnd_window_end = self.snd_nxt;
        }

        // --- recovery state machine
        if self.recovery != Recovery::Open && self.snd_una >= self.recovery_point {
            if self.recovery == Recovery::Fast {
                self.prr = None;
                self.cc.on_recovery_exit(now);
            }
            self.recovery = Recovery::Open;
            self.dupacks = 0;
            self.reno_sacked = 0;
            self.force_retx = false;
        }
        let mut newly_lost = 0;
        let reno_before = self.reno_sacked;
        if self.recovery != Recovery::Loss {
            if self.cfg.sack {
                newly_lost += self.sb.mark_lost_rfc6675(self.mss, DUP_THRESH);
                let (again, n) = self.sb.mark_lost_retransmits(DUP_THRESH * self.mss);
                self.stats.lost_retransmits += n;
                newly_lost += again;
            } else if self.recovery == Recovery::Open && ack > prior_una {
                // Linux tcp_reset_reno_sack: a cumulative advance outside recovery forgets the
                // dupacks counted so far (they were reordering, or limited transmit)
                self.reno_sacked = 0;
            } else if is_dup {
                let cap =
                    self.sb.out_bytes().saturating_sub(self.sb.lost_bytes() + self.sb.first().map_or(0, |s| s.len));
                self.reno_sacked = (self.reno_sacked + self.mss).min(cap);
            }
        }
        match self.recovery {
            Recovery::Open => {
                let enter = if self.cfg.sack {
                    newly_lost > 0 || self.dupacks >= DUP_THRESH
                } else {
                    self.dupacks >= DUP_THRESH
                };
                if enter && !self.sb.is_empty() {
                    self.recovery = Recovery::Fast;
                    self.recovery_point = self.snd_nxt;
                    newly_lost += self.sb.mark_first_lost();
                    self.force_retx = self.sb.next_retransmit().is_some();
                    self.stats.fast_recoveries += 1;
                    // Linux: a reduction already under way for ECN (CWR) is not repeated.
                    if self.cwr_until.take().is_none() {
                        let prior_cwnd = self.cc.cwnd();
                        self.cc.on_congestion_event(now, Congestion::Loss, prior_in_flight);
                        self.start_prr(prior_cwnd, prior_in_flight);
                    }
                }
            }
            Recovery::Fast => {
                if !self.cfg.sack && ack > prior_una {
                    // RFC 6582 partial ACK: retransmit the first unacknowledged segment
                    self.reno_sacked = self.reno_sacked.saturating_sub(newly_cum.saturating_sub(self.mss));
                    newly_lost += self.sb.mark_first_lost();
                    self.force_retx = self.sb.next_retransmit().is_some();
                }
            }
            Recovery::Loss => {
                if !self.cfg.sack {
                    self.reno_sacked = 0;
                }
            }
        }

        // --- ECN (RFC 3168 6.1.2: react at most once per window; not while recovering)
        if self.cfg.ecn {
            if let Some(until) = self.cwr_until {
                if self.snd_una >= until {
                    self.cwr_until = None;
                    self.prr = None;
                    self.cc.on_recovery_exit(now);
                }
            }
            if pkt.has(flags::ECE) && self.recovery == Recovery::Open && self.cwr_until.is_none() {
                let prior_cwnd = self.cc.cwnd();
                self.cc.on_congestion_event(now, Congestion::Ecn, prior_in_flight);
                self.start_prr(prior_cwnd, prior_in_flight);
                self.stats.ecn_reductions += 1;
                self.cwr_until = Some(self.snd_nxt.max(self.snd_una + 1));
                self.cwr_pending = true;
            }
        }

        // --- RTO timer (RFC 6298 5.2/5.3)
        if ack > prior_una {
            self.rto_at = if self.sb.is_empty() { NEVER } else { now + self.rtt.rto() };
        }

        // --- delivery-rate sample (draft-cheng 3.3)
        let acked_bytes = newly_cum + newly_sacked;
        // PRR: DeliveredData includes NewReno's dupack estimate (and its correction on partial ACKs)
        let prr_delivered = (acked_bytes + self.reno_sacked).saturating_sub(reno_before);
        self.prr_update(prr_delivered, newly_lost, ack > prior_una);
        let delivery_rate = self.rate.sample(&rs, self.rtt.min_rtt().unwrap_or(0));
        if acked_bytes > 0 {
            let s = AckSample {
                now,
                acked_bytes,
                rtt: rtt_sample,
                srtt: self.rtt.srtt().unwrap_or(0),
                min_rtt: self.rtt.min_rtt().unwrap_or(0),
                prior_in_flight,
                bytes_in_flight: self.pipe(),
                in_recovery: self.in_recovery(),
                delivered: self.rate.delivered,
                prior_delivered: rs.prior_delivered,
                delivery_rate_bps: delivery_rate,
                app_limited: rs.is_app_limited,
                lost_bytes: newly_lost,
                cwnd_limited: self.cwnd_limited(),
            };
            self.cc.on_ack(&s);
        }
    }
}
