//! The emulator proper: per direction one `qoelab_core::net::link::Link<IpPacket>` (the type the
//! simulator runs), driven from TUN reads and a timerfd.
//!
//! Time: the link's clock is CLOCK_MONOTONIC minus the start time, in ns. When the loop wakes
//! at `now`, every link event due at `t <= now` is run *at its own time* `t` (not at `now`), in
//! order, before the packets read at `now` arrive. A late wake-up therefore delays writes but
//! never shifts the link's schedule: the long-run rate does not depend on timer lateness.
//! Departures are written when due or later, never earlier; write time - due time is the
//! packet's lateness.

use crate::ip::{IpPacket, Reject};
use crate::opts::{self, Options};
use crate::sys;
use qoelab_core::aqm::{AqmBuildCtx, Queue};
use qoelab_core::ids::NodeId;
use qoelab_core::metrics::histogram::LogHistogram;
use qoelab_core::net::link::{Link, Service};
use qoelab_core::net::loss::{Loss, LossCfg};
use qoelab_core::rng::Rng;
use qoelab_core::time::Ns;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};

/// One direction: a link and what the driver measures about it.
pub struct Direction {
    pub name: &'static str,
    /// The queue as the user named it (mm-link's `droptail [packets=100]`, or the discipline).
    pub queue_label: String,
    pub link: Link<IpPacket>,
    /// Write time - due time of every departure (ns).
    pub lateness: LogHistogram,
    pub read_pkts: u64,
    pub non_ipv4: u64,
    pub malformed: u64,
    pub written_pkts: u64,
    pub written_bytes: u64,
    pub write_errors: u64,
    out: Vec<IpPacket>,
    /// Mahimahi-format event log (`--downlink-log`/`--uplink-log`).
    log: Option<MmLog>,
    /// TCP packets to or from these server ports, as they reach the queue or are dropped (the
    /// loss-phase classification of `qoelab run --real`).
    pub capture_ports: Vec<u16>,
    pub captured: Vec<Captured>,
}

/// A TCP packet of a captured connection at the bottleneck's ingress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Captured {
    pub time: Ns,
    /// The port of the side that is not the server (names the connection).
    pub client_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub payload: u32,
    /// Dropped (by the queue discipline or the loss model) rather than queued.
    pub dropped: bool,
}

/// (source port, destination port, seq, ack, payload bytes) of an IPv4 TCP packet.
pub fn tcp_fields(b: &[u8]) -> Option<(u16, u16, u32, u32, u32)> {
    if b.len() < 20 || b[9] != 6 {
        return None;
    }
    let ihl = (b[0] & 15) as usize * 4;
    let total = u16::from_be_bytes([b[2], b[3]]) as usize;
    let t = b.get(ihl..ihl + 20)?;
    let be32 = |x: &[u8]| u32::from_be_bytes([x[0], x[1], x[2], x[3]]);
    let doff = (t[12] >> 4) as usize * 4;
    let payload = total.saturating_sub(ihl + doff) as u32;
    Some((u16::from_be_bytes([t[0], t[1]]), u16::from_be_bytes([t[2], t[3]]), be32(&t[4..8]), be32(&t[8..12]), payload))
}

/// A log in mm-link's format (so that mm-throughput-graph and mm-delay-graph read it): header
/// lines starting with `#`, then `<ms> + <bytes>` (arrival at the queue), `<ms> # <bytes>`
/// (delivery opportunity), `<ms> - <bytes> <delay ms>` (departure from the queue after
/// serialization; delay = departure - arrival), times in ms since the start.
struct MmLog {
    w: std::io::BufWriter<File>,
    /// Link time up to which opportunities are written.
    opp_until: Ns,
    /// Fixed-rate links: capacity not yet written as an opportunity line (1/8000 bytes).
    carry: u64,
}

const MS_NS: Ns = 1_000_000;

impl MmLog {
    fn open(path: &str, name: &str, queue: &str) -> Result<MmLog, String> {
        let f = File::create(path).map_err(|e| format!("cannot write {path}: {e}"))?;
        let mut w = std::io::BufWriter::new(f);
        let unix_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        let args: Vec<String> = std::env::args().collect();
        writeln!(
            w,
            "# mahimahi mm-link ({name}) [qoelab link] > {path}\n# command line: {}\n# queue: {}\n# init timestamp: {unix_ms}\n# base timestamp: 0",
            args.join(" "),
            queue
        )
        .map_err(|e| format!("cannot write {path}: {e}"))?;
        Ok(MmLog { w, opp_until: 0, carry: 0 })
    }

    /// Opportunity lines for link time [opp_until, now).
    fn opportunities(&mut self, service: &Service, now: Ns) {
        match service {
            Service::Opportunities(o) => {
                let mut t = self.opp_until;
                while let Some(at) = o.next_at_or_after(t) {
                    if at >= now {
                        break;
                    }
                    for _ in 0..o.count_at(at) {
                        let _ = writeln!(self.w, "{} # {}", at / MS_NS, o.bytes_per_opp);
                    }
                    t = at + 1;
                }
                self.opp_until = now.max(self.opp_until);
            }
            Service::Fixed(rate) => {
                // One line per whole millisecond with that millisecond's capacity.
                while self.opp_until + MS_NS <= now {
                    // rate (bit/s) x 1 ms = rate/1000 bits = rate/8000 bytes; the remainder is
                    // carried (in units of 1/8000 byte).
                    let total = rate + self.carry;
                    self.carry = total % 8000;
                    let _ = writeln!(self.w, "{} # {}", self.opp_until / MS_NS, total / 8000);
                    self.opp_until += MS_NS;
                }
            }
            Service::Schedule(_) => self.opp_until = now,
        }
    }
}

/// Build one direction's link from the options (`uplink` picks the uplink trace/rate).
pub fn build_direction(o: &Options, uplink: bool) -> Result<Direction, String> {
    let name = if uplink { "uplink" } else { "downlink" };
    let trace = if uplink { o.uplink_trace.as_ref().or(o.trace.as_ref()) } else { o.trace.as_ref() };
    let rate = if uplink { o.uplink_rate_bps.unwrap_or(o.rate_bps) } else { o.rate_bps };
    let (service, rate_bps) = match (trace, uplink && o.uplink_rate_bps.is_some()) {
        (Some(path), false) => {
            let text = opts::read_trace(path)?;
            let opp = opts::parse_mahimahi(&text).map_err(|e| format!("trace {path}: {e}"))?;
            (Service::Opportunities(opp), 0)
        }
        _ => (Service::Fixed(rate), rate),
    };
    let q = o.queue(uplink);
    let params = opts::aqm_params(&q.aqm, &q.params)?;
    let ctx = AqmBuildCtx {
        limit_packets: q.buffer_pkts,
        limit_bytes: q.buffer_bytes,
        link_rate_bps: rate_bps,
        seed: Rng::for_component(o.seed, &format!("link/{name}/aqm")).next_u64(),
    };
    let which = match (uplink, &o.uplink_queue, &o.downlink_queue) {
        (true, Some(_), _) => "--uplink-queue",
        (false, _, Some(_)) => "--downlink-queue",
        _ => "--aqm",
    };
    let mut queue = Queue::build(&q.aqm, &params, &ctx).map_err(|e| format!("{which} {}: {e}", q.label))?;
    queue.record_sojourns();
    let loss = (o.loss > 0.0)
        .then(|| Loss::new(LossCfg::Iid { rate: o.loss }, Rng::for_component(o.seed, &format!("link/{name}/loss"))));
    let (from, to) = if uplink { (NodeId(1), NodeId(0)) } else { (NodeId(0), NodeId(1)) };
    let link = Link::new(name.to_string(), from, to, service, o.rtt / 2 + o.rtt % 2 * (!uplink as u64), queue, loss);
    let mut d = Direction::from_link(name, link);
    d.queue_label = q.label;
    Ok(d)
}

impl Direction {
    /// A direction around a link built elsewhere (`qoelab run --real` builds it from the
    /// scenario's link with `net::world::build_link`, as the simulator does).
    pub fn from_link(name: &'static str, link: Link<IpPacket>) -> Direction {
        Direction {
            name,
            queue_label: link.queue.kind.to_string(),
            link,
            lateness: LogHistogram::new(),
            read_pkts: 0,
            non_ipv4: 0,
            malformed: 0,
            written_pkts: 0,
            written_bytes: 0,
            write_errors: 0,
            out: Vec::new(),
            log: None,
            capture_ports: Vec::new(),
            captured: Vec::new(),
        }
    }
}

/// Open the direction's Mahimahi-format log if asked for (the link then records its events).
pub fn open_log(d: &mut Direction, o: &Options) -> Result<(), String> {
    let path = if d.name == "uplink" { &o.uplink_log } else { &o.downlink_log };
    if let Some(p) = path {
        d.log = Some(MmLog::open(p, d.name, &d.queue_label)?);
        d.link.record = true;
    }
    Ok(())
}

impl Direction {
    /// A packet read from the ingress TUN at `now`.
    pub fn ingress(&mut self, now: Ns, buf: Vec<u8>) {
        self.read_pkts += 1;
        match IpPacket::parse(buf) {
            Ok(mut p) => {
                p.arrived = now;
                self.link.arrive(now, p);
                self.drain_events(now);
            }
            Err(Reject::NotIpv4) => self.non_ipv4 += 1,
            Err(Reject::Malformed) => self.malformed += 1,
        }
    }

    /// Run every link event due at or before `now`, each at its own time, writing departures to
    /// `egress`. `t0` is the monotonic time of link time 0.
    pub fn run_due(&mut self, now: Ns, t0: u64, egress: &mut File) {
        // Bound the work of one call (a link never schedules an event at the time it runs, but a
        // bug there must not hang the emulator).
        for _ in 0..1_000_000 {
            let t = self.link.poll_at();
            if t > now {
                return;
            }
            self.link.advance(t, &mut self.out);
            self.drain_events(t);
            for p in self.out.drain(..) {
                let wrote = sys::monotonic_ns();
                self.lateness.record(wrote.saturating_sub(t0 + t));
                // A TUN write takes the whole packet or fails.
                match egress.write(&p.buf) {
                    Ok(n) if n == p.buf.len() => {
                        self.written_pkts += 1;
                        self.written_bytes += p.buf.len() as u64;
                    }
                    _ => self.write_errors += 1,
                }
            }
        }
    }

    /// Write the link's recorded events to the log (if any) and forget them.
    fn drain_events(&mut self, now: Ns) {
        use qoelab_core::net::link::LinkEventKind;
        if !self.capture_ports.is_empty() {
            for e in &self.link.events {
                let dropped = match e.kind {
                    LinkEventKind::Enqueue => false,
                    LinkEventKind::Drop(_) | LinkEventKind::Lost => true,
                    _ => continue,
                };
                let Some((sp, dp, seq, ack, payload)) = tcp_fields(&e.pkt.buf) else { continue };
                let client_port = if self.capture_ports.contains(&sp) {
                    dp
                } else if self.capture_ports.contains(&dp) {
                    sp
                } else {
                    continue;
                };
                self.captured.push(Captured { time: e.time, client_port, seq, ack, payload, dropped });
            }
            if self.log.is_none() {
                self.link.events.clear();
            }
        }
        let Some(log) = &mut self.log else { return };
        log.opportunities(&self.link.service, now);
        for e in self.link.events.drain(..) {
            let ms = e.time / MS_NS;
            let size = e.pkt.buf.len();
            let _ = match e.kind {
                LinkEventKind::Enqueue => writeln!(log.w, "{ms} + {size}"),
                LinkEventKind::Transmit => {
                    writeln!(log.w, "{ms} - {size} {}", e.time.saturating_sub(e.pkt.arrived) / MS_NS)
                }
                _ => Ok(()),
            };
        }
    }

    /// Flush the log.
    pub fn finish(&mut self, now: Ns) {
        self.drain_events(now);
        if let Some(log) = &mut self.log {
            let _ = log.w.flush();
        }
    }

    /// Statistics as a JSON object.
    pub fn json(&self, elapsed: Ns) -> String {
        let l = &self.link;
        let q = &l.queue.stats;
        let dropped: u64 = q.dropped_pkts();
        let soj = l.queue.sojourn_hist.as_ref();
        let mean_soj = if q.dequeued_pkts > 0 { q.sojourn_sum as f64 / q.dequeued_pkts as f64 / 1e6 } else { 0.0 };
        let secs = elapsed as f64 / 1e9;
        format!(
            concat!(
                "{{\"rate_bps\": {}, \"delay_ms\": {}, \"aqm\": \"{}\", \"queue\": \"{}\", \"read_pkts\": {}, \"non_ipv4_pkts\": {}, ",
                "\"malformed_pkts\": {}, \"lost_pkts\": {}, \"aqm_dropped_pkts\": {}, \"ce_marked_pkts\": {}, ",
                "\"delivered_pkts\": {}, \"written_pkts\": {}, \"written_bytes\": {}, \"write_errors\": {}, ",
                "\"throughput_bps\": {}, \"max_queue_pkts\": {}, \"sojourn_ms\": {}, \"mean_sojourn_ms\": {}, ",
                "\"lateness_us\": {}}}"
            ),
            num(l.nominal_rate_bps()),
            num(l.delay as f64 / 1e6),
            l.queue.kind,
            self.queue_label.replace('\\', "\\\\").replace('"', "\\\""),
            self.read_pkts,
            self.non_ipv4,
            self.malformed,
            l.stats.lost_pkts,
            dropped,
            q.marked_pkts,
            l.stats.delivered_pkts,
            self.written_pkts,
            self.written_bytes,
            self.write_errors,
            num(if secs > 0.0 { self.written_bytes as f64 * 8.0 / secs } else { 0.0 }),
            q.max_len_pkts,
            soj.map_or("null".into(), |h| hist_json(h, 1e-6)),
            num(mean_soj),
            hist_json(&self.lateness, 1e-3),
        )
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        let r = (v * 1000.0).round() / 1000.0;
        format!("{r}")
    } else {
        "null".into()
    }
}

/// {count, p50, p90, p99, max} of a histogram of ns values, scaled (1e-3: µs, 1e-6: ms).
pub fn hist_json(h: &LogHistogram, scale: f64) -> String {
    let q = |p: f64| h.quantile(p).map_or("null".into(), |v| num(v * scale));
    format!(
        "{{\"count\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"max\": {}}}",
        h.count(),
        q(50.0),
        q(90.0),
        q(99.0),
        h.max().map_or("null".into(), |v| num(v as f64 * scale))
    )
}

/// Read every packet waiting on `tun` (at most `max`) into the direction at `now`.
pub fn read_batch(tun: &mut File, dir: &mut Direction, now: Ns, buf: &mut [u8], max: usize) -> std::io::Result<()> {
    for _ in 0..max {
        match tun.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => dir.ingress(now, buf[..n].to_vec()),
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Earliest pending event of the two directions (link time), NEVER if idle.
pub fn next_deadline(a: &Direction, b: &Direction) -> Ns {
    a.link.poll_at().min(b.link.poll_at())
}

#[cfg(test)]
mod tests {
    use super::*;
    use qoelab_core::time::{MS, NEVER};

    fn opts(s: &str) -> Options {
        let a: Vec<String> = s.split_whitespace().map(String::from).collect();
        opts::parse(&a).unwrap()
    }

    fn pkt(len: usize, tos: u8) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[0] = 0x45;
        b[1] = tos;
        b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        b[9] = 17;
        b[12..16].copy_from_slice(&[10, 77, 0, 1]);
        b[16..20].copy_from_slice(&[10, 77, 1, 1]);
        let c = crate::ip::checksum(&b[..20]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b
    }

    /// Without I/O: the link built from the options delays by half the RTT plus serialization,
    /// serves at the configured rate, and keeps non-IPv4 packets out.
    #[test]
    fn direction_timing_without_io() {
        let mut d = build_direction(&opts("--rate 12Mbps --rtt 40ms"), false).unwrap();
        for _ in 0..10 {
            d.ingress(0, pkt(1500, 0));
        }
        d.ingress(0, vec![0x60; 40]);
        assert_eq!(d.non_ipv4, 1);
        let mut deps = Vec::new();
        while d.link.poll_at() != NEVER {
            let t = d.link.poll_at();
            d.link.advance(t, &mut d.out);
            deps.extend(d.out.drain(..).map(|_| t));
        }
        // 1500 B at 12 Mbit/s = 1 ms each; + 20 ms one-way.
        let want: Vec<Ns> = (1..=10).map(|i| 20 * MS + i * MS).collect();
        assert_eq!(deps, want);
    }

    /// An AQM's CE marks reach the real header (checksum still valid).
    #[test]
    fn ce_marks_reach_the_header() {
        let o = opts("--rate 1Mbps --rtt 2ms --aqm codel --aqm-param ecn=true --aqm-param target=1ms --aqm-param interval=5ms --buffer 1000pkts");
        let mut d = build_direction(&o, false).unwrap();
        let mut marked = 0;
        let mut t = 0;
        for _ in 0..400 {
            d.ingress(t, pkt(1000, 0x02)); // ECT(0)
            t += 4 * MS; // 2x the link rate
            while d.link.poll_at() <= t {
                let at = d.link.poll_at();
                d.link.advance(at, &mut d.out);
                for p in d.out.drain(..) {
                    assert_eq!(crate::ip::checksum(&p.buf[..20]), 0);
                    marked += (p.buf[1] & 3 == 3) as u32;
                }
            }
        }
        assert!(marked > 0, "CoDel marks ECT packets");
        assert_eq!(d.link.queue.stats.dropped_pkts(), 0);
    }
}
