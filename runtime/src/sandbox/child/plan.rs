//! What the child side is given: every value it reads, prepared (opened,
//! encoded, allocated) before the fork.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use super::mount::{RunMounts, SOLVER_GID, SOLVER_UID, ViewPlan};
use super::stack::CloneStack;

/// The solver's rlimits; soft = hard but for the CPU time's (seconds): at
/// the soft limit `SIGXCPU`, at the hard one (a second later) `SIGKILL`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RlimitPlan {
    pub(crate) cpu: (u64, u64),
    pub(crate) file_size: u64,
    pub(crate) open_files: u64,
    pub(crate) address_space: Option<u64>,
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

    pub(super) fn as_ptr(&self) -> *const *const libc::c_char {
        self.ptrs.as_ptr()
    }

    /// The entries, for tests of a plan.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[CString] {
        &self._strings
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

/// A user namespace's id maps, as written to `/proc/self/{uid,gid}_map`:
/// one id each, mapped to the server's effective ids.
#[derive(Debug)]
pub(crate) struct IdMaps {
    pub(super) uid_map: Vec<u8>,
    pub(super) gid_map: Vec<u8>,
}

impl IdMaps {
    /// A run's: the solver's ids ([`SOLVER_UID`], [`SOLVER_GID`]).
    pub(crate) fn for_server() -> Self {
        Self::mapping(Some((SOLVER_UID, SOLVER_GID)))
    }

    /// The network-namespace pool's: the server's ids to themselves, so
    /// that a run's user namespace below it maps the solver's ids exactly
    /// as it would below the host's.
    pub(crate) fn identity() -> Self {
        Self::mapping(None)
    }

    /// `inside` (uid, gid) mapped to the server's; `None`: to themselves.
    fn mapping(inside: Option<(u32, u32)>) -> Self {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        let (inside_uid, inside_gid) = inside.unwrap_or((uid, gid));
        Self {
            uid_map: format!("{inside_uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{inside_gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// A fresh network namespace and the user namespace that owns it, made
/// ahead by the pool ([`make`](super::netns::make)).
#[derive(Debug)]
pub(crate) struct NetNs {
    /// The owning user namespace (`/proc/<pid>/ns/user`).
    pub(crate) user: OwnedFd,
    /// The network namespace (`/proc/<pid>/ns/net`): only a loopback
    /// interface, down.
    pub(crate) net: OwnedFd,
}

/// Landlock access rights of the rules that exist only inside the view,
/// as the kernel's bit masks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ViewRules {
    /// Read, read-dir and execute: beneath the view's root.
    pub(crate) read: u64,
    /// Every handled right: beneath the view's `/tmp` and `/dev/shm`.
    pub(crate) all: u64,
}

/// A compiled seccomp filter: one BPF program, installed as the solver's
/// last step before `exec`.
pub(crate) struct Filter(Vec<libc::sock_filter>);

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Filter({} instructions)", self.0.len())
    }
}

impl Filter {
    /// The filter of `program`.
    pub(crate) fn new(program: Vec<libc::sock_filter>) -> Self {
        Self(program)
    }

    /// The program to install.
    pub(crate) fn program(&self) -> &[libc::sock_filter] {
        &self.0
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
    /// Read end of the control pipe; it carries the [`KILL_WORD`](super::KILL_WORD) or hangs
    /// up when the server wants the tree dead.
    pub(crate) control: OwnedFd,
    /// Write end of the status pipe that carries the [`ExitRecord`](super::ExitRecord).
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
    /// The stacks the init and the solver run on (see `monitor::spawn_init` and
    /// `solver::spawn_solver`): the sandbox's one mapping.
    pub(crate) stacks: Arc<CloneStack>,
    /// Where the server's argument and environment strings lie, which the
    /// monitor zeroes in its copy (`monitor::hide_server`).
    pub(crate) server: ServerStrings,
}

/// Where the server's argument and environment strings lie in its memory
/// (`arg_start`, `arg_end`, `env_start`, `env_end`: fields 48 to 51 of
/// `/proc/self/stat`): what the kernel shows as `/proc/<pid>/cmdline` and
/// `environ` of the server and of every process that copied its memory
/// without `exec`ing (a run's monitor, and its init, which shares the
/// monitor's copy). Read once, when the sandbox starts:
/// a process's strings do not move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerStrings {
    pub(super) args: (usize, usize),
    pub(super) env: (usize, usize),
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
}
