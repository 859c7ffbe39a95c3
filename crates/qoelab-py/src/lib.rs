//! Thin PyO3 bindings of qoelab-core: the module `qoelab._core`.
//! Everything here converts types; no simulation logic lives in this crate.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use qoelab_core::net::record::{Column, Table};
use qoelab_core::net::{SimConfig, World};

/// Version of the core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

fn entry_json(name: &str, summary: &str, reference: &str, params: &[qoelab_core::params::ParamSpec]) -> serde_json::Value {
    serde_json::json!({"name": name, "summary": summary, "reference": reference,
                       "params": qoelab_core::params::specs_json(params)})
}

/// JSON description of the registered models of a family ("aqm", "cc" or "abr").
#[pyfunction]
fn describe(family: &str) -> PyResult<String> {
    let v: Vec<serde_json::Value> = match family {
        "aqm" => qoelab_core::aqm::REGISTRY.iter().map(|e| entry_json(e.name, e.summary, e.reference, e.params)).collect(),
        "cc" => qoelab_core::tcp::cc::REGISTRY.iter().map(|e| entry_json(e.name, e.summary, e.reference, e.params)).collect(),
        "abr" => qoelab_core::abr::REGISTRY.iter().map(|e| entry_json(e.name, e.summary, e.reference, e.params)).collect(),
        other => return Err(PyValueError::new_err(format!("unknown model family {other:?}; expected aqm, cc or abr"))),
    };
    Ok(serde_json::Value::Array(v).to_string())
}

/// JSON description of the TCP endpoint options (the `[flow.tcp]` section).
#[pyfunction]
fn describe_tcp() -> String {
    qoelab_core::params::specs_json(qoelab_core::tcp::params::PARAMS).to_string()
}

/// Error raised for a config the core rejects: args (path, message).
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
/// The GIL is released while simulating.
#[pyfunction]
fn run<'py>(py: Python<'py>, config_json: &str) -> PyResult<(String, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let cfg = SimConfig::from_json(config_json).map_err(|e| config_error("config", &e))?;
    let (summary, tables, pcaps) = py.allow_threads(move || -> Result<_, (String, String)> {
        let mut w = World::build(cfg).map_err(|e| (e.path, e.msg))?;
        w.run();
        w.check_invariants().map_err(|e| ("invariants".to_string(), e))?;
        let summary = w.summary().to_string();
        let tables = w.take_tables();
        let pcaps = w.take_pcaps();
        Ok((summary, tables, pcaps))
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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(describe_tcp, m)?)?;
    Ok(())
}
