//! The `[flow.tcp]` scenario section: TCP endpoint options as a parameter table (units, Linux
//! defaults), read into a [`TcpConfig`]. `profile` selects a set of values (a host's TCP stack);
//! explicit keys of the same table override the profile's values.

use super::config::{IdleRestart, TcpConfig};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::time::{Ns, MS, SEC};

/// Profile names (`profile` key).
pub const PROFILES: &[&str] = &["linux", "freebsd10"];

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "profile",
        unit: Unit::Choice(PROFILES),
        default: Default::Str("linux"),
        doc: "host TCP stack whose values are the defaults of this table: linux (the defaults listed here) or \
              freebsd10 (FreeBSD 10.1 NewReno host, docs/models/tcp.md); explicit keys override the profile",
    },
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
        name: "idle_restart",
        unit: Unit::Choice(IdleRestart::NAMES),
        default: Default::Str("linux"),
        doc: "restart rule: linux (halve per idle RTO since the last send, floor min(IW, cwnd)), rfc5681 \
              (min(cwnd, RFC 3390 window) after > 1 RTO without sending) or freebsd (the same window after \
              >= 1 RTO without receiving anything on the connection)",
    },
    ParamSpec {
        name: "rto_slop",
        unit: Unit::Duration,
        default: Default::Int(0),
        doc: "added to the computed RTO (FreeBSD net.inet.tcp.rexmit_slop, 200 ms there)",
    },
    ParamSpec {
        name: "abc_l",
        unit: Unit::Int,
        default: Default::Int(1),
        doc: "RFC 3465 L: slow-start increase per ACK at most abc_l x MSS (newreno, multcp; FreeBSD 2)",
    },
    ParamSpec {
        name: "connection_hash",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "both half-connections of an HTTP connection hash on the connection's 5-tuple (FQ queues); \
              false: each half on its own",
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

/// The values a profile sets (canonical units), beyond this table's defaults.
pub fn profile_params(profile: &str) -> Params {
    const fn ns(x: Ns) -> i64 {
        x as i64
    }
    match profile {
        // FreeBSD 10.1 host (docs/models/tcp.md, "Profiles"): NewReno with SACK (sack.enable = 1),
        // no PRR, RFC 3465 ABC with L = 2, restart after idle per tcp_output/newreno_after_idle,
        // RTO = max(rexmit_min 30 ms, srtt + 4 rttvar) + rexmit_slop 200 ms, at most 64 s,
        // 3 s before the first sample, delayed ACKs after 100 ms (delacktime), IW 10.
        "freebsd10" => Params::new()
            .with("initial_window", 10)
            .with("delayed_ack", true)
            .with("delack_timeout", ns(100 * MS))
            .with("ack_every", 2)
            .with("quickack", false)
            .with("min_rto", ns(30 * MS))
            .with("rto_slop", ns(200 * MS))
            .with("initial_rto", ns(3 * SEC))
            .with("max_rto", ns(64 * SEC))
            .with("linux_rto", false)
            .with("slow_start_after_idle", true)
            .with("idle_restart", "freebsd")
            .with("abc_l", 2)
            .with("sack", true)
            .with("prr", false)
            .with("pacing", false)
            .with("ecn", false)
            .with("timestamps", true),
        _ => Params::new(),
    }
}

/// Read a TcpConfig from scenario parameters (unknown names rejected, ranges checked): the
/// profile's values, overridden by the explicit keys.
pub fn from_params(p: &Params) -> Result<TcpConfig, ParamError> {
    p.check_known(PARAMS)?;
    let mut merged = profile_params(p.choice(PARAMS, "profile")?);
    for (k, v) in &p.0 {
        merged.0.insert(k.clone(), v.clone());
    }
    let p = &merged;
    let idle = p.choice(PARAMS, "idle_restart")?;
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
        idle_restart: IdleRestart::from_name(idle).expect("choice checked"),
        rto_slop: p.req_u64(PARAMS, "rto_slop")?,
        abc_l: p.req_u64(PARAMS, "abc_l")?.min(u32::MAX as u64) as u32,
        connection_hash: p.bool(PARAMS, "connection_hash")?,
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
    if c.abc_l == 0 || c.abc_l > 64 {
        return Err(perr("abc_l", "expected 1..=64 segments (RFC 3465: 1 or 2)"));
    }
    if c.rto_slop > 600 * SEC {
        return Err(perr("rto_slop", "expected at most 600 s"));
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

impl TcpConfig {
    /// The `freebsd10` profile (see [`profile_params`]).
    pub fn freebsd10() -> TcpConfig {
        from_params(&Params::new().with("profile", "freebsd10")).expect("profile values are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn defaults_match_tcpconfig_default() {
        assert_eq!(from_params(&Params::new()).unwrap(), TcpConfig::default());
        assert_eq!(from_params(&Params::new().with("profile", "linux")).unwrap(), TcpConfig::default());
        assert_eq!(from_params(&Params::new().with("mss", 9000)).unwrap_err().param, "mss");
        assert_eq!(from_params(&Params::new().with("nagle", true)).unwrap_err().param, "nagle");
        assert_eq!(from_params(&Params::new().with("abc_l", 0)).unwrap_err().param, "abc_l");
    }

    #[test]
    fn freebsd10_profile_values_and_overrides() {
        let c = TcpConfig::freebsd10();
        let d = TcpConfig::default();
        assert_eq!(c.idle_restart, IdleRestart::FreeBsd);
        assert!(c.slow_start_after_idle);
        assert_eq!((c.min_rto, c.rto_slop, c.delack_timeout), (30 * MS, 200 * MS, 100 * MS));
        assert_eq!((c.initial_rto, c.max_rto), (3 * SEC, 64 * SEC));
        assert_eq!((c.abc_l, c.initial_window), (2, 10));
        assert!(c.sack && !c.prr && !c.quickack && !c.linux_rto && !c.pacing && !c.ecn && c.timestamps);
        // everything else as the Linux defaults
        let same = TcpConfig {
            idle_restart: d.idle_restart,
            min_rto: d.min_rto,
            rto_slop: d.rto_slop,
            delack_timeout: d.delack_timeout,
            initial_rto: d.initial_rto,
            max_rto: d.max_rto,
            abc_l: d.abc_l,
            prr: d.prr,
            ..c.clone()
        };
        assert_eq!(same, d);
        // explicit keys of the same table win over the profile
        let o =
            from_params(&Params::new().with("profile", "freebsd10").with("min_rto", 200 * MS as i64).with("prr", true))
                .unwrap();
        assert_eq!((o.min_rto, o.prr, o.rto_slop), (200 * MS, true, 200 * MS));
        let e = from_params(&Params::new().with("profile", "bsd")).unwrap_err();
        assert_eq!(e.param, "profile");
        assert!(e.msg.contains("freebsd10"), "{}", e.msg);
    }
}
