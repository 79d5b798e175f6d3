//! A stdio MCP client that declares the tasks extension or not, and
//! following an MCP task to its end, as a client does.

use std::ffi::OsStr;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, GetTaskParams, Implementation, TaskPayload};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value};

/// A client that declares the tasks extension (`tasks`) or not.
#[derive(Debug, Clone, Copy)]
pub struct TaskClient {
    /// Whether it declares the tasks extension.
    pub tasks: bool,
}

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("hardened-mcp-tests", "1"))
    }
}

/// Starts the stdio server `program args` (its stderr discarded, killed
/// when dropped, `RUST_LOG=warn`) and connects a [`TaskClient`] to it.
/// Panics when it cannot: a test failure.
#[allow(clippy::panic)]
pub async fn connect_stdio(
    program: &str,
    args: &[&OsStr],
    tasks: bool,
) -> RunningService<RoleClient, TaskClient> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).env("RUST_LOG", "warn").kill_on_drop(true);
    let (transport, _stderr) = match TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(t) => t,
        Err(e) => panic!("{program} does not start: {e}"),
    };
    match (TaskClient { tasks }).serve(transport).await {
        Ok(client) => client,
        Err(e) => panic!("{program}: no MCP session: {e}"),
    }
}

/// Polls `tasks/get` for `id` every `every` until the task completes, and
/// returns its result (a `CallToolResult` as a JSON object). Panics on a failed or
/// cancelled task, or on a `tasks/get` error: a test failure. Bound it
/// with the test's own time budget.
#[allow(clippy::panic)]
pub async fn completed<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    id: &str,
    every: Duration,
) -> Map<String, Value> {
    loop {
        let task = match client.get_task(GetTaskParams::new(id.to_owned())).await {
            Ok(r) => r.task,
            Err(e) => panic!("tasks/get {id}: {e}"),
        };
        match task.payload {
            TaskPayload::Working => tokio::time::sleep(every).await,
            TaskPayload::Completed { result } => return result,
            other => panic!("task {id} did not complete: {other:?}"),
        }
    }
}
