//! The authorization and origin surface of a streamable HTTP endpoint,
//! checked with `initialize` requests only (no tool is called):
//!
//! - **no token**: with a token given to the audit, the endpoint must
//!   refuse a request without one (`401`) and say how to authenticate
//!   (`WWW-Authenticate: Bearer`, RFC 6750); without one, an endpoint
//!   beyond loopback that answers is unauthenticated;
//! - **protected resource metadata** (RFC 9728, the MCP authorization
//!   spec): the challenge's `resource_metadata`, or the well-known
//!   locations, must serve a document on the endpoint's own origin whose
//!   `resource` is this endpoint and whose `authorization_servers` is not
//!   empty;
//! - **a token the server never issued** must be refused, and not repeated;
//! - **a foreign `Origin`** (a web page's request) must be refused (`403`),
//!   and on loopback **a foreign `Host`** too (DNS rebinding).
//!
//! Each finding carries the exchange that showed it, escaped.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN, WWW_AUTHENTICATE};
use serde_json::Value;

use crate::finding::{Finding, Severity};
use crate::text::escape;

/// The foreign origin and host sent (a name that cannot resolve).
pub const FOREIGN: &str = "mcp-audit-rebind.invalid";

/// Most bytes of a body read by these checks.
const MAX_BODY: usize = 256 * 1024;

/// One request and what came back.
struct Exchange {
    /// `POST <url>` and the headers that matter, as sent.
    request: String,
    status: u16,
    challenge: Option<String>,
    body: String,
}

impl Exchange {
    fn accepted(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The exchange, escaped, for a finding's evidence.
    fn shown(&self) -> String {
        let mut s = format!("{} -> {}", self.request, self.status);
        if let Some(c) = &self.challenge {
            s.push_str(&format!("; WWW-Authenticate: {c}"));
        }
        escape(&s)
    }
}

/// The checker of one endpoint.
struct Checker {
    http: reqwest::Client,
    url: reqwest::Url,
    bearer: Option<String>,
}

fn initialize() -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": crate::client::PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "hardened-mcp-audit", "version": env!("CARGO_PKG_VERSION")}}})
    .to_string()
}

impl Checker {
    /// `initialize`, with `token` (when given: the token and how the
    /// evidence names it, never the audit's or a test issuer's token
    /// itself) and the `extra` headers.
    async fn post(
        &self,
        token: Option<(&str, &str)>,
        extra: &[(&'static str, String)],
    ) -> Option<Exchange> {
        let mut request = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(initialize());
        let mut shown = format!("POST {}", self.url);
        match token {
            Some((t, label)) => {
                shown.push_str(&format!(" ({label})"));
                request = request.header(AUTHORIZATION, format!("Bearer {}", t.trim()));
            }
            None => shown.push_str(" (no Authorization)"),
        }
        for (name, value) in extra {
            shown.push_str(&format!(" ({name}: {value})"));
            request = request.header(*name, value.as_str());
        }
        let mut response = request.send().await.ok()?;
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() >= MAX_BODY || status != 200 {
                break;
            }
        }
        Some(Exchange {
            request: shown,
            status,
            challenge,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// `GET url` as JSON, when it answers `200` with a JSON object.
    async fn get_json(&self, url: &reqwest::Url) -> Option<Value> {
        let response = self.http.get(url.clone()).send().await.ok()?;
        if response.status() != reqwest::StatusCode::OK {
            return None;
        }
        let bytes = response.bytes().await.ok()?;
        serde_json::from_slice::<Value>(bytes.get(..bytes.len().min(MAX_BODY))?)
            .ok()
            .filter(Value::is_object)
    }

    fn loopback(&self) -> bool {
        self.url.host_str().is_some_and(|h| {
            h == "localhost"
                || h.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
    }
}

/// The value of parameter `name` of a `WWW-Authenticate` challenge.
fn param(challenge: &str, name: &str) -> Option<String> {
    let lower = challenge.to_ascii_lowercase();
    let key = format!("{name}=");
    let mut from = 0;
    while let Some(i) = lower
        .get(from..)
        .and_then(|r| r.find(&key))
        .map(|i| i + from)
    {
        let boundary = i == 0 || matches!(lower.as_bytes().get(i - 1), Some(b' ' | b','));
        let rest = challenge.get(i + key.len()..)?;
        if boundary {
            return Some(match rest.strip_prefix('"') {
                Some(q) => q.split('"').next().unwrap_or_default().to_owned(),
                None => rest.split([',', ' ']).next().unwrap_or_default().to_owned(),
            });
        }
        from = i + key.len();
    }
    None
}

/// The HTTP checks of the endpoint `url`, `bearer` being the token the
/// audit was given; `canary` marks the made-up token. An endpoint that does
/// not answer gets no finding here (the audit itself reports it).
pub async fn checks(
    url: &str,
    bearer: Option<&str>,
    other_audience: Option<&str>,
    timeout: Duration,
    canary: &str,
) -> Vec<Finding> {
    let Ok(url) = reqwest::Url::parse(url) else {
        return Vec::new();
    };
    let Ok(http) = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
    else {
        return Vec::new();
    };
    let c = Checker {
        http,
        url,
        bearer: bearer.map(|b| b.trim().to_owned()),
    };
    let mut out = Vec::new();
    let finding = |sev, rule, message: &str, ex: &Exchange| {
        Finding::new(sev, rule, message).evidence(&ex.shown())
    };
    let Some(anonymous) = c.post(None, &[]).await else {
        return out;
    };
    let authenticated = anonymous.status == 401;
    match (&c.bearer, anonymous.accepted()) {
        (Some(_), true) => out.push(finding(
            Severity::High,
            "auth-not-required",
            "the endpoint answered a request without a token, though it was given one: \
             anyone who reaches it can call its tools",
            &anonymous,
        )),
        (None, true) if !c.loopback() => out.push(finding(
            Severity::High,
            "auth-missing",
            "the endpoint answers without authentication beyond loopback: anyone who reaches it can call its tools",
            &anonymous,
        )),
        (None, true) => out.push(finding(
            Severity::Info,
            "auth-none",
            "the endpoint takes no authentication: safe on loopback only",
            &anonymous,
        )),
        _ => {}
    }
    if authenticated {
        let bearer_challenge = anonymous
            .challenge
            .as_deref()
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"));
        if !bearer_challenge {
            out.push(finding(
                Severity::Medium,
                "auth-challenge-missing",
                "a 401 without `WWW-Authenticate: Bearer`: a client is not told how to authenticate (RFC 6750, the MCP authorization spec)",
                &anonymous,
            ));
        }
        metadata(&c, &anonymous, &mut out).await;
        if let Some(other) = other_audience
            && let Some(ex) = c
                .post(
                    Some((other, "a token of the test issuer for another audience")),
                    &[],
                )
                .await
            && ex.accepted()
        {
            out.push(finding(
                Severity::High,
                "auth-wrong-audience-accepted",
                "a token issued for another resource was accepted: the audience is not checked, so any token of the issuer opens this server",
                &ex,
            ));
        }
        let made_up = format!("{canary}.not-a-token");
        let label = format!("Authorization: Bearer {made_up}");
        if let Some(bad) = c.post(Some((&made_up, &label)), &[]).await {
            if bad.accepted() {
                out.push(finding(
                    Severity::High,
                    "auth-bad-token-accepted",
                    "a token the server never issued was accepted",
                    &bad,
                ));
            }
            let echoed = bad.body.contains(canary)
                || bad.challenge.as_deref().is_some_and(|v| v.contains(canary));
            if echoed {
                out.push(finding(
                    Severity::High,
                    "auth-token-reflected",
                    "the refusal of a token repeats it: a credential sent in error ends up in logs and clients",
                    &bad,
                ));
            }
        }
    }
    let token = c.bearer.clone();
    let token = token.as_deref().map(|t| (t, "with the audit's token"));
    let origin = format!("http://{FOREIGN}");
    if let Some(foreign) = c.post(token, &[(ORIGIN.as_str(), origin)]).await
        && foreign.accepted()
    {
        let (sev, why) = if authenticated {
            (
                Severity::Info,
                "a web page cannot present the bearer token, but the MCP transport spec requires the check",
            )
        } else {
            (
                Severity::Medium,
                "without authentication, any web page the user opens can call the tools (DNS rebinding, cross-site requests)",
            )
        };
        out.push(finding(
            sev,
            "origin-not-checked",
            &format!("a request with a foreign Origin was answered, not refused with 403: {why}"),
            &foreign,
        ));
    }
    if c.loopback()
        && let Some(foreign) = c.post(token, &[(HOST.as_str(), FOREIGN.to_owned())]).await
        && foreign.accepted()
    {
        let sev = if authenticated {
            Severity::Info
        } else {
            Severity::High
        };
        out.push(finding(
            sev,
            "host-not-checked",
            "a loopback endpoint answered a request for a foreign Host: a web page can reach it by DNS rebinding",
            &foreign,
        ));
    }
    out
}

/// The protected resource metadata (RFC 9728) of an endpoint that asked
/// for a token.
async fn metadata(c: &Checker, challenge: &Exchange, out: &mut Vec<Finding>) {
    let advertised = challenge
        .challenge
        .as_deref()
        .and_then(|v| param(v, "resource_metadata"));
    let finding = |sev, rule, message: String, evidence: String| {
        Finding::new(sev, rule, message).evidence(&evidence)
    };
    let mut candidates = Vec::new();
    match advertised.as_deref().map(reqwest::Url::parse) {
        Some(Ok(u)) if u.origin() == c.url.origin() => candidates.push(u),
        Some(Ok(u)) => {
            out.push(finding(
                Severity::Medium,
                "auth-resource-metadata-invalid",
                "the challenge's resource_metadata is not on the endpoint's origin (RFC 9728 §3): not fetched".into(),
                escape(&format!("resource_metadata=\"{u}\"")),
            ));
            return;
        }
        Some(Err(_)) => {
            out.push(finding(
                Severity::Medium,
                "auth-resource-metadata-invalid",
                "the challenge's resource_metadata is not a URL".into(),
                challenge.shown(),
            ));
            return;
        }
        None => {
            let path = c.url.path().trim_end_matches('/');
            for p in [
                format!("/.well-known/oauth-protected-resource{path}"),
                "/.well-known/oauth-protected-resource".to_owned(),
            ] {
                let mut u = c.url.clone();
                u.set_path(&p);
                u.set_query(None);
                candidates.push(u);
            }
        }
    }
    for u in &candidates {
        let Some(doc) = c.get_json(u).await else {
            continue;
        };
        let shown = escape(&format!(
            "GET {u} -> 200 {}",
            crate::pin::canonical(&doc)
                .chars()
                .take(200)
                .collect::<String>()
        ));
        let resource = doc
            .get("resource")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let same = resource.trim_end_matches('/') == c.url.as_str().trim_end_matches('/');
        if !same {
            out.push(finding(
                Severity::Medium,
                "auth-resource-metadata-invalid",
                "the metadata's `resource` is not this endpoint: a client must refuse it (RFC 9728 §3.3), and tokens minted for it are for another audience".into(),
                shown,
            ));
            return;
        }
        let servers = doc
            .get("authorization_servers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string));
        if !servers {
            out.push(finding(
                Severity::Medium,
                "auth-resource-metadata-invalid",
                "the metadata names no authorization server: a client cannot get a token".into(),
                shown,
            ));
        }
        return;
    }
    if advertised.is_some() {
        out.push(finding(
            Severity::Medium,
            "auth-resource-metadata-invalid",
            "the metadata the challenge names is not served as a JSON document".into(),
            challenge.shown(),
        ));
    } else {
        out.push(finding(
            Severity::Info,
            "auth-no-oauth-metadata",
            "no protected resource metadata (RFC 9728): fine for a static token; an OAuth client cannot discover how to get one".into(),
            challenge.shown(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read_quoted_or_not() {
        let c = r#"Bearer resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", scope="a b""#;
        assert_eq!(
            param(c, "resource_metadata").as_deref(),
            Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(param(c, "scope").as_deref(), Some("a b"));
        assert_eq!(
            param("Bearer error=invalid_token, x=1", "error").as_deref(),
            Some("invalid_token")
        );
        assert_eq!(
            param("Bearer xresource_metadata=\"u\"", "resource_metadata"),
            None
        );
        assert_eq!(param("Bearer", "resource_metadata"), None);
    }
}
