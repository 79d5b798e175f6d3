//! Canary tests: every rejection path fed canary text in values and key
//! names; no response (text or structured) contains it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::{CallerId, ToolContext};
use hardened_mcp_tests::macros_fixture::Solver;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

const CANARY: &str = "CANARYzq81";

fn good() -> Value {
    json!({"cells": 100, "steps": 1000, "length": 2.5, "courant": 0.25, "boundary": "open"})
}

fn with(base: Value, key: &str, v: Value) -> Value {
    let mut g = base;
    g[key] = v;
    g
}

async fn call(server: &Solver, tool: &str, args: Value) -> CallToolResult {
    let set = Solver::hardened_tool_router_set();
    let t = set.get(tool).unwrap();
    t.call(
        server,
        args.as_object().cloned(),
        ToolContext::detached(CallerId::local()),
    )
    .await
}

fn assert_clean(r: &CallToolResult, case: &str) {
    assert_eq!(r.is_error, Some(true), "{case}: {r:?}");
    let all = serde_json::to_string(r).unwrap();
    assert!(!all.contains(CANARY), "{case}: canary leaked: {all}");
    assert!(!all.contains("987654321"), "{case}: value leaked: {all}");
}

#[tokio::test]
async fn no_rejection_echoes_the_caller() {
    let server = Solver::new();
    let c = || json!(CANARY);
    let long = json!(CANARY.repeat(10));
    let heat_cases = vec![
        ("unknown key", with(good(), CANARY, json!(1))),
        (
            "unknown key with canary value",
            with(good(), &format!("x{CANARY}"), c()),
        ),
        ("string for integer", with(good(), "cells", c())),
        ("numeric string", with(good(), "cells", json!("987654321"))),
        ("out of range", with(good(), "cells", json!(987654321))),
        ("fractional", with(good(), "cells", json!(98765.4321))),
        ("string for float", with(good(), "length", c())),
        (
            "object for float",
            with(good(), "length", json!({CANARY: CANARY})),
        ),
        ("array for enum", with(good(), "boundary", json!([CANARY]))),
        ("bad token", with(good(), "boundary", c())),
        (
            "charset",
            with(good(), "label", json!(format!("{CANARY} !"))),
        ),
        ("too long", with(good(), "label", long.clone())),
        ("item type", with(good(), "weights", json!([CANARY]))),
        (
            "too many items",
            with(
                good(),
                "weights",
                json!([CANARY, CANARY, CANARY, CANARY, CANARY]),
            ),
        ),
        ("bool type", with(good(), "dry_run", c())),
        ("null", with(good(), "offset", Value::Null)),
        ("check rule", with(good(), "length", json!(0.1))),
        (
            "cost",
            with(
                with(good(), "cells", json!(200_000)),
                "steps",
                json!(10_000_000),
            ),
        ),
        ("missing", json!({ CANARY: 1 })),
    ];
    for (case, args) in heat_cases {
        let r = call(&server, "heat_estimate", args).await;
        assert_clean(&r, case);
    }
    let kinds = json!({"small": 1, "fraction": 0.5, "count": 1, "slug": "a", "tags": []});
    for (case, args) in [
        ("pattern", with(kinds.clone(), "slug", c())),
        (
            "alnum items",
            with(kinds.clone(), "tags", json!([format!("{CANARY}-")])),
        ),
        (
            "item too long",
            with(kinds.clone(), "tags", json!([CANARY])),
        ),
        (
            "text charset",
            with(kinds.clone(), "note", json!(format!("{CANARY}\u{1b}[31m"))),
        ),
        (
            "f32 range",
            with(kinds.clone(), "fraction", json!(987654321.0)),
        ),
    ] {
        let r = call(&server, "kinds", args).await;
        assert_clean(&r, case);
    }
    for (case, args) in [
        (
            "malformed handle",
            json!({"run": format!("../{CANARY}"), "text": "x"}),
        ),
        (
            "unknown handle",
            json!({"run": format!("run_{CANARY}{}", "A".repeat(20)), "text": "x"}),
        ),
        (
            "printable charset",
            json!({"run": "x", "text": format!("{CANARY}\n")}),
        ),
    ] {
        let r = call(&server, "run_note", args).await;
        assert_clean(&r, case);
    }
    let r = call(&server, "broken", json!({"detail": CANARY})).await;
    assert_clean(&r, "internal error detail");

    // Non-object arguments (through the check entry).
    let set = Solver::hardened_tool_router_set();
    let e = set
        .get("heat_estimate")
        .unwrap()
        .check_arguments(&json!(CANARY))
        .unwrap_err();
    assert!(!e.to_string().contains(CANARY));
    assert!(!e.to_json().to_string().contains(CANARY));
}
