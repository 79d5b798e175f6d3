//! The solver server as an OAuth 2.1 protected resource behind a real
//! OpenID provider (`oidc-provider` on Node, `tests/node/oidc.mjs`), on
//! loopback: a client-credentials token for this resource with `heat:read`
//! reads runs but cannot start one (`403 insufficient_scope`); with
//! `heat:write` too it can; a token the same provider minted for another
//! resource is refused (RFC 8707 audience binding: no token passthrough).
//! Without Node.js this test says so and passes, unless
//! `HARDENED_MCP_REQUIRE_NODE` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine as _;
use hardened_mcp::transport::{HttpConfig, HttpServer, OAuth, OAuthConfig};
use hardened_mcp_tests::node::start_oidc_signing;
use hardened_mcp_tests::tr_support::{
    HttpClient, HttpReply, call, http_request, initialize_request,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "mcp-test-secret-0123456789";

/// A client-credentials access token for `resource` with `scope`.
async fn token(issuer: &str, resource: &str, scope: &str) -> String {
    let addr: SocketAddr = issuer.trim_start_matches("http://").parse().unwrap();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("mcp-test:{SECRET}"));
    let body = format!(
        "grant_type=client_credentials&resource={}&scope={}",
        resource.replace(':', "%3A").replace('/', "%2F"),
        scope.replace(' ', "+").replace(':', "%3A")
    );
    let host = addr.to_string();
    let auth = format!("Basic {basic}");
    let reply = http_request(
        addr,
        "POST",
        "/token",
        &[
            ("Host", &host),
            ("Authorization", &auth),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body.as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 200, "token endpoint: {}", reply.text());
    let v: Value = serde_json::from_slice(&reply.body).unwrap();
    v["access_token"].as_str().unwrap().to_owned()
}

async fn call_tool(addr: SocketAddr, token: &str, tool: &str, args: Value) -> HttpReply {
    let mut c = HttpClient::new(addr, Some(token));
    let init = c.post(&initialize_request(1)).await;
    if init.status != 200 {
        return init;
    }
    c.session = init.header("mcp-session-id").map(str::to_owned);
    c.post(&call(2, tool, args)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_openid_provider_issues_the_tokens() {
    drive("ES256").await;
}

/// The same with RS256 tokens of a 2048-bit key (most providers' default;
/// longer than any static token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_openid_provider_issues_rs256_tokens() {
    drive("RS256").await;
}

async fn drive(alg: &str) {
    // The resource's address is part of the audience: bind it first, and
    // serve on that listener (no other test can take the port in between).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let Some(idp) = start_oidc_signing(&resource, SECRET, "heat:read heat:write", alg) else {
        return;
    };
    tokio::time::timeout(Duration::from_secs(90), async {
        let dir = tempfile::tempdir().unwrap();
        let heat = solver_server::app::build_at(
            &dir.path().join("runs"),
            env!("CARGO_BIN_EXE_heat1d").as_ref(),
        )
        .unwrap();
        let oauth = OAuth::discover(
            OAuthConfig::new(&idp.issuer, &resource).scopes_supported(solver_server::app::SCOPES),
        )
        .await
        .unwrap();
        let server = HttpServer::new(
            move || Ok(heat.clone()),
            HttpConfig::new().oauth(oauth).sse_keep_alive(None),
        )
        .unwrap()
        .start_on(listener, CancellationToken::new())
        .await
        .unwrap();

        let reader = token(&idp.issuer, &resource, "heat:read").await;
        let header = reader.split('.').next().unwrap();
        let header: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(header)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], alg, "{header}");
        if alg == "RS256" {
            assert!(reader.len() > 512, "{}", reader.len());
        }
        let listed = call_tool(addr, &reader, "heat_list", json!({})).await;
        let rpc = listed.rpc().unwrap();
        assert_ne!(rpc["result"]["isError"], json!(true), "{rpc}");
        let dx = 1.0 / 64.0;
        let start = json!({"cells": 64, "steps": 100, "length": 1.0, "diffusivity": 1.0,
                           "dt": 0.4 * dx * dx});
        let refused = call_tool(addr, &reader, "heat_start", start.clone()).await;
        assert_eq!(refused.status, 403, "{}", refused.text());
        let challenge = refused.header("www-authenticate").unwrap();
        assert!(
            challenge.contains("error=\"insufficient_scope\"") && challenge.contains("heat:write"),
            "{challenge}"
        );

        let writer = token(&idp.issuer, &resource, "heat:read heat:write").await;
        let started = call_tool(addr, &writer, "heat_start", start).await;
        let rpc = started.rpc().unwrap();
        assert_ne!(rpc["result"]["isError"], json!(true), "{rpc}");

        // The same provider, another resource: not for this server.
        let elsewhere = token(&idp.issuer, "http://127.0.0.1:1/other", "heat:read").await;
        let reply = call_tool(addr, &elsewhere, "heat_list", json!({})).await;
        assert_eq!(reply.status, 401, "{}", reply.text());
        assert!(
            reply
                .header("www-authenticate")
                .unwrap()
                .contains("error=\"invalid_token\"")
        );
        server.shutdown().await.unwrap();
    })
    .await
    .expect("bounded");
}
