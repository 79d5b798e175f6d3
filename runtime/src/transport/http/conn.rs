//! Connections: the accept loop, and who may hold a connection.
//!
//! Work done before authentication must not consume what authenticated
//! callers need. Every accepted connection is counted against its peer
//! address (over the cap: a fixed `503`, closed at once; the accept loop
//! never waits). Then the server reads the request head itself, for at most
//! the *grace* time:
//!
//! - a connection whose head is complete by then is served at once. It is
//!   cheap whatever it holds: the credentials are checked as soon as the
//!   head is parsed (a bad one gets `401` and the connection closes), and
//!   its body has its own deadline. A client that sends its request
//!   promptly never waits behind anyone;
//! - a connection still short of a complete head is *slow*: it needs a
//!   place in a small pool of its own before it is read further. Slow
//!   connections wait for one first come, first served (at most
//!   [`WAITING_PER_PLACE`] per place wait; more are closed), and while any
//!   wait, the oldest holder is closed once it has held its place for the
//!   grace time. Without anyone waiting nothing is closed early: a slow
//!   client is served as before, up to the header timeout. A head that
//!   completes while its connection waits is served at once.
//!
//! A connection leaves the unauthenticated state with its first request
//! that presents valid credentials (any request, when the server
//! authenticates nobody); authenticated connections have the configured
//! ceiling ([`HttpConfig::max_connections`](super::HttpConfig::max_connections)),
//! and a request that would promote one past it gets a fixed `503`.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use std::pin::Pin;
use std::task::{Context, Poll};

use http::Request;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::SHUTDOWN_GRACE;
use super::proxy::TrustedProxies;
use crate::identity::CallerId;

/// The raw reply to a connection refused before its request is served
/// (its peer address is over its cap, or the line for a slow connection's
/// place is full), written best-effort before the connection is closed.
pub(super) const REFUSED_REPLY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
Content-Type: text/plain; charset=utf-8\r\nContent-Length: 41\r\nConnection: close\r\n\r\n\
Service Unavailable: too many connections";

/// Slow connections that may wait for a place, per place in the pool.
pub(super) const WAITING_PER_PLACE: usize = 8;

/// The most of a request head the server reads before handing the
/// connection to hyper; a longer head takes the slow path.
const MAX_HEAD_READ: usize = 16 * 1024;

/// Ceilings of the connection admission.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConnLimits {
    pub header_read_timeout: Duration,
    pub max_authenticated: usize,
    pub max_authenticated_per_caller: usize,
    pub max_unauthenticated: usize,
    pub max_per_peer: usize,
    pub grace: Duration,
    /// Whether accepted connections set `TCP_NODELAY`.
    pub nodelay: bool,
}

/// The shared admission state of one server.
#[derive(Debug)]
pub(super) struct Admission {
    limits: ConnLimits,
    /// Places in the unauthenticated pool; first come, first served.
    pool: Arc<Semaphore>,
    /// Connections waiting for a place.
    waiting: AtomicUsize,
    /// Wakes the reaper when someone starts waiting.
    wake: Notify,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    per_peer: HashMap<IpAddr, usize>,
    /// Holders of a pool place, oldest first: (ticket id, since, eviction).
    holders: VecDeque<(u64, Instant, CancellationToken)>,
    /// Holders closed by the reaper whose place is not yet given back.
    releasing: usize,
    authenticated: usize,
    /// Authenticated connections per caller (the first caller whose
    /// request promoted the connection).
    per_caller: HashMap<CallerId, usize>,
    next_id: u64,
}

/// Why a connection or a promotion was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// The peer address holds its cap of connections.
    PeerLimit,
    /// The line of connections waiting for a place is full.
    LineFull,
    /// The authenticated pool is full.
    Busy,
    /// The caller holds its share of the authenticated pool.
    CallerLimit,
}

/// Counts one waiting connection while alive (a waiter whose future is
/// dropped stops counting).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One admitted connection's place in the counts; released when dropped.
#[derive(Debug)]
pub(super) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    /// Whom the connection counts for in the per-peer cap: its peer
    /// address, or the client a trusted proxy named in its last request.
    peer: Mutex<IpAddr>,
    /// The connection comes from a trusted proxy.
    proxy: bool,
    evicted: CancellationToken,
    place: Mutex<Option<OwnedSemaphorePermit>>,
    /// Took the slow path (a place in the pool).
    pooled: AtomicBool,
    promoted: AtomicBool,
    /// Whom the connection counts for, once promoted.
    caller: Mutex<Option<CallerId>>,
}

impl Admission {
    pub(super) fn new(limits: ConnLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            pool: Arc::new(Semaphore::new(limits.max_unauthenticated)),
            waiting: AtomicUsize::new(0),
            wake: Notify::new(),
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a new connection from `peer`. A trusted proxy (`proxy`) is
    /// counted without its cap: its requests name the peers they count
    /// for ([`Ticket::attribute`]).
    pub(super) fn admit(
        self: &Arc<Self>,
        peer: IpAddr,
        proxy: bool,
    ) -> Result<Arc<Ticket>, Refused> {
        let peer = peer.to_canonical();
        let mut st = self.state();
        let held = st.per_peer.get(&peer).copied().unwrap_or(0);
        if held >= self.limits.max_per_peer && !proxy {
            return Err(Refused::PeerLimit);
        }
        st.next_id += 1;
        let id = st.next_id;
        *st.per_peer.entry(peer).or_insert(0) += 1;
        drop(st);
        Ok(Arc::new(Ticket {
            admission: Arc::clone(self),
            id,
            peer: Mutex::new(peer),
            proxy,
            evicted: CancellationToken::new(),
            place: Mutex::new(None),
            pooled: AtomicBool::new(false),
            promoted: AtomicBool::new(false),
            caller: Mutex::new(None),
        }))
    }

    /// While connections wait, closes the oldest holder of a place once it
    /// has held it for the grace time (one per waiting connection). Runs
    /// until `ct` is cancelled.
    pub(super) async fn reap(self: Arc<Self>, ct: CancellationToken) {
        loop {
            let next = {
                let mut st = self.state();
                let waiting = self.waiting.load(Ordering::Acquire);
                if waiting <= st.releasing {
                    None
                } else {
                    match st.holders.front() {
                        Some((_, since, _)) if since.elapsed() >= self.limits.grace => {
                            if let Some((_, _, evict)) = st.holders.pop_front() {
                                st.releasing += 1;
                                evict.cancel();
                                tracing::debug!(
                                    "closed the oldest unauthenticated connection: others wait"
                                );
                            }
                            continue;
                        }
                        Some((_, since, _)) => Some(*since + self.limits.grace),
                        // Places are free: the waiters take them.
                        None => None,
                    }
                }
            };
            let woken = self.wake.notified();
            tokio::select! {
                () = ct.cancelled() => return,
                () = woken => {}
                () = async {
                    match next {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
        }
    }

    /// Connections now open: (holding a place, authenticated).
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let st = self.state();
        (
            self.limits.max_unauthenticated - self.pool.available_permits(),
            st.authenticated,
        )
    }
}

impl Ticket {
    /// Waits for a place in the pool of slow connections (first come,
    /// first served); refused when the line is full.
    pub(super) async fn enter(&self) -> Result<(), Refused> {
        let adm = &self.admission;
        let permit = match Arc::clone(&adm.pool).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                let line = adm
                    .limits
                    .max_unauthenticated
                    .saturating_mul(WAITING_PER_PLACE);
                if adm.waiting.fetch_add(1, Ordering::AcqRel) >= line {
                    adm.waiting.fetch_sub(1, Ordering::AcqRel);
                    return Err(Refused::LineFull);
                }
                adm.wake.notify_one();
                let _waiting = Waiting(&adm.waiting);
                match Arc::clone(&adm.pool).acquire_owned().await {
                    Ok(p) => p,
                    // The pool is never closed.
                    Err(_) => return Err(Refused::LineFull),
                }
            }
        };
        self.pooled.store(true, Ordering::Release);
        adm.state()
            .holders
            .push_back((self.id, Instant::now(), self.evicted.clone()));
        *self.place.lock().unwrap_or_else(PoisonError::into_inner) = Some(permit);
        Ok(())
    }

    /// Moves the connection to the authenticated pool (once), counted for
    /// `caller`, giving its unauthenticated place to the next in line;
    /// refused when the authenticated pool is full or `caller` holds its
    /// share of it, and then the connection stays where it was.
    pub(super) fn promote(&self, caller: &CallerId) -> Result<(), Refused> {
        if self.promoted.load(Ordering::Acquire) {
            return Ok(());
        }
        let adm = &self.admission;
        let mut st = adm.state();
        if st.authenticated >= adm.limits.max_authenticated {
            return Err(Refused::Busy);
        }
        let held = st.per_caller.get(caller).copied().unwrap_or(0);
        if held >= adm.limits.max_authenticated_per_caller {
            return Err(Refused::CallerLimit);
        }
        if self.pooled.load(Ordering::Acquire) {
            match st.holders.iter().position(|(id, _, _)| *id == self.id) {
                Some(at) => {
                    st.holders.remove(at);
                }
                // Closed by the reaper while its request was in flight:
                // its connection is closing; the request itself was
                // authenticated, let it finish.
                None => return Ok(()),
            }
        }
        st.authenticated += 1;
        *st.per_caller.entry(caller.clone()).or_insert(0) += 1;
        *self.caller.lock().unwrap_or_else(PoisonError::into_inner) = Some(caller.clone());
        self.promoted.store(true, Ordering::Release);
        drop(st);
        drop(
            self.place
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        Ok(())
    }

    /// The connection comes from a trusted proxy.
    pub(super) fn via_proxy(&self) -> bool {
        self.proxy
    }

    /// Counts the connection for `client` (named by a trusted proxy in a
    /// request on it) in the per-peer cap from now on, instead of whom it
    /// counted for until now; refused when `client` holds its cap, and then
    /// the connection counts as before.
    pub(super) fn attribute(&self, client: IpAddr) -> Result<(), Refused> {
        let client = client.to_canonical();
        let adm = &self.admission;
        let mut st = adm.state();
        let mut peer = self.peer.lock().unwrap_or_else(PoisonError::into_inner);
        if *peer == client {
            return Ok(());
        }
        if st.per_peer.get(&client).copied().unwrap_or(0) >= adm.limits.max_per_peer {
            return Err(Refused::PeerLimit);
        }
        release_peer(&mut st, *peer);
        *st.per_peer.entry(client).or_insert(0) += 1;
        *peer = client;
        Ok(())
    }

    /// Cancelled when the reaper closes the connection.
    pub(super) fn evicted(&self) -> &CancellationToken {
        &self.evicted
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // The place (if held) goes back to the pool first.
        drop(
            self.place
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let caller = self
            .caller
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut st = self.admission.state();
        if self.promoted.load(Ordering::Acquire) {
            st.authenticated = st.authenticated.saturating_sub(1);
            if let Some(c) = caller
                && let Some(n) = st.per_caller.get_mut(&c)
            {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    st.per_caller.remove(&c);
                }
            }
        } else if let Some(at) = st.holders.iter().position(|(id, _, _)| *id == self.id) {
            st.holders.remove(at);
        } else if self.evicted.is_cancelled() {
            st.releasing = st.releasing.saturating_sub(1);
        }
        let peer = *self.peer.get_mut().unwrap_or_else(PoisonError::into_inner);
        release_peer(&mut st, peer);
    }
}

fn release_peer(st: &mut State, peer: IpAddr) {
    if let Some(n) = st.per_peer.get_mut(&peer) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            st.per_peer.remove(&peer);
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
    proxies: Option<Arc<TrustedProxies>>,
) -> std::io::Result<()> {
    let admission = Admission::new(limits);
    let reaper = tokio::spawn(Arc::clone(&admission).reap(ct.clone()));
    let floor = tokio::spawn(timer_floor(ct.clone()));
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
        // Without it, the last small write of an answer (an event stream's
        // closing chunk) waits for the client's delayed acknowledgement:
        // about 40 ms per call on a reused connection.
        if limits.nodelay
            && let Err(e) = stream.set_nodelay(true)
        {
            tracing::debug!(kind = ?e.kind(), "could not set TCP_NODELAY on a connection");
        }
        let proxy = proxies.as_ref().is_some_and(|p| p.is_trusted(peer.ip()));
        let ticket = match admission.admit(peer.ip(), proxy) {
            Ok(ticket) => ticket,
            Err(refused) => {
                tracing::warn!(peer = %peer.ip(), why = ?refused, "refused a connection before reading it");
                // Best effort, never waiting.
                let _ = stream.try_write(REFUSED_REPLY);
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
            let Some(io) = admit_head(stream, &ticket, limits.grace, &ct).await else {
                return;
            };
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
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
    reaper.abort();
    floor.abort();
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

/// How far ahead [`timer_floor`] keeps a timer: below every per-request
/// timeout's default (10 s and more).
const TIMER_FLOOR: Duration = Duration::from_secs(1);

/// Keeps one timer of the runtime always due within [`TIMER_FLOOR`], until
/// `ct` is cancelled.
///
/// Every request sets timers: hyper's header read (while a kept-alive
/// connection waits for its next request), the body and the request
/// timeouts. Tokio wakes its timer driver (an `eventfd` write, and a
/// parked worker woken) whenever a timer is set earlier than the driver's
/// next planned wake, which is never when no other timer is pending: on a
/// lightly loaded server, each request paid one or two such wake-ups. With
/// this timer pending the planned wake is at most a second away, and the
/// requests' timers, seconds away, are set without waking anyone; the cost
/// is one wake-up a second.
async fn timer_floor(ct: CancellationToken) {
    let mut tick = tokio::time::interval(TIMER_FLOOR);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = ct.cancelled() => return,
            _ = tick.tick() => {}
        }
    }
}

/// Reads the request head for up to `grace`. A complete head is served at
/// once; otherwise the connection waits for a place in the pool of slow
/// connections, still reading: a head that completes meanwhile is served
/// at once. `None`: the peer left, the line was full, or the server stops.
async fn admit_head(
    mut stream: TcpStream,
    ticket: &Ticket,
    grace: Duration,
    ct: &CancellationToken,
) -> Option<Prefixed<TcpStream>> {
    let mut head = Vec::new();
    let deadline = Instant::now() + grace;
    match read_head(&mut stream, &mut head, Some(deadline)).await {
        Head::Complete => return Some(Prefixed::new(head, stream)),
        Head::Closed => return None,
        Head::Incomplete => {}
    }
    let entered = tokio::select! {
        entered = ticket.enter() => entered,
        read = read_head(&mut stream, &mut head, None) => match read {
            Head::Complete => return Some(Prefixed::new(head, stream)),
            // Too long to read here: wait for a place like any slow head.
            Head::Incomplete => ticket.enter().await,
            Head::Closed => return None,
        },
        () = ct.cancelled() => return None,
    };
    if entered.is_err() {
        tracing::warn!("closed a slow connection: the line for a place is full");
        let _ = stream.try_write(REFUSED_REPLY);
        return None;
    }
    Some(Prefixed::new(head, stream))
}

enum Head {
    Complete,
    /// The deadline passed, or the head is longer than [`MAX_HEAD_READ`].
    Incomplete,
    Closed,
}

/// Reads into `head` until it holds a complete request head (an empty
/// line), `MAX_HEAD_READ` bytes, EOF, or `deadline`.
async fn read_head(stream: &mut TcpStream, head: &mut Vec<u8>, deadline: Option<Instant>) -> Head {
    let mut chunk = [0u8; 4096];
    loop {
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            return Head::Complete;
        }
        let room = MAX_HEAD_READ.saturating_sub(head.len()).min(chunk.len());
        if room == 0 {
            return Head::Incomplete;
        }
        let read = stream.read(&mut chunk[..room]);
        let got = match deadline {
            Some(at) => match tokio::time::timeout_at(at, read).await {
                Ok(got) => got,
                Err(_) => return Head::Incomplete,
            },
            None => read.await,
        };
        match got {
            Ok(0) | Err(_) => return Head::Closed,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A stream whose first bytes were already read: they are read again
/// first.
pub(super) struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    fn new(prefix: Vec<u8>, inner: S) -> Self {
        Self {
            prefix,
            at: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at < this.prefix.len() {
            let n = buf.remaining().min(this.prefix.len() - this.at);
            buf.put_slice(&this.prefix[this.at..this.at + n]);
            this.at += n;
            if this.at == this.prefix.len() {
                this.prefix = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn limits(unauth: usize, auth: usize, peer: usize) -> ConnLimits {
        ConnLimits {
            header_read_timeout: Duration::from_secs(1),
            max_authenticated: auth,
            max_authenticated_per_caller: auth,
            max_unauthenticated: unauth,
            max_per_peer: peer,
            grace: Duration::from_millis(100),
            nodelay: true,
        }
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn the_refusal_is_a_well_formed_response() {
        let text = std::str::from_utf8(REFUSED_REPLY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{text}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_connections_get_places_from_the_oldest_after_the_grace() {
        let adm = Admission::new(limits(2, 8, 100));
        let ct = CancellationToken::new();
        tokio::spawn(Arc::clone(&adm).reap(ct.clone()));
        let first = adm.admit(A, false).unwrap();
        first.enter().await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let second = adm.admit(A, false).unwrap();
        second.enter().await.unwrap();
        // Nobody waits: nobody is evicted, however long they hold.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!first.evicted().is_cancelled() && !second.evicted().is_cancelled());
        // A third waits; the oldest holder is closed and its place handed on.
        let third = adm.admit(B, false).unwrap();
        let entering = {
            let third = Arc::clone(&third);
            tokio::spawn(async move { third.enter().await })
        };
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(first.evicted().is_cancelled(), "the oldest goes");
        assert!(!second.evicted().is_cancelled());
        drop(first); // its connection task ends
        entering.await.unwrap().unwrap();
        assert_eq!(adm.counts(), (2, 0));
        // A newcomer keeps its place for the grace time at least.
        let fourth = adm.admit(B, false).unwrap();
        let entering = {
            let fourth = Arc::clone(&fourth);
            tokio::spawn(async move { fourth.enter().await })
        };
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(second.evicted().is_cancelled(), "second is old");
        drop(second);
        entering.await.unwrap().unwrap();
        let fifth = adm.admit(B, false).unwrap();
        let entering = {
            let fifth = Arc::clone(&fifth);
            tokio::spawn(async move { fifth.enter().await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!third.evicted().is_cancelled() && !fourth.evicted().is_cancelled());
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(third.evicted().is_cancelled(), "after the grace");
        assert!(!fourth.evicted().is_cancelled(), "one per waiter");
        drop(third);
        entering.await.unwrap().unwrap();
        ct.cancel();
    }

    #[tokio::test]
    async fn promotion_frees_the_place_and_has_its_ceiling() {
        let adm = Admission::new(limits(1, 1, 100));
        let one = adm.admit(A, false).unwrap();
        one.enter().await.unwrap();
        assert_eq!(adm.counts(), (1, 0));
        one.promote(&alice()).unwrap();
        one.promote(&alice()).unwrap(); // once only
        assert_eq!(adm.counts(), (0, 1));
        let two = adm.admit(A, false).unwrap();
        two.enter().await.unwrap(); // the place one left
        assert_eq!(two.promote(&alice()), Err(Refused::Busy));
        assert_eq!(adm.counts(), (1, 1));
        drop(one);
        two.promote(&alice()).unwrap();
        drop(two);
        assert_eq!(adm.counts(), (0, 0));
    }

    fn alice() -> CallerId {
        CallerId::new("alice").unwrap()
    }

    #[tokio::test]
    async fn no_caller_holds_more_than_its_share() {
        let mut l = limits(8, 4, 100);
        l.max_authenticated_per_caller = 2;
        let adm = Admission::new(l);
        let bob = CallerId::new("bob").unwrap();
        let mut held = Vec::new();
        for _ in 0..2 {
            let t = adm.admit(A, false).unwrap();
            t.enter().await.unwrap();
            t.promote(&alice()).unwrap();
            held.push(t);
        }
        let third = adm.admit(A, false).unwrap();
        third.enter().await.unwrap();
        assert_eq!(third.promote(&alice()), Err(Refused::CallerLimit));
        // Another caller gets the places alice cannot take.
        third.promote(&bob).unwrap();
        drop(held.pop());
        let again = adm.admit(A, false).unwrap();
        again.enter().await.unwrap();
        again.promote(&alice()).unwrap();
    }

    #[test]
    fn each_peer_address_has_its_cap() {
        let adm = Admission::new(limits(100, 100, 2));
        let a1 = adm.admit(A, false).unwrap();
        let _a2 = adm.admit(A, false).unwrap();
        assert_eq!(adm.admit(A, false).unwrap_err(), Refused::PeerLimit);
        // The same address written as IPv4-mapped IPv6 is the same peer.
        let mapped = IpAddr::V6(std::net::Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped());
        assert_eq!(adm.admit(mapped, false).unwrap_err(), Refused::PeerLimit);
        let _b = adm.admit(B, false).unwrap();
        drop(a1);
        let _a3 = adm.admit(A, false).unwrap();
    }

    #[test]
    fn a_proxys_connections_count_for_the_clients_it_names() {
        let adm = Admission::new(limits(100, 100, 1));
        let proxy = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 5));
        // The proxy's own address is not held to the cap; a direct peer is.
        let p1 = adm.admit(proxy, true).unwrap();
        let p2 = adm.admit(proxy, true).unwrap();
        assert!(adm.admit(proxy, false).is_err());
        p1.attribute(A).unwrap();
        assert_eq!(p2.attribute(A), Err(Refused::PeerLimit));
        // A direct connection from the client counts with what the proxy
        // relays for it.
        assert_eq!(adm.admit(A, false).unwrap_err(), Refused::PeerLimit);
        p2.attribute(B).unwrap();
        // Re-attributed: the count moves with the connection's requests.
        p1.attribute(B).unwrap_err();
        drop(p2);
        p1.attribute(B).unwrap();
        let _a = adm.admit(A, false).unwrap();
        drop(p1);
        assert!(!adm.state().per_peer.contains_key(&B));
    }

    #[tokio::test]
    async fn the_line_for_a_place_has_its_length() {
        let full = Admission::new(limits(1, 1, 1000));
        let holder = full.admit(A, false).unwrap();
        holder.enter().await.unwrap();
        full.waiting.store(WAITING_PER_PLACE, Ordering::Release);
        assert_eq!(
            full.admit(A, false).unwrap().enter().await,
            Err(Refused::LineFull)
        );
        full.waiting.store(0, Ordering::Release);
    }
}
