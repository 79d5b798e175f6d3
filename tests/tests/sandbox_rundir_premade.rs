//! The run-directory checks of `sandbox_rundir.rs` again, with every run launched
//! from a premade init (`Sandbox::make_ahead`; this crate's name ends in
//! `_premade`, which `support::premade` reads). Each launch checks that it
//! took that path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_rundir.rs"]
mod suite;
