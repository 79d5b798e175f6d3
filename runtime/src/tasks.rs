//! What the core knows of MCP tasks, with or without the `jobs` feature:
//! the marker of a call that may be answered with a task, the offer a
//! `task` tool's body takes, and the fixed answers of the task methods.
//! Tasks themselves (made from job runs, answered from the run root) are
//! the `jobs` module's.

use std::sync::{Arc, OnceLock};

use rmcp::ErrorData;
use rmcp::model::Task;

/// How a tool runs as an MCP task (`#[hardened_tool(task)]`,
/// `#[hardened_tool(task = "required")]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: every call is answered when its body ends.
    Never,
    /// A client that takes tasks gets one; any other the plain answer.
    Optional,
    /// Only as a task: a call from a client that does not take tasks is
    /// refused before anything runs (`-32021` naming the tasks extension
    /// in 2026-07-28, `-32601` in 2025-11-25, as each revision asks).
    Required,
}

impl TaskSupport {
    /// The tool-level declaration of the 2025-11-25 protocol
    /// (`execution.taskSupport`), `None` for [`TaskSupport::Never`].
    pub(crate) fn declared(self) -> Option<&'static str> {
        match self {
            Self::Never => None,
            Self::Optional => Some("optional"),
            Self::Required => Some("required"),
        }
    }
}

/// The refusal of a call to a [`TaskSupport::Required`] tool from a
/// client that does not take tasks: in 2026-07-28 the missing capability
/// (the tasks extension), in 2025-11-25 `Method not found`.
pub(crate) fn task_required(stateless_era: bool) -> ErrorData {
    if !stateless_era {
        return method_not_found();
    }
    let mut required = serde_json::Map::new();
    required.insert(
        rmcp::model::TASKS_EXTENSION_ID.to_owned(),
        serde_json::json!({}),
    );
    ErrorData::new(
        rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        Some(serde_json::json!({ "requiredCapabilities": { "extensions": required } })),
    )
}

/// The marker a server puts in a call's extensions when it serves tasks
/// and the client takes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TasksAccepted;

/// Whether a call's extensions carry [`TasksAccepted`].
pub(crate) fn tasks_accepted(extensions: &rmcp::model::Extensions) -> bool {
    extensions.get::<TasksAccepted>().is_some()
}

/// The offer a `task` tool's body may take: a task it created, which the
/// route then answers with instead of the body's result.
#[derive(Debug, Clone, Default)]
pub struct TaskOffer(Arc<OnceLock<Task>>);

impl TaskOffer {
    #[cfg(feature = "jobs")]
    pub(crate) fn accept(&self, task: Task) {
        let _ = self.0.set(task);
    }

    pub(crate) fn accepted(&self) -> Option<Task> {
        self.0.get().cloned()
    }
}

/// The one answer to a task id that is malformed, unknown, not a task, or
/// another caller's.
#[cfg(feature = "jobs")]
pub(crate) fn unknown_task() -> ErrorData {
    ErrorData::invalid_params("unknown task", None)
}

/// The answer to a task method of a server that serves no tasks (the
/// transports' fixed text of the code).
pub(crate) fn method_not_found() -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        "Method not found",
        None,
    )
}
