//! The form a person fills in: the restricted schema of an elicitation
//! (2025-11-25: a flat object of strings, numbers, integers, booleans and
//! enums), generated from a [`HardenedArgs`] type by the same specs that
//! parse the answer.

use rmcp::model::ElicitationSchema;
use serde_json::{Map, Value};

use crate::args::HardenedArgs;
use crate::schema::InputSchema;

/// The keywords a form's property keeps; the rest (patterns, charset
/// notes, `x-` extensions) stay server-side: the parser still checks them.
const KEPT: [&str; 11] = [
    "type",
    "title",
    "description",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "enum",
    "minItems",
    "maxItems",
];

/// The string formats a form may name.
const FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// The form of `T`, or `None` when a field is not one a form can hold (an
/// object, a list of anything but enum tokens): a fault of the server's
/// code, reported when the tool asks.
pub(crate) fn form_of<T: HardenedArgs>() -> Option<ElicitationSchema> {
    let parts = InputSchema::new().with::<T>().into_parts();
    let mut kept = Map::new();
    for (name, schema) in parts.properties {
        let Value::Object(schema) = schema else {
            return None;
        };
        let mut field = restricted(&schema)?;
        if let Some((_, titles)) = parts.titles.iter().find(|(n, _)| *n == name) {
            titled(&mut field, titles);
        }
        kept.insert(name, Value::Object(field));
    }
    let form = serde_json::json!({
        "type": "object",
        "properties": kept,
        "required": parts.required,
    });
    serde_json::from_value(form).ok()
}

/// A choice whose every option has a title (its variant's doc comment,
/// first line, without the final period) shows the titles: `oneOf` of
/// `const`/`title` for one choice, `items.anyOf` for several (SEP-1330).
/// A choice with an undocumented option keeps its plain `enum`.
fn titled(field: &mut Map<String, Value>, titles: &[Option<&str>]) {
    let multi = field.get("type").and_then(Value::as_str) == Some("array");
    let list = if multi {
        match field.get_mut("items").and_then(Value::as_object_mut) {
            Some(items) => items,
            None => return,
        }
    } else {
        field
    };
    let Some(Value::Array(tokens)) = list.get("enum") else {
        return;
    };
    if tokens.len() != titles.len() || titles.iter().any(Option::is_none) {
        return;
    }
    let options: Vec<Value> = tokens
        .iter()
        .zip(titles.iter().flatten())
        .map(|(token, doc)| {
            let title = doc
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .trim_end_matches('.');
            serde_json::json!({ "const": token, "title": title })
        })
        .collect();
    list.remove("enum");
    if multi {
        // Items of several choices: `anyOf`, no `type` beside it.
        list.remove("type");
        list.insert("anyOf".into(), Value::Array(options));
    } else {
        list.insert("oneOf".into(), Value::Array(options));
    }
}

/// One property in the restricted form.
fn restricted(schema: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for key in KEPT {
        if let Some(v) = schema.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    if let Some(Value::String(f)) = schema.get("format")
        && FORMATS.contains(&f.as_str())
    {
        out.insert("format".into(), Value::from(f.as_str()));
    }
    match schema.get("type").and_then(Value::as_str)? {
        "string" | "number" | "integer" | "boolean" => {}
        "array" => {
            // A multi-select: a list of enum tokens.
            let tokens = schema.get("items")?.get("enum")?.clone();
            out.insert(
                "items".into(),
                serde_json::json!({ "type": "string", "enum": tokens }),
            );
        }
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ask::Approval;
    use crate::server::test_args::Note;

    #[test]
    fn a_flat_args_type_is_a_form() {
        let form = serde_json::to_value(form_of::<Note>().unwrap()).unwrap();
        assert_eq!(form["type"], "object");
        assert_eq!(form["properties"]["owner"]["type"], "string");
        assert_eq!(form["required"], serde_json::json!(["owner", "note"]));
        let form = serde_json::to_value(form_of::<Approval>().unwrap()).unwrap();
        assert_eq!(form["properties"]["approve"]["type"], "boolean");
    }

    #[test]
    fn documented_options_are_titled_and_undocumented_ones_are_not() {
        let mut one = serde_json::json!({"type": "string", "enum": ["a", "b"]});
        titled(
            one.as_object_mut().unwrap(),
            &[Some("First.\nMore."), Some(" Second ")],
        );
        assert_eq!(
            one,
            serde_json::json!({"type": "string", "oneOf": [
                {"const": "a", "title": "First"}, {"const": "b", "title": "Second"}]})
        );
        let mut many = serde_json::json!({"type": "array", "maxItems": 2,
            "items": {"type": "string", "enum": ["a", "b"]}});
        titled(many.as_object_mut().unwrap(), &[Some("A"), Some("B")]);
        assert_eq!(
            many["items"],
            serde_json::json!({"anyOf": [
            {"const": "a", "title": "A"}, {"const": "b", "title": "B"}]})
        );
        let mut partly = serde_json::json!({"type": "string", "enum": ["a", "b"]});
        let before = partly.clone();
        titled(partly.as_object_mut().unwrap(), &[Some("A"), None]);
        assert_eq!(partly, before);
        // Both shapes are forms rmcp reads.
        let form = serde_json::json!({"type": "object", "properties": {"one": one, "many": many}});
        assert!(serde_json::from_value::<ElicitationSchema>(form).is_ok());
    }

    #[test]
    fn nested_fields_are_not_a_form() {
        let nested = serde_json::json!({"type": "object", "properties": {}});
        assert!(restricted(nested.as_object().unwrap()).is_none());
        let numbers = serde_json::json!({"type": "array", "items": {"type": "number"}});
        assert!(restricted(numbers.as_object().unwrap()).is_none());
        let tokens = serde_json::json!({"type": "array", "items": {"type": "string", "enum": ["a"]},
            "maxItems": 2, "pattern": "x"});
        let kept = restricted(tokens.as_object().unwrap()).unwrap();
        assert!(kept.get("pattern").is_none());
        assert_eq!(kept["maxItems"], 2);
    }
}
