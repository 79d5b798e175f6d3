//! The run root's system calls: single-component opens beneath a directory
//! descriptor, metadata checks, and link-safe recursive removal.
//!
//! Everything here works on directory file descriptors and one path
//! component at a time. No function in this file accepts a path with a `/`.

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, RawDir, ResolveFlags, Stat};
use rustix::io::Errno;

use super::RunError;

/// How every component is resolved when `openat2` is available: beneath the
/// directory, never through any symlink or magic link, never across a mount.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS)
    .union(ResolveFlags::NO_XDEV);

const UNKNOWN: u8 = 0;
const AVAILABLE: u8 = 1;
const MISSING: u8 = 2;

/// Whether this kernel has `openat2` (probed on first use).
static OPENAT2: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Nesting [`remove_contents`] descends into before it moves a deeper
/// subtree up to the top directory (bounding descriptors and stack use).
const MAX_REMOVE_DEPTH: usize = 32;
/// Directory scans per nested level before giving up (something keeps
/// creating entries).
const MAX_REMOVE_PASSES: usize = 16;
/// Scans of the top directory; each one that is not the last makes progress
/// (removes entries or lifts a deep subtree), so this bounds only pathology.
const MAX_TOP_PASSES: usize = 1 << 16;

/// True if `name` is exactly one non-special path component.
fn is_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.bytes().any(|b| b == b'/' || b == 0)
}

/// Opens the single component `name` beneath `dir`, never following a
/// symlink: `openat2` with [`RESOLVE`] where the kernel has it, otherwise
/// `openat` with `O_NOFOLLOW` (equivalent for a single component).
/// `O_NOFOLLOW | O_CLOEXEC` are always added.
pub(crate) fn open_beneath(
    dir: BorrowedFd<'_>,
    name: &str,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    if !is_component(name) {
        return Err(Errno::INVAL);
    }
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let state = OPENAT2.load(Ordering::Relaxed);
    if state != MISSING {
        match rustix::fs::openat2(dir, name, flags, mode, RESOLVE) {
            // ENOSYS: an old kernel. EPERM on the very first call: a seccomp
            // filter that denies the unknown syscall (older container
            // runtimes); with these flags EPERM has no other cause.
            Err(Errno::NOSYS) | Err(Errno::PERM) if state == UNKNOWN => {
                tracing::info!("run root: openat2 unavailable, using openat with O_NOFOLLOW");
                OPENAT2.store(MISSING, Ordering::Relaxed);
            }
            Err(Errno::NOSYS) => OPENAT2.store(MISSING, Ordering::Relaxed),
            other => {
                OPENAT2.store(AVAILABLE, Ordering::Relaxed);
                return other;
            }
        }
    }
    open_fallback(dir, name, flags, mode)
}

/// The `openat2`-less path of [`open_beneath`]: `flags` must already hold
/// `O_NOFOLLOW`, and `name` must be a single component, so no symlink is
/// followed anywhere.
fn open_fallback(
    dir: BorrowedFd<'_>,
    name: &str,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(dir, name, flags, mode)
}

/// Opens the directory `name` beneath `dir` for reading entries.
pub(crate) fn open_dir_beneath(dir: BorrowedFd<'_>, name: &str) -> Result<OwnedFd, Errno> {
    open_beneath(dir, name, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
}

/// The file type in a `stat` result.
pub(crate) fn file_type(st: &Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode)
}

/// A directory owned by `uid` with no group or other permission bits.
pub(crate) fn is_private_dir(st: &Stat, uid: u32) -> bool {
    file_type(st) == FileType::Directory && st.st_uid == uid && st.st_mode & 0o077 == 0
}

/// A regular file owned by `uid` with exactly one link.
pub(crate) fn is_plain_file(st: &Stat, uid: u32) -> bool {
    file_type(st) == FileType::RegularFile && st.st_uid == uid && st.st_nlink == 1
}

/// Maps a storage errno to the caller-facing error, logging the detail.
/// Out-of-space conditions become [`RunError::NoSpace`], the rest
/// [`RunError::Io`].
pub(crate) fn storage_error(op: &'static str, e: Errno) -> RunError {
    match e {
        Errno::NOSPC | Errno::DQUOT | Errno::FBIG => {
            tracing::warn!(op, errno = e.raw_os_error(), "run root: out of space");
            RunError::NoSpace
        }
        _ => {
            tracing::warn!(op, errno = e.raw_os_error(), error = %e, "run root: storage error");
            RunError::Io
        }
    }
}

/// The same mapping for `std::io::Error`.
pub(crate) fn io_error(op: &'static str, e: &std::io::Error) -> RunError {
    storage_error(op, Errno::from_io_error(e).unwrap_or(Errno::IO))
}

/// A fresh random hidden name, `.{kind}-{128 random bits}`. Hidden names
/// can never collide with a [`FileName`](super::FileName) or a handle.
pub(crate) fn random_hidden_name(kind: &str) -> Result<String, RunError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        tracing::error!(error = %e, "run root: no randomness for a private name");
        RunError::Io
    })?;
    let mut s = String::with_capacity(kind.len() + 24);
    s.push('.');
    s.push_str(kind);
    s.push('-');
    URL_SAFE_NO_PAD.encode_string(bytes, &mut s);
    Ok(s)
}

/// Removes everything inside the directory `dir`, without following any
/// link: symlinks are unlinked as links, subdirectories are opened beneath
/// their parent with `O_NOFOLLOW` and emptied the same way. `dir` itself
/// stays. Trees deeper than [`MAX_REMOVE_DEPTH`] are handled by renaming the
/// deep subtree up into `dir` and continuing from there, so any depth is
/// removed with bounded descriptors and stack.
pub(crate) fn remove_contents(dir: BorrowedFd<'_>) -> Result<(), Errno> {
    for _ in 0..MAX_TOP_PASSES {
        if empty_pass(dir, dir, 0)? {
            return Ok(());
        }
    }
    Err(Errno::NOTEMPTY)
}

/// Removes what one scan of `dir` finds; true if the scan found nothing.
fn empty_pass(top: BorrowedFd<'_>, dir: BorrowedFd<'_>, depth: usize) -> Result<bool, Errno> {
    let mut entries: Vec<(CString, FileType)> = Vec::new();
    let mut reader = Dir::read_from(dir)?;
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        entries.push((name.to_owned(), entry.file_type()));
    }
    drop(reader);
    for (name, kind) in &entries {
        remove_entry(top, dir, name, *kind, depth)?;
    }
    Ok(entries.is_empty())
}

/// Empties a nested directory completely (a bounded number of scans).
fn empty_nested(top: BorrowedFd<'_>, dir: BorrowedFd<'_>, depth: usize) -> Result<(), Errno> {
    for _ in 0..MAX_REMOVE_PASSES {
        if empty_pass(top, dir, depth)? {
            return Ok(());
        }
    }
    Err(Errno::NOTEMPTY)
}

fn remove_entry(
    top: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    name: &CStr,
    kind: FileType,
    depth: usize,
) -> Result<(), Errno> {
    if kind != FileType::Directory && kind != FileType::Unknown {
        // A file, symlink, fifo, socket or device: unlink the entry itself.
        match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => return Ok(()),
            // The entry became a directory since the scan: handle it below.
            Err(Errno::ISDIR | Errno::PERM) => {}
            Err(e) => return Err(e),
        }
    }
    if depth >= MAX_REMOVE_DEPTH {
        // Too deep to descend further: lift the subtree into the top
        // directory, where a later top-level pass removes it.
        let lifted = random_hidden_name("deep").map_err(|_| Errno::IO)?;
        return match rustix::fs::renameat(dir, name, top, lifted.as_str()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e),
        };
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(sub) => {
            empty_nested(top, sub.as_fd(), depth + 1)?;
            drop(sub);
            match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
                Ok(()) | Err(Errno::NOENT) => Ok(()),
                Err(e) => Err(e),
            }
        }
        // Not a directory (any more): a symlink or file, unlinked as such.
        Err(Errno::NOTDIR | Errno::LOOP) => match rustix::fs::unlinkat(dir, name, AtFlags::empty())
        {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e),
        },
        Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deepest directory [`tree_bytes`] descends into.
const MAX_MEASURE_DEPTH: usize = 256;

/// What a [`walk_tree`] visitor says after an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Go on.
    Continue,
    /// End the whole walk now.
    Stop,
}

/// What a [`walk_tree`] shows its visitor. (The run root reads only the
/// metadata; the sandbox's disk watch reads the rest.)
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "sandbox"), allow(dead_code))]
pub(crate) enum Step<'a> {
    /// A directory about to be listed (the walk's own first).
    Enter(BorrowedFd<'a>),
    /// An entry: its metadata (`None` when it vanished between the listing
    /// and its `fstatat`), its type, and its depth (0: an entry of the
    /// walk's own directory).
    Entry(Option<&'a Stat>, FileType, usize),
}

/// Walks every entry beneath `dir` by descriptor, one component at a
/// time, never following a link, showing `visit` each [`Step`]. The walk
/// descends into the subdirectories of entries at a depth below
/// `max_depth`, after each directory's own entries, and ends at once when
/// `visit` says [`Walk::Stop`]. A subdirectory removed or replaced before
/// it is opened is skipped; any other error ends the walk.
pub(crate) fn walk_tree(
    dir: BorrowedFd<'_>,
    max_depth: usize,
    visit: &mut impl FnMut(Step<'_>) -> Walk,
) -> Result<Walk, Errno> {
    // One listing buffer for the whole walk: a directory's listing ends
    // before the walk descends.
    let mut buf = vec![MaybeUninit::uninit(); LISTING_BUFFER];
    let mut walk = Walker {
        max_depth,
        buf: &mut buf,
        visit,
    };
    walk.at(dir, 0)
}

/// Bytes of directory entries one `getdents64` call may return to a walk.
const LISTING_BUFFER: usize = 64 * 1024;

/// One walk's settings and state.
struct Walker<'a, V> {
    max_depth: usize,
    buf: &'a mut [MaybeUninit<u8>],
    visit: &'a mut V,
}

impl<V: FnMut(Step<'_>) -> Walk> Walker<'_, V> {
    fn at(&mut self, dir: BorrowedFd<'_>, depth: usize) -> Result<Walk, Errno> {
        if (self.visit)(Step::Enter(dir)) == Walk::Stop {
            return Ok(Walk::Stop);
        }
        let mut subdirs: Vec<CString> = Vec::new();
        {
            // A listing of its own: `dir` may share its read position with
            // another descriptor (a `dup`), which must not move.
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let listed = rustix::fs::openat(dir, c".", flags, Mode::empty())?;
            let mut reader = RawDir::new(&listed, self.buf);
            while let Some(entry) = reader.next() {
                let entry = entry?;
                let name = entry.file_name();
                if name == c"." || name == c".." {
                    continue;
                }
                let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => Some(st),
                    Err(Errno::NOENT) => None,
                    Err(e) => return Err(e),
                };
                let kind = st.as_ref().map_or(FileType::Unknown, file_type);
                if (self.visit)(Step::Entry(st.as_ref(), kind, depth)) == Walk::Stop {
                    return Ok(Walk::Stop);
                }
                if kind == FileType::Directory && depth < self.max_depth {
                    subdirs.push(name.to_owned());
                }
            }
        }
        for name in subdirs {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rustix::fs::openat(dir, name.as_c_str(), flags, Mode::empty()) {
                Ok(sub) => {
                    if self.at(sub.as_fd(), depth + 1)? == Walk::Stop {
                        return Ok(Walk::Stop);
                    }
                }
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Walk::Continue)
    }
}

/// The allocated bytes (`st_blocks × 512`) of a file's metadata.
pub(crate) fn allocated_bytes(st: &Stat) -> u64 {
    u64::try_from(st.st_blocks).unwrap_or(0).saturating_mul(512)
}

/// The allocated bytes of every entry beneath `dir`, walked by descriptor
/// without following links; counts at most `budget` entries (decremented)
/// and descends at most [`MAX_MEASURE_DEPTH`] levels: past either, what
/// was counted so far (a lower bound).
pub(crate) fn tree_bytes(dir: BorrowedFd<'_>, budget: &mut usize) -> Result<u64, Errno> {
    let mut total = 0u64;
    walk_tree(dir, MAX_MEASURE_DEPTH, &mut |step| {
        let Step::Entry(st, _, _) = step else {
            return Walk::Continue;
        };
        if *budget == 0 {
            return Walk::Stop;
        }
        *budget -= 1;
        if let Some(st) = st {
            total = total.saturating_add(allocated_bytes(st));
        }
        Walk::Continue
    })?;
    Ok(total)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn components() {
        for ok in ["a", ".owner", "run_x", "a.b"] {
            assert!(is_component(ok), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "/", "a\0"] {
            assert!(!is_component(bad), "{bad:?}");
        }
    }

    /// Both the `openat2` path and the fallback refuse symlinks (to
    /// directories and files, absolute and relative) and open real entries.
    #[test]
    fn both_open_paths_refuse_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir(base.join("real")).unwrap();
        std::fs::write(base.join("file"), b"x").unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("abs")).unwrap();
        std::os::unix::fs::symlink("real", base.join("rel")).unwrap();
        std::os::unix::fs::symlink("file", base.join("flink")).unwrap();
        let dir = std::fs::File::open(base).unwrap();
        let dir = dir.as_fd();
        let nofollow = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dflags = nofollow | OFlags::DIRECTORY;
        // ELOOP or ENOTDIR (O_DIRECTORY | O_NOFOLLOW on a link).
        let refused = |e: Option<Errno>| matches!(e, Some(Errno::LOOP | Errno::NOTDIR));
        for link in ["abs", "rel"] {
            assert!(refused(open_dir_beneath(dir, link).err()), "{link}");
            assert!(
                refused(open_fallback(dir, link, dflags, Mode::empty()).err()),
                "{link}"
            );
        }
        assert_eq!(
            open_beneath(dir, "flink", OFlags::RDONLY, Mode::empty()).err(),
            Some(Errno::LOOP)
        );
        assert_eq!(
            open_fallback(dir, "flink", nofollow, Mode::empty()).err(),
            Some(Errno::LOOP)
        );
        assert!(open_dir_beneath(dir, "real").is_ok());
        assert!(open_fallback(dir, "real", dflags, Mode::empty()).is_ok());
        assert_eq!(open_dir_beneath(dir, "../x").err(), Some(Errno::INVAL));
        assert_eq!(open_dir_beneath(dir, "..").err(), Some(Errno::INVAL));
    }

    #[test]
    fn hidden_names_are_hidden_and_random() {
        let a = random_hidden_name("tmp");
        let b = random_hidden_name("tmp");
        assert!(matches!(&a, Ok(s) if s.starts_with(".tmp-") && s.len() == 27));
        assert_ne!(a, b);
    }
}
