//! `hardened-mcp-audit`'s checks of the authorization and origin surface over HTTP:
//! the framework's own OAuth 2.1 protected resource (RFC 9728 metadata, the
//! `resource_metadata` challenge, JWT access tokens from a test issuer)
//! audits clean with a valid token; a leaky endpoint (a 401 that repeats
//! the token, metadata naming another resource, a foreign Origin and Host
//! answered without auth) shows each fault with the exchange that showed
//! it. Loopback only, every exchange bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hardened_mcp::prelude::*;
use hardened_mcp::transport::{HttpConfig, HttpServer, OAuth, OAuthConfig};
use hardened_mcp_audit::Severity;
use hardened_mcp_audit::run::{Options, audit_http};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const KEY: &[u8] = include_bytes!("../fixtures/oauth/es256-a.pem");

/// A fake authorization server whose JWKS holds key `a`.
async fn issuer() -> String {
    let mut jwk =
        Jwk::from_encoding_key(&EncodingKey::from_ec_pem(KEY).unwrap(), Algorithm::ES256).unwrap();
    jwk.common.key_id = Some("a".to_owned());
    let jwks = serde_json::to_string(&JwkSet { keys: vec![jwk] }).unwrap();
    hardened_mcp_tests::oauth_issuer::serve(move || {
        let jwks = jwks.clone();
        async move { jwks }
    })
    .await
}

struct Calc;

#[hardened_tools]
impl Calc {
    /// Adds one to n.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, scopes = "calc:read")]
    async fn add_one(
        &self,
        #[bounded(min = 0, max = 10)] n: u32,
    ) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(n + 1))
    }
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_frameworks_oauth_resource_audits_clean_with_a_valid_token() {
    let issuer = issuer().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let oauth =
        OAuth::discover(OAuthConfig::new(&issuer, &resource).scopes_supported(["calc:read"]))
            .await
            .unwrap();
    let server = Server::new("calc", "1", Calc, Calc::hardened_tool_router());
    let http = HttpConfig::new().oauth(oauth).sse_keep_alive(None);
    let _running = HttpServer::new(move || Ok(server.clone()), http)
        .unwrap()
        .start_on(listener, CancellationToken::new())
        .await
        .unwrap();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("a".to_owned());
    let claims = json!({"iss": issuer, "aud": resource, "sub": "auditor",
                        "exp": now() + 600, "iat": now(), "scope": "calc:read"});
    let token =
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_pem(KEY).unwrap()).unwrap();
    let opts = Options {
        timeout: Duration::from_secs(5),
        ..Options::default()
    };
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        audit_http(&resource, Some(token), &opts),
    )
    .await
    .unwrap();
    assert_eq!(report.tools, 1, "{}", report.text());
    // The metadata, the challenge, a made-up token, a foreign Host and a
    // foreign Origin are all right: nothing to report.
    let rules: Vec<(Severity, &str)> = report
        .findings
        .iter()
        .map(|f| (f.severity, f.rule))
        .collect();
    assert_eq!(rules, [], "{}", report.text());
}

/// A leaky endpoint: it requires a token (`good`) but repeats a wrong one
/// in its 401, advertises metadata naming another resource, and answers a
/// foreign Origin and Host.
async fn leaky() -> String {
    use axum::http::{HeaderMap, StatusCode, header};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move |headers: HeaderMap| {
                let metadata_url = metadata_url.clone();
                async move {
                    let auth = headers
                        .get(header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    // The audience is not checked: a token for another
                    // resource opens it too.
                    if auth == "Bearer good" || auth == "Bearer for-another-resource" {
                        let init = json!({"jsonrpc": "2.0", "id": 1, "result": {
                            "protocolVersion": "2025-11-25", "capabilities": {},
                            "serverInfo": {"name": "leaky", "version": "1"}}});
                        return (
                            StatusCode::OK,
                            [(header::WWW_AUTHENTICATE, String::new())],
                            init.to_string(),
                        );
                    }
                    let challenge = format!("Bearer resource_metadata=\"{metadata_url}\"");
                    (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, challenge)],
                        format!("invalid token: {auth}"),
                    )
                }
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(|| async {
                axum::Json(json!({"resource": "https://elsewhere.example/mcp",
                                  "authorization_servers": ["https://as.example"]}))
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("{base}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_of_a_leaky_endpoint_is_found_with_its_exchange() {
    let url = leaky().await;
    let opts = Options {
        timeout: Duration::from_secs(5),
        wire: false,
        other_audience_token: Some("for-another-resource".into()),
        ..Options::default()
    };
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        audit_http(&url, Some("good".into()), &opts),
    )
    .await
    .unwrap();
    let mut auth: Vec<(Severity, &str)> = report
        .findings
        .iter()
        .filter(|f| f.rule.starts_with("auth-") || f.rule.ends_with("-not-checked"))
        .map(|f| (f.severity, f.rule))
        .collect();
    auth.sort();
    use Severity::{High, Info, Medium};
    assert_eq!(
        auth,
        [
            (Info, "host-not-checked"),
            (Info, "origin-not-checked"),
            (Medium, "auth-resource-metadata-invalid"),
            (High, "auth-token-reflected"),
            (High, "auth-wrong-audience-accepted"),
        ],
        "{}",
        report.text()
    );
    let evidence = |rule: &str| {
        report
            .findings
            .iter()
            .find(|f| f.rule == rule)
            .and_then(|f| f.evidence.clone())
            .unwrap()
    };
    assert!(
        evidence("auth-token-reflected").contains(".not-a-token) -> 401"),
        "{}",
        evidence("auth-token-reflected")
    );
    assert!(evidence("auth-resource-metadata-invalid").contains("elsewhere.example"));
    // The test issuer's token is named, never shown.
    let wrong = evidence("auth-wrong-audience-accepted");
    assert!(
        wrong.contains("(a token of the test issuer for another audience) -> 200"),
        "{wrong}"
    );
    assert!(!wrong.contains("for-another-resource"), "{wrong}");
    assert!(
        evidence("host-not-checked").contains("(host: mcp-audit-rebind.invalid) -> 200"),
        "{}",
        evidence("host-not-checked")
    );
    // The OWASP category of the auth findings.
    let reflected = report
        .findings
        .iter()
        .find(|f| f.rule == "auth-token-reflected")
        .unwrap();
    assert_eq!(
        reflected.owasp,
        Some("MCP07:2025 Insufficient Authentication & Authorization")
    );
}
