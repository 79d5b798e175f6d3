//! Secrets held by server code: a wrapper whose Debug, Display and
//! Serialize output is always `[redacted]`.
//!
//! A [`Secret<T>`] can sit in configuration structs, error types and log
//! statements without leaking: every formatting path prints
//! [`REDACTED`]. The only way to reach the value is
//! [`Secret::expose_secret`], a plain reference for server code (comparing a
//! token, building an upstream request); nothing on `Secret` formats the
//! value. The memory is not zeroed on drop (no `zeroize`): treat `Secret`
//! as protection against accidental disclosure, not against memory reads.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::redact::REDACTED;

/// A value that must never be logged, displayed or returned.
///
/// ```
/// use hardened_mcp::secret::Secret;
///
/// #[derive(Debug, serde::Serialize)]
/// struct UpstreamConfig {
///     url: &'static str,
///     api_key: Secret<String>,
/// }
///
/// let config = UpstreamConfig { url: "https://example.invalid", api_key: Secret::new("s3cr3t".into()) };
/// assert!(!format!("{config:?}").contains("s3cr3t"));
/// assert!(!serde_json::to_string(&config).unwrap().contains("s3cr3t"));
/// assert_eq!(config.api_key.to_string(), "[redacted]");
/// assert_eq!(config.api_key.expose_secret(), "s3cr3t");
/// ```
#[derive(Clone, Default)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a value.
    pub const fn new(value: T) -> Self {
        Self(value)
    }

    /// The value, for server code that needs it (never for formatting).
    pub fn expose_secret(&self) -> &T {
        &self.0
    }

    /// Unwraps the value, giving up the protection.
    pub fn into_exposed(self) -> T {
        self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Self(value)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Serializes as the string `"[redacted]"`, whatever the value.
impl<T> Serialize for Secret<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

/// Deserializes the inner value (configuration files, environment).
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Self)
    }
}

/// The schema of what [`Serialize`] writes: the constant `"[redacted]"`.
impl<T> JsonSchema for Secret<T> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Redacted")
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Borrowed("hardened_mcp::secret::Redacted")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "const": REDACTED,
            "description": "A secret held by the server; never returned."
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn every_formatting_path_redacts() {
        let s = Secret::new(String::from("canary-4f1d"));
        assert_eq!(format!("{s}"), "[redacted]");
        assert_eq!(format!("{s:?}"), "[redacted]");
        assert_eq!(format!("{s:#?}"), "[redacted]");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"[redacted]\"");
        assert_eq!(s.expose_secret(), "canary-4f1d");
    }

    #[test]
    fn deserializes_the_value() {
        let s: Secret<String> = serde_json::from_str("\"abc\"").unwrap();
        assert_eq!(s.expose_secret(), "abc");
    }
}
