//! The run root's error type: fixed, server-authored texts only.
//!
//! No variant carries data that came from a caller, the file system or the
//! operating system. Detail (an errno, which check failed) goes to the server
//! log through `tracing`; the caller sees only the variant's fixed text.

/// Everything that can go wrong in [`crate::runs`].
///
/// The [`Display`](std::fmt::Display) text of every variant is a fixed
/// string: it never contains a handle, a file name, a path or an operating
/// system error message, so it is safe to return to a caller verbatim.
///
/// ```
/// use hardened_mcp::runs::RunError;
/// assert_eq!(RunError::UnknownRun.to_string(), "unknown run handle");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The one answer for a handle that is malformed, unknown, deleted,
    /// owned by another caller, or whose run directory failed a safety check
    /// (symlink, wrong type, wrong owner, wrong mode). The cases are
    /// deliberately indistinguishable: there is no oracle.
    #[error("unknown run handle")]
    UnknownRun,
    /// A file name that fails the [`FileName`](super::FileName) allowlist.
    #[error("invalid run file name")]
    InvalidFileName,
    /// A handle prefix that fails the [`HandlePrefix`](super::HandlePrefix) rule.
    #[error("invalid run handle prefix")]
    InvalidPrefix,
    /// The named file does not exist in the run directory.
    #[error("run file not found")]
    FileNotFound,
    /// The named file exists but is not a plain file this server may use: a
    /// symlink, a hard-linked file, a directory or special file, or a file
    /// owned by another user.
    #[error("run file refused")]
    FileRefused,
    /// [`RunDir::create_new`](super::RunDir::create_new) found the name taken.
    #[error("run file already exists")]
    FileExists,
    /// A bounded read found more bytes than the caller's limit allows. The
    /// content is refused, never silently cut.
    #[error("run file exceeds the size limit")]
    TooLarge,
    /// The file system is full (or a quota or file-size limit was hit). A
    /// failed write leaves the previous content intact.
    #[error("no space left for run data")]
    NoSpace,
    /// A per-caller quota refused a new run; see
    /// [`Quotas`](super::Quotas).
    #[error("quota exceeded: {0}")]
    QuotaExceeded(super::Quota),
    /// The configured run root cannot be used; see [`RootProblem`].
    #[error("run root refused: {0}")]
    InvalidRoot(RootProblem),
    /// Any other storage failure. The detail is in the server log.
    #[error("run storage error")]
    Io,
}

/// Why [`RunRoot::open`](super::RunRoot::open) refused the configured root.
///
/// These are operator-facing (the root is server configuration), yet their
/// texts are fixed too: no path appears in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum RootProblem {
    /// The root path is a symbolic link.
    #[error("it is a symbolic link")]
    Symlink,
    /// The root path exists but is not a directory.
    #[error("it is not a directory")]
    NotDirectory,
    /// The root is owned by another user.
    #[error("it is not owned by the server's user")]
    NotOwned,
    /// The root grants any access to group or others (mode must be 0700).
    #[error("it is accessible to group or others")]
    Permissions,
    /// The root's key file (which authenticates owner records) is not a
    /// plain file of ours of the right size, or cannot be created.
    #[error("its key file is unusable")]
    KeyUnusable,
    /// The root could not be created or opened.
    #[error("it cannot be created or opened")]
    Unavailable,
}

impl From<RunError> for crate::ToolError {
    /// Run-root failures: an unknown run stays indistinguishable from a
    /// foreign one; storage failures become internal errors (logged).
    fn from(e: RunError) -> Self {
        match e {
            RunError::UnknownRun => crate::ToolError::UnknownRun,
            RunError::FileNotFound => crate::ToolError::NotFound,
            RunError::InvalidFileName => crate::ToolError::Rejected("invalid run file name"),
            RunError::FileRefused => crate::ToolError::Rejected("run file refused"),
            RunError::FileExists => crate::ToolError::Rejected("run file already exists"),
            RunError::TooLarge => crate::ToolError::Rejected("run file exceeds the size limit"),
            RunError::NoSpace => crate::ToolError::Rejected("no space left for run data"),
            RunError::QuotaExceeded(q) => crate::ToolError::QuotaExceeded(q),
            other => crate::ToolError::internal(format_args!("run root: {other}")),
        }
    }
}
