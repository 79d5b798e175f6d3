//! The sandbox's errors: [`SandboxError`] for a run (fixed texts a caller may
//! see) and [`ConfigError`] for a configuration refused at server start.

use crate::concurrency::LimitError;

/// Why a run could not be started, or how it failed. Every text is fixed
/// and server-authored: no path, no OS error string, no solver output. The
/// detail goes to the server log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The tool named a solver id that is not configured.
    #[error("unknown solver")]
    UnknownSolver,
    /// The server-wide ceiling of concurrent runs is reached.
    #[error("the server is running too many solver runs, retry later")]
    GlobalBusy,
    /// This caller's ceiling of concurrent runs is reached.
    #[error("too many solver runs for this caller, retry later")]
    CallerBusy,
    /// A requested limit is above the server's ceiling or otherwise invalid.
    #[error("a requested run limit is outside the server's bounds")]
    LimitOutOfBounds,
    /// An argument contains a NUL byte, is too long, or there are too many.
    #[error("a solver argument is not acceptable")]
    InvalidArgument,
    /// An environment variable is not on the allowlist or is malformed.
    #[error("a solver environment variable is not allowed")]
    InvalidEnvironment,
    /// The run directory descriptor is not a usable directory.
    #[error("the run directory cannot be used")]
    RunDirUnusable,
    /// The solver executable changed since the server checked it at start.
    #[error("the solver executable changed since the server started")]
    SolverChanged,
    /// The solver process could not be started.
    #[error("the solver could not be started")]
    SpawnFailed,
    /// The run exceeded its wall-time limit and was killed.
    #[error("the solver run exceeded its time limit")]
    TimedOut,
    /// The run was cancelled and killed.
    #[error("the solver run was cancelled")]
    Cancelled,
    /// The solver hit its CPU-time limit.
    #[error("the solver run exceeded its CPU-time limit")]
    CpuLimit,
    /// The solver hit its file-size limit.
    #[error("the solver run exceeded its file-size limit")]
    FileSizeLimit,
    /// The file system holding the run directory is full.
    #[error("the run ran out of disk space")]
    DiskFull,
    /// The run's tree exceeded its memory limit (a process was OOM-killed).
    #[error("the solver run exceeded its memory limit")]
    MemoryLimit,
    /// The run's tree reached its process limit and failed.
    #[error("the solver run exceeded its process limit")]
    ProcessLimit,
    /// The run reached its time limit while held to its CPU share.
    #[error("the solver run exceeded its time limit at its CPU share")]
    CpuShareLimit,
    /// The run directory exceeded its byte limit.
    #[error("the solver run exceeded its disk limit")]
    DiskLimit,
    /// The run directory exceeded its file-count limit.
    #[error("the solver run exceeded its file-count limit")]
    FileCountLimit,
    /// The solver exited unsuccessfully or was killed by a signal.
    #[error("the solver failed")]
    SolverFailed,
    /// No detached job with this handle exists for this caller.
    #[error("unknown job")]
    UnknownJob,
    /// The table of detached jobs is full.
    #[error("too many detached jobs are tracked, retry later")]
    TooManyJobs,
    /// A failure inside the sandbox that the caller cannot act on.
    #[error("internal sandbox error")]
    Internal,
}

impl From<LimitError> for SandboxError {
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::GlobalBusy => Self::GlobalBusy,
            LimitError::CallerBusy => Self::CallerBusy,
        }
    }
}

/// A sandbox configuration refused at server start. The texts name the
/// solver id (server configuration, not caller input) and the rule broken;
/// the path and the OS error go to the server log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A solver id does not match `[a-z0-9_-]{1,64}`.
    #[error("solver id {0:?} is invalid: use 1 to 64 characters of a-z 0-9 _ -")]
    InvalidSolverId(String),
    /// The same solver id is configured twice.
    #[error("solver `{0}` is configured more than once")]
    DuplicateSolver(String),
    /// The executable path is not absolute.
    #[error("solver `{0}`: the executable path must be absolute")]
    RelativePath(String),
    /// The executable does not exist or cannot be inspected.
    #[error("solver `{0}`: the executable does not exist or cannot be inspected")]
    Missing(String),
    /// The executable path names a symbolic link.
    #[error(
        "solver `{0}`: the executable path is a symbolic link; configure the file it points to"
    )]
    Symlink(String),
    /// The executable is not a regular file.
    #[error("solver `{0}`: the executable is not a regular file")]
    NotRegularFile(String),
    /// The executable has no execute permission.
    #[error("solver `{0}`: the executable is not executable")]
    NotExecutable(String),
    /// The executable, or a directory above it, is writable by group or others.
    #[error("solver `{0}`: the executable or a directory above it is writable by group or others")]
    Writable(String),
    /// The executable is owned by neither root nor the server's user.
    #[error("solver `{0}`: the executable must be owned by root or by the server's user")]
    BadOwner(String),
    /// A read path of the sandbox is not absolute.
    #[error("a readable path of the sandbox must be absolute")]
    RelativeReadPath,
    /// A read path of the sandbox is not plain (`.`, `..`, `//`, a trailing
    /// `/`), is `/`, or is or holds a path the view reserves (`/proc`,
    /// `/dev`, `/tmp`, the run directory, `/sandbox`, `/etc/passwd`,
    /// `/etc/group`), or could not be read.
    #[error(
        "a readable path of the sandbox is unusable: use a plain absolute path that is not /, /proc, /dev, /tmp, /work, /sandbox or /etc as a whole (grant the files of /etc a solver needs)"
    )]
    ReadPathUnusable,
    /// `grant_read` named a solver id that is not configured.
    #[error("a read grant names solver `{0}`, which is not configured")]
    GrantForUnknownSolver(String),
    /// The Slurm launcher's configuration is refused (the text says why).
    #[error("slurm launcher: {0}")]
    SlurmConfig(&'static str),
    /// A containment layer the configuration requires is not available.
    #[error(
        "the host cannot provide {0}, which the sandbox requires; to run solvers without it, opt out explicitly with `SandboxConfig::require = Requirements::none()`, or `Requirements::without_envelope()` for the cgroup limits alone (solver-server: --allow-weak-sandbox)"
    )]
    LayerUnavailable(&'static str),
    /// A configured limit or ceiling is invalid.
    #[error("sandbox limit `{0}` is invalid")]
    InvalidLimit(&'static str),
    /// A fixed environment entry is invalid.
    #[error("a fixed solver environment entry is invalid (empty name, `=` or NUL)")]
    InvalidEnvironment,
    /// The host cannot provide the containment level the configuration demands.
    #[error(
        "the host cannot provide the required containment: {required} was required, {available} is available"
    )]
    ContainmentUnavailable {
        /// What the configuration required.
        required: &'static str,
        /// What the host offers.
        available: &'static str,
    },
    /// The host's Landlock ABI is below the configured minimum.
    #[error("the host's Landlock ABI {available} is below the required ABI {required}")]
    LandlockUnavailable {
        /// The minimum ABI the configuration requires.
        required: u32,
        /// The ABI the kernel offers (0: none).
        available: u32,
    },
}
