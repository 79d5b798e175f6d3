//! The scopes of a caller: what an OAuth access token grants, and the
//! `_meta` key under which a tool advertises the scopes it requires. Here,
//! not in [`oauth`](super::oauth), so that tools and their routes compile
//! whichever transports a server enables.

use std::sync::Arc;

/// The `_meta` key under which a tool advertises the scopes it requires.
pub const SCOPES_META_KEY: &str = "dev.hardened-mcp/requiredScopes";

/// The scopes a validated token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedScopes(Arc<[String]>);

impl GrantedScopes {
    /// Scopes from a list.
    pub fn new(scopes: impl IntoIterator<Item = String>) -> Self {
        let mut v: Vec<String> = scopes.into_iter().collect();
        v.sort();
        v.dedup();
        Self(v.into())
    }

    /// Whether `scope` is granted.
    pub fn contains(&self, scope: &str) -> bool {
        self.0.binary_search_by(|s| s.as_str().cmp(scope)).is_ok()
    }

    /// Whether every one of `needed` is granted.
    pub fn covers(&self, needed: &[&str]) -> bool {
        needed.iter().all(|s| self.contains(s))
    }

    /// The scopes, sorted.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }
}
