//! One page load: the scheduling loop (FIFO of enabled transfers, connection limits) around the
//! fluid [`State`], and the prediction runs policies use.

use super::page::Page;
use super::policy::Policy;
use super::state::{Conn, ShareWork, State, StepOut};
use super::{Choice, Config};
use crate::time::{Ns, NEVER};

/// Steps after which a load (or a prediction) is declared stuck: a bug, never a user error.
const MAX_STEPS: u64 = 50_000_000;

/// What happened to one transfer (times in ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferRecord {
    /// Its parent finished (0 for roots).
    pub enable: Ns,
    /// A policy assigned it to a connection.
    pub enqueue: Ns,
    pub finish: Ns,
    /// Serial of the connection (order of creation within the load).
    pub conn: u32,
    /// Bit i set if the connection has a flow on interface i.
    pub iface_mask: u8,
    pub mptcp: bool,
    /// A new connection was opened for it.
    pub new_conn: bool,
}

/// The outcome of one load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadResult {
    /// Page load time: the finish of the last transfer.
    pub plt: Ns,
    pub conns_opened: u32,
    pub mptcp_opened: u32,
    /// Transfers whose connection used an interface other than the first.
    pub off_first: u32,
    /// Some transfer had to wait because of the per-origin or the global connection limit.
    pub limit_blocked: bool,
    /// Fluid steps of the load itself and of all its prediction runs.
    pub steps: u64,
    pub predictions: u64,
    /// Per transfer (only with `Config::record`).
    pub records: Vec<TransferRecord>,
}

/// Reused buffers of prediction runs.
#[derive(Default)]
pub struct Scratch {
    st: State,
    work: ShareWork,
    out: StepOut,
}

/// What a policy sees when it decides: the current state (read-only) and prediction runs.
pub struct Ctx<'a> {
    st: &'a State,
    page: &'a Page,
    cfg: &'a Config,
    scratch: &'a mut Scratch,
    steps: u64,
    predictions: u64,
}

impl<'a> Ctx<'a> {
    pub fn n_ifaces(&self) -> usize {
        self.cfg.ifaces.len()
    }

    pub fn cfg(&self) -> &Config {
        self.cfg
    }

    pub fn now(&self) -> Ns {
        self.st.now
    }

    /// The open connections (busy or idle), in order of creation.
    pub fn conns(&self) -> &[Conn] {
        &self.st.conns
    }

    pub fn object(&self, tid: u32) -> super::page::Object {
        self.page.objects[tid as usize]
    }

    /// Connections `tid` may be queued on (same origin and TLS flag), as indices.
    pub fn reusable(&self, tid: u32) -> impl Iterator<Item = usize> + '_ {
        let o = self.page.objects[tid as usize];
        self.st.conns.iter().enumerate().filter(move |(_, c)| c.origin == o.origin && c.tls == o.tls).map(|(i, _)| i)
    }

    /// Predicted finish time of `tid` if `choice` were applied now, with no later arrivals:
    /// the state is cloned and simulated until `tid` finishes. NEVER if it cannot finish.
    pub fn predict(&mut self, tid: u32, choice: &Choice) -> Ns {
        self.predict_within(tid, choice, NEVER)
    }

    /// [`Ctx::predict`], but the run stops once simulated time passes `limit` and then returns
    /// NEVER: exact whenever the finish is <= `limit` (policies pass the best time so far, so a
    /// candidate that cannot win costs less).
    pub fn predict_within(&mut self, tid: u32, choice: &Choice, limit: Ns) -> Ns {
        self.predictions += 1;
        let s = &mut *self.scratch;
        // Only connections that share an interface with the candidate can change its finish time
        // (no shared bottleneck beyond an interface), unless an MPTCP connection links the
        // candidate's interfaces to others: then everything is simulated.
        let mask = match *choice {
            Choice::Pipe(ci) => self.st.conns[ci].iface_mask(),
            Choice::New { ifaces, n } => ifaces[..n as usize].iter().fold(0u8, |m, &i| m | 1 << i),
        };
        let linked =
            self.st.conns.iter().any(|c| c.busy() && c.iface_mask() & mask != 0 && c.iface_mask() & !mask != 0);
        let keep = match *choice {
            Choice::Pipe(ci) => Some(ci),
            _ => None,
        };
        let kept = if linked || !self.cfg.prune_predictions {
            s.st.clone_from(self.st);
            keep
        } else {
            s.st.clone_pruned(self.st, mask, keep)
        };
        match *choice {
            Choice::Pipe(_) => s.st.enqueue(kept.expect("the chosen connection is kept"), tid, self.page, self.cfg),
            Choice::New { ifaces, n } => {
                s.st.open(&ifaces[..n as usize], tid, self.page, self.cfg);
            }
        }
        let mut steps = 0;
        loop {
            s.st.share(self.cfg, &mut s.work);
            let t = s.st.next_event(self.cfg);
            steps += 1;
            if t == NEVER || t > limit || steps > MAX_STEPS {
                self.steps += steps;
                return NEVER;
            }
            s.st.advance(t);
            s.out.finished.clear();
            s.out.closed = false;
            s.st.process(self.page, self.cfg, &mut s.out);
            if s.out.finished.iter().any(|&(_, x)| x == tid) {
                self.steps += steps;
                return t;
            }
        }
    }
}

impl State {
    /// Copy `o` keeping only the busy connections with a flow on an interface of `mask` and the
    /// connection `keep` (whose new index is returned): what a prediction on those interfaces
    /// needs. Idle connections have no demand and connections on other interfaces share nothing
    /// with the candidate.
    fn clone_pruned(&mut self, o: &State, mask: u8, keep: Option<usize>) -> Option<usize> {
        self.now = o.now;
        self.bw = o.bw;
        self.sched_pos = o.sched_pos;
        self.next.clone_from(&o.next);
        self.serial = o.serial;
        self.conns.clear();
        let mut kept = None;
        for (i, c) in o.conns.iter().enumerate() {
            if Some(i) == keep {
                kept = Some(self.conns.len());
                self.conns.push(*c);
            } else if c.busy() && c.iface_mask() & mask != 0 {
                self.conns.push(*c);
            }
        }
        kept
    }
}

impl Clone for State {
    fn clone(&self) -> State {
        let mut s = State::default();
        s.clone_from(self);
        s
    }

    fn clone_from(&mut self, o: &State) {
        self.now = o.now;
        self.bw = o.bw;
        self.sched_pos = o.sched_pos;
        self.conns.clone_from(&o.conns);
        self.next.clone_from(&o.next);
        self.serial = o.serial;
    }
}

/// Load `page` under `cfg` with `policy`. `cfg` must have passed [`Config::check`]. Errors are
/// internal (a load that cannot finish), not user errors.
pub fn load(page: &Page, cfg: &Config, policy: &mut dyn Policy) -> Result<LoadResult, String> {
    let n = page.len();
    let mut st = State::new(cfg, page);
    let mut scratch = Scratch::default();
    let mut work = ShareWork::default();
    let mut out = StepOut::default();
    let mut res = LoadResult::default();
    if cfg.record {
        res.records = vec![TransferRecord::default(); n];
    }
    let mut pending: Vec<u32> = page.roots().to_vec();
    let mut done = 0usize;
    let mut steps = 0u64;
    schedule(&mut st, &mut pending, page, cfg, policy, &mut scratch, &mut res);
    while done < n {
        st.share(cfg, &mut work);
        let t = st.next_event(cfg);
        steps += 1;
        if t == NEVER || steps > MAX_STEPS {
            return Err(format!("page load stuck at t = {} ns with {} of {n} transfers done", st.now, done));
        }
        st.advance(t);
        out.finished.clear();
        out.closed = false;
        st.process(page, cfg, &mut out);
        for &(_, tid) in &out.finished {
            done += 1;
            res.plt = t;
            if cfg.record {
                res.records[tid as usize].finish = t;
            }
            for &ch in page.children(tid) {
                if cfg.record {
                    res.records[ch as usize].enable = t;
                }
                pending.push(ch);
            }
        }
        if !out.finished.is_empty() || out.closed {
            schedule(&mut st, &mut pending, page, cfg, policy, &mut scratch, &mut res);
        }
    }
    res.steps += steps;
    Ok(res)
}

/// The scheduling loop: offer every enabled, unscheduled transfer (FIFO) to the policy while the
/// limits allow.
fn schedule(
    st: &mut State,
    pending: &mut Vec<u32>,
    page: &Page,
    cfg: &Config,
    policy: &mut dyn Policy,
    scratch: &mut Scratch,
    res: &mut LoadResult,
) {
    let mut i = 0;
    while i < pending.len() {
        let tid = pending[i];
        let o = page.objects[tid as usize];
        let (busy, same) = st.busy_counts(o.origin);
        if busy >= cfg.max_total {
            res.limit_blocked = true;
            break;
        }
        if same >= cfg.max_per_origin {
            res.limit_blocked = true;
            i += 1;
            continue;
        }
        let mut ctx = Ctx { st, page, cfg, scratch, steps: 0, predictions: 0 };
        let choice = policy.decide(&mut ctx, tid);
        res.steps += ctx.steps;
        res.predictions += ctx.predictions;
        let mut target = match choice {
            Choice::Pipe(ci) => {
                let c = &st.conns[ci];
                assert!(c.origin == o.origin && c.tls == o.tls, "policy chose a connection of another origin");
                Some(ci)
            }
            Choice::New { ifaces, n } => {
                let l = &ifaces[..n as usize];
                assert!(
                    !l.is_empty() && l.iter().all(|&x| (x as usize) < cfg.ifaces.len()),
                    "policy chose an unknown interface"
                );
                None
            }
        };
        if st.conns.len() >= cfg.max_total {
            if let (Some(r), Some(k)) = (st.close_oldest_idle(target), target) {
                if r < k {
                    target = Some(k - 1);
                }
            }
        }
        let ci = match (choice, target) {
            (Choice::Pipe(_), Some(k)) => {
                st.enqueue(k, tid, page, cfg);
                k
            }
            (Choice::New { ifaces, n }, _) => {
                res.conns_opened += 1;
                res.mptcp_opened += (n > 1) as u32;
                st.open(&ifaces[..n as usize], tid, page, cfg)
            }
            _ => unreachable!(),
        };
        let c = &st.conns[ci];
        let mask = c.iface_mask();
        res.off_first += (mask != 1) as u32;
        if cfg.record {
            let r = &mut res.records[tid as usize];
            r.enqueue = st.now;
            r.conn = c.serial;
            r.iface_mask = mask;
            r.mptcp = c.mptcp;
            r.new_conn = matches!(choice, Choice::New { .. });
        }
        pending.remove(i);
    }
}
