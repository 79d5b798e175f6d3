//! Path and URL traversal probes. Of a tool (`--allow-valid-calls` only):
//! the baseline with one top-level string named like a path (the names of
//! `free-text-path-or-command`) set to a traversal or an absolute path, or
//! one named like a URL set to a `file:` URL. Of a resource template (a
//! read, so always): each variable set to a traversal, a percent-encoded
//! traversal or an absolute path. Of a prompt (a read too): each argument
//! set to a traversal, an absolute path or a `file:` URL. An answer that
//! holds a line of a passwd file read a file outside what the server
//! serves.

use serde_json::{Map, Value};

/// The names of a URL parameter (as a word of the name: `base_url`).
const URL_NAMES: &[&str] = &["url", "uri", "href", "endpoint", "link"];

/// The values sent to a path parameter.
const PATHS: &[&str] = &["../../../../../../../../etc/passwd", "/etc/passwd"];

/// The value sent to a URL parameter.
const URLS: &[&str] = &["file:///etc/passwd"];

/// One probe: the rule it shows, the parameter and the arguments.
pub struct Probe {
    /// `path-traversal-read`, `url-file-read` or `symlink-escape-read`.
    pub rule: &'static str,
    /// The top-level parameter changed.
    pub key: String,
    /// The value it was given.
    pub value: String,
    /// The baseline with that parameter set to it.
    pub arguments: Map<String, Value>,
}

/// The top-level parameters named like a URL (as a word of the name) whose
/// baseline, with the URL `url(key)` in it, the schema accepts: each with
/// those arguments, in key order.
pub fn url_params(
    schema: &Value,
    baseline: &Map<String, Value>,
    url: impl Fn(&str) -> String,
) -> Vec<(String, String, Map<String, Value>)> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .keys()
        .filter(|k| crate::review::named_like(k, URL_NAMES))
        .filter_map(|key| {
            let value = url(key);
            let mut arguments = baseline.clone();
            arguments.insert(key.clone(), Value::String(value.clone()));
            validator
                .is_valid(&Value::Object(arguments.clone()))
                .then(|| (key.clone(), value, arguments))
        })
        .collect()
}

/// A symbolic link to `/etc` the audit planted in the directory the server
/// serves (`--scope`): a path through it stays within that directory as
/// text and leaves it on disk.
pub struct PlantedLink {
    /// The link's path.
    path: std::path::PathBuf,
    /// Its file name.
    name: String,
}

impl PlantedLink {
    /// Plants a link to `/etc` under a fresh name in `scope`.
    pub fn plant(scope: &std::path::Path) -> std::io::Result<Self> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        let tag: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!("hardened-mcp-audit-{tag}");
        let path = scope.join(&name);
        std::os::unix::fs::symlink("/etc", &path)?;
        Ok(Self { path, name })
    }

    /// The paths that read `/etc/passwd` through the link: relative to the
    /// directory, and absolute.
    fn values(&self) -> [String; 2] {
        [
            format!("{}/passwd", self.name),
            format!("{}/passwd", self.path.display()),
        ]
    }
}

impl Drop for PlantedLink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The probes of one tool, grouped by parameter (in key order), each value
/// checked with `jsonschema` to be schema-valid; none when the schema
/// cannot be compiled. With a planted `link`, a path parameter is also
/// asked to read through it, after the traversals.
pub fn probes(
    schema: &Value,
    baseline: &Map<String, Value>,
    link: Option<&PlantedLink>,
) -> Vec<Vec<Probe>> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in props.keys() {
        let values: Vec<(&'static str, String)> = if crate::review::names_a_path(key) {
            let through = link.into_iter().flat_map(PlantedLink::values);
            PATHS
                .iter()
                .map(|v| ("path-traversal-read", (*v).to_owned()))
                .chain(through.map(|v| ("symlink-escape-read", v)))
                .collect()
        } else if crate::review::named_like(key, URL_NAMES) {
            URLS.iter()
                .map(|v| ("url-file-read", (*v).to_owned()))
                .collect()
        } else {
            continue;
        };
        let mut of_key = Vec::new();
        for (rule, value) in values {
            let mut arguments = baseline.clone();
            arguments.insert(key.clone(), Value::String(value.clone()));
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

/// The values a resource template's variable gets: the expansion of
/// `{+var}` sends the first as it is, that of `{var}` percent-encodes it as
/// the second (a server that decodes after matching reads it all the same).
const TEMPLATE_VALUES: &[&str] = &[
    "../../../../../../../../etc/passwd",
    "..%2F..%2F..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
    "/etc/passwd",
];

/// Most variables of one template, and arguments of one prompt, probed.
const MAX_PROBED: usize = 4;

/// The reads that probe the resource template `template` (RFC 6570, every
/// operator): for each variable (at most four), the URIs with it set to
/// each traversal and every other variable to `a`. None for a template
/// with no variable or an unclosed expression.
pub fn template_probes(template: &str) -> Vec<(String, Vec<String>)> {
    let Some(parts) = split_template(template) else {
        return Vec::new();
    };
    let names: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Expr(_, vars) => Some(vars.iter().copied()),
            Part::Lit(_) => None,
        })
        .flatten()
        .take(MAX_PROBED)
        .collect();
    names
        .iter()
        .map(|&probed| {
            let uris = TEMPLATE_VALUES
                .iter()
                .map(|value| expand(&parts, |name| if name == probed { value } else { "a" }))
                .collect();
            (probed.to_owned(), uris)
        })
        .collect()
}

/// A piece of a URI template: literal text, or an expression's operator
/// and variable names.
enum Part<'a> {
    Lit(&'a str),
    Expr(Option<char>, Vec<&'a str>),
}

fn split_template(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        parts.push(Part::Lit(&rest[..open]));
        let close = rest[open..].find('}')? + open;
        let body = &rest[open + 1..close];
        let (op, list) = match body.chars().next() {
            Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &body[1..]),
            _ => (None, body),
        };
        // A name without its `*` or `:N` modifier.
        let vars = list
            .split(',')
            .map(|v| v.split([':', '*']).next().unwrap_or_default())
            .filter(|v| !v.is_empty())
            .collect();
        parts.push(Part::Expr(op, vars));
        rest = &rest[close + 1..];
    }
    parts.push(Part::Lit(rest));
    Some(parts)
}

/// The URI of `parts` with each variable's value from `value`, the values
/// sent as they are (the probe is the raw text).
fn expand<'a>(parts: &[Part<'_>], value: impl Fn(&str) -> &'a str) -> String {
    let mut uri = String::new();
    for part in parts {
        match part {
            Part::Lit(text) => uri.push_str(text),
            Part::Expr(op, vars) => {
                let (first, sep, named) = match op {
                    None | Some('+') => ("", ",", false),
                    Some('#') => ("#", ",", false),
                    Some('.') => (".", ".", false),
                    Some('/') => ("/", "/", false),
                    Some(';') => (";", ";", true),
                    Some('?') => ("?", "&", true),
                    _ => ("&", "&", true),
                };
                let items: Vec<String> = vars
                    .iter()
                    .map(|v| match named {
                        true => format!("{v}={}", value(v)),
                        false => value(v).to_owned(),
                    })
                    .collect();
                uri.push_str(first);
                uri.push_str(&items.join(sep));
            }
        }
    }
    uri
}

/// The `prompts/get` arguments that probe the prompt `prompt` (its
/// `prompts/list` entry): for each argument (at most four), the arguments
/// with it set to each path and the `file:` URL, and every other required
/// argument to `a`.
pub fn prompt_probes(prompt: &Value) -> Vec<(String, Vec<Map<String, Value>>)> {
    let args: Vec<(&str, bool)> = prompt
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| {
            let name = a.get("name").and_then(Value::as_str)?;
            Some((name, a.get("required") == Some(&Value::Bool(true))))
        })
        .collect();
    args.iter()
        .take(MAX_PROBED)
        .map(|&(probed, _)| {
            let sets = PATHS
                .iter()
                .chain(URLS)
                .map(|value| {
                    let mut set: Map<String, Value> = args
                        .iter()
                        .filter(|&&(name, required)| required && name != probed)
                        .map(|&(name, _)| (name.to_owned(), Value::String("a".to_owned())))
                        .collect();
                    set.insert(probed.to_owned(), Value::String((*value).to_owned()));
                    set
                })
                .collect();
            (probed.to_owned(), sets)
        })
        .collect()
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
    use std::path::Path;

    use super::*;
    use serde_json::json;

    #[test]
    fn every_template_variable_is_probed_in_its_operators_form() {
        let probes = template_probes("notes://{owner}/files{/path*}{?rev,raw}");
        let got: Vec<(&str, &str)> = probes
            .iter()
            .map(|(var, uris)| (var.as_str(), uris[0].as_str()))
            .collect();
        let t = "../../../../../../../../etc/passwd";
        assert_eq!(
            got,
            [
                ("owner", format!("notes://{t}/files/a?rev=a&raw=a").as_str()),
                ("path", format!("notes://a/files/{t}?rev=a&raw=a").as_str()),
                ("rev", format!("notes://a/files/a?rev={t}&raw=a").as_str()),
                ("raw", format!("notes://a/files/a?rev=a&raw={t}").as_str()),
            ]
        );
        assert_eq!(probes[0].1.len(), TEMPLATE_VALUES.len());
        assert_eq!(
            template_probes("file:///{+p}")[0].1[2],
            "file:////etc/passwd"
        );
        for none in ["file:///etc/hosts", "x://{unclosed", "x://{}"] {
            assert!(template_probes(none).is_empty(), "{none}");
        }
        // At most four variables of one template.
        assert_eq!(template_probes("x://{a}{b}{c}{d}{e}").len(), MAX_PROBED);
    }

    #[test]
    fn every_prompt_argument_is_probed_with_the_required_others_filled() {
        let prompt = json!({"name": "review", "arguments": [
            {"name": "file", "required": true},
            {"name": "style", "required": true},
            {"name": "note"}]});
        let probes = prompt_probes(&prompt);
        assert_eq!(probes.len(), 3);
        let (var, sets) = &probes[2];
        assert_eq!(var, "note");
        assert_eq!(sets.len(), PATHS.len() + URLS.len());
        assert_eq!(
            Value::Object(sets[1].clone()),
            json!({"file": "a", "style": "a", "note": "/etc/passwd"})
        );
        assert!(prompt_probes(&json!({"name": "bare"})).is_empty());
    }

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
        let got = |link| -> Vec<(&str, String, String)> {
            probes(&schema, &base, link)
                .into_iter()
                .flatten()
                .map(|p| (p.rule, p.key, p.value))
                .collect()
        };
        let plain = [
            ("url-file-read", "base_url", "file:///etc/passwd"),
            (
                "path-traversal-read",
                "file_path",
                "../../../../../../../../etc/passwd",
            ),
            ("path-traversal-read", "file_path", "/etc/passwd"),
        ]
        .map(|(r, k, v)| (r, k.to_owned(), v.to_owned()));
        assert_eq!(got(None), plain);
        // A planted link adds a read through it, relative and absolute,
        // to the path parameters only.
        let scope = tempfile::tempdir().unwrap();
        let link = PlantedLink::plant(scope.path()).unwrap();
        let through = got(Some(&link));
        assert_eq!(through[..3], plain);
        let name = &link.name;
        assert_eq!(
            through[3..],
            [
                (
                    "symlink-escape-read",
                    "file_path".to_owned(),
                    format!("{name}/passwd")
                ),
                (
                    "symlink-escape-read",
                    "file_path".to_owned(),
                    format!("{}/{name}/passwd", scope.path().display())
                ),
            ]
        );
        let path = scope.path().join(name);
        assert_eq!(std::fs::read_link(&path).unwrap(), Path::new("/etc"));
        drop(link);
        assert!(
            std::fs::symlink_metadata(&path).is_err(),
            "removed at the end"
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
