//! `sa3`: the client ABR as the Chunklets paper describes it (Kua & Armitage, ICCCN 2017, sec.
//! III-B.2; ../shared/reference/claims/chunklets.md sec. 2.7 and pitfall P3): the next rung is the
//! highest whose bitrate is at most SA, the mean of the achieved rates of the last 3 segments
//! (AR = bytes / (last byte - first byte), [`DownloadRecord::tput_first_byte_bps`]); rung 0
//! before the first sample. Abandoned downloads are not samples.
//!
//! Scheduling follows dash.js's buffer targets (the paper's client is dash.js 2.4.1): the next
//! request waits until the buffer is at most 12 s (stableBufferTime), or 30 s while the
//! current rung is the top one (bufferTimeAtTopQuality), returned as the decision's `delay`
//! (only while playing: during startup and stalls the buffer does not drain). The ABR asks the
//! player for a maximum buffer of the top target plus one segment, so the player's own
//! buffer-full pause never binds first.

use super::estimators::{count_param, mbps, rung_for_rate, s, SlidingWindow};
use super::{Abr, AbrEntry, AbrObs, Decision, DownloadRecord};
use crate::params::{Default, ParamError, ParamSpec, Params, Unit};
use crate::time::Ns;
use crate::video::Video;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "window",
        unit: Unit::Int,
        default: Default::Int(3),
        doc: "SA = mean of the achieved rates of this many last segments (Chunklets sec. III-B.2: 3)",
    },
    ParamSpec {
        name: "buffer_target",
        unit: Unit::Duration,
        default: Default::Int(12_000_000_000),
        doc: "request the next segment once the buffer is at most this (dash.js 2.4.1 stableBufferTime 12 s)",
    },
    ParamSpec {
        name: "buffer_target_top",
        unit: Unit::Duration,
        default: Default::Int(30_000_000_000),
        doc: "the target while the current rung is the top one (dash.js 2.4.1 bufferTimeAtTopQuality 30 s)",
    },
];

pub const ENTRY: AbrEntry = AbrEntry {
    name: "sa3",
    summary: "Chunklets' client rule: highest rung <= mean of the last 3 achieved rates; dash.js buffer targets 12 s / 30 s at the top",
    reference: "Kua & Armitage, Chunklets, ICCCN 2017, sec. III-B.2 and III-C; dash.js 2.4.1 buffer targets",
    params: PARAMS,
    build,
};

fn build(p: &Params, v: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let window = count_param(p, PARAMS, "window")?;
    let target = p.req_u64(PARAMS, "buffer_target")?;
    if target == 0 {
        return Err(crate::params::perr("buffer_target", "expected > 0"));
    }
    let target_top = p.req_u64(PARAMS, "buffer_target_top")?;
    if target_top == 0 {
        return Err(crate::params::perr("buffer_target_top", "expected > 0"));
    }
    let longest = v.segment_duration.max(v.last_segment_duration.unwrap_or(0));
    Ok(Box::new(Sa3 {
        sa: SlidingWindow::new(window),
        target,
        target_top,
        buffer_max: target.max(target_top) + longest,
    }))
}

pub struct Sa3 {
    sa: SlidingWindow,
    target: Ns,
    target_top: Ns,
    buffer_max: Ns,
}

impl Abr for Sa3 {
    fn name(&self) -> &'static str {
        "sa3"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let top = obs.video.n_rungs() - 1;
        let (rung, mut reason) = match self.sa.estimate() {
            None => (0, "no AR sample yet -> rung 0".to_string()),
            Some(sa) => {
                let q = rung_for_rate(&obs.video.bitrates_bps, sa);
                (q, format!("SA {} over {} -> rung {q}", mbps(sa), self.sa.len()))
            }
        };
        let at_top = obs.last_rung.unwrap_or(0) == top;
        let target = if at_top { self.target_top } else { self.target };
        let delay = if obs.playing { obs.buffer.saturating_sub(target) } else { 0 };
        if delay > 0 {
            reason.push_str(&format!("; wait {:.3}s to the {:.0}s target", s(delay), s(target)));
        }
        Decision { rung, delay, reason }
    }
    fn on_download(&mut self, _obs: &AbrObs, rec: &DownloadRecord) {
        if rec.abandoned || rec.bytes == 0 {
            return;
        }
        self.sa.push(rec.tput_first_byte_bps());
    }
    fn preferred_buffer_max(&self) -> Option<Ns> {
        Some(self.buffer_max)
    }
}

#[cfg(test)]
mod tests {
    use super::super::estimators::testutil::{cbr, obs, rec};
    use super::*;
    use crate::time::{MS, SEC};

    #[test]
    fn mean_of_the_last_three_ars() {
        // Chunklets' Table I levels 17..20 (3.1, 3.5, 3.8, 4.2 Mbit/s), 2-s segments
        let v = cbr(&[3100, 3500, 3800, 4200], 2, 20);
        let mut a = build(&Params::new(), &v).unwrap();
        let d = a.choose(&obs(&v, 0, 0, None, &[]));
        assert_eq!((d.rung, d.delay), (0, 0)); // no sample: rung 0
                                               // ARs (bytes over first to last byte; the 300 ms first-byte latency does not count):
                                               // 1 MB in 2 s = 4 Mbit/s; 0.5 MB in 1 s = 4; 0.95 MB in 2 s = 3.8
        for (i, (bytes, ms)) in [(1_000_000u64, 2000u64), (500_000, 1000), (950_000, 2000)].iter().enumerate() {
            let r = rec(i, 0, *bytes, 0, 300, *ms);
            a.on_download(&obs(&v, i, 0, Some(0), &[]), &r);
        }
        // SA = (4 + 4 + 3.8) / 3 = 3.9333 -> rung 2 (3.8)
        assert_eq!(a.choose(&obs(&v, 3, 2 * SEC, Some(0), &[])).rung, 2);
        // a 4th AR of 5.5 Mbit/s (1.375 MB in 2 s) drops the first: (4 + 3.8 + 5.5) / 3 = 4.4333 -> rung 3
        a.on_download(&obs(&v, 3, 0, Some(2), &[]), &rec(3, 2, 1_375_000, 0, 300, 2000));
        assert_eq!(a.choose(&obs(&v, 4, 2 * SEC, Some(2), &[])).rung, 3);
        // an abandoned download is not a sample
        let mut ab = rec(4, 3, 1000, 0, 300, 2000);
        ab.abandoned = true;
        a.on_download(&obs(&v, 4, 0, Some(3), &[]), &ab);
        assert_eq!(a.choose(&obs(&v, 4, 2 * SEC, Some(3), &[])).rung, 3);
        // SA below the lowest rung -> rung 0: three ARs of 0.8 Mbit/s (200 kB in 2 s)
        for i in 0..3 {
            a.on_download(&obs(&v, 5 + i, 0, Some(3), &[]), &rec(5 + i, 0, 200_000, 0, 300, 2000));
        }
        assert_eq!(a.choose(&obs(&v, 8, 2 * SEC, Some(3), &[])).rung, 0);
    }

    #[test]
    fn dashjs_buffer_targets_as_delays() {
        let v = cbr(&[1000, 2000, 4000], 2, 20);
        let mut a = build(&Params::new(), &v).unwrap();
        // the player may hold the top target plus one 2-s segment
        assert_eq!(a.preferred_buffer_max(), Some(32 * SEC));
        // below the 12 s target: request now
        assert_eq!(a.choose(&obs(&v, 5, 11_500 * MS, Some(1), &[])).delay, 0);
        assert_eq!(a.choose(&obs(&v, 5, 12 * SEC, Some(1), &[])).delay, 0);
        // 13.25 s buffer at rung 1: wait 1.25 s until 12 s
        assert_eq!(a.choose(&obs(&v, 5, 13_250 * MS, Some(1), &[])).delay, 1_250 * MS);
        // at the top rung (2) the target is 30 s: 13.25 s -> now; 31 s -> wait 1 s
        assert_eq!(a.choose(&obs(&v, 5, 13_250 * MS, Some(2), &[])).delay, 0);
        assert_eq!(a.choose(&obs(&v, 5, 31 * SEC, Some(2), &[])).delay, SEC);
        // not playing (startup or stall): no delay, the buffer would not drain
        let mut o = obs(&v, 5, 20 * SEC, Some(1), &[]);
        o.playing = false;
        assert_eq!(a.choose(&o).delay, 0);
        // a single-rung video is always at the top: 30 s
        let one = cbr(&[3500], 2, 20);
        let mut a = build(&Params::new(), &one).unwrap();
        assert_eq!(a.choose(&obs(&one, 5, 20 * SEC, Some(0), &[])).delay, 0);
        assert_eq!(a.choose(&obs(&one, 5, 30_500 * MS, Some(0), &[])).delay, 500 * MS);
    }

    #[test]
    fn parameters() {
        let v = cbr(&[1000, 2000], 4, 5);
        let a = build(
            &Params::new().with("buffer_target", 20_000_000_000u64).with("buffer_target_top", 10_000_000_000u64),
            &v,
        )
        .unwrap();
        // max(20, 10) + 4 s
        assert_eq!(a.preferred_buffer_max(), Some(24 * SEC));
        assert_eq!(build(&Params::new().with("window", 0), &v).err().unwrap().param, "window");
        assert_eq!(build(&Params::new().with("buffer_target", 0), &v).err().unwrap().param, "buffer_target");
        assert_eq!(build(&Params::new().with("buffer_target_top", 0), &v).err().unwrap().param, "buffer_target_top");
    }
}
