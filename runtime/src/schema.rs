//! Input schemas: the JSON Schema (draft 2020-12) a tool advertises,
//! assembled from the same argument specs the parser checks.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

/// The JSON Schema dialect of every generated schema.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Builder of a tool's input schema: a closed object (`additionalProperties:
/// false`), one property per declared argument, `required` for arguments
/// without a default, and the cost ceiling as `x-cost-ceiling`. Support for
/// generated code (reached through `hardened_mcp::__private`).
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct InputSchema {
    properties: Map<String, Value>,
    required: Vec<&'static str>,
    /// The options' titles of the choices, by property (for forms only:
    /// the advertised schema does not carry them).
    titles: Vec<(&'static str, &'static [Option<&'static str>])>,
}

impl InputSchema {
    /// An object schema with no properties yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a property with its schema, required or not. The macros use
    /// it with `<T as Arg>::schema(..)` written out, so a type that is not
    /// an argument kind is reported once, at the parameter's type.
    pub fn property(
        mut self,
        name: &'static str,
        schema: Map<String, Value>,
        required: bool,
    ) -> Self {
        self.properties
            .insert(name.to_owned(), Value::Object(schema));
        if required {
            self.required.push(name);
        }
        self
    }

    /// Records the titles of a choice's options (`Arg::titles`), for the
    /// form of an elicitation; nothing when there are none.
    pub fn titles(mut self, name: &'static str, titles: &'static [Option<&'static str>]) -> Self {
        if !titles.is_empty() {
            self.titles.push((name, titles));
        }
        self
    }

    /// Adds every field of an argument struct.
    pub fn with<T: crate::args::HardenedArgs>(self) -> Self {
        T::schema(self)
    }

    /// The properties, the required names and the options' titles, as
    /// added.
    pub(crate) fn into_parts(self) -> Parts {
        Parts {
            properties: self.properties,
            required: self.required,
            titles: self.titles,
        }
    }

    /// The finished schema, with the cost ceiling and its units.
    pub fn finish(self, max_cost: f64, units: &'static str) -> Arc<JsonObject> {
        let mut m = Map::new();
        m.insert("$schema".into(), Value::from(DIALECT));
        m.insert("type".into(), Value::from("object"));
        m.insert("properties".into(), Value::Object(self.properties));
        m.insert("required".into(), Value::from(self.required));
        m.insert("additionalProperties".into(), Value::Bool(false));
        m.insert(
            "x-cost-ceiling".into(),
            json!({ "max": max_cost, "units": units }),
        );
        Arc::new(m)
    }
}

/// What an [`InputSchema`] holds, for the form of an elicitation.
pub(crate) struct Parts {
    pub(crate) properties: Map<String, Value>,
    pub(crate) required: Vec<&'static str>,
    pub(crate) titles: Vec<(&'static str, &'static [Option<&'static str>])>,
}

/// The `format` values JSON Schema (draft 2020-12) defines. Anything else
/// (schemars writes `uint32`, `uint64`, `int64`, `double` … for Rust
/// number types) is unknown to validators: strict ones refuse the schema,
/// others warn on every tool (the official TypeScript SDK's ajv does).
pub const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// A copy of `schema` without any `format` keyword whose value is not in
/// [`STANDARD_FORMATS`], at any depth (an integer's range is already
/// stated by its bounds). Property *names* called `format` are kept.
pub fn without_nonstandard_formats(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    fn walk(m: &mut Map<String, Value>) {
        let drop = matches!(m.get("format"), Some(Value::String(f))
            if !STANDARD_FORMATS.contains(&f.as_str()));
        if drop {
            m.remove("format");
        }
        for (k, v) in m.iter_mut() {
            match v {
                // The keys of `properties` and `$defs` are names, not
                // keywords: walk into each value.
                Value::Object(inner)
                    if k == "properties" || k == "$defs" || k == "patternProperties" =>
                {
                    for sub in inner.values_mut() {
                        if let Value::Object(o) = sub {
                            walk(o);
                        }
                    }
                }
                // Data, not schemas: a default or constant may hold a
                // `format` key of its own.
                _ if matches!(k.as_str(), "default" | "const" | "enum" | "examples") => {}
                Value::Object(o) => walk(o),
                Value::Array(a) => {
                    for item in a {
                        if let Value::Object(o) = item {
                            walk(o);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut copy = (**schema).clone();
    walk(&mut copy);
    Arc::new(copy)
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn only_nonstandard_formats_are_dropped_at_any_depth() {
        let v = serde_json::json!({
            "type": "object",
            "properties": {
                "format": { "type": "string", "format": "date-time" },
                "cells": { "type": "integer", "format": "uint64", "minimum": 0 },
                "list": { "type": "array", "items": { "type": "number", "format": "double" } }
            },
            "$defs": { "X": { "anyOf": [{ "type": "integer", "format": "int32" }, { "type": "null" }] } }
        });
        let serde_json::Value::Object(m) = v else {
            unreachable!()
        };
        let out = without_nonstandard_formats(&std::sync::Arc::new(m));
        let out = serde_json::Value::Object((*out).clone());
        assert_eq!(out["properties"]["format"]["format"], "date-time");
        assert!(out["properties"]["cells"].get("format").is_none());
        assert_eq!(out["properties"]["cells"]["minimum"], 0);
        assert!(out["properties"]["list"]["items"].get("format").is_none());
        assert!(out["$defs"]["X"]["anyOf"][0].get("format").is_none());
    }
}
