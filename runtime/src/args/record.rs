//! Records: an argument struct (`#[derive(HardenedArgs)]`) as a parameter
//! or field of its own or as an array's items, a closed JSON object parsed
//! and checked by the struct's own specs and rules. The derive implements
//! `Arg` for the struct with these functions.

use serde_json::{Map, Value};

use super::HardenedArgs;
use super::enums::NamedSpec;
use super::error::ArgError;
use crate::schema::InputSchema;

/// `Arg::parse`: an object, parsed by the struct's own parser; a refusal
/// inside names the argument, and the field as [`ArgError::field`].
pub fn record_parse<T: HardenedArgs>(value: &Value, name: &'static str) -> Result<T, ArgError> {
    let Value::Object(object) = value else {
        return Err(ArgError::wrong_type(name, "object"));
    };
    T::parse(object).map_err(|e| e.within(name))
}

/// `Arg::check`: the fields' bounds and the struct's own `check(..)` rules.
pub fn record_check<T: HardenedArgs>(record: &T, name: &'static str) -> Result<(), ArgError> {
    record.validate().map_err(|e| e.within(name))
}

/// `Arg::schema`: a closed object, the struct's fields as properties, those
/// without a default required.
pub fn record_schema<T: HardenedArgs>(spec: &NamedSpec) -> Map<String, Value> {
    let parts = InputSchema::new().with::<T>().into_parts();
    let mut m = Map::new();
    m.insert("type".into(), Value::from("object"));
    m.insert("properties".into(), Value::Object(parts.properties));
    m.insert("required".into(), Value::from(parts.required));
    m.insert("additionalProperties".into(), Value::Bool(false));
    spec.doc.apply(&mut m);
    m
}

/// `Arg::self_test`: the fields' own startup faults (a record takes no
/// default: the macros refuse one at compile time).
pub fn record_self_test<T: HardenedArgs>(spec: &NamedSpec) -> Result<(), &'static str> {
    if spec.default.is_some() {
        return Err("a record takes no default");
    }
    let mut faults = Vec::new();
    T::spec_faults(&mut faults);
    faults.first().map_or(Ok(()), |(_, fault)| Err(*fault))
}
