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
