//! Sender and receiver together over a hand-driven path (fixed one-way delay, chosen drops).

use super::config::*;
use super::frame::AckFrame;
use super::*;
use crate::cc::{self, CcBuildCtx};
use crate::packet::{flags, Packet};
use crate::params::Params;
use crate::tcp::FlowAddr;
use crate::time::{Ns, MS, NEVER, SEC};

fn sender(cfg: &QuicConfig, cc_name: &str) -> QuicSender {
    let ctx = CcBuildCtx { mss: cfg.max_datagram as u64, initial_window: 10, abc_l: 1, seed: 1 };
    QuicSender::new(cfg, FlowAddr::new(0, 0, 1, 0), cc::build(cc_name, &Params::new(), &ctx).unwrap())
}

/// Delivers packets after `delay` each way; `drop(pn, now)` drops chosen data packets.
struct Path {
    tx: QuicSender,
    rx: QuicReceiver,
    delay: Ns,
    /// (arrival time, to receiver?, packet), kept in time order
    wire: Vec<(Ns, bool, Packet)>,
    now: Ns,
    sent_pns: Vec<u64>,
    /// bottleneck: one data packet per `gap` ns
    gap: Ns,
    link_free: Ns,
}

impl Path {
    fn new(cfg: &QuicConfig, cc_name: &str, delay: Ns, gap: Ns) -> Path {
        Path {
            tx: sender(cfg, cc_name),
            rx: QuicReceiver::new(cfg, FlowAddr::new(0, 0, 1, 0)),
            delay,
            wire: Vec::new(),
            now: 0,
            sent_pns: Vec::new(),
            gap,
            link_free: 0,
        }
    }
    fn push(&mut self, t: Ns, to_rx: bool, p: Packet) {
        let i = self.wire.partition_point(|x| x.0 <= t);
        self.wire.insert(i, (t, to_rx, p));
    }
    fn drain(&mut self, drop: &mut dyn FnMut(u64, Ns) -> bool) {
        while let Some(p) = self.tx.poll_transmit(self.now) {
            self.sent_pns.push(p.ack);
            if !drop(p.ack, self.now) {
                let start = self.link_free.max(self.now);
                self.link_free = start + self.gap;
                self.push(self.link_free + self.delay, true, p);
            }
        }
        while let Some(a) = self.rx.poll_transmit(self.now) {
            self.push(self.now + self.delay, false, a);
        }
    }
    fn run(&mut self, until: Ns, drop: &mut dyn FnMut(u64, Ns) -> bool) {
        self.drain(drop);
        loop {
            let next_wire = self.wire.first().map_or(NEVER, |x| x.0);
            let t = next_wire.min(self.tx.poll_at()).min(self.rx.poll_at()).max(self.now);
            if t >= until {
                self.now = until;
                return;
            }
            self.now = t;
            if next_wire == t {
                let (_, to_rx, p) = self.wire.remove(0);
                if to_rx {
                    self.rx.on_packet(t, &p);
                } else {
                    self.tx.on_packet(t, &p);
                }
            }
            if self.tx.poll_at() <= t {
                self.tx.on_timer(t);
            }
            if self.rx.poll_at() <= t {
                self.rx.on_timer(t);
            }
            self.drain(drop);
        }
    }
}

#[test]
fn lossless_transfer_delivers_exactly_n_bytes_in_order_with_fresh_packet_numbers() {
    for cc_name in ["newreno", "cubic", "bbr"] {
        let cfg = QuicConfig::default();
        let mut p = Path::new(&cfg, cc_name, 20 * MS, MS);
        p.tx.write(0, 1_000_000);
        p.tx.stop_writing();
        p.run(30 * SEC, &mut |_, _| false);
        assert_eq!(p.rx.bytes_received(), 1_000_000, "{cc_name}");
        assert_eq!(p.rx.received_ranges(), &[(0, 1_000_000)]);
        assert_eq!(p.rx.final_size(), Some(1_000_000));
        assert!(p.rx.is_complete() && p.tx.all_acked(), "{cc_name}");
        // handshake + ceil(1e6 / 1437) = 696 data packets, none lost, none repeated
        assert_eq!(p.tx.stats().packets_sent, 1 + 696, "{cc_name}");
        assert_eq!(p.tx.stats().retransmits, 0);
        assert_eq!(p.rx.stats().duplicate_bytes, 0);
        assert_eq!(p.sent_pns, (0..697).collect::<Vec<u64>>());
        assert_eq!(p.tx.bytes_in_flight(), 0);
    }
}

#[test]
fn retransmissions_use_new_packet_numbers_and_loss_by_packet_threshold() {
    let cfg = QuicConfig { pacing: false, ..Default::default() };
    let mut p = Path::new(&cfg, "newreno", 20 * MS, MS);
    p.tx.write(0, 100_000);
    p.tx.stop_writing();
    // drop packet 5 (stream bytes 4 x 1437 ..) once
    let mut dropped = false;
    p.run(10 * SEC, &mut |pn, _| {
        let d = pn == 5 && !dropped;
        dropped |= d;
        d
    });
    assert_eq!(p.rx.bytes_received(), 100_000);
    let mut sorted = p.sent_pns.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), p.sent_pns.len(), "a packet number was reused");
    assert!(p.sent_pns.windows(2).all(|w| w[1] == w[0] + 1));
    let st = p.tx.stats();
    assert_eq!((st.packets_lost, st.retransmits, st.retransmitted_bytes), (1, 1, 1437));
    assert_eq!(st.congestion_events, 1);
    assert_eq!(st.pto_count, 0);
}

/// A sender with `n` stream packets outstanding at 1 ms intervals (handshake off), and an ACK
/// frame builder.
fn outstanding(n: u64) -> QuicSender {
    let cfg = QuicConfig { pacing: false, handshake: false, ..Default::default() };
    let mut s = sender(&cfg, "newreno");
    s.set_unlimited();
    for i in 0..n {
        assert!(s.poll_transmit(i * MS).is_some());
    }
    s
}

fn ack(ranges: &[(u64, u64)], delay: Ns) -> Packet {
    let mut f = AckFrame { ack_delay: delay, n: ranges.len(), ..Default::default() };
    f.ranges[..ranges.len()].copy_from_slice(ranges);
    let mut p = Packet { flow: 0, src: 1, dst: 0, flags: flags::ACK, ..Packet::EMPTY };
    f.encode(&mut p);
    p
}

#[test]
fn packet_threshold_three_and_time_threshold_nine_eighths() {
    // packets 0..=9 sent at 0..9 ms; ACK of 3..=9 at 100 ms (RTT sample 100 - 9 = 91 ms)
    let mut s = outstanding(10);
    s.on_packet(100 * MS, &ack(&[(3, 9)], 0));
    // 0, 1, 2 are >= 3 below 9: lost by packet threshold
    assert_eq!(s.stats().packets_lost, 3);
    // now only 4..=9 would be lost by threshold; ACK 5..=9 leaves 3 and 4 (3 acked already):
    let mut s = outstanding(10);
    s.on_packet(100 * MS, &ack(&[(8, 9)], 0));
    // largest 9: 0..=6 lost by packet threshold (9 - pn >= 3), 7 not
    assert_eq!(s.stats().packets_lost, 7);
    // 7 was sent at 7 ms; loss_delay = 9/8 x max(srtt 91, latest 91) = 102.375 ms ->
    // lost at 109.375 ms by time threshold
    assert_eq!(s.poll_at(), 7 * MS + 102_375_000);
    s.on_timer(109 * MS);
    assert_eq!(s.stats().packets_lost, 7);
    s.on_timer(7 * MS + 102_375_000);
    assert_eq!(s.stats().packets_lost, 8);
    assert_eq!(s.stats().pto_count, 0);
    // one congestion event for both detections (7 was sent before the recovery began)
    assert_eq!(s.stats().congestion_events, 1);
}

#[test]
fn pto_backs_off_exponentially_and_probes_with_new_packet_numbers() {
    let mut s = outstanding(1);
    // one RTT sample: ack packet 0 at 40 ms (srtt 40, rttvar 20) and send packet 1 at 40 ms
    s.on_packet(40 * MS, &ack(&[(0, 0)], 0));
    assert!(s.poll_transmit(40 * MS).is_some());
    // PTO = 40 + 4 x 20 + 25 (max_ack_delay) = 145 ms after the last ack-eliciting packet
    let pto = 145 * MS;
    assert_eq!(s.pto(), pto);
    // (the window allows more data: stop the application to leave one packet in flight)
    s.stop_writing();
    while s.poll_transmit(40 * MS).is_some() {}
    let last = 40 * MS;
    // slow start took the first ACK: 14720 + 1472
    let cwnd = s.cc().cwnd();
    assert_eq!(cwnd, 16192);
    assert_eq!(s.poll_at(), last + pto);
    s.on_timer(last + pto);
    assert_eq!(s.stats().pto_count, 1);
    let before = s.next_packet_number();
    // two probes, both ignoring the window, each a fresh packet number
    let a = s.poll_transmit(last + pto).unwrap();
    let b = s.poll_transmit(last + pto).unwrap();
    assert_eq!((a.ack, b.ack), (before, before + 1));
    assert!(s.poll_transmit(last + pto).is_none());
    // next PTO: doubled, from the probes' send time
    assert_eq!(s.poll_at(), last + pto + 2 * pto);
    s.on_timer(last + 3 * pto);
    while s.poll_transmit(last + 3 * pto).is_some() {}
    assert_eq!(s.poll_at(), last + 3 * pto + 4 * pto);
    // PTO declares nothing lost and leaves cwnd alone
    assert_eq!(s.stats().packets_lost, 0);
    assert_eq!(s.cc().cwnd(), cwnd);
    // an ACK resets the backoff
    let largest = s.next_packet_number() - 1;
    s.on_packet(last + 3 * pto + 10 * MS, &ack(&[(largest, largest)], 0));
    assert_eq!(s.pto(), s.rtt().pto_base(25 * MS));
}

#[test]
fn persistent_congestion_collapses_the_window() {
    // first RTT sample at 10 ms from packet 0; then packets 1..=30 over 3 s, all lost, and an
    // ACK of a later packet: the lost span (2.9 s) exceeds 3 x (10 + 20 + 25) ms
    let cfg = QuicConfig { pacing: false, handshake: false, ..Default::default() };
    let mut s = sender(&cfg, "newreno");
    s.set_unlimited();
    let t = first_rtt_then_31_lost(&mut s);
    let cwnd_before = s.cc().cwnd();
    s.on_packet(t, &ack(&[(31, 31)], 0));
    assert_eq!(s.stats().persistent_congestion, 1);
    assert!(s.cc().cwnd() < cwnd_before);
    assert_eq!(s.cc().cwnd(), 1472);
}

#[test]
fn receiver_acks_every_second_packet_gaps_at_once_else_after_max_ack_delay() {
    let cfg = QuicConfig::default();
    let mut r = QuicReceiver::new(&cfg, FlowAddr::new(0, 0, 1, 0));
    let data = |pn: u64| Packet { flow: 0, src: 0, dst: 1, ack: pn, seq: pn * 1000, payload: 1000, ..Packet::EMPTY };
    r.on_packet(0, &data(0));
    assert_eq!(r.poll_at(), 25 * MS);
    assert!(r.poll_transmit(MS).is_none());
    r.on_packet(2 * MS, &data(1));
    let a = r.poll_transmit(2 * MS).unwrap();
    assert_eq!(AckFrame::decode(&a).unwrap().ranges(), &[(0, 1)]);
    // a lone packet: ACKed after max_ack_delay, reporting the delay since it arrived
    r.on_packet(10 * MS, &data(2));
    r.on_timer(35 * MS);
    let a = r.poll_transmit(35 * MS).unwrap();
    assert_eq!(AckFrame::decode(&a).unwrap().ack_delay, 25 * MS);
    // a gap: 4 arrives before 3 -> ACK at once with two ranges; then 3 fills it (out of order)
    r.on_packet(40 * MS, &data(4));
    let a = r.poll_transmit(40 * MS).unwrap();
    assert_eq!(AckFrame::decode(&a).unwrap().ranges(), &[(4, 4), (0, 2)]);
    r.on_packet(41 * MS, &data(3));
    let a = r.poll_transmit(41 * MS).unwrap();
    assert_eq!(AckFrame::decode(&a).unwrap().ranges(), &[(0, 4)]);
    assert_eq!(r.bytes_received(), 5000);
    // holes in the stream are reported
    r.on_packet(50 * MS, &data(7));
    assert_eq!(r.received_ranges(), &[(0, 5000), (7000, 8000)]);
    assert_eq!(r.bytes_received(), 5000);
    // at most max_ack_ranges ranges, the newest
    for pn in [9, 11, 13, 15] {
        r.on_packet(60 * MS, &data(pn));
    }
    let f = r.ack_frame(60 * MS).unwrap();
    assert_eq!(f.ranges(), &[(15, 15), (13, 13), (11, 11), (9, 9)]);
}

// ----- partial reliability (QUIC*) -----

/// Ten 1437-byte packets of unreliable data (or reliable, for comparison) then one reliable
/// packet with the FIN; handshake and pacing off; NewReno.
fn ten_unreliable(reliable: bool) -> QuicSender {
    let cfg = QuicConfig { pacing: false, handshake: false, ..Default::default() };
    let mut s = sender(&cfg, "newreno");
    s.write_with(0, 10 * 1437, reliable);
    s.write(0, 1437);
    s.stop_writing();
    // IW 14720 = exactly 10 packets of 1472 UDP bytes: packets 0..=9
    for i in 0..10 {
        let p = s.poll_transmit(i * MS).unwrap();
        assert_eq!((p.seq, p.payload, p.size), (i * 1437, 1437, 1500));
    }
    assert!(s.poll_transmit(10 * MS).is_none());
    s
}

#[test]
fn lost_unreliable_data_is_never_resent_but_cuts_cwnd_like_reliable_data() {
    for reliable in [true, false] {
        let mut s = ten_unreliable(reliable);
        assert_eq!(s.cc().cwnd(), 14720);
        // ACK of 3..=9 at 100 ms: 0, 1, 2 lost by packet threshold (9 - pn >= 3)
        s.on_packet(100 * MS, &ack(&[(3, 9)], 0));
        let st = s.stats().clone();
        assert_eq!((st.packets_lost, st.congestion_events), (3, 1));
        // NewReno: ssthresh = cwnd = 0.5 x prior bytes in flight (14720) = 7360, for both
        assert_eq!(s.cc().ssthresh(), 7360, "reliable {reliable}");
        assert_eq!(s.cc().cwnd(), 7360, "reliable {reliable}");
        let p = s.poll_transmit(100 * MS).unwrap();
        if reliable {
            // the lost bytes go again, first
            assert_eq!((p.seq, p.payload, p.ts_ecr), (0, 1437, 0));
            assert_eq!(st.unreliable_lost_bytes, 0);
        } else {
            // never resent: the next packet is new data carrying the expiry signal: every byte
            // below 14370 is acknowledged (3..=9) or abandoned (0..=2); 1437 - 6 stream bytes
            assert_eq!((p.seq, p.payload, p.ts_ecr, p.size), (14370, 1431, 14370, 1500));
            assert_eq!((st.unreliable_bytes_sent, st.unreliable_lost_bytes), (14370, 3 * 1437));
            let fin = s.poll_transmit(100 * MS).unwrap();
            assert_eq!((fin.seq, fin.payload, fin.ts_ecr), (15801, 6, 0));
            assert!(fin.has(flags::FIN));
            assert_eq!(s.stats().retransmits, 0);
            assert_eq!(s.stats().retransmitted_bytes, 0);
            assert_eq!(s.stats().unreliable_retransmitted_bytes, 0);
        }
    }
}

#[test]
fn a_packet_mixing_reliable_and_unreliable_frames_is_retransmitted() {
    let cfg = QuicConfig { pacing: false, ..Default::default() };
    let mut p = Path::new(&cfg, "newreno", 20 * MS, MS);
    p.tx.write(0, 1000);
    p.tx.write_unreliable(0, 1000);
    p.tx.write(0, 20_000);
    p.tx.stop_writing();
    // packet 1: reliable [0, 1000) + a second frame (8-byte header) of unreliable
    // [1000, 1429): 1437 - 8 = 1429 bytes; packet 2: unreliable [1429, 2000) + reliable
    // [2000, 2858); both mixed, hence reliable. Drop packet 1 once.
    let mut dropped = false;
    p.run(10 * SEC, &mut |pn, _| {
        let d = pn == 1 && !dropped;
        dropped |= d;
        d
    });
    let st = p.tx.stats();
    assert_eq!(st.mixed_packets, 2);
    assert_eq!((st.retransmits, st.retransmitted_bytes), (1, 1429));
    assert_eq!((st.unreliable_bytes_sent, st.unreliable_lost_bytes), (0, 0));
    assert_eq!(p.rx.bytes_received(), 22_000);
    assert!(p.rx.holes().is_empty());
    assert!(p.rx.is_complete() && p.tx.all_acked());
}

#[test]
fn fin_is_always_resent_and_unreliable_holes_are_zero_filled_exactly() {
    let cfg = QuicConfig { pacing: false, ..Default::default() };
    let mut p = Path::new(&cfg, "newreno", 20 * MS, MS);
    p.tx.write_unreliable(0, 5000);
    p.tx.stop_writing();
    // packet 0 handshake; 1: [0, 1437), 2: [1437, 2874), 3: [2874, 4311) unreliable;
    // 4: [4311, 5000) + FIN, reliable because of the FIN. Drop 2 and 4 once each.
    let mut dropped = Vec::new();
    p.run(20 * SEC, &mut |pn, _| {
        let d = (pn == 2 || pn == 4) && !dropped.contains(&pn);
        if d {
            dropped.push(pn);
        }
        d
    });
    let st = p.tx.stats();
    // the FIN packet went again (689 bytes), the unreliable one did not
    assert_eq!((st.retransmits, st.retransmitted_bytes), (1, 689));
    assert_eq!((st.unreliable_bytes_sent, st.unreliable_lost_bytes), (4311, 1437));
    assert_eq!(st.unreliable_retransmitted_bytes, 0);
    assert_eq!(p.rx.holes(), &[(1437, 2874)]);
    assert_eq!(p.rx.hole_bytes(), 1437);
    assert_eq!(p.rx.received_ranges(), &[(0, 1437), (2874, 5000)]);
    assert_eq!((p.rx.bytes_delivered(), p.rx.bytes_received()), (5000, 5000 - 1437));
    assert_eq!(p.rx.final_size(), Some(5000));
    assert!(p.rx.is_complete() && p.tx.all_acked());
    assert!(st.congestion_events >= 1);
}

#[test]
fn receiver_zero_fills_only_below_the_expiry_offset() {
    let cfg = QuicConfig::default();
    let mut r = QuicReceiver::new(&cfg, FlowAddr::new(0, 0, 1, 0));
    let data = |pn: u64, s: u64, e: u64, expire: u64| Packet {
        flow: 0,
        src: 0,
        dst: 1,
        ack: pn,
        seq: s,
        payload: (e - s) as u32,
        ts_ecr: expire,
        ..Packet::EMPTY
    };
    r.on_packet(0, &data(0, 0, 1000, 0));
    r.on_packet(MS, &data(2, 2000, 3000, 0));
    // a hole without an expiry signal is not delivered (it may be reliable data on its way)
    assert!(r.holes().is_empty());
    assert_eq!(r.bytes_delivered(), 1000);
    // the sender says: nothing below 3000 will come again -> [1000, 2000) zero-filled
    r.on_packet(2 * MS, &data(3, 3000, 4000, 3000));
    assert_eq!(r.holes(), &[(1000, 2000)]);
    assert_eq!((r.bytes_delivered(), r.bytes_received(), r.hole_bytes()), (4000, 3000, 1000));
    // late data for a zero-filled range: counted, not used
    r.on_packet(3 * MS, &data(1, 1000, 2000, 0));
    assert_eq!(r.stats().late_bytes, 1000);
    assert_eq!(r.received_ranges(), &[(0, 1000), (2000, 4000)]);
    assert_eq!(r.holes(), &[(1000, 2000)]);
    // [4000, 5000) missing; expiry 4500 fills only [4000, 4500); [4500, 5000) arrives later
    r.on_packet(4 * MS, &data(5, 5000, 6000, 4500));
    assert_eq!(r.holes(), &[(1000, 2000), (4000, 4500)]);
    assert_eq!(r.bytes_delivered(), 4500);
    r.on_packet(5 * MS, &data(4, 4500, 5000, 0));
    assert_eq!(r.bytes_delivered(), 6000);
    let mut fin = data(6, 6000, 7000, 0);
    fin.flags = flags::FIN;
    r.on_packet(6 * MS, &fin);
    assert!(r.is_complete());
    assert_eq!((r.bytes_delivered(), r.bytes_received(), r.hole_bytes()), (7000, 5500, 1500));
    assert_eq!(r.received_ranges(), &[(0, 1000), (2000, 4000), (4500, 7000)]);
}

#[test]
fn lossless_half_unreliable_transfer_has_no_holes() {
    let cfg = QuicConfig { unreliable_fraction: 0.5, ..Default::default() };
    let mut p = Path::new(&cfg, "cubic", 20 * MS, MS);
    p.tx.write(0, 1_000_000);
    p.tx.stop_writing();
    p.run(30 * SEC, &mut |_, _| false);
    assert_eq!(p.rx.bytes_received(), 1_000_000);
    assert_eq!(p.rx.received_ranges(), &[(0, 1_000_000)]);
    assert!(p.rx.holes().is_empty());
    assert!(p.rx.is_complete() && p.tx.all_acked());
    let st = p.tx.stats();
    // period 14370 = 5 reliable + 5 unreliable packets; 69 periods end at 991530, then 5
    // reliable packets and the last 1285 (unreliable) bytes with the FIN, sent reliably:
    // 69 x 7185 unreliable bytes
    assert_eq!(st.unreliable_bytes_sent, 69 * 7185);
    assert_eq!((st.mixed_packets, st.retransmits, st.unreliable_lost_bytes), (0, 0, 0));
    assert_eq!(st.packets_sent, 1 + 696);
}

#[test]
fn lossy_partially_reliable_transfers_are_deterministic() {
    let go = || {
        let cfg = QuicConfig { unreliable_fraction: 0.3, ..Default::default() };
        let mut p = Path::new(&cfg, "cubic", 20 * MS, MS);
        p.tx.write(0, 2_000_000);
        p.tx.stop_writing();
        // drop every 37th packet number once
        p.run(60 * SEC, &mut |pn, _| pn % 37 == 5);
        assert!(p.rx.is_complete() && p.tx.all_acked());
        let st = p.tx.stats();
        assert!(st.mixed_packets > 0 && st.unreliable_lost_bytes > 0 && st.retransmits > 0);
        assert_eq!(st.unreliable_retransmitted_bytes, 0);
        // everything accounted: received + zero-filled = size; holes = unreliable bytes lost
        assert_eq!(p.rx.bytes_received() + p.rx.hole_bytes(), 2_000_000);
        assert_eq!(p.rx.hole_bytes(), st.unreliable_lost_bytes - p.rx.stats().late_bytes);
        format!("{:?} {:?} {:?} {:?}", st, p.rx.stats(), p.rx.holes(), p.sent_pns)
    };
    assert_eq!(go(), go());
}

#[test]
fn pto_probes_never_repeat_unreliable_data() {
    let cfg = QuicConfig { pacing: false, handshake: false, ..Default::default() };
    let mut s = sender(&cfg, "newreno");
    // two unreliable packets; the stream stays open (no FIN, nothing more to send)
    s.write_unreliable(0, 2 * 1437);
    assert!(s.poll_transmit(0).is_some() && s.poll_transmit(0).is_some());
    assert!(s.poll_transmit(0).is_none());
    // no RTT sample: PTO = 333 + 4 x 166.5 = 999 ms, + max_ack_delay 25 ms (the handshake is
    // off, so confirmed from the start)
    let t = s.poll_at();
    assert_eq!(t, 999 * MS + 25 * MS);
    s.on_timer(t);
    // both probes are PINGs: 28 + 27 + 1 = 56 bytes, no stream data
    for _ in 0..2 {
        let p = s.poll_transmit(t).unwrap();
        assert_eq!((p.payload, p.size, p.ts_ecr), (0, 56, 0));
    }
    assert_eq!((s.stats().retransmits, s.stats().unreliable_retransmitted_bytes), (0, 0));
}

#[test]
fn persistent_congestion_counts_unreliable_losses_too() {
    // as persistent_congestion_collapses_the_window, with the data unreliable (or reliable)
    for reliable in [true, false] {
        let cfg = QuicConfig { pacing: false, handshake: false, ..Default::default() };
        let mut s = sender(&cfg, "newreno");
        s.write_with(0, 100_000_000, reliable);
        let t = first_rtt_then_31_lost(&mut s);
        s.on_packet(t, &ack(&[(31, 31)], 0));
        assert_eq!(s.stats().persistent_congestion, 1, "reliable {reliable}");
        assert_eq!(s.cc().cwnd(), 1472, "reliable {reliable}");
        let st = s.stats();
        if reliable {
            assert_eq!(st.unreliable_lost_bytes, 0);
        } else {
            // packets 1..=30 lost, never resent
            assert_eq!((st.unreliable_lost_bytes, st.retransmits), (30 * 1437, 0));
        }
    }
}

/// Packet 0 acknowledged at 10 ms (the first RTT sample), then packets up to 31 sent one per
/// 100 ms (PTO probes bypass the window) and none acknowledged; returns the time after the last.
fn first_rtt_then_31_lost(s: &mut QuicSender) -> Ns {
    s.poll_transmit(0).unwrap();
    s.on_packet(10 * MS, &ack(&[(0, 0)], 0));
    let mut t = 10 * MS;
    while s.next_packet_number() < 32 {
        if s.poll_transmit(t).is_none() {
            s.on_timer(s.poll_at());
            continue;
        }
        t += 100 * MS;
    }
    t
}

#[test]
fn skipped_ranges_are_never_sent_nor_resent_and_arrive_as_holes() {
    let cfg = QuicConfig { pacing: false, ..Default::default() };
    // (a) skipped before sending: [20,000, 60,000) of 100,000 B never leaves the sender
    let mut p = Path::new(&cfg, "newreno", 20 * MS, MS);
    p.tx.write(0, 100_000);
    p.tx.skip(20_000, 60_000);
    p.tx.stop_writing();
    p.run(20 * SEC, &mut |_, _| false);
    assert_eq!(p.tx.stats().skipped_bytes, 40_000);
    assert_eq!(p.tx.stats().stream_bytes_sent, 60_000);
    assert_eq!(p.rx.holes(), &[(20_000, 60_000)]);
    assert_eq!(p.rx.holes_in(10_000, 30_000), vec![(20_000, 30_000)]);
    assert_eq!(p.rx.holes_in(60_000, 70_000), vec![]);
    assert_eq!((p.rx.bytes_delivered(), p.rx.bytes_received()), (100_000, 60_000));
    assert!(p.rx.is_complete() && p.tx.all_acked());
    // (b) skipped while in flight: of the first window (packets 1-10, sent when the handshake
    // completes at ~41 ms), packets 1 ([0, 1437)) and 8 ([10,059, 11,496)) are lost; at 70 ms,
    // before the losses are detected, the application skips [5,000, 30,000): packet 1 is sent
    // again (reliable, before the skip), packet 8 is not, nothing after 5,000 is sent anew
    let mut p = Path::new(&cfg, "newreno", 20 * MS, MS);
    p.tx.write(0, 30_000);
    p.tx.stop_writing();
    let mut once = [true, true];
    let mut drop = |pn: u64, _now: Ns| match pn {
        1 | 8 => std::mem::replace(&mut once[(pn == 8) as usize], false),
        _ => false,
    };
    p.run(70 * MS, &mut drop);
    assert_eq!(p.tx.stats().stream_bytes_sent, 10 * 1437);
    p.tx.skip(5_000, 30_000);
    p.run(20 * SEC, &mut drop);
    assert_eq!(p.rx.holes(), &[(10_059, 11_496), (14_370, 30_000)]);
    assert_eq!(p.rx.received_ranges(), &[(0, 10_059), (11_496, 14_370)]);
    assert_eq!(p.tx.stats().retransmitted_bytes, 1437);
    assert_eq!(p.tx.stats().skipped_bytes, 30_000 - 14_370);
    assert_eq!(p.rx.bytes_delivered(), 30_000);
    assert!(p.rx.is_complete() && p.tx.all_acked());
}
