//! `Vec<T>` (an item floor and ceiling, rows of one length, then each
//! item's own spec; `T` may itself be a `Vec`) and `Option<T>`
//! (omitted, never `null`).

use serde_json::{Map, Value};

use super::error::{ArgError, ArgErrorCode, Bound};
use super::kind::{Arg, Doc};

/// Bounds of an array argument: an item floor and ceiling, for an array of
/// arrays whether its rows must all be as long and a ceiling on the items
/// of all its rows together, and the items' own spec (for a nested array,
/// the rows' [`VecSpec`]).
#[derive(Debug)]
pub struct VecSpec<S: 'static> {
    /// Fewest items (0: none required).
    pub min_items: usize,
    /// Most items.
    pub max_items: usize,
    /// Every item (a row) has as many items as the first.
    pub rectangular: bool,
    /// Most items in all the rows together (an array of arrays).
    pub max_total: Option<usize>,
    /// The spec every item is checked against.
    pub item: S,
    /// Description.
    pub doc: Doc,
}

impl<S> VecSpec<S> {
    /// The count and shape rules over `items`, before or after parsing;
    /// `rows` are the items' own lengths (`None` for an item that is not
    /// an array).
    fn check_shape(
        &self,
        items: usize,
        rows: impl Iterator<Item = Option<usize>>,
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
        if !self.rectangular && self.max_total.is_none() {
            return Ok(());
        }
        let (mut first, mut ragged, mut total) = (None, false, 0usize);
        for row in rows {
            total = total.saturating_add(row.unwrap_or(0));
            match first {
                None => first = Some(row),
                Some(first) => ragged |= first != row,
            }
        }
        if self.rectangular && ragged {
            return Err(ArgError::new(ArgErrorCode::NotRectangular, name, None));
        }
        match self.max_total {
            Some(max) if total > max => Err(ArgError::new(
                ArgErrorCode::TooManyInTotal,
                name,
                Some(Bound::Count(max)),
            )),
            _ => Ok(()),
        }
    }
}

impl<T: Arg> Arg for Vec<T> {
    type Spec = VecSpec<T::Spec>;
    type Seen<'a>
        = &'a Self
    where
        T: 'a;
    fn seen(&self) -> &Self {
        self
    }
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
        // JSON Schema cannot say these; the description does.
        if spec.rectangular {
            say(&mut m, "Every row has as many items as the first.");
        }
        if let Some(max) = spec.max_total {
            say(&mut m, &format!("At most {max} items in all the rows."));
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

/// Adds a rule the schema cannot state to the end of its description.
fn say(m: &mut Map<String, Value>, rule: &str) {
    let text = match m.get("description").and_then(Value::as_str) {
        Some(d) => format!("{d} {rule}"),
        None => rule.to_owned(),
    };
    m.insert("description".into(), Value::from(text));
}

/// An optional argument: omitted means `None` (or `Some(default)` when the
/// inner spec declares one). `null` is a wrong type, as in the schema.
impl<T: Arg> Arg for Option<T> {
    type Spec = T::Spec;
    type Seen<'a>
        = Option<T::Seen<'a>>
    where
        T: 'a;
    fn seen(&self) -> Self::Seen<'_> {
        self.as_ref().map(T::seen)
    }
    fn titles() -> &'static [Option<&'static str>] {
        T::titles()
    }
    fn parse(value: &Value, spec: &T::Spec, name: &'static str) -> Result<Self, ArgError> {
        T::parse(value, spec, name).map(Some)
    }
    fn items(&self) -> Option<usize> {
        self.as_ref().and_then(Arg::items)
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

/// `same_len_as = other`: `a` has as many items as `b` (the rule holds
/// when either, optional, is absent).
pub fn same_len<A: Arg, B: Arg>(
    a: &A,
    name: &'static str,
    b: &B,
    other: &'static str,
) -> Result<(), ArgError> {
    match (a.items(), b.items()) {
        (Some(x), Some(y)) if x != y => Err(ArgError::new(
            ArgErrorCode::LengthMismatch,
            name,
            Some(Bound::Text(other)),
        )),
        _ => Ok(()),
    }
}

/// `items(same_len_as = other)`: every row of `a` has as many items as `b`
/// (the rule holds when either, optional, is absent).
pub fn rows_same_len<A: Rows, B: Arg>(
    a: &A,
    name: &'static str,
    b: &B,
    other: &'static str,
) -> Result<(), ArgError> {
    match b.items() {
        Some(n) if a.row_lengths().any(|row| row != n) => Err(ArgError::new(
            ArgErrorCode::RowLengthMismatch,
            name,
            Some(Bound::Text(other)),
        )),
        _ => Ok(()),
    }
}

/// An array of arrays, or an optional one: the lengths of its rows.
pub trait Rows {
    /// Each row's number of items (none when absent).
    fn row_lengths(&self) -> impl Iterator<Item = usize> + '_;
}

impl<T> Rows for Vec<Vec<T>> {
    fn row_lengths(&self) -> impl Iterator<Item = usize> + '_ {
        self.iter().map(Vec::len)
    }
}

impl<R: Rows> Rows for Option<R> {
    fn row_lengths(&self) -> impl Iterator<Item = usize> + '_ {
        self.iter().flat_map(Rows::row_lengths)
    }
}
