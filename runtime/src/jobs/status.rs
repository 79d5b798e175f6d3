//! Run-directory records: a detached job's status (`job-status.json`,
//! replaced atomically) and its captured logs (`stdout.log`, `stderr.log`,
//! created new) persisted in its run directory, so other tools can report
//! on the job from the run alone. Runs themselves are launched in a
//! [`RunDir`] by [`Launcher::launch`](super::Launcher::launch).

use std::io;

use super::table::StatusSink;
use crate::runs::{FileName, RunDir, RunError};
use crate::sandbox::{CapturedLog, Outcome};

/// Where a detached job's status document is kept in its run directory.
pub const JOB_STATUS_FILE: FileName = FileName::fixed("job-status.json");
/// Where a finished job's captured standard output is kept.
pub const STDOUT_LOG_FILE: FileName = FileName::fixed("stdout.log");
/// Where a finished job's captured standard error is kept.
pub const STDERR_LOG_FILE: FileName = FileName::fixed("stderr.log");

/// A job's status and logs go to its run directory.
impl StatusSink for RunDir {
    fn write_status(&self, json: &[u8]) -> io::Result<()> {
        self.write_atomic(&JOB_STATUS_FILE, json).map_err(io_error)
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
