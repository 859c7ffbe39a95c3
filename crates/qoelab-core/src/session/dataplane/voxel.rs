//! `voxel`: VOXEL's segment fetching (Palmer's dissertation §6.2; the public client's request
//! sequence, seed-systems.md §1.3): per segment one `multibytes` request whose response carries
//! the segment's reliable ranges (container boxes, the I-frame, every frame's header) and then the
//! droppable frames the ABR asked for, in importance order — the droppable frames sent
//! unreliably over QUIC* (`reliability = "partial"`), or everything reliably
//! (`reliability = "reliable"`: VOXEL rel, or plain QUIC / TCP).
//!
//! Once the segment is in the buffer, while the player would otherwise idle with a full buffer
//! (slack = buffer + segment duration − buffer_max, i.e. the time until the next request is due)
//! exceeds the `safety` margin (kSafetyMargin, 70 ms):
//! 1. **hole filling**: the droppable bytes lost in transit (zero-filled by the receiver) are
//!    requested again (unreliably, one multi-range request per round, at most `max_rounds`);
//! 2. **optional ranges**: the droppable frames not requested yet, in importance order.
//!
//! A request still running when the slack falls to the margin is cut short (its unsent bytes
//! skipped on QUIC; on TCP the connection is reset once nothing more can be used) and what
//! arrived is kept. The segment plays at the SSIM level of the longest prefix of its droppable
//! frames (in importance order) that arrived whole ([`crate::video::voxel::VoxelSegment::ssim_with`]);
//! a frame with a hole and every frame after it count as dropped — a lower bound on the SSIM of
//! a decoder that conceals partly received frames.
//!
//! Keep-partial abandonment (ABR*): the ABR may truncate the download in flight to a level
//! ([`crate::abr::ProgressAction::KeepPartial`]); the rest of the response is skipped (QUIC) or
//! the connection is reset when the kept bytes are in (TCP). Abandonment to a lower rung cancels
//! the response the same way and the player fetches the segment again.
//!
//! A video without a VOXEL table is fetched whole and reliably (as `sequential`).

use super::{Cx, DataPlane, DataPlaneEntry};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::player::{DlId, Player};
use crate::session::http::{Delivery, ReqId};
use crate::session::{ConnId, Dir};
use crate::time::{Ns, MS, NEVER};
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "reliability",
        unit: Unit::Choice(&["partial", "reliable"]),
        default: Default::Str("partial"),
        doc: "partial: droppable frames sent unreliably (QUIC*; unreliable only over transport \"quic\", over TCP \
              everything arrives anyway); reliable: everything reliably (VOXEL rel, or any transport)",
    },
    ParamSpec {
        name: "hole_filling",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "request lost droppable bytes again while the slack exceeds the safety margin",
    },
    ParamSpec {
        name: "optional_ranges",
        unit: Unit::Bool,
        default: Default::Bool(true),
        doc: "fetch the droppable frames the ABR did not ask for while the slack exceeds the safety margin",
    },
    ParamSpec {
        name: "safety",
        unit: Unit::Duration,
        default: Default::Int(70 * MS as i64),
        doc: "kSafetyMargin: extra requests only while the slack exceeds it",
    },
    ParamSpec {
        name: "max_rounds",
        unit: Unit::Int,
        default: Default::Int(4),
        doc: "hole-filling requests per segment at most",
    },
];

pub const ENTRY: DataPlaneEntry = DataPlaneEntry {
    name: "voxel",
    summary: "VOXEL: reliable ranges + droppable frames (unreliable over QUIC*), hole filling, optional ranges",
    reference: "Palmer, dissertation (2022) sec. 6.2; Palmer et al., VOXEL, CoNEXT 2021",
    params: PARAMS,
    needs_layout: false,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn DataPlane>, ParamError> {
    let rounds = p.req_u64(PARAMS, "max_rounds")?;
    if rounds > 100 {
        return Err(perr("max_rounds", format!("expected 0 to 100 rounds, found {rounds}")));
    }
    let safety = p.req_u64(PARAMS, "safety")?;
    if safety > 10_000 * MS {
        return Err(perr("safety", "expected a margin of at most 10 s"));
    }
    Ok(Box::new(VoxelPlane {
        partial: p.choice(PARAMS, "reliability")? == "partial",
        hole_filling: p.bool(PARAMS, "hole_filling")?,
        optional: p.bool(PARAMS, "optional_ranges")?,
        safety,
        max_rounds: rounds as u32,
        started: false,
        state: State::Idle,
        stats: VoxelStats::default(),
    }))
}

/// Counters of the plane (body bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VoxelStats {
    /// Droppable bytes requested unreliably (first requests).
    pub unreliable_requested: u64,
    /// Of the first requests' droppable bytes, lost in transit.
    pub lost_first: u64,
    /// Bytes requested again by hole filling, and of them received.
    pub hole_fill_requested: u64,
    pub hole_fill_received: u64,
    /// Optional-range bytes requested and received.
    pub optional_requested: u64,
    pub optional_received: u64,
    /// Bytes still missing in played segments (lost and not recovered).
    pub residual_lost: u64,
    /// Extra requests cut short by the slack.
    pub cut_short: u64,
}

/// A segment's bytes in body coordinates: `[0, reliable)` the reliable ranges, then the droppable
/// frames in importance order.
#[derive(Clone, Debug)]
struct Seg {
    segment: usize,
    rung: usize,
    reliable: u64,
    /// End (body coordinate) of each droppable frame.
    frame_end: Vec<u64>,
    /// Body coordinate up to which the segment was requested.
    fetched_to: u64,
    /// Missing body intervals `[a, b)` below `fetched_to`, in order.
    missing: Vec<(u64, u64)>,
    rounds: u32,
}

impl Seg {
    fn total(&self) -> u64 {
        self.frame_end.last().copied().unwrap_or(self.reliable)
    }
    /// Droppable frames received whole, from the most important on.
    fn frames_whole(&self) -> usize {
        let first_gap = self.missing.first().map_or(self.fetched_to, |m| m.0.min(self.fetched_to));
        self.frame_end.iter().take_while(|&&e| e <= first_gap).count()
    }
    fn missing_bytes(&self) -> u64 {
        self.missing.iter().map(|(a, b)| b - a).sum()
    }
}

enum Extra {
    HoleFill,
    Optional,
}

enum State {
    Idle,
    /// The segment's request.
    Main {
        req: ReqId,
        /// Response-stream offset of the body.
        start: u64,
        dl: DlId,
        seg: Seg,
        first: bool,
        last_progress: Ns,
        /// Body bytes the player keeps (keep-partial), if truncated.
        keep: Option<u64>,
    },
    /// A hole-filling or optional request after the segment entered the buffer; `map` = the
    /// segment intervals its body carries, in order.
    Extra {
        req: ReqId,
        start: u64,
        kind: Extra,
        seg: Seg,
        map: Vec<(u64, u64)>,
        body_len: u64,
    },
}

pub struct VoxelPlane {
    partial: bool,
    hole_filling: bool,
    optional: bool,
    safety: Ns,
    max_rounds: u32,
    /// The player was told it may truncate downloads (on the first pump).
    started: bool,
    state: State,
    pub stats: VoxelStats,
}

const C0: ConnId = ConnId(0);

impl VoxelPlane {
    /// The slack once the segment is in the buffer: time until the player's next request is due.
    fn slack(&self, now: Ns, player: &Player) -> i128 {
        let seg = player.video().segment_duration;
        player.buffer_at(now) as i128 + seg as i128 - player.buffer_max() as i128
    }

    fn seg_of(&self, player: &Player, segment: usize, rung: usize, requested: u64) -> Seg {
        let (reliable, frame_end) = match player.video().voxel.as_ref() {
            Some(t) => {
                let s = &t.segments[segment][rung];
                let reliable = s.reliable_bytes();
                let frame_end = s
                    .unreliable
                    .iter()
                    .scan(reliable, |end, &(a, b)| {
                        *end += b - a + 1;
                        Some(*end)
                    })
                    .collect();
                (reliable, frame_end)
            }
            None => (requested, Vec::new()),
        };
        Seg { segment, rung, reliable, frame_end, fetched_to: requested, missing: Vec::new(), rounds: 0 }
    }

    /// The SSIM the segment plays at with what arrived (None without a VOXEL table).
    fn ssim(&self, player: &Player, seg: &Seg) -> Option<f64> {
        let t = player.video().voxel.as_ref()?;
        let s = &t.segments[seg.segment][seg.rung];
        let k = seg.frames_whole();
        // below the listed levels: the lowest listed one (an upper bound; docs)
        s.ssim_with(k).or_else(|| s.ssims.first().map(|e| e.0))
    }

    /// Zero-filled body intervals of the response of `req` on the connection, in body
    /// coordinates of `[0, len)`, mapped through `map` (segment intervals carried in order).
    fn holes(cx: &Cx, start: u64, len: u64, map: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let hs = cx.t.holes(C0, Dir::Response, start, start + len);
        let mut out = Vec::new();
        for (a, b) in hs {
            let (mut a, b) = (a - start, b - start);
            // body offset -> segment interval through the map
            let mut off = 0;
            for &(ma, mb) in map {
                let n = mb - ma;
                if a < off + n && b > off {
                    let x = ma + a.max(off) - off;
                    let y = ma + b.min(off + n) - off;
                    if x < y {
                        out.push((x, y));
                    }
                    a = a.max(off + n);
                }
                off += n;
                if a >= b {
                    break;
                }
            }
        }
        out
    }

    fn issue_main(&mut self, now: Ns, cx: &mut Cx) {
        let Some(req) = cx.player.poll(now) else { return };
        let seg = self.seg_of(cx.player, req.segment, req.rung, req.bytes);
        let has_table = cx.player.video().voxel.is_some();
        let (rel, unrel) = if has_table && self.partial && cx.t.partial_reliability(C0) {
            let r = seg.reliable.min(req.bytes);
            (r, req.bytes - r)
        } else {
            (req.bytes, 0)
        };
        self.stats.unreliable_requested += unrel;
        let id = cx.http.get_parts(now, C0, rel, unrel, cx.t);
        let start = cx.http.body_start(C0, id).expect("just issued");
        let off =
            req.range.map(|r| r.first).or_else(|| cx.player.video().byte_range(req.segment, req.rung).map(|r| r.0));
        cx.log.issue(now, id, C0, "segment", (req.segment, req.segment), req.rung, off, req.bytes);
        self.state = State::Main { req: id, start, dl: req.id, seg, first: false, last_progress: now, keep: None };
    }

    /// Cut the response of `req` (body `[0, len)`) short from body offset `from`: skip on QUIC,
    /// else reset the connection. `used`: the client keeps the body before `from` (not waste).
    /// Returns whether the connection was reset.
    fn cut(now: Ns, cx: &mut Cx, (req, start): (ReqId, u64), (from, used): (u64, bool), len: u64) -> bool {
        if from >= len {
            return false;
        }
        let kept = if used { from } else { 0 };
        if Self::skip_rest(now, cx, (req, start), (from, kept), len) {
            return false;
        }
        cx.reset_keeping(now, C0, kept);
        true
    }

    /// QUIC: the sender skips the response of `req` from body offset `from` on, and HTTP counts it
    /// cancelled after the client used its first `kept` body bytes. False where the transport
    /// cannot skip (TCP).
    fn skip_rest(now: Ns, cx: &mut Cx, (req, start): (ReqId, u64), (from, kept): (u64, u64), len: u64) -> bool {
        if !cx.t.skip(now, C0, Dir::Response, start + from, start + len) {
            return false;
        }
        cx.http.cut_short(C0, req, kept);
        true
    }

    /// The segment is in the buffer: start the next extra request if the slack allows, else
    /// finish the segment.
    fn after(&mut self, now: Ns, mut seg: Seg, cx: &mut Cx) {
        let slack = self.slack(now, cx.player);
        if slack > self.safety as i128 && cx.player.video().voxel.is_some() {
            let can_unrel = self.partial && cx.t.partial_reliability(C0);
            if self.hole_filling && !seg.missing.is_empty() && seg.rounds < self.max_rounds {
                seg.rounds += 1;
                let map = std::mem::take(&mut seg.missing);
                let n: u64 = map.iter().map(|(a, b)| b - a).sum();
                self.stats.hole_fill_requested += n;
                let (r, u) = if can_unrel { (0, n) } else { (n, 0) };
                let id = cx.http.get_parts(now, C0, r, u, cx.t);
                let start = cx.http.body_start(C0, id).expect("just issued");
                cx.log.issue(now, id, C0, "holes", (seg.segment, seg.segment), seg.rung, None, n);
                // what the request carries is missing until it arrives
                seg.missing = map.clone();
                self.state = State::Extra { req: id, start, kind: Extra::HoleFill, seg, map, body_len: n };
                return;
            }
            if self.optional && seg.fetched_to < seg.total() {
                let map = vec![(seg.fetched_to, seg.total())];
                let n = seg.total() - seg.fetched_to;
                self.stats.optional_requested += n;
                let (r, u) = if can_unrel { (0, n) } else { (n, 0) };
                let id = cx.http.get_parts(now, C0, r, u, cx.t);
                let start = cx.http.body_start(C0, id).expect("just issued");
                cx.log.issue(now, id, C0, "optional", (seg.segment, seg.segment), seg.rung, None, n);
                // requested from here on; missing until it arrives
                seg.missing.push((seg.fetched_to, seg.total()));
                seg.fetched_to = seg.total();
                self.state = State::Extra { req: id, start, kind: Extra::Optional, seg, map, body_len: n };
                return;
            }
        }
        self.stats.residual_lost += seg.missing_bytes();
        self.state = State::Idle;
    }

    fn on_main(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        let State::Main { req, start, dl, seg, first, last_progress, keep } = &mut self.state else { return false };
        if *req != d.id {
            return false;
        }
        let (req, dl, start) = (*req, *dl, *start);
        if d.received > 0 && !*first {
            *first = true;
            cx.player.first_byte(now, dl);
        }
        let total = cx.player.download_total(dl).unwrap_or(d.body_len);
        let complete = d.body >= total;
        let interval = cx.http.cfg().progress_interval;
        if keep.is_none() && (complete || now >= *last_progress + interval) {
            *last_progress = now;
            if let Some(a) = cx.player.bytes(now, dl, d.body.min(total)) {
                match a.keep {
                    Some(k) => {
                        *keep = Some(k);
                        seg.fetched_to = seg.fetched_to.min(k);
                        // QUIC: skip the rest now; TCP: reset once the kept bytes are in
                        if k >= d.body_len {
                            *keep = Some(u64::MAX); // nothing to reset later
                        } else if Self::skip_rest(now, cx, (req, start), (k, k), d.body_len) {
                            // as a reset after the kept bytes counts it (TCP, below)
                            cx.log.cancel(now, req);
                            *keep = Some(u64::MAX);
                        }
                        return self.on_main(now, d, cx);
                    }
                    None => {
                        // abandoned to a lower rung: cut the response, fetch again
                        Self::cut(now, cx, (req, start), (d.body, false), d.body_len);
                        cx.log.cancel(now, req);
                        self.state = State::Idle;
                        return true;
                    }
                }
            }
        }
        let State::Main { seg, keep, .. } = &mut self.state else { unreachable!() };
        let total = cx.player.download_total(dl).unwrap_or(d.body_len);
        if d.body < total {
            return false;
        }
        // the segment's bytes are in (received or zero-filled)
        let mut seg = seg.clone();
        let keep = *keep;
        seg.fetched_to = seg.fetched_to.min(total);
        seg.missing = Self::holes(cx, start, total, &[(0, total)]);
        let lost = seg.missing_bytes();
        self.stats.lost_first += lost;
        let ssim = self.ssim(cx.player, &seg);
        cx.player.set_received_quality(dl, ssim, lost);
        cx.player.bytes(now, dl, total);
        cx.player.complete(now, dl);
        if matches!(keep, Some(k) if k != u64::MAX) {
            // TCP: the kept bytes are in; drop the rest of the response
            Self::cut(now, cx, (req, start), (total, true), d.body_len);
        }
        self.after(now, seg, cx);
        true
    }

    fn on_extra(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        let State::Extra { req, .. } = &self.state else { return false };
        if *req != d.id {
            return false;
        }
        if d.body < d.body_len {
            return false;
        }
        self.finish_extra(now, cx, d.body_len)
    }

    /// The extra request is over (complete, or cut after `got` body bytes): account, revise
    /// the segment's quality, go on.
    fn finish_extra(&mut self, now: Ns, cx: &mut Cx, got: u64) -> bool {
        let State::Extra { start, kind, seg, map, .. } = std::mem::replace(&mut self.state, State::Idle) else {
            return false;
        };
        let mut seg = seg;
        // what the request carried: received unless a hole or beyond `got`
        let mut holes = Self::holes(cx, start, got, &map);
        let mut off = 0;
        let optional = matches!(kind, Extra::Optional);
        let mut unfetched = None;
        for &(a, b) in &map {
            let n = b - a;
            if off + n > got {
                let from = a + got.saturating_sub(off);
                if optional {
                    // frames the cut request never delivered were not fetched (not lost)
                    unfetched = Some((from, b));
                } else {
                    holes.push((from, b));
                }
            }
            off += n;
        }
        holes.sort_unstable();
        let carried: u64 = map.iter().map(|(a, b)| b - a).sum::<u64>() - unfetched.map_or(0, |(a, b)| b - a);
        let still: u64 = holes.iter().map(|(a, b)| b - a).sum();
        let received = carried - still.min(carried);
        if let Some((from, _)) = unfetched {
            seg.fetched_to = from;
        }
        match kind {
            Extra::HoleFill => self.stats.hole_fill_received += received,
            Extra::Optional => self.stats.optional_received += received,
        }
        // the segment's missing intervals: those outside this request, plus its holes
        let mut missing: Vec<(u64, u64)> = subtract(&seg.missing, &map);
        missing.extend(holes);
        missing.retain(|&(a, _)| a < seg.fetched_to);
        for m in missing.iter_mut() {
            m.1 = m.1.min(seg.fetched_to);
        }
        missing.sort_unstable();
        seg.missing = merge(missing);
        let ssim = self.ssim(cx.player, &seg);
        cx.player.revise_segment(seg.segment, ssim, seg.missing_bytes(), received);
        self.after(now, seg, cx);
        true
    }
}

/// `xs` minus every interval of `ys` (both sorted, disjoint).
fn subtract(xs: &[(u64, u64)], ys: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(a, b) in xs {
        let mut cur = a;
        for &(c, d) in ys {
            if d <= cur || c >= b {
                continue;
            }
            if c > cur {
                out.push((cur, c));
            }
            cur = cur.max(d);
        }
        if cur < b {
            out.push((cur, b));
        }
    }
    out
}

/// Sorted intervals merged where they touch or overlap.
fn merge(xs: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(xs.len());
    for (a, b) in xs {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

impl DataPlane for VoxelPlane {
    fn name(&self) -> &'static str {
        "voxel"
    }
    fn voxel_stats(&self) -> Option<VoxelStats> {
        Some(self.stats)
    }
    fn pump(&mut self, now: Ns, cx: &mut Cx) {
        if !self.started {
            cx.player.enable_keep_partial();
            self.started = true;
        }
        match &self.state {
            State::Idle => self.issue_main(now, cx),
            State::Main { .. } => {}
            State::Extra { req, start, body_len, .. } => {
                // out of slack: cut the request short and keep what arrived
                if self.slack(now, cx.player) <= self.safety as i128 {
                    let (req, start, len) = (*req, *start, *body_len);
                    let got = cx.log.received(req).min(len);
                    self.stats.cut_short += 1;
                    Self::cut(now, cx, (req, start), (got, true), len);
                    cx.log.cancel(now, req);
                    self.finish_extra(now, cx, got);
                    if let State::Idle = self.state {
                        self.issue_main(now, cx);
                    }
                }
            }
        }
    }
    fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        cx.log.deliver_to(now, d, cx.player);
        match self.state {
            State::Main { .. } => self.on_main(now, d, cx),
            State::Extra { .. } => self.on_extra(now, d, cx),
            State::Idle => false,
        }
    }
    fn poll_at(&self, player: &Player) -> Ns {
        match &self.state {
            State::Idle => player.poll_at(),
            State::Main { .. } => player.playback_at(),
            State::Extra { .. } => {
                // when the slack reaches the margin (the buffer drains while playing)
                let slack = self.slack(player.clock(), player);
                let left = (slack - self.safety as i128).max(0) as Ns;
                let t = if player.phase() == crate::player::Phase::Playing {
                    player.clock().saturating_add(left)
                } else {
                    NEVER
                };
                t.min(player.playback_at())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_helpers() {
        assert_eq!(subtract(&[(0, 10), (20, 30)], &[(5, 25)]), vec![(0, 5), (25, 30)]);
        assert_eq!(subtract(&[(0, 10)], &[]), vec![(0, 10)]);
        assert_eq!(merge(vec![(0, 5), (5, 8), (10, 12), (11, 20)]), vec![(0, 8), (10, 20)]);
    }

    #[test]
    fn frames_whole_stops_at_the_first_hole() {
        let s = Seg {
            segment: 0,
            rung: 0,
            reliable: 100,
            frame_end: vec![150, 200, 260, 300],
            fetched_to: 300,
            missing: vec![(210, 220)],
            rounds: 0,
        };
        assert_eq!(s.frames_whole(), 2);
        let s = Seg { missing: vec![], fetched_to: 260, ..s };
        assert_eq!(s.frames_whole(), 3);
        let s = Seg { missing: vec![(120, 130)], ..s };
        assert_eq!(s.frames_whole(), 0);
    }
}
