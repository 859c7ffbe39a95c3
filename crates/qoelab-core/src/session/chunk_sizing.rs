//! Sprint's chunk-sizing model (Arye, Sen, Freedman, "Poor Video Streaming Performance Explained
//! (and Fixed)", arXiv 1901.00038, sec. IV-A), pure functions, sans-IO.
//!
//! Units throughout: bytes, seconds, bytes/s, as `f64`. The initial window is 10 MSS
//! ([`IW_SEGMENTS`]); the paper's MSS is 1460 B ([`MSS_BYTES`]: 10 x 1460 x 8 = 116.8 kbit, its
//! "117 kbits" initial cwnd).
//!
//! * [`get_chunk_size`]: Program 1 as printed (with its quirks: `r_1 = max(1, ceil(log2(sst /
//!   (10 MSS))) + 1)`, `r_2 = (bdp - sst) / MSS + 1` not rounded, `sst = 3/4 bdp`), the minimum
//!   chunk (train, range) size for an efficiency of at least `1 - eps`.
//! * [`efficiency_eq1`]: Equation 1 in its continuous form, `E = S / (B (R1 + R2 + R3))` with
//!   `R1 = log2(SST / 10 MSS)`, `R2 = (B - SST) / MSS`, `R3 = (S - B1 - B2) / B`,
//!   `B1 = SST - 10 MSS`, `B2 = R2 (SST + B) / 2`. Valid for `S >= B1 + B2`.
//! * [`efficiency_rounds`]: the same three phases evaluated round by round, which also covers
//!   chunks that end inside slow start or additive increase (Fig. 5-style predictions).
//! * [`fair_share_pct`], [`unfairness`]: the paper's two fairness metrics.
//!
//! The formulas of the paper were lost in its text conversion; the reconstruction used here is
//! the one of ../shared/reference/claims/sprint.md sec. 1.3-1.5 (docs/reproductions/sprint.md).

use crate::metrics;

/// The paper's maximum segment size (bytes).
pub const MSS_BYTES: f64 = 1460.0;
/// The initial congestion window, in segments.
pub const IW_SEGMENTS: f64 = 10.0;

/// Program 1's `rtsToSST(sst)`: rounds of slow start from the initial window (10 MSS) to `sst`,
/// `max(1, ceil(log2(sst / (10 MSS))) + 1)` (the printed `Log2(sst, cwndStart)` read as
/// `log2(sst / cwndStart)`). At least 1 even when `sst` is below the initial window.
pub fn rts_to_sst(sst: f64, mss: f64) -> f64 {
    let rounds = (sst / (IW_SEGMENTS * mss)).log2();
    (rounds.ceil() + 1.0).max(1.0)
}

/// Program 1's `rtsFromSSTtoBDP(sst, bdp)`: rounds of additive increase (+1 MSS per round) from
/// `sst` to `bdp`, `(bdp - sst) / MSS + 1`, not rounded.
pub fn rts_from_sst_to_bdp(sst: f64, bdp: f64, mss: f64) -> f64 {
    (bdp - sst) / mss + 1.0
}

/// Program 1, `getChunkSize(bandwidth, rtt, eps)`: the chunk size (bytes) for which Equation 1
/// guarantees an efficiency of at least `1 - eps`:
/// `bdp = bandwidth * rtt; sst = 3/4 bdp; (1 - eps) * ((r_1 + r_2) / eps) * bdp`.
///
/// `bandwidth_bytes_per_s` is the video flow's own throughput estimate (not the link rate),
/// `rtt_s` the probe RTT including queueing, `eps` in (0, 1) (callers validate it; outside, the
/// value means nothing), `mss` in bytes ([`MSS_BYTES`]). The size grows as bdp^2 (r_2 ~ bdp / 4
/// MSS) and is not capped.
pub fn get_chunk_size(bandwidth_bytes_per_s: f64, rtt_s: f64, eps: f64, mss: f64) -> f64 {
    let bdp = bandwidth_bytes_per_s * rtt_s;
    let sst = bdp * (3.0 / 4.0);
    let r_1 = rts_to_sst(sst, mss);
    let r_2 = rts_from_sst_to_bdp(sst, bdp, mss);
    let total_rts = (r_1 + r_2) / eps;
    (1.0 - eps) * (total_rts * bdp)
}

/// Equation 1, continuous form: the efficiency (achieved / fair-share throughput) of a transfer of
/// `chunk_bytes` that starts in slow start from 10 MSS, leaves it at `sst`, grows by one MSS per
/// RTT up to `fair_bdp`, then sends `fair_bdp` per RTT:
/// `E = S / (B (R1 + R2 + R3))`, `R1 = log2(SST / 10 MSS)`, `B1 = SST - 10 MSS`,
/// `R2 = (B - SST) / MSS`, `B2 = R2 (SST + B) / 2`, `R3 = (S - B1 - B2) / B`.
///
/// Outside the model's domain the phases are clamped at zero (an `sst` below the initial window
/// has no slow start, an `sst` above `fair_bdp` no additive increase). The form assumes the chunk
/// reaches the third phase (`S >= B1 + B2`); for smaller chunks R3 is negative and the value is
/// meaningless: use [`efficiency_rounds`]. NaN if `fair_bdp`, `mss` or `chunk_bytes` is not
/// positive.
pub fn efficiency_eq1(chunk_bytes: f64, fair_bdp: f64, sst: f64, mss: f64) -> f64 {
    if !(chunk_bytes > 0.0 && fair_bdp > 0.0 && mss > 0.0) {
        return f64::NAN;
    }
    let iw = IW_SEGMENTS * mss;
    let sst = sst.min(fair_bdp);
    let (r1, b1) = if sst > iw { ((sst / iw).log2(), sst - iw) } else { (0.0, 0.0) };
    let from = sst.max(iw).min(fair_bdp);
    let r2 = (fair_bdp - from) / mss;
    let b2 = r2 * (from + fair_bdp) / 2.0;
    let r3 = (chunk_bytes - b1 - b2) / fair_bdp;
    chunk_bytes / (fair_bdp * (r1 + r2 + r3))
}

/// The efficiency of a transfer of `chunk_bytes` evaluated round by round (RTT by RTT), for any
/// chunk size, including chunks that end inside slow start or additive increase.
///
/// Round i sends a window w_i = min(cwnd_i, `fair_bdp`) (the flow never gets more than its fair
/// share per RTT). cwnd starts at 10 MSS; while cwnd < `sst` it doubles, capped at `sst` (the
/// round that would cross the threshold ends slow start at exactly `sst`); from `sst` on it
/// grows by one MSS per round; from `fair_bdp` on the rest of the chunk is sent at `fair_bdp` per
/// round. The last round counts as the fraction of its window it used, so
/// `E = S / (fair_bdp * R)` with a fractional R. This reading reproduces the 4-s segment
/// efficiency table of sprint.md sec. 1.5 to +-0.005 (a whole last round, or a slow start that
/// overshoots `sst`, do not).
///
/// NaN if an input is not finite or `fair_bdp`, `mss` or `chunk_bytes` is not positive.
pub fn efficiency_rounds(chunk_bytes: f64, fair_bdp: f64, sst: f64, mss: f64) -> f64 {
    if !(chunk_bytes > 0.0 && fair_bdp > 0.0 && mss > 0.0)
        || !(chunk_bytes.is_finite() && fair_bdp.is_finite() && sst.is_finite() && mss.is_finite())
    {
        return f64::NAN;
    }
    let mut cwnd = IW_SEGMENTS * mss;
    let mut left = chunk_bytes;
    let mut rounds = 0.0f64;
    loop {
        if cwnd >= fair_bdp {
            // phase 3: the rest at the fair-BDP per round
            rounds += left / fair_bdp;
            break;
        }
        if left <= cwnd {
            rounds += left / cwnd;
            break;
        }
        left -= cwnd;
        rounds += 1.0;
        cwnd = if cwnd < sst { (2.0 * cwnd).min(sst) } else { cwnd + mss };
    }
    chunk_bytes / (fair_bdp * rounds)
}

/// Sprint's percent of fair share of a video flow: `100 * video / (sum(all) / n)`, where
/// `all_flow_bytes` holds every data flow sharing the bottleneck, the video flow included (the
/// fair share is the measured total divided by the number of flows, not the link rate). Bytes
/// or rates, as long as both use the same unit and interval. 0 when there is no flow or no byte.
pub fn fair_share_pct(video_bytes: f64, all_flow_bytes: &[f64]) -> f64 {
    metrics::percent_fair_share(video_bytes, all_flow_bytes.iter().sum(), all_flow_bytes.len())
}

/// Unfairness `sqrt(1 - JFI)` (FESTIVE's definition, Sprint Table I), JFI = Jain's index
/// ([`metrics::jain`]); 0 = fair, at most sqrt(1 - 1/n).
pub fn unfairness(xs: &[f64]) -> f64 {
    metrics::festive_unfairness(xs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KB: f64 = 1000.0; // the paper's KB (256 KB at 3 Mbit/s drains in 683 ms)

    /// Fair-BDP (bytes) with a full droptail queue: fair share of the link x (base RTT + the
    /// queue's drain time), the assumption of sprint.md's worked tables.
    fn full_queue_bdp(link_bps: f64, n_flows: f64, base_rtt_s: f64, queue_bytes: f64) -> (f64, f64, f64) {
        let fair = link_bps / 8.0 / n_flows; // bytes/s
        let rtt = base_rtt_s + queue_bytes * 8.0 / link_bps;
        (fair, rtt, fair * rtt)
    }

    fn within(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn s18_arithmetic_anchors() {
        // 256 KB queue at 3 Mbit/s: 256_000 * 8 / 3e6 = 0.682667 s -> "683 ms"
        let drain = 256.0 * KB * 8.0 / 3e6;
        assert!(within(drain * 1e3, 683.0, 0.5), "{drain}");
        // with KiB it would be 699 ms: the paper's KB is 1000 B
        assert!(within(256.0 * 1024.0 * 8.0 / 3e6 * 1e3, 699.0, 0.5));
        // "BDP could grow by 583%": 683 / 100 - 1 = 5.83 (the true growth is (100 + 683) / 100 - 1 = 6.83)
        assert!(within(683.0 / 100.0 - 1.0, 5.83, 1e-12));
        assert!(within((0.1 + drain) / 0.1 - 1.0, 5.83 + 1.0, 0.005));
        // initial window 10 MSS = 10 * 1460 * 8 = 116_800 bit ("117 kbits"); 5 Mbit/s x 20 ms = 100 kbit
        assert_eq!(IW_SEGMENTS * MSS_BYTES * 8.0, 116_800.0);
        assert!(within(5e6 * 0.020, 100_000.0, 1e-6));
    }

    /// sprint.md sec. 1.5, the S* table: (link, queue, flows) -> RTT, fair-BDP, r_1, r_2, S*(0.1), S*(0.25).
    #[test]
    fn program1_worked_table() {
        /// One row: link bit/s, queue bytes, flows, RTT ms, fair-BDP, r_1, r_2, S*(0.1) and its
        /// printed precision, S*(0.25) and its precision, seconds of S*(0.1) at the fair share.
        struct Row {
            link: f64,
            q: f64,
            n: f64,
            rtt_ms: f64,
            b: f64,
            r1: f64,
            r2: f64,
            s01: (f64, f64),
            s025: (f64, f64),
            secs_fs: f64,
        }
        #[rustfmt::skip]
        let rows = [
            Row { link: 3e6, q: 0.0, n: 2.0, rtt_ms: 100.0, b: 18_750.0, r1: 1.0, r2: 4.21,
                  s01: (0.88e6, 0.005e6), s025: (0.29e6, 0.005e6), secs_fs: 5.0 },
            Row { link: 3e6, q: 256.0 * KB, n: 2.0, rtt_ms: 783.0, b: 146_750.0, r1: 4.0, r2: 26.13,
                  s01: (39.8e6, 0.05e6), s025: (13.3e6, 0.05e6), secs_fs: 212.0 },
            Row { link: 3e6, q: 512.0 * KB, n: 2.0, rtt_ms: 1465.0, b: 274_750.0, r1: 5.0, r2: 48.05,
                  s01: (131e6, 0.5e6), s025: (43.7e6, 0.05e6), secs_fs: 700.0 },
            Row { link: 3e6, q: 256.0 * KB, n: 5.0, rtt_ms: 783.0, b: 58_700.0, r1: 3.0, r2: 11.05,
                  s01: (7.4e6, 0.05e6), s025: (2.5e6, 0.05e6), secs_fs: 99.0 },
            Row { link: 25e6, q: 256.0 * KB, n: 2.0, rtt_ms: 182.0, b: 284_250.0, r1: 5.0, r2: 49.67,
                  s01: (140e6, 0.5e6), s025: (46.6e6, 0.05e6), secs_fs: 90.0 },
            Row { link: 25e6, q: 1536.0 * KB, n: 2.0, rtt_ms: 592.0, b: 924_250.0, r1: 7.0, r2: 159.26,
                  s01: (1.38e9, 0.005e9), s025: (461e6, 0.5e6), secs_fs: 885.0 },
        ];
        for Row { link, q, n, rtt_ms, b, r1, r2, s01: (s01, tol01), s025: (s025, tol025), secs_fs } in rows {
            let (fair, rtt, bdp) = full_queue_bdp(link, n, 0.1, q);
            assert!(within(rtt * 1e3, rtt_ms, 0.5), "rtt {rtt}");
            assert!(within(bdp, b, 1e-6), "bdp {bdp} vs {b}");
            let sst = 0.75 * bdp;
            assert_eq!(rts_to_sst(sst, MSS_BYTES), r1, "r_1 at B = {b}");
            assert!(within(rts_from_sst_to_bdp(sst, bdp, MSS_BYTES), r2, 0.005), "r_2 at B = {b}");
            let s = get_chunk_size(fair, rtt, 0.1, MSS_BYTES);
            assert!(within(s, s01, tol01), "S*(0.1) at B = {b}: {s}");
            assert!(within(s / fair, secs_fs, 0.5), "S*(0.1) at B = {b}: {} s at FS", s / fair);
            let s = get_chunk_size(fair, rtt, 0.25, MSS_BYTES);
            assert!(within(s, s025, tol025), "S*(0.25) at B = {b}: {s}");
        }
        // one row by hand: B = 146_750, sst = 110_062.5; 110_062.5 / 14_600 = 7.538, log2 = 2.914,
        // ceil 3, + 1 -> r_1 = 4; r_2 = 36_687.5 / 1460 + 1 = 26.128; (1 - 0.1) * (30.128 / 0.1) * 146_750
        let r2 = 36_687.5 / 1460.0 + 1.0;
        let s = 0.9 * ((4.0 + r2) / 0.1) * 146_750.0;
        assert!(within(get_chunk_size(187_500.0, 0.782_666_666_666_666_7, 0.1, MSS_BYTES), s, 1e-3));
        // quirk: r_1 >= 1 below the initial window (sst 14_062.5 < 14_600: log2 = -0.054, ceil -0 + 1 = 1)
        assert_eq!(rts_to_sst(14_062.5, MSS_BYTES), 1.0);
        assert_eq!(rts_to_sst(100.0, MSS_BYTES), 1.0);
        assert_eq!(get_chunk_size(0.0, 0.1, 0.1, MSS_BYTES), 0.0);
    }

    /// sprint.md sec. 1.5: efficiency of one 4-s segment at the fair-share bitrate after a cwnd
    /// reset (round by round, SST = 0.75 B, 2 flows, base RTT 100 ms, full queue), +-0.01.
    #[test]
    fn four_second_segment_efficiency_table() {
        let queues = [64.0, 128.0, 256.0, 512.0, 1024.0, 1536.0];
        #[rustfmt::skip]
        let table: [(f64, [f64; 6]); 4] = [
            (3e6, [0.86, 0.73, 0.59, 0.42, 0.25, 0.17]),
            (5e6, [0.88, 0.76, 0.64, 0.50, 0.33, 0.24]),
            (10e6, [0.87, 0.80, 0.69, 0.59, 0.45, 0.35]),
            (25e6, [0.83, 0.79, 0.73, 0.66, 0.57, 0.50]),
        ];
        for (link, row) in table {
            for (q, want) in queues.iter().zip(row) {
                let (fair, _, b) = full_queue_bdp(link, 2.0, 0.1, q * KB);
                let e = efficiency_rounds(4.0 * fair, b, 0.75 * b, MSS_BYTES);
                assert!(within(e, want, 0.01), "{} Mbit/s, {q} KB: {e:.3} vs {want}", link / 1e6);
            }
        }
    }

    #[test]
    fn efficiency_rounds_by_hand() {
        let m = MSS_BYTES;
        let iw = 10.0 * m;
        // B = 100 MSS, SST = 40 MSS: windows 10, 20, 40 (doubling to 80 is capped at 40), 41, 42, ...
        let b = 100.0 * m;
        // 10 MSS: exactly one full round -> E = 10 / (100 * 1) = 0.1
        assert!(within(efficiency_rounds(iw, b, 40.0 * m, m), 0.1, 1e-12));
        // 5 MSS: half of the first round -> 5 / (100 * 0.5) = 0.1 (the rate of a round is its window)
        assert!(within(efficiency_rounds(5.0 * m, b, 40.0 * m, m), 0.1, 1e-12));
        // 30 MSS: rounds 10 + 20 -> 2 rounds, 30 / 200 = 0.15
        assert!(within(efficiency_rounds(30.0 * m, b, 40.0 * m, m), 0.15, 1e-12));
        // 70 MSS: 10 + 20 + 40 -> 3 rounds; 111 MSS: + 41 -> 4 rounds, 111 / 400
        assert!(within(efficiency_rounds(70.0 * m, b, 40.0 * m, m), 70.0 / 300.0, 1e-12));
        assert!(within(efficiency_rounds(111.0 * m, b, 40.0 * m, m), 111.0 / 400.0, 1e-12));
        // 90 MSS: 70 in 3 rounds, then 20 of the 41-MSS round -> 3 + 20/41 rounds
        assert!(within(efficiency_rounds(90.0 * m, b, 40.0 * m, m), 90.0 / (100.0 * (3.0 + 20.0 / 41.0)), 1e-12));
        // Past B: slow start 10+20+40 = 70 (3 rounds), additive 41..99 = 59 rounds carrying
        // sum(41..=99) = (41 + 99) * 59 / 2 = 4130 MSS; then 100 MSS per round.
        // S = 4200 + 1000 MSS -> 62 + 1000 / 100 = 72 rounds -> E = 5200 / 7200
        assert!(within(efficiency_rounds(5200.0 * m, b, 40.0 * m, m), 5200.0 / 7200.0, 1e-12));
        // B below the initial window: every round carries B -> E = 1
        assert!(within(efficiency_rounds(1e6, 5.0 * m, 3.0 * m, m), 1.0, 1e-12));
        // SST below the initial window: no slow start, +1 MSS from 10: windows 10, 11, 12 -> 33 MSS in 3 rounds
        assert!(within(efficiency_rounds(33.0 * m, b, 5.0 * m, m), 33.0 / 300.0, 1e-12));
        // large chunks tend to 1
        assert!(efficiency_rounds(1e12, b, 40.0 * m, m) > 0.9999);
        assert!(efficiency_rounds(0.0, b, 40.0 * m, m).is_nan());
        assert!(efficiency_rounds(1.0, 0.0, 40.0 * m, m).is_nan());
    }

    #[test]
    fn eq1_by_hand_and_against_rounds() {
        let m = MSS_BYTES;
        // B = 160 MSS, SST = 80 MSS: R1 = log2(80/10) = 3, B1 = 70 MSS; R2 = 80, B2 = 80 * (80 + 160) / 2 = 9600 MSS;
        // S = 20_000 MSS: R3 = (20_000 - 70 - 9600) / 160 = 64.5625; E = 20_000 / (160 * 147.5625) = 0.84703
        let b = 160.0 * m;
        let e = efficiency_eq1(20_000.0 * m, b, 80.0 * m, m);
        assert!(within(e, 20_000.0 / (160.0 * (3.0 + 80.0 + 64.5625)), 1e-12), "{e}");
        // The discrete evaluation of the same transfer: slow start 10, 20, 40, 80 (4 rounds, 150 MSS),
        // additive 81..159 (79 rounds, (81 + 159) * 79 / 2 = 9480 MSS), then 160 per round:
        // (20_000 - 9630) / 160 = 64.8125 -> 147.8125 rounds. Eq. 1's continuous phases are within 0.2%.
        let r = efficiency_rounds(20_000.0 * m, b, 80.0 * m, m);
        assert!(within(r, 20_000.0 / (160.0 * 147.8125), 1e-12), "{r}");
        assert!((e - r).abs() / r < 0.002);
        // no slow start (SST <= IW) and no additive increase (SST >= B): E = S / (B * S / B) = 1
        assert!(within(efficiency_eq1(1e6, 8.0 * m, 4.0 * m, m), 1.0, 1e-12));
    }

    /// sprint.md sec. 1.5 self-check: over bandwidth 50 kB/s - 1.5 MB/s, RTT 20 ms - 1.5 s and
    /// eps in {0.05, 0.1, 0.2, 0.3, 0.5}, the round-by-round efficiency of a Program 1 chunk minus
    /// (1 - eps) has its minimum at +0.040 (Program 1 is conservative under its own model).
    #[test]
    fn program1_self_check_margin() {
        let geom = |a: f64, b: f64, n: usize| (0..n).map(move |i| a * (b / a).powf(i as f64 / (n - 1) as f64));
        let mut min_rounds = f64::INFINITY;
        let mut min_eq1 = f64::INFINITY;
        for bw in geom(50e3, 1.5e6, 25) {
            for rtt in geom(0.020, 1.5, 25) {
                for eps in [0.05, 0.1, 0.2, 0.3, 0.5] {
                    let b = bw * rtt;
                    let s = get_chunk_size(bw, rtt, eps, MSS_BYTES);
                    min_rounds = min_rounds.min(efficiency_rounds(s, b, 0.75 * b, MSS_BYTES) - (1.0 - eps));
                    min_eq1 = min_eq1.min(efficiency_eq1(s, b, 0.75 * b, MSS_BYTES) - (1.0 - eps));
                }
            }
        }
        assert!(within(min_rounds, 0.040, 0.0005), "{min_rounds}");
        // S14(a): the guarantee holds exactly under the continuous form too
        assert!(min_eq1 > 0.0, "{min_eq1}");
    }

    #[test]
    fn fairness_metrics() {
        // 2 flows, video 40, bulk 60: fair share 50 -> 80 %
        assert!(within(fair_share_pct(40.0, &[40.0, 60.0]), 80.0, 1e-12));
        // Sprint's 102 % against 4 bulk flows is legitimate (> 100)
        assert!(within(fair_share_pct(1.02, &[1.02, 0.995, 0.995, 0.995, 0.995]), 102.0, 1e-9));
        assert_eq!(fair_share_pct(1.0, &[]), 0.0);
        // sqrt(1 - JFI): equal flows 0; two flows at most sqrt(1/2)
        assert_eq!(unfairness(&[3.0, 3.0]), 0.0);
        assert!(within(unfairness(&[1.0, 0.0]), 0.5f64.sqrt(), 1e-12));
        // sprint.md sec. 2.3: for two flows (1 - d, 1 + d), JFI = 1 / (1 + d^2) and U = d / sqrt(1 + d^2);
        // the weaker flow at 84.8 % of its fair share (d = 0.152) gives U = 0.15, at 49.6 % U = 0.45.
        assert!(within(unfairness(&[0.848, 1.152]), 0.15, 0.001));
        assert!(within(unfairness(&[0.496, 1.504]), 0.45, 0.001));
        assert!(within(unfairness(&[0.97, 1.03]), 0.03, 0.001));
    }
}
