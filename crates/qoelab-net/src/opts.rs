//! `qoelab link` options (pure parsing; errors are one-line messages).

use qoelab_core::net::trace::Opportunities;
use qoelab_core::params::{Params, Unit};
use qoelab_core::time::{Ns, MS, SEC, US};

#[derive(Clone, Debug)]
pub struct Options {
    pub rate_bps: u64,
    pub uplink_rate_bps: Option<u64>,
    pub rtt: Ns,
    pub aqm: String,
    pub aqm_params: Vec<(String, String)>,
    pub buffer_pkts: Option<u64>,
    pub buffer_bytes: Option<u64>,
    pub trace: Option<String>,
    pub uplink_trace: Option<String>,
    pub loss: f64,
    pub server: Option<String>,
    pub json_stats: Option<String>,
    pub downlink_log: Option<String>,
    pub uplink_log: Option<String>,
    pub seed: u64,
    pub rt: bool,
    pub command: Vec<String>,
    /// `--uplink-queue` / `--uplink-queue-args` (mm-link), overriding --aqm/--aqm-param/--buffer.
    pub uplink_queue: Option<QueueSpec>,
    /// `--downlink-queue` / `--downlink-queue-args` (mm-link).
    pub downlink_queue: Option<QueueSpec>,
}

/// One direction's queue: a discipline of the registry, its parameters (K=V with units) and the
/// buffer; `label` is what the mm-link log header and the statistics call it.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSpec {
    pub aqm: String,
    pub params: Vec<(String, String)>,
    pub buffer_pkts: Option<u64>,
    pub buffer_bytes: Option<u64>,
    pub label: String,
}

/// mm-link's queue types.
pub const MM_QUEUES: [&str; 5] = ["infinite", "droptail", "drophead", "codel", "pie"];

/// The queue of `--{dir}-queue=KIND --{dir}-queue-args=ARGS`. mm-link's types keep mm-link's
/// meaning: `infinite` (no limit), `droptail` (`packets=N` → pfifo, `bytes=N` → bfifo), `drophead`,
/// `codel` and `pie` in their Mahimahi modes, with `target`, `interval`, `qdelay_ref` and
/// `max_burst` in milliseconds and `packets`/`bytes` the limits. Any other discipline of the
/// registry takes `K=V` parameters with units (e.g. `target=5ms`) plus `packets`/`bytes`.
pub fn queue_spec(opt: &str, kind: &str, args: &str) -> Result<QueueSpec, String> {
    let mut kv = Vec::new();
    for part in args.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("{opt}-args: expected NAME=NUMBER[, NAME=NUMBER ...], found {part:?}"))?;
        kv.push((k.trim().to_string(), v.trim().to_string()));
    }
    let count = |k: &str, v: &str| -> Result<u64, String> {
        v.parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("{opt}-args: {k} expects a positive integer, found {v:?}"))
    };
    let mut spec = QueueSpec {
        aqm: kind.to_string(),
        params: Vec::new(),
        buffer_pkts: None,
        buffer_bytes: None,
        label: if args.trim().is_empty() { kind.to_string() } else { format!("{kind} [{}]", args.trim()) },
    };
    let mm = MM_QUEUES.contains(&kind);
    let allowed: &[&str] = match kind {
        "infinite" => &[],
        "droptail" | "drophead" => &["packets", "bytes"],
        "codel" => &["packets", "bytes", "target", "interval"],
        "pie" => &["packets", "bytes", "qdelay_ref", "max_burst"],
        _ => &[],
    };
    for (k, v) in &kv {
        match k.as_str() {
            "packets" => spec.buffer_pkts = Some(count(k, v)?),
            "bytes" => spec.buffer_bytes = Some(count(k, v)?),
            _ if mm => {
                if !allowed.contains(&k.as_str()) {
                    return Err(format!(
                        "{opt}-args: {kind} takes {}; found {k:?}",
                        if allowed.is_empty() { "no arguments".to_string() } else { allowed.join(", ") }
                    ));
                }
                let ms: f64 =
                    v.parse().ok().filter(|x: &f64| x.is_finite() && *x > 0.0).ok_or_else(|| {
                        format!("{opt}-args: {k} expects milliseconds (a positive number), found {v:?}")
                    })?;
                spec.params.push((k.clone(), format!("{}us", (ms * 1000.0).round() as u64)));
            }
            _ => spec.params.push((k.clone(), v.clone())),
        }
    }
    if mm && !allowed.contains(&"packets") && (spec.buffer_pkts.is_some() || spec.buffer_bytes.is_some()) {
        return Err(format!("{opt}-args: {kind} takes no arguments"));
    }
    match kind {
        // Mahimahi's infinite queue: no limit at all (memory is bounded by what the senders put in).
        "infinite" => {
            spec.aqm = "pfifo".into();
            spec.buffer_pkts = Some(u32::MAX as u64);
        }
        "droptail" => {
            spec.aqm = match (spec.buffer_pkts, spec.buffer_bytes) {
                (Some(_), None) => "pfifo".into(),
                (None, Some(_)) => "bfifo".into(),
                (None, None) => return Err(format!("{opt}-args: droptail needs packets=N or bytes=N")),
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "{opt}-args: droptail takes packets=N or bytes=N, not both (qoelab's pfifo / bfifo)"
                    ))
                }
            }
        }
        "drophead" if spec.buffer_pkts.is_none() && spec.buffer_bytes.is_none() => {
            return Err(format!("{opt}-args: drophead needs packets=N and/or bytes=N"))
        }
        "drophead" => {
            // Both limits apply when both are given; an unset one means none.
            spec.params.push(("limit".into(), spec.buffer_pkts.unwrap_or(0).to_string()));
            spec.params.push(("limit_bytes".into(), format!("{}B", spec.buffer_bytes.unwrap_or(0))));
        }
        "codel" | "pie" => {
            spec.params.push(("mode".into(), "mahimahi".into()));
            if let Some(b) = spec.buffer_bytes {
                spec.params.push(("limit_bytes".into(), format!("{b}B")));
                if spec.buffer_pkts.is_none() {
                    spec.params.push(("limit".into(), "0".into()));
                }
            }
        }
        _ => {}
    }
    // aqm_params speaks of --aqm / --aqm-param; here the discipline and its arguments came from `opt`.
    aqm_params(&spec.aqm, &spec.params).map_err(|e| {
        if let Some(m) = e.strip_prefix("--aqm: ") {
            format!("{opt}: {m}")
        } else {
            format!("{opt}-args: {}", e.trim_start_matches("--aqm-param: ").trim_start_matches("--aqm-param "))
        }
    })?;
    Ok(spec)
}

pub const USAGE: &str = "usage: qoelab link [--rate R] [--uplink-rate R] [--rtt D] [--aqm NAME] [--aqm-param K=V ...] \
[--buffer N(pkts|B|KB|MB)] [--trace FILE] [--uplink-trace FILE] [--loss P] [--server CMD] [--json-stats FILE] \
[--downlink-log FILE] [--uplink-log FILE] [--uplink-queue KIND] [--uplink-queue-args ARGS] [--downlink-queue KIND] \
[--downlink-queue-args ARGS] [--seed N] [--no-rt] -- COMMAND [ARG ...]";

impl Default for Options {
    fn default() -> Options {
        Options {
            rate_bps: 0,
            uplink_rate_bps: None,
            rtt: 0,
            aqm: "pfifo".into(),
            aqm_params: Vec::new(),
            buffer_pkts: None,
            buffer_bytes: None,
            trace: None,
            uplink_trace: None,
            loss: 0.0,
            server: None,
            json_stats: None,
            downlink_log: None,
            uplink_log: None,
            seed: 1,
            rt: true,
            command: Vec::new(),
            uplink_queue: None,
            downlink_queue: None,
        }
    }
}

/// Split "10.5Mbps" into (10.5, "mbps"), lower-cased unit.
fn num_unit(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let i = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let v: f64 = s[..i].parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    Some((v, s[i..].trim().to_ascii_lowercase()))
}

/// A rate: "10Mbps", "10Mbit", "500kbps", "1Gbps", "800bps" or bare bit/s.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let bad = || format!("expected a rate such as 10Mbps, found {s:?}");
    let (v, u) = num_unit(s).ok_or_else(bad)?;
    let mult = match u.as_str() {
        "" | "bps" | "bit" | "bit/s" => 1.0,
        "kbps" | "kbit" | "kbit/s" => 1e3,
        "mbps" | "mbit" | "mbit/s" => 1e6,
        "gbps" | "gbit" | "gbit/s" => 1e9,
        _ => return Err(bad()),
    };
    let r = (v * mult).round();
    if !(1.0..=1e12).contains(&r) {
        return Err(format!("expected a rate between 1 bit/s and 1 Tbit/s, found {s:?}"));
    }
    Ok(r as u64)
}

/// A duration: "40ms", "0.5s", "100us", "2000ns"; a bare number is milliseconds.
pub fn parse_duration(s: &str) -> Result<Ns, String> {
    let bad = || format!("expected a duration such as 40ms, found {s:?}");
    let (v, u) = num_unit(s).ok_or_else(bad)?;
    let mult = match u.as_str() {
        "ns" => 1.0,
        "us" | "µs" => US as f64,
        "" | "ms" => MS as f64,
        "s" => SEC as f64,
        _ => return Err(bad()),
    };
    let d = v * mult;
    if d > 3600.0 * SEC as f64 {
        return Err(format!("expected a duration up to 1 hour, found {s:?}"));
    }
    Ok(d.round() as Ns)
}

/// A size in bytes: "1500B", "150KB", "1MB", bare bytes (K = 1000).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let bad = || format!("expected a size such as 150KB, found {s:?}");
    let (v, u) = num_unit(s).ok_or_else(bad)?;
    let mult = match u.as_str() {
        "" | "b" | "bytes" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    Ok((v * mult).round() as u64)
}

/// A buffer: "100pkts" / "100packets" (packets) or a size in bytes. Returns (packets, bytes).
pub fn parse_buffer(s: &str) -> Result<(Option<u64>, Option<u64>), String> {
    let l = s.trim().to_ascii_lowercase();
    for suf in ["pkts", "pkt", "packets", "p"] {
        if let Some(n) = l.strip_suffix(suf) {
            let n: u64 = n.trim().parse().map_err(|_| format!("expected a buffer such as 100pkts, found {s:?}"))?;
            if n == 0 {
                return Err(format!("expected a buffer of at least 1 packet, found {s:?}"));
            }
            return Ok((Some(n), None));
        }
    }
    let b = parse_bytes(s).map_err(|_| format!("expected a buffer such as 100pkts or 150KB, found {s:?}"))?;
    if b < 1500 {
        return Err(format!("expected a buffer of at least 1500 bytes, found {s:?}"));
    }
    Ok((None, Some(b)))
}

/// A loss probability: "1%" or "0.01".
pub fn parse_loss(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("expected a loss such as 1% or 0.01, found {s:?}"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("expected a loss between 0 and 100%, found {s:?}"));
    }
    Ok(v)
}

/// A Mahimahi packet-delivery trace: one millisecond timestamp per line, each an opportunity to
/// deliver 1504 bytes; the trace repeats with a period of its last timestamp.
/// Bounds of a Mahimahi trace, as `qoelab run` reads one (docs/formats.md): at most 10^7
/// timestamps, each at most 10^11 ms (~3 years; ms x 10^6 overflowed 64 bits past 1.8 x 10^13 ms),
/// in a regular file of at most 256 MiB (`read_trace`).
pub const MAX_TRACE_LINES: usize = 10_000_000;
pub const MAX_TRACE_MS: u64 = 100_000_000_000;
pub const MAX_TRACE_BYTES: u64 = 256 << 20;

/// The text of trace file `path`: a regular file (a FIFO would block, /dev/zero never end) of at
/// most `MAX_TRACE_BYTES`.
pub fn read_trace(path: &str) -> Result<String, String> {
    let md = std::fs::metadata(path).map_err(|e| format!("cannot read trace {path}: {e}"))?;
    if !md.is_file() {
        return Err(format!(
            "trace {path}: expected a regular file, found {}",
            if md.is_dir() { "a folder" } else { "a device, pipe or socket" }
        ));
    }
    if md.len() > MAX_TRACE_BYTES {
        return Err(format!("trace {path}: expected a file of at most 256 MiB, found {} bytes", md.len()));
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read trace {path}: {e}"))
}

fn short(s: &str) -> String {
    if s.chars().count() <= 40 {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(40).collect::<String>())
    }
}

pub fn parse_mahimahi(text: &str) -> Result<Opportunities, String> {
    let mut times = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if times.len() >= MAX_TRACE_LINES {
            return Err(format!("line {}: expected at most {MAX_TRACE_LINES} timestamps", i + 1));
        }
        let ms: u64 = l.parse().ok().filter(|ms| *ms <= MAX_TRACE_MS).ok_or_else(|| {
            format!("line {}: expected a millisecond timestamp <= {MAX_TRACE_MS}, found {:?}", i + 1, short(l))
        })?;
        if times.last().is_some_and(|&t| ms * MS < t) {
            return Err(format!("line {}: timestamps must not decrease", i + 1));
        }
        times.push(ms * MS);
    }
    let period = *times.last().ok_or("no timestamps")?;
    if period == 0 {
        return Err("the last timestamp must be > 0 (it is the period)".into());
    }
    Ok(Opportunities { period, times, bytes_per_opp: 1504, once: false })
}

/// Convert `k=v` AQM parameters to the discipline's canonical units (durations in ns, rates in
/// bit/s, sizes in bytes) using its registry entry.
pub fn aqm_params(aqm: &str, kv: &[(String, String)]) -> Result<Params, String> {
    let e = qoelab_core::aqm::find(aqm).ok_or_else(|| {
        let names: Vec<&str> = qoelab_core::aqm::REGISTRY.iter().map(|e| e.name).collect();
        format!("--aqm: unknown queue discipline {aqm:?}; expected one of: {}", names.join(", "))
    })?;
    let mut p = Params::new();
    for (k, v) in kv {
        let spec = e.params.iter().find(|s| s.name == k).ok_or_else(|| {
            let names: Vec<&str> = e.params.iter().map(|s| s.name).collect();
            format!("--aqm-param: {aqm} has no parameter {k:?}; expected one of: {}", names.join(", "))
        })?;
        let err = |m: String| format!("--aqm-param {k}: {m}");
        p = match spec.unit {
            Unit::Duration => p.with(k, parse_duration(v).map_err(err)?),
            Unit::Rate => p.with(k, parse_rate(v).map_err(err)?),
            Unit::Bytes => p.with(k, parse_bytes(v).map_err(err)?),
            Unit::Packets | Unit::Int => {
                p.with(k, v.parse::<u64>().map_err(|_| err(format!("expected an integer, found {v:?}")))?)
            }
            Unit::Float => p.with(k, v.parse::<f64>().map_err(|_| err(format!("expected a number, found {v:?}")))?),
            Unit::Bool => match v.as_str() {
                "true" | "1" | "yes" => p.with(k, true),
                "false" | "0" | "no" => p.with(k, false),
                _ => return Err(err(format!("expected true or false, found {v:?}"))),
            },
            Unit::Choice(_) => p.with(k, v.as_str()),
        };
    }
    Ok(p)
}

/// Parse the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut rate = None;
    let mut rtt = None;
    // (kind, args) per direction: 0 = uplink, 1 = downlink.
    let mut queues: [(Option<String>, Option<String>); 2] = [(None, None), (None, None)];
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            o.command = args[i + 1..].to_vec();
            break;
        }
        if !a.starts_with("--") {
            o.command = args[i..].to_vec();
            break;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a, None),
        };
        if name == "--no-rt" {
            o.rt = false;
            i += 1;
            continue;
        }
        let val = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i).cloned().ok_or_else(|| format!("{name}: expected a value"))?
            }
        };
        let e = |m: String| format!("{name}: {m}");
        match name {
            "--rate" => rate = Some(parse_rate(&val).map_err(e)?),
            "--uplink-rate" => o.uplink_rate_bps = Some(parse_rate(&val).map_err(e)?),
            "--rtt" => rtt = Some(parse_duration(&val).map_err(e)?),
            "--aqm" => o.aqm = val,
            "--aqm-param" => {
                let (k, v) = val.split_once('=').ok_or_else(|| e(format!("expected K=V, found {val:?}")))?;
                o.aqm_params.push((k.trim().to_string(), v.trim().to_string()));
            }
            "--buffer" => (o.buffer_pkts, o.buffer_bytes) = parse_buffer(&val).map_err(e)?,
            "--trace" => o.trace = Some(val),
            "--uplink-trace" => o.uplink_trace = Some(val),
            "--loss" => o.loss = parse_loss(&val).map_err(e)?,
            "--server" => o.server = Some(val),
            "--json-stats" => o.json_stats = Some(val),
            "--downlink-log" => o.downlink_log = Some(val),
            "--uplink-log" => o.uplink_log = Some(val),
            "--uplink-queue" => queues[0].0 = Some(val),
            "--downlink-queue" => queues[1].0 = Some(val),
            "--uplink-queue-args" => queues[0].1 = Some(val),
            "--downlink-queue-args" => queues[1].1 = Some(val),
            "--seed" => {
                o.seed = val.parse().map_err(|_| e(format!("expected a non-negative integer, found {val:?}")))?
            }
            _ => return Err(format!("unknown option {name}")),
        }
        i += 1;
    }
    o.rtt = rtt.unwrap_or(0);
    match (rate, &o.trace) {
        (Some(r), None) => o.rate_bps = r,
        (None, Some(_)) => {}
        (Some(_), Some(_)) => return Err("--rate and --trace exclude each other".into()),
        (None, None) => return Err("expected --rate or --trace".into()),
    }
    if o.uplink_rate_bps.is_some() && o.uplink_trace.is_some() {
        return Err("--uplink-rate and --uplink-trace exclude each other".into());
    }
    aqm_params(&o.aqm, &o.aqm_params)?;
    for (d, (kind, args)) in queues.into_iter().enumerate() {
        let opt = if d == 0 { "--uplink-queue" } else { "--downlink-queue" };
        let spec = match (kind, args) {
            (Some(k), a) => Some(queue_spec(opt, &k, a.as_deref().unwrap_or(""))?),
            (None, Some(_)) => return Err(format!("{opt}-args needs {opt}")),
            (None, None) => None,
        };
        if d == 0 {
            o.uplink_queue = spec;
        } else {
            o.downlink_queue = spec;
        }
    }
    Ok(o)
}

impl Options {
    /// The queue of one direction: its `--{dir}-queue` if given, else --aqm/--aqm-param/--buffer.
    pub fn queue(&self, uplink: bool) -> QueueSpec {
        let own = if uplink { &self.uplink_queue } else { &self.downlink_queue };
        own.clone().unwrap_or_else(|| QueueSpec {
            aqm: self.aqm.clone(),
            params: self.aqm_params.clone(),
            buffer_pkts: self.buffer_pkts,
            buffer_bytes: self.buffer_bytes,
            label: self.aqm.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn units() {
        assert_eq!(parse_rate("10Mbps"), Ok(10_000_000));
        assert_eq!(parse_rate("1.5Gbit"), Ok(1_500_000_000));
        assert_eq!(parse_rate("640kbps"), Ok(640_000));
        assert!(parse_rate("fast").is_err() && parse_rate("0").is_err() && parse_rate("-1Mbps").is_err());
        assert_eq!(parse_duration("40ms"), Ok(40 * MS));
        assert_eq!(parse_duration("0.5s"), Ok(SEC / 2));
        assert_eq!(parse_duration("250us"), Ok(250 * US));
        assert!(parse_duration("3 weeks").is_err());
        assert_eq!(parse_buffer("100pkts"), Ok((Some(100), None)));
        assert_eq!(parse_buffer("150KB"), Ok((None, Some(150_000))));
        assert!(parse_buffer("0pkts").is_err() && parse_buffer("lots").is_err());
        assert_eq!(parse_loss("1%"), Ok(0.01));
        assert_eq!(parse_loss("0.25"), Ok(0.25));
        assert!(parse_loss("150%").is_err());
    }

    #[test]
    fn mahimahi_traces() {
        let o = parse_mahimahi("1\n1\n3\n\n4\n").unwrap();
        assert_eq!(o.period, 4 * MS);
        assert_eq!(o.times, vec![MS, MS, 3 * MS, 4 * MS]);
        assert_eq!(o.bytes_per_opp, 1504);
        assert!(parse_mahimahi("").is_err());
        assert!(parse_mahimahi("0\n").is_err());
        assert!(parse_mahimahi("5\n3\n").is_err());
        assert!(parse_mahimahi("1\nx\n").unwrap_err().contains("line 2"));
        // ms x 10^6 wrapped around 64 bits past 1.8 x 10^13 ms (a silent, wrong period)
        let e = parse_mahimahi("1\n99999999999999999\n").unwrap_err();
        assert!(e.contains("line 2: expected a millisecond timestamp <= 100000000000"), "{e}");
        assert!(parse_mahimahi(&format!("{MAX_TRACE_MS}\n")).is_ok());
    }

    #[test]
    fn trace_files_are_regular_and_bounded() {
        // /dev/zero was read until memory ran out
        let e = read_trace("/dev/zero").unwrap_err();
        assert!(e.contains("expected a regular file, found a device, pipe or socket"), "{e}");
        let dir = std::env::temp_dir();
        let e = read_trace(dir.to_str().unwrap()).unwrap_err();
        assert!(e.contains("found a folder"), "{e}");
        let f = dir.join(format!("qoelab-net-trace-{}.txt", std::process::id()));
        std::fs::write(&f, "1\n2\n").unwrap();
        assert_eq!(read_trace(f.to_str().unwrap()).unwrap(), "1\n2\n");
        std::fs::remove_file(&f).unwrap();
    }

    #[test]
    fn command_lines() {
        let o = parse(&args("--rate 10Mbps --rtt 40ms --aqm codel --aqm-param target=2ms --loss 1% -- ping -c 1 x"))
            .unwrap();
        assert_eq!((o.rate_bps, o.rtt, o.aqm.as_str(), o.loss), (10_000_000, 40 * MS, "codel", 0.01));
        assert_eq!(o.command, args("ping -c 1 x"));
        let p = aqm_params("codel", &o.aqm_params).unwrap();
        assert_eq!(p.0["target"], 2_000_000);
        assert!(parse(&args("--rtt 40ms -- true")).unwrap_err().contains("--rate or --trace"));
        assert!(parse(&args("--rate 10Mbps --bogus 1")).unwrap_err().contains("unknown option --bogus"));
        assert!(parse(&args("--rate 10Mbps --aqm nope")).unwrap_err().contains("unknown queue discipline"));
        assert!(parse(&args("--rate 10Mbps --aqm codel --aqm-param nope=1")).unwrap_err().contains("no parameter"));
        assert!(parse(&args("--rate")).unwrap_err().contains("expected a value"));
        assert!(parse(&args("--rate=5Mbps --no-rt true")).is_ok_and(|o| !o.rt && o.command == ["true"]));
    }

    #[test]
    fn mm_link_queues() {
        let o = parse(&args(
            "--rate 10Mbps --aqm fq_codel --downlink-queue=droptail --downlink-queue-args=packets=100 -- true",
        ))
        .unwrap();
        let d = o.queue(false);
        assert_eq!((d.aqm.as_str(), d.buffer_pkts, d.label.as_str()), ("pfifo", Some(100), "droptail [packets=100]"));
        assert_eq!(o.queue(true).aqm, "fq_codel");
        let q = |k: &str, a: &str| queue_spec("--uplink-queue", k, a);
        assert_eq!(q("droptail", "bytes=30000").unwrap().aqm, "bfifo");
        assert_eq!(q("infinite", "").unwrap().buffer_pkts, Some(u32::MAX as u64));
        let c = q("codel", "target=5, interval=100, packets=1000").unwrap();
        assert_eq!(c.aqm, "codel");
        let p = aqm_params("codel", &c.params).unwrap();
        assert_eq!((p.0["target"].clone(), p.0["interval"].clone()), (5_000_000.into(), 100_000_000.into()));
        assert_eq!(p.0["mode"], "mahimahi");
        let pie = q("pie", "qdelay_ref=20,max_burst=100,bytes=300000").unwrap();
        let p = aqm_params("pie", &pie.params).unwrap();
        assert_eq!((p.0["qdelay_ref"].clone(), p.0["limit_bytes"].clone()), (20_000_000.into(), 300_000.into()));
        let dh = aqm_params("drophead", &q("drophead", "packets=50").unwrap().params).unwrap();
        assert_eq!((dh.0["limit"].clone(), dh.0["limit_bytes"].clone()), (50.into(), 0.into()));
        // qoelab's own disciplines with units.
        assert!(q("fq_codel", "target=2ms, packets=200").is_ok_and(|s| s.buffer_pkts == Some(200)));
        for (k, a, msg) in [
            ("droptail", "", "needs packets=N or bytes=N"),
            ("droptail", "packets=10,bytes=15000", "not both"),
            ("drophead", "", "needs packets"),
            ("infinite", "packets=10", "takes no arguments"),
            ("codel", "qdelay_ref=5", "codel takes packets, bytes, target, interval"),
            ("codel", "target=fast", "expects milliseconds"),
            ("droptail", "packets=-1", "positive integer"),
            ("droptail", "packets", "expected NAME=NUMBER"),
            ("nope", "", "unknown queue discipline"),
            ("fq_codel", "bogus=1", "no parameter"),
        ] {
            let e = q(k, a).unwrap_err();
            assert!(e.starts_with("--uplink-queue") && e.contains(msg) && !e.contains("--aqm"), "{k} {a}: {e}");
        }
        assert!(parse(&args("--rate 1Mbps --uplink-queue-args=packets=5 -- true")).unwrap_err().contains("needs"));
    }
}
