//! Secrets never appear: not through Debug, Display, tracing (text and
//! JSON formatters), JSON serialization or an error path; request headers
//! are logged by name only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::sync::{Arc, Mutex};

use hardened_mcp::redact::{REDACTED, RedactedHeaders, RedactingFields};
use hardened_mcp::secret::Secret;
use http::{HeaderMap, HeaderName, HeaderValue};
use tracing_subscriber::fmt::MakeWriter;

const CANARY: &str = "sk-CANARY-91b2e4";

#[derive(Debug, serde::Serialize)]
struct UpstreamConfig {
    endpoint: &'static str,
    api_key: Secret<String>,
    retries: u32,
}

fn config() -> UpstreamConfig {
    UpstreamConfig {
        endpoint: "https://solver-queue.example",
        api_key: Secret::new(CANARY.to_owned()),
        retries: 3,
    }
}

#[derive(Debug, thiserror::Error)]
enum UpstreamError {
    #[error("upstream refused the key {0}")]
    Refused(Secret<String>),
}

fn call_upstream(config: &UpstreamConfig) -> Result<(), UpstreamError> {
    Err(UpstreamError::Refused(config.api_key.clone()))
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn log_everything() {
    let config = config();
    tracing::info!(?config, "loaded upstream configuration");
    tracing::info!(key = %config.api_key, "display of the secret");
    tracing::info!("interpolated: {} / {:?}", config.api_key, config.api_key);
    if let Err(e) = call_upstream(&config) {
        tracing::warn!(error = %e, debug = ?e, "upstream call failed");
    }
    // A plain string under a secret-like name: only the field rule saves it.
    let raw: &str = config.api_key.expose_secret();
    tracing::info!(api_key = raw, password = %raw, authorization = ?raw, "raw values");
    tracing::info!(endpoint = config.endpoint, "positive control");
}

#[test]
fn secrets_never_reach_the_text_log() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .fmt_fields(RedactingFields)
        .with_ansi(false)
        .with_writer(capture.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, log_everything);
    let log = capture.text();
    assert!(
        log.contains("solver-queue.example"),
        "positive control: {log}"
    );
    assert!(log.contains("api_key=[redacted]"), "{log}");
    assert!(log.contains("password=[redacted]"));
    assert!(log.contains("authorization=[redacted]"));
    assert!(!log.contains(CANARY), "{log}");
    assert!(!log.contains("CANARY"));
}

#[test]
fn secret_wrapper_redacts_in_the_json_log_too() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(capture.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let config = config();
        tracing::info!(?config, key = %config.api_key, "loaded");
        tracing::info!(endpoint = config.endpoint, "positive control");
    });
    let log = capture.text();
    assert!(log.contains("solver-queue.example"));
    assert!(log.contains(REDACTED));
    assert!(!log.contains(CANARY), "{log}");
}

#[test]
fn secrets_never_reach_debug_json_or_errors() {
    let config = config();
    for shown in [
        format!("{config:?}"),
        format!("{config:#?}"),
        serde_json::to_string(&config).unwrap(),
        serde_json::to_string_pretty(&serde_json::to_value(&config).unwrap()).unwrap(),
        call_upstream(&config).unwrap_err().to_string(),
        format!("{:?}", call_upstream(&config)),
    ] {
        assert!(!shown.contains(CANARY), "{shown}");
        assert!(shown.contains(REDACTED), "{shown}");
    }
    // The value is there for server code that needs it.
    assert_eq!(config.api_key.expose_secret(), CANARY);
}

#[test]
fn log_fields_cannot_forge_lines_or_escape_the_terminal() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .fmt_fields(RedactingFields)
        .with_ansi(false)
        .with_writer(capture.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let label = "rod\n2026-01-01T00:00:00Z  INFO forged: admin login ok\x1b[2J";
        tracing::info!(label = %label, "label received");
        tracing::info!(huge = %"x".repeat(100_000), "huge field");
    });
    let log = capture.text();
    assert_eq!(log.lines().count(), 2, "{log}");
    assert!(log.contains("rod␊2026"));
    assert!(log.contains("␛[2J"));
    assert!(!log.contains('\u{1b}'));
    assert!(log.len() < 10_000);
}

#[test]
fn headers_are_logged_by_name_only() {
    let mut headers = HeaderMap::new();
    let sensitive = [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "mcp-session-id",
        "x-upstream-token",
        "x-client-secret",
    ];
    for name in sensitive {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(&format!("Bearer {CANARY}")).unwrap(),
        );
    }
    headers.insert(
        "host",
        HeaderValue::from_str(&format!("{CANARY}.internal")).unwrap(),
    );
    headers.insert("x-forwarded-for", HeaderValue::from_str(CANARY).unwrap());
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "accept",
        HeaderValue::from_bytes(b"text/plain\xc2\x9b\xff").unwrap(),
    );
    let shown = RedactedHeaders(&headers).to_string();
    assert!(!shown.contains(CANARY), "{shown}");
    for name in sensitive {
        assert!(
            shown.contains(&format!("{name}=[redacted]")),
            "{name}: {shown}"
        );
    }
    assert!(shown.contains("host") && shown.contains("x-forwarded-for"));
    assert!(
        shown.contains("content-type=application/json"),
        "positive control: {shown}"
    );
    assert!(
        shown.contains("accept=text/plain<U+009B>\u{fffd}"),
        "{shown}"
    );
    assert_eq!(format!("{:?}", RedactedHeaders(&headers)), shown);
}
