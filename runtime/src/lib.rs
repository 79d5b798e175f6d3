#![doc = include_str!("../../README.md")]
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod args;
pub mod context;
pub mod error;
pub mod identity;
pub mod limits;
pub mod output;
pub mod prelude;
pub mod route;
pub mod runs;
pub mod schema;

pub use context::ToolContext;
pub use error::ToolError;
pub use hardened_mcp_macros::{HardenedArgs, ToolEnum, bounded, hardened_tool, hardened_tools};
pub use identity::CallerId;
pub use output::Output;

#[doc(hidden)]
pub mod private;

/// Support for generated code; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::private as v1;
}
