//! Real IPv4 packets as the core's [`LinkPacket`]: header checks, a 5-tuple flow hash (for FQ
//! disciplines) and ECN codepoints read from and written into the header, with the header
//! checksum updated incrementally (RFC 1624).

use qoelab_core::net::link::LinkPacket;

/// One IPv4 packet as read from a TUN device.
#[derive(Clone, Debug, PartialEq)]
pub struct IpPacket {
    pub buf: Vec<u8>,
    hash: u32,
    /// Link time at which it arrived at the link (for the Mahimahi-format log).
    pub arrived: u64,
}

/// Why a buffer is not an IPv4 packet the emulator forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    NotIpv4,
    Malformed,
}

impl IpPacket {
    /// Check the IPv4 header (version, header length, total length) and compute the flow hash.
    /// Bytes after the IP total length are cut off.
    pub fn parse(mut buf: Vec<u8>) -> Result<IpPacket, Reject> {
        if buf.is_empty() || buf[0] >> 4 != 4 {
            return Err(Reject::NotIpv4);
        }
        if buf.len() < 20 {
            return Err(Reject::Malformed);
        }
        let ihl = (buf[0] & 0xf) as usize * 4;
        let total = u16::from_be_bytes([buf[2], buf[3]]) as usize;
        if ihl < 20 || total < ihl || total > buf.len() {
            return Err(Reject::Malformed);
        }
        buf.truncate(total);
        let hash = flow_hash(&buf);
        Ok(IpPacket { buf, hash, arrived: 0 })
    }
}

/// Hash of (source, destination, protocol, source port, destination port); ports count only for
/// TCP/UDP/SCTP first fragments. The caller has checked the header.
pub fn flow_hash(b: &[u8]) -> u32 {
    let ihl = (b[0] & 0xf) as usize * 4;
    let proto = b[9];
    let frag_off = u16::from_be_bytes([b[6], b[7]]) & 0x1fff;
    let ports = if matches!(proto, 6 | 17 | 132) && frag_off == 0 && b.len() >= ihl + 4 {
        u32::from_be_bytes([b[ihl], b[ihl + 1], b[ihl + 2], b[ihl + 3]])
    } else {
        0
    };
    let src = u32::from_be_bytes([b[12], b[13], b[14], b[15]]) as u64;
    let dst = u32::from_be_bytes([b[16], b[17], b[18], b[19]]) as u64;
    let mut h = (src << 32 | dst) ^ ((ports as u64) << 8 | proto as u64).rotate_left(29);
    // A 64-bit finalizer (murmur3's fmix64): every input bit affects every output bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h as u32
}

/// The Internet checksum of `b` (one's complement of the one's complement sum of 16-bit words).
pub fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in b.chunks(2) {
        sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// RFC 1624 eqn. 3: the checksum after one 16-bit word of the covered data changes from `old`
/// to `new`: HC' = ~(~HC + ~m + m').
pub fn checksum_update(hc: u16, old: u16, new: u16) -> u16 {
    let mut sum = (!hc) as u32 + (!old) as u32 + new as u32;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl LinkPacket for IpPacket {
    #[inline]
    fn size(&self) -> u32 {
        self.buf.len() as u32
    }
    #[inline]
    fn flow_hash(&self) -> u32 {
        self.hash
    }
    #[inline]
    fn ecn(&self) -> u8 {
        self.buf[1] & 3
    }
    /// Write the codepoint into the header's TOS byte and fix the header checksum.
    fn set_ecn(&mut self, ecn: u8) {
        let b = &mut self.buf;
        let old = u16::from_be_bytes([b[0], b[1]]);
        b[1] = (b[1] & !3) | (ecn & 3);
        let new = u16::from_be_bytes([b[0], b[1]]);
        let hc = u16::from_be_bytes([b[10], b[11]]);
        let c = checksum_update(hc, old, new);
        b[10..12].copy_from_slice(&c.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4/TCP or UDP packet with a valid header checksum.
    pub fn packet(src: [u8; 4], dst: [u8; 4], proto: u8, sport: u16, dport: u16, tos: u8, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len.max(28)];
        b[0] = 0x45;
        b[1] = tos;
        let total = b.len() as u16;
        b[2..4].copy_from_slice(&total.to_be_bytes());
        b[8] = 64;
        b[9] = proto;
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        b[20..22].copy_from_slice(&sport.to_be_bytes());
        b[22..24].copy_from_slice(&dport.to_be_bytes());
        let c = checksum(&b[..20]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b
    }

    #[test]
    fn parse_checks_the_header() {
        let p = packet([10, 77, 0, 1], [10, 77, 1, 1], 6, 5001, 40000, 0, 1500);
        let ip = IpPacket::parse(p.clone()).unwrap();
        assert_eq!(ip.size(), 1500);
        // Trailing bytes beyond the total length are cut.
        let mut longer = p.clone();
        longer.extend_from_slice(&[0; 10]);
        assert_eq!(IpPacket::parse(longer).unwrap().size(), 1500);
        assert_eq!(IpPacket::parse(vec![0x60; 40]), Err(Reject::NotIpv4));
        assert_eq!(IpPacket::parse(vec![]), Err(Reject::NotIpv4));
        assert_eq!(IpPacket::parse(vec![0x45; 10]), Err(Reject::Malformed));
        let mut short_total = p.clone();
        short_total[2..4].copy_from_slice(&10u16.to_be_bytes());
        assert_eq!(IpPacket::parse(short_total), Err(Reject::Malformed));
        let mut bad_ihl = p.clone();
        bad_ihl[0] = 0x44;
        assert_eq!(IpPacket::parse(bad_ihl), Err(Reject::Malformed));
        let mut truncated = p;
        truncated.truncate(100);
        assert_eq!(IpPacket::parse(truncated), Err(Reject::Malformed));
    }

    #[test]
    fn hash_depends_on_the_five_tuple_only() {
        let a = packet([10, 77, 0, 1], [10, 77, 1, 1], 6, 5001, 40000, 0, 100);
        let h = flow_hash(&a);
        // Same flow, other payload size and TOS: same hash.
        assert_eq!(h, flow_hash(&packet([10, 77, 0, 1], [10, 77, 1, 1], 6, 5001, 40000, 2, 1500)));
        // Each field of the tuple changes it.
        let others = [
            packet([10, 77, 0, 2], [10, 77, 1, 1], 6, 5001, 40000, 0, 100),
            packet([10, 77, 0, 1], [10, 77, 1, 2], 6, 5001, 40000, 0, 100),
            packet([10, 77, 0, 1], [10, 77, 1, 1], 17, 5001, 40000, 0, 100),
            packet([10, 77, 0, 1], [10, 77, 1, 1], 6, 5002, 40000, 0, 100),
            packet([10, 77, 0, 1], [10, 77, 1, 1], 6, 5001, 40001, 0, 100),
        ];
        for o in &others {
            assert_ne!(h, flow_hash(o));
        }
        // Ports are ignored for ICMP and for non-first fragments.
        let i1 = packet([10, 77, 0, 1], [10, 77, 1, 1], 1, 1, 2, 0, 100);
        let i2 = packet([10, 77, 0, 1], [10, 77, 1, 1], 1, 3, 4, 0, 100);
        assert_eq!(flow_hash(&i1), flow_hash(&i2));
        let mut f = a.clone();
        f[6..8].copy_from_slice(&100u16.to_be_bytes());
        let mut g = f.clone();
        g[20] ^= 0xff;
        assert_eq!(flow_hash(&f), flow_hash(&g));
        // Many flows spread over FQ's 1024 buckets.
        let mut buckets = std::collections::HashSet::new();
        for port in 0..1000u16 {
            buckets.insert(flow_hash(&packet([10, 77, 0, 1], [10, 77, 1, 1], 6, 5001, 30000 + port, 0, 60)) % 1024);
        }
        assert!(buckets.len() > 550, "{} buckets", buckets.len());
    }

    #[test]
    fn ecn_rewrite_keeps_the_checksum_valid() {
        for tos in [0u8, 1, 2, 3, 0xb8, 0xba, 0xff, 0x02] {
            for len in [28, 1500] {
                let b = packet([192, 168, 255, 254], [10, 77, 1, 1], 6, 65535, 1, tos, len);
                let mut p = IpPacket::parse(b.clone()).unwrap();
                assert_eq!(p.ecn(), tos & 3);
                for ecn in [3u8, 0, 1, 2, 3] {
                    p.set_ecn(ecn);
                    assert_eq!(p.ecn(), ecn);
                    assert_eq!(p.buf[1] & !3, tos & !3, "DSCP untouched");
                    assert_eq!(checksum(&p.buf[..20]), 0, "tos {tos:#x} -> ecn {ecn}: header checksum verifies");
                    assert_eq!(p.buf[20..], b[20..], "payload untouched");
                }
            }
        }
    }

    #[test]
    fn rfc1624_update_equals_recomputation() {
        let mut b = packet([1, 2, 3, 4], [5, 6, 7, 8], 17, 9, 10, 0, 60);
        for new in [0u16, 0xffff, 0x4500, 0x45fc, 0x1234] {
            let old = u16::from_be_bytes([b[0], b[1]]);
            let hc = u16::from_be_bytes([b[10], b[11]]);
            b[0..2].copy_from_slice(&new.to_be_bytes());
            let inc = checksum_update(hc, old, new);
            b[10..12].copy_from_slice(&[0, 0]);
            let full = checksum(&b[..20]);
            // 0x0000 and 0xffff are the same value in one's complement; RFC 1624 never yields
            // 0x0000 unless all data words are zero.
            assert!(inc == full || (inc ^ full == 0xffff && (inc == 0 || full == 0)), "{inc:#x} vs {full:#x}");
            b[10..12].copy_from_slice(&inc.to_be_bytes());
            assert!(matches!(checksum(&b[..20]), 0 | 0xffff));
        }
    }
}
