//! The fluid state of one page load: interfaces, (MP)TCP connections with their subflows, the
//! FIFO of transfers on each connection. Everything is plain `Copy` data in vectors, so that a
//! prediction run clones it with a memcpy (`clone_from` into a reused scratch state).
//!
//! Units: time in ns ([`Ns`]); rates in bytes/s; amounts in nano-bytes (1e-9 B), so that
//! `rate (B/s) x dt (ns)` is an exact integer amount and `amount / rate` is a time in ns.

use super::page::{Page, NONE};
use super::{Config, Sharing, MAX_IFACES};
use crate::time::{Ns, NEVER};

/// Nano-bytes per byte.
pub const NB: u64 = 1_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// An MPTCP subflow waiting for the first subflow's handshake.
    Pending,
    /// Handshake in progress until `start_at`.
    Handshake,
    SlowStart,
    /// "Congestion avoidance": takes its fair share at once (never returns to slow start).
    Avoid,
}

/// One TCP flow on one interface (a TCP connection, or an MPTCP subflow).
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    pub iface: u8,
    pub phase: Phase,
    /// End of the handshake (Handshake phase).
    pub start_at: Ns,
    /// Congestion window in nano-bytes (slow start).
    pub cwnd_nb: u64,
    /// Rate wanted in slow start (B/s), updated at the end of each round.
    pub ss_desired: u64,
    /// Rate granted by the interface's sharing (B/s).
    pub rate: u64,
    /// End of the current slow-start round.
    pub round_end: Ns,
    /// Rate wanted in congestion avoidance (B/s): the connection's outstanding bytes per RTT of
    /// its first interface, set when the flow leaves slow start and at the connection's own
    /// events (an object starts or is queued), not continuously.
    pub ca_demand: u64,
}

const NO_FLOW: Flow = Flow {
    iface: 0,
    phase: Phase::Pending,
    start_at: NEVER,
    cwnd_nb: 0,
    ss_desired: 0,
    rate: 0,
    round_end: NEVER,
    ca_demand: 0,
};

/// An HTTP/1.1 persistent connection (TCP, or MPTCP with one subflow per listed interface).
#[derive(Clone, Copy, Debug)]
pub struct Conn {
    /// Stable number of the connection within the load (order of creation).
    pub serial: u32,
    pub origin: u32,
    pub tls: bool,
    pub mptcp: bool,
    pub n_flows: u8,
    pub flows: [Flow; MAX_IFACES],
    /// Transfer being received (NONE when idle) and the last queued one.
    pub head: u32,
    pub tail: u32,
    /// Bytes left of the head transfer (nano-bytes).
    pub head_rem_nb: u64,
    /// Bytes of the queued transfers behind the head.
    pub queued_bytes: u64,
    /// No data before this time (the optional request RTT on a reused idle connection).
    pub hold_until: Ns,
    /// When the connection went idle (NEVER while busy).
    pub idle_since: Ns,
}

impl Conn {
    #[inline]
    pub fn busy(&self) -> bool {
        self.head != NONE
    }

    /// Interface of the first (or only) flow.
    #[inline]
    pub fn first_iface(&self) -> u8 {
        self.flows[0].iface
    }

    pub fn flows(&self) -> &[Flow] {
        &self.flows[..self.n_flows as usize]
    }

    /// Bit i set if a flow of the connection is on interface i.
    pub fn iface_mask(&self) -> u8 {
        self.flows().iter().fold(0, |m, f| m | 1 << f.iface)
    }

    /// Re-evaluate the congestion-avoidance demand of its flows (the outstanding bytes changed:
    /// an object started or was queued).
    fn refresh_ca(&mut self, rtt1: Ns) {
        let d = (outstanding_nb(self) / rtt1).max(1);
        for f in self.flows[..self.n_flows as usize].iter_mut() {
            if f.phase == Phase::Avoid {
                f.ca_demand = d;
            }
        }
    }
}

/// What a step reported.
#[derive(Default)]
pub struct StepOut {
    /// Transfers finished at this step (connection serial, transfer).
    pub finished: Vec<(u32, u32)>,
    /// A connection was closed (idle timeout).
    pub closed: bool,
}

/// The whole mutable state of a load.
#[derive(Debug, Default)]
pub struct State {
    pub now: Ns,
    pub bw: [u64; MAX_IFACES],
    pub sched_pos: [u32; MAX_IFACES],
    /// Open connections, in order of creation.
    pub conns: Vec<Conn>,
    /// Queue links: the transfer behind transfer i on its connection.
    pub next: Vec<u32>,
    pub serial: u32,
}

impl State {
    pub fn new(cfg: &Config, page: &Page) -> State {
        let mut bw = [0; MAX_IFACES];
        for (i, f) in cfg.ifaces.iter().enumerate() {
            bw[i] = f.rate;
        }
        let mut st = State {
            now: 0,
            bw,
            sched_pos: [0; MAX_IFACES],
            conns: Vec::with_capacity(cfg.max_total + 2),
            next: vec![NONE; page.len()],
            serial: 0,
        };
        st.apply_schedules(cfg);
        st
    }

    fn apply_schedules(&mut self, cfg: &Config) {
        for (i, f) in cfg.ifaces.iter().enumerate() {
            while let Some(&(t, r)) = f.schedule.get(self.sched_pos[i] as usize) {
                if t > self.now {
                    break;
                }
                self.bw[i] = r;
                self.sched_pos[i] += 1;
            }
        }
    }

    /// Number of busy connections, and of busy connections of `origin`.
    pub fn busy_counts(&self, origin: u32) -> (usize, usize) {
        let mut all = 0;
        let mut same = 0;
        for c in &self.conns {
            if c.busy() {
                all += 1;
                same += (c.origin == origin) as usize;
            }
        }
        (all, same)
    }

    /// Append `tid` to connection `ci` (an existing one).
    pub fn enqueue(&mut self, ci: usize, tid: u32, page: &Page, cfg: &Config) {
        let now = self.now;
        let size = page.objects[tid as usize].size;
        let c = &mut self.conns[ci];
        let rtt1 = cfg.ifaces[c.first_iface() as usize].rtt;
        self.next[tid as usize] = NONE;
        if c.busy() {
            self.next[c.tail as usize] = tid;
            c.tail = tid;
            c.queued_bytes += size;
            c.refresh_ca(rtt1);
        } else {
            c.head = tid;
            c.tail = tid;
            c.head_rem_nb = size * NB;
            c.idle_since = NEVER;
            let rtt = cfg.ifaces[c.first_iface() as usize].rtt;
            c.hold_until = now + cfg.reuse_rtts as u64 * rtt;
            let hold = c.hold_until;
            for f in c.flows[..c.n_flows as usize].iter_mut() {
                if f.phase == Phase::SlowStart {
                    f.round_end = hold + cfg.ifaces[f.iface as usize].rtt;
                }
            }
            c.refresh_ca(rtt1);
        }
    }

    /// Open a new connection for `tid` over `ifaces` (one: TCP; several, in order: MPTCP).
    /// Returns its index.
    pub fn open(&mut self, ifaces: &[u8], tid: u32, page: &Page, cfg: &Config) -> usize {
        let o = page.objects[tid as usize];
        let mut flows = [NO_FLOW; MAX_IFACES];
        for (k, &i) in ifaces.iter().enumerate() {
            flows[k].iface = i;
        }
        let rtt = cfg.ifaces[ifaces[0] as usize].rtt;
        let hs = cfg.handshake_rtts as u64 + if o.tls { cfg.tls_rtts as u64 } else { 0 };
        flows[0].phase = Phase::Handshake;
        flows[0].start_at = self.now + hs * rtt;
        self.next[tid as usize] = NONE;
        self.conns.push(Conn {
            serial: self.serial,
            origin: o.origin,
            tls: o.tls,
            mptcp: ifaces.len() > 1,
            n_flows: ifaces.len() as u8,
            flows,
            head: tid,
            tail: tid,
            head_rem_nb: o.size * NB,
            queued_bytes: 0,
            hold_until: self.now,
            idle_since: NEVER,
        });
        self.serial += 1;
        self.conns.len() - 1
    }

    /// Close the idle connection with the oldest idle time stamp, except `keep`. Returns the
    /// index removed.
    pub fn close_oldest_idle(&mut self, keep: Option<usize>) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, c) in self.conns.iter().enumerate() {
            if !c.busy() && best.is_none_or(|b| c.idle_since < self.conns[b].idle_since) {
                best = Some(i);
            }
        }
        match best {
            Some(b) if Some(b) != keep => {
                self.conns.remove(b);
                Some(b)
            }
            _ => None,
        }
    }

    /// Recompute every flow's rate from the interfaces' sharing; flows whose slow-start rate
    /// exceeds their share leave slow start (and want the fair share from then on).
    pub fn share(&mut self, cfg: &Config, work: &mut ShareWork) {
        let n_if = cfg.ifaces.len();
        for w in work.per.iter_mut().take(n_if) {
            w.clear();
        }
        let mut sum = [0u64; MAX_IFACES];
        for (ci, c) in self.conns.iter_mut().enumerate() {
            let active = c.busy() && self.now >= c.hold_until;
            let nf = c.n_flows as usize;
            for (k, f) in c.flows[..nf].iter_mut().enumerate() {
                let d = if !active {
                    0
                } else {
                    match f.phase {
                        Phase::Pending | Phase::Handshake => 0,
                        Phase::SlowStart => f.ss_desired.max(1),
                        Phase::Avoid => f.ca_demand.min(self.bw[f.iface as usize]).max(1),
                    }
                };
                f.rate = 0;
                if d > 0 {
                    let i = f.iface as usize;
                    sum[i] = sum[i].saturating_add(d);
                    work.per[i].push(Entry { d, r: 0, key: (ci as u32) << 8 | k as u32 });
                }
            }
        }
        for (i, w) in work.per.iter_mut().enumerate().take(n_if) {
            if w.is_empty() {
                continue;
            }
            let bw = self.bw[i];
            let rtt = cfg.ifaces[i].rtt;
            if sum[i] <= bw {
                // everyone gets what it wants; nobody leaves slow start
                for e in w.iter() {
                    self.conns[(e.key >> 8) as usize].flows[(e.key & 0xff) as usize].rate = e.d;
                }
                continue;
            }
            loop {
                waterfill(bw, w, cfg.sharing);
                let mut exited = false;
                for e in w.iter_mut() {
                    let c = &mut self.conns[(e.key >> 8) as usize];
                    let ca = (outstanding_nb(c) / cfg.ifaces[c.first_iface() as usize].rtt).max(1);
                    let f = &mut c.flows[(e.key & 0xff) as usize];
                    f.rate = e.r;
                    if f.phase == Phase::SlowStart && f.ss_desired > e.r {
                        f.phase = Phase::Avoid;
                        f.cwnd_nb = e.r.saturating_mul(rtt);
                        f.round_end = NEVER;
                        f.ca_demand = ca;
                        e.d = ca.min(bw);
                        exited = true;
                    }
                }
                if !exited {
                    break;
                }
            }
        }
    }

    /// The next time something happens (NEVER if nothing will).
    pub fn next_event(&self, cfg: &Config) -> Ns {
        let mut t = NEVER;
        for c in &self.conns {
            for f in c.flows() {
                match f.phase {
                    Phase::Handshake => t = t.min(f.start_at),
                    Phase::SlowStart if c.busy() => t = t.min(f.round_end),
                    _ => {}
                }
            }
            if c.busy() {
                if c.hold_until > self.now {
                    t = t.min(c.hold_until);
                } else {
                    let r: u64 = c.flows().iter().map(|f| f.rate).sum();
                    if r > 0 {
                        t = t.min(self.now + c.head_rem_nb.div_ceil(r));
                    }
                }
            } else {
                t = t.min(c.idle_since.saturating_add(cfg.idle_timeout));
            }
        }
        for (i, f) in cfg.ifaces.iter().enumerate() {
            if let Some(&(ts, _)) = f.schedule.get(self.sched_pos[i] as usize) {
                t = t.min(ts);
            }
        }
        t
    }

    /// Move the fluid forward to `t` (no event in between).
    pub fn advance(&mut self, t: Ns) {
        debug_assert!(t >= self.now);
        let dt = t - self.now;
        if dt > 0 {
            let now = self.now;
            for c in self.conns.iter_mut() {
                if !c.busy() || c.hold_until > now {
                    continue;
                }
                let mut got: u64 = 0;
                for f in c.flows[..c.n_flows as usize].iter_mut() {
                    if f.rate == 0 {
                        continue;
                    }
                    let d = (f.rate as u128 * dt as u128).min(u64::MAX as u128) as u64;
                    let d = d.min(c.head_rem_nb);
                    got = got.saturating_add(d);
                    if f.phase == Phase::SlowStart {
                        f.cwnd_nb = f.cwnd_nb.saturating_add(d);
                    }
                }
                c.head_rem_nb = c.head_rem_nb.saturating_sub(got);
            }
        }
        self.now = t;
    }

    /// Handle everything due at `now`: handshakes, slow-start rounds, finished transfers (the
    /// next queued transfer starts at once), idle timeouts, rate-schedule changes.
    pub fn process(&mut self, page: &Page, cfg: &Config, out: &mut StepOut) {
        let now = self.now;
        self.apply_schedules(cfg);
        let mut ci = 0;
        while ci < self.conns.len() {
            let c = &mut self.conns[ci];
            let nf = c.n_flows as usize;
            let hold = c.hold_until;
            let busy = c.busy();
            let mut first_up = false;
            for (k, f) in c.flows[..nf].iter_mut().enumerate() {
                let rtt = cfg.ifaces[f.iface as usize].rtt;
                if f.phase == Phase::Handshake && f.start_at <= now {
                    f.phase = Phase::SlowStart;
                    f.cwnd_nb = cfg.mss * cfg.iw_segments * NB;
                    f.ss_desired = f.cwnd_nb / rtt;
                    f.round_end = now.max(hold) + rtt;
                    first_up |= k == 0;
                } else if f.phase == Phase::SlowStart && busy && f.round_end <= now {
                    f.ss_desired = f.cwnd_nb / rtt;
                    while f.round_end <= now {
                        f.round_end += rtt;
                    }
                }
            }
            if first_up {
                // the other subflows of an MPTCP connection start their handshakes now
                for g in c.flows[1..nf].iter_mut() {
                    g.phase = Phase::Handshake;
                    g.start_at = now + cfg.handshake_rtts as u64 * cfg.ifaces[g.iface as usize].rtt;
                }
            }
            if c.busy() && c.head_rem_nb == 0 && now >= c.hold_until {
                out.finished.push((c.serial, c.head));
                // a transfer's end ends the slow-start round (the public simulator's event "every
                // RTT or at transfer end if sooner"): the wanted rate becomes window / RTT, for
                // the next queued object at once or for the connection's reuse
                for f in c.flows[..nf].iter_mut() {
                    if f.phase == Phase::SlowStart {
                        let rtt = cfg.ifaces[f.iface as usize].rtt;
                        f.ss_desired = f.cwnd_nb / rtt;
                        f.round_end = now + rtt;
                    }
                }
                let nx = self.next[c.head as usize];
                if nx == NONE {
                    c.head = NONE;
                    c.tail = NONE;
                    c.idle_since = now;
                } else {
                    let size = page.objects[nx as usize].size;
                    c.head = nx;
                    c.head_rem_nb = size * NB;
                    c.queued_bytes -= size;
                    c.refresh_ca(cfg.ifaces[c.first_iface() as usize].rtt);
                }
            }
            if !c.busy() && c.idle_since.saturating_add(cfg.idle_timeout) <= now {
                self.conns.remove(ci);
                out.closed = true;
                continue;
            }
            ci += 1;
        }
    }
}

/// Bytes a connection still has to receive (nano-bytes): the rest of its current object and the
/// objects queued behind it.
#[inline]
fn outstanding_nb(c: &Conn) -> u64 {
    c.head_rem_nb.saturating_add(c.queued_bytes.saturating_mul(NB))
}

/// One busy flow in the sharing: demand, rate granted, (connection << 8 | flow).
#[derive(Clone, Copy, Debug, Default)]
pub struct Entry {
    pub d: u64,
    pub r: u64,
    pub key: u32,
}

/// Reused buffers of [`State::share`].
#[derive(Debug, Default)]
pub struct ShareWork {
    per: [Vec<Entry>; MAX_IFACES],
}

/// Share `bw` (B/s) among flows with demands `d > 0`, writing `r`. `WaterFill`: repeat share =
/// floor((bw - sum of satisfied demands) / unsatisfied count); flows wanting <= share are
/// satisfied with their demand; the rest get `share` (the public simulator's integer
/// procedure). `MaxMin`: the same, then the bytes/s left by the floor go one each to the first
/// unsatisfied flows (work-conserving).
pub fn waterfill(bw: u64, flows: &mut [Entry], sharing: Sharing) {
    for e in flows.iter_mut() {
        e.r = 0;
    }
    let n = flows.len() as u64;
    let mut sat_sum: u64 = 0;
    let mut n_sat: u64 = 0;
    let mut share = 0;
    // r == 0 marks "not yet satisfied" (demands are >= 1)
    while n_sat < n {
        share = bw.saturating_sub(sat_sum) / (n - n_sat);
        let mut changed = false;
        for e in flows.iter_mut() {
            if e.r == 0 && e.d <= share {
                e.r = e.d;
                sat_sum += e.d;
                n_sat += 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if n_sat == n {
        return;
    }
    let mut extra =
        if sharing == Sharing::MaxMin { bw.saturating_sub(sat_sum).saturating_sub(share * (n - n_sat)) } else { 0 };
    for e in flows.iter_mut() {
        if e.r == 0 {
            e.r = share + (extra > 0) as u64;
            extra = extra.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(bw: u64, d: &[u64], s: Sharing) -> Vec<u64> {
        // idle flows (demand 0) are not offered to the sharing: they get 0
        let mut v: Vec<Entry> = d.iter().filter(|&&x| x > 0).map(|&x| Entry { d: x, r: 0, key: 0 }).collect();
        waterfill(bw, &mut v, s);
        let mut it = v.iter();
        d.iter().map(|&x| if x == 0 { 0 } else { it.next().unwrap().r }).collect()
    }

    #[test]
    fn waterfill_shares() {
        // equal split of unlimited demands, floor
        assert_eq!(fill(1000, &[u64::MAX, u64::MAX, u64::MAX], Sharing::WaterFill), vec![333, 333, 333]);
        // small demand satisfied, the rest split what is left
        assert_eq!(fill(1000, &[100, u64::MAX, u64::MAX], Sharing::WaterFill), vec![100, 450, 450]);
        // idle flows get nothing
        assert_eq!(fill(1000, &[0, 5000, 0], Sharing::WaterFill), vec![0, 1000, 0]);
        // cascade: 300 fits only after 100 is satisfied (share 333 -> then (1000-100)/2 = 450)
        assert_eq!(fill(1000, &[400, 100, 2000], Sharing::WaterFill), vec![400, 100, 500]);
        // everyone satisfied: rates are the demands, bandwidth left unused
        assert_eq!(fill(1000, &[10, 20], Sharing::WaterFill), vec![10, 20]);
        // max-min hands out the floor's remainder
        assert_eq!(fill(1000, &[u64::MAX, u64::MAX, u64::MAX], Sharing::MaxMin), vec![334, 333, 333]);
    }

    /// The congestion-avoidance demand is set at the connection's own events, so events elsewhere
    /// (here: a sharing every 1 ms) do not stretch the tail of a transfer. Re-evaluating
    /// outstanding / RTT at every event would make the last share x RTT bytes decay geometrically
    /// (1% per ms here) and the transfer would not finish within 100 ms of its exact end.
    #[test]
    fn ca_tail_does_not_depend_on_other_events() {
        use crate::pageload::page::{Object, Page};
        use crate::pageload::{Config, Iface};
        use crate::time::MS;
        let cfg = Config::new(vec![Iface::new(1_000_000, 100 * MS)]);
        let page = Page::new(vec![Object { size: 300_000, origin: 0, tls: false, parent: None }]).unwrap();
        let mut st = State::new(&cfg, &page);
        st.open(&[0], 0, &page, &cfg);
        let mut work = ShareWork::default();
        let mut out = StepOut::default();
        // handshake 200 ms, rounds of 14,600, 29,200 and 58,400 B, then the fair share (1 MB/s)
        // from 500 ms: the remaining 197,800 B end at 697.8 ms
        let mut t = 0;
        while out.finished.is_empty() {
            st.share(&cfg, &mut work);
            t = st.next_event(&cfg).min(st.now + MS);
            st.advance(t);
            st.process(&page, &cfg, &mut out);
            assert!(t < 2_000 * MS, "not finished after 2 s");
        }
        assert!(t <= 697_800_000 + MS, "finished at {t} ns");
    }

    #[test]
    fn waterfill_is_max_min_fair() {
        // property: no flow gets more than its demand, the sum never exceeds bw, and every
        // unsatisfied flow gets at least as much as any other flow
        let mut rng = crate::rng::Rng::from_seed(7);
        for _ in 0..2000 {
            let n = 1 + rng.below(20) as usize;
            let bw = 1 + rng.below(1_000_000);
            let d: Vec<u64> = (0..n).map(|_| if rng.chance(0.2) { 0 } else { 1 + rng.below(200_000) }).collect();
            for s in [Sharing::WaterFill, Sharing::MaxMin] {
                let r = fill(bw, &d, s);
                assert!(r.iter().sum::<u64>() <= bw);
                let maxr = *r.iter().max().unwrap();
                for (x, y) in d.iter().zip(&r) {
                    assert!(y <= x);
                    if y < x {
                        assert!(*y + 1 >= maxr, "unsatisfied flow below another's rate: {d:?} {r:?}");
                    }
                }
                if s == Sharing::MaxMin && r.iter().zip(&d).any(|(y, x)| y < x) {
                    assert_eq!(r.iter().sum::<u64>(), bw);
                }
            }
        }
    }
}
