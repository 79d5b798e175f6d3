//! The Slurm launcher: a run submitted as a batch job of a Slurm cluster
//! instead of forked on this machine, with every rule of a local run kept.
//!
//! ```text
//! server ── sbatch --parsable … <run dir>/slurm-batch.sh <run dir>/slurm-spec
//!                 (argument vector; no shell on the server)
//! node   ── slurm-batch.sh: a fixed, framework-owned script:
//!               exec '<helper>' [<fixed helper args>] "$1"
//!        ── helper (`node_main`): verifies the run spec (HMAC under the run
//!           root's key), resolves the run directory through the run root,
//!           and runs the solver through this same sandbox (view, seccomp,
//!           Landlock, rlimits, PID namespace, exec by descriptor), then
//!           persists the outcome and the bounded logs in the run directory
//! server ── polls `scontrol show job` until the job ends; reads the outcome
//! ```
//!
//! No caller-influenced text reaches a file Slurm executes: the batch script
//! holds only the helper's path and fixed arguments (server configuration,
//! checked at start to be plain); the argument values travel in the run
//! spec, a data file. Resources come from the run's validated limits and
//! the server's configuration: `--time` from the wall limit,
//! `--cpus-per-task`, `--mem`, `--partition`; `--output`/`--error` go to
//! fixed names in the run directory; the job name is derived from the run
//! handle by HMAC, so `squeue` shows nothing a caller chose and no handle.
//! `--export=NONE`: the server's environment does not reach the job.
//!
//! The run root must be on a file system the nodes share, at the same path.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::containment::{Requirements, TreeKill};
use super::error::{ConfigError, SandboxError};
use super::jobs::{StatusSink, finished_json};
use super::limits::Limits;
use super::logs::{CapturedLog, SharedLog};
use super::outcome::{LimitHit, Outcome, Termination};
use super::progress::ProgressReport;
use super::registry::Solver;
use super::run::{RunRequest, Sandbox, SandboxConfig};
use super::rundir::{JOB_STATUS_FILE, STDERR_LOG_FILE, STDOUT_LOG_FILE};
use crate::identity::CallerId;
use crate::limits::Permit;
use crate::runs::{FileName, HandlePrefix, RunDir, RunRoot};

/// The run spec the server writes for the node helper: a hex HMAC line,
/// then the spec as JSON.
pub const RUN_SPEC_FILE: FileName = FileName::fixed("slurm-spec");
/// The fixed batch script submitted to Slurm.
pub const BATCH_SCRIPT_FILE: FileName = FileName::fixed("slurm-batch.sh");
/// The Slurm job id of the run (the handle → job mapping), persisted so
/// that a restarted server finds its job.
pub const SLURM_JOB_FILE: FileName = FileName::fixed("slurm-job");
/// Where Slurm writes the helper's own standard output (`--output`).
pub const SLURM_STDOUT_FILE: FileName = FileName::fixed("slurm-stdout.log");
/// Where Slurm writes the helper's own standard error (`--error`).
pub const SLURM_STDERR_FILE: FileName = FileName::fixed("slurm-stderr.log");

/// Largest run spec read by the helper.
const MAX_SPEC_BYTES: usize = 256 * 1024;
/// Largest output of a Slurm command read by the server.
const MAX_COMMAND_OUTPUT: usize = 64 * 1024;
/// How long a Slurm command (`sbatch`, `scontrol`, `scancel`) may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the server waits for a cancelled job to leave the queue.
const CANCEL_GRACE: Duration = Duration::from_secs(60);
/// Version of the run spec format.
const SPEC_VERSION: u32 = 1;

/// Where runs execute.
#[derive(Debug, Clone, Default)]
pub enum Launcher {
    /// On this machine, under the local sandbox.
    #[default]
    Local,
    /// As batch jobs of a Slurm cluster; a node helper applies the same
    /// sandbox on the node.
    Slurm(SlurmConfig),
}

/// Server configuration of the Slurm launcher.
#[derive(Debug, Clone)]
pub struct SlurmConfig {
    /// The node helper: an absolute path, on every node, of an executable
    /// whose `main` calls [`node_main`] with the run spec path (its last
    /// argument).
    pub helper: PathBuf,
    /// Fixed arguments the batch script passes to the helper before the
    /// spec path (for a server binary that is its own helper: a mode word).
    pub helper_args: Vec<String>,
    /// The partition (`--partition`); the cluster's default when `None`.
    pub partition: Option<String>,
    /// CPUs per task (`--cpus-per-task`).
    pub cpus_per_task: u32,
    /// Memory per node in MiB (`--mem`); the partition's default when `None`.
    pub mem_mib: Option<u64>,
    /// How often the server asks Slurm about a running job.
    pub poll_interval: Duration,
    /// The directory of `sbatch`, `scontrol` and `scancel`.
    pub bin_dir: PathBuf,
}

impl SlurmConfig {
    /// A configuration with `helper` as the node helper, one CPU per task,
    /// the default partition and memory, a 500 ms poll interval, and the
    /// Slurm commands in `/usr/bin`.
    pub fn new(helper: impl Into<PathBuf>) -> Self {
        Self {
            helper: helper.into(),
            helper_args: Vec::new(),
            partition: None,
            cpus_per_task: 1,
            mem_mib: None,
            poll_interval: Duration::from_millis(500),
            bin_dir: PathBuf::from("/usr/bin"),
        }
    }

    /// Checks the configuration at start: the helper is an absolute path to
    /// an executable file; helper path, arguments and partition are plain
    /// (`[A-Za-z0-9_./+-]`, so that the batch script stays a constant
    /// text); the Slurm commands exist.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let plain = |s: &str| {
            !s.is_empty()
                && s.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'+' | b'-')
                })
        };
        let helper = self
            .helper
            .to_str()
            .filter(|h| plain(h) && self.helper.is_absolute());
        let executable = std::fs::metadata(&self.helper).is_ok_and(|m| {
            m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
        });
        if helper.is_none() || !executable {
            return Err(ConfigError::SlurmConfig(
                "the node helper must be an absolute path of plain characters to an executable file",
            ));
        }
        if !self.helper_args.iter().all(|a| plain(a)) {
            return Err(ConfigError::SlurmConfig(
                "helper arguments must be plain: A-Z a-z 0-9 _ . / + -",
            ));
        }
        if self
            .partition
            .as_deref()
            .is_some_and(|p| !plain(p) || p.contains('/'))
        {
            return Err(ConfigError::SlurmConfig(
                "the partition name must be plain: A-Z a-z 0-9 _ . + -",
            ));
        }
        if self.cpus_per_task == 0 || self.mem_mib == Some(0) || self.poll_interval.is_zero() {
            return Err(ConfigError::SlurmConfig(
                "cpus_per_task, mem_mib and poll_interval must be positive",
            ));
        }
        for cmd in ["sbatch", "scontrol", "scancel"] {
            if !self.bin_dir.join(cmd).is_file() {
                return Err(ConfigError::SlurmConfig(
                    "sbatch, scontrol and scancel must be in bin_dir",
                ));
            }
        }
        Ok(())
    }

    fn command(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// The batch script: constant text plus the helper's path and fixed
    /// arguments (plain characters, checked at start), single-quoted.
    fn batch_script(&self) -> String {
        let mut line = format!("exec '{}'", self.helper.display());
        for a in &self.helper_args {
            line.push_str(&format!(" '{a}'"));
        }
        format!(
            "#!/bin/sh\n# hardened-mcp: the fixed batch script of a run; the run's values are in the\n# run spec, a data file, whose path is the only argument.\n{line} \"$1\"\n"
        )
    }
}

/// Limits as persisted in a run spec.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct SpecLimits {
    wall_ms: u64,
    cpu_ms: u64,
    file_size: u64,
    open_files: u64,
    address_space: Option<u64>,
    log_head: usize,
    log_tail: usize,
}

impl From<Limits> for SpecLimits {
    fn from(l: Limits) -> Self {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Self {
            wall_ms: ms(l.wall_time),
            cpu_ms: ms(l.cpu_time),
            file_size: l.file_size,
            open_files: l.open_files,
            address_space: l.address_space,
            log_head: l.log_head,
            log_tail: l.log_tail,
        }
    }
}

impl From<SpecLimits> for Limits {
    fn from(l: SpecLimits) -> Self {
        Self {
            wall_time: Duration::from_millis(l.wall_ms),
            cpu_time: Duration::from_millis(l.cpu_ms),
            file_size: l.file_size,
            open_files: l.open_files,
            address_space: l.address_space,
            log_head: l.log_head,
            log_tail: l.log_tail,
        }
    }
}

/// Everything the node helper needs to run the solver under the same
/// sandbox, written by the server into the run directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSpec {
    version: u32,
    /// The run's owner (its owner record names it), not the caller the
    /// concurrency ceilings count: the helper resolves the run as its owner.
    owner: String,
    handle: String,
    prefix: String,
    solver_id: String,
    solver_path: String,
    grants: Vec<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    limits: SpecLimits,
    write_subdir: Option<String>,
    read_paths: Vec<String>,
    fixed_env: Vec<(String, String)>,
    tmp_size: u64,
    host_network: bool,
    require_pid_namespace: bool,
    require_fs_view: bool,
    require_seccomp: bool,
    require_landlock_abi: u32,
}

fn utf8(p: &Path) -> Result<String, SandboxError> {
    p.to_str().map(str::to_owned).ok_or_else(|| {
        tracing::error!("a path of the run is not UTF-8; Slurm runs need UTF-8 paths");
        SandboxError::Internal
    })
}

impl RunSpec {
    /// The spec of `request` in `run_dir` (its arguments and environment
    /// must be UTF-8: they travel as JSON).
    pub(crate) fn new(
        solver: &Solver,
        request: &RunRequest,
        config: &SandboxConfig,
        run_dir: &RunDir,
    ) -> Result<Self, SandboxError> {
        let text = |s: &std::ffi::OsStr, e: SandboxError| s.to_str().map(str::to_owned).ok_or(e);
        let args = request
            .arguments()
            .iter()
            .map(|a| text(a, SandboxError::InvalidArgument))
            .collect::<Result<Vec<_>, _>>()?;
        let env = request
            .environment()
            .iter()
            .map(|(k, v)| Ok((k.clone(), text(v, SandboxError::InvalidEnvironment)?)))
            .collect::<Result<Vec<_>, SandboxError>>()?;
        let fixed_env = config
            .fixed_env
            .iter()
            .map(|(k, v)| Ok((k.clone(), text(v, SandboxError::Internal)?)))
            .collect::<Result<Vec<_>, SandboxError>>()?;
        let handle = run_dir.handle().as_str().to_owned();
        let prefix = handle
            .split_once('_')
            .map(|(p, _)| p.to_owned())
            .unwrap_or_default();
        Ok(Self {
            version: SPEC_VERSION,
            owner: run_dir.owner().as_str().to_owned(),
            handle,
            prefix,
            solver_id: solver.id().to_owned(),
            solver_path: utf8(solver.path())?,
            grants: solver
                .grants()
                .iter()
                .map(|g| utf8(g))
                .collect::<Result<_, _>>()?,
            args,
            env,
            limits: request.run_limits().into(),
            write_subdir: request.writable_subdir().map(|n| n.as_str().to_owned()),
            read_paths: config
                .read_paths
                .iter()
                .map(|p| utf8(p))
                .collect::<Result<_, _>>()?,
            fixed_env,
            tmp_size: config.tmp_size,
            host_network: config.host_network,
            require_pid_namespace: config.require.tree_kill == TreeKill::PidNamespace,
            require_fs_view: config.require.fs_view,
            require_seccomp: config.require.seccomp,
            require_landlock_abi: config.require.landlock_abi,
        })
    }
}

/// The HMAC line of a spec: the run's key over a fixed label and the bytes.
fn spec_mac(run_dir: &RunDir, bytes: &[u8]) -> String {
    run_dir
        .mac(&[b"slurm-spec", bytes])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Submits the run: writes the spec and the batch script, calls `sbatch`
/// with an argument vector, persists the job id. Blocks for at most the
/// command timeout (submission is normally milliseconds).
pub(crate) fn submit(
    config: &SlurmConfig,
    run_dir: &RunDir,
    spec: &RunSpec,
    cancel: CancellationToken,
    permit: Permit,
) -> Result<SlurmRun, SandboxError> {
    let internal = |what: &str, e: &dyn std::fmt::Display| {
        tracing::error!(error = %e, "slurm submission: {what}");
        SandboxError::SpawnFailed
    };
    let json = serde_json::to_vec(spec).map_err(|e| internal("spec", &e))?;
    let mut file = spec_mac(run_dir, &json).into_bytes();
    file.push(b'\n');
    file.extend_from_slice(&json);
    run_dir
        .write_atomic(&RUN_SPEC_FILE, &file)
        .map_err(|e| internal("spec file", &e))?;
    run_dir
        .write_atomic(&BATCH_SCRIPT_FILE, config.batch_script().as_bytes())
        .map_err(|e| internal("batch script", &e))?;
    // Stale records of an earlier run in this directory would be read as
    // this run's outcome.
    for stale in [
        JOB_STATUS_FILE,
        STDOUT_LOG_FILE,
        STDERR_LOG_FILE,
        SLURM_STDOUT_FILE,
        SLURM_STDERR_FILE,
    ] {
        let _ = run_dir.remove_file(&stale);
    }
    let dir = run_dir.host_path();
    let limits = Limits::from(spec.limits);
    // Slurm counts whole minutes; the helper enforces the exact wall limit.
    let minutes = limits.wall_time.as_secs().div_ceil(60) + 1;
    let job_name: String = run_dir.mac(&[b"slurm-job-name"])[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut args: Vec<std::ffi::OsString> = vec![
        "--parsable".into(),
        format!("--job-name=hmcp-{job_name}").into(),
        "--export=NONE".into(),
        format!("--time={minutes}").into(),
        format!("--cpus-per-task={}", config.cpus_per_task).into(),
        prefixed("--chdir=", &dir),
        prefixed("--output=", &dir.join(SLURM_STDOUT_FILE.as_str())),
        prefixed("--error=", &dir.join(SLURM_STDERR_FILE.as_str())),
    ];
    if let Some(p) = &config.partition {
        args.push(format!("--partition={p}").into());
    }
    if let Some(m) = config.mem_mib {
        args.push(format!("--mem={m}M").into());
    }
    args.push(dir.join(BATCH_SCRIPT_FILE.as_str()).into());
    args.push(dir.join(RUN_SPEC_FILE.as_str()).into());
    let out = run_command(&config.command("sbatch"), &args).map_err(|e| internal("sbatch", &e))?;
    let job_id = parse_job_id(&out).ok_or_else(|| internal("sbatch answer", &"not a job id"))?;
    if let Err(e) = run_dir.write_atomic(&SLURM_JOB_FILE, job_id.to_string().as_bytes()) {
        tracing::warn!(error = %e, "slurm job id not persisted");
    }
    tracing::info!(job = job_id, "slurm job submitted");
    let (_tx, progress) = watch::channel(None);
    let run_dir = run_dir.try_clone().map_err(|e| internal("run dir", &e))?;
    Ok(SlurmRun {
        config: config.clone(),
        job_id,
        run_dir,
        cancel,
        started: Instant::now(),
        limits,
        stdout: SharedLog::new(limits.log_head, limits.log_tail),
        stderr: SharedLog::new(limits.log_head, limits.log_tail),
        progress,
        running: watch::channel(false).0,
        _permit: permit,
    })
}

fn prefixed(flag: &str, path: &Path) -> std::ffi::OsString {
    let mut s = std::ffi::OsString::from(flag);
    s.push(path.as_os_str());
    s
}

/// The run's Slurm job, for a server that restarted while it was queued or
/// running: its id from the run directory, its limits from the verified
/// spec. `None` when the run has no job or its helper already persisted
/// the outcome.
pub(crate) fn reattach(
    config: &SlurmConfig,
    run_dir: &RunDir,
    cancel: CancellationToken,
    permit: impl FnOnce() -> Permit,
) -> Result<Option<SlurmRun>, SandboxError> {
    let Ok(id) = run_dir.read_bounded(&SLURM_JOB_FILE, 32) else {
        return Ok(None);
    };
    let Some(job_id) = parse_job_id(&id) else {
        return Ok(None);
    };
    let finished = run_dir
        .read_bounded(&JOB_STATUS_FILE, 4096)
        .ok()
        .and_then(|b| serde_json::from_slice::<Persisted>(&b).ok())
        .is_some_and(|p| p.state == "finished");
    if finished {
        return Ok(None);
    }
    let file = run_dir
        .read_bounded(&RUN_SPEC_FILE, MAX_SPEC_BYTES)
        .map_err(|e| {
            tracing::error!(error = %e, "slurm re-attach: no run spec");
            SandboxError::Internal
        })?;
    let (mac, json) = SpecFile(file).into_parts().ok_or(SandboxError::Internal)?;
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        spec_mac(run_dir, &json).as_bytes(),
        mac.as_slice(),
    )) {
        tracing::error!("slurm re-attach: the run spec does not verify");
        return Err(SandboxError::Internal);
    }
    let spec: RunSpec = serde_json::from_slice(&json).map_err(|e| {
        tracing::error!(error = %e, "slurm re-attach: unreadable run spec");
        SandboxError::Internal
    })?;
    let limits = Limits::from(spec.limits);
    let (_tx, progress) = watch::channel(None);
    let run_dir = run_dir.try_clone().map_err(|e| {
        tracing::error!(error = %e, "slurm re-attach: run dir");
        SandboxError::Internal
    })?;
    tracing::info!(job = job_id, "re-attached to a slurm job");
    Ok(Some(SlurmRun {
        config: config.clone(),
        job_id,
        run_dir,
        cancel,
        started: Instant::now(),
        limits,
        stdout: SharedLog::new(limits.log_head, limits.log_tail),
        stderr: SharedLog::new(limits.log_head, limits.log_tail),
        progress,
        running: watch::channel(false).0,
        _permit: permit(),
    }))
}

/// `12345` or `12345;cluster` (sbatch --parsable).
fn parse_job_id(out: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(out).ok()?.trim();
    let id = text.split(';').next()?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

/// Runs a Slurm command with an argument vector, no shell, a cleared
/// environment but `PATH`; returns its standard output (bounded). Its
/// standard error goes to the server log only.
fn run_command(cmd: &Path, args: &[std::ffi::OsString]) -> std::io::Result<Vec<u8>> {
    let mut child = std::process::Command::new(cmd)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let readers = [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        child.stderr.take().map(|p| Box::new(p) as _),
    ]
    .map(|pipe| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(p) = pipe {
                let _ = p.take(MAX_COMMAND_OUTPUT as u64).read_to_end(&mut buf);
            }
            buf
        })
    });
    let deadline = std::time::Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "slurm command timed out",
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let [out, err] = readers.map(|r| r.join().unwrap_or_default());
    if !err.is_empty() {
        tracing::info!(stderr = %String::from_utf8_lossy(&err), "slurm command said");
    }
    if status.success() {
        Ok(out)
    } else {
        Err(std::io::Error::other(format!(
            "slurm command exited with {status}"
        )))
    }
}

/// A job's state as `scontrol show job` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobPhase {
    /// Waiting to start: pending, configuring, requeued.
    Pending,
    /// Started: running, completing, suspended, …
    Active,
    /// Ended: completed, failed, cancelled, timed out, node failure, …
    Ended(EndKind),
    /// Unknown to the controller (purged after `MinJobAge`).
    Gone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndKind {
    Completed,
    Cancelled,
    TimedOut,
    Failed,
}

/// Parses `JobState=<STATE>` out of `scontrol show job --oneliner` output.
fn parse_phase(out: &[u8]) -> Option<JobPhase> {
    let text = std::str::from_utf8(out).ok()?;
    let state = text
        .split_whitespace()
        .find_map(|f| f.strip_prefix("JobState="))?;
    Some(match state {
        "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" => {
            JobPhase::Pending
        }
        "RUNNING" | "COMPLETING" | "SUSPENDED" | "RESIZING" | "SIGNALING" | "STAGE_OUT"
        | "STOPPED" => JobPhase::Active,
        "COMPLETED" => JobPhase::Ended(EndKind::Completed),
        "CANCELLED" => JobPhase::Ended(EndKind::Cancelled),
        "TIMEOUT" | "DEADLINE" => JobPhase::Ended(EndKind::TimedOut),
        _ => JobPhase::Ended(EndKind::Failed),
    })
}

/// A run submitted to Slurm. It outlives this value and the server
/// process (a restarted server re-attaches to it, [`reattach`]); it ends
/// when the solver does, when its limits end it, or when it is cancelled
/// through its token.
#[derive(Debug)]
pub(crate) struct SlurmRun {
    config: SlurmConfig,
    job_id: u64,
    run_dir: RunDir,
    cancel: CancellationToken,
    started: Instant,
    limits: Limits,
    stdout: SharedLog,
    stderr: SharedLog,
    progress: watch::Receiver<Option<ProgressReport>>,
    running: watch::Sender<bool>,
    _permit: Permit,
}

impl SlurmRun {
    pub(crate) fn started(&self) -> watch::Receiver<bool> {
        self.running.subscribe()
    }

    pub(crate) fn canceller(&self) -> CancellationToken {
        self.cancel.clone()
    }

    pub(crate) fn progress(&self) -> watch::Receiver<Option<ProgressReport>> {
        self.progress.clone()
    }

    pub(crate) fn stdout_log(&self) -> SharedLog {
        self.stdout.clone()
    }

    pub(crate) fn stderr_log(&self) -> SharedLog {
        self.stderr.clone()
    }

    pub(crate) fn job_id(&self) -> u64 {
        self.job_id
    }

    async fn phase(&self) -> Option<JobPhase> {
        let cmd = self.config.command("scontrol");
        let args: Vec<std::ffi::OsString> = vec![
            "show".into(),
            "job".into(),
            "--oneliner".into(),
            self.job_id.to_string().into(),
        ];
        match tokio::task::spawn_blocking(move || run_command(&cmd, &args)).await {
            Ok(Ok(out)) => parse_phase(&out),
            // `Invalid job id specified`: purged.
            Ok(Err(_)) => Some(JobPhase::Gone),
            Err(_) => None,
        }
    }

    async fn scancel(&self) {
        let cmd = self.config.command("scancel");
        let args: Vec<std::ffi::OsString> = vec![self.job_id.to_string().into()];
        match tokio::task::spawn_blocking(move || run_command(&cmd, &args)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "scancel failed"),
            Err(e) => tracing::warn!(error = %e, "scancel task failed"),
        }
    }

    /// Polls the job until it ends (cancelling it on request), then reads
    /// the outcome the helper persisted.
    pub(crate) async fn wait(self) -> Outcome {
        let mut cancelled = false;
        let mut cancel_deadline = None;
        let end = loop {
            tokio::select! {
                () = self.cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    cancel_deadline = Some(Instant::now() + CANCEL_GRACE);
                    self.scancel().await;
                }
                () = tokio::time::sleep(self.config.poll_interval) => {}
            }
            match self.phase().await {
                Some(JobPhase::Ended(kind)) => break Some(kind),
                Some(JobPhase::Gone) => break None,
                Some(JobPhase::Active) => {
                    self.running.send_replace(true);
                }
                Some(JobPhase::Pending) | None => {}
            }
            if cancel_deadline.is_some_and(|d| Instant::now() >= d) {
                tracing::error!(job = self.job_id, "cancelled slurm job did not end");
                break Some(EndKind::Cancelled);
            }
        };
        self.running.send_replace(true);
        let mut outcome = self.read_outcome();
        match end {
            Some(EndKind::Cancelled) => outcome.cancelled = true,
            Some(EndKind::TimedOut) => outcome.timed_out = true,
            _ => {}
        }
        if cancelled {
            outcome.cancelled = true;
        }
        if outcome.termination == Termination::Unknown && (outcome.cancelled || outcome.timed_out) {
            outcome.termination = Termination::Killed;
        }
        tracing::info!(job = self.job_id, termination = ?outcome.termination,
            timed_out = outcome.timed_out, cancelled = outcome.cancelled, "slurm job ended");
        outcome
    }

    /// The outcome the node helper persisted, or an unknown end when it
    /// wrote none (the job never ran the helper, or was killed first).
    fn read_outcome(&self) -> Outcome {
        let log = |name: &FileName, into: &SharedLog| {
            let max = self.limits.log_head + self.limits.log_tail + 256;
            if let Ok(bytes) = self.run_dir.read_bounded(name, max) {
                into.with(|b| b.push(&bytes));
            }
            into.snapshot()
        };
        let stdout = log(&STDOUT_LOG_FILE, &self.stdout);
        let stderr = log(&STDERR_LOG_FILE, &self.stderr);
        // The helper's copies are read; persisting the outcome is the
        // caller's part, as for a local run (the job table's status sink).
        for name in [STDOUT_LOG_FILE, STDERR_LOG_FILE] {
            let _ = self.run_dir.remove_file(&name);
        }
        let persisted = self
            .run_dir
            .read_bounded(&JOB_STATUS_FILE, 4096)
            .ok()
            .and_then(|b| serde_json::from_slice::<Persisted>(&b).ok())
            .filter(|p| p.state == "finished");
        let wall_time = self.started.elapsed();
        let Some(p) = persisted else {
            return Outcome {
                termination: Termination::Unknown,
                timed_out: false,
                cancelled: false,
                limit: None,
                wall_time,
                cpu_time: None,
                stdout,
                stderr,
                logs_complete: false,
            };
        };
        let termination = match (p.termination.as_deref(), p.code) {
            (Some("exited"), Some(c)) => Termination::Exited(c),
            (Some("signaled"), Some(s)) => Termination::Signaled(s),
            (Some("killed"), _) => Termination::Killed,
            _ => Termination::Unknown,
        };
        let limit = match p.limit.as_deref() {
            Some("cpu_time") => Some(LimitHit::CpuTime),
            Some("file_size") => Some(LimitHit::FileSize),
            Some("disk_full") => Some(LimitHit::DiskFull),
            _ => None,
        };
        let with_total = |mut log: CapturedLog, total: Option<u64>| {
            if let Some(t) = total {
                log.truncated = t > log.total_bytes;
                log.total_bytes = t;
            }
            log
        };
        Outcome {
            termination,
            timed_out: p.timed_out,
            cancelled: p.cancelled,
            limit,
            wall_time: p.wall_ms.map_or(wall_time, Duration::from_millis),
            cpu_time: p.cpu_ms.map(Duration::from_millis),
            stdout: with_total(stdout, p.stdout_bytes),
            stderr: with_total(stderr, p.stderr_bytes),
            logs_complete: true,
        }
    }
}

/// The job status document as the sandbox persists it.
#[derive(Debug, Deserialize)]
struct Persisted {
    state: String,
    #[serde(default)]
    termination: Option<String>,
    #[serde(default)]
    code: Option<i32>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    cancelled: bool,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    wall_ms: Option<u64>,
    #[serde(default)]
    cpu_ms: Option<u64>,
    #[serde(default)]
    stdout_bytes: Option<u64>,
    #[serde(default)]
    stderr_bytes: Option<u64>,
}

// ---- the node helper -------------------------------------------------------

/// The node helper's whole program: `spec` is the run spec's path (the
/// batch script's argument). Verifies the spec, runs the solver through
/// the local sandbox, persists the outcome and logs in the run directory.
/// Exit status: 0 when the solver succeeded, 1 when it did not, 2 when the
/// run could not be started (the reason goes to standard error, which Slurm
/// writes to the run directory's `slurm-stderr.log`, a server-side file).
pub fn node_main(spec: Option<std::ffi::OsString>) -> ExitCode {
    let Some(spec) = spec.map(PathBuf::from) else {
        eprintln!("hardened-mcp node helper: usage: <helper> <run spec path>");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hardened-mcp node helper: no async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(node_run(&spec)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("hardened-mcp node helper: {e}");
            ExitCode::from(2)
        }
    }
}

async fn node_run(spec_path: &Path) -> Result<bool, String> {
    let dir = spec_path.parent().ok_or("the spec path has no directory")?;
    let root_path = dir.parent().ok_or("the run directory has no parent")?;
    let handle = dir
        .file_name()
        .and_then(|h| h.to_str())
        .ok_or("the run directory's name is not a handle")?;
    let file = read_spec_file(spec_path)?;
    let (mac, json) = file
        .split_first_line()
        .ok_or("the run spec has no authentication line")?;
    let spec: RunSpec = serde_json::from_slice(json).map_err(|e| format!("run spec: {e}"))?;
    if spec.version != SPEC_VERSION || spec.handle != handle {
        return Err("the run spec is not for this run directory".into());
    }
    let prefix = HandlePrefix::new(&spec.prefix).map_err(|e| format!("handle prefix: {e}"))?;
    let root = RunRoot::open_with(root_path, prefix).map_err(|e| format!("run root: {e}"))?;
    let owner = CallerId::new(&spec.owner).map_err(|_| "the run spec's owner is invalid")?;
    let run_dir = root
        .resolve(handle, &owner)
        .map_err(|e| format!("run directory: {e}"))?;
    let expected = spec_mac(&run_dir, json);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), mac)) {
        return Err("the run spec's authentication does not verify".into());
    }
    let outcome = match run_spec(&spec, &owner, &run_dir).await {
        Ok(o) => o,
        Err(e) => {
            let doc = serde_json::json!({"state": "finished", "termination": "unknown",
                "error": "the solver could not be started"});
            if let Ok(bytes) = serde_json::to_vec(&doc) {
                let _ = run_dir.write_status(&bytes);
            }
            return Err(e);
        }
    };
    if let Err(e) = run_dir.write_logs(&outcome) {
        eprintln!("hardened-mcp node helper: logs not persisted: {e}");
    }
    let status = serde_json::to_vec(&finished_json(&outcome)).map_err(|e| e.to_string())?;
    run_dir
        .write_status(&status)
        .map_err(|e| format!("status not persisted: {e}"))?;
    Ok(outcome.success())
}

async fn run_spec(spec: &RunSpec, caller: &CallerId, run_dir: &RunDir) -> Result<Outcome, String> {
    let mut registry = super::SolverRegistry::builder().solver(&spec.solver_id, &spec.solver_path);
    for g in &spec.grants {
        registry = registry.grant_read(&spec.solver_id, g);
    }
    let registry = registry.build().map_err(|e| format!("solver: {e}"))?;
    let limits = Limits::from(spec.limits);
    let config = SandboxConfig {
        ceilings: limits,
        fixed_env: spec
            .fixed_env
            .iter()
            .map(|(k, v)| (k.clone(), v.into()))
            .collect(),
        env_allowlist: spec.env.iter().map(|(k, _)| k.clone()).collect(),
        read_paths: spec.read_paths.iter().map(PathBuf::from).collect(),
        tmp_size: spec.tmp_size,
        host_network: spec.host_network,
        launcher: Launcher::Local,
        require: Requirements {
            tree_kill: if spec.require_pid_namespace {
                TreeKill::PidNamespace
            } else {
                TreeKill::ProcessGroup
            },
            fs_view: spec.require_fs_view,
            seccomp: spec.require_seccomp,
            landlock_abi: spec.require_landlock_abi,
        },
        per_caller_runs: 1,
        global_runs: Some(1),
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::new(registry, config).map_err(|e| format!("sandbox: {e}"))?;
    eprintln!(
        "hardened-mcp node helper: containment: {}",
        sandbox.containment()
    );
    let mut request = RunRequest::new(&spec.solver_id)
        .args(&spec.args)
        .limits(limits);
    for (k, v) in &spec.env {
        request = request.env(k, v);
    }
    if let Some(sub) = &spec.write_subdir {
        let name = FileName::new(sub).map_err(|e| format!("write subdirectory: {e}"))?;
        request = request.write_only_in(name);
    }
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    let signals = tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        on_signal.cancel();
    });
    let outcome = sandbox
        .run(caller, run_dir, request, &cancel)
        .await
        .map_err(|e| format!("run: {e}"))?;
    signals.abort();
    Ok(outcome)
}

/// The spec file's bytes (bounded).
struct SpecFile(Vec<u8>);

impl SpecFile {
    fn split_first_line(&self) -> Option<(&[u8], &[u8])> {
        let i = self.0.iter().position(|&b| b == b'\n')?;
        Some((&self.0[..i], &self.0[i + 1..]))
    }

    fn into_parts(self) -> Option<(Vec<u8>, Vec<u8>)> {
        let (mac, json) = self.split_first_line()?;
        Some((mac.to_vec(), json.to_vec()))
    }
}

fn read_spec_file(path: &Path) -> Result<SpecFile, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("run spec: {e}"))?;
    let mut buf = Vec::new();
    f.take(MAX_SPEC_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("run spec: {e}"))?;
    if buf.len() > MAX_SPEC_BYTES {
        return Err("the run spec is too large".into());
    }
    Ok(SpecFile(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbatch_answers_parse_to_job_ids_and_nothing_else() {
        assert_eq!(parse_job_id(b"1234\n"), Some(1234));
        assert_eq!(parse_job_id(b"77;cluster\n"), Some(77));
        for bad in [&b""[..], b"\n", b"abc", b"12 34", b"-1", b"1e3"] {
            assert_eq!(parse_job_id(bad), None);
        }
    }

    #[test]
    fn job_states_map_to_phases() {
        let phase =
            |s: &str| parse_phase(format!("JobId=1 JobName=x JobState={s} Reason=None").as_bytes());
        assert_eq!(phase("PENDING"), Some(JobPhase::Pending));
        assert_eq!(phase("RUNNING"), Some(JobPhase::Active));
        assert_eq!(
            phase("COMPLETED"),
            Some(JobPhase::Ended(EndKind::Completed))
        );
        assert_eq!(
            phase("CANCELLED"),
            Some(JobPhase::Ended(EndKind::Cancelled))
        );
        assert_eq!(phase("TIMEOUT"), Some(JobPhase::Ended(EndKind::TimedOut)));
        assert_eq!(phase("NODE_FAIL"), Some(JobPhase::Ended(EndKind::Failed)));
        assert_eq!(parse_phase(b"no state here"), None);
    }

    #[test]
    fn the_batch_script_holds_configuration_only() {
        let mut c = SlurmConfig::new("/opt/srv/bin/server");
        c.helper_args = vec!["node".into()];
        assert_eq!(
            c.batch_script(),
            "#!/bin/sh\n# hardened-mcp: the fixed batch script of a run; the run's values are in the\n# run spec, a data file, whose path is the only argument.\nexec '/opt/srv/bin/server' 'node' \"$1\"\n"
        );
    }
}
