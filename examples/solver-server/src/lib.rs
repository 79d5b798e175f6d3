//! The example solver server: a 1-D heat-diffusion solver (`heat1d`) behind
//! hardened MCP tools. The binary `solver-server` has the modes `serve`
//! (stdio), `serve --http ADDR` and `demo`.

pub mod app;
pub mod cli;
pub mod config;
pub mod demo;
pub mod heat1d;
pub mod server;
