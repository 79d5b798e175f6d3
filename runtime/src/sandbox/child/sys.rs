//! System-call helpers of the child side, and the parent watch.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, RawFd};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};
use rustix::thread::UnshareFlags;

use super::plan::{IdMaps, NetNs};

/// Exit code of a freshly forked init or solver whose parent had already
/// died when it armed `PR_SET_PDEATHSIG` (so no signal would ever come).
pub(super) const EXIT_PARENT_GONE: libc::c_int = 124;

/// Lets a freshly forked child tell whether its parent was still alive when
/// the child armed `PR_SET_PDEATHSIG`: a parent that dies between the fork
/// and the `prctl` sends no signal, and the child would live on unwatched.
/// Prepared (pipe created, pid recorded) before the fork; both sides then
/// only make system calls.
#[derive(Debug, Clone, Copy)]
pub(super) struct ParentWatch {
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
    pub(super) fn prepare(child_is_ns_init: bool) -> io::Result<Self> {
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
    pub(super) fn parent(self) -> RawFd {
        close_fd(self.alive_rd);
        self.alive_wr
    }

    /// In the child after the fork: arms `PR_SET_PDEATHSIG`, then `_exit`s if
    /// the parent is already gone (re-parented, or its pipe end closed).
    pub(super) fn child(self) -> io::Result<()> {
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
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        // SAFETY: the pipe's read end, which this process owns and closes
        // only after this check.
        let rd = unsafe { BorrowedFd::borrow_raw(self.alive_rd) };
        loop {
            let mut set = [PollFd::new(&rd, PollFlags::IN)];
            match poll(&mut set, Some(&Timespec::default())) {
                // Nobody writes to the pipe: any event is the hang-up.
                Ok(n) => return n > 0 && !set[0].revents().is_empty(),
                Err(Errno::INTR) => {}
                // Cannot tell: assume the worst rather than run unwatched.
                Err(_) => return true,
            }
        }
    }
}

/// Enters the pool's namespaces `ns`: its user namespace, which owns its
/// network namespace, then the network namespace.
pub(super) fn enter_net(ns: &NetNs) -> io::Result<()> {
    use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
    move_into_link_name_space(ns.user.as_fd(), Some(LinkNameSpaceType::User))?;
    move_into_link_name_space(ns.net.as_fd(), Some(LinkNameSpaceType::Network))?;
    Ok(())
}

/// `unshare(flags)` of namespaces only: the descriptor table is never
/// unshared (`FILES` is taken out), the one case that makes the call
/// unsafe for a process of several threads.
pub(super) fn unshare(flags: UnshareFlags) -> io::Result<()> {
    // SAFETY: without `FILES`, no thread can be left with descriptors of
    // another table; the callers are single-threaded children anyway.
    unsafe { rustix::thread::unshare_unsafe(flags.difference(UnshareFlags::FILES)) }?;
    Ok(())
}

/// Denies `setgroups` and writes `maps` in the user namespace this process
/// just created.
pub(super) fn write_maps(maps: &IdMaps) -> io::Result<()> {
    write_whole(c"/proc/self/setgroups", b"deny")?;
    write_whole(c"/proc/self/uid_map", &maps.uid_map)?;
    write_whole(c"/proc/self/gid_map", &maps.gid_map)
}

/// Writes `bytes` to the file `path` in one write (the kernel takes an id
/// map in a single write only).
fn write_whole(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, rustix::fs::Mode::empty())?;
    if rustix::io::write(&fd, bytes)? == bytes.len() {
        Ok(())
    } else {
        Err(Errno::IO.into())
    }
}

/// Closes every descriptor except the (at most three) given ones; `-1`
/// entries are ignored.
pub(super) fn close_all_except<const N: usize>(mut keep: [RawFd; N]) {
    // In-place sort of a fixed array: no allocation.
    keep.sort_unstable();
    let mut low: libc::c_uint = 0;
    for k in keep {
        let Ok(k) = libc::c_uint::try_from(k) else {
            continue;
        };
        if k > low {
            close_range(low, k - 1, 0);
        }
        low = k.saturating_add(1);
    }
    close_range(low, libc::c_uint::MAX, 0);
}

/// Closes a descriptor this process owns, through rustix: no `errno`
/// written (see `monitor::spawn_init`), and a failure leaves nothing to do.
pub(super) fn close_fd(fd: RawFd) {
    // SAFETY: close of a descriptor this process owns and no longer uses.
    unsafe { rustix::io::close(fd) };
}

/// `close_range(first, last, flags)`, its raw result. With `flags` 0 and
/// `first <= last` (`close_all_except`) the call cannot fail, so the C
/// library's wrapper writes no `errno` (see `monitor::spawn_init`).
pub(super) fn close_range(first: u32, last: u32, flags: u32) -> libc::c_long {
    // SAFETY: close_range with integer arguments; the only descriptors this
    // process still needs are outside the range, or (`CLOSE_RANGE_CLOEXEC`)
    // only marked close-on-exec.
    unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) }
}

/// Restores the default disposition of every signal and an empty mask: the
/// server's handlers (tokio's SIGCHLD handler writes to a descriptor number
/// that may be reused here) must not run in the monitor or init.
pub(super) fn reset_signals() {
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
pub(super) fn raw_fork() -> io::Result<libc::pid_t> {
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
    cvt(r).map(|p| p as libc::pid_t)
}

pub(super) fn exit(code: libc::c_int) -> ! {
    // SAFETY: _exit never returns and runs no destructors or handlers.
    unsafe { libc::_exit(code) }
}

/// Waits for this process's child `pid` to end and returns its wait
/// status, waiting again when a signal interrupts the wait. System calls
/// only, through rustix (no `errno`: usable in a monitor whose memory the
/// init shares, `monitor::spawn_init`), so also in a child of a forked
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

/// `wait4(pid, options)`: its result, the wait status and the user +
/// system CPU µs of what it reaped; the error in `errno` (not for a
/// monitor beside its init, `monitor::spawn_init`).
pub(super) fn wait4(pid: libc::pid_t, options: libc::c_int) -> (libc::pid_t, libc::c_int, u64) {
    let mut ws: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pointers to live locals.
    let r = unsafe { libc::wait4(pid, &mut ws, options, &mut ru) };
    let us = |t: libc::timeval| {
        (t.tv_sec.max(0) as u64)
            .saturating_mul(1_000_000)
            .saturating_add(t.tv_usec.max(0) as u64)
    };
    (r, ws, us(ru.ru_utime).saturating_add(us(ru.ru_stime)))
}

/// Whether the C library's last error (`errno`) is `code`.
pub(super) fn last_error_is(code: libc::c_int) -> bool {
    io::Error::last_os_error().raw_os_error() == Some(code)
}

/// A C-library or raw system call's return value as a result: negative
/// means `errno`.
pub(super) fn cvt<T: Ord + Default>(r: T) -> io::Result<T> {
    if r < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Blocks every signal in the calling thread (the pool's own), so that the
/// namespace-making child, which inherits the mask and shares the
/// server's memory, never runs a handler.
pub(crate) fn block_all_signals() {
    // SAFETY: pointers to a live local set; only this thread's mask changes.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stages the parent-death race on purpose: a middle process prepares a
    /// [`ParentWatch`] and forks; when `parent_dies` it exits at once, while
    /// its child waits 200 ms before arming `PR_SET_PDEATHSIG`. Returns
    /// whether the child got past [`ParentWatch::child`] (it says so on a
    /// pipe). `ns_init`: the child is pid 1 of a new PID namespace, as the
    /// init is; `None` when this host cannot make that namespace or fork in it.
    fn child_goes_on(parent_dies: bool, ns_init: bool) -> Option<bool> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let middle = raw_fork().unwrap();
        if middle == 0 {
            // Child of a multithreaded test process: system calls only.
            let user_pid = UnshareFlags::NEWUSER | UnshareFlags::NEWPID;
            if ns_init && unshare(user_pid).is_err() {
                exit(90);
            }
            let Ok(watch) = ParentWatch::prepare(ns_init) else {
                exit(91);
            };
            match raw_fork() {
                Ok(0) => {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    if watch.child().is_err() {
                        exit(92);
                    }
                    let _ = rustix::io::write(&wr, b"S");
                    exit(0);
                }
                Ok(child) => {
                    let _alive = watch.parent();
                    if !parent_dies {
                        let _ = wait_for(child);
                    }
                    exit(0);
                }
                Err(_) => exit(93),
            }
        }
        drop(wr);
        match wait_for(middle).unwrap() {
            0 => {}
            ws if ns_init && libc::WIFEXITED(ws) && [90, 93].contains(&libc::WEXITSTATUS(ws)) => {
                return None;
            }
            ws => panic!("middle process failed: {ws:#x}"),
        }
        // Readable on the report byte or on EOF (the child exited).
        let mut set = [PollFd::new(&rd, PollFlags::IN)];
        let five_s = Timespec::try_from(std::time::Duration::from_secs(5)).unwrap();
        assert_eq!(poll(&mut set, Some(&five_s)).unwrap(), 1, "no answer");
        let mut b = [0u8; 1];
        Some(rustix::io::read(&rd, &mut b).unwrap() == 1 && b == *b"S")
    }

    #[test]
    fn child_of_a_parent_that_died_before_pdeathsig_exits() {
        let orphan = child_goes_on(true, false);
        assert_eq!(orphan, Some(false), "orphan went on unwatched");
        // Control: the same child, whose parent lives, goes on.
        assert_eq!(child_goes_on(false, false), Some(true));
    }

    #[test]
    fn namespace_init_whose_parent_died_before_pdeathsig_exits() {
        // getppid() of a namespace's pid 1 is 0 either way: only the pipe
        // can tell.
        let Some(orphan) = child_goes_on(true, true) else {
            eprintln!("no user + PID namespaces on this host; nothing to check");
            return;
        };
        assert!(!orphan, "orphan init went on unwatched");
        assert_eq!(child_goes_on(false, true), Some(true));
    }
}
