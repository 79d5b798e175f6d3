//! Procedural macros of hardened-mcp. Use them through `hardened_mcp::prelude`.
