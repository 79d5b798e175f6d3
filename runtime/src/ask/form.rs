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
    let (properties, required) = InputSchema::new().with::<T>().into_parts();
    let mut kept = Map::new();
    for (name, schema) in properties {
        let Value::Object(schema) = schema else {
            return None;
        };
        kept.insert(name, Value::Object(restricted(&schema)?));
    }
    let form = serde_json::json!({
        "type": "object",
        "properties": kept,
        "required": required,
    });
    serde_json::from_value(form).ok()
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
