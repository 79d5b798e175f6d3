//! MCP tasks in the 2025-11-25 protocol, which rmcp does not model (it
//! models the 2026-07-28 tasks extension). The 2025 shapes differ: a
//! tool call asks for a task with a `task` parameter, the server declares
//! `capabilities.tasks` and each task tool `execution.taskSupport`, the
//! task is nested (`{"task": {..}}`) with `ttl` and `pollInterval`, and
//! there are `tasks/result` and `tasks/list`.
//!
//! A session that initialized with 2025-11-25 gets them through two steps:
//! the transport's [`Legacy`] adapter (one per stdio connection; over
//! streamable HTTP one per request, with the era remembered per session)
//! renames those requests to private
//! methods (`dev.hardened-mcp/2025/...`) that rmcp hands to the server's
//! custom-request hook ([`serve`], answering from the same job desk as the
//! 2026 methods), and adds the two declarations to the `initialize` and
//! `tools/list` answers. Every other message passes untouched.

use std::collections::HashSet;

use rmcp::RoleServer;
use rmcp::model::{CustomRequest, CustomResult, ErrorData, JsonObject};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
#[cfg(feature = "jobs")]
use {
    crate::context::ToolContext,
    crate::tasks::unknown_task,
    rmcp::ServerHandler,
    rmcp::model::{CallToolRequestParams, CallToolResponse, Task},
};

use crate::server::Server;
use crate::tasks::method_not_found;

/// The prefix of the private methods the adapter renames 2025 task
/// requests to: fixed text and 128 random bits drawn once per process, so
/// that only the adapter can name them. A client that sends a method of
/// that shape itself (no adapter renames in a stateless HTTP server, or in
/// a 2026 session) names no private method: it gets `Method not found`.
/// Without randomness there is no prefix, and the adapter renames nothing
/// (fail closed: the 2025 task methods are then unknown).
fn private() -> Option<&'static str> {
    static PREFIX: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PREFIX
        .get_or_init(|| {
            let mut nonce = [0u8; 16];
            getrandom::fill(&mut nonce).ok()?;
            let hex: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
            Some(format!("dev.hardened-mcp/2025/{hex}/"))
        })
        .as_deref()
}

/// Whether `method` is the private method a 2025 task-augmented
/// `tools/call` is renamed to.
pub(crate) fn is_private_tools_call(method: &str) -> bool {
    private().and_then(|p| method.strip_prefix(p)) == Some("tools/call")
}
/// The tool `_meta` key marking a tool declared `task`.
pub(crate) const TASK_TOOL_META_KEY: &str = "dev.hardened-mcp/task";
/// Longest task id read from a request.
#[cfg(feature = "jobs")]
const MAX_TASK_ID: usize = 128;
/// Most requests whose answers the adapter still has to amend.
const MAX_PENDING: usize = 64;

/// A 2025-11-25 `Task` object.
#[cfg(feature = "jobs")]
fn task_2025(t: &Task) -> Value {
    let mut v = json!({
        "taskId": t.task_id,
        "status": t.status,
        "createdAt": t.created_at,
        "lastUpdatedAt": t.last_updated_at,
        "ttl": t.ttl_ms,
    });
    if let Some(p) = t.poll_interval_ms {
        v["pollInterval"] = json!(p);
    }
    if let Some(m) = &t.status_message {
        v["statusMessage"] = json!(m);
    }
    v
}

#[cfg(feature = "jobs")]
fn task_id(params: Option<&Value>) -> Result<String, ErrorData> {
    match params.and_then(|p| p.get("taskId")).and_then(Value::as_str) {
        Some(id) if id.len() <= MAX_TASK_ID => Ok(id.to_owned()),
        _ => Err(unknown_task()),
    }
}

/// Answers the private methods of the adapter; any other custom method
/// is unknown (with the fixed text: nothing of the method name returns).
pub(crate) async fn serve<S: Send + Sync + 'static>(
    server: &Server<S>,
    request: CustomRequest,
    context: RequestContext<RoleServer>,
) -> Result<CustomResult, ErrorData> {
    let Some(method) = private().and_then(|p| request.method.strip_prefix(p)) else {
        return Err(method_not_found());
    };
    #[cfg(not(feature = "jobs"))]
    return {
        let _ = (server, method, context);
        Err(method_not_found())
    };
    #[cfg(feature = "jobs")]
    serve_tasks(server, method, request.params.as_ref(), context).await
}

/// The private methods (`method` stripped of the prefix), answered from
/// the server's job desks.
#[cfg(feature = "jobs")]
async fn serve_tasks<S: Send + Sync + 'static>(
    server: &Server<S>,
    method: &str,
    params: Option<&Value>,
    mut context: RequestContext<RoleServer>,
) -> Result<CustomResult, ErrorData> {
    let desks = server.task_desks()?;
    let caller = ToolContext::from_request(&context).caller().clone();
    let answer = match method {
        "tools/call" => {
            let mut params: CallToolRequestParams = params
                .cloned()
                .and_then(|p| serde_json::from_value(p).ok())
                .ok_or_else(|| ErrorData::invalid_params("Invalid params", None))?;
            params.meta = None;
            context.extensions.insert(crate::tasks::TasksAccepted);
            match server.call_tool(params, context).await? {
                CallToolResponse::Task(created) => json!({ "task": task_2025(&created.task) }),
                CallToolResponse::Complete(r) => serde_json::to_value(r)
                    .map_err(|_| ErrorData::internal_error("Internal error", None))?,
                _ => return Err(ErrorData::internal_error("Internal error", None)),
            }
        }
        "tasks/get" => {
            let id = task_id(params)?;
            task_2025(&desks.of(&caller, &id)?.get_task(&caller, &id).await?.task)
        }
        "tasks/cancel" => {
            let id = task_id(params)?;
            let desk = desks.of(&caller, &id)?;
            desk.cancel_live_task(&caller, &id).await?;
            task_2025(&desk.get_task(&caller, &id).await?.task)
        }
        "tasks/list" => {
            let tasks: Vec<Value> = desks
                .list_tasks(&caller)
                .await?
                .iter()
                .map(task_2025)
                .collect();
            json!({ "tasks": tasks })
        }
        "tasks/result" => {
            let id = task_id(params)?;
            let desk = desks.of(&caller, &id)?;
            // Blocks until the task ends (or the client cancels the request).
            loop {
                let t = desk.get_task(&caller, &id).await?;
                match t.task.status {
                    rmcp::model::TaskStatus::Working | rmcp::model::TaskStatus::InputRequired => {}
                    rmcp::model::TaskStatus::Cancelled => {
                        return Err(ErrorData::invalid_request("the task was cancelled", None));
                    }
                    _ => break,
                }
                tokio::select! {
                    () = context.ct.cancelled() => {
                        return Err(ErrorData::invalid_request("cancelled", None));
                    }
                    () = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
                }
            }
            let mut r = serde_json::to_value(desk.task_result(&caller, &id).await?)
                .map_err(|_| ErrorData::internal_error("Internal error", None))?;
            r["_meta"] = json!({ "io.modelcontextprotocol/related-task": { "taskId": id } });
            r
        }
        _ => return Err(method_not_found()),
    };
    Ok(CustomResult::new(answer))
}

/// The per-session adapter of a transport: renames the 2025 task requests
/// of a session that initialized with 2025-11-25, and amends the answers
/// to its `initialize` and `tools/list`.
#[derive(Debug, Default)]
pub(crate) struct Legacy {
    era_2025: bool,
    /// Ids of `initialize` and `tools/list` requests not yet answered.
    pending: HashSet<String>,
}

/// What a request that may concern tasks holds ([`Legacy::inbound`]'s
/// cheap test), each searcher built once.
static INTERESTING: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 3]> =
    std::sync::LazyLock::new(|| {
        [&b"\"task"[..], b"\"initialize\"", b"\"tools/list\""].map(memchr::memmem::Finder::new)
    });

impl Legacy {
    /// The adapter of one request of a session whose era is known
    /// (`era_2025`: it initialized with 2025-11-25 without declaring the
    /// 2026 tasks extension); an `initialize` passing through sets it anew.
    #[cfg(feature = "http")]
    pub(crate) fn with_era(era_2025: bool) -> Self {
        Self {
            era_2025,
            pending: HashSet::new(),
        }
    }

    /// Whether the session speaks the 2025-11-25 task shapes.
    #[cfg(feature = "http")]
    pub(crate) fn is_2025(&self) -> bool {
        self.era_2025
    }

    /// The line to parse instead of `line`, when it must change.
    pub(crate) fn inbound(&mut self, line: &[u8]) -> Option<Vec<u8>> {
        // Cheap test first: only requests that can concern tasks are parsed.
        let interesting = INTERESTING.iter().any(|f| f.find(line).is_some());
        if !interesting {
            return None;
        }
        let mut msg: Value = serde_json::from_slice(line).ok()?;
        let method = msg.get("method")?.as_str()?.to_owned();
        let id = msg
            .get("id")
            .filter(|i| i.is_string() || i.is_number())?
            .to_string();
        match method.as_str() {
            "initialize" => {
                // A 2025-11-25 client that declares the 2026 tasks extension
                // speaks that one (rmcp's client does): only the others get
                // the 2025 shapes.
                let ext = format!(
                    "/params/capabilities/extensions/{}",
                    rmcp::model::TASKS_EXTENSION_ID.replace('/', "~1")
                );
                self.era_2025 = msg
                    .pointer("/params/protocolVersion")
                    .and_then(Value::as_str)
                    == Some("2025-11-25")
                    && msg.pointer(&ext).is_none();
                self.remember(id);
                None
            }
            "tools/list" if self.era_2025 => {
                self.remember(id);
                None
            }
            "tools/call" if self.era_2025 && msg.pointer("/params/task").is_some() => {
                rename(&mut msg, &method)
            }
            "tasks/get" | "tasks/cancel" | "tasks/result" | "tasks/list" if self.era_2025 => {
                rename(&mut msg, &method)
            }
            _ => None,
        }
    }

    /// Whether an answer may need amending (else outgoing messages are
    /// not looked at).
    pub(crate) fn is_waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    fn remember(&mut self, id: String) {
        if self.pending.len() < MAX_PENDING {
            self.pending.insert(id);
        }
    }

    /// The amended answer, when `msg` (serialized) answers a remembered request.
    pub(crate) fn outbound(&mut self, msg: &Value) -> Option<Value> {
        if self.pending.is_empty() {
            return None;
        }
        let id = msg.get("id")?.to_string();
        if !self.pending.remove(&id) || !self.era_2025 {
            return None;
        }
        let mut msg = msg.clone();
        let result = msg.get_mut("result")?.as_object_mut()?;
        if let Some(caps) = result
            .get_mut("capabilities")
            .and_then(Value::as_object_mut)
        {
            let tasks_served = caps
                .get("extensions")
                .and_then(|e| e.get(rmcp::model::TASKS_EXTENSION_ID))
                .is_some();
            if tasks_served {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
        }
        if let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) {
            for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(support) = task_support(tool) {
                    tool.insert("execution".into(), json!({ "taskSupport": support }));
                }
            }
        }
        Some(msg)
    }
}

/// The task support a tool declares (`optional`, `required`), if any.
fn task_support(tool: &JsonObject) -> Option<&'static str> {
    match tool.get("_meta")?.get(TASK_TOOL_META_KEY)?.as_str()? {
        "optional" => Some("optional"),
        "required" => Some("required"),
        _ => None,
    }
}

fn rename(msg: &mut Value, method: &str) -> Option<Vec<u8>> {
    msg["method"] = Value::String(format!("{}{method}", private()?));
    serde_json::to_vec(msg).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_2025_session_has_its_task_requests_renamed() {
        let mut l = Legacy::default();
        let call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{},"task":{}}}"#;
        let init = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{v}","capabilities":{{}},"clientInfo":{{"name":"c","version":"1"}}}}}}"#
            )
        };
        assert!(l.inbound(init("2025-06-18").as_bytes()).is_none());
        assert!(l.inbound(call).is_none(), "not a 2025-11-25 session");
        assert!(l.inbound(init("2025-11-25").as_bytes()).is_none());
        let renamed: Value = serde_json::from_slice(&l.inbound(call).unwrap()).unwrap();
        assert!(is_private_tools_call(renamed["method"].as_str().unwrap()));
        // A call without `task` stays a plain call.
        let plain = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"task","arguments":{}}}"#;
        assert!(l.inbound(plain).is_none());
        let get = br#"{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"x"}}"#;
        let renamed: Value = serde_json::from_slice(&l.inbound(get).unwrap()).unwrap();
        assert_eq!(
            renamed["method"],
            format!("{}tasks/get", private().unwrap())
        );
        // A client naming the private method shape itself reaches none.
        assert!(!is_private_tools_call("dev.hardened-mcp/2025/tools/call"));
        // A client declaring the 2026 extension keeps the 2026 methods.
        let mut l = Legacy::default();
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}"#;
        assert!(l.inbound(init).is_none());
        assert!(l.inbound(get).is_none());
    }

    #[test]
    fn the_initialize_and_tools_list_answers_gain_the_2025_declarations() {
        let mut l = Legacy::default();
        l.inbound(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#);
        let init = json!({"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{},
            "extensions":{"io.modelcontextprotocol/tasks":{}}}}});
        let out = l.outbound(&init).unwrap();
        assert_eq!(
            out["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
            json!({})
        );
        l.inbound(br#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#);
        let list = json!({"jsonrpc":"2.0","id":"l","result":{"tools":[
            {"name":"a","_meta":{"dev.hardened-mcp/task":"optional"}},
            {"name":"r","_meta":{"dev.hardened-mcp/task":"required"}},
            {"name":"x","_meta":{"dev.hardened-mcp/task":"sometimes"}},{"name":"b"}]}});
        let out = l.outbound(&list).unwrap();
        let support = |i: usize| out["result"]["tools"][i]["execution"]["taskSupport"].clone();
        assert_eq!(support(0), "optional");
        assert_eq!(support(1), "required");
        // Only the two words are declarations; anything else declares nothing.
        assert!(out["result"]["tools"][2].get("execution").is_none());
        assert!(out["result"]["tools"][3].get("execution").is_none());
        // Answered once: a second message with the same id is left alone.
        assert!(l.outbound(&list).is_none());
    }
}
