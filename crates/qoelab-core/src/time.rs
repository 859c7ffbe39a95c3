//! Simulated time: integer nanoseconds since the start of a run.
//!
//! Every algorithm receives `now: Ns` as an argument; nothing in qoelab-core reads a clock.
//! Durations are also `Ns`. 2^64 ns is ~584 years, so overflow is not a concern for runs,
//! but `Ns::MAX` ([`NEVER`]) is used as "no wake-up needed".

/// Nanoseconds (an instant since the run started, or a duration).
pub type Ns = u64;

pub const NS: Ns = 1;
pub const US: Ns = 1_000;
pub const MS: Ns = 1_000_000;
pub const SEC: Ns = 1_000_000_000;
/// "Never": the wake-up value of a component that has nothing scheduled.
pub const NEVER: Ns = Ns::MAX;

/// Seconds (f64) of a duration, for reporting only.
#[inline]
pub fn secs(d: Ns) -> f64 {
    d as f64 / SEC as f64
}

/// Duration from seconds (f64), rounded to the nearest nanosecond; negative values clamp to 0.
#[inline]
pub fn from_secs_f64(s: f64) -> Ns {
    if s <= 0.0 {
        0
    } else {
        (s * SEC as f64).round() as Ns
    }
}

/// Time to serialize `bytes` at `rate_bps` bits/s, rounded up to the next nanosecond.
#[inline]
pub fn tx_time(bytes: u64, rate_bps: u64) -> Ns {
    debug_assert!(rate_bps > 0);
    let bits = bytes as u128 * 8 * SEC as u128;
    bits.div_ceil(rate_bps as u128) as Ns
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tx_time_rounds_up() {
        // 1500 B at 10 Mbit/s = 1.2 ms exactly
        assert_eq!(tx_time(1500, 10_000_000), 1_200_000);
        // 1 B at 3 bit/s = 8/3 s -> rounded up
        assert_eq!(tx_time(1, 3), 2_666_666_667);
    }
}
