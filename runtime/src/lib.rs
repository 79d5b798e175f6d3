#![doc = include_str!("../../README.md")]
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod context;
pub mod deck;
pub mod identity;
pub mod image;
pub mod limits;
pub mod paging;
pub mod redact;
pub mod runs;
pub mod secret;
pub mod untrusted;

pub use context::ToolContext;
pub use identity::CallerId;
