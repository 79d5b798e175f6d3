//! Launches from premade inits: the part of a launch that does not depend
//! on the run, made ahead.
//!
//! A launch at the whole-tree level with the private view forks a monitor
//! from the server, creates the run's namespaces, maps its ids, starts the
//! init, which builds the view; none of that depends on the run but for
//! three things: the run directory, the sizes of the private `/tmp` and
//! `/dev/shm`, and what is `exec`ed with which limits. So a pool thread per
//! (solver, run root) makes [`Premade`] inits ahead, through the same
//! child-side code as a launch ([`spawn`]), with these differences:
//!
//! * the monitor's working directory, from which the mount namespace is
//!   copied, is the run root, not a run directory;
//! * the init takes a detached clone of the run root's mount tree, stages
//!   the view ([`view::stage`](super::view::stage)), swaps its root and
//!   detaches the old one ([`view::pivot`](super::view::pivot): the
//!   detachment waits for an RCU grace period, which is why it is done
//!   ahead), then waits on a pipe for its launch.
//!
//! A launch then rewrites the limits of the premade init's cgroup, writes
//! its [`Request`] into a shared mapping made before the fork (the same
//! address in the server and in the init, so that the argument vector's
//! pointers hold in both), and writes one byte. The init opens the run
//! directory by its name beneath the run root's detached tree (`openat2`:
//! beneath, no symbolic link, no mount crossed), refuses it unless it is
//! the server's (device and inode), clones and attaches it and mounts the
//! private `/tmp` and `/dev/shm`
//! ([`view::finish_entered`](super::view::finish_entered)), starts the
//! solver and answers with the error that stopped it, or `0` once the
//! solver has `exec`ed. From there on the run is an ordinary one: the
//! monitor watches the control pipe, the init reaps and reports. A name
//! that no longer leads to the server's run directory sends the launch the
//! ordinary way, by descriptor ([`by_name_failed`]).
//!
//! What a premade init costs while it waits: two processes that share one
//! copy of the server's memory (as every launch's do), a cgroup, and the
//! namespaces. A launch that finds none ready, or whose request does not
//! fit the mapping, takes the ordinary path; [`SandboxConfig::made_ahead`]
//! of 0 turns premade inits off.
//!
//! [`SandboxConfig::made_ahead`]: super::SandboxConfig::made_ahead

#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions};

use super::ahead::MadeAhead;
use super::cgroup::{CgroupPool, RunCgroup};
use super::landlock::{FsPolicy, ViewRules};
use super::limits::Limits;
use super::netns::NetPool;
use super::seccomp::Filter;
use super::spawn::{
    self, CStrArray, ChildPlan, CloneStack, ExecPlan, IdMaps, PremadeChild, RequestPtr, RlimitPlan,
    ViewChild,
};
use super::view::{RunView, ViewPlan, Writable};

/// Bytes of a request's mapping: its header and the strings and pointer
/// arrays after it. A request that needs more takes the ordinary path.
const MAP_LEN: usize = 256 * 1024;

/// How long a launch waits for a premade init's answer before it gives the
/// init up (it has `exec`ed the solver or failed well before, unless the
/// host is stalled).
const ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// While a premade init is still ready, the next is made only once
/// launches have paused this long: making one (a fork of the server, the
/// namespaces, the view's stage) takes a few milliseconds of CPU time,
/// which a launch in progress would otherwise wait for on a host of few
/// cores. When none is ready, one is made at once.
const SETTLE: Duration = Duration::from_millis(10);

/// At most this many (solver, run root) pairs get a pool of their own (a
/// pool whose run root has been removed does not count); a launch for any
/// other pair takes the ordinary path.
const MAX_POOLS: usize = 16;

/// A launch request as the server writes it into the shared mapping and a
/// premade init reads it: fixed fields, then (at [`Request::ARENA`]) the
/// strings, NUL-terminated, and the argument vector's and environment's
/// pointer arrays, which point into the same mapping. Offsets are from the
/// arena's start.
///
/// Every field is an integer, a `bool` or an array of them, so that the
/// mapping's all-zero bytes (before a request is written) are a valid
/// value.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Request {
    /// Bytes of the arena in use; 0 until a request is written.
    used: usize,
    /// `rlimit` pairs: CPU, file size, open files, address space.
    rlimits: [libc::rlimit; 4],
    has_address_space: bool,
    run_dir: (u64, u64),
    run_name: usize,
    tmp_options: usize,
    shm_options: usize,
    /// The writable subdirectory, if `has_writable`: name, staged target
    /// and view path offsets; its device and inode.
    has_writable: bool,
    writable: [usize; 3],
    writable_id: (u64, u64),
    argv: usize,
    envp: usize,
}

impl Request {
    /// Where the arena starts, from the mapping's start.
    const ARENA: usize = std::mem::size_of::<Request>().next_multiple_of(16);

    fn arena(&self) -> *const u8 {
        std::ptr::from_ref(self)
            .cast::<u8>()
            .wrapping_add(Self::ARENA)
    }

    fn cstr(&self, offset: usize) -> &CStr {
        // SAFETY: the server wrote a NUL-terminated string at `offset` of
        // the arena (`RequestMap::write`), which lives as long as `self`.
        unsafe { CStr::from_ptr(self.arena().wrapping_add(offset).cast()) }
    }

    /// Whether the server has written a request.
    pub(crate) fn is_written(&self) -> bool {
        self.used != 0
    }

    /// The solver's rlimits.
    pub(crate) fn rlimits(&self) -> RlimitPlan {
        let [cpu, file_size, open_files, address_space] = self.rlimits;
        RlimitPlan {
            cpu,
            file_size,
            open_files,
            address_space: self.has_address_space.then_some(address_space),
        }
    }

    /// The run directory's name in the run root.
    pub(crate) fn run_name(&self) -> &CStr {
        self.cstr(self.run_name)
    }

    /// The run's part of the view.
    pub(crate) fn run_view(&self) -> RunView<'_> {
        RunView {
            run_dir: self.run_dir,
            writable: self.has_writable.then(|| {
                let [name, staged, in_view] = self.writable;
                Writable {
                    name: self.cstr(name),
                    staged: self.cstr(staged),
                    in_view: self.cstr(in_view),
                    id: self.writable_id,
                }
            }),
            tmp_options: self.cstr(self.tmp_options),
            shm_options: self.cstr(self.shm_options),
        }
    }

    /// The argument vector (null-terminated).
    pub(crate) fn argv(&self) -> *const *const libc::c_char {
        self.arena().wrapping_add(self.argv).cast()
    }

    /// The environment (null-terminated).
    pub(crate) fn envp(&self) -> *const *const libc::c_char {
        self.arena().wrapping_add(self.envp).cast()
    }
}

/// The shared mapping of one premade init's [`Request`]: made before the
/// fork, so that the init has it at the same address.
#[derive(Debug)]
struct RequestMap {
    base: *mut u8,
}

// SAFETY: the mapping is owned by this value alone in the server; the
// server writes it only through `&mut self`.
unsafe impl Send for RequestMap {}
// SAFETY: as above; `&RequestMap` reads nothing.
unsafe impl Sync for RequestMap {}

impl RequestMap {
    fn new() -> io::Result<Self> {
        // SAFETY: a fresh shared anonymous mapping at an address the kernel
        // picks; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MAP_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { base: base.cast() })
    }

    fn ptr(&self) -> RequestPtr {
        RequestPtr(self.base.cast_const().cast())
    }

    /// The request as the init reads it.
    #[cfg(test)]
    fn request(&self) -> &Request {
        // SAFETY: the header is at the mapping's start, aligned (a page);
        // its bytes are all zero (a valid `Request`: integers and bools) or
        // a value `write` stored; `&self` excludes a write meanwhile.
        unsafe { &*self.base.cast::<Request>() }
    }

    /// Writes the request; `false` when it does not fit the mapping.
    fn write(
        &mut self,
        rlimits: RlimitPlan,
        run_name: &CStr,
        run: &RunView<'_>,
        exec: &ExecPlan,
    ) -> bool {
        let mut arena = Arena {
            // SAFETY: the mapping is MAP_LEN bytes long, past the header.
            bytes: unsafe {
                std::slice::from_raw_parts_mut(
                    self.base.add(Request::ARENA),
                    MAP_LEN - Request::ARENA,
                )
            },
            used: 0,
        };
        let written = (|| {
            let run_name = arena.cstr(run_name)?;
            let tmp_options = arena.cstr(run.tmp_options)?;
            let shm_options = arena.cstr(run.shm_options)?;
            let (writable, writable_id) = match &run.writable {
                Some(w) => (
                    [
                        arena.cstr(w.name)?,
                        arena.cstr(w.staged)?,
                        arena.cstr(w.in_view)?,
                    ],
                    w.id,
                ),
                None => ([0; 3], (0, 0)),
            };
            let argv = arena.vector(&exec.argv)?;
            let envp = arena.vector(&exec.envp)?;
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            Some(Request {
                used: arena.used,
                rlimits: [
                    rlimits.cpu,
                    rlimits.file_size,
                    rlimits.open_files,
                    rlimits.address_space.unwrap_or(none),
                ],
                has_address_space: rlimits.address_space.is_some(),
                run_dir: run.run_dir,
                run_name,
                tmp_options,
                shm_options,
                has_writable: run.writable.is_some(),
                writable,
                writable_id,
                argv,
                envp,
            })
        })();
        let Some(request) = written else {
            return false;
        };
        // SAFETY: the header's place at the mapping's start, aligned (a
        // page), not read by anyone before the `go` byte.
        unsafe { std::ptr::write(self.base.cast::<Request>(), request) };
        true
    }
}

impl Drop for RequestMap {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping this value owns, once.
        unsafe { libc::munmap(self.base.cast(), MAP_LEN) };
    }
}

/// The arena of a request being written.
struct Arena<'a> {
    bytes: &'a mut [u8],
    used: usize,
}

impl Arena<'_> {
    /// Copies `s` with its NUL; its offset.
    fn cstr(&mut self, s: &CStr) -> Option<usize> {
        let b = s.to_bytes_with_nul();
        let at = self.used;
        let end = at.checked_add(b.len())?;
        self.bytes.get_mut(at..end)?.copy_from_slice(b);
        self.used = end;
        Some(at)
    }

    /// Copies the entries of `v` and a null-terminated array of pointers to
    /// them (absolute addresses: the mapping has the same address in the
    /// child); the array's offset.
    fn vector(&mut self, v: &CStrArray) -> Option<usize> {
        let mut offsets = Vec::new();
        for s in v.entries() {
            offsets.push(self.cstr(s)?);
        }
        let base = self.bytes.as_ptr() as usize;
        let size = std::mem::size_of::<usize>();
        let at = self.used.next_multiple_of(size);
        let end = at.checked_add(offsets.len().checked_add(1)?.checked_mul(size)?)?;
        let slots = self.bytes.get_mut(at..end)?;
        let pointers = offsets
            .iter()
            .map(|&o| base.wrapping_add(o))
            .chain(std::iter::once(0));
        for (slot, p) in slots.chunks_exact_mut(size).zip(pointers) {
            slot.copy_from_slice(&p.to_ne_bytes());
        }
        self.used = end;
        Some(at)
    }
}

/// What a premade init is made from: the solver's and the sandbox's parts
/// of a launch plan.
#[derive(Debug)]
pub(crate) struct Maker {
    pub(crate) solver_path: PathBuf,
    pub(crate) solver: OwnedFd,
    /// The run root (the monitor's working directory).
    pub(crate) root: OwnedFd,
    pub(crate) view: Arc<ViewPlan>,
    pub(crate) rules: ViewRules,
    /// `None` where Landlock is unavailable.
    pub(crate) policy: Option<Arc<FsPolicy>>,
    pub(crate) filter: Option<Arc<Filter>>,
    pub(crate) stacks: Arc<CloneStack>,
    pub(crate) cgroups: Option<Arc<CgroupPool>>,
    pub(crate) net_pool: Option<Arc<NetPool>>,
}

impl Maker {
    /// Makes one premade init: returns once it waits for its launch.
    /// `check_kernel`: the init first finds out that the kernel clones out
    /// of a detached tree, as its launch will (the pool's first init).
    fn make(&self, check_kernel: bool) -> io::Result<Premade> {
        let mut cgroup = match &self.cgroups {
            Some(c) => Some(c.take(&Limits::default())?),
            None => None,
        };
        let net = match &self.net_pool {
            Some(pool) if self.view.private_network() => pool.take(),
            _ => None,
        };
        let ruleset = match &self.policy {
            // Without the run's rules: the init adds them in the view.
            Some(p) => p
                .ruleset(self.root.as_fd(), None, self.solver.as_fd(), &[])
                .map_err(|_| io::Error::other("landlock ruleset"))?,
            None => None,
        };
        let mut request = RequestMap::new()?;
        let (ends, server) = spawn::run_pipes()?;
        let (go_rd, go_wr) = pipe_with(PipeFlags::CLOEXEC)?;
        let (ack_rd, ack_wr) = pipe_with(PipeFlags::CLOEXEC)?;
        // Only the slots of the view's sources are used before the launch.
        let run = self
            .view
            .run_mounts((0, 0), None, 0, 0)
            .map_err(|_| io::Error::other("view plan"))?;
        let empty = || CStrArray::new(std::iter::empty::<&str>()).ok_or(Errno::INVAL);
        let plan = ChildPlan {
            run_dir: self.root.try_clone()?,
            solver: self.solver.try_clone()?,
            ruleset,
            control: ends.control,
            status: ends.status,
            reaped: ends.reaped,
            cgroup: cgroup
                .as_mut()
                .map(RunCgroup::take_join_fds)
                .unwrap_or_default(),
            pid_namespace: true,
            id_maps: IdMaps::for_server(),
            view: Some(ViewChild {
                plan: Arc::clone(&self.view),
                run,
                rules: self.rules,
                net,
            }),
            seccomp: self.filter.clone(),
            rlimits: RlimitPlan::new(0, 0, 0, None),
            exec: ExecPlan {
                argv: empty()?,
                envp: empty()?,
            },
            stacks: Arc::clone(&self.stacks),
            premade: Some(PremadeChild {
                go: go_rd,
                ack: ack_wr,
                request: request.ptr(),
                tree: -1,
                check_kernel,
            }),
        };
        // Nothing is ever `exec`ed from this command: the child side never
        // returns to the standard library, whose spawn returns once the
        // monitor and the init have closed its error pipe (the init waits
        // for its launch then).
        let mut cmd = std::process::Command::new(&self.solver_path);
        cmd.env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        spawn::install_std(&mut cmd, plan);
        let spawned = cmd.spawn();
        // Closes this process's copies of the child-side descriptors.
        drop(cmd);
        let mut child = spawned?;
        let monitor = Monitor::of(&child);
        let (Some(stdout), Some(stderr), Ok(monitor)) =
            (child.stdout.take(), child.stderr.take(), monitor)
        else {
            // Dropping the control pipe's write end kills the init; the
            // monitor is then reaped here.
            drop(server.control);
            let _ = child.wait();
            return Err(io::Error::other("premade init half made"));
        };
        // Zeroes the header (`used` 0: no request yet).
        request.clear();
        Ok(Premade {
            control: Some(server.control),
            monitor: Some(monitor),
            pipes: Some(Pipes {
                status: server.status,
                reaped: server.reaped,
                stdout: stdout.into(),
                stderr: stderr.into(),
            }),
            go: go_wr,
            ack: ack_rd,
            request,
            cgroup,
        })
    }
}

impl RequestMap {
    fn clear(&mut self) {
        // SAFETY: the header's bytes at the mapping's start.
        unsafe { std::ptr::write_bytes(self.base, 0, Request::ARENA) };
    }
}

/// Whether a premade init's launch failed because the run directory's name
/// did not lead to the server's run directory (renamed or removed since it
/// was resolved, or something else in its place): the ordinary launch,
/// which goes by the descriptor, is then tried.
pub(crate) fn by_name_failed(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ELOOP | libc::EXDEV)
    )
}

/// A monitor process made by a pool: its pid and a pidfd (the server's
/// runtime plays no part in its making, so the monitor is waited for
/// through the pidfd, not the runtime's child handling).
#[derive(Debug)]
pub(crate) struct Monitor {
    pid: u32,
    pidfd: OwnedFd,
}

impl Monitor {
    fn of(child: &std::process::Child) -> io::Result<Self> {
        let pid = child.id();
        let raw =
            Pid::from_raw(i32::try_from(pid).map_err(|_| Errno::INVAL)?).ok_or(Errno::INVAL)?;
        // The child is unreaped: its pid names it alone.
        let pidfd = rustix::process::pidfd_open(raw, PidfdFlags::empty())?;
        Ok(Self { pid, pidfd })
    }

    /// Waits (blocking) for the monitor's end and reaps it.
    fn reap_blocking(&self) {
        if let Err(e) = wait_pidfd(&self.pidfd) {
            tracing::error!(error = %e, "reaping a premade init's monitor failed");
        }
    }
}

/// One premade init, waiting for its launch: the server's ends of its
/// pipes, its monitor, request mapping and cgroup. Dropped unused, it is
/// killed (its control pipe hangs up) and its monitor reaped off the
/// caller's thread when there is a runtime.
#[derive(Debug)]
pub(crate) struct Premade {
    control: Option<OwnedFd>,
    monitor: Option<Monitor>,
    pipes: Option<Pipes>,
    go: OwnedFd,
    ack: OwnedFd,
    request: RequestMap,
    cgroup: Option<RunCgroup>,
}

/// The server's ends of a premade init's pipes that its run keeps.
#[derive(Debug)]
struct Pipes {
    status: OwnedFd,
    reaped: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// A premade init whose solver has started: what the run keeps.
#[derive(Debug)]
pub(crate) struct Started {
    pub(crate) monitor: Reaper,
    pub(crate) control: OwnedFd,
    pub(crate) status: OwnedFd,
    pub(crate) reaped: OwnedFd,
    pub(crate) stdout: OwnedFd,
    pub(crate) stderr: OwnedFd,
    pub(crate) cgroup: Option<RunCgroup>,
}

impl Premade {
    /// Writes the run's request and its cgroup's limits; `false` when the
    /// request does not fit or the limits could not be written (the init
    /// is then discarded, and the ordinary path taken).
    pub(crate) fn prepare(
        &mut self,
        limits: &Limits,
        rlimits: RlimitPlan,
        run_name: &CStr,
        run: &RunView<'_>,
        exec: &ExecPlan,
    ) -> bool {
        if !self.request.write(rlimits, run_name, run, exec) {
            return false;
        }
        if let Some(c) = &mut self.cgroup
            && let Err(e) = c.apply(limits)
        {
            tracing::warn!(error = %e, "premade init: cgroup limits not written");
            return false;
        }
        true
    }

    /// Starts the prepared run: says go and waits for the init's answer
    /// (the solver has `exec`ed, or the error that stopped it). Must be
    /// called in a runtime. On failure the init is discarded.
    pub(crate) fn go(mut self) -> io::Result<Started> {
        self.go_and_wait()?;
        let (Some(control), Some(monitor), Some(pipes)) =
            (self.control.take(), self.monitor.take(), self.pipes.take())
        else {
            return Err(io::Error::other("premade init spent"));
        };
        let monitor = Reaper {
            pid: monitor.pid,
            pidfd: Arc::new(monitor.pidfd),
            reaped: false,
        };
        Ok(Started {
            monitor,
            control,
            status: pipes.status,
            reaped: pipes.reaped,
            stdout: pipes.stdout,
            stderr: pipes.stderr,
            cgroup: self.cgroup.take(),
        })
    }

    /// Writes the `go` byte and waits for the init's answer.
    fn go_and_wait(&self) -> io::Result<()> {
        rustix::io::write(&self.go, &[1u8])?;
        let timeout = Timespec {
            tv_sec: ACK_TIMEOUT.as_secs() as _,
            tv_nsec: 0,
        };
        let mut answer = [0u8; 4];
        let mut got = 0;
        while got < answer.len() {
            let mut set = [PollFd::new(&self.ack, PollFlags::IN)];
            match rustix::event::poll(&mut set, Some(&timeout)) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::TimedOut)),
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            match rustix::io::read(&self.ack, &mut answer[got..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
                Ok(n) => got += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        match i32::from_ne_bytes(answer) {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}

impl Drop for Premade {
    /// Kills the init (its monitor does, when the control pipe hangs up),
    /// reaps the monitor and removes the cgroup, before returning: what was
    /// made ahead goes with its pool, as the cgroups and namespaces made
    /// ahead do. A millisecond or two, on a path that is not a launch's
    /// (a pool dropped with its sandbox, or an init discarded unused).
    fn drop(&mut self) {
        self.control = None;
        let Some(monitor) = self.monitor.take() else {
            return;
        };
        monitor.reap_blocking();
        if let Some(mut c) = self.cgroup.take() {
            for _ in 0..50 {
                if c.remove() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// The monitor of a run launched from a premade init, waited for through
/// its pidfd. The wait blocks a thread of the runtime's blocking pool: it
/// is off the run's answer (which comes on the init's record, before the
/// monitor ends) and only follows it, or a kill.
#[derive(Debug)]
pub(crate) struct Reaper {
    pid: u32,
    pidfd: Arc<OwnedFd>,
    reaped: bool,
}

impl Reaper {
    /// The monitor's pid, until it is reaped.
    pub(crate) fn id(&self) -> Option<u32> {
        (!self.reaped).then_some(self.pid)
    }

    /// Waits for the monitor's end and reaps it.
    pub(crate) async fn wait(&mut self) -> io::Result<()> {
        if self.reaped {
            return Ok(());
        }
        let fd = Arc::clone(&self.pidfd);
        tokio::task::spawn_blocking(move || wait_pidfd(&fd))
            .await
            .map_err(io::Error::other)??;
        self.reaped = true;
        Ok(())
    }

    /// Sends the monitor `SIGKILL`.
    pub(crate) fn start_kill(&self) -> io::Result<()> {
        if !self.reaped {
            rustix::process::pidfd_send_signal(&*self.pidfd, Signal::KILL)?;
        }
        Ok(())
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        let fd = Arc::clone(&self.pidfd);
        let reap = move || {
            if let Err(e) = wait_pidfd(&fd) {
                tracing::error!(error = %e, "reaping a sandbox monitor failed");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(reap)),
            Err(_) => drop(std::thread::spawn(reap)),
        }
    }
}

/// Waits (blocking) for the end of the process `pidfd` names, a child of
/// this process, and reaps it.
fn wait_pidfd(pidfd: &OwnedFd) -> io::Result<()> {
    loop {
        match rustix::process::waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED) {
            Err(Errno::INTR) => {}
            r => return r.map(drop).map_err(Into::into),
        }
    }
}

/// A pool's solver id and run root (device and inode).
type PoolKey = (String, (u64, u64));

/// One (solver, run root)'s pool, with the run root's directory (to tell
/// when it is gone).
#[derive(Debug)]
struct Pool {
    root: OwnedFd,
    ready: MadeAhead<Premade>,
}

/// The pools of premade inits, one per (solver, run root), started at the
/// first launch for the pair.
#[derive(Debug)]
pub(crate) struct PremadePools {
    target: usize,
    pools: Mutex<BTreeMap<PoolKey, Pool>>,
}

impl PremadePools {
    /// Pools that keep `target` premade inits each.
    pub(crate) fn new(target: usize) -> Self {
        Self {
            target,
            pools: Mutex::new(BTreeMap::new()),
        }
    }

    /// A premade init for `solver` under the run root `root` (device and
    /// inode), if one is ready; the first call for a pair starts its pool
    /// with `maker` (the launch then takes the ordinary path).
    pub(crate) fn take(
        &self,
        solver: &str,
        root: (u64, u64),
        maker: impl FnOnce() -> Option<Maker>,
    ) -> Option<Premade> {
        self.with_pool(solver, root, maker, MadeAhead::take)
            .flatten()
    }

    /// Starts the pool of `(solver, root)` with `maker` if it has none;
    /// how many premade inits it holds ready (`None`: no pool, none can be
    /// started, or its thread stopped at an error: none will be made).
    pub(crate) fn ready(
        &self,
        solver: &str,
        root: (u64, u64),
        maker: impl FnOnce() -> Option<Maker>,
    ) -> Option<usize> {
        self.with_pool(solver, root, maker, |p| (!p.stopped()).then(|| p.ready()))
            .flatten()
    }

    fn with_pool<R>(
        &self,
        solver: &str,
        root: (u64, u64),
        maker: impl FnOnce() -> Option<Maker>,
        f: impl FnOnce(&MadeAhead<Premade>) -> R,
    ) -> Option<R> {
        if self.target == 0 {
            return None;
        }
        let mut pools = self.pools.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (solver.to_owned(), root);
        if let Some(pool) = pools.get(&key) {
            return Some(f(&pool.ready));
        }
        // The pools of run roots removed since (their premade inits could
        // never be used) go first: killed and reaped here.
        pools.retain(|_, p| rustix::fs::fstat(&p.root).is_ok_and(|st| st.st_nlink > 0));
        if pools.len() >= MAX_POOLS {
            return None;
        }
        let maker = maker()?;
        let root = maker.root.try_clone().ok()?;
        // Whether an init of this pool has shown that the kernel clones out
        // of a detached tree (every later one skips the try).
        let mut checked = false;
        match MadeAhead::start_settled(
            "hardened-mcp-premade",
            "premade inits",
            self.target,
            Vec::new(),
            move || {
                let made = maker.make(!checked);
                checked |= made.is_ok();
                made
            },
            Some(SETTLE),
        ) {
            Ok(ready) => {
                // Nothing is ready yet: the thread has just started.
                let none = f(&ready);
                pools.insert(key, Pool { root, ready });
                Some(none)
            }
            Err(e) => {
                tracing::info!(error = %e, "premade inits not made (no pool thread)");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(items: &[&str]) -> CStrArray {
        CStrArray::new(items.iter().copied()).unwrap()
    }

    fn strings(mut p: *const *const libc::c_char) -> Vec<String> {
        let mut out = Vec::new();
        // SAFETY: a null-terminated array of pointers to NUL-terminated
        // strings in the test's mapping, alive for the loop.
        unsafe {
            while !(*p).is_null() {
                out.push(CStr::from_ptr(*p).to_string_lossy().into_owned());
                p = p.add(1);
            }
        }
        out
    }

    #[test]
    fn a_request_reads_back_as_it_was_written() {
        let mut map = RequestMap::new().unwrap();
        assert!(!map.request().is_written(), "a fresh mapping holds none");
        let exec = ExecPlan {
            argv: array(&["/sandbox/bin/heat", "--steps", "10"]),
            envp: array(&["LANG=C", "OMP_NUM_THREADS=2"]),
        };
        let run = RunView {
            run_dir: (7, 8),
            writable: Some(Writable {
                name: c"out",
                staged: c"/tmp/work/out",
                in_view: c"/work/out",
                id: (7, 9),
            }),
            tmp_options: c"mode=0700,size=4096,nr_inodes=64",
            shm_options: c"mode=0700,size=8192,nr_inodes=64",
        };
        let rlimits = RlimitPlan::new(60, 1 << 20, 64, Some(1 << 30));
        assert!(map.write(rlimits, c"r-abc", &run, &exec));
        let r = map.request();
        assert!(r.is_written());
        assert_eq!(r.run_name(), c"r-abc");
        let back = r.run_view();
        assert_eq!(back.run_dir, (7, 8));
        assert_eq!(back.tmp_options, run.tmp_options);
        assert_eq!(back.shm_options, run.shm_options);
        let w = back.writable.unwrap();
        assert_eq!(
            (w.name, w.staged, w.in_view, w.id),
            (c"out", c"/tmp/work/out", c"/work/out", (7, 9))
        );
        assert_eq!(strings(r.argv()), ["/sandbox/bin/heat", "--steps", "10"]);
        assert_eq!(strings(r.envp()), ["LANG=C", "OMP_NUM_THREADS=2"]);
        let l = r.rlimits();
        assert_eq!((l.cpu.rlim_cur, l.cpu.rlim_max), (60, 61));
        assert_eq!(l.open_files.rlim_max, 64);
        assert_eq!(l.address_space.map(|a| a.rlim_max), Some(1 << 30));

        // Another request over it: no writable subdirectory, no address
        // space limit, an empty environment.
        let exec = ExecPlan {
            argv: array(&["x"]),
            envp: array(&[]),
        };
        let run = RunView {
            writable: None,
            ..run
        };
        assert!(map.write(RlimitPlan::new(1, 2, 3, None), c"r-x", &run, &exec));
        let r = map.request();
        assert_eq!(r.run_name(), c"r-x");
        assert!(r.run_view().writable.is_none());
        assert!(r.rlimits().address_space.is_none());
        assert_eq!(strings(r.argv()), ["x"]);
        assert!(strings(r.envp()).is_empty());
    }

    #[test]
    fn a_request_larger_than_the_mapping_is_refused_whole() {
        let mut map = RequestMap::new().unwrap();
        let big = "a".repeat(64 * 1024);
        let run = RunView {
            run_dir: (1, 2),
            writable: None,
            tmp_options: c"size=1",
            shm_options: c"size=1",
        };
        let limits = RlimitPlan::new(1, 1, 1, None);
        let too_big = ExecPlan {
            argv: array(&[&big, &big, &big, &big]),
            envp: array(&[]),
        };
        assert!(
            !map.write(limits, c"r", &run, &too_big),
            "256 KiB of arguments fit"
        );
        assert!(!map.request().is_written(), "half a request was written");
        let fits = ExecPlan {
            argv: array(&[&big, &big, &big]),
            envp: array(&[]),
        };
        assert!(map.write(limits, c"r", &run, &fits), "192 KiB do not");
    }

    #[test]
    fn only_a_name_that_misses_the_run_directory_falls_back() {
        for e in [
            libc::ENOENT,
            libc::ENOTDIR,
            libc::ESTALE,
            libc::ELOOP,
            libc::EXDEV,
        ] {
            assert!(by_name_failed(&io::Error::from_raw_os_error(e)), "{e}");
        }
        for e in [libc::EPERM, libc::EACCES, libc::ENOMEM, libc::EINVAL] {
            assert!(!by_name_failed(&io::Error::from_raw_os_error(e)), "{e}");
        }
        assert!(!by_name_failed(&io::Error::other("timed out")));
    }
}
