//! Argument handling of a five-argument tool: the generated revalidation
//! alone, and raw JSON object → typed + validated against (a) plain serde
//! into the same struct without checks and (b) serde plus the `jsonschema`
//! crate's `is_valid` on the same advertised schema.
//!
//! `cargo bench -p hardened-mcp --bench args`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hardened_mcp::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToolEnum)]
#[serde(rename_all = "snake_case")]
enum Boundary {
    Periodic,
    Fixed,
    Open,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
#[serde(deny_unknown_fields)]
struct Plain {
    cells: u32,
    steps: u64,
    length: f64,
    courant: f64,
    boundary: Boundary,
}

struct Bench;

#[hardened_tools]
impl Bench {
    /// Five arguments.
    #[hardened_tool(max_cost = 2e9, units = "cell-steps", cost = cells as f64 * steps as f64)]
    async fn five(
        &self,
        #[bounded(min = 8, max = 200_000)] cells: u32,
        #[bounded(min = 1, max = 10_000_000)] steps: u64,
        #[bounded(min = 1e-3, max = 1e3, units = "m")] length: f64,
        #[bounded(min = 0.0, max = 0.5)] courant: f64,
        boundary: Boundary,
    ) -> Result<Output<u32>, ToolError> {
        let _ = (length, courant, boundary);
        Ok(Output::new(cells))
    }
}

fn args(c: &mut Criterion) {
    let value =
        json!({"cells": 1000, "steps": 5000, "length": 2.5, "courant": 0.25, "boundary": "open"});
    let set = Bench::hardened_tool_router_set();
    let tool = set.get("five").unwrap();
    let schema = Value::Object((*tool.tool().input_schema).clone());
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(tool.check_arguments(&value).is_ok());
    assert!(validator.is_valid(&value));

    let mut g = c.benchmark_group("args");
    g.bench_function("revalidation_only", |b| {
        b.iter(|| {
            Bench::validate_five(
                black_box(&1000),
                black_box(&5000),
                black_box(&2.5),
                black_box(&0.25),
                black_box(&Boundary::Open),
            )
        })
    });
    g.bench_function("hardened_parse_and_validate", |b| {
        b.iter(|| tool.check_arguments(black_box(&value)))
    });
    g.bench_function("serde_from_value_only", |b| {
        b.iter(|| Plain::deserialize(black_box(&value)))
    });
    g.bench_function("serde_plus_jsonschema", |b| {
        b.iter(|| {
            let v = black_box(&value);
            validator.is_valid(v).then(|| Plain::deserialize(v))
        })
    });
    g.finish();
}

criterion_group!(benches, args);
criterion_main!(benches);
