//! Numbers finer than an `f64` on the wire: an integer argument written
//! with a fraction that the JSON parse rounds away (`1.00000000000000001`
//! reads as `1.0`) is refused with `inexact_integer`, over stdio and over
//! streamable HTTP, at any depth of the arguments and in either argument
//! form; a float argument written the same way keeps the nearest `f64`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::prelude::*;
use hardened_mcp::transport::{HardenedStdio, HttpConfig, HttpServer, StdioConfig};
use hardened_mcp_tests::tr_support::{HttpClient, LineClient};
use rmcp::ServiceExt;
use serde_json::{Value, json};

/// The same integers as a struct of arguments.
#[derive(HardenedArgs)]
struct Counts {
    /// A count.
    #[bounded(min = 0, max = 1000)]
    count: u32,
    /// A ratio.
    #[bounded(min = -10.0, max = 10.0)]
    ratio: f64,
}

#[derive(Clone)]
struct Numbers;

#[hardened_tools]
impl Numbers {
    /// Echo the arguments.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn flat(
        &self,
        #[bounded(min = -1000, max = 1000)] signed: i64,
        #[bounded(min = -10.0, max = 10.0)] ratio: f64,
        #[bounded(max_items = 4, min = 0, max = 60000)] steps: Vec<u16>,
        #[bounded(min = 0, max = 9)] maybe: Option<u8>,
    ) -> Result<Output<Value>, ToolError> {
        Ok(Output::new(
            json!({"signed": signed, "ratio": ratio, "steps": steps, "maybe": maybe}),
        ))
    }

    /// Echo the arguments.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn grouped(&self, #[args] c: Counts) -> Result<Output<Value>, ToolError> {
        Ok(Output::new(json!({"count": c.count, "ratio": c.ratio})))
    }
}

fn server() -> Server<Numbers> {
    let tools = Numbers::hardened_tool_router_set().into_router().unwrap();
    Server::new("numbers", "1", Numbers, tools)
}

/// The cases: (tool, arguments as written, the refused argument or none).
fn cases() -> Vec<(&'static str, &'static str, Option<&'static str>)> {
    vec![
        (
            "flat",
            r#"{"signed": 1.00000000000000001, "ratio": 0.5, "steps": []}"#,
            Some("signed"),
        ),
        (
            "flat",
            r#"{"signed": -7.0000000000000000001e0, "ratio": 0.5, "steps": []}"#,
            Some("signed"),
        ),
        (
            "flat",
            r#"{"signed": 0, "ratio": 0.5, "steps": [1, 2.00000000000000001]}"#,
            Some("steps"),
        ),
        (
            "flat",
            r#"{"signed": 0, "ratio": 0.5, "steps": [], "maybe": 3.000000000000000001}"#,
            Some("maybe"),
        ),
        (
            "flat",
            r#"{"signed": 0, "ratio": 0.5, "steps": [], "maybe": 1e-400}"#,
            Some("maybe"),
        ),
        (
            "grouped",
            r#"{"count": 5.0000000000000001, "ratio": 1}"#,
            Some("count"),
        ),
        // Positive controls: the same text in a float argument is its
        // nearest f64; integral floats and exponents stay integers.
        (
            "flat",
            r#"{"signed": 5.0, "ratio": 1.00000000000000001, "steps": [2e0, 3.0]}"#,
            None,
        ),
        (
            "grouped",
            r#"{"count": 5e0, "ratio": 2.00000000000000001}"#,
            None,
        ),
    ]
}

fn call_text(id: usize, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

fn assert_answer(reply: &Value, refused: Option<&str>, case: &str) {
    let result = &reply["result"];
    match refused {
        Some(argument) => {
            assert_eq!(result["isError"], true, "{case}: {reply}");
            let e = &result["structuredContent"]["error"];
            assert_eq!(e["kind"], "invalid_arguments", "{case}: {reply}");
            assert_eq!(e["code"], "inexact_integer", "{case}: {reply}");
            assert_eq!(e["argument"], argument, "{case}: {reply}");
        }
        None => assert_ne!(result["isError"], true, "{case}: {reply}"),
    }
}

#[tokio::test]
async fn over_stdio() {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let transport = HardenedStdio::with_config(server_r, server_w, StdioConfig::default());
        if let Ok(running) = server().serve(transport).await {
            let _ = running.waiting().await;
        }
    });
    let mut c = LineClient::new(client_r, client_w);
    c.handshake().await.unwrap();
    for (i, (tool, args, refused)) in cases().into_iter().enumerate() {
        let id = i + 10;
        c.send_raw(call_text(id, tool, args).as_bytes())
            .await
            .unwrap();
        let (reply, _) = c.recv_response(id as i64).await.unwrap();
        assert_answer(&reply, refused, args);
    }
    // The float keeps its nearest f64 exactly.
    c.send_raw(
        call_text(
            99,
            "grouped",
            r#"{"count": 1, "ratio": 2.00000000000000001}"#,
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let (reply, _) = c.recv_response(99).await.unwrap();
    assert_eq!(
        reply["result"]["structuredContent"]["data"]["ratio"], 2.0,
        "{reply}"
    );
}

#[tokio::test]
async fn over_http() {
    let s = server();
    let running = HttpServer::new(
        move || Ok(s.clone()),
        HttpConfig::new().sse_keep_alive(None),
    )
    .unwrap()
    .start(tokio_util::sync::CancellationToken::new())
    .await
    .unwrap();
    let mut c = HttpClient::new(running.local_addr(), None);
    c.connect().await;
    for (i, (tool, args, refused)) in cases().into_iter().enumerate() {
        let reply = c
            .request("POST", &[], call_text(i + 10, tool, args).as_bytes())
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_answer(&reply.rpc().unwrap(), refused, args);
    }
    running.shutdown().await.unwrap();
}
