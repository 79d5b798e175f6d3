//! Transports that fail closed and fast: a bounded stdio line transport and
//! streamable HTTP with bearer-token authentication.
//!
//! - [`stdio`]: [`HardenedStdio`], a drop-in [`rmcp::transport::Transport`]
//!   for servers speaking newline-delimited JSON-RPC over a byte stream. It
//!   bounds every message while reading, answers malformed lines with a fixed
//!   JSON-RPC error and keeps serving, and rate-limits those error replies.
//! - [`http`]: [`HttpServer`], rmcp's streamable-HTTP service mounted under
//!   axum behind [`auth::BearerAuth`], with body, Host, timeout and bind
//!   checks.
//! - [`auth`]: the token table (hashed, constant-time comparison) that maps
//!   a bearer token to a [`CallerId`](crate::identity::CallerId).
//! - [`oauth`]: an OAuth 2.1 protected resource: JWT access tokens of a
//!   trusted issuer, for this resource only, with per-tool scopes.

pub mod auth;
mod fixed;
pub mod http;
pub mod oauth;
pub mod stdio;
pub(crate) mod tasks2025;

pub use auth::{AuthConfigError, BearerAuth};
pub use http::{HttpConfig, HttpServer, HttpStartError, RunningHttpServer};
pub use oauth::{OAuth, OAuthConfig};
pub use stdio::{HardenedStdio, StdioConfig};
