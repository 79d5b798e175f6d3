//! A hand-written `HardenedArgs` type for the server's tests (the
//! runtime's own tests cannot use its derive).
#![allow(clippy::unwrap_used)]

use serde_json::{Map, Value};

use crate::args::text::{Pattern, StrSpec};
use crate::args::{Arg, ArgError, HardenedArgs};

/// The variables of `lab://notes/{owner}/{note}`, as the derive would
/// write them (the runtime's own tests cannot use its macros).
#[derive(Debug, PartialEq)]
pub(crate) struct Note {
    pub(crate) owner: String,
    pub(crate) note: String,
}

static NAME: StrSpec = StrSpec {
    min_len: Some(1),
    max_len: Some(16),
    pattern: Some(Pattern::new("^[a-z0-9]+$")),
    charset: None,
    default: None,
    doc: crate::args::kind::Doc {
        description: None,
        units: None,
        header: None,
    },
};

impl HardenedArgs for Note {
    const KEYS: &'static [&'static str] = &["owner", "note"];
    fn parse(object: &Map<String, Value>) -> Result<Self, ArgError> {
        let get = |k: &'static str| -> Result<String, ArgError> {
            match object.get(k) {
                Some(v) => <String as Arg>::parse(v, &NAME, k),
                None => Err(ArgError::wrong_type(k, "string")),
            }
        };
        Ok(Self {
            owner: get("owner")?,
            note: get("note")?,
        })
    }
    fn validate(&self) -> Result<(), ArgError> {
        Ok(())
    }
    fn schema(into: crate::schema::InputSchema) -> crate::schema::InputSchema {
        let text = serde_json::json!({"type": "string"})
            .as_object()
            .unwrap()
            .clone();
        into.property("owner", text.clone(), true)
            .property("note", text, true)
    }
    fn spec_faults(_: &mut Vec<(&'static str, &'static str)>) {}
}
