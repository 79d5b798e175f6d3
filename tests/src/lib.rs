//! Shared helpers of the hardened-mcp integration tests.
