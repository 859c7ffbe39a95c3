//! Deterministic random streams.
//!
//! One stream per component, derived from the scenario seed and a *stable component name*
//! (e.g. `"flow/bulk-3"`, `"link/bottleneck/aqm"`). Adding a flow therefore never changes the
//! draws of another flow. The generator is xoshiro256** seeded through SplitMix64; both are
//! implemented here (no external crate) so that streams stay identical across dependency updates.

/// FNV-1a 64-bit hash of a component name (stable across platforms and versions).
pub fn name_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[inline]
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256** random stream.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The stream of component `name` under scenario seed `seed`.
    pub fn for_component(seed: u64, name: &str) -> Rng {
        Rng::from_seed(seed ^ name_hash(name).rotate_left(17))
    }

    pub fn from_seed(seed: u64) -> Rng {
        let mut st = seed;
        let s = [splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st)];
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n) (n > 0), unbiased (Lemire's method).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }

    /// Bernoulli trial with probability p.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Exponential with the given mean.
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        // 1 - U is in (0, 1], so ln never sees 0.
        -mean * (1.0 - self.uniform()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn streams_are_stable_and_independent() {
        let mut a = Rng::for_component(42, "flow/a");
        let mut a2 = Rng::for_component(42, "flow/a");
        let mut b = Rng::for_component(42, "flow/b");
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xa2: Vec<u64> = (0..4).map(|_| a2.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_eq!(xa, xa2);
        assert_ne!(xa, xb);
    }
    #[test]
    fn uniform_mean() {
        let mut r = Rng::from_seed(1);
        let n = 100_000;
        let m: f64 = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((m - 0.5).abs() < 0.01, "{m}");
        let e: f64 = (0..n).map(|_| r.exp(2.0)).sum::<f64>() / n as f64;
        assert!((e - 2.0).abs() < 0.05, "{e}");
        for _ in 0..1000 {
            assert!(r.below(7) < 7);
        }
    }
}
