//! The sandbox service: its configuration, the launch of one run under every
//! layer the host offers, and the wait for its end (timeout, cancel, tree kill).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustix::pipe::{PipeFlags, pipe_with};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::child::{
    self, CStrArray, ChildPlan, CloneStack, ExecPlan, ExitRecord, Filter, IdMaps, KILL_WORD,
    RECORD_LEN, RlimitPlan, ServerStrings, ViewChild, ViewPlan,
};
use super::containment::{Containment, Requirements, TreeKill};
use super::disk::Over;
use super::error::{ConfigError, SandboxError};
use super::host::cgroup::{
    CgroupEvents, CgroupPool, CgroupSys, Cgroups, EnvelopeSupport, RunCgroup,
};
use super::host::netns::NetPool;
use super::host::probe::{probe_host, start_net_pool};
use super::interp;
use super::landlock::{DEFAULT_READ_PATHS, FsPolicy};
use super::limits::Limits;
use super::logs::{SharedLog, drain};
use super::outcome::{LimitHit, Outcome, Termination, limit_of, termination_of};
use super::progress::{ProgressParser, ProgressReport};
use super::registry::{Solver, SolverRegistry};
use crate::concurrency::{ConcurrencyLimiter, Permit};
use crate::identity::CallerId;
use crate::runs::{FileName, RunDir, RunError};

/// Server-side configuration of the sandbox.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The largest limits a run may ask for.
    pub ceilings: Limits,
    /// Environment every solver gets; the rest of the server's is cleared.
    pub fixed_env: Vec<(String, OsString)>,
    /// Names of variables a run may additionally set.
    pub env_allowlist: Vec<String>,
    /// Host paths every solver may read besides its executable and the run
    /// directory: bound read-only at the same path in its view, and granted
    /// by Landlock. Per solver: [`grant_read`](super::SolverRegistryBuilder::grant_read).
    /// Default: [`DEFAULT_READ_PATHS`].
    pub read_paths: Vec<PathBuf>,
    /// How often the disk monitor measures the run directory against
    /// [`Limits::disk_bytes`] (at most: a measurement longer than a quarter
    /// of it stretches the wait to four times the measurement); a run may
    /// pass the byte limit by what it writes in between. Entries are counted
    /// as they are made (inotify) against [`Limits::disk_files`].
    pub disk_check_interval: Duration,
    /// Whether solvers share the host's network. Default `false`: each run with
    /// the view gets its own network namespace, closed even to the host's loopback.
    /// With `true`, Landlock (ABI 4+) still denies TCP bind and connect; UDP gets out.
    pub host_network: bool,
    /// The minimum containment; [`Sandbox::new`] refuses to start below it.
    /// Default: [`Requirements::default`]; opt-out: [`Requirements::none`].
    pub require: Requirements,
    /// Whether to use user, PID and mount namespaces (tree kill, private
    /// view) when the host allows them.
    pub allow_pid_namespace: bool,
    /// Whether runs get a cgroup where the host offers one (the envelope's limits);
    /// `false` needs [`Requirements::none`] or [`Requirements::without_envelope`].
    pub allow_cgroups: bool,
    /// Concurrent runs in all (`None`: unbounded).
    pub global_runs: Option<usize>,
    /// Concurrent runs per caller.
    pub per_caller_runs: usize,
    /// How long the monitor may take to end after a kill before it is killed.
    pub kill_grace: Duration,
    /// How long log readers may drain after the tree ended, then abandoned.
    pub log_grace: Duration,
    /// Most arguments per run.
    pub max_args: usize,
    /// Longest argument or environment value, in bytes.
    pub max_arg_bytes: usize,
    /// How many network namespaces and run cgroups background threads keep
    /// ready for the next launches (each serves one run). Default 2. `0`:
    /// no thread; each launch makes its own on its path (for a single-run
    /// process such as the Slurm node helper). At most [`MAX_MADE_AHEAD`].
    pub made_ahead: usize,
}

/// [`SandboxConfig::global_runs`] by default.
pub const DEFAULT_GLOBAL_RUNS: usize = 16;
/// [`SandboxConfig::per_caller_runs`] by default.
pub const DEFAULT_PER_CALLER_RUNS: usize = 2;

/// The largest [`SandboxConfig::made_ahead`] (each one holds kernel memory).
pub const MAX_MADE_AHEAD: usize = 16;

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            ceilings: Limits::default_ceilings(),
            fixed_env: vec![
                ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".into()),
                ("LANG".to_owned(), "C.UTF-8".into()),
            ],
            env_allowlist: vec!["OMP_NUM_THREADS".to_owned()],
            read_paths: DEFAULT_READ_PATHS.iter().map(PathBuf::from).collect(),
            disk_check_interval: Duration::from_millis(20),
            host_network: false,
            require: Requirements::default(),
            allow_pid_namespace: true,
            allow_cgroups: true,
            global_runs: Some(DEFAULT_GLOBAL_RUNS),
            per_caller_runs: DEFAULT_PER_CALLER_RUNS,
            kill_grace: Duration::from_secs(2),
            log_grace: Duration::from_millis(250),
            max_args: 256,
            max_arg_bytes: 4096,
            made_ahead: 2,
        }
    }
}

/// What to run: a solver id, an argument vector (never a shell string),
/// allowlisted environment, and limits.
#[derive(Debug, Clone)]
pub struct RunRequest {
    solver: String,
    pub(crate) args: Vec<OsString>,
    pub(crate) env: Vec<(String, OsString)>,
    pub(crate) limits: Limits,
    pub(crate) write_subdir: Option<FileName>,
}

impl RunRequest {
    /// A run of the solver configured under `solver`, no arguments, default limits.
    pub fn new(solver: &str) -> Self {
        Self {
            solver: solver.to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            limits: Limits::default(),
            write_subdir: None,
        }
    }

    /// Confines the solver's writes to the subdirectory `name` of the run
    /// directory (created mode 0700 if missing; refused unless a plain
    /// directory). The run directory, with the server's records in it,
    /// stays read-only to the solver and remains its working directory.
    /// Effective where Landlock is available.
    pub fn write_only_in(mut self, name: FileName) -> Self {
        self.write_subdir = Some(name);
        self
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I: IntoIterator<Item = A>, A: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an allowlisted environment variable.
    pub fn env(mut self, name: &str, value: impl Into<OsString>) -> Self {
        self.env.push((name.to_owned(), value.into()));
        self
    }

    /// Sets the limits (checked against the server's ceilings at launch).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// The process sandbox: cheap to clone, shared by all tools.
#[derive(Debug, Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: SolverRegistry,
    config: SandboxConfig,
    containment: Containment,
    policy: FsPolicy,
    /// Each solver's file-system view (with the view only).
    views: BTreeMap<String, Arc<ViewPlan>>,
    filter: Option<Arc<Filter>>,
    limiter: ConcurrencyLimiter,
    /// Network namespaces made ahead (with a private network only).
    net_pool: Option<NetPool>,
    /// The resource envelope's cgroups (`None`: no backend on this host).
    cgroups: Option<CgroupPool>,
    /// The stacks every launch's init and solver run on (their own copies).
    stacks: Arc<CloneStack>,
    /// Where the server's command line and environment lie (monitors hide them).
    server: ServerStrings,
}

impl Sandbox {
    /// Checks the configuration, detects the host's containment, and refuses
    /// to start when the configuration demands more than the host offers.
    pub fn new(registry: SolverRegistry, config: SandboxConfig) -> Result<Self, ConfigError> {
        config.ceilings.validate_ceilings()?;
        let refuse = |bad: bool, name| match bad {
            true => Err(ConfigError::InvalidLimit(name)),
            false => Ok(()),
        };
        refuse(config.per_caller_runs == 0, "per_caller_runs")?;
        refuse(config.global_runs == Some(0), "global_runs")?;
        let fixed_ok =
            |(k, v): &(String, OsString)| valid_env_name(k) && !v.as_bytes().contains(&0);
        if !config.fixed_env.iter().all(fixed_ok)
            || !config.env_allowlist.iter().all(|k| valid_env_name(k))
        {
            return Err(ConfigError::InvalidEnvironment);
        }
        let interval = config.disk_check_interval;
        let interval_bad = interval.is_zero() || interval > Duration::from_secs(10);
        refuse(interval_bad, "disk_check_interval")?;
        refuse(config.made_ahead > MAX_MADE_AHEAD, "made_ahead")?;
        let filter = Filter::compile()
            .inspect_err(|e| tracing::warn!(error = %e, "no seccomp filter for this architecture"))
            .ok()
            .map(Arc::new);
        let host = probe_host(&config, filter.as_deref())?;
        let cgroups = if config.allow_cgroups {
            Cgroups::detect(CgroupSys::HOST).map(|c| CgroupPool::start(c, config.made_ahead))
        } else {
            None
        };
        let envelope = cgroups
            .as_ref()
            .map_or(EnvelopeSupport::NONE, CgroupPool::support);
        let containment = Containment::from_support(
            host,
            config.allow_pid_namespace,
            !config.host_network,
            envelope,
        );
        containment.check(&config.require)?;
        let mut views = BTreeMap::new();
        for id in registry.ids() {
            let solver = registry
                .get(id)
                .map_err(|_| ConfigError::Missing(id.to_owned()))?;
            if containment.fs_view || containment.landlock_abi > 0 {
                // The solver is exec'd from what it may read: its interpreter
                // and loader must be among it.
                let readable: Vec<&Path> = config
                    .read_paths
                    .iter()
                    .chain(solver.grants())
                    .map(PathBuf::as_path)
                    .collect();
                interp::check_runnable(id, solver.path(), solver.file_id(), &readable)?;
            }
            if containment.fs_view {
                let plan = ViewPlan::new(
                    &config.read_paths,
                    solver.grants(),
                    id,
                    solver.path(),
                    solver.file_id(),
                    !config.host_network,
                )?;
                views.insert(id.to_owned(), Arc::new(plan));
            }
        }
        let policy = FsPolicy::open(
            &config.read_paths,
            containment.fs_view,
            containment.landlock_abi,
        )?;
        let limiter = ConcurrencyLimiter::new(config.global_runs, config.per_caller_runs);
        let filter = filter.filter(|_| containment.seccomp);
        let net_pool = containment
            .private_network
            .then(|| start_net_pool(&config, filter.as_deref()))
            .flatten();
        let stacks = CloneStack::new().map(Arc::new).map_err(|e| {
            tracing::error!(error = %e, "sandbox: the launches' clone stacks not mapped");
            ConfigError::Resource("the launches' clone stacks")
        })?;
        let server = ServerStrings::of_this_process().map_err(|e| {
            tracing::error!(error = %e, "sandbox: the server's command line not found in its memory");
            ConfigError::ServerNotHidden
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                registry,
                config,
                containment,
                policy,
                views,
                filter,
                limiter,
                net_pool,
                cgroups,
                stacks,
                server,
            }),
        })
    }

    /// The containment level detected at start (what runs actually get).
    pub fn containment(&self) -> Containment {
        self.inner.containment
    }

    /// The concurrency limiter of runs (for observation).
    pub fn limiter(&self) -> &ConcurrencyLimiter {
        &self.inner.limiter
    }

    /// The solver allowlist.
    pub fn registry(&self) -> &SolverRegistry {
        &self.inner.registry
    }

    /// The checks of every launch, whichever launcher: a slot of `caller`'s
    /// ceiling, solver id, limits, arguments and environment, and no read
    /// path at or above the run directory (it would show the run root).
    pub(crate) fn admit(
        &self,
        caller: &CallerId,
        run_dir: &RunDir,
        request: &RunRequest,
    ) -> Result<(Permit, &Solver), SandboxError> {
        let inner = &*self.inner;
        let permit = inner.limiter.try_acquire(caller)?;
        let solver = inner.registry.get(&request.solver)?;
        request.limits.check_within(&inner.config.ceilings)?;
        self.check_arguments(request)?;
        let host = run_dir.host_path();
        let mut readable = inner.config.read_paths.iter().chain(solver.grants());
        if readable.any(|p| host.starts_with(p)) {
            tracing::error!(solver = %solver.id(), "a read path of the sandbox holds the run root; refused");
            return Err(SandboxError::RunDirUnusable);
        }
        Ok((permit, solver))
    }

    #[cfg(feature = "slurm")]
    pub(crate) fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// Launches a run on this machine for `caller` in `run_dir`, which only
    /// the run root hands out ([`RunRoot::create`](crate::runs::RunRoot::create),
    /// [`RunRoot::resolve`](crate::runs::RunRoot::resolve)). Nothing starts at
    /// a concurrency ceiling; a run directory removed since it was resolved
    /// is refused ([`SandboxError::RunDirUnusable`]). `cancel` cancels the run
    /// (through a child token: [`SandboxedRun::canceller`]). Must be called
    /// inside a tokio runtime. For cluster runs, see [`Launcher`](crate::jobs::Launcher).
    ///
    /// Any other directory, such as a descriptor opened by path, does not
    /// compile:
    ///
    /// ```compile_fail,E0308
    /// # fn demo(sandbox: &hardened_mcp::sandbox::Sandbox) {
    /// use hardened_mcp::identity::CallerId;
    /// use hardened_mcp::sandbox::RunRequest;
    ///
    /// let dir = std::fs::File::open("/tmp").unwrap();
    /// let cancel = tokio_util::sync::CancellationToken::new();
    /// let _ = sandbox.launch(&CallerId::local(), &dir, RunRequest::new("heat"), &cancel);
    /// # }
    /// ```
    pub fn launch(
        &self,
        caller: &CallerId,
        run_dir: &RunDir,
        request: RunRequest,
        cancel: &CancellationToken,
    ) -> Result<SandboxedRun, SandboxError> {
        let (permit, solver) = self.admit(caller, run_dir, &request)?;
        let limits = request.limits;
        let planned = self.plan(solver, run_dir, &request)?;
        let receiver = |fd| tokio::net::unix::pipe::Receiver::from_owned_fd(fd).map_err(internal);
        let reaped = receiver(planned.reaped)?;
        let status = receiver(planned.status)?;
        // The child execs the solver from its descriptor with `exec`; std
        // only sets up the standard streams and never reaches its own exec.
        let mut cmd = tokio::process::Command::new(solver.path());
        cmd.env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        child::install(cmd.as_std_mut(), planned.plan);
        reserve_usage(run_dir, &limits)?;
        let started = Instant::now();
        let spawned = cmd.spawn();
        // Closes the server's copies of the child-side descriptors.
        drop(cmd);
        let mut child = spawned.map_err(|e| {
            tracing::error!(solver = %solver.id(), error = %e, "solver spawn failed");
            unreserve_usage(run_dir);
            SandboxError::SpawnFailed
        })?;
        tracing::info!(solver = %solver.id(), caller = %caller, "solver run started");

        let stdout_log = SharedLog::new(limits.log_head, limits.log_tail);
        let stderr_log = SharedLog::new(limits.log_head, limits.log_tail);
        let (progress_tx, progress_rx) = watch::channel(None);
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(SandboxError::Internal);
        };
        let progress = Some(ProgressParser::new(progress_tx));
        let readers = [
            AbortOnDropHandle::new(tokio::spawn(drain(out, stdout_log.clone(), progress))),
            AbortOnDropHandle::new(tokio::spawn(drain(err, stderr_log.clone(), None))),
        ];
        Ok(SandboxedRun(Box::new(LocalRun {
            child,
            control: Some(planned.control),
            status: Some(status),
            record: None,
            reaped,
            run_dir: planned.run_dir,
            readers,
            stdout: stdout_log,
            stderr: stderr_log,
            progress: progress_rx,
            cancel: cancel.child_token(),
            started,
            limits,
            cgroup: CgroupGuard(planned.cgroup),
            disk_interval: self.inner.config.disk_check_interval,
            kill_grace: self.inner.config.kill_grace,
            log_grace: self.inner.config.log_grace,
            _permit: permit,
        })))
    }

    /// Everything a launch of `request` by `solver` in `run_dir` prepares
    /// before the fork: the child's plan (descriptors opened, strings
    /// encoded, the run's cgroup taken) and the server's ends of its pipes.
    fn plan(
        &self,
        solver: &Solver,
        run_dir: &RunDir,
        request: &RunRequest,
    ) -> Result<Planned, SandboxError> {
        let inner = &*self.inner;
        let limits = request.limits;
        let dir = dup_dir(run_dir.as_fd())?;
        let writable = request.write_subdir.as_ref();
        let writable = writable.map(|n| open_subdir(dir.as_fd(), n)).transpose()?;
        solver.verify_unchanged()?;
        let ruleset = if inner.containment.landlock_abi > 0 {
            let w = writable.as_ref().map(AsFd::as_fd);
            inner
                .policy
                .ruleset(dir.as_fd(), w, solver.fd(), solver.grant_fds())?
        } else {
            None
        };
        let mut view = None;
        if let Some(plan) = inner.views.get(solver.id()) {
            let w = request.write_subdir.as_ref().zip(writable.as_ref());
            let w = w.map(|(n, fd)| file_id(fd).map(|id| (n.as_str(), id)));
            let run = plan
                .run_mounts(
                    file_id(&dir)?,
                    w.transpose()?,
                    limits.tmp_size,
                    limits.shm_size,
                )
                .map_err(internal)?;
            let net = inner.net_pool.as_ref().filter(|_| plan.private_network);
            view = Some(ViewChild {
                plan: Arc::clone(plan),
                run,
                rules: inner.policy.view_rules(),
                net: net.and_then(NetPool::take),
            });
        }
        drop(writable);
        let exec = self.exec_plan(solver.id(), view.is_some(), request)?;
        let pipe = |flags| pipe_with(PipeFlags::CLOEXEC | flags).map_err(internal);
        let (control_rd, control) = pipe(PipeFlags::empty())?;
        let (status, status_wr) = pipe(PipeFlags::NONBLOCK)?;
        let (reaped, reaped_wr) = pipe(PipeFlags::NONBLOCK)?;
        let cgroup = inner.cgroups.as_ref().map(|c| c.take(&limits));
        let mut cgroup = cgroup.transpose().map_err(internal)?;
        let join_fds = cgroup.as_mut().map(RunCgroup::take_join_fds);
        let plan = ChildPlan {
            run_dir: dir.try_clone().map_err(internal)?,
            solver: solver.fd().try_clone_to_owned().map_err(internal)?,
            ruleset,
            control: control_rd,
            status: status_wr,
            reaped: reaped_wr,
            cgroup: join_fds.unwrap_or_default(),
            pid_namespace: inner.containment.tree_kill == TreeKill::PidNamespace,
            id_maps: IdMaps::for_server(),
            view,
            seccomp: inner.filter.clone(),
            rlimits: RlimitPlan {
                cpu: (limits.cpu_seconds(), limits.cpu_seconds().saturating_add(1)),
                file_size: limits.file_size_rlimit(),
                open_files: limits.open_files,
                address_space: limits.address_space,
            },
            exec,
            stacks: Arc::clone(&inner.stacks),
            server: inner.server,
        };
        Ok(Planned {
            plan,
            control,
            status,
            reaped,
            run_dir: dir,
            cgroup,
        })
    }

    /// Launches a run (as [`Sandbox::launch`]), waits for its outcome, then
    /// records what the run directory holds for the caller's byte quota.
    pub async fn run(
        &self,
        caller: &CallerId,
        run_dir: &RunDir,
        request: RunRequest,
        cancel: &CancellationToken,
    ) -> Result<Outcome, SandboxError> {
        let outcome = self.launch(caller, run_dir, request, cancel)?.wait().await;
        record_usage_after_run(run_dir).await;
        Ok(outcome)
    }

    /// The solver's argv and environment (the fixed one, the run's over it).
    /// `argv[0]` is the executable's path in the view (`/sandbox/bin/<id>`,
    /// for `sys.executable` and self-re-exec), else the bare id; its file
    /// name is the id either way (multi-call binaries).
    fn exec_plan(
        &self,
        id: &str,
        in_view: bool,
        request: &RunRequest,
    ) -> Result<ExecPlan, SandboxError> {
        let argv0 = if in_view {
            Path::new(super::VIEW_SOLVER_DIR).join(id).into_os_string()
        } else {
            OsString::from(id)
        };
        let argv = CStrArray::new(
            std::iter::once(argv0.as_os_str()).chain(request.args.iter().map(|a| a.as_os_str())),
        )
        .ok_or(SandboxError::InvalidArgument)?;
        // The run's value of a name replaces the fixed one.
        let env: BTreeMap<&str, &OsStr> = (self.inner.config.fixed_env.iter())
            .chain(&request.env)
            .map(|(k, v)| (k.as_str(), v.as_os_str()))
            .collect();
        let entry = |(k, v)| OsString::from_iter([OsStr::new(k), OsStr::new("="), v]);
        let envp =
            CStrArray::new(env.into_iter().map(entry)).ok_or(SandboxError::InvalidEnvironment)?;
        Ok(ExecPlan { argv, envp })
    }

    fn check_arguments(&self, request: &RunRequest) -> Result<(), SandboxError> {
        let cfg = &self.inner.config;
        let ok_value = |v: &OsString| v.len() <= cfg.max_arg_bytes && !v.as_bytes().contains(&0);
        if request.args.len() > cfg.max_args || !request.args.iter().all(ok_value) {
            return Err(SandboxError::InvalidArgument);
        }
        let allowed = |(k, v): &(String, OsString)| cfg.env_allowlist.contains(k) && ok_value(v);
        if request.env.len() > cfg.env_allowlist.len() || !request.env.iter().all(allowed) {
            return Err(SandboxError::InvalidEnvironment);
        }
        Ok(())
    }
}

/// A run launched by [`Sandbox::launch`] on this machine. Dropping it
/// before it ended kills the whole tree (its control pipe hangs up) and
/// releases the concurrency slot. A [`Launcher`](crate::jobs::Launcher)'s
/// [`RunningSolver`](crate::jobs::RunningSolver) wraps it or a cluster job.
#[derive(Debug)]
pub struct SandboxedRun(Box<LocalRun>);

impl SandboxedRun {
    /// A token that cancels this run only.
    pub fn canceller(&self) -> CancellationToken {
        self.0.cancel.clone()
    }

    /// The latest progress report (`PROGRESS <done> <total>` lines).
    pub fn progress(&self) -> watch::Receiver<Option<ProgressReport>> {
        self.0.progress.clone()
    }

    /// The live standard-output buffer (for tailing a running run).
    pub fn stdout_log(&self) -> SharedLog {
        self.0.stdout.clone()
    }

    /// The live standard-error buffer.
    pub fn stderr_log(&self) -> SharedLog {
        self.0.stderr.clone()
    }

    /// The monitor's pid (server-side diagnostics and tests).
    pub fn monitor_pid(&self) -> Option<u32> {
        self.0.child.id()
    }

    /// Waits for the run's end (exit, wall-time limit or cancellation), the
    /// tree's death, and the logs drained or abandoned after the log grace.
    pub async fn wait(self) -> Outcome {
        self.0.wait().await
    }
}

/// A launch up to the fork ([`Sandbox::plan`]): the child's plan, and the
/// server's ends of the control, status and reaped pipes.
struct Planned {
    plan: ChildPlan,
    control: OwnedFd,
    status: OwnedFd,
    reaped: OwnedFd,
    run_dir: OwnedFd,
    cgroup: Option<RunCgroup>,
}

/// A run of the local sandbox.
#[derive(Debug)]
struct LocalRun {
    child: tokio::process::Child,
    control: Option<OwnedFd>,
    /// Read end of the status pipe ([`ChildPlan::status`]); `None` once it
    /// gave its record or hung up.
    status: Option<tokio::net::unix::pipe::Receiver>,
    record: Option<ExitRecord>,
    /// Read end of the monitor's "tree dead" pipe ([`ChildPlan::reaped`]).
    reaped: tokio::net::unix::pipe::Receiver,
    run_dir: OwnedFd,
    readers: [AbortOnDropHandle<()>; 2],
    stdout: SharedLog,
    stderr: SharedLog,
    progress: watch::Receiver<Option<ProgressReport>>,
    cancel: CancellationToken,
    started: Instant,
    limits: Limits,
    /// The run's cgroup, removed once the monitor is reaped.
    cgroup: CgroupGuard,
    disk_interval: Duration,
    kill_grace: Duration,
    log_grace: Duration,
    _permit: Permit,
}

impl LocalRun {
    async fn wait(mut self) -> Outcome {
        let deadline = self.started + self.limits.wall_time;
        let (mut timed_out, mut cancelled) = (false, false);
        let found = Arc::new(OnceLock::new());
        let watch = DiskWatch {
            monitor_pid: self.child.id(),
            found: Arc::clone(&found),
            control: self.control.as_ref(),
            run_dir: &self.run_dir,
            limits: &self.limits,
            interval: self.disk_interval,
            cgroup: self.cgroup.0.as_ref(),
        };
        let ended = tokio::select! {
            r = tree_dead(&mut self.reaped, &mut self.status, &mut self.record, &mut self.child) => r,
            () = tokio::time::sleep_until(deadline) => { timed_out = true; false }
            () = self.cancel.cancelled() => { cancelled = true; false }
            () = watch.exceeded() => false,
        };
        // Read after the select: the disk monitor kills the tree as it finds
        // a limit passed, so the tree's end may win the select.
        let mut disk_hit = found.get().copied();
        if !ended {
            self.kill_and_reap().await;
        }
        let wall_time = self.started.elapsed();
        let record = self.record.or_else(|| take_record(&mut self.status));
        if record.is_some() {
            // The solver ended on its own before any kill took effect: it is
            // judged by what it left, however short the run was.
            timed_out = false;
            cancelled = false;
            disk_hit = self.disk_at_end().await;
        }
        let logs_complete = self.drain_logs().await;
        let (termination, cpu_time) = match record {
            Some(r) => (termination_of(r.wait_status), Some(r.cpu)),
            None if timed_out || cancelled || disk_hit.is_some() => (Termination::Killed, None),
            None => (Termination::Unknown, None),
        };
        let cgroup = self.cgroup.0.as_ref();
        let events = cgroup.map(RunCgroup::events).unwrap_or_default();
        let limit = disk_hit.or_else(|| {
            envelope_limit(
                Ended {
                    termination,
                    timed_out,
                    cancelled,
                    wall_time,
                },
                events,
                limit_of(termination, cpu_time, self.limits.cpu_seconds()),
                || self.disk_full(),
            )
        });
        let outcome = Outcome {
            termination,
            timed_out,
            cancelled,
            limit,
            wall_time,
            cpu_time,
            stdout: self.stdout.snapshot(),
            stderr: self.stderr.snapshot(),
            logs_complete,
        };
        // The monitor is exiting: reap it here rather than in tokio's orphan
        // queue, which only looks on a later SIGCHLD.
        let mut monitor = self.child;
        let cgroup = self.cgroup.0.take();
        tokio::spawn(async move {
            if let Err(e) = monitor.wait().await {
                tracing::error!(error = %e, "reaping the sandbox monitor failed");
            }
            if let Some(cgroup) = cgroup {
                remove_cgroup(cgroup).await;
            }
        });
        tracing::info!(
            termination = ?outcome.termination,
            timed_out, cancelled, limit = ?outcome.limit,
            wall_ms = wall_time.as_millis() as u64,
            "solver run ended"
        );
        outcome
    }

    /// Says the kill word and drops the control pipe, then waits for the
    /// tree's end; a monitor silent past the kill grace is killed.
    async fn kill_and_reap(&mut self) {
        if let Some(control) = self.control.take() {
            say_kill(&control);
        }
        let dead = tree_dead(
            &mut self.reaped,
            &mut self.status,
            &mut self.record,
            &mut self.child,
        );
        if tokio::time::timeout(self.kill_grace, dead).await.is_err() {
            tracing::error!("sandbox monitor did not end after a kill; killing it");
            if let Err(e) = self.child.start_kill() {
                tracing::error!(error = %e, "killing the sandbox monitor failed");
            }
            if let Err(e) = self.child.wait().await {
                tracing::error!(error = %e, "reaping the sandbox monitor failed");
            }
        }
    }

    async fn drain_logs(&mut self) -> bool {
        let [out, err] = &mut self.readers;
        let both = async {
            let _ = out.await;
            let _ = err.await;
        };
        match tokio::time::timeout(self.log_grace, both).await {
            Ok(()) => true,
            Err(_) => {
                tracing::warn!("solver log readers abandoned after the grace period");
                for r in &self.readers {
                    r.abort();
                }
                false
            }
        }
    }

    /// The disk limit an ended run's directory is over, measured once more
    /// ([`super::disk::over_at_end`]); what cannot be measured is over.
    async fn disk_at_end(&self) -> Option<LimitHit> {
        let limits = (self.limits.disk_bytes, self.limits.disk_files);
        let dir = rustix::io::fcntl_dupfd_cloexec(&self.run_dir, 3);
        let measured =
            tokio::task::spawn_blocking(move || super::disk::over_at_end(dir?.as_fd(), limits))
                .await;
        let over = match measured {
            Ok(Ok(over)) => over?,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "disk monitor: the ended run cannot be measured");
                Over::Entries(0)
            }
            Err(e) => {
                tracing::error!(error = %e, "disk monitor: the ended run's measurement failed");
                Over::Entries(0)
            }
        };
        let (hit, what, held) = over_facts(over);
        tracing::warn!(
            limit = what,
            held,
            "disk monitor: the ended run is over its limit"
        );
        Some(hit)
    }

    fn disk_full(&self) -> bool {
        rustix::fs::fstatfs(&self.run_dir).is_ok_and(|s| s.f_bavail == 0)
    }
}

/// The disk monitor of one run ([`super::disk::monitor`]) on a blocking
/// thread, stopped when [`DiskWatch::exceeded`] is dropped.
struct DiskWatch<'a> {
    /// The sandbox's monitor process, spared by the kill from here.
    monitor_pid: Option<u32>,
    /// The limit the monitor found passed, set before it kills the tree.
    found: Arc<OnceLock<LimitHit>>,
    /// The run's control pipe, for the kill word.
    control: Option<&'a OwnedFd>,
    run_dir: &'a OwnedFd,
    limits: &'a Limits,
    interval: Duration,
    cgroup: Option<&'a RunCgroup>,
}

impl DiskWatch<'_> {
    /// Resolves when the run is over a disk limit (`found` says which);
    /// pending forever otherwise, also when the monitor cannot start.
    async fn exceeded(self) {
        let dup = |fd| rustix::io::fcntl_dupfd_cloexec(fd, 3);
        let started = (|| {
            let control = self.control.map(dup).transpose()?;
            let (stop_rd, stop_wr) = pipe_with(PipeFlags::CLOEXEC)?;
            Ok::<_, rustix::io::Errno>((control, dup(self.run_dir)?, stop_rd, stop_wr))
        })();
        let not_started = |e: &_| tracing::error!(error = %e, "disk monitor not started");
        let Ok((control, dir, stop_rd, _stop)) = started.inspect_err(not_started) else {
            return std::future::pending().await;
        };
        let (found, monitor_pid, interval) = (self.found, self.monitor_pid, self.interval);
        let limits = (self.limits.disk_bytes, self.limits.disk_files);
        let members = self.cgroup.map(RunCgroup::members);
        let killer = self.cgroup.map(RunCgroup::killer);
        let over = tokio::task::spawn_blocking(move || {
            let members = || members.as_ref().map(|m| m()).unwrap_or_default();
            let over =
                super::disk::monitor(dir.as_fd(), &members, limits, interval, stop_rd.as_fd());
            let (hit, what, held) = over_facts(over?);
            let _ = found.set(hit);
            // Killed from here first: the monitor shares the run's CPU share
            // and, throttled, would act on the kill word a period later.
            if let Some(kill) = &killer {
                kill(monitor_pid);
            }
            if let Some(control) = &control {
                say_kill(control);
            }
            tracing::warn!(limit = what, held, "disk monitor: run over its limit");
            Some(())
        })
        .await;
        // `_stop` lives until here: dropping this future hangs it up.
        if let Err(e) = &over {
            tracing::error!(error = %e, "disk monitor failed");
        }
        if !matches!(over, Ok(Some(()))) {
            std::future::pending::<()>().await;
        }
    }
}

/// The limit an [`Over`] is, its name in the log and what the run held.
fn over_facts(over: Over) -> (LimitHit, &'static str, u64) {
    match over {
        Over::Entries(n) => (LimitHit::DiskFiles, "entries", n),
        Over::Bytes(n) => (LimitHit::DiskBytes, "bytes", n),
    }
}

/// Writes the kill word on a run's control pipe (unlike a hang-up, it
/// works while another copy of the pipe is open).
fn say_kill(control: &OwnedFd) {
    if let Err(e) = rustix::io::write(control, &[KILL_WORD]) {
        tracing::error!(error = %e, "kill word not written");
    }
}

/// Records what a finished run's directory holds for its caller's byte
/// quota, replacing the reservation made at launch (logged on failure).
pub(crate) async fn record_usage_after_run(run_dir: &RunDir) {
    if let Err(e) = run_dir.record_usage_async(false).await {
        tracing::warn!(error = %e, "run usage not recorded");
    }
}

/// Refuses a run directory removed since it was resolved (as
/// [`Sandbox::launch`] does, for a launcher that does not fork here).
#[cfg(feature = "slurm")]
pub(crate) fn check_run_dir_live(run_dir: &RunDir) -> Result<(), SandboxError> {
    dup_dir(run_dir.as_fd()).map(drop)
}

/// Counts a run about to start at its disk limit in its caller's byte
/// quota ([`RunDir::reserve_usage`]). On a full file system the run starts
/// unreserved (it cannot grow there); any other failure refuses it.
pub(crate) fn reserve_usage(run_dir: &RunDir, limits: &Limits) -> Result<(), SandboxError> {
    match run_dir.reserve_usage(limits.disk_bytes) {
        Ok(()) => Ok(()),
        Err(RunError::NoSpace) => {
            tracing::warn!("run usage not reserved: the run root's file system is full");
            Ok(())
        }
        Err(e) => {
            tracing::error!(error = %e, "run usage not reserved");
            Err(SandboxError::RunDirUnusable)
        }
    }
}

/// Undoes [`reserve_usage`] for a run that did not start (best effort).
pub(crate) fn unreserve_usage(run_dir: &RunDir) {
    if let Err(e) = run_dir.record_usage(false) {
        tracing::warn!(error = %e, "run usage not recorded after a failed launch");
    }
}

/// How a run ended, as far as naming its limit needs.
struct Ended {
    termination: Termination,
    timed_out: bool,
    cancelled: bool,
    wall_time: Duration,
}

/// The limit that explains how a run ended, first of: an OOM kill in the
/// tree; the rlimit its signal names; on timeout, the CPU share if throttled
/// a quarter of its life; none if cancelled or successful; else the process
/// limit or a full disk.
fn envelope_limit(
    ended: Ended,
    events: CgroupEvents,
    rlimit: Option<LimitHit>,
    disk_full: impl FnOnce() -> bool,
) -> Option<LimitHit> {
    if events.oom_kills > 0 {
        return Some(LimitHit::Memory);
    }
    if rlimit.is_some() {
        return rlimit;
    }
    if ended.timed_out {
        let wall_us = u64::try_from(ended.wall_time.as_micros()).unwrap_or(u64::MAX);
        let held = events.throttled_us.saturating_mul(4) >= wall_us;
        return held.then_some(LimitHit::CpuShare);
    }
    if ended.cancelled || ended.termination == Termination::Exited(0) {
        return None;
    }
    if events.pids_refused > 0 {
        return Some(LimitHit::Processes);
    }
    disk_full().then_some(LimitHit::DiskFull)
}

/// Removes a finished run's cgroup, retrying briefly while a member exits
/// (then it is left for the next start's sweep).
async fn remove_cgroup(mut cgroup: RunCgroup) {
    for _ in 0..50 {
        let done = tokio::task::spawn_blocking(move || (cgroup.remove(), cgroup)).await;
        match done {
            Ok((true, _)) => return,
            Ok((false, c)) => cgroup = c,
            Err(e) => {
                tracing::error!(error = %e, "removing a run cgroup failed");
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A run's cgroup until [`LocalRun::wait`] takes it; dropped before (the
/// tree being killed), it is removed once empty, off this thread.
#[derive(Debug)]
struct CgroupGuard(Option<RunCgroup>);

impl Drop for CgroupGuard {
    fn drop(&mut self) {
        if let Some(cgroup) = self.0.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(remove_cgroup(cgroup));
        }
    }
}

/// Waits until the solver's whole tree is dead, as either word says:
/// * the exit record on the status pipe (kept in `record`), written by the
///   init once it has killed and reaped the rest of the PID namespace, or
///   at the process-group level by the monitor once it has reaped the
///   solver and killed its group;
/// * the monitor's byte on `reaped` once it has reaped its child (the only
///   word after a kill).
///
/// A status pipe that hangs up without a record becomes `None`; a monitor
/// that ends silent is waited for. `false`: it could not be.
async fn tree_dead(
    reaped: &mut tokio::net::unix::pipe::Receiver,
    status: &mut Option<tokio::net::unix::pipe::Receiver>,
    record: &mut Option<ExitRecord>,
    child: &mut tokio::process::Child,
) -> bool {
    let mut byte = [0u8; 1];
    loop {
        let status_ready = async {
            match status.as_ref() {
                Some(s) => s.readable().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            r = reaped.readable() => {
                if r.is_err() {
                    break;
                }
                match reaped.try_read(&mut byte) {
                    Ok(1) => return true,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    // End of file (the monitor died without a word) or an error.
                    _ => break,
                }
            }
            r = status_ready => {
                if r.is_err() {
                    *status = None;
                }
                // Hung up without a record: the monitor will say.
                if let Some(r) = take_record(status) {
                    *record = Some(r);
                    return true;
                }
            }
        }
    }
    child.wait().await.is_ok()
}

/// The exit record if the status pipe holds it now. The pipe is dropped once
/// it gave one, hung up or held other bytes (a record is written whole, last).
fn take_record(status: &mut Option<tokio::net::unix::pipe::Receiver>) -> Option<ExitRecord> {
    let mut buf = [0u8; RECORD_LEN + 1];
    let read = status.as_ref()?.try_read(&mut buf);
    if matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock) {
        return None;
    }
    *status = None;
    read.ok().and_then(|n| ExitRecord::decode(&buf[..n]))
}

/// A duplicate of the run directory's descriptor, refused if the directory
/// was removed since it was resolved (its files unreachable to later tools).
fn dup_dir(fd: std::os::fd::BorrowedFd<'_>) -> Result<OwnedFd, SandboxError> {
    let st = rustix::fs::fstat(fd).map_err(|e| {
        tracing::error!(error = %e, "run directory not inspectable");
        SandboxError::RunDirUnusable
    })?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
        tracing::error!("run directory descriptor is not a directory");
        return Err(SandboxError::RunDirUnusable);
    }
    if st.st_nlink == 0 {
        tracing::warn!("run directory removed before the launch");
        return Err(SandboxError::RunDirUnusable);
    }
    rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(internal)
}

/// Opens (creating if needed) the plain subdirectory `name` of `dir`.
fn open_subdir(dir: std::os::fd::BorrowedFd<'_>, name: &FileName) -> Result<OwnedFd, SandboxError> {
    use rustix::fs::{Mode, OFlags};
    let unusable = |e: rustix::io::Errno| {
        tracing::error!(error = %e, "run subdirectory unusable");
        SandboxError::RunDirUnusable
    };
    match rustix::fs::mkdirat(dir, name.as_str(), Mode::RWXU) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(unusable(e)),
    }
    rustix::fs::openat(
        dir,
        name.as_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(unusable)
}

fn file_id(fd: &OwnedFd) -> Result<(u64, u64), SandboxError> {
    let st = rustix::fs::fstat(fd).map_err(internal)?;
    Ok((st.st_dev, st.st_ino))
}

fn valid_env_name(k: &str) -> bool {
    !k.is_empty() && !k.contains('=') && !k.contains('\0')
}

fn internal(e: impl std::fmt::Display) -> SandboxError {
    tracing::error!(error = %e, "sandbox launch failed");
    SandboxError::Internal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_is_planned_from_its_request_and_the_host_without_a_fork() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = crate::runs::RunRoot::open(tmp.path().join("runs")).unwrap();
        let (_, dir) = runs.create(&CallerId::local()).unwrap();
        let registry = SolverRegistry::builder().solver("t", "/usr/bin/true");
        let mut config = SandboxConfig {
            require: Requirements::none(),
            allow_cgroups: false,
            made_ahead: 0,
            ..SandboxConfig::default()
        };
        config
            .fixed_env
            .push(("OMP_NUM_THREADS".to_owned(), "1".into()));
        let sandbox = Sandbox::new(registry.build().unwrap(), config).unwrap();
        let c = sandbox.containment();
        let limits = Limits {
            cpu_time: Duration::from_millis(1500),
            disk_bytes: 1 << 20,
            tmp_size: 1 << 16,
            ..Limits::default()
        };
        let request = RunRequest::new("t")
            .arg("-x")
            .env("OMP_NUM_THREADS", "2")
            .limits(limits);
        let solver = sandbox.registry().get("t").unwrap();
        let Planned { plan, .. } = sandbox.plan(solver, &dir, &request).unwrap();
        let text = |a: &CStrArray| -> Vec<String> {
            a.entries()
                .iter()
                .map(|s| s.to_str().unwrap().to_owned())
                .collect()
        };
        let argv0 = if c.fs_view { "/sandbox/bin/t" } else { "t" };
        assert_eq!(text(&plan.exec.argv), [argv0, "-x"]);
        let envp = text(&plan.exec.envp);
        let fixed = ["LANG=C.UTF-8", "OMP_NUM_THREADS=2"];
        assert_eq!(envp[..2], fixed, "sorted, the run's over the fixed");
        assert!(envp[2].starts_with("PATH=/usr/local/bin:"), "{envp:?}");
        assert_eq!(plan.rlimits.cpu, (2, 3), "rounded up, then one more");
        assert_eq!(plan.rlimits.file_size, 1 << 20, "no file past the disk");
        assert_eq!(plan.pid_namespace, c.tree_kill == TreeKill::PidNamespace);
        assert_eq!(plan.seccomp.is_some(), c.seccomp);
        assert_eq!(plan.ruleset.is_some(), c.landlock_abi > 0);
        assert!(plan.cgroup.is_empty());
        let tmp_options = plan.view.as_ref().map(|v| v.run.tmp_options.to_bytes());
        assert_eq!(tmp_options.is_some(), c.fs_view);
        assert!(tmp_options.is_none_or(|o| o.starts_with(b"mode=0700,size=65536,")));
        // Refused before a plan: an argument with a NUL byte.
        let nul = RunRequest::new("t").arg("a\0b");
        let refused = sandbox.plan(solver, &dir, &nul).err();
        assert_eq!(refused, Some(SandboxError::InvalidArgument));
    }

    fn ended(termination: Termination, timed_out: bool, cancelled: bool) -> Ended {
        Ended {
            termination,
            timed_out,
            cancelled,
            wall_time: Duration::from_secs(4),
        }
    }

    fn events(oom_kills: u64, pids_refused: u64, throttled_us: u64) -> CgroupEvents {
        CgroupEvents {
            oom_kills,
            pids_refused,
            throttled_us,
        }
    }

    #[test]
    fn each_limit_is_named_only_where_it_explains_the_end() {
        use Termination::{Exited, Killed, Signaled};
        let never = || panic!("the file system is not asked");
        let limit = |t, timed_out, cancelled, events| {
            envelope_limit(ended(t, timed_out, cancelled), events, None, never)
        };
        // An OOM kill in the tree, whatever the solver's own end.
        let memory = limit(Exited(0), false, false, events(1, 0, 0));
        assert_eq!(memory, Some(LimitHit::Memory));
        // A refused fork explains a failure, not a success or a cancel.
        let pids = limit(Exited(1), false, false, events(0, 3, 0));
        assert_eq!(pids, Some(LimitHit::Processes));
        assert_eq!(limit(Exited(0), false, false, events(0, 3, 0)), None);
        assert_eq!(limit(Killed, false, true, events(0, 3, 0)), None);
        // A timeout is the CPU share's if throttled a quarter of 4 s or more.
        let slow = limit(Killed, true, false, events(0, 0, 1_000_000));
        assert_eq!(slow, Some(LimitHit::CpuShare));
        assert_eq!(limit(Killed, true, false, events(0, 0, 10_000)), None);
        // The rlimit a signal names comes before the cgroup's counters.
        let xfsz = ended(Signaled(libc::SIGXFSZ), false, false);
        let fsize = Some(LimitHit::FileSize);
        assert_eq!(envelope_limit(xfsz, events(0, 1, 0), fsize, never), fsize);
        // A plain failure asks whether the disk filled up.
        let failed = || ended(Exited(1), false, false);
        let full = envelope_limit(failed(), events(0, 0, 0), None, || true);
        assert_eq!(full, Some(LimitHit::DiskFull));
        assert_eq!(
            envelope_limit(failed(), events(0, 0, 0), None, || false),
            None
        );
    }
}
