//! The sandbox's errors: [`SandboxError`] for a run (fixed texts a caller may
//! see) and [`ConfigError`] for a configuration refused at server start.

use std::path::PathBuf;

use crate::concurrency::LimitError;

/// Why a run could not be started, or how it failed. Every text is fixed
/// (no path, OS error or solver output); details go to the server log.
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
    #[error("too many solver runs for this caller at once: wait for one to end, or cancel one")]
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

/// Why a read path of the sandbox is refused
/// ([`ConfigError::ReadPathRefused`]); each text says what to grant instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadPathRule {
    /// Not an absolute path.
    #[error("it must be an absolute path")]
    Relative,
    /// A `.` or `..` component, `//`, or a trailing `/`.
    #[error("it must be plain: no `.` or `..` component, no `//`, no trailing `/`")]
    NotPlain,
    /// `/` itself: the solver would see the whole host.
    #[error("`/` would show the solver the whole host; grant the directories it needs")]
    Root,
    /// At or beneath a path the view provides itself.
    #[error("{}", within_text(.0))]
    Within(&'static str),
    /// Above a path the view provides itself (the bind would cover it).
    #[error(
        "it holds `{0}`, which the view provides itself; grant the paths beneath it that the solver needs instead (for /etc: the files it reads, such as /etc/ssl/certs)"
    )]
    Holds(&'static str),
    /// An unreadable symbolic link, or a path with a NUL byte.
    #[error("it cannot be read (an unreadable symbolic link, or a NUL byte in the path)")]
    Unreadable,
}

pub(super) fn within_text(reserved: &str) -> &'static str {
    match reserved {
        "/tmp" => {
            "it lies within /tmp, which the view replaces with the run's own private scratch space (and the host's /tmp is shared by every local user); keep the solver's files outside /tmp, such as in /opt/<solver>"
        }
        "/proc" => "it lies within /proc, which the view replaces with a fresh one of the run",
        "/dev" => "it lies within /dev, which the view replaces with a minimal set of devices",
        "/sandbox" => "it lies within /sandbox, where the view shows the solver itself",
        "/etc/passwd" | "/etc/group" => {
            "the view generates /etc/passwd and /etc/group for the solver's own user"
        }
        // `VIEW_RUN_DIR` (a unit test holds the two together).
        _ => {
            "it lies within /work, where the view shows the run directory; keep the solver's files elsewhere, such as in /opt/<solver>"
        }
    }
}

/// Why the sandbox could not run a solver ([`ConfigError::NotRunnable`]).
/// The paths are server configuration (never caller input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unrunnable {
    /// A script's interpreter (`#!`) or a program's loader (`PT_INTERP`)
    /// lies outside the read paths and the solver's grants.
    #[error(
        "{} needs the {} `{}`, which is outside the solver's view; grant its directory with `SolverRegistryBuilder::grant_read` (or add it to `SandboxConfig::read_paths`), or use one beneath the system trees",
        program.display(), if *loader { "program loader" } else { "interpreter" }, interpreter.display()
    )]
    OutsideView {
        /// The file that names it.
        program: PathBuf,
        /// Where it leads (symbolic links followed).
        interpreter: PathBuf,
        /// An ELF loader rather than a `#!` interpreter.
        loader: bool,
    },
    /// A script names its interpreter through `env` (a `PATH` lookup at run
    /// time, inside the view; pyenv and conda shims do).
    #[error(
        "the script {} names its interpreter through `env` (a PATH lookup at run time); register the interpreter by its real absolute path instead, such as `#!/usr/bin/python3.11` or the interpreter itself as the solver with the script as an argument",
        script.display()
    )]
    EnvInterpreter {
        /// The script.
        script: PathBuf,
    },
    /// An interpreter or loader path is relative.
    #[error(
        "{} names the relative interpreter `{}`; name it by an absolute path",
        program.display(), interpreter.display()
    )]
    RelativeInterpreter {
        /// The file that names it.
        program: PathBuf,
        /// The relative path.
        interpreter: PathBuf,
    },
    /// The interpreter does not exist or is not an executable file.
    #[error(
        "{} names the interpreter `{}`, which does not exist or is not an executable file",
        program.display(), interpreter.display()
    )]
    MissingInterpreter {
        /// The file that names it.
        program: PathBuf,
        /// The interpreter.
        interpreter: PathBuf,
    },
    /// A `#!` line without an interpreter, or longer than the kernel reads.
    #[error(
        "the script {} has no usable `#!` line (no interpreter, or longer than 255 bytes)",
        script.display()
    )]
    BadInterpreterLine {
        /// The script.
        script: PathBuf,
    },
    /// Interpreters run interpreters too deep.
    #[error(
        "the chain of interpreters is too deep at `{}`; run the last interpreter directly",
        interpreter.display()
    )]
    TooDeep {
        /// Where the chain was cut.
        interpreter: PathBuf,
    },
    /// A file of the chain cannot be read, was replaced, or is malformed.
    #[error("`{}` cannot be read or checked (see the server log)", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
    },
}

/// A sandbox configuration refused at server start. The texts name the
/// solver id or path and the rule broken; OS errors go to the server log.
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
    /// A read path ([`SandboxConfig::read_paths`](super::SandboxConfig::read_paths)
    /// or a solver's [`grant_read`](super::SolverRegistryBuilder::grant_read)) is refused.
    #[error("the readable path `{}` of the sandbox is refused: {rule}", path.display())]
    ReadPathRefused {
        /// The configured path.
        path: PathBuf,
        /// The rule it broke.
        rule: ReadPathRule,
    },
    /// What the kernel loads to exec the solver `id` (interpreter, loader)
    /// is outside what it may read, or cannot be checked.
    #[error("solver `{id}` cannot run in its sandbox: {why}")]
    NotRunnable {
        /// The solver id.
        id: String,
        /// What is wrong, with the paths and the fix.
        why: Unrunnable,
    },
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
    /// The sandbox could not allocate what it keeps for its launches.
    #[error("the sandbox could not allocate {0} (see the server log)")]
    Resource(&'static str),
    /// The server's command line and environment, which monitors and inits
    /// hide, were not found in its memory (`/proc/self/stat`, `/proc/self/maps`).
    #[error(
        "the sandbox cannot hide the server's command line and environment from its runs (see the server log)"
    )]
    ServerNotHidden,
    /// The host's Landlock ABI is below the configured minimum.
    #[error("the host's Landlock ABI {available} is below the required ABI {required}")]
    LandlockUnavailable {
        /// The minimum ABI the configuration requires.
        required: u32,
        /// The ABI the kernel offers (0: none).
        available: u32,
    },
}

impl From<SandboxError> for crate::ToolError {
    /// Ceilings become [`ToolError::Busy`](crate::ToolError::Busy), a run's
    /// own end (limits, disk, solver failure) a fixed refusal, and anything
    /// that means the server is misconfigured an internal error (logged).
    fn from(e: SandboxError) -> Self {
        use crate::ToolError as T;
        use crate::concurrency::Ceiling;
        use SandboxError as E;
        match e {
            E::GlobalBusy => T::Busy(Ceiling::ServerRuns),
            E::CallerBusy => T::Busy(Ceiling::CallerRuns),
            E::TimedOut => T::Timeout,
            E::Cancelled => T::Cancelled,
            E::UnknownJob => T::NotFound,
            E::CpuLimit => T::Rejected("the solver run exceeded its CPU-time limit"),
            E::FileSizeLimit => T::Rejected("the solver run exceeded its file-size limit"),
            E::DiskFull => T::Rejected("the run ran out of disk space"),
            E::MemoryLimit => T::Rejected("the solver run exceeded its memory limit"),
            E::ProcessLimit => T::Rejected("the solver run exceeded its process limit"),
            E::CpuShareLimit => {
                T::Rejected("the solver run exceeded its time limit at its CPU share")
            }
            E::DiskLimit => T::Rejected("the solver run exceeded its disk limit"),
            E::FileCountLimit => T::Rejected("the solver run exceeded its file-count limit"),
            E::SolverFailed => T::Rejected("the solver failed"),
            E::TooManyJobs => T::Rejected("too many detached runs are tracked, retry later"),
            other => T::internal(format_args!("sandbox: {other}")),
        }
    }
}
