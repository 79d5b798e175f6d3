//! Transports that fail closed and fast: a bounded stdio line transport and
//! streamable HTTP with bearer-token authentication.
//!
//! - [`stdio`]: [`HardenedStdio`], a drop-in [`rmcp::transport::Transport`]
//!   for servers speaking newline-delimited JSON-RPC over a byte stream. It
//!   bounds every message while reading, answers malformed lines with a fixed
//!   JSON-RPC error and keeps serving, and rate-limits those error replies.
//! - `http` (feature `http`): `HttpServer`, rmcp's streamable-HTTP service mounted under
//!   axum behind [`auth::BearerAuth`], with body, Host, timeout and bind
//!   checks.
//! - `auth` (feature `http`): the token table (hashed, constant-time comparison) that maps
//!   a bearer token to a [`CallerId`](crate::identity::CallerId).
//! - `oauth` (feature `oauth`): an OAuth 2.1 protected resource: JWT access tokens of a
//!   trusted issuer, for this resource only, with per-tool scopes.

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod auth;
mod fixed;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub mod oauth;
mod scopes;
pub mod stdio;
pub(crate) mod tasks2025;

#[cfg(feature = "http")]
pub use auth::{AuthConfigError, BearerAuth};
#[cfg(feature = "http")]
pub use http::{HttpConfig, HttpServer, HttpStartError, RunningHttpServer};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use oauth::{OAuth, OAuthConfig};
pub use scopes::{GrantedScopes, SCOPES_META_KEY};
pub use stdio::{HardenedStdio, StdioConfig};
