//! The algorithms run without the engine: a plain loop with hand-made timestamps drives a queue
//! discipline and a congestion controller (what the real-network runtime will also do).

use qoelab_core::aqm::{AqmBuildCtx, Queue};
use qoelab_core::packet::{Packet, MSS, MTU};
use qoelab_core::params::Params;
use qoelab_core::tcp::cc::{self, AckSample, CcBuildCtx, Congestion};
use qoelab_core::time::{tx_time, MS, SEC, US};

#[test]
fn codel_driven_by_a_plain_loop() {
    let ctx = AqmBuildCtx { limit_packets: Some(1000), limit_bytes: None, link_rate_bps: 10_000_000, seed: 1 };
    let mut q = Queue::build("codel", &Params::new(), &ctx).unwrap();
    q.record_sojourns();
    // 12 Mbit/s of arrivals into a 10 Mbit/s "link" served by hand for 5 s.
    let (arr_gap, srv_gap) = (tx_time(MTU as u64, 12_000_000), tx_time(MTU as u64, 10_000_000));
    let (mut next_arr, mut next_srv, mut now) = (0u64, 0u64, 0u64);
    let mut seq = 0u64;
    while now < 5 * SEC {
        if next_arr <= next_srv {
            now = next_arr;
            seq += MSS as u64;
            q.enqueue(now, Packet { size: MTU, payload: MSS, seq, ..Packet::EMPTY }, None);
            next_arr += arr_gap;
        } else {
            now = next_srv;
            q.dequeue(now, None);
            next_srv += srv_gap;
        }
    }
    q.check_conservation().unwrap();
    let s = &q.stats;
    assert!(s.dropped_pkts() > 0, "CoDel must drop under a persistent 20% overload");
    // Unresponsive overload: CoDel cannot hold 5 ms, but it keeps the standing queue far below the
    // 1000-packet limit a droptail queue would fill.
    assert!(s.max_len_pkts < 1000, "{}", s.max_len_pkts);
}

#[test]
fn cubic_driven_by_a_plain_loop() {
    let ctx = CcBuildCtx { mss: MSS as u64, initial_window: 10, seed: 7 };
    let mut c = cc::build("cubic", &Params::new(), &ctx).unwrap();
    assert_eq!(c.cwnd(), 10 * MSS as u64);
    // Slow start: a window of ACKs per 20 ms round doubles the window.
    let rtt = 20 * MS;
    let mut now = 0;
    for _ in 0..3 {
        let w = c.cwnd();
        let segs = w / MSS as u64;
        for i in 0..segs {
            now += rtt / segs;
            c.on_ack(&AckSample {
                now,
                acked_bytes: MSS as u64,
                rtt: Some(rtt),
                srtt: rtt,
                min_rtt: rtt,
                prior_in_flight: w - i * MSS as u64,
                bytes_in_flight: w - (i + 1) * MSS as u64,
                cwnd_limited: true,
                ..AckSample::default()
            });
        }
        assert_eq!(c.cwnd(), 2 * w);
    }
    let before = c.cwnd();
    c.on_congestion_event(now + 100 * US, Congestion::Loss, before);
    c.on_recovery_exit(now + rtt);
    let after = c.cwnd();
    assert!((after as f64 / before as f64 - 0.7).abs() < 0.01, "{after} / {before}");
}
