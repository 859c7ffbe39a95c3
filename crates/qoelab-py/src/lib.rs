//! Thin PyO3 bindings of qoelab-core: the module `qoelab._core`.
//! Everything here converts types; no simulation logic lives in this crate.

use pyo3::prelude::*;

/// Version of the core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// JSON description of the registered models of a family ("aqm" or "cc").
#[pyfunction]
fn describe(family: &str) -> PyResult<String> {
    let v: Vec<serde_json::Value> = match family {
        "aqm" => qoelab_core::aqm::REGISTRY
            .iter()
            .map(|e| {
                serde_json::json!({"name": e.name, "summary": e.summary, "reference": e.reference,
                 "params": qoelab_core::params::specs_json(e.params)})
            })
            .collect(),
        "cc" => qoelab_core::tcp::cc::REGISTRY
            .iter()
            .map(|e| {
                serde_json::json!({"name": e.name, "summary": e.summary, "reference": e.reference,
                 "params": qoelab_core::params::specs_json(e.params)})
            })
            .collect(),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown model family {other:?}; expected aqm or cc"
            )))
        }
    };
    Ok(serde_json::Value::Array(v).to_string())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    Ok(())
}
