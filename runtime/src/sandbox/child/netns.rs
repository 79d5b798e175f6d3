//! The child that makes a network namespace for the pool
//! ([`host::netns`](super::super::host::netns)): a
//! `clone(CLONE_VM | CLONE_VFORK | CLONE_FILES)` child born in a new user
//! and network namespace, which writes its own id maps, opens
//! `/proc/self/ns/{user,net}` into the shared descriptor table and exits.
//! Sharing the address space means no page tables are copied (the server's
//! may be large); the calling thread is suspended until the child exits and
//! blocks every signal ([`block_all_signals`](super::block_all_signals)),
//! so the child runs no handler and nothing of the server's memory changes
//! under it.

use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};

use rustix::fs::{Mode, OFlags};

use super::plan::{IdMaps, NetNs};
use super::stack::stack_top;
use super::sys::{cvt, wait_for, write_maps};

/// Stack of the namespace-making child. It makes a handful of system calls
/// through the C library; 64 KiB is far more than that needs.
const CHILD_STACK: usize = 64 * 1024;

/// What the child reads and writes; lives on the parent's stack, which the
/// child shares (`CLONE_VM`) and the parent does not touch until the child
/// has exited (`CLONE_VFORK`).
struct ChildArgs<'a> {
    maps: &'a IdMaps,
    user: RawFd,
    net: RawFd,
    errno: libc::c_int,
}

/// Makes one namespace pair (see the module documentation).
pub(crate) fn make(maps: &IdMaps) -> io::Result<NetNs> {
    let mut stack = vec![0u8; CHILD_STACK];
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
            stack_top(stack.as_mut_ptr_range().end as usize),
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
        write_maps(args.maps)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_namespaces_are_new_and_distinct() {
        let id = |st: rustix::fs::Stat| (st.st_dev, st.st_ino);
        let ns_id = |fd: &OwnedFd| id(rustix::fs::fstat(fd).unwrap());
        let own = |kind| id(rustix::fs::stat(format!("/proc/self/ns/{kind}")).unwrap());
        let Ok(a) = make(&IdMaps::identity()) else {
            // A host without unprivileged user namespaces: nothing to test,
            // and the pool is simply not used there.
            return;
        };
        let b = make(&IdMaps::identity()).unwrap();
        assert_ne!(ns_id(&a.net), own("net"));
        assert_ne!(ns_id(&a.user), own("user"));
        assert_ne!(ns_id(&a.net), ns_id(&b.net));
        assert_ne!(ns_id(&a.user), ns_id(&b.user));
    }
}
