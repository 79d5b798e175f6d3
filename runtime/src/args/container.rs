//! `Vec<T>` (an item ceiling, then each item's own spec) and `Option<T>`
//! (omitted, never `null`).

use serde_json::{Map, Value};

use super::error::{ArgError, ArgErrorCode, Bound};
use super::kind::{Arg, Doc};

/// Bounds of an array argument: an item ceiling and the items' own spec.
#[derive(Debug)]
pub struct VecSpec<S: 'static> {
    /// Most items.
    pub max_items: usize,
    /// The spec every item is checked against.
    pub item: S,
    /// Description.
    pub doc: Doc,
}

impl<T: Arg> Arg for Vec<T> {
    type Spec = VecSpec<T::Spec>;
    fn titles() -> &'static [Option<&'static str>] {
        T::titles()
    }
    fn parse(value: &Value, spec: &Self::Spec, name: &'static str) -> Result<Self, ArgError> {
        let Value::Array(items) = value else {
            return Err(ArgError::wrong_type(name, "array"));
        };
        if items.len() > spec.max_items {
            return Err(ArgError::new(
                ArgErrorCode::TooManyItems,
                name,
                Some(Bound::Count(spec.max_items)),
            ));
        }
        items
            .iter()
            .map(|v| T::parse(v, &spec.item, name))
            .collect()
    }
    fn check(&self, spec: &Self::Spec, name: &'static str) -> Result<(), ArgError> {
        if self.len() > spec.max_items {
            return Err(ArgError::new(
                ArgErrorCode::TooManyItems,
                name,
                Some(Bound::Count(spec.max_items)),
            ));
        }
        self.iter().try_for_each(|v| v.check(&spec.item, name))
    }
    fn schema(spec: &Self::Spec) -> Map<String, Value> {
        let mut item = T::schema(&spec.item);
        // The item's description is the array's; units stay on the item.
        item.remove("description");
        let mut m = Map::new();
        m.insert("type".into(), Value::from("array"));
        m.insert("maxItems".into(), Value::from(spec.max_items));
        m.insert("items".into(), Value::Object(item));
        spec.doc.apply(&mut m);
        m
    }
    fn absent(_: &Self::Spec, _: &'static str) -> Option<Result<Self, ArgError>> {
        None
    }
    fn self_test(spec: &Self::Spec) -> Result<(), &'static str> {
        T::self_test(&spec.item)
    }
}

/// An optional argument: omitted means `None` (or `Some(default)` when the
/// inner spec declares one). `null` is a wrong type, as in the schema.
impl<T: Arg> Arg for Option<T> {
    type Spec = T::Spec;
    fn titles() -> &'static [Option<&'static str>] {
        T::titles()
    }
    fn parse(value: &Value, spec: &T::Spec, name: &'static str) -> Result<Self, ArgError> {
        T::parse(value, spec, name).map(Some)
    }
    fn check(&self, spec: &T::Spec, name: &'static str) -> Result<(), ArgError> {
        self.as_ref().map_or(Ok(()), |v| v.check(spec, name))
    }
    fn schema(spec: &T::Spec) -> Map<String, Value> {
        T::schema(spec)
    }
    fn absent(spec: &T::Spec, name: &'static str) -> Option<Result<Self, ArgError>> {
        Some(T::absent(spec, name).transpose())
    }
    fn self_test(spec: &T::Spec) -> Result<(), &'static str> {
        T::self_test(spec)
    }
}
