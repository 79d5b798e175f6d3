//! The Markdown pages, compiled: every Rust block of README.md and of
//! docs/*.md is a doctest of this crate (`cargo test --doc`), so the pages
//! cannot drift from the API. This crate sees what the pages show: the
//! runtime, rmcp, and the helpers of [`crate::doc_context`].
//!
//! docs/quickstart.md is not here: its two blocks are the quickstart
//! crate's `src/main.rs` and `src/tests.rs`, compared byte for byte by
//! `examples/quickstart/tests/docs.rs` (and so compiled and run as that
//! crate). `tests/tests/doc_pages.rs` fails when a page with a Rust block is
//! in neither place.

/// README.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// docs/guide.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide.md")]
pub struct GuideDoctests;

/// docs/attributes.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/attributes.md")]
pub struct AttributesDoctests;

/// docs/compile-errors.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/compile-errors.md")]
pub struct CompileErrorsDoctests;

/// docs/transport.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/transport.md")]
pub struct TransportDoctests;

/// docs/scale-out.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/scale-out.md")]
pub struct ScaleOutDoctests;

/// docs/audit.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/audit.md")]
pub struct AuditDoctests;

/// docs/threat-model.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/threat-model.md")]
pub struct ThreatModelDoctests;

/// docs/benchmarks.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/benchmarks.md")]
pub struct BenchmarksDoctests;

/// docs/architecture.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/architecture.md")]
pub struct ArchitectureDoctests;

/// docs/protocol.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/protocol.md")]
pub struct ProtocolDoctests;
