//! Test support: a minimal Reno controller and a tiny deterministic network (one bottleneck with
//! a droptail buffer, fixed one-way delays, scripted drops, optional CE marking) driving one
//! [`TcpSender`] / [`TcpReceiver`] pair through a local sorted event list (not the project engine).

use super::cc::{AckSample, Congestion, CongestionControl};
use super::config::{FlowAddr, TcpConfig};
use super::receiver::TcpReceiver;
use super::sender::TcpSender;
use crate::packet::{ecn, Packet};
use crate::time::{tx_time, Ns, NEVER};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

/// What the test Reno saw.
#[derive(Clone, Debug, Default)]
pub struct RenoLog {
    pub congestion_events: Vec<(Ns, Congestion, u64)>,
    pub rtos: Vec<Ns>,
    pub recovery_exits: Vec<Ns>,
    pub idle_restarts: Vec<(Ns, u64)>,
    pub acks: Vec<AckSample>,
    pub sent: u64,
}

/// RFC 5681 Reno with Linux-style slow start (cwnd += acked) and no window inflation (the
/// sender's pipe does that job). Test-only.
pub struct TestReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    acc: u64,
    /// Fixed pacing rate to request (tests of controller-driven pacing).
    pacing: Option<u64>,
    pub log: Arc<Mutex<RenoLog>>,
}

impl TestReno {
    pub fn boxed(mss: u64, iw: u64, pacing: Option<u64>) -> (Box<dyn CongestionControl>, Arc<Mutex<RenoLog>>) {
        let log = Arc::new(Mutex::new(RenoLog::default()));
        (Box::new(TestReno { mss, cwnd: iw * mss, ssthresh: u64::MAX, acc: 0, pacing, log: log.clone() }), log)
    }
}

impl CongestionControl for TestReno {
    fn name(&self) -> &'static str {
        "test-reno"
    }
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn pacing_rate(&self) -> Option<u64> {
        self.pacing
    }
    fn on_sent(&mut self, _now: Ns, _bytes: u64, _in_flight: u64) {
        self.log.lock().unwrap().sent += 1;
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.log.lock().unwrap().acks.push(*s);
        if s.in_recovery || !s.cwnd_limited {
            return;
        }
        let mut acked = s.acked_bytes;
        if self.cwnd < self.ssthresh {
            let room = self.ssthresh - self.cwnd;
            let inc = acked.min(room);
            self.cwnd += inc;
            acked -= inc;
        }
        if acked > 0 {
            self.acc += acked;
            while self.acc >= self.cwnd {
                self.acc -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
    }
    fn on_congestion_event(&mut self, now: Ns, kind: Congestion, in_flight: u64) {
        self.log.lock().unwrap().congestion_events.push((now, kind, in_flight));
        self.ssthresh = (in_flight / 2).max(2 * self.mss);
        self.cwnd = self.ssthresh;
        self.acc = 0;
    }
    fn on_recovery_exit(&mut self, now: Ns) {
        self.log.lock().unwrap().recovery_exits.push(now);
        self.cwnd = self.ssthresh;
    }
    fn on_rto(&mut self, now: Ns, in_flight: u64) {
        self.log.lock().unwrap().rtos.push(now);
        self.ssthresh = (in_flight / 2).max(2 * self.mss);
        self.cwnd = self.mss;
        self.acc = 0;
    }
    fn on_idle_restart(&mut self, now: Ns, restart_cwnd: u64) {
        self.log.lock().unwrap().idle_restarts.push((now, restart_cwnd));
        self.ssthresh = self.ssthresh.max(self.cwnd / 4 * 3);
        self.cwnd = restart_cwnd;
    }
    fn state(&self) -> &'static str {
        if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "cong_avoid"
        }
    }
}

/// The test network.
#[derive(Clone, Debug)]
pub struct NetCfg {
    /// Bottleneck rate (data direction), bit/s.
    pub rate_bps: u64,
    /// Droptail buffer (packets waiting, excluding the one being serialized).
    pub buffer_pkts: usize,
    /// One-way propagation delays.
    pub fwd_delay: Ns,
    pub rev_delay: Ns,
    /// Scripted drops: (data sequence number, number of transmissions of it to drop).
    pub drops: Vec<(u64, u32)>,
    /// Mark CE instead of queueing normally when this many packets wait (ECT packets only).
    pub ecn_mark_at: Option<usize>,
    /// Scripted reordering: (data sequence number, extra delay of its first transmission).
    pub delays: Vec<(u64, Ns)>,
    /// Number of SYNs to drop.
    pub drop_syns: u32,
    /// Random loss of data segments / of ACKs (independent, seeded).
    pub data_loss: f64,
    pub ack_loss: f64,
    pub seed: u64,
}

impl NetCfg {
    pub fn new(rate_bps: u64, rtt: Ns, buffer_pkts: usize) -> Self {
        NetCfg {
            rate_bps,
            buffer_pkts,
            fwd_delay: rtt / 2,
            rev_delay: rtt - rtt / 2,
            drops: vec![],
            delays: vec![],
            ecn_mark_at: None,
            drop_syns: 0,
            data_loss: 0.0,
            ack_loss: 0.0,
            seed: 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Ev {
    SenderTimer,
    ReceiverTimer,
    LinkDone,
    ArriveRx(Packet),
    ArriveTx(Packet),
    Write(u64),
}

/// Log entry kinds.
pub const SENT: char = 'S';
pub const ACKED: char = 'A';
pub const DROPPED: char = 'D';

pub struct Sim {
    pub now: Ns,
    seq: u64,
    events: BTreeMap<(Ns, u64), Ev>,
    pub tx: TcpSender,
    pub rx: TcpReceiver,
    pub reno: Arc<Mutex<RenoLog>>,
    pub net: NetCfg,
    queue: VecDeque<Packet>,
    in_service: Option<Packet>,
    tx_timer: Ns,
    rx_timer: Ns,
    /// (time, kind, packet): 'S' sender emitted, 'A' receiver emitted, 'D' dropped.
    pub log: Vec<(Ns, char, Packet)>,
    pub overflow_drops: u64,
    pub ce_marks: u64,
    rng: crate::rng::Rng,
}

impl Sim {
    pub fn new(cfg: &TcpConfig, net: NetCfg) -> Sim {
        Self::with_pacing_cc(cfg, net, None)
    }

    /// Like [`Sim::new`] with a controller that asks for a fixed pacing rate.
    pub fn with_pacing_cc(cfg: &TcpConfig, net: NetCfg, pacing: Option<u64>) -> Sim {
        let addr = FlowAddr::new(7, 1, 2, 7);
        let (cc, reno) = TestReno::boxed(cfg.mss as u64, cfg.initial_window as u64, pacing);
        let mut s = Sim {
            now: 0,
            seq: 0,
            events: BTreeMap::new(),
            tx: TcpSender::new(cfg, addr, cc),
            rx: TcpReceiver::new(cfg, addr),
            reno,
            net: net.clone(),
            queue: VecDeque::new(),
            in_service: None,
            tx_timer: NEVER,
            rx_timer: NEVER,
            log: vec![],
            overflow_drops: 0,
            ce_marks: 0,
            rng: crate::rng::Rng::from_seed(net.seed),
        };
        s.drain_tx();
        s
    }

    fn push(&mut self, t: Ns, ev: Ev) {
        self.seq += 1;
        self.events.insert((t, self.seq), ev);
    }

    /// Application write at time `t`.
    pub fn write_at(&mut self, t: Ns, bytes: u64) {
        self.push(t, Ev::Write(bytes));
    }

    fn drain_tx(&mut self) {
        while let Some(p) = self.tx.poll_transmit(self.now) {
            assert_eq!(p.hash, crate::packet::direction_hash(7, false));
            if p.payload > 0 && !p.has(crate::packet::flags::RETX) {
                // new data only when it fits cwnd (or nothing else was in flight)
                let pipe = self.tx.bytes_in_flight();
                let w = self.tx.send_window();
                assert!(pipe <= w.max(p.payload as u64), "pipe {pipe} > window {w}");
            }
            self.log.push((self.now, SENT, p));
            self.enqueue(p);
        }
        let at = self.tx.poll_at().max(self.now);
        if at != NEVER && at != self.tx_timer {
            self.tx_timer = at;
            self.push(at, Ev::SenderTimer);
        } else if at == NEVER {
            self.tx_timer = NEVER;
        }
    }

    fn drain_rx(&mut self) {
        while let Some(p) = self.rx.poll_transmit(self.now) {
            assert_eq!(p.hash, crate::packet::direction_hash(7, true));
            self.log.push((self.now, ACKED, p));
            if self.net.ack_loss > 0.0 && self.rng.chance(self.net.ack_loss) {
                self.log.push((self.now, DROPPED, p));
                continue;
            }
            let t = self.now + self.net.rev_delay;
            self.push(t, Ev::ArriveTx(p));
        }
        let at = self.rx.poll_at().max(self.now);
        if at != NEVER && at != self.rx_timer {
            self.rx_timer = at;
            self.push(at, Ev::ReceiverTimer);
        } else if at == NEVER {
            self.rx_timer = NEVER;
        }
    }

    fn enqueue(&mut self, mut p: Packet) {
        if p.has(crate::packet::flags::SYN) && self.net.drop_syns > 0 {
            self.net.drop_syns -= 1;
            self.log.push((self.now, DROPPED, p));
            return;
        }
        if p.payload > 0 {
            if let Some(d) = self.net.drops.iter_mut().find(|d| d.0 == p.seq && d.1 > 0) {
                d.1 -= 1;
                self.log.push((self.now, DROPPED, p));
                return;
            }
        }
        if p.payload > 0 && self.net.data_loss > 0.0 && self.rng.chance(self.net.data_loss) {
            self.log.push((self.now, DROPPED, p));
            return;
        }
        if self.in_service.is_none() {
            self.start_service(p);
            return;
        }
        if self.queue.len() >= self.net.buffer_pkts {
            self.overflow_drops += 1;
            self.log.push((self.now, DROPPED, p));
            return;
        }
        if let Some(k) = self.net.ecn_mark_at {
            if self.queue.len() >= k && p.is_ect() {
                p.ecn = ecn::CE;
                self.ce_marks += 1;
            }
        }
        self.queue.push_back(p);
    }

    fn start_service(&mut self, p: Packet) {
        let t = self.now + tx_time(p.size as u64, self.net.rate_bps);
        self.in_service = Some(p);
        self.push(t, Ev::LinkDone);
    }

    /// Process events up to and including time `t`; `now` ends at `t`.
    pub fn run_until(&mut self, t: Ns) {
        while let Some((&(et, _), _)) = self.events.first_key_value() {
            if et > t {
                break;
            }
            let ((et, _), ev) = self.events.pop_first().unwrap();
            self.now = et;
            match ev {
                Ev::SenderTimer => {
                    if et == self.tx_timer {
                        self.tx_timer = NEVER;
                        self.tx.on_timer(et);
                        self.drain_tx();
                    }
                }
                Ev::ReceiverTimer => {
                    if et == self.rx_timer {
                        self.rx_timer = NEVER;
                        self.rx.on_timer(et);
                        self.drain_rx();
                    }
                }
                Ev::LinkDone => {
                    let p = self.in_service.take().unwrap();
                    let mut at = et + self.net.fwd_delay;
                    if p.payload > 0 {
                        if let Some(d) = self.net.delays.iter_mut().find(|d| d.0 == p.seq && d.1 > 0) {
                            at += d.1;
                            d.1 = 0;
                        }
                    }
                    self.push(at, Ev::ArriveRx(p));
                    if let Some(n) = self.queue.pop_front() {
                        self.start_service(n);
                    }
                }
                Ev::ArriveRx(p) => {
                    self.rx.on_packet(et, &p);
                    self.drain_rx();
                }
                Ev::ArriveTx(p) => {
                    self.tx.on_packet(et, &p);
                    self.tx.check_invariants();
                    self.drain_tx();
                }
                Ev::Write(b) => {
                    self.tx.write(et, b);
                    self.drain_tx();
                }
            }
        }
        self.now = self.now.max(t);
    }

    /// Run until every written byte is acknowledged (or `limit`); returns the completion time.
    pub fn run_to_completion(&mut self, limit: Ns) -> Option<Ns> {
        while self.now < limit {
            let (&(et, _), _) = self.events.first_key_value()?;
            if et > limit {
                break;
            }
            self.run_until(et);
            if self.tx.all_acked() && self.tx.bytes_written() > 0 {
                return Some(self.now);
            }
        }
        None
    }

    /// Data segments sent by the sender: (time, packet).
    pub fn data_sent(&self) -> Vec<(Ns, Packet)> {
        self.log.iter().filter(|(_, k, p)| *k == SENT && p.payload > 0).map(|(t, _, p)| (*t, *p)).collect()
    }
    /// Times at which sequence `seq` was transmitted.
    pub fn sends_of(&self, seq: u64) -> Vec<Ns> {
        self.data_sent().iter().filter(|(_, p)| p.seq == seq).map(|(t, _)| *t).collect()
    }
    pub fn has_flag_sent(&self, f: u8) -> bool {
        self.log.iter().any(|(_, k, p)| *k == SENT && p.has(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{flags, HEADERS, MSS};
    use crate::time::{MS, SEC, US};

    const M: u64 = MSS as u64;

    fn goodput_bps(sim: &mut Sim, from: Ns, to: Ns) -> f64 {
        sim.run_until(from);
        let b0 = sim.rx.bytes_received();
        sim.run_until(to);
        let b1 = sim.rx.bytes_received();
        (b1 - b0) as f64 * 8.0 / crate::time::secs(to - from)
    }

    #[test]
    fn handshake_and_exact_transfer() {
        let cfg = TcpConfig::default();
        let mut sim = Sim::new(&cfg, NetCfg::new(10_000_000, 20 * MS, 1000));
        let n = 1_000_000;
        sim.write_at(0, n);
        let done = sim.run_to_completion(10 * SEC).expect("transfer completes");
        assert_eq!(sim.rx.bytes_received(), n);
        assert_eq!(sim.tx.bytes_acked(), n);
        assert_eq!(sim.tx.bytes_written(), n);
        assert!(sim.tx.all_acked());
        let st = sim.tx.stats().clone();
        assert_eq!(st.retransmits, 0);
        assert_eq!(st.data_segments_sent, n.div_ceil(M));
        assert_eq!(st.payload_bytes_sent, n);
        assert_eq!(sim.reno.lock().unwrap().sent, st.data_segments_sent, "cc.on_sent for every segment");
        // SYN first, 60 bytes; handshake ACK 52 bytes; then data of HEADERS + payload
        let (t0, _, syn) = sim.log[0];
        assert_eq!((t0, syn.flags & flags::SYN != 0, syn.size), (0, true, 60));
        let synack = sim.log.iter().find(|(_, k, p)| *k == ACKED && p.has(flags::SYN)).unwrap().2;
        assert_eq!(synack.size, 60);
        let first = sim.data_sent()[0];
        // handshake RTT: 20 ms + serialization of the 60-byte SYN at 10 Mbit/s (48 us)
        assert_eq!(first.0, 20 * MS + 48 * US);
        assert_eq!((first.1.seq, first.1.size), (0, HEADERS + MSS));
        let last = *sim.data_sent().last().unwrap();
        assert_eq!(last.1.payload as u64, n - (n.div_ceil(M) - 1) * M);
        // IW 10: exactly 10 segments at the first instant
        assert_eq!(sim.data_sent().iter().filter(|(t, _)| *t == first.0).count(), 10);
        let s = sim.tx.sample(done);
        assert_eq!(s.min_rtt, 20 * MS + 48 * US);
        assert_eq!(s.bytes_in_flight, 0);
        assert_eq!(s.delivered, n);
        assert!(sim.tx.poll_at() == NEVER, "no timer once everything is acknowledged");
        // every data packet carries payload and correct addresses
        assert!(sim.data_sent().iter().all(|(_, p)| p.flow == 7 && p.src == 1 && p.dst == 2));
        println!("1 MB done at {:.3} s, {} acks", crate::time::secs(done), st.acks_received);
    }

    #[test]
    fn single_drop_is_fast_retransmitted_without_rto() {
        let cfg = TcpConfig::default();
        // 1 Gbit/s so that queueing is negligible and the RTT is ~20 ms
        let mut net = NetCfg::new(1_000_000_000, 20 * MS, 10_000);
        let lost = 40 * M;
        net.drops = vec![(lost, 1)];
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 300 * M);
        sim.run_to_completion(10 * SEC).expect("completes");
        let st = sim.tx.stats().clone();
        assert_eq!(st.rto_count, 0);
        assert_eq!(st.fast_recoveries, 1);
        assert_eq!(st.retransmits, 1);
        let log = sim.reno.lock().unwrap().clone();
        assert_eq!(log.congestion_events.len(), 1);
        assert_eq!(log.recovery_exits.len(), 1);
        let sends = sim.sends_of(lost);
        assert_eq!(sends.len(), 2);
        let gap = sends[1] - sends[0];
        // the 3rd SACK above the hole returns one RTT (+ a few segment times) after the original
        assert!((20 * MS..23 * MS).contains(&gap), "fast retransmit {} ms after the original", gap as f64 / 1e6);
        assert_eq!(sim.rx.bytes_received(), 300 * M);
    }

    #[test]
    fn tail_loss_is_recovered_by_rto() {
        let cfg = TcpConfig::default();
        let mut net = NetCfg::new(10_000_000, 20 * MS, 100);
        net.drops = vec![(48 * M, 1), (49 * M, 1)];
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 50 * M);
        sim.run_to_completion(10 * SEC).expect("completes");
        let st = sim.tx.stats().clone();
        assert_eq!(st.rto_count, 1);
        assert_eq!(st.fast_recoveries, 0);
        assert_eq!(st.retransmits, 2);
        assert_eq!(sim.reno.lock().unwrap().rtos.len(), 1);
        // the RTO fires 200 ms (min RTO) after the last ACK that advanced SND.UNA
        let rtx = sim.sends_of(48 * M)[1];
        let last_ack_rx = sim
            .log
            .iter()
            .filter(|(t, k, p)| *k == ACKED && p.ack == 48 * M && *t + 10 * MS <= rtx)
            .map(|(t, _, _)| *t + 10 * MS)
            .min()
            .unwrap();
        assert_eq!(rtx - last_ack_rx, 200 * MS);
        // after the RTO, cwnd = 1 MSS: the two segments go out one RTT apart
        let rtx2 = sim.sends_of(49 * M)[1];
        assert!(rtx2 - rtx >= 20 * MS, "{}", rtx2 - rtx);
        assert_eq!(sim.rx.bytes_received(), 50 * M);
    }

    #[test]
    fn rto_min_200ms_and_exponential_backoff() {
        let cfg = TcpConfig::default();
        let mut net = NetCfg::new(100_000_000, MS, 100);
        net.drops = vec![(0, 3)];
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 1000);
        sim.run_to_completion(10 * SEC).expect("completes");
        let sends = sim.sends_of(0);
        assert_eq!(sends.len(), 4);
        let gaps: Vec<Ns> = sends.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(gaps, vec![200 * MS, 400 * MS, 800 * MS]);
        assert_eq!(sim.tx.stats().rto_count, 3);
        // a fresh RTT sample (timestamps) resets the backoff
        assert_eq!(sim.tx.sample(sim.now).rto, 200 * MS);
    }

    #[test]
    fn reno_fills_a_one_bdp_buffer_above_90_percent() {
        let cfg = TcpConfig::default();
        // 10 Mbit/s, 20 ms: BDP = 25 kB = 16.7 packets of 1500 B
        let mut sim = Sim::new(&cfg, NetCfg::new(10_000_000, 20 * MS, 17));
        sim.tx.set_unlimited();
        sim.write_at(0, 0);
        let g = goodput_bps(&mut sim, 5 * SEC, 30 * SEC);
        let capacity = 10e6 * MSS as f64 / 1500.0;
        let util = g / capacity;
        let log = sim.reno.lock().unwrap().clone();
        println!(
            "utilization {:.4}, {} congestion events, {} RTOs, {} overflow drops",
            util,
            log.congestion_events.len(),
            log.rtos.len(),
            sim.overflow_drops
        );
        assert!(util > 0.9, "utilization {util}");
        assert!(util <= 1.0);
        assert!(log.congestion_events.len() >= 10, "sawtooth expected");
        assert_eq!(sim.tx.stats().rto_count, 0);
    }

    #[test]
    fn delayed_ack_halves_the_ack_count() {
        let n = 1000 * M;
        let mut counts = vec![];
        for delack in [false, true] {
            let cfg = TcpConfig { delayed_ack: delack, ..TcpConfig::default() };
            let mut sim = Sim::new(&cfg, NetCfg::new(100_000_000, 20 * MS, 1000));
            sim.write_at(0, n);
            sim.run_to_completion(10 * SEC).expect("completes");
            assert_eq!(sim.tx.stats().retransmits, 0);
            counts.push(sim.tx.stats().acks_received);
        }
        assert_eq!(counts[0], 1000);
        let ratio = counts[1] as f64 / counts[0] as f64;
        println!("acks: {counts:?} ratio {ratio:.3}");
        assert!((0.5..0.52).contains(&ratio), "ratio {ratio}");
    }

    #[test]
    fn receive_window_limits_throughput() {
        let rwnd = 20 * M;
        let cfg = TcpConfig { rwnd, ..TcpConfig::default() };
        let mut sim = Sim::new(&cfg, NetCfg::new(100_000_000, 100 * MS, 1000));
        sim.tx.set_unlimited();
        sim.write_at(0, 0);
        let g = goodput_bps(&mut sim, 2 * SEC, 12 * SEC);
        let expect = rwnd as f64 * 8.0 / 0.1;
        println!("goodput {g:.0} vs rwnd/RTT {expect:.0}");
        assert!((g / expect - 1.0).abs() < 0.03, "goodput {g} expected ~{expect}");
        // never more than rwnd outstanding
        assert!(sim.tx.sample(sim.now).snd_nxt - sim.tx.sample(sim.now).snd_una <= rwnd);
        let mut una = 0;
        for (_, k, p) in &sim.log {
            if *k == ACKED {
                una = una.max(p.ack);
            }
            if *k == SENT && p.payload > 0 {
                assert!(p.end_seq() <= una + rwnd, "sent beyond the window");
            }
        }
    }

    /// Run a 500-segment transfer, stay idle for `idle_rtos` RTOs, write again; returns
    /// (cwnd before, cwnd right after the restart, rto, idle restarts).
    fn idle_scenario(ssai: bool, idle_rtos: f64) -> (u64, u64, Ns, u64, Vec<(Ns, u64)>) {
        let cfg = TcpConfig { slow_start_after_idle: ssai, ..TcpConfig::default() };
        let mut sim = Sim::new(&cfg, NetCfg::new(100_000_000, 20 * MS, 1000));
        sim.write_at(0, 500 * M);
        let done = sim.run_to_completion(10 * SEC).unwrap();
        let before = sim.tx.cc().cwnd();
        let rto = sim.tx.sample(done).rto;
        let last_send = sim.data_sent().last().unwrap().0;
        let t = last_send + (rto as f64 * idle_rtos) as Ns;
        assert!(t > done);
        sim.write_at(t, 100 * M);
        sim.run_until(t);
        let after = sim.tx.cc().cwnd();
        let restarts = sim.tx.stats().idle_restarts;
        sim.run_to_completion(20 * SEC).unwrap();
        let log = sim.reno.lock().unwrap().idle_restarts.clone();
        (before, after, rto, restarts, log)
    }

    #[test]
    fn slow_start_after_idle_collapses_cwnd() {
        let iw = 10 * M;
        // idle 1.5 RTO: one halving
        let (before, after, rto, n, log) = idle_scenario(true, 1.5);
        assert!(before > 4 * iw, "cwnd grew in slow start: {before}");
        assert_eq!(rto, 200 * MS);
        assert_eq!(n, 1);
        assert_eq!(after, (before >> 1).max(iw));
        assert_eq!(log.len(), 1);
        // idle 10.5 RTO: down to the initial window
        let (before, after, _, n, _) = idle_scenario(true, 10.5);
        assert_eq!(n, 1);
        assert_eq!(after, (before >> 10).max(iw.min(before)));
        assert_eq!(after, iw);
        // idle shorter than the RTO: untouched
        let (before, after, _, n, _) = idle_scenario(true, 0.9);
        assert_eq!((n, after), (0, before));
        // disabled
        let (before, after, _, n, log) = idle_scenario(false, 10.5);
        assert_eq!((n, after), (0, before));
        assert!(log.is_empty());
    }

    /// 500 segments, then idle for `idle_rtos` RTOs counted from the last ACK received (`done`),
    /// optionally with a segment of the reverse half arriving `peer_rx_before` before the write;
    /// returns (cwnd before, cwnd right after the write, rto, restarts, segments sent in the
    /// first RTT after the write).
    fn idle_scenario_bsd(cfg: &TcpConfig, idle_rtos: f64, peer_rx_before: Option<Ns>) -> (u64, u64, Ns, u64, usize) {
        let mut sim = Sim::new(cfg, NetCfg::new(100_000_000, 20 * MS, 1000));
        sim.write_at(0, 500 * M);
        let done = sim.run_to_completion(10 * SEC).unwrap();
        let before = sim.tx.cc().cwnd();
        let rto = sim.tx.sample(done).rto;
        let t = done + (rto as f64 * idle_rtos) as Ns;
        if let Some(d) = peer_rx_before {
            sim.run_until(t - d);
            sim.tx.note_peer_rx(t - d);
        }
        sim.write_at(t, 100 * M);
        sim.run_until(t);
        let after = sim.tx.cc().cwnd();
        let restarts = sim.tx.stats().idle_restarts;
        let first_flight = sim.data_sent().iter().filter(|(x, _)| *x >= t && *x < t + 10 * MS).count();
        sim.run_to_completion(20 * SEC).unwrap();
        (before, after, rto, restarts, first_flight)
    }

    #[test]
    fn freebsd_restart_window_after_idle() {
        use crate::tcp::config::{rfc3390_window, IdleRestart};
        // RW = min(4 MSS, max(2 MSS, 4380 B)) = min(5792, 4380) = 4380 B at MSS 1448: cwnd is
        // 4380 B, which lets 3 full segments (4344 B) out; a 4th would need 5792 B.
        assert_eq!(rfc3390_window(M), 4380);
        assert_eq!(rfc3390_window(536), 2144); // 4 x 536
        assert_eq!(rfc3390_window(9000), 18000); // 2 x 9000
        let cfg = TcpConfig::freebsd10();
        assert_eq!(cfg.idle_restart, IdleRestart::FreeBsd);
        for idle in [1.0, 1.5, 20.0] {
            let (before, after, rto, n, flight) = idle_scenario_bsd(&cfg, idle, None);
            assert!(before > 40 * M, "cwnd grew: {before}");
            // FreeBSD RTO: max(30 ms, srtt + 4 rttvar) + 200 ms slop
            assert!((230 * MS..300 * MS).contains(&rto), "{rto}");
            assert_eq!((n, after, flight), (1, 4380, 3), "idle {idle} RTO");
        }
        // shorter idle: unchanged
        let (before, after, _, n, flight) = idle_scenario_bsd(&cfg, 0.9, None);
        assert_eq!((n, after), (0, before));
        assert!(flight > 10, "{flight}");
        // a segment of the reverse half (the request) arrived 1 ms before the response is
        // written: FreeBSD's t_rcvtime is fresh, no restart (RFC 5681 4.1's persistent-HTTP case)
        let (before, after, _, n, _) = idle_scenario_bsd(&cfg, 5.0, Some(MS));
        assert_eq!((n, after), (0, before));
        // rfc5681: same window, idleness counted from the last data sent; a received request
        // does not prevent it
        let rfc = TcpConfig { idle_restart: IdleRestart::Rfc5681, ..cfg.clone() };
        let (_, after, _, n, flight) = idle_scenario_bsd(&rfc, 1.5, Some(MS));
        assert_eq!((n, after, flight), (1, 4380, 3));
        // disabled
        let off = TcpConfig { slow_start_after_idle: false, ..cfg };
        let (before, after, _, n, _) = idle_scenario_bsd(&off, 20.0, None);
        assert_eq!((n, after), (0, before));
    }

    fn messy_run() -> (Vec<(Ns, char, Packet)>, TcpStats) {
        let cfg = TcpConfig::default();
        let mut net = NetCfg::new(10_000_000, 30 * MS, 20);
        net.drops = vec![(50 * M, 2), (51 * M, 1), (300 * M, 1)];
        let mut sim = Sim::new(&cfg, net);
        sim.tx.set_unlimited();
        sim.write_at(0, 0);
        sim.run_until(5 * SEC);
        (sim.log, sim.tx.stats().clone())
    }

    use super::super::sender::TcpStats;

    #[test]
    fn identical_inputs_give_identical_packets() {
        let (a, sa) = messy_run();
        let (b, sb) = messy_run();
        assert!(sa.retransmits > 3 && sa.fast_recoveries > 1, "{sa:?}");
        assert_eq!(sa, sb);
        assert_eq!(a.len(), b.len());
        assert!(a == b);
    }

    #[test]
    fn several_losses_in_one_window_one_congestion_event_sack() {
        let cfg = TcpConfig::default();
        let mut net = NetCfg::new(1_000_000_000, 20 * MS, 10_000);
        net.drops = vec![(40 * M, 1), (43 * M, 1), (47 * M, 1), (52 * M, 1)];
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 300 * M);
        sim.run_to_completion(10 * SEC).unwrap();
        let st = sim.tx.stats().clone();
        assert_eq!((st.rto_count, st.fast_recoveries, st.retransmits), (0, 1, 4));
        assert_eq!(sim.reno.lock().unwrap().congestion_events.len(), 1);
        // all four holes are repaired within one RTT of entering recovery (SACK), not one per RTT
        let r: Vec<Ns> = [40, 43, 47, 52].iter().map(|s| sim.sends_of(s * M)[1]).collect();
        assert!(r[3] - r[0] < 21 * MS, "{r:?}");
    }

    #[test]
    fn newreno_without_sack_recovers_with_partial_acks() {
        let cfg = TcpConfig { sack: false, ..TcpConfig::default() };
        let mut net = NetCfg::new(1_000_000_000, 20 * MS, 10_000);
        net.drops = vec![(40 * M, 1), (43 * M, 1), (47 * M, 1)];
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 300 * M);
        sim.run_to_completion(10 * SEC).unwrap();
        let st = sim.tx.stats().clone();
        assert_eq!((st.rto_count, st.fast_recoveries, st.retransmits), (0, 1, 3), "{st:?}");
        assert_eq!(sim.reno.lock().unwrap().congestion_events.len(), 1);
        assert!(sim.log.iter().all(|(_, _, p)| p.nsack == 0));
        // RFC 6582: one hole per RTT
        let r: Vec<Ns> = [40, 43, 47].iter().map(|s| sim.sends_of(s * M)[1]).collect();
        assert!(r[1] - r[0] >= 20 * MS && r[2] - r[1] >= 20 * MS, "{r:?}");
        assert_eq!(sim.rx.bytes_received(), 300 * M);
    }

    #[test]
    fn ecn_marks_reduce_once_per_window_without_loss() {
        let cfg = TcpConfig { ecn: true, ..TcpConfig::default() };
        let mut net = NetCfg::new(10_000_000, 20 * MS, 1000);
        net.ecn_mark_at = Some(20);
        let mut sim = Sim::new(&cfg, net);
        sim.tx.set_unlimited();
        sim.write_at(0, 0);
        let g = goodput_bps(&mut sim, 2 * SEC, 10 * SEC);
        let st = sim.tx.stats().clone();
        let log = sim.reno.lock().unwrap().clone();
        println!("ecn: {} reductions, {} marks, goodput {g:.0}", st.ecn_reductions, sim.ce_marks);
        assert_eq!(st.retransmits, 0);
        assert_eq!(sim.overflow_drops, 0);
        assert!(st.ecn_reductions >= 5);
        assert!(log.congestion_events.iter().all(|e| e.1 == Congestion::Ecn));
        // at most one reduction per RTT (>= 20 ms apart)
        for w in log.congestion_events.windows(2) {
            assert!(w[1].0 - w[0].0 >= 20 * MS);
        }
        assert!(sim.has_flag_sent(flags::CWR));
        // data is ECT(0), retransmissions and pure ACKs are not ECN-capable
        assert!(sim.data_sent().iter().all(|(_, p)| p.ecn == ecn::ECT0 || p.ecn == ecn::CE));
        assert!(g > 0.9 * 10e6 * MSS as f64 / 1500.0, "goodput {g}");
    }

    #[test]
    fn pacing_spreads_packets() {
        let cfg = TcpConfig { pacing: true, ..TcpConfig::default() };
        let mut sim = Sim::new(&cfg, NetCfg::new(100_000_000, 20 * MS, 1000));
        sim.write_at(0, 300 * M);
        sim.run_to_completion(10 * SEC).unwrap();
        let sent = sim.data_sent();
        // the first flight (no srtt yet from data? the handshake gave one) is paced too:
        // no two data packets leave at the same instant
        for w in sent.windows(2) {
            assert!(w[1].0 > w[0].0, "burst at {}", w[0].0);
        }
        // initial rate: 2 * IW / handshake RTT (cwnd < ssthresh/2)
        let gap = sent[1].0 - sent[0].0;
        let srtt = sim.sends_of(0)[0]; // handshake RTT (SYN sent at 0)
        let rate = 2.0 * 10.0 * M as f64 * 8.0 / crate::time::secs(srtt);
        let expect = tx_time(1500, rate as u64);
        assert!(gap.abs_diff(expect) <= 1, "gap {gap} expected {expect}");
    }

    #[test]
    fn delivery_rate_matches_bottleneck() {
        let cfg = TcpConfig::default();
        let mut sim = Sim::new(&cfg, NetCfg::new(10_000_000, 20 * MS, 100));
        sim.tx.set_unlimited();
        sim.write_at(0, 0);
        sim.run_until(10 * SEC);
        let log = sim.reno.lock().unwrap().clone();
        let mut rates: Vec<u64> = log
            .acks
            .iter()
            .filter(|a| a.now > 3 * SEC && !a.app_limited && !a.in_recovery)
            .filter_map(|a| a.delivery_rate_bps)
            .collect();
        rates.sort();
        let med = rates[rates.len() / 2] as f64;
        let payload_rate = 10e6 * MSS as f64 / 1500.0;
        println!("median delivery rate {med:.0} (payload capacity {payload_rate:.0}), {} samples", rates.len());
        assert!((med / payload_rate - 1.0).abs() < 0.03);
        // every ACK sample is consistent
        for a in &log.acks {
            assert!(a.acked_bytes > 0 && a.delivered >= a.prior_delivered);
            assert!(a.min_rtt > 0 && a.srtt >= a.min_rtt);
        }
    }

    #[test]
    fn app_limited_samples_are_flagged() {
        let cfg = TcpConfig::default();
        let mut sim = Sim::new(&cfg, NetCfg::new(100_000_000, 20 * MS, 1000));
        // 2 segments every 100 ms: far below capacity
        for i in 0..20 {
            sim.write_at(i * 100 * MS, 2 * M);
        }
        sim.run_until(3 * SEC);
        let log = sim.reno.lock().unwrap().clone();
        let late: Vec<&AckSample> = log.acks.iter().filter(|a| a.now > SEC).collect();
        assert!(!late.is_empty());
        assert!(late.iter().all(|a| a.app_limited), "app-limited data must be flagged");
        assert!(late.iter().all(|a| !a.cwnd_limited));
    }

    #[test]
    fn lost_syn_is_retransmitted_after_initial_rto() {
        let cfg = TcpConfig::default();
        let mut net = NetCfg::new(10_000_000, 20 * MS, 100);
        net.drop_syns = 1;
        let mut sim = Sim::new(&cfg, net);
        assert_eq!(sim.tx.poll_at(), SEC);
        sim.write_at(0, 10 * M);
        let done = sim.run_to_completion(10 * SEC).unwrap();
        assert_eq!(sim.tx.stats().syn_retransmits, 1);
        let syns: Vec<Ns> = sim.log.iter().filter(|(_, k, p)| *k == SENT && p.has(flags::SYN)).map(|x| x.0).collect();
        assert_eq!(syns, vec![0, SEC]);
        assert!(done > SEC + 20 * MS);
        // RTT from the echoed timestamp of the retransmitted SYN
        let rtt = sim.tx.sample(done).min_rtt;
        assert!(rtt > 20 * MS && rtt < 21 * MS, "{rtt}");
    }

    #[test]
    fn random_loss_stress_always_completes_exactly() {
        // data and ACK loss, SACK and NewReno, with and without ECN/pacing: every run completes
        // with exact byte counts (scoreboard invariants are checked on every ACK by the harness)
        let mut total_rto = 0;
        let mut total_frec = 0;
        for seed in 0..24u64 {
            let cfg = TcpConfig {
                sack: seed % 2 == 0,
                ecn: seed % 3 == 0,
                pacing: seed % 4 == 1,
                delayed_ack: seed % 5 != 0,
                ..TcpConfig::default()
            };
            let mut net = NetCfg::new(20_000_000, 30 * MS, 30);
            net.data_loss = 0.02;
            net.ack_loss = 0.05;
            net.seed = seed;
            net.ecn_mark_at = if cfg.ecn { Some(15) } else { None };
            let mut sim = Sim::new(&cfg, net);
            let n = 2_000_000 + seed * 777;
            sim.write_at(0, n);
            let done = sim.run_to_completion(600 * SEC);
            assert!(done.is_some(), "seed {seed}: stuck at {} of {n}", sim.rx.bytes_received());
            assert_eq!(sim.rx.bytes_received(), n);
            assert_eq!(sim.tx.bytes_acked(), n);
            let st = sim.tx.stats();
            total_rto += st.rto_count;
            total_frec += st.fast_recoveries;
            assert!(st.retransmits > 0);
        }
        println!("stress: {total_frec} fast recoveries, {total_rto} RTOs");
        assert!(total_frec > total_rto);
    }

    /// (max gap between data transmissions during recovery, segments sent during recovery,
    /// segments delivered during recovery, ssthresh, cwnd before)
    fn recovery_profile(prr: bool) -> (Ns, u64, u64, u64, u64) {
        let cfg = TcpConfig { prr, ..TcpConfig::default() };
        let mut net = NetCfg::new(100_000_000, 20 * MS, 1000);
        net.drops = vec![(200 * M, 1)];
        let mut sim = Sim::new(&cfg, net);
        sim.tx.set_unlimited();
        sim.write_at(0, 0);
        sim.run_until(3 * SEC);
        let log = sim.reno.lock().unwrap().clone();
        assert_eq!(log.congestion_events.len(), 1);
        let start = sim.sends_of(200 * M)[1];
        let end = log.recovery_exits[0];
        let sends: Vec<Ns> = sim.data_sent().iter().map(|x| x.0).filter(|t| *t >= start && *t <= end).collect();
        let max_gap = sends.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        let delivered: u64 = log.acks.iter().filter(|a| a.now >= start && a.now <= end).map(|a| a.acked_bytes).sum();
        let (_, _, in_flight) = log.congestion_events[0];
        (max_gap, sends.len() as u64, delivered / M, (in_flight / 2) / M, in_flight / M)
    }

    #[test]
    fn prr_spreads_recovery_transmissions() {
        let (gap_prr, sent_prr, deliv_prr, ss, prior) = recovery_profile(true);
        let (gap_plain, sent_plain, deliv_plain, _, _) = recovery_profile(false);
        println!("PRR: max gap {gap_prr} sent {sent_prr} delivered {deliv_prr} ssthresh {ss} prior {prior}");
        println!("RFC 6675: max gap {gap_plain} sent {sent_plain} delivered {deliv_plain}");
        // RFC 6937: during recovery the sender sends ssthresh/RecoverFS of what is delivered
        // (+1 forced fast retransmit), spread over the ACKs: no long silence
        let expect = deliv_prr * ss / prior + 1;
        assert!(sent_prr.abs_diff(expect) <= 2, "sent {sent_prr} expected {expect}");
        assert!(gap_prr < 2 * MS, "PRR gap {gap_prr}");
        // plain RFC 6675 with cwnd = ssthresh at once: silent until pipe < cwnd (half the window
        // of ACKs, 106 segments at 100 Mbit/s = 12.7 ms)
        assert!(gap_plain > 10 * MS, "RFC 6675 gap {gap_plain}");
        assert_eq!(sent_plain, sent_prr);
    }

    #[test]
    fn linux_rto_avoids_spurious_timeout_behind_a_deep_queue() {
        // 10 Mbit/s with a 1000-packet buffer: slow start builds a queue of hundreds of ms; the
        // fast retransmission of segment 200 waits behind it. RFC 6298's max(200 ms, srtt +
        // 4 rttvar) expires first (spurious RTO, go-back-N); Linux's srtt + max(.., 200 ms) not.
        let mut out = vec![];
        for linux_rto in [false, true] {
            let cfg = TcpConfig { linux_rto, ..TcpConfig::default() };
            let mut net = NetCfg::new(10_000_000, 20 * MS, 1000);
            net.drops = vec![(200 * M, 1)];
            let mut sim = Sim::new(&cfg, net);
            sim.tx.set_unlimited();
            sim.write_at(0, 0);
            sim.run_until(3 * SEC);
            let st = sim.tx.stats().clone();
            out.push((st.rto_count, st.retransmits));
        }
        println!("RFC 6298 (rto, retransmits) {:?}, Linux {:?}", out[0], out[1]);
        assert_eq!(out[0].0, 1);
        assert!(out[0].1 > 100);
        assert_eq!(out[1], (0, 1));
    }

    #[test]
    fn controller_pacing_rate_spaces_every_packet() {
        // the controller asks for 12 Mbit/s: one 1500-byte packet per ms, from the first flight on
        let cfg = TcpConfig::default();
        let mut sim = Sim::with_pacing_cc(&cfg, NetCfg::new(100_000_000, 20 * MS, 1000), Some(12_000_000));
        sim.write_at(0, 100 * M);
        sim.run_to_completion(10 * SEC).unwrap();
        let sent = sim.data_sent();
        assert_eq!(sent.len(), 100);
        for w in sent.windows(2) {
            assert!(w[1].0 - w[0].0 >= MS, "gap {}", w[1].0 - w[0].0);
        }
        // the first flight (IW 10) is spaced exactly 1 ms apart
        for i in 1..10 {
            assert_eq!(sent[i].0 - sent[i - 1].0, MS);
        }
        assert_eq!(sim.tx.sample(sim.now).pacing_rate_bps, 12_000_000);
    }

    #[test]
    fn without_timestamps_karn_samples_and_smaller_headers() {
        let cfg = TcpConfig { timestamps: false, ..TcpConfig::default() };
        let mut net = NetCfg::new(1_000_000_000, 20 * MS, 10_000);
        net.drops = vec![(40 * M, 1)];
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 300 * M);
        sim.run_to_completion(10 * SEC).unwrap();
        assert_eq!(sim.rx.bytes_received(), 300 * M);
        assert!(sim.log.iter().all(|(_, _, p)| p.ts_val == 0 && p.ts_ecr == 0));
        let d = sim.data_sent();
        assert_eq!(d[0].1.size, 40 + MSS);
        assert_eq!(sim.log[0].2.size, 48, "SYN without the timestamps option");
        let s = sim.tx.sample(sim.now);
        // Karn: only never-retransmitted segments give samples; the 1 Gbit/s path RTT is ~20 ms
        assert!(s.min_rtt >= 20 * MS && s.min_rtt < 21 * MS, "{}", s.min_rtt);
        let log = sim.reno.lock().unwrap().clone();
        assert!(log.acks.iter().filter_map(|a| a.rtt).all(|r| (20 * MS..70 * MS).contains(&r)));
        assert_eq!(sim.tx.stats().retransmits, 1);
    }

    #[test]
    fn lost_retransmission_is_detected_by_sack_without_rto() {
        let cfg = TcpConfig::default();
        let mut net = NetCfg::new(1_000_000_000, 20 * MS, 10_000);
        net.drops = vec![(40 * M, 2)]; // the original and the first retransmission
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 400 * M);
        sim.run_to_completion(10 * SEC).unwrap();
        let st = sim.tx.stats().clone();
        assert_eq!((st.rto_count, st.fast_recoveries, st.retransmits, st.lost_retransmits), (0, 1, 2, 1), "{st:?}");
        let sends = sim.sends_of(40 * M);
        assert_eq!(sends.len(), 3);
        // new data sent after the first retransmission is SACKed one RTT later
        let gap = sends[2] - sends[1];
        assert!((20 * MS..23 * MS).contains(&gap), "{gap}");
        assert_eq!(sim.reno.lock().unwrap().congestion_events.len(), 1);
        assert_eq!(sim.rx.bytes_received(), 400 * M);
    }

    #[test]
    fn mild_reordering_causes_no_retransmission() {
        // segment 60 overtaken by two segments (2 x 120 us at 100 Mbit/s): DupThresh 3 not reached
        for sack in [true, false] {
            let cfg = TcpConfig { sack, ..TcpConfig::default() };
            let mut net = NetCfg::new(100_000_000, 20 * MS, 1000);
            net.delays = vec![(60 * M, 250 * US)];
            let mut sim = Sim::new(&cfg, net);
            sim.write_at(0, 300 * M);
            sim.run_to_completion(10 * SEC).unwrap();
            let st = sim.tx.stats().clone();
            assert_eq!((st.retransmits, st.fast_recoveries), (0, 0), "sack {sack}: {st:?}");
            assert!(st.dupacks >= 1, "the reordering was seen");
            assert_eq!(sim.rx.bytes_received(), 300 * M);
        }
    }

    #[test]
    fn reordering_beyond_dupthresh_is_a_spurious_fast_retransmit() {
        // overtaken by ~8 segments: RFC 6675 declares it lost (no RACK reordering window)
        let cfg = TcpConfig::default();
        let mut net = NetCfg::new(100_000_000, 20 * MS, 1000);
        net.delays = vec![(60 * M, MS)];
        let mut sim = Sim::new(&cfg, net);
        sim.write_at(0, 300 * M);
        sim.run_to_completion(10 * SEC).unwrap();
        let st = sim.tx.stats().clone();
        assert_eq!((st.retransmits, st.fast_recoveries, st.rto_count), (1, 1, 0));
        assert_eq!(sim.rx.stats().duplicates, 1, "the retransmission arrives as a duplicate");
    }
}
