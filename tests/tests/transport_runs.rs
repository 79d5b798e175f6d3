//! Run ownership per caller over authenticated HTTP: the caller a tool sees
//! comes from the bearer token, and another caller's run is answered exactly
//! like a run that never existed, for read, tail, cancel and delete.
//!
//! The tools are plain rmcp tools over `RunRoot` + `ToolContext`, so this
//! checks the transport's half of ownership independently of the
//! framework's macros.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use hardened_mcp::ToolContext;
use hardened_mcp::runs::{FileName, RunRoot};
use hardened_mcp::transport::{BearerAuth, HttpConfig, HttpServer, RunningHttpServer};
use hardened_mcp_tests::tr_support::{HttpClient, call, result_text};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ALICE: &str = "alice-run-tok-8Hq2Lm5Xw9Rt";
const BOB: &str = "bob-run-tok-3Ks7Pv1Nz6Yc";
const OUTPUT: &str = "output.txt";

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct HandleArgs {
    handle: String,
}

#[derive(Clone)]
struct Runs {
    root: Arc<RunRoot>,
    tool_router: ToolRouter<Self>,
}

fn output_name() -> FileName {
    FileName::new(OUTPUT).unwrap()
}

#[tool_router]
impl Runs {
    #[tool(description = "Create a run")]
    fn run_create(&self, rc: RequestContext<RoleServer>) -> Result<String, String> {
        let ctx = ToolContext::from_request(&rc);
        let (handle, dir) = self.root.create(ctx.caller()).map_err(|e| e.to_string())?;
        dir.write_atomic(&output_name(), b"line one\nline two\n")
            .map_err(|e| e.to_string())?;
        Ok(handle.as_str().to_owned())
    }

    #[tool(description = "Read a run's output")]
    fn run_read(
        &self,
        rc: RequestContext<RoleServer>,
        Parameters(HandleArgs { handle }): Parameters<HandleArgs>,
    ) -> Result<String, String> {
        let ctx = ToolContext::from_request(&rc);
        let dir = self
            .root
            .resolve(&handle, ctx.caller())
            .map_err(|e| e.to_string())?;
        let bytes = dir
            .read_bounded(&output_name(), 4096)
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tool(description = "Tail a run's output")]
    fn run_tail(
        &self,
        rc: RequestContext<RoleServer>,
        Parameters(HandleArgs { handle }): Parameters<HandleArgs>,
    ) -> Result<String, String> {
        let ctx = ToolContext::from_request(&rc);
        let dir = self
            .root
            .resolve(&handle, ctx.caller())
            .map_err(|e| e.to_string())?;
        let tail = dir
            .tail_lines(&output_name(), 1, 4096)
            .map_err(|e| e.to_string())?;
        Ok(tail.lines.join("\n"))
    }

    #[tool(description = "Cancel a run")]
    fn run_cancel(
        &self,
        rc: RequestContext<RoleServer>,
        Parameters(HandleArgs { handle }): Parameters<HandleArgs>,
    ) -> Result<String, String> {
        let ctx = ToolContext::from_request(&rc);
        // No job runs here: cancelling is gated by the same resolution.
        self.root
            .resolve(&handle, ctx.caller())
            .map_err(|e| e.to_string())?;
        Ok("cancelled".to_owned())
    }

    #[tool(description = "Delete a run")]
    fn run_delete(
        &self,
        rc: RequestContext<RoleServer>,
        Parameters(HandleArgs { handle }): Parameters<HandleArgs>,
    ) -> Result<String, String> {
        let ctx = ToolContext::from_request(&rc);
        let dir = self
            .root
            .resolve(&handle, ctx.caller())
            .map_err(|e| e.to_string())?;
        dir.remove().map_err(|e| e.to_string())?;
        Ok("deleted".to_owned())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Runs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

async fn start(root: Arc<RunRoot>) -> RunningHttpServer {
    let auth = BearerAuth::parse(&format!("alice={ALICE}\nbob={BOB}")).unwrap();
    let config = HttpConfig::new().auth(auth).sse_keep_alive(None);
    HttpServer::new(
        move || {
            Ok(Runs {
                root: Arc::clone(&root),
                tool_router: Runs::tool_router(),
            })
        },
        config,
    )
    .unwrap()
    .start(CancellationToken::new())
    .await
    .unwrap()
}

/// The tool result of one call (its `result` object, without the id).
async fn tool(client: &mut HttpClient, id: i64, name: &str, handle: &str) -> Value {
    let reply = client
        .post(&call(id, name, json!({"handle": handle})))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.rpc().unwrap()["result"].clone()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

/// A handle of the same shape that was never issued.
fn never_issued(handle: &str) -> String {
    let mut chars: Vec<char> = handle.chars().collect();
    let last = chars.last_mut().unwrap();
    *last = if *last == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

#[tokio::test]
async fn another_callers_run_is_answered_like_a_run_that_never_existed() {
    let dir = tempfile::tempdir().unwrap();
    let root = Arc::new(RunRoot::open(dir.path().join("runs")).unwrap());
    let server = start(root).await;
    let addr = server.local_addr();
    let mut alice = HttpClient::new(addr, Some(ALICE));
    alice.connect().await;
    let mut bob = HttpClient::new(addr, Some(BOB));
    bob.connect().await;

    let created = alice
        .post(&call(10, "run_create", json!({})))
        .await
        .rpc()
        .unwrap();
    let handle = result_text(&created).unwrap().to_owned();
    let ghost = never_issued(&handle);
    assert_ne!(handle, ghost);

    // Positive control: the owner reaches her run through every tool.
    let read = tool(&mut alice, 11, "run_read", &handle).await;
    assert!(!is_error(&read), "{read}");
    assert_eq!(read["content"][0]["text"], "line one\nline two\n");
    let tail = tool(&mut alice, 12, "run_tail", &handle).await;
    assert_eq!(tail["content"][0]["text"], "line two");
    assert!(!is_error(
        &tool(&mut alice, 13, "run_cancel", &handle).await
    ));

    for (i, name) in ["run_read", "run_tail", "run_cancel", "run_delete"]
        .into_iter()
        .enumerate()
    {
        let id = 20 + i64::try_from(i).unwrap() * 3;
        let foreign = tool(&mut bob, id, name, &handle).await;
        let unknown = tool(&mut bob, id + 1, name, &ghost).await;
        let malformed = tool(&mut bob, id + 2, name, "../../etc/passwd").await;
        assert!(is_error(&foreign), "{name}: {foreign}");
        assert_eq!(
            foreign["content"][0]["text"], "unknown run handle",
            "{name}"
        );
        assert_eq!(foreign, unknown, "{name}: foreign and unknown differ");
        assert_eq!(foreign, malformed, "{name}: foreign and malformed differ");
        assert!(!foreign.to_string().contains(&handle), "{name}: {foreign}");
    }

    // Bob's attempts changed nothing: the run is still Alice's, intact.
    let read = tool(&mut alice, 40, "run_read", &handle).await;
    assert_eq!(read["content"][0]["text"], "line one\nline two\n");
    // The owner can delete it; then it is unknown to her as well.
    assert!(!is_error(
        &tool(&mut alice, 41, "run_delete", &handle).await
    ));
    let gone = tool(&mut alice, 42, "run_read", &handle).await;
    assert_eq!(gone["content"][0]["text"], "unknown run handle");
    server.shutdown().await.unwrap();
}
