//! Shared helpers of the hardened-mcp integration tests.
pub mod tr_support;
