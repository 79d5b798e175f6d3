//! Input schemas: the JSON Schema (draft 2020-12) a tool advertises,
//! assembled from the same argument specs the parser checks.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use crate::args::Arg;

/// The JSON Schema dialect of every generated schema.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Builder of a tool's input schema: a closed object (`additionalProperties:
/// false`), one property per declared argument, `required` for arguments
/// without a default, and the cost ceiling as `x-cost-ceiling`.
#[derive(Debug, Default)]
pub struct InputSchema {
    properties: Map<String, Value>,
    required: Vec<&'static str>,
}

impl InputSchema {
    /// An object schema with no properties yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an argument of kind `T` with its declared spec.
    pub fn arg<T: Arg>(self, name: &'static str, spec: &T::Spec) -> Self {
        self.property(name, T::schema(spec), crate::args::is_required::<T>(spec))
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

    /// Adds every field of an argument struct.
    pub fn with<T: crate::args::ToolArgs>(self) -> Self {
        T::schema(self)
    }

    /// Adds a required property with a ready-made schema (run handles).
    pub fn raw(mut self, name: &'static str, schema: Map<String, Value>) -> Self {
        self.properties
            .insert(name.to_owned(), Value::Object(schema));
        self.required.push(name);
        self
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
