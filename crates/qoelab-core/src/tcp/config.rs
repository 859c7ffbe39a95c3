//! TCP endpoint configuration (shared by the sender and the receiver of a half-connection).

use crate::packet::{self, IP_HEADER};
use crate::time::{Ns, MS, SEC};

/// How the sender restarts after an idle period (RFC 5681 4.1; see docs/models/tcp.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleRestart {
    /// Linux `tcp_cwnd_restart`: when nothing was sent for more than one RTO, halve cwnd once per
    /// RTO elapsed, down to min(IW, cwnd); ssthresh kept at least 3/4 of the old cwnd.
    Linux,
    /// RFC 5681 4.1: when nothing was sent for more than one RTO, cwnd = min(cwnd, RW) with
    /// RW = min(4 MSS, max(2 MSS, 4380 B)) (RFC 3390's initial window); ssthresh unchanged.
    Rfc5681,
    /// FreeBSD 10 (`tcp_output` + `newreno_after_idle`): the RFC 5681 window, applied when nothing
    /// was *received* on the connection for at least one RTO (`t_rcvtime`, RFC 2581's test). A
    /// request arriving on the same connection therefore prevents the restart of its response.
    FreeBsd,
}

impl IdleRestart {
    pub const NAMES: &'static [&'static str] = &["linux", "rfc5681", "freebsd"];
    pub fn from_name(s: &str) -> Option<IdleRestart> {
        match s {
            "linux" => Some(IdleRestart::Linux),
            "rfc5681" => Some(IdleRestart::Rfc5681),
            "freebsd" => Some(IdleRestart::FreeBsd),
            _ => None,
        }
    }
}

/// RFC 3390 / RFC 5681 restart window `min(4 MSS, max(2 MSS, 4380 B))` (FreeBSD
/// `newreno_after_idle` with `net.inet.tcp.rfc3390=1`): 4380 B for MSS 1448.
pub fn rfc3390_window(mss: u64) -> u64 {
    (4 * mss).min((2 * mss).max(4380))
}

/// Configuration of one half-connection. Defaults follow Linux (see docs/models/tcp.md).
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Maximum segment size (payload bytes). Default [`packet::MSS`] = 1448.
    pub mss: u32,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window: u32,
    /// Receive window advertised by the receiver (bytes). Default 6 MiB (Linux `tcp_rmem[2]`).
    pub rwnd: u64,
    /// Receiver delays ACKs (RFC 5681 4.2 / RFC 1122).
    pub delayed_ack: bool,
    /// Delayed-ACK timeout. Default 40 ms (Linux `TCP_DELACK_MIN`, the minimum ATO).
    pub delack_timeout: Ns,
    /// The receiver ACKs at the latest once more than `ack_every - 1` full segments are unacked
    /// (2: every second full segment, RFC 5681 / Linux `> rcv_mss`).
    pub ack_every: u32,
    /// Linux receiver quick-ACK mode: ACK every segment for the first `min(16, rwnd / (2 MSS))`
    /// segments of a connection and after a receive gap longer than `min_rto` (Linux:
    /// `tcp_incr_quickack`, `TCP_MAX_QUICKACKS`). Off by default (plain RFC 5681 delayed ACKs).
    pub quickack: bool,
    /// Lower bound of the RTO (Linux `TCP_RTO_MIN` 200 ms).
    pub min_rto: Ns,
    /// RTO before the first RTT sample (RFC 6298: 1 s).
    pub initial_rto: Ns,
    /// Upper bound of the RTO (Linux `TCP_RTO_MAX` 120 s).
    pub max_rto: Ns,
    /// Linux RTO computation (`tcp_rtt_estimator`): RTO = srtt + max(windowed max 4 x mdev,
    /// min_rto) instead of RFC 6298's max(min_rto, srtt + 4 rttvar). See [`super::rtt`].
    pub linux_rto: bool,
    /// Linux `net.ipv4.tcp_slow_start_after_idle` (RFC 5681 4.1 / RFC 2861 restart window).
    pub slow_start_after_idle: bool,
    /// Which restart-after-idle rule applies when `slow_start_after_idle` is on.
    pub idle_restart: IdleRestart,
    /// Added to the computed RTO before the upper bound (FreeBSD `net.inet.tcp.rexmit_slop`,
    /// 200 ms there); 0 for Linux and RFC 6298.
    pub rto_slop: Ns,
    /// RFC 3465 limit L: in slow start a controller that counts bytes grows cwnd by at most
    /// `abc_l` MSS per ACK (1 = qoelab's NewReno so far; FreeBSD `net.inet.tcp.abc_l_var` = 2).
    /// Passed to the controller in its build context; only newreno and multcp use it.
    pub abc_l: u32,
    /// An HTTP connection's two half-connections classify in FQ queues on the connection's
    /// 5-tuple (one hash per direction, as on a real host) once the driver pairs them; false:
    /// each half hashes on its own flow id.
    pub connection_hash: bool,
    /// Pace from cwnd/srtt even if the controller does not ask for pacing (Linux: sch_fq).
    pub pacing: bool,
    /// Pacing ratio while cwnd < ssthresh/2 (Linux `tcp_pacing_ss_ratio` 200%).
    pub pacing_ss_ratio: f64,
    /// Pacing ratio otherwise (Linux `tcp_pacing_ca_ratio` 120%).
    pub pacing_ca_ratio: f64,
    /// Selective acknowledgments (RFC 2018 / RFC 6675); false: NewReno (RFC 6582).
    pub sack: bool,
    /// Proportional Rate Reduction (RFC 6937, Linux) during fast recovery and ECN CWR, for
    /// controllers that do not set a pacing rate. false: plain RFC 6675 (send while pipe < cwnd).
    pub prr: bool,
    /// ECN (RFC 3168).
    pub ecn: bool,
    /// Three-way handshake before data; false: both ends start established at time of creation.
    pub handshake: bool,
    /// Timestamps option (RFC 7323). The header sizes of [`packet`] include it; without it the
    /// TCP header is 20 bytes (the MSS stays as configured).
    pub timestamps: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: packet::MSS,
            initial_window: 10,
            rwnd: 6 * 1024 * 1024,
            delayed_ack: true,
            delack_timeout: 40 * MS,
            ack_every: 2,
            quickack: false,
            min_rto: 200 * MS,
            initial_rto: SEC,
            max_rto: 120 * SEC,
            linux_rto: false,
            slow_start_after_idle: true,
            idle_restart: IdleRestart::Linux,
            rto_slop: 0,
            abc_l: 1,
            connection_hash: true,
            pacing: false,
            pacing_ss_ratio: 2.0,
            pacing_ca_ratio: 1.2,
            sack: true,
            prr: true,
            ecn: false,
            handshake: true,
            timestamps: true,
        }
    }
}

impl TcpConfig {
    /// Header bytes (IP + TCP + timestamps if enabled) of a segment without SACK blocks.
    pub fn header_bytes(&self) -> u32 {
        if self.timestamps {
            packet::HEADERS
        } else {
            IP_HEADER + 20
        }
    }
    /// IP length of a SYN or SYN-ACK: IP 20 + TCP 20 + MSS(4) + SACK-permitted(2) + timestamps(10)
    /// + window scale(3) + NOP padding = 60 bytes as on Linux (48 without timestamps).
    pub fn syn_bytes(&self) -> u32 {
        if self.timestamps {
            60
        } else {
            48
        }
    }
}

/// Addresses of a half-connection: data travels `src -> dst`, ACKs `dst -> src`; both directions
/// carry the same `flow` id and set `Packet.hash` to [`packet::direction_hash`]`(hash_key, rev)`
/// of their direction (data: `hash_rev`, ACKs: `!hash_rev`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowAddr {
    pub flow: u32,
    pub src: u16,
    pub dst: u16,
    /// The connection key the packets hash on (FQ classification): the key of this half's flow
    /// name ([`packet::name_key`]), or that of the other half of the same connection, so that
    /// both halves' packets in one direction share one hash, as the 5-tuple of one TCP
    /// connection does on a real host.
    pub hash_key: u32,
    /// This half's data runs opposite to the direction in which `hash_key`'s connection was
    /// opened (the response half of a paired connection).
    pub hash_rev: bool,
}

impl FlowAddr {
    /// A half-connection hashing on key `key` (the driver gives the key of its name).
    pub fn new(flow: u32, src: u16, dst: u16, key: u32) -> FlowAddr {
        FlowAddr { flow, src, dst, hash_key: key, hash_rev: false }
    }
    /// Hash of the data direction (`src -> dst`).
    pub fn data_hash(&self) -> u32 {
        packet::direction_hash(self.hash_key, self.hash_rev)
    }
    /// Hash of the ACK direction (`dst -> src`).
    pub fn ack_hash(&self) -> u32 {
        packet::direction_hash(self.hash_key, !self.hash_rev)
    }
}
