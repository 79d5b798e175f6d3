//! Kernel objects (network namespaces, [`super::netns`]; run cgroups,
//! [`super::cgroup`]) made ahead of the launches by a background thread.
//! Each is handed out once; when none is ready a launch makes its own, so a
//! pool changes when the work is done, never what a run gets.

use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// A pool of ready objects, refilled by a thread of its own up to a
/// target. Dropping the pool stops and joins the thread (after the object
/// it is making, if any) and drops what is ready.
#[derive(Debug)]
pub(crate) struct MadeAhead<T> {
    shared: Arc<Shared<T>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared<T> {
    state: Mutex<State<T>>,
    wake: Condvar,
}

#[derive(Debug)]
struct State<T> {
    ready: Vec<T>,
    /// The pool's owner is gone: the thread exits.
    closed: bool,
}

impl<T: Send + 'static> MadeAhead<T> {
    /// Starts the thread `name`, which keeps `target` objects made by `make`
    /// ready, beginning with `ready`. It stops at `make`'s first error
    /// (logged as `what`). `Err` when the thread cannot start.
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
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                ready,
                closed: false,
            }),
            wake: Condvar::new(),
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
        let taken = self.shared.lock().ready.pop();
        self.shared.wake.notify_one();
        taken
    }

    /// How many objects are ready now.
    #[cfg(test)]
    pub(crate) fn ready(&self) -> usize {
        self.shared.lock().ready.len()
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
        let full = |s: &mut State<T>| !s.closed && s.ready.len() >= target;
        loop {
            // The lock is released before `make`.
            let closed = self
                .wake
                .wait_while(self.lock(), full)
                .unwrap_or_else(PoisonError::into_inner)
                .closed;
            if closed {
                return;
            }
            match make() {
                Ok(made) => self.lock().ready.push(made),
                Err(e) => {
                    tracing::warn!(error = %e, pool = what, "pool stopped; launches make their own");
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// Waits until `done`, 10 s at most.
    pub(crate) fn wait_until(done: impl Fn() -> bool) {
        let t0 = Instant::now();
        while !done() && t0.elapsed() < Duration::from_secs(10) {
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
        wait_until(|| pool.ready() >= 3);
        assert_eq!(pool.ready(), 3);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..20 {
            if let Some(v) = pool.take() {
                assert!(seen.insert(v), "{v} handed out twice");
            }
            wait_until(|| pool.ready() >= 3);
        }
        assert_eq!(seen.len(), 20);
        // Never more than the target made ahead.
        assert_eq!(next.load(Ordering::SeqCst), 23);
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
        assert_eq!(pool.take(), Some(7));
        wait_until(|| calls.load(Ordering::SeqCst) > 0);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(pool.take(), None);
        let calls = calls.load(Ordering::SeqCst);
        assert_eq!(calls, 1, "the thread went on after a failure");
    }
}
