//! Connections: the accept loop, and who may hold a connection.
//!
//! Work done before authentication must not consume what authenticated
//! callers need. Every accepted connection is counted against its peer
//! address, then starts **unauthenticated**, in a small pool of its own. It
//! leaves that pool for the **authenticated** one with its first request
//! that presents valid credentials (any request, when the server
//! authenticates nobody). So:
//!
//! - the accept loop never waits: a peer address over its cap gets a fixed
//!   `503` and the connection is closed at once;
//! - when the unauthenticated pool is full, a new connection evicts the
//!   *oldest* unauthenticated one. A client that sends a valid request
//!   promptly always gets in, however many connections an attacker holds
//!   open without finishing a request: holding a slot longer than the
//!   attacker's own arrival rate allows is impossible;
//! - authenticated connections have the configured ceiling
//!   ([`HttpConfig::max_connections`](super::HttpConfig::max_connections));
//!   a request that would promote one past it gets a fixed `503`.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::Request;
use tokio_util::sync::CancellationToken;

use super::SHUTDOWN_GRACE;

/// The raw reply to a connection refused for its peer address, written
/// best-effort before the connection is closed.
pub(super) const PEER_LIMIT_REPLY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
Content-Type: text/plain; charset=utf-8\r\nContent-Length: 59\r\nConnection: close\r\n\r\n\
Service Unavailable: too many connections from this address";

/// Ceilings of the connection admission.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConnLimits {
    pub header_read_timeout: Duration,
    pub max_authenticated: usize,
    pub max_unauthenticated: usize,
    pub max_per_peer: usize,
}

/// The shared admission state of one server.
#[derive(Debug)]
pub(super) struct Admission {
    limits: ConnLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    per_peer: HashMap<IpAddr, usize>,
    /// Unauthenticated connections, oldest first: (ticket id, eviction).
    unauthenticated: VecDeque<(u64, CancellationToken)>,
    authenticated: usize,
    next_id: u64,
}

/// Why a connection or a promotion was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// The peer address holds its cap of connections.
    PeerLimit,
    /// The authenticated pool is full.
    Busy,
}

/// One admitted connection's place; released when dropped.
#[derive(Debug)]
pub(super) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    peer: IpAddr,
    evicted: CancellationToken,
    promoted: AtomicBool,
}

impl Admission {
    pub(super) fn new(limits: ConnLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a new connection from `peer` as unauthenticated, evicting the
    /// oldest unauthenticated connection when that pool is full.
    pub(super) fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Arc<Ticket>, Refused> {
        let peer = peer.to_canonical();
        let mut st = self.state();
        let held = st.per_peer.get(&peer).copied().unwrap_or(0);
        if held >= self.limits.max_per_peer {
            return Err(Refused::PeerLimit);
        }
        while st.unauthenticated.len() >= self.limits.max_unauthenticated {
            match st.unauthenticated.pop_front() {
                Some((_, evict)) => {
                    evict.cancel();
                    tracing::debug!("evicted the oldest unauthenticated connection");
                }
                None => break,
            }
        }
        st.next_id += 1;
        let id = st.next_id;
        let evicted = CancellationToken::new();
        st.unauthenticated.push_back((id, evicted.clone()));
        *st.per_peer.entry(peer).or_insert(0) += 1;
        drop(st);
        Ok(Arc::new(Ticket {
            admission: Arc::clone(self),
            id,
            peer,
            evicted,
            promoted: AtomicBool::new(false),
        }))
    }

    /// Connections now open: (unauthenticated, authenticated).
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let st = self.state();
        (st.unauthenticated.len(), st.authenticated)
    }
}

impl Ticket {
    /// Moves the connection to the authenticated pool (once); refused when
    /// that pool is full, and then the connection stays where it was.
    pub(super) fn promote(&self) -> Result<(), Refused> {
        if self.promoted.load(Ordering::Acquire) {
            return Ok(());
        }
        let adm = &self.admission;
        let mut st = adm.state();
        if st.authenticated >= adm.limits.max_authenticated {
            return Err(Refused::Busy);
        }
        let Some(at) = st.unauthenticated.iter().position(|(id, _)| *id == self.id) else {
            // Evicted while its request was in flight: its connection is
            // closing; the request itself was authenticated, let it finish.
            return Ok(());
        };
        st.unauthenticated.remove(at);
        st.authenticated += 1;
        self.promoted.store(true, Ordering::Release);
        Ok(())
    }

    /// Cancelled when the connection is evicted from the unauthenticated pool.
    pub(super) fn evicted(&self) -> &CancellationToken {
        &self.evicted
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.admission.state();
        if self.promoted.load(Ordering::Acquire) {
            st.authenticated = st.authenticated.saturating_sub(1);
        } else if let Some(at) = st.unauthenticated.iter().position(|(id, _)| *id == self.id) {
            st.unauthenticated.remove(at);
        }
        if let Some(n) = st.per_peer.get_mut(&self.peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                st.per_peer.remove(&self.peer);
            }
        }
    }
}

/// Accepts and serves HTTP/1.1 connections until `ct` is cancelled, then
/// lets them finish for at most [`SHUTDOWN_GRACE`].
///
/// Served with hyper directly rather than `axum::serve`, which sets no
/// header-read timeout and no connection limit. Each request carries its
/// connection's [`Ticket`] in its extensions, for the promotion.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    ct: CancellationToken,
    limits: ConnLimits,
) -> std::io::Result<()> {
    let admission = Admission::new(limits);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let (stream, peer) = tokio::select! {
            () = ct.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors and the like: back off, keep serving.
                    tracing::warn!(kind = ?e.kind(), "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let ticket = match admission.admit(peer.ip()) {
            Ok(ticket) => ticket,
            Err(_) => {
                tracing::warn!(peer = %peer.ip(), "refused a connection: too many from this address");
                // Best effort, never waiting: the peer is over its cap.
                let _ = stream.try_write(PEER_LIMIT_REPLY);
                continue;
            }
        };
        let tagged = {
            let ticket = Arc::clone(&ticket);
            tower::ServiceExt::map_request(
                router.clone(),
                move |mut req: Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(Arc::clone(&ticket));
                    req
                },
            )
        };
        let service = hyper_util::service::TowerToHyperService::new(tagged);
        let ct = ct.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = ticket.evicted().cancelled() => return,
                () = ct.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "an HTTP connection ended with an error");
            }
        });
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("HTTP connections still open after the shutdown grace period: closed");
        connections.abort_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn limits(unauth: usize, auth: usize, peer: usize) -> ConnLimits {
        ConnLimits {
            header_read_timeout: Duration::from_secs(1),
            max_authenticated: auth,
            max_unauthenticated: unauth,
            max_per_peer: peer,
        }
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn a_full_unauthenticated_pool_evicts_its_oldest() {
        let adm = Admission::new(limits(2, 8, 100));
        let first = adm.admit(A).unwrap();
        let second = adm.admit(A).unwrap();
        assert!(!first.evicted().is_cancelled());
        let third = adm.admit(B).unwrap();
        assert!(first.evicted().is_cancelled(), "the oldest goes");
        assert!(!second.evicted().is_cancelled() && !third.evicted().is_cancelled());
        assert_eq!(adm.counts(), (2, 0));
        // Promoted connections are out of the eviction order.
        second.promote().unwrap();
        let _fourth = adm.admit(B).unwrap();
        let _fifth = adm.admit(B).unwrap();
        assert!(!second.evicted().is_cancelled());
        assert!(third.evicted().is_cancelled());
        assert_eq!(adm.counts(), (2, 1));
    }

    #[test]
    fn the_authenticated_pool_has_its_ceiling_and_tickets_release() {
        let adm = Admission::new(limits(8, 1, 100));
        let one = adm.admit(A).unwrap();
        let two = adm.admit(A).unwrap();
        one.promote().unwrap();
        one.promote().unwrap(); // once only
        assert_eq!(two.promote(), Err(Refused::Busy));
        assert_eq!(adm.counts(), (1, 1));
        drop(one);
        assert_eq!(adm.counts(), (1, 0));
        two.promote().unwrap();
        drop(two);
        assert_eq!(adm.counts(), (0, 0));
    }

    #[test]
    fn each_peer_address_has_its_cap() {
        let adm = Admission::new(limits(100, 100, 2));
        let a1 = adm.admit(A).unwrap();
        let _a2 = adm.admit(A).unwrap();
        assert_eq!(adm.admit(A).unwrap_err(), Refused::PeerLimit);
        // The same address written as IPv4-mapped IPv6 is the same peer.
        let mapped = IpAddr::V6(std::net::Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped());
        assert_eq!(adm.admit(mapped).unwrap_err(), Refused::PeerLimit);
        let _b = adm.admit(B).unwrap();
        drop(a1);
        let _a3 = adm.admit(A).unwrap();
    }
}
