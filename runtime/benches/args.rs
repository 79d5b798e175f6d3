//! Argument handling of a five-argument tool: the generated revalidation
//! against a careful hand-written check of the same rules (same bounds,
//! same errors, same cost ceiling), and raw JSON object → typed + validated
//! against (a) plain serde into the same struct without checks and (b)
//! serde plus the `jsonschema` crate's `is_valid` on the same advertised
//! schema.
//!
//! `cargo bench --profile release -p hardened-mcp --bench args`
//!
//! With `HARDENED_ARGS_CALLS=<n>` set, the binary runs no criterion
//! benchmark: it calls the generated and the hand-written revalidation `n`
//! times each, in `loop_generated` and `loop_hand_written`, so that
//! `valgrind --tool=callgrind --toggle-collect='*loop_generated*'` (and
//! `'*loop_hand_written*'`) counts their instructions, a measure that the
//! machine's load does not change (docs/benchmarks.md).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use hardened_mcp::args::{ArgError, ArgErrorCode, Bound};
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

/// The rules of `five`, written by hand as a careful author would: each
/// bound compared once, in the parameter's own type, with the same error
/// (code, name, bound) as the generated check; the floats' finiteness;
/// the cost in `f64` against the ceiling (a NaN or infinite cost fails
/// `cost <= max`; both factors are at least 1, so it is never negative). The
/// enum needs no check: a typed `Boundary` is one of its tokens.
fn hand_written(
    cells: &u32,
    steps: &u64,
    length: &f64,
    courant: &f64,
    boundary: &Boundary,
) -> Result<(), ToolError> {
    use ArgErrorCode as C;
    fn refuse(
        code: ArgErrorCode,
        name: &'static str,
        bound: Option<Bound>,
    ) -> Result<(), ToolError> {
        Err(ToolError::InvalidArguments(ArgError::new(
            code, name, bound,
        )))
    }
    if *cells < 8 {
        return refuse(C::BelowMinimum, "cells", Some(Bound::Int(8)));
    }
    if *cells > 200_000 {
        return refuse(C::AboveMaximum, "cells", Some(Bound::Int(200_000)));
    }
    if *steps < 1 {
        return refuse(C::BelowMinimum, "steps", Some(Bound::Int(1)));
    }
    if *steps > 10_000_000 {
        return refuse(C::AboveMaximum, "steps", Some(Bound::Int(10_000_000)));
    }
    if !length.is_finite() {
        return refuse(C::NotFinite, "length", None);
    }
    if *length < 1e-3 {
        return refuse(C::BelowMinimum, "length", Some(Bound::Float(1e-3)));
    }
    if *length > 1e3 {
        return refuse(C::AboveMaximum, "length", Some(Bound::Float(1e3)));
    }
    if !courant.is_finite() {
        return refuse(C::NotFinite, "courant", None);
    }
    if *courant < 0.0 {
        return refuse(C::BelowMinimum, "courant", Some(Bound::Float(0.0)));
    }
    if *courant > 0.5 {
        return refuse(C::AboveMaximum, "courant", Some(Bound::Float(0.5)));
    }
    let _ = boundary;
    let cost = f64::from(*cells) * *steps as f64;
    if cost <= 2e9 {
        Ok(())
    } else {
        Err(ToolError::CostExceeded {
            ceiling: 2e9,
            units: "cell-steps",
        })
    }
}

/// One generated revalidation of black-boxed arguments. Both `*_once`
/// functions are kept out of line, so that each is measured as one call
/// returning its `Result` (as in a tool's prologue), not as a loop the
/// optimizer fused with the benchmark's.
#[inline(never)]
fn generated_once() -> Result<(), ToolError> {
    Bench::validate_five(
        black_box(&1000),
        black_box(&5000),
        black_box(&2.5),
        black_box(&0.25),
        black_box(&Boundary::Open),
    )
}

/// One hand-written revalidation of the same black-boxed arguments.
#[inline(never)]
fn hand_written_once() -> Result<(), ToolError> {
    hand_written(
        black_box(&1000),
        black_box(&5000),
        black_box(&2.5),
        black_box(&0.25),
        black_box(&Boundary::Open),
    )
}

/// `n` generated revalidations (for callgrind); how many passed.
#[inline(never)]
fn loop_generated(n: u64) -> u64 {
    (0..n).map(|_| u64::from(generated_once().is_ok())).sum()
}

/// `n` hand-written revalidations (for callgrind); how many passed.
#[inline(never)]
fn loop_hand_written(n: u64) -> u64 {
    (0..n).map(|_| u64::from(hand_written_once().is_ok())).sum()
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

    // Both refuse the same bad values with the same error.
    type Case = (u32, u64, f64, f64);
    let cases: [Case; 8] = [
        (7, 5000, 2.5, 0.25),
        (200_001, 5000, 2.5, 0.25),
        (1000, 0, 2.5, 0.25),
        (1000, 10_000_001, 2.5, 0.25),
        (1000, 5000, f64::NAN, 0.25),
        (1000, 5000, 2.5, 0.6),
        (200_000, 10_000_000, 2.5, 0.25),
        (1000, 5000, 2.5, 0.25),
    ];
    for (cells, steps, length, courant) in cases {
        let b = Boundary::Open;
        assert_eq!(
            Bench::validate_five(&cells, &steps, &length, &courant, &b),
            hand_written(&cells, &steps, &length, &courant, &b),
            "{cells} {steps} {length} {courant}"
        );
    }

    let mut g = c.benchmark_group("args");
    g.bench_function("revalidation_only", |b| b.iter(generated_once));
    g.bench_function("revalidation_hand_written", |b| b.iter(hand_written_once));
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

fn main() {
    if let Some(n) = std::env::var("HARDENED_ARGS_CALLS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        assert_eq!(loop_generated(n), n);
        assert_eq!(loop_hand_written(n), n);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
