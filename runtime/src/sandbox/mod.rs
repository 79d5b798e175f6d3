//! The process sandbox: containment of one solver process tree. Allowlisted
//! executables exec'd from the descriptor checked at start (interpreters
//! checked to be in view), an argument vector (never a shell), a cleared
//! environment, a private view (mount namespace, fresh root), seccomp,
//! Landlock, rlimits, no-new-privs and no capabilities, tree kill through a
//! PID namespace, the resource envelope, bounded logs with progress lines,
//! concurrency ceilings. By default a host that lacks a layer refuses to
//! start ([`Requirements`]). Jobs, Slurm and re-attach are the layer above:
//! [`jobs`](crate::jobs).
//!
//! The **resource envelope** bounds the whole tree ([`Limits`]): memory
//! (resident + swap), processes and CPU share by a cgroup per run beneath
//! the server's ([`EnvelopeBackend`]); the run directory's bytes and
//! entries by a disk monitor that kills the tree past them (the overshoot:
//! `docs/threat-model.md`); `/tmp` and `/dev/shm` by tmpfs size. The
//! outcome names the limit hit ([`LimitHit`]). A run takes a solver id, an
//! argument vector, a [`RunDir`](crate::runs::RunDir) (which only the run
//! root hands out) and [`Limits`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use hardened_mcp::identity::CallerId;
//! use hardened_mcp::runs::RunRoot;
//! use hardened_mcp::sandbox::{RunRequest, Sandbox, SandboxConfig, SolverRegistry};
//!
//! let registry = SolverRegistry::builder().solver("heat", "/usr/local/bin/heat1d").build()?;
//! let sandbox = Sandbox::new(registry, SandboxConfig::default())?;
//! println!("containment: {}", sandbox.containment());
//! let root = RunRoot::open("/var/lib/solver-server/runs")?;
//! let caller = CallerId::local();
//! let (_handle, run_dir) = root.create(&caller)?;
//! let request = RunRequest::new("heat").arg("--cells").arg("128");
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let outcome = sandbox.run(&caller, &run_dir, request, &cancel).await?;
//! let outcome = outcome.into_result()?;
//! # let _ = outcome; Ok(()) }
//! ```

mod child;
mod containment;
mod disk;
mod error;
mod host;
mod interp;
mod landlock;
mod limits;
mod logs;
mod outcome;
mod progress;
mod registry;
mod run;
mod seccomp;
mod view;

pub use child::{SOLVER_GID, SOLVER_UID};
pub use containment::{Containment, Requirements, TreeKill};
pub use error::{ConfigError, ReadPathRule, SandboxError, Unrunnable};
pub use host::cgroup::{EnvelopeBackend, EnvelopeSupport};
pub use landlock::DEFAULT_READ_PATHS;
pub use limits::{CpuShare, Limits};
pub use logs::{CapturedLog, LogBuffer, READ_CHUNK, SharedLog, UntrustedBytes};
pub use outcome::{LimitHit, Outcome, Termination};
pub use progress::{MAX_PROGRESS_LINE, ProgressReport, parse_line as parse_progress_line};
pub use registry::{MAX_SOLVER_ID_LEN, Solver, SolverRegistry, SolverRegistryBuilder};
#[cfg(feature = "jobs")]
pub(crate) use run::record_usage_after_run;
pub use run::{
    DEFAULT_GLOBAL_RUNS, DEFAULT_PER_CALLER_RUNS, MAX_MADE_AHEAD, RunRequest, Sandbox,
    SandboxConfig, SandboxedRun,
};
#[cfg(feature = "slurm")]
pub(crate) use run::{check_run_dir_live, reserve_usage, unreserve_usage};
pub use view::{VIEW_DEVICES, VIEW_RUN_DIR, VIEW_SOLVER_DIR};
