//! `struct tcp_info` (include/uapi/linux/tcp.h) as far as the tables need it: parsed from the raw
//! bytes of `getsockopt(TCP_INFO)` (offsets as in docs/serve.md; the kernel only appends fields),
//! or from a record of `qoelab serve --tcp-info-log` (the same field names).

/// The TCP_INFO fields of a sample (segments, µs, bytes/s as the kernel reports them).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpInfo {
    pub ca_state: u8,
    pub rto_us: u32,
    pub snd_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub rtt_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub bytes_acked: u64,
    pub min_rtt_us: u32,
    pub delivery_rate: u64,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4).map_or(0, |x| u32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 8).map_or(0, |x| u64::from_ne_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]))
}

impl TcpInfo {
    /// From the bytes the kernel filled in (missing fields stay 0).
    pub fn parse(b: &[u8]) -> TcpInfo {
        TcpInfo {
            ca_state: b.get(1).copied().unwrap_or(0),
            rto_us: u32_at(b, 8),
            snd_mss: u32_at(b, 16),
            unacked: u32_at(b, 24),
            sacked: u32_at(b, 28),
            lost: u32_at(b, 32),
            retrans: u32_at(b, 36),
            rtt_us: u32_at(b, 68),
            snd_ssthresh: u32_at(b, 76),
            snd_cwnd: u32_at(b, 80),
            total_retrans: u32_at(b, 100),
            pacing_rate: u64_at(b, 104),
            bytes_acked: u64_at(b, 120),
            min_rtt_us: u32_at(b, 148),
            delivery_rate: u64_at(b, 160),
        }
    }

    /// From a JSON record of `qoelab serve --tcp-info-log` (absent fields stay 0).
    pub fn from_json(v: &serde_json::Value) -> TcpInfo {
        let g = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        TcpInfo {
            ca_state: g("ca_state") as u8,
            rto_us: g("rto_us") as u32,
            snd_mss: g("snd_mss") as u32,
            unacked: g("unacked") as u32,
            sacked: g("sacked") as u32,
            lost: g("lost") as u32,
            retrans: g("retrans") as u32,
            rtt_us: g("rtt_us") as u32,
            snd_ssthresh: g("snd_ssthresh") as u32,
            snd_cwnd: g("snd_cwnd") as u32,
            total_retrans: g("total_retrans") as u32,
            pacing_rate: g("pacing_rate"),
            bytes_acked: g("bytes_acked"),
            min_rtt_us: g("min_rtt_us") as u32,
            delivery_rate: g("delivery_rate"),
        }
    }

    /// Of a socket (None if the call fails).
    pub fn of(fd: std::os::fd::RawFd) -> Option<TcpInfo> {
        let mut buf = [0u8; 232];
        let n = crate::sys::tcp_info_raw(fd, &mut buf).ok()?;
        Some(TcpInfo::parse(&buf[..n]))
    }

    /// Congestion window in bytes.
    pub fn cwnd_bytes(&self) -> u64 {
        self.snd_cwnd as u64 * self.snd_mss as u64
    }
    /// Slow-start threshold in bytes (the kernel's "infinite" 0x7fffffff segments stays huge).
    pub fn ssthresh_bytes(&self) -> u64 {
        if self.snd_ssthresh >= 0x7fff_ffff {
            return u64::MAX; // TCP_INFINITE_SSTHRESH
        }
        self.snd_ssthresh as u64 * self.snd_mss as u64
    }
    /// Bytes in flight (RFC 6675 pipe as the kernel computes it: unacked - sacked - lost + retrans).
    pub fn in_flight_bytes(&self) -> u64 {
        let pkts = (self.unacked as i64 - self.sacked as i64 - self.lost as i64 + self.retrans as i64).max(0);
        pkts as u64 * self.snd_mss as u64
    }
    /// The kernel's congestion-avoidance state as the `tcp` table names it.
    pub fn tcp_state(&self) -> &'static str {
        match self.ca_state {
            2 => "cwr",
            3 => "recovery",
            4 => "loss",
            _ => "open",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_offsets_and_derived_values() {
        let mut b = [0u8; 232];
        b[1] = 3;
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[24..28].copy_from_slice(&10u32.to_ne_bytes());
        b[28..32].copy_from_slice(&2u32.to_ne_bytes());
        b[32..36].copy_from_slice(&1u32.to_ne_bytes());
        b[36..40].copy_from_slice(&1u32.to_ne_bytes());
        b[68..72].copy_from_slice(&40_500u32.to_ne_bytes());
        b[80..84].copy_from_slice(&20u32.to_ne_bytes());
        b[160..168].copy_from_slice(&1_250_000u64.to_ne_bytes());
        let t = TcpInfo::parse(&b);
        assert_eq!((t.rtt_us, t.snd_cwnd, t.delivery_rate), (40_500, 20, 1_250_000));
        assert_eq!(t.cwnd_bytes(), 20 * 1448);
        assert_eq!(t.in_flight_bytes(), 8 * 1448);
        assert_eq!(t.tcp_state(), "recovery");
        // A short answer leaves the later fields at 0.
        assert_eq!(TcpInfo::parse(&b[..100]).delivery_rate, 0);
        let j = serde_json::json!({"rtt_us": 7, "snd_cwnd": 3, "snd_mss": 1000});
        assert_eq!(TcpInfo::from_json(&j).cwnd_bytes(), 3000);
    }
}
