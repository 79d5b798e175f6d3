//! The monitor and the init: the processes that watch the solver, kill
//! its tree and report its end.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::{
    DumpableBehavior, Pid, PidfdFlags, Signal, WaitOptions, set_dumpable_behavior,
};
use rustix::thread::UnshareFlags;

use super::mount::{self, ViewPlan};
use super::plan::{ChildPlan, IdMaps, ServerStrings};
use super::record::write_record;
use super::solver::{EXIT_SPAWN_FAILED, spawn_solver};
use super::sys::{
    ParentWatch, close_all_except, close_fd, enter_net, exit, last_error_is, reset_signals,
    unshare, wait_for, wait4, write_maps,
};

/// Exit code of a monitor or init that lost track of its child (a kernel
/// error that should not happen); the server treats the run as failed.
const EXIT_LOST_CHILD: libc::c_int = 125;

/// How often the monitor polls its child when `pidfd_open` is unavailable.
const POLL_FALLBACK: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 10_000_000,
};

/// The names (`comm`) of a run's monitor and init, in place of the server's.
const MONITOR_NAME: &CStr = c"sandbox-monitor";
const INIT_NAME: &CStr = c"sandbox-init";

/// Installs the child-side code of `plan` on `cmd`.
pub(crate) fn install(cmd: &mut std::process::Command, mut plan: ChildPlan) {
    use std::os::unix::process::CommandExt;
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
    set_dumpable_behavior(DumpableBehavior::NotDumpable)?;
    join_cgroup(&plan.cgroup)?;
    if plan.pid_namespace {
        let mut flags = UnshareFlags::NEWUSER | UnshareFlags::NEWPID;
        if !plan.cgroup.is_empty() {
            // The run sees its own cgroup as the root of the hierarchy
            // (`/proc/self/cgroup` names no host path).
            flags |= UnshareFlags::NEWCGROUP;
        }
        if let Some(v) = &plan.view {
            // The mount namespace copies this working directory's mount:
            // the init clones the run directory from it, by no path.
            rustix::process::fchdir(&plan.run_dir)?;
            flags |= view_flags(&v.plan, v.net.is_some());
            if let Some(net) = &v.net {
                // The pool's user namespace owns the network namespace;
                // the run's user namespace is created below it.
                enter_net(net)?;
            }
        }
        unshare(flags)?;
        write_id_maps(&plan.id_maps)?;
    }
    let watch = ParentWatch::prepare(plan.pid_namespace)?;
    let fds = MonitorFds {
        control: plan.control.as_raw_fd(),
        status: if plan.pid_namespace {
            -1
        } else {
            plan.status.as_raw_fd()
        },
        reaped: plan.reaped.as_raw_fd(),
        pid_namespace: plan.pid_namespace,
    };
    // From the init's start on, this process and the init share their
    // memory: this process no longer touches `plan`, and makes its system
    // calls without the C library's `errno` (see `spawn_init`). At the
    // process-group level this process starts the solver itself.
    let pid = if plan.pid_namespace {
        spawn_init(plan, watch)?
    } else {
        spawn_solver(plan, watch)?
    };
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
/// `clone(CLONE_VM)` child on the init's half of [`ChildPlan::stacks`].
/// Waits until the init has started the solver (which has `exec`ed) or
/// failed; returns its pid, or its error (the init has exited and is
/// reaped; the error reaches the server as the spawn's error).
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
    let (ready_rd, ready_wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let (ready_rd, ready_wr) = (ready_rd.into_raw_fd(), ready_wr.into_raw_fd());
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
            mount::enter(&v.plan, &mut v.run)?;
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

/// Moves this process (the monitor, a fresh single-threaded child of the
/// server) into the run's cgroup: `0` names the writer (on v1, through
/// `tasks`, the writing thread: the whole of this process). Everything the
/// run forks after this is born there.
pub(super) fn join_cgroup(procs: &[OwnedFd]) -> io::Result<()> {
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
pub(super) fn view_flags(plan: &ViewPlan, entered_net: bool) -> UnshareFlags {
    let base = UnshareFlags::NEWNS | UnshareFlags::NEWIPC | UnshareFlags::NEWUTS;
    if plan.private_network && !entered_net {
        base | UnshareFlags::NEWNET
    } else {
        base
    }
}

/// Maps the solver's ids in the user namespace this process just created.
/// The map files of a non-dumpable process belong to root, so the process
/// is dumpable for the three writes (it holds no secret the server does
/// not: only a same-uid process could attach in that window).
pub(super) fn write_id_maps(maps: &IdMaps) -> io::Result<()> {
    set_dumpable_behavior(DumpableBehavior::Dumpable)?;
    let r = write_maps(maps);
    set_dumpable_behavior(DumpableBehavior::NotDumpable)?;
    r
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
            // `pid` is our unreaped child, so its pid (and, after its
            // setsid, its process-group id) is not reused.
            if !fds.pid_namespace {
                let _ = rustix::process::kill_process_group(pid, Signal::KILL);
            }
            let _ = rustix::process::kill_process(pid, Signal::KILL);
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

/// Waits until the control pipe is readable (the [`KILL_WORD`](super::KILL_WORD) or a
/// hang-up; unless `killed`: then it is no longer watched) or the child may
/// have ended. Returns whether the wait failed (the caller kills rather
/// than run unwatched) and whether the control pipe said to kill.
fn wait_for_word(control: BorrowedFd<'_>, pidfd: Option<&OwnedFd>, killed: bool) -> (bool, bool) {
    let mut set = [
        PollFd::from_borrowed_fd(control, PollFlags::IN),
        PollFd::from_borrowed_fd(pidfd.map_or(control, AsFd::as_fd), PollFlags::IN),
    ];
    // Without a pidfd the set ends at the control pipe, and the wait at
    // the fallback interval.
    let end = if pidfd.is_some() { 2 } else { 1 };
    let timeout = pidfd.is_none().then_some(&POLL_FALLBACK);
    let r = rustix::event::poll(&mut set[usize::from(killed)..end], timeout);
    let hung_up = !killed && !set[0].revents().is_empty();
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
    let raw = pid.as_raw_nonzero().get();
    let (r, ws, cpu_us) = wait4(raw, libc::WNOHANG);
    if r == raw {
        Some(Some((ws, cpu_us)))
    } else if r >= 0 || last_error_is(libc::EINTR) {
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
        let (r, ws, us) = wait4(-1, 0);
        if r > 0 {
            cpu_us = cpu_us.saturating_add(us);
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
        } else if !last_error_is(libc::EINTR) {
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
