//! Bearer-token authentication: the token table that maps a token to the
//! [`CallerId`] it authenticates, loaded once at start from a file or an
//! environment variable.
//!
//! Tokens are kept only as SHA-256 digests and compared in constant time
//! (every entry is compared, whatever matches). No error, log line or
//! `Debug` output of this module contains a token.
//!
//! The configuration format (file or variable) is a list of
//! `caller=token` entries separated by newlines or commas; blank lines and
//! lines starting with `#` are ignored:
//!
//! ```text
//! # caller name = token (RFC 6750 token characters, at least 16 of them)
//! alice=4f7c1e0b9d2a8c3e5f6a7b8c9d0e1f2a
//! ci-bot=Zm9vYmFyYmF6cXV4cXV1eA
//! ```

use std::fmt;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::identity::CallerId;

/// Longest bearer token examined (16 KiB): well above what the major
/// identity providers issue. An RS256 token of a 2048-bit key with typical
/// claims is about 0.7–1.5 KiB (Keycloak, Auth0, Okta), 4096-bit keys add
/// about 350 bytes, and Entra ID's largest, with 200 group ids before it
/// switches to a group overage claim, stays under 12 KiB.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Fewest characters a configured token may have.
pub const MIN_TOKEN_LEN: usize = 16;
/// Most characters a configured (static) token may have. A presented token
/// may be as long as an OAuth access token
/// ([`MAX_TOKEN_BYTES`]); one longer
/// than this matches no static token.
pub const MAX_TOKEN_LEN: usize = 512;
/// Largest token file that is read.
pub const MAX_TOKEN_FILE_BYTES: u64 = 1024 * 1024;

/// A token configuration that cannot be used. The texts name the entry by
/// its position, never by its content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// The environment variable is not set or not UTF-8.
    #[error("the token environment variable is not set or not valid UTF-8")]
    MissingVariable,
    /// The token file could not be read.
    #[error("the token file could not be read")]
    Unreadable(#[source] std::io::Error),
    /// The token file can be read by users other than its owner and group.
    #[error("the token file is readable by other users: restrict it to mode 0600 or 0640")]
    FileTooOpen,
    /// The token file is larger than [`MAX_TOKEN_FILE_BYTES`].
    #[error("the token file is too large")]
    FileTooLarge,
    /// An entry is not `caller=token`.
    #[error("token entry {entry}: expected caller=token")]
    Malformed {
        /// 1-based position of the entry.
        entry: usize,
    },
    /// An entry's caller name is not a valid [`CallerId`].
    #[error("token entry {entry}: invalid caller name: 1 to 64 characters of A-Z a-z 0-9 . _ -")]
    InvalidCaller {
        /// 1-based position of the entry.
        entry: usize,
    },
    /// An entry's caller name is one the framework uses itself (`local`,
    /// the caller of unauthenticated transports, or a derived-identity
    /// prefix such as `oauth-`): it would share runs and limits with it.
    #[error(
        "token entry {entry}: the caller name is reserved (`local` and names starting with `oauth-` are the framework's own identities); choose another name"
    )]
    ReservedCaller {
        /// 1-based position of the entry.
        entry: usize,
    },
    /// An entry's token is too short, too long or has characters outside
    /// RFC 6750's token alphabet.
    #[error(
        "token entry {entry}: the token must be 16 to 512 characters of A-Z a-z 0-9 - . _ ~ + / (then optional =)"
    )]
    InvalidToken {
        /// 1-based position of the entry.
        entry: usize,
    },
    /// Two entries have the same token.
    #[error("token entry {entry}: the same token is configured twice")]
    DuplicateToken {
        /// 1-based position of the later entry.
        entry: usize,
    },
    /// No entries at all.
    #[error("the token configuration has no entries")]
    Empty,
}

struct Entry {
    digest: [u8; 32],
    caller: CallerId,
}

/// The configured bearer tokens, hashed, each mapped to a caller.
pub struct BearerAuth {
    entries: Vec<Entry>,
}

impl fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuth")
            .field("entries", &self.entries.len())
            .finish()
    }
}

/// Why a request was not authenticated (for the server log; the caller
/// always gets the same 401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// No `Authorization` header.
    Missing,
    /// More than one `Authorization` header, or not `Bearer <token>`.
    Malformed,
    /// A well-formed token that is not configured.
    Unknown,
}

impl AuthFailure {
    /// A fixed name for log lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Malformed => "malformed",
            Self::Unknown => "unknown",
        }
    }
}

impl BearerAuth {
    /// Parses a configuration text (see the [module docs](self)).
    pub fn parse(text: &str) -> Result<Self, AuthConfigError> {
        let mut entries: Vec<Entry> = Vec::new();
        let items = text
            .split(['\n', ','])
            .map(str::trim)
            .filter(|item| !item.is_empty() && !item.starts_with('#'));
        for (index, item) in items.enumerate() {
            let entry = index + 1;
            let (name, token) = item
                .split_once('=')
                .ok_or(AuthConfigError::Malformed { entry })?;
            let name = name.trim();
            let caller =
                CallerId::new(name).map_err(|_| AuthConfigError::InvalidCaller { entry })?;
            if CallerId::is_reserved(name) {
                return Err(AuthConfigError::ReservedCaller { entry });
            }
            let token = token.trim();
            if token.len() < MIN_TOKEN_LEN || !is_token68(token) {
                return Err(AuthConfigError::InvalidToken { entry });
            }
            let digest = digest(token.as_bytes());
            if entries.iter().any(|e| bool::from(e.digest.ct_eq(&digest))) {
                return Err(AuthConfigError::DuplicateToken { entry });
            }
            entries.push(Entry { digest, caller });
        }
        if entries.is_empty() {
            return Err(AuthConfigError::Empty);
        }
        Ok(Self { entries })
    }

    /// Reads the configuration from the environment variable `var`.
    pub fn from_env(var: &str) -> Result<Self, AuthConfigError> {
        let text = std::env::var(var).map_err(|_| AuthConfigError::MissingVariable)?;
        Self::parse(&text)
    }

    /// Reads the configuration from a file that only its owner (and group)
    /// can read.
    pub fn from_file(path: &Path) -> Result<Self, AuthConfigError> {
        let file = std::fs::File::open(path).map_err(AuthConfigError::Unreadable)?;
        let meta = file.metadata().map_err(AuthConfigError::Unreadable)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if meta.permissions().mode() & 0o007 != 0 {
                return Err(AuthConfigError::FileTooOpen);
            }
        }
        if meta.len() > MAX_TOKEN_FILE_BYTES {
            return Err(AuthConfigError::FileTooLarge);
        }
        let mut text = String::new();
        file.take(MAX_TOKEN_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(AuthConfigError::Unreadable)?;
        if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
            return Err(AuthConfigError::FileTooLarge);
        }
        Self::parse(&text)
    }

    /// Number of configured tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is configured (never true for a parsed table).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller a presented token authenticates. Every entry is compared
    /// in constant time, whichever matches.
    pub fn caller_for_token(&self, token: &[u8]) -> Option<&CallerId> {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return None;
        }
        let presented = digest(token);
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (i, entry) in self.entries.iter().enumerate() {
            let eq = entry.digest.ct_eq(&presented);
            found |= eq;
            index.conditional_assign(&u32::try_from(i).unwrap_or(u32::MAX), eq);
        }
        if bool::from(found) {
            self.entries
                .get(usize::try_from(index).ok()?)
                .map(|e| &e.caller)
        } else {
            None
        }
    }

    /// Authenticates the `Authorization` header values of one request:
    /// exactly one, `Bearer <token>` (scheme case-insensitive).
    pub fn authenticate<'a, I>(&self, mut values: I) -> Result<&CallerId, AuthFailure>
    where
        I: Iterator<Item = &'a [u8]>,
    {
        let token = presented_token(&mut values)?;
        self.caller_for_token(token).ok_or(AuthFailure::Unknown)
    }
}

/// The token of the `Authorization` header values of one request: exactly
/// one value, `Bearer <token>` (scheme case-insensitive, RFC 6750 token
/// characters).
pub fn presented_token<'a, I>(values: &mut I) -> Result<&'a [u8], AuthFailure>
where
    I: Iterator<Item = &'a [u8]>,
{
    let value = values.next().ok_or(AuthFailure::Missing)?;
    if values.next().is_some() {
        return Err(AuthFailure::Malformed);
    }
    bearer_token(value).ok_or(AuthFailure::Malformed)
}

/// The token of `Bearer <token>`, if the value has that form.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer ";
    let scheme = value.get(..SCHEME.len())?;
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let token = value.get(SCHEME.len()..)?.trim_ascii();
    let text = std::str::from_utf8(token).ok()?;
    is_token68(text).then_some(token)
}

/// RFC 6750 `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_token68(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && body.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const A: &str = "alice-token-0123456789";
    const B: &str = "bob-token-abcdefghijkl";

    fn table() -> BearerAuth {
        BearerAuth::parse(&format!("# comment\nalice={A}\n\n bob = {B} ,")).unwrap()
    }

    #[test]
    fn maps_tokens_to_callers() {
        let t = table();
        assert_eq!(t.len(), 2);
        assert_eq!(t.caller_for_token(A.as_bytes()).unwrap().as_str(), "alice");
        assert_eq!(t.caller_for_token(B.as_bytes()).unwrap().as_str(), "bob");
        assert!(t.caller_for_token(b"carol-token-000000000").is_none());
        assert!(t.caller_for_token(&A.as_bytes()[1..]).is_none());
        assert!(t.caller_for_token(b"").is_none());
    }

    #[test]
    fn header_forms() {
        let t = table();
        let ok = format!("Bearer {A}");
        let lower = format!("bearer {B}");
        let auth = |vals: &[&str]| {
            t.authenticate(vals.iter().map(|v| v.as_bytes()))
                .map(|c| c.as_str().to_owned())
        };
        assert_eq!(auth(&[&ok]), Ok("alice".into()));
        assert_eq!(auth(&[&lower]), Ok("bob".into()));
        assert_eq!(auth(&[]), Err(AuthFailure::Missing));
        assert_eq!(auth(&[&ok, &ok]), Err(AuthFailure::Malformed));
        assert_eq!(auth(&[A]), Err(AuthFailure::Malformed));
        assert_eq!(auth(&[&format!("Basic {A}")]), Err(AuthFailure::Malformed));
        assert_eq!(auth(&["Bearer "]), Err(AuthFailure::Malformed));
        assert_eq!(auth(&["Bearer a b"]), Err(AuthFailure::Malformed));
        assert_eq!(
            auth(&["Bearer wrong-token-0000000000"]),
            Err(AuthFailure::Unknown)
        );
    }

    #[test]
    fn rejects_bad_configs_without_echoing_tokens() {
        let cases = [
            ("", "no entries"),
            ("alice", "caller=token"),
            ("al ice=abcdefghijklmnopq", "invalid caller"),
            ("alice=short", "16 to 512"),
            ("alice=has space inside token", "16 to 512"),
            ("alice=abcdefghijklmnopq\nbob=abcdefghijklmnopq", "twice"),
            (
                "local=abcdefghijklmnopq",
                "entry 1: the caller name is reserved",
            ),
            (
                "alice=abcdefghijklmnopqr\nLocal=abcdefghijklmnopq",
                "entry 2: the caller name is reserved",
            ),
            ("oauth-x=abcdefghijklmnopq", "reserved"),
        ];
        for (text, expected) in cases {
            let err = BearerAuth::parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?} → {err}");
            assert!(
                !err.contains("abcdefghijklmnopq") && !err.contains("short"),
                "{err}"
            );
        }
        assert!(!format!("{:?}", table()).contains(A));
    }

    #[test]
    fn file_must_not_be_world_readable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, format!("alice={A}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            BearerAuth::from_file(&path),
            Err(AuthConfigError::FileTooOpen)
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(BearerAuth::from_file(&path).unwrap().len(), 1);
    }
}
