//! Names the run root accepts: file names inside a run and handle prefixes.
//!
//! Both are allowlists checked at construction, so a value of these types is
//! always a single, harmless path component.

use std::fmt;

use super::RunError;

/// Longest [`FileName`], in bytes.
pub const MAX_FILE_NAME_LEN: usize = 64;

/// Longest [`HandlePrefix`], in bytes.
pub const MAX_PREFIX_LEN: usize = 16;

/// The name of a file inside a run directory.
///
/// Allowlist: `[A-Za-z0-9][A-Za-z0-9_.-]{0,63}` and no `..` anywhere. A
/// `FileName` is therefore exactly one path component, never `.` or `..`,
/// never hidden (names starting with `.` are reserved for the run root's own
/// records), never an option-like `-x`.
///
/// Fixed, server-owned names are best declared as constants; an invalid
/// constant fails to compile:
///
/// ```
/// use hardened_mcp::runs::FileName;
/// const DECK: FileName = FileName::fixed("input.deck");
/// assert_eq!(DECK.as_str(), "input.deck");
///
/// // Names built at run time are checked and refused with a fixed error.
/// assert!(FileName::new("result-3.json").is_ok());
/// assert!(FileName::new("../etc/passwd").is_err());
/// assert!(FileName::new(".owner").is_err());
/// ```
///
/// ```compile_fail
/// use hardened_mcp::runs::FileName;
/// const BAD: FileName = FileName::fixed("../escape"); // error: evaluation panicked
/// ```
#[derive(Clone)]
pub struct FileName(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Owned(Box<str>),
}

impl FileName {
    /// Checks `name` against the allowlist.
    pub fn new(name: &str) -> Result<Self, RunError> {
        if is_valid_file_name(name.as_bytes()) {
            Ok(Self(Repr::Owned(name.into())))
        } else {
            Err(RunError::InvalidFileName)
        }
    }

    /// A fixed, server-owned name, checked at compile time when used in a
    /// `const` item.
    ///
    /// # Panics
    ///
    /// Panics if `name` fails the allowlist. In a `const` this is a compile
    /// error, which is the intended use; outside one, prefer [`FileName::new`].
    pub const fn fixed(name: &'static str) -> Self {
        assert!(
            is_valid_file_name(name.as_bytes()),
            "FileName::fixed: name must match [A-Za-z0-9][A-Za-z0-9_.-]{{0,63}} and contain no `..`"
        );
        Self(Repr::Static(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Owned(s) => s,
        }
    }
}

impl PartialEq for FileName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for FileName {}

impl std::hash::Hash for FileName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for FileName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FileName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FileName").field(&self.as_str()).finish()
    }
}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for FileName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

const fn is_valid_file_name(b: &[u8]) -> bool {
    if b.is_empty() || b.len() > MAX_FILE_NAME_LEN || !b[0].is_ascii_alphanumeric() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'-') {
            return false;
        }
        if c == b'.' && i + 1 < b.len() && b[i + 1] == b'.' {
            return false;
        }
        i += 1;
    }
    true
}

/// The fixed prefix of every handle a [`RunRoot`](super::RunRoot) issues,
/// e.g. `heat` in `heat_Q2x…`.
///
/// Rule: `[a-z][a-z0-9]{0,15}`, checked at construction.
///
/// ```
/// use hardened_mcp::runs::HandlePrefix;
/// let p = HandlePrefix::new("heat")?;
/// assert_eq!(p.as_str(), "heat");
/// assert_eq!(p.pattern(), "^heat_[A-Za-z0-9_-]{22,80}$");
/// assert!(HandlePrefix::new("Heat").is_err());
/// # Ok::<(), hardened_mcp::runs::RunError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HandlePrefix(Box<str>);

impl HandlePrefix {
    /// Checks `prefix` against `[a-z][a-z0-9]{0,15}`.
    pub fn new(prefix: &str) -> Result<Self, RunError> {
        let b = prefix.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= MAX_PREFIX_LEN
            && b[0].is_ascii_lowercase()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if ok {
            Ok(Self(prefix.into()))
        } else {
            Err(RunError::InvalidPrefix)
        }
    }

    /// The prefix.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The regular expression (JSON Schema `pattern`) that exactly the
    /// handles with this prefix match.
    pub fn pattern(&self) -> String {
        format!(
            "^{}_[A-Za-z0-9_-]{{{},{}}}$",
            self.0,
            super::handle::MIN_BODY_LEN,
            super::handle::MAX_BODY_LEN
        )
    }
}

impl Default for HandlePrefix {
    /// The prefix `run`.
    fn default() -> Self {
        Self("run".into())
    }
}

impl fmt::Debug for HandlePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HandlePrefix").field(&&*self.0).finish()
    }
}

impl fmt::Display for HandlePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_accepted() {
        let long = "a".repeat(MAX_FILE_NAME_LEN);
        for n in ["a", "input.deck", "out_1.json", "A-b.c", "9", long.as_str()] {
            assert_eq!(
                FileName::new(n).map(|f| f.as_str().to_owned()),
                Ok(n.to_owned())
            );
        }
    }

    #[test]
    fn file_names_refused() {
        let long = "a".repeat(MAX_FILE_NAME_LEN + 1);
        for n in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "a\\b",
            "/abs",
            ".owner",
            "-rf",
            "_x",
            "a..b",
            "a\0",
            "a\n",
            "a b",
            "é",
            "\u{2215}x",
            "ａ",
            long.as_str(),
            "x..",
        ] {
            assert_eq!(FileName::new(n), Err(RunError::InvalidFileName), "{n:?}");
        }
    }

    #[test]
    fn fixed_matches_new() {
        const DECK: FileName = FileName::fixed("input.deck");
        assert_eq!(DECK.as_str(), "input.deck");
        assert_eq!(Ok(DECK), FileName::new("input.deck"));
    }

    #[test]
    #[should_panic(expected = "FileName::fixed")]
    fn fixed_panics_at_run_time_on_bad_name() {
        let bad: &'static str = "../x";
        let _ = FileName::fixed(std::hint::black_box(bad));
    }

    #[test]
    fn prefixes() {
        for p in ["a", "run", "heat2", "abcdefghijklmnop"] {
            assert!(HandlePrefix::new(p).is_ok(), "{p}");
        }
        for p in [
            "",
            "Run",
            "2a",
            "a_b",
            "a-b",
            "abcdefghijklmnopq",
            "é",
            "a b",
        ] {
            assert_eq!(HandlePrefix::new(p), Err(RunError::InvalidPrefix), "{p:?}");
        }
        assert_eq!(HandlePrefix::default().as_str(), "run");
    }
}
