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
