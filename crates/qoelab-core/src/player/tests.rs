//! Player unit tests, driven by hand (no network model): every number is hand-computed.

use super::testkit::*;
use super::*;
use crate::time::{MS, SEC};

fn fixed(rung: usize) -> Box<dyn Abr> {
    Box::new(Fixed { rung, delay: 0 })
}

/// Fetch one segment: request at t_req, first byte at t_first, last at t_last.
fn fetch(p: &mut Player, t_req: Ns, t_first: Ns, t_last: Ns) -> Request {
    let r = p.poll(t_req).expect("a request is due");
    p.on_first_byte(t_first);
    assert!(p.on_bytes(t_first + (t_last - t_first) / 2, r.bytes / 2).is_none());
    p.on_complete(t_last);
    p.check_invariants().unwrap();
    r
}

#[test]
fn hand_driven_startup_stall_and_end() {
    let v = cbr_video(3, 2 * SEC, &[1_000_000, 2_000_000]);
    let mut p = Player::new(PlayerConfig::default(), v, fixed(1), SEC);
    assert_eq!(p.poll_at(), SEC);
    let r = fetch(&mut p, SEC, 1_100 * MS, 2 * SEC);
    assert_eq!(
        r,
        Request { id: 0, segment: 0, rung: 1, bytes: 500_000, range: Some(ByteRange { first: 800, last: 500_799 }) }
    );
    assert_eq!(p.phase(), Phase::Playing);
    assert_eq!(p.summary().startup, SEC);
    // segment 1 takes 3 s: the 2 s buffer runs out at 4 s, stall 4..5 s
    assert!(p.poll(2 * SEC).is_some());
    assert_eq!(p.poll_at(), 4 * SEC); // the next playback event: the buffer runs dry
    p.advance(4 * SEC);
    assert_eq!((p.phase(), p.poll_at()), (Phase::Playing, NEVER)); // empty, not yet a stall
    p.on_first_byte(4_100 * MS);
    assert_eq!(p.phase(), Phase::Stalled);
    p.on_complete(5 * SEC);
    p.check_invariants().unwrap();
    let s = p.summary();
    assert_eq!((s.stalled, s.stall_count, s.played), (SEC, 1, 2 * SEC));
    assert_eq!(p.log()[1].stall, SEC);
    assert_eq!(p.log()[1].buffer_before, 2 * SEC);
    assert_eq!(p.log()[1].buffer_after, 2 * SEC);
    // segment 2 arrives at 5.5 s with 1.5 s left: buffer 3.5 s, playback ends at 9 s
    fetch(&mut p, 5 * SEC, 5_100 * MS, 5_500 * MS);
    assert_eq!(p.buffer(), 3_500 * MS);
    assert_eq!(p.poll(5_500 * MS), None);
    assert_eq!(p.poll_at(), 9 * SEC);
    p.advance(20 * SEC);
    assert!(p.is_done());
    let s = p.summary();
    assert_eq!(s.end, Some(9 * SEC));
    assert_eq!((s.startup, s.played, s.stalled), (SEC, 6 * SEC, SEC));
    assert_eq!(s.bytes, 1_500_000);
    p.check_invariants().unwrap();
    let phases = [
        (SEC, Phase::Startup),
        (2 * SEC, Phase::Playing),
        (4 * SEC, Phase::Stalled),
        (5 * SEC, Phase::Playing),
        (9 * SEC, Phase::Ended),
    ];
    assert_eq!(p.phase_log(), &phases[..]);
    let l = &p.log()[0];
    assert_eq!((l.t_request, l.t_first_byte, l.t_last_byte), (SEC, 1_100 * MS, 2 * SEC));
    // 500 kB = 4 Mbit in 1 s (request) and in 0.9 s (first byte)
    assert!((l.tput_request_bps - 4e6).abs() < 1.0);
    assert!((l.tput_first_byte_bps - 4e6 / 0.9).abs() < 1.0);
    assert_eq!(l.abr_reason, "fixed 1");
}

#[test]
fn buffer_full_pauses_downloads_on_off() {
    let v = cbr_video(10, 2 * SEC, &[1_000_000]);
    let cfg = PlayerConfig { buffer_max: 5 * SEC, ..PlayerConfig::default() };
    let mut p = Player::new(cfg, v, fixed(0), 0);
    fetch(&mut p, 0, 10 * MS, 100 * MS); // buffer 2 s, playing
    fetch(&mut p, 100 * MS, 110 * MS, 200 * MS); // buffer 1.9 + 2 = 3.9 s
    assert_eq!(p.buffer(), 3_900 * MS);
    // 3.9 + 2 > 5: pause until the buffer is 3 s, i.e. 0.9 s later
    assert_eq!(p.poll(200 * MS), None);
    assert_eq!(p.poll_at(), 1_100 * MS);
    assert_eq!(p.poll(1_099 * MS), None);
    let r = p.poll(1_100 * MS).unwrap();
    assert_eq!(r.segment, 2);
    p.on_complete(1_200 * MS);
    assert_eq!(p.buffer(), 4_900 * MS);
    assert!(p.summary().max_buffer_seen <= 5 * SEC);
    p.check_invariants().unwrap();
}

#[test]
fn abr_delay_is_waited_and_logged() {
    let v = cbr_video(2, SEC, &[1_000_000]);
    let mut p = Player::new(PlayerConfig::default(), v, Box::new(Fixed { rung: 0, delay: 300 * MS }), 0);
    assert_eq!(p.poll(0), None);
    assert_eq!(p.poll_at(), 300 * MS);
    let r = p.poll(300 * MS).unwrap();
    assert_eq!(r.segment, 0);
    p.on_complete(400 * MS);
    assert_eq!(p.log()[0].abr_delay, 300 * MS);
    assert_eq!(p.log()[0].t_request, 300 * MS);
    assert_eq!(p.summary().startup, 400 * MS);
}

#[test]
fn startup_by_buffer_and_rebuffer_resume() {
    let v = cbr_video(6, 2 * SEC, &[1_000_000]);
    let cfg = PlayerConfig {
        startup: StartupPolicy::Buffer(4 * SEC),
        rebuffer_resume: Some(4 * SEC),
        ..PlayerConfig::default()
    };
    let mut p = Player::new(cfg, v, fixed(0), 0);
    fetch(&mut p, 0, 0, SEC);
    assert_eq!(p.phase(), Phase::Startup);
    fetch(&mut p, SEC, SEC, 2 * SEC);
    assert_eq!(p.phase(), Phase::Playing);
    assert_eq!(p.summary().startup, 2 * SEC);
    // slow segment: buffer 4 s runs out at 6 s; one segment (2 s) is not enough to resume
    fetch(&mut p, 2 * SEC, 2 * SEC, 7 * SEC);
    assert_eq!(p.phase(), Phase::Stalled);
    fetch(&mut p, 7 * SEC, 7 * SEC, 8 * SEC);
    assert_eq!(p.phase(), Phase::Playing);
    let s = p.summary();
    assert_eq!((s.stalled, s.stall_count), (2 * SEC, 1));
    // 1 s of the stall is attributed to segment 2, 1 s to segment 3
    assert_eq!(p.log()[2].stall, SEC);
    assert_eq!(p.log()[3].stall, SEC);
}

#[test]
fn abandonment_refetches_lower_rung() {
    let v = cbr_video(2, 2 * SEC, &[1_000_000, 4_000_000]);
    let mut p =
        Player::new(PlayerConfig::default(), v, Box::new(Abandoner { rung: 1, after: 500 * MS, abandons: 0 }), 0);
    let r = p.poll(0).unwrap();
    assert_eq!(r.rung, 1);
    p.on_first_byte(100 * MS);
    assert!(p.on_bytes(400 * MS, 100_000).is_none());
    let a = p.on_bytes(600 * MS, 200_000).expect("abandoned");
    assert_eq!(a, Abandon { id: 0, segment: 0, from_rung: 1, to_rung: 0, bytes_received: 200_000, keep: None });
    let r = p.poll(600 * MS).unwrap();
    assert_eq!((r.segment, r.rung, r.bytes), (0, 0, 250_000));
    p.on_first_byte(650 * MS);
    p.on_complete(800 * MS);
    let log = p.log();
    assert_eq!(log.len(), 2);
    assert!(log[0].abandoned && !log[1].abandoned);
    assert_eq!(log[0].bytes, 200_000);
    assert_eq!(p.history().len(), 2);
    assert_eq!(p.summary().bytes, 450_000);
    assert_eq!(p.summary().abandoned, 1);
    p.check_invariants().unwrap();
}

#[test]
fn invariant_violations_are_reported() {
    let v = cbr_video(2, 2 * SEC, &[1_000_000]);
    let mut p = Player::new(PlayerConfig::default(), v.clone(), fixed(0), 5 * SEC);
    p.advance(6 * SEC);
    p.advance(5 * SEC);
    assert!(p.check_invariants().unwrap_err().contains("backwards"));
    let bad = PlayerConfig { buffer_max: SEC, ..PlayerConfig::default() };
    assert!(Player::validate_config(&bad, &v).unwrap_err().starts_with("buffer_max"));
    let bad = PlayerConfig { startup: StartupPolicy::Segments(0), ..PlayerConfig::default() };
    assert!(Player::validate_config(&bad, &v).is_err());
    let bad = PlayerConfig { quality_metric: Some("vmaf".into()), ..PlayerConfig::default() };
    assert!(Player::validate_config(&bad, &v).unwrap_err().contains("vmaf"));
}

#[test]
fn quality_is_logged_from_the_table() {
    let mut v = (*cbr_video(2, 2 * SEC, &[1_000_000, 2_000_000])).clone();
    v.quality.insert("vmaf".into(), vec![vec![40.0, 60.0], vec![42.0, 63.0]]);
    let mut p = Player::new(PlayerConfig::default(), Arc::new(v), fixed(1), 0);
    fetch(&mut p, 0, 0, SEC);
    fetch(&mut p, SEC, SEC, 2 * SEC);
    assert_eq!(p.log()[0].quality, Some(60.0));
    assert_eq!(p.log()[1].quality, Some(63.0));
}

#[test]
fn buffer_empty_exactly_at_arrival_is_not_a_stall() {
    let v = cbr_video(3, 2 * SEC, &[1_000_000]);
    let mut p = Player::new(PlayerConfig::default(), v, fixed(0), 0);
    fetch(&mut p, 0, 0, SEC);
    assert!(p.poll(SEC).is_some());
    p.advance(3 * SEC); // the buffer is empty exactly now, the download still in flight
    assert_eq!((p.phase(), p.buffer(), p.poll_at()), (Phase::Playing, 0, NEVER));
    p.on_complete(3 * SEC);
    assert_eq!(p.summary().stall_count, 0);
    // the same, but the segment is 1 ns late: a stall of 1 ns, starting at 3 s
    assert!(p.poll(3 * SEC).is_some());
    p.advance(5 * SEC);
    p.on_complete(5 * SEC + 1);
    let s = p.summary();
    assert_eq!((s.stall_count, s.stalled), (1, 1));
    assert_eq!(p.phase_log()[2], (5 * SEC, Phase::Stalled));
    p.check_invariants().unwrap();
}
