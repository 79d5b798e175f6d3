//! Caller identity: who a tool call acts for, as established by the transport.
//!
//! A [`CallerId`] is authored by server code (the name configured next to a
//! bearer token, or the fixed local identity of a stdio server). It is never
//! taken from a tool argument or from `Mcp-Session-Id`, which is routing
//! state only. Run ownership, per-caller concurrency and per-caller limits
//! are all keyed by it.

use std::fmt;
use std::sync::Arc;

/// Longest accepted caller name, in bytes.
pub const MAX_CALLER_LEN: usize = 64;

/// An authenticated caller's identity.
///
/// Names are 1 to [`MAX_CALLER_LEN`] bytes of `[A-Za-z0-9._-]`, so they are
/// safe to store in an owner record, a log line or a map key.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallerId(Arc<str>);

/// A caller name that does not satisfy [`CallerId`]'s rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid caller identity: 1 to 64 characters of A-Z a-z 0-9 . _ -")]
pub struct InvalidCallerId;

impl CallerId {
    /// The identity of the single local user of a stdio server (the
    /// process that spawned the server).
    pub const LOCAL: &'static str = "local";

    /// Builds a caller identity from a server-configured name.
    pub fn new(name: &str) -> Result<Self, InvalidCallerId> {
        let ok = !name.is_empty()
            && name.len() <= MAX_CALLER_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(Self(Arc::from(name)))
        } else {
            Err(InvalidCallerId)
        }
    }

    /// Names the framework gives identities itself, compared without
    /// regard to case: [`CallerId::LOCAL`], the caller of every
    /// unauthenticated transport. A configured caller (a token file entry)
    /// may not take one: it would share runs and limits with that
    /// identity.
    pub const RESERVED: [&'static str; 1] = [Self::LOCAL];

    /// Prefixes of the names the framework derives itself (identities of
    /// OAuth subjects are `oauth-<digest of issuer and subject>`); a
    /// configured caller may not start with one.
    pub const RESERVED_PREFIXES: [&'static str; 1] = ["oauth-"];

    /// Whether `name` is reserved for identities the framework makes (see
    /// [`CallerId::RESERVED`], [`CallerId::RESERVED_PREFIXES`]).
    pub fn is_reserved(name: &str) -> bool {
        Self::RESERVED.iter().any(|r| name.eq_ignore_ascii_case(r))
            || Self::RESERVED_PREFIXES.iter().any(|p| {
                name.get(..p.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(p))
            })
    }

    /// The local identity used when the transport authenticates nobody
    /// (stdio, where the OS user that spawned the server is the caller).
    pub fn local() -> Self {
        Self(Arc::from(Self::LOCAL))
    }

    /// The caller's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for CallerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CallerId").field(&&*self.0).finish()
    }
}

impl fmt::Display for CallerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_names() {
        for n in ["a", "alice", "svc-1.prod_x", &"x".repeat(MAX_CALLER_LEN)] {
            assert_eq!(
                CallerId::new(n).map(|c| c.as_str().to_owned()),
                Ok(n.to_owned())
            );
        }
    }

    #[test]
    fn reserved_names_are_recognised_in_any_case() {
        for name in ["local", "LOCAL", "Local", "oauth-abc", "OAuth-1"] {
            assert!(CallerId::is_reserved(name), "{name}");
        }
        for name in ["locale", "alice", "oauth", "my-oauth-x", "localhost"] {
            assert!(!CallerId::is_reserved(name), "{name}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        let long = "x".repeat(MAX_CALLER_LEN + 1);
        for n in [
            "",
            "a b",
            "a/b",
            "../x",
            "a\n",
            "é",
            "a\0",
            long.as_str(),
            "a:b",
        ] {
            assert_eq!(CallerId::new(n), Err(InvalidCallerId), "{n:?}");
        }
    }
}
