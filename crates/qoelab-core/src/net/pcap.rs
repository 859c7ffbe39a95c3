//! pcap capture of a link (LINKTYPE_RAW IPv4, nanosecond timestamps), headers only.
//!
//! Each packet is written as an IPv4 header plus its TCP (or UDP) header; the payload is not
//! captured (caplen < len), which tcpdump/tshark/Wireshark handle as a truncated capture with
//! correct lengths. Addresses: node n is 10.(n >> 8).(n & 255).1. Ports: the data sender of
//! half-connection f uses port 20000 + f % 40000, the receiver port 5001. Sequence numbers: the
//! relative 64-bit sequence space maps to 32-bit wire values from a per-flow ISN (a hash of the
//! flow id); the SYN uses ISN and payload byte 0 is ISN + 1. Options: MSS/SACK-permitted/
//! timestamps/window scale on SYNs, timestamps (ms clock) and SACK blocks otherwise. IP total
//! length is recomputed from the captured headers + payload, so it can exceed the simulated size by
//! the SACK option bytes (the model counts 52 header bytes per segment). TCP checksums are 0.

use crate::packet::{flags, Packet};
use crate::time::Ns;

pub const LINKTYPE_RAW: u32 = 101;

pub struct PcapWriter {
    pub buf: Vec<u8>,
    ip_id: u16,
}

fn isn(flow: u32, sender_side: bool) -> u32 {
    let h = crate::packet::flow_hash(flow, if sender_side { 1 } else { 2 }, 7);
    h & 0x7fff_ffff
}

fn ip_of(node: u16) -> [u8; 4] {
    [10, (node >> 8) as u8, (node & 0xff) as u8, 1]
}

impl Default for PcapWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl PcapWriter {
    pub fn new() -> PcapWriter {
        let mut buf = Vec::with_capacity(1 << 16);
        buf.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes()); // nanosecond magic
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&65535u32.to_le_bytes()); // snaplen
        buf.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        PcapWriter { buf, ip_id: 0 }
    }

    /// Append one packet observed at `now`. `data_dir` tells whether `pkt` travels in the data
    /// direction of its half-connection (sender -> receiver).
    pub fn write(&mut self, now: Ns, pkt: &Packet, data_dir: bool) {
        let mut l4: Vec<u8> = Vec::with_capacity(64);
        let dgram = pkt.has(flags::DGRAM);
        let (sport, dport) = {
            let a = 20000 + (pkt.flow % 40000) as u16;
            if data_dir {
                (a, 5001)
            } else {
                (5001, a)
            }
        };
        let payload = pkt.payload as usize;
        if dgram {
            l4.extend_from_slice(&sport.to_be_bytes());
            l4.extend_from_slice(&dport.to_be_bytes());
            l4.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
            l4.extend_from_slice(&0u16.to_be_bytes());
        } else {
            let my_isn = isn(pkt.flow, data_dir);
            let peer_isn = isn(pkt.flow, !data_dir);
            let syn = pkt.has(flags::SYN);
            // Data direction: SYN at ISN, byte k at ISN + 1 + k. Reverse direction sends no data:
            // its SYN-ACK at ISN_r, everything after at ISN_r + 1.
            let seq = if data_dir {
                if syn {
                    my_isn
                } else {
                    my_isn.wrapping_add(1).wrapping_add(pkt.seq as u32)
                }
            } else if syn {
                my_isn
            } else {
                my_isn.wrapping_add(1)
            };
            let ack =
                if data_dir { peer_isn.wrapping_add(1) } else { peer_isn.wrapping_add(1).wrapping_add(pkt.ack as u32) };
            let mut opts: Vec<u8> = Vec::with_capacity(40);
            let tsval = (pkt.ts_val / 1_000_000) as u32;
            let tsecr = (pkt.ts_ecr / 1_000_000) as u32;
            if syn {
                opts.extend_from_slice(&[2, 4]);
                opts.extend_from_slice(&(crate::packet::MSS as u16 + 12).to_be_bytes());
                opts.extend_from_slice(&[4, 2]); // SACK permitted
                opts.extend_from_slice(&[8, 10]);
                opts.extend_from_slice(&tsval.to_be_bytes());
                opts.extend_from_slice(&tsecr.to_be_bytes());
                opts.extend_from_slice(&[1, 3, 3, 7]); // NOP, window scale 7
            } else {
                opts.extend_from_slice(&[1, 1, 8, 10]);
                opts.extend_from_slice(&tsval.to_be_bytes());
                opts.extend_from_slice(&tsecr.to_be_bytes());
                let n = (pkt.nsack as usize).min(3);
                if n > 0 {
                    opts.extend_from_slice(&[1, 1, 5, (2 + 8 * n) as u8]);
                    let base = if data_dir { my_isn } else { peer_isn }.wrapping_add(1);
                    for (a, b) in (0..n).map(|i| pkt.sack_block(i)) {
                        opts.extend_from_slice(&base.wrapping_add(a as u32).to_be_bytes());
                        opts.extend_from_slice(&base.wrapping_add(b as u32).to_be_bytes());
                    }
                }
            }
            let hdr_len = 20 + opts.len();
            let mut fl: u8 = 0;
            if pkt.has(flags::FIN) {
                fl |= 0x01;
            }
            if syn {
                fl |= 0x02;
            }
            if payload > 0 {
                fl |= 0x08; // PSH on data, as Linux often does; harmless for analysis
            }
            if pkt.has(flags::ACK) {
                fl |= 0x10;
            }
            if pkt.has(flags::ECE) {
                fl |= 0x40;
            }
            if pkt.has(flags::CWR) {
                fl |= 0x80;
            }
            let win = if syn { pkt.rwnd.min(65535) } else { (pkt.rwnd >> 7).min(65535) } as u16;
            l4.extend_from_slice(&sport.to_be_bytes());
            l4.extend_from_slice(&dport.to_be_bytes());
            l4.extend_from_slice(&seq.to_be_bytes());
            l4.extend_from_slice(&ack.to_be_bytes());
            l4.push(((hdr_len / 4) as u8) << 4);
            l4.push(fl);
            l4.extend_from_slice(&win.to_be_bytes());
            l4.extend_from_slice(&0u16.to_be_bytes()); // checksum (not computed)
            l4.extend_from_slice(&0u16.to_be_bytes()); // urgent
            l4.extend_from_slice(&opts);
        }
        let total = 20 + l4.len() + payload;
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[1] = pkt.ecn & 3;
        ip[2..4].copy_from_slice(&(total.min(65535) as u16).to_be_bytes());
        self.ip_id = self.ip_id.wrapping_add(1);
        ip[4..6].copy_from_slice(&self.ip_id.to_be_bytes());
        ip[6] = 0x40; // DF
        ip[8] = 64;
        ip[9] = if dgram { 17 } else { 6 };
        ip[12..16].copy_from_slice(&ip_of(pkt.src));
        ip[16..20].copy_from_slice(&ip_of(pkt.dst));
        let mut sum: u32 = 0;
        for i in (0..20).step_by(2) {
            sum += u16::from_be_bytes([ip[i], ip[i + 1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        let caplen = 20 + l4.len();
        self.buf.extend_from_slice(&((now / 1_000_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&((now % 1_000_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&(caplen as u32).to_le_bytes());
        self.buf.extend_from_slice(&(total as u32).to_le_bytes());
        self.buf.extend_from_slice(&ip);
        self.buf.extend_from_slice(&l4);
    }
}
