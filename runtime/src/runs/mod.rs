//! The run root: opaque run handles and confined, race-free file access to
//! each run's directory.
//!
//! A tool never sees a path. [`RunRoot::create`] issues a random
//! [`RunHandle`]; a later call hands the handle text back and
//! [`RunRoot::resolve`] turns it into a [`RunDir`] — or into
//! [`RunError::UnknownRun`], the single answer for a malformed, unknown,
//! deleted, foreign or tampered-with handle. Inside a run, files are named
//! by [`FileName`] (an allowlist) and never reached through a symlink or a
//! hard link.
//!
//! Confinement does not rest on checking a path and then using it (that
//! races: a symlink swapped in between escapes). The root is held as a
//! directory descriptor; every open is one pattern-checked component beneath
//! a descriptor with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)` (or `openat(O_NOFOLLOW)` on
//! kernels without `openat2`), followed by `fstat` checks on what was
//! actually opened. See `docs/threat-model.md` for what this defends
//! against and what it does not.

mod dir;
mod error;
mod file;
mod handle;
mod index;
mod key;
mod name;
mod owner;
mod root;
mod states;
mod sys;

pub use dir::{MAX_MEASURED_ENTRIES, RunDir, RunLease, RunSubdir};
pub use error::{RootProblem, RunError};
pub use file::Tail;
pub use handle::RunHandle;
pub use name::{FileName, HandlePrefix, MAX_FILE_NAME_LEN, MAX_PREFIX_LEN};
pub use root::{
    HasRunRoot, MAX_LISTED_RUNS, Quota, Quotas, Retention, RootOptions, RunRoot, SweepReport,
};

#[cfg(feature = "jobs")]
pub(crate) use root::now_ms;
#[cfg(feature = "sandbox")]
pub(crate) use sys::{Step, Walk, allocated_bytes, walk_tree};

#[cfg(test)]
mod tests;
