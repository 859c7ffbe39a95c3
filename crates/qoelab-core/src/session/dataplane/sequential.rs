//! `sequential`: one request at a time on one persistent connection — a GET per segment, the next
//! one issued when the last byte of the previous response has arrived (dash.js's default and the
//! "DASH" baseline of the Sprint and Chunklets papers). Abandonment resets the connection.

use super::{Cx, DataPlane, DataPlaneEntry, Outcome, Track};
use crate::params::{ParamError, Params};
use crate::player::Player;
use crate::session::http::{Delivery, ReqId};
use crate::session::ConnId;
use crate::time::Ns;
use crate::video::Video;

pub const ENTRY: DataPlaneEntry = DataPlaneEntry {
    name: "sequential",
    summary: "one GET per segment, one at a time, on one persistent connection (the default)",
    reference: "HTTP/1.1 (RFC 9112); dash.js",
    params: &[],
    needs_layout: false,
    build,
};

fn build(_p: &Params, _v: &Video) -> Result<Box<dyn DataPlane>, ParamError> {
    Ok(Box::new(Sequential { cur: None }))
}

pub struct Sequential {
    cur: Option<(ReqId, Track)>,
}

impl DataPlane for Sequential {
    fn name(&self) -> &'static str {
        "sequential"
    }
    fn pump(&mut self, now: Ns, cx: &mut Cx) {
        if self.cur.is_some() {
            return;
        }
        if let Some(req) = cx.player.poll(now) {
            let id = cx.http.get(now, ConnId(0), req.bytes, cx.t);
            let off = req.range.map(|r| r.first);
            cx.log.issue(now, id, ConnId(0), "segment", (req.segment, req.segment), req.rung, off, req.bytes);
            self.cur = Some((id, Track::new(req.id, now)));
        }
    }
    fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        cx.log.deliver_to(now, d, cx.player);
        let interval = cx.http.cfg().progress_interval;
        let Some((id, tr)) = &mut self.cur else { return false };
        if *id != d.id {
            return false;
        }
        match tr.report(now, d.received > 0, d.body, d.body_len, interval, cx.player) {
            Outcome::Nothing => false,
            Outcome::Complete => {
                self.cur = None;
                true
            }
            Outcome::Abandoned => {
                self.cur = None;
                cx.reset(now, ConnId(0));
                true
            }
        }
    }
    fn on_quiet_delivery(&mut self, now: Ns, d: &Delivery, interval: Ns) -> bool {
        // (no counters of its own: the request log and the track are all it updates)
        matches!(&self.cur, Some((id, tr)) if *id == d.id && tr.quiet(now, d.body, d.body_len, interval))
    }
    fn poll_at(&self, player: &Player) -> Ns {
        player.poll_at()
    }
}
