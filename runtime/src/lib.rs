#![doc = include_str!("../../README.md")]
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod args;
pub mod context;
pub mod deck;
pub mod error;
pub mod identity;
pub mod image;
pub mod limits;
pub mod logging;
pub mod output;
pub mod paging;
pub mod prelude;
pub mod redact;
pub mod route;
pub mod runs;
pub mod sandbox;
pub mod schema;
pub mod secret;
pub mod serve;
pub mod server;
pub mod transport;
pub mod untrusted;

pub use context::ToolContext;
pub use error::ToolError;
pub use hardened_mcp_macros::{
    HardenedArgs, ToolEnum, bounded, hardened_tool, hardened_tools, tool_output,
};
pub use identity::CallerId;
pub use output::Output;
pub use serve::{ServeError, serve_http, serve_stdio};
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
