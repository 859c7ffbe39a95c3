//! The session driven by a plain loop over a fake transport (no engine, no packets): each stream
//! is a pipe of fixed rate and latency that delivers every write whole.

use super::*;
use crate::player::testkit::{cbr_video, Fixed, LADDER};
use crate::player::PlayerConfig;
use crate::time::{tx_time, MS, NEVER, SEC};

#[derive(Default)]
struct Pipe {
    /// (delivery time, cumulative bytes delivered then)
    inflight: std::collections::VecDeque<(Ns, u64)>,
    written: u64,
    delivered: u64,
    free_at: Ns,
}

struct Fake {
    rate: u64,
    latency: Ns,
    pipes: [Pipe; 2],
    resets: u32,
}

impl Fake {
    fn idx(dir: Dir) -> usize {
        (dir == Dir::Response) as usize
    }
    fn next_delivery(&self) -> Option<(Ns, Dir)> {
        [Dir::Request, Dir::Response]
            .into_iter()
            .filter_map(|d| self.pipes[Fake::idx(d)].inflight.front().map(|x| (x.0, d)))
            .min_by_key(|x| x.0)
    }
}

impl Transport for Fake {
    fn write(&mut self, now: Ns, _conn: ConnId, dir: Dir, bytes: u64) {
        let p = &mut self.pipes[Fake::idx(dir)];
        p.written += bytes;
        let start = p.free_at.max(now);
        p.free_at = start + tx_time(bytes, self.rate);
        p.inflight.push_back((p.free_at + self.latency, p.written));
    }
    fn delivered(&self, _conn: ConnId, dir: Dir) -> u64 {
        self.pipes[Fake::idx(dir)].delivered
    }
    fn reset(&mut self, _now: Ns, _conn: ConnId) {
        self.pipes = Default::default();
        self.resets += 1;
    }
}

fn run(abr_rung: usize, rate: u64, think: Ns) -> (VideoSession, Fake) {
    let video = cbr_video(20, 2 * SEC, &LADDER);
    let player = Player::new(PlayerConfig::default(), video, Box::new(Fixed { rung: abr_rung, delay: 0 }), 0);
    let http = HttpCfg { think, ..HttpCfg::default() };
    let mut s = VideoSession::new("v".into(), "test-fixed".into(), player, http, 20 * MS);
    let mut t = Fake { rate, latency: 10 * MS, pipes: Default::default(), resets: 0 };
    let mut now = 0;
    s.on_timer(now, &mut t);
    for _ in 0..100_000 {
        let d = t.next_delivery();
        let timer = s.poll_at();
        match d {
            Some((at, dir)) if at <= timer => {
                now = at;
                let p = &mut t.pipes[Fake::idx(dir)];
                let (_, upto) = p.inflight.pop_front().unwrap();
                p.delivered = upto;
                s.on_delivered(now, ConnId(0), dir, &mut t);
            }
            _ if timer != NEVER => {
                now = timer.max(now);
                s.on_timer(now, &mut t);
            }
            _ => break,
        }
        if s.player.is_done() {
            break;
        }
    }
    (s, t)
}

#[test]
fn plays_a_whole_video_over_a_fake_transport() {
    let (s, t) = run(2, 20_000_000, 0);
    assert!(s.player.is_done(), "phase {:?}", s.player.phase());
    s.check_invariants().unwrap();
    assert_eq!(s.player.log().len(), 20);
    assert_eq!(t.resets, 0);
    assert_eq!(s.connections(), 1);
    // Every request was 300 B and every response header + body arrived.
    let body: u64 = s.player.log().iter().map(|l| l.bytes).sum();
    assert_eq!(t.pipes[1].delivered, body + 20 * 300);
    assert_eq!(t.pipes[0].delivered, 20 * 300);
}

#[test]
fn think_time_delays_the_first_byte() {
    let (a, _) = run(0, 50_000_000, 0);
    let (b, _) = run(0, 50_000_000, 100 * MS);
    let fb = |s: &VideoSession| s.player.log()[0].t_first_byte;
    assert!(fb(&b) >= fb(&a) + 100 * MS, "{} vs {}", fb(&b), fb(&a));
}

/// Streams per connection that deliver each write in packets of at most 1448 bytes, at `rate`
/// per stream (each direction of each connection), after `latency`; a reset empties the
/// connection's streams.
struct Packets {
    rate: u64,
    latency: Ns,
    pipes: Vec<[Pipe; 2]>,
}

impl Packets {
    fn next_delivery(&self) -> Option<(Ns, usize, Dir)> {
        let mut best: Option<(Ns, usize, Dir)> = None;
        for (c, p) in self.pipes.iter().enumerate() {
            for dir in [Dir::Request, Dir::Response] {
                if let Some(&(at, _)) = p[Fake::idx(dir)].inflight.front() {
                    if best.is_none_or(|b| at < b.0) {
                        best = Some((at, c, dir));
                    }
                }
            }
        }
        best
    }
}

impl Transport for Packets {
    fn write(&mut self, now: Ns, conn: ConnId, dir: Dir, bytes: u64) {
        let (rate, latency) = (self.rate, self.latency);
        let p = &mut self.pipes[conn.0 as usize][Fake::idx(dir)];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(1448);
            left -= n;
            p.written += n;
            let start = p.free_at.max(now);
            p.free_at = start + tx_time(n, rate);
            p.inflight.push_back((p.free_at + latency, p.written));
        }
    }
    fn delivered(&self, conn: ConnId, dir: Dir) -> u64 {
        self.pipes[conn.0 as usize][Fake::idx(dir)].delivered
    }
    fn reset(&mut self, _now: Ns, conn: ConnId) {
        self.pipes[conn.0 as usize] = Default::default();
    }
}

/// Rung 5 (rung 0 after an abandonment), abandoning a download that has less than 60% of its
/// bytes after 1.5 s; records every progress report it sees (time, bytes).
struct Watch {
    seen: std::sync::Arc<std::sync::Mutex<Vec<(Ns, u64)>>>,
    low: bool,
}
impl crate::abr::Abr for Watch {
    fn name(&self) -> &'static str {
        "test-watch"
    }
    fn choose(&mut self, _obs: &crate::abr::AbrObs) -> crate::abr::Decision {
        let rung = if std::mem::take(&mut self.low) { 0 } else { 5 };
        crate::abr::Decision { rung, delay: 0, reason: String::new() }
    }
    fn on_progress(&mut self, _obs: &crate::abr::AbrObs, p: &crate::abr::Progress) -> Option<usize> {
        self.seen.lock().unwrap().push((p.now, p.bytes_received));
        if p.rung > 0 && p.now >= p.t_request + 1500 * MS && p.bytes_received * 10 < p.bytes_total * 6 {
            self.low = true;
            return Some(0);
        }
        None
    }
}

type Seen = std::sync::Arc<std::sync::Mutex<Vec<(Ns, u64)>>>;

/// Play a video over per-packet deliveries with the data plane `kind`; with `quiet`, response
/// deliveries go through `on_delivered_quiet` first. Returns the session, how many deliveries
/// the fast path took and the progress reports the ABR saw.
fn run_packets(kind: &str, params: serde_json::Value, rate: u64, quiet: bool) -> (VideoSession, u64, Seen) {
    let video = cbr_video(12, 2 * SEC, &LADDER);
    let seen = Seen::default();
    let abr = Box::new(Watch { seen: seen.clone(), low: false });
    let player = Player::new(PlayerConfig::default(), video.clone(), abr, 0);
    let cfg = DataPlaneCfg { kind: kind.into(), params };
    let plane = dataplane::build(&cfg, &video).unwrap();
    let mut s = VideoSession::with_plane("v".into(), "test-fixed".into(), player, HttpCfg::default(), plane, 20 * MS);
    let n = s.connection_slots() as usize;
    // `rate` shared by the connections
    let mut t =
        Packets { rate: rate / n as u64, latency: 10 * MS, pipes: (0..n).map(|_| Default::default()).collect() };
    let (mut now, mut fast) = (0, 0);
    s.on_timer(now, &mut t);
    for _ in 0..1_000_000 {
        let timer = s.poll_at();
        match t.next_delivery() {
            Some((at, c, dir)) if at <= timer => {
                now = at;
                let p = &mut t.pipes[c][Fake::idx(dir)];
                let (_, upto) = p.inflight.pop_front().unwrap();
                p.delivered = upto;
                if quiet && dir == Dir::Response && s.on_delivered_quiet(now, ConnId(c as u32), upto) {
                    fast += 1;
                    continue;
                }
                s.on_delivered(now, ConnId(c as u32), dir, &mut t);
            }
            _ if timer != NEVER => {
                now = timer.max(now);
                s.on_timer(now, &mut t);
            }
            _ => break,
        }
        if s.player.is_done() {
            break;
        }
    }
    (s, fast, seen)
}

#[test]
fn quiet_deliveries_leave_the_state_of_full_calls() {
    for (kind, params) in [
        ("sequential", serde_json::json!({})),
        ("chunklets", serde_json::json!({"n": 4})),
        ("chunklets", serde_json::json!({"n": 3, "proxy": true})),
    ] {
        for rate in [3_000_000, 40_000_000] {
            let (full, none, seen_full) = run_packets(kind, params.clone(), rate, false);
            let (fast, taken, seen_fast) = run_packets(kind, params.clone(), rate, true);
            assert_eq!(none, 0);
            // the same progress reports to the ABR, and (at the low rate) abandonments
            assert_eq!(*seen_full.lock().unwrap(), *seen_fast.lock().unwrap(), "{kind} at {rate}");
            let abandoned = full.player.log().iter().filter(|l| l.abandoned).count();
            assert_eq!(abandoned > 0, rate < 10_000_000 && params.get("proxy").is_none(), "{kind} at {rate}");
            assert!(full.player.is_done(), "{kind} at {rate}");
            fast.check_invariants().unwrap();
            // most response packets neither start nor end a response nor fall due for a
            // progress report: the fast path takes them
            let packets: u64 = full.player.log().iter().map(|l| l.bytes / 1448).sum();
            assert!(taken * 2 > packets, "{kind} at {rate}: {taken} of ~{packets}");
            assert_eq!(format!("{:?}", full.player.log()), format!("{:?}", fast.player.log()), "{kind} at {rate}");
            assert_eq!(format!("{:?}", full.player.summary()), format!("{:?}", fast.player.summary()));
            assert_eq!(full.plane_log().requests, fast.plane_log().requests, "{kind} at {rate}");
            assert_eq!(format!("{:?}", full.http_stats()), format!("{:?}", fast.http_stats()));
        }
    }
}

#[test]
fn planes_that_sample_every_delivery_never_take_the_quiet_path() {
    let (_, taken, _) = run_packets("sprint", serde_json::json!({}), 10_000_000, true);
    assert_eq!(taken, 0);
}
