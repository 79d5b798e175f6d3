//! The process sandbox: containment of one solver process tree. An
//! allowlist of solver executables exec'd from the descriptor checked at
//! start (their interpreters checked to be in view), an argument vector
//! (never a shell), a cleared environment, a private file-system view
//! (mount namespace, fresh root), a seccomp filter, Landlock, rlimits,
//! no-new-privs and no capabilities, whole-tree kill through a PID
//! namespace, the resource envelope, bounded log capture with progress
//! lines, the outcome, concurrency ceilings. The layers stack; by default a
//! host that lacks one refuses to start ([`Requirements`]).
//!
//! Launching and tracking runs — on this machine or a Slurm cluster, the
//! job table, persisted status, re-attach — is the layer above:
//! [`jobs`](crate::jobs).
//!
//! The **resource envelope** bounds a run as a whole tree, not per process
//! ([`Limits`]): its memory (resident + swap), processes and threads, and
//! CPU share are kernel limits of a cgroup made for the run beneath the
//! server's own (cgroup v2 where a subtree is delegated to the server, the
//! v1 hierarchies otherwise: [`EnvelopeBackend`]); the bytes and entries
//! beneath its run directory are watched by a disk monitor that kills the
//! tree past them (with a small, stated overshoot: see
//! `docs/threat-model.md`); its private `/tmp` and `/dev/shm` are
//! size-capped. The outcome names the limit that ended a run
//! ([`LimitHit`]), and the caller sees a fixed text for each.
//!
//! A run is a solver id, an argument vector, a [`RunDir`](crate::runs::RunDir)
//! and [`Limits`]: [`Sandbox::launch`] and [`Sandbox::run`] take the run
//! directory as a `&RunDir`, which only the run root hands out, so a solver
//! never runs in a directory outside the run root.
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
