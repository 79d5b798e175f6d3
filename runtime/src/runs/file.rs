//! File operations inside one directory descriptor: atomic replace, checked
//! open, bounded read and bounded tail.
//!
//! Shared by [`RunDir`](super::RunDir) and the owner record. Names reaching
//! this file are single components that already passed an allowlist (a
//! [`FileName`](super::FileName)) or are the run root's own fixed names.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileExt as _;

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, Stat};
use rustix::io::Errno;

use super::RunError;
use super::sys::{self, is_plain_file, open_beneath, storage_error};

/// The last lines of a run file, as returned by
/// [`RunDir::tail_lines`](super::RunDir::tail_lines).
///
/// The text is whatever the file held (typically solver output): untrusted
/// data, converted lossily to UTF-8 line by line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tail {
    /// The last lines (at most the requested count), without their `\n`.
    pub lines: Vec<String>,
    /// True when the file holds more than `lines` shows: earlier lines were
    /// left out, or the byte window cut off the beginning.
    pub truncated: bool,
    /// The file's size in bytes when it was read.
    pub total_bytes: u64,
}

/// Writes `bytes` to `name` in `dir` atomically: a fresh hidden temporary
/// file (0600, `O_EXCL`, never following links) is written and fsynced, then
/// renamed over `name`, then the directory is fsynced. On any failure the
/// temporary file is removed and the previous `name` is untouched.
///
/// An existing `name` that is not a plain file of ours (symlink, hard link,
/// directory, foreign owner) is refused rather than replaced.
pub(crate) fn write_atomic_at(
    dir: BorrowedFd<'_>,
    uid: u32,
    name: &str,
    bytes: &[u8],
) -> Result<(), RunError> {
    write_staged(dir, name, bytes, Place::Replace { uid })
}

/// Like [`write_atomic_at`], but never replaces an existing `name`
/// ([`RunError::FileExists`]): the file appears complete or not at all.
pub(crate) fn write_atomic_new_at(
    dir: BorrowedFd<'_>,
    name: &str,
    bytes: &[u8],
) -> Result<(), RunError> {
    write_staged(dir, name, bytes, Place::New)
}

/// How a staged temporary file is moved into place.
#[derive(Clone, Copy)]
enum Place {
    /// Over an existing plain file of `uid`, if any.
    Replace { uid: u32 },
    /// Only if the name is free.
    New,
}

fn write_staged(
    dir: BorrowedFd<'_>,
    name: &str,
    bytes: &[u8],
    place: Place,
) -> Result<(), RunError> {
    let tmp = sys::random_hidden_name("tmp")?;
    let fd = open_beneath(
        dir,
        &tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(|e| storage_error("create temporary file", e))?;
    let staged = fill_and_place(dir, File::from(fd), &tmp, name, bytes, place);
    if staged.is_err() {
        match rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => {
                tracing::error!(
                    errno = e.raw_os_error(),
                    "run root: temporary file left behind"
                );
            }
        }
    }
    staged?;
    rustix::fs::fsync(dir).map_err(|e| storage_error("fsync directory", e))
}

fn fill_and_place(
    dir: BorrowedFd<'_>,
    mut file: File,
    tmp: &str,
    name: &str,
    bytes: &[u8],
    place: Place,
) -> Result<(), RunError> {
    file.write_all(bytes)
        .map_err(|e| sys::io_error("write temporary file", &e))?;
    file.sync_all()
        .map_err(|e| sys::io_error("fsync temporary file", &e))?;
    drop(file);
    let uid = match place {
        Place::Replace { uid } => uid,
        Place::New => {
            return rename_noreplace_file(dir, tmp, name).map_err(|e| match e {
                Errno::EXIST => RunError::FileExists,
                e => storage_error("link into place", e),
            });
        }
    };
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if !is_plain_file(&st, uid) => {
            tracing::warn!("run root: refused to replace a file that is not a plain file");
            return Err(RunError::FileRefused);
        }
        Ok(_) | Err(Errno::NOENT) => {}
        Err(e) => return Err(storage_error("stat target", e)),
    }
    rustix::fs::renameat(dir, tmp, dir, name).map_err(|e| match e {
        Errno::ISDIR | Errno::NOTEMPTY | Errno::NOTDIR | Errno::EXIST => RunError::FileRefused,
        e => storage_error("rename into place", e),
    })
}

/// Renames the file `from` to `to` in `dir` unless `to` exists
/// (`RENAME_NOREPLACE`; `linkat` then `unlinkat` where the file system lacks
/// it).
fn rename_noreplace_file(dir: BorrowedFd<'_>, from: &str, to: &str) -> Result<(), Errno> {
    match rustix::fs::renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS) => {
            rustix::fs::linkat(dir, from, dir, to, AtFlags::empty())?;
            rustix::fs::unlinkat(dir, from, AtFlags::empty())
        }
        other => other,
    }
}

/// Opens `name` in `dir` for reading, if it is a plain file of ours:
/// regular, owned by `uid`, exactly one link, reached without a symlink.
pub(crate) fn open_plain_at(
    dir: BorrowedFd<'_>,
    uid: u32,
    name: &str,
) -> Result<(File, Stat), RunError> {
    let fd =
        open_beneath(dir, name, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty()).map_err(|e| {
            match e {
                Errno::NOENT => RunError::FileNotFound,
                // ELOOP: a symlink; ENXIO: a socket; the rest: not reachable beneath.
                Errno::LOOP | Errno::NXIO | Errno::XDEV | Errno::NOTDIR | Errno::ACCESS => {
                    RunError::FileRefused
                }
                e => storage_error("open run file", e),
            }
        })?;
    let st = rustix::fs::fstat(fd.as_fd()).map_err(|e| storage_error("stat run file", e))?;
    if !is_plain_file(&st, uid) {
        tracing::warn!(
            nlink = st.st_nlink,
            "run root: refused a run file that is not a plain, singly linked file of ours"
        );
        return Err(RunError::FileRefused);
    }
    Ok((File::from(fd), st))
}

fn size_of(st: &Stat) -> u64 {
    u64::try_from(st.st_size).unwrap_or(0)
}

/// Reads all of `name` if it holds at most `max_bytes` bytes; a larger file
/// (including one that grows while being read) is [`RunError::TooLarge`].
pub(crate) fn read_bounded_at(
    dir: BorrowedFd<'_>,
    uid: u32,
    name: &str,
    max_bytes: usize,
) -> Result<Vec<u8>, RunError> {
    let (file, st) = open_plain_at(dir, uid, name)?;
    let size = size_of(&st);
    let max = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    if size > max {
        return Err(RunError::TooLarge);
    }
    let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| sys::io_error("read run file", &e))?;
    if out.len() > max_bytes {
        return Err(RunError::TooLarge);
    }
    Ok(out)
}

/// The last `n` lines of `name`, looking at no more than its last
/// `max_bytes` bytes.
pub(crate) fn tail_at(
    dir: BorrowedFd<'_>,
    uid: u32,
    name: &str,
    n: usize,
    max_bytes: usize,
) -> Result<Tail, RunError> {
    let (file, st) = open_plain_at(dir, uid, name)?;
    let total = size_of(&st);
    let window = u64::try_from(max_bytes).unwrap_or(u64::MAX).min(total);
    let start = total - window;
    let mut buf = vec![0u8; usize::try_from(window).unwrap_or(0)];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], start + filled as u64) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(sys::io_error("read run file", &e)),
        }
    }
    buf.truncate(filled);
    Ok(split_tail(&buf, start > 0, n, total))
}

/// Splits the window `buf` into its last `n` complete lines. When the window
/// starts mid-file its first (partial) line is dropped.
fn split_tail(buf: &[u8], cut_at_start: bool, n: usize, total: u64) -> Tail {
    let mut body = buf;
    let mut truncated = cut_at_start;
    if cut_at_start {
        body = match body.iter().position(|&b| b == b'\n') {
            Some(i) => &body[i + 1..],
            None => &[],
        };
    }
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    let mut lines: Vec<&[u8]> = if body.is_empty() {
        Vec::new()
    } else {
        body.split(|&b| b == b'\n').collect()
    };
    if lines.len() > n {
        lines.drain(..lines.len() - n);
        truncated = true;
    }
    if n == 0 && total > 0 {
        truncated = true;
    }
    Tail {
        lines: lines
            .into_iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect(),
        truncated,
        total_bytes: total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(t: &Tail) -> Vec<&str> {
        t.lines.iter().map(String::as_str).collect()
    }

    #[test]
    fn tail_whole_file() {
        let t = split_tail(b"a\nb\nc\n", false, 10, 6);
        assert_eq!(lines(&t), ["a", "b", "c"]);
        assert!(!t.truncated);
        assert_eq!(t.total_bytes, 6);
    }

    #[test]
    fn tail_last_n_marks_truncated() {
        let t = split_tail(b"a\nb\nc", false, 2, 5);
        assert_eq!(lines(&t), ["b", "c"]);
        assert!(t.truncated);
    }

    #[test]
    fn tail_drops_partial_first_line_of_window() {
        let t = split_tail(b"rtial\nx\ny\n", true, 10, 100);
        assert_eq!(lines(&t), ["x", "y"]);
        assert!(t.truncated);
        let t = split_tail(b"no newline at all", true, 10, 100);
        assert!(t.lines.is_empty() && t.truncated);
    }

    #[test]
    fn tail_empty_and_zero() {
        assert_eq!(split_tail(b"", false, 3, 0), Tail::default());
        let t = split_tail(b"a\n", false, 0, 2);
        assert!(t.lines.is_empty() && t.truncated);
    }

    #[test]
    fn tail_keeps_empty_lines_and_lossy_utf8() {
        let t = split_tail(b"a\n\n\xffb\n", false, 10, 6);
        assert_eq!(lines(&t), ["a", "", "\u{fffd}b"]);
    }
}
