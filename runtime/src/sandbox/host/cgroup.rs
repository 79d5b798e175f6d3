//! The resource envelope's cgroups: one per run, beneath the server's own
//! cgroup, holding the run's whole process tree. The backend is chosen once
//! at start, v2 first:
//!
//! * **cgroup v2**, where the server's cgroup offers the `memory`, `pids`
//!   and `cpu` controllers (a delegated subtree: systemd `Delegate=yes`, or
//!   a container's cgroup namespace): runs in `<own>/hardened-mcp.runs/<run>`
//!   with `memory.max`, `memory.swap.max = 0`, `pids.max`, `cpu.max`.
//!   Controllers need a cgroup without processes of its own, so a server
//!   alone in its cgroup first moves into the leaf `<own>/hardened-mcp.server`
//!   (beneath the cgroup it started in, never out of it: the host's
//!   accounting of the service stays whole); a cgroup holding other
//!   processes is left alone (no backend; the log says why).
//! * **cgroup v1**, where the `memory`, `pids` and `cpu` hierarchies are
//!   mounted and writable: a cgroup of the same name in each, beneath the
//!   server's; `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes`
//!   (the same value: no swap), `pids.max`, `cpu.cfs_quota_us`.
//!
//! The sandbox's monitor, a single-threaded child of the server, joins the
//! run's cgroup (writes `0` to v1 `tasks` or v2 `cgroup.procs`) before it
//! creates the run's namespaces: every process of the run descends from it,
//! and its cgroup namespace is rooted at the run's cgroup. The solver's view
//! has no `/sys`, so it cannot raise its own limits. A run's cgroup is
//! removed when the run ends; those left by a server that died (named after
//! its pid and start time) are emptied and removed at the next start.

use rustix::process::{PidfdFlags, Signal};
use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::super::limits::Limits;
use super::ahead::MadeAhead;

const RUNS_DIR: &str = "hardened-mcp.runs";
const SERVER_LEAF: &str = "hardened-mcp.server";

/// The sandbox's own processes in a run's cgroup: the monitor and the init.
const OWN_PROCESSES: u64 = 2;

/// The CPU quota period, microseconds (the kernel's default).
const CPU_PERIOD_US: u64 = 100_000;

/// Which kernel interface enforces the resource envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EnvelopeBackend {
    /// A cgroup v2 subtree delegated to the server.
    CgroupV2,
    /// The cgroup v1 `memory`, `pids` and `cpu` hierarchies.
    CgroupV1,
    /// No cgroup: the tree's memory, processes and CPU share are not bounded.
    None,
}

impl EnvelopeBackend {
    /// A short fixed name.
    pub fn name(self) -> &'static str {
        match self {
            Self::CgroupV2 => "cgroup v2",
            Self::CgroupV1 => "cgroup v1",
            Self::None => "none",
        }
    }
}

/// What the resource envelope enforces on this host, as detected at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeSupport {
    /// The backend.
    pub backend: EnvelopeBackend,
    /// Whether the tree's memory is bounded ([`Limits::memory`]).
    pub memory: bool,
    /// Whether swap is bounded too (with the memory limit as one budget).
    /// False where the host accounts no swap; a host without swap needs none.
    pub swap: bool,
    /// Whether the tree's processes and threads are bounded ([`Limits::processes`]).
    pub processes: bool,
    /// Whether the tree's CPU share is bounded ([`Limits::cpu_share`]).
    pub cpu: bool,
}

impl EnvelopeSupport {
    /// Nothing enforced (no cgroup backend).
    pub const NONE: Self = Self {
        backend: EnvelopeBackend::None,
        memory: false,
        swap: false,
        processes: false,
        cpu: false,
    };
}

impl fmt::Display for EnvelopeSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bounded = [
            (self.memory && self.swap, "memory (+swap)"),
            (self.memory && !self.swap, "memory (swap not accounted)"),
            (self.processes, "processes"),
            (self.cpu, "CPU share"),
        ];
        let parts: Vec<&str> = bounded.iter().filter(|b| b.0).map(|b| b.1).collect();
        let parts = parts.join(", ");
        let parts = if parts.is_empty() { "nothing" } else { &parts };
        write!(f, "{}: {parts}", self.backend.name())
    }
}

/// The controllers the envelope uses; each control file's name begins with
/// its controller's (`memory.max`).
const CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];

/// The backend's places: the `hardened-mcp.runs` directories run cgroups
/// are made in, with their controllers (v2: one directory with all three;
/// v1: one per hierarchy, in [`CONTROLLERS`]' order).
#[derive(Debug)]
struct Layout {
    v2: bool,
    runs: Vec<(Vec<&'static str>, PathBuf)>,
    /// Whether swap has a file (`memory.swap.max`, `memory.memsw.limit_in_bytes`).
    swap_file: bool,
}

/// The kernel interfaces the cgroup logic goes through, so that a test can
/// stand a plain directory tree in for them without root. Everything else
/// is read and written at the paths procfs and `/proc/self/mountinfo` name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CgroupSys {
    /// The procfs mount (`/proc`).
    pub(crate) proc: &'static str,
    /// Makes a cgroup (`mkdir`, which on cgroupfs makes its control files).
    pub(crate) make: fn(&Path) -> io::Result<()>,
    /// Removes an empty cgroup (`rmdir`, though it holds control files).
    pub(crate) remove: fn(&Path) -> io::Result<()>,
}

impl CgroupSys {
    /// The host's own procfs and cgroupfs.
    pub(crate) const HOST: Self = Self {
        proc: "/proc",
        make: |p| fs::create_dir(p),
        remove: |p| fs::remove_dir(p),
    };

    fn make_once(&self, dir: &Path) -> io::Result<()> {
        match (self.make)(dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
            _ => Ok(()),
        }
    }

    /// A file of procfs (`self/cgroup`, `<pid>/stat`).
    fn proc_file(&self, name: &str) -> io::Result<String> {
        fs::read_to_string(Path::new(self.proc).join(name))
    }
}

/// The envelope's cgroups on this host: made once at start, shared by runs.
#[derive(Debug)]
pub(crate) struct Cgroups {
    sys: CgroupSys,
    layout: Layout,
    /// This server's run cgroups' name prefix: `r<pid ns>-<pid>-<start time>-`.
    prefix: String,
    /// This process's PID namespace inode: only its names are judged stale.
    pid_ns: u64,
}

/// One detection at a time: another would see the v2 subtree half prepared.
static DETECT: Mutex<()> = Mutex::new(());

/// The run cgroups' name suffix: one counter per process (its sandboxes share the prefix).
static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Cgroups {
    /// Detects a usable backend, prepares its runs directory and sweeps it
    /// ([`Cgroups::sweep_stale`]); `None` (logged) when none is usable.
    pub(crate) fn detect(sys: CgroupSys) -> Option<Self> {
        let _one_at_a_time = DETECT.lock().unwrap_or_else(PoisonError::into_inner);
        let read = |name| {
            sys.proc_file(name)
                .inspect_err(
                    |e| tracing::warn!(error = %e, file = name, "cgroups: procfs unreadable"),
                )
                .ok()
        };
        let mounts = parse_mountinfo(&read("self/mountinfo")?);
        let own = parse_proc_cgroup(&read("self/cgroup")?);
        let layout = v2_layout(&sys, &mounts, &own).or_else(|| v1_layout(&sys, &mounts, &own))?;
        let pid_ns = fs::metadata(Path::new(sys.proc).join("self/ns/pid"))
            .inspect_err(
                |e| tracing::warn!(error = %e, "cgroups: this process's PID namespace is unknown"),
            )
            .ok()?
            .ino();
        let Some(start) = start_time(&sys, std::process::id()) else {
            tracing::warn!("cgroups: this process's start time is unreadable");
            return None;
        };
        let prefix = format!("r{pid_ns}-{}-{start}-", std::process::id());
        let cgroups = Self {
            sys,
            layout,
            prefix,
            pid_ns,
        };
        cgroups.sweep_stale();
        // A launch's steps, proved: a default cgroup joined by a throwaway child.
        let mut probe = cgroups
            .create(&Limits::default())
            .inspect_err(|e| {
                tracing::warn!(error = %e, "cgroups: a run cgroup cannot be made; no envelope backend");
            })
            .ok()?;
        let joined = super::super::child::probe_cgroup_join(&probe.take_join_fds());
        if !probe.remove() {
            tracing::warn!("cgroups: the start-up probe's cgroup was not removed");
        }
        if !joined {
            tracing::warn!("cgroups: a process cannot join a run cgroup; no envelope backend");
            return None;
        }
        Some(cgroups)
    }

    /// What this backend enforces.
    pub(crate) fn support(&self) -> EnvelopeSupport {
        let has = |c| self.layout.runs.iter().any(|(cs, _)| cs.contains(&c));
        // `swaps`: a header line, then one per swap area.
        let host_swap = || {
            self.sys
                .proc_file("swaps")
                .is_ok_and(|s| s.lines().count() > 1)
        };
        EnvelopeSupport {
            backend: if self.layout.v2 {
                EnvelopeBackend::CgroupV2
            } else {
                EnvelopeBackend::CgroupV1
            },
            memory: has("memory"),
            swap: has("memory") && (self.layout.swap_file || !host_swap()),
            processes: has("pids"),
            cpu: has("cpu"),
        }
    }

    /// Makes the cgroup of one run with `limits` applied, and opens its
    /// join files (`tasks` or `cgroup.procs`) for the monitor to join.
    pub(crate) fn create(&self, limits: &Limits) -> io::Result<RunCgroup> {
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}{n}", self.prefix);
        let mut run = RunCgroup {
            remove_dir: self.sys.remove,
            dirs: Vec::new(),
            procs: Vec::new(),
            v2: self.layout.v2,
            swap_file: self.layout.swap_file,
            applied: None,
            counters: Default::default(),
        };
        // v1 `tasks`: `0` moves the writing thread alone (the whole
        // single-threaded monitor), the one migration that skips the global
        // `cgroup_threadgroup_rwsem`. v2 moves whole processes only.
        let join_file = if run.v2 { "cgroup.procs" } else { "tasks" };
        for (controllers, base) in &self.layout.runs {
            let dir = base.join(&name);
            (self.sys.make)(&dir)?;
            let join = dir.join(join_file);
            run.dirs.push((controllers.clone(), dir));
            let f = fs::File::options().write(true).open(join)?;
            run.procs.push(OwnedFd::from(f));
        }
        let memory = if run.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        run.counters = [memory, "pids.events", "cpu.stat"].map(|file| {
            run.dir_of(file)
                .and_then(|d| fs::File::open(d.join(file)).ok())
        });
        run.apply(limits)?;
        Ok(run)
    }

    /// Empties and removes the run cgroups of gone servers of this PID
    /// namespace ([`owner_alive`]); another namespace's (another container
    /// sharing the cgroup) are never touched: their owner cannot be judged.
    fn sweep_stale(&self) {
        for (_, base) in &self.layout.runs {
            for e in fs::read_dir(base).into_iter().flatten().flatten() {
                let name = e.file_name();
                let Some(name) = name.to_str() else { continue };
                if owner_alive(&self.sys, name, self.pid_ns) {
                    continue;
                }
                let dir = base.join(name);
                kill_members(&dir, self.layout.v2, 16);
                match (self.sys.remove)(&dir) {
                    Ok(()) => tracing::info!(cgroup = %dir.display(), "removed a stale run cgroup"),
                    Err(e) => {
                        tracing::warn!(cgroup = %dir.display(), error = %e, "a stale run cgroup could not be removed")
                    }
                }
            }
        }
    }
}

/// Run cgroups made ahead of the runs that use them ([`MadeAhead`]), with
/// the default limits ([`Limits::default`]) written; taking one writes only
/// the limits in which the run differs. A background thread keeps
/// [`SandboxConfig::made_ahead`](super::super::SandboxConfig::made_ahead) ready.
///
/// **Every cgroup serves exactly one run**: never joined before a launch
/// takes it, removed when that run ends.
#[derive(Debug)]
pub(crate) struct CgroupPool {
    cgroups: Arc<Cgroups>,
    /// `None` when the refilling thread could not start.
    ready: Option<MadeAhead<RunCgroup>>,
}

impl CgroupPool {
    /// Starts the thread that keeps `target` cgroups ready (none for a
    /// `target` of 0, or when it cannot start: each launch makes its own).
    pub(crate) fn start(cgroups: Cgroups, target: usize) -> Self {
        let cgroups = Arc::new(cgroups);
        let maker = Arc::clone(&cgroups);
        let make = move || maker.create(&Limits::default());
        let no_pool = |e: &io::Error| {
            tracing::info!(error = %e, "run cgroups are made per launch (no pool)");
        };
        let name = "hardened-mcp-cgroups";
        let ready = match target {
            0 => None,
            _ => MadeAhead::start(name, "run cgroups", target, Vec::new(), make)
                .inspect_err(no_pool)
                .ok(),
        };
        Self { cgroups, ready }
    }

    /// What the pool's backend enforces ([`Cgroups::support`]).
    pub(crate) fn support(&self) -> EnvelopeSupport {
        self.cgroups.support()
    }

    /// A fresh cgroup with `limits` applied: a ready one when there is one
    /// (the thread is woken to make the next), else one made now.
    pub(crate) fn take(&self, limits: &Limits) -> io::Result<RunCgroup> {
        let Some(mut run) = self.ready.as_ref().and_then(MadeAhead::take) else {
            return self.cgroups.create(limits);
        };
        run.apply(limits)?;
        Ok(run)
    }
}

/// One run's cgroup (one directory per v1 hierarchy, or one v2 directory).
#[derive(Debug)]
pub(crate) struct RunCgroup {
    /// How its directories are removed ([`CgroupSys::remove`]).
    remove_dir: fn(&Path) -> io::Result<()>,
    dirs: Vec<(Vec<&'static str>, PathBuf)>,
    /// The join file of each directory, open for the monitor to write `0`.
    procs: Vec<OwnedFd>,
    v2: bool,
    swap_file: bool,
    /// The limits written so far (`None`: none yet).
    applied: Option<Limits>,
    /// The `memory`, `pids` and `cpu` counter files ([`RunCgroup::events`];
    /// `None`: the host has none, it reads 0), opened off the launch's path
    /// and read once, at the run's end (the kernel makes the text then).
    counters: [Option<fs::File>; 3],
}

/// What the kernel counted for a run's cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CgroupEvents {
    /// Processes the OOM killer ended at the memory limit.
    pub(crate) oom_kills: u64,
    /// Forks refused at the process limit.
    pub(crate) pids_refused: u64,
    /// Time the tree spent throttled to its CPU share, microseconds.
    pub(crate) throttled_us: u64,
}

impl RunCgroup {
    /// Writes `limits` to the cgroup's files: all the first time, then only
    /// the values that differ. Called before any process has joined.
    fn apply(&mut self, limits: &Limits) -> io::Result<()> {
        let had = self.applied.take();
        let written = had.map(|h| self.files(&h, false)).unwrap_or_default();
        let raise = had.is_some_and(|h| limits.memory > h.memory);
        let changed = self.files(limits, raise).into_iter();
        for (file, value) in changed.filter(|f| !written.contains(f)) {
            if let Some(dir) = self.dir_of(file) {
                write(dir, file, value)?;
            }
        }
        self.applied = Some(*limits);
        Ok(())
    }

    /// The control files that hold `limits` and their values, in writing
    /// order (`raise`: the memory limit rises).
    fn files(&self, limits: &Limits, raise: bool) -> Vec<(&'static str, String)> {
        let memory = limits.memory.to_string();
        let mut files = Vec::new();
        if self.v2 {
            files.push(("memory.max", memory));
            if self.swap_file {
                files.push(("memory.swap.max", "0".to_owned()));
            }
        } else {
            files.push(("memory.limit_in_bytes", memory.clone()));
            if self.swap_file {
                files.push(("memory.memsw.limit_in_bytes", memory));
            }
            // v1 refuses memsw below memory: a raise writes memsw first.
            if raise {
                files.reverse();
            }
        }
        let pids = limits.processes.saturating_add(OWN_PROCESSES);
        files.push(("pids.max", pids.to_string()));
        let quota = limits.cpu_share.quota_us(CPU_PERIOD_US);
        if self.v2 {
            files.push(("cpu.max", format!("{quota} {CPU_PERIOD_US}")));
        } else {
            files.push(("cpu.cfs_period_us", CPU_PERIOD_US.to_string()));
            files.push(("cpu.cfs_quota_us", quota.to_string()));
        }
        files
    }

    /// The join files, for the monitor (taken once).
    pub(crate) fn take_join_fds(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.procs)
    }

    /// The directory that holds control file `file`: its controller's.
    fn dir_of(&self, file: &str) -> Option<&Path> {
        let controller = file.split('.').next()?;
        let (_, dir) = self.dirs.iter().find(|(cs, _)| cs.contains(&controller))?;
        Some(dir)
    }

    /// What the kernel counted for the run, read from the counter files.
    pub(crate) fn events(&self) -> CgroupEvents {
        let count = |file: &Option<fs::File>, key: &str| {
            file.as_ref()
                .and_then(|f| keyed(&read_counters(f)?, key))
                .unwrap_or(0)
        };
        let [memory, pids, cpu] = &self.counters;
        CgroupEvents {
            oom_kills: count(memory, "oom_kill"),
            pids_refused: count(pids, "max"),
            // v1 counts nanoseconds.
            throttled_us: if self.v2 {
                count(cpu, "throttled_usec")
            } else {
                count(cpu, "throttled_time") / 1000
            },
        }
    }

    /// A reader of the pids in the run's cgroup, for a thread that outlives this borrow.
    pub(crate) fn members(&self) -> impl Fn() -> Vec<i32> + Send + 'static {
        let dir = self.dirs.first().map(|(_, d)| d.clone());
        move || dir.as_deref().map(members).unwrap_or_default()
    }

    /// A killer for a thread that outlives this borrow: `SIGKILL` to every
    /// process of the cgroup but `spare` (the monitor). Each is signalled
    /// through a pidfd opened before the cgroup is listed again, and only if
    /// listed then: a pid reused elsewhere is never signalled.
    pub(crate) fn killer(&self) -> impl Fn(Option<u32>) + Send + 'static {
        let dir = self.dirs.first().map(|(_, d)| d.clone());
        move |spare| {
            let Some(dir) = dir.as_deref() else { return };
            let spare = spare.and_then(|p| i32::try_from(p).ok());
            let opened: Vec<(i32, OwnedFd)> = members(dir)
                .into_iter()
                .filter(|&p| Some(p) != spare)
                .filter_map(|p| {
                    let pid = rustix::process::Pid::from_raw(p)?;
                    let fd = rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok()?;
                    Some((p, fd))
                })
                .collect();
            let listed = members(dir);
            for (p, fd) in opened.iter().filter(|(p, _)| listed.contains(p)) {
                if let Err(e) = rustix::process::pidfd_send_signal(fd, Signal::KILL) {
                    tracing::debug!(pid = p, error = %e, "run process not signalled");
                }
            }
        }
    }

    /// Kills what is left in the cgroup (a descendant that escaped a process
    /// group kill) and removes it; `false` while a member is exiting: retry.
    pub(crate) fn remove(&mut self) -> bool {
        let mut left = Vec::new();
        for (cs, dir) in std::mem::take(&mut self.dirs) {
            // One pass, no waiting: the caller retries.
            kill_members(&dir, self.v2, 1);
            match (self.remove_dir)(&dir) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    tracing::debug!(cgroup = %dir.display(), error = %e, "run cgroup not removed yet");
                    left.push((cs, dir));
                }
                _ => {}
            }
        }
        self.dirs = left;
        self.dirs.is_empty()
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        if !self.dirs.is_empty() && !self.remove() {
            for (_, dir) in &self.dirs {
                tracing::warn!(cgroup = %dir.display(), "a run cgroup is left behind (the next start of a server after this one removes it)");
            }
        }
    }
}

fn write(dir: &Path, file: &str, value: impl fmt::Display) -> io::Result<()> {
    fs::write(dir.join(file), value.to_string()).inspect_err(|e| {
        tracing::error!(cgroup = %dir.display(), file, error = %e, "cgroup write refused");
    })
}

/// An open counter file's text, read from its start (`None` past [`COUNTERS_MAX`] bytes).
fn read_counters(file: &fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; COUNTERS_MAX];
    let mut len = 0;
    loop {
        let free = buf.get_mut(len..).filter(|b| !b.is_empty())?;
        match file.read_at(free, len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

/// The longest counter file read (`cpu.stat` holds about ten lines).
const COUNTERS_MAX: usize = 4096;

/// The value of `key` in a `key value` per line file.
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn members(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills every process in the cgroup: `cgroup.kill` on v2, else each
/// member in turn, for up to `passes` passes until none is left (a fork
/// bomb is bounded by `pids.max`, and killed processes fork no more).
fn kill_members(dir: &Path, v2: bool, passes: usize) {
    if v2 && fs::write(dir.join("cgroup.kill"), b"1").is_ok() {
        return;
    }
    for pass in 0..passes {
        let pids = members(dir);
        if pids.is_empty() {
            return;
        }
        if pass > 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for pid in pids.into_iter().filter_map(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
    }
}

/// Whether the server that named a run cgroup `r<pid ns>-<pid>-<start>-<n>`
/// may still run: `false` only for a name of PID namespace `pid_ns` whose
/// pid is dead or started at another time (other names are not ours).
fn owner_alive(sys: &CgroupSys, name: &str, pid_ns: u64) -> bool {
    let parsed = || {
        let mut parts = name.strip_prefix('r')?.splitn(4, '-');
        let ns = parts.next()?.parse::<u64>().ok()?;
        let pid = parts.next()?.parse::<u32>().ok()?;
        Some((ns, pid, parts.next()?.parse::<u64>().ok()?))
    };
    parsed().is_none_or(|(ns, pid, start)| ns != pid_ns || start_time(sys, pid) == Some(start))
}

/// A process's start time (`/proc/<pid>/stat` field 22): with the pid, a name never reused.
fn start_time(sys: &CgroupSys, pid: u32) -> Option<u64> {
    let stat = sys.proc_file(&format!("{pid}/stat")).ok()?;
    // After the command name's last ')' (it may hold spaces and parentheses).
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// One cgroup mount: its controllers, the cgroup path at its root, where.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    v2: bool,
    controllers: BTreeSet<String>,
    root: String,
    point: PathBuf,
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let head: Vec<&str> = head.split(' ').collect();
            let mut tail = tail.split(' ');
            let fstype = tail.next()?;
            let _source = tail.next()?;
            let options = tail.next().unwrap_or("");
            let v2 = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(Mount {
                v2,
                controllers: options.split(',').map(str::to_owned).collect(),
                root: unescape(head.get(3)?),
                point: PathBuf::from(unescape(head.get(4)?)),
            })
        })
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space; at most `\377`, a byte).
fn unescape(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        let (b, tail) = match tail {
            [x @ b'0'..=b'3', y @ b'0'..=b'7', z @ b'0'..=b'7', t @ ..] if b == b'\\' => {
                ((x - b'0') * 64 + (y - b'0') * 8 + (z - b'0'), t)
            }
            _ => (b, tail),
        };
        out.push(b);
        rest = tail;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `/proc/self/cgroup`: (hierarchy controllers, path); v2 has no controllers.
fn parse_proc_cgroup(text: &str) -> Vec<(BTreeSet<String>, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_id, ctl, path) = (f.next()?, f.next()?, f.next()?);
            let set = ctl
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect();
            Some((set, path.to_owned()))
        })
        .collect()
}

/// The directory of the cgroup `path` under `mount`, if the mount shows it.
fn dir_under(mount: &Mount, path: &str) -> Option<PathBuf> {
    let rel = match mount.root.as_str() {
        "/" => path,
        root => path
            .strip_prefix(root)
            .filter(|r| r.is_empty() || r.starts_with('/'))?,
    };
    let rel = rel.trim_start_matches('/');
    if rel.split('/').any(|c| c == "..") {
        return None;
    }
    Some(if rel.is_empty() {
        mount.point.clone()
    } else {
        mount.point.join(rel)
    })
}

fn v2_layout(
    sys: &CgroupSys,
    mounts: &[Mount],
    own: &[(BTreeSet<String>, String)],
) -> Option<Layout> {
    let path = own.iter().find(|(c, _)| c.is_empty()).map(|(_, p)| p)?;
    let mut own_dir = mounts
        .iter()
        .filter(|m| m.v2)
        .find_map(|m| dir_under(m, path))?;
    // Moved into its leaf by an earlier sandbox: it owns the cgroup above.
    if own_dir.file_name().is_some_and(|n| n == SERVER_LEAF) {
        own_dir = own_dir.parent()?.to_path_buf();
    }
    let available = fs::read_to_string(own_dir.join("cgroup.controllers")).ok()?;
    let offered = |c: &&str| available.split_whitespace().any(|a| a == *c);
    let missing: Vec<&str> = CONTROLLERS.into_iter().filter(|c| !offered(c)).collect();
    if !missing.is_empty() {
        tracing::debug!(
            ?missing,
            "cgroup v2: controllers not offered to the server's cgroup"
        );
        return None;
    }
    match prepare_v2(sys, &own_dir) {
        Ok(runs) => Some(Layout {
            v2: true,
            swap_file: runs.join("memory.swap.max").exists(),
            runs: vec![(CONTROLLERS.to_vec(), runs)],
        }),
        Err(why) => {
            tracing::warn!(cgroup = %own_dir.display(), why, "cgroup v2 offers the controllers, but the server cannot use them");
            None
        }
    }
}

const ENABLE: &str = "+memory +pids +cpu";

/// Enables the controllers for the runs' cgroups, moving the server into its leaf if need be.
fn prepare_v2(sys: &CgroupSys, own: &Path) -> Result<PathBuf, &'static str> {
    let enable = |dir: &Path| fs::write(dir.join("cgroup.subtree_control"), ENABLE);
    let me = std::process::id() as i32;
    let leaf = own.join(SERVER_LEAF);
    if members(&leaf).contains(&me) {
        // Moved earlier by this process: the controllers are on.
    } else if enable(own).is_err() {
        // Refused while the cgroup holds processes: move in a leaf if alone.
        if members(own).iter().any(|p| *p != me) {
            return Err(
                "the server's cgroup holds other processes (give the server a cgroup of its own, e.g. systemd Delegate=yes)",
            );
        }
        sys.make_once(&leaf)
            .map_err(|_| "the server's cgroup is not writable (not delegated)")?;
        fs::write(leaf.join("cgroup.procs"), me.to_string())
            .map_err(|_| "the server could not move into its own leaf cgroup")?;
        enable(own).map_err(|_| "the controllers could not be enabled for the server's subtree")?;
    }
    let runs = own.join(RUNS_DIR);
    sys.make_once(&runs)
        .map_err(|_| "the runs' cgroup could not be created")?;
    enable(&runs).map_err(|_| "the controllers could not be enabled for the runs' cgroups")?;
    Ok(runs)
}

fn v1_layout(
    sys: &CgroupSys,
    mounts: &[Mount],
    own: &[(BTreeSet<String>, String)],
) -> Option<Layout> {
    let mut runs = Vec::new();
    for c in CONTROLLERS {
        let Some((_, path)) = own.iter().find(|(cs, _)| cs.contains(c)) else {
            continue;
        };
        let Some(dir) = mounts
            .iter()
            .filter(|m| !m.v2 && m.controllers.contains(c))
            .find_map(|m| dir_under(m, path))
        else {
            continue;
        };
        let dir = dir.join(RUNS_DIR);
        if let Err(e) = sys.make_once(&dir) {
            tracing::warn!(controller = c, error = %e, "cgroup v1: the server's cgroup is not writable");
            continue;
        }
        runs.push((vec![c], dir));
    }
    let memsw = "memory.memsw.limit_in_bytes";
    let swap_file = runs
        .iter()
        .any(|(cs, d)| cs == &["memory"] && d.join(memsw).exists());
    (!runs.is_empty()).then_some(Layout {
        v2: false,
        runs,
        swap_file,
    })
}

#[cfg(test)]
mod tests {
    use super::super::ahead::tests::wait_until;
    use super::*;

    const HYBRID: &str = "\
25 1 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
27 25 0:25 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct
28 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
29 25 0:27 /ctr /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
30 25 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
31 25 0:29 / /mnt/with\\040space rw - cgroup cgroup rw,cpuset
";

    #[test]
    fn mountinfo_names_each_hierarchy() {
        let m = parse_mountinfo(HYBRID);
        assert_eq!(m.len(), 6, "{m:?}");
        let cpu = m.iter().find(|m| m.controllers.contains("cpu")).unwrap();
        assert_eq!(cpu.point, Path::new("/sys/fs/cgroup/cpu"));
        assert!(!cpu.controllers.contains("cpuacct") || cpu.controllers.len() > 2);
        let unified = Path::new("/sys/fs/cgroup/unified");
        assert!(m.iter().any(|m| m.v2 && m.point == unified));
        assert!(m.iter().any(|m| m.point == Path::new("/mnt/with space")));
    }

    #[test]
    fn cgroup_paths_map_under_their_mount_root() {
        let m = parse_mountinfo(HYBRID);
        let own = parse_proc_cgroup("8:pids:/ctr/svc\n4:memory:/a/b\n1:cpu:/\n0::/\n");
        let mount = |c| m.iter().find(|m| m.controllers.contains(c)).unwrap();
        let (pids, mem) = (mount("pids"), mount("memory"));
        for (mount, path, dir) in [
            (pids, own[0].1.as_str(), Some("/sys/fs/cgroup/pids/svc")),
            // A path outside the mount's root is not shown by that mount.
            (pids, "/other", None),
            (pids, "/ctrx", None),
            (mem, own[1].1.as_str(), Some("/sys/fs/cgroup/memory/a/b")),
            (mem, "/a/../..", None),
        ] {
            assert_eq!(dir_under(mount, path), dir.map(PathBuf::from), "{path}");
        }
        assert!(own[3].0.is_empty());
    }

    #[test]
    fn counters_are_read_from_the_start_each_time() {
        use std::io::Write;
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"low 0\nmax 3\n").unwrap();
        // The descriptor's offset is at the end: each read starts at 0.
        assert_eq!(read_counters(&f).as_deref(), Some("low 0\nmax 3\n"));
        f.write_all(b"oom_kill 2\n").unwrap();
        let text = read_counters(&f).unwrap();
        assert_eq!(keyed(&text, "oom_kill"), Some(2));
        // Longer than any counter file: not read as one.
        f.write_all(&[b'x'; COUNTERS_MAX]).unwrap();
        assert_eq!(read_counters(&f), None);
    }

    #[test]
    fn keyed_files_parse() {
        let events = "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n";
        assert_eq!(keyed(events, "oom_kill"), Some(2));
        assert_eq!(keyed(events, "max"), Some(3));
        assert_eq!(keyed(events, "absent"), None);
        let disable = "oom_kill_disable 0\noom_kill 5\n";
        assert_eq!(keyed(disable, "oom_kill"), Some(5));
    }

    #[test]
    fn stale_names_are_told_from_live_ones() {
        let me = std::process::id();
        let host = &CgroupSys::HOST;
        let start = start_time(host, me).unwrap();
        let ns = 4026531836;
        let alive = |name: &str| owner_alive(host, name, ns);
        assert!(alive(&format!("r{ns}-{me}-{start}-7")));
        // The same pid with another start time: a dead server's.
        assert!(!alive(&format!("r{ns}-{me}-{}-7", start + 1)));
        // Another PID namespace's names are never judged.
        assert!(alive(&format!("r{}-{me}-{}-7", ns + 1, start + 1)));
        // Names that are not ours are never removed.
        assert!(alive("something-else"));
        assert!(alive("rx-1-2-3"));
        assert!(alive(&format!("r{ns}-1")));
    }

    /// The control files a fake cgroup directory gets (both versions').
    const FAKE_FILES: &str = "tasks cgroup.procs cgroup.kill cgroup.controllers \
        cgroup.subtree_control memory.limit_in_bytes memory.memsw.limit_in_bytes \
        memory.oom_control memory.max memory.swap.max memory.events pids.max pids.events \
        cpu.cfs_period_us cpu.cfs_quota_us cpu.max cpu.stat";

    /// Run cgroups left by a gone server of the fake host's PID namespace,
    /// and by one of another namespace (not ours to judge).
    fn stale(sys: &CgroupSys) -> [String; 2] {
        let ns = fs::metadata(Path::new(sys.proc).join("self/ns/pid")).unwrap();
        [ns.ino(), ns.ino() + 1].map(|ns| format!("r{ns}-999999-5-0"))
    }

    /// A plain directory tree standing in for procfs and cgroupfs (v1 or
    /// v2), the server in `/svc`, its runs' directory made with [`stale`]
    /// cgroups in it, no swap.
    fn fake_host(v2: bool) -> (tempfile::TempDir, CgroupSys) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let sys = CgroupSys {
            proc: String::leak(root.join("proc").to_str().unwrap().to_owned()),
            make: |p| {
                fs::create_dir(p)?;
                FAKE_FILES
                    .split_whitespace()
                    .try_for_each(|f| fs::write(p.join(f), ""))
            },
            remove: |p| fs::remove_dir_all(p),
        };
        let (me, proc) = (std::process::id(), Path::new(sys.proc));
        fs::create_dir_all(proc.join("self/ns")).unwrap();
        fs::create_dir_all(proc.join(me.to_string())).unwrap();
        let ticks = " 0".repeat(18);
        let stat = format!("{me} (server) S{ticks} 777 0 0\n");
        fs::write(proc.join(format!("{me}/stat")), stat).unwrap();
        fs::write(proc.join("self/ns/pid"), "").unwrap();
        fs::write(proc.join("swaps"), "Filename Type Size Used Priority\n").unwrap();
        let hierarchies: &[&str] = if v2 {
            &["unified"]
        } else {
            &["memory", "pids", "cpu"]
        };
        let (mut mountinfo, mut own) = (String::new(), String::new());
        for (i, h) in hierarchies.iter().enumerate() {
            let point = root.join(h);
            let fstype = if v2 { "cgroup2" } else { "cgroup" };
            mountinfo += &format!(
                "{i} 1 0:{i} / {} rw - {fstype} cg rw,{h}\n",
                point.display()
            );
            own += &format!("{i}:{}:/svc\n", if v2 { "" } else { h });
            fs::create_dir(&point).unwrap();
            let svc = point.join("svc");
            (sys.make)(&svc).unwrap();
            fs::write(svc.join("cgroup.controllers"), "cpuset cpu io memory pids").unwrap();
            fs::write(svc.join("cgroup.procs"), format!("{me}\n")).unwrap();
            (sys.make)(&svc.join(RUNS_DIR)).unwrap();
            for name in stale(&sys) {
                (sys.make)(&svc.join(RUNS_DIR).join(name)).unwrap();
            }
        }
        fs::write(proc.join("self/mountinfo"), mountinfo).unwrap();
        fs::write(proc.join("self/cgroup"), own).unwrap();
        (tmp, sys)
    }

    fn narrow() -> Limits {
        Limits {
            memory: 64 << 20,
            processes: 7,
            cpu_share: crate::sandbox::limits::CpuShare::cores(0.5).unwrap(),
            ..Limits::default()
        }
    }

    fn dirs(run: &RunCgroup) -> Vec<PathBuf> {
        run.dirs.iter().map(|(_, d)| d.clone()).collect()
    }

    /// A control file's text in a run's cgroup.
    fn read(run: &RunCgroup, file: &str) -> String {
        fs::read_to_string(run.dir_of(file).unwrap().join(file)).unwrap()
    }

    #[test]
    fn either_layout_is_detected_limited_and_swept_without_root() {
        let memory = (64u64 << 20).to_string();
        let v1: &[(&str, &str)] = &[
            ("memory.limit_in_bytes", &memory),
            ("memory.memsw.limit_in_bytes", &memory),
            ("cpu.cfs_period_us", "100000"),
            ("cpu.cfs_quota_us", "50000"),
        ];
        let v2: &[(&str, &str)] = &[
            ("memory.max", &memory),
            ("memory.swap.max", "0"),
            ("cpu.max", "50000 100000"),
        ];
        for (v2, backend, files, n_dirs) in [
            (false, EnvelopeBackend::CgroupV1, v1, 3),
            (true, EnvelopeBackend::CgroupV2, v2, 1),
        ] {
            let (_tree, sys) = fake_host(v2);
            let [dead, foreign] = stale(&sys);
            let cgroups = Cgroups::detect(sys).unwrap();
            let support = cgroups.support();
            assert_eq!(support.backend, backend);
            assert!(support.memory && support.swap && support.processes && support.cpu);
            for (_, base) in &cgroups.layout.runs {
                let gone = !base.join(&dead).exists();
                assert!(gone, "a dead server's cgroup was left");
                let kept = base.join(&foreign).exists();
                assert!(kept, "another namespace's cgroup was removed");
            }
            let mut run = cgroups.create(&narrow()).unwrap();
            // The monitor and the init are counted in `pids.max`.
            for &(file, value) in files.iter().chain(&[("pids.max", "9")]) {
                assert_eq!(read(&run, file), value, "{file}");
            }
            if v2 {
                let runs = &cgroups.layout.runs[0].1;
                let enabled = fs::read_to_string(runs.join("cgroup.subtree_control")).unwrap();
                assert_eq!(enabled, ENABLE);
            }
            let dirs = dirs(&run);
            assert_eq!(dirs.len(), n_dirs);
            assert!(run.remove());
            assert!(dirs.iter().all(|d| !d.exists()));
        }
    }

    #[test]
    fn support_line_names_what_is_bounded() {
        let s = EnvelopeSupport {
            backend: EnvelopeBackend::CgroupV1,
            memory: true,
            swap: true,
            processes: true,
            cpu: false,
        };
        assert_eq!(s.to_string(), "cgroup v1: memory (+swap), processes");
        assert_eq!(EnvelopeSupport::NONE.to_string(), "none: nothing");
    }

    /// Both fake layouts, and the host's where it has a writable one.
    fn layouts() -> Vec<(Option<tempfile::TempDir>, Cgroups)> {
        let mut all: Vec<_> = [false, true]
            .map(|v2| {
                let (tree, sys) = fake_host(v2);
                (Some(tree), Cgroups::detect(sys).unwrap())
            })
            .into();
        all.extend(Cgroups::detect(CgroupSys::HOST).map(|c| (None, c)));
        all
    }

    #[test]
    fn a_pool_of_none_holds_nothing_and_launches_make_their_own() {
        for (_tree, cgroups) in layouts() {
            let pool = CgroupPool::start(cgroups, 0);
            assert!(pool.ready.is_none(), "a thread for nothing made ahead");
            let mut run = pool.take(&Limits::default()).unwrap();
            assert!(!run.dirs.is_empty());
            assert!(run.dirs.iter().all(|(_, d)| d.is_dir()));
            assert!(run.members()().is_empty());
            let dirs = dirs(&run);
            assert!(run.remove());
            assert!(dirs.iter().all(|d| !d.exists()));
        }
    }

    #[test]
    fn pooled_cgroups_are_fresh_and_get_each_runs_own_limits() {
        const TARGET: usize = 2;
        // Narrower and wider than the defaults the pool wrote ahead.
        let wide = Limits {
            memory: 3 << 30,
            processes: 500,
            cpu_share: crate::sandbox::limits::CpuShare::cores(2.0).unwrap(),
            ..Limits::default()
        };
        for (_tree, cgroups) in layouts() {
            let pool = CgroupPool::start(cgroups, TARGET);
            let ready = pool.ready.as_ref().unwrap();
            wait_until(|| ready.ready() >= TARGET);
            assert_eq!(ready.ready(), TARGET);
            let s = pool.support();
            let mut taken = Vec::new();
            for (limits, memory, pids, quota) in [
                (narrow(), 64u64 << 20, 9u64, 50_000u64),
                (wide, 3 << 30, 502, 200_000),
                (Limits::default(), 1 << 30, 66, 100_000),
            ] {
                let run = pool.take(&limits).unwrap();
                assert!(
                    run.members()().is_empty(),
                    "a pooled cgroup was joined before its run"
                );
                for (has, v1, v2, value) in [
                    (s.memory, "memory.limit_in_bytes", "memory.max", memory),
                    (s.processes, "pids.max", "pids.max", pids),
                    (s.cpu, "cpu.cfs_quota_us", "cpu.max", quota),
                ] {
                    if has {
                        let text = read(&run, if run.v2 { v2 } else { v1 });
                        let value = value.to_string();
                        assert_eq!(text.split_whitespace().next(), Some(&*value));
                    }
                }
                taken.push(run);
            }
            // Each one is a cgroup of its own.
            let all: BTreeSet<PathBuf> = taken.iter().flat_map(dirs).collect();
            assert_eq!(all.len(), taken.len() * taken[0].dirs.len());
            // Dropping the pool removes the cgroups it still held.
            wait_until(|| ready.ready() >= TARGET);
            let held: Vec<PathBuf> = ready.inspect(|ready| ready.iter().flat_map(dirs).collect());
            assert!(!held.is_empty());
            drop(pool);
            for d in held {
                assert!(!d.exists(), "a pooled cgroup outlived its pool");
            }
            for mut run in taken {
                assert!(run.remove());
            }
        }
    }
}
