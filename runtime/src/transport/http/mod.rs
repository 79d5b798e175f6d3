//! Streamable HTTP: rmcp's `StreamableHttpService` mounted under axum behind
//! bearer-token authentication, with body, Host, timeout and bind checks.
//!
//! Each request passes, in order:
//! 1. authentication ([`BearerAuth`]): a missing, malformed or unknown
//!    token gets `401` with a fixed body and `WWW-Authenticate: Bearer`;
//! 2. the request's `Authorization`, `Proxy-Authorization` and `Cookie`
//!    headers are removed, so no tool (rmcp hands tools the request's
//!    `http::request::Parts`) and no log line can see a credential;
//! 3. the authenticated [`CallerId`] is inserted into the request's
//!    extensions, where [`ToolContext::from_request`](crate::ToolContext::from_request)
//!    finds it; without authentication (loopback only) it is
//!    [`CallerId::local`];
//! 4. session binding: a session (`Mcp-Session-Id`) belongs to the caller
//!    whose request created it; another caller presenting it gets the same
//!    `404` as for an unknown session. The caller of every request is taken
//!    from that request's own token: the session id is routing state only;
//! 5. a timeout on producing the response head (body reading included);
//! 6. rmcp's service: allowed `Host` headers (default: rmcp's loopback
//!    list), body size limit (`413`), JSON-RPC;
//! 7. response bodies: rmcp's error responses get fixed texts (some of
//!    rmcp's quote the request: a serde message, a header value), and every
//!    JSON-RPC error, in a JSON body or an event of a stream, gets the fixed
//!    message of its code without `data`: the rule stdio applies.
//!
//! Binding an address that is not loopback without authentication is
//! refused by [`HttpServer::new`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::future::BoxFuture;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::identity::CallerId;
use crate::transport::auth::{AuthFailure, BearerAuth, presented_token};
#[cfg(feature = "oauth")]
use crate::transport::oauth::OAuth;
use crate::transport::tasks2025::Legacy;
use crate::transport::{GrantedScopes, SCOPES_META_KEY};
#[cfg(not(feature = "oauth"))]
use no_oauth::OAuth;

mod body;
mod conn;
mod gate;
#[cfg(not(feature = "oauth"))]
mod no_oauth;
mod proxy;
mod sessions;

pub use proxy::{ForwardedHeader, IpNet, TrustedProxies};

use conn::{ConnLimits, Refused, Ticket};
use sessions::{SessionBindings, StreamCounts, StreamSlot};

/// Default path the MCP endpoint is mounted at.
pub const DEFAULT_PATH: &str = "/mcp";
/// Default request body limit: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default limit on producing a response head, body reading included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default limit on receiving a request's headers (also closes idle
/// keep-alive connections).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default number of authenticated connections served at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default number of authenticated connections one caller may hold (a
/// quarter of [`DEFAULT_MAX_CONNECTIONS`]).
pub const DEFAULT_MAX_CONNECTIONS_PER_CALLER: usize = 64;
/// Default number of connections that have not yet presented valid
/// credentials; beyond it the oldest of them is closed.
pub const DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS: usize = 64;
/// Default time a connection keeps its unauthenticated place while others
/// wait for one.
pub const DEFAULT_UNAUTHENTICATED_GRACE: Duration = Duration::from_millis(250);
/// Default number of open connections per peer address.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 32;
/// Default limit on receiving a request body, once its head is in.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default number of sessions one caller may hold.
pub const DEFAULT_MAX_SESSIONS_PER_CALLER: usize = 16;
/// Default number of event streams one caller may hold open.
pub const DEFAULT_MAX_STREAMS_PER_CALLER: usize = 32;
/// How long open connections may take to finish after shutdown starts.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Body of every `401`.
pub const UNAUTHORIZED_BODY: &str = "Unauthorized: a valid bearer token is required";
/// Body of a `404` for an unknown or foreign session (rmcp's own text).
pub const SESSION_NOT_FOUND_BODY: &str = "Not Found: Session not found";
/// Body of a `408` when the request or body timeout elapses.
pub const TIMEOUT_BODY: &str = "Request Timeout";
/// Body of a `503` when the authenticated connections are at their ceiling.
pub const BUSY_BODY: &str = "Service Unavailable: too many connections";
/// Body of a `429` when the caller holds its share of the connections.
pub const CALLER_CONNECTIONS_BODY: &str =
    "Too Many Requests: this caller holds too many connections; close one";
/// Body of a `403` when an OAuth token lacks a scope the tool requires.
pub const INSUFFICIENT_SCOPE_BODY: &str =
    "Forbidden: the access token lacks a scope this tool requires";
/// The root location of protected resource metadata (RFC 9728).
const METADATA_ROOT: &str = "/.well-known/oauth-protected-resource";
/// Body of a `429` when the caller holds its ceiling of sessions.
pub const SESSION_LIMIT_BODY: &str =
    "Too Many Requests: this caller holds too many sessions; delete one or let one expire";
/// Body of a `429` when the caller holds its ceiling of open streams.
pub const STREAM_LIMIT_BODY: &str = "Too Many Requests: this caller has too many open streams";

const SESSION_HEADER: &str = "mcp-session-id";
const STRIPPED_HEADERS: [header::HeaderName; 3] = [
    header::AUTHORIZATION,
    header::PROXY_AUTHORIZATION,
    header::COOKIE,
];

type HttpBody = BoxBody<Bytes, Infallible>;
type ServiceFactory<S> = Arc<dyn Fn() -> Result<S, std::io::Error> + Send + Sync>;

/// Why the HTTP server does not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpStartError {
    /// The bind address is not loopback and no token is configured.
    #[error(
        "refusing to serve HTTP on a non-loopback address without authentication: configure bearer tokens or bind 127.0.0.1 / ::1"
    )]
    PublicBindWithoutAuth,
    /// The body limit is zero.
    #[error("the request body limit must be at least 1 byte")]
    ZeroBodyLimit,
    /// A connection, session or stream limit is zero.
    #[error("the connection, session and stream limits must each be at least 1")]
    ZeroConnections,
    /// The list of allowed hosts is empty (no request could be answered).
    #[error("the allowed hosts list is empty: name at least one host this server answers as")]
    NoAllowedHost,
    /// The listener could not be bound.
    #[error("could not bind the HTTP listener")]
    Bind(#[source] std::io::Error),
}

/// The settings of an [`HttpServer`]: where it listens, who may call, and
/// the limits every request meets. Every setting has a safe default;
/// [`HttpServer::new`] checks the whole.
#[derive(Clone)]
pub struct HttpConfig {
    bind: SocketAddr,
    auth: Option<Arc<BearerAuth>>,
    oauth: Option<OAuth>,
    path: String,
    max_body_bytes: usize,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Vec<String>,
    request_timeout: Duration,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    max_connections: usize,
    max_connections_per_caller: usize,
    max_unauthenticated: usize,
    unauthenticated_grace: Duration,
    max_per_peer: usize,
    trusted_proxies: Option<Arc<TrustedProxies>>,
    max_sessions_per_caller: usize,
    max_streams_per_caller: usize,
    session_mode: bool,
    json_response: bool,
    sse_keep_alive: Option<Duration>,
    tcp_nodelay: bool,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("bind", &self.bind)
            .field("auth", &self.auth)
            .field("oauth", &self.oauth)
            .field("path", &self.path)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("request_timeout", &self.request_timeout)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("max_connections", &self.max_connections)
            .field("max_unauthenticated", &self.max_unauthenticated)
            .field("max_per_peer", &self.max_per_peer)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("max_sessions_per_caller", &self.max_sessions_per_caller)
            .field("max_streams_per_caller", &self.max_streams_per_caller)
            .field("tcp_nodelay", &self.tcp_nodelay)
            .finish_non_exhaustive()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            auth: None,
            oauth: None,
            path: DEFAULT_PATH.to_owned(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: None,
            allowed_origins: Vec::new(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_caller: DEFAULT_MAX_CONNECTIONS_PER_CALLER,
            max_unauthenticated: DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS,
            unauthenticated_grace: DEFAULT_UNAUTHENTICATED_GRACE,
            max_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            trusted_proxies: None,
            max_sessions_per_caller: DEFAULT_MAX_SESSIONS_PER_CALLER,
            max_streams_per_caller: DEFAULT_MAX_STREAMS_PER_CALLER,
            session_mode: true,
            json_response: false,
            sse_keep_alive: Some(Duration::from_secs(15)),
            tcp_nodelay: true,
        }
    }
}

impl HttpConfig {
    /// The defaults: loopback, an ephemeral port, no authentication.
    pub fn new() -> Self {
        Self::default()
    }

    /// Address to listen on (default `127.0.0.1:0`, an ephemeral port).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// Requires a bearer token from this table on every request.
    pub fn auth(mut self, auth: BearerAuth) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// Accepts OAuth 2.1 access tokens validated by `oauth` (JWTs of its
    /// issuer, for its resource), and serves its protected resource
    /// metadata (RFC 9728). With [`auth`](Self::auth) as well, a token is
    /// first looked up in the static table, then validated as a JWT.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Path of the MCP endpoint (default [`DEFAULT_PATH`]).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Request body limit in bytes (default [`DEFAULT_MAX_BODY_BYTES`]);
    /// larger bodies get `413`.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Hosts (`name` or `name:port`) accepted in the `Host` header (and in
    /// an absolute-form request target, which must name the same). Default:
    /// the loopback names (`localhost`, `127.0.0.1`, `::1`), which a server
    /// reachable under another name must replace. Other hosts get `403`; a
    /// second `Host` header, or a target naming another host than `Host`,
    /// `400`. An empty list is refused at start.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Browser origins (`scheme://host[:port]`, or `null`) whose pages may
    /// call this server, besides its own. Default: none. The server's own
    /// origin (`http` or `https`, naming the allowed host and port the
    /// request was sent to: a page this server or its proxy served) is
    /// always served. A request with an `Origin` header naming another
    /// origin gets `403`, as the MCP transport rules require (DNS
    /// rebinding: a page of another site names its own origin); clients
    /// that are not browsers send no `Origin` and are not affected.
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Limit on producing the response head, body reading included
    /// (default [`DEFAULT_REQUEST_TIMEOUT`]); then `408`. Streamed (SSE)
    /// responses are not cut once their head is sent.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Limit on receiving a request's headers, and on a keep-alive
    /// connection's idle time (default [`DEFAULT_HEADER_READ_TIMEOUT`]); the
    /// connection is then closed.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Limit on receiving a request body once its head is in (default
    /// [`DEFAULT_BODY_READ_TIMEOUT`]); then `408`.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Authenticated connections served at once (default
    /// [`DEFAULT_MAX_CONNECTIONS`]): a connection counts once a request on
    /// it presented valid credentials (without authentication: once it
    /// sent a request). A request that would take one more gets `503`.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Authenticated connections one caller may hold (default
    /// [`DEFAULT_MAX_CONNECTIONS_PER_CALLER`]), so that no caller takes
    /// every place of [`max_connections`](Self::max_connections): a
    /// request that would take one more for its caller gets `429` and the
    /// connection closes. A connection counts for the caller of the request
    /// that first authenticated on it.
    pub fn max_connections_per_caller(mut self, n: usize) -> Self {
        self.max_connections_per_caller = n;
        self
    }

    /// Places for connections that have not yet presented valid
    /// credentials (default [`DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS`]). A
    /// connection is read only once it holds one; when all are taken it
    /// waits, unread, first come first served (at most 8 per place wait;
    /// beyond, `503`), and while any wait the oldest holder is closed as
    /// soon as it has held its place for
    /// [`unauthenticated_grace`](Self::unauthenticated_grace).
    pub fn max_unauthenticated_connections(mut self, n: usize) -> Self {
        self.max_unauthenticated = n;
        self
    }

    /// How long an unauthenticated connection keeps its place while others
    /// wait (default [`DEFAULT_UNAUTHENTICATED_GRACE`]): the time a client
    /// has, under load, to send a request with valid credentials. Without
    /// anyone waiting nothing is closed early.
    pub fn unauthenticated_grace(mut self, grace: Duration) -> Self {
        self.unauthenticated_grace = grace;
        self
    }

    /// Open connections per peer address, waiting ones included (default
    /// [`DEFAULT_MAX_CONNECTIONS_PER_PEER`]); more are answered `503` and
    /// closed at once. Behind a reverse proxy every client has the proxy's
    /// address: name the proxy with [`HttpConfig::trusted_proxies`].
    pub fn max_connections_per_peer(mut self, n: usize) -> Self {
        self.max_per_peer = n;
        self
    }

    /// The reverse proxies in front of this server (default none). A
    /// connection from one of their addresses is not held to the per-peer
    /// cap itself; each request on it counts for the client the proxy
    /// names in its forwarding header (the rightmost address that is not a
    /// trusted proxy), and a client over its cap is answered `503` and the
    /// connection closed. From any other address the header is ignored.
    /// docs/scale-out.md has a reverse-proxy configuration to match.
    pub fn trusted_proxies(mut self, proxies: TrustedProxies) -> Self {
        self.trusted_proxies = Some(Arc::new(proxies));
        self
    }

    /// Sessions one caller may hold (default
    /// [`DEFAULT_MAX_SESSIONS_PER_CALLER`]); a new one beyond it gets `429`
    /// until one is deleted or expires idle (rmcp: after 5 minutes).
    pub fn max_sessions_per_caller(mut self, n: usize) -> Self {
        self.max_sessions_per_caller = n;
        self
    }

    /// Event streams one caller may hold open (default
    /// [`DEFAULT_MAX_STREAMS_PER_CALLER`]); one more gets `429`.
    pub fn max_streams_per_caller(mut self, n: usize) -> Self {
        self.max_streams_per_caller = n;
        self
    }

    /// Whether rmcp keeps sessions for clients of protocol versions before
    /// 2026-07-28 (default true, rmcp's default).
    pub fn session_mode(mut self, on: bool) -> Self {
        self.session_mode = on;
        self
    }

    /// Whether a request answered by one message gets it as an
    /// `application/json` body rather than an event stream, where the
    /// session mode allows it (rmcp's `json_response`, default false).
    pub fn json_response(mut self, on: bool) -> Self {
        self.json_response = on;
        self
    }

    /// SSE keep-alive interval (default 15 s; `None` disables).
    pub fn sse_keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.sse_keep_alive = interval;
        self
    }

    /// Whether accepted connections set `TCP_NODELAY` (default true): each
    /// write of an answer leaves at once. Off, the kernel holds a small
    /// write back until the previous one is acknowledged (Nagle's
    /// algorithm), and the last chunk of an event stream then waits for
    /// the client's delayed acknowledgement, about 40 ms per call on a
    /// reused connection. Turn it off only to trade that latency for fewer
    /// packets on a link where packets are dear.
    pub fn tcp_nodelay(mut self, on: bool) -> Self {
        self.tcp_nodelay = on;
        self
    }

    /// The address to listen on.
    pub fn bind_addr(&self) -> SocketAddr {
        self.bind
    }

    fn check(&self) -> Result<(), HttpStartError> {
        if self.auth.is_none() && self.oauth.is_none() && !self.bind.ip().is_loopback() {
            return Err(HttpStartError::PublicBindWithoutAuth);
        }
        if self.max_body_bytes == 0 {
            return Err(HttpStartError::ZeroBodyLimit);
        }
        if self.allowed_hosts.as_ref().is_some_and(Vec::is_empty) {
            return Err(HttpStartError::NoAllowedHost);
        }
        if [
            self.max_connections,
            self.max_connections_per_caller,
            self.max_unauthenticated,
            self.max_per_peer,
            self.max_sessions_per_caller,
            self.max_streams_per_caller,
        ]
        .contains(&0)
        {
            return Err(HttpStartError::ZeroConnections);
        }
        Ok(())
    }
}

/// A checked HTTP server: a handler factory and its [`HttpConfig`]; see the
/// [module docs](self).
///
/// ```no_run
/// # async fn demo<S: rmcp::ServerHandler + Clone>(server: S) -> Result<(), Box<dyn std::error::Error>> {
/// use hardened_mcp::transport::{BearerAuth, HttpConfig, HttpServer};
/// use tokio_util::sync::CancellationToken;
///
/// let config = HttpConfig::new()
///     .bind("0.0.0.0:8080".parse()?)
///     .allowed_hosts(["mcp.example.org"])
///     .auth(BearerAuth::from_env("HARDENED_MCP_TOKENS")?);
/// let running = HttpServer::new(move || Ok(server.clone()), config)?
///     .start(CancellationToken::new())
///     .await?;
/// println!("listening on {}", running.local_addr());
/// running.wait().await?;
/// # Ok(()) }
/// ```
pub struct HttpServer<S> {
    factory: ServiceFactory<S>,
    b: HttpConfig,
}

impl<S> std::fmt::Debug for HttpServer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.b.fmt(f)
    }
}

impl<S> HttpServer<S>
where
    S: ServerHandler + Send + 'static,
{
    /// Checks `config`; `factory` makes the handler of each session (or of
    /// each stateless request). It is also called once when the router is
    /// built, for a handler that answers which scopes each tool declares
    /// (`get_tool`); make it cheap (share state behind an `Arc`, as
    /// [`crate::Server`] does).
    pub fn new(
        factory: impl Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
        config: HttpConfig,
    ) -> Result<Self, HttpStartError> {
        config.check()?;
        Ok(Self {
            factory: Arc::new(factory),
            b: config,
        })
    }

    /// The axum router serving the endpoint, for mounting in a larger app.
    /// Cancelling `ct` ends all sessions. The bind check of
    /// [`HttpServer::new`] covers only [`HttpServer::start`]: whoever
    /// serves this router elsewhere owns that decision.
    pub fn router(&self, ct: CancellationToken) -> axum::Router {
        let b = &self.b;
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(ct)
            .with_max_request_body_bytes(b.max_body_bytes)
            .with_legacy_session_mode(b.session_mode)
            .with_json_response(b.json_response)
            .with_sse_keep_alive(b.sse_keep_alive);
        let hosts: Vec<String> = match &b.allowed_hosts {
            Some(hosts) => hosts.clone(),
            None => gate::LOOPBACK_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
        };
        // The gate (first, for every request) holds the Origin rule: the
        // server's own origin and the operator's list. rmcp's own check
        // knows only the list, and would refuse a page of the server's own
        // origin; it is off, its host check kept.
        config = config
            .with_allowed_hosts(hosts.iter().cloned())
            .disable_allowed_origins();
        let sessions = Arc::new(LocalSessionManager::default());
        let factory = Arc::clone(&self.factory);
        let inner = StreamableHttpService::new(move || factory(), Arc::clone(&sessions), config);
        let service = Guarded {
            inner,
            auth: b.auth.clone(),
            oauth: b.oauth.clone(),
            probe: (self.factory)().ok().map(Arc::new),
            bindings: Arc::new(SessionBindings::new(sessions, b.max_sessions_per_caller)),
            streams: Arc::new(StreamCounts::new(b.max_streams_per_caller)),
            timeout: b.request_timeout,
            body_timeout: b.body_read_timeout,
            max_body_bytes: b.max_body_bytes,
            legacy_tasks: b.session_mode,
            gate: Arc::new(gate::Gate::new(&hosts, &b.allowed_origins)),
            proxies: b.trusted_proxies.clone(),
        };
        let mut router = axum::Router::new().route_service(&b.path, service);
        if let Some(oauth) = &b.oauth {
            // RFC 9728: at the resource's own location, and at the root for
            // clients that look there first.
            let doc = Bytes::from(oauth.metadata().to_string());
            let paths = [oauth.metadata_path(), METADATA_ROOT];
            for path in paths.into_iter().collect::<std::collections::BTreeSet<_>>() {
                let doc = doc.clone();
                router = router.route(
                    path,
                    axum::routing::get(move || {
                        let doc = doc.clone();
                        async move { metadata_response(doc) }
                    }),
                );
            }
        }
        router
    }

    /// Binds the listener and serves until `ct` is cancelled, then shuts
    /// down gracefully.
    pub async fn start(self, ct: CancellationToken) -> Result<RunningHttpServer, HttpStartError> {
        let listener = tokio::net::TcpListener::bind(self.b.bind)
            .await
            .map_err(HttpStartError::Bind)?;
        self.serve(listener, ct)
    }

    /// Serves on a listener bound beforehand (by the caller, or handed over
    /// by socket activation), until `ct` is cancelled; the configured bind
    /// address is not used. The listener's address is held to the same rule
    /// as [`HttpConfig::bind`]: not loopback needs authentication. Whoever
    /// must know the address before the server starts (an OAuth resource
    /// names it) binds first and keeps the port: nothing can take it in
    /// between.
    ///
    /// ```no_run
    /// # async fn demo<S: rmcp::ServerHandler + Clone>(server: S) -> Result<(), Box<dyn std::error::Error>> {
    /// use hardened_mcp::transport::{HttpConfig, HttpServer};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let resource = format!("http://{}/mcp", listener.local_addr()?);
    /// # let _ = resource;
    /// let running = HttpServer::new(move || Ok(server.clone()), HttpConfig::new())?
    ///     .start_on(listener, CancellationToken::new())
    ///     .await?;
    /// running.wait().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_on(
        self,
        listener: std::net::TcpListener,
        ct: CancellationToken,
    ) -> Result<RunningHttpServer, HttpStartError> {
        let addr = listener.local_addr().map_err(HttpStartError::Bind)?;
        if self.b.auth.is_none() && self.b.oauth.is_none() && !addr.ip().is_loopback() {
            return Err(HttpStartError::PublicBindWithoutAuth);
        }
        listener
            .set_nonblocking(true)
            .map_err(HttpStartError::Bind)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(HttpStartError::Bind)?;
        self.serve(listener, ct)
    }

    fn serve(
        self,
        listener: tokio::net::TcpListener,
        ct: CancellationToken,
    ) -> Result<RunningHttpServer, HttpStartError> {
        let local_addr = listener.local_addr().map_err(HttpStartError::Bind)?;
        let router = self.router(ct.child_token());
        let limits = ConnLimits {
            header_read_timeout: self.b.header_read_timeout,
            max_authenticated: self.b.max_connections,
            max_authenticated_per_caller: self.b.max_connections_per_caller,
            max_unauthenticated: self.b.max_unauthenticated,
            max_per_peer: self.b.max_per_peer,
            grace: self.b.unauthenticated_grace,
            nodelay: self.b.tcp_nodelay,
        };
        let task = tokio::spawn(conn::serve(
            listener,
            router,
            ct.clone(),
            limits,
            self.b.trusted_proxies.clone(),
        ));
        tracing::info!(
            addr = %local_addr,
            authenticated = self.b.auth.is_some() || self.b.oauth.is_some(),
            "serving MCP over HTTP"
        );
        Ok(RunningHttpServer {
            local_addr,
            ct,
            task,
        })
    }
}

/// A started HTTP server.
#[derive(Debug)]
pub struct RunningHttpServer {
    local_addr: SocketAddr,
    ct: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningHttpServer {
    /// The bound address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, lets open connections finish, and waits.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.ct.cancel();
        self.wait().await
    }

    /// Waits until the server stops (its token is cancelled).
    pub async fn wait(self) -> std::io::Result<()> {
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

/// Authentication, credential stripping, caller injection, session binding
/// and the request timeout in front of rmcp's service.
struct Guarded<S: ServerHandler + Send + 'static> {
    inner: StreamableHttpService<S, LocalSessionManager>,
    auth: Option<Arc<BearerAuth>>,
    oauth: Option<OAuth>,
    /// One handler, for the scopes the tools declare.
    probe: Option<Arc<S>>,
    bindings: Arc<SessionBindings>,
    streams: Arc<StreamCounts>,
    timeout: Duration,
    body_timeout: Duration,
    max_body_bytes: usize,
    /// Whether the 2025-11-25 task shapes are served (to sessions of that
    /// era; so only in session mode, where the era is known).
    legacy_tasks: bool,
    /// Host and Origin rules.
    gate: Arc<gate::Gate>,
    /// Whose forwarding header names the peer.
    proxies: Option<Arc<TrustedProxies>>,
}

impl<S: ServerHandler + Send + 'static> Clone for Guarded<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            auth: self.auth.clone(),
            oauth: self.oauth.clone(),
            probe: self.probe.clone(),
            bindings: Arc::clone(&self.bindings),
            streams: Arc::clone(&self.streams),
            timeout: self.timeout,
            body_timeout: self.body_timeout,
            max_body_bytes: self.max_body_bytes,
            legacy_tasks: self.legacy_tasks,
            gate: Arc::clone(&self.gate),
            proxies: self.proxies.clone(),
        }
    }
}

impl<S: ServerHandler + Send + 'static> tower::Service<Request<Body>> for Guarded<S> {
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}

impl<S: ServerHandler + Send + 'static> Guarded<S> {
    /// The caller of `req` (and, for an OAuth token, its scopes), or the
    /// challenge of the `401`.
    async fn authenticate(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<(CallerId, Option<GrantedScopes>), Challenge> {
        if self.auth.is_none() && self.oauth.is_none() {
            return Ok((CallerId::local(), None));
        }
        let challenge = |invalid: bool| Challenge {
            metadata_url: self.oauth.as_ref().map(|o| o.metadata_url().to_owned()),
            scopes: self
                .oauth
                .as_ref()
                .map(|o| o.scopes_supported().join(" "))
                .unwrap_or_default(),
            invalid_token: invalid,
        };
        let mut values = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .map(HeaderValue::as_bytes);
        let token = match presented_token(&mut values) {
            Ok(token) => token,
            Err(failure) => {
                tracing::warn!(
                    reason = failure.as_str(),
                    "rejected an HTTP request: authentication failed"
                );
                return Err(challenge(failure != AuthFailure::Missing));
            }
        };
        if let Some(caller) = self.auth.as_ref().and_then(|a| a.caller_for_token(token)) {
            return Ok((caller.clone(), None));
        }
        let Some(oauth) = &self.oauth else {
            tracing::warn!(
                reason = AuthFailure::Unknown.as_str(),
                "rejected an HTTP request: authentication failed"
            );
            return Err(challenge(true));
        };
        let text = std::str::from_utf8(token).unwrap_or("");
        match oauth.authenticate(text).await {
            Ok(grant) => {
                let (caller, scopes) = grant.into_parts();
                Ok((caller, Some(scopes)))
            }
            Err(refused) => {
                tracing::warn!(
                    reason = refused.as_str(),
                    "rejected an HTTP request: access token refused"
                );
                Err(challenge(true))
            }
        }
    }

    async fn handle(self, mut req: Request<Body>) -> Response<HttpBody> {
        // Checked here, before rmcp, whose log lines would quote the values.
        if let Some(status) = self.gate.refusal(&req) {
            return fixed(status, body::fixed_status_text(status));
        }
        // A trusted proxy's request counts for the client it names.
        if let Some(proxies) = &self.proxies
            && let Some(ticket) = req.extensions().get::<Arc<Ticket>>()
            && ticket.via_proxy()
            && let Some(client) = proxies.client(req.headers())
            && ticket.attribute(client).is_err()
        {
            tracing::warn!(client = %client, "refused a proxied request: its client holds its cap of connections");
            return closing(fixed(StatusCode::SERVICE_UNAVAILABLE, BUSY_BODY));
        }
        let (caller, scopes) = match self.authenticate(req.headers()).await {
            Ok(found) => found,
            Err(challenge) => return unauthorized(challenge),
        };
        // Valid credentials: the connection leaves the unauthenticated pool
        // (absent when the router is mounted in an app of its own).
        if let Some(ticket) = req.extensions().get::<Arc<Ticket>>() {
            match ticket.promote(&caller) {
                Ok(()) => {}
                Err(Refused::CallerLimit) => {
                    tracing::warn!(caller = %caller, "refused a request: the caller holds its share of the connections");
                    return closing(limit(CALLER_CONNECTIONS_BODY));
                }
                Err(_) => {
                    tracing::warn!(caller = %caller, "refused a request: authenticated connections at their ceiling");
                    return closing(fixed(StatusCode::SERVICE_UNAVAILABLE, BUSY_BODY));
                }
            }
        }
        for name in STRIPPED_HEADERS {
            req.headers_mut().remove(name);
        }
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session
            && let Some(owner) = self.bindings.owner(id)
            && owner != caller
        {
            tracing::warn!(
                caller = %caller,
                "rejected an HTTP request: session belongs to another caller"
            );
            return fixed(StatusCode::NOT_FOUND, SESSION_NOT_FOUND_BODY);
        }
        let is_delete = req.method() == Method::DELETE;
        req.extensions_mut().insert(caller.clone());
        if let Some(scopes) = &scopes {
            req.extensions_mut().insert(scopes.clone());
        }

        let inner = self.inner.clone();
        let max_body = self.max_body_bytes;
        let body_timeout = self.body_timeout;
        let bindings = Arc::clone(&self.bindings);
        let opens_session = session.is_none();
        let screened_caller = caller.clone();
        let probe = self.probe.clone();
        let metadata_url = self.oauth.as_ref().map(|o| o.metadata_url().to_owned());
        // The 2025-11-25 task adapter of this request, in the session's era.
        let mut legacy = self.legacy_tasks.then(|| {
            Legacy::with_era(
                session
                    .as_deref()
                    .is_some_and(|id| self.bindings.is_2025(id)),
            )
        });
        let answered = async move {
            let (req, kind) = match screen_post(req, max_body, body_timeout, legacy.as_mut()).await
            {
                Screened::Answered(response) => return Answer::Ours(response),
                Screened::Forward(req, kind) => (req, kind),
            };
            if let Kind::ToolCall(name) = &kind
                && let Some(needed) = unmet_scopes(scopes.as_ref(), probe.as_deref(), name)
            {
                tracing::warn!(caller = %screened_caller, "refused a tool call: the token lacks a scope the tool requires");
                return Answer::Ours(insufficient_scope(&needed, metadata_url.as_deref()));
            }
            if kind == Kind::Initialize && opens_session {
                // An `initialize` without a session may create one.
                return match bindings.reserve(&screened_caller).await {
                    Some(r) => Answer::Rmcp(inner.handle(req).await, Some(r), legacy),
                    None => {
                        tracing::warn!(caller = %screened_caller, "refused a new session: the caller holds its ceiling");
                        Answer::Ours(limit(SESSION_LIMIT_BODY))
                    }
                };
            }
            Answer::Rmcp(inner.handle(req).await, None, legacy)
        };
        let (response, reservation, legacy) =
            match tokio::time::timeout(self.timeout, answered).await {
                Ok(Answer::Rmcp(response, reservation, legacy)) => (response, reservation, legacy),
                // Our own answers have fixed texts already.
                Ok(Answer::Ours(response)) => return response,
                Err(_) => {
                    tracing::warn!(caller = %caller, "an HTTP request timed out");
                    return fixed(StatusCode::REQUEST_TIMEOUT, TIMEOUT_BODY);
                }
            };

        match &session {
            None => {
                if let (Some(reservation), Some(created)) = (
                    reservation,
                    response
                        .headers()
                        .get(SESSION_HEADER)
                        .and_then(|v| v.to_str().ok()),
                ) {
                    let era_2025 = legacy.as_ref().is_some_and(Legacy::is_2025);
                    reservation.bind(created.to_owned(), era_2025).await;
                }
            }
            Some(id) if is_delete && response.status().is_success() => {
                self.bindings.unbind(id);
                // rmcp answers a session DELETE with 202 Accepted, which
                // clients expecting 200 or 204 (the official Python SDK)
                // report as a failed termination: the session is gone, say so.
                if response.status() == StatusCode::ACCEPTED {
                    return no_content();
                }
            }
            Some(_) => {}
        }
        let amend = legacy.filter(Legacy::is_waiting);
        let response = body::fix_response(response, amend).await;
        if is_event_stream(&response) {
            let Some(slot) = self.streams.open(&caller) else {
                tracing::warn!(caller = %caller, "refused an event stream: the caller holds its ceiling");
                return limit(STREAM_LIMIT_BODY);
            };
            return with_slot(response, slot);
        }
        response
    }
}

fn is_event_stream(response: &Response<HttpBody>) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// The response with `slot` held until its body is dropped.
fn with_slot(response: Response<HttpBody>, slot: StreamSlot) -> Response<HttpBody> {
    let (parts, body) = response.into_parts();
    let held = body::Holding::new(body, slot);
    Response::from_parts(parts, held.boxed())
}

/// A `429` with a fixed text.
fn limit(text: &'static str) -> Response<HttpBody> {
    fixed(StatusCode::TOO_MANY_REQUESTS, text)
}

/// `response`, telling the client the connection closes after it.
fn closing(mut response: Response<HttpBody>) -> Response<HttpBody> {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Who produced a response: this layer (fixed texts already) or rmcp
/// (checked on the way out), with the session place it may fill.
enum Answer {
    Ours(Response<HttpBody>),
    Rmcp(
        Response<HttpBody>,
        Option<sessions::SessionReservation>,
        Option<Legacy>,
    ),
}

/// What a forwarded POST holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// An `initialize` request.
    Initialize,
    /// A `tools/call` of the named tool.
    ToolCall(String),
    /// Anything else rmcp may serve.
    Other,
}

/// The scopes tool `name` declares, when `scopes` (none: not an OAuth
/// caller, no scope applies) do not cover them all; `None` when the call
/// may go on.
fn unmet_scopes<S: ServerHandler>(
    scopes: Option<&GrantedScopes>,
    probe: Option<&S>,
    name: &str,
) -> Option<Vec<String>> {
    let (granted, probe) = (scopes?, probe?);
    let needed = required_scopes(probe, name);
    let names: Vec<&str> = needed.iter().map(String::as_str).collect();
    (!granted.covers(&names)).then_some(needed)
}

/// The scopes tool `name` declares (in its `_meta`); none for an unknown
/// tool (its call is refused elsewhere).
fn required_scopes<S: ServerHandler>(probe: &S, name: &str) -> Vec<String> {
    probe
        .get_tool(name)
        .and_then(|t| t.meta.and_then(|m| m.get(SCOPES_META_KEY).cloned()))
        .and_then(|v| serde_json::from_value::<Vec<String>>(v).ok())
        .unwrap_or_default()
}

/// What [`screen_post`] decided.
enum Screened {
    /// Pass the (re-assembled) request to rmcp.
    Forward(Request<Body>, Kind),
    /// Answered here.
    Answered(Response<HttpBody>),
}

/// Reads a POST body (at most `max_body` bytes, within `body_timeout`)
/// and answers a JSON-RPC request for a method rmcp does not know with a
/// fixed `-32601` error: rmcp would answer it with the method name as the
/// message, text the caller chose. A 2025-11-25 task request of a session
/// of that era is renamed by `legacy` (then forwarded: the server's
/// custom-request hook answers it). Everything else is forwarded with the
/// body re-assembled, with what it holds.
async fn screen_post(
    req: Request<Body>,
    max_body: usize,
    body_timeout: Duration,
    legacy: Option<&mut Legacy>,
) -> Screened {
    if req.method() != Method::POST {
        return Screened::Forward(req, Kind::Other);
    }
    let (parts, body) = req.into_parts();
    let read = tokio::time::timeout(
        body_timeout,
        http_body_util::Limited::new(body, max_body).collect(),
    );
    let bytes = match read.await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            tracing::warn!("rejected an HTTP request: body above the size limit");
            return Screened::Answered(fixed(
                StatusCode::PAYLOAD_TOO_LARGE,
                body::fixed_status_text(StatusCode::PAYLOAD_TOO_LARGE),
            ));
        }
        Ok(Err(_)) => {
            tracing::warn!("rejected an HTTP request: the body could not be read");
            return Screened::Answered(fixed(
                StatusCode::BAD_REQUEST,
                body::fixed_status_text(StatusCode::BAD_REQUEST),
            ));
        }
        Err(_) => {
            tracing::warn!("rejected an HTTP request: the body did not arrive in time");
            return Screened::Answered(closing(fixed(StatusCode::REQUEST_TIMEOUT, TIMEOUT_BODY)));
        }
    };
    let classified = classify_request(&bytes);
    let mut parts = parts;
    if matches!(classified, Classified::ToolCall(_))
        && let Some(found) = crate::args::lexeme::scan_call(&bytes)
    {
        // The route refuses them where the tool declares an integer.
        parts.extensions.insert(found);
    }
    if let Some(renamed) = legacy.and_then(|l| l.inbound(&bytes)) {
        // A task-augmented call keeps its tool's scope check.
        let kind = match classified {
            Classified::ToolCall(name) => Kind::ToolCall(name),
            _ => Kind::Other,
        };
        return Screened::Forward(Request::from_parts(parts, Body::from(renamed)), kind);
    }
    let kind = match classified {
        Classified::UnknownMethod(id) => {
            tracing::warn!("answered a request for an unknown method with a fixed error");
            let body = super::fixed::jsonrpc_error(serde_json::json!(id), -32601);
            let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
            // From 2026-07-28 on, HTTP says it too: `404` (the methods the
            // revision removed, `initialize` among them, included).
            if stateless_era(&parts.headers) {
                *response.status_mut() = StatusCode::NOT_FOUND;
            }
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return Screened::Answered(response);
        }
        Classified::Initialize => Kind::Initialize,
        Classified::ToolCall(name) => Kind::ToolCall(name),
        Classified::Other => Kind::Other,
    };
    Screened::Forward(Request::from_parts(parts, Body::from(bytes)), kind)
}

#[derive(Debug, PartialEq)]
enum Classified {
    /// A request whose method (or parameters) rmcp cannot type, so that it
    /// would reach its custom-request fallback.
    UnknownMethod(rmcp::model::RequestId),
    Initialize,
    ToolCall(String),
    Other,
}

/// What a POST body is, for the screen: read without rmcp's whole parse
/// where that is safe.
///
/// rmcp's message type is untagged: its parse buffers the whole message
/// and tries each request type in turn, the call of a tool the fourteenth,
/// whose own parse buffers its members again (flattened fields). The
/// screen needs of a call only the name of the tool (for the scope check),
/// so a body that names its method and, for a `tools/call`, its tool, each
/// member once, is read for those alone. The name is then the one rmcp
/// calls, if it calls any: its parse reads the same single members. A body
/// read this way as a call that rmcp types otherwise (parameters of the
/// wrong shape) reaches the handler's custom-request hook as a
/// `-32601`, the method name it could quote being `tools/call` (the
/// framework's `Server` answers with the fixed text of
/// [`Classified::UnknownMethod`], and every error's text is fixed on the
/// way out). Anything else (a member twice, a parameter of another type,
/// not an object) is classified by the whole parse.
fn classify_request(body: &[u8]) -> Classified {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    if let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(body)
        && envelope.method == "tools/call"
        && let Some(name) = envelope.params.and_then(|p| p.name)
    {
        return Classified::ToolCall(name.into_owned());
    }
    classify_typed(body)
}

/// [`classify_request`] by rmcp's whole parse.
fn classify_typed(body: &[u8]) -> Classified {
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
    match serde_json::from_slice::<ClientJsonRpcMessage>(body) {
        Ok(JsonRpcMessage::Request(r)) => match r.request {
            ClientRequest::CustomRequest(_) => Classified::UnknownMethod(r.id),
            ClientRequest::InitializeRequest(_) => Classified::Initialize,
            ClientRequest::CallToolRequest(c) => Classified::ToolCall(c.params.name.to_string()),
            _ => Classified::Other,
        },
        _ => Classified::Other,
    }
}

/// Whether a request names, in its `MCP-Protocol-Version` header, a
/// protocol revision of the stateless era (2026-07-28 or later), whose
/// JSON-RPC errors carry their HTTP status; rmcp maps the errors it
/// answers itself the same way.
fn stateless_era(headers: &http::HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.len() == 10
                && v.bytes().all(|c| c.is_ascii_digit() || c == b'-')
                && v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
        })
}

/// `204 No Content`, empty.
fn no_content() -> Response<HttpBody> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

fn fixed(status: StatusCode, body: &'static str) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// What a `401` says in `WWW-Authenticate`.
struct Challenge {
    /// The resource metadata URL (OAuth), named so clients find the
    /// authorization server.
    metadata_url: Option<String>,
    /// Scopes to ask for (OAuth), space-separated.
    scopes: String,
    /// A token was presented and refused (`error="invalid_token"`).
    invalid_token: bool,
}

/// A `401`, closing the connection: an unauthenticated client keeps no
/// connection open, and says so (`Connection: close`), so a client never
/// reuses a connection the server is closing (the request body, unread,
/// makes hyper close it anyway). The challenge holds only server text.
fn unauthorized(challenge: Challenge) -> Response<HttpBody> {
    let mut response = fixed(StatusCode::UNAUTHORIZED, UNAUTHORIZED_BODY);
    let mut value = String::from("Bearer");
    let mut params = Vec::new();
    if let Some(url) = &challenge.metadata_url {
        params.push(format!("resource_metadata=\"{url}\""));
        if !challenge.scopes.is_empty() {
            params.push(format!("scope=\"{}\"", challenge.scopes));
        }
        if challenge.invalid_token {
            params.push("error=\"invalid_token\"".to_owned());
        }
    }
    if !params.is_empty() {
        value.push(' ');
        value.push_str(&params.join(", "));
    }
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer")),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A `403` for a token without a scope the called tool requires (RFC 6750
/// `insufficient_scope`, naming the scopes needed).
fn insufficient_scope(needed: &[String], metadata_url: Option<&str>) -> Response<HttpBody> {
    let mut response = fixed(StatusCode::FORBIDDEN, INSUFFICIENT_SCOPE_BODY);
    let mut value = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\"",
        needed.join(" ")
    );
    if let Some(url) = metadata_url {
        value.push_str(&format!(", resource_metadata=\"{url}\""));
    }
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&value)
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer error=\"insufficient_scope\"")),
    );
    response
}

/// The protected resource metadata document.
fn metadata_response(doc: Bytes) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(doc).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[derive(Clone)]
    struct Nothing;
    impl ServerHandler for Nothing {}

    fn server(config: HttpConfig) -> Result<HttpServer<Nothing>, HttpStartError> {
        HttpServer::new(|| Ok(Nothing), config)
    }

    /// The property the scope check rests on: a body rmcp's whole parse
    /// types as a call of a tool is classified as the call of that tool;
    /// one classified otherwise is classified as the whole parse does.
    fn classified_as_the_whole_parse(body: &[u8]) -> Result<(), String> {
        let (short, whole) = (classify_request(body), classify_typed(body));
        // The one difference allowed: a call rmcp does not type as one.
        let call = |c: &Classified| matches!(c, Classified::ToolCall(_));
        if short == whole || (call(&short) && !call(&whole)) {
            Ok(())
        } else {
            Err(format!("{short:?} but the whole parse: {whole:?}"))
        }
    }

    #[test]
    fn a_tool_call_is_classified_as_the_whole_parse_classifies_it() {
        let bodies = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}"#,
            r#"{"method":"tools/call","params":{"name":"e\u0063ho"},"id":"x","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"1.0","id":5,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo"},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","name":"rm"}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools\/call","params":{"name":"ot\u0068er"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"no/such","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"p"}}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":7}"#,
            r#"[{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo"}}]"#,
            "not json",
        ];
        for body in bodies {
            assert_eq!(
                classified_as_the_whole_parse(body.as_bytes()),
                Ok(()),
                "{body}"
            );
        }
        // The short way, escapes decoded as rmcp decodes them.
        for (body, name) in [(bodies[1], "echo"), (bodies[10], "other")] {
            assert_eq!(
                classify_request(body.as_bytes()),
                Classified::ToolCall(name.into()),
                "{body}"
            );
        }
        // A member twice: the whole parse decides.
        for body in [bodies[7], bodies[8], bodies[9]] {
            assert_eq!(
                classify_request(body.as_bytes()),
                classify_typed(body.as_bytes()),
                "{body}"
            );
        }
    }

    /// A request body: mostly a well-formed call, its members in any
    /// order, some missing, some twice, escaped, or of another type.
    fn body() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        use proptest::sample::select;
        let member =
            |choices: &'static [&'static str]| proptest::option::weighted(0.9, select(choices));
        let params = (
            member(&[
                r#""name":"echo""#,
                r#""name":"other""#,
                r#""n\u0061me":"other""#,
                r#""name":5"#,
            ]),
            proptest::collection::vec(select(PARAMS), 0..3),
        )
            .prop_flat_map(|(name, extra)| {
                let mut all: Vec<&str> = extra;
                all.extend(name);
                Just(all).prop_shuffle()
            })
            .prop_map(|m| format!(r#""params":{{{}}}"#, m.join(",")));
        (
            member(&[r#""jsonrpc":"2.0""#, r#""jsonrpc":"1.0""#]),
            member(&[r#""id":1"#, r#""id":"a""#, r#""id":null"#]),
            member(&[
                r#""method":"tools/call""#,
                r#""method":"tools\/call""#,
                r#""\u006dethod":"tools/call""#,
                r#""method":"tools/list""#,
                r#""method":"initialize""#,
                r#""method":"x/y""#,
            ]),
            proptest::option::weighted(0.9, prop_oneof![8 => params, 1 => Just(r#""params":null"#.to_owned()), 1 => Just(r#""params":[1]"#.to_owned())]),
            proptest::collection::vec(select(TOP), 0..2),
        )
            .prop_flat_map(|(jsonrpc, id, method, params, extra)| {
                let mut all: Vec<String> = extra.into_iter().map(str::to_owned).collect();
                all.extend([jsonrpc, id, method].into_iter().flatten().map(str::to_owned));
                all.extend(params);
                Just(all).prop_shuffle()
            })
            .prop_map(|m| format!("{{{}}}", m.join(",")))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]

        /// The same property over bodies drawn at random.
        #[test]
        fn any_body_is_classified_as_the_whole_parse_classifies_it(body in body()) {
            if let Err(e) = classified_as_the_whole_parse(body.as_bytes()) {
                proptest::prop_assert!(false, "{}: {}", body, e);
            }
        }
    }

    /// Members a request may hold twice.
    const TOP: &[&str] = &[
        r#""jsonrpc":"2.0""#,
        r#""id":2"#,
        r#""method":"tools/call""#,
        r#""method":"x/y""#,
        r#""params":{"name":"other"}"#,
        r#""params":{}"#,
    ];

    /// Further members of the parameters of a call.
    const PARAMS: &[&str] = &[
        r#""name":"echo""#,
        r#""name":"other""#,
        r#""arguments":{"a":1}"#,
        r#""arguments":[1]"#,
        r#""_meta":{"progressToken":1}"#,
        r#""_meta":3"#,
    ];

    #[test]
    fn public_bind_needs_auth() {
        for addr in ["0.0.0.0:8080", "192.0.2.1:80", "[::]:80"] {
            let err = server(HttpConfig::new().bind(addr.parse().unwrap())).unwrap_err();
            assert!(
                matches!(err, HttpStartError::PublicBindWithoutAuth),
                "{addr}"
            );
        }
        for addr in ["127.0.0.1:0", "[::1]:0"] {
            assert!(server(HttpConfig::new().bind(addr.parse().unwrap())).is_ok());
        }
        let auth = BearerAuth::parse("alice=0123456789abcdef0123").unwrap();
        let public = HttpConfig::new()
            .bind("0.0.0.0:8080".parse().unwrap())
            .auth(auth);
        assert!(server(public).is_ok());
    }
}
