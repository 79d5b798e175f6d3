//! Resource subscriptions: a client asks to be told when a resource it can
//! read changes (`resources/subscribe` in a 2025-11-25 session, the
//! `resourceSubscriptions` of `subscriptions/listen` in 2026-07-28), and
//! the server tells it with `notifications/resources/updated`, which names
//! the URI only: the client reads the resource to learn what changed.
//!
//! A change is found by reading. Every [`WATCH_INTERVAL`] (or the
//! server's [`Server::watch_interval`](crate::Server::watch_interval)), a
//! watched resource is read for its subscriber exactly as `resources/read`
//! reads it (the same ownership rule, scopes and ceilings), and an answer
//! that differs from the last is announced. So every resource can be
//! watched, whatever its reader, and a subscription never tells a caller
//! more than its own reads would: a resource it cannot read cannot be
//! subscribed to (the unknown-resource answer), and one that stops being
//! readable (a run deleted) is announced once and no longer watched.
//!
//! `resources/subscribe` needs a session (stdio, or streamable HTTP with
//! sessions): a stateless HTTP server refuses it, since nothing could
//! reach the client once the request is answered; `subscriptions/listen`
//! holds its own request open and needs none.
//!
//! A session watches at most [`MAX_WATCHES`] resources; each watch ends
//! with its session, its listen request, or `resources/unsubscribe`. A
//! 2025-11-25 subscription starts from the read that admits it; a listen
//! request's watches from their first read, right after the SDK has
//! acknowledged the request.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use tokio_util::task::AbortOnDropHandle;

use super::resources::ResourceSet;
use crate::identity::CallerId;
use crate::transport::GrantedScopes;

/// Most resources one session (or one listen request) watches.
pub const MAX_WATCHES: usize = 32;
/// How often a watched resource is read, unless the server says otherwise.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(2);
/// The shortest interval a server may set.
pub const MIN_WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// Who reads a watched resource, and how often.
pub(crate) struct Reader<S> {
    pub(crate) set: Arc<ResourceSet<S>>,
    pub(crate) service: Arc<S>,
    pub(crate) caller: CallerId,
    pub(crate) scopes: Option<GrantedScopes>,
    pub(crate) interval: Duration,
}

impl<S> Clone for Reader<S> {
    fn clone(&self) -> Self {
        Self {
            set: Arc::clone(&self.set),
            service: Arc::clone(&self.service),
            caller: self.caller.clone(),
            scopes: self.scopes.clone(),
            interval: self.interval,
        }
    }
}

impl<S: Send + Sync + 'static> Reader<S> {
    /// A digest of what a read of `uri` answers now, or the read's error
    /// (a reader may touch files: off the async threads).
    pub(crate) async fn digest(&self, uri: &str) -> Result<u64, ErrorData> {
        let this = self.clone();
        let uri = uri.to_owned();
        let read = tokio::task::spawn_blocking(move || {
            let result = this
                .set
                .read(&this.service, &this.caller, this.scopes.as_ref(), &uri)?;
            let bytes = serde_json::to_vec(&result.contents)
                .map_err(|_| ErrorData::internal_error("Internal error", None))?;
            // A change detector, not a seal: the answer itself is the
            // caller's to read.
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut hasher);
            Ok(hasher.finish())
        });
        match read.await {
            Ok(digest) => digest,
            Err(_) => Err(ErrorData::internal_error("Internal error", None)),
        }
    }

    /// Watches `uri` from `first` (its digest when subscribed): calls
    /// `announce` on each change, until `announce` says the subscriber is
    /// gone or the resource stops being readable (announced once more).
    pub(crate) fn watch<F, Fut>(self, uri: String, first: u64, announce: F) -> Watch
    where
        F: Fn(String) -> Fut + Send + 'static,
        Fut: Future<Output = bool> + Send,
    {
        let task = tokio::spawn(async move {
            let mut last = first;
            loop {
                tokio::time::sleep(self.interval).await;
                let now = self.digest(&uri).await;
                if now.as_ref().ok() == Some(&last) {
                    continue;
                }
                if !announce(uri.clone()).await {
                    return;
                }
                match now {
                    Ok(digest) => last = digest,
                    Err(_) => {
                        tracing::debug!("a watched resource is no longer readable: watch ended");
                        return;
                    }
                }
            }
        });
        Watch(AbortOnDropHandle::new(task))
    }
}

/// One watched resource; dropping it ends the watch.
#[derive(Debug)]
pub(crate) struct Watch(#[allow(dead_code)] AbortOnDropHandle<()>);

/// The resources one session watches (2025-11-25 `resources/subscribe`).
#[derive(Debug, Default)]
pub(crate) struct Watches(HashMap<String, Watch>);

impl Watches {
    /// Whether `uri` is watched already.
    pub(crate) fn has(&self, uri: &str) -> bool {
        self.0.contains_key(uri)
    }

    /// Whether another watch would pass [`MAX_WATCHES`].
    pub(crate) fn full(&self) -> bool {
        self.0.len() >= MAX_WATCHES
    }

    /// Keeps `watch` for `uri` (replacing an earlier one).
    pub(crate) fn insert(&mut self, uri: String, watch: Watch) {
        self.0.insert(uri, watch);
    }

    /// Ends the watch of `uri`, if any.
    pub(crate) fn remove(&mut self, uri: &str) {
        self.0.remove(uri);
    }
}

/// The refusal of a subscription over [`MAX_WATCHES`].
pub(crate) fn too_many() -> ErrorData {
    ErrorData::invalid_request(
        "too many subscriptions: unsubscribe from a resource first",
        None,
    )
}

/// The refusal of `resources/subscribe` outside a session (a stateless
/// HTTP server): no change could ever be announced.
pub(crate) fn sessionless() -> ErrorData {
    ErrorData::invalid_request(
        "resource subscriptions need a session; without one, use subscriptions/listen",
        None,
    )
}
