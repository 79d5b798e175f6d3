//! Following an MCP task to its end, as a client does.

use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{GetTaskParams, TaskPayload};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value};

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
