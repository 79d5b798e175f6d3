//! Run handles: the opaque, server-issued names of runs.
//!
//! A handle is `prefix + "_" + body`, where the body is at least 128 random
//! bits in URL-safe base64. It is the only thing a caller ever holds; it is
//! never a path, and it is only ever used as one already-validated path
//! component beneath the run root's directory descriptor.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{HandlePrefix, RunError};

/// Random bytes in a freshly issued handle (128 bits).
pub(crate) const TOKEN_BYTES: usize = 16;
/// Shortest accepted handle body: the base64 length of [`TOKEN_BYTES`].
pub(crate) const MIN_BODY_LEN: usize = 22;
/// Longest accepted handle body.
pub(crate) const MAX_BODY_LEN: usize = 80;

/// The pattern every handle of every prefix matches (for a JSON Schema that
/// does not know the server's prefix). [`HandlePrefix::pattern`] gives the
/// exact one.
const GENERIC_PATTERN: &str = crate::args::RUN_HANDLE_PATTERN;

/// An opaque run handle issued by [`RunRoot::create`](super::RunRoot::create).
///
/// It is server-issued random text (prefix, `_`, ≥128 random bits in
/// URL-safe base64), so showing it to its owner is safe; it reveals no path.
/// Tools receive handles back as plain strings and pass them to
/// [`RunRoot::resolve`](super::RunRoot::resolve), which re-validates them.
///
/// ```
/// use hardened_mcp::runs::RunHandle;
/// assert_eq!(RunHandle::pattern(), "^[a-z][a-z0-9]{0,15}_[A-Za-z0-9_-]{22,80}$");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunHandle(Box<str>);

impl RunHandle {
    /// The handle text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The regular expression (JSON Schema `pattern`) matching handles of
    /// any valid prefix.
    pub const fn pattern() -> &'static str {
        GENERIC_PATTERN
    }

    /// Issues a fresh random handle.
    pub(crate) fn generate(prefix: &HandlePrefix) -> Result<Self, RunError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| {
            tracing::error!(error = %e, "run root: no randomness for a run handle");
            RunError::Io
        })?;
        let mut s = String::with_capacity(prefix.as_str().len() + 1 + MIN_BODY_LEN);
        s.push_str(prefix.as_str());
        s.push('_');
        URL_SAFE_NO_PAD.encode_string(bytes, &mut s);
        Ok(Self(s.into()))
    }

    /// Accepts `text` only if it is a well-formed handle with `prefix`.
    ///
    /// A well-formed handle is one path component: it cannot be empty, `.`,
    /// `..`, contain `/`, NUL or anything non-ASCII, or start with `-` or `.`.
    pub(crate) fn parse(text: &str, prefix: &HandlePrefix) -> Option<Self> {
        is_well_formed(text, prefix).then(|| Self(text.into()))
    }
}

/// The pattern check, without allocating.
pub(crate) fn is_well_formed(text: &str, prefix: &HandlePrefix) -> bool {
    let Some(body) = text
        .strip_prefix(prefix.as_str())
        .and_then(|rest| rest.strip_prefix('_'))
    else {
        return false;
    };
    (MIN_BODY_LEN..=MAX_BODY_LEN).contains(&body.len())
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl fmt::Display for RunHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RunHandle").field(&&*self.0).finish()
    }
}

impl AsRef<str> for RunHandle {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl serde::Serialize for RunHandle {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl schemars::JsonSchema for RunHandle {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "RunHandle".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": GENERIC_PATTERN,
            "minLength": 2 + MIN_BODY_LEN,
            "maxLength": crate::runs::name::MAX_PREFIX_LEN + 1 + MAX_BODY_LEN,
            "description": "Opaque run handle issued by this server."
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn generated_handles_parse_and_differ() {
        let p = HandlePrefix::default();
        let a = RunHandle::generate(&p).unwrap();
        let b = RunHandle::generate(&p).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), "run_".len() + MIN_BODY_LEN);
        assert_eq!(RunHandle::parse(a.as_str(), &p), Some(a.clone()));
        let other = HandlePrefix::new("heat").unwrap();
        assert_eq!(RunHandle::parse(a.as_str(), &other), None);
    }

    #[test]
    fn malformed_handles_refused() {
        let p = HandlePrefix::default();
        let body = "A".repeat(MIN_BODY_LEN);
        let cases = [
            String::new(),
            "run_".into(),
            "run".into(),
            format!("run_{}", "A".repeat(MIN_BODY_LEN - 1)),
            format!("run_{}", "A".repeat(MAX_BODY_LEN + 1)),
            format!("run_{body}/"),
            format!("run_{body}/.."),
            format!("../run_{body}"),
            format!("/run_{body}"),
            format!("run_{body}\0"),
            format!("run_{body}\n"),
            format!("run_{body}\\x"),
            format!("run_{body}."),
            format!("RUN_{body}"),
            format!("run-{body}"),
            format!("run_{}", "Ａ".repeat(MIN_BODY_LEN)),
            format!("run_{body}é"),
            format!("-run_{body}"),
            format!(" run_{body}"),
        ];
        for c in &cases {
            assert!(!is_well_formed(c, &p), "{c:?}");
        }
        assert!(is_well_formed(&format!("run_{body}"), &p));
        assert!(is_well_formed(&format!("run_-{}", &body[1..]), &p));
    }
}
