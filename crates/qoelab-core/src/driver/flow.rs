//! The flow-level driver: page loads on the sans-IO model of [`crate::pageload`]. It is not a
//! variant of [`super::Driver`] (whose input is a video-session configuration): its input is a
//! page, the interfaces and a policy, and one load runs to completion in microseconds to
//! milliseconds, so it needs no slicing. [`run_batch`] runs many loads in one call (the Python
//! binding releases the GIL around it).

use crate::pageload::page::Page;
use crate::pageload::policy::lookup;
use crate::pageload::run::{load, LoadResult};
use crate::pageload::{Config, Iface};

/// One load of a batch.
#[derive(Clone, Debug)]
pub struct FlowJob {
    /// Index into the batch's pages.
    pub page: usize,
    pub ifaces: Vec<Iface>,
    pub policy: String,
    pub seed: u64,
}

/// Check and run one load. The error is one line naming the problem (a bad configuration or an
/// unknown policy); an internal failure says so.
pub fn run_one(page: &Page, cfg: &Config, policy: &str, seed: u64) -> Result<LoadResult, String> {
    cfg.check()?;
    let e = lookup(policy).ok_or_else(|| {
        let names: Vec<&str> = crate::pageload::policy::REGISTRY.iter().map(|e| e.name).collect();
        format!("policy: expected one of {}, found \"{policy}\"", names.join(", "))
    })?;
    if cfg.ifaces.len() < e.min_ifaces {
        return Err(format!("policy: \"{}\" needs {} interfaces, found {}", e.name, e.min_ifaces, cfg.ifaces.len()));
    }
    let mut p = (e.build)(seed, cfg.ifaces.len());
    load(page, cfg, p.as_mut()).map_err(|m| format!("internal error (please report): {m}"))
}

/// Run `jobs` on `pages` with the constants of `base` (its interfaces are replaced by each
/// job's). Results are in job order.
pub fn run_batch(pages: &[Page], base: &Config, jobs: &[FlowJob]) -> Vec<Result<LoadResult, String>> {
    let mut cfg = base.clone();
    jobs.iter()
        .map(|j| {
            let page =
                pages.get(j.page).ok_or_else(|| format!("job page: expected < {}, found {}", pages.len(), j.page))?;
            cfg.ifaces.clone_from(&j.ifaces);
            run_one(page, &cfg, &j.policy, j.seed)
        })
        .collect()
}
