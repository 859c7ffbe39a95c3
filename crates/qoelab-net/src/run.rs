//! `qoelab link`: two anonymous network namespaces (server, client), one TUN device in each,
//! both held by this process; the commands run inside them; the emulator loop in between.

use crate::emu::{self, Direction};
use crate::opts::Options;
use crate::sys;
use std::fs::File;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const SERVER_ADDR: &str = "10.77.0.1";
pub const CLIENT_ADDR: &str = "10.77.1.1";
pub const SERVER_NET: &str = "10.77.0.0/24";
pub const CLIENT_NET: &str = "10.77.1.0/24";
const SERVER_TUN: &str = "qls0";
const CLIENT_TUN: &str = "qlc0";

/// An error that ends the run with exit status 2 and one line.
pub struct Fatal(pub String);

/// The signals that stop a run (exit status 128 + the signal).
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The exit status for a fatal error `e`: 128 + the signal, without a message, when a stop signal
/// is pending (Ctrl-C reaches the `ip` commands of the namespaces' setup too, and one killed by it
/// is not a failure to report); otherwise 2 after printing `prefix: error: e`.
pub fn fatal_exit(prefix: &str, e: &Fatal) -> i32 {
    if let Some(sig) = sys::pending_signal(&STOP_SIGNALS) {
        return 128 + sig;
    }
    eprintln!("{prefix}: error: {}", e.0);
    2
}

/// One endpoint namespace: its ns file (to enter) and its TUN device.
pub struct Side {
    pub ns: File,
    pub tun: File,
}

/// Create a namespace, its TUN device, addresses and routes. Leaves the calling thread inside it.
pub fn make_side(tun_name: &str, addr: &str, peer_net: &str, default_route: bool) -> Result<Side, Fatal> {
    sys::unshare_net().map_err(|e| {
        Fatal(format!("cannot create a network namespace (needs root or CAP_SYS_ADMIN; unshare(CLONE_NEWNET): {e})"))
    })?;
    let ns = File::open("/proc/thread-self/ns/net").map_err(|e| Fatal(format!("cannot open own netns: {e}")))?;
    let tun = sys::tun_open(tun_name).map_err(|e| Fatal(format!("cannot create a TUN device (/dev/net/tun: {e})")))?;
    let mut cmds: Vec<Vec<String>> = vec![
        vec!["link", "set", "lo", "up"],
        vec!["addr", "add", &format!("{addr}/24"), "dev", tun_name],
        vec!["link", "set", tun_name, "mtu", "1500", "up"],
        vec!["route", "add", peer_net, "dev", tun_name],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    if default_route {
        cmds.push(["route", "add", "default", "dev", tun_name].iter().map(|s| s.to_string()).collect());
    }
    for c in cmds {
        let mut cmd = Command::new(ip_binary());
        cmd.args(&c).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let out = sys::spawn_in(&mut cmd, &ns, None)
            .and_then(|ch| ch.wait_with_output())
            .map_err(|e| Fatal(format!("cannot run `ip` (iproute2) to configure the namespaces: {e}")))?;
        if !out.status.success() {
            use std::os::unix::process::ExitStatusExt;
            if out.status.signal().is_some_and(|s| STOP_SIGNALS.contains(&s)) {
                // Killed by the Ctrl-C (or SIGTERM to the group) meant for us: give ours, which a
                // supervising parent may still be forwarding, a moment to arrive (fatal_exit).
                let by = Instant::now() + Duration::from_millis(200);
                while sys::pending_signal(&STOP_SIGNALS).is_none() && Instant::now() < by {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(Fatal(format!("`ip {}` failed: {}", c.join(" "), err.trim())));
        }
    }
    Ok(Side { ns, tun })
}

fn ip_binary() -> &'static str {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("ip")
}

/// Run `argv` in the namespace `ns`, as the init of a PID namespace of its own (its descendants
/// die with it); `group`: in a process group of its own (the server; the client stays in the
/// terminal's foreground group so that an interactive COMMAND works).
fn spawn(argv: &[String], ns: &File, pid_ns: &File, group: bool, env: &[(&str, &str)]) -> Result<Child, Fatal> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if group {
        cmd.process_group(0);
    }
    sys::spawn_in(&mut cmd, ns, Some(pid_ns)).map_err(|e| Fatal(format!("cannot run {:?}: {e}", argv[0])))
}

/// Stop a child: SIGTERM (to its process group if it leads one; as the init of its PID
/// namespace it ignores signals it has no handler for), then SIGKILL after `grace`, which ends
/// every process of its PID namespace.
pub fn stop(child: &mut Child, group: bool, grace: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pid = child.id() as i32;
    sys::kill(if group { -pid } else { pid }, libc::SIGTERM);
    let end = Instant::now() + grace;
    while Instant::now() < end {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn exit_code(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// The privileges the namespaces need: root as is, otherwise a user namespace of our own in
/// which we are root (no SCHED_FIFO there). Call first, while the process has one thread.
/// Returns whether a user namespace was entered.
pub fn privileges() -> Result<bool, Fatal> {
    let r = privileges_inner();
    if let Ok(true) = r {
        IN_USER_NAMESPACE.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    r
}

static IN_USER_NAMESPACE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `privileges` entered a user namespace (reported with the timing quality).
pub fn in_user_namespace() -> bool {
    IN_USER_NAMESPACE.load(std::sync::atomic::Ordering::Relaxed)
}

fn privileges_inner() -> Result<bool, Fatal> {
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(Fatal("/dev/net/tun is missing (load the tun module or create the device node)".into()));
    }
    if sys::geteuid() == 0 {
        return Ok(false);
    }
    sys::enter_user_namespace().map_err(|e| {
        Fatal(format!(
            "needs root, or unprivileged user namespaces (not root, and unshare(CLONE_NEWUSER) failed: {e}; \
             see /proc/sys/user/max_user_namespaces and kernel.unprivileged_userns_clone)"
        ))
    })?;
    // The children's PID namespaces (spawn_in) are made with unshare and left with setns, which
    // needs CAP_SYS_ADMIN over the PID namespace we return to: the original one is owned by the
    // initial user namespace, so go on as the init of a PID namespace of our own user namespace.
    // The parent stays outside, forwards signals and exits with our status; we die with it.
    sys::unshare_pid().map_err(|e| Fatal(format!("unshare(CLONE_NEWPID) in the user namespace: {e}")))?;
    let pid = sys::fork_single_threaded().map_err(|e| Fatal(format!("fork: {e}")))?;
    if pid == 0 {
        if !sys::set_parent_death_signal(libc::SIGKILL) {
            return Err(Fatal("prctl(PR_SET_PDEATHSIG) failed".into()));
        }
        return Ok(true);
    }
    supervise(pid)
}

/// The parent outside the PID namespace: forward SIGINT/SIGTERM/SIGHUP to the child (the init
/// of that namespace: it takes them through its signalfd) and exit with its status.
fn supervise(child: i32) -> ! {
    let sigfd = match sys::signalfd_for(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD]) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("qoelab link: error: signalfd: {e}");
            sys::kill(child, libc::SIGKILL);
            std::process::exit(2);
        }
    };
    use std::os::fd::AsRawFd;
    let mut sigfile = sigfd.try_clone().unwrap_or_else(|_| std::process::exit(2));
    let mut ready = [false; 1];
    let mut buf = [0u8; 128];
    loop {
        match sys::try_wait_pid(child) {
            Ok(Some(code)) => std::process::exit(code),
            Ok(None) => {}
            Err(_) => std::process::exit(2),
        }
        // A bounded wait: a SIGCHLD that came before the signalfd is seen at the next round.
        let _ = sys::poll_readable(&[sigfd.as_raw_fd()], 100, &mut ready);
        if ready[0] {
            while let Ok(n) = sigfile.read(&mut buf) {
                if n < 4 {
                    break;
                }
                let signo = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as i32;
                if signo != libc::SIGCHLD {
                    sys::kill(child, signo);
                }
            }
        }
    }
}

/// Run the whole thing; returns the exit status (COMMAND's), or a fatal error.
pub fn run(o: &Options) -> Result<i32, Fatal> {
    let userns = privileges()?;
    let mut down = emu::build_direction(o, false).map_err(Fatal)?;
    let mut up = emu::build_direction(o, true).map_err(Fatal)?;
    emu::open_log(&mut down, o).map_err(Fatal)?;
    emu::open_log(&mut up, o).map_err(Fatal)?;
    let slack = sys::set_timer_slack_1ns();
    let fifo = o.rt && sys::try_sched_fifo(50);
    // Signals arrive through a file descriptor polled with the TUNs (the children get an empty
    // mask).
    let sigfd = sys::signalfd_for(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD])
        .map_err(|e| Fatal(format!("signalfd: {e}")))?;
    let home = File::open("/proc/thread-self/ns/net").ok();
    let server = make_side(SERVER_TUN, SERVER_ADDR, CLIENT_NET, false)?;
    let client = make_side(CLIENT_TUN, CLIENT_ADDR, SERVER_NET, true)?;
    if let Some(h) = &home {
        // Best effort: inside a user namespace going back may be refused; the emulator itself
        // needs no network.
        let _ = sys::setns_net(h);
    }
    let env =
        [("MAHIMAHI_BASE", SERVER_ADDR), ("QOELAB_SERVER_ADDR", SERVER_ADDR), ("QOELAB_CLIENT_ADDR", CLIENT_ADDR)];
    let pid_ns = File::open("/proc/self/ns/pid").map_err(|e| Fatal(format!("cannot open own pid namespace: {e}")))?;
    let mut server_child = match &o.server {
        Some(cmd) => Some(spawn(&["/bin/sh".into(), "-c".into(), cmd.clone()], &server.ns, &pid_ns, true, &env)?),
        None => None,
    };
    let command = if o.command.is_empty() {
        vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
    } else {
        o.command.clone()
    };
    let mut client_child = match spawn(&command, &client.ns, &pid_ns, false, &env) {
        Ok(c) => c,
        Err(e) => {
            if let Some(s) = &mut server_child {
                stop(s, true, Duration::from_millis(500));
            }
            return Err(e);
        }
    };

    let Side { tun: mut stun, .. } = server;
    let Side { tun: mut ctun, .. } = client;
    let timer = sys::timerfd_new().map_err(|e| Fatal(format!("timerfd: {e}")))?;
    let mut timer_file = timer.try_clone().map_err(|e| Fatal(format!("timerfd: {e}")))?;
    use std::os::fd::AsRawFd;
    let fds = [stun.as_raw_fd(), ctun.as_raw_fd(), timer.as_raw_fd(), sigfd.as_raw_fd()];
    let mut ready = [false; 4];
    let mut buf = vec![0u8; 65536];
    let mut sigbuf = [0u8; 128];
    let mut sigfile = sigfd;
    let t0 = sys::monotonic_ns();
    let cpu0 = sys::cpu_seconds();
    let mut armed = u64::MAX;
    let mut wakeups: u64 = 0;
    let mut interrupted: Option<i32> = None;
    let status: i32 = loop {
        let deadline = emu::next_deadline(&down, &up);
        if deadline != armed {
            let at = (deadline != qoelab_core::time::NEVER).then(|| t0 + deadline);
            sys::timerfd_set_abs(&timer, at).map_err(|e| Fatal(format!("timerfd_settime: {e}")))?;
            armed = deadline;
        }
        sys::poll_readable(&fds, 200, &mut ready).map_err(|e| Fatal(format!("poll: {e}")))?;
        wakeups += 1;
        let now = sys::monotonic_ns() - t0;
        down.run_due(now, t0, &mut ctun);
        up.run_due(now, t0, &mut stun);
        if ready[0] {
            emu::read_batch(&mut stun, &mut down, now, &mut buf, 256)
                .map_err(|e| Fatal(format!("read from the server-side TUN: {e}")))?;
        }
        if ready[1] {
            emu::read_batch(&mut ctun, &mut up, now, &mut buf, 256)
                .map_err(|e| Fatal(format!("read from the client-side TUN: {e}")))?;
        }
        if ready[2] {
            let _ = timer_file.read(&mut buf[..8]);
            if emu::next_deadline(&down, &up) == armed {
                armed = u64::MAX; // fired: re-arm even if the deadline is unchanged
            }
        }
        if ready[3] {
            while let Ok(n) = sigfile.read(&mut sigbuf) {
                if n < 4 {
                    break;
                }
                let signo = u32::from_ne_bytes([sigbuf[0], sigbuf[1], sigbuf[2], sigbuf[3]]) as i32;
                if signo != libc::SIGCHLD {
                    interrupted = Some(signo);
                }
            }
        }
        if let Some(sig) = interrupted {
            stop(&mut client_child, false, Duration::from_millis(300));
            break 128 + sig;
        }
        if let Ok(Some(s)) = client_child.try_wait() {
            break exit_code(s);
        }
    };
    if let Some(s) = &mut server_child {
        stop(s, true, Duration::from_millis(if interrupted.is_some() { 300 } else { 1000 }));
    }
    let elapsed = sys::monotonic_ns() - t0;
    down.finish(elapsed);
    up.finish(elapsed);
    let cpu = sys::cpu_seconds() - cpu0;
    let json = format!(
        concat!(
            "{{\"duration_s\": {:.3}, \"rtt_ms\": {}, \"sched_fifo\": {}, \"user_namespace\": {}, ",
            "\"timer_slack_1ns\": {}, \"wakeups\": {}, ",
            "\"emulator_cpu_s\": {:.3}, \"server_addr\": \"{}\", \"client_addr\": \"{}\", \"exit_status\": {}, ",
            "\"downlink\": {}, \"uplink\": {}}}\n"
        ),
        elapsed as f64 / 1e9,
        o.rtt as f64 / 1e6,
        fifo,
        userns,
        slack,
        wakeups,
        cpu,
        SERVER_ADDR,
        CLIENT_ADDR,
        status,
        down.json(elapsed),
        up.json(elapsed),
    );
    if let Some(path) = &o.json_stats {
        std::fs::write(path, &json).map_err(|e| Fatal(format!("cannot write {path}: {e}")))?;
    }
    let lat = |d: &Direction| {
        let q = |p| d.lateness.quantile(p).map_or("-".into(), |v| format!("{:.0}", v / 1e3));
        format!("{} p50/p99/max {}/{}/{} us", d.name, q(50.0), q(99.0), d.lateness.max().map_or(0, |m| m / 1000))
    };
    eprintln!(
        "qoelab link: departure lateness {}; {}; SCHED_FIFO {}{}",
        lat(&down),
        lat(&up),
        if fifo { "on" } else { "off" },
        if userns { " (unprivileged: in a user namespace)" } else { "" }
    );
    Ok(status)
}
