//! Schema review of `tools/list`: what each tool's schemas leave unbounded
//! or unsafe, before a single call is made.
//!
//! A schema shows what a server declares, not what it does, so nothing
//! here is high by itself but a secret-like result field: a bound the
//! schema leaves out is policy a maintainer may decline (low, one cause
//! however many tools share it); a free-text path or command is a place to
//! look (medium); whether a traversal is taken is for the probes to show.

use serde_json::Value;

use crate::finding::{Finding, Severity};
use crate::text::escape;

/// Parameter names that say "this string is a file-system location or a
/// command": free text there is an injection path.
const DANGEROUS_NAMES: &[&str] = &[
    "path",
    "file",
    "filename",
    "dir",
    "directory",
    "folder",
    "cmd",
    "command",
    "exec",
    "shell",
    "script",
    "program",
    "executable",
];

/// Whether `key` is one of `names`, or has one as a word (`file_path`).
pub(crate) fn named_like(key: &str, names: &[&str]) -> bool {
    let lower = key.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    names.iter().any(|d| words.contains(d) || lower == *d)
}

/// Whether `key` names a path or a command (the names of
/// `free-text-path-or-command`).
pub(crate) fn names_a_path(key: &str) -> bool {
    named_like(key, DANGEROUS_NAMES)
}

/// Reviews every tool; findings in tool order, then property order.
pub fn review(tools: &[Value]) -> Vec<Finding> {
    let mut out = Vec::new();
    for tool in tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        match tool.get("inputSchema") {
            Some(schema) => {
                walk_input(name, schema, "", &mut out);
                // Definitions are reviewed once each, where they are
                // defined; a `$ref` to one adds nothing of its own.
                for key in ["$defs", "definitions"] {
                    if let Some(defs) = schema.get(key).and_then(Value::as_object) {
                        for (def, s) in defs {
                            let here = format!("/{key}/{}", crate::schema::segment(def));
                            walk_input(name, s, &here, &mut out);
                        }
                    }
                }
            }
            None => out.push(
                Finding::new(
                    Severity::Medium,
                    "input-schema-missing",
                    "the tool advertises no input schema: any arguments may be sent",
                )
                .tool(name),
            ),
        }
        match tool.get("outputSchema") {
            Some(schema) => walk_output(name, schema, "", &mut out),
            None => out.push(
                Finding::new(
                    Severity::Low,
                    "output-schema-missing",
                    "no outputSchema: clients cannot validate results, and nothing says which fields a result may carry",
                )
                .tool(name),
            ),
        }
    }
    out
}

fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn has(schema: &Value, key: &str) -> bool {
    schema.get(key).is_some_and(|v| !v.is_null())
}

fn walk_input(tool: &str, schema: &Value, pointer: &str, out: &mut Vec<Finding>) {
    // Alternatives are reviewed each on its own.
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            for (i, s) in list.iter().enumerate() {
                walk_input(tool, s, &format!("{pointer}/{key}/{i}"), out);
            }
        }
    }
    let ts = types(schema);
    let enumerated = has(schema, "enum") || has(schema, "const");
    let at = if pointer.is_empty() { "/" } else { pointer };
    if ts.contains(&"object") || has(schema, "properties") {
        if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(
                Finding::new(
                    Severity::Low,
                    "object-open",
                    "the object does not set additionalProperties: false: unknown keys (a model's typos, injected fields) are accepted by the schema",
                )
                .tool(tool)
                .property(at),
            );
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (key, prop) in props {
                let here = format!("{pointer}/properties/{}", crate::schema::segment(key));
                walk_input(tool, prop, &here, out);
                let dangerous = named_like(key, DANGEROUS_NAMES);
                let free_text = types(prop).contains(&"string")
                    && !has(prop, "enum")
                    && !has(prop, "const")
                    && !has(prop, "pattern");
                if dangerous && free_text {
                    out.push(
                        Finding::new(
                            Severity::Medium,
                            "free-text-path-or-command",
                            format!("`{}` looks like a path or a command and takes free text: traversal and injection reach whatever uses it; take an opaque handle or an enum instead", escape(key)),
                        )
                        .tool(tool)
                        .property(&here),
                    );
                }
            }
        }
    }
    if (ts.contains(&"number") || ts.contains(&"integer")) && !enumerated {
        let low = has(schema, "minimum") || has(schema, "exclusiveMinimum");
        let high = has(schema, "maximum") || has(schema, "exclusiveMaximum");
        if !(low && high) {
            out.push(
                Finding::new(
                    Severity::Low,
                    "number-unbounded",
                    "a number without both a lower and an upper bound: a model can ask for unbounded work, memory or output",
                )
                .tool(tool)
                .property(at),
            );
        }
    }
    if ts.contains(&"string") && !enumerated && !has(schema, "maxLength") && !has(schema, "pattern")
    {
        out.push(
            Finding::new(
                Severity::Low,
                "string-unbounded",
                "a string without maxLength, enum or pattern: any length, any content",
            )
            .tool(tool)
            .property(at),
        );
    }
    if ts.contains(&"array") {
        if !has(schema, "maxItems") {
            out.push(
                Finding::new(
                    Severity::Low,
                    "array-unbounded",
                    "an array without maxItems: any number of items",
                )
                .tool(tool)
                .property(at),
            );
        }
        let (prefix, rest) = crate::schema::item_schemas(schema);
        let key = crate::schema::prefix_key(schema);
        for (i, item) in prefix.iter().enumerate() {
            walk_input(tool, item, &format!("{pointer}/{key}/{i}"), out);
        }
        if let Some(items) = rest.filter(|r| r.is_object()) {
            walk_input(tool, items, &format!("{pointer}/items"), out);
        }
    }
}

fn walk_output(tool: &str, schema: &Value, pointer: &str, out: &mut Vec<Finding>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (key, prop) in props {
            let here = format!("{pointer}/properties/{key}");
            if hardened_mcp::redact::is_secret_like(key) {
                out.push(
                    Finding::new(
                        Severity::High,
                        "output-secret-like",
                        format!("result field `{}` has a secret-like name: secrets must never be returned to a model", escape(key)),
                    )
                    .tool(tool)
                    .property(&here),
                );
            }
            walk_output(tool, prop, &here, out);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(s) = schema.get(key).filter(|s| s.is_object()) {
            walk_output(tool, s, &format!("{pointer}/{key}"), out);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            for (i, s) in list.iter().enumerate() {
                walk_output(tool, s, &format!("{pointer}/{key}/{i}"), out);
            }
        }
    }
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for (name, s) in defs {
            walk_output(tool, s, &format!("{pointer}/$defs/{name}"), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(tools: Value) -> Vec<(&'static str, String)> {
        let list = tools.as_array().cloned().unwrap_or_default();
        review(&list)
            .into_iter()
            .map(|f| (f.rule, f.property.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn a_bounded_closed_tool_has_no_findings() {
        let tool = json!([{"name": "t", "inputSchema": {"type": "object", "additionalProperties": false,
            "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9},
                           "mode": {"type": "string", "enum": ["a", "b"]},
                           "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 8}}}},
            "outputSchema": {"type": "object", "properties": {"value": {"type": "number"}}}}]);
        assert_eq!(rules(tool), vec![]);
    }

    #[test]
    fn definitions_and_tuple_positions_are_reviewed_where_they_are_defined() {
        let tool = json!([{"name": "t", "inputSchema": {"type": "object", "additionalProperties": false,
            "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/A"},
                           "p": {"type": "array", "maxItems": 2, "prefixItems": [{"type": "string"}], "items": false}},
            "$defs": {"A": {"type": "object", "properties": {"n": {"type": "number"}}}}},
            "outputSchema": {"type": "object"}}]);
        assert_eq!(
            rules(tool),
            vec![
                ("string-unbounded", "/properties/p/prefixItems/0".to_owned()),
                ("object-open", "/$defs/A".to_owned()),
                ("number-unbounded", "/$defs/A/properties/n".to_owned()),
            ]
        );
    }

    #[test]
    fn each_gap_is_named_with_its_property() {
        let tool = json!([{"name": "t", "inputSchema": {"type": "object",
            "properties": {"n": {"type": "number", "minimum": 0},
                           "file_path": {"type": "string"},
                           "xs": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}}}},
            "outputSchema": {"type": "object", "properties": {"api_key": {"type": "string"}}}}]);
        assert_eq!(
            rules(tool),
            vec![
                ("object-open", "/".to_owned()),
                ("string-unbounded", "/properties/file_path".to_owned()),
                (
                    "free-text-path-or-command",
                    "/properties/file_path".to_owned()
                ),
                ("number-unbounded", "/properties/n".to_owned()),
                ("array-unbounded", "/properties/xs".to_owned()),
                ("output-secret-like", "/properties/api_key".to_owned()),
            ]
        );
    }
}
