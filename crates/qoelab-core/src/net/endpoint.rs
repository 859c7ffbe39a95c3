//! Endpoints of the packet simulator: anything attached to a host that consumes and emits
//! packets (an open enum: datagram source and sink, TCP sender and receiver, QUIC sender and
//! receiver), and the runtime record of a flow.

use super::error::{serr, SimError};
use crate::ids::{ClientId, EpId, FlowId, IdVec, NodeId};
use crate::params::Params;
use crate::quic::{QuicReceiver, QuicSender};
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::time::Ns;

/// Constant-bit-rate datagram source.
#[derive(Debug)]
pub struct CbrSource {
    pub rate_bps: u64,
    pub size: u32,
    pub next: Ns,
    pub active: bool,
    pub seq: u64,
    pub sent_bytes: u64,
}

/// A datagram sink.
#[derive(Debug, Default)]
pub struct Sink {
    pub bytes: u64,
    pub pkts: u64,
}

/// An endpoint: anything attached to a host that consumes and emits packets.
pub enum Ep {
    Cbr(CbrSource),
    Sink(Sink),
    TcpTx(Box<TcpSender>),
    TcpRx(Box<TcpReceiver>),
    QuicTx(Box<QuicSender>),
    QuicRx(Box<QuicReceiver>),
}

/// Runtime state of one flow (half-connection or datagram flow).
#[derive(Debug)]
pub struct FlowRt {
    pub name: String,
    pub kind: &'static str,
    pub src: NodeId,
    pub dst: NodeId,
    /// Endpoint indices of the data sender and receiver.
    pub tx: EpId,
    pub rx: EpId,
    pub start: Ns,
    pub stop: Option<Ns>,
    /// When the last byte of a finite transfer arrived.
    pub done_at: Option<Ns>,
    /// When the client closed (reset) this half's connection: its active span ends there.
    pub closed_at: Option<Ns>,
    /// Bytes received at the previous sample (for interval goodput).
    pub(crate) prev_bytes: u64,
    /// Size of a finite transfer (bytes).
    pub size: Option<u64>,
    /// Discarded (connection reset): packets arriving for it are dropped, timers ignored.
    pub dead: bool,
    /// The client reset this connection and the reset has not reached the server yet: the
    /// client's endpoints are closed (data arriving there is discarded and answered with a reset),
    /// the server's keep running. Holds the other half of the connection.
    pub closing: Option<crate::ids::FlowId>,
    /// The video client this half-connection belongs to.
    pub client: Option<ClientId>,
    /// The page load this half-connection belongs to.
    pub page: Option<crate::ids::PageId>,
    /// The client's connection slot of this half-connection (0 for other flows).
    pub slot: u32,
    /// Sum and count of srtt samples (ns) taken at the sampling interval.
    pub srtt_sum: f64,
    pub srtt_n: u64,
    /// Congestion controller name (TCP flows).
    pub cc: Option<String>,
    /// The other half-connection of the same TCP connection (set by `World::pair_halves`): its
    /// sender is told when this flow's receiver gets a segment (same host).
    pub peer: Option<FlowId>,
    /// The key its packets hash on ([`crate::packet::name_key`] of its name, or of the request
    /// half's for the response half of a paired connection) and whether its data direction is
    /// the reverse of that connection's (FQ classification, `TcpConfig::connection_hash`).
    pub hash_key: u32,
    pub hash_rev: bool,
}

impl FlowRt {
    pub(crate) fn new(
        name: &str,
        kind: &'static str,
        src: NodeId,
        dst: NodeId,
        tx: EpId,
        rx: EpId,
        start: Ns,
    ) -> FlowRt {
        FlowRt {
            hash_key: crate::packet::name_key(name),
            hash_rev: false,
            name: name.to_string(),
            kind,
            src,
            dst,
            tx,
            rx,
            start,
            stop: None,
            done_at: None,
            closed_at: None,
            prev_bytes: 0,
            size: None,
            cc: None,
            dead: false,
            closing: None,
            client: None,
            page: None,
            srtt_sum: 0.0,
            srtt_n: 0,
            peer: None,
            slot: 0,
        }
    }
}

pub(crate) fn tcp_config(p: &str, v: &serde_json::Value) -> Result<TcpConfig, SimError> {
    let params = Params::from_value(v).map_err(|e| serr(format!("{p}.tcp"), e.msg))?;
    crate::tcp::params::from_params(&params).map_err(|e| serr(format!("{p}.tcp.{}", e.param), e.msg))
}

/// Application bytes received by a flow's receiver.
pub(crate) fn bytes_received(eps: &IdVec<EpId, Ep>, f: &FlowRt) -> u64 {
    match &eps[f.rx] {
        Ep::Sink(s) => s.bytes,
        Ep::TcpRx(r) => r.bytes_received(),
        Ep::QuicRx(r) => r.bytes_received(),
        _ => 0,
    }
}
