//! The SPICE example: circuit simulation with ngspice, a third-party solver
//! the framework did not write, behind hardened MCP tools. The binary
//! `spice-server` has the modes `serve` (stdio) and `demo`.

pub mod app;
pub mod circuit;
pub mod cli;
pub mod demo;
pub mod raw;
pub mod server;
