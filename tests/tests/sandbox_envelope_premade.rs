//! The resource-envelope attacks of `sandbox_envelope.rs` again, with every run launched
//! from a premade init (`Sandbox::make_ahead`; this crate's name ends in
//! `_premade`, which `support::premade` reads). Each launch checks that it
//! took that path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_envelope.rs"]
mod suite;
