//! The packet driver's video providers: each runs a sans-IO flow controller
//! ([`crate::flowctl`]) over the sessions of its clients. On the controller's wake-ups the driver
//! gathers the clients' observations (response bytes delivered, download busy time, buffer,
//! rung, segment log, min RTT), calls the controller, and applies the weights it returns to the
//! congestion controller of every response flow of the client; a connection opened later (a
//! reconnect after a reset) gets the client's current weight at once.
//!
//! Membership is resolved lazily by name, so clients that arrive during the run (`name#k`
//! sessions of an arrival entry) join their provider at its next wake-up.

use super::config::SimConfig;
use super::endpoint::{bytes_received, Ep};
use super::error::{serr, SimError};
use super::world::{World, K_PROVIDER};
use crate::flowctl::{ClientObs, CurrentChunk, FlowController, FlowCtlCtx, WEIGHTED_CC};
use crate::ids::{ClientId, FlowId, Id};
use crate::params::Params;
use crate::report::summary::{ClientSummary, FlowControlSummary};
use crate::report::table::Table;
use crate::time::{secs, Ns, NEVER};

/// Weight statistics of one client.
#[derive(Clone, Debug, Default)]
struct WStats {
    n: u64,
    clamped: u64,
    sum: f64,
    min: f64,
    max: f64,
    last: f64,
}

/// A provider at run time.
pub(crate) struct ProviderRt {
    name: String,
    controller: String,
    ctl: Option<Box<dyn FlowController>>,
    names: Vec<String>,
    /// Member clients, in the order the controller sees them.
    members: Vec<ClientId>,
    weights: Vec<Option<f64>>,
    stats: Vec<WStats>,
    /// Per member: (log entries summed, their download time) for the busy time.
    busy: Vec<(usize, Ns)>,
    sched: Ns,
}

/// Every provider of a run, and the weights table.
#[derive(Default)]
pub(crate) struct Providers {
    list: Vec<ProviderRt>,
    /// Clients already checked for membership.
    scanned: usize,
    /// Per client: (provider, member index).
    of_client: Vec<Option<(usize, usize)>>,
    table: Option<Table>,
}

fn covers(names: &[String], client: &str) -> bool {
    names.iter().any(|n| n == client) || client.rsplit_once('#').is_some_and(|(b, _)| names.iter().any(|n| n == b))
}

/// Check the providers of `cfg` and build their controllers.
fn build_list(cfg: &SimConfig) -> Result<Vec<ProviderRt>, SimError> {
    let mut owner: Vec<Option<usize>> = vec![None; cfg.clients.len()];
    let mut out = Vec::new();
    for (i, p) in cfg.providers.iter().enumerate() {
        let key = format!("providers[{i}]");
        if p.clients.is_empty() {
            return Err(serr(format!("{key}.clients"), "expected at least one client name"));
        }
        let mut videos = Vec::new();
        for (j, n) in p.clients.iter().enumerate() {
            let Some(k) = cfg.clients.iter().position(|c| &c.name == n) else {
                return Err(serr(format!("{key}.clients[{j}]"), format!("no client named \"{n}\"")));
            };
            if let Some(o) = owner[k] {
                return Err(serr(
                    format!("{key}.clients[{j}]"),
                    format!("client \"{n}\" already belongs to provider \"{}\"", cfg.providers[o].name),
                ));
            }
            owner[k] = Some(i);
            let c = &cfg.clients[k];
            if p.controller != "none" && !WEIGHTED_CC.contains(&c.cc.as_str()) {
                return Err(serr(
                    format!("clients[{k}].cc"),
                    format!(
                        "provider \"{}\" sets weights: expected a weighted congestion controller ({}), found \"{}\"",
                        p.name,
                        WEIGHTED_CC.join(", "),
                        c.cc
                    ),
                ));
            }
            let v = cfg.videos.get(c.video).ok_or_else(|| serr(format!("clients[{k}].video"), "no such video"))?;
            videos.push(v);
        }
        let params = Params::from_value(&p.params).map_err(|e| serr(format!("{key}.params"), e.msg))?;
        let ctl = crate::flowctl::build(
            &p.controller,
            &params,
            &FlowCtlCtx {
                videos: &videos,
                value_functions: &p.value_functions,
                normalization: p.normalization_table.as_ref(),
            },
        )
        .map_err(|e| {
            if e.param == "controller" {
                serr(format!("{key}.controller"), e.msg)
            } else {
                serr(format!("{key}.params.{}", e.param), e.msg)
            }
        })?;
        out.push(ProviderRt {
            name: p.name.clone(),
            controller: p.controller.clone(),
            ctl: Some(ctl),
            names: p.clients.clone(),
            members: Vec::new(),
            weights: Vec::new(),
            stats: Vec::new(),
            busy: Vec::new(),
            sched: NEVER,
        });
    }
    Ok(out)
}

impl World {
    /// Build the providers of the configuration and schedule their first wake-up (at 0).
    pub(crate) fn build_providers(&mut self) -> Result<(), SimError> {
        let list = build_list(&self.cfg)?;
        let record = self.cfg.output.tables.iter().any(|t| t == "weights");
        self.providers = Providers { list, table: None, scanned: 0, of_client: Vec::new() };
        if record && !self.providers.list.is_empty() {
            self.providers.table = Some(Table::new(
                "weights",
                &[
                    ("time_s", 'f'),
                    ("client", 's'),
                    ("provider", 's'),
                    ("weight", 'f'),
                    ("utility", 'f'),
                    ("rate_bps", 'f'),
                    ("clamped", 'i'),
                ],
            ));
        }
        for pi in 0..self.providers.list.len() {
            self.provider_sched(pi, 0);
        }
        Ok(())
    }

    fn provider_sched(&mut self, pi: usize, t: Ns) {
        let p = &mut self.providers.list[pi];
        if t != NEVER && t < p.sched {
            let t = t.max(self.engine.now());
            p.sched = t;
            self.engine.schedule(t, K_PROVIDER << 56 | pi as u64);
        }
    }

    /// Assign the clients created since the last scan to their providers.
    fn provider_scan(&mut self) {
        let n = self.clients.len();
        while self.providers.scanned < n {
            let ci = ClientId::from_index(self.providers.scanned);
            self.providers.scanned += 1;
            let name = &self.clients[ci].cfg.name;
            let mut hit = None;
            for (pi, p) in self.providers.list.iter_mut().enumerate() {
                if covers(&p.names, name) {
                    p.members.push(ci);
                    p.weights.push(None);
                    p.stats.push(WStats::default());
                    p.busy.push((0, 0));
                    hit = Some((pi, p.members.len() - 1));
                    break;
                }
            }
            self.providers.of_client.push(hit);
        }
    }

    /// A client created during the run (a session of an arrival entry) joins its provider now, and
    /// a provider with no wake-up scheduled (its controller had no member to update) is woken now:
    /// until 2026-11-30 such a provider slept for good, so sessions that all arrived after its
    /// first wake-up were never controlled.
    pub(crate) fn provider_new_clients(&mut self) {
        if self.providers.list.is_empty() {
            return;
        }
        let before = self.providers.of_client.len();
        self.provider_scan();
        let now = self.engine.now();
        for i in before..self.providers.of_client.len() {
            if let Some((pi, _)) = self.providers.of_client[i] {
                if self.providers.list[pi].sched == NEVER {
                    self.provider_sched(pi, now);
                }
            }
        }
    }

    /// The response flows of a client's current connections.
    fn current_resp_flows(&self, ci: ClientId) -> impl Iterator<Item = FlowId> + '_ {
        self.clients[ci].conns.iter().map(|c| c.1)
    }

    fn set_client_weight(&mut self, ci: ClientId, w: f64) {
        let flows: Vec<FlowId> = self.current_resp_flows(ci).collect();
        for f in flows {
            let tx = self.flows[f].tx;
            if let Ep::TcpTx(s) = &mut self.eps[tx] {
                s.cc_mut().set_weight(w);
            }
        }
    }

    /// A client opened a new connection: give its flows the client's current weight.
    pub(crate) fn provider_reconnect(&mut self, ci: ClientId) {
        let Some(Some((pi, k))) = self.providers.of_client.get(ci.index()).copied() else { return };
        if let Some(w) = self.providers.list[pi].weights[k] {
            self.set_client_weight(ci, w);
        }
    }

    /// Download time of the completed log entries of client `ci`, updated incrementally in `acc`
    /// (entries summed so far, their total).
    fn log_busy(&self, ci: ClientId, acc: &mut (usize, Ns)) -> Ns {
        let log = self.clients[ci].session.player.log();
        for l in &log[acc.0.min(log.len())..] {
            acc.1 += l.t_last_byte.saturating_sub(l.t_request);
        }
        acc.0 = log.len();
        acc.1
    }

    fn client_obs(&self, ci: ClientId, now: Ns, log_busy: Ns) -> ClientObs<'_> {
        let c = &self.clients[ci];
        let pl = &c.session.player;
        let delivered = c.resp_flows.iter().map(|&f| bytes_received(&self.eps, &self.flows[f])).sum();
        let cur = pl.current_download();
        let busy: Ns = log_busy + cur.map_or(0, |d| now.saturating_sub(d.4));
        let mut min_rtt: Option<Ns> = None;
        for f in self.current_resp_flows(ci) {
            if let Ep::TcpTx(s) = &self.eps[self.flows[f].tx] {
                if let Some(m) = s.min_rtt().filter(|m| *m > 0) {
                    min_rtt = Some(min_rtt.map_or(m, |x| x.min(m)));
                }
            }
        }
        ClientObs {
            name: &c.cfg.name,
            video: pl.video(),
            active: c.started && !pl.is_done(),
            delivered_bytes: delivered,
            busy_ns: busy,
            buffer: pl.buffer_at(now),
            rung: cur.map(|d| d.1).or(pl.last_rung()),
            current: cur.map(|d| CurrentChunk {
                segment: d.0,
                rung: d.1,
                bytes_total: d.2,
                bytes_received: d.3,
                t_request: d.4,
            }),
            log: pl.log(),
            min_rtt,
        }
    }

    /// A provider's wake-up: observe, decide, apply.
    pub(crate) fn on_provider_timer(&mut self, pi: usize) {
        let now = self.engine.now();
        if self.providers.list[pi].sched != now {
            return;
        }
        self.providers.list[pi].sched = NEVER;
        self.provider_scan();
        let mut ctl = self.providers.list[pi].ctl.take().expect("controller present");
        let members = std::mem::take(&mut self.providers.list[pi].members);
        let mut busy = std::mem::take(&mut self.providers.list[pi].busy);
        let decision = {
            let lb: Vec<Ns> = members.iter().zip(busy.iter_mut()).map(|(&ci, acc)| self.log_busy(ci, acc)).collect();
            let obs: Vec<ClientObs> = members.iter().zip(lb).map(|(&ci, b)| self.client_obs(ci, now, b)).collect();
            ctl.update(now, &obs)
        };
        let p = &mut self.providers.list[pi];
        p.ctl = Some(ctl);
        p.busy = busy;
        let n = members.len();
        p.members = members;
        for (k, u) in decision.weights.iter().enumerate().take(n) {
            let Some(u) = u else { continue };
            let ci = self.providers.list[pi].members[k];
            {
                let p = &mut self.providers.list[pi];
                p.weights[k] = Some(u.weight);
                let s = &mut p.stats[k];
                if s.n == 0 {
                    s.min = u.weight;
                    s.max = u.weight;
                }
                s.n += 1;
                s.sum += u.weight;
                s.min = s.min.min(u.weight);
                s.max = s.max.max(u.weight);
                s.last = u.weight;
                s.clamped += u.clamped as u64;
            }
            if let Some(t) = &mut self.providers.table {
                t.f(0, secs(now));
                t.s(1, &self.clients[ci].cfg.name);
                t.s(2, &self.providers.list[pi].name);
                t.f(3, u.weight);
                t.f(4, u.utility);
                t.f(5, u.rate_bps);
                t.i(6, u.clamped as i64);
            }
            self.set_client_weight(ci, u.weight);
        }
        self.provider_sched(pi, decision.next);
    }

    /// Fill the clients' `flow_control` fields (clients in `self.clients` order).
    pub(crate) fn provider_summaries(&self, rows: &mut [ClientSummary]) {
        for (i, row) in rows.iter_mut().enumerate() {
            let Some(Some((pi, k))) = self.providers.of_client.get(i).copied() else { continue };
            let p = &self.providers.list[pi];
            let s = &p.stats[k];
            let some = |x: f64| (s.n > 0).then_some(x);
            row.flow_control = Some(FlowControlSummary {
                provider: p.name.clone(),
                controller: p.controller.clone(),
                updates: s.n,
                clamped_updates: s.clamped,
                weight_mean: some(s.sum / s.n.max(1) as f64),
                weight_min: some(s.min),
                weight_max: some(s.max),
                weight_last: some(s.last),
            });
        }
    }

    /// The weights table, if recorded.
    pub(crate) fn take_provider_tables(&mut self) -> Option<Table> {
        self.providers.table.take()
    }
}
