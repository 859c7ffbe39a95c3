//! A set of disjoint, non-adjacent byte ranges `[start, end)` kept as a sorted `Vec`.
//!
//! The receiver's out-of-order data and the sender's SACKed spans hold a handful of ranges (one per
//! hole in the sequence space), so a sorted `Vec` searched by binary search is cheaper than a
//! `BTreeMap` (no node allocation, no tree walk) while keeping the same ordering semantics.

/// Disjoint, non-adjacent ranges sorted by start (so also by end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    v: Vec<(u64, u64)>,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    /// The ranges in order.
    #[inline]
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.v
    }
    #[inline]
    pub fn first(&self) -> Option<(u64, u64)> {
        self.v.first().copied()
    }
    /// End of the range starting exactly at `start`.
    #[inline]
    pub fn get(&self, start: u64) -> Option<u64> {
        self.v.binary_search_by_key(&start, |r| r.0).ok().map(|i| self.v[i].1)
    }
    /// The last range starting at or before `x`.
    #[inline]
    pub fn last_starting_at_or_before(&self, x: u64) -> Option<(u64, u64)> {
        let i = self.v.partition_point(|r| r.0 <= x);
        if i == 0 {
            None
        } else {
            Some(self.v[i - 1])
        }
    }
    /// Start of the first range starting in `[a, b)`.
    #[inline]
    pub fn first_start_in(&self, a: u64, b: u64) -> Option<u64> {
        let i = self.v.partition_point(|r| r.0 < a);
        match self.v.get(i) {
            Some(&(s, _)) if s < b => Some(s),
            _ => None,
        }
    }
    /// Add `[s, e)`, merging every range it overlaps or touches; `absorbed(start)` is called for
    /// each existing range merged (in order). Returns the merged range.
    #[inline]
    pub fn insert(&mut self, s: u64, e: u64, mut absorbed: impl FnMut(u64)) -> (u64, u64) {
        // ranges touching [s, e]: end >= s and start <= e (a contiguous run, ends are sorted too)
        let i = self.v.partition_point(|r| r.1 < s);
        let mut j = i;
        while j < self.v.len() && self.v[j].0 <= e {
            j += 1;
        }
        if i == j {
            self.v.insert(i, (s, e));
            return (s, e);
        }
        let ns = s.min(self.v[i].0);
        let ne = e.max(self.v[j - 1].1);
        for r in &self.v[i..j] {
            absorbed(r.0);
        }
        self.v[i] = (ns, ne);
        if j > i + 1 {
            self.v.drain(i + 1..j);
        }
        (ns, ne)
    }
    /// Remove everything below `x` (a range straddling `x` is trimmed to start at `x`).
    #[inline]
    pub fn trim_below(&mut self, x: u64) {
        let Some(&(s0, _)) = self.v.first() else { return };
        if s0 >= x {
            return;
        }
        let k = self.v.partition_point(|r| r.1 <= x);
        self.v.drain(..k);
        if let Some(f) = self.v.first_mut() {
            if f.0 < x {
                f.0 = x;
            }
        }
    }
    /// Remove the leading ranges that start at or before `x`, extending `x` over each; returns
    /// the new `x` (the receiver's RCV.NXT pulling in buffered data).
    #[inline]
    pub fn absorb_front(&mut self, mut x: u64) -> u64 {
        let mut k = 0;
        while k < self.v.len() && self.v[k].0 <= x {
            x = x.max(self.v[k].1);
            k += 1;
        }
        if k > 0 {
            self.v.drain(..k);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The BTreeMap formulation the set replaces.
    fn insert_ref(m: &mut BTreeMap<u64, u64>, mut s: u64, mut e: u64) {
        if let Some((&ps, &pe)) = m.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
                m.remove(&ps);
            }
        }
        while let Some((&ns, &ne)) = m.range(s..=e).next() {
            m.remove(&ns);
            e = e.max(ne);
        }
        m.insert(s, e);
    }

    #[test]
    fn matches_btreemap_reference() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let mut a = RangeSet::new();
            let mut m: BTreeMap<u64, u64> = BTreeMap::new();
            let mut lo = 0;
            for _ in 0..60 {
                match rnd(4) {
                    0 => {
                        let x = lo + rnd(50);
                        a.trim_below(x);
                        let keep: Vec<_> = m.iter().map(|(&s, &e)| (s, e)).collect();
                        m.clear();
                        for (s, e) in keep {
                            if e > x {
                                m.insert(s.max(x), e);
                            }
                        }
                        lo = x;
                    }
                    _ => {
                        let s = lo + rnd(200);
                        let e = s + 1 + rnd(30);
                        let before: Vec<u64> = m.keys().copied().filter(|&k| m[&k] >= s && k <= e).collect();
                        let mut got = Vec::new();
                        let r = a.insert(s, e, |k| got.push(k));
                        insert_ref(&mut m, s, e);
                        assert_eq!(got, before);
                        assert_eq!(a.get(r.0), Some(r.1));
                    }
                }
                let v: Vec<_> = m.iter().map(|(&s, &e)| (s, e)).collect();
                assert_eq!(a.as_slice(), &v[..]);
                let q = lo + rnd(250);
                assert_eq!(a.last_starting_at_or_before(q), m.range(..=q).next_back().map(|(&s, &e)| (s, e)));
                let q2 = q + rnd(40);
                assert_eq!(a.first_start_in(q, q2), m.range(q..q2).next().map(|(&s, _)| s));
            }
        }
    }

    #[test]
    fn absorb_front_pulls_contiguous_ranges() {
        let mut a = RangeSet::new();
        a.insert(10, 20, |_| {});
        a.insert(20, 30, |_| {});
        a.insert(40, 50, |_| {});
        assert_eq!(a.as_slice(), &[(10, 30), (40, 50)]);
        assert_eq!(a.absorb_front(5), 5);
        assert_eq!(a.absorb_front(10), 30);
        assert_eq!(a.as_slice(), &[(40, 50)]);
    }
}
