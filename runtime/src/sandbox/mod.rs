//! The process sandbox every solver run goes through: an allowlist of solver
//! executables, an argument vector (never a shell), a cleared environment,
//! rlimits, no-new-privs, Landlock, whole-tree kill through a PID namespace,
//! bounded log capture, concurrency ceilings, detached jobs and progress.
//!
//! ```no_run
//! # async fn demo(run_dir: std::fs::File) -> Result<(), Box<dyn std::error::Error>> {
//! use hardened_mcp::identity::CallerId;
//! use hardened_mcp::sandbox::{RunRequest, Sandbox, SandboxConfig, SolverRegistry};
//!
//! let registry = SolverRegistry::builder().solver("heat", "/usr/local/bin/heat1d").build()?;
//! let sandbox = Sandbox::new(registry, SandboxConfig::default())?;
//! println!("containment: {}", sandbox.containment());
//! let request = RunRequest::new("heat").arg("--cells").arg("128");
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let outcome = sandbox.run(&CallerId::local(), &run_dir, request, &cancel).await?;
//! let outcome = outcome.into_result()?;
//! # let _ = outcome; Ok(()) }
//! ```

mod containment;
mod error;
mod jobs;
mod landlock;
mod limits;
mod logs;
mod outcome;
mod progress;
mod registry;
mod run;
mod rundir;
mod spawn;

pub use containment::{Containment, Requirements, TreeKill};
pub use error::{ConfigError, SandboxError};
pub use jobs::{JobId, JobState, JobStatus, Jobs, StatusSink};
pub use landlock::DEFAULT_READ_PATHS;
pub use limits::Limits;
pub use logs::{CapturedLog, LogBuffer, READ_CHUNK, SharedLog, UntrustedBytes};
pub use outcome::{LimitHit, Outcome, Termination};
pub use progress::{
    MAX_PROGRESS_LINE, ProgressReport, forward as forward_progress,
    parse_line as parse_progress_line,
};
pub use registry::{MAX_SOLVER_ID_LEN, Solver, SolverRegistry, SolverRegistryBuilder};
pub use run::{RunRequest, RunningSolver, Sandbox, SandboxConfig};
pub use rundir::{JOB_STATUS_FILE, STDERR_LOG_FILE, STDOUT_LOG_FILE, write_captured_log};
