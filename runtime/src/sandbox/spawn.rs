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
//!   owns. It moves its working directory to the run directory (by
//!   descriptor), `unshare`s a user + PID (+ mount, for the file-system
//!   view) namespace, maps the solver's ids in it, starts the init, closes
//!   every descriptor except its control pipe and waits. When the control pipe
//!   carries the [`KILL_WORD`] or hangs up (timeout, cancellation, a disk
//!   limit passed, drop of the run, or the server died), it sends `SIGKILL`
//!   to the init. The init is its
//!   unreaped child, so that pid cannot have been reused.
//! * The **init** is pid 1 of the namespace: it builds the private
//!   file-system view and enters it ([`view`](super::view)), starts the
//!   solver and reaps every process of the namespace. When the solver
//!   exits, it kills every other process of the namespace (grandchildren
//!   that called `setsid` and double-forked included), reaps them all, and
//!   only then writes one fixed-size [`ExitRecord`] to the status pipe and
//!   exits: the record means the whole tree is dead, and the server answers
//!   on it. When pid 1 of a PID namespace exits for any other reason (the
//!   monitor's kill), the kernel kills every process in it.
//! * The **solver** hardens itself (`setsid`, working directory in the run
//!   directory, rlimits, no-new-privs, no capabilities, Landlock,
//!   `close_range(CLOEXEC)`, the seccomp filter last) and `exec`s the solver
//!   executable from a descriptor (`execveat(AT_EMPTY_PATH)`): the file
//!   checked at registration, never a path looked up again.
//!
//! Without a PID namespace (the process-group level) the monitor forks the
//! solver directly, kills its process group, and writes the exit record
//! itself; a descendant that calls `setsid` escapes that kill.
//!
//! Everything the child side touches is prepared before the fork
//! ([`ChildPlan`]): the code after the fork only makes system calls on
//! values it already holds, never allocates and never takes a lock. The
//! server's fork of the monitor is the only copy of the server's memory a
//! launch makes. The init is started with `clone(CLONE_VM)` on a stack
//! mapped before that fork ([`CloneStack`]): it shares the monitor's memory
//! (a private, non-dumpable copy of the server's) for its whole life, so
//! that copy is neither copied again nor torn down twice; the two run side
//! by side, and the monitor then keeps off the C library's per-thread
//! state ([`spawn_init`]). The solver is started with
//! `clone(CLONE_VM | CLONE_VFORK)` on another such stack: it shares its
//! parent's memory until its `exec`, while the parent waits.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions};

use super::landlock::ViewRules;
use super::netns::NetNs;
use super::seccomp::Filter;
use super::view::{self, RunMounts, ViewPlan};

/// Exit code of a monitor or init that lost track of its child (a kernel
/// error that should not happen); the server treats the run as failed.
const EXIT_LOST_CHILD: libc::c_int = 125;

/// Exit code of a solver that could not harden itself or `exec`.
const EXIT_SPAWN_FAILED: libc::c_int = 127;

/// Exit code of a freshly forked init or solver whose parent had already
/// died when it armed `PR_SET_PDEATHSIG` (so no signal would ever come).
const EXIT_PARENT_GONE: libc::c_int = 124;

/// What the server writes on a run's control pipe to have the tree killed
/// (any byte, or the pipe's hang-up, does; this is the one it writes).
pub(crate) const KILL_WORD: u8 = b'k';

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
    /// User + system CPU time of the solver and of every descendant its
    /// parent reaped: with a PID namespace, every process of the run (the
    /// init kills and reaps what the solver left before it reports).
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

/// Resource limits as ready-made values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RlimitPlan {
    pub(crate) cpu: (u64, u64),
    pub(crate) file_size: u64,
    pub(crate) open_files: u64,
    pub(crate) address_space: Option<u64>,
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
        Self {
            cpu: (cpu_s, cpu_s.saturating_add(1)),
            file_size,
            open_files,
            address_space,
        }
    }
}

/// A null-terminated array of C strings (an `argv` or `envp`), built before
/// the fork so that the child only passes its pointer to `execveat`.
pub(crate) struct CStrArray {
    _strings: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into the heap buffers of `_strings`, owned by
// the same value and never mutated or moved out; sharing or sending the
// value shares or sends those buffers with them.
unsafe impl Send for CStrArray {}
// SAFETY: as above; the value is never mutated after construction.
unsafe impl Sync for CStrArray {}

impl std::fmt::Debug for CStrArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CStrArray({} entries)",
            self.ptrs.len().saturating_sub(1)
        )
    }
}

impl CStrArray {
    /// `None` when an entry holds a NUL byte.
    pub(crate) fn new<I, S>(items: I) -> Option<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let strings = items
            .into_iter()
            .map(|s| CString::new(s.as_ref().as_bytes()).ok())
            .collect::<Option<Vec<_>>>()?;
        let mut ptrs: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        Some(Self {
            _strings: strings,
            ptrs,
        })
    }

    fn as_ptr(&self) -> *const *const libc::c_char {
        self.ptrs.as_ptr()
    }
}

/// What the solver `exec`s, prepared before the fork.
#[derive(Debug)]
pub(crate) struct ExecPlan {
    /// Argument vector (`argv[0]` is the solver id).
    pub(crate) argv: CStrArray,
    /// The complete environment.
    pub(crate) envp: CStrArray,
}

/// The private file-system view of a run.
#[derive(Debug)]
pub(crate) struct ViewChild {
    /// The solver's view, shared by its runs.
    pub(crate) plan: Arc<ViewPlan>,
    /// This run's mounts.
    pub(crate) run: RunMounts,
    /// The Landlock rules the solver adds inside the view.
    pub(crate) rules: ViewRules,
    /// A fresh network namespace made ahead by the pool, which the monitor
    /// enters instead of creating one (`None`: it creates one, when the
    /// view has a private network).
    pub(crate) net: Option<NetNs>,
}

/// The user namespace's id maps, as written to `/proc/self/{uid,gid}_map`.
#[derive(Debug)]
pub(crate) struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdMaps {
    /// Maps the solver's ids ([`view::SOLVER_UID`], [`view::SOLVER_GID`])
    /// to the server's effective ids, one id each.
    pub(crate) fn for_server() -> Self {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Self {
            uid_map: format!("{} {uid} 1\n", view::SOLVER_UID).into_bytes(),
            gid_map: format!("{} {gid} 1\n", view::SOLVER_GID).into_bytes(),
        }
    }
}

/// Everything the child side needs, prepared (opened, computed) before the
/// fork. Owned by the `pre_exec` closure; the descriptors close in the
/// server when the command is dropped after the spawn.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    /// The run directory: the monitor's working directory (so that the
    /// view can clone it without a path), and the solver's when there is no
    /// view.
    pub(crate) run_dir: OwnedFd,
    /// The solver executable opened at registration (`O_PATH`): `exec`'d
    /// directly without the view; with it, the view's copy is checked
    /// against it (device and inode).
    pub(crate) solver: OwnedFd,
    /// A created Landlock ruleset, or `None` where Landlock is unavailable.
    pub(crate) ruleset: Option<OwnedFd>,
    /// Read end of the control pipe; it carries the [`KILL_WORD`] or hangs
    /// up when the server wants the tree dead.
    pub(crate) control: OwnedFd,
    /// Write end of the status pipe that carries the [`ExitRecord`].
    pub(crate) status: OwnedFd,
    /// Write end of the pipe on which the monitor says, with one byte,
    /// that it has reaped its child: the whole tree is dead. The server
    /// answers then, and reaps the monitor (whose exit tears the run's
    /// namespaces down) in the background.
    pub(crate) reaped: OwnedFd,
    /// The join files of the run's cgroup (`tasks` of each v1 hierarchy, or
    /// the one v2 `cgroup.procs`), opened for writing: the monitor joins them
    /// first, so that every process of the run is born in the run's cgroup.
    pub(crate) cgroup: Vec<OwnedFd>,
    /// Whether to contain the tree in a new user + PID namespace.
    pub(crate) pid_namespace: bool,
    /// The id maps of that namespace.
    pub(crate) id_maps: IdMaps,
    /// The private file-system view (with the PID namespace only).
    pub(crate) view: Option<ViewChild>,
    /// The seccomp filter, installed last before `exec`.
    pub(crate) seccomp: Option<Arc<Filter>>,
    /// The solver's rlimits.
    pub(crate) rlimits: RlimitPlan,
    /// What to `exec`.
    pub(crate) exec: ExecPlan,
    /// The stacks the init and the solver run on (see [`spawn_init`] and
    /// [`spawn_solver`]): the sandbox's one mapping.
    pub(crate) stacks: Arc<CloneStack>,
    /// Where the server's argument and environment strings lie, which the
    /// monitor zeroes in its copy ([`hide_server`]).
    pub(crate) server: ServerStrings,
}

/// The name (`comm`) of a run's monitor, in place of the server's.
const MONITOR_NAME: &CStr = c"sandbox-monitor";

/// The name (`comm`) of a run's init, pid 1 of its PID namespace.
const INIT_NAME: &CStr = c"sandbox-init";

/// Where the server's argument and environment strings lie in its memory
/// (`arg_start`, `arg_end`, `env_start`, `env_end`: fields 48 to 51 of
/// `/proc/self/stat`): what the kernel shows as `/proc/<pid>/cmdline` and
/// `environ` of the server and of every process that copied its memory
/// without `exec`ing (a run's monitor, and its init, which shares the
/// monitor's copy). Read once, by [`Sandbox::new`](super::Sandbox::new):
/// a process's strings do not move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerStrings {
    args: (usize, usize),
    env: (usize, usize),
}

impl ServerStrings {
    /// This process's, each range checked to lie within one of its
    /// writable mappings (`/proc/self/maps`): the monitor writes over its
    /// copy of them.
    pub(crate) fn of_this_process() -> io::Result<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat")?;
        let maps = std::fs::read_to_string("/proc/self/maps")?;
        Self::parse(&stat, &maps).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))
    }

    fn parse(stat: &str, maps: &str) -> Option<Self> {
        // The name (field 2) may hold spaces and parentheses: field 3 is
        // the first after the last `)`.
        let rest = stat.rsplit_once(')')?.1;
        let mut fields = rest
            .split_whitespace()
            .skip(48 - 3)
            .map(str::parse::<usize>);
        let mut next = || fields.next()?.ok();
        let strings = Self {
            args: (next()?, next()?),
            env: (next()?, next()?),
        };
        let writable = |(start, end): (usize, usize)| {
            start == end
                || (start < end
                    && maps.lines().any(|line| {
                        let mut cols = line.split_whitespace();
                        let range = cols.next().and_then(|r| r.split_once('-'));
                        let rw = cols.next().is_some_and(|p| p.starts_with("rw"));
                        range.is_some_and(|(lo, hi)| {
                            let lo = usize::from_str_radix(lo, 16);
                            let hi = usize::from_str_radix(hi, 16);
                            rw && lo.is_ok_and(|lo| lo <= start) && hi.is_ok_and(|hi| end <= hi)
                        })
                    }))
        };
        (strings.args.0 < strings.args.1 && writable(strings.args) && writable(strings.env))
            .then_some(strings)
    }
}

/// The stacks of a launch's `clone` children, the init's
/// (`clone(CLONE_VM)`, [`spawn_init`]) and the solver's
/// (`clone(CLONE_VM | CLONE_VFORK)`, [`spawn_solver`]): one mapping, made
/// once by the sandbox at start and shared by every launch, each stack with
/// an inaccessible guard page below it, so that an overflow faults instead
/// of writing into the memory it shares. The server never touches it: each
/// launch's monitor inherits its own private copy at the fork (untouched
/// pages, so nothing is copied), and only that copy is ever used as a
/// stack. No launch maps, protects or unmaps anything in the server (each
/// of which, in a process of many threads, interrupts every CPU that runs
/// one of them to flush its TLB).
pub(crate) struct CloneStack {
    base: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; the server never reads
// or writes it (only the forked processes' copies are used as a stack).
unsafe impl Send for CloneStack {}
// SAFETY: as above; `&CloneStack` gives access to nothing but its address.
unsafe impl Sync for CloneStack {}

impl std::fmt::Debug for CloneStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CloneStack({} bytes)", self.len)
    }
}

impl CloneStack {
    /// Usable bytes of each stack: the init and the solver make a few dozen
    /// system calls from small frames; 128 KiB is many times what that
    /// needs.
    const USABLE: usize = 128 * 1024;

    /// Maps fresh stacks (their pages cost nothing until they are touched):
    /// the init's in the lower half, the solver's in the upper.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: sysconf with a constant name.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096);
        let half = Self::USABLE + page;
        let len = 2 * half;
        // SAFETY: a fresh private anonymous mapping at an address the kernel
        // picks; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stacks = Self { base, len };
        // A stack grows down: the lowest page of each half is its guard.
        for lowest in [base, base.wrapping_byte_add(half)] {
            // SAFETY: the first page of a half of the mapping made above.
            cvt(unsafe { libc::mprotect(lowest, page, libc::PROT_NONE) })?;
        }
        Ok(stacks)
    }

    /// The top of the init's stack (see [`CloneStack::solver_top`]).
    fn init_top(&self) -> *mut libc::c_void {
        Self::aligned((self.base as usize).saturating_add(self.len / 2))
    }

    /// The top of the solver's stack, 16-byte aligned, as the C library's
    /// `clone` wants it (the stack grows down on every architecture this
    /// crate builds for).
    fn solver_top(&self) -> *mut libc::c_void {
        Self::aligned((self.base as usize).saturating_add(self.len))
    }

    fn aligned(end: usize) -> *mut libc::c_void {
        (end & !15) as *mut libc::c_void
    }
}

impl Drop for CloneStack {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping this value owns, once.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Installs the child-side code of `plan` on `cmd`.
pub(crate) fn install(cmd: &mut tokio::process::Command, mut plan: ChildPlan) {
    // SAFETY: the closure runs in the child between fork and exec. It only
    // makes async-signal-safe system calls on values owned by `plan`, which
    // was fully prepared before the fork; it allocates nothing and takes no
    // lock (`io::Error::last_os_error` and `from_raw_os_error` build an
    // errno-carrying value without allocating). Processes that must not
    // return to the standard library (monitor, init, and a child whose
    // parent died before it armed `PR_SET_PDEATHSIG`) end in `_exit`.
    unsafe {
        cmd.pre_exec(move || child_main(&mut plan));
    }
}

fn child_main(plan: &mut ChildPlan) -> io::Result<()> {
    reset_signals();
    hide_server(plan.server)?;
    // The monitor and init hold a copy of the server's memory: make them
    // non-dumpable so nothing at our uid can read it through /proc or
    // ptrace. `execve` resets this for the solver.
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) })?;
    join_cgroup(&plan.cgroup)?;
    if plan.pid_namespace {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWPID;
        if !plan.cgroup.is_empty() {
            // The run sees its own cgroup as the root of the hierarchy
            // (`/proc/self/cgroup` names no host path).
            flags |= libc::CLONE_NEWCGROUP;
        }
        if let Some(v) = &plan.view {
            // The mount namespace copies this working directory's mount:
            // the init clones the run directory from it, by no path.
            rustix::process::fchdir(&plan.run_dir)?;
            flags |= view_flags(&v.plan, v.net.is_some());
            if let Some(net) = &v.net {
                // The pool's user namespace owns the network namespace;
                // the run's user namespace is created below it.
                // SAFETY: setns on descriptors owned by `plan`.
                cvt(unsafe { libc::setns(net.user.as_raw_fd(), libc::CLONE_NEWUSER) })?;
                // SAFETY: as above.
                cvt(unsafe { libc::setns(net.net.as_raw_fd(), libc::CLONE_NEWNET) })?;
            }
        }
        // SAFETY: unshare with constant flags; this process has one thread.
        cvt(unsafe { libc::unshare(flags) })?;
        write_id_maps(&plan.id_maps)?;
    }
    // With a PID namespace the child is pid 1 of it, and its parent (this
    // process) is outside: its `getppid()` is 0 whether we live or not.
    let watch = ParentWatch::prepare(plan.pid_namespace)?;
    let fds = MonitorFds::of(plan);
    if !plan.pid_namespace {
        // The process-group level: this process (the monitor) starts the
        // solver itself.
        let pid = spawn_solver(plan, watch)?;
        monitor(pid, fds, watch.parent());
    }
    // From the init's start on, this process and the init share their
    // memory: this process no longer touches `plan`, and makes its system
    // calls without the C library's `errno` (see `spawn_init`).
    let pid = spawn_init(plan, watch)?;
    monitor(pid, fds, watch.parent())
}

/// Hides the server in this process, the monitor: its copy of the
/// server's argument and environment strings is zeroed, and its name is
/// [`MONITOR_NAME`], not the forking thread's. The init, which shares this
/// memory, shows the same strings. The kernel shows a command line whose
/// last byte is not NUL (rewritten, as `setproctitle` does) up to its first
/// NUL: with that byte set, `/proc/<pid>/cmdline` reads as one NUL byte,
/// not as one per byte of the server's command line.
fn hide_server(strings: ServerStrings) -> io::Result<()> {
    for (start, end) in [strings.args, strings.env] {
        // SAFETY: this process is the server's `fork` (`pre_exec`: its
        // memory a private copy, which no other process shares before the
        // init starts), the range lies within one of its writable mappings
        // (checked by `ServerStrings::of_this_process`; it does not move),
        // and nothing after the fork reads these strings: the plan holds
        // the solver's argument vector and environment.
        unsafe {
            std::ptr::write_bytes(
                std::ptr::with_exposed_provenance_mut::<u8>(start),
                0,
                end.saturating_sub(start),
            );
        }
    }
    let (start, end) = strings.args;
    if end.saturating_sub(start) >= 2 {
        // SAFETY: the last byte of the range zeroed above.
        unsafe { std::ptr::with_exposed_provenance_mut::<u8>(end - 1).write(b' ') };
    }
    Ok(rustix::thread::set_name(MONITOR_NAME)?)
}

/// The descriptors the monitor keeps, copied out of the plan before the
/// init starts (the monitor does not read the plan after that).
#[derive(Debug, Clone, Copy)]
struct MonitorFds {
    control: RawFd,
    /// `-1` with a PID namespace: the init reports, not the monitor.
    status: RawFd,
    reaped: RawFd,
    pid_namespace: bool,
}

impl MonitorFds {
    fn of(plan: &ChildPlan) -> Self {
        Self {
            control: plan.control.as_raw_fd(),
            status: if plan.pid_namespace {
                -1
            } else {
                plan.status.as_raw_fd()
            },
            reaped: plan.reaped.as_raw_fd(),
            pid_namespace: plan.pid_namespace,
        }
    }
}

/// What the init's `clone` child reads and writes; lives in the monitor's
/// frame of [`spawn_init`], which does not return before the init has
/// either failed (and said so in `errno`) or closed its copy of the
/// `ready` pipe's write end, which its descriptor table holds from the
/// `clone` on (it touches these no more after either).
struct InitArgs {
    plan: *mut ChildPlan,
    watch: ParentWatch,
    /// The error that stopped the init before the solver's `exec` (0:
    /// none).
    errno: AtomicI32,
}

/// Starts the init, pid 1 of the namespace this process created, as a
/// `clone(CLONE_VM)` child on the init's half of [`ChildPlan::stacks`]: it
/// shares this process's memory, so the server's page tables (which this
/// process inherited) are not copied again, nor torn down again at the
/// init's exit. Waits until the init has started the solver (which has
/// `exec`ed) or failed; returns its pid, or its error (the init has exited
/// and is reaped; the error reaches the server as the spawn's error).
///
/// The two processes run side by side after the `clone`, each on its own
/// stack, with descriptor tables, credentials, namespaces and signal
/// dispositions of their own (none of those is shared without their
/// `CLONE_*` flag). What they share is memory: the init owns `plan` from
/// here on (this process copied what it keeps into [`MonitorFds`]), and
/// the C library's per-thread state, `errno` first, is the init's: this
/// process makes its system calls through rustix, which returns errors
/// as values and writes no `errno`, or through calls that cannot fail
/// with the arguments given (`close_range` over a valid range, `_exit`).
fn spawn_init(plan: &mut ChildPlan, watch: ParentWatch) -> io::Result<libc::pid_t> {
    let mut ends: [libc::c_int; 2] = [-1, -1];
    // SAFETY: pipe2 writes two descriptors into a live local array.
    cvt(unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let [ready_rd, ready_wr] = ends;
    let stack = plan.stacks.init_top();
    let args = InitArgs {
        plan: std::ptr::from_mut(plan),
        watch,
        errno: AtomicI32::new(0),
    };
    // SAFETY: `init_entry` reads `args` and writes `args.errno` through the
    // pointer to this frame's `args`, which outlives every such access:
    // this function returns only once the init has hung up `ready` (after
    // which it touches `args` no more) or exited. The init runs on its
    // half of the plan's stacks, which nothing else uses.
    let pid = unsafe {
        libc::clone(
            init_entry,
            stack,
            libc::CLONE_VM | libc::SIGCHLD,
            std::ptr::from_ref(&args).cast_mut().cast::<libc::c_void>(),
        )
    };
    if pid < 0 {
        // No init: nothing shares this memory yet.
        let e = io::Error::last_os_error();
        close_fd(ready_rd);
        close_fd(ready_wr);
        return Err(e);
    }
    close_fd(ready_wr);
    // SAFETY: a descriptor this process owns, closed below.
    let ready = unsafe { BorrowedFd::borrow_raw(ready_rd) };
    let mut byte = [0u8; 1];
    // Nothing is ever written, and a signal is waited past: the loop ends
    // at the hang-up (or at a pipe that cannot be read: the init's word in
    // `errno`, read below, decides either way).
    while let Ok(1..) | Err(Errno::INTR) = rustix::io::read(ready, &mut byte) {}
    close_fd(ready_rd);
    let e = args.errno.load(Ordering::SeqCst);
    if e != 0 {
        // Its status says nothing more.
        let _ = wait_for(pid);
        return Err(io::Error::from_raw_os_error(e));
    }
    Ok(pid)
}

/// The init before it becomes [`init`]: arms its parent watch, builds and
/// enters the view, starts the solver. On failure it stores the error in
/// the arguments' `errno` and exits.
extern "C" fn init_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `InitArgs` of `spawn_init`, alive until this
    // process hangs up `ready` or exits.
    let args = unsafe { &*arg.cast::<InitArgs>() };
    // SAFETY: the monitor no longer touches the plan (see `spawn_init`):
    // this process is its only user.
    let plan = unsafe { &mut *args.plan };
    let started = args.watch.child().and_then(|()| {
        rustix::thread::set_name(INIT_NAME)?;
        // This process is pid 1 of the new namespace.
        if let Some(v) = &mut plan.view {
            view::enter(&v.plan, &mut v.run)?;
        }
        let watch = ParentWatch::prepare(false)?;
        let pid = spawn_solver(plan, watch)?;
        Ok((pid, watch))
    });
    match started {
        // `init` closes every descriptor but its own two, `ready` with
        // them: the monitor's wait ends.
        Ok((pid, watch)) => init(pid, plan, watch.parent()),
        Err(e) => {
            let errno = e.raw_os_error().filter(|&e| e != 0).unwrap_or(libc::EIO);
            args.errno.store(errno, Ordering::SeqCst);
            exit(EXIT_SPAWN_FAILED)
        }
    }
}

/// What the solver's `clone` child reads and writes; lives on the parent's
/// stack, which the parent does not touch until the child has `exec`ed or
/// exited (`CLONE_VFORK`).
struct SolverArgs<'a> {
    plan: &'a ChildPlan,
    watch: ParentWatch,
    /// The error that stopped the child before `exec` (0: none).
    errno: libc::c_int,
}

/// Starts the solver as a `clone(CLONE_VM | CLONE_VFORK)` child on the
/// plan's [`CloneStack`]: it shares this process's memory until its `exec`,
/// so none of the server's page tables (which this process inherited) are
/// copied, and this process is suspended until then. The child hardens
/// itself and `exec`s. Returns its pid once it has, or the error that
/// stopped it (the child has exited and is reaped; the caller's error
/// reaches the server as the spawn's error, as the child's own did when it
/// was forked).
///
/// The child changes only what is its own (session, working directory,
/// credentials, Landlock domain, seccomp filter, rlimits, descriptor table:
/// `CLONE_VM` shares none of these) and writes nothing of the shared memory
/// but its own stack, `args` and `errno`, which this process does not read
/// while it is suspended. Every signal has its default disposition here
/// ([`reset_signals`]), so no handler runs in the child.
fn spawn_solver(plan: &ChildPlan, watch: ParentWatch) -> io::Result<libc::pid_t> {
    let mut args = SolverArgs {
        plan,
        watch,
        errno: 0,
    };
    // SAFETY: `solver_entry` only reads `args.plan` and `args.watch` and
    // writes `args.errno`, through the pointer to this frame's `args`, which
    // outlives the child's use of it: `CLONE_VFORK` suspends this process
    // until the child `exec`s or exits. The child runs on the plan's stack
    // mapping, which nothing else uses.
    let pid = cvt(unsafe {
        libc::clone(
            solver_entry,
            plan.stacks.solver_top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_mut(&mut args).cast::<libc::c_void>(),
        )
    })?;
    if args.errno != 0 {
        // The child has exited: reap it (its status says nothing more).
        let _ = wait_for(pid);
        return Err(io::Error::from_raw_os_error(args.errno));
    }
    Ok(pid)
}

/// The solver before its `exec` (see [`spawn_solver`]). Returns (its exit
/// code) only on failure, with the error in the arguments' `errno`.
extern "C" fn solver_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `SolverArgs` of `spawn_solver`, alive and not
    // touched by the suspended parent until this child has exited.
    let args = unsafe { &mut *arg.cast::<SolverArgs<'_>>() };
    let plan = args.plan;
    let r = args
        .watch
        .child()
        .and_then(|()| harden(plan))
        .and_then(|fd| exec(plan, fd));
    args.errno = match r {
        Err(e) => e.raw_os_error().filter(|&e| e != 0).unwrap_or(libc::EIO),
        // `exec` returns only on failure.
        Ok(()) => libc::EIO,
    };
    EXIT_SPAWN_FAILED
}

/// Moves this process (the monitor, a fresh single-threaded child of the
/// server) into the run's cgroup: `0` names the writer (on v1, through
/// `tasks`, the writing thread: the whole of this process). Everything the
/// run forks after this is born there.
fn join_cgroup(procs: &[OwnedFd]) -> io::Result<()> {
    for fd in procs {
        if rustix::io::write(fd, b"0")? != 1 {
            return Err(Errno::IO.into());
        }
    }
    Ok(())
}

/// The namespaces of the view beyond user and PID: mount, IPC (System V
/// and POSIX message queues of the server's uid stay out of reach), UTS,
/// and network unless the solver shares the host's or `entered_net` (the
/// process already entered a fresh one from the pool).
fn view_flags(plan: &ViewPlan, entered_net: bool) -> libc::c_int {
    let base = libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if plan.private_network() && !entered_net {
        base | libc::CLONE_NEWNET
    } else {
        base
    }
}

/// Maps the solver's ids in the user namespace this process just created.
/// The map files of a non-dumpable process belong to root, so the process
/// is dumpable for the three writes (it holds no secret the server does
/// not: only a same-uid process could attach in that window).
fn write_id_maps(maps: &IdMaps) -> io::Result<()> {
    use rustix::process::{DumpableBehavior, set_dumpable_behavior};
    set_dumpable_behavior(DumpableBehavior::Dumpable)?;
    let r = write_proc(c"/proc/self/setgroups", b"deny")
        .and_then(|()| write_proc(c"/proc/self/uid_map", &maps.uid_map))
        .and_then(|()| write_proc(c"/proc/self/gid_map", &maps.gid_map));
    set_dumpable_behavior(DumpableBehavior::NotDumpable)?;
    r
}

/// One write is the whole map (the kernel takes a map in a single write
/// only).
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, rustix::fs::Mode::empty())?;
    if rustix::io::write(&fd, bytes)? == bytes.len() {
        Ok(())
    } else {
        Err(Errno::IO.into())
    }
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
        let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let ppid = if child_is_ns_init {
            0
        } else {
            rustix::process::getpid().as_raw_nonzero().get()
        };
        Ok(Self {
            ppid,
            alive_rd: rd.into_raw_fd(),
            alive_wr: wr.into_raw_fd(),
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
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
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
        let ppid = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
        if ppid != self.ppid {
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

/// The solver's own hardening before `exec`: session, working directory,
/// no-new-privs, no capabilities, Landlock, inherited descriptors marked
/// close-on-exec, the executable's descriptor opened, rlimits last (so that
/// the descriptor limit does not stop the opens before it). Returns the
/// descriptor to `exec`.
fn harden(plan: &ChildPlan) -> io::Result<RawFd> {
    rustix::process::setsid()?;
    if plan.view.is_some() {
        // The view's copy of the run directory; the descriptor belongs to
        // the host's mount namespace and would put the working directory
        // outside the view's root.
        rustix::process::chdir(view::VIEW_RUN_DIR_C)?;
    } else {
        rustix::process::fchdir(&plan.run_dir)?;
    }
    rustix::thread::set_no_new_privs(true)?;
    drop_capabilities()?;
    if let Some(ruleset) = &plan.ruleset {
        if let Some(v) = &plan.view {
            add_view_rules(ruleset.as_raw_fd(), v.rules)?;
        }
        // SAFETY: landlock_restrict_self on a ruleset descriptor of `plan`.
        cvt_long(unsafe {
            libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0)
        })?;
    }
    // SAFETY: close_range with integer arguments.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    })?;
    let fd = executable(plan)?;
    set_rlimits(&plan.rlimits)?;
    Ok(fd)
}

fn set_rlimits(r: &RlimitPlan) -> io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let limit = |current, maximum| Rlimit {
        current: Some(current),
        maximum: Some(maximum),
    };
    setrlimit(Resource::Core, limit(0, 0))?;
    setrlimit(Resource::Cpu, limit(r.cpu.0, r.cpu.1))?;
    setrlimit(Resource::Fsize, limit(r.file_size, r.file_size))?;
    setrlimit(Resource::Nofile, limit(r.open_files, r.open_files))?;
    if let Some(a) = r.address_space {
        setrlimit(Resource::As, limit(a, a))?;
    }
    Ok(())
}

/// The descriptor of the executable to `exec`: the view's copy of the
/// registered file (a read-only bind, checked when it was cloned, checked
/// again here; `exec` then goes by its path in the view, so that a `#!`
/// script's interpreter is handed `/sandbox/bin/<id>`), or without the view
/// a copy of the descriptor opened at registration, not close-on-exec: a
/// `#!` script's interpreter opens it as `/dev/fd/N`.
fn executable(plan: &ChildPlan) -> io::Result<RawFd> {
    match &plan.view {
        Some(v) => {
            let flags = rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC;
            let fd = rustix::fs::open(v.plan.solver_path(), flags, rustix::fs::Mode::empty())?;
            view::same_file(fd.as_fd(), v.plan.solver_id())?;
            Ok(fd.into_raw_fd())
        }
        // SAFETY: fcntl(F_DUPFD) of a descriptor owned by `plan`.
        None => cvt(unsafe { libc::fcntl(plan.solver.as_raw_fd(), libc::F_DUPFD, 3) }),
    }
}

/// Empties every capability set (ambient, bounding, effective, permitted,
/// inheritable). In a user namespace the solver would lose them at `exec`
/// anyway (its uid is not 0 there); without one, a server running with
/// ambient capabilities or as root would hand them on.
fn drop_capabilities() -> io::Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets, set_capabilities};
    rustix::thread::clear_ambient_capability_set()?;
    for cap in 0..64 {
        // By number, past the capabilities the crates name. Fails with
        // EINVAL past the last capability the kernel knows (then there is
        // nothing more to drop), and with EPERM without CAP_SETPCAP (then
        // there is nothing to drop at all).
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
        {
            break;
        }
    }
    let none = CapabilitySet::empty();
    set_capabilities(
        None,
        CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )?;
    Ok(())
}

/// Adds the rules that exist only inside the view: read beneath its root,
/// full access beneath its private `/tmp` and `/dev/shm`.
fn add_view_rules(ruleset: RawFd, rules: ViewRules) -> io::Result<()> {
    // struct landlock_path_beneath_attr (packed).
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    for (path, access) in [
        (c"/", rules.read),
        (c"/tmp", rules.all),
        (c"/dev/shm", rules.all),
    ] {
        // SAFETY: open of a static C string.
        let fd = cvt(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        let attr = PathBeneath {
            allowed_access: access,
            parent_fd: fd,
        };
        // SAFETY: landlock_add_rule with a live attribute struct.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                LANDLOCK_RULE_PATH_BENEATH,
                &attr as *const PathBeneath,
                0u32,
            )
        };
        let e = io::Error::last_os_error();
        close_fd(fd);
        if r < 0 {
            return Err(e);
        }
    }
    Ok(())
}

/// Installs the seccomp filter and `exec`s `fd` with the prepared argument
/// vector and environment. Returns only on failure.
fn exec(plan: &ChildPlan, fd: RawFd) -> io::Result<()> {
    if let Some(filter) = &plan.seccomp {
        install_filter(filter)?;
    }
    match &plan.view {
        // In the view the path names the file just checked through `fd`:
        // the view is this process's private, read-only mount tree, and
        // nothing else runs in it yet.
        // SAFETY: execveat with a C string and null-terminated arrays owned
        // by `plan`; returns only on failure.
        Some(v) => unsafe {
            libc::syscall(
                libc::SYS_execveat,
                libc::AT_FDCWD,
                v.plan.solver_path().as_ptr(),
                plan.exec.argv.as_ptr(),
                plan.exec.envp.as_ptr(),
                0,
            );
        },
        // SAFETY: execveat with null-terminated arrays owned by `plan`;
        // returns only on failure.
        None => unsafe {
            libc::syscall(
                libc::SYS_execveat,
                fd,
                c"".as_ptr(),
                plan.exec.argv.as_ptr(),
                plan.exec.envp.as_ptr(),
                libc::AT_EMPTY_PATH,
            );
        },
    }
    Err(io::Error::last_os_error())
}

/// The monitor: waits for its child, kills the tree when the control pipe
/// hangs up. Never returns. `alive` is the write end of the child's
/// [`ParentWatch`] pipe.
///
/// With a PID namespace its child is the init, which shares its memory
/// ([`spawn_init`]): every system call here goes through rustix (no
/// `errno`), or cannot fail.
fn monitor(child: libc::pid_t, fds: MonitorFds, alive: RawFd) -> ! {
    close_all_except([fds.control, fds.status, alive, fds.reaped]);
    let Some(pid) = Pid::from_raw(child) else {
        exit(EXIT_LOST_CHILD);
    };
    // SAFETY: descriptors this process owns and keeps open until it exits.
    let (control, reaped) = unsafe {
        (
            BorrowedFd::borrow_raw(fds.control),
            BorrowedFd::borrow_raw(fds.reaped),
        )
    };
    // Without pidfds (Linux < 5.3) the child is polled for.
    let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok();
    let mut killed = false;
    loop {
        let (failed, hung_up) = wait_for_word(control, pidfd.as_ref(), killed);
        if !killed && (failed || hung_up) {
            kill_tree(pid, fds.pid_namespace);
            killed = true;
        }
        let Some(ended) = reap(pid, fds.pid_namespace) else {
            exit(EXIT_LOST_CHILD);
        };
        if let Some((ws, cpu_us)) = ended {
            if !fds.pid_namespace {
                // Stragglers of the solver's process group; the group id
                // stays reserved while any member is alive.
                let _ = rustix::process::kill_process_group(pid, Signal::KILL);
                // After a kill the server reports the run as killed: no
                // record, as in the namespace case.
                if !killed {
                    write_record(fds.status, ws, cpu_us);
                }
            }
            // With a PID namespace, the init's end (reaped just now) is the
            // end of every process in it: the kernel killed and waited for
            // them before the init could be reaped.
            let _ = rustix::io::write(reaped, &[1u8]);
            exit(0);
        }
    }
}

/// Waits until the control pipe is readable (the [`KILL_WORD`] or a
/// hang-up; unless `killed`: then it is no longer watched) or the child may
/// have ended. Returns whether the wait failed (the caller kills rather
/// than run unwatched) and whether the control pipe said to kill.
fn wait_for_word(control: BorrowedFd<'_>, pidfd: Option<&OwnedFd>, killed: bool) -> (bool, bool) {
    let poll_ms = Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(POLL_FALLBACK_MS) * 1_000_000,
    };
    let from = usize::from(killed);
    let (r, hung_up) = match pidfd {
        Some(p) => {
            let mut set = [
                PollFd::from_borrowed_fd(control, PollFlags::IN),
                PollFd::new(p, PollFlags::IN),
            ];
            let r = rustix::event::poll(&mut set[from..], None);
            (r, !killed && !set[0].revents().is_empty())
        }
        None => {
            let mut set = [PollFd::from_borrowed_fd(control, PollFlags::IN)];
            let r = rustix::event::poll(&mut set[from..], Some(&poll_ms));
            (r, !killed && !set[0].revents().is_empty())
        }
    };
    (matches!(r, Err(e) if e != Errno::INTR), hung_up)
}

/// Reaps `pid` if it has ended: `Some(Some((wait status, CPU µs)))`;
/// `Some(None)` while it runs; `None` when it cannot be waited for. With a
/// PID namespace (the init shares this memory) through rustix, and without
/// the CPU time, which the init's record carries; at the process-group
/// level (no process shares this memory) with `wait4`, for the solver's
/// CPU time.
fn reap(pid: Pid, pid_namespace: bool) -> Option<Option<(libc::c_int, u64)>> {
    if pid_namespace {
        return match rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => Some(Some((status.as_raw(), 0))),
            Ok(None) | Err(Errno::INTR) => Some(None),
            Err(_) => None,
        };
    }
    let mut ws: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let raw = pid.as_raw_nonzero().get();
    // SAFETY: pointers to live locals.
    let r = unsafe { libc::wait4(raw, &mut ws, libc::WNOHANG, &mut ru) };
    if r == raw {
        Some(Some((ws, rusage_us(&ru))))
    } else if r >= 0 || interrupted() {
        Some(None)
    } else {
        None
    }
}

/// Pid 1 of the namespace: reaps everything; when the solver ends, kills
/// every other process of the namespace, reaps them all, and only then
/// reports the solver's end. The record is therefore the proof that the
/// whole tree is dead, and the server answers on it: the init's own exit
/// (the teardown of its copy of the server's address space) and the
/// monitor's reaping of it happen after the answer, not before.
/// `alive` is the write end of the solver's [`ParentWatch`] pipe.
fn init(solver: libc::pid_t, plan: &ChildPlan, alive: RawFd) -> ! {
    let status = plan.status.as_raw_fd();
    close_all_except([status, alive]);
    let mut cpu_us: u64 = 0;
    let mut solver_status: Option<libc::c_int> = None;
    loop {
        let mut ws: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pointers to live locals.
        let r = unsafe { libc::wait4(-1, &mut ws, 0, &mut ru) };
        if r > 0 {
            cpu_us = cpu_us.saturating_add(rusage_us(&ru));
            if r == solver {
                solver_status = Some(ws);
                // Every process of the namespace but this one. A process
                // forking at this moment either has its child counted here or
                // sees its own SIGKILL pending and fails the fork (the
                // kernel checks under the same lock), so one pass kills all;
                // orphans are re-parented to this process and reaped below.
                // SAFETY: kill with integer arguments.
                unsafe { libc::kill(-1, libc::SIGKILL) };
            }
        } else if !interrupted() {
            match solver_status {
                // No child left: every process the run started has exited
                // and been reaped.
                Some(ws) if last_error_is(libc::ECHILD) => {
                    write_record(status, ws, cpu_us);
                    exit(0);
                }
                _ => exit(EXIT_LOST_CHILD),
            }
        }
    }
}

fn kill_tree(child: Pid, pid_namespace: bool) {
    // `child` is our unreaped child, so its pid (and, after its setsid, its
    // process-group id) is not reused.
    if !pid_namespace {
        let _ = rustix::process::kill_process_group(child, Signal::KILL);
    }
    let _ = rustix::process::kill_process(child, Signal::KILL);
}

fn write_record(fd: RawFd, wait_status: libc::c_int, cpu_us: u64) {
    if fd < 0 {
        return;
    }
    let rec = ExitRecord::encode(wait_status, cpu_us);
    // SAFETY: a descriptor the caller owns and keeps open.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    // A record is smaller than PIPE_BUF, so the write is atomic; a failure
    // leaves no record, which the server reads as "killed".
    let _ = rustix::io::write(fd, &rec);
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
fn close_all_except<const N: usize>(mut keep: [RawFd; N]) {
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

/// Closes a descriptor this process owns, through rustix: no `errno`
/// written (see [`spawn_init`]), and a failure leaves nothing to do.
fn close_fd(fd: RawFd) {
    // SAFETY: close of a descriptor this process owns and no longer uses.
    unsafe { rustix::io::close(fd) };
}

/// `close_range(first, last, 0)`. The callers pass `first <= last`, with
/// which the call cannot fail, so the C library's wrapper writes no
/// `errno` (see [`spawn_init`]).
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

/// Waits for this process's child `pid` to end and returns its wait
/// status, waiting again when a signal interrupts the wait. System calls
/// only, through rustix (no `errno`: usable in a monitor whose memory the
/// init shares, [`spawn_init`]), so also in a child of a forked
/// multithreaded process.
pub(super) fn wait_for(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status.as_raw()),
            Err(Errno::INTR) => {}
            Ok(None) => return Err(io::Error::from_raw_os_error(libc::ECHILD)),
            Err(e) => return Err(e.into()),
        }
    }
}

fn interrupted() -> bool {
    last_error_is(libc::EINTR)
}

/// Whether the C library's last error (`errno`) is `code`.
fn last_error_is(code: libc::c_int) -> bool {
    io::Error::last_os_error().raw_os_error() == Some(code)
}

/// A C-library return value as a result: negative means `errno`.
pub(super) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A raw system call's return value as a result: negative means `errno`.
pub(super) fn cvt_long(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Whether a process can join the cgroup whose join files are `procs`,
/// found by doing it in a throwaway child (which then exits: the cgroup is
/// empty again once it is reaped here).
pub(crate) fn probe_cgroup_join(procs: &[OwnedFd]) -> bool {
    let Ok(pid) = raw_fork() else {
        return false;
    };
    if pid == 0 {
        // Child of a possibly multithreaded process: system calls only, on
        // descriptors the caller owns.
        exit(if join_cgroup(procs).is_ok() { 0 } else { 1 });
    }
    wait_for(pid).is_ok_and(|ws| libc::WIFEXITED(ws) && libc::WEXITSTATUS(ws) == 0)
}

/// What the host supports, found by doing it in a throwaway child: user
/// and PID namespaces with pid 1 forked in them; the complete file-system
/// view `plan` built and entered by that pid 1 (with `run` cloned from the
/// directory `dir`); the seccomp `filter` installed and refusing what it
/// must. Landlock is not probed here ([`landlock_abi`]).
///
/// `view: None` probes the seccomp filter only (namespaces unwanted).
///
/// `net`: a namespace from the pool, entered as a launch enters it (the
/// view bit then also says that entering it works).
pub(crate) fn probe_host(
    view: Option<(&ViewPlan, RunMounts, &OwnedFd)>,
    net: Option<&NetNs>,
    maps: &IdMaps,
    filter: Option<&Filter>,
) -> (bool, bool, bool) {
    const PID_NS: libc::c_int = 1;
    const VIEW: libc::c_int = 2;
    const SECCOMP: libc::c_int = 4;
    const MARK: libc::c_int = 64;
    let Ok(pid) = raw_fork() else {
        return (false, false, false);
    };
    if pid == 0 {
        // Child of a possibly multithreaded process: system calls only, on
        // values prepared before the fork.
        let Some((plan, mut run, dir)) = view else {
            exit(MARK | probe_seccomp(filter));
        };
        // SAFETY: fchdir to a directory descriptor; setns on descriptors
        // the caller owns; unshare with constant flags in a
        // single-threaded child.
        let view_ns = unsafe {
            libc::fchdir(dir.as_raw_fd()) == 0
                && net.is_none_or(|n| {
                    libc::setns(n.user.as_raw_fd(), libc::CLONE_NEWUSER) == 0
                        && libc::setns(n.net.as_raw_fd(), libc::CLONE_NEWNET) == 0
                })
                && libc::unshare(
                    libc::CLONE_NEWUSER | libc::CLONE_NEWPID | view_flags(plan, net.is_some()),
                ) == 0
        };
        // SAFETY: as above.
        let pid_ns =
            view_ns || unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) } == 0;
        if !pid_ns || write_id_maps(maps).is_err() {
            exit(MARK | probe_seccomp(filter));
        }
        match raw_fork() {
            Ok(0) => {
                let mut bits = MARK | PID_NS;
                if view_ns && view::enter(plan, &mut run).is_ok() {
                    bits |= VIEW;
                }
                exit(bits | probe_seccomp(filter));
            }
            Ok(g) => {
                let mut ws: libc::c_int = 0;
                // SAFETY: pointer to a live local.
                let r = unsafe { libc::waitpid(g, &mut ws, 0) };
                let ok = r == g && libc::WIFEXITED(ws);
                exit(if ok { libc::WEXITSTATUS(ws) } else { MARK });
            }
            Err(_) => exit(MARK | probe_seccomp(filter)),
        }
    }
    let Ok(ws) = wait_for(pid) else {
        return (false, false, false);
    };
    if !libc::WIFEXITED(ws) || libc::WEXITSTATUS(ws) & MARK == 0 {
        return (false, false, false);
    }
    let bits = libc::WEXITSTATUS(ws);
    (bits & PID_NS != 0, bits & VIEW != 0, bits & SECCOMP != 0)
}

/// Installs `filter` (no-new-privs must be set).
fn install_filter(filter: &Filter) -> io::Result<()> {
    let program = filter.program();
    let prog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: seccomp(SET_MODE_FILTER) with a live program; the kernel
    // copies it.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_uint,
            &prog as *const libc::sock_fprog,
        )
    })?;
    Ok(())
}

/// In a throwaway child: installs `filter` and checks that it refuses a
/// nested user namespace and a netlink socket with `EPERM`. Returns the
/// seccomp bit of [`probe_host`] or 0.
fn probe_seccomp(filter: Option<&Filter>) -> libc::c_int {
    let Some(filter) = filter else {
        return 0;
    };
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return 0;
    }
    if install_filter(filter).is_err() {
        return 0;
    }
    // SAFETY: unshare and socket with constant arguments.
    let userns = unsafe { libc::unshare(libc::CLONE_NEWUSER) } == -1
        && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    // SAFETY: as above.
    let netlink = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, 0) } == -1
        && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if userns && netlink { 4 } else { 0 }
}

/// Whether this host lets an unprivileged-capable process create a user +
/// PID namespace and fork pid 1 in it. Runs the check in a throwaway child.
#[cfg(test)]
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
    wait_for(pid).is_ok_and(|ws| ws == 0)
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
    fn server_strings_are_read_after_the_name_and_must_be_writable() {
        // Fields 3 to 47, then arg_start, arg_end, env_start, env_end; the
        // name holds `) ` as a process may name itself.
        let stat = |args: &str| {
            let mid = vec!["0"; 45].join(" ");
            format!("42 (a) b (c) {mid} {args}\n")
        };
        let maps = "1000-2000 r--p 0 0:0 0 /bin/x\n7000-9000 rw-p 0 0:0 0 [stack]\n";
        let at = |a, b, c, d| ServerStrings {
            args: (a, b),
            env: (c, d),
        };
        let parse = |args: &str| ServerStrings::parse(&stat(args), maps);
        assert_eq!(
            parse("28672 28700 28700 28800"),
            Some(at(0x7000, 0x701c, 0x701c, 0x7080))
        );
        // An empty environment is nothing to zero.
        assert_eq!(parse("28672 28700 0 0"), Some(at(0x7000, 0x701c, 0, 0)));
        for refused in [
            "4096 4100 28700 28800", // read-only mapping
            "28672 36865 0 0",       // past the mapping's end
            "28700 28672 0 0",       // reversed
            "28672 28672 0 0",       // no command line at all
            "28672 28700 28800",     // a field short
            "28672 x 28700 28800",   // not a number
        ] {
            assert_eq!(parse(refused), None, "{refused}");
        }
        assert!(ServerStrings::of_this_process().is_ok());
    }

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
