//! What the host supports, found by doing it in a throwaway child.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use super::monitor::{join_cgroup, view_flags, write_id_maps};
use super::mount::{self, RunMounts, ViewPlan};
use super::plan::{Filter, IdMaps, NetNs};
use super::solver::install_filter;
use super::sys::{exit, raw_fork, wait_for};

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
                if view_ns && mount::enter(plan, &mut run).is_ok() {
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
