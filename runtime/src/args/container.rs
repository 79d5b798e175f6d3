//! `Vec<T>` (an item floor and ceiling, rows of one length, then each
//! item's own spec; `T` may itself be a `Vec`) and `Option<T>`
//! (omitted, never `null`).

use serde_json::{Map, Value};

use super::error::{ArgError, ArgErrorCode, Bound};
use super::kind::{Arg, Doc};

/// Bounds of an array argument: an item floor and ceiling, for an array of
/// arrays whether its rows must all be as long, and the items' own spec
/// (for a nested array, the rows' [`VecSpec`]).
#[derive(Debug)]
pub struct VecSpec<S: 'static> {
    /// Fewest items (0: none required).
    pub min_items: usize,
    /// Most items.
    pub max_items: usize,
    /// Every item (a row) has as many items as the first.
    pub rectangular: bool,
    /// The spec every item is checked against.
    pub item: S,
    /// Description.
    pub doc: Doc,
}

impl<S> VecSpec<S> {
    /// The count and shape rules over `items`, before or after parsing.
    fn check_shape(
        &self,
        items: usize,
        mut rows: impl Iterator<Item = Option<usize>>,
        name: &'static str,
    ) -> Result<(), ArgError> {
        if items < self.min_items {
            return Err(ArgError::new(
                ArgErrorCode::TooFewItems,
                name,
                Some(Bound::Count(self.min_items)),
            ));
        }
        if items > self.max_items {
            return Err(ArgError::new(
                ArgErrorCode::TooManyItems,
                name,
                Some(Bound::Count(self.max_items)),
            ));
        }
        if self.rectangular
            && let Some(first) = rows.next()
            && rows.any(|r| r != first)
        {
            return Err(ArgError::new(ArgErrorCode::NotRectangular, name, None));
        }
        Ok(())
    }
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
        let rows = items.iter().map(|v| v.as_array().map(Vec::len));
        spec.check_shape(items.len(), rows, name)?;
        items
            .iter()
            .map(|v| T::parse(v, &spec.item, name))
            .collect()
    }
    fn check(&self, spec: &Self::Spec, name: &'static str) -> Result<(), ArgError> {
        spec.check_shape(self.len(), self.iter().map(Arg::items), name)?;
        self.iter().try_for_each(|v| v.check(&spec.item, name))
    }
    fn items(&self) -> Option<usize> {
        Some(self.len())
    }
    fn schema(spec: &Self::Spec) -> Map<String, Value> {
        let mut item = T::schema(&spec.item);
        // The item's description is the array's; units stay on the item.
        item.remove("description");
        let mut m = Map::new();
        m.insert("type".into(), Value::from("array"));
        if spec.min_items > 0 {
            m.insert("minItems".into(), Value::from(spec.min_items));
        }
        m.insert("maxItems".into(), Value::from(spec.max_items));
        m.insert("items".into(), Value::Object(item));
        spec.doc.apply(&mut m);
        if spec.rectangular {
            // JSON Schema cannot say it; the description does.
            const RULE: &str = "Every row has as many items as the first.";
            let text = match m.get("description").and_then(Value::as_str) {
                Some(d) => format!("{d} {RULE}"),
                None => RULE.to_owned(),
            };
            m.insert("description".into(), Value::from(text));
        }
        m
    }
    fn absent(_: &Self::Spec, _: &'static str) -> Option<Result<Self, ArgError>> {
        None
    }
    fn self_test(spec: &Self::Spec) -> Result<(), &'static str> {
        if spec.min_items > spec.max_items {
            return Err("its min_items is above its max_items");
        }
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
