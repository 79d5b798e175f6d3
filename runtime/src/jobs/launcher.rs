//! Where a run executes: on this machine under the sandbox, or as a batch
//! job of a Slurm cluster whose node helper applies the same sandbox. Tools
//! launch through a [`Launcher`] and get a [`RunningSolver`], the same
//! interface either way.

use std::fmt;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "slurm")]
use super::slurm::{self, SlurmConfig};
use crate::identity::CallerId;
use crate::runs::RunDir;
use crate::sandbox;
#[cfg(feature = "slurm")]
use crate::sandbox::ConfigError;
use crate::sandbox::{
    Outcome, ProgressReport, RunRequest, Sandbox, SandboxError, SandboxedRun, SharedLog,
};

/// Launches solver runs: every run passes the [`Sandbox`]'s checks (its
/// run ceilings, solver allowlist, limits and arguments), then runs on this
/// machine ([`Launcher::local`]) or is submitted to Slurm
/// (`Launcher::slurm`, feature `slurm`). Cheap to clone, shared by all tools.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use hardened_mcp::identity::CallerId;
/// use hardened_mcp::jobs::Launcher;
/// use hardened_mcp::runs::RunRoot;
/// use hardened_mcp::sandbox::{RunRequest, Sandbox, SandboxConfig, SolverRegistry};
///
/// let registry = SolverRegistry::builder().solver("heat", "/usr/local/bin/heat1d").build()?;
/// let launcher = Launcher::local(Sandbox::new(registry, SandboxConfig::default())?);
/// let root = RunRoot::open("/var/lib/solver-server/runs")?;
/// let caller = CallerId::local();
/// let (_handle, run_dir) = root.create(&caller)?;
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let run = launcher.launch(&caller, &run_dir, RunRequest::new("heat"), &cancel)?;
/// let outcome = run.wait().await;
/// # let _ = outcome; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Launcher {
    sandbox: Sandbox,
    #[cfg(feature = "slurm")]
    slurm: Option<SlurmConfig>,
}

impl fmt::Debug for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Launcher");
        d.field("sandbox", &self.sandbox);
        #[cfg(feature = "slurm")]
        d.field("slurm", &self.slurm.is_some());
        d.finish()
    }
}

impl Launcher {
    /// Runs on this machine, under `sandbox`.
    pub fn local(sandbox: Sandbox) -> Self {
        Self {
            sandbox,
            #[cfg(feature = "slurm")]
            slurm: None,
        }
    }

    /// Runs as batch jobs of the Slurm cluster `config` names; the node
    /// helper applies the configuration of `sandbox` on the node. The
    /// configuration is checked here (helper, partition, commands).
    #[cfg(feature = "slurm")]
    #[cfg_attr(docsrs, doc(cfg(feature = "slurm")))]
    pub fn slurm(sandbox: Sandbox, config: SlurmConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            sandbox,
            slurm: Some(config),
        })
    }

    /// The sandbox every run goes through.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The Slurm configuration, when runs go to a cluster.
    #[cfg(feature = "slurm")]
    #[cfg_attr(docsrs, doc(cfg(feature = "slurm")))]
    pub fn slurm_config(&self) -> Option<&SlurmConfig> {
        self.slurm.as_ref()
    }

    /// Launches a run for `caller` in `run_dir` (as
    /// [`Sandbox::launch`], whose checks every run passes first): on this
    /// machine, or submitted to Slurm. `cancel` cancels the run. Must be
    /// called inside a tokio runtime.
    pub fn launch(
        &self,
        caller: &CallerId,
        run_dir: &RunDir,
        request: RunRequest,
        cancel: &CancellationToken,
    ) -> Result<RunningSolver, SandboxError> {
        #[cfg(feature = "slurm")]
        if let Some(config) = &self.slurm {
            return self.submit(config, caller, run_dir, request, cancel);
        }
        self.sandbox
            .launch(caller, run_dir, request, cancel)
            .map(RunningSolver::from)
    }

    /// Submits a run to the Slurm cluster of `config`.
    #[cfg(feature = "slurm")]
    fn submit(
        &self,
        config: &SlurmConfig,
        caller: &CallerId,
        run_dir: &RunDir,
        request: RunRequest,
        cancel: &CancellationToken,
    ) -> Result<RunningSolver, SandboxError> {
        let (permit, solver) = self.sandbox.admit(caller, run_dir, &request)?;
        sandbox::check_run_dir_live(run_dir)?;
        let spec = slurm::RunSpec::new(solver, &request, self.sandbox.config(), run_dir)?;
        sandbox::reserve_usage(run_dir, &request.limits)?;
        let run = slurm::submit(config, run_dir, spec, cancel.child_token(), permit)
            .inspect_err(|_| sandbox::unreserve_usage(run_dir))?;
        Ok(RunningSolver(Backend::Slurm(Box::new(run))))
    }

    /// Launches a run (as [`Launcher::launch`]) and waits for its outcome;
    /// then records what the run directory holds for the caller's byte
    /// quota.
    pub async fn run(
        &self,
        caller: &CallerId,
        run_dir: &RunDir,
        request: RunRequest,
        cancel: &CancellationToken,
    ) -> Result<Outcome, SandboxError> {
        let outcome = self.launch(caller, run_dir, request, cancel)?.wait().await;
        sandbox::record_usage_after_run(run_dir).await;
        Ok(outcome)
    }

    /// Re-attaches a restarted server to the run in `run_dir` when it is a
    /// Slurm job still queued or running (its job id and spec are persisted
    /// in the run directory): a [`RunningSolver`] as [`Launcher::launch`]
    /// gave, counted against `caller`'s ceiling even above it (the job
    /// exists). A job that ended while no server followed it is re-attached
    /// too: its first poll reads the outcome its node helper recorded.
    /// `None` on this machine (a local run dies with its server), when the
    /// run has no job, or when its job record already says it finished.
    pub fn reattach(
        &self,
        caller: &CallerId,
        run_dir: &RunDir,
        cancel: &CancellationToken,
    ) -> Result<Option<RunningSolver>, SandboxError> {
        #[cfg(not(feature = "slurm"))]
        return {
            let _ = (caller, run_dir, cancel);
            Ok(None)
        };
        #[cfg(feature = "slurm")]
        {
            let Some(config) = &self.slurm else {
                return Ok(None);
            };
            let limiter = self.sandbox.limiter();
            let run = slurm::reattach(config, run_dir, cancel.child_token(), || {
                limiter.acquire_over(caller)
            })?;
            Ok(run.map(|r| RunningSolver(Backend::Slurm(Box::new(r)))))
        }
    }
}

/// A launched run, local or submitted to a cluster scheduler: tools and the
/// job table use it the same way. Dropping it before it ended kills the
/// whole tree (the local monitor sees its control pipe hang up; a Slurm job
/// is cancelled), except for the job table's runs, whose Slurm jobs outlive
/// the server process so that a restarted server re-attaches to them
/// ([`Launcher::reattach`]). Dropping releases the concurrency slot.
#[derive(Debug)]
pub struct RunningSolver(Backend);

#[derive(Debug)]
enum Backend {
    Local(SandboxedRun),
    #[cfg(feature = "slurm")]
    Slurm(Box<slurm::SlurmRun>),
}

impl From<SandboxedRun> for RunningSolver {
    fn from(run: SandboxedRun) -> Self {
        Self(Backend::Local(run))
    }
}

impl RunningSolver {
    /// A token that cancels this run only.
    pub fn canceller(&self) -> CancellationToken {
        match &self.0 {
            Backend::Local(r) => r.canceller(),
            #[cfg(feature = "slurm")]
            Backend::Slurm(r) => r.canceller(),
        }
    }

    /// The latest progress report, updated as the solver prints
    /// `PROGRESS <done> <total>` lines (a Slurm job reports none while it
    /// runs: its output reaches the server when it ends).
    pub fn progress(&self) -> watch::Receiver<Option<ProgressReport>> {
        match &self.0 {
            Backend::Local(r) => r.progress(),
            #[cfg(feature = "slurm")]
            Backend::Slurm(r) => r.progress(),
        }
    }

    /// Whether the solver has started: a local run starts at launch; a
    /// Slurm job when the scheduler runs it (until then it is queued).
    pub fn started(&self) -> watch::Receiver<bool> {
        match &self.0 {
            Backend::Local(_) => watch::channel(true).1,
            #[cfg(feature = "slurm")]
            Backend::Slurm(r) => r.started(),
        }
    }

    /// The live standard-output buffer (for tailing a running job; empty
    /// until a Slurm job ends).
    pub fn stdout_log(&self) -> SharedLog {
        match &self.0 {
            Backend::Local(r) => r.stdout_log(),
            #[cfg(feature = "slurm")]
            Backend::Slurm(r) => r.stdout_log(),
        }
    }

    /// The live standard-error buffer.
    pub fn stderr_log(&self) -> SharedLog {
        match &self.0 {
            Backend::Local(r) => r.stderr_log(),
            #[cfg(feature = "slurm")]
            Backend::Slurm(r) => r.stderr_log(),
        }
    }

    /// The local monitor's pid (server-side diagnostics and tests); `None`
    /// for a Slurm job.
    pub fn monitor_pid(&self) -> Option<u32> {
        match &self.0 {
            Backend::Local(r) => r.monitor_pid(),
            #[cfg(feature = "slurm")]
            Backend::Slurm(_) => None,
        }
    }

    /// Lets a Slurm job outlive this value (the job table's runs, which a
    /// restarted server re-attaches to); a local run still dies when
    /// dropped.
    pub(crate) fn keep_job_on_drop(&mut self) {
        #[cfg(feature = "slurm")]
        if let Backend::Slurm(r) = &mut self.0 {
            r.keep_on_drop();
        }
    }

    /// The Slurm job id, for a run submitted to Slurm.
    pub fn slurm_job(&self) -> Option<u64> {
        match &self.0 {
            Backend::Local(_) => None,
            #[cfg(feature = "slurm")]
            Backend::Slurm(r) => Some(r.job_id()),
        }
    }

    /// Waits for the run to end: the solver exits, the wall-time limit
    /// passes, or the run is cancelled; then the tree is dead and the logs
    /// are drained (or abandoned after the grace period).
    pub async fn wait(self) -> Outcome {
        match self.0 {
            Backend::Local(r) => r.wait().await,
            #[cfg(feature = "slurm")]
            Backend::Slurm(r) => r.wait().await,
        }
    }
}
