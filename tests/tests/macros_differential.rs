//! Differential test: for random argument objects, the `jsonschema` crate's
//! verdict on the advertised input schema equals the generated parser's
//! verdict, and the parser never panics.
//!
//! Cross-argument `check(..)` rules and the cost ceiling are beyond what a
//! JSON Schema can say, so a refusal for one of those two reasons counts as
//! "schema-valid".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;

use hardened_mcp::ToolError;
use hardened_mcp::args::ArgErrorCode;
use hardened_mcp::prelude::ToolSet;
use hardened_mcp_tests::macros_fixture::Solver;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-300i64..300_000).prop_map(Value::from),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(5),
            Just(7),
            Just(8),
            Just(200_000),
            Just(200_001),
            Just(10_000_000),
            Just(10_000_001),
            Just(255),
            Just(256),
            Just(-128),
            Just(-129)
        ]
        .prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-2.0f64..2.0).prop_map(Value::from),
        prop_oneof![
            Just(0.0f64),
            Just(0.5),
            Just(0.50000001),
            Just(1.0),
            Just(1e-3),
            Just(9.99e-4),
            Just(1e3),
            Just(1000.0001),
            Just(1e300),
            Just(-1e300),
            Just(8.0),
            Just(100.5),
            Just(-0.0)
        ]
        .prop_map(Value::from),
        prop_oneof![
            Just("periodic"),
            Just("fixed"),
            Just("open"),
            Just("outflow"),
            Just("run"),
            Just("a-b"),
            Just("A"),
            Just("ab-"),
            Just("x y"),
            Just("héllo"),
            Just("tab\there"),
            Just("\u{85}"),
            Just("100"),
            Just("1e3"),
            Just("NaN"),
            Just("")
        ]
        .prop_map(Value::from),
        "[a-zA-Z0-9 ._-]{0,20}".prop_map(Value::from),
        "\\PC{0,40}".prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(scalar(), 0..6).prop_map(Value::Array),
        1 => prop::collection::vec(("[a-z]{1,3}", scalar()), 0..2)
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
    ]
}

/// A good object for the tool (most of the time) with 0 to 2 random
/// mutations of declared keys and, sometimes, an undeclared key.
fn object(keys: &'static [&'static str], good: fn() -> Value) -> impl Strategy<Value = Value> {
    let present = prop::collection::vec((prop::sample::select(keys), value()), 0..3);
    let extra = prop::collection::vec(("[a-z_]{1,8}", value()), 0..2);
    (present, extra, any::<bool>(), 0..4u8).prop_map(move |(present, extra, use_extra, base)| {
        let mut m = match good() {
            Value::Object(m) if base > 0 => m,
            _ => Map::new(),
        };
        for (k, v) in present {
            m.insert((*k).to_owned(), v);
        }
        if use_extra {
            for (k, v) in extra {
                m.insert(k, v);
            }
        }
        Value::Object(m)
    })
}

fn heat_good() -> Value {
    json!({"cells": 100, "steps": 10, "length": 1.0, "courant": 0.1, "boundary": "fixed"})
}

fn kinds_good() -> Value {
    json!({"small": 1, "fraction": 0.5, "count": 1, "slug": "a-b", "tags": ["x"]})
}

fn heat_object() -> impl Strategy<Value = Value> {
    object(HEAT_KEYS, heat_good)
}

const HEAT_KEYS: &[&str] = &[
    "cells", "steps", "length", "courant", "boundary", "label", "weights", "dry_run", "offset",
];
const KIND_KEYS: &[&str] = &[
    "small", "signed", "fraction", "count", "slug", "tags", "note", "boundary", "flags",
];

static SET: LazyLock<ToolSet<Solver>> = LazyLock::new(Solver::hardened_tool_router_set);
static HEAT: LazyLock<jsonschema::Validator> = LazyLock::new(|| theirs("heat_estimate"));
static KINDS: LazyLock<jsonschema::Validator> = LazyLock::new(|| theirs("kinds"));

fn ours(tool: &str, args: &Value) -> bool {
    match SET.get(tool).unwrap().check_arguments(args) {
        Ok(()) => true,
        Err(ToolError::CostExceeded { .. }) => true,
        Err(ToolError::InvalidArguments(e)) => e.code() == ArgErrorCode::CheckFailed,
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

fn theirs(tool: &str) -> jsonschema::Validator {
    let schema = Value::Object((*SET.get(tool).unwrap().tool().input_schema).clone());
    jsonschema::validator_for(&schema).expect("the advertised schema is a valid JSON Schema")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn heat_estimate_agrees_with_jsonschema(args in heat_object()) {
        prop_assert_eq!(HEAT.is_valid(&args), ours("heat_estimate", &args), "{}", args);
    }

    #[test]
    fn kinds_agrees_with_jsonschema(args in object(KIND_KEYS, kinds_good)) {
        prop_assert_eq!(KINDS.is_valid(&args), ours("kinds", &args), "{}", args);
    }

    #[test]
    fn non_objects_are_refused_by_both(args in scalar()) {
        prop_assert!(!KINDS.is_valid(&args));
        prop_assert!(!ours("kinds", &args));
    }
}

/// The generators reach both verdicts often, or agreement would prove little.
#[test]
fn generators_cover_valid_and_invalid_objects() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = heat_object();
    let (mut valid, mut invalid) = (0, 0);
    for _ in 0..500 {
        let v = strategy.new_tree(&mut runner).unwrap().current();
        if HEAT.is_valid(&v) {
            valid += 1
        } else {
            invalid += 1
        }
    }
    assert!(
        valid >= 25 && invalid >= 25,
        "valid {valid}, invalid {invalid}"
    );
}

#[test]
fn advertised_output_schemas_validate_real_outputs() {
    let set = Solver::hardened_tool_router_set();
    let tool = set.get("heat_estimate").unwrap();
    let schema = Value::Object((*tool.tool().output_schema.clone().unwrap()).clone());
    let v = jsonschema::validator_for(&schema).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = Solver::new();
    let args = json!({"cells": 100, "steps": 10, "length": 1.0, "courant": 0.1,
                      "boundary": "fixed", "weights": [0.5], "offset": -2});
    let r = rt.block_on(tool.call(
        &server,
        args.as_object().cloned(),
        hardened_mcp::ToolContext::detached(hardened_mcp::CallerId::local()),
    ));
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let out = r.structured_content.unwrap();
    assert!(v.is_valid(&out), "{out}");
}
