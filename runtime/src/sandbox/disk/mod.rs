//! The disk monitor's measurement: what a run holds beneath its run
//! directory (bytes and entries, walked by descriptor without following
//! links), plus the deleted files its processes hold open (allocated until
//! their last descriptor closes, unseen by any walk). The walk stops once
//! either limit is passed, so a measurement costs at most `max_entries`
//! `fstatat` calls however many files a hostile run made. What cannot be
//! measured is not trusted to be small: over the entries limit are
//! directories deeper than [`MAX_DEPTH`] (a walk holds a descriptor per
//! level), a directory the solver made unreadable, and a process whose
//! descriptors cannot be listed.
//!
//! Around the measurement: the [`monitor()`] loop, and the [`floor`] that
//! follows the entries between walks from what inotify reports.

use std::collections::BTreeSet;
use std::fs::DirEntry;
use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::FileType;
use rustix::io::Errno;

use crate::runs::{Step, Walk, allocated_bytes, walk_tree};

mod floor;
mod monitor;

use floor::Floor;
pub(crate) use monitor::{Over, monitor};

/// Directory nesting the walk follows; a deeper directory is a violation.
pub(crate) const MAX_DEPTH: usize = 64;

/// Descriptors looked at per process for deleted open files (the run's
/// `RLIMIT_NOFILE` bounds what a process can hold anyway).
const MAX_FDS_PER_PROCESS: usize = 4096;

/// What one measurement found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// Allocated bytes (`st_blocks × 512`): a sparse file counts what it holds.
    pub(crate) bytes: u64,
    /// Entries beneath the run directory (files, directories, links…);
    /// where the walk stopped on the [`Floor`], the floor.
    pub(crate) entries: u64,
    /// A directory deeper than [`MAX_DEPTH`] exists.
    pub(crate) too_deep: bool,
    /// Part of the run (a directory, a process's descriptors) was unreadable.
    pub(crate) unmeasurable: bool,
}

impl Usage {
    /// Whether the run is over its entries limit (or cannot be measured).
    pub(crate) fn over_entries(&self, max_entries: u64) -> bool {
        self.entries > max_entries || self.too_deep || self.unmeasurable
    }

    /// Whether the run is over its bytes limit.
    pub(crate) fn over_bytes(&self, max_bytes: u64) -> bool {
        self.bytes > max_bytes
    }

    /// The first of `(max_bytes, max_entries)` this usage is over, entries first.
    pub(crate) fn over(&self, (max_bytes, max_entries): (u64, u64)) -> Option<Over> {
        if self.over_entries(max_entries) {
            Some(Over::Entries(self.entries))
        } else if self.over_bytes(max_bytes) {
            Some(Over::Bytes(self.bytes))
        } else {
            None
        }
    }
}

/// Measures what an ended run left in `dir` against `(max_bytes,
/// max_entries)`: the monitor's first look comes a quarter interval in, so
/// a run shorter than that is judged here. No process of the run is left to
/// hold a deleted file open; the walk alone counts.
pub(crate) fn over_at_end(dir: BorrowedFd<'_>, limits: (u64, u64)) -> Result<Option<Over>, Errno> {
    Ok(measure(dir, &[], limits, None)?.over(limits))
}

/// Entries a walk counts between two looks at the [`Floor`].
const FLOOR_EVERY: u64 = 256;

/// Measures the run directory `dir` and the deleted files on its file
/// system that `pids` hold open, stopping once over `max_bytes` or
/// `max_entries`. With a `floor`, the walk watches each directory it lists
/// and stops too when the floor passes the entries limit (`entries` says).
pub(crate) fn measure(
    dir: BorrowedFd<'_>,
    pids: &[i32],
    (max_bytes, max_entries): (u64, u64),
    mut floor: Option<&mut Floor>,
) -> Result<Usage, Errno> {
    let dev = rustix::fs::fstat(dir)?.st_dev;
    let mut usage = Usage::default();
    let walked = walk_tree(dir, MAX_DEPTH - 1, &mut |step| {
        if let (Step::Enter(d), Some(f)) = (step, floor.as_deref_mut()) {
            f.watch(d);
        }
        let Step::Entry(st, kind, depth) = step else {
            return Walk::Continue;
        };
        usage.entries += 1;
        usage.bytes = usage.bytes.saturating_add(st.map_or(0, allocated_bytes));
        // A directory at the walk's last level is too deep: flagged, not walked.
        usage.too_deep |= depth + 1 >= MAX_DEPTH && kind == FileType::Directory;
        if let Some(f) = floor.as_deref_mut()
            && usage.entries.is_multiple_of(FLOOR_EVERY)
        {
            f.read();
            if let Some(held) = f.get().filter(|&n| n > max_entries) {
                usage.entries = held;
            }
        }
        if usage.over_entries(max_entries) || usage.over_bytes(max_bytes) {
            Walk::Stop
        } else {
            Walk::Continue
        }
    });
    if let Err(e) = walked {
        tracing::warn!(error = %e, "disk monitor: part of the run directory cannot be read");
        usage.unmeasurable = true;
    }
    if !usage.over_entries(max_entries) && !usage.over_bytes(max_bytes) {
        match deleted_open_bytes(pids, dev) {
            Some(b) => usage.bytes = usage.bytes.saturating_add(b),
            None => usage.unmeasurable = true,
        }
    }
    Ok(usage)
}

/// Bytes of the deleted regular files on device `dev` open in any task of
/// `pids` (a thread may have its own descriptor table), each counted once.
/// A gone process or task adds nothing; one that cannot be listed: `None`.
fn deleted_open_bytes(pids: &[i32], dev: u64) -> Option<u64> {
    let mut seen = BTreeSet::new();
    let mut total = 0u64;
    for pid in pids {
        let tasks = entries(format!("/proc/{pid}/task")).inspect_err(
            |e| tracing::warn!(error = %e, "disk monitor: a run process's tasks cannot be listed"),
        );
        for task in tasks.ok()? {
            let fds = entries(task.path().join("fd")).inspect_err(|e| {
                tracing::warn!(error = %e, "disk monitor: a run process's descriptors cannot be listed")
            });
            for fd in fds.ok()?.take(MAX_FDS_PER_PROCESS) {
                // Follows the descriptor's link to the open file itself.
                if let Ok(st) = rustix::fs::stat(fd.path())
                    && st.st_nlink == 0
                    && st.st_dev == dev
                    && FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                    && seen.insert(st.st_ino)
                {
                    total = total.saturating_add(allocated_bytes(&st));
                }
            }
        }
    }
    Some(total)
}

/// The entries of the `/proc` directory `dir`; none when its process is gone.
fn entries(dir: impl AsRef<Path>) -> std::io::Result<impl Iterator<Item = DirEntry>> {
    let listed = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        listed => Some(listed?),
    };
    Ok(listed.into_iter().flatten().filter_map(Result::ok))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rustix::fs::{Mode, OFlags};
    use std::io::Write;
    use std::os::fd::AsFd;

    fn open(p: &std::path::Path) -> std::os::fd::OwnedFd {
        rustix::fs::open(p, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap()
    }

    /// Measures `d` without limits.
    fn unlimited(d: &std::os::fd::OwnedFd, pids: &[i32]) -> Usage {
        measure(d.as_fd(), pids, (u64::MAX, u64::MAX), None).unwrap()
    }

    #[test]
    fn counts_entries_and_allocated_bytes_and_stops_past_a_limit() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("a")).unwrap();
        for i in 0..10 {
            std::fs::write(t.path().join("a").join(i.to_string()), vec![1u8; 8192]).unwrap();
        }
        let d = open(t.path());
        let u = unlimited(&d, &[]);
        assert_eq!(u.entries, 11);
        assert!(u.bytes >= 10 * 8192, "{u:?}");
        let u = measure(d.as_fd(), &[], (u64::MAX, 3), None).unwrap();
        assert!(u.entries == 4, "stops at the first entry over: {u:?}");
        let u = measure(d.as_fd(), &[], (4096, u64::MAX), None).unwrap();
        assert!(u.bytes > 4096 && u.entries < 11, "{u:?}");
    }

    #[test]
    fn a_tree_deeper_than_the_walk_is_a_violation() {
        // Control: a tree within the depth is not.
        for (depth, too_deep) in [(MAX_DEPTH + 1, true), (3, false)] {
            let t = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(t.path().join("d/".repeat(depth))).unwrap();
            let u = unlimited(&open(t.path()), &[]);
            assert_eq!(u.too_deep, too_deep, "{depth}: {u:?}");
        }
    }

    #[test]
    fn an_unreadable_directory_is_over_the_limit() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let hidden = t.path().join("hidden");
        std::fs::create_dir(&hidden).unwrap();
        std::fs::write(hidden.join("x"), b"x").unwrap();
        let d = open(t.path());
        // Control: readable, within the limits.
        assert!(!unlimited(&d, &[]).unmeasurable);
        std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o300)).unwrap();
        let unreadable = std::fs::read_dir(&hidden).is_err();
        let u = unlimited(&d, &[]);
        std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Root still reads it; any other user is refused: then the run is over.
        assert_eq!(u.unmeasurable, unreadable, "{u:?}");
    }

    #[test]
    fn deleted_files_held_open_count() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("hidden");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        std::fs::remove_file(&path).unwrap();
        let d = open(t.path());
        let with = unlimited(&d, &[std::process::id() as i32]);
        assert!(!with.unmeasurable);
        assert!(with.bytes >= 1 << 20, "{with:?}");
        // Control: without the process's descriptors, nothing is seen.
        let without = unlimited(&d, &[]);
        assert_eq!(without.bytes, 0);
        drop(f);
    }
}
