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
//! has no `/sys`, so it cannot raise its own limits. `pids.max` is the run's
//! limit plus two (the monitor and the run's init). A run's cgroup is
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
        let memory = if self.swap {
            "memory (+swap)"
        } else {
            "memory (swap not accounted)"
        };
        let bounded = [
            (self.memory, memory),
            (self.processes, "processes"),
            (self.cpu, "CPU share"),
        ];
        let parts: Vec<&str> = bounded.iter().filter(|b| b.0).map(|b| b.1).collect();
        let parts = if parts.is_empty() {
            "nothing".to_owned()
        } else {
            parts.join(", ")
        };
        write!(f, "{}: {parts}", self.backend.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Controller {
    Memory,
    Pids,
    Cpu,
}

impl Controller {
    const ALL: [Self; 3] = [Self::Memory, Self::Pids, Self::Cpu];

    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Pids => "pids",
            Self::Cpu => "cpu",
        }
    }
}

/// The backend's places: the `hardened-mcp.runs` directories run cgroups
/// are made in, with their controllers (v2: one directory with all three;
/// v1: one per hierarchy, in [`Controller::ALL`]'s order).
#[derive(Debug)]
struct Layout {
    v2: bool,
    runs: Vec<(Vec<Controller>, PathBuf)>,
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

    pub(crate) fn support(&self) -> EnvelopeSupport {
        let has = |c| self.layout.runs.iter().any(|(cs, _)| cs.contains(&c));
        EnvelopeSupport {
            backend: if self.layout.v2 {
                EnvelopeBackend::CgroupV2
            } else {
                EnvelopeBackend::CgroupV1
            },
            memory: has(Controller::Memory),
            swap: has(Controller::Memory) && (self.layout.swap_file || !self.host_has_swap()),
            processes: has(Controller::Pids),
            cpu: has(Controller::Cpu),
        }
    }

    /// Makes the cgroup of one run with `limits` applied, and opens its
    /// join files (`tasks` or `cgroup.procs`) for the monitor to join.
    pub(crate) fn create(&self, limits: &Limits) -> io::Result<RunCgroup> {
        let mut run = self.make()?;
        run.apply(limits)?;
        Ok(run)
    }

    /// [`Cgroups::create`] without writing the limits.
    fn make(&self) -> io::Result<RunCgroup> {
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}{n}", self.prefix);
        let mut run = RunCgroup {
            remove_dir: self.sys.remove,
            dirs: Vec::new(),
            procs: Vec::new(),
            v2: self.layout.v2,
            swap_file: self.layout.swap_file,
            applied: None,
            counters: Counters::default(),
        };
        for (controllers, base) in &self.layout.runs {
            let dir = base.join(&name);
            (self.sys.make)(&dir)?;
            run.dirs.push((controllers.clone(), dir));
        }
        // v1 `tasks`: `0` moves the writing thread alone (the whole
        // single-threaded monitor), the one migration that skips the global
        // `cgroup_threadgroup_rwsem`. v2 moves whole processes only.
        let join_file = if run.v2 { "cgroup.procs" } else { "tasks" };
        for (_, dir) in &run.dirs {
            let f = fs::File::options().write(true).open(dir.join(join_file))?;
            run.procs.push(OwnedFd::from(f));
        }
        let open = |c: Controller, file: &str| {
            run.dir_of(c)
                .and_then(|d| fs::File::open(d.join(file)).ok())
        };
        let memory = if run.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        run.counters = Counters {
            memory: open(Controller::Memory, memory),
            pids: open(Controller::Pids, "pids.events"),
            cpu: open(Controller::Cpu, "cpu.stat"),
        };
        Ok(run)
    }

    /// Empties and removes the run cgroups of gone servers of this PID
    /// namespace ([`owner_alive`]); another namespace's (another container
    /// sharing the cgroup) are never touched: their owner cannot be judged.
    fn sweep_stale(&self) {
        for base in self.bases() {
            let Ok(entries) = fs::read_dir(base) else {
                continue;
            };
            for e in entries.filter_map(Result::ok) {
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

    fn bases(&self) -> Vec<&Path> {
        self.layout.runs.iter().map(|(_, d)| d.as_path()).collect()
    }

    fn host_has_swap(&self) -> bool {
        self.sys
            .proc_file("swaps")
            .is_ok_and(|s| s.lines().count() > 1)
    }
}

/// Run cgroups made ahead of the runs that use them ([`MadeAhead`]), with
/// the default limits ([`Limits::default`]) written; taking one writes only
/// the limits in which the run differs. A background thread keeps
/// [`SandboxConfig::made_ahead`](super::super::SandboxConfig::made_ahead) ready.
///
/// **Every cgroup serves exactly one run**: never joined before a launch
/// takes it, removed when that run ends. When the pool is empty or its
/// thread stopped, a launch makes its own. The cgroups carry this server's
/// name prefix, so those a crashed server leaves are swept at the next start.
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
        if target == 0 {
            return Self {
                cgroups,
                ready: None,
            };
        }
        let maker = Arc::clone(&cgroups);
        let ready = MadeAhead::start(
            "hardened-mcp-cgroups",
            "run cgroups",
            target,
            Vec::new(),
            move || maker.create(&Limits::default()),
        )
        .inspect_err(|e| tracing::info!(error = %e, "run cgroups are made per launch (no pool)"))
        .ok();
        Self { cgroups, ready }
    }

    pub(crate) fn support(&self) -> EnvelopeSupport {
        self.cgroups.support()
    }

    #[cfg(test)]
    fn ready(&self) -> usize {
        self.ready.as_ref().map_or(0, MadeAhead::ready)
    }

    /// A fresh cgroup with `limits` applied: a ready one when there is one
    /// (the thread is woken to make the next), else one made now.
    pub(crate) fn take(&self, limits: &Limits) -> io::Result<RunCgroup> {
        match self.ready.as_ref().and_then(MadeAhead::take) {
            Some(mut run) => {
                run.apply(limits)?;
                Ok(run)
            }
            None => self.cgroups.create(limits),
        }
    }
}

/// One run's cgroup (one directory per v1 hierarchy, or one v2 directory).
#[derive(Debug)]
pub(crate) struct RunCgroup {
    /// How its directories are removed ([`CgroupSys::remove`]).
    remove_dir: fn(&Path) -> io::Result<()>,
    dirs: Vec<(Vec<Controller>, PathBuf)>,
    /// The join file of each directory, open for the monitor to write `0`.
    procs: Vec<OwnedFd>,
    v2: bool,
    swap_file: bool,
    /// The limits written so far (`None`: none yet).
    applied: Option<Applied>,
    /// The counter files ([`RunCgroup::events`]), opened off the launch's path.
    counters: Counters,
}

/// The counter files of a run's cgroup (`None`: the host has none; it reads
/// 0), each read once, at the run's end (the kernel makes the text then).
#[derive(Debug, Default)]
struct Counters {
    /// `memory.events` (v2) or `memory.oom_control` (v1): `oom_kill`.
    memory: Option<fs::File>,
    /// `pids.events`: `max`.
    pids: Option<fs::File>,
    /// `cpu.stat`: `throttled_usec` (v2) or `throttled_time` (v1, ns).
    cpu: Option<fs::File>,
}

/// The values a run's cgroup holds, as written to its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Applied {
    memory: u64,
    pids: u64,
    cpu_quota_us: u64,
}

impl Applied {
    fn of(limits: &Limits) -> Self {
        Self {
            memory: limits.memory,
            pids: limits.processes.saturating_add(OWN_PROCESSES),
            cpu_quota_us: limits.cpu_share.quota_us(CPU_PERIOD_US),
        }
    }
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
        let want = Applied::of(limits);
        let had = self.applied.take();
        if had == Some(want) {
            self.applied = had;
            return Ok(());
        }
        let first = had.is_none();
        let changed = |f: fn(&Applied) -> u64| had.is_none_or(|h| f(&h) != f(&want));
        for c in Controller::ALL {
            let Some(dir) = self.dir_of(c) else { continue };
            match c {
                Controller::Memory if changed(|a| a.memory) => {
                    if self.v2 {
                        write(dir, "memory.max", want.memory)?;
                        if first && self.swap_file {
                            write(dir, "memory.swap.max", 0)?;
                        }
                    } else if self.swap_file {
                        // v1 refuses memsw below memory: raise memsw first.
                        let raise = had.is_some_and(|h| want.memory > h.memory);
                        let order = if raise {
                            ["memory.memsw.limit_in_bytes", "memory.limit_in_bytes"]
                        } else {
                            ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
                        };
                        for file in order {
                            write(dir, file, want.memory)?;
                        }
                    } else {
                        write(dir, "memory.limit_in_bytes", want.memory)?;
                    }
                }
                Controller::Pids if changed(|a| a.pids) => {
                    write(dir, "pids.max", want.pids)?;
                }
                Controller::Cpu if changed(|a| a.cpu_quota_us) => {
                    if self.v2 {
                        let max = format!("{} {CPU_PERIOD_US}", want.cpu_quota_us);
                        write(dir, "cpu.max", max)?;
                    } else {
                        if first {
                            write(dir, "cpu.cfs_period_us", CPU_PERIOD_US)?;
                        }
                        write(dir, "cpu.cfs_quota_us", want.cpu_quota_us)?;
                    }
                }
                _ => {}
            }
        }
        self.applied = Some(want);
        Ok(())
    }

    pub(crate) fn take_join_fds(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.procs)
    }

    fn dir_of(&self, c: Controller) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(cs, _)| cs.contains(&c))
            .map(|(_, d)| d.as_path())
    }

    pub(crate) fn events(&self) -> CgroupEvents {
        let key = |file: &Option<fs::File>, key: &str| {
            file.as_ref()
                .and_then(|f| keyed(&read_counters(f)?, key))
                .unwrap_or(0)
        };
        let c = &self.counters;
        CgroupEvents {
            oom_kills: key(&c.memory, "oom_kill"),
            pids_refused: key(&c.pids, "max"),
            throttled_us: if self.v2 {
                key(&c.cpu, "throttled_usec")
            } else {
                key(&c.cpu, "throttled_time") / 1000
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
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::debug!(cgroup = %dir.display(), error = %e, "run cgroup not removed yet");
                    left.push((cs, dir));
                }
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
        for p in pids {
            if let Some(pid) = rustix::process::Pid::from_raw(p) {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
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

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0')))
            .and_then(|v| u8::try_from(v).ok());
        if let Some(v) = octal {
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
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
    let rel = if mount.root == "/" {
        path
    } else {
        let r = path.strip_prefix(mount.root.as_str())?;
        if !(r.is_empty() || r.starts_with('/')) {
            return None;
        }
        r
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
    let available: BTreeSet<&str> = available.split_whitespace().collect();
    let missing: Vec<&str> = Controller::ALL
        .iter()
        .map(|c| c.name())
        .filter(|c| !available.contains(c))
        .collect();
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
            runs: vec![(Controller::ALL.to_vec(), runs)],
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
    let mut dirs = Vec::new();
    for c in Controller::ALL {
        let name = c.name();
        let Some((_, path)) = own.iter().find(|(cs, _)| cs.contains(name)) else {
            continue;
        };
        let Some(dir) = mounts
            .iter()
            .filter(|m| !m.v2 && m.controllers.contains(name))
            .find_map(|m| dir_under(m, path))
        else {
            continue;
        };
        let runs = dir.join(RUNS_DIR);
        if let Err(e) = sys.make_once(&runs) {
            tracing::warn!(controller = name, error = %e, "cgroup v1: the server's cgroup is not writable");
            continue;
        }
        dirs.push((c, runs));
    }
    if dirs.is_empty() {
        return None;
    }
    let memsw = dirs
        .iter()
        .any(|(c, d)| *c == Controller::Memory && d.join("memory.memsw.limit_in_bytes").exists());
    let runs = dirs.into_iter().map(|(c, d)| (vec![c], d)).collect();
    Some(Layout {
        v2: false,
        runs,
        swap_file: memsw,
    })
}

#[cfg(test)]
mod tests {
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
        let pids = m.iter().find(|m| m.controllers.contains("pids")).unwrap();
        assert_eq!(
            dir_under(pids, &own[0].1),
            Some(PathBuf::from("/sys/fs/cgroup/pids/svc"))
        );
        // A path outside the mount's root is not shown by that mount.
        assert_eq!(dir_under(pids, "/other"), None);
        assert_eq!(dir_under(pids, "/ctrx"), None);
        let mem = m.iter().find(|m| m.controllers.contains("memory")).unwrap();
        assert_eq!(
            dir_under(mem, &own[1].1),
            Some(PathBuf::from("/sys/fs/cgroup/memory/a/b"))
        );
        assert_eq!(dir_under(mem, "/a/../.."), None);
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

    /// A plain directory tree standing in for procfs and cgroupfs (v1 or
    /// v2), the server in `/svc`, its runs' directory made, no swap.
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
            let (fstype, options) = if v2 {
                ("cgroup2", "rw")
            } else {
                ("cgroup", *h)
            };
            mountinfo += &format!(
                "{i} 1 0:{i} / {} rw - {fstype} cg rw,{options}\n",
                point.display()
            );
            own += &format!("{i}:{}:/svc\n", if v2 { "" } else { h });
            fs::create_dir(&point).unwrap();
            let svc = point.join("svc");
            (sys.make)(&svc).unwrap();
            fs::write(svc.join("cgroup.controllers"), "cpuset cpu io memory pids").unwrap();
            fs::write(svc.join("cgroup.procs"), format!("{me}\n")).unwrap();
            (sys.make)(&svc.join(RUNS_DIR)).unwrap();
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

    #[test]
    fn either_layout_is_detected_limited_and_swept_without_root() {
        for v2 in [false, true] {
            let (tmp, sys) = fake_host(v2);
            // Left by a gone server of this PID namespace, and by one of
            // another namespace (not ours to judge).
            let ns = fs::metadata(Path::new(sys.proc).join("self/ns/pid")).unwrap();
            let ns = ns.ino();
            let dead = format!("r{ns}-999999-5-0");
            let foreign = format!("r{}-999999-5-0", ns + 1);
            for h in fs::read_dir(tmp.path()).unwrap() {
                let runs = h.unwrap().path().join("svc").join(RUNS_DIR);
                if runs.is_dir() {
                    (sys.make)(&runs.join(&dead)).unwrap();
                    (sys.make)(&runs.join(&foreign)).unwrap();
                }
            }
            let cgroups = Cgroups::detect(sys).unwrap();
            let support = cgroups.support();
            let backend = if v2 {
                EnvelopeBackend::CgroupV2
            } else {
                EnvelopeBackend::CgroupV1
            };
            assert_eq!(support.backend, backend);
            assert!(support.memory && support.swap && support.processes && support.cpu);
            for base in cgroups.bases() {
                assert!(
                    !base.join(&dead).exists(),
                    "a dead server's cgroup was left"
                );
                assert!(
                    base.join(&foreign).exists(),
                    "another namespace's cgroup was removed"
                );
            }
            let mut run = cgroups.create(&narrow()).unwrap();
            let read = |c: Controller, file: &str| {
                fs::read_to_string(run.dir_of(c).unwrap().join(file)).unwrap()
            };
            let memory = (64u64 << 20).to_string();
            let mem = |file| read(Controller::Memory, file);
            if v2 {
                assert_eq!(mem("memory.max"), memory);
                assert_eq!(mem("memory.swap.max"), "0");
                assert_eq!(read(Controller::Cpu, "cpu.max"), "50000 100000");
                let runs = cgroups.bases()[0].to_owned();
                let enabled = fs::read_to_string(runs.join("cgroup.subtree_control")).unwrap();
                assert_eq!(enabled, ENABLE);
            } else {
                assert_eq!(mem("memory.limit_in_bytes"), memory);
                assert_eq!(mem("memory.memsw.limit_in_bytes"), memory);
                assert_eq!(read(Controller::Cpu, "cpu.cfs_period_us"), "100000");
                assert_eq!(read(Controller::Cpu, "cpu.cfs_quota_us"), "50000");
            }
            // The monitor and the init are counted.
            assert_eq!(read(Controller::Pids, "pids.max"), "9");
            let dirs = dirs(&run);
            assert_eq!(dirs.len(), if v2 { 1 } else { 3 });
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

    /// What a run cgroup's file says, on whichever layout the host has.
    fn read_limit(run: &RunCgroup, c: Controller) -> String {
        let (v1, v2) = match c {
            Controller::Memory => ("memory.limit_in_bytes", "memory.max"),
            Controller::Pids => ("pids.max", "pids.max"),
            Controller::Cpu => ("cpu.cfs_quota_us", "cpu.max"),
        };
        let dir = run.dir_of(c).unwrap();
        let text = fs::read_to_string(dir.join(if run.v2 { v2 } else { v1 })).unwrap();
        text.split_whitespace().next().unwrap().to_owned()
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
        let fill = |pool: &CgroupPool| {
            let t0 = std::time::Instant::now();
            while pool.ready() < TARGET && t0.elapsed() < std::time::Duration::from_secs(10) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        for (_tree, cgroups) in layouts() {
            let pool = CgroupPool::start(cgroups, TARGET);
            fill(&pool);
            assert_eq!(pool.ready.as_ref().unwrap().ready(), TARGET);
            let support = pool.support();
            // Narrower and wider than the defaults the pool wrote ahead.
            let wide = Limits {
                memory: 3 << 30,
                processes: 500,
                cpu_share: crate::sandbox::limits::CpuShare::cores(2.0).unwrap(),
                ..Limits::default()
            };
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
                for (c, has, value) in [
                    (Controller::Memory, support.memory, memory),
                    (Controller::Pids, support.processes, pids),
                    (Controller::Cpu, support.cpu, quota),
                ] {
                    if has && support.backend != EnvelopeBackend::None {
                        assert_eq!(read_limit(&run, c), value.to_string());
                    }
                }
                taken.push(run);
            }
            // Each one is a cgroup of its own.
            let all: BTreeSet<PathBuf> = taken.iter().flat_map(dirs).collect();
            assert_eq!(all.len(), taken.len() * taken[0].dirs.len());
            // Dropping the pool removes the cgroups it still held.
            fill(&pool);
            let ready = pool.ready.as_ref().unwrap();
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
