//! Serving a server in one call, with logging set up the safe way.
//!
//! ```no_run
//! # use hardened_mcp::prelude::*;
//! # struct Beam;
//! # #[hardened_tools]
//! # impl Beam {
//! #     /// A tool.
//! #     #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
//! #     async fn one(&self) -> Result<Output<u8>, ToolError> { Ok(Output::new(1)) }
//! # }
//! #[tokio::main]
//! async fn main() -> Result<(), hardened_mcp::ServeError> {
//!     let server = Server::new("beam", env!("CARGO_PKG_VERSION"), Beam, Beam::hardened_tool_router());
//!     hardened_mcp::serve_stdio(server).await
//! }
//! ```
//!
//! Both helpers first call [`logging::init`](crate::logging::init) with
//! [`DEFAULT_LOG_LEVEL`] (`RUST_LOG` overrides it; a subscriber installed
//! earlier is kept): log lines go to standard error, never into the stdio
//! channel. For anything beyond these defaults (a cancellation token of
//! your own, mounting the HTTP router in a larger app) use
//! [`HardenedStdio`] and `HttpServer` directly. [`serve_http`] needs the
//! feature `http`.

use rmcp::{ServerHandler, ServiceExt as _};

use crate::transport::HardenedStdio;
#[cfg(feature = "http")]
use crate::transport::{HttpConfig, HttpServer, HttpStartError};

/// The level [`serve_stdio`] and `serve_http` log at unless `RUST_LOG`
/// says otherwise.
pub const DEFAULT_LOG_LEVEL: &str = "info";

/// Why serving stopped with an error. The texts are for the operator (they
/// go to standard error, not to a caller).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The stdio session could not start or ended with an error.
    #[error("the stdio session failed")]
    Stdio(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The HTTP server refused its configuration or could not bind.
    #[cfg(feature = "http")]
    #[error(transparent)]
    HttpStart(#[from] HttpStartError),
    /// The HTTP server stopped with an I/O error.
    #[cfg(feature = "http")]
    #[error("the HTTP server failed")]
    Http(#[source] std::io::Error),
}

/// Serves `server` over standard input and output with the hardened stdio
/// transport ([`HardenedStdio`]) until the client closes the channel.
pub async fn serve_stdio<S: ServerHandler>(server: S) -> Result<(), ServeError> {
    crate::logging::init(DEFAULT_LOG_LEVEL);
    let running = server
        .serve(HardenedStdio::stdio())
        .await
        .map_err(|e| ServeError::Stdio(Box::new(e)))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Stdio(Box::new(e)))?;
    Ok(())
}

/// Serves `server` over streamable HTTP with `config` until the process
/// gets SIGINT or SIGTERM, then shuts down gracefully. Each session gets a
/// clone of `server` (cheap for [`crate::Server`]).
#[cfg(feature = "http")]
pub async fn serve_http<S>(server: S, config: HttpConfig) -> Result<(), ServeError>
where
    S: ServerHandler + Clone,
{
    crate::logging::init(DEFAULT_LOG_LEVEL);
    http_until_signal(server, config, |_| {}).await
}

/// [`serve_http`] without the logging set-up: `started` learns the bound
/// address once the server listens.
#[cfg(feature = "http")]
pub(crate) async fn http_until_signal<S>(
    server: S,
    config: HttpConfig,
    started: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError>
where
    S: ServerHandler + Clone,
{
    let ct = tokio_util::sync::CancellationToken::new();
    let running = HttpServer::new(move || Ok(server.clone()), config)?
        .start(ct.clone())
        .await?;
    started(running.local_addr());
    tokio::spawn(async move {
        shutdown_signal().await;
        ct.cancel();
    });
    running.wait().await.map_err(ServeError::Http)
}

/// SIGINT or SIGTERM, whichever comes first (SIGINT alone where SIGTERM
/// cannot be watched).
#[cfg(feature = "http")]
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                r = tokio::signal::ctrl_c() => {
                    if r.is_err() {
                        term.recv().await;
                    }
                }
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
