//! `hardened-mcp-audit`: a black-box hardening audit of any MCP server, in any
//! language.
//!
//! - [`review`]: what `tools/list` leaves unbounded or unsafe (numbers
//!   without both bounds, strings without a length, enum or pattern,
//!   arrays without `maxItems`, open objects, no `outputSchema`, free-text
//!   paths and commands, secret-like result fields);
//! - [`poisoning`]: what each tool says to the model (hidden characters,
//!   instructions, secret files, other servers' tools), shown escaped
//!   ([`text`]);
//! - [`schema`]: the input schema as a document (local `$ref`s, `allOf`,
//!   alternatives), a schema-valid baseline of any shape, or the proof that
//!   none exists;
//! - [`mutate`]: calls derived from each input schema, one mutation at a
//!   time at every depth from the baseline, each checked to be forbidden by
//!   the schema before it is sent, a canary in every string and key and a
//!   numeric canary in every bounded number, and each number and boolean's
//!   own value in the types lax parsers coerce (`"7"`, `[7]`, `"true"`);
//! - [`pin`]: digests of each tool, against a pin file and between two
//!   `tools/list` of a session;
//! - [`auth`]: over HTTP, the authorization and origin surface;
//! - [`client`]: a raw JSON-RPC client over stdio ([`stdio`]) or
//!   streamable HTTP ([`http`]), every exchange bounded in time;
//! - [`run`]: sends them and classifies each answer (rejected,
//!   accepted although forbidden, canary reflected, no answer, server
//!   dead), then the wire checks (unparsable lines, `1e999`, `NaN`,
//!   truncated JSON, non-object arguments, an oversized line);
//! - [`report`]: text, JSON and SARIF (OWASP MCP Top 10 tags);
//!   [`suppress`] accepts known findings with a reason;
//!   [`finding::Severity`] gates the exit status.
//!
//! By default the audit sends only calls the schema forbids: a correct
//! server refuses them all, so auditing a production server changes
//! nothing. `--allow-valid-calls` adds one schema-valid call per tool, only
//! to tools annotated read-only and not destructive, with a `ping` in
//! flight beside it: a server that leaves the ping waiting for the call
//! is blocked by it ([`client::Client::overlapped`]), and, to parameters
//! named like a path or a URL, a traversal and a `file:` URL
//! ([`traversal`]). `--confine` starts a stdio server under Landlock,
//! writing only where the audit lets it ([`confine`]).

pub mod auth;
pub mod client;
pub mod confine;
pub mod decoy;
pub mod effects;
pub mod fetch;
pub mod finding;
pub mod http;
pub mod mutate;
pub mod netns;
pub mod packet;
pub mod pin;
pub mod poisoning;
pub mod report;
pub mod review;
pub mod run;
pub mod schema;
pub mod sql;
pub mod stdio;
pub mod suppress;
pub mod text;
pub mod traversal;

pub use finding::{Finding, Severity};
pub use report::Report;
