//! The run root: the one application-owned directory every run lives
//! beneath, held as a directory descriptor for its whole lifetime.

use std::collections::HashMap;
use std::fmt;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::dir::RunDir;
use super::error::RootProblem;
use super::handle::RunHandle;
use super::index::{EntryState, Index};
use super::key::RootKey;
use super::sys::{self, is_private_dir, open_dir_beneath, storage_error};
use super::{HandlePrefix, RunError, owner};
use crate::identity::CallerId;

/// Most handles [`RunRoot::list`] returns.
pub const MAX_LISTED_RUNS: usize = 1000;

/// Attempts at drawing an unused handle before giving up (a collision of
/// 128-bit random handles does not happen; this bounds a broken RNG).
const CREATE_ATTEMPTS: usize = 4;

/// Ceilings on what one caller may hold and create. `None` is no ceiling;
/// the default has none. A refusal is [`RunError::QuotaExceeded`] naming
/// the [`Quota`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quotas {
    /// Most runs a caller holds at once.
    pub max_runs: Option<usize>,
    /// Most bytes a caller's runs hold, as last measured
    /// ([`RunDir::record_usage`]): a caller over it creates no new run
    /// until it deletes some.
    pub max_bytes: Option<u64>,
    /// Most runs a caller creates in any 60 seconds.
    pub max_creates_per_minute: Option<u32>,
}

/// Which quota a refused creation hit (defined with [`ToolError`](crate::ToolError),
/// which carries it without the `runs` feature).
pub use crate::error::Quota;

/// When runs expire: a run not used (created, resolved, or its usage
/// recorded) for `max_idle` answers like an unknown handle and is removed
/// by [`RunRoot::sweep_expired`]; a finished run
/// ([`RunDir::record_usage`] with `finished`) after `max_idle_finished`
/// when that is shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Idle time after which a run expires.
    pub max_idle: Duration,
    /// Idle time after which a finished run expires.
    pub max_idle_finished: Option<Duration>,
}

impl Retention {
    /// The idle limit of a run, finished or not.
    fn limit(&self, finished: bool) -> Duration {
        match (finished, self.max_idle_finished) {
            (true, Some(f)) => f.min(self.max_idle),
            _ => self.max_idle,
        }
    }

    fn expired(&self, s: &EntryState, now: SystemTime) -> bool {
        let idle = now.duration_since(s.last_use).unwrap_or(Duration::ZERO);
        idle > self.limit(s.finished)
    }
}

/// How [`RunRoot::open_with_options`] opens a root.
#[derive(Debug, Clone, Default)]
pub struct RootOptions {
    /// The prefix of the handles the root issues.
    pub prefix: HandlePrefix,
    /// Per-caller ceilings.
    pub quotas: Quotas,
    /// Expiry of unused runs (`None`: runs never expire).
    pub retention: Option<Retention>,
}

/// Who opens a root: a server (which makes and maintains it) or a process
/// attached to runs the servers made.
#[derive(Clone, Copy)]
enum Opener {
    Server,
    Attached,
}

/// What one expiry sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Index entries looked at.
    pub examined: usize,
    /// Expired runs removed.
    pub removed: usize,
    /// Expired runs kept because their job is still live.
    pub kept_live: usize,
    /// Whether this sweep finished a pass over the whole index.
    pub pass_complete: bool,
}

/// Per-caller state kept in memory: the creation lock (so that quota
/// checks and the creation they allow are one step) and the recent
/// creations (the rate quota).
#[derive(Default)]
struct CallerState {
    lock: Arc<Mutex<()>>,
}

/// Where the sweeper stopped: the caller directories of this pass and the
/// entries of the current one.
#[derive(Default)]
struct SweepCursor {
    callers: Vec<String>,
    next_caller: usize,
    entries: Vec<String>,
    next_entry: usize,
    current: Option<String>,
}

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
    #[cfg_attr(not(feature = "sandbox"), allow(dead_code))]
    pub(crate) path: std::path::PathBuf,
    /// The per-caller index.
    pub(crate) index: Index,
    quotas: Quotas,
    retention: Option<Retention>,
    callers: Mutex<HashMap<String, CallerState>>,
    sweep: Mutex<SweepCursor>,
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
    pub(super) inner: Arc<RootInner>,
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
        Self::open_with_options(
            path,
            RootOptions {
                prefix,
                ..RootOptions::default()
            },
        )
    }

    /// Like [`RunRoot::open`], with a handle prefix, per-caller quotas and
    /// retention. A root made by an older version gets its per-caller index
    /// built here, from the owner records (once; it costs a read of every
    /// run's record).
    pub fn open_with_options(
        path: impl AsRef<Path>,
        options: RootOptions,
    ) -> Result<RunRoot, RunError> {
        Self::open_as(path.as_ref(), options, Opener::Server)
    }

    /// Opens an existing root for a process that only works in runs the
    /// root's servers made (a cluster node's helper): it never creates the
    /// root, its key or its index, and never sweeps leftovers; a root
    /// without them is [`RunError::InvalidRoot`].
    pub fn attach(path: impl AsRef<Path>, prefix: HandlePrefix) -> Result<RunRoot, RunError> {
        let options = RootOptions {
            prefix,
            ..RootOptions::default()
        };
        Self::open_as(path.as_ref(), options, Opener::Attached)
    }

    fn open_as(path: &Path, options: RootOptions, opener: Opener) -> Result<RunRoot, RunError> {
        let RootOptions {
            prefix,
            quotas,
            retention,
        } = options;
        // Normalised: a trailing `/` would make the kernel follow a symlink
        // in the last component despite O_NOFOLLOW.
        let path: std::path::PathBuf = path.components().collect();
        let path = path.as_path();
        let uid = rustix::process::geteuid().as_raw();
        let made = match opener {
            Opener::Server => rustix::fs::mkdir(path, Mode::RWXU),
            Opener::Attached => Err(Errno::EXIST),
        };
        let created = match made {
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
        let (key, index) = match opener {
            Opener::Server => {
                let key = RootKey::load_or_create(fd.as_fd(), uid)?;
                sweep_tombstones(fd.as_fd(), STALE_TEMP);
                let index = Index::open_or_build(fd.as_fd(), uid, &key, &prefix)?;
                (key, index)
            }
            Opener::Attached => {
                let key = RootKey::load(fd.as_fd(), uid)?;
                (key, Index::open_existing(fd.as_fd(), uid)?)
            }
        };
        Ok(RunRoot {
            inner: Arc::new(RootInner {
                fd,
                prefix,
                uid,
                key,
                path: path.to_path_buf(),
                index,
                quotas,
                retention,
                callers: Mutex::new(HashMap::new()),
                sweep: Mutex::new(SweepCursor::default()),
            }),
        })
    }

    /// When this root's runs expire (`None`: never).
    pub fn retention(&self) -> Option<Retention> {
        self.inner.retention
    }

    /// How long a run not used any more stays: the retention's idle limit
    /// (a finished run's, when `finished` and that is shorter); `None`
    /// when runs never expire.
    pub fn idle_limit(&self, finished: bool) -> Option<Duration> {
        self.inner.retention.map(|r| r.limit(finished))
    }

    /// 32 bytes derived from this root's key for sealing `requestState`
    /// (`Server::states_in`): every server process over one run root (the
    /// replicas behind one address) seals and opens states alike, and the
    /// root key itself never leaves the root.
    pub(crate) fn state_key_bytes(&self) -> [u8; 32] {
        self.inner.key.mac(&[b"hardened-mcp/request-state-key/v1"])
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
    ///
    /// With [`Quotas`], the caller's ceilings are checked first (a refusal
    /// is [`RunError::QuotaExceeded`]); a caller's creations are serialised
    /// so that the check and the creation it allows are one step.
    pub fn create(&self, owner: &CallerId) -> Result<(RunHandle, RunDir), RunError> {
        let lock = self.caller_lock(owner);
        let _serialised = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let q = self.inner.quotas;
        if q.max_runs.is_none() && q.max_bytes.is_none() && q.max_creates_per_minute.is_none() {
            return self.create_unchecked(owner);
        }
        // Every process of the root: the check and the creation it allows
        // are one step under the caller's lock, and the rate counts every
        // process's creations.
        let held = self.inner.index.lock_caller(&self.inner.key, owner)?;
        let now = now_ms();
        let recent = match q.max_creates_per_minute {
            Some(max) => {
                let window = u64::try_from(RATE_WINDOW.as_millis()).unwrap_or(u64::MAX);
                let recent = held.recent_creations(self.inner.uid, now, window);
                if recent.len() >= max as usize {
                    return Err(RunError::QuotaExceeded(Quota::CreateRate));
                }
                Some((recent, max))
            }
            None => None,
        };
        self.check_held(owner)?;
        let created = self.create_unchecked(owner)?;
        if let Some((recent, max)) = recent {
            held.record_creation(self.inner.uid, recent, now, max as usize);
        }
        Ok(created)
    }

    fn create_unchecked(&self, owner: &CallerId) -> Result<(RunHandle, RunDir), RunError> {
        let root = self.inner.fd.as_fd();
        let index = &self.inner.index;
        let key = &self.inner.key;
        let mut issued = None;
        for _ in 0..CREATE_ATTEMPTS {
            let handle = RunHandle::generate(&self.inner.prefix)?;
            // The index entry first (durably), then the run: a crash in
            // between leaves an entry without a run, never a run without
            // an entry.
            index.add(key, owner, &handle)?;
            match rustix::fs::mkdirat(root, handle.as_str(), Mode::RWXU) {
                Ok(()) => {
                    issued = Some(handle);
                    break;
                }
                Err(Errno::EXIST) => {
                    index.remove(key, owner, &handle);
                    continue;
                }
                Err(e) => {
                    index.remove(key, owner, &handle);
                    return Err(storage_error("create run directory", e));
                }
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
                index.remove(key, owner, &handle);
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
            index.remove(key, owner, &handle);
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
        self.open_run(handle, owner, true)
    }

    /// Opens and checks a run; `used`: the call is a use of the run (its
    /// last use becomes now, under a retention).
    fn open_run(
        &self,
        handle: RunHandle,
        owner: &CallerId,
        used: bool,
    ) -> Result<RunDir, RunError> {
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
        if let Some(retention) = &self.inner.retention {
            let (index, key) = (&self.inner.index, &self.inner.key);
            match index.state(key, owner, &handle)? {
                // Expired: the same answer as unknown, before the sweeper
                // has removed it.
                Some(s) if retention.expired(&s, SystemTime::now()) => {
                    return Err(RunError::UnknownRun);
                }
                Some(_) if used => index.touch(key, owner, &handle),
                Some(_) => {}
                // An authentic run without an entry (its entry removed by
                // hand): indexed again, as fresh.
                None => index.add(key, owner, &handle)?,
            }
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
    ///
    /// The cost is in proportion to `owner`'s runs, not the root's: the
    /// per-caller index names the candidates, and each is opened and its
    /// owner record checked (a stale or forged entry lists nothing).
    /// Listing is not a use of the runs (their expiry clocks do not reset).
    pub fn list_bounded(&self, owner: &CallerId, max: usize) -> Result<Vec<RunHandle>, RunError> {
        let (index, key) = (&self.inner.index, &self.inner.key);
        let mut found = Vec::new();
        for handle in index.handles(key, owner, &self.inner.prefix)? {
            match self.open_run(handle.clone(), owner, false) {
                Ok(_) => found.push(handle),
                Err(RunError::UnknownRun) => {
                    // An entry whose run is gone (a crash between the two
                    // steps of a create or a remove): dropped.
                    let gone = matches!(
                        rustix::fs::statat(
                            &self.inner.fd,
                            handle.as_str(),
                            AtFlags::SYMLINK_NOFOLLOW
                        ),
                        Err(Errno::NOENT)
                    );
                    if gone {
                        index.remove(key, owner, &handle);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        found.sort_unstable();
        found.truncate(max);
        Ok(found)
    }

    /// [`RunRoot::list`] on tokio's blocking pool: the async worker that
    /// awaits it is not held up by the file-system work.
    pub async fn list_async(&self, owner: &CallerId) -> Result<Vec<RunHandle>, RunError> {
        self.list_bounded_async(owner, MAX_LISTED_RUNS).await
    }

    /// [`RunRoot::list_bounded`] on tokio's blocking pool.
    pub async fn list_bounded_async(
        &self,
        owner: &CallerId,
        max: usize,
    ) -> Result<Vec<RunHandle>, RunError> {
        let (root, owner) = (self.clone(), owner.clone());
        off_worker(move || root.list_bounded(&owner, max)).await
    }

    /// Removes expired runs (with a [`Retention`]; nothing without one),
    /// looking at no more than `budget` index entries: a pass over the
    /// whole index is spread over as many calls as it takes, each bounded.
    /// A run for which `is_live` says true (its job still runs) is kept,
    /// and so is one whose lease a process holds ([`RunDir::lease`]).
    pub fn sweep_expired(
        &self,
        budget: usize,
        is_live: &dyn Fn(&RunHandle) -> bool,
    ) -> Result<SweepReport, RunError> {
        let mut report = SweepReport::default();
        let Some(retention) = self.inner.retention else {
            report.pass_complete = true;
            return Ok(report);
        };
        let mut cursor = self
            .inner
            .sweep
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let index_fd = self.inner.index.fd();
        let now = SystemTime::now();
        while report.examined < budget {
            if cursor.next_entry >= cursor.entries.len() {
                // The next caller directory of this pass.
                if cursor.next_caller >= cursor.callers.len() {
                    if !cursor.callers.is_empty() || cursor.current.is_some() {
                        *cursor = SweepCursor::default();
                        report.pass_complete = true;
                        break;
                    }
                    cursor.callers = dir_names(index_fd)?;
                    cursor.next_caller = 0;
                    if cursor.callers.is_empty() {
                        report.pass_complete = true;
                        break;
                    }
                }
                let name = cursor.callers[cursor.next_caller].clone();
                cursor.next_caller += 1;
                cursor.entries = match open_dir_beneath(index_fd, &name) {
                    Ok(d) => dir_names(d.as_fd())?,
                    Err(_) => Vec::new(),
                };
                cursor.next_entry = 0;
                cursor.current = Some(name);
                continue;
            }
            let entry = cursor.entries[cursor.next_entry].clone();
            cursor.next_entry += 1;
            report.examined += 1;
            let Some(caller_dir) = cursor.current.clone() else {
                continue;
            };
            match self.expire_one(&caller_dir, &entry, &retention, now, is_live)? {
                Expiry::Removed => report.removed += 1,
                Expiry::KeptLive => report.kept_live += 1,
                Expiry::Kept => {}
            }
        }
        Ok(report)
    }

    /// Starts the expiry sweeper: every `every`, a bounded sweep (at most
    /// `budget` index entries) on the blocking pool, removals logged. A
    /// run for which `is_live` says true is kept, as is one whose lease a
    /// process holds. Stops when the returned handle is dropped. Must be
    /// called inside a tokio runtime.
    pub fn start_expiry_sweeper(
        &self,
        every: Duration,
        budget: usize,
        is_live: Arc<dyn Fn(&RunHandle) -> bool + Send + Sync>,
    ) -> tokio_util::task::AbortOnDropHandle<()> {
        let runs = self.clone();
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                match runs.sweep_expired_async(budget, Arc::clone(&is_live)).await {
                    Ok(r) if r.removed > 0 => {
                        tracing::info!(
                            removed = r.removed,
                            examined = r.examined,
                            "expired runs removed"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "expiry sweep failed"),
                }
            }
        }))
    }

    /// [`RunRoot::sweep_expired`] on tokio's blocking pool.
    pub async fn sweep_expired_async(
        &self,
        budget: usize,
        is_live: Arc<dyn Fn(&RunHandle) -> bool + Send + Sync>,
    ) -> Result<SweepReport, RunError> {
        let root = self.clone();
        off_worker(move || root.sweep_expired(budget, &*is_live)).await
    }

    /// One entry of the sweep: removes its run if it expired and is not
    /// live; drops the entry if its run is gone.
    fn expire_one(
        &self,
        caller_dir: &str,
        entry: &str,
        retention: &Retention,
        now: SystemTime,
        is_live: &dyn Fn(&RunHandle) -> bool,
    ) -> Result<Expiry, RunError> {
        let Some(handle) = RunHandle::parse(entry, &self.inner.prefix) else {
            return Ok(Expiry::Kept);
        };
        let Ok(dir) = open_dir_beneath(self.inner.index.fd(), caller_dir) else {
            return Ok(Expiry::Kept);
        };
        let Some(state) = super::index::read_state(dir.as_fd(), entry)? else {
            return Ok(Expiry::Kept);
        };
        if !retention.expired(&state, now) {
            return Ok(Expiry::Kept);
        }
        if is_live(&handle) {
            return Ok(Expiry::KeptLive);
        }
        let root = self.inner.fd.as_fd();
        let run = match open_dir_beneath(root, handle.as_str()) {
            Ok(run) => run,
            Err(Errno::NOENT) => {
                let _ = rustix::fs::unlinkat(&dir, entry, AtFlags::empty());
                return Ok(Expiry::Kept);
            }
            Err(_) => return Ok(Expiry::Kept),
        };
        // The run's own record decides whose it is: an entry in the wrong
        // caller's directory removes nothing.
        let Some(owner) = owner::read_owner(run.as_fd(), self.inner.uid, &self.inner.key, &handle)?
        else {
            return Ok(Expiry::Kept);
        };
        if Index::caller_dir_name(&self.inner.key, &owner) != caller_dir {
            return Ok(Expiry::Kept);
        }
        let st = rustix::fs::fstat(&run).map_err(|e| storage_error("stat run directory", e))?;
        if !is_private_dir(&st, self.inner.uid) {
            return Ok(Expiry::Kept);
        }
        let run = RunDir::new(Arc::clone(&self.inner), run, handle, owner);
        // A run some process follows (it holds the run's lease: a job of
        // any server sharing this root) is live whatever its clock says;
        // holding the lease while removing keeps anyone from starting to.
        let Some(_lease) = run.lease()? else {
            return Ok(Expiry::KeptLive);
        };
        run.remove()?;
        Ok(Expiry::Removed)
    }

    /// The creation lock of `owner`.
    fn caller_lock(&self, owner: &CallerId) -> Arc<Mutex<()>> {
        self.with_caller(owner, |c| Arc::clone(&c.lock))
    }

    fn with_caller<R>(&self, owner: &CallerId, f: impl FnOnce(&mut CallerState) -> R) -> R {
        let mut callers = self
            .inner
            .callers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if callers.len() > MAX_TRACKED_CALLERS {
            // Forget callers with no creation under way.
            callers.retain(|_, c| Arc::strong_count(&c.lock) > 1);
        }
        f(callers.entry(owner.as_str().to_owned()).or_default())
    }

    /// Refuses a creation over `owner`'s runs or bytes held.
    fn check_held(&self, owner: &CallerId) -> Result<(), RunError> {
        let q = self.inner.quotas;
        if q.max_runs.is_some() || q.max_bytes.is_some() {
            let (runs, bytes) = self.inner.index.usage(&self.inner.key, owner)?;
            if q.max_runs.is_some_and(|m| runs >= m) {
                return Err(RunError::QuotaExceeded(Quota::Runs));
            }
            if q.max_bytes.is_some_and(|m| bytes >= m) {
                return Err(RunError::QuotaExceeded(Quota::Bytes));
            }
        }
        Ok(())
    }
}

/// What the sweep did with one entry.
enum Expiry {
    Removed,
    KeptLive,
    Kept,
}

/// The window of [`Quotas::max_creates_per_minute`].
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// Milliseconds since the Unix epoch (the clock every process of the root
/// shares).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Callers whose in-memory state is kept before idle ones are forgotten.
const MAX_TRACKED_CALLERS: usize = 4096;

/// Runs `f` on tokio's blocking pool.
pub(crate) async fn off_worker<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RunError> + Send + 'static,
) -> Result<T, RunError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "run root: blocking task failed");
        Err(RunError::Io)
    })
}

/// The names in a directory, `.` and `..` left out.
fn dir_names(dir: BorrowedFd<'_>) -> Result<Vec<String>, RunError> {
    let mut reader = Dir::read_from(dir).map_err(|e| storage_error("read index", e))?;
    let mut names = Vec::new();
    while let Some(entry) = reader.read() {
        let entry = entry.map_err(|e| storage_error("read index", e))?;
        if let Ok(name) = entry.file_name().to_str()
            && name != "."
            && name != ".."
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// Removes tombstones (runs whose removal was interrupted, half-built
/// indexes) and stale temporary files.
pub(super) fn sweep_tombstones(root: BorrowedFd<'_>, min_age: Duration) {
    let Ok(mut reader) = Dir::read_from(root) else {
        return;
    };
    let mut tombs = Vec::new();
    while let Some(Ok(entry)) = reader.read() {
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name.starts_with(TOMBSTONE_START) && is_stale(root, name, min_age) {
            // A run removal or an index build that its process did not
            // finish (never one going on: a rename into a tombstone sets
            // its ctime, and an index being filled its mtime).
            tombs.push(name.to_owned());
        } else if name.starts_with(TEMP_START) && is_stale(root, name, min_age) {
            // A key file staged by an opener that crashed (never one that
            // another opener, starting at the same time, is placing).
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

/// Whether the entry `name` in `root` was last written or renamed at
/// least `min_age` ago.
fn is_stale(root: BorrowedFd<'_>, name: &str, min_age: Duration) -> bool {
    let Ok(st) = rustix::fs::statat(root, name, AtFlags::SYMLINK_NOFOLLOW) else {
        return false;
    };
    let last = st.st_mtime.max(st.st_ctime);
    let written = std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(last).unwrap_or(0));
    SystemTime::now()
        .duration_since(written)
        .is_ok_and(|age| age >= min_age)
}

/// How old a staged file or a tombstone in the root must be before an
/// opener takes it for a crash's leftover.
const STALE_TEMP: Duration = Duration::from_secs(600);

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
