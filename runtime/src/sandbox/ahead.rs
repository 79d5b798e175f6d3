//! Kernel objects made ahead of the launches that use them, by a background
//! thread: the network namespaces ([`super::netns`]), the run cgroups
//! ([`super::cgroup`]) and the premade inits ([`super::premade`]). Each object made is handed out once; when none is
//! ready, a launch makes its own, so the pool only ever changes when the
//! work is done, never what a run gets.

use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A pool of ready objects, refilled by a thread of its own up to a
/// target. Dropping the pool stops the thread (waiting for the object it
/// is making, if any) and drops what is ready.
#[derive(Debug)]
pub(crate) struct MadeAhead<T> {
    shared: Arc<Shared<T>>,
    /// Joined on drop, so that nothing the thread was making outlives the
    /// pool.
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared<T> {
    state: Mutex<State<T>>,
    wake: Condvar,
    /// How long the thread waits after the last take before it makes the
    /// next object, while any is still ready (see
    /// [`MadeAhead::start_settled`]).
    settle: Option<Duration>,
}

#[derive(Debug)]
struct State<T> {
    ready: Vec<T>,
    /// The pool's owner is gone: the thread exits.
    closed: bool,
    /// The thread stopped at an error of `make`.
    stopped: bool,
    /// When an object was last taken.
    last_take: Option<Instant>,
}

impl<T: Send + 'static> MadeAhead<T> {
    /// Starts the thread `name`, which keeps `target` objects ready, made
    /// by `make`, beginning with `ready`. The thread stops at `make`'s
    /// first error, which it logs as `what`: launches then make their own.
    /// `Err` when the thread cannot start.
    pub(crate) fn start<F>(
        name: &str,
        what: &'static str,
        target: usize,
        ready: Vec<T>,
        make: F,
    ) -> io::Result<Self>
    where
        F: FnMut() -> io::Result<T> + Send + 'static,
    {
        Self::start_settled(name, what, target, ready, make, None)
    }

    /// As [`MadeAhead::start`], but while an object is still ready the
    /// thread makes the next one only once `settle` has passed since the
    /// last take: making an object costs CPU time, which a launch in
    /// progress on a host of few cores would wait for. When none is ready
    /// it makes one at once (a burst of launches then finds one ready each
    /// time the thread keeps up), then waits for quiet again.
    pub(crate) fn start_settled<F>(
        name: &str,
        what: &'static str,
        target: usize,
        ready: Vec<T>,
        make: F,
        settle: Option<Duration>,
    ) -> io::Result<Self>
    where
        F: FnMut() -> io::Result<T> + Send + 'static,
    {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                ready,
                closed: false,
                stopped: false,
                last_take: None,
            }),
            wake: Condvar::new(),
            settle,
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || worker.refill(what, target, make))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// A ready object, if there is one; wakes the thread to make the next.
    pub(crate) fn take(&self) -> Option<T> {
        let taken = {
            let mut state = self.shared.lock();
            state.last_take = Some(Instant::now());
            state.ready.pop()
        };
        self.shared.wake.notify_one();
        taken
    }

    /// How many objects are ready now.
    pub(crate) fn ready(&self) -> usize {
        self.shared.lock().ready.len()
    }

    /// Whether the thread has stopped at an error: no object will be made
    /// any more.
    pub(crate) fn stopped(&self) -> bool {
        self.shared.lock().stopped
    }

    /// Runs `f` on the ready objects (for the tests).
    #[cfg(test)]
    pub(crate) fn inspect<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(&self.shared.lock().ready)
    }
}

impl<T> Drop for MadeAhead<T> {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        // The thread ends at its next look at the state: at once when it
        // waits, after the one object it is making otherwise (which it
        // drops).
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("a made-ahead pool's thread panicked");
        }
        let ready = std::mem::take(&mut self.shared.lock().ready);
        // Dropped outside the lock (a run cgroup removes its directories).
        drop(ready);
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refill<F>(&self, what: &'static str, target: usize, mut make: F)
    where
        F: FnMut() -> io::Result<T>,
    {
        loop {
            {
                let mut state = self.lock();
                loop {
                    if state.closed {
                        return;
                    }
                    if state.ready.len() >= target {
                        state = self
                            .wake
                            .wait(state)
                            .unwrap_or_else(PoisonError::into_inner);
                        continue;
                    }
                    let quiet_for = match (self.settle, state.last_take) {
                        (Some(settle), Some(at)) if !state.ready.is_empty() => {
                            settle.checked_sub(at.elapsed())
                        }
                        _ => None,
                    };
                    match quiet_for {
                        Some(wait) if !wait.is_zero() => {
                            state = self
                                .wake
                                .wait_timeout(state, wait)
                                .unwrap_or_else(PoisonError::into_inner)
                                .0;
                        }
                        _ => break,
                    }
                }
            }
            match make() {
                Ok(made) => self.lock().ready.push(made),
                Err(e) => {
                    tracing::warn!(error = %e, pool = what, "pool stopped; launches make their own");
                    self.lock().stopped = true;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    fn wait_for(pool: &MadeAhead<usize>, n: usize) {
        let t0 = Instant::now();
        while pool.ready() < n && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn each_object_is_handed_out_once_and_the_pool_refills_to_its_target() {
        let next = Arc::new(AtomicUsize::new(0));
        let n = Arc::clone(&next);
        let pool = MadeAhead::start("test-pool", "test", 3, Vec::new(), move || {
            Ok(n.fetch_add(1, Ordering::SeqCst))
        })
        .unwrap();
        wait_for(&pool, 3);
        assert_eq!(pool.ready(), 3);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..20 {
            if let Some(v) = pool.take() {
                assert!(seen.insert(v), "{v} handed out twice");
            }
            wait_for(&pool, 3);
        }
        assert_eq!(seen.len(), 20);
        // Never more than the target made ahead.
        assert_eq!(next.load(Ordering::SeqCst), 23);
    }

    #[test]
    fn a_settled_pool_waits_for_quiet_while_it_has_some_and_not_when_empty() {
        let next = Arc::new(AtomicUsize::new(0));
        let n = Arc::clone(&next);
        let settle = Duration::from_secs(30);
        let pool = MadeAhead::start_settled(
            "test-pool",
            "test",
            2,
            Vec::new(),
            move || Ok(n.fetch_add(1, Ordering::SeqCst)),
            Some(settle),
        )
        .unwrap();
        // Nothing taken yet: made at once.
        wait_for(&pool, 2);
        assert_eq!(pool.ready(), 2);
        // One taken, one left: the next waits for 30 s of quiet.
        assert!(pool.take().is_some());
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pool.ready(), 1, "refilled within the settle time");
        assert_eq!(next.load(Ordering::SeqCst), 2);
        // None left: one made at once, the settle time notwithstanding;
        // with that one ready, the next waits for quiet again.
        assert!(pool.take().is_some());
        wait_for(&pool, 1);
        assert_eq!(pool.ready(), 1, "an empty pool waited for quiet");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pool.ready(), 1, "refilled past one within the settle time");
        assert_eq!(next.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_failure_stops_the_thread_and_takes_then_come_back_empty() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let pool = MadeAhead::start("test-pool", "test", 2, vec![7], move || {
            c.fetch_add(1, Ordering::SeqCst);
            Err::<usize, _>(io::Error::other("refused"))
        })
        .unwrap();
        assert!(!pool.stopped());
        assert_eq!(pool.take(), Some(7));
        let t0 = Instant::now();
        while calls.load(Ordering::SeqCst) == 0 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(pool.take(), None);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "the thread went on after a failure"
        );
        assert!(pool.stopped(), "a stopped pool does not say so");
    }
}
