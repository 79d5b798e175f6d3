//! Path and URL traversal probes. Of a tool (`--allow-valid-calls` only):
//! the baseline with one top-level string named like a path (the names of
//! `free-text-path-or-command`) set to a traversal or an absolute path, or
//! one named like a URL set to a `file:` URL. Of a resource template (a
//! read, so always): each variable set to a traversal, a percent-encoded
//! traversal or an absolute path. Of a prompt (a read too): each argument
//! set to a traversal, an absolute path or a `file:` URL. An answer that
//! holds a line of a passwd file read a file outside what the server
//! serves.
//!
//! A tool that may write (not annotated read-only: probed only with
//! `--scratch`) is never pointed at a file of the system: its probes name
//! fresh files in a directory of the audit's own, outside what the server
//! serves, and a file made there is the effect, whatever the answer says.
//!
//! With `--scope`, two more ways out are planted: a symbolic link in the
//! served directory ([`PlantedLink`]), and a directory beside it whose name
//! begins with the served directory's ([`Sibling`]): a confinement that
//! compares the text of a path with the served directory's as a prefix
//! takes `/srv/data-x/f` to lie within `/srv/data`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The names of a URL parameter (as a word of the name: `base_url`).
const URL_NAMES: &[&str] = &["url", "uri", "href", "endpoint", "link"];

/// The values sent to a path parameter.
const PATHS: &[&str] = &["../../../../../../../../etc/passwd", "/etc/passwd"];

/// The value sent to a URL parameter.
const URLS: &[&str] = &["file:///etc/passwd"];

/// How many `../` lead a relative write probe to the root from the
/// server's directory, however deep (more at the root stay there): too few
/// would land the probe's file in the server's own tree, unseen.
const UP: usize = 64;

/// Where a tool's path and URL probes point.
pub enum Aim<'a> {
    /// A read-only tool: at `/etc/passwd`, through `link` (to `/etc`) and
    /// at the sibling's passwd-like file; a root line in the answer is the
    /// effect.
    Read {
        /// The link to `/etc` planted in `--scope`.
        link: Option<&'a PlantedLink>,
        /// The directory planted beside `--scope`.
        sibling: Option<&'a Sibling>,
    },
    /// A tool that may write: at fresh names in `dir` (absolute, the
    /// audit's own, outside what the server serves), through `link` (to
    /// `dir` or a directory above it) and in the sibling; a file made there
    /// is the effect.
    Write {
        /// The tool's own directory of the audit's.
        dir: &'a Path,
        /// A link planted in `--scope` to `dir` or a directory above it.
        link: Option<&'a PlantedLink>,
        /// The directory planted beside `--scope`.
        sibling: Option<&'a Sibling>,
    },
}

impl Aim<'_> {
    /// The directory planted beside `--scope`, where there is one.
    pub fn sibling(&self) -> Option<&Sibling> {
        match self {
            Aim::Read { sibling, .. } | Aim::Write { sibling, .. } => *sibling,
        }
    }
}

/// One probe: the rule it shows, the parameter and the arguments.
pub struct Probe {
    /// `path-traversal-read`, `url-file-read`, `symlink-escape-read` or
    /// `path-prefix-escape-read`; or, aimed to write, `path-traversal-write`,
    /// `url-file-write`, `symlink-escape-write`, `path-prefix-escape-write`
    /// or `option-injection-write`.
    pub rule: &'static str,
    /// The top-level parameter changed.
    pub key: String,
    /// The value it was given.
    pub value: String,
    /// The baseline with that parameter set to it.
    pub arguments: Map<String, Value>,
    /// Aimed to write: the file whose making is the effect.
    pub made: Option<PathBuf>,
}

/// Whether the schema has a top-level parameter named like a URL.
pub fn has_url_params(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| props.iter().any(|(k, p)| url_like(k, p)))
}

/// The formats of a URL (JSON Schema's, and the spelling some SDKs write).
const URL_FORMATS: &[&str] = &["uri", "url", "iri", "uri-reference", "iri-reference"];

/// Whether the parameter `key` of schema `prop` takes a URL: named like one
/// (as a word of the name), of a URL format, or with an `http(s)://`
/// default or example (`data` with `format: uri` and a default page).
pub fn url_like(key: &str, prop: &Value) -> bool {
    let web = |v: &Value| {
        v.as_str()
            .is_some_and(|s| s.starts_with("http://") || s.starts_with("https://"))
    };
    crate::review::named_like(key, URL_NAMES)
        || prop
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| URL_FORMATS.contains(&f))
        || prop.get("default").is_some_and(web)
        || prop
            .get("examples")
            .and_then(Value::as_array)
            .is_some_and(|e| e.iter().any(web))
}

/// The top-level parameters that take a URL ([`url_like`]) whose
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
        .iter()
        .filter(|(k, p)| url_like(k, p))
        .map(|(k, _)| k)
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

/// A symbolic link the audit planted in the directory the server serves
/// (`--scope`): a path through it stays within that directory as text and
/// leaves it on disk.
pub struct PlantedLink {
    /// The link's path.
    path: PathBuf,
    /// Its file name.
    name: String,
    /// Where it leads.
    target: PathBuf,
}

/// A fresh name of the audit's: `hardened-mcp-audit-` and 16 random hex
/// digits.
fn fresh_name() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let tag: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("hardened-mcp-audit-{tag}"))
}

impl PlantedLink {
    /// Plants a link to `target` under a fresh name in `scope`.
    pub fn plant(scope: &Path, target: &Path) -> std::io::Result<Self> {
        let name = fresh_name()?;
        let path = scope.join(&name);
        std::os::unix::fs::symlink(target, &path)?;
        Ok(Self {
            path,
            name,
            target: target.to_owned(),
        })
    }

    /// The paths to `rel` (below the link's target) through the link:
    /// relative to the served directory, and absolute.
    fn values(&self, rel: &Path) -> [String; 2] {
        [
            Path::new(&self.name).join(rel).display().to_string(),
            self.path.join(rel).display().to_string(),
        ]
    }
}

impl Drop for PlantedLink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A directory the audit made beside the served one (`--scope`), named as
/// the served directory followed by `-hardened-mcp-audit-…`: within it as
/// text (a prefix), outside it on disk. It holds `passwd`, one root entry
/// whose comment is that fresh name, for the read probes; the write
/// probes name fresh files in it. Removed, with what it holds, on drop.
pub struct Sibling {
    /// The directory's path: the served directory's text and a suffix.
    path: PathBuf,
    /// `../` and its file name: the way to it from the served directory.
    relative: PathBuf,
    /// The root entry its `passwd` holds.
    entry: String,
}

impl Sibling {
    /// Makes a fresh sibling of `scope` (as given: the text a server
    /// compares; made absolute from the current directory where relative)
    /// with its `passwd`. Fails where the scope has no file name or its
    /// parent is not writable.
    pub fn plant(scope: &Path) -> std::io::Result<Self> {
        let scope = std::path::absolute(scope)?;
        let name = scope
            .file_name()
            .ok_or_else(|| std::io::Error::other("the --scope directory has no name"))?;
        let fresh = fresh_name()?;
        let mut sibling = name.to_owned();
        sibling.push(format!("-{fresh}"));
        let path = scope.with_file_name(&sibling);
        std::fs::create_dir(&path)?;
        let planted = Self {
            relative: Path::new("..").join(&sibling),
            path,
            entry: format!("root:x:0:0:{fresh}:/root:/bin/sh\n"),
        };
        planted.replant()?;
        Ok(planted)
    }

    /// Writes its `passwd` again: a tool that may write, given its path,
    /// may have changed or moved it.
    pub fn replant(&self) -> std::io::Result<()> {
        std::fs::write(self.path.join("passwd"), &self.entry)
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The paths to `file` (a name in it): from the served directory, and
    /// absolute.
    fn values(&self, file: &str) -> [String; 2] {
        [
            self.relative.join(file).display().to_string(),
            self.path.join(file).display().to_string(),
        ]
    }
}

impl Drop for Sibling {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A probe's rule, its value, and the file whose making shows it (aimed to
/// write).
type Aimed = (&'static str, String, Option<PathBuf>);

/// The values a path parameter gets.
fn path_values(aim: &Aim<'_>, next: &mut usize) -> Vec<Aimed> {
    match aim {
        Aim::Read { link, sibling } => {
            let through = link.iter().flat_map(|l| l.values(Path::new("passwd")));
            let beside = sibling.iter().flat_map(|s| s.values("passwd"));
            PATHS
                .iter()
                .map(|v| ("path-traversal-read", (*v).to_owned(), None))
                .chain(through.map(|v| ("symlink-escape-read", v, None)))
                .chain(beside.map(|v| ("path-prefix-escape-read", v, None)))
                .collect()
        }
        Aim::Write { dir, link, sibling } => {
            // A path that a URL or a server could read otherwise: no probe.
            if crate::sql::plain_path(dir).is_none() {
                return Vec::new();
            }
            let mut fresh = |what: &str| {
                *next += 1;
                dir.join(format!("{next}-{what}"))
            };
            let up = "../".repeat(UP);
            let traversal = fresh("traversal");
            let relative = format!(
                "{up}{}",
                traversal.display().to_string().trim_start_matches('/')
            );
            let absolute = fresh("absolute");
            // The sibling's file is the audit's own: a tool that may
            // write may be asked to read it (its answer is the effect).
            let beside = sibling.iter().flat_map(|s| s.values("passwd"));
            let mut out: Vec<Aimed> = beside
                .map(|v| ("path-prefix-escape-read", v, None))
                .collect();
            out.extend([
                ("path-traversal-write", relative, Some(traversal)),
                (
                    "path-traversal-write",
                    absolute.display().to_string(),
                    Some(absolute),
                ),
            ]);
            if let Some(link) = link {
                for value in [0, 1] {
                    let file = fresh("link");
                    let Ok(rel) = file.strip_prefix(&link.target) else {
                        continue;
                    };
                    let through = link.values(rel)[value].clone();
                    out.push(("symlink-escape-write", through, Some(file)));
                }
            }
            // The sibling is every tool's: a name in it is made unique by
            // the tool's own directory's.
            let tool = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            let plain = |s: &&&Sibling| crate::sql::plain_path(s.path()).is_some();
            for sibling in sibling.iter().filter(plain) {
                for value in [0, 1] {
                    *next += 1;
                    let name = format!("{}-{next}-prefix", tool.as_deref().unwrap_or("tool"));
                    let file = sibling.path().join(&name);
                    let beside = sibling.values(&name)[value].clone();
                    out.push(("path-prefix-escape-write", beside, Some(file)));
                }
            }
            out
        }
    }
}

/// The values any other string parameter of a tool that may write gets:
/// an option, `--output=FILE` (git's `diff`, curl, wget and many more read
/// it), for a tool that hands its arguments to a command line without
/// `--` before them. Nothing for a read-only tool.
fn option_values(aim: &Aim<'_>, next: &mut usize) -> Vec<Aimed> {
    let Aim::Write { dir, .. } = aim else {
        return Vec::new();
    };
    if crate::sql::plain_path(dir).is_none() {
        return Vec::new();
    }
    *next += 1;
    let file = dir.join(format!("{next}-option"));
    let value = format!("--output={}", file.display());
    vec![("option-injection-write", value, Some(file))]
}

/// The values a URL parameter gets.
fn url_values(aim: &Aim<'_>, next: &mut usize) -> Vec<Aimed> {
    match aim {
        Aim::Read { .. } => URLS
            .iter()
            .map(|v| ("url-file-read", (*v).to_owned(), None))
            .collect(),
        Aim::Write { dir, .. } => {
            if crate::sql::plain_path(dir).is_none() {
                return Vec::new();
            }
            *next += 1;
            let file = dir.join(format!("{next}-url"));
            vec![(
                "url-file-write",
                format!("file://{}", file.display()),
                Some(file),
            )]
        }
    }
}

/// The probes of one tool, grouped by parameter (in key order), each value
/// checked with `jsonschema` to be schema-valid; none when the schema
/// cannot be compiled. Where `aim` has a planted link, a path parameter is
/// also sent through it, after the traversals.
pub fn probes(schema: &Value, baseline: &Map<String, Value>, aim: &Aim<'_>) -> Vec<Vec<Probe>> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut next = 0;
    let mut out = Vec::new();
    for (key, prop) in props {
        let values = if crate::review::names_a_path(key) {
            path_values(aim, &mut next)
        } else if url_like(key, prop) {
            url_values(aim, &mut next)
        } else if prop.get("type").and_then(Value::as_str) == Some("string") {
            option_values(aim, &mut next)
        } else {
            continue;
        };
        let mut of_key = Vec::new();
        for (rule, value, made) in values {
            let mut arguments = baseline.clone();
            arguments.insert(key.clone(), Value::String(value.clone()));
            if validator.is_valid(&Value::Object(arguments.clone())) {
                of_key.push(Probe {
                    rule,
                    key: key.clone(),
                    value,
                    arguments,
                    made,
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

/// How deep JSON held as text in a string (a tool's `json.dumps` of its
/// rows) is read for a passwd line.
const NESTED_JSON: usize = 3;

/// The first line of any string in `result` (text contents, embedded
/// resources, structured content, and JSON documents held as text in
/// them) that is a passwd root entry, escaped and cut to 80 characters.
pub fn passwd_line(result: &Value) -> Option<String> {
    fn find(v: &Value, depth: usize) -> Option<String> {
        match v {
            Value::String(s) => s
                .lines()
                .find(|l| is_root_entry(l))
                .map(str::to_owned)
                .or_else(|| {
                    let text = s.trim_start();
                    let nested =
                        depth < NESTED_JSON && (text.starts_with('{') || text.starts_with('['));
                    nested
                        .then(|| serde_json::from_str::<Value>(text).ok())
                        .flatten()
                        .and_then(|inner| find(&inner, depth + 1))
                }),
            Value::Array(a) => a.iter().find_map(|v| find(v, depth)),
            Value::Object(o) => o.values().find_map(|v| find(v, depth)),
            _ => None,
        }
    }
    let line = find(result, 0)?;
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
    fn a_url_is_known_by_its_name_its_format_or_its_default() {
        let plain = json!({"type": "string"});
        assert!(url_like("base_url", &plain) && url_like("href", &plain));
        assert!(!url_like("data", &plain) && !url_like("curl", &plain));
        assert!(url_like(
            "data",
            &json!({"type": "string", "format": "uri"})
        ));
        assert!(!url_like(
            "data",
            &json!({"type": "string", "format": "email"})
        ));
        let page = json!({"type": "string", "default": "https://example.org/a.md"});
        assert!(url_like("data", &page));
        assert!(!url_like(
            "data",
            &json!({"type": "string", "default": "file.md"})
        ));
        let example = json!({"type": "string", "examples": ["x", "http://example.org/"]});
        assert!(url_like("source", &example));
        let schema = json!({"type": "object", "properties": {"data": page, "n": plain}});
        assert!(has_url_params(&schema));
        assert!(!has_url_params(
            &json!({"properties": {"n": {"type": "string"}}})
        ));
    }

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
        let got = |link: Option<&PlantedLink>,
                   sibling: Option<&Sibling>|
         -> Vec<(&str, String, String)> {
            probes(&schema, &base, &Aim::Read { link, sibling })
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
        assert_eq!(got(None, None), plain);
        // A planted link adds a read through it, relative and absolute,
        // to the path parameters only.
        let scope = tempfile::tempdir().unwrap();
        let link = PlantedLink::plant(scope.path(), Path::new("/etc")).unwrap();
        let through = got(Some(&link), None);
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
        // A sibling adds a read of its passwd, whose path begins with the
        // served directory's text, from there and absolute.
        let sibling = Sibling::plant(scope.path()).unwrap();
        let beside = got(None, Some(&sibling));
        assert_eq!(beside[..3], plain);
        let [(r1, k1, relative), (r2, k2, absolute)] = &beside[3..] else {
            panic!("{beside:?}");
        };
        assert_eq!(
            [*r1, k1.as_str(), *r2, k2.as_str()],
            [
                "path-prefix-escape-read",
                "file_path",
                "path-prefix-escape-read",
                "file_path"
            ]
        );
        let served = scope.path().display().to_string();
        assert!(absolute.starts_with(&format!("{served}-hardened-mcp-audit-")));
        assert!(!absolute.starts_with(&format!("{served}/")));
        assert_eq!(
            std::fs::read_to_string(scope.path().join(relative)).unwrap(),
            std::fs::read_to_string(absolute).unwrap()
        );
        let planted = std::fs::read_to_string(absolute).unwrap();
        assert_eq!(
            passwd_line(&json!({ "text": planted })).as_deref(),
            Some(planted.trim_end())
        );
        let dir = sibling.path().to_owned();
        drop(sibling);
        assert!(!dir.exists(), "removed at the end, with its file");
    }

    #[test]
    fn a_tool_that_may_write_is_pointed_only_at_fresh_names_of_the_audit_s() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "url": {"type": "string"}}});
        let Value::Object(base) = json!({"path": "a", "url": "b"}) else {
            unreachable!()
        };
        let own = tempfile::tempdir().unwrap();
        let dir = own.path().join("tool");
        let scope = tempfile::tempdir().unwrap();
        let link = PlantedLink::plant(scope.path(), own.path()).unwrap();
        let sibling = Sibling::plant(scope.path()).unwrap();
        let aim = Aim::Write {
            dir: &dir,
            link: Some(&link),
            sibling: Some(&sibling),
        };
        let got: Vec<Probe> = probes(&schema, &base, &aim).into_iter().flatten().collect();
        let shown: Vec<(&str, &str, String)> = got
            .iter()
            .map(|p| (p.rule, p.key.as_str(), p.value.clone()))
            .collect();
        let d = dir.display().to_string();
        let up = format!("{}{}", "../".repeat(63), d.trim_start_matches('/'));
        let up = format!("../{up}");
        let name = &link.name;
        let b = sibling.path().display().to_string();
        let s = format!(
            "../{}",
            sibling.path().file_name().unwrap().to_string_lossy()
        );
        assert_eq!(
            shown,
            [
                ("path-prefix-escape-read", "path", format!("{s}/passwd")),
                ("path-prefix-escape-read", "path", format!("{b}/passwd")),
                ("path-traversal-write", "path", format!("{up}/1-traversal")),
                ("path-traversal-write", "path", format!("{d}/2-absolute")),
                (
                    "symlink-escape-write",
                    "path",
                    format!("{name}/tool/3-link")
                ),
                (
                    "symlink-escape-write",
                    "path",
                    format!("{}/{name}/tool/4-link", scope.path().display())
                ),
                (
                    "path-prefix-escape-write",
                    "path",
                    format!("{s}/tool-5-prefix")
                ),
                (
                    "path-prefix-escape-write",
                    "path",
                    format!("{b}/tool-6-prefix")
                ),
                ("url-file-write", "url", format!("file://{d}/7-url")),
            ]
        );
        // Each names a file of its own, in the tool's directory or the
        // sibling, and the value (from the served directory) leads there.
        for p in got.iter().filter(|p| p.made.is_some()) {
            let made = p.made.as_deref().unwrap();
            let home = match p.rule {
                "path-prefix-escape-write" => sibling.path(),
                _ => dir.as_path(),
            };
            assert_eq!(made.parent(), Some(home));
            let leads = match p.value.strip_prefix("file://") {
                Some(path) => PathBuf::from(path),
                None => scope.path().join(&p.value),
            };
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&leads, "probe").unwrap();
            assert!(made.exists(), "{} leads to {}", p.value, made.display());
        }
        // No value names a file outside the audit's directory.
        assert!(got.iter().all(|p| !p.value.contains("/etc")));
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
        // In JSON held as text (a tool's rows, dumped), however the
        // answer wraps it.
        let rows = json!({"rows": [["root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:"]]});
        let r = json!({"content": [{"type": "text", "text": rows.to_string()}],
                       "structuredContent": {"result": rows.to_string()}});
        assert_eq!(
            passwd_line(&r).as_deref(),
            Some("root:x:0:0:root:/root:/bin/bash")
        );
        for no in [
            "no such file: ../etc/passwd",
            "{\"rows\": [\"root:x:0:0\"]}",
            "[1, 2",
            "daemon:x:1:1:daemon:/usr/sbin",
            "Root:x:0:0:",
            "root:x:0:0",
            " root:x:0:0:r",
        ] {
            assert_eq!(passwd_line(&json!({"text": no})), None, "{no}");
        }
    }
}
