//! The solver between its `clone` and its `exec`: it hardens itself and
//! `exec`s the registered file.

use std::io;
use std::os::fd::{AsFd, AsRawFd, IntoRawFd, RawFd};

use rustix::fs::{Mode, OFlags};

use super::mount::{self, VIEW_RUN_DIR_C};
use super::plan::{ChildPlan, Filter, RlimitPlan, ViewRules};
use super::sys::{ParentWatch, close_range, cvt, last_error_is, wait_for};

/// Exit code of a solver that could not harden itself or `exec`.
pub(super) const EXIT_SPAWN_FAILED: libc::c_int = 127;

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
/// plan's [`CloneStack`](super::CloneStack), which hardens itself and
/// `exec`s while this process is suspended. Returns its pid once it has, or
/// the error that stopped it (the child has exited and is reaped; the error
/// reaches the server as the spawn's error).
///
/// The child changes only what is its own (session, working directory,
/// credentials, Landlock domain, seccomp filter, rlimits, descriptor table:
/// `CLONE_VM` shares none of these) and writes nothing of the shared memory
/// but its own stack, `args` and `errno`, which this process does not read
/// while it is suspended. Every signal has its default disposition here
/// ([`reset_signals`](super::sys::reset_signals)): no handler runs in it.
pub(super) fn spawn_solver(plan: &ChildPlan, watch: ParentWatch) -> io::Result<libc::pid_t> {
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
        rustix::process::chdir(VIEW_RUN_DIR_C)?;
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
        cvt(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) })?;
    }
    cvt(close_range(3, u32::MAX, libc::CLOSE_RANGE_CLOEXEC))?;
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
            let flags = OFlags::PATH | OFlags::CLOEXEC;
            let fd = rustix::fs::open(v.plan.solver.as_c_str(), flags, Mode::empty())?;
            mount::same_file(fd.as_fd(), v.plan.solver_id)?;
            Ok(fd.into_raw_fd())
        }
        // A `dup` is not close-on-exec; 0 to 2 are the standard streams.
        None => Ok(rustix::io::dup(&plan.solver)?.into_raw_fd()),
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
            && last_error_is(libc::EINVAL)
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
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty())?;
        let attr = PathBeneath {
            allowed_access: access,
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: landlock_add_rule with a live attribute struct.
        cvt(unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                LANDLOCK_RULE_PATH_BENEATH,
                &attr as *const PathBeneath,
                0u32,
            )
        })?;
    }
    Ok(())
}

/// Installs the seccomp filter and `exec`s `fd` with the prepared argument
/// vector and environment. Returns only on failure.
fn exec(plan: &ChildPlan, fd: RawFd) -> io::Result<()> {
    if let Some(filter) = &plan.seccomp {
        install_filter(filter)?;
    }
    let (dirfd, path, flags) = match &plan.view {
        // In the view the path names the file just checked through `fd`:
        // the view is this process's private, read-only mount tree, and
        // nothing else runs in it yet.
        Some(v) => (libc::AT_FDCWD, v.plan.solver.as_c_str(), 0),
        None => (fd, c"", libc::AT_EMPTY_PATH),
    };
    // SAFETY: execveat with a C string and null-terminated arrays owned by
    // `plan`; returns only on failure.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            dirfd,
            path.as_ptr(),
            plan.exec.argv.as_ptr(),
            plan.exec.envp.as_ptr(),
            flags,
        )
    };
    Err(io::Error::last_os_error())
}

/// Installs `filter` (no-new-privs must be set).
pub(super) fn install_filter(filter: &Filter) -> io::Result<()> {
    let program = filter.program();
    let prog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: seccomp(SET_MODE_FILTER) with a live program; the kernel
    // copies it.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_uint,
            &prog as *const libc::sock_fprog,
        )
    })?;
    Ok(())
}
