//! What one caller may hold: sessions bound to it, and open event streams.
//!
//! A session (`Mcp-Session-Id`) belongs to the caller whose request created
//! it; another caller presenting it gets the same `404` as for an unknown
//! session. Each caller may hold at most a configured number of sessions
//! (a new one is refused with a fixed `429` until one is deleted or expires
//! idle, rmcp's 5 minutes) and of open event streams. A session also
//! remembers its protocol era for MCP tasks: one that initialized with
//! 2025-11-25 without the 2026 tasks extension gets the 2025 task shapes.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::identity::CallerId;

const PRUNE_FLOOR: usize = 1024;

/// Which caller owns each live session, and the per-caller ceiling.
pub(super) struct SessionBindings {
    state: Mutex<Bound>,
    prune_at: Mutex<usize>,
    sessions: Arc<LocalSessionManager>,
    max_per_caller: usize,
}

#[derive(Default)]
struct Bound {
    owners: HashMap<String, CallerId>,
    /// Sessions owned plus sessions being created, per caller.
    held: HashMap<CallerId, usize>,
    /// The bound sessions of the 2025-11-25 task era.
    era_2025: HashSet<String>,
}

impl Bound {
    /// Forgets session `id`.
    fn forget(&mut self, id: &str) {
        self.era_2025.remove(id);
        if let Some(caller) = self.owners.remove(id) {
            self.release(&caller);
        }
    }

    fn release(&mut self, caller: &CallerId) {
        if let Some(n) = self.held.get_mut(caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.held.remove(caller);
            }
        }
    }
}

/// A place for one session being created; given back when dropped unless
/// the session was bound to it.
pub(super) struct SessionReservation {
    bindings: Arc<SessionBindings>,
    caller: CallerId,
    used: bool,
}

impl SessionReservation {
    /// Binds the session created with this reservation, of the 2025-11-25
    /// task era when `era_2025`.
    pub(super) async fn bind(mut self, session: String, era_2025: bool) {
        self.used = true;
        let len = {
            let mut st = self.bindings.state();
            if era_2025 {
                st.era_2025.insert(session.clone());
            } else {
                st.era_2025.remove(&session);
            }
            if let Some(previous) = st.owners.insert(session, self.caller.clone()) {
                // The same id twice (never from rmcp): keep the count exact.
                st.release(&previous);
            }
            st.owners.len()
        };
        let due = *self
            .bindings
            .prune_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            <= len;
        if due {
            self.bindings.prune().await;
        }
    }
}

impl Drop for SessionReservation {
    fn drop(&mut self) {
        if !self.used {
            self.bindings.state().release(&self.caller);
        }
    }
}

impl SessionBindings {
    pub(super) fn new(sessions: Arc<LocalSessionManager>, max_per_caller: usize) -> Self {
        Self {
            state: Mutex::new(Bound::default()),
            prune_at: Mutex::new(PRUNE_FLOOR),
            sessions,
            max_per_caller,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Bound> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn owner(&self, session: &str) -> Option<CallerId> {
        self.state().owners.get(session).cloned()
    }

    /// Whether bound session `session` is of the 2025-11-25 task era.
    pub(super) fn is_2025(&self, session: &str) -> bool {
        self.state().era_2025.contains(session)
    }

    pub(super) fn unbind(&self, session: &str) {
        self.state().forget(session);
    }

    /// A place for a new session of `caller`, or `None` at its ceiling
    /// (after forgetting the sessions rmcp no longer has).
    pub(super) async fn reserve(self: &Arc<Self>, caller: &CallerId) -> Option<SessionReservation> {
        for attempt in 0..2 {
            {
                let mut st = self.state();
                let held = st.held.get(caller).copied().unwrap_or(0);
                if held < self.max_per_caller {
                    *st.held.entry(caller.clone()).or_insert(0) += 1;
                    return Some(SessionReservation {
                        bindings: Arc::clone(self),
                        caller: caller.clone(),
                        used: false,
                    });
                }
            }
            if attempt == 0 {
                self.prune().await;
            }
        }
        None
    }

    /// Forgets sessions rmcp no longer has (closed or expired).
    async fn prune(&self) {
        let ids: Vec<String> = self.state().owners.keys().cloned().collect();
        let mut gone = Vec::new();
        for id in ids {
            if !self
                .sessions
                .has_session(&id.clone().into())
                .await
                .unwrap_or(false)
            {
                gone.push(id);
            }
        }
        let mut st = self.state();
        for id in &gone {
            st.forget(id);
        }
        *self.prune_at.lock().unwrap_or_else(PoisonError::into_inner) =
            (st.owners.len() * 2).max(PRUNE_FLOOR);
    }
}

/// Open event streams per caller.
pub(super) struct StreamCounts {
    held: Mutex<HashMap<CallerId, usize>>,
    max_per_caller: usize,
}

/// One open stream's place; given back when the stream's body is dropped.
pub(super) struct StreamSlot {
    counts: Arc<StreamCounts>,
    caller: CallerId,
}

impl StreamCounts {
    pub(super) fn new(max_per_caller: usize) -> Self {
        Self {
            held: Mutex::new(HashMap::new()),
            max_per_caller,
        }
    }

    /// A place for one more open stream of `caller`, or `None` at its
    /// ceiling.
    pub(super) fn open(self: &Arc<Self>, caller: &CallerId) -> Option<StreamSlot> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let n = held.entry(caller.clone()).or_insert(0);
        if *n >= self.max_per_caller {
            return None;
        }
        *n += 1;
        Some(StreamSlot {
            counts: Arc::clone(self),
            caller: caller.clone(),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut held = self
            .counts
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = held.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn caller(name: &str) -> CallerId {
        CallerId::new(name).unwrap()
    }

    #[tokio::test]
    async fn a_caller_holds_at_most_its_sessions_and_unused_places_return() {
        let b = Arc::new(SessionBindings::new(
            Arc::new(LocalSessionManager::default()),
            2,
        ));
        let (alice, bob) = (caller("alice"), caller("bob"));
        let r1 = b.reserve(&alice).await.unwrap();
        let r2 = b.reserve(&alice).await.unwrap();
        assert!(b.reserve(&alice).await.is_none(), "at the ceiling");
        assert!(b.reserve(&bob).await.is_some(), "per caller");
        drop(r2); // the request created no session
        let r3 = b.reserve(&alice).await.unwrap();
        r1.bind("s1".into(), false).await;
        r3.bind("s3".into(), true).await;
        assert_eq!(b.owner("s1"), Some(alice.clone()));
        assert!(b.is_2025("s3") && !b.is_2025("s1"));
        // Bound sessions rmcp does not know are pruned when the ceiling is
        // reached, freeing their places.
        assert!(b.reserve(&alice).await.is_some());
        b.unbind("s3");
        assert_eq!(b.owner("s3"), None);
        assert!(!b.is_2025("s3"), "the era goes with the session");
    }

    #[test]
    fn streams_are_counted_per_caller_until_dropped() {
        let c = Arc::new(StreamCounts::new(1));
        let alice = caller("alice");
        let s = c.open(&alice).unwrap();
        assert!(c.open(&alice).is_none());
        assert!(c.open(&caller("bob")).is_some());
        drop(s);
        assert!(c.open(&alice).is_some());
    }
}
