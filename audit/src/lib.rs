//! `mcp-audit`: a black-box hardening audit of any MCP server, in any
//! language.
//!
//! - [`review`]: what `tools/list` leaves unbounded or unsafe (numbers
//!   without both bounds, strings without a length, enum or pattern,
//!   arrays without `maxItems`, open objects, no `outputSchema`, free-text
//!   paths and commands, secret-like result fields);
//! - [`mutate`]: calls derived from each input schema, one mutation at a
//!   time from a schema-valid baseline, each checked to be forbidden by the
//!   schema before it is sent, a canary in every string and key and a
//!   numeric canary in every bounded number;
//! - [`client`]: a raw JSON-RPC client over stdio ([`stdio`]) or
//!   streamable HTTP ([`http`]), every exchange bounded in time;
//! - [`run`]: sends them and classifies each answer (rejected,
//!   accepted although forbidden, canary reflected, no answer, server
//!   dead), then the wire checks (unparsable lines, `1e999`, `NaN`,
//!   truncated JSON, non-object arguments, an oversized line);
//! - [`report`]: text, JSON and SARIF; [`finding::Severity`] gates the exit
//!   status.
//!
//! By default the audit sends only calls the schema forbids: a correct
//! server refuses them all, so auditing a production server changes
//! nothing. `--allow-valid-calls` adds one schema-valid call per tool, only
//! to tools annotated read-only and not destructive.

pub mod client;
pub mod finding;
pub mod http;
pub mod mutate;
pub mod report;
pub mod review;
pub mod run;
pub mod stdio;

pub use finding::{Finding, Severity};
pub use report::Report;
