//! Bindings of the flow-level page-load driver (`qoelab_core::driver::flow`): type conversion
//! only.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use qoelab_core::driver::flow::{run_batch, run_one, FlowJob};
use qoelab_core::pageload::page::{Object, Page};
use qoelab_core::pageload::policy::REGISTRY;
use qoelab_core::pageload::{Config, Iface, Sharing};

/// (sizes, origins, tls flags, parents with -1 for none).
type PyPage = (Vec<u64>, Vec<u32>, Vec<bool>, Vec<i64>);
/// (bytes/s, rtt ns, schedule [(t ns, bytes/s)]).
type PyIface = (u64, u64, Vec<(u64, u64)>);

fn err(msg: String) -> PyErr {
    PyValueError::new_err(msg)
}

fn page_from(i: usize, p: PyPage) -> PyResult<Page> {
    let (sizes, origins, tls, parents) = p;
    let n = sizes.len();
    if origins.len() != n || tls.len() != n || parents.len() != n {
        return Err(err(format!("page {i}: expected equal lengths of sizes, origins, tls, parents")));
    }
    let mut objs = Vec::with_capacity(n);
    for k in 0..n {
        // -1 is "no parent"; anything else must be an earlier object (2^32 wrapped to object 0)
        let parent = match parents[k] {
            -1 => None,
            p if (0..k as i64).contains(&p) => Some(p as u32),
            p => {
                return Err(err(format!(
                    "page {i}: object {k}: expected -1 (no parent) or an earlier object's index (< {k}), found {p}"
                )))
            }
        };
        objs.push(Object { size: sizes[k], origin: origins[k], tls: tls[k], parent });
    }
    Page::new(objs).map_err(|m| err(format!("page {i}: {m}")))
}

fn ifaces_from(v: Vec<PyIface>) -> Vec<Iface> {
    v.into_iter().map(|(rate, rtt, schedule)| Iface { rtt, rate, schedule }).collect()
}

fn config_from(options: Option<&Bound<'_, PyDict>>) -> PyResult<Config> {
    let mut c = Config::new(Vec::new());
    if let Some(o) = options {
        for (k, v) in o.iter() {
            let key: String = k.extract()?;
            match key.as_str() {
                "mss" => c.mss = v.extract()?,
                "iw_segments" => c.iw_segments = v.extract()?,
                "handshake_rtts" => c.handshake_rtts = v.extract()?,
                "tls_rtts" => c.tls_rtts = v.extract()?,
                "reuse_rtts" => c.reuse_rtts = v.extract()?,
                "idle_timeout_ns" => c.idle_timeout = v.extract()?,
                "max_per_origin" => c.max_per_origin = v.extract()?,
                "max_total" => c.max_total = v.extract()?,
                "record" => c.record = v.extract()?,
                "sharing" => {
                    let s: String = v.extract()?;
                    c.sharing = match s.as_str() {
                        "waterfill" => Sharing::WaterFill,
                        "maxmin" => Sharing::MaxMin,
                        _ => return Err(err(format!("sharing: expected waterfill or maxmin, found \"{s}\""))),
                    }
                }
                _ => return Err(err(format!("options: unknown key \"{key}\""))),
            }
        }
    }
    Ok(c)
}

/// One load with per-transfer records.
#[pyfunction]
#[pyo3(signature = (page, ifaces, policy, seed=1, options=None))]
pub fn pageload_run<'py>(
    py: Python<'py>,
    page: PyPage,
    ifaces: Vec<PyIface>,
    policy: &str,
    seed: u64,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let page = page_from(0, page)?;
    let mut cfg = config_from(options)?;
    cfg.ifaces = ifaces_from(ifaces);
    cfg.record = true;
    let policy = policy.to_string();
    let r = py.allow_threads(|| run_one(&page, &cfg, &policy, seed)).map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("plt_ns", r.plt)?;
    d.set_item("conns_opened", r.conns_opened)?;
    d.set_item("mptcp_opened", r.mptcp_opened)?;
    d.set_item("off_first", r.off_first)?;
    d.set_item("limit_blocked", r.limit_blocked)?;
    d.set_item("steps", r.steps)?;
    d.set_item("predictions", r.predictions)?;
    let recs = PyList::empty(py);
    for x in &r.records {
        let e = PyDict::new(py);
        e.set_item("enable_ns", x.enable)?;
        e.set_item("enqueue_ns", x.enqueue)?;
        e.set_item("finish_ns", x.finish)?;
        e.set_item("conn", x.conn)?;
        e.set_item("iface_mask", x.iface_mask)?;
        e.set_item("mptcp", x.mptcp)?;
        e.set_item("new_conn", x.new_conn)?;
        recs.append(e)?;
    }
    d.set_item("records", recs)?;
    Ok(d)
}

/// Many loads: jobs are (page index, interfaces, policy, seed). Returns per job (plt_ns,
/// conns_opened, mptcp_opened, off_first, limit_blocked, steps). The GIL is released while the
/// loads run. The first failing job raises ValueError("job <i>: ...").
#[pyfunction]
#[pyo3(signature = (pages, jobs, options=None))]
#[allow(clippy::type_complexity)]
pub fn pageload_batch(
    py: Python<'_>,
    pages: Vec<PyPage>,
    jobs: Vec<(usize, Vec<PyIface>, String, u64)>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(u64, u32, u32, u32, bool, u64)>> {
    let pages: Vec<Page> = pages.into_iter().enumerate().map(|(i, p)| page_from(i, p)).collect::<PyResult<_>>()?;
    let mut base = config_from(options)?;
    base.record = false;
    let jobs: Vec<FlowJob> = jobs
        .into_iter()
        .map(|(page, ifaces, policy, seed)| FlowJob { page, ifaces: ifaces_from(ifaces), policy, seed })
        .collect();
    let res = py.allow_threads(|| run_batch(&pages, &base, &jobs));
    res.into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.map(|r| (r.plt, r.conns_opened, r.mptcp_opened, r.off_first, r.limit_blocked, r.steps))
                .map_err(|m| err(format!("job {i}: {m}")))
        })
        .collect()
}

/// The policy registry: name, paper name, public simulator name, doc, randomized.
#[pyfunction]
pub fn pageload_policies() -> Vec<(&'static str, &'static str, &'static str, &'static str, bool)> {
    REGISTRY.iter().map(|e| (e.name, e.paper, e.public, e.doc, e.randomized)).collect()
}
