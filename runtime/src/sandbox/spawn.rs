//! The fork/exec path of one solver run: everything that runs in the child
//! between `fork` and `exec`, and the small processes that watch the solver.
//!
//! Process layout with a PID namespace (the whole-tree level):
//!
//! ```text
//! server ── monitor (P) ── init (C, pid 1 of a new PID namespace) ── solver (G)
//! ```
//!
//! * The **monitor** is the process the server's `tokio::process::Child`
//!   owns. It `unshare`s a user + PID namespace, forks the init, closes every
//!   descriptor except its control pipe and waits. When the control pipe
//!   hangs up (the server dropped its end: timeout, cancellation, drop of the
//!   run, or the server died), it sends `SIGKILL` to the init. The init is its
//!   unreaped child, so that pid cannot have been reused.
//! * The **init** is pid 1 of the namespace: it forks the solver, reaps every
//!   process of the namespace, and when the solver exits it writes one
//!   fixed-size [`ExitRecord`] to the status pipe and exits. When pid 1 of a
//!   PID namespace exits, for whatever reason, the kernel kills every process
//!   in it, including grandchildren that called `setsid` and double-forked.
//! * The **solver** hardens itself (`setsid`, `fchdir` to the run directory,
//!   rlimits, no-new-privs, Landlock, `close_range(CLOEXEC)`) and returns to
//!   the standard library, which `exec`s the solver executable.
//!
//! Without a PID namespace (the process-group level) the monitor forks the
//! solver directly, kills its process group, and writes the exit record
//! itself; a descendant that calls `setsid` escapes that kill.
//!
//! Everything the child side touches is prepared before the fork
//! ([`ChildPlan`]): the code after the fork only makes system calls on
//! values it already holds, never allocates and never takes a lock. The
//! nested forks are raw `clone(SIGCHLD)` system calls, which do not run the C
//! library's `atfork` handlers (those take allocator locks that another
//! server thread may have held at the moment of the first fork).

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Exit code of a monitor or init that lost track of its child (a kernel
/// error that should not happen); the server treats the run as failed.
const EXIT_LOST_CHILD: libc::c_int = 125;

/// Exit code of a freshly forked init or solver whose parent had already
/// died when it armed `PR_SET_PDEATHSIG` (so no signal would ever come).
const EXIT_PARENT_GONE: libc::c_int = 124;

/// How often the monitor polls its child when `pidfd_open` is unavailable.
const POLL_FALLBACK_MS: libc::c_int = 10;

/// Length of an encoded [`ExitRecord`] on the status pipe.
pub(crate) const RECORD_LEN: usize = 24;
const RECORD_MAGIC: u32 = 0x5342_5852;

/// How the solver ended, as its parent (init or monitor) saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExitRecord {
    /// The raw `wait` status of the solver process.
    pub(crate) wait_status: i32,
    /// User + system CPU time of the solver and every descendant reaped
    /// before it exited.
    pub(crate) cpu: Duration,
}

impl ExitRecord {
    fn encode(wait_status: i32, cpu_us: u64) -> [u8; RECORD_LEN] {
        let mut out = [0u8; RECORD_LEN];
        out[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&wait_status.to_le_bytes());
        out[8..16].copy_from_slice(&cpu_us.to_le_bytes());
        out
    }

    /// Decodes a record; `None` unless `buf` is exactly one well-formed record.
    pub(crate) fn decode(buf: &[u8]) -> Option<Self> {
        let buf: &[u8; RECORD_LEN] = buf.try_into().ok()?;
        let magic = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if magic != RECORD_MAGIC {
            return None;
        }
        let wait_status = i32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
        let mut us = [0u8; 8];
        us.copy_from_slice(&buf[8..16]);
        Some(Self {
            wait_status,
            cpu: Duration::from_micros(u64::from_le_bytes(us)),
        })
    }
}

/// Resource limits as ready-made `rlimit` values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RlimitPlan {
    pub(crate) cpu: libc::rlimit,
    pub(crate) file_size: libc::rlimit,
    pub(crate) open_files: libc::rlimit,
    pub(crate) address_space: Option<libc::rlimit>,
}

impl RlimitPlan {
    /// Soft CPU limit `cpu_s` seconds (the solver gets `SIGXCPU`), hard limit
    /// one second later (`SIGKILL`); the others are soft = hard.
    pub(crate) fn new(
        cpu_s: u64,
        file_size: u64,
        open_files: u64,
        address_space: Option<u64>,
    ) -> Self {
        let same = |v: u64| libc::rlimit {
            rlim_cur: v as libc::rlim_t,
            rlim_max: v as libc::rlim_t,
        };
        Self {
            cpu: libc::rlimit {
                rlim_cur: cpu_s as libc::rlim_t,
                rlim_max: cpu_s.saturating_add(1) as libc::rlim_t,
            },
            file_size: same(file_size),
            open_files: same(open_files),
            address_space: address_space.map(same),
        }
    }
}

/// Everything the child side needs, prepared (opened, computed) before the
/// fork. Owned by the `pre_exec` closure; the descriptors close in the
/// server when the command is dropped after the spawn.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    /// The run directory; the solver `fchdir`s to it.
    pub(crate) run_dir: OwnedFd,
    /// A created Landlock ruleset, or `None` where Landlock is unavailable.
    pub(crate) ruleset: Option<OwnedFd>,
    /// Read end of the control pipe; it hangs up when the server wants the
    /// tree dead.
    pub(crate) control: OwnedFd,
    /// Write end of the status pipe that carries the [`ExitRecord`].
    pub(crate) status: OwnedFd,
    /// Whether to contain the tree in a new user + PID namespace.
    pub(crate) pid_namespace: bool,
    /// The solver's rlimits.
    pub(crate) rlimits: RlimitPlan,
}

/// Installs the child-side code of `plan` on `cmd`.
pub(crate) fn install(cmd: &mut tokio::process::Command, plan: ChildPlan) {
    // SAFETY: the closure runs in the child between fork and exec. It only
    // makes async-signal-safe system calls on values owned by `plan`, which
    // was fully prepared before the fork; it allocates nothing and takes no
    // lock (`io::Error::last_os_error` and `from_raw_os_error` build an
    // errno-carrying value without allocating). Processes that must not
    // return to the standard library (monitor, init, and a child whose
    // parent died before it armed `PR_SET_PDEATHSIG`) end in `_exit`.
    unsafe {
        cmd.pre_exec(move || child_main(&plan));
    }
}

fn child_main(plan: &ChildPlan) -> io::Result<()> {
    reset_signals();
    // The monitor and init hold a copy of the server's memory: make them
    // non-dumpable so nothing at our uid can read it through /proc or
    // ptrace. `execve` resets this for the solver.
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) })?;
    if plan.pid_namespace {
        // SAFETY: unshare with constant flags; this process has one thread.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) })?;
    }
    // With a PID namespace the child is pid 1 of it, and its parent (this
    // process) is outside: its `getppid()` is 0 whether we live or not.
    let watch = ParentWatch::prepare(plan.pid_namespace)?;
    let pid = raw_fork()?;
    if pid > 0 {
        monitor(pid, plan, watch.parent());
    }
    watch.child()?;
    if plan.pid_namespace {
        // This process is pid 1 of the new namespace.
        let watch = ParentWatch::prepare(false)?;
        let pid = raw_fork()?;
        if pid > 0 {
            init(pid, plan, watch.parent());
        }
        watch.child()?;
    }
    harden(plan)
}

/// Lets a freshly forked child tell whether its parent was still alive when
/// the child armed `PR_SET_PDEATHSIG`: a parent that dies between the fork
/// and the `prctl` sends no signal, and the child would live on unwatched.
/// Prepared (pipe created, pid recorded) before the fork; both sides then
/// only make system calls.
#[derive(Debug, Clone, Copy)]
struct ParentWatch {
    /// What the child's `getppid()` returns while the parent lives: the
    /// parent's pid, or 0 when the child is pid 1 of a new PID namespace.
    ppid: libc::pid_t,
    /// Read end of a pipe whose only write end the parent keeps open until
    /// it exits: it hangs up when the parent dies, namespaces or not.
    alive_rd: RawFd,
    alive_wr: RawFd,
}

impl ParentWatch {
    /// Before the fork. `child_is_ns_init`: the child will be pid 1 of a PID
    /// namespace that this process created (`getppid()` tells it nothing).
    fn prepare(child_is_ns_init: bool) -> io::Result<Self> {
        let mut fds: [libc::c_int; 2] = [-1, -1];
        // SAFETY: pipe2 writes two descriptors into a live local array.
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
        let ppid = if child_is_ns_init {
            0
        } else {
            // SAFETY: getpid takes no arguments and cannot fail.
            unsafe { libc::getpid() }
        };
        Ok(Self {
            ppid,
            alive_rd: fds[0],
            alive_wr: fds[1],
        })
    }

    /// In the parent after the fork: the write end, to keep open until exit.
    fn parent(self) -> RawFd {
        close_fd(self.alive_rd);
        self.alive_wr
    }

    /// In the child after the fork: arms `PR_SET_PDEATHSIG`, then `_exit`s if
    /// the parent is already gone (re-parented, or its pipe end closed).
    fn child(self) -> io::Result<()> {
        close_fd(self.alive_wr);
        // SAFETY: prctl with integer arguments.
        cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })?;
        // The parent closes its descriptors before the kernel looks for
        // children to signal; order our prctl before the checks below.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let gone = self.parent_gone();
        close_fd(self.alive_rd);
        if gone {
            exit(EXIT_PARENT_GONE);
        }
        Ok(())
    }

    fn parent_gone(&self) -> bool {
        // SAFETY: getppid takes no arguments and cannot fail.
        if unsafe { libc::getppid() } != self.ppid {
            return true;
        }
        let mut fd = libc::pollfd {
            fd: self.alive_rd,
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: `fd` is a live pollfd; timeout 0 never blocks.
            let n = unsafe { libc::poll(&mut fd, 1, 0) };
            if n >= 0 {
                // Nobody writes to the pipe: any event is the hang-up.
                return n > 0 && fd.revents != 0;
            }
            if !interrupted() {
                // Cannot tell: assume the worst rather than run unwatched.
                return true;
            }
        }
    }
}

/// The solver's own hardening, last step before `exec`.
fn harden(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: each call takes integers or pointers to values owned by `plan`
    // that outlive the call.
    unsafe {
        cvt(libc::setsid())?;
        cvt(libc::fchdir(plan.run_dir.as_raw_fd()))?;
        let r = &plan.rlimits;
        cvt(libc::setrlimit(
            libc::RLIMIT_CORE,
            &libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            },
        ))?;
        cvt(libc::setrlimit(libc::RLIMIT_CPU, &r.cpu))?;
        cvt(libc::setrlimit(libc::RLIMIT_FSIZE, &r.file_size))?;
        cvt(libc::setrlimit(libc::RLIMIT_NOFILE, &r.open_files))?;
        if let Some(a) = &r.address_space {
            cvt(libc::setrlimit(libc::RLIMIT_AS, a))?;
        }
        cvt(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        if let Some(ruleset) = &plan.ruleset {
            cvt_long(libc::syscall(
                libc::SYS_landlock_restrict_self,
                ruleset.as_raw_fd(),
                0,
            ))?;
        }
        cvt_long(libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ))?;
    }
    Ok(())
}

/// The monitor: waits for its child, kills the tree when the control pipe
/// hangs up. Never returns.
/// `alive` is the write end of the child's [`ParentWatch`] pipe.
fn monitor(child: libc::pid_t, plan: &ChildPlan, alive: RawFd) -> ! {
    let control = plan.control.as_raw_fd();
    let status = if plan.pid_namespace {
        -1
    } else {
        plan.status.as_raw_fd()
    };
    close_all_except([control, status, alive]);
    // SAFETY: pidfd_open with integer arguments; a failure returns -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child, 0) } as RawFd;
    let mut killed = false;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: if killed { -1 } else { control },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let timeout = if pidfd < 0 { POLL_FALLBACK_MS } else { -1 };
        // SAFETY: `fds` is a live array of two pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if n < 0 && !interrupted() && !killed {
            kill_tree(child, plan.pid_namespace);
            killed = true;
        }
        if !killed && fds[0].revents != 0 {
            kill_tree(child, plan.pid_namespace);
            killed = true;
        }
        let mut ws: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pointers to live locals.
        let r = unsafe { libc::wait4(child, &mut ws, libc::WNOHANG, &mut ru) };
        if r == child {
            if !plan.pid_namespace {
                // Stragglers of the solver's process group; the group id
                // stays reserved while any member is alive.
                // SAFETY: kill with integer arguments.
                unsafe { libc::kill(-child, libc::SIGKILL) };
                // After a kill the server reports the run as killed: no
                // record, as in the namespace case.
                if !killed {
                    write_record(status, ws, rusage_us(&ru));
                }
            }
            exit(0);
        }
        if r < 0 && !interrupted() {
            exit(EXIT_LOST_CHILD);
        }
    }
}

/// Pid 1 of the namespace: reaps everything, reports the solver's end.
/// `alive` is the write end of the solver's [`ParentWatch`] pipe.
fn init(solver: libc::pid_t, plan: &ChildPlan, alive: RawFd) -> ! {
    let status = plan.status.as_raw_fd();
    close_all_except([status, alive, -1]);
    let mut cpu_us: u64 = 0;
    loop {
        let mut ws: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pointers to live locals.
        let r = unsafe { libc::wait4(-1, &mut ws, 0, &mut ru) };
        if r > 0 {
            cpu_us = cpu_us.saturating_add(rusage_us(&ru));
            if r == solver {
                write_record(status, ws, cpu_us);
                // Exiting pid 1 kills whatever the solver left behind.
                exit(0);
            }
        } else if !interrupted() {
            exit(EXIT_LOST_CHILD);
        }
    }
}

fn kill_tree(child: libc::pid_t, pid_namespace: bool) {
    // SAFETY: kill with integer arguments. `child` is our unreaped child, so
    // its pid (and, after its setsid, its process-group id) is not reused.
    unsafe {
        if !pid_namespace {
            libc::kill(-child, libc::SIGKILL);
        }
        libc::kill(child, libc::SIGKILL);
    }
}

fn write_record(fd: RawFd, wait_status: libc::c_int, cpu_us: u64) {
    if fd < 0 {
        return;
    }
    let rec = ExitRecord::encode(wait_status, cpu_us);
    // SAFETY: writes from a live stack buffer. A record is smaller than
    // PIPE_BUF, so the write is atomic; a failure leaves no record, which
    // the server reads as "killed".
    unsafe { libc::write(fd, rec.as_ptr().cast(), rec.len()) };
}

fn rusage_us(ru: &libc::rusage) -> u64 {
    let tv = |t: &libc::timeval| {
        (t.tv_sec.max(0) as u64)
            .saturating_mul(1_000_000)
            .saturating_add(t.tv_usec.max(0) as u64)
    };
    tv(&ru.ru_utime).saturating_add(tv(&ru.ru_stime))
}

/// Closes every descriptor except the (at most three) given ones; `-1`
/// entries are ignored.
fn close_all_except(mut keep: [RawFd; 3]) {
    // In-place sort of a fixed array: no allocation.
    keep.sort_unstable();
    let mut low: libc::c_uint = 0;
    for k in keep {
        let Ok(k) = libc::c_uint::try_from(k) else {
            continue;
        };
        if k > low {
            close_range(low, k - 1);
        }
        low = k.saturating_add(1);
    }
    close_range(low, libc::c_uint::MAX);
}

fn close_fd(fd: RawFd) {
    // SAFETY: close of a descriptor this process owns and no longer uses.
    unsafe { libc::close(fd) };
}

fn close_range(first: libc::c_uint, last: libc::c_uint) {
    // SAFETY: close_range with integer arguments; the only descriptors this
    // process still needs are outside the range.
    unsafe { libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint) };
}

/// Restores the default disposition of every signal and an empty mask: the
/// server's handlers (tokio's SIGCHLD handler writes to a descriptor number
/// that may be reused here) must not run in the monitor or init.
fn reset_signals() {
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: an all-zero sigaction is SIG_DFL with an empty mask;
        // signals that cannot be changed just return an error.
        unsafe {
            let sa: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    // SAFETY: pointers to a live local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// `fork` as a raw `clone(SIGCHLD)`: no `atfork` handlers run.
fn raw_fork() -> io::Result<libc::pid_t> {
    // SAFETY: clone with only the exit signal and a null stack duplicates the
    // calling (single) thread like fork; the child continues on its own copy
    // of the stack and only makes system calls.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    cvt_long(r).map(|p| p as libc::pid_t)
}

fn exit(code: libc::c_int) -> ! {
    // SAFETY: _exit never returns and runs no destructors or handlers.
    unsafe { libc::_exit(code) }
}

fn interrupted() -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_long(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Whether this host lets an unprivileged-capable process create a user +
/// PID namespace and fork pid 1 in it. Runs the check in a throwaway child.
pub(crate) fn probe_pid_namespace() -> bool {
    let Ok(pid) = raw_fork() else {
        return false;
    };
    if pid == 0 {
        // Child of a possibly multithreaded process: system calls only.
        // SAFETY: unshare with constant flags in a single-threaded child.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) } != 0 {
            exit(1);
        }
        match raw_fork() {
            Ok(0) => exit(0),
            Ok(g) => {
                let mut ws: libc::c_int = 0;
                // SAFETY: pointer to a live local.
                let r = unsafe { libc::waitpid(g, &mut ws, 0) };
                exit(if r == g && ws == 0 { 0 } else { 2 });
            }
            Err(_) => exit(3),
        }
    }
    let mut ws: libc::c_int = 0;
    loop {
        // SAFETY: pointer to a live local; `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut ws, 0) };
        if r == pid {
            return ws == 0;
        }
        if !interrupted() {
            return false;
        }
    }
}

/// The Landlock ABI version the kernel offers, 0 when Landlock is absent or
/// disabled.
pub(crate) fn landlock_abi() -> u32 {
    // SAFETY: the documented version query: null attributes, size 0,
    // LANDLOCK_CREATE_RULESET_VERSION.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    u32::try_from(v).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips_and_rejects_garbage() {
        let r = ExitRecord::encode(0x0900, 1_234_567);
        assert_eq!(
            ExitRecord::decode(&r),
            Some(ExitRecord {
                wait_status: 0x0900,
                cpu: Duration::from_micros(1_234_567)
            })
        );
        assert_eq!(ExitRecord::decode(&r[..RECORD_LEN - 1]), None);
        let mut bad = r;
        bad[0] ^= 1;
        assert_eq!(ExitRecord::decode(&bad), None);
    }

    /// Stages the parent-death race on purpose: a middle process prepares a
    /// [`ParentWatch`] and forks; when `parent_dies` it exits at once, while
    /// its child waits 200 ms before arming `PR_SET_PDEATHSIG`. The child
    /// reports on a pipe when it got past [`ParentWatch::child`]. Returns
    /// whether it did. `ns_init`: the child is pid 1 of a new PID namespace,
    /// as the init is.
    fn child_goes_on(parent_dies: bool, ns_init: bool) -> bool {
        let mut report: [libc::c_int; 2] = [-1, -1];
        // SAFETY: pipe2 into a live local array.
        assert_eq!(
            unsafe { libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) },
            0
        );
        let [rd, wr] = report;
        let middle = raw_fork().unwrap();
        if middle == 0 {
            // Child of a multithreaded test process: system calls only.
            // SAFETY: unshare with constant flags in a single-threaded child.
            if ns_init && unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) } != 0 {
                exit(90);
            }
            let Ok(watch) = ParentWatch::prepare(ns_init) else {
                exit(91);
            };
            match raw_fork() {
                Ok(0) => {
                    let pause = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 200_000_000,
                    };
                    // SAFETY: pointer to a live local; no remainder wanted.
                    unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
                    if watch.child().is_err() {
                        exit(92);
                    }
                    // SAFETY: write from a live one-byte buffer.
                    unsafe { libc::write(wr, b"S".as_ptr().cast(), 1) };
                    exit(0);
                }
                Ok(child) => {
                    let _alive = watch.parent();
                    if !parent_dies {
                        let mut ws = 0;
                        // SAFETY: pointer to a live local.
                        unsafe { libc::waitpid(child, &mut ws, 0) };
                    }
                    exit(0);
                }
                Err(_) => exit(93),
            }
        }
        close_fd(wr);
        let mut ws = 0;
        // SAFETY: pointer to a live local; `middle` is our child.
        assert_eq!(unsafe { libc::waitpid(middle, &mut ws, 0) }, middle);
        assert_eq!(ws, 0, "middle process failed: {ws:#x}");
        let mut fd = libc::pollfd {
            fd: rd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: a live pollfd. Readable on the report byte or on EOF (the
        // child exited).
        assert_eq!(unsafe { libc::poll(&mut fd, 1, 5_000) }, 1, "no answer");
        let mut b = [0u8; 1];
        // SAFETY: read into a live one-byte buffer.
        let n = unsafe { libc::read(rd, b.as_mut_ptr().cast(), 1) };
        close_fd(rd);
        n == 1 && b == *b"S"
    }

    #[test]
    fn child_of_a_parent_that_died_before_pdeathsig_exits() {
        assert!(!child_goes_on(true, false), "orphan went on unwatched");
        // Control: the same child, whose parent lives, goes on.
        assert!(child_goes_on(false, false));
    }

    #[test]
    fn namespace_init_whose_parent_died_before_pdeathsig_exits() {
        if !probe_pid_namespace() {
            eprintln!("no user + PID namespaces on this host; nothing to check");
            return;
        }
        // getppid() of a namespace's pid 1 is 0 either way: only the pipe
        // can tell.
        assert!(!child_goes_on(true, true), "orphan init went on unwatched");
        assert!(child_goes_on(false, true));
    }
}
