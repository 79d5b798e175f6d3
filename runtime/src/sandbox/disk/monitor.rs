//! The disk monitor's loop: one thread per run, asleep in `poll(2)` on the
//! run's inotify instance and a stop pipe between measurements.

use std::ops::ControlFlow::{self, Break, Continue};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use super::floor::Floor;
use super::measure;

/// A limit the disk monitor found passed, with what the run held (the caller logs it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// [`Limits::disk_files`](crate::sandbox::Limits::disk_files).
    Entries(u64),
    /// [`Limits::disk_bytes`](crate::sandbox::Limits::disk_bytes).
    Bytes(u64),
}

/// Events are read at most this often below the limit's last tenth: a run
/// making files fast wakes the monitor once per batch, not per file.
const EVENT_GAP: Duration = Duration::from_millis(1);

/// Measures `dir` (and the deleted files the processes `members` lists
/// hold open) against `(max_bytes, max_entries)`: a quarter `interval` in, then every
/// `interval` or four times the last measurement's duration, whichever is
/// longer. In between, a [`Floor`] follows the run's entries and stops the
/// run as soon as it passes the limit; a directory made brings the next
/// measurement (which watches it) as early as the four-times rule allows.
/// Returns the limit passed, or `None` once `stop` hangs up (the run ended).
pub(crate) fn monitor(
    dir: BorrowedFd<'_>,
    members: &dyn Fn() -> Vec<i32>,
    limits: (u64, u64),
    interval: Duration,
    stop: BorrowedFd<'_>,
) -> Option<Over> {
    let mut floor = Floor::new();
    // The first walk a quarter interval in: soon enough that the floor it
    // starts misses little, late enough that a run of a few milliseconds
    // (which can write no more than an interval's worth) is not walked.
    let (mut wait, mut rest) = (interval / 4, Duration::ZERO);
    loop {
        if let Break(over) = sleep(stop, floor.as_mut(), wait, rest, limits.1) {
            return over;
        }
        if let Some(f) = floor.as_mut() {
            f.begin_walk();
        }
        let t0 = Instant::now();
        let measured = measure(dir, &members(), limits, floor.as_mut());
        rest = t0.elapsed().saturating_mul(4);
        wait = interval.max(rest);
        match measured {
            Ok(u) => match u.over(limits) {
                Some(over) => return Some(over),
                None => {
                    if let Some(f) = floor.as_mut() {
                        f.end_walk(u.entries);
                    }
                }
            },
            Err(e) => tracing::error!(error = %e, "disk monitor: measurement failed"),
        }
    }
}

/// Waits `wait`, or until `stop` hangs up (`Break(None)`), `floor` passes
/// `max_entries` (`Break` with what the run holds at least), or (after
/// `rest` at least) the run made a directory. `Continue`: time to measure.
fn sleep(
    stop: BorrowedFd<'_>,
    mut floor: Option<&mut Floor>,
    wait: Duration,
    rest: Duration,
    max_entries: u64,
) -> ControlFlow<Option<Over>> {
    let start = Instant::now();
    loop {
        // A directory made is followed from the next walk on: due sooner.
        let due = match floor.as_deref() {
            Some(f) if f.dirs_made() => rest.min(wait),
            _ => wait,
        };
        let left = due.saturating_sub(start.elapsed());
        let timeout = Timespec::try_from(left).unwrap_or_default();
        let (polled, stopped) = {
            let mut set = vec![PollFd::new(&stop, PollFlags::IN)];
            set.extend(floor.as_deref().map(|f| PollFd::new(f, PollFlags::IN)));
            let polled = rustix::event::poll(&mut set, Some(&timeout));
            (polled, !set[0].revents().is_empty())
        };
        match polled {
            _ if stopped => return Break(None),
            Ok(0) => return Continue(()),
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => {
                tracing::error!(error = %e, "disk monitor: poll failed");
                return Continue(());
            }
        }
        let Some(f) = floor.as_deref_mut() else {
            continue;
        };
        f.read();
        match f.get() {
            Some(held) if held > max_entries => return Break(Some(Over::Entries(held))),
            _ if f.dirs_made() && start.elapsed() >= rest => return Continue(()),
            // Within the last tenth, every event counts.
            Some(held) if held >= max_entries - max_entries / 10 => {}
            _ => std::thread::sleep(EVENT_GAP.min(left)),
        }
    }
}
