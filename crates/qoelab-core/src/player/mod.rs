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

use crate::abr::{Abr, AbrObs, Decision, DownloadRecord, Progress, ProgressAction};
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

/// The id of one segment download of a player.
pub type DlId = u64;

/// A byte range (inclusive first and last byte), as in an HTTP `Range: bytes=first-last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ByteRange {
    pub first: u64,
    pub last: u64,
}

/// A segment request the transport must issue now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Request {
    /// The player's id of this download (unique per session; keys every later call).
    pub id: DlId,
    pub segment: usize,
    pub rung: usize,
    /// Bytes expected in the response body.
    pub bytes: u64,
    /// The segment's bytes inside the rung's file, when the video has a byte layout; None = the
    /// whole segment resource.
    pub range: Option<ByteRange>,
}

/// The ABR abandoned the download in flight: the transport must cancel it. The player will
/// request the same segment at `to_rung` on the next [`Player::poll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Abandon {
    pub id: DlId,
    pub segment: usize,
    pub from_rung: usize,
    pub to_rung: usize,
    pub bytes_received: u64,
    /// Keep-partial abandonment (VOXEL's ABR*, [`crate::abr::ProgressAction::KeepPartial`]): the
    /// download was truncated to this many body bytes and stays in flight until they are in;
    /// the data plane stops the rest of the transfer (and must not cancel the download).
    pub keep: Option<u64>,
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
    /// Bytes of the played segment that never arrived and were zero-filled (VOXEL's unreliable
    /// data lost and not recovered by hole filling); 0 otherwise.
    pub lost_bytes: u64,
    /// Bytes fetched for the segment after it entered the buffer (VOXEL's hole filling and
    /// optional ranges; included in `bytes`).
    pub extra_bytes: u64,
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
    id: DlId,
    segment: usize,
    rung: usize,
    bytes_total: u64,
    received: u64,
    t_request: Ns,
    t_first_byte: Option<Ns>,
    buffer_before: Ns,
    abr_delay: Ns,
    reason: String,
    /// Complete, waiting for an earlier segment before it enters the buffer.
    done_at: Option<Ns>,
    /// The SSIM a partial segment plays at.
    partial_ssim: Option<f64>,
    /// Body bytes zero-filled (set by the data plane before completion).
    lost: u64,
}

#[derive(Clone, Debug)]
struct Pending {
    segment: usize,
    rung: usize,
    not_before: Ns,
    delay: Ns,
    reason: String,
    /// A partial segment (VOXEL): its bytes and SSIM.
    partial: Option<crate::abr::Partial>,
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
    /// Segments completed and in the buffer (contiguous from 0).
    next_segment: usize,
    /// The next segment to request.
    next_request: usize,
    next_id: DlId,
    /// Rung of the last completed segment (what the ABR sees as `last_rung`).
    last_rung: Option<usize>,
    /// Downloads in flight, in order of issue (segments ascending).
    in_flight: Vec<InFlight>,
    pending: Option<Pending>,
    /// Media (ns) of the requests issued past the buffer cap since the last request issued under
    /// it: the buffer may exceed `buffer_max` + one segment by at most this (a Sprint train or a
    /// Sprint-x range).
    forced_media: Ns,
    /// The largest forced allowance that was in force when the buffer grew.
    forced_allowance_max: Ns,
    history: Vec<DownloadRecord>,
    log: Vec<SegmentLog>,
    bytes: u64,
    max_buffer_seen: Ns,
    phases: Vec<(Ns, Phase)>,
    violations: Vec<String>,
    /// The data plane can stop a download early and keep what arrived (the VOXEL plane): the
    /// ABR's keep-partial abandonment is honoured.
    keep_partial: bool,
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
            next_request: 0,
            next_id: 0,
            last_rung: None,
            in_flight: Vec::new(),
            pending: None,
            forced_media: 0,
            forced_allowance_max: 0,
            history: Vec::new(),
            log: Vec::new(),
            bytes: 0,
            max_buffer_seen: 0,
            phases: vec![(start, Phase::Startup)],
            violations: Vec::new(),
            keep_partial: false,
        }
    }

    /// Check a config against a video; the message names the field.
    pub fn validate_config(cfg: &PlayerConfig, video: &Video) -> Result<(), String> {
        video.validate()?;
        if cfg.buffer_max < video.segment_duration {
            return Err(format!(
                "buffer_max: expected at least one segment duration ({} s), found {} s{}",
                video.segment_duration as f64 / 1e9,
                cfg.buffer_max as f64 / 1e9,
                // abr_buffer_max: the scenario set no buffer_max (this is the default)
                if cfg.abr_buffer_max { " (the default: set [client.player] buffer_max)" } else { "" }
            ));
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
    /// The buffer projected to `now` without advancing the media clock (read-only).
    /// The instant the media clock was last advanced to.
    pub fn clock(&self) -> Ns {
        self.clock
    }
    pub fn buffer_at(&self, now: Ns) -> Ns {
        if self.phase == Phase::Playing && now > self.clock {
            self.buffer.saturating_sub(now - self.clock)
        } else {
            self.buffer
        }
    }
    /// Rung of the last completed segment.
    pub fn last_rung(&self) -> Option<usize> {
        self.last_rung
    }
    /// The earliest download in flight: (segment, rung, bytes total, bytes received, request time).
    pub fn current_download(&self) -> Option<(usize, usize, u64, u64, Ns)> {
        self.in_flight.first().map(|f| (f.segment, f.rung, f.bytes_total, f.received, f.t_request))
    }
    /// Playback ended (every segment downloaded and played).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Ended
    }
    /// A download is in flight.
    pub fn downloading(&self) -> bool {
        !self.in_flight.is_empty()
    }
    /// Downloads in flight.
    pub fn in_flight_count(&self) -> usize {
        self.in_flight.len()
    }
    /// Media (ns) of the downloads in flight.
    pub fn in_flight_media(&self) -> Ns {
        self.in_flight.iter().map(|f| self.video.seg_duration(f.segment)).sum()
    }
    /// Every segment has been requested (none left to ask the ABR for).
    pub fn all_requested(&self) -> bool {
        self.next_request >= self.video.n_segments()
    }
    /// The (segment, rung) of download `id`, if in flight.
    pub fn download(&self, id: DlId) -> Option<(usize, usize)> {
        self.in_flight.iter().find(|f| f.id == id).map(|f| (f.segment, f.rung))
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
                        if self.next_segment >= self.video.n_segments() && self.in_flight.is_empty() {
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
        if self.phase == Phase::Playing && self.buffer == 0 && all && self.in_flight.is_empty() {
            self.set_phase(self.clock, Phase::Ended);
            self.end = Some(self.clock);
        }
    }

    /// Downloads pause while buffer + media in flight + next segment > buffer_max. Returns how
    /// long until the cap allows the next request: while playing, until the buffer has drained
    /// enough; during startup or a stall the buffer does not drain, so the pause lasts while a
    /// download is in flight (NEVER: its completion lifts it) and a request with none in flight
    /// always goes (pausing it could never end; the startup may need the buffer up to
    /// `buffer_max`). Before 2026-11-30 startup and stalls were not capped at all, so a plane with
    /// several requests outstanding (pipelined, sprint) could fill the buffer past buffer_max +
    /// one segment there.
    fn paused_for_buffer(&self) -> Option<Ns> {
        if self.phase == Phase::Ended || self.all_requested() {
            return None;
        }
        let next = self.video.seg_duration(self.next_request);
        let lim = self.buffer_max.saturating_sub(next);
        let level = self.buffer + self.in_flight_media();
        if level <= lim {
            None
        } else if self.phase == Phase::Playing {
            Some(level - lim)
        } else if self.in_flight.is_empty() {
            None
        } else {
            Some(NEVER)
        }
    }

    /// The buffer cap would pause a request now (a data plane that forces a train asks this).
    pub fn buffer_full(&self) -> bool {
        self.paused_for_buffer().is_some()
    }

    // ----- driving -----

    /// The request to issue now, if any, for a sequential transport: nothing while a download is
    /// in flight; otherwise as [`Player::poll_next`] under the buffer cap.
    pub fn poll(&mut self, now: Ns) -> Option<Request> {
        if !self.in_flight.is_empty() {
            self.advance(now);
            return None;
        }
        self.poll_next(now, false)
    }

    /// The next segment request to issue now, if any, with downloads possibly in flight (a
    /// pipelining or parallel data plane). Calls the ABR when a decision is due (not while the
    /// buffer, counting media in flight, is full unless `force`; not after the last segment).
    /// `force` issues past the buffer cap (a Sprint train, a Sprint-x range): the buffer may then
    /// exceed `buffer_max` + one segment by the media forced since the last unforced request.
    pub fn poll_next(&mut self, now: Ns, force: bool) -> Option<Request> {
        self.advance(now);
        let now = self.clock;
        if self.all_requested() || self.phase == Phase::Ended {
            return None;
        }
        let capped = self.paused_for_buffer().is_some();
        if self.pending.is_none() {
            if capped && !force {
                return None;
            }
            let segment = self.next_request;
            let obs = AbrObs {
                now,
                video: &self.video,
                segment,
                buffer: self.buffer,
                buffer_max: self.buffer_max,
                last_rung: self.last_rung_for_obs(),
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
            let full = self.video.size(segment, rung);
            let partial = self.abr.partial().filter(|p| {
                let ok = p.bytes > 0 && p.bytes <= full;
                if !ok && self.violations.len() < 8 {
                    self.violations.push(format!("ABR asked for {} B of a {full}-B segment", p.bytes));
                }
                ok
            });
            self.pending =
                Some(Pending { segment, rung, not_before: now.saturating_add(delay), delay, reason, partial });
        }
        let p = self.pending.as_ref().expect("pending decision");
        if now < p.not_before || (capped && !force) {
            return None;
        }
        let p = self.pending.take().expect("pending decision");
        // A partial segment is its reliable ranges and a prefix of the droppable frames' ranges:
        // not one contiguous range, so it is requested by its size (a multi-range request).
        let bytes = p.partial.map_or_else(|| self.video.size(p.segment, p.rung), |x| x.bytes);
        if capped {
            self.forced_media += self.video.seg_duration(p.segment);
        } else {
            self.forced_media = 0;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.in_flight.push(InFlight {
            id,
            segment: p.segment,
            rung: p.rung,
            bytes_total: bytes,
            received: 0,
            t_request: now,
            t_first_byte: None,
            buffer_before: self.buffer,
            abr_delay: p.delay,
            reason: p.reason,
            done_at: None,
            partial_ssim: p.partial.map(|x| x.ssim),
            lost: 0,
        });
        self.next_request = p.segment + 1;
        let range = match p.partial {
            Some(_) => None,
            None => self.video.byte_range(p.segment, p.rung).map(|(first, last)| ByteRange { first, last }),
        };
        Some(Request { id, segment: p.segment, rung: p.rung, bytes, range })
    }

    /// The rung the ABR sees as the previous one: the last segment requested (in flight or
    /// completed).
    fn last_rung_for_obs(&self) -> Option<usize> {
        self.in_flight.last().map(|f| f.rung).or(self.last_rung)
    }

    /// The next instant the player wants to be polled without any transport event, for a
    /// sequential transport: as [`Player::request_at`] (NEVER while a download is in flight),
    /// or the next playback event, whichever is first.
    pub fn poll_at(&self) -> Ns {
        if !self.in_flight.is_empty() {
            return self.playback_at();
        }
        self.request_at().min(self.playback_at())
    }

    /// When [`Player::poll_next`] (without force) may next return a request: now if a request is
    /// due, the end of an ABR delay, the end of a buffer-full pause; [`NEVER`] if every segment
    /// is requested or playback ended.
    pub fn request_at(&self) -> Ns {
        if self.phase == Phase::Ended || self.all_requested() {
            return NEVER;
        }
        let wait = self.paused_for_buffer().map(|w| self.clock.saturating_add(w));
        match (&self.pending, wait) {
            (Some(p), Some(w)) => p.not_before.max(w),
            (Some(p), None) => p.not_before.max(self.clock),
            (None, Some(w)) => w,
            (None, None) => self.clock,
        }
    }

    /// When [`Player::poll_next`] with `force` may next return a request: the end of an ABR
    /// delay, now if a decision is due; NEVER if every segment is requested or playback ended.
    pub fn decision_at(&self) -> Ns {
        if self.phase == Phase::Ended || self.all_requested() {
            return NEVER;
        }
        match &self.pending {
            Some(p) => p.not_before.max(self.clock),
            None => self.clock,
        }
    }

    /// The next playback event (the buffer running dry: a stall or the end of playback); NEVER if
    /// none. Playback is accounted analytically by [`Player::advance`], so waking at playback
    /// events is optional for the accounting; it only makes phase changes visible at their exact
    /// time.
    pub fn playback_at(&self) -> Ns {
        if self.phase == Phase::Playing && self.buffer > 0 {
            self.clock + self.buffer
        } else {
            NEVER
        }
    }

    fn flight_index(&self, id: DlId) -> Option<usize> {
        self.in_flight.iter().position(|f| f.id == id)
    }

    /// The first byte of the response body arrived (sequential form: the oldest download).
    pub fn on_first_byte(&mut self, now: Ns) {
        if let Some(id) = self.in_flight.first().map(|f| f.id) {
            self.first_byte(now, id);
        } else {
            self.advance(now);
        }
    }

    /// The first response byte of download `id` arrived.
    pub fn first_byte(&mut self, now: Ns, id: DlId) {
        self.advance(now);
        let now = self.clock;
        if let Some(i) = self.flight_index(id) {
            let f = &mut self.in_flight[i];
            if f.t_first_byte.is_none() {
                f.t_first_byte = Some(now);
            }
        }
    }

    /// Sequential form of [`Player::bytes`] (the oldest download).
    pub fn on_bytes(&mut self, now: Ns, total_received: u64) -> Option<Abandon> {
        let id = self.in_flight.first().map(|f| f.id);
        match id {
            Some(id) => self.bytes(now, id, total_received),
            None => {
                self.advance(now);
                None
            }
        }
    }

    /// `total_received` body bytes of download `id` have arrived. Polls the ABR's abandonment
    /// rule; on `Some`, the transport must cancel the request (and the player has cancelled every
    /// later download in flight too, see [`Player::cancel`]); the player will request the same
    /// segment at the lower rung on the next poll.
    pub fn bytes(&mut self, now: Ns, id: DlId, total_received: u64) -> Option<Abandon> {
        self.advance(now);
        let now = self.clock;
        let i = self.flight_index(id)?;
        let f = &mut self.in_flight[i];
        if f.done_at.is_some() {
            return None;
        }
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
        let to = match self.abr.on_progress_partial(&obs, &prog) {
            ProgressAction::Continue => return None,
            ProgressAction::Abandon(to) => to,
            ProgressAction::KeepPartial(p) => {
                let f = &mut self.in_flight[i];
                if !self.keep_partial || p.bytes == 0 || p.bytes >= f.bytes_total {
                    return None;
                }
                // stop once the level's bytes are in (or now, if more already arrived)
                f.bytes_total = p.bytes.max(f.received);
                f.partial_ssim = Some(p.ssim);
                f.reason = format!("{}; kept partial at {} B, SSIM {:.3}", f.reason, f.bytes_total, p.ssim);
                return Some(Abandon {
                    id,
                    segment: f.segment,
                    from_rung: f.rung,
                    to_rung: f.rung,
                    bytes_received: f.received,
                    keep: Some(f.bytes_total),
                });
            }
        };
        let f = &self.in_flight[i];
        if to >= f.rung {
            return None; // only abandonments to a lower rung are honoured
        }
        let (segment, from, received) = (f.segment, f.rung, f.received);
        self.cancel_from(now, i, Some(to));
        Some(Abandon { id, segment, from_rung: from, to_rung: to, bytes_received: received, keep: None })
    }

    /// The data plane can stop a download early and keep what arrived (VOXEL): honour the ABR's
    /// keep-partial abandonment ([`crate::abr::ProgressAction::KeepPartial`]).
    pub fn enable_keep_partial(&mut self) {
        self.keep_partial = true;
    }

    /// Body bytes requested for download `id` (after any keep-partial truncation).
    pub fn download_total(&self, id: DlId) -> Option<u64> {
        self.flight_index(id).map(|i| self.in_flight[i].bytes_total)
    }

    /// Before [`Player::complete`]: download `id`'s segment plays at `ssim` (what its received
    /// frames give) and `lost` of its body bytes were zero-filled (VOXEL's unreliable data).
    pub fn set_received_quality(&mut self, id: DlId, ssim: Option<f64>, lost: u64) {
        if let Some(i) = self.flight_index(id) {
            let f = &mut self.in_flight[i];
            if ssim.is_some() {
                f.partial_ssim = ssim;
            }
            f.lost = lost;
        }
    }

    /// After the segment entered the buffer: `extra` more bytes were fetched for it (VOXEL's hole
    /// filling and optional ranges); it now plays at `ssim` with `lost` bytes zero-filled, unless
    /// its playback has begun (then only the bytes count).
    pub fn revise_segment(&mut self, segment: usize, ssim: Option<f64>, lost: u64, extra: u64) {
        let playing = self.played > segment as Ns * self.video.segment_duration;
        let metric_ok = matches!(self.quality_metric.as_deref(), None | Some("ssim"));
        let Some(l) = self.log.iter_mut().rev().find(|l| l.segment == segment && !l.abandoned) else {
            if self.violations.len() < 8 {
                self.violations.push(format!("revise_segment: segment {segment} is not in the buffer"));
            }
            return;
        };
        // bytes that arrive once the segment is playing no longer change what was shown
        if !playing {
            if let (Some(q), true) = (ssim, metric_ok) {
                l.quality = Some(q);
            }
            l.lost_bytes = lost;
        }
        l.extra_bytes += extra;
        l.bytes += extra;
        self.bytes += extra;
    }

    /// A data-plane request finished: handed to the ABR ([`Abr::on_request_sample`]).
    pub fn request_sample(&mut self, now: Ns, s: &crate::abr::RequestSample) {
        self.advance(now);
        self.abr.on_request_sample(s);
    }

    /// The data plane cancels download `id` (and with it every later download in flight, which
    /// were requested after it): each is logged as abandoned with the bytes received so far; the
    /// player will request the earliest cancelled segment again (asking the ABR anew). Returns
    /// the ids cancelled.
    pub fn cancel(&mut self, now: Ns, id: DlId) -> Vec<DlId> {
        self.advance(now);
        let now = self.clock;
        match self.flight_index(id) {
            Some(i) => self.cancel_from(now, i, None),
            None => Vec::new(),
        }
    }

    /// Cancel `in_flight[i..]` (newest first in the log order of issue); `to` = the rung the
    /// abandonment rule chose for the first one.
    fn cancel_from(&mut self, now: Ns, i: usize, to: Option<usize>) -> Vec<DlId> {
        let gone: Vec<InFlight> = self.in_flight.drain(i..).collect();
        let mut ids = Vec::with_capacity(gone.len());
        for f in &gone {
            ids.push(f.id);
            if f.done_at.is_some() {
                // Complete but waiting for an earlier segment: its bytes are lost with it.
                self.bytes += f.bytes_total;
            } else {
                self.bytes += f.received;
            }
            let got = if f.done_at.is_some() { f.bytes_total } else { f.received };
            let rec = self.finish_record(f, now, got, true);
            self.log.push(self.make_log(f, &rec, 0));
            self.after_download(&rec);
        }
        let first = &gone[0];
        self.next_request = first.segment;
        let reason = match to {
            Some(_) => format!("abandoned rung {} at {}/{} B", first.rung, first.received, first.bytes_total),
            None => format!("cancelled rung {} at {}/{} B", first.rung, first.received, first.bytes_total),
        };
        // The retry fetches the whole segment at the lower rung.
        self.pending =
            to.map(|to| Pending { segment: first.segment, rung: to, not_before: now, delay: 0, reason, partial: None });
        ids
    }

    /// Sequential form of [`Player::complete`] (the oldest download).
    pub fn on_complete(&mut self, now: Ns) {
        match self.in_flight.first().map(|f| f.id) {
            Some(id) => self.complete(now, id),
            None => {
                self.advance(now);
                if self.violations.len() < 8 {
                    self.violations.push(format!("on_complete at {now} with no download in flight"));
                }
            }
        }
    }

    /// The last byte of download `id` arrived. The segment enters the buffer once every earlier
    /// segment has (downloads complete out of order only on parallel connections).
    pub fn complete(&mut self, now: Ns, id: DlId) {
        self.advance(now);
        let now = self.clock;
        let Some(i) = self.flight_index(id) else {
            if self.violations.len() < 8 {
                self.violations.push(format!("complete at {now} for download {id}, which is not in flight"));
            }
            return;
        };
        self.in_flight[i].done_at = Some(now);
        self.in_flight[i].received = self.in_flight[i].bytes_total;
        while self.in_flight.first().is_some_and(|f| f.done_at.is_some()) {
            let f = self.in_flight.remove(0);
            let done = f.done_at.expect("complete");
            let rec = self.finish_record(&f, done, f.bytes_total, false);
            let dur = self.video.seg_duration(f.segment);
            self.buffer += dur;
            self.downloaded_media += dur;
            self.max_buffer_seen = self.max_buffer_seen.max(self.buffer);
            self.forced_allowance_max = self.forced_allowance_max.max(self.forced_media);
            let max_seg = self.video.segment_duration.max(self.video.seg_duration(self.video.n_segments() - 1));
            if self.buffer > self.buffer_max + max_seg + self.forced_media && self.violations.len() < 8 {
                self.violations.push(format!(
                    "buffer reached {} > buffer_max {} + one segment {} + forced media {}",
                    self.buffer, self.buffer_max, max_seg, self.forced_media
                ));
            }
            self.next_segment = f.segment + 1;
            self.last_rung = Some(f.rung);
            self.bytes += f.bytes_total;
            let stall = self.stalled - self.stall_attributed;
            self.stall_attributed = self.stalled;
            self.log.push(self.make_log(&f, &rec, stall));
            self.after_download(&rec);
            self.maybe_play();
        }
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
            quality: match f.partial_ssim {
                // a VOXEL segment plays at its SSIM level: the quality when the metric is SSIM
                // (or none is configured); unknown in another metric
                Some(ssim) => match self.quality_metric.as_deref() {
                    None | Some("ssim") => Some(ssim),
                    Some(_) => None,
                },
                None => self.quality_metric.as_deref().and_then(|m| self.video.quality(m, f.segment, f.rung)),
            },
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
            lost_bytes: if rec.abandoned { 0 } else { f.lost },
            extra_bytes: 0,
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
    /// buffer <= buffer_max + one (the longest) segment + the media a data plane forced past the
    /// cap (one Sprint train or Sprint-x range; 0 for sequential and plain pipelining); per-segment stalls sum to the stalled
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
        if self.max_buffer_seen > self.buffer_max + max_seg + self.forced_allowance_max {
            return Err(format!(
                "player: buffer reached {} > buffer_max {} + one segment {} + forced media {}",
                self.max_buffer_seen, self.buffer_max, max_seg, self.forced_allowance_max
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
