//! SQL write probes (`--allow-valid-calls` only, so read-only tools only,
//! and over stdio only, where the server's files are the audit's to see):
//! one top-level string named like SQL (`sql`, `query`, `statement`,
//! `stmt`, as a word of the name) set to a statement that makes a file at a
//! path the audit chose, in a private directory of its own: SQLite's
//! `ATTACH DATABASE` and `VACUUM INTO`, and `COPY (SELECT 1) TO` (DuckDB,
//! which runs it on a connection opened read-only, too), alone and after a
//! `SELECT` (past a check of the first word). A file there after the call
//! is a write outside anything the server serves. The directory is removed
//! at the end.
//!
//! And file reads ([`FILE_READS`], to read-only tools over any transport):
//! statements that return `/etc/passwd` where an engine lets SQL read
//! files; a line of it in the answer is the finding.
//!
//! And the long query ([`LONG_QUERY`]): a read that keeps the database
//! busy for seconds, sent with a `ping` in flight beside it, to see whether
//! one heavy query stalls the whole server.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The names of a SQL parameter (as a word of the name: `sql_text`).
const SQL_NAMES: &[&str] = &["sql", "query", "statement", "stmt"];

/// One probe: the parameter, the statement, the file it makes, the
/// arguments.
pub struct Probe {
    /// The top-level parameter set.
    pub key: String,
    /// The statement sent.
    pub statement: String,
    /// The file the statement makes where it runs.
    pub file: PathBuf,
    /// The baseline with that parameter set to the statement.
    pub arguments: Map<String, Value>,
}

/// The probes of one tool, grouped by parameter (in the schema's order),
/// each checked with `jsonschema` to be schema-valid, the files named in
/// `dir`; none when the schema cannot be compiled or `dir`'s path cannot
/// stand in a SQL string as it is.
pub fn probes(schema: &Value, baseline: &Map<String, Value>, dir: &Path) -> Vec<Vec<Probe>> {
    let Some(dir) = plain_path(dir) else {
        return Vec::new();
    };
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, key) in props
        .keys()
        .filter(|k| crate::review::named_like(k, SQL_NAMES))
        .enumerate()
    {
        let mut of_key = Vec::new();
        for (form, prefix) in [("", ""), ("stacked-", "SELECT 1; ")] {
            for (what, statement) in [
                (
                    "attach.db",
                    "ATTACH DATABASE '{file}' AS hardened_mcp_probe",
                ),
                ("vacuum.db", "VACUUM INTO '{file}'"),
                ("copy.csv", "COPY (SELECT 1) TO '{file}'"),
            ] {
                let file = format!("{dir}/{i}-{form}{what}");
                let statement = format!("{prefix}{}", statement.replace("{file}", &file));
                let mut arguments = baseline.clone();
                arguments.insert(key.clone(), Value::String(statement.clone()));
                if validator.is_valid(&Value::Object(arguments.clone())) {
                    of_key.push(Probe {
                        key: key.clone(),
                        statement,
                        file: PathBuf::from(file),
                        arguments,
                    });
                }
            }
        }
        if !of_key.is_empty() {
            out.push(of_key);
        }
    }
    out
}

/// `path` as text when it is absolute and plain (ASCII letters, digits,
/// `/`, `_`, `-`, `.`): it then stands as it is in a SQL string, a `file:`
/// URL and a path, read the same by any server.
pub(crate) fn plain_path(path: &Path) -> Option<&str> {
    path.to_str().filter(|p| {
        p.starts_with('/')
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-' | b'.'))
    })
}

/// A read-only statement that keeps a database busy for seconds: 25
/// million rows counted (about 5 s for SQLite on one core of 2026), in
/// standard SQL (SQLite, PostgreSQL; MySQL stops it at its recursion
/// depth of 1,000), starting with `SELECT` (past
/// a check of the first word), streamed (little memory).
pub const LONG_QUERY: &str = "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL \
                              SELECT x + 1 FROM c WHERE x < 25000000) SELECT x FROM c) AS t";

/// Read-only statements that return `/etc/passwd` where the engine lets
/// SQL read files: DuckDB's `read_text`, PostgreSQL's `pg_read_file` and
/// MySQL's `LOAD_FILE` (these two read on the database's host, as their
/// role is allowed). Each starts with `SELECT`.
pub const FILE_READS: &[&str] = &[
    "SELECT content FROM read_text('/etc/passwd')",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT LOAD_FILE('/etc/passwd')",
];

/// The top-level parameters named like SQL whose baseline, with
/// [`LONG_QUERY`] in it, the schema accepts: each with those arguments, in
/// key order.
pub fn long_queries(
    schema: &Value,
    baseline: &Map<String, Value>,
) -> Vec<(String, Map<String, Value>)> {
    with_statement(schema, baseline, LONG_QUERY)
}

/// The top-level parameters named like SQL whose baseline, with
/// `statement` in it, the schema accepts: each with those arguments, in
/// key order.
pub fn with_statement(
    schema: &Value,
    baseline: &Map<String, Value>,
    statement: &str,
) -> Vec<(String, Map<String, Value>)> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .keys()
        .filter(|k| crate::review::named_like(k, SQL_NAMES))
        .filter_map(|key| {
            let mut arguments = baseline.clone();
            arguments.insert(key.clone(), Value::String(statement.to_owned()));
            validator
                .is_valid(&Value::Object(arguments.clone()))
                .then(|| (key.clone(), arguments))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sql_named_strings_get_each_statement_the_schema_accepts() {
        let schema = json!({"type": "object", "properties": {
            "sql": {"type": "string"},
            "search_query": {"type": "string", "maxLength": 40},
            "label": {"type": "string"},
            "stmt": {"type": "integer"}}});
        let Value::Object(base) = json!({"sql": "a", "search_query": "b", "label": "c"}) else {
            unreachable!()
        };
        let groups = probes(&schema, &base, Path::new("/tmp/audit-x"));
        let got: Vec<(&str, &str)> = groups
            .iter()
            .flatten()
            .map(|p| (p.key.as_str(), p.statement.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                // Only the statement within maxLength 40.
                ("search_query", "VACUUM INTO '/tmp/audit-x/0-vacuum.db'"),
                (
                    "sql",
                    "ATTACH DATABASE '/tmp/audit-x/1-attach.db' AS hardened_mcp_probe"
                ),
                ("sql", "VACUUM INTO '/tmp/audit-x/1-vacuum.db'"),
                ("sql", "COPY (SELECT 1) TO '/tmp/audit-x/1-copy.csv'"),
                (
                    "sql",
                    "SELECT 1; ATTACH DATABASE '/tmp/audit-x/1-stacked-attach.db' AS hardened_mcp_probe"
                ),
                (
                    "sql",
                    "SELECT 1; VACUUM INTO '/tmp/audit-x/1-stacked-vacuum.db'"
                ),
                (
                    "sql",
                    "SELECT 1; COPY (SELECT 1) TO '/tmp/audit-x/1-stacked-copy.csv'"
                ),
            ]
        );
        assert_eq!(groups[1][1].file, PathBuf::from("/tmp/audit-x/1-vacuum.db"));
        assert_eq!(groups[1][0].arguments["label"], "c");
        // A directory whose path would need quoting: no probes.
        assert!(probes(&schema, &base, Path::new("/tmp/it's")).is_empty());
        // The long query: where the schema takes it (not in 40 characters).
        let long: Vec<String> = long_queries(&schema, &base)
            .into_iter()
            .map(|(key, arguments)| {
                assert_eq!(arguments[&key], LONG_QUERY);
                key
            })
            .collect();
        assert_eq!(long, ["sql"]);
    }
}
