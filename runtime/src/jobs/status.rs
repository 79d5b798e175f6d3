//! Run-directory records: a detached job's status (`job-status.json`,
//! replaced atomically) and its captured logs (`stdout.log`, `stderr.log`,
//! created new) persisted in its run directory, so other tools can report
//! on the job from the run alone. Runs themselves are launched in a
//! [`RunDir`] by [`Launcher::launch`](super::Launcher::launch).

use std::io;

use serde::{Deserialize, Serialize};

use super::table::StatusSink;
use crate::runs::{FileName, RunDir, RunError};
use crate::sandbox::{CapturedLog, Outcome};

/// Where a detached job's status record is kept in its run directory
/// (authenticated: read it with [`read_job_record`]).
pub const JOB_STATUS_FILE: FileName = FileName::fixed("job-status.json");
/// Where a finished job's captured standard output is kept.
pub const STDOUT_LOG_FILE: FileName = FileName::fixed("stdout.log");
/// Where a finished job's captured standard error is kept.
pub const STDERR_LOG_FILE: FileName = FileName::fixed("stderr.log");

/// Where a server process asks the process that follows a run to cancel
/// it (authenticated under the run root's key, like the status record).
pub(crate) const CANCEL_REQUEST_FILE: FileName = FileName::fixed("cancel-request");
const CANCEL_LABEL: &[u8] = b"cancel-request";

/// Asks whoever follows the run in `dir` to cancel it.
pub(crate) fn request_cancel(dir: &RunDir) -> Result<(), RunError> {
    let body = format!("{{\"requested_ms\":{}}}", now_ms());
    dir.write_atomic(
        &CANCEL_REQUEST_FILE,
        &sealed(dir, CANCEL_LABEL, body.as_bytes()),
    )
}

/// Whether the run in `dir` has a cancel request file at all (one `stat`:
/// the cheap test before [`cancel_requested`] reads and checks it).
pub(crate) fn cancel_request_present(dir: &RunDir) -> bool {
    rustix::fs::statat(
        dir.as_fd(),
        CANCEL_REQUEST_FILE.as_str(),
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .is_ok()
}

/// Whether a server process asked to cancel the run in `dir` (a request
/// that is not authenticated is not one).
pub(crate) fn cancel_requested(dir: &RunDir) -> bool {
    dir.read_bounded(&CANCEL_REQUEST_FILE, 512)
        .ok()
        .is_some_and(|bytes| unseal(dir, CANCEL_LABEL, &bytes).is_some())
}

/// A job's status and logs go to its run directory.
impl StatusSink for RunDir {
    fn write_status(&self, json: &[u8]) -> io::Result<()> {
        write_job_record(self, json).map_err(io_error)
    }

    fn write_logs(&self, outcome: &Outcome) -> io::Result<()> {
        write_captured_log(self, &STDOUT_LOG_FILE, &outcome.stdout).map_err(io_error)?;
        write_captured_log(self, &STDERR_LOG_FILE, &outcome.stderr).map_err(io_error)
    }
}

/// Writes a captured log to a new file `name`: the head, then (if bytes were
/// dropped) a server-authored line saying how many, then the tail. The
/// content stays untrusted solver output; readers must frame it as such.
pub fn write_captured_log(
    dir: &RunDir,
    name: &FileName,
    log: &CapturedLog,
) -> Result<(), RunError> {
    write_new(dir, name, &captured_log_bytes(log))
}

/// The bytes [`write_captured_log`] writes for `log`.
pub(crate) fn captured_log_bytes(log: &CapturedLog) -> Vec<u8> {
    let omitted = log
        .total_bytes
        .saturating_sub(log.head.len() as u64 + log.tail.len() as u64);
    let mut out = log.head.as_untrusted_bytes().to_vec();
    if omitted > 0 {
        out.extend_from_slice(format!("\n[hardened-mcp: {omitted} bytes omitted]\n").as_bytes());
    }
    out.extend_from_slice(log.tail.as_untrusted_bytes());
    out
}

/// Writes `bytes` to a new file `name` and syncs it.
pub(crate) fn write_new(dir: &RunDir, name: &FileName, bytes: &[u8]) -> Result<(), RunError> {
    use std::io::Write as _;
    let mut f = dir.create_new(name)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| {
        tracing::warn!(error = %e, "captured log not written");
        if e.raw_os_error() == Some(libc::ENOSPC) {
            RunError::NoSpace
        } else {
            RunError::Io
        }
    })
}

fn io_error(e: RunError) -> io::Error {
    io::Error::other(e)
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An authenticated record: the hex HMAC (under the run root's key, over
/// `label` and the body) on the first line, the body after it.
pub(crate) fn sealed(run_dir: &RunDir, label: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = hex(&run_dir.mac(&[label, body])).into_bytes();
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// The body of an authenticated record, `None` unless its HMAC verifies.
pub(crate) fn unseal<'a>(run_dir: &RunDir, label: &[u8], record: &'a [u8]) -> Option<&'a [u8]> {
    let i = record.iter().position(|&b| b == b'\n')?;
    let (mac, body) = (&record[..i], &record[i + 1..]);
    let expected = hex(&run_dir.mac(&[label, body]));
    bool::from(subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), mac)).then_some(body)
}

/// The label under which a job's status record is authenticated.
const JOB_RECORD_LABEL: &[u8] = b"job-status";
/// Largest job status record read back.
const MAX_JOB_RECORD_BYTES: usize = 4096;

/// Writes the job status document `json` to [`JOB_STATUS_FILE`], atomically
/// and authenticated under the run root's key (a solver that can write in
/// its run directory cannot forge it: it cannot read the key).
pub(crate) fn write_job_record(run: &RunDir, json: &[u8]) -> Result<(), RunError> {
    run.write_atomic(&JOB_STATUS_FILE, &sealed(run, JOB_RECORD_LABEL, json))
}

/// Where a job's persisted record says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedState {
    /// Planned, waiting for its turn (a step of a sequence).
    Queued,
    /// Launched and not yet ended, when the record was written.
    Running,
    /// Ended; the record holds how.
    Finished,
    /// Never launched: its launch failed (the server log says why).
    NotLaunched,
    /// Never launched: cancelled while queued, or its sequence stopped.
    Abandoned,
    /// Its server stopped while it was queued or running; the run was
    /// stopped with it (a local run dies with its server).
    Interrupted,
}

/// A job's status record as persisted in its run directory
/// ([`JOB_STATUS_FILE`]): server-derived facts only, no solver text.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct JobRecord {
    /// Where the job was when the record was written.
    pub state: RecordedState,
    /// How the solver ended: `exited`, `signaled`, `killed` or `unknown`.
    #[serde(default)]
    pub termination: Option<String>,
    /// The exit code or signal number that goes with `termination`.
    #[serde(default)]
    pub code: Option<i32>,
    /// Whether the run succeeded.
    #[serde(default)]
    pub success: bool,
    /// Killed at its wall-time limit.
    #[serde(default)]
    pub timed_out: bool,
    /// Cancelled.
    #[serde(default)]
    pub cancelled: bool,
    /// The resource limit that ended it, as a [`LimitHit`](crate::sandbox::LimitHit) token.
    #[serde(default)]
    pub limit: Option<String>,
    /// Wall time in all, in milliseconds.
    #[serde(default)]
    pub wall_ms: Option<u64>,
    /// CPU time of the solver tree, in milliseconds.
    #[serde(default)]
    pub cpu_ms: Option<u64>,
    /// When the state was entered, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub since_ms: Option<u64>,
    /// What the state was before [`RecordedState::Interrupted`].
    #[serde(default)]
    pub was: Option<RecordedState>,
}

/// The verified job status record of `run`, if there is one. A record
/// that is missing, too large, unauthenticated (written by anyone but a
/// server of this run root) or malformed is `None` (the last three are
/// logged).
pub fn read_job_record(run: &RunDir) -> Option<JobRecord> {
    let bytes = match run.read_bounded(&JOB_STATUS_FILE, MAX_JOB_RECORD_BYTES) {
        Ok(b) => b,
        Err(RunError::FileNotFound) => return None,
        Err(e) => {
            tracing::warn!(run = %run.handle(), error = %e, "job status record not read");
            return None;
        }
    };
    let Some(body) = unseal(run, JOB_RECORD_LABEL, &bytes) else {
        tracing::warn!(run = %run.handle(), "job status record does not verify; ignored");
        return None;
    };
    serde_json::from_slice(body)
        .inspect_err(
            |e| tracing::warn!(run = %run.handle(), error = %e, "job status record malformed"),
        )
        .ok()
}

pub(crate) use crate::runs::now_ms;
