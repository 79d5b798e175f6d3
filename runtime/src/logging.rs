//! Logging set up the one safe way for an MCP server.
//!
//! A stdio server's standard output *is* the JSON-RPC channel: one stray
//! log line there and the client stops parsing the session. [`init`]
//! installs a `tracing` subscriber that
//!
//! - writes to **standard error**, never standard output;
//! - formats fields through [`RedactingFields`] (secret-like fields
//!   redacted, values shortened, control characters and escapes
//!   neutralised, so a logged value cannot forge a line);
//! - uses ANSI colours only when standard error is a terminal;
//! - takes its level from `RUST_LOG` (the usual `EnvFilter` syntax), else
//!   from the given default.
//!
//! Internal errors carry a reference id ([`crate::error::ReferenceId`]) that
//! points into this log: without a logger the id points at nothing.
//!
//! ```no_run
//! // First thing in `main`:
//! hardened_mcp::logging::init("info");
//! // … build the server and serve it over stdio …
//! ```

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::redact::RedactingFields;

/// The environment variable [`init`] reads the level from.
pub const LEVEL_ENV: &str = "RUST_LOG";

/// Installs the process-wide subscriber (see the module documentation).
/// `default_level` applies when `RUST_LOG` is unset or invalid, e.g.
/// `"info"` or `"warn,hardened_mcp=info"`. Returns `false` (and changes
/// nothing) when a subscriber was already installed.
pub fn init(default_level: &str) -> bool {
    let filter = EnvFilter::try_from_env(LEVEL_ENV).unwrap_or_else(|_| {
        EnvFilter::try_new(default_level).unwrap_or_else(|_| EnvFilter::new("info"))
    });
    tracing_subscriber::fmt()
        .fmt_fields(RedactingFields)
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .is_ok()
}
