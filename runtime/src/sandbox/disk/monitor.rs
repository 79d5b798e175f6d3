//! The disk monitor's loop: one thread per run, asleep in `poll(2)` on the
//! run's inotify instance and a stop pipe between two measurements.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use super::floor::Floor;
use super::pace::Pace;
use super::{Look, measure};

/// A limit the disk monitor found passed, with what the run held then
/// (the caller logs it once the run is stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// [`Limits::disk_files`](crate::sandbox::Limits::disk_files).
    Entries(u64),
    /// [`Limits::disk_bytes`](crate::sandbox::Limits::disk_bytes).
    Bytes(u64),
}

/// Events are read at most this often while the floor is below the last
/// tenth of the limit: a run making files fast wakes the monitor once per
/// batch, not once per file.
const EVENT_GAP: Duration = Duration::from_millis(1);

/// Measures `dir` (and the deleted files the processes `members` lists
/// hold open) against `(max_bytes, max_entries)` at the [`Pace`] it sets;
/// in between, follows the run's entries with a [`Floor`] and stops the run
/// as soon as the floor is over the limit, and walks again soon when a
/// directory was made (to watch it). Without a floor, counts again when
/// the entries reported made used up half of what was left. Returns the
/// limit passed, or `None` once `stop` hangs up (the run ended).
pub(crate) fn monitor(
    dir: BorrowedFd<'_>,
    members: &dyn Fn() -> Vec<i32>,
    limits: (u64, u64),
    interval: Duration,
    stop: BorrowedFd<'_>,
) -> Option<Over> {
    let mut pace = Pace::new(interval);
    let mut floor = Floor::new();
    // The first walk at once: while the run directory holds little, the
    // floor it starts from misses little of what is made meanwhile.
    let (mut wait, mut look) = (Duration::ZERO, Look::Stat);
    let mut soon = limits.1 / 2;
    loop {
        let hurry = pace.may_hurry().then_some(soon);
        match sleep(stop, floor.as_mut(), wait, limits.1, hurry) {
            Wake::Stop => return None,
            Wake::Over => {
                return Some(Over::Entries(
                    floor.as_ref().and_then(Floor::get).unwrap_or(limits.1),
                ));
            }
            Wake::Made => look = Look::Names,
            Wake::Time => {}
        }
        if let Some(f) = floor.as_mut() {
            f.begin_walk();
        }
        let t0 = Instant::now();
        let measured = measure(dir, &members(), limits, look, floor.as_mut());
        let took = t0.elapsed();
        match measured {
            Ok(u) if u.over_entries(limits.1) => return Some(Over::Entries(u.entries)),
            Ok(u) if u.over_bytes(limits.0) => {
                return Some(Over::Bytes(u.bytes.unwrap_or_default()));
            }
            Ok(u) => {
                if let Some(f) = floor.as_mut() {
                    f.end_walk(u.entries);
                }
                let followed = floor.as_ref().and_then(Floor::get).is_some();
                (wait, look) = pace.next(t0, took, u, limits, followed);
                soon = limits.1.saturating_sub(u.entries) / 2;
            }
            Err(e) => {
                tracing::error!(error = %e, "disk monitor: measurement failed");
                (wait, look) = (interval.max(took.saturating_mul(4)), Look::Stat);
            }
        }
    }
}

/// Why [`sleep`] returned.
#[derive(Debug, PartialEq, Eq)]
enum Wake {
    /// `stop` hung up.
    Stop,
    /// The floor is over the entries limit.
    Over,
    /// A directory was made, or (without a floor) as many entries as the
    /// monitor wanted to count again at.
    Made,
    /// The wait is over.
    Time,
}

/// Waits `wait`, or until `stop` hangs up, or until `floor` passes
/// `max_entries`, or (with `hurry`: the entries made that call for a count)
/// until the run made a directory or that many entries without a floor.
fn sleep(
    stop: BorrowedFd<'_>,
    mut floor: Option<&mut Floor>,
    wait: Duration,
    max_entries: u64,
    hurry: Option<u64>,
) -> Wake {
    let until = Instant::now() + wait;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let timeout = Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        });
        let (polled, stopped) = {
            let mut set = vec![PollFd::new(&stop, PollFlags::IN)];
            if let Some(f) = floor.as_deref() {
                set.push(PollFd::new(f, PollFlags::IN));
            }
            let polled = rustix::event::poll(&mut set, Some(&timeout));
            (polled, !set[0].revents().is_empty())
        };
        match polled {
            _ if stopped => return Wake::Stop,
            Ok(0) => return Wake::Time,
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => {
                tracing::error!(error = %e, "disk monitor: poll failed");
                return Wake::Time;
            }
        }
        let Some(f) = floor.as_deref_mut() else {
            continue;
        };
        f.read();
        if f.get().is_some_and(|n| n > max_entries) {
            return Wake::Over;
        }
        let (made, dirs_made) = f.made();
        let count_now = match (hurry, f.get()) {
            (None, _) => false,
            (Some(_), Some(_)) => dirs_made > 0,
            (Some(soon), None) => made >= soon.max(1),
        };
        if count_now {
            return Wake::Made;
        }
        // Within the last tenth, every event counts.
        if f.get().is_none_or(|n| n < max_entries - max_entries / 10) {
            std::thread::sleep(EVENT_GAP.min(left));
        }
    }
}
