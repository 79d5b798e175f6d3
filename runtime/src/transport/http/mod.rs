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

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::future::BoxFuture;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::identity::CallerId;
use crate::transport::auth::BearerAuth;

mod body;

/// Default path the MCP endpoint is mounted at.
pub const DEFAULT_PATH: &str = "/mcp";
/// Default request body limit: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default limit on producing a response head, body reading included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default limit on receiving a request's headers (also closes idle
/// keep-alive connections).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default number of connections served at once; more wait in the backlog.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// How long open connections may take to finish after shutdown starts.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Body of every `401`.
pub const UNAUTHORIZED_BODY: &str = "Unauthorized: a valid bearer token is required";
/// Body of a `404` for an unknown or foreign session (rmcp's own text).
pub const SESSION_NOT_FOUND_BODY: &str = "Not Found: Session not found";
/// Body of a `408` when the request timeout elapses.
pub const TIMEOUT_BODY: &str = "Request Timeout";

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
    /// The connection limit is zero.
    #[error("the connection limit must be at least 1")]
    ZeroConnections,
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
    path: String,
    max_body_bytes: usize,
    allowed_hosts: Option<Vec<String>>,
    request_timeout: Duration,
    header_read_timeout: Duration,
    max_connections: usize,
    session_mode: bool,
    json_response: bool,
    sse_keep_alive: Option<Duration>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("bind", &self.bind)
            .field("auth", &self.auth)
            .field("path", &self.path)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("request_timeout", &self.request_timeout)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            auth: None,
            path: DEFAULT_PATH.to_owned(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            session_mode: true,
            json_response: false,
            sse_keep_alive: Some(Duration::from_secs(15)),
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

    /// Hosts (`name` or `name:port`) accepted in the `Host` header. Default:
    /// rmcp's loopback list (`localhost`, `127.0.0.1`, `::1`), which a server
    /// reachable under another name must replace. Other hosts get `403`.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
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

    /// Connections served at once (default [`DEFAULT_MAX_CONNECTIONS`]);
    /// further ones wait in the listen backlog.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
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

    /// The address to listen on.
    pub fn bind_addr(&self) -> SocketAddr {
        self.bind
    }

    fn check(&self) -> Result<(), HttpStartError> {
        if self.auth.is_none() && !self.bind.ip().is_loopback() {
            return Err(HttpStartError::PublicBindWithoutAuth);
        }
        if self.max_body_bytes == 0 {
            return Err(HttpStartError::ZeroBodyLimit);
        }
        if self.max_connections == 0 {
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
    /// each stateless request).
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
        if let Some(hosts) = &b.allowed_hosts {
            config = config.with_allowed_hosts(hosts.iter().cloned());
        }
        let sessions = Arc::new(LocalSessionManager::default());
        let factory = Arc::clone(&self.factory);
        let inner = StreamableHttpService::new(move || factory(), Arc::clone(&sessions), config);
        let service = Guarded {
            inner,
            auth: b.auth.clone(),
            bindings: Arc::new(SessionBindings::new(sessions)),
            timeout: b.request_timeout,
            max_body_bytes: b.max_body_bytes,
        };
        axum::Router::new().route_service(&b.path, service)
    }

    /// Binds the listener and serves until `ct` is cancelled, then shuts
    /// down gracefully.
    pub async fn start(self, ct: CancellationToken) -> Result<RunningHttpServer, HttpStartError> {
        let listener = tokio::net::TcpListener::bind(self.b.bind)
            .await
            .map_err(HttpStartError::Bind)?;
        let local_addr = listener.local_addr().map_err(HttpStartError::Bind)?;
        let router = self.router(ct.child_token());
        let limits = ConnLimits {
            header_read_timeout: self.b.header_read_timeout,
            max_connections: self.b.max_connections,
        };
        let task = tokio::spawn(serve(listener, router, ct.clone(), limits));
        tracing::info!(
            addr = %local_addr,
            authenticated = self.b.auth.is_some(),
            "serving MCP over HTTP"
        );
        Ok(RunningHttpServer {
            local_addr,
            ct,
            task,
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct ConnLimits {
    header_read_timeout: Duration,
    max_connections: usize,
}

/// Accepts and serves HTTP/1.1 connections until `ct` is cancelled, then
/// lets them finish for at most [`SHUTDOWN_GRACE`].
///
/// Served with hyper directly rather than `axum::serve`, which sets no
/// header-read timeout and no connection limit.
async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    ct: CancellationToken,
    limits: ConnLimits,
) -> std::io::Result<()> {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let permit = tokio::select! {
            () = ct.cancelled() => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = ct.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors and the like: back off, keep serving.
                    tracing::warn!(kind = ?e.kind(), "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let ct = ct.clone();
        connections.spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
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

/// Which caller owns each live session.
struct SessionBindings {
    owners: Mutex<HashMap<String, CallerId>>,
    prune_at: Mutex<usize>,
    sessions: Arc<LocalSessionManager>,
}

const PRUNE_FLOOR: usize = 1024;

impl SessionBindings {
    fn new(sessions: Arc<LocalSessionManager>) -> Self {
        Self {
            owners: Mutex::new(HashMap::new()),
            prune_at: Mutex::new(PRUNE_FLOOR),
            sessions,
        }
    }

    fn owner(&self, session: &str) -> Option<CallerId> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .cloned()
    }

    fn unbind(&self, session: &str) {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
    }

    async fn bind(&self, session: String, caller: CallerId) {
        let len = {
            let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
            owners.insert(session, caller);
            owners.len()
        };
        let due = *self.prune_at.lock().unwrap_or_else(PoisonError::into_inner) <= len;
        if due {
            self.prune().await;
        }
    }

    /// Forgets sessions rmcp no longer has (closed or expired).
    async fn prune(&self) {
        let ids: Vec<String> = self
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
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
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        for id in &gone {
            owners.remove(id);
        }
        *self.prune_at.lock().unwrap_or_else(PoisonError::into_inner) =
            (owners.len() * 2).max(PRUNE_FLOOR);
    }
}

/// Authentication, credential stripping, caller injection, session binding
/// and the request timeout in front of rmcp's service.
struct Guarded<S: ServerHandler + Send + 'static> {
    inner: StreamableHttpService<S, LocalSessionManager>,
    auth: Option<Arc<BearerAuth>>,
    bindings: Arc<SessionBindings>,
    timeout: Duration,
    max_body_bytes: usize,
}

impl<S: ServerHandler + Send + 'static> Clone for Guarded<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            auth: self.auth.clone(),
            bindings: Arc::clone(&self.bindings),
            timeout: self.timeout,
            max_body_bytes: self.max_body_bytes,
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
    async fn handle(self, mut req: Request<Body>) -> Response<HttpBody> {
        let caller = match &self.auth {
            None => CallerId::local(),
            Some(auth) => {
                let values = req.headers().get_all(header::AUTHORIZATION);
                match auth.authenticate(values.iter().map(HeaderValue::as_bytes)) {
                    Ok(caller) => caller.clone(),
                    Err(failure) => {
                        tracing::warn!(
                            reason = failure.as_str(),
                            "rejected an HTTP request: authentication failed"
                        );
                        return unauthorized();
                    }
                }
            }
        };
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

        let inner = self.inner.clone();
        let max_body = self.max_body_bytes;
        let answered = async move {
            match screen_post(req, max_body).await {
                Screened::Forward(req) => inner.handle(req).await,
                Screened::Answered(response) => response,
            }
        };
        let response = match tokio::time::timeout(self.timeout, answered).await {
            Ok(response) => response,
            Err(_) => {
                tracing::warn!(caller = %caller, "an HTTP request timed out");
                return fixed(StatusCode::REQUEST_TIMEOUT, TIMEOUT_BODY);
            }
        };

        match &session {
            None => {
                if let Some(created) = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok())
                {
                    self.bindings.bind(created.to_owned(), caller).await;
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
        body::fix_response(response).await
    }
}

/// What [`screen_post`] decided.
enum Screened {
    /// Pass the (re-assembled) request to rmcp.
    Forward(Request<Body>),
    /// Answered here.
    Answered(Response<HttpBody>),
}

/// Reads a POST body (at most `max_body` bytes) and answers a JSON-RPC
/// request for a method rmcp does not know with a fixed `-32601` error:
/// rmcp would answer it with the method name as the message, text the
/// caller chose. Everything else is forwarded with the body re-assembled.
async fn screen_post(req: Request<Body>, max_body: usize) -> Screened {
    if req.method() != Method::POST {
        return Screened::Forward(req);
    }
    let (parts, body) = req.into_parts();
    let bytes = match http_body_util::Limited::new(body, max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            tracing::warn!("rejected an HTTP request: body above the size limit");
            return Screened::Answered(fixed(
                StatusCode::PAYLOAD_TOO_LARGE,
                body::fixed_status_text(StatusCode::PAYLOAD_TOO_LARGE),
            ));
        }
        Err(_) => {
            tracing::warn!("rejected an HTTP request: the body could not be read");
            return Screened::Answered(fixed(
                StatusCode::BAD_REQUEST,
                body::fixed_status_text(StatusCode::BAD_REQUEST),
            ));
        }
    };
    if let Some(id) = unknown_method_request(&bytes) {
        tracing::warn!("answered a request for an unknown method with a fixed error");
        let body = super::fixed::jsonrpc_error(serde_json::json!(id), -32601);
        let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return Screened::Answered(response);
    }
    Screened::Forward(Request::from_parts(parts, Body::from(bytes)))
}

/// The id of a JSON-RPC request whose method (or parameters) rmcp cannot
/// type, so that it would reach its custom-request fallback.
fn unknown_method_request(body: &[u8]) -> Option<rmcp::model::RequestId> {
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
    match serde_json::from_slice::<ClientJsonRpcMessage>(body).ok()? {
        JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::CustomRequest(_)) => {
            Some(r.id)
        }
        _ => None,
    }
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

/// A `401`, closing the connection: an unauthenticated client keeps no
/// connection open, and says so (`Connection: close`), so a client never
/// reuses a connection the server is closing (the request body, unread,
/// makes hyper close it anyway).
fn unauthorized() -> Response<HttpBody> {
    let mut response = fixed(StatusCode::UNAUTHORIZED, UNAUTHORIZED_BODY);
    let headers = response.headers_mut();
    headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
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
