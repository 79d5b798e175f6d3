//! Calls derived from a tool's input schema: a schema-valid baseline, then
//! one mutation at a time that the schema forbids, made at every depth
//! (nested objects, array items, `prefixItems` positions, the alternative
//! of an `anyOf`/`oneOf` the value takes, each `allOf` branch, through
//! local `$ref`s), each named by the JSON pointer of the schema node it
//! breaks and the JSON pointer of the argument it changes. Each mutation is
//! checked against the whole schema with the `jsonschema` crate before it
//! is sent: the audit never calls "forbidden" a call the advertised schema
//! allows.

use serde_json::{Map, Value, json};

use crate::schema::{self, Doc, MAX_DEPTH, NoBaseline, lower, segment, upper};

/// The markers of one audit run: a text and a number no server would say
/// unless it repeated what the caller sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canary {
    /// Put in every string and key name sent (`MCPAUDIT` and 12 hex digits).
    pub text: String,
    /// Nine digits, put in every bounded number sent (out of range by at
    /// least this much, or as the fraction of an integer).
    pub number: u32,
}

impl Canary {
    /// Fresh random markers.
    pub fn fresh() -> Self {
        let mut b = [0u8; 10];
        let _ = getrandom::fill(&mut b);
        let hex: String = b[..6].iter().map(|x| format!("{x:02x}")).collect();
        let r = u32::from_le_bytes([b[6], b[7], b[8], b[9]]);
        // Not ending in 0: as a fraction (`1.739104857`) every float
        // printer gives all nine digits back.
        let number = 100_000_000 + r % 900_000_000;
        Self {
            text: format!("MCPAUDIT{hex}"),
            number: if number % 10 == 0 { number + 1 } else { number },
        }
    }
}

/// One forbidden call.
#[derive(Debug, Clone)]
pub struct Mutation {
    /// What was changed, e.g. `above maximum`.
    pub what: &'static str,
    /// The schema node whose constraint the mutation breaks (a JSON
    /// pointer into the input schema; through a `$ref`, the referenced
    /// node's), or `/` for the whole object.
    pub property: String,
    /// The argument changed (a JSON pointer into the arguments), or `/`.
    pub argument: String,
    /// The `arguments` as raw JSON text (it may hold literals such as
    /// `1e999` that no JSON value can).
    pub arguments: String,
    /// Whether the schema check applies (false for raw literals the
    /// validator cannot parse; those are forbidden by construction).
    pub checked: bool,
    /// Digits that, found in the answer, show the number sent was
    /// repeated (the text canary is looked for in every answer).
    pub echo: Option<String>,
}

/// A value the schema accepts for `schema` (a standalone schema: its own
/// references resolve), if one is easy to find.
pub fn valid_value(schema: &Value) -> Option<Value> {
    Doc::new(schema).value(schema, 0)
}

/// The baseline of a tool whose input schema is `schema`: schema-valid
/// arguments, or why there are none.
pub fn baseline(schema: &Value) -> Result<Map<String, Value>, NoBaseline> {
    Doc::new(schema).baseline()
}

/// The placeholder of a raw literal inside a candidate's value, replaced
/// in its text.
const LITERAL: &str = "__MCP_AUDIT_LITERAL__";

/// A candidate call before the schema check: the whole arguments value
/// (holding [`LITERAL`] where `literal` goes), and what it changes.
struct Candidate {
    what: &'static str,
    pointer: String,
    at: String,
    value: Value,
    literal: Option<String>,
    echo: Option<String>,
}

/// The forbidden calls of a tool whose input schema is `schema`, from
/// `baseline` (schema-valid), with `canary` in every string, key and bounded
/// number sent.
pub fn mutations(schema: &Value, baseline: &Map<String, Value>, canary: &Canary) -> Vec<Mutation> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    let doc = Doc::new(schema);
    let mut out = Vec::new();
    let generator = Gen { doc, canary };
    generator.node(
        schema,
        &Value::Object(baseline.clone()),
        "",
        "",
        0,
        &mut out,
    );
    let mut seen = std::collections::HashSet::new();
    out.into_iter()
        .filter_map(|c| {
            let mut text = c.value.to_string();
            let parsed = match &c.literal {
                Some(lit) => {
                    text = text.replace(&format!("\"{LITERAL}\""), lit);
                    serde_json::from_str::<Value>(&text).ok()
                }
                None => Some(c.value),
            };
            let checked = parsed.is_some();
            if parsed.is_some_and(|v| validator.is_valid(&v)) || !seen.insert(text.clone()) {
                return None;
            }
            let slash = |p: String| if p.is_empty() { "/".to_owned() } else { p };
            Some(Mutation {
                what: c.what,
                property: slash(c.pointer),
                argument: slash(c.at),
                arguments: text,
                checked,
                echo: c.echo,
            })
        })
        .collect()
}

/// Largest magnitude at which a bound plus the numeric canary is still an
/// exact integer in an `f64` (2^52).
const EXACT: f64 = 4_503_599_627_370_496.0;

/// A value beyond the bound `edge` by the numeric canary (upward when `up`),
/// in the property's own type, with the digits that show an echo; `None`
/// where the bound is too large for the sum to be exact.
fn beyond(edge: f64, up: bool, integer: bool, number: u32) -> Option<(Value, String)> {
    let n = f64::from(number);
    let whole = if up {
        edge.floor() + n
    } else {
        edge.ceil() - n
    };
    if !whole.is_finite() || whole.abs() >= EXACT {
        return None;
    }
    // Exact: |whole| < 2^52, checked above.
    #[allow(clippy::cast_possible_truncation)]
    let k = whole as i64;
    let digits = k.unsigned_abs().to_string();
    if integer {
        Some((json!(k), digits))
    } else {
        // A fraction, so a number property is tested as a number.
        let v = if up { whole + 0.5 } else { whole - 0.5 };
        Some((json!(v), digits))
    }
}

/// The valid scalar `v` itself in another JSON type that lax parsers take
/// back (JavaScript's `Number("7")` and `Number([7])`, pydantic's lax
/// mode): as a string (`"7"`, `"true"`) and in a one-element array. It
/// holds no canary: the value is the baseline's own.
fn coerced(
    v: &Value,
    here: &dyn Fn(&'static str, Value, Option<String>) -> Candidate,
    out: &mut Vec<Candidate>,
) {
    let what = if v.is_boolean() {
        "wrong type (boolean string)"
    } else {
        "wrong type (numeric string)"
    };
    out.push(here(what, json!(v.to_string()), None));
    out.push(here("wrong type (one-element array)", json!([v]), None));
}

/// Whether a node constrains a value by its own keywords (not only through
/// `anyOf`/`oneOf`/`allOf`).
fn has_own(node: &Value) -> bool {
    const OWN: &[&str] = &[
        "type",
        "properties",
        "required",
        "items",
        "prefixItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "enum",
        "const",
        "minItems",
        "maxItems",
        "additionalProperties",
    ];
    OWN.iter().any(|k| node.get(*k).is_some())
}

/// The mutation generator of one tool.
struct Gen<'a> {
    doc: Doc<'a>,
    canary: &'a Canary,
}

impl Gen<'_> {
    /// The candidates that change the value `v` of the node `schema` (at
    /// schema pointer `pointer`, argument pointer `at`): each candidate's
    /// value is the node's replacement.
    fn node(
        &self,
        schema: &Value,
        v: &Value,
        pointer: &str,
        at: &str,
        depth: usize,
        out: &mut Vec<Candidate>,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some((node, pointer)) = self.doc.deref(schema, pointer) else {
            return;
        };
        let pointer = pointer.as_str();
        let here = |what, value: Value, echo: Option<String>| Candidate {
            what,
            pointer: pointer.to_owned(),
            at: at.to_owned(),
            value,
            literal: None,
            echo,
        };
        if has_own(&node) {
            self.own(&node, v, pointer, at, depth, &here, out);
        }
        if let Some(list) = node.get("allOf").and_then(Value::as_array) {
            for (i, branch) in list.iter().enumerate() {
                self.node(
                    branch,
                    v,
                    &format!("{pointer}/allOf/{i}"),
                    at,
                    depth + 1,
                    out,
                );
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(list) = node.get(key).and_then(Value::as_array)
                && let Some((i, branch)) = list
                    .iter()
                    .enumerate()
                    .find(|(_, b)| self.doc.accepts(b, v))
            {
                self.node(
                    branch,
                    v,
                    &format!("{pointer}/{key}/{i}"),
                    at,
                    depth + 1,
                    out,
                );
            }
        }
    }

    /// The mutations of the node's own keywords, by the type of `v`.
    #[allow(clippy::too_many_arguments)]
    fn own(
        &self,
        node: &Value,
        v: &Value,
        pointer: &str,
        at: &str,
        depth: usize,
        here: &dyn Fn(&'static str, Value, Option<String>) -> Candidate,
        out: &mut Vec<Candidate>,
    ) {
        let canary = self.canary.text.as_str();
        let number = self.canary.number;
        let raw = |what, literal: String, echo: Option<String>| {
            let mut c = here(what, json!(LITERAL), echo);
            c.literal = Some(literal);
            c
        };
        if let Some(c) = node.get("const")
            && !c.is_string()
        {
            let other = match c {
                Value::Bool(b) => json!(!b),
                Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) + f64::from(number)),
                _ => json!(canary),
            };
            out.push(here("not the const", other, None));
        }
        match v {
            Value::Number(_) => {
                let types = schema::declared_types(node).unwrap_or_default();
                let integer = types.contains(&"integer") && !types.contains(&"number");
                // Out of range by the numeric canary, in the property's own
                // type: the bound is tested, not the type, and an echo is
                // seen.
                if let Some((hi, _)) = upper(node) {
                    out.push(match beyond(hi, true, integer, number) {
                        Some((x, digits)) => here("above maximum", x, Some(digits)),
                        None => here("above maximum", json!(f64::MAX), None),
                    });
                }
                if let Some((lo, _)) = lower(node) {
                    out.push(match beyond(lo, false, integer, number) {
                        Some((x, digits)) => here("below minimum", x, Some(digits)),
                        None => here("below minimum", json!(f64::MIN), None),
                    });
                }
                out.push(here(
                    "wrong type (string)",
                    json!(format!("12{canary}")),
                    None,
                ));
                out.push(here("wrong type (bool)", json!(true), None));
                coerced(v, here, out);
                if integer {
                    // `<valid>.<nine digits>`: at most 15 significant
                    // digits, so any float printer gives the digits back.
                    let k = v.as_i64().unwrap_or(1);
                    out.push(if k.unsigned_abs() < 1_000_000 {
                        raw(
                            "fraction for an integer",
                            format!("{k}.{number}"),
                            Some(number.to_string()),
                        )
                    } else {
                        here("fraction for an integer", json!(k as f64 + 0.5), None)
                    });
                }
                // 1e999 is valid JSON text for an infinite number: forbidden
                // where the schema bounds the number above.
                if upper(node).is_some() {
                    out.push(raw("non-finite literal 1e999", "1e999".into(), None));
                }
                out.push(raw("huge literal 1e308", "1e308".into(), None));
                // Not JSON at all, yet some parsers take it.
                out.push(raw("NaN literal", "NaN".into(), None));
            }
            Value::String(s) => {
                out.push(here("wrong type (number)", json!(12345), None));
                if let Some(max) = node.get("maxLength").and_then(Value::as_u64) {
                    let n = usize::try_from(max)
                        .unwrap_or(0)
                        .saturating_add(1)
                        .min(1 << 20);
                    let long = format!("{canary}{}", "x".repeat(n));
                    out.push(here("longer than maxLength", json!(long), None));
                }
                if let Some(min) = node.get("minLength").and_then(Value::as_u64)
                    && min > 0
                {
                    let short: String = s
                        .chars()
                        .take(usize::try_from(min - 1).unwrap_or(0))
                        .collect();
                    out.push(here("shorter than minLength", json!(short), None));
                }
                let traversal = format!("../../../etc/passwd{canary}");
                out.push(here("path traversal", json!(traversal), None));
                let shell = format!("$(echo {canary}); rm -rf /");
                out.push(here("shell metacharacters", json!(shell), None));
                out.push(here("outside the enum", json!(canary), None));
            }
            Value::Bool(_) => {
                out.push(here("wrong type (string)", json!(canary), None));
                coerced(v, here, out);
            }
            Value::Array(items) => self.array(node, items, pointer, at, depth, here, out),
            Value::Object(map) => self.object(node, map, pointer, at, depth, here, out),
            Value::Null => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn array(
        &self,
        node: &Value,
        items: &[Value],
        pointer: &str,
        at: &str,
        depth: usize,
        here: &dyn Fn(&'static str, Value, Option<String>) -> Candidate,
        out: &mut Vec<Candidate>,
    ) {
        let canary = self.canary.text.as_str();
        out.push(here("wrong type (string)", json!(canary), None));
        let (prefix, rest) = schema::item_schemas(node);
        let max = node
            .get("maxItems")
            .and_then(Value::as_u64)
            .and_then(|m| usize::try_from(m).ok());
        // A valid item for position `i`.
        let item_for = |i: usize| -> Option<Value> {
            match items.get(i) {
                Some(v) => Some(v.clone()),
                None => self.doc.value(
                    prefix.get(i).or(rest).unwrap_or(&Value::Bool(true)),
                    depth + 1,
                ),
            }
        };
        if let Some(max) = max {
            let n = max.saturating_add(1).min(1 << 16);
            let more: Option<Vec<Value>> = (0..n).map(|i| item_for(i.min(prefix.len()))).collect();
            if let Some(more) = more {
                out.push(here("more items than maxItems", Value::Array(more), None));
            }
        }
        if let Some(min) = node.get("minItems").and_then(Value::as_u64)
            && min > 0
        {
            let keep = usize::try_from(min - 1).unwrap_or(0).min(items.len());
            out.push(here(
                "fewer items than minItems",
                Value::Array(items[..keep].to_vec()),
                None,
            ));
        }
        // Each position: padded with valid items up to it, then mutated.
        let mut positions: Vec<(usize, Value, String)> = prefix
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    i,
                    s.clone(),
                    format!("{pointer}/{}/{i}", schema::prefix_key(node)),
                )
            })
            .collect();
        if let Some(rest) = rest.filter(|r| r.is_object()) {
            positions.push((prefix.len(), rest.clone(), format!("{pointer}/items")));
        }
        for (i, item_schema, item_pointer) in positions {
            if max.is_some_and(|m| i >= m) {
                continue;
            }
            let Some(padded) = (0..=i.max(items.len().saturating_sub(1)))
                .map(item_for)
                .collect::<Option<Vec<Value>>>()
            else {
                continue;
            };
            let Some(current) = padded.get(i).cloned() else {
                continue;
            };
            let mut inner = Vec::new();
            self.node(
                &item_schema,
                &current,
                &item_pointer,
                &format!("{at}/{i}"),
                depth + 1,
                &mut inner,
            );
            for mut c in inner {
                let mut arr = padded.clone();
                arr[i] = c.value;
                c.value = Value::Array(arr);
                out.push(c);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn object(
        &self,
        node: &Value,
        map: &Map<String, Value>,
        pointer: &str,
        at: &str,
        depth: usize,
        here: &dyn Fn(&'static str, Value, Option<String>) -> Candidate,
        out: &mut Vec<Candidate>,
    ) {
        let canary = self.canary.text.as_str();
        let with = |key: &str, v: Value| {
            let mut m = map.clone();
            m.insert(key.to_owned(), v);
            Value::Object(m)
        };
        out.push(here(
            "unknown argument",
            with(&format!("{canary}_key"), json!(1)),
            None,
        ));
        if depth > 0 {
            out.push(here("wrong type (string)", json!(canary), None));
        }
        for key in schema::required(node) {
            if map.contains_key(key) {
                let mut m = map.clone();
                m.remove(key);
                let mut c = here("required key missing", Value::Object(m), None);
                c.pointer = format!("{pointer}/required");
                c.at = format!("{at}/{}", segment(key));
                out.push(c);
            }
        }
        let props = node.get("properties").and_then(Value::as_object);
        for (key, prop) in props.into_iter().flatten() {
            let current = match map.get(key) {
                Some(v) => v.clone(),
                None => match self.doc.value(prop, depth + 1) {
                    Some(v) => v,
                    None => continue,
                },
            };
            let mut inner = Vec::new();
            let seg = segment(key);
            self.node(
                prop,
                &current,
                &format!("{pointer}/properties/{seg}"),
                &format!("{at}/{seg}"),
                depth + 1,
                &mut inner,
            );
            for mut c in inner {
                c.value = with(key, c.value);
                out.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn test_canary() -> Canary {
        Canary {
            text: "C4N4RY".into(),
            number: 739_104_857,
        }
    }

    fn schema() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["n", "mode"],
               "properties": {
                   "n": {"type": "integer", "minimum": 1, "maximum": 100},
                   "x": {"type": "number", "exclusiveMinimum": 0.0, "maximum": 1.0},
                   "mode": {"type": "string", "enum": ["fast", "slow"]},
                   "label": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
                   "xs": {"type": "array", "maxItems": 2, "items": {"type": "number", "minimum": 0, "maximum": 1}},
                   "flag": {"type": "boolean"}}})
    }

    #[test]
    fn the_baseline_is_valid_and_every_mutation_is_not() {
        let s = schema();
        let Some(Value::Object(base)) = valid_value(&s) else {
            panic!("no baseline")
        };
        let validator = jsonschema::validator_for(&s).unwrap();
        assert!(validator.is_valid(&Value::Object(base.clone())));
        let ms = mutations(&s, &base, &test_canary());
        assert!(ms.len() > 15, "{}", ms.len());
        for m in &ms {
            match serde_json::from_str::<Value>(&m.arguments) {
                Ok(v) => assert!(
                    !validator.is_valid(&v),
                    "{} {}: {}",
                    m.what,
                    m.property,
                    m.arguments
                ),
                Err(_) => assert!(
                    !m.checked && (m.arguments.contains("1e999") || m.arguments.contains("NaN")),
                    "{}",
                    m.arguments
                ),
            }
        }
        // Mutations the schema allows are never sent as forbidden: `label`
        // has a pattern, so traversal there is forbidden; `flag` is a
        // boolean, so strings there are.
        assert!(
            ms.iter()
                .any(|m| m.what == "path traversal" && m.property == "/properties/label")
        );
        assert!(ms.iter().any(|m| m.what == "unknown argument"));
        // Every bounded number sent carries the numeric canary, so an echo
        // of it is seen: out of range by it, or as an integer's fraction.
        for (what, property) in [
            ("above maximum", "/properties/n"),
            ("below minimum", "/properties/n"),
            ("above maximum", "/properties/x"),
            ("fraction for an integer", "/properties/n"),
        ] {
            let m = ms
                .iter()
                .find(|m| m.what == what && m.property == property)
                .unwrap();
            let digits = m.echo.as_deref().unwrap();
            assert!(digits.len() >= 9, "{digits}");
            assert!(m.arguments.contains(digits), "{}", m.arguments);
        }
        let above = ms
            .iter()
            .find(|m| m.what == "above maximum" && m.property == "/properties/n")
            .unwrap();
        assert!(
            above.arguments.contains("\"n\":739104957"),
            "{}",
            above.arguments
        );
        let fraction = ms
            .iter()
            .find(|m| m.what == "fraction for an integer")
            .unwrap();
        assert!(
            fraction.arguments.contains("\"n\":1.739104857"),
            "{}",
            fraction.arguments
        );
    }

    /// A schema as schemars 1 emits it for an rmcp `#[tool]`: an enum and
    /// a nested struct in `$defs`, an optional struct (nullable union), a
    /// list of structs, an optional bounded integer; plus a tuple
    /// (`prefixItems`) and an `allOf`.
    fn nested() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object", "additionalProperties": false,
            "properties": {
                "mode": {"$ref": "#/$defs/Mode"},
                "inner": {"$ref": "#/$defs/Inner"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}, "maxItems": 4},
                "limit": {"type": ["integer", "null"], "minimum": 0, "maximum": 9},
                "p": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 3}, {"type": "boolean"}], "items": false},
                "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 1}}, "required": ["a"]}]}
            },
            "required": ["mode", "inner", "list"],
            "$defs": {
                "Mode": {"oneOf": [{"type": "string", "const": "fast"}, {"type": "string", "const": "slow"}]},
                "Inner": {"type": "object", "additionalProperties": false,
                          "properties": {"x": {"type": "integer", "minimum": 1, "maximum": 5},
                                         "tag": {"type": "string", "enum": ["a", "b"]}},
                          "required": ["x", "tag"]}
            }
        })
    }

    #[test]
    fn mutations_reach_every_depth_each_named_by_its_pointers() {
        let s = nested();
        let base = baseline(&s).unwrap();
        let validator = jsonschema::validator_for(&s).unwrap();
        let ms = mutations(&s, &base, &test_canary());
        for m in &ms {
            if let Ok(v) = serde_json::from_str::<Value>(&m.arguments) {
                assert!(
                    !validator.is_valid(&v),
                    "{} {} {}: {}",
                    m.what,
                    m.property,
                    m.argument,
                    m.arguments
                );
            } else {
                assert!(!m.checked);
            }
        }
        let got: std::collections::BTreeSet<(&str, &str, &str)> = ms
            .iter()
            .map(|m| (m.what, m.property.as_str(), m.argument.as_str()))
            .collect();
        for want in [
            ("unknown argument", "/", "/"),
            ("required key missing", "/required", "/inner"),
            ("outside the enum", "/$defs/Mode/oneOf/0", "/mode"),
            ("above maximum", "/$defs/Inner/properties/x", "/inner/x"),
            (
                "fraction for an integer",
                "/$defs/Inner/properties/x",
                "/inner/x",
            ),
            (
                "outside the enum",
                "/$defs/Inner/properties/tag",
                "/inner/tag",
            ),
            ("unknown argument", "/$defs/Inner", "/inner"),
            ("required key missing", "/$defs/Inner/required", "/inner/x"),
            ("wrong type (string)", "/$defs/Inner", "/inner"),
            ("above maximum", "/$defs/Inner/properties/x", "/maybe/x"),
            ("above maximum", "/$defs/Inner/properties/x", "/list/0/x"),
            ("more items than maxItems", "/properties/list", "/list"),
            ("above maximum", "/properties/limit", "/limit"),
            (
                "longer than maxLength",
                "/properties/p/prefixItems/0",
                "/p/0",
            ),
            ("wrong type (string)", "/properties/p/prefixItems/1", "/p/1"),
            (
                "above maximum",
                "/properties/both/allOf/0/properties/a",
                "/both/a",
            ),
        ] {
            assert!(got.contains(&want), "{want:?} not in {got:#?}");
        }
        // A mutation the schema allows is not sent: `null` is a valid
        // `limit`, so no "wrong type" of it is null; `tag` is an enum, so
        // traversal there is forbidden and sent.
        assert!(got.contains(&(
            "path traversal",
            "/$defs/Inner/properties/tag",
            "/inner/tag"
        )));
        let above = ms
            .iter()
            .find(|m| m.what == "above maximum" && m.argument == "/list/0/x")
            .unwrap();
        assert!(
            above.arguments.contains("\"list\":[{"),
            "{}",
            above.arguments
        );
        assert!(
            above.arguments.contains("\"x\":739104862"),
            "{}",
            above.arguments
        );
    }

    #[test]
    fn scalars_are_sent_as_the_types_lax_parsers_coerce_where_forbidden() {
        let s = json!({"type": "object", "required": ["n", "inner", "loose"],
            "properties": {
                "n": {"type": "integer", "minimum": 7, "maximum": 9},
                "inner": {"type": "object", "required": ["x", "on"], "properties": {
                    "x": {"type": "number", "minimum": 0.5, "maximum": 2},
                    "on": {"type": "boolean", "const": true}}},
                "loose": {"type": ["integer", "string", "array"]}}});
        let base = baseline(&s).unwrap();
        let c = test_canary();
        let ms = mutations(&s, &base, &c);
        let coerced: Vec<&Mutation> = ms
            .iter()
            .filter(|m| {
                matches!(
                    m.what,
                    "wrong type (numeric string)"
                        | "wrong type (boolean string)"
                        | "wrong type (one-element array)"
                )
            })
            .collect();
        // The baseline's own value: no canary, no digits to look for.
        for m in &coerced {
            assert!(m.echo.is_none() && !m.arguments.contains(&c.text), "{m:?}");
        }
        let mut got: Vec<(&str, &str, &str)> = coerced
            .iter()
            .map(|m| (m.what, m.argument.as_str(), m.arguments.as_str()))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                (
                    "wrong type (boolean string)",
                    "/inner/on",
                    r#"{"inner":{"on":"true","x":1.25},"loose":0,"n":7}"#
                ),
                (
                    "wrong type (numeric string)",
                    "/inner/x",
                    r#"{"inner":{"on":true,"x":"1.25"},"loose":0,"n":7}"#
                ),
                (
                    "wrong type (numeric string)",
                    "/n",
                    r#"{"inner":{"on":true,"x":1.25},"loose":0,"n":"7"}"#
                ),
                (
                    "wrong type (one-element array)",
                    "/inner/on",
                    r#"{"inner":{"on":[true],"x":1.25},"loose":0,"n":7}"#
                ),
                (
                    "wrong type (one-element array)",
                    "/inner/x",
                    r#"{"inner":{"on":true,"x":[1.25]},"loose":0,"n":7}"#
                ),
                (
                    "wrong type (one-element array)",
                    "/n",
                    r#"{"inner":{"on":true,"x":1.25},"loose":0,"n":[7]}"#
                ),
            ],
            "`loose` takes strings and arrays: nothing coerced is forbidden there"
        );
    }

    #[test]
    fn a_patterned_string_gets_a_match_of_its_pattern() {
        let handle =
            json!({"type": "string", "pattern": "^[a-z][a-z0-9]{0,15}_[A-Za-z0-9_-]{22,80}$"});
        let v = valid_value(&handle).unwrap();
        assert!(
            jsonschema::validator_for(&handle).unwrap().is_valid(&v),
            "{v}"
        );
        assert_eq!(valid_value(&handle), Some(v), "the same on every run");
        let bounded = json!({"type": "string", "pattern": "^x+$", "minLength": 3, "maxLength": 5});
        let v = valid_value(&bounded).unwrap();
        assert!(
            jsonschema::validator_for(&bounded).unwrap().is_valid(&v),
            "{v}"
        );
        // Escaped dollar: a literal, kept.
        let dollar = json!({"type": "string", "pattern": "^a\\$$"});
        assert_eq!(valid_value(&dollar), Some(json!("a$")));
        // No match that the schema also accepts: no baseline, not a wrong one.
        let impossible = json!({"type": "string", "pattern": "^a$", "minLength": 2});
        assert_eq!(valid_value(&impossible), None);
    }

    #[test]
    fn fresh_canaries_differ_and_have_nine_digits() {
        let (a, b) = (Canary::fresh(), Canary::fresh());
        assert_ne!(a, b);
        for c in [a, b] {
            assert!((100_000_000..1_000_000_000).contains(&c.number));
            assert_ne!(c.number % 10, 0);
            assert_eq!(c.text.len(), "MCPAUDIT".len() + 12);
        }
    }

    /// A random schema node: bounded numbers, strings, booleans, closed
    /// or open objects of nodes, arrays of nodes, `prefixItems`, nullable
    /// unions and `anyOf`s of nodes, nested up to four levels.
    fn node() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            (-50i64..50, 0i64..50).prop_map(
                |(lo, span)| json!({"type": "integer", "minimum": lo, "maximum": lo + span})
            ),
            (-5.0f64..5.0).prop_map(
                |lo| json!({"type": "number", "exclusiveMinimum": lo, "maximum": lo + 3.0})
            ),
            (0u64..6).prop_map(|n| json!({"type": "string", "maxLength": n})),
            Just(json!({"type": "string", "enum": ["a", "b"]})),
            Just(json!({"type": "boolean"})),
            Just(json!({"const": 3})),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                (proptest::collection::vec(inner.clone(), 1..4), any::<bool>(), any::<bool>()).prop_map(|(props, closed, all)| {
                    let names: Vec<String> = (0..props.len()).map(|i| format!("k{i}")).collect();
                    let required: Vec<&String> = if all { names.iter().collect() } else { names.iter().take(1).collect() };
                    let properties: Map<String, Value> = names.iter().cloned().zip(props).collect();
                    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": !closed})
                }),
                (inner.clone(), 0u64..2, 1u64..4).prop_map(|(items, min, max)| json!({"type": "array", "items": items, "minItems": min, "maxItems": min + max})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"type": "array", "prefixItems": [a, b], "items": false})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
                inner.clone().prop_map(|a| json!({"anyOf": [a, {"type": "null"}]})),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever the nesting, the baseline (put behind a `$ref`, as
        /// schemars does) is valid and every mutation called forbidden is
        /// rejected by the `jsonschema` crate on the whole schema.
        #[test]
        fn nested_schemas_get_a_valid_baseline_and_only_forbidden_mutations(inner in node()) {
            let s = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "b": inner.clone()},
                           "required": ["a"], "$defs": {"A": inner}});
            let validator = jsonschema::validator_for(&s).unwrap();
            let Ok(base) = baseline(&s) else {
                return Err(TestCaseError::fail(format!("no baseline for {s}")));
            };
            prop_assert!(validator.is_valid(&Value::Object(base.clone())), "{s}: {base:?}");
            for m in mutations(&s, &base, &test_canary()) {
                match serde_json::from_str::<Value>(&m.arguments) {
                    Ok(v) => prop_assert!(!validator.is_valid(&v), "{s}: {} {} {}: {}", m.what, m.property, m.argument, m.arguments),
                    Err(_) => prop_assert!(!m.checked),
                }
            }
        }
    }

    proptest! {
        /// Whatever the bounds, every mutation called forbidden is
        /// rejected by the `jsonschema` crate on the advertised schema.
        #[test]
        fn every_forbidden_mutation_is_rejected_by_jsonschema(
            lo in -1e6f64..1e6, span in 0.0f64..1e6, max_len in 0u64..64, max_items in 0u64..5,
            exclusive in any::<bool>(), closed in any::<bool>(),
        ) {
            let (lo_key, hi) = if exclusive { ("exclusiveMinimum", lo + span + 1.0) } else { ("minimum", lo + span) };
            let s = json!({"type": "object", "additionalProperties": !closed,
                "properties": {
                    "v": {"type": "number", lo_key: lo, "maximum": hi},
                    "k": {"type": "integer", "minimum": lo.floor(), "maximum": (lo + span).floor() + 1.0},
                    "s": {"type": "string", "maxLength": max_len},
                    "a": {"type": "array", "maxItems": max_items, "items": {"type": "integer", "minimum": 0, "maximum": 3}}}});
            let validator = jsonschema::validator_for(&s).unwrap();
            let base = Map::new();
            for m in mutations(&s, &base, &test_canary()) {
                if let Ok(v) = serde_json::from_str::<Value>(&m.arguments) {
                    prop_assert!(!validator.is_valid(&v), "{} {}: {}", m.what, m.property, m.arguments);
                } else {
                    prop_assert!(!m.checked);
                }
            }
        }
    }
}
