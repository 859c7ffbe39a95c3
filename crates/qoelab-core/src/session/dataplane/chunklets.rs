//! `chunklets`: intra-segment parallel retrieval (Kua & Armitage, "Optimising DASH over
//! AQM-enabled Gateways Using Intra-chunk Parallel Retrieval (Chunklets)", ICCCN 2017). Each
//! segment of Y bytes is split into `n` consecutive byte ranges — `n - 1` of `floor(Y / n)` bytes
//! and a last one of the rest (sec. III-B.3) — requested at the same time, one on each of `n`
//! persistent connections; the segment is complete when every range has arrived. Over FQ-CoDel
//! each connection gets its own flow queue, so while the ranges overlap the client holds `n`
//! shares of the bottleneck.
//!
//! The player sees the segment's bytes as they arrive on any connection (first byte = the first
//! response byte of any range; the per-segment log then has the paper's AR, bytes over first to
//! last byte). With `proxy = true` it sees them as dash.js behind the paper's store-and-forward
//! proxy did: nothing until the last range is complete, then the whole segment at once (the
//! request-to-last-byte throughput is what dash.js measured). Abandonment resets every connection
//! with a range still arriving. Segments smaller than `n` bytes use `Y` ranges of one byte.

use super::{Cx, DataPlane, DataPlaneEntry, Outcome, Track};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::player::Player;
use crate::session::http::{Delivery, ReqId};
use crate::session::ConnId;
use crate::time::Ns;
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "n",
        unit: Unit::Int,
        default: Default::Int(6),
        doc: "chunklets per segment = persistent connections (the paper sweeps 1-10; 1 = sequential)",
    },
    ParamSpec {
        name: "proxy",
        unit: Unit::Bool,
        default: Default::Bool(false),
        doc: "store-and-forward: the player sees a segment only when its last chunklet arrived (the paper's proxy)",
    },
];

pub const ENTRY: DataPlaneEntry = DataPlaneEntry {
    name: "chunklets",
    summary: "each segment as n parallel byte ranges over n persistent connections",
    reference: "Kua & Armitage, Chunklets, ICCCN 2017, sec. III-B.3",
    params: PARAMS,
    needs_layout: true,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn DataPlane>, ParamError> {
    let n = p.req_u64(PARAMS, "n")?;
    if !(1..=64).contains(&n) {
        return Err(perr("n", format!("expected 1 to 64 connections, found {n}")));
    }
    Ok(Box::new(Chunklets { n: n as u32, proxy: p.bool(PARAMS, "proxy")?, cur: None }))
}

/// The paper's split of `y` bytes into `n` ranges: sizes (n - 1 of floor(y / n), the last the
/// rest); `min(n, y)` ranges so that none is empty.
pub fn split(y: u64, n: u32) -> Vec<u64> {
    let n = (n as u64).min(y).max(1);
    let s = y / n;
    let mut v = vec![s; n as usize];
    v[n as usize - 1] = y - (n - 1) * s;
    v
}

struct Part {
    req: ReqId,
    conn: ConnId,
    size: u64,
    got: u64,
    started: bool,
    done: bool,
}

struct Chunk {
    track: Track,
    total: u64,
    parts: Vec<Part>,
    /// Body bytes received over all parts, parts started and parts done (kept up to date).
    got: u64,
    started: usize,
    done: usize,
}

pub struct Chunklets {
    n: u32,
    proxy: bool,
    cur: Option<Chunk>,
}

impl DataPlane for Chunklets {
    fn name(&self) -> &'static str {
        "chunklets"
    }
    fn connections(&self) -> u32 {
        self.n
    }
    fn pump(&mut self, now: Ns, cx: &mut Cx) {
        if self.cur.is_some() {
            return;
        }
        let Some(req) = cx.player.poll(now) else { return };
        let mut parts = Vec::new();
        let mut off = req.range.map(|r| r.first);
        for (i, size) in split(req.bytes, self.n).into_iter().enumerate() {
            let conn = ConnId(i as u32);
            let id = cx.http.get(now, conn, size, cx.t);
            cx.log.issue(now, id, conn, "chunklet", (req.segment, req.segment), req.rung, off, size);
            off = off.map(|o| o + size);
            parts.push(Part { req: id, conn, size, got: 0, started: false, done: false });
        }
        self.cur = Some(Chunk { track: Track::new(req.id, now), total: req.bytes, parts, got: 0, started: 0, done: 0 });
    }
    fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        cx.log.deliver_to(now, d, cx.player);
        let interval = cx.http.cfg().progress_interval;
        let Some(c) = self.cur.as_mut() else { return false };
        // Request ids of a chunk are consecutive: index directly.
        let Some(i) = d.id.checked_sub(c.parts[0].req).map(|i| i as usize).filter(|&i| i < c.parts.len()) else {
            return false;
        };
        let p = &mut c.parts[i];
        let got = d.body.min(p.size);
        c.got += got - p.got;
        p.got = got;
        if !p.started && d.received > 0 {
            p.started = true;
            c.started += 1;
        }
        if !p.done && d.complete() {
            p.done = true;
            c.done += 1;
        }
        let all = c.done == c.parts.len();
        let out = if self.proxy {
            if !all {
                return false;
            }
            c.track.report(now, true, c.got, c.total, interval, cx.player)
        } else {
            c.track.report(now, c.started > 0, c.got, c.total, interval, cx.player)
        };
        match out {
            Outcome::Nothing => false,
            Outcome::Complete => {
                self.cur = None;
                true
            }
            Outcome::Abandoned => {
                let c = self.cur.take().expect("chunk");
                for p in c.parts.iter().filter(|p| !p.done) {
                    cx.reset(now, p.conn);
                }
                true
            }
        }
    }
    fn on_quiet_delivery(&mut self, now: Ns, d: &Delivery, interval: Ns) -> bool {
        let Some(c) = self.cur.as_mut() else { return false };
        let Some(i) = d.id.checked_sub(c.parts[0].req).map(|i| i as usize).filter(|&i| i < c.parts.len()) else {
            return false;
        };
        let p = &c.parts[i];
        // (the HTTP layer passes only a started response that this delivery does not complete)
        debug_assert!(p.started && !p.done && !d.complete());
        let got = d.body.min(p.size);
        let total = c.got - p.got + got;
        // proxy: nothing is reported before every part is done, and this one is not
        if !self.proxy && !c.track.quiet(now, total, c.total, interval) {
            return false;
        }
        c.got = total;
        c.parts[i].got = got;
        true
    }
    fn poll_at(&self, player: &Player) -> Ns {
        player.poll_at()
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn paper_split_tiles_the_segment() {
        assert_eq!(split(10, 3), vec![3, 3, 4]);
        assert_eq!(split(875_000, 6), vec![145_833, 145_833, 145_833, 145_833, 145_833, 145_835]);
        assert_eq!(split(5, 8), vec![1, 1, 1, 1, 1]);
        assert_eq!(split(100, 1), vec![100]);
        for (y, n) in [(1_u64, 1_u32), (7, 7), (1_000_003, 10), (11_500, 64)] {
            let v = split(y, n);
            assert_eq!(v.iter().sum::<u64>(), y);
            let s = v[0];
            assert!(v[..v.len() - 1].iter().all(|&x| x == s));
            assert!(v[v.len() - 1] >= s && v[v.len() - 1] < s + n as u64);
        }
    }
}
