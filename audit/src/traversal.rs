//! Path and URL traversal probes (`--allow-valid-calls` only): the
//! baseline with one top-level string named like a path (the names of
//! `free-text-path-or-command`) set to a traversal or an absolute path, or
//! one named like a URL set to a `file:` URL. An answer that holds a line
//! of a passwd file read a file outside what the tool serves.

use serde_json::{Map, Value};

/// The names of a URL parameter (as a word of the name: `base_url`).
const URL_NAMES: &[&str] = &["url", "uri", "href", "endpoint", "link"];

/// The values sent to a path parameter.
const PATHS: &[&str] = &["../../../../../../../../etc/passwd", "/etc/passwd"];

/// The value sent to a URL parameter.
const URLS: &[&str] = &["file:///etc/passwd"];

/// One probe: the rule it shows, the parameter and the arguments.
pub struct Probe {
    /// `path-traversal-read` or `url-file-read`.
    pub rule: &'static str,
    /// The top-level parameter changed.
    pub key: String,
    /// The value it was given.
    pub value: &'static str,
    /// The baseline with that parameter set to it.
    pub arguments: Map<String, Value>,
}

/// The probes of one tool, grouped by parameter (in the schema's order),
/// each value checked with `jsonschema` to be schema-valid; none when the
/// schema cannot be compiled.
pub fn probes(schema: &Value, baseline: &Map<String, Value>) -> Vec<Vec<Probe>> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in props.keys() {
        let (rule, values) = if crate::review::names_a_path(key) {
            ("path-traversal-read", PATHS)
        } else if crate::review::named_like(key, URL_NAMES) {
            ("url-file-read", URLS)
        } else {
            continue;
        };
        let mut of_key = Vec::new();
        for value in values {
            let mut arguments = baseline.clone();
            arguments.insert(key.clone(), Value::String((*value).to_owned()));
            if validator.is_valid(&Value::Object(arguments.clone())) {
                of_key.push(Probe {
                    rule,
                    key: key.clone(),
                    value,
                    arguments,
                });
            }
        }
        if !of_key.is_empty() {
            out.push(of_key);
        }
    }
    out
}

/// Whether `line` is a passwd entry of uid and gid 0:
/// `^[a-z_][a-z0-9_-]*:[^:]*:0:0:`.
fn is_root_entry(line: &str) -> bool {
    let fields: Vec<&str> = line.splitn(5, ':').collect();
    let [user, _, "0", "0", _] = fields.as_slice() else {
        return false;
    };
    let mut chars = user.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// The first line of any string in `result` (text contents, embedded
/// resources, structured content) that is a passwd root entry, escaped and
/// cut to 80 characters.
pub fn passwd_line(result: &Value) -> Option<String> {
    fn find(v: &Value) -> Option<&str> {
        match v {
            Value::String(s) => s.lines().find(|l| is_root_entry(l)),
            Value::Array(a) => a.iter().find_map(find),
            Value::Object(o) => o.values().find_map(find),
            _ => None,
        }
    }
    let line = find(result)?;
    let cut: String = line.chars().take(80).collect();
    let more = if cut.len() < line.len() { "..." } else { "" };
    Some(format!("{}{more}", crate::text::escape(&cut)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_named_strings_get_probes_the_schema_accepts() {
        let schema = json!({"type": "object", "properties": {
            "file_path": {"type": "string"},
            "base_url": {"type": "string"},
            "dir": {"type": "string", "pattern": "^[a-z]+$"},
            "name": {"type": "string"},
            "folder": {"type": "integer"}}});
        let base = json!({"file_path": "a", "base_url": "b", "dir": "c"});
        let Value::Object(base) = base else {
            unreachable!()
        };
        let got: Vec<(&str, String, &str)> = probes(&schema, &base)
            .into_iter()
            .flatten()
            .map(|p| (p.rule, p.key, p.value))
            .collect();
        assert_eq!(
            got,
            [
                ("url-file-read", "base_url".to_owned(), "file:///etc/passwd"),
                (
                    "path-traversal-read",
                    "file_path".to_owned(),
                    "../../../../../../../../etc/passwd"
                ),
                ("path-traversal-read", "file_path".to_owned(), "/etc/passwd"),
            ]
        );
    }

    #[test]
    fn a_root_line_anywhere_in_the_answer_is_found_escaped_and_cut() {
        let r =
            json!({"content": [{"type": "text", "text": "x\nroot:x:0:0:root:/root:/bin/bash\n"}]});
        assert_eq!(
            passwd_line(&r).as_deref(),
            Some("root:x:0:0:root:/root:/bin/bash")
        );
        let long = format!("_svc:*:0:0:{}\u{1b}", "a".repeat(100));
        let r = json!({"structuredContent": {"lines": [long]}});
        let got = passwd_line(&r).unwrap_or_default();
        assert!(
            got.starts_with("_svc:*:0:0:aaa") && got.ends_with("a..."),
            "{got}"
        );
        assert_eq!(got.len(), 83);
        for no in [
            "no such file: ../etc/passwd",
            "daemon:x:1:1:daemon:/usr/sbin",
            "Root:x:0:0:",
            "root:x:0:0",
            " root:x:0:0:r",
        ] {
            assert_eq!(passwd_line(&json!({"text": no})), None, "{no}");
        }
    }
}
