//! Completions (`completion/complete`): the values an argument of a prompt
//! or a resource template may take, offered from its declaration, never
//! written by hand: a unit enum's tokens that start with what the user
//! typed, at most [`MAX_COMPLETIONS`]; any other argument offers none.

use std::collections::BTreeMap;

use rmcp::model::{CompleteResult, CompletionInfo, JsonObject};
use serde_json::Value;

/// Most values one completion answers (the specification's ceiling).
pub const MAX_COMPLETIONS: usize = 100;
/// Longest typed prefix completed; a longer one gets no values.
pub const MAX_PREFIX_LEN: usize = 256;

/// The completable arguments of one prompt or template: each argument's
/// tokens, from its schema's `enum`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Completions(BTreeMap<String, Vec<String>>);

impl Completions {
    /// The arguments of `schema` (an input schema) whose values are a
    /// closed list of strings.
    pub(crate) fn of(schema: &JsonObject) -> Self {
        let mut found = BTreeMap::new();
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, p) in properties.into_iter().flatten() {
            if let Some(tokens) = p.get("enum").and_then(Value::as_array) {
                let tokens: Vec<String> = tokens
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                found.insert(name.clone(), tokens);
            }
        }
        Self(found)
    }

    /// The values of `argument` that start with `prefix`: at most
    /// [`MAX_COMPLETIONS`], with the total and whether more exist.
    pub(crate) fn complete(&self, argument: &str, prefix: &str) -> CompleteResult {
        let matching: Vec<&String> = if prefix.len() > MAX_PREFIX_LEN {
            Vec::new()
        } else {
            self.0
                .get(argument)
                .into_iter()
                .flatten()
                .filter(|t| t.starts_with(prefix))
                .collect()
        };
        let total = matching.len();
        let values: Vec<String> = matching
            .into_iter()
            .take(MAX_COMPLETIONS)
            .cloned()
            .collect();
        // At most MAX_COMPLETIONS values: the constructor cannot refuse them.
        let info = CompletionInfo::with_pagination(
            values,
            u32::try_from(total).ok(),
            total > MAX_COMPLETIONS,
        )
        .unwrap_or_default();
        CompleteResult::new(info)
    }
}

/// The properties of `schema` that are not text (a string, or a unit
/// enum's token): a URI template's variables and a prompt's arguments
/// arrive as text, so a number or a list cannot be one.
pub(crate) fn non_text_fields(schema: &JsonObject) -> Vec<String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    properties
        .into_iter()
        .flatten()
        .filter(|(_, p)| p.get("type").and_then(Value::as_str) != Some("string"))
        .map(|(name, _)| name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn schema() -> JsonObject {
        serde_json::json!({"type": "object", "properties": {
            "material": {"type": "string", "enum": ["copper", "constantan", "steel"]},
            "note": {"type": "string", "maxLength": 8},
            "count": {"type": "integer"}
        }})
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn tokens_are_offered_by_prefix_and_nothing_else() {
        let c = Completions::of(&schema());
        let values = |arg: &str, prefix: &str| c.complete(arg, prefix).completion.values;
        assert_eq!(values("material", "co"), ["copper", "constantan"]);
        assert_eq!(values("material", ""), ["copper", "constantan", "steel"]);
        assert!(values("material", "x").is_empty());
        assert!(values("note", "").is_empty());
        assert!(values("nothing", "").is_empty());
        assert!(values("material", &"c".repeat(MAX_PREFIX_LEN + 1)).is_empty());
        assert_eq!(non_text_fields(&schema()), ["count"]);
    }

    #[test]
    fn at_most_a_hundred_values() {
        let tokens: Vec<String> = (0..150).map(|i| format!("t{i:03}")).collect();
        let schema = serde_json::json!({"properties": {"a": {"type": "string", "enum": tokens}}});
        let c = Completions::of(schema.as_object().unwrap());
        let r = c.complete("a", "t");
        assert_eq!(r.completion.values.len(), MAX_COMPLETIONS);
        assert_eq!(r.completion.total, Some(150));
        assert_eq!(r.completion.has_more, Some(true));
    }
}
