//! Concurrency ceilings: a global limit and a per-caller limit, enforced
//! before any work starts, released when the returned permit is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::identity::CallerId;

/// Why a permit was refused. The texts are fixed and server-authored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// The server-wide ceiling is reached.
    #[error("the server is busy: too many concurrent calls, retry later")]
    GlobalBusy,
    /// This caller's ceiling is reached.
    #[error("too many concurrent calls for this caller, retry later")]
    CallerBusy,
}

/// Which concurrency ceiling refused work, as a busy tool error names it
/// ([`ToolError::Busy`](crate::ToolError::Busy)): the tools' own call
/// ceilings ([`LimitError`]) or the sandbox's run ceilings
/// ([`SandboxError::GlobalBusy`](crate::sandbox::SandboxError::GlobalBusy),
/// [`SandboxError::CallerBusy`](crate::sandbox::SandboxError::CallerBusy)).
/// The texts are fixed and server-authored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Ceiling {
    /// The server-wide ceiling of concurrent calls.
    #[error("the server is busy: too many concurrent calls, retry later")]
    ServerCalls,
    /// The per-caller ceiling of concurrent calls of one tool.
    #[error("too many concurrent calls for this caller, retry later")]
    CallerCalls,
    /// The server-wide ceiling of solver runs.
    #[error("the server is running too many solver runs, retry later")]
    ServerRuns,
    /// The per-caller ceiling of solver runs.
    #[error("too many solver runs for this caller at once: wait for one to end, or cancel one")]
    CallerRuns,
}

impl Ceiling {
    /// The stable token in the structured error (`concurrency`).
    pub const fn token(self) -> &'static str {
        match self {
            Self::ServerCalls => "server_calls",
            Self::CallerCalls => "caller_calls",
            Self::ServerRuns => "server_runs",
            Self::CallerRuns => "caller_runs",
        }
    }

    /// Every value [`Ceiling::token`] can take.
    pub const TOKENS: [&'static str; 4] =
        ["server_calls", "caller_calls", "server_runs", "caller_runs"];
}

impl From<LimitError> for Ceiling {
    /// A refusal of the call ceilings.
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::GlobalBusy => Self::ServerCalls,
            LimitError::CallerBusy => Self::CallerCalls,
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_caller: HashMap<CallerId, usize>,
}

/// A global and per-caller concurrency ceiling.
///
/// ```
/// use hardened_mcp::identity::CallerId;
/// use hardened_mcp::concurrency::{ConcurrencyLimiter, LimitError};
///
/// let limiter = ConcurrencyLimiter::new(Some(8), 1);
/// let alice = CallerId::new("alice").unwrap();
/// let first = limiter.try_acquire(&alice).unwrap();
/// assert_eq!(limiter.try_acquire(&alice).unwrap_err(), LimitError::CallerBusy);
/// drop(first);
/// assert!(limiter.try_acquire(&alice).is_ok());
/// ```
#[derive(Debug, Clone)]
pub struct ConcurrencyLimiter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    global: Option<usize>,
    per_caller: usize,
    counts: Mutex<Counts>,
}

/// Proof that a slot is held; the slot is returned when this is dropped.
#[derive(Debug)]
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct Permit {
    inner: Arc<Inner>,
    caller: CallerId,
}

impl ConcurrencyLimiter {
    /// A limiter allowing at most `global` calls in all (`None`: no global
    /// ceiling) and at most `per_caller` calls for any one caller.
    pub fn new(global: Option<usize>, per_caller: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                global,
                per_caller,
                counts: Mutex::new(Counts::default()),
            }),
        }
    }

    /// Takes a slot for `caller`, or says which ceiling is reached.
    pub fn try_acquire(&self, caller: &CallerId) -> Result<Permit, LimitError> {
        let mut counts = self.inner.lock();
        if self.inner.global.is_some_and(|g| counts.total >= g) {
            return Err(LimitError::GlobalBusy);
        }
        let held = counts.per_caller.get(caller).copied().unwrap_or(0);
        if held >= self.inner.per_caller {
            return Err(LimitError::CallerBusy);
        }
        counts.total += 1;
        counts.per_caller.insert(caller.clone(), held + 1);
        Ok(Permit {
            inner: Arc::clone(&self.inner),
            caller: caller.clone(),
        })
    }

    /// Takes a slot for `caller` even above the ceilings: for work that
    /// already exists (a cluster job a restarted server re-attaches to),
    /// which must count so that new work waits for it.
    #[cfg(feature = "slurm")]
    pub(crate) fn acquire_over(&self, caller: &CallerId) -> Permit {
        let mut counts = self.inner.lock();
        counts.total += 1;
        *counts.per_caller.entry(caller.clone()).or_insert(0) += 1;
        Permit {
            inner: Arc::clone(&self.inner),
            caller: caller.clone(),
        }
    }

    /// Slots held right now, in all.
    pub fn in_use(&self) -> usize {
        self.inner.lock().total
    }

    /// Slots held right now by `caller`.
    pub fn in_use_by(&self, caller: &CallerId) -> usize {
        self.inner
            .lock()
            .per_caller
            .get(caller)
            .copied()
            .unwrap_or(0)
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counts stay consistent under panics: every update is a single
        // non-panicking step, so a poisoned lock still holds valid data.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self.inner.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_caller.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.per_caller.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn id(s: &str) -> CallerId {
        CallerId::new(s).unwrap()
    }

    #[test]
    fn per_caller_ceiling_is_independent_between_callers() {
        let l = ConcurrencyLimiter::new(None, 2);
        let a1 = l.try_acquire(&id("a")).unwrap();
        let _a2 = l.try_acquire(&id("a")).unwrap();
        assert_eq!(l.try_acquire(&id("a")).unwrap_err(), LimitError::CallerBusy);
        let _b1 = l.try_acquire(&id("b")).unwrap();
        drop(a1);
        let _a3 = l.try_acquire(&id("a")).unwrap();
        assert_eq!(l.in_use(), 3);
    }

    #[test]
    fn global_ceiling_counts_all_callers() {
        let l = ConcurrencyLimiter::new(Some(2), 5);
        let _a = l.try_acquire(&id("a")).unwrap();
        let _b = l.try_acquire(&id("b")).unwrap();
        assert_eq!(l.try_acquire(&id("c")).unwrap_err(), LimitError::GlobalBusy);
    }

    #[test]
    fn permits_are_all_returned_under_contention() {
        let l = ConcurrencyLimiter::new(Some(64), 3);
        let max_seen = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..2000 {
                        if let Ok(p) = l.try_acquire(&id("x")) {
                            max_seen.fetch_max(
                                l.in_use_by(&id("x")),
                                std::sync::atomic::Ordering::Relaxed,
                            );
                            drop(p);
                        }
                    }
                });
            }
        });
        assert!(max_seen.into_inner() <= 3);
        assert_eq!(l.in_use(), 0);
        assert_eq!(l.in_use_by(&id("x")), 0);
    }
}
