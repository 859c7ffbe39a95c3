//! Adaptive bitrate (ABR) algorithms, sans-IO.
//!
//! An ABR sees the video, the player's buffer and the history of downloads, and decides the rung
//! of the next segment (and optionally a delay before requesting it). It never sees the network
//! directly: throughput comes from [`DownloadRecord`]s, which the player fills from whatever
//! carries the bytes (simulated TCP, trace mode, a real socket).
//!
//! Call order, per segment: `choose` -> (download; `on_progress` may be polled by the player
//! while the download runs, for abandonment) -> `on_download` with the finished record.
//!
//! Adding an ABR: one file with a config struct (published defaults in its docs), `pub const
//! ENTRY: AbrEntry`, hand-computed unit tests; one line in [`REGISTRY`]; a page in docs/models/.

pub mod abrstar;
pub mod bb;
pub mod bba;
pub mod beta;
pub mod bola;
pub mod bolae;
pub mod buffer;
pub mod classic;
pub mod dynamic;
pub mod estimators;
pub mod festive;
pub mod fixed;
pub mod huang;
pub mod mpc;
pub mod panda;
pub mod sa3;
pub mod throughput;
pub mod tputfrac;

use crate::params::{ParamError, ParamSpec, Params};
use crate::time::Ns;
use crate::video::Video;

/// One finished (or abandoned) segment download, as the player measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DownloadRecord {
    pub segment: usize,
    pub rung: usize,
    /// Bytes received (the whole segment unless abandoned).
    pub bytes: u64,
    /// When the request was issued, the first byte arrived, the last byte arrived (ns).
    pub t_request: Ns,
    pub t_first_byte: Ns,
    pub t_last_byte: Ns,
    pub abandoned: bool,
}

impl DownloadRecord {
    /// Throughput from request to last byte (bit/s), the "request-to-last-byte" sample.
    pub fn tput_request_bps(&self) -> f64 {
        let d = self.t_last_byte.saturating_sub(self.t_request).max(1);
        self.bytes as f64 * 8e9 / d as f64
    }
    /// Throughput from first to last byte (bit/s), excluding the first-byte latency.
    pub fn tput_first_byte_bps(&self) -> f64 {
        let d = self.t_last_byte.saturating_sub(self.t_first_byte).max(1);
        self.bytes as f64 * 8e9 / d as f64
    }
    /// Time to first byte (ns).
    pub fn latency(&self) -> Ns {
        self.t_first_byte.saturating_sub(self.t_request)
    }
}

/// One finished HTTP request, as the data plane measured it (see [`Abr::on_request_sample`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RequestSample {
    /// Connection slot.
    pub conn: u32,
    /// First and last segment whose bytes it carried, and the rung.
    pub segment: usize,
    pub last_segment: usize,
    pub rung: usize,
    /// Response body bytes.
    pub bytes: u64,
    pub t_request: Ns,
    pub t_first_byte: Ns,
    pub t_last_byte: Ns,
}

/// What the ABR observes when deciding.
#[derive(Clone, Copy, Debug)]
pub struct AbrObs<'a> {
    pub now: Ns,
    pub video: &'a Video,
    /// Index of the segment to decide for.
    pub segment: usize,
    /// Media time buffered ahead of the playhead (ns).
    pub buffer: Ns,
    /// The player's maximum buffer (ns): downloads pause while buffer + one segment exceeds it.
    pub buffer_max: Ns,
    /// Rung of the previous segment (None before the first).
    pub last_rung: Option<usize>,
    /// Playback has started (false during startup).
    pub playing: bool,
    /// Every finished download so far, oldest first.
    pub history: &'a [DownloadRecord],
}

/// A decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub rung: usize,
    /// Wait this long before issuing the request (BOLA-O, BOLA-E's placeholder logic); 0 = now.
    pub delay: Ns,
    /// Why (logged per segment): e.g. "tput 3.2Mbps*0.9 -> rung 4".
    pub reason: String,
}

/// A partial segment (VOXEL): of the chosen rung only the reliable part and the first frames of
/// the droppable ones, `bytes` in all, playing at `ssim` (level `level` of the segment's list).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Partial {
    pub level: usize,
    pub bytes: u64,
    pub ssim: f64,
}

/// What an ABR wants done with the download in flight ([`Abr::on_progress_partial`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ProgressAction {
    Continue,
    /// Abandon it and fetch the segment again at this (lower) rung, as [`Abr::on_progress`].
    Abandon(usize),
    /// Keep-partial abandonment (VOXEL's ABR*): stop the download once `bytes` of its body are
    /// in and play the segment at `ssim` (`level` of the segment's SSIM list at its rung).
    KeepPartial(Partial),
}

/// Progress of the download in flight (for abandonment rules).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: Ns,
    pub segment: usize,
    pub rung: usize,
    pub bytes_total: u64,
    pub bytes_received: u64,
    pub t_request: Ns,
    /// None until the first byte arrived.
    pub t_first_byte: Option<Ns>,
}

/// The ABR interface.
pub trait Abr: Send {
    fn name(&self) -> &'static str;
    fn choose(&mut self, obs: &AbrObs) -> Decision;
    /// A download finished (update estimators).
    fn on_download(&mut self, _obs: &AbrObs, _rec: &DownloadRecord) {}
    /// One HTTP request of the data plane finished (a chunklet, an expanded range, a pipelined
    /// segment): a throughput sample finer or coarser than a segment. Called before the
    /// segment's own `on_download` when both finish at once. Default: ignored.
    fn on_request_sample(&mut self, _sample: &RequestSample) {}
    /// Abandonment hook: return Some(rung) to abandon the current download and fetch the segment
    /// again at `rung` (lower than the current one). Default: never abandon.
    fn on_progress(&mut self, _obs: &AbrObs, _p: &Progress) -> Option<usize> {
        None
    }
    /// The extended abandonment hook, called instead of [`Abr::on_progress`] for downloads whose
    /// data plane can stop them early and keep what arrived (the VOXEL plane):
    /// [`ProgressAction::KeepPartial`] truncates the download to a prefix of its body (the
    /// reliable part and the first droppable frames, in importance order). `p.bytes_received`
    /// counts bytes delivered in order, zero-filled holes included. Default: `on_progress`.
    fn on_progress_partial(&mut self, obs: &AbrObs, p: &Progress) -> ProgressAction {
        match self.on_progress(obs, p) {
            Some(r) => ProgressAction::Abandon(r),
            None => ProgressAction::Continue,
        }
    }
    /// The part of the segment the last `choose` wants (VOXEL's partial segments): asked right
    /// after `choose`; None = the whole segment. Default: None.
    fn partial(&self) -> Option<Partial> {
        None
    }
    /// Whether this ABR may ask for partial segments (data planes that fetch whole segments by
    /// their own ranges refuse it). Default: false.
    fn fetches_partial_segments(&self) -> bool {
        false
    }
    /// The maximum buffer this ABR was designed for (e.g. 240 s for the BBA family of the HAS
    /// testbed), which the player may adopt when the scenario does not set one. Default: None.
    fn preferred_buffer_max(&self) -> Option<Ns> {
        None
    }
    /// The parameter that sets [`Abr::preferred_buffer_max`] (named when it is below one segment).
    fn preferred_buffer_max_param(&self) -> &'static str {
        "buffer_max"
    }
}

/// Builds an ABR from its parameters and the video.
pub type AbrBuildFn = fn(&Params, &Video) -> Result<Box<dyn Abr>, ParamError>;

/// A registered ABR.
pub struct AbrEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub reference: &'static str,
    pub params: &'static [ParamSpec],
    pub build: AbrBuildFn,
}

/// Every ABR, one line each.
pub static REGISTRY: &[AbrEntry] = &[
    throughput::ENTRY,
    tputfrac::ENTRY,
    sa3::ENTRY,
    classic::CLASSIC1,
    classic::CLASSIC2,
    bba::BBA0,
    bba::BBA1,
    bba::BBA2,
    bba::BBA3,
    buffer::ENTRY,
    huang::ENTRY,
    bb::ENTRY,
    bola::ENTRY,
    bolae::ENTRY,
    dynamic::ENTRY,
    mpc::MPC,
    mpc::ROBUSTMPC,
    festive::ENTRY,
    panda::ENTRY,
    fixed::ENTRY,
    abrstar::ENTRY,
    beta::ENTRY,
];

pub fn find(name: &str) -> Option<&'static AbrEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Builds ABRs the registry does not know (e.g. `python:...` ABRs from the bindings).
/// Its arguments: the ABR's name, its parameters, the video and the client's seed
/// ([`component_seed`]), which the Python front passes to a class that takes a `seed`.
pub type AbrFactory = Box<dyn Fn(&str, &Params, &Video, u64) -> Result<Box<dyn Abr>, ParamError> + Send>;

/// An ABR by name: the registry, or the factory for "python:" names.
pub fn build_with(
    name: &str,
    params: &Params,
    video: &Video,
    seed: u64,
    factory: Option<&AbrFactory>,
) -> Result<Box<dyn Abr>, ParamError> {
    if name.starts_with("python:") {
        match factory {
            Some(f) => f(name, params, video, seed),
            None => Err(crate::params::perr("abr", format!("\"{name}\" needs the Python front (qoelab.run)"))),
        }
    } else {
        build(name, params, video)
    }
}

/// Randomized ABRs (those with a `seed` parameter, FESTIVE today) draw from a stream derived from
/// the scenario seed and the client's name, unless the scenario sets `seed` itself.
pub fn with_default_seed(name: &str, params: Params, scenario_seed: u64, client: &str) -> Params {
    match find(name) {
        Some(e) if e.params.iter().any(|p| p.name == "seed") && !params.0.contains_key("seed") => {
            params.with("seed", component_seed(scenario_seed, client))
        }
        _ => params,
    }
}

/// The seed of a client's ABR: the first draw of the stream named `client/<name>/abr` of the
/// scenario seed.
pub fn component_seed(scenario_seed: u64, client: &str) -> u64 {
    crate::rng::Rng::for_component(scenario_seed, &format!("client/{client}/abr")).next_u64()
}

pub fn build(name: &str, params: &Params, video: &Video) -> Result<Box<dyn Abr>, ParamError> {
    let e = find(name).ok_or_else(|| {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        crate::params::perr("abr", format!("unknown ABR \"{name}\"; expected one of: {}", names.join(", ")))
    })?;
    params.check_known(e.params)?;
    (e.build)(params, video)
}

#[cfg(test)]
mod tests {
    use super::estimators::testutil::{cbr, obs};
    use super::*;

    #[test]
    fn registry_builds_defaults_and_rejects_unknown_params() {
        let v = cbr(&[300, 750, 1200, 1850, 2850, 4300], 4, 12);
        let mut names = std::collections::BTreeSet::new();
        for e in REGISTRY {
            assert!(names.insert(e.name), "duplicate ABR name {}", e.name);
            let mut a = build(e.name, &Params::new(), &v).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(a.name(), e.name);
            let d = a.choose(&obs(&v, 0, 0, None, &[]));
            assert!(d.rung < v.n_rungs(), "{}", e.name);
            assert!(!d.reason.is_empty(), "{}", e.name);
            let err = build(e.name, &Params::new().with("no_such_param", 1), &v).err().expect(e.name);
            assert_eq!(err.param, "no_such_param");
            // every parameter has a doc line
            assert!(e.params.iter().all(|p| !p.doc.is_empty()), "{}", e.name);
        }
        assert!(build("nope", &Params::new(), &v).is_err());
    }

    /// A minimal fluid player (constant rate, fixed first-byte latency) used as a smoke test:
    /// returns (rungs chosen, stall seconds after the first segment).
    fn fluid_run(abr: &mut dyn Abr, v: &Video, rate_bps: f64, latency: Ns, default_max: Ns) -> (Vec<usize>, f64) {
        let (r, st, _) = fluid_run_reasons(abr, v, rate_bps, latency, default_max);
        (r, st)
    }

    fn fluid_run_reasons(
        abr: &mut dyn Abr,
        v: &Video,
        rate_bps: f64,
        latency: Ns,
        default_max: Ns,
    ) -> (Vec<usize>, f64, Vec<String>) {
        use crate::time::{secs, SEC};
        let bmax = abr.preferred_buffer_max().unwrap_or(default_max);
        let (mut t, mut buf, mut stall): (Ns, Ns, f64) = (0, 0, 0.0);
        let mut hist: Vec<DownloadRecord> = vec![];
        let mut rungs = vec![];
        let mut reasons = vec![];
        let mut last = None;
        for seg in 0..v.n_segments() {
            let d = v.seg_duration(seg);
            if buf + d > bmax {
                let w = buf + d - bmax;
                t += w;
                buf -= w;
            }
            let obs = AbrObs {
                now: t,
                video: v,
                segment: seg,
                buffer: buf,
                buffer_max: bmax,
                last_rung: last,
                playing: seg > 0,
                history: &hist,
            };
            let dec = abr.choose(&obs);
            assert!(dec.rung < v.n_rungs());
            assert!(dec.delay < 1000 * SEC, "{}: delay {}", abr.name(), dec.delay);
            t += dec.delay;
            buf = buf.saturating_sub(dec.delay);
            let bytes = v.size(seg, dec.rung);
            let dl = latency + crate::time::from_secs_f64(bytes as f64 * 8.0 / rate_bps);
            let rec = DownloadRecord {
                segment: seg,
                rung: dec.rung,
                bytes,
                t_request: t,
                t_first_byte: t + latency,
                t_last_byte: t + dl,
                abandoned: false,
            };
            if seg > 0 && dl > buf {
                stall += secs(dl - buf);
            }
            buf = buf.saturating_sub(dl) + d;
            t += dl;
            hist.push(rec);
            let obs = AbrObs {
                now: t,
                video: v,
                segment: seg,
                buffer: buf,
                buffer_max: bmax,
                last_rung: Some(dec.rung),
                playing: true,
                history: &hist,
            };
            abr.on_download(&obs, &rec);
            last = Some(dec.rung);
            rungs.push(dec.rung);
            reasons.push(dec.reason);
        }
        (rungs, stall, reasons)
    }

    #[test]
    fn smoke_every_abr_on_a_constant_5mbps_link() {
        use crate::time::{MS, SEC};
        // Pensieve ladder, 4 s segments, 150 segments (10 min); 5 Mbit/s, 40 ms to first byte.
        let v = cbr(&[300, 750, 1200, 1850, 2850, 4300], 4, 150);
        for e in REGISTRY {
            let mut a = build(e.name, &Params::new(), &v).unwrap();
            let (rungs, stall) = fluid_run(a.as_mut(), &v, 5e6, 40 * MS, 60 * SEC);
            let tail = &rungs[rungs.len() - 10..];
            eprintln!("{:>10}: stall {stall:.2}s last rungs {tail:?}", e.name);
            assert!(stall < 1e-9, "{} stalled {stall}", e.name);
            if !["fixed", "bba0", "bba1", "bba2", "bba3", "buffer"].contains(&e.name) {
                // rate/hybrid ABRs settle at 4.3 Mbit/s (rung 5) or one below
                assert!(tail.iter().all(|q| *q >= 4), "{}: {tail:?}", e.name);
            }
        }
    }

    #[test]
    fn dynamic_reaches_bola_with_its_preferred_buffer() {
        use crate::time::{MS, SEC};
        let v = cbr(&[300, 750, 1200, 1850, 2850, 4300], 4, 150);
        let mut a = build("dynamic", &Params::new(), &v).unwrap();
        // BOLA-E target max(18, 10 + 2*6 = 22) = 22 s, plus one segment
        assert_eq!(a.preferred_buffer_max(), Some(26 * SEC));
        let (_, stall, reasons) = fluid_run_reasons(a.as_mut(), &v, 5e6, 40 * MS, 60 * SEC);
        assert!(stall < 1e-9);
        assert!(reasons[0].starts_with("[throughput]"));
        assert!(reasons.iter().any(|r| r.starts_with("[bola]")), "{:?}", &reasons[reasons.len() - 3..]);
    }

    #[test]
    fn smoke_below_the_lowest_rung_and_vbr() {
        use crate::time::{MS, SEC};
        let v = cbr(&[300, 750, 1200, 1850, 2850, 4300], 4, 40);
        for e in REGISTRY {
            let mut a = build(e.name, &Params::new(), &v).unwrap();
            // 200 kbit/s: below the lowest rung -> stalls, and the adaptive ones sit at rung 0
            let (rungs, stall) = fluid_run(a.as_mut(), &v, 2e5, 40 * MS, 60 * SEC);
            assert!(stall > 0.0, "{}", e.name);
            assert!(rungs[rungs.len() - 5..].iter().all(|q| *q == 0), "{}: {rungs:?}", e.name);
        }
        // VBR sizes (x0.5..1.5, seeded), every ABR runs without panicking at 1 and 8 Mbit/s
        let mut vbr = cbr(&[300, 750, 1200, 1850, 2850, 4300], 2, 120);
        let mut rng = crate::rng::Rng::from_seed(3);
        for row in vbr.sizes.iter_mut() {
            let f = 0.5 + rng.uniform();
            for x in row.iter_mut() {
                *x = (*x as f64 * f) as u64;
            }
        }
        vbr.last_segment_duration = Some(SEC);
        for e in REGISTRY {
            for rate in [1e6, 8e6] {
                let mut a = build(e.name, &Params::new(), &vbr).unwrap();
                let (rungs, _) = fluid_run(a.as_mut(), &vbr, rate, 80 * MS, 30 * SEC);
                assert_eq!(rungs.len(), 120);
            }
        }
    }

    fn default_text(spec: &ParamSpec) -> String {
        use crate::params::{Default as D, Unit as U};
        match (spec.default, spec.unit) {
            (D::Int(i), U::Duration) => format!("{} s", i as f64 / 1e9),
            (D::Int(i), U::Rate) => format!("{} Mbit/s", i as f64 / 1e6),
            (D::Int(i), _) => i.to_string(),
            (D::Float(f), _) => f.to_string(),
            (D::Bool(b), _) => b.to_string(),
            (D::Str(x), _) => format!("\"{x}\""),
            (D::Context(c), _) => format!("<{c}>"),
            (D::None, _) => "none".into(),
        }
    }

    /// The parameter table of an ABR as markdown (name | unit | default | meaning).
    pub(crate) fn params_markdown(e: &AbrEntry) -> String {
        let mut out = String::from("| name | unit | default | meaning |\n|---|---|---|---|\n");
        for p in e.params {
            let unit = match p.unit {
                crate::params::Unit::Choice(c) => c.join(" \\| "),
                u => u.name().to_string(),
            };
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                p.name,
                unit,
                default_text(p),
                p.doc.replace('|', "\\|")
            ));
        }
        out
    }

    /// `cargo test -p qoelab-core dump_abr_param_tables -- --ignored --nocapture` prints the tables
    /// pasted into docs/models/abr-*.md.
    #[test]
    #[ignore]
    fn dump_abr_param_tables() {
        for e in REGISTRY {
            println!("=== {}\n{}", e.name, params_markdown(e));
        }
    }

    /// Every ABR has a page docs/models/abr-<name>.md holding its current parameter table.
    #[test]
    fn docs_pages_hold_the_parameter_tables() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/models");
        for e in REGISTRY {
            let path = root.join(format!("abr-{}.md", e.name));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            for sec in ["## Model", "## Reference", "## Parameters", "## Deviations", "## Validation"] {
                assert!(text.contains(sec), "{}: missing {sec}", path.display());
            }
            assert!(text.contains(&params_markdown(e)), "{}: parameter table out of date", path.display());
        }
    }
}
