//! A tool's input schema as a document: local references (`$ref` to
//! `#/$defs/…`, `#/definitions/…` or any local pointer) resolved, `allOf`
//! merged, and from it a schema-valid value of any node (the baseline the
//! forbidden calls start from), or the proof that a node admits no value.
//!
//! Every value derived here is checked with the `jsonschema` crate before
//! it is used: the merging of `allOf` and the choices made in `anyOf` are
//! approximations, the check is not.

use serde_json::{Map, Value, json};

/// Most nesting followed (references included); deeper nodes get no value
/// and no mutations. Recursive types stop here.
pub const MAX_DEPTH: usize = 12;

/// Why no baseline was derived for a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoBaseline {
    /// The schema admits no value at all: the node (a JSON pointer into the
    /// schema) that shows it, and why.
    Unsatisfiable {
        /// The node that admits nothing.
        pointer: String,
        /// Why, in a phrase.
        reason: String,
    },
    /// A value may exist, but none was found (a pattern too hard to
    /// generate, a remote reference, a constraint the generator ignores).
    Underived {
        /// What stopped the derivation.
        reason: String,
    },
}

/// Escapes a key as a JSON pointer segment (`~` → `~0`, `/` → `~1`).
pub fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The types a schema declares (`type` as a string or a list).
pub fn declared_types(schema: &Value) -> Option<Vec<&str>> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(vec![t.as_str()]),
        Some(Value::Array(ts)) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// The JSON type name of a value, `integer` for a whole number.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a value of JSON type `actual` is of the schema type `declared`.
fn type_matches(declared: &str, actual: &str) -> bool {
    declared == actual || (declared == "number" && actual == "integer")
}

/// A tool's input schema, the root that local references point into.
#[derive(Debug, Clone, Copy)]
pub struct Doc<'a> {
    root: &'a Value,
}

impl<'a> Doc<'a> {
    /// The document whose root is `root`.
    pub fn new(root: &'a Value) -> Self {
        Self { root }
    }

    /// `schema` with its `$ref` chain resolved (keywords beside a `$ref`
    /// laid over the referenced ones), and the pointer to the node whose
    /// keywords these are: `pointer` itself, or the referenced node's.
    /// `None` for a reference that is not local or does not resolve.
    pub fn deref(&self, schema: &Value, pointer: &str) -> Option<(Value, String)> {
        let mut current = schema.clone();
        let mut at = pointer.to_owned();
        for _ in 0..MAX_DEPTH {
            let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
                return Some((current, at));
            };
            let target_pointer = reference.strip_prefix('#')?.to_owned();
            let target = if target_pointer.is_empty() {
                self.root
            } else {
                self.root.pointer(&target_pointer)?
            };
            let mut siblings = current.as_object().cloned().unwrap_or_default();
            siblings.remove("$ref");
            current = match target {
                Value::Object(t) => {
                    let mut merged = t.clone();
                    merged.extend(siblings);
                    Value::Object(merged)
                }
                other => other.clone(),
            };
            at = target_pointer;
        }
        None
    }

    /// `schema` with references resolved and `allOf` merged into one node
    /// (an approximation the callers check).
    fn flatten(&self, schema: &Value, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (mut node, _) = self.deref(schema, "")?;
        let Some(Value::Array(list)) = node.as_object_mut().and_then(|o| o.remove("allOf")) else {
            return Some(node);
        };
        for branch in &list {
            node = merge(node, self.flatten(branch, depth + 1)?);
        }
        Some(node)
    }

    /// Whether `value` is valid against `schema`, a node of this document
    /// (the root's `$defs` and `definitions` carried along, so local
    /// references into them resolve).
    pub fn accepts(&self, schema: &Value, value: &Value) -> bool {
        let mut standalone = schema.clone();
        if let (Value::Object(m), Value::Object(root)) = (&mut standalone, self.root) {
            for key in ["$defs", "definitions", "$schema"] {
                if let Some(v) = root.get(key) {
                    m.entry(key).or_insert_with(|| v.clone());
                }
            }
        }
        jsonschema::validator_for(&standalone).is_ok_and(|v| v.is_valid(value))
    }

    /// A value `schema` accepts, if one is easy to find: `const`, the first
    /// `enum` value, a valid `default`, the first alternative of
    /// `anyOf`/`oneOf` that yields one, else one built from the type (the
    /// first non-null type of a nullable union), required keys only, the
    /// fewest items allowed.
    pub fn value(&self, schema: &Value, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let node = self.flatten(schema, depth)?;
        let obj = match &node {
            Value::Bool(true) => return Some(Value::Null),
            Value::Object(o) => o,
            _ => return None,
        };
        if let Some(c) = obj.get("const") {
            return Some(c.clone());
        }
        if let Some(list) = obj.get("enum").and_then(Value::as_array) {
            return list
                .iter()
                .find(|v| self.accepts(&node, v))
                .or_else(|| list.first())
                .cloned();
        }
        if let Some(d) = obj.get("default").filter(|d| !d.is_null())
            && self.accepts(&node, d)
        {
            return Some(d.clone());
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(list) = obj.get(key).and_then(Value::as_array) {
                let mut rest = obj.clone();
                rest.remove(key);
                return list.iter().find_map(|branch| {
                    let branch = self.flatten(branch, depth + 1)?;
                    let candidate = merge(Value::Object(rest.clone()), branch);
                    let v = self.value(&candidate, depth + 1)?;
                    self.accepts(&node, &v).then_some(v)
                });
            }
        }
        let mut types = declared_types(&node).unwrap_or_else(|| inferred_types(obj));
        // A nullable union: the non-null type first.
        types.sort_by_key(|t| *t == "null");
        let only = types.len() == 1;
        types.into_iter().find_map(|t| {
            let v = self.typed(&node, t, depth)?;
            (only || self.accepts(&node, &v)).then_some(v)
        })
    }

    /// A value of type `ty` for the flattened node `schema`.
    fn typed(&self, schema: &Value, ty: &str, depth: usize) -> Option<Value> {
        match ty {
            "integer" => Some(json!(integer_value(schema))),
            "number" => Some(json!(number_value(schema))),
            "boolean" => Some(json!(false)),
            "null" => Some(Value::Null),
            "string" => valid_string(schema).map(Value::String),
            "array" => {
                let (prefix, rest) = item_schemas(schema);
                let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let mut items = Vec::new();
                for i in 0..usize::try_from(min.min(64)).unwrap_or(0) {
                    let item = prefix.get(i).or(rest).unwrap_or(&Value::Bool(true));
                    items.push(self.value(item, depth + 1)?);
                }
                Some(Value::Array(items))
            }
            "object" => {
                let props = schema.get("properties").and_then(Value::as_object);
                let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
                let mut m = Map::new();
                for key in required(schema) {
                    let prop = match props.and_then(|p| p.get(key)) {
                        Some(p) => p.clone(),
                        None if closed => return None,
                        None => schema
                            .get("additionalProperties")
                            .cloned()
                            .unwrap_or(Value::Bool(true)),
                    };
                    m.insert(key.to_owned(), self.value(&prop, depth + 1)?);
                }
                let min = schema
                    .get("minProperties")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                for (key, prop) in props.into_iter().flatten() {
                    if m.len() as u64 >= min {
                        break;
                    }
                    if !m.contains_key(key) {
                        m.insert(key.clone(), self.value(prop, depth + 1)?);
                    }
                }
                Some(Value::Object(m))
            }
            _ => None,
        }
    }

    /// The baseline of a tool: schema-valid arguments for its input schema
    /// (the document's root), or why there is none.
    pub fn baseline(&self) -> Result<Map<String, Value>, NoBaseline> {
        if let Some((pointer, reason)) = self.unsatisfiable(self.root, "", 0) {
            return Err(NoBaseline::Unsatisfiable {
                pointer: if pointer.is_empty() {
                    "/".to_owned()
                } else {
                    pointer
                },
                reason,
            });
        }
        let validator =
            jsonschema::validator_for(self.root).map_err(|_| NoBaseline::Underived {
                reason: "the input schema is not a JSON Schema the validator compiles".into(),
            })?;
        match self.value(self.root, 0) {
            Some(Value::Object(m)) => {
                let failure = validator
                    .iter_errors(&Value::Object(m.clone()))
                    .next()
                    .map(|e| e.schema_path.as_str().to_owned());
                match failure {
                    None => Ok(m),
                    Some(at) => Err(NoBaseline::Underived {
                        reason: format!("the arguments derived fail the schema at {at}"),
                    }),
                }
            }
            Some(_) => Err(NoBaseline::Underived {
                reason: "the input schema does not describe an object".into(),
            }),
            None => Err(NoBaseline::Underived {
                reason: "no schema-valid arguments could be derived".into(),
            }),
        }
    }

    /// A node under `schema` (at `pointer`) that provably admits no value,
    /// and why; `None` when none was found (which proves nothing).
    pub fn unsatisfiable(
        &self,
        schema: &Value,
        pointer: &str,
        depth: usize,
    ) -> Option<(String, String)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (node, pointer) = self.deref(schema, pointer)?;
        let obj = match &node {
            Value::Bool(false) => return Some((pointer, "the schema is `false`".into())),
            Value::Object(o) => o,
            _ => return None,
        };
        let found = |why: &str| Some((pointer.clone(), why.to_owned()));
        if obj
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            return found("an empty enum");
        }
        if let Some(not) = obj.get("not")
            && (not == &Value::Bool(true) || not.as_object().is_some_and(Map::is_empty))
        {
            return found("`not` of a schema that admits everything");
        }
        if let Some(types) = declared_types(&node) {
            if types.is_empty() {
                return found("an empty list of types");
            }
            let of_type = |v: &Value| types.iter().any(|t| type_matches(t, type_of(v)));
            if obj.get("const").is_some_and(|c| !of_type(c)) {
                return found("the const is not of the declared type");
            }
            if let Some(list) = obj.get("enum").and_then(Value::as_array)
                && !list.iter().any(of_type)
            {
                return found("no enum value is of the declared type");
            }
            let only = |group: &[&str]| types.iter().all(|t| group.contains(t));
            if only(&["integer", "number"])
                && let Some(why) = empty_range(&node, types.iter().all(|t| *t == "integer"))
            {
                return found(why);
            }
            let min_max = |lo: &str, hi: &str| {
                matches!((obj.get(lo).and_then(Value::as_u64), obj.get(hi).and_then(Value::as_u64)),
                         (Some(a), Some(b)) if a > b)
            };
            if only(&["string"]) && min_max("minLength", "maxLength") {
                return found("minLength above maxLength");
            }
            if only(&["array"]) {
                if min_max("minItems", "maxItems") {
                    return found("minItems above maxItems");
                }
                let (prefix, rest) = item_schemas(&node);
                let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let min = usize::try_from(min.min(64)).unwrap_or(0);
                for (i, item) in prefix.iter().enumerate().take(min) {
                    let here = format!("{pointer}/{}/{i}", prefix_key(&node));
                    if let Some(f) = self.unsatisfiable(item, &here, depth + 1) {
                        return Some(f);
                    }
                }
                if min > prefix.len()
                    && let Some(rest) = rest
                    && let Some(f) =
                        self.unsatisfiable(rest, &format!("{pointer}/items"), depth + 1)
                {
                    return Some(f);
                }
            }
            if only(&["object"])
                && let Some(f) = self.unsatisfiable_object(&node, &pointer, depth)
            {
                return Some(f);
            }
        }
        if let Some(list) = obj.get("allOf").and_then(Value::as_array) {
            for (i, branch) in list.iter().enumerate() {
                if let Some(f) =
                    self.unsatisfiable(branch, &format!("{pointer}/allOf/{i}"), depth + 1)
                {
                    return Some(f);
                }
            }
            let mut common: Option<Vec<String>> =
                declared_types(&node).map(|t| t.iter().map(|s| (*s).to_owned()).collect());
            for branch in list {
                let Some((b, _)) = self.deref(branch, "") else {
                    continue;
                };
                if let Some(ts) = declared_types(&b) {
                    common = Some(match common {
                        None => ts.iter().map(|s| (*s).to_owned()).collect(),
                        Some(c) => c
                            .into_iter()
                            .filter(|t| ts.iter().any(|u| type_matches(t, u) || type_matches(u, t)))
                            .collect(),
                    });
                }
            }
            if common.is_some_and(|c| c.is_empty()) {
                return found("allOf of disjoint types");
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(list) = obj.get(key).and_then(Value::as_array) {
                let none = list.iter().enumerate().all(|(i, branch)| {
                    self.unsatisfiable(branch, &format!("{pointer}/{key}/{i}"), depth + 1)
                        .is_some()
                });
                if none {
                    return Some((
                        format!("{pointer}/{key}"),
                        "no alternative admits a value".into(),
                    ));
                }
            }
        }
        None
    }

    fn unsatisfiable_object(
        &self,
        node: &Value,
        pointer: &str,
        depth: usize,
    ) -> Option<(String, String)> {
        let props = node.get("properties").and_then(Value::as_object);
        let closed = node.get("additionalProperties") == Some(&Value::Bool(false))
            && node.get("patternProperties").is_none();
        let keys = required(node);
        if let Some(max) = node.get("maxProperties").and_then(Value::as_u64)
            && keys.len() as u64 > max
        {
            return Some((
                pointer.to_owned(),
                "more required keys than maxProperties".into(),
            ));
        }
        for key in keys {
            match props.and_then(|p| p.get(key)) {
                Some(prop) => {
                    let here = format!("{pointer}/properties/{}", segment(key));
                    if let Some(f) = self.unsatisfiable(prop, &here, depth + 1) {
                        return Some(f);
                    }
                }
                None if closed => {
                    return Some((
                        format!("{pointer}/required"),
                        format!(
                            "required key `{}` is not allowed (additionalProperties: false)",
                            crate::text::escape(key)
                        ),
                    ));
                }
                None => {}
            }
        }
        None
    }
}

/// The keys a node requires.
pub fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The positional item schemas and the schema of the other items:
/// `prefixItems` and `items` (draft 2020-12), or an `items` list and
/// `additionalItems` (draft 7).
pub fn item_schemas(schema: &Value) -> (Vec<Value>, Option<&Value>) {
    if let Some(prefix) = schema.get("prefixItems").and_then(Value::as_array) {
        return (prefix.clone(), schema.get("items"));
    }
    match schema.get("items") {
        Some(Value::Array(list)) => (list.clone(), schema.get("additionalItems")),
        other => (Vec::new(), other),
    }
}

/// The keyword holding the positional item schemas of a node.
pub fn prefix_key(schema: &Value) -> &'static str {
    if schema.get("prefixItems").is_some() {
        "prefixItems"
    } else {
        "items"
    }
}

/// The types a node without `type` implies by its keywords, in the order
/// tried; none at all for a node that constrains nothing.
fn inferred_types(obj: &Map<String, Value>) -> Vec<&'static str> {
    let has = |keys: &[&str]| keys.iter().any(|k| obj.contains_key(*k));
    let mut out = Vec::new();
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
    ]) {
        out.push("object");
    }
    if has(&["items", "prefixItems", "minItems", "maxItems"]) {
        out.push("array");
    }
    if has(&["minLength", "maxLength", "pattern", "format"]) {
        out.push("string");
    }
    if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        out.push("number");
    }
    if out.is_empty() {
        // `{}` (or only annotations): any value; null is the plainest.
        out.push("null");
    }
    out
}

/// `(value, exclusive)` of a lower or upper bound: the exclusive keyword
/// when present (draft 2020-12 numbers), else the inclusive one.
pub fn bound(schema: &Value, inclusive: &str, exclusive: &str) -> Option<(f64, bool)> {
    if let Some(v) = schema.get(exclusive).and_then(Value::as_f64) {
        return Some((v, true));
    }
    schema
        .get(inclusive)
        .and_then(Value::as_f64)
        .map(|v| (v, false))
}

/// The lower bound of a number node.
pub fn lower(schema: &Value) -> Option<(f64, bool)> {
    bound(schema, "minimum", "exclusiveMinimum")
}

/// The upper bound of a number node.
pub fn upper(schema: &Value) -> Option<(f64, bool)> {
    bound(schema, "maximum", "exclusiveMaximum")
}

/// Why the numeric range of a node is empty, if it is.
fn empty_range(schema: &Value, integer: bool) -> Option<&'static str> {
    let (lo, hi) = (lower(schema)?, upper(schema)?);
    if lo.0 > hi.0 || (lo.0 == hi.0 && (lo.1 || hi.1)) {
        return Some("minimum above maximum");
    }
    if integer {
        let first = if lo.1 {
            lo.0.floor() + 1.0
        } else {
            lo.0.ceil()
        };
        let last = if hi.1 {
            hi.0.ceil() - 1.0
        } else {
            hi.0.floor()
        };
        if first > last {
            return Some("no integer between the bounds");
        }
    }
    None
}

fn integer_value(schema: &Value) -> i64 {
    let v = match (lower(schema), upper(schema)) {
        (Some((l, excl)), _) => {
            if excl {
                l.floor() + 1.0
            } else {
                l.ceil()
            }
        }
        (None, Some((h, excl))) if h <= 0.0 => {
            if excl {
                h.ceil() - 1.0
            } else {
                h.floor()
            }
        }
        _ => 0.0,
    };
    let v = match schema.get("multipleOf").and_then(Value::as_f64) {
        Some(m) if m >= 1.0 && m.fract() == 0.0 => (v / m).ceil() * m,
        _ => v,
    };
    // Saturating: a bound beyond i64 gives a value the check then refuses.
    #[allow(clippy::cast_possible_truncation)]
    let k = v as i64;
    k
}

fn number_value(schema: &Value) -> f64 {
    let v = match (lower(schema), upper(schema)) {
        (Some((l, _)), Some((h, _))) => (l + h) / 2.0,
        (Some((l, _)), None) => l + 1.0,
        (None, Some((h, _))) => h - 1.0,
        (None, None) => 1.0,
    };
    match schema.get("multipleOf").and_then(Value::as_f64) {
        Some(m) if m > 0.0 => (v / m).ceil() * m,
        _ => v,
    }
}

/// A sample of a string `format`, for servers that check formats.
fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2026-01-01T00:00:00Z",
        "date" => "2026-01-01",
        "time" => "00:00:00Z",
        "email" => "audit@example.org",
        "uri" | "url" | "iri" => "https://example.org/",
        "uri-reference" => "/a",
        "uuid" => "00000000-0000-4000-8000-000000000000",
        "ipv4" => "127.0.0.1",
        "ipv6" => "::1",
        "hostname" => "example.org",
        _ => return None,
    })
}

/// A string the string node `schema` accepts: a match of its `pattern`
/// when it has one (generated from the expression, the same on every run,
/// and checked against the schema), a sample of its `format`, else `a`
/// repeated to `minLength`. For an opaque-id pattern this is a handle the
/// server never issued.
fn valid_string(schema: &Value) -> Option<String> {
    let validator = jsonschema::validator_for(schema).ok()?;
    let accepted = |s: &String| validator.is_valid(&Value::String(s.clone()));
    let Some(pattern) = schema.get("pattern").and_then(Value::as_str) else {
        if let Some(sample) = schema
            .get("format")
            .and_then(Value::as_str)
            .and_then(format_sample)
            .map(str::to_owned)
            .filter(accepted)
        {
            return Some(sample);
        }
        let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let s = "a".repeat(usize::try_from(min.clamp(1, 1 << 16)).ok()?);
        // `maxLength: 0` admits the empty string only.
        return [s, String::new()].into_iter().find(|s| accepted(s));
    };
    use proptest::strategy::{Strategy as _, ValueTree as _};
    // A JSON Schema pattern matches anywhere; a match of its body, anchors
    // removed, is a match of the whole.
    let body = pattern.strip_prefix('^').unwrap_or(pattern);
    let body = match body.strip_suffix('$') {
        Some(b) if b.chars().rev().take_while(|c| *c == '\\').count() % 2 == 0 => b,
        _ => body,
    };
    let strategy = proptest::string::string_regex(body).ok()?;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..64).find_map(|_| {
        let s = strategy.new_tree(&mut runner).ok()?.current();
        accepted(&s).then_some(s)
    })
}

/// Two schema nodes as one (for `allOf`): properties merged (a property in
/// both becomes the `allOf` of the two), `required` united, `type`
/// intersected, the tighter of two bounds, other keywords of `b` laid over
/// `a`'s.
fn merge(a: Value, b: Value) -> Value {
    let (mut a, b) = match (a, b) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => return Value::Bool(false),
        (Value::Bool(true), x) | (x, Value::Bool(true)) => return x,
        (Value::Object(a), Value::Object(b)) => (a, b),
        (a, _) => return a,
    };
    for (key, value) in b {
        let mine = a.remove(&key);
        let merged = match (key.as_str(), mine) {
            (_, None) => value,
            ("properties", Some(Value::Object(mut mine))) => {
                if let Value::Object(theirs) = value {
                    for (k, v) in theirs {
                        let p = match mine.remove(&k) {
                            Some(old) => json!({"allOf": [old, v]}),
                            None => v,
                        };
                        mine.insert(k, p);
                    }
                }
                Value::Object(mine)
            }
            ("required", Some(Value::Array(mut mine))) => {
                for k in value.as_array().into_iter().flatten() {
                    if !mine.contains(k) {
                        mine.push(k.clone());
                    }
                }
                Value::Array(mine)
            }
            ("type", Some(mine)) => {
                let (mine, theirs) = (json!({"type": mine}), json!({"type": value.clone()}));
                let m = declared_types(&mine).unwrap_or_default();
                let t = declared_types(&theirs).unwrap_or_default();
                let both: Vec<&str> = m
                    .iter()
                    .filter_map(|x| {
                        t.iter().find_map(|y| {
                            if type_matches(x, y) {
                                Some(*y)
                            } else if type_matches(y, x) {
                                Some(*x)
                            } else {
                                None
                            }
                        })
                    })
                    .collect();
                json!(both)
            }
            (
                "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties",
                Some(mine),
            ) => pick(mine, value, f64::max),
            (
                "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties",
                Some(mine),
            ) => pick(mine, value, f64::min),
            (_, Some(_)) => value,
        };
        a.insert(key, merged);
    }
    Value::Object(a)
}

/// The one of two numbers `choose` prefers (the other if one is not a
/// number).
fn pick(a: Value, b: Value, choose: fn(f64, f64) -> f64) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if choose(x, y) == x => a,
        (Some(_), Some(_)) => b,
        (Some(_), None) => a,
        _ => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(schema: &Value) -> Result<Value, NoBaseline> {
        Doc::new(schema).baseline().map(Value::Object)
    }

    fn valid(schema: &Value, v: &Value) -> bool {
        jsonschema::validator_for(schema).unwrap().is_valid(v)
    }

    /// What schemars 1 (and so every rmcp `#[tool]`) emits for a struct
    /// with an enum, a nested struct, an optional nested struct, a list of
    /// structs and an optional number.
    fn schemars_like() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args", "type": "object",
            "properties": {
                "mode": {"$ref": "#/$defs/Mode"},
                "inner": {"$ref": "#/$defs/Inner"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}, "maxItems": 4},
                "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "maximum": 9}
            },
            "required": ["mode", "inner", "list"],
            "$defs": {
                "Mode": {"oneOf": [
                    {"description": "fast", "type": "string", "const": "fast"},
                    {"description": "slow", "type": "string", "const": "slow"}]},
                "Inner": {"type": "object", "additionalProperties": false,
                          "properties": {"x": {"type": "integer", "minimum": 1, "maximum": 5},
                                         "tag": {"type": "string", "enum": ["a", "b"]}},
                          "required": ["x", "tag"]}
            }
        })
    }

    #[test]
    fn schemars_refs_defs_and_nullable_unions_get_a_valid_baseline() {
        let s = schemars_like();
        let b = baseline(&s).unwrap();
        assert!(valid(&s, &b), "{b}");
        assert_eq!(b["mode"], "fast");
        assert_eq!(b["inner"], json!({"x": 1, "tag": "a"}));
        assert_eq!(b["list"], json!([]));
    }

    #[test]
    fn all_of_prefix_items_const_and_nested_arrays_get_a_valid_baseline() {
        let s = json!({"type": "object", "required": ["p", "both", "k", "rows"],
            "properties": {
                "p": {"type": "array", "prefixItems": [{"type": "string", "const": "x"},
                                                      {"type": "integer", "minimum": 3}],
                      "minItems": 2, "items": false},
                "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "minimum": 7}}, "required": ["a"]},
                                   {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
                "k": {"const": 42},
                "rows": {"type": "array", "minItems": 1, "items": {"type": "object",
                         "properties": {"cells": {"type": "array", "minItems": 2, "items": {"type": "number", "exclusiveMinimum": 0}}},
                         "required": ["cells"]}}}});
        let b = baseline(&s).unwrap();
        assert!(valid(&s, &b), "{b}");
        assert_eq!(b["p"], json!(["x", 3]));
        assert_eq!(b["both"], json!({"a": 7, "b": false}));
        assert_eq!(b["k"], 42);
        assert_eq!(b["rows"][0]["cells"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn draft7_definitions_and_tuple_items_are_followed() {
        let s = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "definitions": {"P": {"type": "object", "properties": {"n": {"type": "number", "maximum": -5}}, "required": ["n"]}},
            "properties": {"p": {"$ref": "#/definitions/P"},
                           "t": {"type": "array", "items": [{"type": "boolean"}], "minItems": 1}},
            "required": ["p", "t"]});
        let b = baseline(&s).unwrap();
        assert!(valid(&s, &b), "{b}");
    }

    #[test]
    fn a_schema_that_admits_nothing_is_proved_so_at_its_node() {
        let cases = [
            (
                json!({"type": "object", "properties": {"a": false}, "required": ["a"]}),
                "/properties/a",
            ),
            (
                json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 2}}, "required": ["n"]}),
                "/properties/n",
            ),
            (
                json!({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}}, "required": ["n"]}),
                "/properties/n",
            ),
            (
                json!({"type": "object", "additionalProperties": false, "required": ["ghost"]}),
                "/required",
            ),
            (
                json!({"type": "object", "properties": {"m": {"$ref": "#/$defs/M"}}, "required": ["m"],
                    "$defs": {"M": {"type": "string", "enum": []}}}),
                "/$defs/M",
            ),
            (
                json!({"type": "object", "properties": {"u": {"anyOf": [{"type": "string", "minLength": 3, "maxLength": 1}, false]}}, "required": ["u"]}),
                "/properties/u/anyOf",
            ),
            (
                json!({"type": "object", "properties": {"v": {"allOf": [{"type": "string"}, {"type": "integer"}]}}, "required": ["v"]}),
                "/properties/v",
            ),
            (
                json!({"type": "object", "properties": {"c": {"type": "string", "const": 3}}, "required": ["c"]}),
                "/properties/c",
            ),
        ];
        for (s, at) in cases {
            match baseline(&s) {
                Err(NoBaseline::Unsatisfiable { pointer, .. }) => assert_eq!(pointer, at, "{s}"),
                other => panic!("{s}: {other:?}"),
            }
        }
        // Controls: satisfiable neighbours are not called unsatisfiable.
        for s in [
            json!({"type": "object", "properties": {"a": false}}),
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 2, "maximum": 2}}, "required": ["n"]}),
            json!({"type": "object", "properties": {"u": {"anyOf": [{"type": "string", "minLength": 3, "maxLength": 1}, {"type": "null"}]}}, "required": ["u"]}),
            json!({"type": "object", "properties": {"v": {"allOf": [{"type": "number"}, {"type": "integer"}]}}, "required": ["v"]}),
        ] {
            let b = baseline(&s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
            assert!(valid(&s, &b), "{s}: {b}");
        }
    }

    #[test]
    fn an_unresolvable_reference_is_underived_not_unsatisfiable() {
        let s = json!({"type": "object", "properties": {"r": {"$ref": "https://example.org/s.json"}}, "required": ["r"]});
        assert!(matches!(baseline(&s), Err(NoBaseline::Underived { .. })));
    }
}
