//! Network namespaces made ahead of the runs that use them.
//!
//! Creating a network namespace is the single most expensive step of a
//! sandboxed launch (the kernel runs every protocol's per-namespace setup:
//! about half a millisecond on a quiet machine, measured in
//! `docs/benchmarks.md`). Nothing in a fresh, empty namespace depends on the
//! run, so a background thread keeps a few ready and a launch takes one:
//! the cost leaves the launch's critical path without any sharing between
//! runs. **Every namespace serves exactly one run** and is closed by the
//! server as soon as that run's monitor holds it; no two runs ever see the
//! same loopback, port space or abstract-socket names.
//!
//! A namespace of the pool is owned by a user namespace of its own (a
//! network namespace can only be entered with `CAP_SYS_ADMIN` over its
//! owner), which maps the server's ids to themselves. A run's monitor
//! enters that user namespace, then the network namespace, and only then
//! `unshare`s its own user, PID, mount, IPC and UTS namespaces: the run's
//! user namespace is a child of the pool's, the solver's ids are mapped as
//! before, and the solver holds no capability over the network namespace
//! (its owner is an ancestor of the solver's user namespace).
//!
//! When the pool is empty (a burst of launches) or cannot be filled (a host
//! that refuses the second user namespace level), a launch creates its
//! network namespace itself, as it would without the pool: the pool only
//! ever changes when the work is done, never what a run gets.
//!
//! The namespace is made by a `clone(CLONE_VM | CLONE_VFORK | CLONE_FILES)`
//! child born in the two new namespaces: it writes its own id maps, opens
//! `/proc/self/ns/{user,net}` into the shared descriptor table and exits.
//! Sharing the address space means no page tables are copied (the server's
//! may be large); the calling thread is suspended until the child exits and
//! blocks every signal, so the child runs no handler and nothing of the
//! server's memory changes under it.

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};

use rustix::fs::{Mode, OFlags};

use super::ahead::MadeAhead;
use super::spawn::{cvt, wait_for};

/// Stack of the namespace-making child. It makes a handful of system calls
/// through the C library; 64 KiB is far more than that needs.
const CHILD_STACK: usize = 64 * 1024;

/// A fresh network namespace and the user namespace that owns it.
#[derive(Debug)]
pub(crate) struct NetNs {
    /// The owning user namespace (`/proc/<pid>/ns/user`).
    pub(crate) user: OwnedFd,
    /// The network namespace (`/proc/<pid>/ns/net`): only a loopback
    /// interface, down.
    pub(crate) net: OwnedFd,
}

/// A pool of ready network namespaces, refilled by a background thread.
/// Dropping the pool stops the thread.
#[derive(Debug)]
pub(crate) struct NetPool {
    ready: MadeAhead<NetNs>,
}

impl NetPool {
    /// Makes one namespace now (to find out whether the host allows it)
    /// and starts the thread that keeps `target` ready
    /// ([`SandboxConfig::made_ahead`](super::SandboxConfig::made_ahead)).
    /// `None` for a `target` of 0, when the host refuses or when the thread
    /// cannot start; launches then make their own namespaces.
    pub(crate) fn start(target: usize) -> Option<Self> {
        if target == 0 {
            return None;
        }
        let maps = Maps::identity();
        let first = match make(&maps) {
            Ok(ns) => ns,
            Err(e) => {
                tracing::info!(error = %e, "network namespaces are made per launch (no pool)");
                return None;
            }
        };
        let mut signals_blocked = false;
        let refill = move || {
            if !signals_blocked {
                block_all_signals();
                signals_blocked = true;
            }
            make(&maps)
        };
        match MadeAhead::start(
            "hardened-mcp-netns",
            "network namespaces",
            target,
            vec![first],
            refill,
        ) {
            Ok(ready) => Some(Self { ready }),
            Err(e) => {
                tracing::info!(error = %e, "network namespaces are made per launch (no pool)");
                None
            }
        }
    }

    /// A ready namespace, if there is one; wakes the thread to make the
    /// next.
    pub(crate) fn take(&self) -> Option<NetNs> {
        self.ready.take()
    }
}

/// Blocks every signal in the calling thread (the pool's own), so that the
/// namespace-making child, which inherits the mask and shares the
/// server's memory, never runs a handler.
fn block_all_signals() {
    // SAFETY: pointers to a live local set; only this thread's mask changes.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// The pool's user namespace maps the server's effective ids to
/// themselves, so that a run's user namespace below it maps the solver's
/// ids exactly as it would below the host's.
#[derive(Debug)]
struct Maps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Maps {
    fn identity() -> Self {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// What the child reads and writes; lives on the parent's stack, which the
/// child shares (`CLONE_VM`) and the parent does not touch until the child
/// has exited (`CLONE_VFORK`).
struct ChildArgs<'a> {
    maps: &'a Maps,
    user: RawFd,
    net: RawFd,
    errno: libc::c_int,
}

/// Makes one namespace pair (see the module documentation).
fn make(maps: &Maps) -> io::Result<NetNs> {
    let mut stack = vec![0u8; CHILD_STACK];
    // The stack grows down on every architecture this crate builds for;
    // the C library's `clone` wants its top, 16-byte aligned.
    let top = {
        let end = stack.as_mut_ptr_range().end as usize;
        (end & !15) as *mut libc::c_void
    };
    let mut args = ChildArgs {
        maps,
        user: -1,
        net: -1,
        errno: 0,
    };
    let flags = libc::CLONE_VM
        | libc::CLONE_VFORK
        | libc::CLONE_FILES
        | libc::CLONE_NEWUSER
        | libc::CLONE_NEWNET
        | libc::SIGCHLD;
    // SAFETY: `child` only makes system calls on `args` (reached through
    // the pointer, alive on this frame until after the wait below) and on
    // static strings, then returns, which `_exit`s the child. `CLONE_VFORK`
    // suspends this thread until then, and this thread blocks every signal
    // (inherited by the child), so nothing else runs on `stack` or touches
    // `args` meanwhile.
    let pid = cvt(unsafe {
        libc::clone(
            child,
            top,
            flags,
            std::ptr::from_mut(&mut args).cast::<libc::c_void>(),
        )
    })?;
    let ws = wait_for(pid)?;
    drop(stack);
    // SAFETY: the child opened these descriptors in the table it shared
    // with this process and nothing else owns them; -1 means not opened.
    let take = |fd: RawFd| (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    let (user, net) = (take(args.user), take(args.net));
    match (user, net) {
        (Some(user), Some(net)) if ws == 0 => Ok(NetNs { user, net }),
        _ if args.errno != 0 => Err(io::Error::from_raw_os_error(args.errno)),
        _ => Err(io::Error::from_raw_os_error(libc::ECHILD)),
    }
}

/// The child, in its new user and network namespaces: maps its ids and
/// opens both namespaces. Returns its exit code.
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed, alive and not
    // touched by the parent until this child exits (see `make`).
    let args = unsafe { &mut *arg.cast::<ChildArgs<'_>>() };
    let mut steps = || -> io::Result<()> {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &args.maps.uid_map)?;
        write_file(c"/proc/self/gid_map", &args.maps.gid_map)?;
        args.user = open_ns(c"/proc/self/ns/user")?;
        args.net = open_ns(c"/proc/self/ns/net")?;
        Ok(())
    };
    match steps() {
        Ok(()) => 0,
        Err(e) => {
            args.errno = e.raw_os_error().unwrap_or(libc::EIO);
            1
        }
    }
}

/// Opens a namespace file; the descriptor goes to the parent through the
/// shared table.
fn open_ns(path: &CStr) -> io::Result<RawFd> {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    Ok(fd.into_raw_fd())
}

fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    if rustix::io::write(&fd, bytes)? == bytes.len() {
        Ok(())
    } else {
        Err(io::Error::from(rustix::io::Errno::IO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns_id(fd: &OwnedFd) -> (u64, u64) {
        let st = rustix::fs::fstat(fd).unwrap();
        (st.st_dev as u64, st.st_ino as u64)
    }

    fn own(kind: &str) -> (u64, u64) {
        let st = rustix::fs::stat(format!("/proc/self/ns/{kind}")).unwrap();
        (st.st_dev as u64, st.st_ino as u64)
    }

    #[test]
    fn made_namespaces_are_new_and_distinct() {
        let Ok(a) = make(&Maps::identity()) else {
            // A host without unprivileged user namespaces: nothing to test,
            // and the pool is simply not used there.
            return;
        };
        let b = make(&Maps::identity()).unwrap();
        assert_ne!(ns_id(&a.net), own("net"));
        assert_ne!(ns_id(&a.user), own("user"));
        assert_ne!(ns_id(&a.net), ns_id(&b.net));
        assert_ne!(ns_id(&a.user), ns_id(&b.user));
    }

    #[test]
    fn pool_hands_out_each_namespace_once() {
        let Some(pool) = NetPool::start(2) else {
            return;
        };
        // Every namespace taken stays open (so no inode is reused) and
        // differs from every other and from ours.
        let mut held = Vec::new();
        let mut seen = std::collections::BTreeSet::from([own("net")]);
        for _ in 0..8 {
            // The thread refills in the background; an empty pool is a
            // valid answer (the launch makes its own).
            if let Some(ns) = pool.take() {
                assert!(seen.insert(ns_id(&ns.net)), "a namespace handed out twice");
                held.push(ns);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!held.is_empty());
    }
}
