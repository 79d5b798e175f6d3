//! The run root: the one application-owned directory every run lives
//! beneath, held as a directory descriptor for its whole lifetime.

use std::fmt;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::dir::RunDir;
use super::error::RootProblem;
use super::handle::RunHandle;
use super::key::RootKey;
use super::sys::{self, is_private_dir, open_dir_beneath, storage_error};
use super::{HandlePrefix, RunError, owner};
use crate::identity::CallerId;

/// Most handles [`RunRoot::list`] returns.
pub const MAX_LISTED_RUNS: usize = 1000;

/// Attempts at drawing an unused handle before giving up (a collision of
/// 128-bit random handles does not happen; this bounds a broken RNG).
const CREATE_ATTEMPTS: usize = 4;

/// What a [`RunRoot`] and every [`RunDir`] opened from it share.
pub(crate) struct RootInner {
    pub(crate) fd: OwnedFd,
    pub(crate) prefix: HandlePrefix,
    /// The effective uid that must own the root, run dirs and files.
    pub(crate) uid: u32,
    /// Authenticates owner records.
    pub(crate) key: RootKey,
    /// The configured path the root was opened at (server configuration;
    /// used only where a path must cross a process boundary, as in a batch
    /// job on a shared file system).
    pub(crate) path: std::path::PathBuf,
}

/// The application-owned directory all runs live beneath.
///
/// The root is opened once, from the server's configuration, and held as a
/// directory file descriptor; afterwards no operation uses a path. Runs are
/// named by random [`RunHandle`]s, and a handle is only ever used as a single,
/// pattern-checked component opened beneath that descriptor without following
/// symlinks (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS`). Every run records its owner; resolving someone
/// else's handle fails exactly like resolving a handle that never existed.
///
/// `RunRoot` is `Send + Sync`; share it by reference or in an `Arc`.
///
/// ```
/// use hardened_mcp::CallerId;
/// use hardened_mcp::runs::{FileName, RunError, RunRoot};
///
/// # let tmp = tempfile::tempdir()?;
/// # let configured_path = tmp.path().join("runs");
/// let root = RunRoot::open(&configured_path)?;
/// let alice = CallerId::new("alice")?;
/// let (handle, run) = root.create(&alice)?;
///
/// const DECK: FileName = FileName::fixed("input.deck");
/// run.write_atomic(&DECK, b"cells 64\n")?;
///
/// // Later, a tool receives the handle text back from the caller.
/// let again = root.resolve(handle.as_str(), &alice)?;
/// assert_eq!(again.read_bounded(&DECK, 1024)?, b"cells 64\n");
///
/// // Another caller, a made-up handle, or a path: all the same answer.
/// let bob = CallerId::new("bob")?;
/// assert_eq!(root.resolve(handle.as_str(), &bob).err(), Some(RunError::UnknownRun));
/// assert_eq!(root.resolve("../../etc", &alice).err(), Some(RunError::UnknownRun));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RunRoot {
    inner: Arc<RootInner>,
}

impl RunRoot {
    /// Opens (creating it with mode 0700 if missing) the run root at the
    /// server-configured `path`, issuing handles with the prefix `run`.
    ///
    /// Refuses a root that is a symlink, not a directory, not owned by the
    /// server's effective user, or accessible to group or others. On first
    /// use it creates the root key (`.key`, 32 random bytes, 0600) that
    /// authenticates owner records; a key file that is not a plain 32-byte
    /// file of ours refuses the root. Leftover tombstones of interrupted
    /// removals are cleaned up.
    ///
    /// `path` is configuration, never a tool argument.
    pub fn open(path: impl AsRef<Path>) -> Result<RunRoot, RunError> {
        Self::open_with(path, HandlePrefix::default())
    }

    /// Like [`RunRoot::open`], with a chosen handle prefix.
    pub fn open_with(path: impl AsRef<Path>, prefix: HandlePrefix) -> Result<RunRoot, RunError> {
        // Normalised: a trailing `/` would make the kernel follow a symlink
        // in the last component despite O_NOFOLLOW.
        let path: std::path::PathBuf = path.as_ref().components().collect();
        let path = path.as_path();
        let uid = rustix::process::geteuid().as_raw();
        let created = match rustix::fs::mkdir(path, Mode::RWXU) {
            Ok(()) => true,
            Err(Errno::EXIST) => false,
            Err(e) => {
                tracing::error!(errno = e.raw_os_error(), "run root: cannot create the root");
                return Err(RunError::InvalidRoot(RootProblem::Unavailable));
            }
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| {
            let problem = match e {
                Errno::LOOP | Errno::NOTDIR => {
                    match rustix::fs::statat(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) if sys::file_type(&st) == FileType::Symlink => RootProblem::Symlink,
                        _ => RootProblem::NotDirectory,
                    }
                }
                _ => RootProblem::Unavailable,
            };
            tracing::error!(errno = e.raw_os_error(), %problem, "run root: cannot open the root");
            RunError::InvalidRoot(problem)
        })?;
        if created {
            // mkdir's mode went through the umask; make it exactly 0700.
            rustix::fs::fchmod(&fd, Mode::RWXU)
                .map_err(|_| RunError::InvalidRoot(RootProblem::Unavailable))?;
        }
        let st =
            rustix::fs::fstat(&fd).map_err(|_| RunError::InvalidRoot(RootProblem::Unavailable))?;
        if sys::file_type(&st) != FileType::Directory {
            return Err(RunError::InvalidRoot(RootProblem::NotDirectory));
        }
        if st.st_uid != uid {
            return Err(RunError::InvalidRoot(RootProblem::NotOwned));
        }
        if !is_private_dir(&st, uid) {
            return Err(RunError::InvalidRoot(RootProblem::Permissions));
        }
        let key = RootKey::load_or_create(fd.as_fd(), uid)?;
        let root = RunRoot {
            inner: Arc::new(RootInner {
                fd,
                prefix,
                uid,
                key,
                path: path.to_path_buf(),
            }),
        };
        root.sweep_tombstones();
        Ok(root)
    }

    /// The prefix of the handles this root issues.
    pub fn prefix(&self) -> &HandlePrefix {
        &self.inner.prefix
    }

    /// The regular expression exactly this root's handles match (for a tool's
    /// input schema).
    pub fn handle_pattern(&self) -> String {
        self.inner.prefix.pattern()
    }

    /// Creates a new run owned by `owner`: a fresh random handle, its run
    /// directory (mode 0700) and its owner record, written atomically and
    /// fsynced. A failure leaves no partial run behind.
    pub fn create(&self, owner: &CallerId) -> Result<(RunHandle, RunDir), RunError> {
        let root = self.inner.fd.as_fd();
        let mut issued = None;
        for _ in 0..CREATE_ATTEMPTS {
            let handle = RunHandle::generate(&self.inner.prefix)?;
            match rustix::fs::mkdirat(root, handle.as_str(), Mode::RWXU) {
                Ok(()) => {
                    issued = Some(handle);
                    break;
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(storage_error("create run directory", e)),
            }
        }
        let Some(handle) = issued else {
            tracing::error!("run root: could not draw an unused run handle");
            return Err(RunError::Io);
        };
        let dir = match open_dir_beneath(root, handle.as_str()) {
            Ok(dir) => dir,
            Err(e) => {
                discard_empty(root, &handle);
                return Err(storage_error("open new run directory", e));
            }
        };
        if let Err(e) = self.initialise(dir.as_fd(), &handle, owner) {
            if let Err(errno) = sys::remove_contents(dir.as_fd()) {
                tracing::error!(
                    errno = errno.raw_os_error(),
                    "run root: partial run left behind"
                );
            }
            discard_empty(root, &handle);
            return Err(e);
        }
        Ok((
            handle.clone(),
            RunDir::new(Arc::clone(&self.inner), dir, handle, owner.clone()),
        ))
    }

    fn initialise(
        &self,
        dir: BorrowedFd<'_>,
        handle: &RunHandle,
        owner: &CallerId,
    ) -> Result<(), RunError> {
        rustix::fs::fchmod(dir, Mode::RWXU).map_err(|e| storage_error("chmod run", e))?;
        owner::write(dir, self.inner.uid, &self.inner.key, handle, owner)?;
        rustix::fs::fsync(&self.inner.fd).map_err(|e| storage_error("fsync root", e))
    }

    /// Resolves a handle received from `owner` to its run directory.
    ///
    /// The one path from handle text to files: the text must match this
    /// root's handle pattern; the run directory is opened beneath the root
    /// descriptor as a single component without following symlinks; it must
    /// be a directory owned by the server's user with mode 0700; its owner
    /// record must name `owner`. Any failure of these is
    /// [`RunError::UnknownRun`], whatever the reason.
    pub fn resolve(&self, handle: &str, owner: &CallerId) -> Result<RunDir, RunError> {
        let Some(handle) = RunHandle::parse(handle, &self.inner.prefix) else {
            return Err(RunError::UnknownRun);
        };
        self.open_run(handle, owner)
    }

    fn open_run(&self, handle: RunHandle, owner: &CallerId) -> Result<RunDir, RunError> {
        let root = self.inner.fd.as_fd();
        let dir = match open_dir_beneath(root, handle.as_str()) {
            Ok(dir) => dir,
            // Missing, a symlink, not a directory, a mount point, unreadable.
            Err(Errno::NOENT | Errno::LOOP | Errno::NOTDIR | Errno::XDEV | Errno::ACCESS) => {
                return Err(RunError::UnknownRun);
            }
            Err(e) => return Err(storage_error("open run directory", e)),
        };
        let st = rustix::fs::fstat(&dir).map_err(|e| storage_error("stat run directory", e))?;
        if !is_private_dir(&st, self.inner.uid) {
            tracing::warn!("run root: a run directory failed its owner or mode check");
            return Err(RunError::UnknownRun);
        }
        if !owner::is_owned_by(dir.as_fd(), self.inner.uid, &self.inner.key, &handle, owner)? {
            return Err(RunError::UnknownRun);
        }
        Ok(RunDir::new(
            Arc::clone(&self.inner),
            dir,
            handle,
            owner.clone(),
        ))
    }

    /// The handles of `owner`'s runs, sorted, at most [`MAX_LISTED_RUNS`].
    pub fn list(&self, owner: &CallerId) -> Result<Vec<RunHandle>, RunError> {
        self.list_bounded(owner, MAX_LISTED_RUNS)
    }

    /// The handles of `owner`'s runs, sorted, at most `max` of them (the
    /// first `max` in sort order). Other callers' runs are never listed.
    pub fn list_bounded(&self, owner: &CallerId, max: usize) -> Result<Vec<RunHandle>, RunError> {
        let mut reader =
            Dir::read_from(&self.inner.fd).map_err(|e| storage_error("read run root", e))?;
        let mut found = Vec::new();
        while let Some(entry) = reader.read() {
            let entry = entry.map_err(|e| storage_error("read run root", e))?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            let Some(handle) = RunHandle::parse(name, &self.inner.prefix) else {
                continue;
            };
            match self.open_run(handle.clone(), owner) {
                Ok(_) => found.push(handle),
                Err(RunError::UnknownRun) => {}
                Err(e) => return Err(e),
            }
        }
        found.sort_unstable();
        found.truncate(max);
        Ok(found)
    }

    /// Removes tombstones (runs whose removal was interrupted) and stale
    /// temporary files.
    fn sweep_tombstones(&self) {
        let root = self.inner.fd.as_fd();
        let Ok(mut reader) = Dir::read_from(root) else {
            return;
        };
        let mut tombs = Vec::new();
        while let Some(Ok(entry)) = reader.read() {
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name.starts_with(TOMBSTONE_START) {
                tombs.push(name.to_owned());
            } else if name.starts_with(TEMP_START) {
                // A key file staged by an opener that crashed.
                let _ = rustix::fs::unlinkat(root, name, AtFlags::empty());
            }
        }
        for name in tombs {
            let removed = open_dir_beneath(root, &name)
                .and_then(|dir| sys::remove_contents(dir.as_fd()))
                .and_then(|()| rustix::fs::unlinkat(root, name.as_str(), AtFlags::REMOVEDIR));
            if let Err(e) = removed {
                tracing::warn!(
                    errno = e.raw_os_error(),
                    "run root: could not clear a tombstone"
                );
            }
        }
    }
}

/// What tombstone names start with (`.tomb-` + random).
pub(crate) const TOMBSTONE_KIND: &str = "tomb";
const TOMBSTONE_START: &str = ".tomb-";
const TEMP_START: &str = ".tmp-";

/// Removes the (empty) directory `handle` created by a failed `create`.
fn discard_empty(root: BorrowedFd<'_>, handle: &RunHandle) {
    if let Err(e) = rustix::fs::unlinkat(root, handle.as_str(), AtFlags::REMOVEDIR) {
        tracing::error!(
            errno = e.raw_os_error(),
            "run root: partial run left behind"
        );
    }
}

impl fmt::Debug for RunRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunRoot")
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

/// Implemented by server types that own a [`RunRoot`]; the generated tool
/// code uses it to resolve run-handle parameters for the calling user.
///
/// ```
/// use hardened_mcp::runs::{HasRunRoot, RunRoot};
///
/// struct HeatServer {
///     runs: RunRoot,
/// }
///
/// impl HasRunRoot for HeatServer {
///     fn run_root(&self) -> &RunRoot {
///         &self.runs
///     }
/// }
/// ```
pub trait HasRunRoot {
    /// The server's run root.
    fn run_root(&self) -> &RunRoot;
}

impl HasRunRoot for RunRoot {
    fn run_root(&self) -> &RunRoot {
        self
    }
}
