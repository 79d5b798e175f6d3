//! Launching and tracking solver runs, the layer above the
//! [`sandbox`](crate::sandbox): where a run executes ([`Launcher`]: this
//! machine's sandbox, or a Slurm cluster whose node helper applies the same
//! sandbox), the handle of a launched run ([`RunningSolver`]), the table of
//! detached jobs ([`Jobs`]: status, logs, cancel, each job bound to its
//! caller), the status and logs a job persists in its run directory
//! ([`StatusSink`], [`JOB_STATUS_FILE`]), and the re-attach of a restarted
//! server to its cluster jobs ([`Launcher::reattach`]).
//!
//! The sandbox knows nothing of this module: it contains one process tree;
//! this module decides where and when, and keeps track.

mod detached;
mod kind;
mod launcher;
mod report;
mod service;
#[cfg(feature = "slurm")]
pub(crate) mod slurm;
mod status;
mod table;
mod tasks;
mod text;
mod tools;

pub use crate::tasks::TaskOffer;
pub(crate) use detached::Detached;
pub use kind::{FromResultFile, PagedFile, Prepared, ResultFile, SolverJob};
pub use launcher::{Launcher, RunningSolver};
pub use report::{
    JobDone, JobList, JobOutcome, JobPhase, JobProgress, JobReport, JobStarted, JobSummary,
    LogPage, LogStream, Note,
};
pub(crate) use tasks::Desks;
pub use tasks::{CANCEL_SETTLE, TASK_POLL_INTERVAL_MS};
pub use text::{ResultLine, TextResult};

pub use service::{JobDesk, JobOptions, JobScopes, JobService, LIFE_CYCLE_TOOLS, PlannedRun};
#[cfg(feature = "slurm")]
#[cfg_attr(docsrs, doc(cfg(feature = "slurm")))]
pub use slurm::{BATCH_SCRIPT_FILE, SLURM_FILE_PREFIX, SLURM_JOB_FILE, SlurmConfig, node_main};
pub use status::{
    JOB_STATUS_FILE, JobRecord, RecordedState, STDERR_LOG_FILE, STDOUT_LOG_FILE, read_job_record,
    write_captured_log,
};
pub use table::{JobId, JobState, JobStatus, Jobs, StatusSink};

/// Forwards every progress change of a run (its
/// [`progress`](RunningSolver::progress) channel, or a
/// [`SandboxedRun`](crate::sandbox::SandboxedRun)'s) to a tool's progress
/// reporter as MCP progress notifications, until the run ends (the sender
/// is dropped).
pub async fn forward_progress(
    mut rx: tokio::sync::watch::Receiver<Option<crate::sandbox::ProgressReport>>,
    to: crate::context::Progress,
) {
    while rx.changed().await.is_ok() {
        let latest = *rx.borrow_and_update();
        if let Some(r) = latest {
            // u64 -> f64 loses precision only above 2^53 units: progress is advisory.
            to.report(r.done as f64, Some(r.total as f64), None).await;
        }
    }
}
