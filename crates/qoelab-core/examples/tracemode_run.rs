//! Run one ABR in trace mode over Sabre network JSON files and print Sabre-comparable metrics.
//!
//! ```text
//! cargo run --release --example tracemode_run -p qoelab-core -- \
//!     --video video.json --abr bolae [--params '{"safety": 1.0}'] [--buffer-max 25] \
//!     [--gp 5] [--segments] [--log] NETWORK.json [NETWORK.json ...]
//! ```
//!
//! `--video` is a qoelab Video JSON (e.g. from `qoelab.video.load_sabre_movie`); each NETWORK is a
//! Sabre network JSON (`[{duration_ms, bandwidth_kbps, latency_ms}, ...]`). The run uses
//! `TraceOpts::sabre()` and a player that starts after the first segment (Sabre) with the given
//! maximum buffer (Sabre `-b`, default 25 s). Parameters are the ABR's registry parameters in
//! canonical units (durations in ns). One JSON object per network is printed on stdout:
//!
//! * `n_segments`, `mean_bitrate_kbps` (nominal bitrate averaged over segments = Sabre's
//!   "total played bitrate" / segments), `time_avg_bitrate_kbps` (Sabre's "time average played
//!   bitrate": Σ bitrate × segment duration / (startup + play + rebuffer time)),
//! * `rebuffer_s`, `rebuffer_events` (stalls after startup), `startup_s`,
//! * `switches` (rung changes between consecutive segments), `bitrate_change_kbps` (Σ |Δ bitrate|,
//!   Sabre's "total bitrate change"),
//! * `time_avg_score` (Sabre: (Σ ln(b/b0) − gp × rebuffer / segment duration) / (total time /
//!   segment duration)),
//! * `abandoned`, `error`, with `--segments` the rung of each played segment, and with `--log`
//!   every download as `[segment, rung, t_request ms, t_last_byte ms, buffer_before ms, abandoned,
//!   ABR reason]`.

use qoelab_core::abr;
use qoelab_core::params::Params;
use qoelab_core::player::{PlayerConfig, StartupPolicy};
use qoelab_core::time::SEC;
use qoelab_core::tracemode::{run_trace_mode, Schedule, TraceOpts};
use qoelab_core::video::Video;
use serde_json::{json, Value};
use std::sync::Arc;

fn usage(msg: &str) -> ! {
    eprintln!("tracemode_run: {msg}");
    eprintln!(
        "usage: tracemode_run --video VIDEO.json --abr NAME [--params JSON] [--buffer-max S] [--gp GP] [--segments] [--log] NETWORK.json..."
    );
    std::process::exit(2)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| usage(&format!("{path}: {e}")))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut video_path, mut abr_name, mut params) = (None, None, Value::Null);
    let (mut buffer_max, mut gp, mut per_segment, mut full_log) = (25.0f64, 5.0f64, false, false);
    let mut networks = Vec::new();
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().unwrap_or_else(|| usage(&format!("{name}: expected a value")));
        match a.as_str() {
            "--video" => video_path = Some(val("--video")),
            "--abr" => abr_name = Some(val("--abr")),
            "--params" => {
                let t = val("--params");
                params = serde_json::from_str(&t).unwrap_or_else(|e| usage(&format!("--params: {e}")))
            }
            "--buffer-max" => {
                buffer_max = val("--buffer-max").parse().unwrap_or_else(|e| usage(&format!("--buffer-max: {e}")))
            }
            "--gp" => gp = val("--gp").parse().unwrap_or_else(|e| usage(&format!("--gp: {e}"))),
            "--segments" => per_segment = true,
            "--log" => full_log = true,
            s if s.starts_with("--") => usage(&format!("unknown option {s}")),
            _ => networks.push(a),
        }
    }
    let video_path = video_path.unwrap_or_else(|| usage("--video is required"));
    let abr_name = abr_name.unwrap_or_else(|| usage("--abr is required"));
    if networks.is_empty() {
        usage("expected at least one NETWORK.json");
    }
    let video: Video =
        serde_json::from_str(&read(&video_path)).unwrap_or_else(|e| usage(&format!("{video_path}: {e}")));
    video.validate().unwrap_or_else(|e| usage(&format!("{video_path}: {e}")));
    let video = Arc::new(video);
    let params = Params::from_value(&params).unwrap_or_else(|e| usage(&format!("--params: {e}")));
    let cfg = PlayerConfig {
        startup: StartupPolicy::Segments(1),
        buffer_max: (buffer_max * SEC as f64).round() as u64,
        // --buffer-max (default 25 s = Sabre -b 25) holds for every ABR, not the ABR's preference
        abr_buffer_max: false,
        ..PlayerConfig::default()
    };
    let seg_s = video.segment_duration as f64 / SEC as f64;
    let b0 = video.bitrates_bps[0] as f64;
    for net in &networks {
        let schedule = Schedule::from_sabre_json(&read(net), 1.0).unwrap_or_else(|e| usage(&format!("{net}: {e}")));
        let a = abr::build(&abr_name, &params, &video).unwrap_or_else(|e| usage(&format!("abr: {e}")));
        let r = run_trace_mode(video.clone(), a, cfg.clone(), &schedule, &TraceOpts::sabre());
        let played: Vec<_> = r.log.iter().filter(|l| !l.abandoned).collect();
        let n = played.len();
        let sum_kbps: f64 = played.iter().map(|l| l.bitrate_bps as f64 / 1000.0).sum();
        let utility: f64 = played.iter().map(|l| (l.bitrate_bps as f64 / b0).ln()).sum();
        let mut switches = 0usize;
        let mut change_kbps = 0.0;
        for w in played.windows(2) {
            if w[0].rung != w[1].rung {
                switches += 1;
                change_kbps += (w[1].bitrate_bps as f64 - w[0].bitrate_bps as f64).abs() / 1000.0;
            }
        }
        let sm = &r.summary;
        let to_s = |x: u64| x as f64 / SEC as f64;
        let total_s = to_s(sm.startup) + to_s(sm.played) + to_s(sm.stalled);
        let chunks = total_s / seg_s;
        let mut out = json!({
            "network": net,
            "abr": abr_name,
            "n_segments": n,
            "mean_bitrate_kbps": if n > 0 { sum_kbps / n as f64 } else { 0.0 },
            "time_avg_bitrate_kbps": if chunks > 0.0 { sum_kbps / chunks } else { 0.0 },
            "rebuffer_s": to_s(sm.stalled),
            "rebuffer_events": sm.stall_count,
            "startup_s": to_s(sm.startup),
            "switches": switches,
            "bitrate_change_kbps": change_kbps,
            "time_avg_score": if chunks > 0.0 { (utility - gp * to_s(sm.stalled) / seg_s) / chunks } else { 0.0 },
            "abandoned": sm.abandoned,
            "error": r.error,
        });
        if per_segment {
            out["rungs"] = json!(played.iter().map(|l| l.rung).collect::<Vec<_>>());
        }
        if full_log {
            out["log"] = json!(r
                .log
                .iter()
                .map(|l| json!([
                    l.segment,
                    l.rung,
                    l.t_request as f64 / 1e6,
                    l.t_last_byte as f64 / 1e6,
                    l.buffer_before as f64 / 1e6,
                    l.abandoned,
                    l.abr_reason
                ]))
                .collect::<Vec<_>>());
        }
        println!("{out}");
    }
}
