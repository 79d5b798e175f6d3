//! The per-caller index: `<root>/.index/<caller key>/<handle>`, one small
//! file per run, so that listing a caller's runs reads that caller's
//! entries only.
//!
//! The index is derived state. The owner record in each run directory stays
//! the truth: listing opens every indexed run and checks its record, so a
//! forged or stale entry never lists a run that is not the caller's. The
//! order of writes keeps the index a superset of the runs: an entry is
//! created and made durable (`fsync` of its directory) *before* its run
//! directory exists, and removed only *after* the run is gone; a crash
//! between the two leaves an entry without a run, which the next listing
//! drops. A root without an index (made by an older version) gets one built
//! from the owner records when it is opened.
//!
//! The caller key is an HMAC of the caller id under the root key: no caller
//! id appears in a path, and it cannot be guessed without the key.
//!
//! An entry's content is the run's bookkeeping (little-endian): bytes held
//! by the run as last measured (8 bytes) and whether its solver run is
//! finished (1 byte). Its modification time is the run's last use.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::SystemTime;

use rustix::fs::{AtFlags, Dir, Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;

use super::file::{read_bounded_at, write_atomic_at};
use super::handle::RunHandle;
use super::key::RootKey;
use super::sys::{self, open_dir_beneath, storage_error};
use super::{HandlePrefix, RunError, owner};
use crate::identity::CallerId;

/// The index directory's name in the root.
pub(crate) const INDEX_DIR: &str = ".index";
/// Length of an entry's content.
const ENTRY_LEN: usize = 9;

/// What an entry records about its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryState {
    /// The last use (creation, resolve, bookkeeping write).
    pub(crate) last_use: SystemTime,
    /// Bytes the run held when last measured.
    pub(crate) bytes: u64,
    /// Whether the run's solver has finished.
    pub(crate) finished: bool,
}

/// The open index directory.
pub(crate) struct Index {
    fd: OwnedFd,
}

impl Index {
    /// Opens the root's index, building it from the owner records when the
    /// root has none.
    pub(crate) fn open_or_build(
        root: BorrowedFd<'_>,
        uid: u32,
        key: &RootKey,
        prefix: &HandlePrefix,
    ) -> Result<Self, RunError> {
        match open_dir_beneath(root, INDEX_DIR) {
            Ok(fd) => return Self::checked(fd, uid),
            Err(Errno::NOENT) => {}
            Err(e) => return Err(storage_error("open run index", e)),
        }
        // Built under a tombstone name (swept at the next open if this
        // process dies half-way), then renamed into place.
        let tmp = sys::random_hidden_name(super::root::TOMBSTONE_KIND)?;
        rustix::fs::mkdirat(root, tmp.as_str(), Mode::RWXU)
            .map_err(|e| storage_error("create run index", e))?;
        let built = open_dir_beneath(root, &tmp)
            .map_err(|e| storage_error("open new run index", e))
            .and_then(|fd| {
                rustix::fs::fchmod(&fd, Mode::RWXU)
                    .map_err(|e| storage_error("chmod run index", e))?;
                let index = Index { fd };
                index.fill(root, uid, key, prefix)?;
                Ok(index)
            });
        let index = match built {
            Ok(index) => index,
            Err(e) => {
                discard(root, &tmp);
                return Err(e);
            }
        };
        match rustix::fs::renameat_with(
            root,
            tmp.as_str(),
            root,
            INDEX_DIR,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {
                rustix::fs::fsync(root).map_err(|e| storage_error("fsync root", e))?;
                tracing::info!("run root: built the index of runs by owner");
                Ok(index)
            }
            // Another opener built it meanwhile: use theirs.
            Err(Errno::EXIST | Errno::NOTEMPTY) => {
                discard(root, &tmp);
                let fd = open_dir_beneath(root, INDEX_DIR)
                    .map_err(|e| storage_error("open run index", e))?;
                Self::checked(fd, uid)
            }
            Err(e) => {
                discard(root, &tmp);
                Err(storage_error("install run index", e))
            }
        }
    }

    /// The root's index, which must exist (never built here).
    pub(crate) fn open_existing(root: BorrowedFd<'_>, uid: u32) -> Result<Self, RunError> {
        let fd =
            open_dir_beneath(root, INDEX_DIR).map_err(|e| storage_error("open run index", e))?;
        Self::checked(fd, uid)
    }

    fn checked(fd: OwnedFd, uid: u32) -> Result<Self, RunError> {
        let st = rustix::fs::fstat(&fd).map_err(|e| storage_error("stat run index", e))?;
        if !sys::is_private_dir(&st, uid) {
            tracing::error!("run root: the index is not a private directory of ours");
            return Err(RunError::Io);
        }
        Ok(Self { fd })
    }

    /// Adds an entry for every run of the root whose owner record is
    /// authentic.
    fn fill(
        &self,
        root: BorrowedFd<'_>,
        uid: u32,
        key: &RootKey,
        prefix: &HandlePrefix,
    ) -> Result<(), RunError> {
        let mut reader = Dir::read_from(root).map_err(|e| storage_error("read run root", e))?;
        while let Some(entry) = reader.read() {
            let entry = entry.map_err(|e| storage_error("read run root", e))?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            let Some(handle) = RunHandle::parse(name, prefix) else {
                continue;
            };
            let Ok(dir) = open_dir_beneath(root, handle.as_str()) else {
                continue;
            };
            if let Some(owner) = owner::read_owner(dir.as_fd(), uid, key, &handle)? {
                self.add(key, &owner, &handle)?;
            }
        }
        Ok(())
    }

    /// The caller's directory name: 32 hex digits of an HMAC of the id.
    pub(crate) fn caller_dir_name(key: &RootKey, owner: &CallerId) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mac = key.mac(&[b"hardened-mcp run index v1\n", owner.as_str().as_bytes()]);
        mac[..16]
            .iter()
            .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]])
            .map(char::from)
            .collect()
    }

    /// The caller's directory, if it exists.
    fn caller_dir(&self, key: &RootKey, owner: &CallerId) -> Result<Option<OwnedFd>, RunError> {
        match open_dir_beneath(self.fd.as_fd(), &Self::caller_dir_name(key, owner)) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(storage_error("open caller index", e)),
        }
    }

    /// The caller's directory, created if it does not exist yet.
    fn caller_dir_or_create(&self, key: &RootKey, owner: &CallerId) -> Result<OwnedFd, RunError> {
        let name = Self::caller_dir_name(key, owner);
        match open_dir_beneath(self.fd.as_fd(), &name) {
            Ok(fd) => Ok(fd),
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(self.fd.as_fd(), name.as_str(), Mode::RWXU) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(storage_error("create caller index", e)),
                }
                let fd = open_dir_beneath(self.fd.as_fd(), &name)
                    .map_err(|e| storage_error("open caller index", e))?;
                rustix::fs::fchmod(&fd, Mode::RWXU)
                    .map_err(|e| storage_error("chmod caller index", e))?;
                rustix::fs::fsync(&self.fd).map_err(|e| storage_error("fsync index", e))?;
                Ok(fd)
            }
            Err(e) => Err(storage_error("open caller index", e)),
        }
    }

    /// The caller's creation lock, across every process of the root: an
    /// exclusive `flock` on `.lock` in the caller's directory, held while
    /// a creation is checked against the caller's quotas and made, and
    /// released when the returned directory is dropped.
    pub(crate) fn lock_caller(
        &self,
        key: &RootKey,
        owner: &CallerId,
    ) -> Result<CallerLock, RunError> {
        let dir = self.caller_dir_or_create(key, owner)?;
        let lock = sys::open_beneath(
            dir.as_fd(),
            LOCK_FILE,
            OFlags::RDWR | OFlags::CREATE,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(|e| storage_error("open caller lock", e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| storage_error("lock caller", e))?;
        Ok(CallerLock { dir, _lock: lock })
    }

    /// Adds (durably) the entry of a run about to be created.
    pub(crate) fn add(
        &self,
        key: &RootKey,
        owner: &CallerId,
        handle: &RunHandle,
    ) -> Result<(), RunError> {
        let dir = self.caller_dir_or_create(key, owner)?;
        let file = sys::open_beneath(
            dir.as_fd(),
            handle.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            Mode::RUSR | Mode::WUSR,
        );
        // Created empty (no data block to flush): an empty entry reads as
        // nothing measured, not finished.
        match file {
            Ok(_) | Err(Errno::EXIST) => {}
            Err(e) => return Err(storage_error("create index entry", e)),
        }
        rustix::fs::fsync(&dir).map_err(|e| storage_error("fsync caller index", e))
    }

    /// Removes a run's entry (after the run itself is gone).
    pub(crate) fn remove(&self, key: &RootKey, owner: &CallerId, handle: &RunHandle) {
        let removed = match self.caller_dir(key, owner) {
            Ok(Some(dir)) => match rustix::fs::unlinkat(&dir, handle.as_str(), AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => Ok(()),
                Err(e) => Err(e),
            },
            Ok(None) => Ok(()),
            Err(_) => Err(Errno::IO),
        };
        if let Err(e) = removed {
            // A stale entry is dropped by the next listing.
            tracing::warn!(
                errno = e.raw_os_error(),
                "run root: index entry left behind"
            );
        }
    }

    /// The handles in the caller's index (not yet checked against the runs).
    pub(crate) fn handles(
        &self,
        key: &RootKey,
        owner: &CallerId,
        prefix: &HandlePrefix,
    ) -> Result<Vec<RunHandle>, RunError> {
        let Some(dir) = self.caller_dir(key, owner)? else {
            return Ok(Vec::new());
        };
        names(dir.as_fd(), prefix)
    }

    /// The state recorded in a run's entry; `None` without an entry.
    pub(crate) fn state(
        &self,
        key: &RootKey,
        owner: &CallerId,
        handle: &RunHandle,
    ) -> Result<Option<EntryState>, RunError> {
        let Some(dir) = self.caller_dir(key, owner)? else {
            return Ok(None);
        };
        read_state(dir.as_fd(), handle.as_str())
    }

    /// Sets the run's last use to now.
    pub(crate) fn touch(&self, key: &RootKey, owner: &CallerId, handle: &RunHandle) {
        if let Ok(Some(dir)) = self.caller_dir(key, owner) {
            let now = Timestamps {
                last_access: Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_NOW,
                },
                last_modification: Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_NOW,
                },
            };
            let _ = rustix::fs::utimensat(&dir, handle.as_str(), &now, AtFlags::SYMLINK_NOFOLLOW);
        }
    }

    /// Records the run's measured bytes and whether it is finished.
    pub(crate) fn record(
        &self,
        key: &RootKey,
        owner: &CallerId,
        handle: &RunHandle,
        bytes: u64,
        finished: bool,
    ) -> Result<(), RunError> {
        let Some(dir) = self.caller_dir(key, owner)? else {
            return Err(RunError::UnknownRun);
        };
        let f = sys::open_beneath(dir.as_fd(), handle.as_str(), OFlags::WRONLY, Mode::empty())
            .map_err(|e| match e {
                Errno::NOENT => RunError::UnknownRun,
                e => storage_error("open index entry", e),
            })?;
        write_state(&f, bytes, finished)
    }

    /// The caller's runs and bytes held, by the entries (stale entries
    /// included: they count until a listing drops them).
    pub(crate) fn usage(&self, key: &RootKey, owner: &CallerId) -> Result<(usize, u64), RunError> {
        let Some(dir) = self.caller_dir(key, owner)? else {
            return Ok((0, 0));
        };
        let mut reader = Dir::read_from(&dir).map_err(|e| storage_error("read caller index", e))?;
        let (mut runs, mut bytes) = (0usize, 0u64);
        while let Some(entry) = reader.read() {
            let entry = entry.map_err(|e| storage_error("read caller index", e))?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            runs += 1;
            if let Some(s) = read_state(dir.as_fd(), name)? {
                bytes = bytes.saturating_add(s.bytes);
            }
        }
        Ok((runs, bytes))
    }

    /// The index directory (for the sweeper's walk).
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A caller's creation lock ([`Index::lock_caller`]), with its directory.
pub(crate) struct CallerLock {
    dir: OwnedFd,
    _lock: OwnedFd,
}

impl CallerLock {
    /// The caller's creations within `window` of `now` (ms since the
    /// epoch), oldest first, as recorded by every process of the root.
    pub(crate) fn recent_creations(&self, uid: u32, now: u64, window: u64) -> Vec<u64> {
        let bytes = match read_bounded_at(self.dir.as_fd(), uid, CREATES_FILE, MAX_CREATES_BYTES) {
            Ok(b) => b,
            Err(RunError::FileNotFound) => return Vec::new(),
            Err(e) => {
                tracing::warn!(error = %e, "run index: a caller's creation record is unreadable; starting a new one");
                return Vec::new();
            }
        };
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| l.parse::<u64>().ok())
            .filter(|t| now.saturating_sub(*t) < window && *t <= now.saturating_add(window))
            .collect()
    }

    /// Records a creation at `now` after `recent`, keeping the newest `keep`.
    pub(crate) fn record_creation(&self, uid: u32, mut recent: Vec<u64>, now: u64, keep: usize) {
        recent.push(now);
        let skip = recent.len().saturating_sub(keep.max(1));
        let text: String = recent[skip..].iter().map(|t| format!("{t}\n")).collect();
        if let Err(e) = write_atomic_at(self.dir.as_fd(), uid, CREATES_FILE, text.as_bytes()) {
            tracing::warn!(error = %e, "run index: a caller's creation was not recorded");
        }
    }
}

/// The caller's creation lock file, in its index directory.
const LOCK_FILE: &str = ".lock";
/// The caller's recent creation times (ms since the epoch, a line each).
const CREATES_FILE: &str = ".creates";
/// Largest creation record read (far above `u32::MAX` lines are never kept:
/// at most the rate quota's count).
const MAX_CREATES_BYTES: usize = 1 << 20;

/// The well-formed handle names in a caller's index directory.
fn names(dir: BorrowedFd<'_>, prefix: &HandlePrefix) -> Result<Vec<RunHandle>, RunError> {
    let mut reader = Dir::read_from(dir).map_err(|e| storage_error("read caller index", e))?;
    let mut found = Vec::new();
    while let Some(entry) = reader.read() {
        let entry = entry.map_err(|e| storage_error("read caller index", e))?;
        if let Some(h) = entry
            .file_name()
            .to_str()
            .ok()
            .and_then(|n| RunHandle::parse(n, prefix))
        {
            found.push(h);
        }
    }
    Ok(found)
}

/// Reads an entry's state; `None` if it does not exist.
pub(crate) fn read_state(dir: BorrowedFd<'_>, name: &str) -> Result<Option<EntryState>, RunError> {
    let f = match sys::open_beneath(dir, name, OFlags::RDONLY, Mode::empty()) {
        Ok(f) => f,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(storage_error("open index entry", e)),
    };
    let st = rustix::fs::fstat(&f).map_err(|e| storage_error("stat index entry", e))?;
    let mut buf = [0u8; ENTRY_LEN];
    let n = rustix::io::read(&f, &mut buf).map_err(|e| storage_error("read index entry", e))?;
    let bytes = if n == ENTRY_LEN {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[..8]);
        u64::from_le_bytes(b)
    } else {
        0
    };
    let secs = u64::try_from(st.st_mtime).unwrap_or(0);
    let nanos = u32::try_from(st.st_mtime_nsec).unwrap_or(0);
    Ok(Some(EntryState {
        last_use: SystemTime::UNIX_EPOCH + std::time::Duration::new(secs, nanos),
        bytes,
        finished: n == ENTRY_LEN && buf[8] == 1,
    }))
}

fn write_state(f: &OwnedFd, bytes: u64, finished: bool) -> Result<(), RunError> {
    let mut buf = [0u8; ENTRY_LEN];
    buf[..8].copy_from_slice(&bytes.to_le_bytes());
    buf[8] = u8::from(finished);
    match rustix::io::pwrite(f, &buf, 0) {
        Ok(n) if n == ENTRY_LEN => Ok(()),
        Ok(_) => Err(RunError::Io),
        Err(e) => Err(storage_error("write index entry", e)),
    }
}

/// Removes a half-built index.
fn discard(root: BorrowedFd<'_>, name: &str) {
    let removed = open_dir_beneath(root, name)
        .and_then(|d| sys::remove_contents(d.as_fd()))
        .and_then(|()| rustix::fs::unlinkat(root, name, AtFlags::REMOVEDIR));
    if let Err(e) = removed {
        tracing::warn!(
            errno = e.raw_os_error(),
            "run root: a half-built index is left for the next open"
        );
    }
}
