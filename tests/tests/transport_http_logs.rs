//! No caller-chosen text in the server's log: the same hostile session
//! logged by an unfiltered subscriber at TRACE (the positive control: rmcp
//! quotes the client's name, method names, tool names and arguments) and
//! by the framework's own subscriber ([`hardened_mcp::logging::subscriber`])
//! at TRACE, which must hold none of it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;

use hardened_mcp::transport::BearerAuth;
use hardened_mcp_tests::log_capture::LogCapture;
use hardened_mcp_tests::tr_support::{
    HttpClient as Client, call, http_request, initialized_notification, modern_call,
    start_echo_http,
};
use serde_json::json;

const ALICE: &str = "alice-tok-Q7rT2vX9pL4mN8kJ";
const MARK: &str = "LOGMARKx7Qz";

/// A session that puts `MARK` wherever a caller chooses text: the client's
/// name and version (both eras), the method names of a request and a
/// notification, a tool name, an argument key and value, header values
/// (session id, protocol version, method and name headers, user agent),
/// the path, the query and a body that is not JSON.
async fn hostile_session(addr: SocketAddr) {
    let mut c = Client::new(addr, Some(ALICE));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": MARK, "version": MARK}}});
    let reply = c.post(&init).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    c.session = reply.header("mcp-session-id").map(str::to_owned);
    c.post(&initialized_notification()).await;
    c.post(&json!({"jsonrpc": "2.0", "method": format!("notifications/{MARK}")}))
        .await;
    c.post(&json!({"jsonrpc": "2.0", "id": 2, "method": MARK}))
        .await;
    c.post(&call(3, MARK, json!({}))).await;
    c.post(&call(4, "echo", json!({ MARK: 1 }))).await;
    let echoed = c.post(&call(5, "echo", json!({"text": MARK}))).await;
    assert!(
        echoed.text().contains(MARK),
        "the echo tool answers its caller"
    );
    let body = serde_json::to_vec(&call(6, "whoami", json!({}))).unwrap();
    c.request(
        "POST",
        &[("User-Agent", MARK), ("Mcp-Protocol-Version", MARK)],
        &body,
    )
    .await;
    c.request("POST", &[], format!("{{\"{MARK}\"").as_bytes())
        .await;
    let session = c.session.replace(MARK.to_owned());
    c.post(&call(7, "whoami", json!({}))).await;
    c.session = session;
    // The 2026-07-28 era: client info in the request's metadata, the
    // method and name in headers.
    let mut modern = Client::new(addr, Some(ALICE));
    let mut request = modern_call(8, "echo", json!({"text": "hi"}));
    request["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] =
        json!({"name": MARK, "version": MARK});
    let body = serde_json::to_vec(&request).unwrap();
    modern
        .request(
            "POST",
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", MARK),
            ],
            &body,
        )
        .await;
    let headers = [
        ("Host", format!("127.0.0.1:{}", addr.port())),
        ("Authorization", format!("Bearer {ALICE}")),
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
    ];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    http_request(
        addr,
        "POST",
        &format!("/mcp/{MARK}?{MARK}=1"),
        &headers,
        &body,
    )
    .await
    .unwrap();
    http_request(addr, "POST", &format!("/mcp?{MARK}=1"), &headers, &body)
        .await
        .unwrap();
}

/// Serves the hostile session with `log` as this thread's default
/// subscriber (the test's runtime has one thread: the server's tasks run
/// on it).
async fn logged_by(log: tracing::Dispatch) {
    let _default = tracing::dispatcher::set_default(&log);
    let tokens = BearerAuth::parse(&format!("alice={ALICE}")).unwrap();
    let server = start_echo_http(|c| c.auth(tokens)).await;
    hostile_session(server.local_addr()).await;
    server.shutdown().await.unwrap();
}

/// What `scenario` logs, run once with an unfiltered subscriber at TRACE
/// (the positive control: rmcp's own lines, values and all) and once with
/// the framework's ([`hardened_mcp::logging::subscriber`]) at TRACE.
async fn raw_and_ours<F: std::future::Future<Output = ()>>(
    scenario: impl Fn(tracing::Dispatch) -> F,
) -> (String, String) {
    let raw = LogCapture::default();
    scenario(tracing::Dispatch::new(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(raw.clone())
            .finish(),
    ))
    .await;
    let ours = LogCapture::default();
    scenario(tracing::Dispatch::new(hardened_mcp::logging::subscriber(
        "trace",
        ours.clone(),
        false,
    )))
    .await;
    let ours = ours.text();
    assert!(
        ours.contains("serving MCP over HTTP"),
        "nothing captured: {ours}"
    );
    (raw.text(), ours)
}

#[tokio::test]
async fn caller_chosen_text_reaches_no_log_line() {
    let (raw, ours) = raw_and_ours(logged_by).await;
    assert!(raw.contains(MARK), "the probe never reached a log line");
    let leaks: Vec<&str> = ours.lines().filter(|l| l.contains(MARK)).collect();
    assert!(
        leaks.is_empty(),
        "caller text in the log:\n{}",
        leaks.join("\n")
    );
}

/// A server whose one tool answers after [`SLOW`].
#[derive(Clone)]
struct Slow {
    tool_router: rmcp::handler::server::router::tool::ToolRouter<Self>,
}

const SLOW: std::time::Duration = std::time::Duration::from_millis(300);

#[rmcp::tool_router]
impl Slow {
    /// Answers after a while.
    #[rmcp::tool(description = "Answer after a while")]
    async fn slow(&self) -> String {
        tokio::time::sleep(SLOW).await;
        "done".to_owned()
    }
}

#[rmcp::tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for Slow {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
    }
}

/// A 2026-07-28 call of the slow tool whose client closes the connection
/// before the answer, logged by `log`.
async fn left_mid_call(log: tracing::Dispatch) {
    use tokio::io::AsyncWriteExt as _;
    let _default = tracing::dispatcher::set_default(&log);
    let server = hardened_mcp::transport::HttpServer::new(
        || {
            Ok(Slow {
                tool_router: Slow::tool_router(),
            })
        },
        hardened_mcp::transport::HttpConfig::new().sse_keep_alive(None),
    )
    .unwrap()
    .start(tokio_util::sync::CancellationToken::new())
    .await
    .unwrap();
    let addr = server.local_addr();
    let body = serde_json::to_vec(&modern_call(1, "slow", json!({}))).unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: slow\r\nContent-Length: {}\r\n\r\n",
        addr.port(),
        body.len()
    )
    .into_bytes();
    head.extend_from_slice(&body);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(&head).await.unwrap();
    tokio::time::sleep(SLOW / 3).await;
    drop(stream);
    // The tool answers, and finds nobody to answer to.
    tokio::time::sleep(SLOW * 2).await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_client_that_leaves_mid_call_is_not_an_error() {
    let (raw, ours) = raw_and_ours(left_mid_call).await;
    // The positive control: rmcp itself logs the event as an error.
    assert!(
        raw.lines().any(|l| l.contains("ERROR")),
        "the probe logged no error to quiet:\n{raw}"
    );
    // The event is logged, at debug, where the connection ends.
    assert!(
        ours.lines()
            .any(|l| l.contains("DEBUG") && l.contains("an HTTP connection ended")),
        "{ours}"
    );
    let errors: Vec<&str> = ours
        .lines()
        .filter(|l| l.contains("ERROR") || l.contains(" WARN "))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
