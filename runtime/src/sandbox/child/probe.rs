//! What the host supports, found by doing it in a throwaway child.

use std::os::fd::OwnedFd;

use rustix::thread::UnshareFlags;

use super::monitor::{join_cgroup, view_flags, write_id_maps};
use super::mount::{self, RunMounts, ViewPlan};
use super::plan::{Filter, IdMaps, NetNs};
use super::solver::install_filter;
use super::sys::{enter_net, exit, last_error_is, raw_fork, unshare, wait_for};

// The bits of `probe_host`'s exit code; `MARK`: the probe itself ran.
const PID_NS: libc::c_int = 1;
const VIEW: libc::c_int = 2;
const SECCOMP: libc::c_int = 4;
const MARK: libc::c_int = 64;

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
    let Ok(pid) = raw_fork() else {
        return (false, false, false);
    };
    if pid == 0 {
        // Child of a possibly multithreaded process: system calls only, on
        // values prepared before the fork.
        let Some((plan, mut run, dir)) = view else {
            exit(MARK | probe_seccomp(filter));
        };
        let user_pid = UnshareFlags::NEWUSER | UnshareFlags::NEWPID;
        let view_ns = rustix::process::fchdir(dir).is_ok()
            && net.is_none_or(|n| enter_net(n).is_ok())
            && unshare(user_pid | view_flags(plan, net.is_some())).is_ok();
        let pid_ns = view_ns || unshare(user_pid).is_ok();
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
            Ok(g) => match wait_for(g) {
                Ok(ws) if libc::WIFEXITED(ws) => exit(libc::WEXITSTATUS(ws)),
                _ => exit(MARK),
            },
            Err(_) => exit(MARK | probe_seccomp(filter)),
        }
    }
    let bits = match wait_for(pid) {
        Ok(ws) if libc::WIFEXITED(ws) => libc::WEXITSTATUS(ws),
        _ => 0,
    };
    let has = |bit| bits & MARK != 0 && bits & bit != 0;
    (has(PID_NS), has(VIEW), has(SECCOMP))
}

/// In a throwaway child: installs `filter` and checks that it refuses a
/// nested user namespace and a netlink socket with `EPERM`. Returns
/// `SECCOMP` or 0.
fn probe_seccomp(filter: Option<&Filter>) -> libc::c_int {
    let Some(filter) = filter else {
        return 0;
    };
    if rustix::thread::set_no_new_privs(true).is_err() || install_filter(filter).is_err() {
        return 0;
    }
    let userns = unshare(UnshareFlags::NEWUSER)
        .err()
        .and_then(|e| e.raw_os_error())
        == Some(libc::EPERM);
    // SAFETY: socket with constant arguments (the throwaway child exits
    // with whatever it opened).
    let netlink = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, 0) } == -1
        && last_error_is(libc::EPERM);
    if userns && netlink { SECCOMP } else { 0 }
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
