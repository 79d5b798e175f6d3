//! A floor under a run's entries between two walks, from what inotify
//! reports of the directories the last walk listed: `IN_CREATE` (always a
//! new name) adds one, `IN_DELETE` and `IN_MOVED_FROM` take one,
//! `IN_MOVED_TO` adds nothing (it may have replaced an entry). A walk's
//! count less what was removed meanwhile is a floor too; the higher is kept.
//!
//! The floor is never above what the run holds while every directory a walk
//! counted in is watched: one unwatched (past [`MAX_WATCHES`], or refused)
//! ends it for the rest of the run, a lost event (a full queue) until the
//! next walk. A directory made since the last walk is watched from the next
//! one on; what is made in it until then is missing: the floor stays a floor.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// Directories one run watches at most (inotify watches are shared by the user's processes).
const MAX_WATCHES: i32 = 1024;

/// What inotify says of one run's entries.
pub(crate) struct Floor {
    inotify: OwnedFd,
    buf: Vec<MaybeUninit<u8>>,
    /// The run holds at least this many entries (`None`: unknown).
    floor: Option<u64>,
    /// Since the current walk began: entries removed, whether an event
    /// was lost, whether a directory was made.
    removed: u64,
    lost: bool,
    dirs_made: bool,
    /// A directory went unwatched: removals may go unseen.
    blind: bool,
}

impl Floor {
    /// An inotify instance for one run; `None` where the host refuses one
    /// (its per-user limit): the monitor then keeps its pace.
    pub(crate) fn new() -> Option<Self> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
            .inspect_err(|e| tracing::debug!(error = %e, "disk monitor: no inotify instance"))
            .ok()?;
        Some(Self {
            inotify: fd,
            buf: vec![MaybeUninit::uninit(); 4096],
            floor: None,
            removed: 0,
            lost: false,
            dirs_made: false,
            blind: false,
        })
    }

    /// The floor, as of the last [`Floor::read`].
    pub(crate) fn get(&self) -> Option<u64> {
        self.floor
    }

    /// Whether a directory was made (or moved in) since the walk began: one
    /// the floor does not follow yet.
    pub(crate) fn dirs_made(&self) -> bool {
        self.dirs_made
    }

    /// Watches `dir` for entries made and removed in it; past
    /// [`MAX_WATCHES`], or when the host refuses, the floor ends.
    pub(crate) fn watch(&mut self, dir: BorrowedFd<'_>) {
        if self.blind {
            return;
        }
        let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
        let mask = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::ONLYDIR;
        match inotify::add_watch(&self.inotify, path, mask) {
            Ok(wd) if wd < MAX_WATCHES => return,
            Ok(_) => tracing::debug!("disk monitor: too many directories to follow"),
            Err(e) => tracing::debug!(error = %e, "disk monitor: directory not watched"),
        }
        self.blind = true;
        self.floor = None;
    }

    /// A walk begins (what was reported so far counts).
    pub(crate) fn begin_walk(&mut self) {
        self.read();
        (self.removed, self.lost, self.dirs_made) = (0, false, false);
    }

    /// A walk that began with [`Floor::begin_walk`] counted `entries`.
    pub(crate) fn end_walk(&mut self, entries: u64) {
        self.read();
        if !self.blind && !self.lost {
            let counted = entries.saturating_sub(self.removed);
            self.floor = Some(self.floor.map_or(counted, |f| f.max(counted)));
        }
    }

    /// Applies the events queued now.
    pub(crate) fn read(&mut self) {
        let mut events = inotify::Reader::new(&self.inotify, &mut self.buf);
        while let Ok(e) = events.next() {
            let flags = e.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                self.lost = true;
                self.floor = None;
            } else if flags.contains(ReadFlags::CREATE) {
                self.floor = self.floor.map(|f| f.saturating_add(1));
                self.dirs_made |= flags.contains(ReadFlags::ISDIR);
            } else if flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
                self.floor = self.floor.map(|f| f.saturating_sub(1));
                self.removed = self.removed.saturating_add(1);
            } else if flags.contains(ReadFlags::MOVED_TO | ReadFlags::ISDIR) {
                self.dirs_made = true;
            }
        }
    }
}

impl AsFd for Floor {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inotify.as_fd()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    fn watched(dir: &std::path::Path) -> (Floor, fs::File) {
        let d = fs::File::open(dir).unwrap();
        let mut f = Floor::new().unwrap();
        f.begin_walk();
        f.watch(d.as_fd());
        (f, d)
    }

    #[test]
    fn follows_what_is_made_and_removed_after_a_walk() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("a"), b"").unwrap();
        let (mut f, _d) = watched(t.path());
        f.end_walk(1);
        assert_eq!(f.get(), Some(1));
        for n in 0..5 {
            fs::write(t.path().join(format!("n{n}")), b"").unwrap();
        }
        fs::create_dir(t.path().join("sub")).unwrap();
        fs::remove_file(t.path().join("a")).unwrap();
        f.read();
        assert_eq!(f.get(), Some(6), "1 + 5 files + 1 directory - 1");
        assert!(f.dirs_made());
        // Writing an existing file again makes nothing.
        fs::write(t.path().join("n0"), b"again").unwrap();
        f.read();
        assert_eq!(f.get(), Some(6));
    }

    #[test]
    fn a_rename_over_an_entry_never_raises_the_floor_above_the_count() {
        // The usual atomic update, repeated: a temporary file renamed over
        // the result. The directory holds one entry.
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("result"), b"0").unwrap();
        let (mut f, _d) = watched(t.path());
        f.end_walk(1);
        for n in 0..50 {
            fs::write(t.path().join("tmp"), n.to_string()).unwrap();
            fs::rename(t.path().join("tmp"), t.path().join("result")).unwrap();
        }
        f.read();
        let held = fs::read_dir(t.path()).unwrap().count() as u64;
        assert_eq!(held, 1);
        assert!(f.get().unwrap() <= held, "floor {:?} above {held}", f.get());
    }

    #[test]
    fn a_walk_raises_the_floor_to_its_count_less_what_it_saw_removed() {
        let t = tempfile::tempdir().unwrap();
        let (mut f, _d) = watched(t.path());
        fs::write(t.path().join("gone"), b"").unwrap();
        fs::remove_file(t.path().join("gone")).unwrap();
        // The walk counted 10; one entry was removed while it ran.
        f.end_walk(10);
        assert_eq!(f.get(), Some(9));
        // A later count raises it.
        f.begin_walk();
        f.end_walk(12);
        assert_eq!(f.get(), Some(12));
    }
}
