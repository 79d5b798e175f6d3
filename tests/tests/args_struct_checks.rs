//! Rules declared on an argument struct (`#[hardened_args(check(..))]`)
//! hold for every tool that takes the struct, before its own `check(..)`
//! rules and its body, and for a direct parse: a refusal names the rule's
//! reason, never a value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hardened_mcp::args::HardenedArgs;
use hardened_mcp::prelude::*;
use serde_json::{Value, json};

/// Samples of a curve: as many ordinates as abscissae, increasing abscissae.
#[derive(Debug, HardenedArgs)]
#[hardened_args(
    check(xs.len() == ys.len(), "xs and ys must have the same length"),
    check(self.increasing(), "xs must increase"),
    check(scale > 0.0, "scale must be positive")
)]
struct Curve {
    /// Abscissae.
    #[bounded(max_items = 8, min = -1e3, max = 1e3)]
    xs: Vec<f64>,
    /// Ordinates.
    #[bounded(max_items = 8, min = -1e3, max = 1e3)]
    ys: Vec<f64>,
    /// A factor.
    #[bounded(min = -10.0, max = 10.0)]
    scale: f64,
}

impl Curve {
    fn increasing(&self) -> bool {
        self.xs.windows(2).all(|w| w[0] < w[1])
    }
}

/// Two tools that take the curve; `runs` counts bodies that ran.
#[derive(Clone, Default)]
struct Plotter {
    runs: Arc<AtomicUsize>,
}

#[hardened_tools]
impl Plotter {
    /// The area under the curve.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn area(&self, #[args] c: Curve) -> Result<Output<f64>, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let area =
            c.xs.windows(2)
                .zip(c.ys.windows(2))
                .map(|(x, y)| (x[1] - x[0]) * (y[0] + y[1]) / 2.0)
                .sum::<f64>();
        Ok(Output::new(area * c.scale))
    }

    /// The largest ordinate, with a rule of its own.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0,
                    check(!c.ys.is_empty(), "at least one sample"))]
    async fn peak(&self, #[args] c: Curve) -> Result<Output<f64>, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(Output::new(c.ys.iter().copied().fold(f64::MIN, f64::max)))
    }
}

async fn call(p: &Plotter, tool: &str, args: Value) -> rmcp::model::CallToolResult {
    let set = Plotter::hardened_tool_router_set();
    let Value::Object(args) = args else {
        panic!("object")
    };
    let detached = ToolContext::detached(CallerId::local());
    set.get(tool).unwrap().call(p, Some(args), detached).await
}

fn refusal(r: &rmcp::model::CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    serde_json::to_string(&r.content).unwrap()
}

#[tokio::test]
async fn the_structs_rules_hold_for_every_tool_that_takes_it() {
    let p = Plotter::default();
    let good = json!({"xs": [0.0, 1.0, 2.0], "ys": [1.0, 3.0, 2.0], "scale": 2.0});
    // The positive control: both tools run.
    for tool in ["area", "peak"] {
        let r = call(&p, tool, good.clone()).await;
        assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
    }
    assert_eq!(p.runs.load(Ordering::SeqCst), 2);

    let cases = [
        (
            json!({"xs": [0.0, 1.0], "ys": [1.0, 3.0, 777.5], "scale": 2.0}),
            "xs and ys must have the same length",
        ),
        (
            json!({"xs": [0.0, 9.25, 2.0], "ys": [1.0, 3.0, 2.0], "scale": 2.0}),
            "xs must increase",
        ),
        (
            json!({"xs": [0.0, 1.0], "ys": [1.0, 3.0], "scale": -4.5}),
            "scale must be positive",
        ),
    ];
    for (args, reason) in cases {
        for tool in ["area", "peak"] {
            let text = refusal(&call(&p, tool, args.clone()).await);
            assert!(text.contains(reason), "{tool}: {text}");
            for value in ["777.5", "9.25", "-4.5"] {
                assert!(!text.contains(value), "{tool} echoed {value}: {text}");
            }
        }
    }
    // The tool's own rule still holds after the struct's.
    let empty = json!({"xs": [], "ys": [], "scale": 1.0});
    assert!(refusal(&call(&p, "peak", empty.clone()).await).contains("at least one sample"));
    assert_ne!(call(&p, "area", empty).await.is_error, Some(true));
    assert_eq!(p.runs.load(Ordering::SeqCst), 3, "no refused call ran");
}

#[test]
fn a_direct_parse_and_validate_holds_them_too() {
    let args = |v: Value| match v {
        Value::Object(m) => m,
        _ => panic!("object"),
    };
    let ok = Curve::parse(&args(
        json!({"xs": [0.0, 1.0], "ys": [1.0, 2.0], "scale": 1.0}),
    ))
    .unwrap();
    assert!(ok.validate().is_ok());
    let bad = Curve::parse(&args(
        json!({"xs": [1.0, 0.0], "ys": [1.0, 2.0], "scale": 1.0}),
    ))
    .unwrap();
    let e = bad.validate().unwrap_err();
    assert!(e.to_string().contains("xs must increase"), "{e}");
}
