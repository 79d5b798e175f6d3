//! The tool context: who is calling, whether the call was cancelled, and
//! channels for progress and log notifications. It is a tool parameter
//! that never appears in the input schema.

use std::sync::Arc;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::args::lexeme::InexactNumbers;
use crate::identity::CallerId;
use crate::transport::GrantedScopes;

/// A value the HTTP transport stored in the request parts that rmcp's
/// streamable-HTTP service puts in the request's extensions.
#[cfg(feature = "http")]
fn from_http_parts<T: Send + Sync + 'static>(rc: &RequestContext<RoleServer>) -> Option<&T> {
    rc.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<T>())
}

/// Without the HTTP transport there are no HTTP request parts.
#[cfg(not(feature = "http"))]
fn from_http_parts<T: Send + Sync + 'static>(_: &RequestContext<RoleServer>) -> Option<&T> {
    None
}

/// Whether a request came over HTTP outside any session (a stateless
/// server, or a 2026-07-28 request): nothing can reach its client once it
/// is answered.
#[cfg(feature = "http")]
pub(crate) fn sessionless_http(rc: &RequestContext<RoleServer>) -> bool {
    rc.extensions
        .get::<http::request::Parts>()
        .is_some_and(|p| !p.headers.contains_key("mcp-session-id"))
}

/// Without the HTTP transport every request comes in a session (stdio).
#[cfg(not(feature = "http"))]
pub(crate) fn sessionless_http(_: &RequestContext<RoleServer>) -> bool {
    false
}

/// The caller of a request: the [`CallerId`] the transport stored in its
/// extensions (or in the HTTP request parts), else [`CallerId::local`].
pub(crate) fn caller_of(rc: &RequestContext<RoleServer>) -> CallerId {
    rc.extensions
        .get::<CallerId>()
        .or_else(|| from_http_parts::<CallerId>(rc))
        .cloned()
        .unwrap_or_else(CallerId::local)
}

/// Per-call context handed to a tool body.
#[derive(Debug, Clone)]
pub struct ToolContext {
    caller: CallerId,
    scopes: Option<GrantedScopes>,
    cancel: CancellationToken,
    progress: Progress,
    log: ClientLog,
    task: Option<crate::tasks::TaskOffer>,
    /// Where the call's arguments hold numbers their parse rounded into
    /// integers (recorded by the transport).
    inexact: Option<InexactNumbers>,
    /// The call's questions to the client (put in the request's
    /// extensions by the server).
    round: Option<Arc<crate::ask::Round>>,
}

impl ToolContext {
    /// Builds the context of one MCP request.
    ///
    /// The caller is the [`CallerId`] the transport's authentication layer
    /// stored in the request's extensions (directly, or in the HTTP request
    /// parts rmcp's streamable-HTTP service stores there). When none is
    /// present (stdio), the caller is [`CallerId::local`].
    pub fn from_request(rc: &RequestContext<RoleServer>) -> Self {
        let caller = caller_of(rc);
        let scopes = from_http_parts::<GrantedScopes>(rc).cloned();
        let inexact = rc
            .extensions
            .get::<InexactNumbers>()
            .or_else(|| from_http_parts::<InexactNumbers>(rc))
            .cloned();
        let progress = match rc.meta.get_progress_token() {
            Some(token) => Progress::to_peer(rc.peer.clone(), token),
            None => Progress::none(),
        };
        // 2026-07-28: the request's own `_meta` log level; before, the
        // level the session set (`logging/setLevel`), which the server
        // puts in the request's extensions.
        #[allow(deprecated)] // SEP-2577 deprecates logging; 2025-11-25 clients use it
        let threshold = rc
            .meta
            .log_level()
            .map(LogLevel::from_rmcp)
            .or_else(|| rc.extensions.get::<LogThreshold>().map(|t| t.0));
        let log = match threshold {
            Some(level) => ClientLog::to_peer(rc.peer.clone(), level),
            None => ClientLog::none(),
        };
        Self {
            caller,
            scopes,
            cancel: rc.ct.clone(),
            progress,
            log,
            task: None,
            inexact,
            round: rc.extensions.get::<Arc<crate::ask::Round>>().cloned(),
        }
    }

    /// A context for calls that do not come through MCP (tests, internal
    /// callers): the given caller, a fresh cancellation token, no progress.
    pub fn detached(caller: CallerId) -> Self {
        Self {
            caller,
            scopes: None,
            cancel: CancellationToken::new(),
            progress: Progress::none(),
            log: ClientLog::none(),
            task: None,
            inexact: None,
            round: None,
        }
    }

    /// The call's questions to the client, if it came through a server.
    pub(crate) fn round(&self) -> Option<&crate::ask::Round> {
        self.round.as_deref()
    }

    /// The places of the call's arguments whose numbers were rounded into
    /// integers by the JSON parse.
    pub(crate) fn inexact_numbers(&self) -> Option<&InexactNumbers> {
        self.inexact.as_ref()
    }

    /// The same context, offering the body to answer as an MCP task (the
    /// route of a `task` tool does it when the client takes tasks).
    pub(crate) fn with_task_offer(mut self, offer: crate::tasks::TaskOffer) -> Self {
        self.task = Some(offer);
        self
    }

    /// Whether the call may be answered with an MCP task: the tool is
    /// declared `task`, the server serves tasks, and the client takes them.
    /// `JobService::run` (feature `jobs`) answers with one then.
    pub fn task_offered(&self) -> bool {
        self.task.is_some()
    }

    #[cfg(feature = "jobs")]
    pub(crate) fn task_offer(&self) -> Option<&crate::tasks::TaskOffer> {
        self.task.as_ref()
    }

    /// The same context, limited to `scopes` as an OAuth access token
    /// would limit it (tests of scoped tools).
    pub fn with_scopes(mut self, scopes: GrantedScopes) -> Self {
        self.scopes = Some(scopes);
        self
    }

    /// The scopes of the caller's OAuth access token; `None` when the
    /// caller did not come with one (stdio, a static bearer token): then no
    /// scope applies.
    pub fn scopes(&self) -> Option<&GrantedScopes> {
        self.scopes.as_ref()
    }

    /// Who is calling.
    pub fn caller(&self) -> &CallerId {
        &self.caller
    }

    /// Cancelled when the client cancels the request or the session ends.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Where progress reports go.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Where log notifications to the client go.
    pub fn log(&self) -> &ClientLog {
        &self.log
    }
}

/// A progress reporter; reports are dropped when the client asked for none.
#[derive(Debug, Clone)]
pub struct Progress {
    target: Option<(Peer<RoleServer>, ProgressToken)>,
}

impl Progress {
    /// A reporter that discards every report.
    pub fn none() -> Self {
        Self { target: None }
    }

    fn to_peer(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        Self {
            target: Some((peer, token)),
        }
    }

    /// Whether the client asked for progress.
    pub fn is_requested(&self) -> bool {
        self.target.is_some()
    }

    /// Sends one progress notification. `message` is server-authored text
    /// (a `&'static str`), never solver output. Delivery failures are
    /// ignored: progress is advisory.
    pub async fn report(&self, progress: f64, total: Option<f64>, message: Option<&'static str>) {
        let Some((peer, token)) = &self.target else {
            return;
        };
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        let mut param = ProgressNotificationParam::new(token.clone(), progress);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(message) = message {
            param = param.with_message(message);
        }
        if let Err(e) = peer.notify_progress(param).await {
            tracing::debug!(error = %e, "progress notification not delivered");
        }
    }
}

/// The level of a log notification, least severe first (RFC 5424's
/// levels, as MCP names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Ordinary progress.
    Info,
    /// Normal but significant.
    Notice,
    /// Something to look at.
    Warning,
    /// A failure.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

#[allow(deprecated)] // SEP-2577 deprecates logging; 2025-11-25 clients use it
impl LogLevel {
    pub(crate) fn from_rmcp(level: rmcp::model::LoggingLevel) -> Self {
        use rmcp::model::LoggingLevel as L;
        match level {
            L::Debug => Self::Debug,
            L::Info => Self::Info,
            L::Notice => Self::Notice,
            L::Warning => Self::Warning,
            L::Error => Self::Error,
            L::Critical => Self::Critical,
            L::Alert => Self::Alert,
            L::Emergency => Self::Emergency,
        }
    }

    fn to_rmcp(self) -> rmcp::model::LoggingLevel {
        use rmcp::model::LoggingLevel as L;
        match self {
            Self::Debug => L::Debug,
            Self::Info => L::Info,
            Self::Notice => L::Notice,
            Self::Warning => L::Warning,
            Self::Error => L::Error,
            Self::Critical => L::Critical,
            Self::Alert => L::Alert,
            Self::Emergency => L::Emergency,
        }
    }
}

/// The log level a session set, put in a call's extensions by the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogThreshold(pub(crate) LogLevel);

/// Log notifications to the client (`notifications/message`): sent only
/// at or above the level the client asked for (with `logging/setLevel` in
/// a 2025-11-25 session, or in a 2026-07-28 request's `_meta`); a client
/// that asked for none gets none.
#[derive(Debug, Clone)]
pub struct ClientLog {
    target: Option<(Peer<RoleServer>, LogLevel)>,
}

impl ClientLog {
    /// A log that discards every message.
    pub fn none() -> Self {
        Self { target: None }
    }

    fn to_peer(peer: Peer<RoleServer>, threshold: LogLevel) -> Self {
        Self {
            target: Some((peer, threshold)),
        }
    }

    /// Whether a message at `level` would be sent.
    pub fn enabled(&self, level: LogLevel) -> bool {
        self.target.as_ref().is_some_and(|(_, t)| level >= *t)
    }

    /// Sends `message` at `level` if the client asked for it. The message
    /// is server-authored text (a `&'static str`): never a value from the
    /// caller, a path or solver output, as in the server's own log.
    /// Delivery failures are ignored: logging is advisory.
    pub async fn send(&self, level: LogLevel, message: &'static str) {
        let Some((peer, threshold)) = &self.target else {
            return;
        };
        if level < *threshold {
            return;
        }
        #[allow(deprecated)] // SEP-2577 deprecates logging; 2025-11-25 clients use it
        let param = rmcp::model::LoggingMessageNotificationParam::new(
            level.to_rmcp(),
            serde_json::Value::from(message),
        );
        #[allow(deprecated)]
        let sent = peer.notify_logging_message(param).await;
        if let Err(e) = sent {
            tracing::debug!(error = %e, "log notification not delivered");
        }
    }
}
