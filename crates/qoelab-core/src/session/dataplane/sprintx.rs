//! `sprint-x`: Sprint's variant that runs in a plain web page (Arye, Sen, Freedman, sec. IV-B2):
//! instead of pipelining, one *expanded range request* at a time covers as many consecutive
//! segments of the current rung as make up Program 1's chunk size (at least one segment). The
//! ABR is consulted at each segment boundary inside the range; if it picks another rung, the
//! range is cancelled — the connection is reset, as a browser aborting an XHR does, so the rest
//! of the range already sent is wasted and the new connection starts from its initial window —
//! and a new range is requested from the next segment at the new rung. A range cannot be paused,
//! so the buffer may overfill by up to one range. Needs a video with a byte layout (the segments
//! of a rung must be contiguous in its file).
//!
//! Estimates and the RTT probe are Sprint's (see [`super::sprint`]), with one bandwidth sample
//! per segment of a range (Sprint has one per segment request), none for the range as a whole.

use super::sprint::{parse, Estimates, PARAMS};
use super::{Cx, DataPlane, DataPlaneEntry, Outcome, Track};
use crate::params::{ParamError, Params};
use crate::player::{Player, Request};
use crate::session::http::{Delivery, ReqId};
use crate::session::ConnId;
use crate::time::{Ns, NEVER};
use crate::video::Video;
use std::sync::Arc;

pub const ENTRY: DataPlaneEntry = DataPlaneEntry {
    name: "sprint-x",
    summary: "expanded byte-range requests of Program 1's size, cancelled and re-issued on a bitrate switch",
    reference: "Arye, Sen, Freedman, Poor Video Streaming Performance Explained (and Fixed), sec. IV-B2",
    params: PARAMS,
    needs_layout: true,
    build,
};

fn build(p: &Params, v: &Video) -> Result<Box<dyn DataPlane>, ParamError> {
    let cfg = parse(p)?;
    Ok(Box::new(SprintX { est: Estimates::new(cfg), video: Arc::new(v.clone()), range: None }))
}

struct Range {
    req: ReqId,
    rung: usize,
    first: usize,
    last: usize,
    /// Body offset of segment `first + i` inside the range.
    offs: Vec<u64>,
    /// The segment being reported to the player and its download (None: waiting for the ABR).
    cur: usize,
    track: Option<Track>,
    /// When the current segment's bytes started (for the bandwidth sample).
    seg_start: Option<Ns>,
    /// The range's latest delivery (replayed when the ABR decides after a delay).
    last_delivery: Option<Delivery>,
}

pub struct SprintX {
    est: Estimates,
    video: Arc<Video>,
    range: Option<Range>,
}

impl SprintX {
    fn start_range(&mut self, now: Ns, req: &Request, cx: &mut Cx) {
        let v = &self.video;
        let target = self.est.chunk_size();
        let mut last = req.segment;
        let mut bytes = v.size(req.segment, req.rung);
        while bytes < target && last + 1 < v.n_segments() && v.span_range(req.segment, last + 1, req.rung).is_some() {
            last += 1;
            bytes += v.size(last, req.rung);
        }
        let mut offs = Vec::with_capacity(last - req.segment + 1);
        let mut o = 0;
        for s in req.segment..=last {
            offs.push(o);
            o += v.size(s, req.rung);
        }
        let id = cx.http.get(now, ConnId(0), bytes, cx.t);
        let off = v.offset(req.segment, req.rung);
        cx.log.issue(now, id, ConnId(0), "range", (req.segment, last), req.rung, off, bytes);
        self.range = Some(Range {
            req: id,
            rung: req.rung,
            first: req.segment,
            last,
            offs,
            cur: req.segment,
            track: Some(Track::new(req.id, now)),
            seg_start: None,
            last_delivery: None,
        });
    }

    /// The ABR's decision for the next segment inside the range arrived.
    fn decided(&mut self, now: Ns, req: Request, cx: &mut Cx) -> bool {
        let r = self.range.as_mut().expect("range");
        debug_assert_eq!(req.segment, r.cur);
        if req.rung == r.rung && req.segment == r.cur {
            r.track = Some(Track::new(req.id, now));
            false
        } else {
            // A switch: cancel the range (reset the connection) and request a new one.
            cx.log.switch_cancels.push(now);
            // the segments before `cur` were played: only what came after them is waste
            let kept = r.offs[r.cur - r.first];
            self.range = None;
            cx.reset_keeping(now, ConnId(0), kept);
            self.start_range(now, &req, cx);
            true
        }
    }

    /// Report the range's body progress to the player, segment by segment.
    fn progress(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        let interval = cx.http.cfg().progress_interval;
        loop {
            let Some(r) = self.range.as_mut() else { return true };
            let Some(tr) = r.track.as_mut() else { return false };
            let i = r.cur - r.first;
            let size = self.video.size(r.cur, r.rung);
            let off = r.offs[i];
            let got = d.body.saturating_sub(off).min(size);
            let first = if r.cur == r.first { d.received > 0 } else { d.body > off };
            if first && r.seg_start.is_none() {
                r.seg_start = Some(now);
            }
            match tr.report(now, first, got, size, interval, cx.player) {
                Outcome::Nothing => return false,
                Outcome::Abandoned => {
                    self.range = None;
                    cx.reset_keeping(now, ConnId(0), off);
                    return true;
                }
                Outcome::Complete => {
                    let start = r.seg_start.unwrap_or(now);
                    self.est.sample(size, start, now);
                    if r.cur == r.last {
                        self.range = None;
                        return true;
                    }
                    r.cur += 1;
                    r.track = None;
                    r.seg_start = Some(now);
                    match cx.player.poll_next(now, true) {
                        None => return true, // the ABR asked for a delay: decide in pump
                        Some(req) => {
                            if self.decided(now, req, cx) {
                                return true;
                            }
                        }
                    }
                }
            }
        }
    }
}

impl DataPlane for SprintX {
    fn name(&self) -> &'static str {
        "sprint-x"
    }
    fn connections(&self) -> u32 {
        2
    }
    fn probe_slot(&self) -> Option<u32> {
        Some(1)
    }
    fn pump(&mut self, now: Ns, cx: &mut Cx) {
        self.est.pump(now, cx);
        match &self.range {
            None => {
                if let Some(req) = cx.player.poll_next(now, false) {
                    self.start_range(now, &req, cx);
                }
            }
            Some(r) if r.track.is_none() => {
                let last = r.last_delivery;
                if let Some(req) = cx.player.poll_next(now, true) {
                    if !self.decided(now, req, cx) {
                        // Bytes of this segment may have arrived already: report them now.
                        if let Some(d) = last {
                            self.progress(now, &d, cx);
                        }
                    }
                }
            }
            Some(_) => {}
        }
    }
    fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        // bandwidth samples are per segment (`progress`), not per range: only the probe here
        if self.est.on_probe_delivery(now, d) {
            cx.log.deliver_to(now, d, cx.player);
            return d.complete();
        }
        cx.log.deliver_to(now, d, cx.player);
        match self.range.as_mut() {
            Some(r) if r.req == d.id => r.last_delivery = Some(*d),
            _ => return false,
        }
        self.progress(now, d, cx)
    }
    fn poll_at(&self, player: &Player) -> Ns {
        let req = match &self.range {
            None => player.request_at(),
            Some(r) if r.track.is_none() => player.decision_at(),
            Some(_) => NEVER,
        };
        req.min(player.playback_at()).min(self.est.poll_at())
    }
}
