//! Every system call that needs `unsafe`, each behind a safe function. Nothing else in the
//! crate uses `unsafe` (the crate denies it; this module alone allows it).
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Create a TUN device (IP packets, no packet-information header) named `name` in the calling
/// thread's network namespace; the returned file is non-blocking. The device lives as long as
/// the file is open.
pub fn tun_open(name: &str) -> io::Result<File> {
    let f = OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK).open("/dev/net/tun")?;
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"));
    }
    // SAFETY: `ifreq` is plain data, all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one `ifreq`, which `ifr` is and outlives the call; the
    // fd is open.
    cvt(unsafe { libc::ioctl(f.as_raw_fd(), libc::TUNSETIFF, &mut ifr as *mut libc::ifreq) })?;
    Ok(f)
}

/// Move the calling thread into a new, anonymous network namespace.
pub fn unshare_net() -> io::Result<()> {
    // SAFETY: unshare takes only flags and touches no memory of ours.
    cvt(unsafe { libc::unshare(libc::CLONE_NEWNET) }).map(|_| ())
}

/// Move the (single-threaded) process into a new user namespace in which it is root: its own
/// uid and gid map to 0, so that it holds CAP_SYS_ADMIN and CAP_NET_ADMIN over the namespaces it
/// creates next. Used when the emulator is not started as root.
pub fn enter_user_namespace() -> io::Result<()> {
    // SAFETY: getuid/getgid have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare takes only flags; CLONE_NEWUSER needs a single-threaded caller, which the
    // callers are (first thing in main) — otherwise the kernel refuses with EINVAL.
    cvt(unsafe { libc::unshare(libc::CLONE_NEWUSER) })?;
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    Ok(())
}

/// Give the next child a new PID namespace (of the current user namespace).
pub fn unshare_pid() -> io::Result<()> {
    // SAFETY: unshare takes only flags and touches no memory of ours.
    cvt(unsafe { libc::unshare(libc::CLONE_NEWPID) }).map(|_| ())
}

/// fork(2): `Ok(0)` in the child, `Ok(pid)` in the parent. Only for a single-threaded caller (the
/// child is a full copy that goes on running Rust code).
pub fn fork_single_threaded() -> io::Result<i32> {
    // SAFETY: the callers call this first thing in main, with one thread and no locks held, so
    // the child's copy of the address space is consistent.
    cvt(unsafe { libc::fork() })
}

/// The exit code of child `pid` if it has ended (128 + signal if killed), without blocking.
pub fn try_wait_pid(pid: i32) -> io::Result<Option<i32>> {
    let mut st: libc::c_int = 0;
    // SAFETY: `st` is a valid, writable int; WNOHANG never blocks.
    let r = cvt(unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) })?;
    if r == 0 {
        return Ok(None);
    }
    Ok(Some(if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        1
    }))
}

/// Move the calling thread into the network namespace `ns` (an open /proc/…/ns/net file).
pub fn setns_net(ns: &File) -> io::Result<()> {
    // SAFETY: setns takes an open fd and a flag; no memory is passed.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

/// CLOCK_MONOTONIC in nanoseconds (the clock of the timerfd).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A non-blocking CLOCK_MONOTONIC timerfd.
pub fn timerfd_new() -> io::Result<File> {
    // SAFETY: timerfd_create takes only flags; on success the returned fd is new and ours alone,
    // so wrapping it in a File (which closes it) is sound.
    let fd = cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
    // SAFETY: see above: `fd` is a fresh descriptor owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Arm the timer for the absolute CLOCK_MONOTONIC time `at` (ns), or disarm it (None).
pub fn timerfd_set_abs(t: &File, at: Option<u64>) -> io::Result<()> {
    let at = at.map(|a| a.max(1)); // 0 would disarm
    let v = at.unwrap_or(0);
    let spec = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec { tv_sec: (v / 1_000_000_000) as _, tv_nsec: (v % 1_000_000_000) as _ },
    };
    // SAFETY: `spec` is a valid itimerspec that outlives the call; the old value is not asked for
    // (null is allowed).
    cvt(unsafe { libc::timerfd_settime(t.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) })
        .map(|_| ())
}

/// Wait until one of `fds` is readable or `timeout_ms` passes; returns the readable flags.
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32, ready: &mut [bool]) -> io::Result<()> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: `p` points to `p.len()` valid pollfd structs, alive and exclusively ours during the call.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            ready.iter_mut().for_each(|r| *r = false);
            return Ok(());
        }
        return Err(e);
    }
    for (r, q) in ready.iter_mut().zip(&p) {
        *r = q.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
    }
    Ok(())
}

/// Timer slack of the calling thread to 1 ns (the default 50 µs is added to poll timeouts).
pub fn set_timer_slack_1ns() -> bool {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) == 0 }
}

/// SCHED_FIFO at `prio` for the calling process if permitted (children start with the normal
/// policy again: SCHED_RESET_ON_FORK); false if refused.
pub fn try_sched_fifo(prio: i32) -> bool {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: `p` is a valid sched_param that outlives the call; pid 0 is the caller.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &p) == 0 }
}

fn sigset(sigs: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initializes it before any other use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &s in sigs {
        // SAFETY: as above; `s` is a signal number.
        unsafe { libc::sigaddset(&mut set, s) };
    }
    set
}

/// The first of `sigs` that is pending for this thread or process: blocked (by `signalfd_for`) and
/// not yet read from the signalfd.
pub fn pending_signal(sigs: &[i32]) -> Option<i32> {
    // SAFETY: sigset_t is plain data; sigpending fills it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t.
    if unsafe { libc::sigpending(&mut set) } != 0 {
        return None;
    }
    // SAFETY: `set` was initialized by sigpending; `s` is a signal number.
    sigs.iter().copied().find(|&s| unsafe { libc::sigismember(&set, s) } == 1)
}

/// Block `sigs` in the calling thread and return a non-blocking signalfd that reports them.
pub fn signalfd_for(sigs: &[i32]) -> io::Result<File> {
    for &s in sigs {
        // A signal ignored since exec (a command started in the background by a non-interactive
        // shell ignores SIGINT) would never reach the signalfd: back to the default action, which
        // cannot run while the signal is blocked.
        // SAFETY: SIG_DFL is a valid disposition for these signals; no handler code is installed.
        unsafe { libc::signal(s, libc::SIG_DFL) };
    }
    let set = sigset(sigs);
    // SAFETY: `set` is an initialized sigset_t; the old mask is not asked for (null allowed).
    cvt(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
    // SAFETY: `set` is initialized; -1 asks for a new fd, which is ours alone on success.
    let fd = cvt(unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Spawn `cmd` inside the network namespace `ns`, with SIGKILL as its parent-death signal and an
/// empty signal mask. With `own_pid_ns` (this process's /proc/self/ns/pid) the child is the init
/// of a new PID namespace, so that when it dies (its parent-death signal included) the kernel
/// kills every process it started: nothing it spawned can outlive the emulator.
pub fn spawn_in(cmd: &mut Command, ns: &File, own_pid_ns: Option<&File>) -> io::Result<Child> {
    let nsfd = ns.as_raw_fd();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let new_pid_ns = own_pid_ns.is_some();
    // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe
    // system calls (prctl, getppid, raise, setns, pthread_sigmask, sigemptyset on a local) with
    // valid arguments; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The emulator died before the death signal was set up (in a new PID namespace the
            // parent is outside it and getppid() is 0: no check there).
            if !new_pid_ns && libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            if libc::setns(nsfd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            Ok(())
        })
    };
    if let Some(own) = own_pid_ns {
        // SAFETY: unshare takes only flags; it changes the PID namespace of our next child.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWPID) })?;
        let r = cmd.spawn();
        // SAFETY: setns takes an open fd and a flag; joining our own PID namespace again makes
        // later children ordinary ones (and allows the next unshare).
        let back = cvt(unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWPID) });
        let child = r?;
        back?;
        return Ok(child);
    }
    cmd.spawn()
}

/// Send `sig` to the process (pid > 0) or process group (pid < 0).
pub fn kill(pid: i32, sig: i32) -> bool {
    // SAFETY: kill takes integers only.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Effective user id.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// User + system CPU time of this process, seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time (user + system) of the calling thread, seconds.
pub fn thread_cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Wait until one of `fds` has an event it asks for or `timeout_ms` passes (EINTR: no event).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<()> {
    // SAFETY: `fds` points to `fds.len()` valid pollfd structs, alive and exclusively ours during
    // the call.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            fds.iter_mut().for_each(|p| p.revents = 0);
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

/// Set the congestion controller of a TCP socket (`TCP_CONGESTION`).
pub fn set_tcp_congestion(fd: RawFd, cc: &str) -> io::Result<()> {
    // SAFETY: the option value is `cc.len()` readable bytes that outlive the call; `fd` is an
    // open socket (an invalid fd only makes the call fail).
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr() as *const libc::c_void,
            cc.len() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// A non-blocking TCP socket (in the calling thread's network namespace), its congestion
/// controller set to `cc` before the handshake, connecting to `addr` (the connect completes
/// later: poll for writability).
pub fn tcp_connect_nb(addr: std::net::SocketAddrV4, cc: &str) -> io::Result<std::net::TcpStream> {
    // SAFETY: socket takes only integers; on success the fd is new and ours alone.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` is a fresh descriptor owned by nobody else; the stream closes it.
    let s = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    set_tcp_congestion(fd, cc)?;
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: `sa` is a valid sockaddr_in whose size is passed; it outlives the call.
    let r = unsafe {
        libc::connect(fd, &sa as *const libc::sockaddr_in as *const libc::sockaddr, std::mem::size_of_val(&sa) as u32)
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(s)
}

/// `getsockopt(TCP_INFO)` of a TCP socket into `buf`; returns the bytes the kernel filled in.
pub fn tcp_info_raw(fd: RawFd, buf: &mut [u8; 232]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes and `len` is a valid, writable socklen_t; both
    // outlive the call.
    cvt(unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr() as *mut libc::c_void, &mut len)
    })?;
    Ok(len as usize)
}

/// Set an integer TCP-level socket option (e.g. `TCP_NOTSENT_LOWAT`).
pub fn set_tcp_int(fd: RawFd, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: the option value is one readable c_int that outlives the call; `fd` is an open
    // socket (an invalid fd only makes the call fail).
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            opt,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Ask for `sig` when the parent process (the thread that started this one) dies; false if the
/// parent is no longer `parent` (it died before the request took effect).
/// Receive `sig` when the parent dies, without the check of `die_with_parent` (a child that is
/// the init of a new PID namespace sees getppid() = 0).
pub fn set_parent_death_signal(sig: i32) -> bool {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) == 0 }
}

pub fn die_with_parent(parent: u32, sig: i32) -> bool {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number; no memory is passed.
    let ok = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) } == 0;
    // SAFETY: getppid has no preconditions and cannot fail.
    ok && unsafe { libc::getppid() } as u32 == parent
}
