#![doc = include_str!("../README.md")]
//!
//! # Module map
//!
//! **Declaring tools.** [`prelude`] is the one import of a tool file: the
//! attribute macros ([`hardened_tools`], [`hardened_tool`], [`bounded`]),
//! the derives ([`HardenedArgs`], [`ToolEnum`], [`tool_output`]), and what
//! a tool body meets: [`ToolContext`] ([`context`]), [`Output`]
//! ([`output`]), [`ToolError`] ([`error`]). [`args`] holds the refusal of
//! an argument ([`args::ArgError`]) and the derives' traits;
//! [`concurrency`] the per-caller ceilings; [`schema`] the JSON Schema
//! dialect and its standard formats. The macros build a [`ToolSet`] of
//! [`HardenedTool`]s (or report [`RouterError`]s at startup); [`Server`]
//! serves it.
//!
//! **Run state.** [`runs`]: the run root, opaque run handles, confined
//! file access. [`sandbox`]: containment of one solver process tree, the
//! only way a solver is started. [`jobs`], above it: where runs execute
//! (this machine or Slurm), detached jobs, persisted status, re-attach. [`deck`]:
//! solver input decks from typed values. [`identity`]: who a call acts for.
//! [`secret`]: secrets that never print.
//!
//! **Result hygiene.** [`untrusted`]: text from outside the server, marked
//! as data. [`paging`]: bounded readers for logs and fields. [`image`]:
//! checked PNG content. [`redact`]: the secret-name rule of logs and
//! outputs.
//!
//! **Transports.** [`serve_stdio`] and [`serve_http`] ([`serve`]) in one
//! call; [`transport`]: the bounded stdio transport, the HTTP server
//! (admission, sessions, bearer and OAuth 2.1 callers); [`logging`]: logs
//! to stderr with secrets redacted.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_op_in_unsafe_fn)]

// The crate's own tools (the job life cycle) are declared with its macros,
// whose generated code names `::hardened_mcp`.
#[cfg(feature = "jobs")]
extern crate self as hardened_mcp;

pub mod args;
pub mod ask;
pub mod audio;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
pub mod concurrency;
pub mod context;
pub mod deck;
pub mod error;
pub mod identity;
pub mod image;
#[cfg(feature = "jobs")]
#[cfg_attr(docsrs, doc(cfg(feature = "jobs")))]
pub mod jobs;
pub mod logging;
pub mod output;
pub mod paging;
pub mod prelude;
pub mod redact;
mod route;
#[cfg(feature = "runs")]
#[cfg_attr(docsrs, doc(cfg(feature = "runs")))]
pub mod runs;
#[cfg(feature = "sandbox")]
#[cfg_attr(docsrs, doc(cfg(feature = "sandbox")))]
pub mod sandbox;
pub mod schema;
pub mod secret;
pub mod serve;
pub mod server;
mod tasks;
pub mod transport;
pub mod untrusted;

pub use context::ToolContext;
pub use error::ToolError;
pub use hardened_mcp_macros::{
    HardenedArgs, ToolEnum, bounded, hardened_tool, hardened_tools, tool_output,
};
pub use identity::CallerId;
pub use output::Output;
pub use route::{HardenedTool, RouterError, ToolSet};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use serve::serve_http;
pub use serve::{ServeError, serve_stdio};
pub use server::Server;

// What a server needs of the crates underneath, so that it depends on
// `hardened-mcp` and `tokio` only. Derives from serde and schemars need
// their `crate` path set when reached this way: `#[tool_output]` does it.
pub use rmcp;
pub use schemars;
pub use serde;
pub use serde_json;

/// Support for generated code; not a public API. Generated code reaches the
/// runtime only through `::hardened_mcp::__private::v1`, versioned so that a
/// macro crate and a runtime crate that disagree fail to compile.
#[doc(hidden)]
pub mod __private {
    pub mod v1;
}
