//! The Slurm launcher: a run submitted as a batch job of a Slurm cluster
//! instead of forked on this machine, with every rule of a local run kept.
//!
//! ```text
//! server ── sbatch --parsable … <run dir>/slurm-batch.sh <run dir>/slurm-spec-<nonce>
//!                 (argument vector; no shell on the server)
//! node   ── slurm-batch.sh: a fixed, framework-owned script:
//!               exec '<helper>' [<fixed helper args>] "$1"
//!        ── helper (`node_main`): verifies the run spec (HMAC under the run
//!           root's key), resolves the run directory through the run root,
//!           and runs the solver through this same sandbox (view, seccomp,
//!           Landlock, rlimits, PID namespace, exec by descriptor), then
//!           records the outcome (HMAC'd, with the hashes of the bounded
//!           logs) in the run directory
//! server ── polls `scontrol show job` until the job ends; reads the outcome
//!           and trusts it only if its HMAC verifies (a solver cannot forge
//!           it: the key is out of its view)
//! ```
//!
//! No caller-influenced text reaches a file Slurm executes: the batch script
//! holds only the helper's path and fixed arguments (server configuration,
//! checked at start to be plain); the argument values travel in the run
//! spec, a data file. Resources come from the run's validated limits and
//! the server's configuration: `--time` from the wall limit,
//! `--cpus-per-task` from the CPU share (rounded up), `--mem` from the
//! memory limit (plus 64 MiB for the helper), `--partition`; on the node the
//! helper applies the same envelope again, in a cgroup beneath the job's
//! own, so a cluster without Slurm's cgroup plugin is bounded too;
//! `--output`/`--error` go to
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

use super::status::{hex, sealed, unseal};
use super::table::finished_json;
use crate::concurrency::Permit;
use crate::identity::CallerId;
use crate::runs::{FileName, HandlePrefix, RunDir, RunRoot};
use crate::sandbox::{
    CapturedLog, ConfigError, CpuShare, LimitHit, Limits, Outcome, ProgressReport, Requirements,
    RunRequest, Sandbox, SandboxConfig, SandboxError, SharedLog, Solver, Termination, TreeKill,
};

/// The fixed batch script submitted to Slurm (it holds no run data).
pub const BATCH_SCRIPT_FILE: FileName = FileName::fixed("slurm-batch.sh");
/// The run's current Slurm job: its id, its submission nonce and an HMAC of
/// both (the handle → job mapping a restarted server re-attaches by).
pub const SLURM_JOB_FILE: FileName = FileName::fixed("slurm-job");
/// The prefix of every per-submission file in the run directory:
/// `slurm-spec-<nonce>` (the run spec: an HMAC line, then JSON),
/// `slurm-stdout-<nonce>.log` and `slurm-stderr-<nonce>.log` (the helper's
/// own output, written by Slurm), `slurm-outcome-<nonce>` (the helper's
/// authenticated outcome), `slurm-log-stdout-<nonce>` and
/// `slurm-log-stderr-<nonce>` (the solver's bounded logs). The nonce is 128
/// random bits: a solver cannot plant one of these names before the
/// submission, and a record of an earlier submission has the wrong name.
pub const SLURM_FILE_PREFIX: &str = "slurm-";

/// Largest outcome record read by the server.
const MAX_OUTCOME_BYTES: usize = 8192;
/// Largest run spec read by the helper.
const MAX_SPEC_BYTES: usize = 256 * 1024;
/// Largest output of a Slurm command read by the server.
const MAX_COMMAND_OUTPUT: usize = 64 * 1024;
/// How long a Slurm command (`sbatch`, `scontrol`, `scancel`) may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the server waits for a cancelled job to leave the queue.
const CANCEL_GRACE: Duration = Duration::from_secs(60);
/// Version of the run spec format.
const SPEC_VERSION: u32 = 2;

/// The per-submission files of one nonce (see [`SLURM_FILE_PREFIX`]).
#[derive(Debug, Clone)]
struct Files {
    nonce: String,
    spec: FileName,
    stdout: FileName,
    stderr: FileName,
    outcome: FileName,
    log_out: FileName,
    log_err: FileName,
}

impl Files {
    /// A fresh nonce's files.
    fn fresh() -> Result<Self, SandboxError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| {
            tracing::error!(error = %e, "no randomness for a submission nonce");
            SandboxError::Internal
        })?;
        Self::of(&hex(&bytes)).ok_or(SandboxError::Internal)
    }

    /// The files of `nonce` (32 lowercase hex digits), `None` otherwise.
    fn of(nonce: &str) -> Option<Self> {
        if nonce.len() != 32
            || !nonce
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return None;
        }
        let name = |n: String| FileName::new(&n).ok();
        Some(Self {
            nonce: nonce.to_owned(),
            spec: name(format!("slurm-spec-{nonce}"))?,
            stdout: name(format!("slurm-stdout-{nonce}.log"))?,
            stderr: name(format!("slurm-stderr-{nonce}.log"))?,
            outcome: name(format!("slurm-outcome-{nonce}"))?,
            log_out: name(format!("slurm-log-stdout-{nonce}"))?,
            log_err: name(format!("slurm-log-stderr-{nonce}"))?,
        })
    }

    fn all(&self) -> [&FileName; 6] {
        [
            &self.spec,
            &self.stdout,
            &self.stderr,
            &self.outcome,
            &self.log_out,
            &self.log_err,
        ]
    }
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
    /// How often the server asks Slurm about a running job.
    pub poll_interval: Duration,
    /// The directory of `sbatch`, `scontrol` and `scancel`.
    pub bin_dir: PathBuf,
}

impl SlurmConfig {
    /// A configuration with `helper` as the node helper, the default
    /// partition, a 500 ms poll interval, and the Slurm commands in
    /// `/usr/bin`. A job's CPUs and memory come from the run's
    /// [`Limits`] (see the module docs).
    pub fn new(helper: impl Into<PathBuf>) -> Self {
        Self {
            helper: helper.into(),
            helper_args: Vec::new(),
            partition: None,
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
        if self.poll_interval.is_zero() {
            return Err(ConfigError::SlurmConfig("poll_interval must be positive"));
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
    memory: u64,
    processes: u64,
    cpu_millicores: u32,
    disk_bytes: u64,
    disk_files: u64,
    tmp_size: u64,
    shm_size: u64,
}

/// The node helper's own memory beside the run's, in the job's `--mem`.
const HELPER_MEM_MIB: u64 = 64;

/// `--cpus-per-task`: the run's CPU share, rounded up to whole CPUs.
fn job_cpus(l: &Limits) -> u32 {
    l.cpu_share.as_millicores().div_ceil(1000).max(1)
}

/// `--mem` in MiB: the run's memory, rounded up, plus the helper's own.
fn job_mem_mib(l: &Limits) -> u64 {
    l.memory.div_ceil(1 << 20).saturating_add(HELPER_MEM_MIB)
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
            memory: l.memory,
            processes: l.processes,
            cpu_millicores: l.cpu_share.as_millicores(),
            disk_bytes: l.disk_bytes,
            disk_files: l.disk_files,
            tmp_size: l.tmp_size,
            shm_size: l.shm_size,
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
            memory: l.memory,
            processes: l.processes,
            // A sealed spec is this server's: its share is valid.
            cpu_share: CpuShare::millicores(l.cpu_millicores).unwrap_or(CpuShare::MIN),
            disk_bytes: l.disk_bytes,
            disk_files: l.disk_files,
            tmp_size: l.tmp_size,
            shm_size: l.shm_size,
        }
    }
}

/// Everything the node helper needs to run the solver under the same
/// sandbox, written by the server into the run directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSpec {
    version: u32,
    /// The submission's nonce: the helper refuses a spec whose file name
    /// does not carry it (a replayed spec of an earlier submission).
    nonce: String,
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
    host_network: bool,
    require_pid_namespace: bool,
    require_fs_view: bool,
    require_seccomp: bool,
    require_landlock_abi: u32,
    require_memory: bool,
    require_processes: bool,
    require_cpu_share: bool,
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
            .args
            .iter()
            .map(|a| text(a, SandboxError::InvalidArgument))
            .collect::<Result<Vec<_>, _>>()?;
        let env = request
            .env
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
            nonce: String::new(),
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
            limits: request.limits.into(),
            write_subdir: request.write_subdir.as_ref().map(|n| n.as_str().to_owned()),
            read_paths: config
                .read_paths
                .iter()
                .map(|p| utf8(p))
                .collect::<Result<_, _>>()?,
            fixed_env,
            host_network: config.host_network,
            require_pid_namespace: config.require.tree_kill == TreeKill::PidNamespace,
            require_fs_view: config.require.fs_view,
            require_seccomp: config.require.seccomp,
            require_landlock_abi: config.require.landlock_abi,
            require_memory: config.require.memory,
            require_processes: config.require.processes,
            require_cpu_share: config.require.cpu_share,
        })
    }
}

/// Submits the run: writes the spec and the batch script, calls `sbatch`
/// with an argument vector, persists the job id. Blocks for at most the
/// command timeout (submission is normally milliseconds).
pub(crate) fn submit(
    config: &SlurmConfig,
    run_dir: &RunDir,
    mut spec: RunSpec,
    cancel: CancellationToken,
    permit: Permit,
) -> Result<SlurmRun, SandboxError> {
    let internal = |what: &str, e: &dyn std::fmt::Display| {
        tracing::error!(error = %e, "slurm submission: {what}");
        SandboxError::SpawnFailed
    };
    // The files of an earlier submission in this directory go.
    if let Some((_, old)) = read_job_file(run_dir) {
        for f in old.all() {
            let _ = run_dir.remove_file(f);
        }
    }
    let files = Files::fresh()?;
    spec.nonce = files.nonce.clone();
    let json = serde_json::to_vec(&spec).map_err(|e| internal("spec", &e))?;
    run_dir
        .write_atomic(&files.spec, &sealed(run_dir, b"slurm-spec", &json))
        .map_err(|e| internal("spec file", &e))?;
    run_dir
        .write_atomic(&BATCH_SCRIPT_FILE, config.batch_script().as_bytes())
        .map_err(|e| internal("batch script", &e))?;
    let dir = run_dir.host_path();
    let limits = Limits::from(spec.limits);
    // Slurm counts whole minutes; the helper enforces the exact wall limit.
    let minutes = limits.wall_time.as_secs().div_ceil(60) + 1;
    let job_name = hex(&run_dir.mac(&[b"slurm-job-name"])[..4]);
    let mut args: Vec<std::ffi::OsString> = vec![
        "--parsable".into(),
        format!("--job-name=hmcp-{job_name}").into(),
        "--export=NONE".into(),
        format!("--time={minutes}").into(),
        format!("--cpus-per-task={}", job_cpus(&limits)).into(),
        format!("--mem={}M", job_mem_mib(&limits)).into(),
        prefixed("--chdir=", &dir),
        prefixed("--output=", &dir.join(files.stdout.as_str())),
        prefixed("--error=", &dir.join(files.stderr.as_str())),
    ];
    if let Some(p) = &config.partition {
        args.push(format!("--partition={p}").into());
    }
    args.push(dir.join(BATCH_SCRIPT_FILE.as_str()).into());
    args.push(dir.join(files.spec.as_str()).into());
    let out = run_command(&config.command("sbatch"), &args).map_err(|e| internal("sbatch", &e))?;
    if !out.success {
        return Err(internal("sbatch", &"refused the job"));
    }
    let job_id =
        parse_job_id(&out.stdout).ok_or_else(|| internal("sbatch answer", &"not a job id"))?;
    let record = format!("{job_id} {}", files.nonce);
    if let Err(e) = run_dir.write_atomic(
        &SLURM_JOB_FILE,
        &sealed(run_dir, b"slurm-job", record.as_bytes()),
    ) {
        tracing::warn!(error = %e, "slurm job id not persisted");
    }
    tracing::info!(job = job_id, "slurm job submitted");
    SlurmRun::new(config, job_id, files, run_dir, cancel, limits, permit)
}

/// The run's current job and its submission's files, if the job record
/// verifies.
fn read_job_file(run_dir: &RunDir) -> Option<(u64, Files)> {
    let record = run_dir.read_bounded(&SLURM_JOB_FILE, 256).ok()?;
    let body = unseal(run_dir, b"slurm-job", &record)?;
    let text = std::str::from_utf8(body).ok()?;
    let (id, nonce) = text.split_once(' ')?;
    Some((parse_job_id(id.as_bytes())?, Files::of(nonce)?))
}

fn prefixed(flag: &str, path: &Path) -> std::ffi::OsString {
    let mut s = std::ffi::OsString::from(flag);
    s.push(path.as_os_str());
    s
}

/// The run's Slurm job, for a server that restarted while it was queued or
/// running: its id and nonce from the authenticated job record, its limits
/// from the verified spec. `None` when the run has no job or its helper
/// already recorded the outcome.
pub(crate) fn reattach(
    config: &SlurmConfig,
    run_dir: &RunDir,
    cancel: CancellationToken,
    permit: impl FnOnce() -> Permit,
) -> Result<Option<SlurmRun>, SandboxError> {
    let Some((job_id, files)) = read_job_file(run_dir) else {
        return Ok(None);
    };
    // A job whose end is recorded needs no one to follow it. One that ended
    // while no server followed it (its node helper's outcome is there, the
    // job record still says running) is re-attached: its first poll finds
    // it ended and reads that outcome.
    if super::status::read_job_record(run_dir)
        .is_some_and(|r| r.state == super::status::RecordedState::Finished)
    {
        return Ok(None);
    }
    let Some(json) = read_record(run_dir, &files.spec, b"slurm-spec", MAX_SPEC_BYTES) else {
        tracing::error!("slurm re-attach: the run spec is missing or does not verify");
        return Err(SandboxError::Internal);
    };
    let spec: RunSpec = serde_json::from_slice(&json).map_err(|e| {
        tracing::error!(error = %e, "slurm re-attach: unreadable run spec");
        SandboxError::Internal
    })?;
    tracing::info!(job = job_id, "re-attached to a slurm job");
    SlurmRun::new(
        config,
        job_id,
        files,
        run_dir,
        cancel,
        Limits::from(spec.limits),
        permit(),
    )
    .map(Some)
}

/// The verified body of the authenticated record `name`.
fn read_record(run_dir: &RunDir, name: &FileName, label: &[u8], max: usize) -> Option<Vec<u8>> {
    let record = run_dir.read_bounded(name, max + 160).ok()?;
    unseal(run_dir, label, &record).map(<[u8]>::to_vec)
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

/// What a Slurm command answered.
struct CommandOutput {
    success: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs a Slurm command with an argument vector, no shell, a cleared
/// environment but `PATH`; bounded output, bounded time. Its standard error
/// goes to the server log only.
fn run_command(cmd: &Path, args: &[std::ffi::OsString]) -> std::io::Result<CommandOutput> {
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
    let [stdout, stderr] = readers.map(|r| r.join().unwrap_or_default());
    if !stderr.is_empty() {
        tracing::info!(stderr = %String::from_utf8_lossy(&stderr), "slurm command said");
    }
    Ok(CommandOutput {
        success: status.success(),
        stdout,
        stderr,
    })
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

/// A run submitted to Slurm. Dropped before it ended (a tool call whose
/// client went away), it cancels its job, as a local run dies; a run the
/// job table tracks is kept instead ([`SlurmRun::keep_on_drop`]), so that
/// it outlives the server process and a restarted server re-attaches to it
/// ([`reattach`]).
#[derive(Debug)]
pub(crate) struct SlurmRun {
    config: SlurmConfig,
    job_id: u64,
    files: Files,
    run_dir: RunDir,
    cancel: CancellationToken,
    started: Instant,
    limits: Limits,
    stdout: SharedLog,
    stderr: SharedLog,
    progress: watch::Receiver<Option<ProgressReport>>,
    running: watch::Sender<bool>,
    keep_on_drop: bool,
    ended: bool,
    _permit: Permit,
}

impl SlurmRun {
    fn new(
        config: &SlurmConfig,
        job_id: u64,
        files: Files,
        run_dir: &RunDir,
        cancel: CancellationToken,
        limits: Limits,
        permit: Permit,
    ) -> Result<Self, SandboxError> {
        let run_dir = run_dir.try_clone().map_err(|e| {
            tracing::error!(error = %e, "slurm run: run directory");
            SandboxError::Internal
        })?;
        Ok(Self {
            config: config.clone(),
            job_id,
            files,
            run_dir,
            cancel,
            started: Instant::now(),
            limits,
            stdout: SharedLog::new(limits.log_head, limits.log_tail),
            stderr: SharedLog::new(limits.log_head, limits.log_tail),
            progress: watch::channel(None).1,
            running: watch::channel(false).0,
            keep_on_drop: false,
            ended: false,
            _permit: permit,
        })
    }

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

    /// Keeps the job when this value is dropped before it ended (the job
    /// table's runs: they outlive the server process).
    pub(crate) fn keep_on_drop(&mut self) {
        self.keep_on_drop = true;
    }

    /// The job's phase; `None` when Slurm could not be asked (retry).
    async fn phase(&self) -> Option<JobPhase> {
        let cmd = self.config.command("scontrol");
        let args: Vec<std::ffi::OsString> = vec![
            "show".into(),
            "job".into(),
            "--oneliner".into(),
            self.job_id.to_string().into(),
        ];
        match tokio::task::spawn_blocking(move || run_command(&cmd, &args)).await {
            Ok(Ok(out)) if out.success => parse_phase(&out.stdout),
            // Purged after MinJobAge; any other failure is retried.
            Ok(Ok(out)) if String::from_utf8_lossy(&out.stderr).contains("Invalid job id") => {
                Some(JobPhase::Gone)
            }
            Ok(Ok(_)) | Ok(Err(_)) | Err(_) => None,
        }
    }

    async fn scancel(&self) {
        let cmd = self.config.command("scancel");
        let args: Vec<std::ffi::OsString> = vec![self.job_id.to_string().into()];
        match tokio::task::spawn_blocking(move || run_command(&cmd, &args)).await {
            Ok(Ok(out)) if out.success => {}
            Ok(Ok(_)) => tracing::warn!(job = self.job_id, "scancel refused"),
            Ok(Err(e)) => tracing::warn!(error = %e, "scancel failed"),
            Err(e) => tracing::warn!(error = %e, "scancel task failed"),
        }
    }

    /// Polls the job until it ends (cancelling it on request), then reads
    /// the outcome the helper recorded.
    pub(crate) async fn wait(mut self) -> Outcome {
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
        self.ended = true;
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

    /// The outcome the node helper recorded, if its HMAC verifies (a solver
    /// cannot forge it: it cannot read the run root's key), with the
    /// solver's logs if their hashes match the record; otherwise an unknown
    /// end. The helper's log files are removed once read: persisting them
    /// is the caller's part, as for a local run (the job table's sink).
    fn read_outcome(&self) -> Outcome {
        let record = read_record(
            &self.run_dir,
            &self.files.outcome,
            b"slurm-outcome",
            MAX_OUTCOME_BYTES,
        )
        .and_then(|b| serde_json::from_slice::<Persisted>(&b).ok())
        .filter(|p| p.state == "finished" && p.nonce == self.files.nonce);
        let log = |name: &FileName, hash: Option<&str>, into: &SharedLog| {
            let max = self.limits.log_head + self.limits.log_tail + 256;
            let bytes = self.run_dir.read_bounded(name, max).unwrap_or_default();
            let _ = self.run_dir.remove_file(name);
            if hash.is_some_and(|h| h == sha256_hex(&bytes)) {
                into.with(|b| b.push(&bytes));
            } else if !bytes.is_empty() {
                tracing::warn!(
                    job = self.job_id,
                    "a solver log does not match the helper's record; dropped"
                );
            }
            into.snapshot()
        };
        let stdout = log(
            &self.files.log_out,
            record.as_ref().and_then(|p| p.stdout_sha256.as_deref()),
            &self.stdout,
        );
        let stderr = log(
            &self.files.log_err,
            record.as_ref().and_then(|p| p.stderr_sha256.as_deref()),
            &self.stderr,
        );
        let wall_time = self.started.elapsed();
        let Some(p) = record else {
            tracing::warn!(
                job = self.job_id,
                "no verified outcome record from the node helper"
            );
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
        let limit = p.limit.as_deref().and_then(LimitHit::from_token);
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

impl Drop for SlurmRun {
    /// A run dropped before it ended, and not kept, cancels its job.
    fn drop(&mut self) {
        if self.ended || self.keep_on_drop {
            return;
        }
        let cmd = self.config.command("scancel");
        let args: Vec<std::ffi::OsString> = vec![self.job_id.to_string().into()];
        std::thread::spawn(move || {
            if let Err(e) = run_command(&cmd, &args) {
                tracing::warn!(error = %e, "scancel of a dropped run failed");
            }
        });
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex(&sha2::Sha256::digest(bytes))
}

/// The outcome record of the node helper.
#[derive(Debug, Deserialize)]
struct Persisted {
    state: String,
    #[serde(default)]
    nonce: String,
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
    #[serde(default)]
    stdout_sha256: Option<String>,
    #[serde(default)]
    stderr_sha256: Option<String>,
}

// ---- the node helper -------------------------------------------------------

/// The node helper's whole program: `spec` is the run spec's path (the
/// batch script's argument). Verifies the spec, runs the solver through
/// the local sandbox, persists the outcome and logs in the run directory.
/// Exit status: 0 when the solver succeeded, 1 when it did not, 2 when the
/// run could not be started (the reason goes to standard error, which Slurm
/// writes to the run directory's `slurm-stderr.log`, a server-side file).
pub fn node_main(spec: Option<std::ffi::OsString>) -> ExitCode {
    ExitCode::from(node_status(spec))
}

/// [`node_main`]'s exit status as a number.
pub(crate) fn node_status(spec: Option<std::ffi::OsString>) -> u8 {
    let Some(spec) = spec.map(PathBuf::from) else {
        eprintln!("hardened-mcp node helper: usage: <helper> <run spec path>");
        return 2;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hardened-mcp node helper: no async runtime: {e}");
            return 2;
        }
    };
    match runtime.block_on(node_run(&spec)) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("hardened-mcp node helper: {e}");
            2
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
    let file_name = spec_path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the spec's file name is not UTF-8")?;
    let file = read_spec_file(spec_path)?;
    let (_, json) = file
        .split_first_line()
        .ok_or("the run spec has no authentication line")?;
    // Parsed before it is verified only to learn the run's owner and
    // prefix, which the verification itself needs; nothing is used before.
    let spec: RunSpec = serde_json::from_slice(json).map_err(|e| format!("run spec: {e}"))?;
    let files = Files::of(&spec.nonce).ok_or("the run spec has no valid nonce")?;
    if spec.version != SPEC_VERSION || spec.handle != handle || file_name != files.spec.as_str() {
        return Err("the run spec is not this submission's".into());
    }
    let prefix = HandlePrefix::new(&spec.prefix).map_err(|e| format!("handle prefix: {e}"))?;
    // Attached only: a node never creates, repairs or sweeps the shared root.
    let root = RunRoot::attach(root_path, prefix).map_err(|e| format!("run root: {e}"))?;
    let owner = CallerId::new(&spec.owner).map_err(|_| "the run spec's owner is invalid")?;
    let run_dir = root
        .resolve(handle, &owner)
        .map_err(|e| format!("run directory: {e}"))?;
    if unseal(&run_dir, b"slurm-spec", &file.0).is_none() {
        return Err("the run spec's authentication does not verify".into());
    }
    let outcome = match run_spec(&spec, &owner, &run_dir).await {
        Ok(o) => o,
        Err(e) => {
            let doc = serde_json::json!({"state": "finished", "nonce": files.nonce,
                "termination": "unknown", "error": "the solver could not be started"});
            if let Ok(body) = serde_json::to_vec(&doc) {
                let _ = run_dir
                    .write_atomic(&files.outcome, &sealed(&run_dir, b"slurm-outcome", &body));
            }
            return Err(e);
        }
    };
    let mut record = finished_json(&outcome);
    record["nonce"] = serde_json::Value::from(files.nonce.clone());
    for (name, log, key) in [
        (&files.log_out, &outcome.stdout, "stdout_sha256"),
        (&files.log_err, &outcome.stderr, "stderr_sha256"),
    ] {
        // The record carries the hash of exactly the bytes written.
        let bytes = super::status::captured_log_bytes(log);
        match super::status::write_new(&run_dir, name, &bytes) {
            Ok(()) => record[key] = serde_json::Value::from(sha256_hex(&bytes)),
            Err(e) => eprintln!("hardened-mcp node helper: a log was not persisted: {e}"),
        }
    }
    let body = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
    run_dir
        .write_atomic(&files.outcome, &sealed(&run_dir, b"slurm-outcome", &body))
        .map_err(|e| format!("outcome not persisted: {e}"))?;
    Ok(outcome.success())
}

async fn run_spec(spec: &RunSpec, caller: &CallerId, run_dir: &RunDir) -> Result<Outcome, String> {
    let mut registry =
        crate::sandbox::SolverRegistry::builder().solver(&spec.solver_id, &spec.solver_path);
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
        host_network: spec.host_network,
        require: Requirements {
            tree_kill: if spec.require_pid_namespace {
                TreeKill::PidNamespace
            } else {
                TreeKill::ProcessGroup
            },
            fs_view: spec.require_fs_view,
            seccomp: spec.require_seccomp,
            landlock_abi: spec.require_landlock_abi,
            memory: spec.require_memory,
            processes: spec.require_processes,
            cpu_share: spec.require_cpu_share,
        },
        per_caller_runs: 1,
        global_runs: Some(1),
        // One run per helper: nothing to make ahead for a next launch.
        made_ahead: 0,
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

    /// A record a solver writes (it can read the nonce in its run
    /// directory, not the run root's key) does not verify; the server's own
    /// does; one sealed for another purpose does not either.
    #[test]
    fn only_records_sealed_with_the_root_key_verify() {
        let tmp = tempfile::tempdir().unwrap();
        let root = RunRoot::open(tmp.path().join("runs")).unwrap();
        let (_h, run) = root.create(&CallerId::local()).unwrap();
        let files = Files::fresh().unwrap();
        let body = br#"{"state":"finished","nonce":"x","termination":"exited","code":0}"#;
        let forged = [hex(&[0u8; 32]).as_bytes(), b"\n", body].concat();
        run.write_atomic(&files.outcome, &forged).unwrap();
        assert_eq!(
            read_record(&run, &files.outcome, b"slurm-outcome", MAX_OUTCOME_BYTES),
            None
        );
        run.write_atomic(&files.outcome, &sealed(&run, b"slurm-spec", body))
            .unwrap();
        assert_eq!(
            read_record(&run, &files.outcome, b"slurm-outcome", MAX_OUTCOME_BYTES),
            None
        );
        run.write_atomic(&files.outcome, &sealed(&run, b"slurm-outcome", body))
            .unwrap();
        assert_eq!(
            read_record(&run, &files.outcome, b"slurm-outcome", MAX_OUTCOME_BYTES).as_deref(),
            Some(&body[..])
        );
        // Another run's record does not verify here (the handle is bound).
        let (_h2, other) = root.create(&CallerId::local()).unwrap();
        other
            .write_atomic(&files.outcome, &sealed(&run, b"slurm-outcome", body))
            .unwrap();
        assert_eq!(
            read_record(&other, &files.outcome, b"slurm-outcome", MAX_OUTCOME_BYTES),
            None
        );
    }

    #[test]
    fn nonces_name_files_and_nothing_else() {
        let f = Files::fresh().unwrap();
        assert_eq!(f.nonce.len(), 32);
        assert!(f.spec.as_str().starts_with(SLURM_FILE_PREFIX));
        for bad in [
            "",
            "../x",
            "ABCDEF0123456789ABCDEF0123456789",
            &"a".repeat(31),
        ] {
            assert!(Files::of(bad).is_none(), "{bad}");
        }
    }

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
