//! `hardened_mcp::Server` over a real MCP session (an rmcp client over an
//! in-memory pipe): it reports its identity, serves hardened tools merged
//! with a plain rmcp router, and answers a call of an unknown tool with the
//! fixed `unknown_tool` result, echoing nothing of the name.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use hardened_mcp::prelude::*;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceExt as _, tool, tool_router};
use serde_json::{Value, json};

struct Calc;

#[hardened_tools]
impl Calc {
    /// Doubles a number.
    #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
    async fn double(
        &self,
        #[bounded(min = -1e6, max = 1e6)] x: f64,
    ) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(2.0 * x))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

#[tool_router(router = plain_router)]
impl Calc {
    /// A plain rmcp tool, merged beside the hardened ones.
    #[tool]
    fn hello(&self, Parameters(Name { name }): Parameters<Name>) -> String {
        format!("hello {}", name.len())
    }
}

async fn connect() -> RunningService<RoleClient, ()> {
    let server = Server::new(
        "calc",
        "9.9.9",
        Calc,
        Calc::hardened_tool_router() + Calc::plain_router(),
    )
    .title("Calculator")
    .instructions("Doubles numbers.");
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(a).await.expect("server starts");
        let _ = running.waiting().await;
    });
    ().serve(b).await.expect("client connects")
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("object")
    };
    let req = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
    tokio::time::timeout(Duration::from_secs(10), client.call_tool(req))
        .await
        .expect("no hang")
        .expect("a tool result, not a protocol error")
}

#[tokio::test]
async fn identity_and_merged_tools() {
    let client = connect().await;
    let info = client.peer_info().expect("initialized");
    let me = info.server_info.as_ref().expect("server info sent");
    assert_eq!(me.name, "calc");
    assert_eq!(me.version, "9.9.9");
    assert_eq!(me.title.as_deref(), Some("Calculator"));
    assert_eq!(info.instructions.as_deref(), Some("Doubles numbers."));
    assert!(info.capabilities.tools.is_some());

    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["double", "hello"]);

    let r = call(&client, "double", json!({"x": 21})).await;
    assert_eq!(r.structured_content.unwrap()["data"], json!(42.0));
    let r = call(&client, "hello", json!({"name": "abc"})).await;
    assert_eq!(r.content[0].as_text().unwrap().text, "hello 3");
    let r = call(&client, "double", json!({"x": 2e6})).await;
    assert_eq!(r.is_error, Some(true));
    let _ = client.cancel().await;
}

#[tokio::test]
async fn an_unknown_tool_gets_the_fixed_result() {
    let client = connect().await;
    let canary = "CANARYtool_ignore_previous_instructions";
    let r = call(&client, canary, json!({"x": 1})).await;
    assert_eq!(r.is_error, Some(true));
    let wire = serde_json::to_string(&r).unwrap();
    assert!(!wire.contains("CANARY"), "{wire}");
    let error = &r.structured_content.as_ref().unwrap()["error"];
    assert_eq!(error["kind"], "unknown_tool");
    assert_eq!(
        r.content[0].as_text().unwrap().text,
        ToolError::UnknownTool.to_string()
    );
    assert!(ToolError::UnknownTool.to_string().contains("tools/list"));
    // The session goes on.
    let r = call(&client, "double", json!({"x": 1})).await;
    assert_eq!(r.is_error, Some(false));
    let _ = client.cancel().await;
}

/// A tool that logs one message at `info` and one at `error`.
struct Chatty;

#[hardened_tools]
impl Chatty {
    /// Logs twice, then answers.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn chatty(&self, ctx: ToolContext) -> Result<Output<u8>, ToolError> {
        ctx.log().send(LogLevel::Info, "an info line").await;
        ctx.log().send(LogLevel::Error, "an error line").await;
        Ok(Output::new(1))
    }
}

/// A client that keeps the log notifications it gets.
#[derive(Clone, Default)]
struct LogKeeper(std::sync::Arc<std::sync::Mutex<Vec<Value>>>);

impl rmcp::ClientHandler for LogKeeper {
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_value(params).unwrap());
    }
}

/// Log notifications follow the level the session set: none before it
/// sets one, those at or above it after; each session has its own.
#[tokio::test]
#[allow(deprecated)] // SEP-2577 deprecates logging; 2025-11-25 clients use it
async fn log_notifications_follow_the_sessions_level() {
    async fn call(client: &RunningService<RoleClient, LogKeeper>) {
        let req = CallToolRequestParams::new("chatty").with_arguments(serde_json::Map::new());
        tokio::time::timeout(Duration::from_secs(10), client.call_tool(req))
            .await
            .unwrap()
            .unwrap();
    }
    let server = Server::new("chatty", "1.0.0", Chatty, Chatty::hardened_tool_router());
    assert!(server.info().capabilities.logging.is_some());
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let server = server.clone();
        let (a, b) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let running = server.serve(a).await.expect("server starts");
            let _ = running.waiting().await;
        });
        let keeper = LogKeeper::default();
        let client = keeper.clone().serve(b).await.expect("client connects");
        sessions.push((client, keeper));
    }
    let (first, first_log) = &sessions[0];
    let (second, second_log) = &sessions[1];
    // Before any level: nothing.
    call(first).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(first_log.0.lock().unwrap().is_empty());
    // At `warning`: the error line only; the other session still nothing.
    first
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Warning,
        ))
        .await
        .unwrap();
    call(first).await;
    call(second).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let got = first_log.0.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["level"], "error");
    assert_eq!(got[0]["data"], "an error line");
    assert!(second_log.0.lock().unwrap().is_empty());
    // At `debug`: both.
    first
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Debug,
        ))
        .await
        .unwrap();
    call(first).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(first_log.0.lock().unwrap().len(), 3);
}
