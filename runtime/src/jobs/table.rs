//! Detached runs: a tool launches a run and returns a job handle at once;
//! other tools of the same caller read its status, tail its logs, or cancel
//! it. A foreign handle and an unknown handle get the same answer.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::launcher::RunningSolver;
use crate::identity::CallerId;
use crate::sandbox::{
    CapturedLog, LimitHit, Outcome, ProgressReport, SandboxError, SharedLog, Termination,
};

const JOB_PREFIX: &str = "job_";
/// Random bytes in a job id (128 bits).
const JOB_RANDOM_BYTES: usize = 16;

/// An opaque, unguessable job handle: `job_` + 22 URL-safe characters.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JobId(String);

impl JobId {
    fn random() -> Result<Self, SandboxError> {
        let mut bytes = [0u8; JOB_RANDOM_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| {
            tracing::error!(error = %e, "no randomness for a job id");
            SandboxError::Internal
        })?;
        Ok(Self(format!(
            "{JOB_PREFIX}{}",
            URL_SAFE_NO_PAD.encode(bytes)
        )))
    }

    /// Parses a handle given by a caller; anything malformed is
    /// [`SandboxError::UnknownJob`], like a handle that does not exist.
    pub fn parse(s: &str) -> Result<Self, SandboxError> {
        let ok = s.len() == JOB_PREFIX.len() + 22
            && s.strip_prefix(JOB_PREFIX).is_some_and(|r| {
                r.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(SandboxError::UnknownJob)
        }
    }

    /// The handle text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JobId").field(&self.0).finish()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a job's status is persisted (the run directory's status file).
/// Writes are best-effort; a failure is logged, the job goes on.
pub trait StatusSink: Send + Sync + 'static {
    /// Stores the JSON status document of the job, replacing the previous one.
    fn write_status(&self, json: &[u8]) -> std::io::Result<()>;

    /// Stores the captured logs of the finished job (default: nothing).
    fn write_logs(&self, outcome: &Outcome) -> std::io::Result<()> {
        let _ = outcome;
        Ok(())
    }
}

/// The state of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for a cluster scheduler to start it (a local run starts at
    /// once and is never queued).
    Queued {
        /// Time since submission.
        elapsed: Duration,
    },
    /// Still running.
    Running {
        /// Time since launch.
        elapsed: Duration,
        /// The latest progress report, if the solver sent one.
        progress: Option<ProgressReport>,
    },
    /// Ended; the outcome holds the final logs.
    Finished(Box<Outcome>),
}

/// What a status query returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    /// Running or finished.
    pub state: JobState,
    /// Standard output so far (untrusted).
    pub stdout: CapturedLog,
    /// Standard error so far (untrusted).
    pub stderr: CapturedLog,
}

struct Entry {
    owner: CallerId,
    started_at: Instant,
    cancel: CancellationToken,
    stdout: SharedLog,
    stderr: SharedLog,
    progress: watch::Receiver<Option<ProgressReport>>,
    started: watch::Receiver<bool>,
    outcome: Option<Box<Outcome>>,
}

/// The table of detached jobs. Cheap to clone.
#[derive(Clone)]
pub struct Jobs {
    table: Arc<Mutex<HashMap<JobId, Entry>>>,
    max_jobs: usize,
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jobs")
            .field("jobs", &self.lock().len())
            .field("max_jobs", &self.max_jobs)
            .finish()
    }
}

impl Jobs {
    /// A table tracking at most `max_jobs` jobs (running or finished and
    /// not yet forgotten). When full, the oldest finished job is evicted;
    /// with none finished, new jobs are refused.
    pub fn new(max_jobs: usize) -> Self {
        Self {
            table: Arc::new(Mutex::new(HashMap::new())),
            max_jobs,
        }
    }

    /// Detaches `run` (a [`RunningSolver`] of a [`Launcher`](super::Launcher),
    /// or a [`SandboxedRun`](crate::sandbox::SandboxedRun)), owned by
    /// `owner`; returns its handle at once. Its status is written through
    /// `sink` when it starts and when it ends.
    pub fn start(
        &self,
        owner: &CallerId,
        run: impl Into<RunningSolver>,
        sink: Option<Arc<dyn StatusSink>>,
    ) -> Result<JobId, SandboxError> {
        let mut run = run.into();
        let id = JobId::random()?;
        // A tracked cluster job outlives the server (a restart re-attaches).
        run.keep_job_on_drop();
        {
            let mut table = self.lock();
            if table.len() >= self.max_jobs {
                let oldest = table
                    .iter()
                    .filter(|(_, e)| e.outcome.is_some())
                    .min_by_key(|(_, e)| e.started_at)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(k) => {
                        table.remove(&k);
                    }
                    // Nothing runs untracked: cancel the run and let it
                    // end in the background (a local run also dies when
                    // dropped; a cluster job only when cancelled).
                    None => {
                        drop(table);
                        run.canceller().cancel();
                        tokio::spawn(run.wait());
                        return Err(SandboxError::TooManyJobs);
                    }
                }
            }
            table.insert(
                id.clone(),
                Entry {
                    owner: owner.clone(),
                    started_at: Instant::now(),
                    cancel: run.canceller(),
                    stdout: run.stdout_log(),
                    stderr: run.stderr_log(),
                    progress: run.progress(),
                    started: run.started(),
                    outcome: None,
                },
            );
        }
        write_sink(sink.as_deref(), &running_json());
        let table = Arc::downgrade(&self.table);
        let job = id.clone();
        tokio::spawn(async move {
            let outcome = run.wait().await;
            // The sink's writes are file-system work: on the blocking pool.
            if let Some(sink) = sink {
                let persisted = outcome.clone();
                let written = tokio::task::spawn_blocking(move || {
                    if let Err(e) = sink.write_logs(&persisted) {
                        tracing::warn!(error = %e, "job logs not persisted");
                    }
                    write_sink(Some(&*sink), &finished_json(&persisted));
                })
                .await;
                if let Err(e) = written {
                    tracing::error!(error = %e, "job sink task failed");
                }
            }
            if let Some(table) = table.upgrade() {
                let mut table = table.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(e) = table.get_mut(&job) {
                    e.outcome = Some(Box::new(outcome));
                }
            }
        });
        Ok(id)
    }

    /// The status of a job of `caller`.
    pub fn status(&self, caller: &CallerId, id: &JobId) -> Result<JobStatus, SandboxError> {
        let table = self.lock();
        let e = owned(&table, caller, id)?;
        Ok(match &e.outcome {
            Some(o) => JobStatus {
                stdout: o.stdout.clone(),
                stderr: o.stderr.clone(),
                state: JobState::Finished(o.clone()),
            },
            None if !*e.started.borrow() => JobStatus {
                state: JobState::Queued {
                    elapsed: e.started_at.elapsed(),
                },
                stdout: e.stdout.snapshot(),
                stderr: e.stderr.snapshot(),
            },
            None => JobStatus {
                state: JobState::Running {
                    elapsed: e.started_at.elapsed(),
                    progress: *e.progress.borrow(),
                },
                stdout: e.stdout.snapshot(),
                stderr: e.stderr.snapshot(),
            },
        })
    }

    /// Cancels a job of `caller`. Returns whether it was still running (a
    /// job that has ended is left as it is and gives `false`).
    pub fn cancel(&self, caller: &CallerId, id: &JobId) -> Result<bool, SandboxError> {
        let table = self.lock();
        let e = owned(&table, caller, id)?;
        if e.outcome.is_some() {
            return Ok(false);
        }
        e.cancel.cancel();
        Ok(true)
    }

    /// Removes a job of `caller` from the table, cancelling it if it runs.
    pub fn forget(&self, caller: &CallerId, id: &JobId) -> Result<(), SandboxError> {
        let mut table = self.lock();
        owned(&table, caller, id)?.cancel.cancel();
        table.remove(id);
        Ok(())
    }

    /// Whether the job `id` is in the table and has not ended (for the
    /// server's own bookkeeping, such as sparing a live run from expiry;
    /// no caller check).
    pub fn is_live(&self, id: &JobId) -> bool {
        self.lock().get(id).is_some_and(|e| e.outcome.is_none())
    }

    /// Whether the job `id` is in the table (running or finished).
    pub fn is_tracked(&self, id: &JobId) -> bool {
        self.lock().contains_key(id)
    }

    /// Jobs tracked (running or finished).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no job is tracked.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<JobId, Entry>> {
        // Every update is one insert/remove/assignment: a poisoned table is
        // still consistent.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn owned<'a>(
    table: &'a HashMap<JobId, Entry>,
    caller: &CallerId,
    id: &JobId,
) -> Result<&'a Entry, SandboxError> {
    match table.get(id) {
        Some(e) if e.owner == *caller => Ok(e),
        _ => Err(SandboxError::UnknownJob),
    }
}

fn write_sink(sink: Option<&dyn StatusSink>, json: &serde_json::Value) {
    let Some(sink) = sink else { return };
    let bytes = match serde_json::to_vec(json) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, "job status not serialisable");
            return;
        }
    };
    if let Err(e) = sink.write_status(&bytes) {
        tracing::warn!(error = %e, "job status not persisted");
    }
}

fn running_json() -> serde_json::Value {
    serde_json::json!({ "state": "running", "since_ms": super::status::now_ms() })
}

/// The persisted summary of an outcome: server-derived fields only, no log bytes.
pub(crate) fn finished_json(o: &Outcome) -> serde_json::Value {
    let (kind, value) = match o.termination {
        Termination::Exited(c) => ("exited", Some(c)),
        Termination::Signaled(s) => ("signaled", Some(s)),
        Termination::Killed => ("killed", None),
        Termination::Unknown => ("unknown", None),
    };
    serde_json::json!({
        "state": "finished",
        "termination": kind,
        "code": value,
        "success": o.success(),
        "error": o.error().map(|e| e.to_string()),
        "timed_out": o.timed_out,
        "cancelled": o.cancelled,
        "limit": o.limit.map(LimitHit::token),
        "wall_ms": u64::try_from(o.wall_time.as_millis()).unwrap_or(u64::MAX),
        "cpu_ms": o.cpu_time.map(|c| u64::try_from(c.as_millis()).unwrap_or(u64::MAX)),
        "stdout_bytes": o.stdout.total_bytes,
        "stderr_bytes": o.stderr.total_bytes,
        "since_ms": super::status::now_ms(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_random_and_parse_back() {
        let a = JobId::random().unwrap_or_else(|_| JobId(String::new()));
        let b = JobId::random().unwrap_or_else(|_| JobId(String::new()));
        assert_ne!(a, b);
        assert_eq!(JobId::parse(a.as_str()).ok(), Some(a));
        for bad in [
            "",
            "job_",
            "job_../../etc/passwd_xxxxxx",
            "run_AAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(JobId::parse(bad), Err(SandboxError::UnknownJob));
        }
    }
}
