//! The algorithms run without the engine: a plain loop with hand-made timestamps drives a queue
//! discipline and a congestion controller (what the real-network runtime will also do).

use qoelab_core::aqm::{AqmBuildCtx, Item, Queue};
use qoelab_core::net::link::{Link, LinkPacket, Service};
use qoelab_core::packet::{ecn, MSS, MTU};
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
    let mut seq = 0u32;
    while now < 5 * SEC {
        if next_arr <= next_srv {
            now = next_arr;
            seq += 1;
            q.enqueue(now, Item { size: MTU, handle: seq, ..Item::default() }, None);
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

/// A packet type that is not the simulator's: the link only needs size, hash and ECN.
#[derive(Clone, Debug)]
struct Frame {
    id: u64,
    len: u32,
    ecn: u8,
}

impl LinkPacket for Frame {
    fn size(&self) -> u32 {
        self.len
    }
    fn flow_hash(&self) -> u32 {
        (self.id % 4) as u32
    }
    fn ecn(&self) -> u8 {
        self.ecn
    }
    fn set_ecn(&mut self, e: u8) {
        self.ecn = e;
    }
}

#[test]
fn link_driven_by_a_plain_loop() {
    let ctx = AqmBuildCtx { limit_packets: Some(1000), limit_bytes: None, link_rate_bps: 10_000_000, seed: 1 };
    let q = Queue::build("fq_codel", &Params::new(), &ctx).unwrap();
    let delay = 10 * MS;
    let mut link: Link<Frame> = Link::new(
        "l".into(),
        qoelab_core::ids::NodeId(0),
        qoelab_core::ids::NodeId(1),
        Service::Fixed(10_000_000),
        delay,
        q,
        None,
    );
    // 12 Mbit/s of ECN-capable arrivals for 5 s; the driver only uses arrive / poll_at / advance.
    let gap = tx_time(MTU as u64, 12_000_000);
    let (mut next_arr, mut id) = (0u64, 0u64);
    let mut out = Vec::new();
    let mut sent_at = std::collections::HashMap::new();
    let (mut last_id, mut delivered, mut marked) = ([None; 4], 0u64, 0u64);
    while next_arr < 5 * SEC || link.poll_at() != u64::MAX {
        let t = link.poll_at();
        if next_arr < 5 * SEC && next_arr <= t {
            sent_at.insert(id, next_arr);
            link.arrive(next_arr, Frame { id, len: MTU, ecn: ecn::ECT0 });
            id += 1;
            next_arr += gap;
            continue;
        }
        link.advance(t, &mut out);
        for f in out.drain(..) {
            assert!(t >= sent_at[&f.id] + delay + tx_time(MTU as u64, 10_000_000));
            // Four flows (id % 4), each delivered in order.
            let k = (f.id % 4) as usize;
            assert!(last_id[k].is_none_or(|l: u64| f.id > l), "flow {k}: {} after {:?}", f.id, last_id[k]);
            last_id[k] = Some(f.id);
            delivered += 1;
            marked += (f.ecn == ecn::CE) as u64;
        }
    }
    link.queue.check_conservation().unwrap();
    link.check_accounting().unwrap();
    assert_eq!(delivered, id, "ECN marks instead of drops: everything arrives");
    assert_eq!(marked, link.queue.stats.marked_pkts);
    assert!(marked > 0, "a 20% overload makes CoDel mark");
}

#[test]
fn cubic_driven_by_a_plain_loop() {
    let ctx = CcBuildCtx { mss: MSS as u64, initial_window: 10, abc_l: 1, seed: 7 };
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
