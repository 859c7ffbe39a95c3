//! Metrics on small hand-made inputs: every expected number is computed by hand in a comment.

use super::lossphase::*;
use super::*;
use crate::player::testkit::*;
use crate::player::PlayerConfig;
use crate::time::{MS, SEC};
use crate::tracemode::{run_trace_mode, Schedule, TraceOpts};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

fn seg(segment: usize, rung: usize, bitrate_bps: u64, stall: Ns, quality: Option<f64>) -> SegmentLog {
    SegmentLog {
        segment,
        rung,
        bitrate_bps,
        bytes: bitrate_bps / 4,
        duration: 2 * SEC,
        quality,
        t_request: 0,
        t_first_byte: 0,
        t_last_byte: SEC,
        tput_request_bps: 1e6 * (segment + 1) as f64,
        tput_first_byte_bps: 3e6 * (segment + 1) as f64,
        buffer_before: 0,
        buffer_after: 0,
        stall,
        abr_delay: 0,
        abr_reason: String::new(),
        lost_bytes: 0,
        extra_bytes: 0,
        abandoned: false,
    }
}

/// P = 1, 3, 3, 2 Mbit/s; 0.5 s of stall before chunk 1; quality 40, 60, 60, 50.
fn small_log() -> Vec<SegmentLog> {
    vec![
        seg(0, 0, 1_000_000, 0, Some(40.0)),
        seg(1, 2, 3_000_000, 500 * MS, Some(60.0)),
        seg(2, 2, 3_000_000, 0, Some(60.0)),
        seg(3, 1, 2_000_000, 0, Some(50.0)),
    ]
}

#[test]
fn qoe_minerva_eq1_hand_computed() {
    let log = small_log();
    let q = qoe_per_chunk(&log, 200 * MS, &QoeParams::default()).unwrap();
    // 1; 3 - 25*0.5 - 2.5*2 = -14.5; 3 - 0 - 0 = 3; 2 - 2.5*1 = -0.5
    assert_eq!(q, vec![1.0, -14.5, 3.0, -0.5]);
    assert!(close(mean(&q), -2.75));
    // startup 0.2 s as R_0: 1 - 25*0.2 = -4
    let p = QoeParams { startup_as_rebuffer: true, ..QoeParams::default() };
    assert!(close(qoe_per_chunk(&log, 200 * MS, &p).unwrap()[0], -4.0));
    // P = quality: 40; 60 - 12.5 - 2.5*20 = -2.5; 60; 50 - 2.5*10 = 25
    let p = QoeParams { pq: Pq::Quality, ..QoeParams::default() };
    assert_eq!(qoe_per_chunk(&log, 0, &p).unwrap(), vec![40.0, -2.5, 60.0, 25.0]);
    // other weights: beta 4.3, gamma 1 (Pensieve's QoE_lin in Mbit/s): 3 - 2.15 - 2 = -1.15
    assert!(close(qoe_chunks(&[1.0, 3.0], &[0.0, 0.5], 4.3, 1.0)[1], -1.15));
    // abandoned lines are not played chunks
    let mut l2 = log.clone();
    l2.insert(1, SegmentLog { abandoned: true, rung: 6, bitrate_bps: 9_000_000, ..seg(1, 6, 0, 0, None) });
    assert_eq!(qoe_per_chunk(&l2, 0, &QoeParams::default()).unwrap(), q);
    // a missing quality value is an error, not a silent 0
    let mut l3 = log.clone();
    l3[2].quality = None;
    assert!(qoe_per_chunk(&l3, 0, &p).unwrap_err().contains("segment 2"));
}

#[test]
fn fairness_indices_hand_computed() {
    assert_eq!(jain(&[5.0, 5.0]), 1.0);
    assert_eq!(jain(&[1.0, 0.0]), 0.5);
    // (1+2+3)^2 / (3 * 14) = 36/42
    assert!(close(jain(&[1.0, 2.0, 3.0]), 36.0 / 42.0));
    assert!(close(festive_unfairness(&[1.0, 2.0, 3.0]), (1.0f64 / 7.0).sqrt()));
    assert_eq!(festive_unfairness(&[2.0, 2.0]), 0.0);
    assert_eq!(min_value(&[3.0, -1.0, 2.0]), Some(-1.0));
    assert_eq!(spread(&[3.0, -1.0, 2.0]), 4.0);
    // video 4 Mbit/s while 2 flows share 10 Mbit/s: 4 / 5 = 80%
    assert!(close(percent_fair_share(4e6, 10e6, 2), 80.0));
    // testbed quality level: rungs 0,7,7,2 of 8 -> mean 4 / 8 = 50%; QU vs 87.5% = 37.5
    assert_eq!(quality_level_pct(&[0, 7, 7, 2], 8), 50.0);
    assert_eq!(quality_unfairness(&[50.0, 87.5]), 37.5);
}

#[test]
fn instability_hand_computed() {
    let r = [0, 1, 1, 2, 2, 2, 1, 1, 1, 1];
    assert_eq!(switches(&r), 3);
    assert_eq!(instability_pct(&r), 30.0);
    // Chunklets' index with k = 2, w(0) = 2, w(1) = 1, w(2) = 0, b = 2, 2, 4, 4:
    // t=2: (|4-2|*2 + |2-2|*1) / (2*1 + 2*0) = 4/2 = 2
    // t=3: (|4-4|*2 + |4-2|*1) / (4*1 + 2*0) = 2/4 = 0.5
    assert_eq!(instability_index(&[2.0, 2.0, 4.0, 4.0], 2), vec![2.0, 0.5]);
    // k = 10 needs 11 chunks; constant -> 0; one switch at the newest chunk of the window:
    // num = |2-1| * w(0) = 10, den = sum_{d=1}^{10} 1 * (10 - d) = 45
    let mut b = vec![1.0; 10];
    b.push(2.0);
    assert_eq!(instability_index(&b, 10), vec![10.0 / 45.0]);
    assert_eq!(instability_index(&[1.0; 11], 10), vec![0.0]);
    assert!(instability_index(&[1.0; 10], 10).is_empty());
}

#[test]
fn instability_index_on_levels_hand_computed() {
    // Window at t: numerator sum_{d=0}^{9} |b_{t-d} - b_{t-d-1}| (10 - d), weights 10..1 (sum 55);
    // denominator sum_{d=1}^{10} b_{t-d} (10 - d), weights 9..0 (sum 45), b_{t-10} weighs 0.
    // One 19 -> 20 switch at d = 0 (rungs 18 x 10 then 19 = levels 19 x 10 then 20): 1 * 10 / (19 * 45)
    let mut r = vec![18usize; 10];
    r.push(19);
    let ii = instability_index_levels(&r);
    assert_eq!(ii.len(), 1);
    assert!(close(ii[0], 10.0 / (19.0 * 45.0)), "{}", ii[0]); // 0.011696
    assert!(ii[0] < 0.012);
    // The same switch at d = 9 (the oldest pair in the window, weight 1): levels 19, 20 x 10.
    // Denominator: b_{t-1..t-9} = 20 with weights 9..1 (45), b_{t-10} = 19 with weight 0 -> 900.
    let mut r = vec![18usize];
    r.extend([19usize; 10]);
    assert!(close(instability_index_levels(&r)[0], 1.0 / 900.0));
    // Alternating levels 1 <-> 20 (rungs 0 <-> 19): every |diff| = 19 -> numerator 19 * 55 = 1045.
    // Ending on 20 (b_{t-1} = 1): denominator 1 * (9+7+5+3+1) + 20 * (8+6+4+2+0) = 25 + 400 = 425
    //   -> 1045 / 425 = 2.4588;
    // ending on 1 (b_{t-1} = 20): 20 * 25 + 1 * 20 = 520 -> 1045 / 520 = 2.0096. Mean about 2.23: not clamped.
    let alt: Vec<usize> = (0..12).map(|i| if i % 2 == 0 { 0 } else { 19 }).collect();
    let ii = instability_index_levels(&alt);
    assert_eq!(ii.len(), 2); // 12 chunks -> t = 10, 11
    assert!(close(ii[0], 1045.0 / 520.0), "{ii:?}"); // t = 10: b_t = level 1, b_{t-1} = 20
    assert!(close(ii[1], 1045.0 / 425.0), "{ii:?}"); // t = 11: b_t = level 20, b_{t-1} = 1
    assert!((ii.iter().sum::<f64>() / 2.0 - 2.2).abs() < 0.05);
    // Pinned at the lowest rung: level 1 everywhere -> 0, not 0/0
    assert_eq!(instability_index_levels(&[0; 11]), vec![0.0]);
    // Fewer than 11 chunks: no value
    assert!(instability_index_levels(&[0; 10]).is_empty());
}

#[test]
fn rates_and_time_averages_hand_computed() {
    assert_eq!(smoothed(&[3.0, 6.0, 9.0, 12.0], 3), vec![3.0, 4.5, 6.0, 9.0]);
    assert_eq!(achieved_rates(&small_log()), vec![3e6, 6e6, 9e6, 12e6]);
    // 10 for 1 s, 20 for 2 s
    assert!(close(time_average(&[(0, 10.0), (SEC, 20.0)], 3 * SEC), 50.0 / 3.0));
    // 80 ms for 2 s then 160 ms for 2 s over an 80 ms RTD: mean 120 ms = 150%
    assert!(close(rtt_inflation_pct(&[(0, 80 * MS), (2 * SEC, 160 * MS)], 4 * SEC, 80 * MS), 150.0));
    // 10 ms polls of 1250, 1250, 2500, 0 B = 1, 1, 2, 0 Mbit/s -> 1 Mbit/s on a 1 Mbit/s link
    assert!(close(link_utilization(&[1250, 1250, 2500, 0], 10 * MS, 1_000_000), 1.0));
    assert!(close(link_utilization(&[1250, 1250, 2500, 0], 10 * MS, 2_000_000), 0.5));
}

#[test]
fn client_metrics_show_the_stalls_below_the_lowest_rung() {
    // 200 kbit/s under a 300 kbit/s lowest rung: startup 3 s, 9 stalls of 1 s, 20 s played
    let v = cbr_video(10, 2 * SEC, &LADDER);
    let r = run_trace_mode(
        v,
        Box::new(Rate { safety: 0.9 }),
        PlayerConfig::default(),
        &Schedule::constant(200_000, 0),
        &TraceOpts::sabre(),
    );
    let m = ClientMetrics::compute(&r.log, &r.summary, LADDER.len(), &QoeParams::default()).unwrap();
    assert_eq!(m.stall_count, 9);
    assert_eq!(m.rebuffer_s, 9.0);
    assert_eq!(m.startup_s, 3.0);
    assert!(close(m.rebuffer_ratio, 9.0 / 29.0));
    assert!(close(m.rebuffer_ratio_with_startup, 12.0 / 32.0));
    assert_eq!(m.avg_bitrate_bps, 300_000.0);
    assert_eq!(m.switches, 0);
    // QoE: 0.3 for chunk 0, 0.3 - 25 = -24.7 for the 9 others: mean (0.3 - 222.3) / 10 = -22.2
    assert!(close(m.qoe_mean, -22.2));
    // 750 kB over 32 s
    assert!(close(m.goodput_bps, 750_000.0 * 8.0 / 32.0));
    assert!(close(m.achieved_rate_mean_bps, 200_000.0));
}

#[test]
fn a_client_with_no_segment_reports_zeros_not_negative_zeros() {
    // a client that starts at the end of the run: no log, no time
    let s = crate::player::PlayerSummary {
        abr: "x".into(),
        start: 10 * SEC,
        now: 10 * SEC,
        ended: false,
        end: None,
        startup: 0,
        played: 0,
        stalled: 0,
        stall_count: 0,
        segments_downloaded: 0,
        abandoned: 0,
        bytes: 0,
        buffer: 0,
        buffer_max: 30 * SEC,
        max_buffer_seen: 0,
    };
    let m = ClientMetrics::compute(&[], &s, LADDER.len(), &QoeParams::default()).unwrap();
    let json = serde_json::to_string(&m).unwrap();
    assert!(!json.contains("-0"), "{json}");
    assert_eq!(m.qoe_total.to_bits(), 0.0f64.to_bits());
}

#[test]
fn client_metrics_at_5mbps_no_stall() {
    let v = cbr_video(30, 4 * SEC, &LADDER);
    let r = run_trace_mode(
        v,
        Box::new(Rate { safety: 0.9 }),
        PlayerConfig::default(),
        &Schedule::constant(5_000_000, 40 * MS),
        &TraceOpts::sabre(),
    );
    let m = ClientMetrics::compute(&r.log, &r.summary, LADDER.len(), &QoeParams::default()).unwrap();
    assert_eq!((m.stall_count, m.rebuffer_s, m.rebuffer_ratio), (0, 0.0, 0.0));
    assert_eq!(m.switches, 1);
    assert!(close(m.avg_bitrate_bps, (300_000.0 + 29.0 * 4_300_000.0) / 30.0));
    // QoE: 0.3, then 4.3 - 2.5*4 = -5.7 once, then 28 x 4.3: (0.3 - 5.7 + 120.4) / 30
    assert!(close(m.qoe_mean, 115.0 / 30.0));
    // two identical clients are perfectly fair; a starved one is not
    let mut m2 = m.clone();
    assert_eq!(FairnessMetrics::compute(&[m.clone(), m2.clone()]).jfi_goodput, 1.0);
    m2.goodput_bps = 0.0;
    m2.qoe_mean = -10.0;
    m2.quality_level_pct = 0.0;
    let f = FairnessMetrics::compute(&[m.clone(), m2]);
    assert_eq!(f.jfi_goodput, 0.5);
    assert!(close(f.festive_unfairness, 0.5f64.sqrt()));
    assert_eq!(f.min_qoe, -10.0);
    assert!(close(f.qoe_spread, 115.0 / 30.0 + 10.0));
    assert!(close(f.quality_unfairness_pct, m.quality_level_pct));
}

// ----- loss phases -----

fn d(t_us: u64, flow: u64, seq: u64, dropped: bool) -> PktEvent {
    PktEvent { t: t_us * 1_000, flow, kind: PktKind::Data { seq }, dropped }
}
fn a(t_us: u64, flow: u64, ack: u64) -> PktEvent {
    PktEvent { t: t_us * 1_000, flow, kind: PktKind::Ack { ack }, dropped: false }
}

#[test]
fn loss_phase_burst() {
    let r = LossPhaseRules::default();
    // 8 data packets 1 ms apart (7 ms) with no ACK: a burst; the 4th is dropped -> B
    let ev: Vec<PktEvent> = (0..8).map(|i| d(i * 1_000, 1, i * 1000, i == 3)).collect();
    assert_eq!(classify_losses(&ev, &r), vec![(3, LossPhase::B)]);
    // the same 8 packets 3 ms apart last 21 ms >= 18 ms: not a burst -> C
    let ev: Vec<PktEvent> = (0..8).map(|i| d(i * 3_000, 1, i * 1000, i == 3)).collect();
    assert_eq!(classify_losses(&ev, &r), vec![(3, LossPhase::C)]);
    // only 5 packets: not more than 5 -> C
    let ev: Vec<PktEvent> = (0..5).map(|i| d(i * 1_000, 1, i * 1000, i == 3)).collect();
    assert_eq!(classify_losses(&ev, &r), vec![(3, LossPhase::C)]);
    // 6 packets: a burst
    let ev: Vec<PktEvent> = (0..6).map(|i| d(i * 1_000, 1, i * 1000, i == 5)).collect();
    assert_eq!(classify_losses(&ev, &r), vec![(5, LossPhase::B)]);
    // an ACK of *another* flow inside the run does not break flow 1's burst
    let mut ev: Vec<PktEvent> = (0..8).map(|i| d(i * 1_000, 1, i * 1000, i == 6)).collect();
    ev.insert(4, a(3_500, 2, 777));
    assert_eq!(classify_losses(&ev, &r), vec![(7, LossPhase::B)]);
    // an ACK of flow 1 splits it into 4 + 4: no burst
    ev[4].flow = 1;
    assert_eq!(classify_losses(&ev, &r), vec![(7, LossPhase::C)]);
}

/// ACK-clocked exchange of flow 1: every 10 ms an ACK (ack = 100 * i) then data seq 1000 * i
/// (i = 0..9), then `n_trailing` pure ACKs advancing 3000, 4000, ... then 3 dupacks.
fn clocked_then_trailing(n_trailing: u64, dropped_seq: &[u64]) -> Vec<PktEvent> {
    let mut ev = Vec::new();
    for i in 0..10u64 {
        ev.push(a(i * 10_000, 1, i * 100));
        ev.push(d(i * 10_000 + 5_000, 1, i * 1000, dropped_seq.contains(&(i * 1000))));
    }
    for j in 0..n_trailing {
        ev.push(a(100_000 + j * 1_000, 1, 3000 + j * 1000));
    }
    let last = 3000 + (n_trailing - 1) * 1000;
    for j in 0..3 {
        ev.push(a(110_000 + j * 1_000, 1, last));
    }
    // later clocked data beyond the trailing range
    ev.push(d(200_000, 1, 20_000, dropped_seq.contains(&20_000)));
    ev.push(a(205_000, 1, 10_000));
    ev.push(d(210_000, 1, 21_000, false));
    ev
}

#[test]
fn loss_phase_trailing_and_clocking() {
    let r = LossPhaseRules::default();
    // 7 advancing ACKs 3000..9000 preceded by ack 900: range [900, 9000].
    // seq 9000 (the first byte left unacknowledged) -> T; seq 5000 (acked by the group) -> T;
    // seq 20000, clocked, beyond the range -> C.
    let ev = clocked_then_trailing(7, &[5000, 9000, 20_000]);
    let got = classify_losses(&ev, &r);
    assert_eq!(got, vec![(11, LossPhase::T), (19, LossPhase::T), (ev.len() - 3, LossPhase::C)]);
    assert_eq!(phase_counts(&got), (0, 2, 1));
    // 5 advancing ACKs (3000..7000) are not a trailing group: everything is clocking
    let ev = clocked_then_trailing(5, &[5000, 7000]);
    assert_eq!(classify_losses(&ev, &r), vec![(11, LossPhase::C), (15, LossPhase::C)]);
    // 6 are: range [900, 8000]; seq 9000 lies outside it -> C, seq 8000 -> T
    let ev = clocked_then_trailing(6, &[8000, 9000]);
    assert_eq!(classify_losses(&ev, &r), vec![(17, LossPhase::T), (19, LossPhase::C)]);
}

#[test]
fn loss_phase_burst_wins_over_trailing() {
    let r = LossPhaseRules::default();
    // flow 7: a burst of 8 packets (seq 0..7000) in 7 ms, seq 7000 dropped, then 6 advancing
    // ACKs 1000..6000 and dupacks 6000 -> range [1000, 6000]... extended: ACKs up to 7000
    let mut ev: Vec<PktEvent> = (0..8).map(|i| d(i * 1_000, 7, i * 1000, i == 7)).collect();
    for j in 1..=7u64 {
        ev.push(a(50_000 + j * 1_000, 7, j * 1000));
    }
    // both rules match seq 7000 (in the burst, and in the trailing range [1000, 7000]): B wins
    assert_eq!(classify_losses(&ev, &r), vec![(7, LossPhase::B)]);
    // without the burst (packets 5 ms apart: 35 ms) the same drop is T
    for (i, e) in ev.iter_mut().enumerate().take(8) {
        e.t = i as u64 * 5 * MS;
    }
    assert_eq!(classify_losses(&ev, &r), vec![(7, LossPhase::T)]);
}
