//! TCP endpoint configuration (shared by the sender and the receiver of a half-connection).

use crate::packet::{self, IP_HEADER};
use crate::time::{Ns, MS, SEC};

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
/// carry the same `flow` id and set `Packet.hash` to [`packet::flow_hash`] of their direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowAddr {
    pub flow: u32,
    pub src: u16,
    pub dst: u16,
}
