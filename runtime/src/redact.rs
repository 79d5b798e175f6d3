//! Redaction for logs: the secret-like name rule shared by logging and the
//! output-schema check, request headers logged by name only, and a
//! `tracing` field formatter that redacts secret-like fields.
//!
//! The rule is deliberately broad: a false positive costs a renamed field, a
//! false negative leaks a credential into logs that outlive the call.

use std::fmt::{self, Write as _};

use http::HeaderMap;
use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

use crate::untrusted::push_neutralised_inline;

/// The text every redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Fragments that make a name secret-like, compared against the name
/// lowercased with `_`, `-`, `.` and spaces removed (so `api_key`, `apiKey`,
/// `X-Api-Key` and `API.KEY` all contain `apikey`).
pub const SECRET_NAME_FRAGMENTS: &[&str] = &[
    "token",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "apikey",
    "accesskey",
    "privatekey",
    "cookie",
    "authorization",
    "bearer",
    "credential",
    "session",
];

/// Whether a field, property or header name looks like it carries a secret.
///
/// Matching is by fragment after normalisation (see
/// [`SECRET_NAME_FRAGMENTS`]), so it errs towards redaction: `max_tokens`
/// and `session_count` are secret-like too. Rename such fields rather than
/// weakening the rule.
///
/// ```
/// use hardened_mcp::redact::is_secret_like;
///
/// assert!(is_secret_like("api_key"));
/// assert!(is_secret_like("refreshToken"));
/// assert!(is_secret_like("X-Api-Key"));
/// assert!(is_secret_like("Set-Cookie"));
/// assert!(!is_secret_like("temperature"));
/// assert!(!is_secret_like("author"));
/// ```
pub fn is_secret_like(name: &str) -> bool {
    let normalised: String = name
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_NAME_FRAGMENTS
        .iter()
        .any(|fragment| normalised.contains(fragment))
}

/// Headers whose value is sensitive although their name does not match
/// [`is_secret_like`].
const SENSITIVE_HEADERS: &[&str] = &["www-authenticate", "mcp-session-id", "x-csrf", "x-xsrf"];

/// Headers whose (neutralised, shortened) value is worth logging.
const SHOWN_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "accept",
    "mcp-protocol-version",
];

/// The longest header value [`RedactedHeaders`] shows, in bytes.
const MAX_SHOWN_HEADER_VALUE: usize = 64;

fn is_sensitive_header(name: &str) -> bool {
    is_secret_like(name) || SENSITIVE_HEADERS.iter().any(|h| name.starts_with(h))
}

/// Displays request headers without ever logging them whole.
///
/// Every header name is listed (names are restricted to token characters by
/// `http`). Sensitive headers (authorization, cookies, session ids, API
/// keys, anything [`is_secret_like`]) show [`REDACTED`]; a few harmless
/// headers (content type and length, accept, MCP protocol version) show a
/// shortened, neutralised value; all others show their name only.
///
/// ```
/// use hardened_mcp::redact::RedactedHeaders;
/// use http::{HeaderMap, HeaderValue, header};
///
/// let mut headers = HeaderMap::new();
/// headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer abc123"));
/// headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
/// headers.insert(header::HOST, HeaderValue::from_static("internal.example"));
/// let logged = RedactedHeaders(&headers).to_string();
/// assert!(logged.contains("authorization=[redacted]"));
/// assert!(logged.contains("content-type=application/json"));
/// assert!(logged.contains("host") && !logged.contains("internal.example"));
/// assert!(!logged.contains("abc123"));
/// ```
#[derive(Clone, Copy)]
pub struct RedactedHeaders<'a>(pub &'a HeaderMap);

impl fmt::Display for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (name, value) in self.0 {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            let name = name.as_str();
            f.write_str(name)?;
            if is_sensitive_header(name) {
                f.write_str("=")?;
                f.write_str(REDACTED)?;
            } else if SHOWN_HEADERS.contains(&name) {
                f.write_str("=")?;
                let bytes = value.as_bytes();
                let shown = &bytes[..bytes.len().min(MAX_SHOWN_HEADER_VALUE)];
                let mut out = String::with_capacity(shown.len());
                for c in String::from_utf8_lossy(shown).chars() {
                    push_neutralised_inline(&mut out, c);
                }
                f.write_str(&out)?;
                if bytes.len() > MAX_SHOWN_HEADER_VALUE {
                    f.write_str("…")?;
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The longest field value [`RedactingFields`] writes, in bytes.
pub const MAX_LOGGED_FIELD_BYTES: usize = 4096;

/// A `tracing-subscriber` field formatter that redacts secret-like fields.
///
/// Fields whose name is [`is_secret_like`] are written as
/// `name=[redacted]`; every other value is shortened to
/// [`MAX_LOGGED_FIELD_BYTES`] and has control characters, terminal escapes
/// and bidirectional overrides neutralised (so a value cannot forge a log
/// line). Install it with `fmt_fields`:
///
/// ```
/// use hardened_mcp::redact::RedactingFields;
///
/// let subscriber = tracing_subscriber::fmt()
///     .fmt_fields(RedactingFields)
///     .with_writer(std::io::sink)
///     .finish();
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::info!(password = "hunter2", user = "ada", "login");
/// });
/// ```
///
/// It applies to the text formatters only; `tracing-subscriber`'s JSON
/// formatter records fields itself. [`crate::secret::Secret`] redacts in
/// every formatter, including inside the message.
#[derive(Debug, Clone, Copy, Default)]
pub struct RedactingFields;

impl<'writer> FormatFields<'writer> for RedactingFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = RedactingVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct RedactingVisitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl RedactingVisitor<'_> {
    fn write_field(&mut self, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
        if !self.first {
            self.writer.write_char(' ')?;
        }
        self.first = false;
        let name = field.name();
        let is_message = name == "message";
        if !is_message {
            self.writer.write_str(name)?;
            self.writer.write_char('=')?;
        }
        if !is_message && is_secret_like(name) {
            return self.writer.write_str(REDACTED);
        }
        let mut bounded = Bounded::default();
        // An `Err` here only means the value was cut at the ceiling.
        let _ = write!(bounded, "{value:?}");
        let mut out = String::with_capacity(bounded.buf.len());
        for c in bounded.buf.chars() {
            push_neutralised_inline(&mut out, c);
        }
        self.writer.write_str(&out)?;
        if bounded.cut {
            self.writer.write_str("…")?;
        }
        Ok(())
    }
}

impl Visit for RedactingVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_ok() {
            self.result = self.write_field(field, value);
        }
    }
}

/// A `fmt::Write` sink that keeps at most [`MAX_LOGGED_FIELD_BYTES`].
#[derive(Default)]
struct Bounded {
    buf: String,
    cut: bool,
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = MAX_LOGGED_FIELD_BYTES - self.buf.len();
        if s.len() <= room {
            self.buf.push_str(s);
            return Ok(());
        }
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        self.buf.push_str(&s[..cut]);
        self.cut = true;
        Err(fmt::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_like_names() {
        for name in [
            "token",
            "access_token",
            "Password",
            "db_passwd",
            "client_secret",
            "api_key",
            "apiKey",
            "x-api-key",
            "Cookie",
            "set-cookie",
            "Authorization",
            "proxy-authorization",
            "credentials",
            "private_key",
            "PRIVATE.KEY",
            "session_id",
            "aws_access_key_id",
        ] {
            assert!(is_secret_like(name), "{name}");
        }
        for name in [
            "temperature",
            "run_handle",
            "author",
            "cells",
            "key",
            "keys",
            "label",
        ] {
            assert!(!is_secret_like(name), "{name}");
        }
    }

    #[test]
    fn bounded_sink_cuts_on_char_boundary() {
        let mut b = Bounded::default();
        let long = "é".repeat(MAX_LOGGED_FIELD_BYTES);
        assert!(write!(b, "{long}").is_err());
        assert!(b.cut);
        assert!(b.buf.len() <= MAX_LOGGED_FIELD_BYTES);
        assert!(b.buf.chars().all(|c| c == 'é'));
    }
}
