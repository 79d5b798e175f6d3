//! The heat1d input deck: line-oriented `key = value`, `#` comments, and an
//! `include NAME` directive that splices another deck from the working
//! directory. The include directive is exactly why the server must never
//! let caller text reach a deck line: the deck writer's `KeyValue` profile
//! rejects it.

use std::collections::BTreeMap;
use std::fmt;

/// Largest deck file the solver reads, in bytes.
pub const MAX_DECK_BYTES: u64 = 64 * 1024;
/// Deepest include nesting.
pub const MAX_INCLUDE_DEPTH: usize = 4;

/// A deck problem, with the offending line number where there is one.
#[derive(Debug, PartialEq)]
pub struct DeckError {
    pub line: usize,
    pub what: &'static str,
}

impl fmt::Display for DeckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "deck line {}: {}", self.line, self.what)
    }
}

/// Reads a file by name from the working directory.
pub trait Source {
    fn read(&self, name: &str) -> Result<String, DeckError>;
}

/// The working directory of the process.
pub struct Cwd;

impl Source for Cwd {
    fn read(&self, name: &str) -> Result<String, DeckError> {
        use std::io::Read;
        if !is_plain_name(name) {
            return Err(DeckError {
                line: 0,
                what: "file names must be plain names in the working directory",
            });
        }
        let f = std::fs::File::open(name).map_err(|_| DeckError {
            line: 0,
            what: "cannot open deck file",
        })?;
        let mut s = String::new();
        f.take(MAX_DECK_BYTES + 1)
            .read_to_string(&mut s)
            .map_err(|_| DeckError {
                line: 0,
                what: "deck file is not readable UTF-8",
            })?;
        if s.len() as u64 > MAX_DECK_BYTES {
            return Err(DeckError {
                line: 0,
                what: "deck file too large",
            });
        }
        Ok(s)
    }
}

/// A name without directory parts.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Parses the deck `name` (and what it includes) into key/value pairs.
/// A key given twice is an error.
pub fn parse(src: &dyn Source, name: &str) -> Result<BTreeMap<String, String>, DeckError> {
    let mut out = BTreeMap::new();
    parse_into(src, name, 0, &mut out)?;
    Ok(out)
}

fn parse_into(
    src: &dyn Source,
    name: &str,
    depth: usize,
    out: &mut BTreeMap<String, String>,
) -> Result<(), DeckError> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(DeckError {
            line: 0,
            what: "includes nested too deeply",
        });
    }
    let text = src.read(name)?;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("include ") {
            parse_into(src, rest.trim(), depth + 1, out)?;
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(DeckError {
                line: line_no,
                what: "expected `key = value`",
            });
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(DeckError {
                line: line_no,
                what: "malformed key",
            });
        }
        if out.insert(k.to_owned(), v.to_owned()).is_some() {
            return Err(DeckError {
                line: line_no,
                what: "key given twice",
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Mem(HashMap<&'static str, &'static str>);
    impl Source for Mem {
        fn read(&self, name: &str) -> Result<String, DeckError> {
            self.0.get(name).map(|s| s.to_string()).ok_or(DeckError {
                line: 0,
                what: "cannot open deck file",
            })
        }
    }

    #[test]
    fn parses_comments_and_includes() {
        let m = Mem(HashMap::from([
            ("main", "# heading\ncells = 10 # trailing\ninclude more\n\n"),
            ("more", "alpha=0.5\n"),
        ]));
        let d = parse(&m, "main").unwrap();
        assert_eq!(d["cells"], "10");
        assert_eq!(d["alpha"], "0.5");
    }

    #[test]
    fn rejects_duplicates_bad_lines_and_deep_includes() {
        let m = Mem(HashMap::from([("a", "x = 1\nx = 2\n")]));
        assert_eq!(parse(&m, "a").unwrap_err().what, "key given twice");
        let m = Mem(HashMap::from([("a", "what\n")]));
        assert_eq!(parse(&m, "a").unwrap_err().line, 1);
        let m = Mem(HashMap::from([("a", "include a\n")]));
        assert_eq!(
            parse(&m, "a").unwrap_err().what,
            "includes nested too deeply"
        );
    }

    #[test]
    fn plain_names_only() {
        for bad in ["", ".", "..", "../x", "/etc/passwd", "a/b", "a b"] {
            assert!(!is_plain_name(bad), "{bad}");
        }
        assert!(is_plain_name("input.deck"));
    }
}
