//! Calls derived from a tool's input schema: a schema-valid baseline, then
//! one mutation at a time that the schema forbids. Each mutation is checked
//! against the schema with the `jsonschema` crate before it is sent: the
//! audit never calls "forbidden" a call the advertised schema allows.

use serde_json::{Map, Value, json};

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
    /// The property changed (a JSON pointer), or `/` for the whole object.
    pub property: String,
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

/// A value the schema accepts for `schema`, if one is easy to find.
pub fn valid_value(schema: &Value) -> Option<Value> {
    if let Some(c) = schema.get("const") {
        return Some(c.clone());
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return Some(first.clone());
    }
    if let Some(d) = schema.get("default").filter(|d| !d.is_null()) {
        return Some(d.clone());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            return list.iter().find_map(valid_value);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ => return None,
    };
    match ty {
        "integer" => {
            let lo = lower(schema).map_or(
                0.0,
                |(v, excl)| if excl { v.floor() + 1.0 } else { v.ceil() },
            );
            Some(json!(lo as i64))
        }
        "number" => {
            let lo = lower(schema);
            let hi = upper(schema);
            let v = match (lo, hi) {
                (Some((l, _)), Some((h, _))) => (l + h) / 2.0,
                (Some((l, _)), None) => l + 1.0,
                (None, Some((h, _))) => h - 1.0,
                (None, None) => 1.0,
            };
            Some(json!(v))
        }
        "boolean" => Some(json!(false)),
        "string" => valid_string(schema).map(Value::String),
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").and_then(valid_value)?;
            Some(Value::Array(vec![item; usize::try_from(min).unwrap_or(0)]))
        }
        "object" => {
            let props = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut m = Map::new();
            for key in required {
                let prop = props.and_then(|p| p.get(key))?;
                m.insert(key.to_owned(), valid_value(prop)?);
            }
            Some(Value::Object(m))
        }
        "null" => Some(Value::Null),
        _ => None,
    }
}

/// A string the string schema `schema` accepts: a match of its `pattern`
/// when it has one (generated from the expression, the same on every run,
/// and checked against the schema), else `a` repeated to `minLength`.
/// For an opaque-id pattern this is a handle the server never issued.
fn valid_string(schema: &Value) -> Option<String> {
    let validator = jsonschema::validator_for(schema).ok()?;
    let accepted = |s: &String| validator.is_valid(&Value::String(s.clone()));
    let Some(pattern) = schema.get("pattern").and_then(Value::as_str) else {
        let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1);
        let s = "a".repeat(usize::try_from(min.clamp(1, 1 << 16)).ok()?);
        return accepted(&s).then_some(s);
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

fn bound(schema: &Value, inclusive: &str, exclusive: &str) -> Option<(f64, bool)> {
    if let Some(v) = schema.get(exclusive).and_then(Value::as_f64) {
        return Some((v, true));
    }
    schema
        .get(inclusive)
        .and_then(Value::as_f64)
        .map(|v| (v, false))
}

fn lower(schema: &Value) -> Option<(f64, bool)> {
    bound(schema, "minimum", "exclusiveMinimum")
}

fn upper(schema: &Value) -> Option<(f64, bool)> {
    bound(schema, "maximum", "exclusiveMaximum")
}

/// A candidate call before the schema check.
enum Candidate {
    /// Arguments as a JSON value (checked against the schema), and the
    /// digits of a numeric canary in them.
    Value(Value, Option<String>),
    /// Arguments as raw text; `Some(v)` when the text parses as `v` (then
    /// checked), `None` when it holds a literal no `f64` holds (`1e999`,
    /// made only for numbers with an upper bound, which it exceeds); and
    /// the digits of a numeric canary in them.
    Raw(String, Option<Value>, Option<String>),
}

/// The forbidden calls of a tool whose input schema is `schema`, from
/// `baseline` (schema-valid), with `canary` in every string, key and bounded
/// number sent.
pub fn mutations(schema: &Value, baseline: &Map<String, Value>, canary: &Canary) -> Vec<Mutation> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    candidates(schema, baseline, canary)
        .into_iter()
        .filter_map(|(what, property, candidate)| match candidate {
            Candidate::Value(v, echo) => (!validator.is_valid(&v)).then(|| Mutation {
                what,
                property,
                arguments: v.to_string(),
                checked: true,
                echo,
            }),
            Candidate::Raw(text, Some(v), echo) => (!validator.is_valid(&v)).then_some(Mutation {
                what,
                property,
                arguments: text,
                checked: true,
                echo,
            }),
            Candidate::Raw(text, None, echo) => Some(Mutation {
                what,
                property,
                arguments: text,
                checked: false,
                echo,
            }),
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

fn candidates(
    schema: &Value,
    baseline: &Map<String, Value>,
    canary: &Canary,
) -> Vec<(&'static str, String, Candidate)> {
    let mut out = Vec::new();
    let number = canary.number;
    let canary = canary.text.as_str();
    let with_echo = |key: &str, v: Value, echo: Option<String>| {
        let mut m = baseline.clone();
        m.insert(key.to_owned(), v);
        Candidate::Value(Value::Object(m), echo)
    };
    let with = |key: &str, v: Value| with_echo(key, v, None);
    let raw_echo = |key: &str, literal: &str, echo: Option<String>| {
        let mut m = baseline.clone();
        m.insert(key.to_owned(), json!("__MCP_AUDIT_LITERAL__"));
        let text = Value::Object(m)
            .to_string()
            .replace("\"__MCP_AUDIT_LITERAL__\"", literal);
        let parsed = serde_json::from_str::<Value>(&text).ok();
        Candidate::Raw(text, parsed, echo)
    };
    let raw = |key: &str, literal: &str| raw_echo(key, literal, None);
    out.push((
        "unknown argument",
        "/".to_owned(),
        with(&format!("{canary}_key"), json!(1)),
    ));
    let props = schema.get("properties").and_then(Value::as_object);
    for (key, prop) in props.into_iter().flatten() {
        let at = format!("/properties/{key}");
        let ty = prop.get("type").and_then(Value::as_str).unwrap_or("");
        // Out of range by the numeric canary, in the property's own type:
        // the bound is tested, not the type, and an echo is seen.
        let integer = ty == "integer";
        if let Some((hi, _)) = upper(prop) {
            let c = match beyond(hi, true, integer, number) {
                Some((v, digits)) => with_echo(key, v, Some(digits)),
                None => with(key, json!(f64::MAX)),
            };
            out.push(("above maximum", at.clone(), c));
        }
        if let Some((lo, _)) = lower(prop) {
            let c = match beyond(lo, false, integer, number) {
                Some((v, digits)) => with_echo(key, v, Some(digits)),
                None => with(key, json!(f64::MIN)),
            };
            out.push(("below minimum", at.clone(), c));
        }
        match ty {
            "integer" | "number" => {
                out.push((
                    "wrong type (string)",
                    at.clone(),
                    with(key, json!(format!("12{canary}"))),
                ));
                out.push(("wrong type (bool)", at.clone(), with(key, json!(true))));
                if ty == "integer" {
                    // `<valid>.<nine digits>`: at most 15 significant
                    // digits, so any float printer gives the digits back.
                    let v = valid_value(prop).and_then(|v| v.as_i64()).unwrap_or(1);
                    let c = if v.unsigned_abs() < 1_000_000 {
                        raw_echo(key, &format!("{v}.{number}"), Some(number.to_string()))
                    } else {
                        with(key, json!(v as f64 + 0.5))
                    };
                    out.push(("fraction for an integer", at.clone(), c));
                }
                // 1e999 is valid JSON text for an infinite number: forbidden
                // where the schema bounds the number above.
                if upper(prop).is_some() {
                    out.push(("non-finite literal 1e999", at.clone(), raw(key, "1e999")));
                }
                out.push(("huge literal 1e308", at.clone(), raw(key, "1e308")));
                // Not JSON at all, yet some parsers take it.
                out.push(("NaN literal", at.clone(), raw(key, "NaN")));
            }
            "string" => {
                out.push(("wrong type (number)", at.clone(), with(key, json!(12345))));
                if let Some(max) = prop.get("maxLength").and_then(Value::as_u64) {
                    let n = usize::try_from(max)
                        .unwrap_or(0)
                        .saturating_add(1)
                        .min(1 << 20);
                    let long = format!("{canary}{}", "x".repeat(n));
                    out.push(("longer than maxLength", at.clone(), with(key, json!(long))));
                }
                let traversal = format!("../../../etc/passwd{canary}");
                out.push(("path traversal", at.clone(), with(key, json!(traversal))));
                let shell = format!("$(echo {canary}); rm -rf /");
                out.push(("shell metacharacters", at.clone(), with(key, json!(shell))));
                out.push(("outside the enum", at.clone(), with(key, json!(canary))));
            }
            "array" => {
                out.push(("wrong type (string)", at.clone(), with(key, json!(canary))));
                if let (Some(max), Some(item)) = (
                    prop.get("maxItems").and_then(Value::as_u64),
                    prop.get("items").and_then(valid_value),
                ) {
                    let n = usize::try_from(max)
                        .unwrap_or(0)
                        .saturating_add(1)
                        .min(1 << 16);
                    out.push((
                        "more items than maxItems",
                        at.clone(),
                        with(key, Value::Array(vec![item; n])),
                    ));
                }
            }
            "boolean" => out.push(("wrong type (string)", at.clone(), with(key, json!(canary)))),
            _ => {}
        }
    }
    out
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
