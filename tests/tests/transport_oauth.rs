//! OAuth 2.1 protected resource over HTTP, on loopback, against a fake
//! authorization server that this test controls (metadata and JWKS served
//! by axum, tokens signed with the keys in `tests/fixtures/oauth`): the
//! resource metadata and challenges, a valid token's caller and scopes, and
//! every refusal: expired, not yet valid, another audience, another issuer,
//! `alg: none`, HMAC with the public key, a tampered signature, an unknown
//! key (then the key rotated in, fetched at a bounded rate), a JWKS that is
//! huge or slow, a tool scope the token lacks. The real OpenID provider is
//! in `examples/solver-server/tests/oidc.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hardened_mcp::prelude::*;
use hardened_mcp::transport::oauth::{GrantedScopes, MAX_TOKEN_BYTES, OAuthError};
use hardened_mcp::transport::{HttpConfig, HttpServer, OAuth, OAuthConfig, RunningHttpServer};
use hardened_mcp_tests::tr_support::{
    HttpClient as Client, HttpReply, call, initialize_request, modern_call, modern_headers,
};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const KEY_A: &[u8] = include_bytes!("../fixtures/oauth/es256-a.pem");
const KEY_B: &[u8] = include_bytes!("../fixtures/oauth/es256-b.pem");
const RSA_PUBLIC: &[u8] = include_bytes!("../fixtures/oauth/rs256-c.pub.pem");
const RSA_2048: &[u8] = include_bytes!("../fixtures/oauth/rs2048.pem");
const RSA_4096: &[u8] = include_bytes!("../fixtures/oauth/rs4096.pem");

// ---- the fake authorization server ------------------------------------------

/// What the fake server's JWKS endpoint does.
#[derive(Default)]
struct Issuer {
    /// Serve key "b" too (rotated in).
    rotated: AtomicBool,
    /// Answer the JWKS with 4 MiB of keys.
    huge: AtomicBool,
    /// Answer the JWKS after 3 s.
    slow: AtomicBool,
    /// JWKS fetches so far.
    fetches: AtomicUsize,
}

fn jwk(pem: &[u8], kid: &str) -> Jwk {
    let mut jwk =
        Jwk::from_encoding_key(&EncodingKey::from_ec_pem(pem).unwrap(), Algorithm::ES256).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

fn rsa_jwk(pem: &[u8], kid: &str, alg: Algorithm) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(&EncodingKey::from_rsa_pem(pem).unwrap(), alg).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

/// A token signed with the RSA key `pem` under `kid` with `alg`.
fn rsa_token(pem: &[u8], kid: &str, alg: Algorithm, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_pem(pem).unwrap()).unwrap()
}

async fn start_issuer(state: Arc<Issuer>) -> String {
    hardened_mcp_tests::oauth_issuer::serve(move || {
        let state = Arc::clone(&state);
        async move {
            state.fetches.fetch_add(1, Ordering::SeqCst);
            if state.slow.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            if state.huge.load(Ordering::SeqCst) {
                return "x".repeat(4 << 20);
            }
            let mut keys = vec![
                jwk(KEY_A, "a"),
                rsa_jwk(RSA_2048, "r2048", Algorithm::RS256),
                rsa_jwk(RSA_4096, "r4096", Algorithm::PS256),
            ];
            if state.rotated.load(Ordering::SeqCst) {
                keys.push(jwk(KEY_B, "b"));
            }
            serde_json::to_string(&JwkSet { keys }).unwrap()
        }
    })
    .await
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

/// A token signed with `pem` under `kid`, with `claims` over the defaults.
fn token(pem: &[u8], kid: &str, claims: Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_pem(pem).unwrap()).unwrap()
}

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

// ---- the resource --------------------------------------------------------------

struct Calc;

#[hardened_tools]
impl Calc {
    /// Who is calling.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, scopes = "calc:read")]
    async fn whoami(&self, ctx: ToolContext) -> Result<Output<String>, ToolError> {
        Ok(Output::new(ctx.caller().to_string()))
    }

    /// Needs the write scope.
    #[hardened_tool(
        max_cost = 1,
        units = "calls",
        cost = 1.0,
        scopes = "calc:read calc:write"
    )]
    async fn store(&self, #[bounded(min = 0, max = 10)] n: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(n))
    }
}

struct Fixture {
    issuer: String,
    state: Arc<Issuer>,
    server: RunningHttpServer,
    resource: String,
}

async fn fixture(configure: impl FnOnce(OAuthConfig) -> OAuthConfig) -> Fixture {
    let state = Arc::new(Issuer::default());
    let issuer = start_issuer(Arc::clone(&state)).await;
    // The resource's own address is part of its identity: bind first, and
    // serve on that listener (no other test can take the port in between).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let config = configure(
        OAuthConfig::new(&issuer, &resource)
            .scopes_supported(["calc:read", "calc:write"])
            .refresh_interval(Duration::from_millis(200)),
    );
    let oauth = OAuth::discover(config).await.unwrap();
    let server = Server::new("calc", "1", Calc, Calc::hardened_tool_router());
    let http = HttpConfig::new().oauth(oauth).sse_keep_alive(None);
    let server = HttpServer::new(move || Ok(server.clone()), http)
        .unwrap()
        .start_on(listener, CancellationToken::new())
        .await
        .unwrap();
    Fixture {
        issuer,
        state,
        server,
        resource,
    }
}

impl Fixture {
    fn claims(&self, scope: &str) -> Value {
        json!({"iss": self.issuer, "aud": self.resource, "sub": "client-1",
               "exp": now() + 300, "iat": now(), "scope": scope})
    }

    /// `tools/call` of `tool` with `token`, in a fresh legacy session.
    async fn call(&self, token: &str, tool: &str, args: Value) -> HttpReply {
        let mut c = Client::new(self.server.local_addr(), Some(token));
        let init = c.post(&initialize_request(1)).await;
        if init.status != 200 {
            return init;
        }
        c.session = init.header("mcp-session-id").map(str::to_owned);
        c.post(&call(2, tool, args)).await
    }
}

fn data(reply: &HttpReply) -> Value {
    let rpc = reply.rpc().unwrap();
    assert_ne!(rpc["result"]["isError"], json!(true), "{rpc}");
    rpc["result"]["structuredContent"]["data"].clone()
}

fn assert_refused(reply: &HttpReply, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    assert!(
        challenge.contains("resource_metadata=\""),
        "{what}: {challenge}"
    );
}

// ---- tests --------------------------------------------------------------------

#[tokio::test]
async fn metadata_and_challenges_point_at_the_authorization_server() {
    let f = fixture(|c| c).await;
    let addr = f.server.local_addr();
    let mut anon = Client::new(addr, None);
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = hardened_mcp_tests::tr_support::http_request(
            addr,
            "GET",
            path,
            &[("Host", &anon.host)],
            b"",
        )
        .await
        .unwrap();
        assert_eq!(reply.status, 200, "{path}");
        let doc: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(doc["resource"], json!(f.resource));
        assert_eq!(doc["authorization_servers"], json!([f.issuer]));
        assert_eq!(doc["scopes_supported"], json!(["calc:read", "calc:write"]));
    }
    // No token: a 401 naming the metadata and the scopes, no error code.
    let reply = anon.post(&initialize_request(1)).await;
    assert_eq!(reply.status, 401);
    let challenge = reply.header("www-authenticate").unwrap();
    assert_eq!(
        challenge,
        format!(
            "Bearer resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\", scope=\"calc:read calc:write\""
        )
    );
    f.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_valid_token_names_its_caller_and_grants_its_scopes() {
    let f = fixture(|c| c).await;
    let good = token(KEY_A, "a", f.claims("calc:read"));
    let who = data(&f.call(&good, "whoami", json!({})).await);
    let who = who.as_str().unwrap();
    assert!(who.starts_with("oauth-") && who.len() == 38, "{who}");
    // The same subject of the same issuer is the same caller; another
    // subject is another.
    let again = token(KEY_A, "a", f.claims("calc:read calc:write"));
    assert_eq!(data(&f.call(&again, "whoami", json!({})).await), json!(who));
    let mut other = f.claims("calc:read");
    other["sub"] = json!("client-2");
    let other = data(&f.call(&token(KEY_A, "a", other), "whoami", json!({})).await);
    assert_ne!(other, json!(who));
    // A missing scope: 403 insufficient_scope naming what the tool needs.
    let reply = f.call(&good, "store", json!({"n": 1})).await;
    assert_eq!(reply.status, 403, "{}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap();
    assert!(
        challenge
            .starts_with("Bearer error=\"insufficient_scope\", scope=\"calc:read calc:write\""),
        "{challenge}"
    );
    // With it, served; `scp` as a list works too.
    assert_eq!(
        data(&f.call(&again, "store", json!({"n": 3})).await),
        json!(3)
    );
    let mut scp = f.claims("");
    scp["scp"] = json!(["calc:read", "calc:write"]);
    assert_eq!(
        data(
            &f.call(&token(KEY_A, "a", scp), "store", json!({"n": 4}))
                .await
        ),
        json!(4)
    );
    f.server.shutdown().await.unwrap();
}

/// Access tokens as the major identity providers issue them: RS256 with a
/// 2048-bit key and typical claims (about 0.7 KiB, above the 512 bytes of
/// a static token), PS256 with a 4096-bit key and 200 group ids (about
/// 11 KiB, Entra ID's largest before its group overage claim) are served;
/// one past the documented bound is refused.
#[tokio::test]
async fn tokens_of_every_standard_size_are_accepted() {
    let f = fixture(|c| c).await;
    let mut typical = f.claims("calc:read");
    typical["azp"] = json!("3f1c2a9e-7b44-4c1d-9a0e-5d6b7c8e9f01");
    typical["jti"] = json!("b6c1e2f3-4a5b-6c7d-8e9f-0a1b2c3d4e5f");
    typical["client_id"] = json!("mcp-test-client");
    let rs256 = rsa_token(RSA_2048, "r2048", Algorithm::RS256, &typical);
    assert!(rs256.len() > 512, "{}", rs256.len());
    let who = data(&f.call(&rs256, "whoami", json!({})).await);
    assert!(who.as_str().unwrap().starts_with("oauth-"), "{who}");

    let mut groups = typical.clone();
    groups["groups"] = json!(
        (0..200)
            .map(|i| format!("{i:08x}-1c2d-4e5f-8a9b-0c1d2e3f4a5b"))
            .collect::<Vec<_>>()
    );
    let big = rsa_token(RSA_4096, "r4096", Algorithm::PS256, &groups);
    assert!(
        big.len() > 8 * 1024 && big.len() <= MAX_TOKEN_BYTES,
        "{}",
        big.len()
    );
    assert_eq!(data(&f.call(&big, "whoami", json!({})).await), who);

    let mut huge = typical.clone();
    huge["pad"] = json!("x".repeat(MAX_TOKEN_BYTES));
    let huge = rsa_token(RSA_2048, "r2048", Algorithm::RS256, &huge);
    assert_refused(
        &f.call(&huge, "whoami", json!({})).await,
        "a token past the bound",
    );
    f.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn every_bad_token_is_refused() {
    let f = fixture(|c| c.leeway(Duration::from_secs(5))).await;
    let base = f.claims("calc:read");
    let with = |k: &str, v: Value| {
        let mut c = base.clone();
        c[k] = v;
        c
    };
    let good_header = b64(&json!({"alg": "ES256", "typ": "JWT", "kid": "a"}));
    let good = token(KEY_A, "a", base.clone());
    let sig = good.rsplit('.').next().unwrap().to_owned();
    let hmac_with_public_key = {
        let mut h = Header::new(Algorithm::HS256);
        h.kid = Some("a".into());
        jsonwebtoken::encode(&h, &base, &EncodingKey::from_secret(RSA_PUBLIC).unwrap()).unwrap()
    };
    let cases: Vec<(&str, String)> = vec![
        ("expired", token(KEY_A, "a", with("exp", json!(now() - 60)))),
        (
            "not yet valid",
            token(KEY_A, "a", with("nbf", json!(now() + 60))),
        ),
        (
            "another audience",
            token(KEY_A, "a", with("aud", json!("http://127.0.0.1:1/other"))),
        ),
        (
            "another issuer",
            token(KEY_A, "a", with("iss", json!("http://127.0.0.1:1"))),
        ),
        (
            "no subject",
            token(KEY_A, "a", {
                let mut c = base.clone();
                c.as_object_mut().unwrap().remove("sub");
                c
            }),
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "typ": "JWT"})),
                b64(&base)
            ),
        ),
        ("hmac with the public key", hmac_with_public_key),
        (
            "tampered claims",
            format!("{good_header}.{}.{sig}", b64(&with("sub", json!("admin")))),
        ),
        (
            "signed by another key under kid a",
            token(KEY_B, "a", base.clone()),
        ),
        ("unknown kid", token(KEY_B, "b", base.clone())),
        ("not a jwt", "abc.def".to_owned()),
    ];
    for (what, t) in &cases {
        assert_refused(&f.call(t, "whoami", json!({})).await, what);
    }
    // Positive control: the same claims, signed right, are served.
    assert!(data(&f.call(&good, "whoami", json!({})).await).is_string());
    f.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_rotated_key_is_fetched_at_a_bounded_rate() {
    let f = fixture(|c| c.refresh_interval(Duration::from_millis(500))).await;
    let by_b = token(KEY_B, "b", f.claims("calc:read"));
    // Right after discovery fetched the keys, an unknown kid fetches nothing.
    let before = f.state.fetches.load(Ordering::SeqCst);
    assert_refused(&f.call(&by_b, "whoami", json!({})).await, "kid b at once");
    assert_eq!(f.state.fetches.load(Ordering::SeqCst), before);
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Not rotated yet: refused, after one refresh.
    assert_refused(
        &f.call(&by_b, "whoami", json!({})).await,
        "kid b before rotation",
    );
    let after_first = f.state.fetches.load(Ordering::SeqCst);
    assert_eq!(after_first, before + 1, "one refresh for an unknown kid");
    // A burst of forged kids within the interval fetches nothing more.
    for i in 0..10 {
        let forged = token(KEY_B, &format!("forged-{i}"), f.claims("calc:read"));
        assert_refused(&f.call(&forged, "whoami", json!({})).await, "forged kid");
    }
    assert_eq!(
        f.state.fetches.load(Ordering::SeqCst),
        after_first,
        "rate-limited"
    );
    // The issuer rotates key b in; after the interval, b's tokens pass.
    f.state.rotated.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(data(&f.call(&by_b, "whoami", json!({})).await).is_string());
    assert_eq!(f.state.fetches.load(Ordering::SeqCst), after_first + 1);
    f.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_huge_or_slow_key_set_is_refused_at_discovery() {
    for (mode, expect) in [("huge", "ceiling"), ("slow", "in time")] {
        let state = Arc::new(Issuer::default());
        match mode {
            "huge" => state.huge.store(true, Ordering::SeqCst),
            _ => state.slow.store(true, Ordering::SeqCst),
        }
        let issuer = start_issuer(Arc::clone(&state)).await;
        let config = OAuthConfig::new(&issuer, "http://127.0.0.1:9/mcp")
            .fetch_timeout(Duration::from_millis(500));
        let started = std::time::Instant::now();
        let err = OAuth::discover(config).await.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{mode}: bounded"
        );
        assert!(
            matches!(err, OAuthError::TooLarge | OAuthError::Timeout),
            "{mode}: {err}"
        );
        assert!(err.to_string().contains(expect), "{mode}: {err}");
    }
}

/// The 2026-07-28 era: no session, each request carries its token and is
/// checked on its own, scopes included.
#[tokio::test]
async fn the_2026_era_meets_the_same_token_rules() {
    let f = fixture(|c| c).await;
    let post = |token: String, tool: &'static str, args: Value| {
        let addr = f.server.local_addr();
        async move {
            let mut c = Client::new(addr, Some(&token));
            let body = serde_json::to_vec(&modern_call(7, tool, args)).unwrap();
            c.request("POST", &modern_headers("tools/call", Some(tool)), &body)
                .await
        }
    };
    let reader = token(KEY_A, "a", f.claims("calc:read"));
    let who = post(reader.clone(), "whoami", json!({})).await;
    assert!(
        data(&who).as_str().unwrap().starts_with("oauth-"),
        "{}",
        who.text()
    );
    let refused = post(reader, "store", json!({"n": 1})).await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    let mut expired = f.claims("calc:read");
    expired["exp"] = json!(now() - 600);
    assert_refused(
        &post(token(KEY_A, "a", expired), "whoami", json!({})).await,
        "expired, 2026 era",
    );
    f.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_direct_call_with_too_few_scopes_is_refused_by_the_route() {
    let ctx = ToolContext::detached(CallerId::local())
        .with_scopes(GrantedScopes::new(["calc:read".to_owned()]));
    let set = Calc::hardened_tool_router_set();
    let store = set.get("store").unwrap();
    let args = json!({"n": 1}).as_object().cloned();
    let r = store.call(&Calc, args, ctx).await;
    assert_eq!(
        r.structured_content.unwrap()["error"]["kind"],
        "insufficient_scope"
    );
    // The tool advertises its scopes.
    let meta = store.tool().meta.clone().unwrap();
    assert_eq!(
        meta.get("dev.hardened-mcp/requiredScopes"),
        Some(&json!(["calc:read", "calc:write"]))
    );
}
