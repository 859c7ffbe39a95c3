//! Data planes driven by a plain loop over a fake multi-connection transport (no engine, no
//! packets): each stream of each connection is a pipe of fixed rate and latency that delivers
//! writes in 1448-byte pieces.

use super::*;
use crate::abr::{Abr, AbrObs, Decision};
use crate::player::testkit::{cbr_video, Fixed, LADDER};
use crate::player::{Player, PlayerConfig};
use crate::session::{Dir, HttpCfg, VideoSession};
use crate::time::{tx_time, MS, NEVER, SEC};
use std::collections::VecDeque;

#[derive(Default, Clone)]
struct Pipe {
    inflight: VecDeque<(Ns, u64)>,
    written: u64,
    delivered: u64,
    free_at: Ns,
}

struct Fake {
    rate: u64,
    latency: Ns,
    pipes: Vec<[Pipe; 2]>,
    resets: u32,
    /// Bytes delivered per connection slot over all its connections, per direction.
    total: Vec<[u64; 2]>,
}

fn ix(d: Dir) -> usize {
    (d == Dir::Response) as usize
}

impl Fake {
    fn new(rate: u64, conns: usize) -> Fake {
        Fake { rate, latency: 10 * MS, pipes: vec![Default::default(); conns], resets: 0, total: vec![[0; 2]; conns] }
    }
    fn next(&self) -> Option<(Ns, usize, Dir)> {
        let mut best: Option<(Ns, usize, Dir)> = None;
        for (k, p) in self.pipes.iter().enumerate() {
            for d in [Dir::Request, Dir::Response] {
                if let Some(&(t, _)) = p[ix(d)].inflight.front() {
                    if best.is_none_or(|b| t < b.0) {
                        best = Some((t, k, d));
                    }
                }
            }
        }
        best
    }
}

impl Transport for Fake {
    fn write(&mut self, now: Ns, conn: ConnId, dir: Dir, bytes: u64) {
        let p = &mut self.pipes[conn.0 as usize][ix(dir)];
        let mut left = bytes;
        while left > 0 {
            let b = left.min(1448);
            left -= b;
            p.written += b;
            let start = p.free_at.max(now);
            p.free_at = start + tx_time(b, self.rate);
            p.inflight.push_back((p.free_at + self.latency, p.written));
        }
    }
    fn delivered(&self, conn: ConnId, dir: Dir) -> u64 {
        self.pipes[conn.0 as usize][ix(dir)].delivered
    }
    fn reset(&mut self, _now: Ns, conn: ConnId) {
        self.pipes[conn.0 as usize] = Default::default();
        self.resets += 1;
    }
}

fn session(abr: Box<dyn Abr>, plane: &str, params: serde_json::Value, pcfg: PlayerConfig) -> VideoSession {
    let video = cbr_video(30, 2 * SEC, &LADDER);
    let cfg = DataPlaneCfg { kind: plane.into(), params };
    let plane = build(&cfg, &video).unwrap();
    let player = Player::new(pcfg, video, abr, 0);
    VideoSession::with_plane("v".into(), "test".into(), player, HttpCfg::default(), plane, 20 * MS)
}

fn run(s: &mut VideoSession, rate: u64) -> Fake {
    run_with(s, rate, false).0
}

/// [`run`]; with `quiet`, response deliveries go through `on_delivered_quiet` first. Also returns
/// how many deliveries the fast path took.
fn run_with(s: &mut VideoSession, rate: u64, quiet: bool) -> (Fake, u64) {
    let mut t = Fake::new(rate, s.connection_slots() as usize);
    let (mut now, mut fast) = (0, 0);
    s.on_timer(now, &mut t);
    for _ in 0..2_000_000 {
        let timer = s.poll_at();
        match t.next() {
            Some((at, k, d)) if at <= timer => {
                now = at;
                let p = &mut t.pipes[k][ix(d)];
                let (_, upto) = p.inflight.pop_front().unwrap();
                t.total[k][ix(d)] += upto - p.delivered;
                p.delivered = upto;
                if quiet && d == Dir::Response && s.on_delivered_quiet(now, ConnId(k as u32), upto) {
                    fast += 1;
                    continue;
                }
                s.on_delivered(now, ConnId(k as u32), d, &mut t);
            }
            _ if timer != NEVER => {
                assert!(timer >= now, "timer {timer} in the past of {now}");
                now = timer;
                s.on_timer(now, &mut t);
            }
            _ => break,
        }
        if s.player.is_done() {
            break;
        }
    }
    assert!(s.player.is_done(), "phase {:?} at {now}", s.player.phase());
    s.check_invariants().unwrap();
    (t, fast)
}

fn no_params() -> serde_json::Value {
    serde_json::Value::Null
}

/// Bytes per connection slot: every request and every response (headers + body) of the plane
/// log that was not cancelled crossed its connection exactly once.
fn check_conservation(s: &VideoSession, t: &Fake) {
    let http = HttpCfg::default();
    if t.resets > 0 {
        return;
    }
    for k in 0..t.total.len() {
        let reqs: Vec<&RequestLog> = s.plane_log().requests.iter().filter(|r| r.conn == k as u32).collect();
        let req_bytes = reqs.len() as u64 * http.request_bytes;
        let resp: u64 = reqs.iter().map(|r| http.response_header_bytes + r.received).sum();
        assert_eq!(t.total[k][0], req_bytes, "request bytes on connection {k}");
        assert_eq!(t.total[k][1], resp, "response bytes on connection {k}");
    }
}

#[test]
fn sequential_is_one_at_a_time() {
    let mut s = session(Box::new(Fixed { rung: 3, delay: 0 }), "sequential", no_params(), PlayerConfig::default());
    let t = run(&mut s, 20_000_000);
    assert_eq!(s.http_stats().max_pipeline, 1);
    assert_eq!(s.plane_log().requests.len(), 30);
    check_conservation(&s, &t);
}

#[test]
fn pipelining_keeps_depth_requests_outstanding() {
    let mut s = session(
        Box::new(Fixed { rung: 3, delay: 0 }),
        "pipelined",
        serde_json::json!({"depth": 3}),
        PlayerConfig::default(),
    );
    let t = run(&mut s, 20_000_000);
    assert_eq!(s.http_stats().max_pipeline, 3);
    // Segments complete in order and each was requested before the previous one completed.
    let log = s.player.log();
    assert_eq!(log.len(), 30);
    for w in log.windows(2) {
        assert!(w[1].t_last_byte >= w[0].t_last_byte);
    }
    // Until the buffer is full, every request goes out before the previous response has ended.
    for w in log[..10].windows(2) {
        assert!(w[1].t_request < w[0].t_last_byte, "{} >= {}", w[1].t_request, w[0].t_last_byte);
    }
    check_conservation(&s, &t);
}

#[test]
fn pipelining_respects_the_buffer_cap_counting_media_in_flight() {
    let pcfg = PlayerConfig { buffer_max: 10 * SEC, abr_buffer_max: false, ..PlayerConfig::default() };
    let mut s = session(Box::new(Fixed { rung: 0, delay: 0 }), "pipelined", serde_json::json!({"depth": 4}), pcfg);
    run(&mut s, 50_000_000);
    // Never more than buffer_max + one segment (no train).
    assert!(s.player.summary().max_buffer_seen <= 12 * SEC, "{}", s.player.summary().max_buffer_seen);
}

#[test]
fn pipelining_respects_the_buffer_cap_during_startup_and_stalls() {
    // A 4 s cap, 2 s segments, depth 4. The cap applied only while playing: the four requests
    // of the startup (8 s of media) overfilled the buffer to 6+ s at a fast rate, and the
    // requests issued during a stall did the same at a slow one (a fuzz found both: the run
    // stopped on the player's invariant). Now a request waits while another is in flight and
    // the buffer, the media in flight and it exceed the cap.
    for (rung, rate) in [(0, 50_000_000), (3, 1_500_000), (3, 600_000)] {
        let pcfg = PlayerConfig { buffer_max: 4 * SEC, abr_buffer_max: false, ..PlayerConfig::default() };
        let mut s =
            session(Box::new(Fixed { rung, delay: 0 }), "pipelined", serde_json::json!({"depth": 4}), pcfg.clone());
        run(&mut s, rate);
        let m = s.player.summary().max_buffer_seen;
        assert!(m <= 6 * SEC, "rung {rung} at {rate} bit/s: {m}");
        for plane in ["sprint", "sprint-x"] {
            let params = serde_json::json!({"train": false});
            let params = if plane == "sprint" { params } else { serde_json::Value::Null };
            let mut s = session(Box::new(Fixed { rung, delay: 0 }), plane, params, pcfg.clone());
            run(&mut s, rate); // the player's invariants hold (checked in run)
        }
    }
}

#[test]
fn sprint_enforces_trains_past_the_buffer_cap_and_probes_rtt() {
    let pcfg = PlayerConfig { buffer_max: 10 * SEC, abr_buffer_max: false, ..PlayerConfig::default() };
    let mut s = session(Box::new(Fixed { rung: 1, delay: 0 }), "sprint", serde_json::json!({"eps": 0.1}), pcfg);
    run(&mut s, 5_000_000);
    let log = s.plane_log();
    assert!(log.requests.iter().any(|r| r.kind == "probe" && r.conn == 1 && r.t_last_byte.is_some()));
    assert!(log.requests.iter().all(|r| (r.kind == "probe") == (r.conn == 1)));
    // Trains were started on resumes after pauses, with a size from Program 1 once estimated.
    assert!(log.trains.len() >= 2, "{:?}", log.trains);
    assert!(log.trains.iter().any(|t| t.1 > 0));
    // The buffer overfilled (a train ignores the cap) within the allowed bound (checked by the
    // player's invariants in run()).
    assert!(s.player.summary().max_buffer_seen > 12 * SEC);

    let pcfg = PlayerConfig { buffer_max: 10 * SEC, abr_buffer_max: false, ..PlayerConfig::default() };
    let mut s = session(Box::new(Fixed { rung: 1, delay: 0 }), "sprint", serde_json::json!({"train": false}), pcfg);
    run(&mut s, 5_000_000);
    assert!(s.player.summary().max_buffer_seen <= 12 * SEC);
}

/// Switches rung every `every` segments.
struct Flip {
    every: usize,
}
impl Abr for Flip {
    fn name(&self) -> &'static str {
        "flip"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let rung = if (obs.segment / self.every).is_multiple_of(2) { 2 } else { 3 };
        Decision { rung, delay: 0, reason: String::new() }
    }
}

#[test]
fn sprint_x_cancels_its_range_on_a_switch_and_wastes_what_arrived() {
    // A small eps makes Program 1's chunk several segments long (about 3.5 MB here);
    // min_samples 1 so that ranges grow early.
    let params = serde_json::json!({"eps": 0.05, "min_samples": 1});
    let mut s = session(Box::new(Flip { every: 4 }), "sprint-x", params, PlayerConfig::default());
    let t = run(&mut s, 10_000_000);
    let log = s.plane_log();
    let ranges: Vec<&RequestLog> = log.requests.iter().filter(|r| r.kind == "range").collect();
    assert!(ranges.iter().any(|r| r.last_segment > r.segment), "no range spanned several segments");
    assert!(!log.switch_cancels.is_empty());
    assert!(t.resets as usize >= log.switch_cancels.len());
    // Every segment was played at the rung the ABR chose.
    let done: Vec<_> = s.player.log().iter().filter(|l| !l.abandoned).collect();
    assert_eq!(done.len(), 30);
    for l in &done {
        assert_eq!(l.rung, if (l.segment / 4).is_multiple_of(2) { 2 } else { 3 });
    }
    // Waste: what a cancelled range received beyond its switch point (the first of its segments
    // played at another rung); the segments before it were played, so they are not waste.
    let rung_of = |seg: usize| done.iter().find(|l| l.segment == seg).unwrap().rung;
    let (mut beyond, mut used, mut n) = (0, 0, 0);
    for r in log.requests.iter().filter(|r| r.kind == "range" && r.cancelled) {
        let cut = (r.segment..=r.last_segment).find(|&k| rung_of(k) != r.rung).unwrap_or(r.last_segment + 1);
        let played: u64 = (r.segment..cut).map(|k| s.player.video().size(k, r.rung)).sum();
        assert!(r.received >= played, "{r:?}: {played} played");
        beyond += r.received - played;
        used += played;
        n += 1;
    }
    let hdr = HttpCfg::default().response_header_bytes;
    let w = s.http_stats().wasted_bytes;
    assert!(beyond > 0 && used > 0, "beyond {beyond}, used {used}");
    assert!(w >= beyond && w <= beyond + n * hdr, "wasted {w}, beyond the switch points {beyond}, {n} ranges");
}

#[test]
fn sprint_x_samples_bandwidth_once_per_segment() {
    // Program 1's chunk (several segments here) is used once `min_samples` bandwidth samples
    // exist: one per completed segment, so the first range of several segments starts at segment
    // `min_samples` or later (a range's own sample on top of its segments' made it about k / 2).
    for k in 1..=6 {
        let params = serde_json::json!({"eps": 0.05, "min_samples": k});
        let mut s = session(Box::new(Fixed { rung: 2, delay: 0 }), "sprint-x", params, PlayerConfig::default());
        run(&mut s, 10_000_000);
        let log = s.plane_log();
        let first =
            log.requests.iter().find(|r| r.kind == "range" && r.last_segment > r.segment).expect("a long range");
        assert!(first.segment >= k as usize, "min_samples {k}: first long range at segment {}", first.segment);
        assert!(first.segment <= k as usize + 2, "min_samples {k}: first long range at segment {}", first.segment);
    }
}

#[test]
fn chunklets_with_one_connection_equal_sequential() {
    let mut a = session(Box::new(Fixed { rung: 4, delay: 0 }), "sequential", no_params(), PlayerConfig::default());
    let mut b = session(
        Box::new(Fixed { rung: 4, delay: 0 }),
        "chunklets",
        serde_json::json!({"n": 1}),
        PlayerConfig::default(),
    );
    run(&mut a, 8_000_000);
    run(&mut b, 8_000_000);
    assert_eq!(a.player.log(), b.player.log());
    assert_eq!(a.player.summary(), b.player.summary());
}

#[test]
fn chunklets_split_each_segment_over_n_connections() {
    let mut s = session(
        Box::new(Fixed { rung: 4, delay: 0 }),
        "chunklets",
        serde_json::json!({"n": 4}),
        PlayerConfig::default(),
    );
    let t = run(&mut s, 8_000_000);
    let log = s.plane_log();
    assert_eq!(log.requests.len(), 30 * 4);
    for seg in 0..30 {
        let parts: Vec<&RequestLog> = log.requests.iter().filter(|r| r.segment == seg).collect();
        assert_eq!(parts.len(), 4);
        // The ranges tile the segment exactly, in byte order, one per connection.
        let size = s.player.video().size(seg, 4);
        assert_eq!(parts.iter().map(|r| r.body).sum::<u64>(), size);
        let (first, _) = s.player.video().byte_range(seg, 4).unwrap();
        let mut off = first;
        for (k, r) in parts.iter().enumerate() {
            assert_eq!(r.conn, k as u32);
            assert_eq!(r.offset, Some(off));
            off += r.body;
        }
    }
    check_conservation(&s, &t);
    // Four pipes in parallel: each segment arrives about four times faster than on one.
    let mut one = session(Box::new(Fixed { rung: 4, delay: 0 }), "sequential", no_params(), PlayerConfig::default());
    run(&mut one, 8_000_000);
    let dl = |s: &VideoSession| s.player.log()[5].t_last_byte - s.player.log()[5].t_request;
    assert!(dl(&s) * 3 < dl(&one), "{} vs {}", dl(&s), dl(&one));
}

#[test]
fn bad_parameters_name_the_key() {
    let v = cbr_video(3, 2 * SEC, &LADDER);
    let e = |kind: &str, p: serde_json::Value| build(&DataPlaneCfg { kind: kind.into(), params: p }, &v).err().unwrap();
    assert_eq!(e("chunklets", serde_json::json!({"n": 0})).param, "n");
    assert_eq!(e("chunklets", serde_json::json!({"n": 65})).param, "n");
    assert_eq!(e("sprint", serde_json::json!({"eps": 1.0})).param, "eps");
    assert_eq!(e("sprint-x", serde_json::json!({"eps": 0.0})).param, "eps");
    assert_eq!(e("pipelined", serde_json::json!({"depth": 0})).param, "depth");
    assert_eq!(e("bogus", no_params()).param, "kind");
    assert_eq!(e("sprint", serde_json::json!({"epsilon": 0.1})).param, "epsilon");
    let mut bare = (*v).clone();
    bare.byte_offsets = None;
    let err = build(&DataPlaneCfg { kind: "chunklets".into(), params: no_params() }, &bare).err().unwrap();
    assert_eq!(err.param, "kind");
    assert!(err.msg.contains("no byte layout"), "{}", err.msg);
    assert!(build(&DataPlaneCfg { kind: "sprint".into(), params: no_params() }, &bare).is_ok());
}

/// A fixed-rung ABR that records the per-request samples it is handed.
struct Samples {
    rung: usize,
    got: std::sync::Arc<std::sync::Mutex<Vec<crate::abr::RequestSample>>>,
}
impl Abr for Samples {
    fn name(&self) -> &'static str {
        "samples"
    }
    fn choose(&mut self, _obs: &AbrObs) -> Decision {
        Decision { rung: self.rung, delay: 0, reason: String::new() }
    }
    fn on_request_sample(&mut self, s: &crate::abr::RequestSample) {
        self.got.lock().unwrap().push(*s);
    }
}

#[test]
fn the_abr_sees_one_sample_per_request() {
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let abr = Box::new(Samples { rung: 4, got: got.clone() });
    let mut s = session(abr, "chunklets", serde_json::json!({"n": 4}), PlayerConfig::default());
    run(&mut s, 8_000_000);
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 30 * 4);
    for seg in 0..30 {
        let parts: Vec<_> = got.iter().filter(|x| x.segment == seg).collect();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts.iter().map(|x| x.bytes).sum::<u64>(), s.player.video().size(seg, 4));
        assert!(parts.iter().all(|x| x.t_request <= x.t_first_byte && x.t_first_byte <= x.t_last_byte));
    }
    // One download record per segment all the same.
    assert_eq!(s.player.history().len(), 30);
}

/// Rung 5 (rung 0 after an abandonment), abandoning a download that has less than 60% of its
/// bytes after 1.5 s; records every progress report it sees (time, bytes).
struct Watch {
    seen: Seen,
    low: bool,
}
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(Ns, u64)>>>;

impl Abr for Watch {
    fn name(&self) -> &'static str {
        "test-watch"
    }
    fn choose(&mut self, _obs: &AbrObs) -> Decision {
        let rung = if std::mem::take(&mut self.low) { 0 } else { 5 };
        Decision { rung, delay: 0, reason: String::new() }
    }
    fn on_progress(&mut self, _obs: &AbrObs, p: &crate::abr::Progress) -> Option<usize> {
        self.seen.lock().unwrap().push((p.now, p.bytes_received));
        if p.rung > 0 && p.now >= p.t_request + 1500 * MS && p.bytes_received * 10 < p.bytes_total * 6 {
            self.low = true;
            return Some(0);
        }
        None
    }
}

/// Play with the data plane `kind` at `rate` shared by its connections, with or without the
/// quiet-delivery fast path: the session, the deliveries the fast path took, the progress
/// reports the ABR saw.
fn run_quiet(kind: &str, params: serde_json::Value, rate: u64, quiet: bool) -> (VideoSession, u64, Seen) {
    let seen = Seen::default();
    let abr = Box::new(Watch { seen: seen.clone(), low: false });
    let mut s = session(abr, kind, params, PlayerConfig::default());
    let n = s.connection_slots() as u64;
    let (_, fast) = run_with(&mut s, rate / n, quiet);
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
            let (full, none, seen_full) = run_quiet(kind, params.clone(), rate, false);
            let (fast, taken, seen_fast) = run_quiet(kind, params.clone(), rate, true);
            assert_eq!(none, 0);
            // the same progress reports to the ABR, and (at the low rate) abandonments
            assert_eq!(*seen_full.lock().unwrap(), *seen_fast.lock().unwrap(), "{kind} at {rate}");
            let abandoned = full.player.log().iter().filter(|l| l.abandoned).count();
            assert_eq!(abandoned > 0, rate < 10_000_000 && params.get("proxy").is_none(), "{kind} at {rate}");
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
    let (_, taken, _) = run_quiet("sprint", serde_json::json!({}), 10_000_000, true);
    assert_eq!(taken, 0);
}
