//! The typed result of a finished run: how it ended, which limit it hit,
//! how long it took, and the (untrusted) log heads and tails.

use std::time::Duration;

use super::error::SandboxError;
use super::logs::CapturedLog;

/// How the solver process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (its own, or a kernel limit such as `SIGXCPU`).
    Signaled(i32),
    /// The sandbox killed the tree before the solver ended on its own.
    Killed,
    /// No exit record; treated as a failure.
    Unknown,
}

/// A resource limit the run ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitHit {
    /// CPU time of a process (`SIGXCPU`, or `SIGKILL` at the hard limit).
    CpuTime,
    /// File size (`SIGXFSZ`).
    FileSize,
    /// The file system of the run directory has no space left.
    DiskFull,
    /// The tree's memory limit: the kernel's OOM killer ended a process of
    /// the run ([`Limits::memory`](super::Limits::memory)).
    Memory,
    /// The tree's process limit refused a fork, and the run failed
    /// ([`Limits::processes`](super::Limits::processes)).
    Processes,
    /// The run reached its wall-time limit while throttled to its CPU
    /// share ([`Limits::cpu_share`](super::Limits::cpu_share)).
    CpuShare,
    /// The run directory held more bytes than allowed; the disk monitor
    /// killed the tree ([`Limits::disk_bytes`](super::Limits::disk_bytes)).
    DiskBytes,
    /// The run directory held more entries (or depth) than the disk monitor
    /// allows; it killed the tree ([`Limits::disk_files`](super::Limits::disk_files)).
    DiskFiles,
}

impl LimitHit {
    /// The limit's stable token, as persisted in a job's status.
    pub const fn token(self) -> &'static str {
        self.facts().0
    }

    /// The limit named by [`LimitHit::token`].
    pub fn from_token(token: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.token() == token)
    }

    /// A short fixed description (`memory limit`).
    pub const fn describe(self) -> &'static str {
        self.facts().1
    }

    /// The fixed error of a run that ended at this limit.
    pub const fn error(self) -> SandboxError {
        self.facts().2
    }

    /// Token, description and error, one row per limit.
    const fn facts(self) -> (&'static str, &'static str, SandboxError) {
        use SandboxError as E;
        match self {
            Self::CpuTime => ("cpu_time", "CPU-time limit", E::CpuLimit),
            Self::FileSize => ("file_size", "file-size limit", E::FileSizeLimit),
            Self::DiskFull => ("disk_full", "disk full", E::DiskFull),
            Self::Memory => ("memory", "memory limit", E::MemoryLimit),
            Self::Processes => ("processes", "process limit", E::ProcessLimit),
            Self::CpuShare => ("cpu_share", "CPU share", E::CpuShareLimit),
            Self::DiskBytes => ("disk_bytes", "disk limit", E::DiskLimit),
            Self::DiskFiles => ("disk_files", "file-count limit", E::FileCountLimit),
        }
    }

    const ALL: [Self; 8] = [
        Self::CpuTime,
        Self::FileSize,
        Self::DiskFull,
        Self::Memory,
        Self::Processes,
        Self::CpuShare,
        Self::DiskBytes,
        Self::DiskFiles,
    ];
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How the solver ended.
    pub termination: Termination,
    /// Killed because it exceeded its wall-time limit.
    pub timed_out: bool,
    /// Killed because the run was cancelled (or its handle dropped).
    pub cancelled: bool,
    /// The resource limit it ran into, if one is known.
    pub limit: Option<LimitHit>,
    /// Wall time from launch to the end of the tree.
    pub wall_time: Duration,
    /// CPU time of the solver and its reaped descendants (with a PID
    /// namespace, the whole run); `None` when the tree was killed first.
    pub cpu_time: Option<Duration>,
    /// Captured standard output (untrusted bytes).
    pub stdout: CapturedLog,
    /// Captured standard error (untrusted bytes).
    pub stderr: CapturedLog,
    /// False when a log reader was abandoned after the log grace (a process
    /// outside the tree held the pipe); totals are then what was read.
    pub logs_complete: bool,
}

impl Outcome {
    /// Whether the solver exited with code 0 within its limits.
    pub fn success(&self) -> bool {
        self.error().is_none()
    }

    /// Why this run did not succeed (`None` on success), first of: CPU share,
    /// timeout, cancellation, any other limit, failure.
    pub fn error(&self) -> Option<SandboxError> {
        match self.limit {
            Some(LimitHit::CpuShare) => Some(SandboxError::CpuShareLimit),
            _ if self.timed_out => Some(SandboxError::TimedOut),
            _ if self.cancelled => Some(SandboxError::Cancelled),
            Some(limit) => Some(limit.error()),
            None if self.termination == Termination::Exited(0) => None,
            None => Some(SandboxError::SolverFailed),
        }
    }

    /// `Ok(self)` on success, else the fixed error of [`Outcome::error`].
    pub fn into_result(self) -> Result<Self, SandboxError> {
        self.error().map_or(Ok(self), Err)
    }
}

/// Classifies a raw wait status.
pub(crate) fn termination_of(wait_status: i32) -> Termination {
    if libc::WIFEXITED(wait_status) {
        Termination::Exited(libc::WEXITSTATUS(wait_status))
    } else if libc::WIFSIGNALED(wait_status) {
        Termination::Signaled(libc::WTERMSIG(wait_status))
    } else {
        Termination::Unknown
    }
}

/// Which limit a termination points to (`SIGKILL` only once the CPU time
/// `cpu` reached the limit, `limit_s` seconds).
pub(crate) fn limit_of(t: Termination, cpu: Option<Duration>, limit_s: u64) -> Option<LimitHit> {
    match t {
        Termination::Signaled(libc::SIGXCPU) => Some(LimitHit::CpuTime),
        Termination::Signaled(libc::SIGXFSZ) => Some(LimitHit::FileSize),
        Termination::Signaled(libc::SIGKILL)
            if cpu.is_some_and(|c| c >= Duration::from_secs(limit_s)) =>
        {
            Some(LimitHit::CpuTime)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_tokens_round_trip_and_errors_are_distinct() {
        let mut errors = std::collections::BTreeSet::new();
        for l in LimitHit::ALL {
            assert_eq!(LimitHit::from_token(l.token()), Some(l));
            assert!(errors.insert(l.error().to_string()), "{l:?}");
        }
        assert_eq!(LimitHit::from_token("nonsense"), None);
        assert_eq!(LimitHit::Memory.describe(), "memory limit");
    }

    #[test]
    fn wait_statuses_classify() {
        assert_eq!(termination_of(0), Termination::Exited(0));
        assert_eq!(termination_of(3 << 8), Termination::Exited(3));
        let signaled = Termination::Signaled;
        assert_eq!(termination_of(libc::SIGXCPU), signaled(libc::SIGXCPU));
        let xfsz = limit_of(signaled(libc::SIGXFSZ), None, 1);
        assert_eq!(xfsz, Some(LimitHit::FileSize));
        assert_eq!(limit_of(signaled(libc::SIGKILL), None, 1), None);
        let at_limit = limit_of(signaled(libc::SIGKILL), Some(Duration::from_secs(2)), 1);
        assert_eq!(at_limit, Some(LimitHit::CpuTime));
    }
}
