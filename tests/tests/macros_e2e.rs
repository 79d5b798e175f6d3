//! The generated tools over a real MCP session: an rmcp client and server
//! connected by an in-memory duplex pipe. Lists the tools, checks the
//! advertised schemas, makes good calls and one call per rejection class.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hardened_mcp_tests::macros_fixture::{LeakyServer, Solver};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

async fn connect(server: Solver) -> RunningService<RoleClient, ()> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(a).await.expect("server starts");
        let _ = running.waiting().await;
    });
    ().serve(b).await.expect("client connects")
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool(CallToolRequestParams::new(name).with_arguments(args)),
    )
    .await
    .expect("no hang")
    .expect("a tool result")
}

fn text(r: &CallToolResult) -> String {
    r.content[0].as_text().expect("text content").text.clone()
}

fn error_of(r: &CallToolResult) -> Value {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    r.structured_content.as_ref().expect("structured error")["error"].clone()
}

fn good() -> Value {
    json!({"cells": 100, "steps": 1000, "length": 2.5, "courant": 0.25, "boundary": "open"})
}

fn with(key: &str, v: Value) -> Value {
    let mut g = good();
    g[key] = v;
    g
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|t| t.name == name).expect("listed")
}

#[tokio::test]
async fn lists_schemas_as_declared() {
    let client = connect(Solver::new()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    for n in [
        "heat_estimate",
        "kinds",
        "compute",
        "slow",
        "hold",
        "broken",
        "ping",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let heat = tool(&tools, "heat_estimate");
    let s = Value::Object((*heat.input_schema).clone());
    assert_eq!(s["type"], "object");
    assert_eq!(s["additionalProperties"], false);
    assert_eq!(
        s["required"],
        json!(["cells", "steps", "length", "courant", "boundary"])
    );
    assert_eq!(
        s["properties"]["cells"],
        json!({"type": "integer", "minimum": 8, "maximum": 200000})
    );
    assert_eq!(
        s["properties"]["length"]["description"],
        "Domain length (units: m)"
    );
    assert_eq!(s["properties"]["length"]["x-units"], "m");
    assert_eq!(
        s["properties"]["boundary"]["enum"],
        json!(["periodic", "fixed", "open"])
    );
    assert_eq!(s["properties"]["label"]["default"], "run");
    assert_eq!(s["properties"]["label"]["maxLength"], 16);
    assert_eq!(s["properties"]["weights"]["maxItems"], 4);
    assert_eq!(s["properties"]["weights"]["items"]["maximum"], 1.0);
    assert_eq!(s["properties"]["offset"]["exclusiveMaximum"], 5);
    assert_eq!(
        s["x-cost-ceiling"],
        json!({"max": 2e9, "units": "cell-steps"})
    );
    let description = heat.description.as_deref().unwrap();
    assert!(
        description.starts_with("Estimate a 1-D heat-diffusion run."),
        "{description}"
    );
    assert!(
        description.contains("2000000000 cell-steps"),
        "{description}"
    );
    let annotations = heat.annotations.as_ref().unwrap();
    assert_eq!(annotations.read_only_hint, Some(true));
    assert_eq!(annotations.idempotent_hint, Some(true));
    let out = Value::Object((*heat.output_schema.clone().unwrap()).clone());
    assert_eq!(
        out["oneOf"],
        json!([{"required": ["data", "warnings", "artifacts"]}, {"required": ["error"]}]),
        "a result is the success envelope or the error object"
    );
    assert_eq!(out["additionalProperties"], false, "the envelope is closed");
    let kinds = Value::Object((*tool(&tools, "kinds").input_schema).clone());
    assert_eq!(kinds["properties"]["fraction"]["exclusiveMinimum"], 0.0);
    assert_eq!(kinds["properties"]["slug"]["pattern"], "^[a-z]+(-[a-z]+)*$");
    assert_eq!(
        kinds["properties"]["tags"]["items"]["pattern"],
        "^[A-Za-z0-9]*$"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn good_calls_succeed_with_the_envelope() {
    let client = connect(Solver::new()).await;
    let r = call(&client, "heat_estimate", good()).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let sc = r.structured_content.clone().unwrap();
    assert_eq!(sc["data"]["cells"], 100);
    // The output carries the caller's token (`#[tool_enum(output)]`: one
    // declaration of the tokens), not a second spelling from serde.
    assert_eq!(sc["data"]["boundary"], "open");
    assert_eq!(sc["data"]["label"], "run", "default applied");
    assert_eq!(sc["data"]["dry_run"], false);
    assert_eq!(sc["data"]["offset"], Value::Null);
    assert_eq!(sc["warnings"], json!(["estimate only"]));
    assert_eq!(serde_json::from_str::<Value>(&text(&r)).unwrap(), sc);

    // Integral floats are integers, as the schema promises.
    let r = call(&client, "heat_estimate", with("cells", json!(100.0))).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");

    let r = call(
        &client,
        "kinds",
        json!({"small": 255, "fraction": 0.5, "count": 1, "slug": "a-b",
        "tags": ["x1", "Y2"], "note": "héllo", "flags": [true]}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(r.structured_content.unwrap()["data"], "a-b");

    let r = call(&client, "ping", json!({})).await;
    assert_eq!(text(&r), "pong");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_bad_class_is_rejected_with_a_fixed_text() {
    let client = connect(Solver::new()).await;
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            with("zzz_unknown", json!(1)),
            "unknown_argument",
            "invalid arguments: unknown argument; the arguments are: cells, steps, length, courant, boundary, label, weights, dry_run, offset",
        ),
        (
            {
                let mut g = good();
                g.as_object_mut().unwrap().remove("cells");
                g
            },
            "missing_argument",
            "invalid arguments: missing required argument `cells`",
        ),
        (
            with("cells", json!("100")),
            "wrong_type",
            "invalid arguments: `cells` must be of type integer",
        ),
        (
            with("cells", json!(true)),
            "wrong_type",
            "invalid arguments: `cells` must be of type integer",
        ),
        (
            with("cells", json!(100.5)),
            "wrong_type",
            "invalid arguments: `cells` must be of type integer",
        ),
        (
            with("cells", json!(null)),
            "wrong_type",
            "invalid arguments: `cells` must be of type integer",
        ),
        (
            with("length", json!(false)),
            "wrong_type",
            "invalid arguments: `length` must be of type number",
        ),
        (
            with("cells", json!(7)),
            "below_minimum",
            "invalid arguments: `cells` is below its minimum 8",
        ),
        (
            with("cells", json!(1e300)),
            "above_maximum",
            "invalid arguments: `cells` is above its maximum 200000",
        ),
        (
            with("courant", json!(0.6)),
            "above_maximum",
            "invalid arguments: `courant` is above its maximum 0.5",
        ),
        (
            with("offset", json!(5)),
            "not_below_exclusive_maximum",
            "invalid arguments: `offset` must be less than 5",
        ),
        (
            with("label", json!("x".repeat(17))),
            "too_long",
            "invalid arguments: `label` is longer than 16 characters",
        ),
        (
            with("label", json!("a b")),
            "charset_mismatch",
            "invalid arguments: `label` has characters outside the identifier set",
        ),
        (
            with("weights", json!([0, 0, 0, 0, 0])),
            "too_many_items",
            "invalid arguments: `weights` has more than 4 items",
        ),
        (
            with("weights", json!([2.0])),
            "above_maximum",
            "invalid arguments: `weights` is above its maximum 1",
        ),
        (
            with("boundary", json!("reflect")),
            "not_allowed",
            "invalid arguments: `boundary` must be one of: periodic, fixed, open",
        ),
        (
            with("length", json!(0.1)),
            "check_failed",
            "invalid arguments: the domain must be at least as long as the courant number",
        ),
    ];
    for (args, code, message) in cases {
        let r = call(&client, "heat_estimate", args.clone()).await;
        let e = error_of(&r);
        assert_eq!(e["kind"], "invalid_arguments", "{args}");
        assert_eq!(e["code"], code, "{args}");
        assert_eq!(text(&r), message, "{args}");
        assert_eq!(e["message"], message);
        match code {
            // The declared names, never the unknown key.
            "unknown_argument" => {
                assert_eq!(e["bound"][0], "cells", "{e}");
                assert!(!e.to_string().contains("zzz_unknown"), "{e}");
            }
            // The rule's reason in a field of its own.
            "check_failed" => {
                assert_eq!(
                    e["reason"],
                    message.trim_start_matches("invalid arguments: ")
                );
                assert!(e.get("bound").is_none(), "{e}");
            }
            _ => {}
        }
    }
    let r = call(
        &client,
        "kinds",
        json!({"small": 1, "fraction": 1.0, "count": 1, "slug": "a", "tags": []}),
    )
    .await;
    assert_eq!(error_of(&r)["code"], "not_below_exclusive_maximum");
    let r = call(
        &client,
        "kinds",
        json!({"small": 1, "fraction": 0.5, "count": 1, "slug": "A", "tags": []}),
    )
    .await;
    assert_eq!(error_of(&r)["code"], "pattern_mismatch");
    assert_eq!(
        text(&r),
        "invalid arguments: `slug` does not match the pattern ^[a-z]+(-[a-z]+)*$"
    );

    // The cost ceiling names ceiling and units.
    let r = call(
        &client,
        "heat_estimate",
        with("steps", json!(10_000_000))
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.insert("cells".into(), json!(200_000));
                Value::Object(o)
            })
            .unwrap(),
    )
    .await;
    let e = error_of(&r);
    assert_eq!(e["kind"], "cost_exceeded");
    assert_eq!(
        text(&r),
        "refused: the estimated cost exceeds the ceiling of 2000000000 cell-steps; reduce the problem size"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn limits_and_failures_have_fixed_texts() {
    let server = Solver::new();
    let gate = server.gate.clone();
    let client = connect(server).await;

    let r = call(&client, "slow", json!({})).await;
    assert_eq!(error_of(&r)["kind"], "timeout");

    // A second concurrent call of the same caller is refused while the first holds its slot.
    let first = client.call_tool(CallToolRequestParams::new("hold"));
    let second = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let r = call(&client, "hold", json!({})).await;
        gate.notify_one();
        r
    };
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.unwrap().is_error, Some(false));
    assert_eq!(error_of(&second)["kind"], "busy");

    // A NaN in the output is refused, not sent as null.
    let r = call(&client, "compute", json!({"x": 0.0})).await;
    let e = error_of(&r);
    assert_eq!(e["kind"], "internal");
    assert!(text(&r).starts_with("internal error (reference ref-"));
    let r = call(&client, "compute", json!({"x": 0.5})).await;
    assert_eq!(r.structured_content.unwrap()["data"]["value"], 2.0);

    let r = call(&client, "broken", json!({"detail": "CANARY-detail"})).await;
    assert_eq!(error_of(&r)["kind"], "internal");
    assert!(!text(&r).contains("CANARY"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn run_handles_are_resolved_before_the_body() {
    let client = connect(Solver::new()).await;
    let tools = client.list_all_tools().await.unwrap();
    let s = Value::Object((*tool(&tools, "run_note").input_schema).clone());
    assert_eq!(
        s["properties"]["run"]["pattern"],
        hardened_mcp::runs::RunHandle::pattern()
    );
    assert_eq!(s["required"], json!(["run", "text"]));

    let r = call(&client, "run_create", json!({})).await;
    let handle = r.structured_content.unwrap()["data"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = call(&client, "run_note", json!({"run": handle, "text": "hello"})).await;
    assert_eq!(r.structured_content.unwrap()["data"], "hello");

    // Path syntax never reaches the run root: the pattern refuses it.
    let r = call(
        &client,
        "run_note",
        json!({"run": "../../etc", "text": "x"}),
    )
    .await;
    assert_eq!(error_of(&r)["code"], "pattern_mismatch");
    assert!(!text(&r).contains("etc"));
    // A well-formed handle that was never issued: the fixed unknown-run answer.
    let forged = format!("{}_{}", handle.split('_').next().unwrap(), "A".repeat(22));
    let r = call(&client, "run_note", json!({"run": forged, "text": "x"})).await;
    assert_eq!(error_of(&r)["kind"], "unknown_run");
    assert_eq!(text(&r), "unknown run handle");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn argument_structs_work_like_flat_parameters() {
    let client = connect(Solver::new()).await;
    let tools = client.list_all_tools().await.unwrap();
    let s = Value::Object((*tool(&tools, "grid").input_schema).clone());
    assert_eq!(s["required"], json!(["nx", "ny"]));
    assert_eq!(s["additionalProperties"], false);
    assert_eq!(s["properties"]["nx"]["description"], "Points along x.");
    assert_eq!(s["properties"]["name"]["default"], "grid");
    let r = call(&client, "grid", json!({"nx": 10, "ny": 20})).await;
    assert_eq!(r.structured_content.unwrap()["data"], 200);
    let r = call(&client, "grid", json!({"nx": 1, "ny": 20})).await;
    assert_eq!(error_of(&r)["code"], "below_minimum");
    let r = call(&client, "grid", json!({"nx": 10, "ny": 20, "nz": 3})).await;
    assert_eq!(error_of(&r)["code"], "unknown_argument");
    let r = call(&client, "grid", json!({"nx": 1000, "ny": 1000})).await;
    assert_eq!(error_of(&r)["kind"], "cost_exceeded");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn argument_structs_are_revalidated_on_direct_calls() {
    use hardened_mcp::args::HardenedArgs;
    use hardened_mcp_tests::macros_fixture::GridArgs;
    let bad = GridArgs {
        nx: 1,
        ny: 5,
        name: "g".into(),
    };
    assert!(bad.validate().is_err());
    let s = Solver::new();
    let ctx = hardened_mcp::ToolContext::detached(hardened_mcp::CallerId::local());
    assert!(s.grid(ctx.clone(), bad).await.is_err());
    let big = GridArgs {
        nx: 1000,
        ny: 1000,
        name: "g".into(),
    };
    assert!(matches!(
        s.grid(ctx, big).await,
        Err(hardened_mcp::ToolError::CostExceeded { .. })
    ));
}

#[test]
fn secret_like_output_fields_fail_at_router_build() {
    let e = LeakyServer::try_hardened_tool_router().unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("tool `session`"), "{msg}");
    assert!(msg.contains("access_token"), "{msg}");
    let panic = std::panic::catch_unwind(LeakyServer::hardened_tool_router).unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(text.contains("access_token"), "{text}");
}

mod startup_faults {
    use hardened_mcp::prelude::*;
    use hardened_mcp_tests::macros_fixture::Boundary;

    pub struct BadSpecs;

    #[hardened_tools]
    impl BadSpecs {
        /// A tool whose declarations cannot be served.
        #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
        pub async fn bad(
            &self,
            #[bounded(default = "sideways")] boundary: Boundary,
            #[bounded(max_len = 8, charset = "alnum", default = "a b")] label: String,
        ) -> Result<Output<bool>, ToolError> {
            let _ = (boundary, label);
            Ok(Output::new(true))
        }
    }

    #[test]
    fn invalid_defaults_fail_at_router_build() {
        let e = BadSpecs::try_hardened_tool_router().unwrap_err();
        let faults = e.faults().join("\n");
        assert!(
            faults.contains("argument `boundary`: its default violates its own bounds"),
            "{faults}"
        );
        assert!(
            faults.contains("argument `label`: its default violates its own bounds"),
            "{faults}"
        );
    }
}

/// `cost` over integer parameters at the ends of their types: the estimate
/// is computed in `f64` (integer parameters are seen as `f64` inside `cost`)
/// and saturates above the ceiling instead of wrapping to a small number.
mod integer_costs {
    use hardened_mcp::ToolError;
    use hardened_mcp::prelude::*;
    use serde_json::{Value, json};

    pub struct Big;

    #[hardened_tools]
    impl Big {
        /// Work over the full ranges of `u32` and `u64`.
        #[hardened_tool(
            max_cost = 1e12,
            units = "cell-steps",
            cost = cells * steps * passes.unwrap_or(1.0),
            check((cells as u64) < steps || steps == 0, "at least as many steps as cells")
        )]
        pub async fn big(
            &self,
            #[bounded(min = 0, max = 4_294_967_295)] cells: u32,
            #[bounded(min = 0, max = 18_446_744_073_709_551_615)] steps: u64,
            #[bounded(min = 1, max = 4)] passes: Option<u8>,
        ) -> Result<Output<u64>, ToolError> {
            Ok(Output::new(steps.saturating_mul(u64::from(cells))))
        }
    }

    fn refused_for_cost(r: Result<(), ToolError>) -> bool {
        matches!(r, Err(ToolError::CostExceeded { .. }))
    }

    #[test]
    fn integer_costs_saturate_above_the_ceiling() {
        // At the maxima: ~7.9e28 in f64.
        assert!(refused_for_cost(Big::validate_big(
            &u32::MAX,
            &u64::MAX,
            &None
        )));
        // Products that wrap to exactly 0 in u64 arithmetic (2 * 2^63 and
        // 2^16 * 2^48) are refused, not let through as free.
        assert!(refused_for_cost(Big::validate_big(&2, &(1 << 63), &None)));
        assert!(refused_for_cost(Big::validate_big(
            &(1 << 16),
            &(1 << 48),
            &Some(1)
        )));
        // Optional integers are f64 too: 1e6 * 2e6 * 4 > 1e12.
        assert!(refused_for_cost(Big::validate_big(
            &1_000_000,
            &2_000_000,
            &Some(4)
        )));
        assert_eq!(Big::validate_big(&1_000, &1_000_000, &Some(4)), Ok(()));
        // `check` keeps the native integer types.
        assert!(matches!(
            Big::validate_big(&10, &5, &None),
            Err(ToolError::InvalidArguments(_))
        ));
        // The same through the strict parser, from JSON.
        let set = Big::hardened_tool_router_set();
        let tool = set.get("big").unwrap();
        let max = json!({"cells": u32::MAX, "steps": u64::MAX});
        assert!(refused_for_cost(tool.check_arguments(&max)));
        let ok = json!({"cells": 10, "steps": 1000, "passes": 2});
        assert_eq!(tool.check_arguments(&ok), Ok(()));
    }

    #[test]
    fn u64_bounds_are_json_numbers_in_a_valid_schema() {
        let set = Big::hardened_tool_router_set();
        let tool = set.get("big").unwrap().tool();
        let schema = Value::Object((*tool.input_schema).clone());
        let steps = &schema["properties"]["steps"];
        assert!(steps["maximum"].is_number(), "{steps}");
        assert_eq!(steps["maximum"].as_u64(), Some(u64::MAX));
        assert_eq!(schema["properties"]["cells"]["maximum"], u32::MAX);
        if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
            panic!("not a valid 2020-12 schema: {e}\n{schema}");
        }
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(&json!({"cells": 1, "steps": u64::MAX})));
        assert!(!v.is_valid(&json!({"cells": 1, "steps": -1})));
        assert!(!v.is_valid(&json!({"cells": 1, "steps": 1.9e19})));
    }
}

/// `header` puts `x-mcp-header` on the property, and nowhere else.
#[test]
fn a_header_argument_is_annotated_in_the_schema() {
    use hardened_mcp::prelude::*;
    struct H;
    #[hardened_tools]
    impl H {
        /// Echoes a region mirrored in a header.
        #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
        async fn regional(
            &self,
            #[bounded(max_len = 16, charset = "identifier", header = "Region")] region: String,
            #[bounded(min = 0, max = 9)] level: u8,
        ) -> Result<Output<u8>, ToolError> {
            Ok(Output::new(level + region.len() as u8))
        }
    }
    let router = H::hardened_tool_router();
    let tool = router.get("regional").expect("listed");
    let props = &tool.input_schema["properties"];
    assert_eq!(props["region"]["x-mcp-header"], "Region");
    assert!(props["level"].get("x-mcp-header").is_none());
}
