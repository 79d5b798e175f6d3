//! One resolved run directory and the file operations allowed inside it.

use std::fmt;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{AtFlags, Dir, Mode, OFlags, RenameFlags, Stat};
use rustix::io::Errno;

use super::file::{self, Tail};
use super::root::{RootInner, TOMBSTONE_KIND, off_worker};
use super::sys::{self, open_beneath, storage_error};
use super::{FileName, RunError, RunHandle};
use crate::identity::CallerId;

/// Most entries [`RunDir::record_usage`] measures.
pub const MAX_MEASURED_ENTRIES: usize = 1_000_000;

/// The lease of a run ([`RunDir::lease`]): released when dropped.
#[derive(Debug)]
pub struct RunLease {
    _fd: OwnedFd,
}

/// A resolved run directory, held as a directory file descriptor.
///
/// Obtained only from [`RunRoot::create`](super::RunRoot::create) or
/// [`RunRoot::resolve`](super::RunRoot::resolve), so it always names a run
/// the caller owns. Its methods address files only by [`FileName`] and never
/// follow a symlink. It stays valid (refers to the same directory) even if
/// the directory entry is renamed or replaced after resolution.
///
/// `RunDir` is `Send + Sync`. [`RunDir::as_fd`] lends the descriptor to the
/// sandbox, which makes it the solver's working directory with `fchdir`.
///
/// ```
/// use hardened_mcp::CallerId;
/// use hardened_mcp::runs::{FileName, RunError, RunRoot};
///
/// # let tmp = tempfile::tempdir()?;
/// let root = RunRoot::open(tmp.path().join("runs"))?;
/// let (_handle, run) = root.create(&CallerId::local())?;
///
/// let log = FileName::new("solver.log")?;
/// std::io::Write::write_all(&mut run.create_new(&log)?, b"step 1\nstep 2\nstep 3\n")?;
///
/// let tail = run.tail_lines(&log, 2, 4096)?;
/// assert_eq!(tail.lines, ["step 2", "step 3"]);
/// assert!(tail.truncated);
/// assert_eq!(run.read_bounded(&log, 8).err(), Some(RunError::TooLarge));
/// run.remove()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RunDir {
    root: Arc<RootInner>,
    dir: OwnedFd,
    handle: RunHandle,
    owner: CallerId,
}

impl RunDir {
    pub(crate) fn new(
        root: Arc<RootInner>,
        dir: OwnedFd,
        handle: RunHandle,
        owner: CallerId,
    ) -> Self {
        Self {
            root,
            dir,
            handle,
            owner,
        }
    }

    /// The caller that owns the run (its owner record names it).
    #[cfg(feature = "slurm")]
    pub(crate) fn owner(&self) -> &CallerId {
        &self.owner
    }

    /// The run's handle.
    pub fn handle(&self) -> &RunHandle {
        &self.handle
    }

    /// The run directory's descriptor.
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// The run directory's path: the run root's configured path and the
    /// handle. For a process that cannot be handed the descriptor (a batch
    /// job on another node of a shared file system); never shown to a
    /// caller.
    #[cfg(feature = "sandbox")]
    pub(crate) fn host_path(&self) -> std::path::PathBuf {
        self.root.path.join(self.handle.as_str())
    }

    /// HMAC-SHA256, under the run root's key, of `parts` with this run's
    /// handle first: authenticates a record the server writes into the run
    /// directory (a solver cannot read the key).
    #[cfg(feature = "jobs")]
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
        all.push(self.handle.as_str().as_bytes());
        all.extend_from_slice(parts);
        self.root.key.mac(&all)
    }

    /// A second `RunDir` on a duplicate of the same descriptor.
    pub fn try_clone(&self) -> Result<RunDir, RunError> {
        let dir = self
            .dir
            .try_clone()
            .map_err(|e| sys::io_error("duplicate run descriptor", &e))?;
        Ok(Self::new(
            Arc::clone(&self.root),
            dir,
            self.handle.clone(),
            self.owner.clone(),
        ))
    }

    /// Takes this run's lease: an exclusive `flock` on a fresh open of the
    /// run directory, held until the [`RunLease`] drops (or the process
    /// dies: the kernel releases it). A server holds it while it tracks a
    /// live job of the run, so that any other process sharing the run root
    /// can tell a run tracked somewhere ([`RunDir::is_leased`]) from one
    /// whose server is gone. `None` when another open file holds it.
    pub fn lease(&self) -> Result<Option<RunLease>, RunError> {
        use rustix::fs::{FlockOperation, flock};
        let fd = rustix::fs::openat(
            self.dir.as_fd(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(|e| storage_error("open run directory for its lease", e))?;
        match flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(RunLease { _fd: fd })),
            Err(Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(storage_error("lease run directory", e)),
        }
    }

    /// Whether a process (this one included) holds this run's lease right
    /// now. A snapshot: the holder may release it the moment after.
    pub fn is_leased(&self) -> Result<bool, RunError> {
        Ok(self.lease()?.is_none())
    }

    /// Replaces `name` with `bytes` atomically: the content is written to a
    /// fresh hidden temporary file (mode 0600), fsynced, renamed over `name`,
    /// and the directory is fsynced. On failure — a full disk included
    /// ([`RunError::NoSpace`]) — the previous content of `name` is intact and
    /// no temporary file remains. An existing `name` that is a symlink,
    /// hard-linked, or not a regular file of ours is refused
    /// ([`RunError::FileRefused`]), not replaced.
    pub fn write_atomic(&self, name: &FileName, bytes: &[u8]) -> Result<(), RunError> {
        file::write_atomic_at(self.dir.as_fd(), self.root.uid, name.as_str(), bytes)
    }

    /// Reads all of `name` if it holds at most `max_bytes` bytes. A larger
    /// file is [`RunError::TooLarge`]: content is never silently cut.
    /// Symlinks, hard-linked files and non-regular files are refused.
    pub fn read_bounded(&self, name: &FileName, max_bytes: usize) -> Result<Vec<u8>, RunError> {
        file::read_bounded_at(self.dir.as_fd(), self.root.uid, name.as_str(), max_bytes)
    }

    /// The last `n` lines of `name`, reading at most its last `max_bytes`
    /// bytes; [`Tail::truncated`] says whether anything was left out. The
    /// same file checks as [`RunDir::read_bounded`] apply.
    pub fn tail_lines(
        &self,
        name: &FileName,
        n: usize,
        max_bytes: usize,
    ) -> Result<Tail, RunError> {
        file::tail_at(self.dir.as_fd(), self.root.uid, name.as_str(), n, max_bytes)
    }

    /// Creates `name` for writing, failing if it exists in any form
    /// (`O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC`, mode 0600). Meant for
    /// files a sandboxed process streams into, such as logs.
    pub fn create_new(&self, name: &FileName) -> Result<File, RunError> {
        open_beneath(
            self.dir.as_fd(),
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            Mode::RUSR | Mode::WUSR,
        )
        .map(File::from)
        .map_err(|e| match e {
            Errno::EXIST => RunError::FileExists,
            e => storage_error("create run file", e),
        })
    }

    /// Removes the file `name`. A symlink is removed as a link (its target is
    /// untouched); a directory is refused.
    pub fn remove_file(&self, name: &FileName) -> Result<(), RunError> {
        rustix::fs::unlinkat(self.dir.as_fd(), name.as_str(), AtFlags::empty()).map_err(|e| match e
        {
            Errno::NOENT => RunError::FileNotFound,
            Errno::ISDIR | Errno::PERM => RunError::FileRefused,
            e => storage_error("remove run file", e),
        })
    }

    /// The names of the plain files in the run (regular, singly linked, ours,
    /// with a name [`FileName`] accepts), sorted, at most `max` of them.
    /// Hidden records, subdirectories, links and special files are skipped.
    pub fn files(&self, max: usize) -> Result<Vec<FileName>, RunError> {
        let mut reader =
            Dir::read_from(self.dir.as_fd()).map_err(|e| storage_error("read run", e))?;
        let mut names = Vec::new();
        while let Some(entry) = reader.read() {
            let entry = entry.map_err(|e| storage_error("read run", e))?;
            let Some(name) = entry
                .file_name()
                .to_str()
                .ok()
                .and_then(|n| FileName::new(n).ok())
            else {
                continue;
            };
            match rustix::fs::statat(self.dir.as_fd(), name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if sys::is_plain_file(&st, self.root.uid) => names.push(name),
                Ok(_) | Err(Errno::NOENT) => {}
                Err(e) => return Err(storage_error("stat run file", e)),
            }
        }
        names.sort_unstable();
        names.truncate(max);
        Ok(names)
    }

    /// Deletes the run.
    ///
    /// The run directory is first renamed to a random tombstone name under
    /// the root (so its handle stops resolving at once), then emptied using
    /// only directory descriptors and `unlinkat`: a symlink found inside is
    /// unlinked as a link, never followed. If the handle's entry in the root
    /// is no longer this directory (replaced by a symlink or anything else),
    /// nothing is removed and the answer is [`RunError::UnknownRun`].
    pub fn remove(self) -> Result<(), RunError> {
        let root = self.root.fd.as_fd();
        let ours = rustix::fs::fstat(&self.dir).map_err(|e| storage_error("stat run", e))?;
        if !self.entry_is_ours(self.handle.as_str(), &ours)? {
            tracing::warn!("run root: a run's entry no longer is its directory; not removed");
            return Err(RunError::UnknownRun);
        }
        let tomb = sys::random_hidden_name(TOMBSTONE_KIND)?;
        rename_noreplace(root, self.handle.as_str(), &tomb).map_err(|e| match e {
            Errno::NOENT => RunError::UnknownRun,
            e => storage_error("rename run to tombstone", e),
        })?;
        if !self.entry_is_ours(&tomb, &ours)? {
            // The entry was swapped between the check and the rename: put
            // back whatever we moved and touch nothing else.
            if let Err(e) = rename_noreplace(root, &tomb, self.handle.as_str()) {
                tracing::error!(
                    errno = e.raw_os_error(),
                    "run root: could not restore an entry"
                );
            }
            tracing::warn!("run root: a run's entry was swapped during removal; not removed");
            return Err(RunError::UnknownRun);
        }
        sys::remove_contents(self.dir.as_fd()).map_err(|e| storage_error("empty run", e))?;
        rustix::fs::unlinkat(root, tomb.as_str(), AtFlags::REMOVEDIR)
            .map_err(|e| storage_error("remove tombstone", e))?;
        rustix::fs::fsync(root).map_err(|e| storage_error("fsync root", e))?;
        // The index entry last: a crash before this line leaves an entry
        // without a run, which the next listing drops.
        self.root
            .index
            .remove(&self.root.key, &self.owner, &self.handle);
        Ok(())
    }

    /// [`RunDir::remove`] on tokio's blocking pool (removing a run of many
    /// files takes as long as it takes, off the async workers).
    pub async fn remove_async(self) -> Result<(), RunError> {
        off_worker(move || self.remove()).await
    }

    /// Measures the bytes the run holds (the allocated size of every entry
    /// of its tree, walked by descriptor without following links, at most
    /// [`MAX_MEASURED_ENTRIES`] entries: past them the count stops, a lower
    /// bound) and records it, with whether the run's solver has
    /// `finished`, in the run's index entry: what
    /// [`Quotas::max_bytes`](super::Quotas) and the shorter retention of
    /// finished runs read. Returns the bytes.
    pub fn record_usage(&self, finished: bool) -> Result<u64, RunError> {
        let mut budget = MAX_MEASURED_ENTRIES;
        let bytes = sys::tree_bytes(self.dir.as_fd(), &mut budget)
            .map_err(|e| storage_error("measure run", e))?;
        self.root
            .index
            .record(&self.root.key, &self.owner, &self.handle, bytes, finished)?;
        Ok(bytes)
    }

    /// Records, for the caller's byte quota, what this run may come to hold
    /// while its solver runs: `bytes` (its disk limit), or what was last
    /// recorded for it if that is more. No measurement: two small writes of
    /// the run's index entry. The sandbox calls it at every launch, so a
    /// caller's live runs count at their ceiling; [`RunDir::record_usage`]
    /// after the run replaces it with what the run holds.
    pub fn reserve_usage(&self, bytes: u64) -> Result<(), RunError> {
        let index = &self.root.index;
        let recorded = index
            .state(&self.root.key, &self.owner, &self.handle)?
            .map_or(0, |s| s.bytes);
        index.record(
            &self.root.key,
            &self.owner,
            &self.handle,
            recorded.max(bytes),
            false,
        )
    }

    /// [`RunDir::record_usage`] on tokio's blocking pool.
    pub async fn record_usage_async(&self, finished: bool) -> Result<u64, RunError> {
        let run = self.try_clone()?;
        off_worker(move || run.record_usage(finished)).await
    }

    /// [`RunDir::read_bounded`] on tokio's blocking pool (for large reads).
    pub async fn read_bounded_async(
        &self,
        name: &FileName,
        max_bytes: usize,
    ) -> Result<Vec<u8>, RunError> {
        let (run, name) = (self.try_clone()?, name.clone());
        off_worker(move || run.read_bounded(&name, max_bytes)).await
    }

    /// True if the root's entry `name` is (not a link to) this directory.
    fn entry_is_ours(&self, name: &str, ours: &Stat) -> Result<bool, RunError> {
        match rustix::fs::statat(self.root.fd.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(st.st_dev == ours.st_dev && st.st_ino == ours.st_ino),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(storage_error("stat run entry", e)),
        }
    }
}

/// `renameat2(RENAME_NOREPLACE)` within one directory, falling back to
/// `renameat` on file systems without it (the target is a fresh random name).
fn rename_noreplace(dir: BorrowedFd<'_>, from: &str, to: &str) -> Result<(), Errno> {
    match rustix::fs::renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS) => rustix::fs::renameat(dir, from, dir, to),
        other => other,
    }
}

impl AsFd for RunDir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }
}

impl fmt::Debug for RunDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunDir")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

/// A subdirectory of a run — such as the one a sandboxed solver was confined
/// to write in — opened beneath the run's descriptor without following
/// links, and offering the run's bounded readers.
///
/// ```
/// use hardened_mcp::CallerId;
/// use hardened_mcp::runs::{FileName, RunError, RunRoot};
///
/// # let tmp = tempfile::tempdir()?;
/// let root = RunRoot::open(tmp.path().join("runs"))?;
/// let (_handle, run) = root.create(&CallerId::local())?;
/// let out = FileName::fixed("out");
/// assert_eq!(run.subdir(&out).err(), Some(RunError::FileNotFound));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RunSubdir {
    dir: OwnedFd,
    uid: u32,
}

impl fmt::Debug for RunSubdir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunSubdir").finish_non_exhaustive()
    }
}

impl RunDir {
    /// Opens the subdirectory `name` of this run. It must be a directory
    /// owned by the server's user and not accessible to group or others; a
    /// symlink, a missing entry or anything else is refused.
    pub fn subdir(&self, name: &FileName) -> Result<RunSubdir, RunError> {
        let dir = sys::open_dir_beneath(self.dir.as_fd(), name.as_str()).map_err(|e| match e {
            Errno::NOENT => RunError::FileNotFound,
            Errno::LOOP | Errno::NOTDIR | Errno::XDEV | Errno::ACCESS => RunError::FileRefused,
            e => storage_error("open run subdirectory", e),
        })?;
        let st = rustix::fs::fstat(&dir).map_err(|e| storage_error("stat run subdirectory", e))?;
        if !sys::is_private_dir(&st, self.root.uid) {
            return Err(RunError::FileRefused);
        }
        Ok(RunSubdir {
            dir,
            uid: self.root.uid,
        })
    }
}

impl RunSubdir {
    /// As [`RunDir::read_bounded`], inside this subdirectory.
    pub fn read_bounded(&self, name: &FileName, max_bytes: usize) -> Result<Vec<u8>, RunError> {
        file::read_bounded_at(self.dir.as_fd(), self.uid, name.as_str(), max_bytes)
    }

    /// [`RunSubdir::read_bounded`] on tokio's blocking pool.
    pub async fn read_bounded_async(
        &self,
        name: &FileName,
        max_bytes: usize,
    ) -> Result<Vec<u8>, RunError> {
        let dir = self
            .dir
            .try_clone()
            .map_err(|e| sys::io_error("duplicate run descriptor", &e))?;
        let (uid, name) = (self.uid, name.clone());
        off_worker(move || file::read_bounded_at(dir.as_fd(), uid, name.as_str(), max_bytes)).await
    }

    /// As [`RunDir::tail_lines`], inside this subdirectory.
    pub fn tail_lines(
        &self,
        name: &FileName,
        n: usize,
        max_bytes: usize,
    ) -> Result<Tail, RunError> {
        file::tail_at(self.dir.as_fd(), self.uid, name.as_str(), n, max_bytes)
    }
}
