//! Streamable HTTP on loopback: bearer authentication, the caller reaching
//! tools through `ToolContext`, session ids that are not identities, body
//! and Host limits, and tokens absent from every response and log line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use hardened_mcp::transport::http::{SESSION_NOT_FOUND_BODY, UNAUTHORIZED_BODY};
use hardened_mcp::transport::{BearerAuth, HttpConfig, RunningHttpServer};
use hardened_mcp_tests::log_capture::LogCapture;
use hardened_mcp_tests::tr_support::{
    HttpClient as Client, HttpReply, call, http_request, initialize_request,
    initialized_notification, modern_call, modern_headers, modern_request, result_text,
    start_echo_http,
};
use serde_json::json;

const ALICE: &str = "alice-tok-Q7rT2vX9pL4mN8kJ";
const BOB: &str = "bob-tok-Z3wY6uH1cF5dG0sA";
const WRONG: &str = "wrong-tok-E2bV8nM4qR7tK1xP";
const SECRETS: [&str; 3] = [ALICE, BOB, WRONG];

/// Every log line of this test binary, at TRACE, rmcp's included.
fn logs() -> &'static LogCapture {
    static LOGS: OnceLock<LogCapture> = OnceLock::new();
    LOGS.get_or_init(|| {
        let capture = LogCapture::default();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(capture.clone())
            .init();
        capture
    })
}

fn token_table() -> BearerAuth {
    BearerAuth::parse(&format!("alice={ALICE}\nbob={BOB}")).unwrap()
}

async fn start(configure: impl FnOnce(HttpConfig) -> HttpConfig) -> RunningHttpServer {
    logs();
    start_echo_http(configure).await
}

fn assert_401(reply: &HttpReply) {
    assert_eq!(reply.status, 401, "{}", reply.text());
    assert_eq!(reply.text(), UNAUTHORIZED_BODY);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    // An unauthenticated client keeps no connection, and is told so.
    assert_eq!(reply.header("connection"), Some("close"));
}

fn assert_no_secret(text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "a token leaked: {text}");
    }
}

#[tokio::test]
async fn missing_or_wrong_tokens_get_the_same_401() {
    let server = start(|b| b.auth(token_table())).await;
    let addr = server.local_addr();
    let mut none = Client::new(addr, None);
    assert_401(&none.post(&initialize_request(1)).await);
    let mut wrong = Client::new(addr, Some(WRONG));
    assert_401(&wrong.post(&initialize_request(1)).await);
    // Right token, wrong scheme; two Authorization headers; empty token.
    let basic = format!("Basic {ALICE}");
    let twice = format!("Bearer {ALICE}");
    for extra in [
        vec![("Authorization", basic.as_str())],
        vec![
            ("Authorization", twice.as_str()),
            ("Authorization", twice.as_str()),
        ],
        vec![("Authorization", "Bearer ")],
    ] {
        let body = serde_json::to_vec(&initialize_request(1)).unwrap();
        assert_401(&none.request("POST", &extra, &body).await);
    }
    // Every method is guarded, not only POST.
    assert_401(&none.request("GET", &[], b"").await);
    assert_401(&none.request("DELETE", &[], b"").await);
    for reply in none.seen.iter().chain(&wrong.seen) {
        assert_no_secret(&reply.everything());
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_token_decides_the_caller_tools_see() {
    let server = start(|b| b.auth(token_table())).await;
    let addr = server.local_addr();
    let mut alice = Client::new(addr, Some(ALICE));
    alice.connect().await;
    let reply = alice.whoami().await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(result_text(&reply.rpc().unwrap()), Some("alice"));

    let mut bob = Client::new(addr, Some(BOB));
    bob.connect().await;
    assert_eq!(result_text(&bob.whoami().await.rpc().unwrap()), Some("bob"));

    // Tools see the request headers, but never a credential.
    let reply = alice
        .request(
            "POST",
            &[
                ("X-Canary", "visible-header"),
                ("Cookie", "session=c00kie-secret"),
            ],
            &serde_json::to_vec(&call(3, "request_headers", json!({}))).unwrap(),
        )
        .await;
    let seen = result_text(&reply.rpc().unwrap()).unwrap().to_owned();
    assert!(seen.contains("x-canary: visible-header"), "{seen}");
    assert!(
        !seen.to_ascii_lowercase().contains("authorization"),
        "{seen}"
    );
    assert!(!seen.contains("c00kie-secret"), "{seen}");
    for reply in alice.seen.iter().chain(&bob.seen) {
        assert_no_secret(&reply.everything());
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_auth_on_loopback_the_caller_is_local() {
    let server = start(|b| b).await;
    let mut client = Client::new(server.local_addr(), None);
    client.connect().await;
    assert_eq!(
        result_text(&client.whoami().await.rpc().unwrap()),
        Some("local")
    );
    server.shutdown().await.unwrap();
}

/// A listener bound beforehand keeps its port from the bind to the serve,
/// and is held to the bind rule: not loopback needs authentication.
#[tokio::test]
async fn a_listener_bound_beforehand_is_served_under_the_bind_rule() {
    use hardened_mcp::transport::{HttpServer, HttpStartError};
    use hardened_mcp_tests::tr_support::EchoServer;
    logs();
    let public = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let refused = HttpServer::new(|| Ok(EchoServer::new()), HttpConfig::new())
        .unwrap()
        .start_on(public, tokio_util::sync::CancellationToken::new())
        .await;
    assert!(
        matches!(refused, Err(HttpStartError::PublicBindWithoutAuth)),
        "{refused:?}"
    );
    // The same address with tokens is served (positive control of the rule).
    let public = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = public.local_addr().unwrap().port();
    let served = HttpServer::new(
        || Ok(EchoServer::new()),
        HttpConfig::new().auth(token_table()).sse_keep_alive(None),
    )
    .unwrap()
    .start_on(public, tokio_util::sync::CancellationToken::new())
    .await
    .unwrap();
    assert_eq!(served.local_addr().port(), port);
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut alice = Client::new(loopback, Some(ALICE));
    alice.connect().await;
    assert_eq!(
        result_text(&alice.whoami().await.rpc().unwrap()),
        Some("alice")
    );
    served.shutdown().await.unwrap();

    // On loopback without tokens, the address reported is the listener's.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = HttpServer::new(
        || Ok(EchoServer::new()),
        HttpConfig::new().sse_keep_alive(None),
    )
    .unwrap()
    .start_on(listener, tokio_util::sync::CancellationToken::new())
    .await
    .unwrap();
    assert_eq!(server.local_addr(), addr);
    let mut client = Client::new(addr, None);
    client.connect().await;
    assert_eq!(
        result_text(&client.whoami().await.rpc().unwrap()),
        Some("local")
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_session_id_is_not_an_identity() {
    let server = start(|b| b.auth(token_table())).await;
    let addr = server.local_addr();
    let mut alice = Client::new(addr, Some(ALICE));
    alice.connect().await;
    let alice_session = alice.session.clone().unwrap();

    // Bob presents Alice's session id with his own token.
    let mut bob = Client::new(addr, Some(BOB));
    bob.session = Some(alice_session.clone());
    let reply = bob.whoami().await;
    assert_eq!(reply.status, 404, "{}", reply.text());
    assert_eq!(reply.text(), SESSION_NOT_FOUND_BODY);
    // The same answer as for a session that never existed.
    let mut bob_unknown = Client::new(addr, Some(BOB));
    bob_unknown.session = Some("no-such-session".to_owned());
    let unknown = bob_unknown.whoami().await;
    assert_eq!(
        (unknown.status, unknown.text()),
        (reply.status, reply.text())
    );
    // He cannot end it either.
    let delete = bob.request("DELETE", &[], b"").await;
    assert_eq!(delete.status, 404);
    // Nor listen on it.
    let listen = bob.request("GET", &[], b"").await;
    assert_eq!(listen.status, 404);
    for r in &bob.seen {
        assert!(!r.text().contains("alice"), "{}", r.text());
    }

    // Alice's session is unharmed and still hers.
    assert_eq!(
        result_text(&alice.whoami().await.rpc().unwrap()),
        Some("alice")
    );
    // Once Alice ends it, it is gone for her too.
    assert_eq!(alice.request("DELETE", &[], b"").await.status, 204);
    assert_eq!(alice.whoami().await.status, 404);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let server = start(|b| b.auth(token_table()).max_body_bytes(64 * 1024)).await;
    let addr = server.local_addr();
    let mut alice = Client::new(addr, Some(ALICE));
    alice.connect().await;
    let big =
        serde_json::to_vec(&call(5, "echo", json!({"text": "x".repeat(100 * 1024)}))).unwrap();
    let reply = alice.request("POST", &[], &big).await;
    assert_eq!(reply.status, 413, "{}", reply.text());
    // Just under the limit is served.
    let ok = serde_json::to_vec(&call(6, "echo", json!({"text": "y".repeat(60 * 1024)}))).unwrap();
    let reply = alice.request("POST", &[], &ok).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        result_text(&reply.rpc().unwrap()).map(str::len),
        Some(60 * 1024)
    );
    // Without a token, the body is never looked at.
    let mut anon = Client::new(addr, None);
    assert_401(&anon.request("POST", &[], &big).await);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn foreign_host_headers_are_refused() {
    let server = start(|b| b.auth(token_table())).await;
    let addr = server.local_addr();
    let mut evil = Client::new(addr, Some(ALICE));
    evil.host = format!("evil.example:{}", addr.port());
    let reply = evil.post(&initialize_request(1)).await;
    assert_eq!(reply.status, 403, "{}", reply.text());
    // Positive control: the loopback names rmcp allows by default work.
    let mut local = Client::new(addr, Some(ALICE));
    local.host = format!("localhost:{}", addr.port());
    local.connect().await;
    server.shutdown().await.unwrap();
}

/// One `Host`, the same authority in an absolute-form target, and no page
/// of another site: each broken rule is refused before anything reads the
/// request, and no refused value reaches the log.
#[tokio::test]
async fn hosts_targets_and_origins_are_held_to_the_rules() {
    const CANARY: &str = "rebind-canary-7d1e";
    let server = start(|b| {
        b.auth(token_table())
            .allowed_origins(["https://app.example.org"])
    })
    .await;
    let addr = server.local_addr();
    let host = format!("127.0.0.1:{}", addr.port());
    let body = serde_json::to_vec(&initialize_request(1)).unwrap();
    let auth = format!("Bearer {ALICE}");
    let post = |target: String, extra: Vec<(&'static str, String)>| {
        let (host, auth, body) = (host.clone(), auth.clone(), body.clone());
        async move {
            let mut headers: Vec<(&str, &str)> = vec![
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Authorization", &auth),
            ];
            let owned: Vec<(&str, String)> = extra;
            if !owned.iter().any(|(k, _)| *k == "Host") {
                headers.push(("Host", &host));
            }
            for (k, v) in &owned {
                headers.push((k, v));
            }
            http_request(addr, "POST", &target, &headers, &body)
                .await
                .unwrap()
        }
    };
    let evil_host = format!("{CANARY}.example");
    let two_hosts = post(
        "/mcp".into(),
        vec![("Host", host.clone()), ("Host", evil_host.clone())],
    )
    .await;
    assert_eq!(two_hosts.status, 400, "{}", two_hosts.text());
    let smuggled = post(format!("http://{evil_host}/mcp"), vec![]).await;
    assert_eq!(smuggled.status, 400, "{}", smuggled.text());
    let foreign = post(
        "/mcp".into(),
        vec![("Origin", format!("https://{CANARY}.example"))],
    )
    .await;
    assert_eq!(foreign.status, 403, "{}", foreign.text());
    assert_eq!(
        foreign.text(),
        "Forbidden: Host or Origin header is not allowed"
    );
    // Positive controls: the allowed origin, no origin, the same
    // authority in an absolute-form target.
    let allowed = post(
        "/mcp".into(),
        vec![("Origin", "https://app.example.org".into())],
    )
    .await;
    assert_eq!(allowed.status, 200, "{}", allowed.text());
    // The server's own origin (a page served from the address the client
    // reached) is served without being listed; the same host on another
    // port is another origin.
    let own = post("/mcp".into(), vec![("Origin", format!("http://{host}"))]).await;
    assert_eq!(own.status, 200, "{}", own.text());
    let other_port = post(
        "/mcp".into(),
        vec![("Origin", format!("http://127.0.0.1:{}", addr.port() ^ 1))],
    )
    .await;
    assert_eq!(other_port.status, 403, "{}", other_port.text());
    assert_eq!(post("/mcp".into(), vec![]).await.status, 200);
    let absolute = post(format!("http://{host}/mcp"), vec![]).await;
    assert_eq!(absolute.status, 200, "{}", absolute.text());
    server.shutdown().await.unwrap();
    let logged = logs().text();
    assert!(!logged.contains(CANARY), "a refused value reached the log");
}

#[tokio::test]
async fn tokens_appear_in_no_log_line_and_no_response() {
    let server = start(|b| b.auth(token_table())).await;
    let addr = server.local_addr();
    let mut replies = Vec::new();
    for token in [Some(ALICE), Some(BOB), Some(WRONG), None] {
        let mut c = Client::new(addr, token);
        let init = c.post(&initialize_request(1)).await;
        if init.status == 200 {
            c.session = init.header("mcp-session-id").map(str::to_owned);
            c.post(&initialized_notification()).await;
            c.whoami().await;
            c.post(&call(4, "request_headers", json!({}))).await;
            c.post(&call(5, "echo", json!({"text": "hello"}))).await;
            c.post(&json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope"}}))
                .await;
        }
        // A token where it does not belong: in the session header.
        c.session = token.map(str::to_owned);
        c.whoami().await;
        replies.extend(c.seen);
    }
    server.shutdown().await.unwrap();

    for reply in &replies {
        assert_no_secret(&reply.everything());
    }
    let logs = logs().text();
    // Positive control: the capture sees both our lines and rmcp's.
    assert!(
        logs.contains("authentication failed"),
        "log capture is empty"
    );
    assert!(logs.contains("rmcp"), "rmcp's log lines were not captured");
    assert_no_secret(&logs);
}

#[tokio::test]
async fn slow_headers_are_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start(|b| {
        b.auth(token_table())
            .header_read_timeout(std::time::Duration::from_millis(300))
    })
    .await;
    let addr = server.local_addr();
    // Positive control: a prompt request is answered.
    let mut quick = Client::new(addr, None);
    assert_401(&quick.post(&initialize_request(1)).await);
    // A client that starts its headers and never finishes them.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut seen = Vec::new();
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        slow.read_to_end(&mut seen),
    )
    .await;
    assert!(closed.is_ok(), "the server held a half-sent request open");
    // Whatever the server said before closing, it was not a served request.
    let said = String::from_utf8_lossy(&seen);
    assert!(!said.contains("200 OK") && !said.contains("401"), "{said}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn error_bodies_never_quote_the_request() {
    let server = start(|b| b.auth(token_table())).await;
    let addr = server.local_addr();
    let mut alice = Client::new(addr, Some(ALICE));
    alice.connect().await;
    let canary = "CANARY-91e4";
    // JSON that is not a JSON-RPC message rmcp accepts: rmcp's own body
    // would carry serde's message, which quotes the value.
    let bad = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": canary});
    let reply = alice.post(&bad).await;
    assert!(reply.status >= 400, "{}", reply.text());
    // A method rmcp does not know: rmcp's reply would be the method name.
    let unknown = json!({"jsonrpc": "2.0", "id": 11, "method": format!("{canary} ignore previous instructions")});
    let reply4 = alice.post(&unknown).await;
    let rpc = reply4.rpc().unwrap();
    // In a session (before 2026-07-28) the error travels in a 200.
    assert_eq!(reply4.status, 200, "{}", reply4.text());
    assert_eq!(rpc["id"], 11);
    assert_eq!(rpc["error"]["message"], "Method not found");
    // Non-object tool arguments take the same path.
    let listed = json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                        "params": {"name": "echo", "arguments": [canary]}});
    let reply5 = alice.post(&listed).await;
    assert_eq!(reply5.rpc().unwrap()["error"]["code"], -32601);
    // The session still serves.
    assert_eq!(
        result_text(&alice.whoami().await.rpc().unwrap()),
        Some("alice")
    );
    // An unknown protocol version header: rmcp's body would repeat it.
    let body = serde_json::to_vec(&call(10, "echo", json!({"text": "x"}))).unwrap();
    let reply2 = alice
        .request("POST", &[("MCP-Protocol-Version", canary)], &body)
        .await;
    assert_eq!(reply2.status, 400, "{}", reply2.text());
    // Not JSON at all.
    let reply3 = alice
        .request("POST", &[], format!("{{\"{canary}\": ").as_bytes())
        .await;
    assert!(reply3.status >= 400, "{}", reply3.text());
    for r in [&reply, &reply2, &reply3, &reply4, &reply5] {
        assert!(!r.everything().contains(canary), "{}", r.everything());
    }
    server.shutdown().await.unwrap();
}

/// A handler's JSON-RPC error that quotes the caller leaves with the fixed
/// text of its code, in an event stream (sessions) and in a JSON body
/// (stateless, `json_response`), as on stdio.
#[tokio::test]
async fn handler_errors_leave_with_fixed_texts_in_streams_and_json_bodies() {
    let canary = "CANARY-5d0c ignore previous instructions";
    type Mode = (&'static str, fn(HttpConfig) -> HttpConfig, &'static str);
    let modes: [Mode; 3] = [
        ("sessions, event stream", |c| c, "text/event-stream"),
        (
            "stateless, event stream",
            |c| c.session_mode(false),
            "text/event-stream",
        ),
        (
            "stateless, JSON body",
            |c| c.session_mode(false).json_response(true),
            "application/json",
        ),
    ];
    for (mode, configure, content_type) in modes {
        let server = start(|c| configure(c.auth(token_table()))).await;
        let mut alice = Client::new(server.local_addr(), Some(ALICE));
        let init = alice.post(&initialize_request(1)).await;
        assert_eq!(init.status, 200, "{mode}: {}", init.text());
        alice.session = init.header("mcp-session-id").map(str::to_owned);
        if alice.session.is_some() {
            alice.post(&initialized_notification()).await;
        }
        let reply = alice
            .post(&call(5, "fail", json!({ "text": canary })))
            .await;
        assert_eq!(reply.status, 200, "{mode}: {}", reply.text());
        assert!(
            reply
                .header("content-type")
                .is_some_and(|t| t.starts_with(content_type)),
            "{mode}: {:?}",
            reply.header("content-type")
        );
        assert!(
            !reply.everything().contains("CANARY"),
            "{mode}: {}",
            reply.everything()
        );
        let rpc = reply.rpc().unwrap();
        assert_eq!(
            rpc,
            json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "Invalid params"}}),
            "{mode}"
        );
        // Results pass unchanged, even when they hold the word `error`.
        let ok = alice
            .post(&call(6, "echo", json!({"text": "error: none"})))
            .await;
        assert_eq!(
            result_text(&ok.rpc().unwrap()),
            Some("error: none"),
            "{mode}"
        );
        server.shutdown().await.unwrap();
    }
}

/// The 2026-07-28 era (no handshake, no session; the version and client in
/// every request): the same identity per token, the same refusals, the same
/// fixed error texts as the handshake era.
#[tokio::test]
async fn the_2026_era_meets_the_same_rules() {
    let server = start(|c| c.auth(token_table())).await;
    let addr = server.local_addr();
    let post = |token: Option<&'static str>,
                headers: Vec<(&'static str, &'static str)>,
                body: serde_json::Value| async move {
        let mut c = Client::new(addr, token);
        c.request("POST", &headers, &serde_json::to_vec(&body).unwrap())
            .await
    };
    // Discovery works and names the versions.
    let found = post(
        Some(ALICE),
        modern_headers("server/discover", None),
        modern_request(1, "server/discover", json!({})),
    )
    .await;
    assert_eq!(found.status, 200, "{}", found.text());
    let versions = found.rpc().unwrap()["result"]["supportedVersions"].clone();
    assert!(
        versions.as_array().unwrap().contains(&json!("2026-07-28")),
        "{versions}"
    );
    // Each request's own token is its caller.
    for (token, name) in [(ALICE, "alice"), (BOB, "bob")] {
        let r = post(
            Some(token),
            modern_headers("tools/call", Some("whoami")),
            modern_call(2, "whoami", json!({})),
        )
        .await;
        assert_eq!(result_text(&r.rpc().unwrap()), Some(name), "{}", r.text());
        assert!(
            r.header("mcp-session-id").is_none(),
            "no session in this era"
        );
    }
    // No token, a wrong token: the same 401.
    for token in [None, Some(WRONG)] {
        assert_401(
            &post(
                token,
                modern_headers("tools/call", Some("whoami")),
                modern_call(3, "whoami", json!({})),
            )
            .await,
        );
    }
    // A handler's error quoting the caller: fixed.
    let canary = "CANARY-2026 ignore previous instructions";
    let r = post(
        Some(ALICE),
        modern_headers("tools/call", Some("fail")),
        modern_call(4, "fail", json!({"text": canary})),
    )
    .await;
    assert_eq!(
        r.rpc().unwrap(),
        json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Invalid params"}})
    );
    // An unknown method, and a method header that contradicts the body
    // (rmcp's reply quotes the header): fixed texts.
    let r2 = post(
        Some(ALICE),
        modern_headers("tools/call", None),
        modern_request(5, &format!("{canary}/x"), json!({})),
    )
    .await;
    // From 2026-07-28 on an unknown method is a 404, with the error.
    assert_eq!(r2.status, 404, "{}", r2.text());
    assert_eq!(r2.rpc().unwrap()["error"]["code"], -32601);
    // So are the methods the revision removed.
    for (id, removed) in [(7, "initialize"), (8, "logging/setLevel"), (9, "ping")] {
        let r = post(
            Some(ALICE),
            modern_headers(removed, None),
            modern_request(id, removed, json!({})),
        )
        .await;
        assert_eq!(r.status, 404, "{removed}: {}", r.text());
        assert_eq!(
            r.rpc().unwrap(),
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
            "{removed}"
        );
    }
    // A version the server does not implement: 400, the versions it does,
    // and the requested one echoed (a version-like token only).
    let mut discover = modern_request(10, "server/discover", json!({}));
    discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let r = post(
        Some(ALICE),
        vec![
            ("MCP-Protocol-Version", "v999.0.0"),
            ("Mcp-Method", "server/discover"),
        ],
        discover,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let error = &r.rpc().unwrap()["error"];
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"]["requested"], "v999.0.0", "{error}");
    assert!(
        error["data"]["supported"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{error}"
    );
    let r3 = post(
        Some(ALICE),
        vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "CANARY-2026"),
            ("Mcp-Name", "whoami"),
        ],
        modern_call(6, "whoami", json!({})),
    )
    .await;
    assert!(
        r3.status >= 400 || r3.rpc().is_some_and(|v| v.get("error").is_some()),
        "{}",
        r3.text()
    );
    for reply in [&r, &r2, &r3] {
        assert!(
            !reply.everything().contains("CANARY"),
            "{}",
            reply.everything()
        );
    }
    server.shutdown().await.unwrap();
}
