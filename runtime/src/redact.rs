//! Redaction for logs: the secret-like name rule shared by logging and the
//! output-schema check, request headers logged by name only, and a
//! `tracing` field formatter that redacts secret-like fields.
//!
//! The rule is deliberately broad: a false positive costs a renamed field, a
//! false negative leaks a credential into logs that outlive the call.

use std::fmt::{self, Write as _};

#[cfg(feature = "http")]
use http::HeaderMap;
use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

use crate::untrusted::push_neutralised_inline;

/// The text every redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Secret terms, compared against the words of a name (and joined runs of
/// two or three adjacent words), lowercased, a plural `s` dropped.
pub const SECRET_TERMS: &[&str] = &[
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

/// Terms that also mark a word they start (`passwordhash`,
/// `credentialsfile`); the others would catch ordinary words that merely
/// begin with them (`tokenizer`, `secretary`).
const PREFIX_TERMS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "accesskey",
    "privatekey",
    "cookie",
    "authorization",
    "credential",
];

/// Whether a field, property or header name looks like it carries a secret.
///
/// The name is split into words at every non-letter and at lowercase →
/// uppercase steps (`refreshToken` → `refresh token`, `X-Api-Key` →
/// `x api key`), lowercased. It is secret-like when a word, or two or three
/// adjacent words joined (`api key` → `apikey`), with a plural `s` dropped,
/// equals or ends with one of [`SECRET_TERMS`] (`accesstoken`,
/// `clientsecret`), or starts with one of the unambiguous ones
/// (`passwordhash`). It errs towards redaction: `max_tokens` and
/// `session_count` are secret-like; `tokenizer`, `secretary` and `author`
/// are not. Rename a false positive rather than weakening the rule.
///
/// This is the one rule for logs, headers and output schemas.
///
/// ```
/// use hardened_mcp::redact::is_secret_like;
///
/// assert!(is_secret_like("api_key"));
/// assert!(is_secret_like("refreshToken"));
/// assert!(is_secret_like("X-Api-Key"));
/// assert!(is_secret_like("Set-Cookie"));
/// assert!(is_secret_like("accesstoken"));
/// assert!(!is_secret_like("temperature"));
/// assert!(!is_secret_like("author"));
/// assert!(!is_secret_like("tokenizer"));
/// ```
pub fn is_secret_like(name: &str) -> bool {
    let words = split_words(name);
    (0..words.len()).any(|start| {
        let mut joined = String::new();
        words[start..].iter().take(3).any(|word| {
            joined.push_str(word);
            is_secret_word(&joined)
        })
    })
}

fn split_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphabetic() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

fn is_secret_word(word: &str) -> bool {
    let singular = match word.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 => stem,
        _ => word,
    };
    [word, singular].iter().any(|w| {
        SECRET_TERMS.iter().any(|t| w.ends_with(t)) || PREFIX_TERMS.iter().any(|t| w.starts_with(t))
    })
}

#[cfg(feature = "http")]
/// Headers whose value is sensitive although their name does not match
/// [`is_secret_like`].
const SENSITIVE_HEADERS: &[&str] = &["www-authenticate", "mcp-session-id", "x-csrf", "x-xsrf"];

#[cfg(feature = "http")]
/// Headers whose (neutralised, shortened) value is worth logging.
const SHOWN_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "accept",
    "mcp-protocol-version",
];

#[cfg(feature = "http")]
/// The longest header value [`RedactedHeaders`] shows, in bytes.
const MAX_SHOWN_HEADER_VALUE: usize = 64;

#[cfg(feature = "http")]
fn is_sensitive_header(name: &str) -> bool {
    is_secret_like(name) || SENSITIVE_HEADERS.iter().any(|h| name.starts_with(h))
}

#[cfg(feature = "http")]
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

#[cfg(feature = "http")]
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

#[cfg(feature = "http")]
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
            "tokens",
            "access_token",
            "accesstoken",
            "AccessToken",
            "refreshToken",
            "Password",
            "passwordHash",
            "db_passwd",
            "client_secret",
            "clientSecret",
            "api_key",
            "apiKey",
            "APIKey",
            "API_KEY",
            "apikeys",
            "x-api-key",
            "Cookie",
            "set-cookie",
            "SessionCookie",
            "Authorization",
            "proxy-authorization",
            "HTTPAuthorization",
            "credentials",
            "private_key",
            "PRIVATE.KEY",
            "session_id",
            "mcp-session-id",
            "aws_access_key_id",
            "bearer",
            "max_tokens",
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
            "tokenizer",
            "keyframe",
            "secretary_count",
            "steps",
            "courant",
            "passage",
            "",
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
