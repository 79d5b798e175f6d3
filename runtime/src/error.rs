//! Tool errors: every variant maps to a fixed, server-authored public text
//! and a structured `error` object; internal detail goes only to the log.

use std::fmt;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use crate::args::ArgError;
use crate::concurrency::{Ceiling, LimitError};

/// Why a tool call failed, as the caller may see it.
///
/// Texts are fixed: an argument error names only the declared argument and
/// bound; nothing the caller sent, no path, no OS error, no solver output.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments were refused by the strict parser or revalidation.
    InvalidArguments(ArgError),
    /// The estimated cost is above the tool's ceiling.
    CostExceeded {
        /// The declared `max_cost`.
        ceiling: f64,
        /// The declared `units`.
        units: &'static str,
    },
    /// A concurrency ceiling is reached: the text says which (calls or
    /// solver runs, this caller's or the server's).
    Busy(Ceiling),
    /// The call ran longer than the tool's `timeout_s`.
    Timeout,
    /// The client cancelled the call.
    Cancelled,
    /// The run handle is unknown, malformed, or belongs to someone else
    /// (deliberately indistinguishable).
    UnknownRun,
    /// The requested item does not exist.
    NotFound,
    /// The call named a tool the server does not have. Nothing of the
    /// name sent comes back; the text points at `tools/list`.
    UnknownTool,
    /// The caller's OAuth access token lacks a scope the tool declares.
    InsufficientScope,
    /// A per-caller quota of the run root refused a new run.
    QuotaExceeded(Quota),
    /// The request is refused for a reason written in server code.
    Rejected(&'static str),
    /// Something failed inside the server; the detail is in the server log
    /// under this reference id.
    Internal(ReferenceId),
    /// The call waits for the client's answers (2026-07-28): a question
    /// was asked whose answer did not come with the call. Return it (`?`):
    /// the call ends with an input-required result, and the client calls
    /// again with the answers.
    AwaitingInput,
    /// A question needs a capability the client did not declare
    /// (the call ends with the protocol's `-32021`).
    ClientCannotAnswer(ClientNeed),
    /// An answer was not of the kind asked for (the call ends with a
    /// protocol error).
    MalformedAnswer,
    /// An answer's content failed its type's parser or bounds.
    AnswerRefused {
        /// The question's key.
        question: &'static str,
        /// The rule that failed: the field and the bound, never the value.
        error: ArgError,
    },
    /// The client did not answer a question (an error, or no answer in
    /// time).
    NoAnswer,
    /// The person did not approve the call.
    NotApproved,
}

/// Which per-caller quota of the run root (feature `runs`: `runs::Quotas`)
/// refused a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Quota {
    /// The runs a caller may hold (`Quotas::max_runs`).
    #[error("runs held")]
    Runs,
    /// The bytes a caller's runs may hold (`Quotas::max_bytes`).
    #[error("bytes held")]
    Bytes,
    /// The runs a caller may create per minute
    /// (`Quotas::max_creates_per_minute`).
    #[error("runs created per minute")]
    CreateRate,
}

impl Quota {
    /// The quota's stable token in a structured error.
    pub const fn token(self) -> &'static str {
        match self {
            Self::Runs => "runs",
            Self::Bytes => "bytes",
            Self::CreateRate => "creates_per_minute",
        }
    }
}

/// What a question to the client needs it to support
/// ([`hardened_mcp::ask`](crate::ask)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientNeed {
    /// Form elicitation (a question to the person behind the client).
    Elicitation,
    /// URL-mode elicitation (a page the person is asked to open).
    UrlElicitation,
    /// Sampling (a completion from the client's model).
    Sampling,
    /// The client's roots.
    Roots,
}

impl ClientNeed {
    /// The capability's name in the specification.
    pub const fn capability(self) -> &'static str {
        match self {
            Self::Elicitation | Self::UrlElicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }
}

/// An opaque id linking a caller-visible internal error to its log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReferenceId(u64);

impl ReferenceId {
    /// A fresh random id.
    pub fn new() -> Self {
        let mut b = [0u8; 8];
        // A failing OS RNG leaves a zero id: ids only link logs, they guard nothing.
        let _ = getrandom::fill(&mut b);
        Self(u64::from_le_bytes(b))
    }
}

impl Default for ReferenceId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for ReferenceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ref-{:016x}", self.0)
    }
}

impl ToolError {
    /// An internal error: `detail` is logged (at `error` level, with a fresh
    /// reference id); the caller sees only the fixed text and the id.
    pub fn internal(detail: impl fmt::Display) -> Self {
        let id = ReferenceId::new();
        tracing::error!(reference = %id, detail = %detail, "internal tool error");
        Self::Internal(id)
    }

    /// A refusal with a server-authored reason.
    pub const fn rejected(reason: &'static str) -> Self {
        Self::Rejected(reason)
    }

    /// The stable machine-readable kind, as in the structured error.
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArguments(_) => "invalid_arguments",
            Self::CostExceeded { .. } => "cost_exceeded",
            Self::Busy(_) => "busy",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::UnknownRun => "unknown_run",
            Self::NotFound => "not_found",
            Self::UnknownTool => "unknown_tool",
            Self::InsufficientScope => "insufficient_scope",
            Self::QuotaExceeded(_) => "quota_exceeded",
            Self::Rejected(_) => "rejected",
            Self::Internal(_) => "internal",
            Self::AwaitingInput => "awaiting_input",
            Self::ClientCannotAnswer(_) => "client_cannot_answer",
            Self::MalformedAnswer => "malformed_answer",
            Self::AnswerRefused { .. } => "answer_refused",
            Self::NoAnswer => "no_answer",
            Self::NotApproved => "not_approved",
        }
    }

    /// Every value [`ToolError::kind`] can take.
    pub const KINDS: [&'static str; 18] = [
        "invalid_arguments",
        "cost_exceeded",
        "busy",
        "timeout",
        "cancelled",
        "unknown_run",
        "not_found",
        "unknown_tool",
        "insufficient_scope",
        "quota_exceeded",
        "rejected",
        "internal",
        "awaiting_input",
        "client_cannot_answer",
        "malformed_answer",
        "answer_refused",
        "no_answer",
        "not_approved",
    ];

    /// The JSON Schema (draft 2020-12) of the structured `error` object that
    /// [`ToolError::to_json`] builds: `kind` and `message` always, the other
    /// fields where the kind has them. Output schemas advertise it, so an
    /// error result validates against the tool's output schema too.
    pub fn json_schema() -> Value {
        json!({
            "type": "object",
            "description": "A fixed, server-authored error: sent instead of data, warnings and artifacts when the result has isError: true.",
            "properties": {
                "kind": { "type": "string", "enum": Self::KINDS },
                "message": { "type": "string" },
                "code": { "type": "string", "description": "Which argument rule failed (invalid_arguments)." },
                "argument": { "type": "string", "description": "The declared argument name (invalid_arguments)." },
                "bound": { "description": "The declared bound that failed (invalid_arguments); for unknown_argument, the declared argument names." },
                "reason": { "type": "string", "description": "The server-authored reason of a failed check (invalid_arguments, code check_failed)." },
                "ceiling": { "type": "number", "description": "The declared cost ceiling (cost_exceeded)." },
                "units": { "type": "string", "description": "The cost units (cost_exceeded)." },
                "quota": { "type": "string", "enum": ["runs", "bytes", "creates_per_minute"], "description": "The quota that refused a new run (quota_exceeded)." },
                "concurrency": { "type": "string", "enum": Ceiling::TOKENS, "description": "The concurrency ceiling that was reached (busy)." },
                "reference": { "type": "string", "description": "The id under which the server logged the detail (internal)." },
                "question": { "type": "string", "description": "The key of the question whose answer was refused (answer_refused)." },
                "capability": { "type": "string", "enum": ["elicitation", "sampling", "roots"], "description": "The client capability the call needs (client_cannot_answer)." }
            },
            "required": ["kind", "message"],
            "additionalProperties": false
        })
    }

    /// The structured `error` object.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), Value::from(self.kind()));
        m.insert("message".into(), Value::from(self.to_string()));
        match self {
            Self::InvalidArguments(e) => {
                if let Value::Object(detail) = e.to_json() {
                    m.extend(detail);
                }
            }
            Self::CostExceeded { ceiling, units } => {
                m.insert("ceiling".into(), json!(ceiling));
                m.insert("units".into(), Value::from(*units));
            }
            Self::Internal(id) => {
                m.insert("reference".into(), Value::from(id.to_string()));
            }
            Self::QuotaExceeded(q) => {
                m.insert("quota".into(), Value::from(q.token()));
            }
            Self::Busy(c) => {
                m.insert("concurrency".into(), Value::from(c.token()));
            }
            Self::AnswerRefused { question, error } => {
                m.insert("question".into(), Value::from(*question));
                if let Value::Object(detail) = error.to_json() {
                    m.extend(detail);
                }
            }
            Self::ClientCannotAnswer(need) => {
                m.insert("capability".into(), Value::from(need.capability()));
            }
            _ => {}
        }
        Value::Object(m)
    }

    /// The tool result sent to the caller: `isError: true`, the fixed text,
    /// and `structuredContent: {"error": {…}}`.
    pub fn into_call_tool_result(self) -> CallToolResult {
        let mut r = CallToolResult::error(vec![ContentBlock::text(self.to_string())]);
        r.structured_content = Some(json!({ "error": self.to_json() }));
        r
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArguments(e) => fmt::Display::fmt(e, f),
            Self::CostExceeded { ceiling, units } => write!(
                f,
                "refused: the estimated cost exceeds the ceiling of {ceiling} {units}; reduce the problem size"
            ),
            Self::Busy(e) => fmt::Display::fmt(e, f),
            Self::Timeout => f.write_str("the call exceeded its time limit and was stopped"),
            Self::Cancelled => f.write_str("the call was cancelled"),
            Self::UnknownRun => f.write_str("unknown run handle"),
            Self::NotFound => f.write_str("not found"),
            Self::UnknownTool => f.write_str(
                "this server has no tool of that name; tools/list names the tools it offers",
            ),
            Self::InsufficientScope => {
                f.write_str("the access token lacks a scope this tool requires")
            }
            Self::QuotaExceeded(q) => write!(f, "quota exceeded: {q}; delete runs or wait"),
            Self::Rejected(reason) => f.write_str(reason),
            Self::Internal(id) => write!(f, "internal error (reference {id})"),
            Self::AwaitingInput => {
                f.write_str("the call waits for the client's answers to its questions")
            }
            Self::ClientCannotAnswer(need) => write!(
                f,
                "this call needs the client's {} capability, which it did not declare; nothing ran",
                need.capability()
            ),
            Self::MalformedAnswer => {
                f.write_str("an answer from the client was not of the kind asked for; nothing ran")
            }
            Self::AnswerRefused { question, error } => {
                write!(f, "the answer to `{question}` was refused: ")?;
                let text = error.to_string();
                f.write_str(text.strip_prefix("invalid arguments: ").unwrap_or(&text))
            }
            Self::NoAnswer => {
                f.write_str("the client did not answer the server's question; nothing ran")
            }
            Self::NotApproved => f.write_str("the call was not approved; nothing ran"),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<ArgError> for ToolError {
    fn from(e: ArgError) -> Self {
        Self::InvalidArguments(e)
    }
}

impl From<LimitError> for ToolError {
    fn from(e: LimitError) -> Self {
        Self::Busy(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{ArgErrorCode, Bound};

    #[test]
    fn argument_errors_carry_only_declared_data() {
        let e = ToolError::from(ArgError::new(
            ArgErrorCode::AboveMaximum,
            "cells",
            Some(Bound::Int(200_000)),
        ));
        assert_eq!(
            e.to_string(),
            "invalid arguments: `cells` is above its maximum 200000"
        );
        let r = e.into_call_tool_result();
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.structured_content,
            Some(
                json!({"error": {"kind": "invalid_arguments", "code": "above_maximum",
                "argument": "cells", "bound": 200000,
                "message": "invalid arguments: `cells` is above its maximum 200000"}})
            )
        );
    }

    #[test]
    fn internal_errors_show_only_the_reference() {
        let e = ToolError::internal("secret detail /etc/passwd");
        let text = e.to_string();
        assert!(text.starts_with("internal error (reference ref-"), "{text}");
        assert!(!text.contains("passwd"));
    }

    #[test]
    #[cfg(feature = "sandbox")]
    fn sandbox_and_deck_errors_map_to_fixed_public_texts() {
        use crate::deck::{DeckError, DeckText, KeyValue};
        use crate::runs::RunError;
        use crate::sandbox::SandboxError;
        // A run ceiling is named as one, not as the call ceiling.
        assert_eq!(
            ToolError::from(SandboxError::CallerBusy),
            ToolError::Busy(Ceiling::CallerRuns)
        );
        assert_eq!(
            ToolError::from(SandboxError::CallerBusy).to_string(),
            SandboxError::CallerBusy.to_string()
        );
        assert_eq!(
            ToolError::from(SandboxError::GlobalBusy).to_string(),
            SandboxError::GlobalBusy.to_string()
        );
        assert_eq!(
            ToolError::from(LimitError::CallerBusy).to_string(),
            LimitError::CallerBusy.to_string()
        );
        assert_eq!(
            ToolError::from(SandboxError::CallerBusy).to_json()["concurrency"],
            "caller_runs"
        );
        assert_eq!(ToolError::from(SandboxError::TimedOut), ToolError::Timeout);
        assert!(matches!(
            ToolError::from(SandboxError::SpawnFailed),
            ToolError::Internal(_)
        ));
        let canary = "CANARY-7\ninclude /etc/shadow";
        let e = ToolError::from(DeckText::<KeyValue>::new(canary).unwrap_err());
        assert_eq!(e.kind(), "rejected");
        let text = e.to_string();
        assert!(
            !text.contains("CANARY") && !text.contains("shadow"),
            "{text}"
        );
        assert!(matches!(
            ToolError::from(DeckError::InvalidKey),
            ToolError::Internal(_)
        ));
        assert_eq!(
            ToolError::from(DeckError::Storage(RunError::UnknownRun)),
            ToolError::UnknownRun
        );
    }
}
