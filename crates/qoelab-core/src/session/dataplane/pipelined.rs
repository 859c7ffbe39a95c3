//! `pipelined`: plain HTTP/1.1 pipelining of a fixed depth on one persistent connection. The
//! player's next segment is requested while up to `depth` requests are outstanding, so the server
//! always has the next response queued behind the current one and TCP does not idle between
//! segments; the pipeline stops when the buffer (counting the media in flight) is full. This is
//! the "train not enforced" ablation of Sprint (Arye et al., Fig. 11).
//!
//! Abandonment resets the connection, which cancels every request behind the abandoned one too;
//! the player requests them again.

use super::{Cx, DataPlane, DataPlaneEntry, Outcome, Track};
use crate::params::{perr, Default, ParamError, ParamSpec, Params, Unit};
use crate::player::Player;
use crate::session::http::{Delivery, ReqId};
use crate::session::ConnId;
use crate::time::{Ns, NEVER};
use crate::video::Video;
use std::collections::VecDeque;

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "depth",
    unit: Unit::Int,
    default: Default::Int(2),
    doc: "requests outstanding at once (Sprint's minimum pipeline depth, 2)",
}];

pub const ENTRY: DataPlaneEntry = DataPlaneEntry {
    name: "pipelined",
    summary: "HTTP/1.1 pipelining of a fixed depth on one connection (a fixed-depth no-train ablation of Sprint)",
    reference: "RFC 9112 9.3.2; Arye et al., Sprint, Fig. 11",
    params: PARAMS,
    needs_layout: false,
    build,
};

fn build(p: &Params, _v: &Video) -> Result<Box<dyn DataPlane>, ParamError> {
    let depth = p.req_u64(PARAMS, "depth")?;
    if !(1..=64).contains(&depth) {
        return Err(perr("depth", format!("expected 1 to 64, found {depth}")));
    }
    Ok(Box::new(Pipelined { depth: depth as usize, p: Pipeline::default() }))
}

/// The outstanding requests of one connection with the player downloads they carry, and their
/// reporting: shared by `pipelined` and `sprint`.
#[derive(Default)]
pub struct Pipeline {
    pub q: VecDeque<(ReqId, Track)>,
}

impl Pipeline {
    pub fn issue(&mut self, now: Ns, cx: &mut Cx, req: &crate::player::Request) -> ReqId {
        let id = cx.http.get(now, ConnId(0), req.bytes, cx.t);
        let off = req.range.map(|r| r.first);
        cx.log.issue(now, id, ConnId(0), "segment", (req.segment, req.segment), req.rung, off, req.bytes);
        self.q.push_back((id, Track::new(req.id, now)));
        id
    }
    /// Report a delivery; on abandonment reset the connection (cancelling everything behind).
    pub fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> Outcome {
        cx.log.deliver_to(now, d, cx.player);
        let interval = cx.http.cfg().progress_interval;
        let Some(i) = self.q.iter().position(|x| x.0 == d.id) else { return Outcome::Nothing };
        let out = self.q[i].1.report(now, d.received > 0, d.body, d.body_len, interval, cx.player);
        match out {
            Outcome::Nothing => {}
            Outcome::Complete => {
                self.q.remove(i);
            }
            Outcome::Abandoned => {
                // The player cancelled this download and every later one; the connection's
                // reset cancels their requests.
                self.q.clear();
                cx.reset(now, ConnId(0));
            }
        }
        out
    }
}

pub struct Pipelined {
    depth: usize,
    p: Pipeline,
}

impl DataPlane for Pipelined {
    fn name(&self) -> &'static str {
        "pipelined"
    }
    fn pump(&mut self, now: Ns, cx: &mut Cx) {
        while self.p.q.len() < self.depth {
            match cx.player.poll_next(now, false) {
                Some(req) => {
                    self.p.issue(now, cx, &req);
                }
                None => break,
            }
        }
    }
    fn on_delivery(&mut self, now: Ns, d: &Delivery, cx: &mut Cx) -> bool {
        self.p.on_delivery(now, d, cx) != Outcome::Nothing
    }
    fn poll_at(&self, player: &Player) -> Ns {
        let req = if self.p.q.len() < self.depth { player.request_at() } else { NEVER };
        req.min(player.playback_at())
    }
}
