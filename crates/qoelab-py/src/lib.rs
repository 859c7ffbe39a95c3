//! Thin PyO3 bindings of qoelab-core: the module `qoelab._core`.
//! Everything here converts types; no simulation logic lives in this crate.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use qoelab_core::abr::AbrFactory;
use qoelab_core::abr::{Abr, AbrObs, Decision, DownloadRecord};
use qoelab_core::driver::{Driver, RunError};
use qoelab_core::net::record::{Column, Table};
use qoelab_core::net::SimConfig;
use std::sync::{Arc, Mutex};

mod pageload;

/// A Python object used as an ABR (the `qoelab.abr.Abr` protocol): `choose(obs) -> rung |
/// (rung, delay_s) | {"rung", "delay_s", "reason"}`, optional `on_download(obs, record)`.
/// Called once per decision. Exceptions are collected and reported after the run.
struct PyAbr {
    obj: Py<PyAny>,
    errors: Arc<Mutex<Vec<String>>>,
    /// Set when Python code raised a BaseException that is not an Exception (KeyboardInterrupt
    /// from Ctrl-C, SystemExit, the CLI's SIGTERM exception): the run stops and re-raises it.
    interrupt: Interrupt,
    label: String,
}

type Interrupt = Arc<Mutex<Option<PyErr>>>;

/// The longest `reason` a Python ABR's decision keeps (bytes; longer ones are cut).
const MAX_REASON: usize = 256;

/// An error raised by Python code called from the simulation: an interruption (KeyboardInterrupt:
/// Ctrl-C, and the CLI's SIGTERM exception, a subclass) is kept to be re-raised after the slice;
/// the rest is the ABR's own error, SystemExit included (`exit(0)` in a hook ended the command
/// with status 0, nothing written and nothing said).
fn classify(py: Python<'_>, e: PyErr, interrupt: &Interrupt, what: &str) -> String {
    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        let msg = format!("{what} interrupted");
        if let Ok(mut slot) = interrupt.lock() {
            slot.get_or_insert(e);
        }
        return msg;
    }
    format!("{what} raised {e}")
}

fn interrupted(i: &Interrupt) -> bool {
    i.lock().map(|s| s.is_some()).unwrap_or(false)
}

fn rec_dict<'py>(py: Python<'py>, r: &DownloadRecord) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("segment", r.segment)?;
    d.set_item("rung", r.rung)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("t_request_s", r.t_request as f64 / 1e9)?;
    d.set_item("t_first_byte_s", r.t_first_byte as f64 / 1e9)?;
    d.set_item("t_last_byte_s", r.t_last_byte as f64 / 1e9)?;
    d.set_item("tput_bps", r.tput_request_bps())?;
    d.set_item("tput_first_byte_bps", r.tput_first_byte_bps())?;
    d.set_item("abandoned", r.abandoned)?;
    Ok(d)
}

fn obs_dict<'py>(py: Python<'py>, o: &AbrObs) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let v = o.video;
    d.set_item("now_s", o.now as f64 / 1e9)?;
    d.set_item("segment", o.segment)?;
    d.set_item("n_segments", v.n_segments())?;
    d.set_item("segment_duration_s", v.seg_duration(o.segment.min(v.n_segments().saturating_sub(1))) as f64 / 1e9)?;
    d.set_item("buffer_s", o.buffer as f64 / 1e9)?;
    d.set_item("buffer_max_s", o.buffer_max as f64 / 1e9)?;
    d.set_item("last_rung", o.last_rung)?;
    d.set_item("playing", o.playing)?;
    d.set_item("bitrates_bps", v.bitrates_bps.clone())?;
    if o.segment < v.n_segments() {
        d.set_item("sizes", v.sizes[o.segment].clone())?;
    }
    let hist = PyList::empty(py);
    for r in o.history.iter().rev().take(20).rev() {
        hist.append(rec_dict(py, r)?)?;
    }
    d.set_item("history", hist)?;
    Ok(d)
}

impl PyAbr {
    fn failed(&self) -> bool {
        self.errors.lock().map(|e| !e.is_empty()).unwrap_or(true)
    }
    fn fail(&self, msg: String) {
        if let Ok(mut e) = self.errors.lock() {
            if e.len() < 5 {
                e.push(format!("{}: {msg}", self.label));
            }
        }
    }
}

impl Abr for PyAbr {
    fn name(&self) -> &'static str {
        "python"
    }
    fn choose(&mut self, obs: &AbrObs) -> Decision {
        let n = obs.video.n_rungs();
        if interrupted(&self.interrupt) || self.failed() {
            // (after its first error the ABR is not called again: the run stops at the next slice)
            return Decision { rung: 0, delay: 0, reason: "interrupted".into() };
        }
        let r: Result<Decision, String> = Python::with_gil(|py| {
            let d = obs_dict(py, obs).map_err(|e| classify(py, e, &self.interrupt, "building obs"))?;
            let out = self
                .obj
                .bind(py)
                .call_method1("choose", (d,))
                .map_err(|e| classify(py, e, &self.interrupt, "choose()"))?;
            // Strict, so that a decision is never silently changed: True is not rung 1, a delay "5"
            // is not 0 s, and a dict key that is not rung, delay_s or reason (a typo) is an error.
            let is_bool = |v: &Bound<'_, PyAny>| v.is_instance_of::<pyo3::types::PyBool>();
            let tuple2 = out.downcast::<pyo3::types::PyTuple>().ok().filter(|t| t.len() == 2);
            let (rung, delay, reason): (i64, f64, String) =
                if let (false, Ok(x)) = (is_bool(&out), out.extract::<i64>()) {
                    (x, 0.0, "python".into())
                } else if let Some(t) = tuple2.filter(|t| t.iter().all(|v| !is_bool(&v))) {
                    let x: i64 = t
                        .get_item(0)
                        .and_then(|v| v.extract())
                        .map_err(|_| "choose() returned a tuple whose rung is not an int")?;
                    let dl: f64 = t
                        .get_item(1)
                        .and_then(|v| v.extract())
                        .map_err(|_| "choose() returned a tuple whose delay_s is not a number")?;
                    (x, dl, "python".into())
                } else if let Ok(m) = out.downcast::<PyDict>() {
                    for k in m.keys() {
                        let name: String = k.extract().unwrap_or_default();
                        if !["rung", "delay_s", "reason"].contains(&name.as_str()) {
                            return Err(format!(
                                "choose() returned a dict with the key {}, expected rung, delay_s, reason",
                                k.repr().map(|r| r.to_string()).unwrap_or_default()
                            ));
                        }
                    }
                    let x: i64 = m
                        .get_item("rung")
                        .ok()
                        .flatten()
                        .filter(|v| !is_bool(v))
                        .and_then(|v| v.extract().ok())
                        .ok_or("choose() returned a dict without an int \"rung\"")?;
                    let dl: f64 = match m.get_item("delay_s").ok().flatten() {
                        None => 0.0,
                        Some(v) if !is_bool(&v) => {
                            v.extract().map_err(|_| "choose() returned a \"delay_s\" that is not a number")?
                        }
                        Some(_) => return Err("choose() returned a \"delay_s\" that is not a number".into()),
                    };
                    let mut rs: String = match m.get_item("reason").ok().flatten() {
                        None => "python".into(),
                        Some(v) => v.extract().map_err(|_| "choose() returned a \"reason\" that is not a string")?,
                    };
                    // kept per decision in the segment log: 50 MB a decision aborted the process
                    if rs.len() > MAX_REASON {
                        let mut cut = MAX_REASON;
                        while !rs.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        rs.truncate(cut);
                    }
                    (x, dl, rs)
                } else {
                    return Err(format!(
                        "choose() returned {}, expected a rung (int), (rung, delay_s) or a dict",
                        out.repr().map(|r| r.to_string()).unwrap_or_default()
                    ));
                };
            if rung < 0 || rung as usize >= n {
                return Err(format!("choose() returned rung {rung}, expected 0..{}", n - 1));
            }
            if !(delay.is_finite() && delay >= 0.0) {
                return Err(format!("choose() returned delay {delay}, expected >= 0 seconds"));
            }
            Ok(Decision { rung: rung as usize, delay: (delay * 1e9).round() as u64, reason })
        });
        r.unwrap_or_else(|e| {
            if !interrupted(&self.interrupt) {
                self.fail(e);
            }
            Decision { rung: 0, delay: 0, reason: "python ABR error".into() }
        })
    }
    fn on_download(&mut self, obs: &AbrObs, rec: &DownloadRecord) {
        if interrupted(&self.interrupt) || self.failed() {
            return;
        }
        let r: Result<(), String> = Python::with_gil(|py| {
            let o = self.obj.bind(py);
            if !o.hasattr("on_download").unwrap_or(false) {
                return Ok(());
            }
            let d = obs_dict(py, obs).map_err(|e| classify(py, e, &self.interrupt, "building obs"))?;
            let rd = rec_dict(py, rec).map_err(|e| classify(py, e, &self.interrupt, "building record"))?;
            o.call_method1("on_download", (d, rd)).map_err(|e| classify(py, e, &self.interrupt, "on_download()"))?;
            Ok(())
        });
        if let Err(e) = r {
            if !interrupted(&self.interrupt) {
                self.fail(e);
            }
        }
    }
}

/// Whether a Python class's constructor names a `seed` parameter (not only `**kwargs`).
fn takes_seed(py: Python<'_>, cls: &Bound<'_, PyAny>) -> bool {
    let Ok(sig) = py.import("inspect").and_then(|m| m.call_method1("signature", (cls,))) else {
        return false;
    };
    sig.getattr("parameters")
        .and_then(|p| p.call_method1("get", ("seed",)))
        .and_then(|p| {
            if p.is_none() {
                return Ok(false);
            }
            let kind = p.getattr("kind")?.getattr("name")?.extract::<String>()?;
            Ok(kind == "POSITIONAL_OR_KEYWORD" || kind == "KEYWORD_ONLY")
        })
        .unwrap_or(false)
}

/// The factory for "python:" ABR names: instantiates `classes[name](**params)`, with
/// `seed=<the client's seed>` added when the class takes a `seed` and the scenario sets none.
fn py_factory(classes: Py<PyDict>, errors: Arc<Mutex<Vec<String>>>, interrupt: Interrupt) -> AbrFactory {
    Box::new(move |name, params, _video, seed| {
        Python::with_gil(|py| {
            let cls = classes.bind(py).get_item(name).ok().flatten().ok_or_else(|| {
                qoelab_core::params::perr("abr", format!("no Python class registered for \"{name}\""))
            })?;
            let kw = PyDict::new(py);
            let json = py.import("json").map_err(|e| qoelab_core::params::perr("abr", e.to_string()))?;
            let pv = json
                .call_method1("loads", (serde_json::Value::Object(params.0.clone()).to_string(),))
                .map_err(|e| qoelab_core::params::perr("abr", e.to_string()))?;
            if let Ok(pd) = pv.downcast::<PyDict>() {
                for (k, v) in pd.iter() {
                    kw.set_item(k, v).ok();
                }
            }
            if !kw.contains("seed").unwrap_or(true) && takes_seed(py, &cls) {
                kw.set_item("seed", seed).map_err(|e| qoelab_core::params::perr("abr", e.to_string()))?;
            }
            let obj = cls
                .call((), Some(&kw))
                .map_err(|e| qoelab_core::params::perr("abr", format!("creating {name} raised {e}")))?;
            if !obj.hasattr("choose").unwrap_or(false) {
                return Err(qoelab_core::params::perr("abr", format!("{name} has no choose(obs) method")));
            }
            Ok(Box::new(PyAbr {
                obj: obj.unbind(),
                errors: errors.clone(),
                interrupt: interrupt.clone(),
                label: name.to_string(),
            }) as Box<dyn Abr>)
        })
    })
}

/// Version of the core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A fingerprint of the Rust sources this module was built from (crates/qoelab-net/build.rs): the
/// emulator binary built from the same sources prints the same (`qoelab-netemu --source-id`).
#[pyfunction]
fn source_id() -> &'static str {
    env!("QOELAB_SOURCE_ID")
}

/// How the core was compiled: "pgo" (profile-guided release build, tools/build-core),
/// "pgo+x86-64-v3" (the same for x86-64-v3 CPUs), "pgo-training" (its instrumented build),
/// "release" or "debug".
#[pyfunction]
fn build() -> &'static str {
    match option_env!("QOELAB_BUILD") {
        Some(b) => b,
        None if cfg!(debug_assertions) => "debug",
        None => "release",
    }
}

fn entry_json(
    name: &str,
    summary: &str,
    reference: &str,
    params: &[qoelab_core::params::ParamSpec],
) -> serde_json::Value {
    serde_json::json!({"name": name, "summary": summary, "reference": reference,
                       "params": qoelab_core::params::specs_json(params)})
}

/// JSON description of the registered models of a family ("aqm", "cc", "abr", "data_plane" or
/// "flow_controller").
#[pyfunction]
fn describe(family: &str) -> PyResult<String> {
    let v: Vec<serde_json::Value> = match family {
        "aqm" => {
            qoelab_core::aqm::REGISTRY.iter().map(|e| entry_json(e.name, e.summary, e.reference, e.params)).collect()
        }
        "cc" => qoelab_core::tcp::cc::REGISTRY
            .iter()
            .map(|e| entry_json(e.name, e.summary, e.reference, e.params))
            .collect(),
        "abr" => {
            qoelab_core::abr::REGISTRY.iter().map(|e| entry_json(e.name, e.summary, e.reference, e.params)).collect()
        }
        "data_plane" => qoelab_core::session::dataplane::REGISTRY
            .iter()
            .map(|e| {
                let mut j = entry_json(e.name, e.summary, e.reference, e.params);
                j["needs_layout"] = e.needs_layout.into();
                j
            })
            .collect(),
        "flow_controller" => qoelab_core::flowctl::REGISTRY
            .iter()
            .map(|e| entry_json(e.name, e.summary, e.reference, e.params))
            .collect(),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown model family {other:?}; expected aqm, cc, abr, data_plane or flow_controller"
            )))
        }
    };
    Ok(serde_json::Value::Array(v).to_string())
}

/// JSON description of the TCP endpoint options (the `[flow.tcp]` section).
#[pyfunction]
fn describe_tcp() -> String {
    qoelab_core::params::specs_json(qoelab_core::tcp::params::PARAMS).to_string()
}

/// Parse a Video JSON document with the core's model and check its invariants; returns a short
/// description (segments, rungs, duration, quality tables, whether it has a byte layout). Raises
/// ValueError(path, message).
#[pyfunction]
fn check_video(video_json: &str) -> PyResult<String> {
    let v: qoelab_core::video::Video =
        serde_json::from_str(video_json).map_err(|e| config_error("video", &e.to_string()))?;
    v.validate().map_err(|e| config_error("video", &e))?;
    Ok(serde_json::json!({"name": v.name, "segments": v.n_segments(), "rungs": v.n_rungs(),
        "duration_s": v.duration() as f64 / 1e9, "quality": v.quality.keys().collect::<Vec<_>>(),
        "byte_layout": v.has_layout()})
    .to_string())
}

/// Minerva's value function of a video (Video JSON) on a grid (JSON: metric, horizon, beta,
/// gamma, buffer_max_s, rates_bps, buffers_s; missing keys take the defaults). Returns the value
/// function JSON (docs/models/flow_controller-minerva.md). Raises ValueError(path, message).
#[pyfunction]
fn minerva_value_function(py: Python<'_>, video_json: &str, params_json: &str) -> PyResult<String> {
    use qoelab_core::flowctl::value::{compute, VfParams};
    let v: qoelab_core::video::Video =
        serde_json::from_str(video_json).map_err(|e| config_error("video", &e.to_string()))?;
    v.validate().map_err(|e| config_error("video", &e))?;
    let p: serde_json::Value = serde_json::from_str(params_json).map_err(|e| config_error("params", &e.to_string()))?;
    let mut prm = VfParams::default();
    let num = |k: &str| p.get(k).and_then(|x| x.as_f64());
    let axis = |k: &str| -> PyResult<Option<Vec<f64>>> {
        match p.get(k) {
            None => Ok(None),
            Some(x) => serde_json::from_value(x.clone()).map(Some).map_err(|e| config_error(k, &e.to_string())),
        }
    };
    if let Some(m) = p.get("metric").and_then(|x| x.as_str()) {
        prm.metric = m.to_string();
    }
    if let Some(h) = p.get("horizon").and_then(|x| x.as_u64()) {
        prm.horizon = h as usize;
    }
    prm.beta = num("beta").unwrap_or(prm.beta);
    prm.gamma = num("gamma").unwrap_or(prm.gamma);
    prm.buffer_max_s = num("buffer_max_s").unwrap_or(prm.buffer_max_s);
    if let Some(a) = axis("rates_bps")? {
        prm.rates_bps = a;
    }
    if let Some(a) = axis("buffers_s")? {
        prm.buffers_s = a;
    }
    let vf = py.allow_threads(|| compute(&v, &prm)).map_err(|e| config_error("value_function", &e))?;
    serde_json::to_string(&vf).map_err(|e| config_error("value_function", &e.to_string()))
}

/// Minerva's corpus-wide normalization (§5.4) of videos (a JSON array of Video JSON) with params
/// (JSON: popularity, metric, objective, pf_c, alpha). Returns the normalization JSON
/// (docs/models/flow_controller-minerva.md). Raises ValueError(path, message).
#[pyfunction]
fn minerva_normalization(py: Python<'_>, videos_json: &str, params_json: &str) -> PyResult<String> {
    use qoelab_core::flowctl::norm::compute;
    let vs: Vec<qoelab_core::video::Video> =
        serde_json::from_str(videos_json).map_err(|e| config_error("videos", &e.to_string()))?;
    for v in &vs {
        v.validate().map_err(|e| config_error("videos", &format!("{}: {e}", v.name)))?;
    }
    let p: serde_json::Value = serde_json::from_str(params_json).map_err(|e| config_error("params", &e.to_string()))?;
    let pop: Vec<f64> = match p.get("popularity") {
        None | Some(serde_json::Value::Null) => vec![1.0; vs.len()],
        Some(x) => serde_json::from_value(x.clone()).map_err(|e| config_error("popularity", &e.to_string()))?,
    };
    let s = |k: &str, d: &str| p.get(k).and_then(|x| x.as_str()).unwrap_or(d).to_string();
    let num = |k: &str, d: f64| p.get(k).and_then(|x| x.as_f64()).unwrap_or(d);
    let (metric, objective) = (s("metric", "vmaf"), s("objective", "maxmin"));
    let (pf_c, alpha) = (num("pf_c", 1.0), num("alpha", 1.65));
    let refs: Vec<&qoelab_core::video::Video> = vs.iter().collect();
    let n = py
        .allow_threads(|| compute(&refs, &pop, &metric, &objective, pf_c, alpha))
        .map_err(|e| config_error("normalization", &e))?;
    serde_json::to_string(&n).map_err(|e| config_error("normalization", &e.to_string()))
}

/// Check a normalization file's JSON; raises ValueError(key, message).
#[pyfunction]
fn minerva_check_normalization(text: &str) -> PyResult<()> {
    let n: qoelab_core::flowctl::norm::Normalization =
        serde_json::from_str(text).map_err(|e| config_error("normalization", &e.to_string()))?;
    n.validate().map_err(|(k, m)| config_error(&k, &m))
}

/// Error raised for a config the core rejects: args (path, message).
/// Default memory limit of one run's growing state (see `World::heap_estimate`, which counts the
/// results' later copies too), in MB.
const RUN_MEMORY_MB: u64 = 2_000;

/// The limit in bytes: `QOELAB_RUN_MEMORY_MB` if set (an integer >= 1), else `RUN_MEMORY_MB`.
fn run_memory_limit() -> PyResult<usize> {
    match std::env::var("QOELAB_RUN_MEMORY_MB") {
        Err(_) => Ok((RUN_MEMORY_MB * 1_000_000) as usize),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(mb) if (1..=1 << 30).contains(&mb) => Ok((mb * 1_000_000) as usize),
            _ => Err(config_error(
                "QOELAB_RUN_MEMORY_MB",
                &format!("expected an integer number of MB >= 1 (the environment variable), found {v:?}"),
            )),
        },
    }
}

fn config_error(path: &str, msg: &str) -> PyErr {
    PyValueError::new_err((path.to_string(), msg.to_string()))
}

fn table_to_py<'py>(py: Python<'py>, t: &Table) -> PyResult<Bound<'py, PyList>> {
    let cols = PyList::empty(py);
    for (name, c) in &t.columns {
        let (kind, data): (&str, PyObject) = match c {
            Column::I64(v) => {
                let mut b = Vec::with_capacity(v.len() * 8);
                for x in v {
                    b.extend_from_slice(&x.to_le_bytes());
                }
                ("i64", PyBytes::new(py, &b).into_any().unbind())
            }
            Column::F64(v) => {
                let mut b = Vec::with_capacity(v.len() * 8);
                for x in v {
                    b.extend_from_slice(&x.to_le_bytes());
                }
                ("f64", PyBytes::new(py, &b).into_any().unbind())
            }
            Column::Str(v) => ("str", PyList::new(py, v)?.into_any().unbind()),
        };
        cols.append((name.as_str(), kind, data))?;
    }
    Ok(cols)
}

/// Run a normalized config (JSON). Returns (summary_json, {table: [(col, kind, data)]}, pcaps).
///
/// The simulation runs in slices of simulated time (about 50 ms of wall time each) with the GIL
/// released; between slices, pending signals are handled (Ctrl-C raises KeyboardInterrupt, which
/// stops the run) and `progress(now_s, end_s)` is called if given. The results do not depend on
/// the slicing.
#[pyfunction]
#[pyo3(signature = (config_json, abrs=None, progress=None))]
fn run<'py>(
    py: Python<'py>,
    config_json: &str,
    abrs: Option<Bound<'py, PyDict>>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<(String, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let cfg = SimConfig::from_json(config_json).map_err(|e| config_error("config", &e))?;
    cfg.validate().map_err(|(p, m)| config_error(&p, &m))?;
    let errors: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let interrupt: Interrupt = Arc::new(Mutex::new(None));
    let factory = abrs.map(|d| py_factory(d.unbind(), errors.clone(), interrupt.clone()));
    let hash = qoelab_core::report::summary::config_hash(config_json);
    let built = build_interruptible(py, cfg, factory)?;
    let take_interrupt = || interrupt.lock().ok().and_then(|mut s| s.take());
    let mut w = match built {
        Ok(w) => w,
        Err(e) => return Err(take_interrupt().unwrap_or_else(|| config_error(&e.path, &e.msg))),
    };
    let end = w.duration();
    let mem_limit = run_memory_limit()?;
    // 1 ms simulated to start with (a heavy scenario's first slice must not outgrow the memory
    // limit by much before it is checked), then sized to ~50 ms wall
    let mut slice: u64 = 1_000_000;
    let mut t: u64 = 0;
    loop {
        t = t.saturating_add(slice).min(end);
        let t0 = std::time::Instant::now();
        let done = py.allow_threads(|| {
            w.run_until(t);
            w.now() >= end
        });
        let wall = t0.elapsed().as_secs_f64();
        if let Some(e) = take_interrupt() {
            return Err(e);
        }
        if let Some(e) = errors.lock().ok().and_then(|e| e.first().cloned()) {
            return Err(config_error("abr", &e)); // a Python ABR failed: stop now, not at the end
        }
        let held = w.heap_estimate();
        if held > mem_limit {
            return Err(config_error(
                "output",
                &format!(
                    "the run outgrew its memory limit: ~{:.2} GB held by queued and in-flight packets, sampled \
                     tables, the packet log and captures at {:.3} s of {:.3} s simulated (limit {:.2} GB, \
                     QOELAB_RUN_MEMORY_MB); raise output.sample_interval, record fewer tables, shorten the run \
                     or lower the load",
                    held as f64 / 1e9,
                    w.now() as f64 / 1e9,
                    end as f64 / 1e9,
                    mem_limit as f64 / 1e9
                ),
            ));
        }
        py.check_signals()?;
        if let Some(cb) = &progress {
            cb.call1((t as f64 / 1e9, end as f64 / 1e9))?;
        }
        if done {
            break;
        }
        let scale = (0.05 / wall.max(1e-4)).clamp(0.5, 8.0);
        slice = ((slice as f64 * scale) as u64).max(1_000_000);
    }
    let (summary, tables, pcaps) = py
        .allow_threads(move || -> Result<_, (String, String)> {
            if let Some(e) = errors.lock().ok().and_then(|e| e.first().cloned()) {
                return Err(("abr".to_string(), e));
            }
            let out = w.finish(hash).map_err(|e| match e {
                RunError::Config(e) => (e.path, e.msg),
                RunError::Stopped => ("run".to_string(), "stopped".to_string()),
                RunError::Invariant(e) => ("invariants".to_string(), e),
            })?;
            Ok((out.summary.to_json(), out.tables, out.pcaps))
        })
        .map_err(|(p, m)| config_error(&p, &m))?;
    let d = PyDict::new(py);
    for t in &tables {
        d.set_item(&t.name, table_to_py(py, t)?)?;
    }
    let pc = PyDict::new(py);
    for (name, bytes) in &pcaps {
        pc.set_item(name, PyBytes::new(py, bytes))?;
    }
    Ok((summary, d, pc))
}

/// Check a normalized config (JSON) the way `run` does before simulating -- parse, validate,
/// build the driver (models, routes, clients) -- without simulating. Raises ValueError(path,
/// message) like `run`. For `qoelab validate`.
#[pyfunction]
#[pyo3(signature = (config_json, abrs=None))]
fn check(py: Python<'_>, config_json: &str, abrs: Option<Bound<'_, PyDict>>) -> PyResult<()> {
    let cfg = SimConfig::from_json(config_json).map_err(|e| config_error("config", &e))?;
    cfg.validate().map_err(|(p, m)| config_error(&p, &m))?;
    let factory = abrs.map(|d| py_factory(d.unbind(), Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(None))));
    build_interruptible(py, cfg, factory)?.map_err(|e| config_error(&e.path, &e.msg))?;
    Ok(())
}

/// `Driver::build` in a thread of its own while this one handles signals every 50 ms: building
/// a scenario near the node limit takes seconds (the routing table), and Ctrl-C then waited for
/// it (about 2 s at 15,000 nodes). On a signal the build is left to finish in the background and
/// its result dropped.
fn build_interruptible(
    py: Python<'_>,
    cfg: SimConfig,
    factory: Option<AbrFactory>,
) -> PyResult<Result<Driver, qoelab_core::net::SimError>> {
    use std::sync::mpsc::{channel, RecvTimeoutError};
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("qoelab-build".into())
        .spawn(move || {
            let _ = tx.send(Driver::build(cfg, factory));
        })
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("starting the build thread: {e}")))?;
    let mut rx = rx;
    loop {
        // (the receiver moves into the GIL-free closure and back: it is Send, not Sync)
        let (got, back) = py.allow_threads(move || (rx.recv_timeout(std::time::Duration::from_millis(50)), rx));
        rx = back;
        match got {
            Ok(r) => return Ok(r),
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err("the scenario's build failed (a panic)"))
            }
        }
    }
}

/// Sprint's Program 1 (qoelab_core::session::chunk_sizing::get_chunk_size): the chunk size in
/// bytes for an efficiency >= 1 - eps, from the flow's throughput (bytes/s) and RTT (s).
#[pyfunction]
#[pyo3(signature = (bandwidth_bytes_per_s, rtt_s, eps, mss=qoelab_core::session::chunk_sizing::MSS_BYTES))]
fn get_chunk_size(bandwidth_bytes_per_s: f64, rtt_s: f64, eps: f64, mss: f64) -> PyResult<f64> {
    // nonsense in, nonsense out was the rule (a negative size for eps = 2): the data plane's bounds
    positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)?;
    positive("rtt_s", rtt_s)?;
    positive("mss", mss)?;
    if !(eps > 0.0 && eps < 1.0) {
        return Err(PyValueError::new_err(format!("eps: expected a number in (0, 1), found {eps}")));
    }
    Ok(qoelab_core::session::chunk_sizing::get_chunk_size(bandwidth_bytes_per_s, rtt_s, eps, mss))
}

/// The arguments of the efficiency models (a chunk of 0 bytes gives NaN, as documented; an sst of
/// 0 is no slow-start phase).
fn efficiency_args(chunk_bytes: f64, fair_bdp: f64, sst: f64, mss: f64) -> PyResult<()> {
    non_negative("chunk_bytes", chunk_bytes)?;
    non_negative("sst", sst)?;
    positive("fair_bdp", fair_bdp)?;
    positive("mss", mss)
}

fn non_negative(name: &str, v: f64) -> PyResult<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!("{name}: expected a finite number >= 0, found {v}")))
    }
}

fn positive(name: &str, v: f64) -> PyResult<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!("{name}: expected a finite number > 0, found {v}")))
    }
}

/// Sprint's Eq. 1, continuous form: efficiency of a chunk of `chunk_bytes` (bytes) at fair-BDP
/// `fair_bdp` with slow-start threshold `sst` (bytes).
#[pyfunction]
#[pyo3(signature = (chunk_bytes, fair_bdp, sst, mss=qoelab_core::session::chunk_sizing::MSS_BYTES))]
fn efficiency_eq1(chunk_bytes: f64, fair_bdp: f64, sst: f64, mss: f64) -> PyResult<f64> {
    efficiency_args(chunk_bytes, fair_bdp, sst, mss)?;
    Ok(qoelab_core::session::chunk_sizing::efficiency_eq1(chunk_bytes, fair_bdp, sst, mss))
}

/// Sprint's efficiency model evaluated round by round (any chunk size).
#[pyfunction]
#[pyo3(signature = (chunk_bytes, fair_bdp, sst, mss=qoelab_core::session::chunk_sizing::MSS_BYTES))]
fn efficiency_rounds(chunk_bytes: f64, fair_bdp: f64, sst: f64, mss: f64) -> PyResult<f64> {
    efficiency_args(chunk_bytes, fair_bdp, sst, mss)?;
    Ok(qoelab_core::session::chunk_sizing::efficiency_rounds(chunk_bytes, fair_bdp, sst, mss))
}

/// Chunklets' instability index on 1-based levels (rung 0 -> level 1), k = 10, one value per
/// chunk from the 11th on.
#[pyfunction]
fn instability_index_levels(rungs: Vec<usize>) -> Vec<f64> {
    qoelab_core::metrics::instability_index_levels(&rungs)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(source_id, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(describe_tcp, m)?)?;
    m.add_function(wrap_pyfunction!(check_video, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(minerva_value_function, m)?)?;
    m.add_function(wrap_pyfunction!(minerva_normalization, m)?)?;
    m.add_function(wrap_pyfunction!(minerva_check_normalization, m)?)?;
    m.add_function(wrap_pyfunction!(get_chunk_size, m)?)?;
    m.add_function(wrap_pyfunction!(efficiency_eq1, m)?)?;
    m.add_function(wrap_pyfunction!(efficiency_rounds, m)?)?;
    m.add_function(wrap_pyfunction!(instability_index_levels, m)?)?;
    m.add_function(wrap_pyfunction!(pageload::pageload_run, m)?)?;
    m.add_function(wrap_pyfunction!(pageload::pageload_batch, m)?)?;
    m.add_function(wrap_pyfunction!(pageload::pageload_policies, m)?)?;
    Ok(())
}
