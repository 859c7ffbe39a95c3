//! The `[flow.tcp]` scenario section: TCP endpoint options as a parameter table (units, Linux
//! defaults), read into a [`TcpConfig`].

use super::config::TcpConfig;
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{MS, SEC};

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "mss",
        unit: Unit::Bytes,
        default: Default::Int(crate::packet::MSS as i64),
        doc: "maximum segment size (payload); 1448 = 1500 MTU - 52 header bytes with timestamps",
    },
    ParamSpec {
        name: "initial_window",
        unit: Unit::Int,
        default: Default::Int(10),
        doc: "initial congestion window in segments (RFC 6928)",
    },
    ParamSpec {
        name: "rwnd",
        unit: Unit::Bytes,
        default: Default::Int(6 * 1024 * 1024),
        doc: "receive window (Linux tcp_rmem max 6 MiB)",
    },
    ParamSpec {
        name: "delayed_ack",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "receiver delays ACKs (RFC 1122/5681)",
    },
    ParamSpec {
        name: "delack_timeout",
        unit: Unit::Duration,
        default: Default::Int(40 * MS as i64),
        doc: "delayed-ACK timer (Linux TCP_DELACK_MIN)",
    },
    ParamSpec {
        name: "ack_every",
        unit: Unit::Int,
        default: Default::Int(2),
        doc: "ACK at least every N full segments",
    },
    ParamSpec {
        name: "quickack",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "Linux quick-ACK mode: ACK every segment at the start and after idle",
    },
    ParamSpec {
        name: "min_rto",
        unit: Unit::Duration,
        default: Default::Int(200 * MS as i64),
        doc: "RTO lower bound (Linux TCP_RTO_MIN)",
    },
    ParamSpec {
        name: "initial_rto",
        unit: Unit::Duration,
        default: Default::Int(SEC as i64),
        doc: "RTO before the first RTT sample (RFC 6298)",
    },
    ParamSpec {
        name: "max_rto",
        unit: Unit::Duration,
        default: Default::Int(120 * SEC as i64),
        doc: "RTO upper bound (Linux TCP_RTO_MAX)",
    },
    ParamSpec {
        name: "linux_rto",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "Linux RTO estimator (~srtt + 200 ms) instead of RFC 6298; avoids spurious RTOs with deep buffers",
    },
    ParamSpec {
        name: "slow_start_after_idle",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "collapse cwnd after an idle period longer than the RTO (Linux default on)",
    },
    ParamSpec {
        name: "pacing",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "pace at ratio*cwnd/srtt even if the controller does not pace (Linux with sch_fq)",
    },
    ParamSpec {
        name: "pacing_ss_ratio",
        unit: Unit::Float,
        default: Default::Float(2.0),
        doc: "pacing ratio in slow start (Linux 200%)",
    },
    ParamSpec {
        name: "pacing_ca_ratio",
        unit: Unit::Float,
        default: Default::Float(1.2),
        doc: "pacing ratio in congestion avoidance (Linux 120%)",
    },
    ParamSpec {
        name: "sack",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "SACK loss recovery (RFC 6675); false: NewReno (RFC 6582)",
    },
    ParamSpec {
        name: "prr",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "Proportional Rate Reduction in recovery (RFC 6937, Linux); false: plain RFC 6675",
    },
    ParamSpec { name: "ecn", unit: Unit::Bool, default: Default::Bool(false), doc: "ECN (RFC 3168)" },
    ParamSpec {
        name: "handshake",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "three-way handshake before data",
    },
    ParamSpec {
        name: "timestamps",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "timestamps option (RFC 7323)",
    },
];

/// Read a TcpConfig from scenario parameters (unknown names rejected, ranges checked).
pub fn from_params(p: &Params) -> Result<TcpConfig, ParamError> {
    p.check_known(PARAMS)?;
    let c = TcpConfig {
        mss: p.req_u64(PARAMS, "mss")? as u32,
        initial_window: p.req_u64(PARAMS, "initial_window")? as u32,
        rwnd: p.req_u64(PARAMS, "rwnd")?,
        delayed_ack: p.bool(PARAMS, "delayed_ack")?,
        delack_timeout: p.req_u64(PARAMS, "delack_timeout")?,
        ack_every: p.req_u64(PARAMS, "ack_every")? as u32,
        quickack: p.bool(PARAMS, "quickack")?,
        linux_rto: p.bool(PARAMS, "linux_rto")?,
        prr: p.bool(PARAMS, "prr")?,
        min_rto: p.req_u64(PARAMS, "min_rto")?,
        initial_rto: p.req_u64(PARAMS, "initial_rto")?,
        max_rto: p.req_u64(PARAMS, "max_rto")?,
        slow_start_after_idle: p.bool(PARAMS, "slow_start_after_idle")?,
        pacing: p.bool(PARAMS, "pacing")?,
        pacing_ss_ratio: p.f64(PARAMS, "pacing_ss_ratio")?,
        pacing_ca_ratio: p.f64(PARAMS, "pacing_ca_ratio")?,
        sack: p.bool(PARAMS, "sack")?,
        ecn: p.bool(PARAMS, "ecn")?,
        handshake: p.bool(PARAMS, "handshake")?,
        timestamps: p.bool(PARAMS, "timestamps")?,
    };
    let hdr = c.header_bytes();
    if c.mss < 64 || c.mss + hdr > crate::packet::MTU {
        return Err(perr(
            "mss",
            format!("expected 64..={} bytes (MTU 1500 minus {hdr} header bytes)", crate::packet::MTU - hdr),
        ));
    }
    if c.initial_window == 0 {
        return Err(perr("initial_window", "expected >= 1 segment"));
    }
    if c.rwnd < c.mss as u64 {
        return Err(perr("rwnd", "expected at least one MSS"));
    }
    if c.ack_every == 0 {
        return Err(perr("ack_every", "expected >= 1"));
    }
    if c.min_rto == 0 || c.max_rto < c.min_rto {
        return Err(perr("max_rto", "expected 0 < min_rto <= max_rto"));
    }
    // Rejects NaN as well as values <= 0.
    for (name, v) in [("pacing_ss_ratio", c.pacing_ss_ratio), ("pacing_ca_ratio", c.pacing_ca_ratio)] {
        if v.is_nan() || v <= 0.0 {
            return Err(perr(name, "expected a pacing ratio > 0"));
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn defaults_match_tcpconfig_default() {
        assert_eq!(from_params(&Params::new()).unwrap(), TcpConfig::default());
        assert_eq!(from_params(&Params::new().with("mss", 9000)).unwrap_err().param, "mss");
        assert_eq!(from_params(&Params::new().with("nagle", true)).unwrap_err().param, "nagle");
    }
}
