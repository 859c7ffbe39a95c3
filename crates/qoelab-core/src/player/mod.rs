//! The DASH player, sans-IO: a VOD playback state machine driven by any transport.
//!
//! The player decides *what* to fetch and *when* (through its [`Abr`]), keeps the playback
//! buffer and the media clock, and logs every segment. It never reads a clock and never touches
//! a socket: the driver (the packet simulator's HTTP layer, [`crate::tracemode`], a real socket
//! loop later) passes `now` in and reports the download's progress back.
//!
//! Driving it (one request at a time — a sequential data plane):
//!
//! ```text
//! loop {
//!     if let Some(req) = player.poll(now) { send GET for req; }        // issue it now
//!     wake at player.poll_at() unless transport events come earlier;
//!     on response headers/first body byte: player.on_first_byte(now);
//!     on body bytes:  if let Some(a) = player.on_bytes(now, total) { cancel the request; }
//!     on last byte:   player.on_complete(now);
//!     stop when player.is_done();
//! }
//! player.check_invariants()?;
//! ```
//!
//! Media clock: from `start` the player is in *startup* until the startup policy is met, then
//! *playing*; when the buffer empties before the end it is *stalled* until `rebuffer_resume` of
//! media is buffered (or every segment is downloaded); it *ends* when the last media ns is played.
//! Every ns between `start` and the end (or the last `now` seen) is counted exactly once as
//! startup, played or stalled. The buffer grows only when a whole segment has arrived.
//!
//! See docs/models/player.md.

use crate::abr::{Abr, AbrObs, Decision, DownloadRecord, Progress};
use crate::time::{Ns, NEVER, SEC};
use crate::video::Video;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// When playback starts. Serialized as `{"Segments": n}` or `{"Buffer": ns}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum StartupPolicy {
    /// After this many segments have been downloaded (default 1, as Sabre and dash.js VOD).
    Segments(u32),
    /// After this much media (ns) is buffered.
    Buffer(Ns),
}

/// Player configuration (missing fields take the defaults when deserialized).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlayerConfig {
    pub startup: StartupPolicy,
    /// Maximum buffer (ns). Downloads pause while buffer + next segment > buffer_max (the ON/OFF
    /// pattern). Default 30 s. Overridden by the ABR's preferred maximum, see
    /// [`abr_preferred_buffer_max`].
    pub buffer_max: Ns,
    /// After a stall, playback resumes when this much media is buffered (None = one segment
    /// duration of the video, i.e. as soon as the awaited segment arrives).
    pub rebuffer_resume: Option<Ns>,
    /// The quality table logged per segment (None = the first table of the video, if any).
    pub quality_metric: Option<String>,
    /// Use the ABR's preferred buffer maximum (BBA: 240 s) when it has one (default true); false
    /// when the user set `buffer_max` explicitly.
    pub abr_buffer_max: bool,
}

impl Default for PlayerConfig {
    fn default() -> Self {
        PlayerConfig {
            startup: StartupPolicy::Segments(1),
            buffer_max: 30 * SEC,
            rebuffer_resume: None,
            quality_metric: None,
            abr_buffer_max: true,
        }
    }
}

/// The ABR's preferred buffer maximum (e.g. BBA's 240 s); when it has one, the player uses it
/// instead of `PlayerConfig::buffer_max`.
pub fn abr_preferred_buffer_max(abr: &dyn Abr) -> Option<Ns> {
    abr.preferred_buffer_max()
}

/// The playback phase of the media clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Phase {
    Startup,
    Playing,
    Stalled,
    Ended,
}

/// A byte range (inclusive first and last byte), as in an HTTP `Range: bytes=first-last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ByteRange {
    pub first: u64,
    pub last: u64,
}

/// A segment request the transport must issue now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Request {
    pub segment: usize,
    pub rung: usize,
    /// Bytes expected in the response body.
    pub bytes: u64,
    /// None = the whole segment resource. (The video model has no byte offsets yet; the HTTP layer
    /// maps (segment, rung) to a URL or a range of a single file.)
    pub range: Option<ByteRange>,
}

/// The ABR abandoned the download in flight: the transport must cancel it. The player will
/// request the same segment at `to_rung` on the next [`Player::poll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Abandon {
    pub segment: usize,
    pub from_rung: usize,
    pub to_rung: usize,
    pub bytes_received: u64,
}

/// One line of the per-segment log (one per download, including abandoned ones).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SegmentLog {
    pub segment: usize,
    pub rung: usize,
    /// Nominal bitrate of the rung (bit/s).
    pub bitrate_bps: u64,
    /// Bytes received (the full segment size unless abandoned).
    pub bytes: u64,
    /// Segment duration (ns).
    pub duration: Ns,
    /// Quality of (segment, rung) in the configured metric, if a table exists.
    pub quality: Option<f64>,
    pub t_request: Ns,
    pub t_first_byte: Ns,
    pub t_last_byte: Ns,
    /// bytes*8 / (last byte - request), bit/s.
    pub tput_request_bps: f64,
    /// bytes*8 / (last byte - first byte), bit/s.
    pub tput_first_byte_bps: f64,
    /// Buffer (media ns) when the request was issued and when the last byte arrived (after adding it).
    pub buffer_before: Ns,
    pub buffer_after: Ns,
    /// Stall time (ns, startup excluded) between the previous completed segment and this one:
    /// the rebuffering incurred waiting for it (R_k of Minerva Eq. 1). 0 for abandoned downloads.
    pub stall: Ns,
    /// The ABR's requested delay before the request (ns).
    pub abr_delay: Ns,
    pub abr_reason: String,
    pub abandoned: bool,
}

/// End-of-run (or so-far) summary of one player.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlayerSummary {
    pub abr: String,
    pub start: Ns,
    /// The last time the media clock was advanced to (or the end of playback).
    pub now: Ns,
    pub ended: bool,
    /// Time of the end of playback, if ended.
    pub end: Option<Ns>,
    /// Startup delay (ns): start to the start of playback (or so far).
    pub startup: Ns,
    pub played: Ns,
    pub stalled: Ns,
    pub stall_count: u32,
    pub segments_downloaded: usize,
    pub abandoned: usize,
    pub bytes: u64,
    pub buffer: Ns,
    pub buffer_max: Ns,
    pub max_buffer_seen: Ns,
}

#[derive(Clone, Debug)]
struct InFlight {
    segment: usize,
    rung: usize,
    bytes_total: u64,
    received: u64,
    t_request: Ns,
    t_first_byte: Option<Ns>,
    buffer_before: Ns,
    abr_delay: Ns,
    reason: String,
}

#[derive(Clone, Debug)]
struct Pending {
    segment: usize,
    rung: usize,
    not_before: Ns,
    delay: Ns,
    reason: String,
}

/// The player.
pub struct Player {
    cfg: PlayerConfig,
    video: Arc<Video>,
    abr: Box<dyn Abr>,
    buffer_max: Ns,
    rebuffer_resume: Ns,
    quality_metric: Option<String>,
    start: Ns,
    /// The media clock has been advanced to this instant.
    clock: Ns,
    phase: Phase,
    end: Option<Ns>,
    buffer: Ns,
    played: Ns,
    stalled: Ns,
    startup: Ns,
    stall_count: u32,
    /// Stalled time already attributed to a completed segment's log line.
    stall_attributed: Ns,
    /// Media (ns) of completed segments.
    downloaded_media: Ns,
    next_segment: usize,
    last_rung: Option<usize>,
    in_flight: Option<InFlight>,
    pending: Option<Pending>,
    history: Vec<DownloadRecord>,
    log: Vec<SegmentLog>,
    bytes: u64,
    max_buffer_seen: Ns,
    phases: Vec<(Ns, Phase)>,
    violations: Vec<String>,
}

impl Player {
    /// A player whose session starts at `start` (its media clock counts from there).
    /// Panics if the config is inconsistent (see [`Player::validate_config`]); the scenario layer
    /// validates first.
    pub fn new(cfg: PlayerConfig, video: Arc<Video>, abr: Box<dyn Abr>, start: Ns) -> Player {
        if let Err(e) = Player::validate_config(&cfg, &video) {
            panic!("invalid player config: {e}");
        }
        let buffer_max = if cfg.abr_buffer_max {
            abr_preferred_buffer_max(abr.as_ref()).unwrap_or(cfg.buffer_max)
        } else {
            cfg.buffer_max
        };
        let rebuffer_resume = cfg.rebuffer_resume.unwrap_or(video.segment_duration).min(buffer_max);
        let quality_metric = cfg.quality_metric.clone().or_else(|| video.quality.keys().next().cloned());
        Player {
            cfg,
            video,
            abr,
            buffer_max,
            rebuffer_resume,
            quality_metric,
            start,
            clock: start,
            phase: Phase::Startup,
            end: None,
            buffer: 0,
            played: 0,
            stalled: 0,
            startup: 0,
            stall_count: 0,
            stall_attributed: 0,
            downloaded_media: 0,
            next_segment: 0,
            last_rung: None,
            in_flight: None,
            pending: None,
            history: Vec::new(),
            log: Vec::new(),
            bytes: 0,
            max_buffer_seen: 0,
            phases: vec![(start, Phase::Startup)],
            violations: Vec::new(),
        }
    }

    /// Check a config against a video; the message names the field.
    pub fn validate_config(cfg: &PlayerConfig, video: &Video) -> Result<(), String> {
        video.validate()?;
        if cfg.buffer_max < video.segment_duration {
            return Err("buffer_max: expected at least one segment duration".into());
        }
        match cfg.startup {
            StartupPolicy::Segments(0) => return Err("startup_segments: expected >= 1".into()),
            StartupPolicy::Buffer(b) if b > cfg.buffer_max => {
                return Err("startup_buffer: expected <= buffer_max".into())
            }
            _ => {}
        }
        if let Some(r) = cfg.rebuffer_resume {
            if r > cfg.buffer_max {
                return Err("rebuffer_resume: expected <= buffer_max".into());
            }
        }
        if let Some(m) = &cfg.quality_metric {
            if !video.quality.contains_key(m) {
                return Err(format!("quality_metric: the video has no \"{m}\" table"));
            }
        }
        Ok(())
    }

    // ----- accessors -----

    pub fn config(&self) -> &PlayerConfig {
        &self.cfg
    }
    pub fn video(&self) -> &Arc<Video> {
        &self.video
    }
    pub fn abr_name(&self) -> &'static str {
        self.abr.name()
    }
    /// The effective maximum buffer (the ABR's preference or the config's).
    pub fn buffer_max(&self) -> Ns {
        self.buffer_max
    }
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Media buffered ahead of the playhead (ns), as of the last `now` seen.
    pub fn buffer(&self) -> Ns {
        self.buffer
    }
    /// Playback ended (every segment downloaded and played).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Ended
    }
    /// A download is in flight.
    pub fn downloading(&self) -> bool {
        self.in_flight.is_some()
    }
    /// The per-segment log, oldest first (abandoned downloads included, flagged).
    pub fn log(&self) -> &[SegmentLog] {
        &self.log
    }
    /// The playback timeline: `(instant, phase entered)`, starting with `(start, Startup)`.
    /// Stall intervals are the `Stalled` entries up to the next entry.
    pub fn phase_log(&self) -> &[(Ns, Phase)] {
        &self.phases
    }
    /// Every download record handed to the ABR, oldest first.
    pub fn history(&self) -> &[DownloadRecord] {
        &self.history
    }

    // ----- the media clock -----

    /// Advance the playback clock to `now` (idempotent; earlier `now`s are recorded as violations
    /// and ignored).
    pub fn advance(&mut self, now: Ns) {
        if now < self.clock {
            if self.violations.len() < 8 {
                self.violations.push(format!("time went backwards: {} after {}", now, self.clock));
            }
            return;
        }
        let mut dt = now - self.clock;
        self.clock = now;
        while dt > 0 {
            match self.phase {
                Phase::Ended => return,
                Phase::Startup => {
                    self.startup += dt;
                    dt = 0;
                }
                Phase::Stalled => {
                    self.stalled += dt;
                    dt = 0;
                }
                Phase::Playing => {
                    let p = dt.min(self.buffer);
                    self.played += p;
                    self.buffer -= p;
                    dt -= p;
                    if self.buffer == 0 {
                        if self.next_segment >= self.video.n_segments() && self.in_flight.is_none() {
                            self.set_phase(now - dt, Phase::Ended);
                            self.end = Some(now - dt);
                            return;
                        }
                        if dt == 0 {
                            // Empty exactly now: a stall begins only if time passes before the
                            // next segment arrives (no zero-length stalls).
                            break;
                        }
                        self.set_phase(now - dt, Phase::Stalled);
                        self.stall_count += 1;
                    }
                }
            }
        }
    }

    fn set_phase(&mut self, t: Ns, ph: Phase) {
        self.phase = ph;
        self.phases.push((t, ph));
    }

    fn all_downloaded(&self) -> bool {
        self.next_segment >= self.video.n_segments()
    }

    /// Start or resume playback if the policy allows (after the buffer grew).
    fn maybe_play(&mut self) {
        let all = self.all_downloaded();
        match self.phase {
            Phase::Startup => {
                let ok = match self.cfg.startup {
                    StartupPolicy::Segments(n) => self.next_segment >= n as usize,
                    StartupPolicy::Buffer(b) => self.buffer >= b,
                };
                if ok || all {
                    self.set_phase(self.clock, Phase::Playing);
                }
            }
            Phase::Stalled if self.buffer >= self.rebuffer_resume || all => {
                self.set_phase(self.clock, Phase::Playing);
            }
            _ => {}
        }
        // Degenerate: a zero-length remainder ends at once.
        if self.phase == Phase::Playing && self.buffer == 0 && all && self.in_flight.is_none() {
            self.set_phase(self.clock, Phase::Ended);
            self.end = Some(self.clock);
        }
    }

    /// Downloads pause while buffer + next segment > buffer_max (only while playing: during
    /// startup or a stall the buffer cannot drain, so pausing could never end).
    fn paused_for_buffer(&self) -> Option<Ns> {
        if self.phase != Phase::Playing || self.all_downloaded() {
            return None;
        }
        let next = self.video.seg_duration(self.next_segment);
        let lim = self.buffer_max.saturating_sub(next);
        if self.buffer > lim {
            Some(self.buffer - lim)
        } else {
            None
        }
    }

    fn obs_segment(&self) -> usize {
        self.next_segment
    }

    // ----- driving -----

    /// The request to issue now, if any. Calls the ABR when a decision is due (not while a
    /// download is in flight, not while the buffer is full, not after the last segment).
    pub fn poll(&mut self, now: Ns) -> Option<Request> {
        self.advance(now);
        let now = self.clock;
        if self.in_flight.is_some() || self.all_downloaded() || self.phase == Phase::Ended {
            return None;
        }
        if self.pending.is_none() {
            if self.paused_for_buffer().is_some() {
                return None;
            }
            let segment = self.obs_segment();
            let obs = AbrObs {
                now,
                video: &self.video,
                segment,
                buffer: self.buffer,
                buffer_max: self.buffer_max,
                last_rung: self.last_rung,
                playing: self.phase == Phase::Playing,
                history: &self.history,
            };
            let Decision { rung, delay, reason } = self.abr.choose(&obs);
            let rung = if rung >= self.video.n_rungs() {
                if self.violations.len() < 8 {
                    self.violations.push(format!("ABR chose rung {rung} of {}", self.video.n_rungs()));
                }
                self.video.n_rungs() - 1
            } else {
                rung
            };
            self.pending = Some(Pending { segment, rung, not_before: now.saturating_add(delay), delay, reason });
        }
        let p = self.pending.as_ref().expect("pending decision");
        if now < p.not_before {
            return None;
        }
        let p = self.pending.take().expect("pending decision");
        let bytes = self.video.size(p.segment, p.rung);
        self.in_flight = Some(InFlight {
            segment: p.segment,
            rung: p.rung,
            bytes_total: bytes,
            received: 0,
            t_request: now,
            t_first_byte: None,
            buffer_before: self.buffer,
            abr_delay: p.delay,
            reason: p.reason,
        });
        Some(Request { segment: p.segment, rung: p.rung, bytes, range: None })
    }

    /// The next instant the player wants to be polled without any transport event: now if a
    /// request is due, the end of an ABR delay, the end of a buffer-full pause, and the next
    /// playback event (the buffer running dry: a stall or the end of playback); [`NEVER`] if none
    /// (e.g. stalled or in startup with a download in flight, or ended). Playback is accounted
    /// analytically by [`Player::advance`], so waking at playback events is optional for the
    /// accounting; it only makes phase changes visible at their exact time.
    pub fn poll_at(&self) -> Ns {
        if self.phase == Phase::Ended {
            return NEVER;
        }
        let playback = if self.phase == Phase::Playing && self.buffer > 0 { self.clock + self.buffer } else { NEVER };
        let request = if self.in_flight.is_some() || self.all_downloaded() {
            NEVER
        } else if let Some(p) = &self.pending {
            p.not_before.max(self.clock)
        } else if let Some(wait) = self.paused_for_buffer() {
            self.clock + wait
        } else {
            self.clock
        };
        request.min(playback)
    }

    /// The first byte of the response body arrived.
    pub fn on_first_byte(&mut self, now: Ns) {
        self.advance(now);
        let now = self.clock;
        if let Some(f) = &mut self.in_flight {
            if f.t_first_byte.is_none() {
                f.t_first_byte = Some(now);
            }
        }
    }

    /// `total_received` body bytes of the download in flight have arrived. Polls the ABR's
    /// abandonment rule; on `Some`, the transport must cancel the request and the player will
    /// request the same segment at the lower rung on the next poll.
    pub fn on_bytes(&mut self, now: Ns, total_received: u64) -> Option<Abandon> {
        self.advance(now);
        let now = self.clock;
        let f = self.in_flight.as_mut()?;
        f.received = total_received.min(f.bytes_total);
        if f.t_first_byte.is_none() && total_received > 0 {
            f.t_first_byte = Some(now);
        }
        if f.received >= f.bytes_total {
            return None;
        }
        let prog = Progress {
            now,
            segment: f.segment,
            rung: f.rung,
            bytes_total: f.bytes_total,
            bytes_received: f.received,
            t_request: f.t_request,
            t_first_byte: f.t_first_byte,
        };
        let obs = AbrObs {
            now,
            video: &self.video,
            segment: f.segment,
            buffer: self.buffer,
            buffer_max: self.buffer_max,
            last_rung: self.last_rung,
            playing: self.phase == Phase::Playing,
            history: &self.history,
        };
        let to = self.abr.on_progress(&obs, &prog)?;
        if to >= f.rung {
            return None; // only abandonments to a lower rung are honoured
        }
        let f = self.in_flight.take().expect("in flight");
        let rec = self.finish_record(&f, now, f.received, true);
        let from = f.rung;
        self.log.push(self.make_log(&f, &rec, 0));
        self.bytes += f.received;
        self.after_download(&rec);
        self.pending = Some(Pending {
            segment: f.segment,
            rung: to,
            not_before: now,
            delay: 0,
            reason: format!("abandoned rung {from} at {}/{} B", f.received, f.bytes_total),
        });
        Some(Abandon { segment: f.segment, from_rung: from, to_rung: to, bytes_received: f.received })
    }

    /// The last byte of the download in flight arrived.
    pub fn on_complete(&mut self, now: Ns) {
        self.advance(now);
        let now = self.clock;
        let Some(f) = self.in_flight.take() else {
            if self.violations.len() < 8 {
                self.violations.push(format!("on_complete at {now} with no download in flight"));
            }
            return;
        };
        let rec = self.finish_record(&f, now, f.bytes_total, false);
        let dur = self.video.seg_duration(f.segment);
        self.buffer += dur;
        self.downloaded_media += dur;
        self.max_buffer_seen = self.max_buffer_seen.max(self.buffer);
        self.next_segment = f.segment + 1;
        self.last_rung = Some(f.rung);
        self.bytes += f.bytes_total;
        let stall = self.stalled - self.stall_attributed;
        self.stall_attributed = self.stalled;
        self.log.push(self.make_log(&f, &rec, stall));
        self.after_download(&rec);
        self.maybe_play();
    }

    fn finish_record(&self, f: &InFlight, now: Ns, bytes: u64, abandoned: bool) -> DownloadRecord {
        DownloadRecord {
            segment: f.segment,
            rung: f.rung,
            bytes,
            t_request: f.t_request,
            t_first_byte: f.t_first_byte.unwrap_or(now),
            t_last_byte: now,
            abandoned,
        }
    }

    fn make_log(&self, f: &InFlight, rec: &DownloadRecord, stall: Ns) -> SegmentLog {
        SegmentLog {
            segment: f.segment,
            rung: f.rung,
            bitrate_bps: self.video.bitrates_bps[f.rung],
            bytes: rec.bytes,
            duration: self.video.seg_duration(f.segment),
            quality: self.quality_metric.as_deref().and_then(|m| self.video.quality(m, f.segment, f.rung)),
            t_request: rec.t_request,
            t_first_byte: rec.t_first_byte,
            t_last_byte: rec.t_last_byte,
            tput_request_bps: rec.tput_request_bps(),
            tput_first_byte_bps: rec.tput_first_byte_bps(),
            buffer_before: f.buffer_before,
            buffer_after: self.buffer,
            stall,
            abr_delay: f.abr_delay,
            abr_reason: f.reason.clone(),
            abandoned: rec.abandoned,
        }
    }

    fn after_download(&mut self, rec: &DownloadRecord) {
        self.history.push(*rec);
        let obs = AbrObs {
            now: self.clock,
            video: &self.video,
            segment: rec.segment,
            buffer: self.buffer,
            buffer_max: self.buffer_max,
            last_rung: self.last_rung,
            playing: self.phase == Phase::Playing,
            history: &self.history,
        };
        self.abr.on_download(&obs, rec);
    }

    // ----- results -----

    pub fn summary(&self) -> PlayerSummary {
        PlayerSummary {
            abr: self.abr.name().to_string(),
            start: self.start,
            now: self.end.unwrap_or(self.clock),
            ended: self.phase == Phase::Ended,
            end: self.end,
            startup: self.startup,
            played: self.played,
            stalled: self.stalled,
            stall_count: self.stall_count,
            segments_downloaded: self.next_segment,
            abandoned: self.log.iter().filter(|l| l.abandoned).count(),
            bytes: self.bytes,
            buffer: self.buffer,
            buffer_max: self.buffer_max,
            max_buffer_seen: self.max_buffer_seen,
        }
    }

    /// The accounting identity and the buffer bounds:
    /// startup + played + stalled == (end or last now) - start; buffer == downloaded media - played;
    /// buffer <= buffer_max + one (the longest) segment; per-segment stalls sum to the stalled
    /// time (exactly once ended); log and history consistent; no backwards time, no bad rung.
    pub fn check_invariants(&self) -> Result<(), String> {
        if let Some(v) = self.violations.first() {
            return Err(format!("player: {v}"));
        }
        let upto = self.end.unwrap_or(self.clock);
        let elapsed = upto - self.start;
        let acc = self.startup + self.played + self.stalled;
        if acc != elapsed {
            return Err(format!(
                "player: startup {} + played {} + stalled {} = {} != elapsed {}",
                self.startup, self.played, self.stalled, acc, elapsed
            ));
        }
        if self.downloaded_media != self.played + self.buffer {
            return Err(format!(
                "player: downloaded media {} != played {} + buffer {}",
                self.downloaded_media, self.played, self.buffer
            ));
        }
        let max_seg = self.video.segment_duration.max(self.video.seg_duration(self.video.n_segments() - 1));
        if self.max_buffer_seen > self.buffer_max + max_seg {
            return Err(format!(
                "player: buffer reached {} > buffer_max {} + one segment {}",
                self.max_buffer_seen, self.buffer_max, max_seg
            ));
        }
        let seg_stall: Ns = self.log.iter().map(|l| l.stall).sum();
        if seg_stall > self.stalled || (self.phase == Phase::Ended && seg_stall != self.stalled) {
            return Err(format!("player: per-segment stalls {} vs stalled {}", seg_stall, self.stalled));
        }
        if self.history.len() != self.log.len() {
            return Err("player: history and log lengths differ".into());
        }
        let done = self.log.iter().filter(|l| !l.abandoned).count();
        if done != self.next_segment {
            return Err(format!("player: {done} completed log lines for {} segments", self.next_segment));
        }
        if self.phase == Phase::Ended && self.played != self.video.duration() {
            return Err(format!("player: ended after playing {} of {}", self.played, self.video.duration()));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
