//! Shared helpers of the hardened-mcp integration tests.
pub mod macros_fixture;
pub mod tr_support;
