//! Argument groups: `#[args]` structs beside each other and beside plain
//! parameters, one flat argument object.
use hardened_mcp::prelude::*;

/// A circuit's parts, shared by two tools.
#[derive(HardenedArgs)]
#[hardened_args(check(resistance * capacitance <= 1.0, "the time constant is over 1 s"))]
struct Parts {
    #[bounded(min = 1e-3, max = 1e9)]
    resistance: f64,
    #[bounded(min = 1e-15, max = 1.0)]
    capacitance: f64,
}

/// A sweep.
#[derive(HardenedArgs)]
struct Sweep {
    #[bounded(min = 1, max = 1000)]
    points: u32,
}

struct S;

#[hardened_tools]
impl S {
    /// Parts and a sweep, and a parameter of its own.
    #[hardened_tool(max_cost = 1e3, units = "points", cost = sweep.points as f64)]
    async fn ac(
        &self,
        #[args] parts: Parts,
        #[args] sweep: Sweep,
        #[bounded(min = 0.0, max = 10.0, default = 1.0)] volts: f64,
    ) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(parts.resistance * parts.capacitance * volts * f64::from(sweep.points)))
    }

    /// The same parts alone, beside the context.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn tau(&self, _ctx: ToolContext, #[args] parts: Parts) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(parts.resistance * parts.capacitance))
    }
}

fn main() {
    use serde_json::json;
    let set = S::hardened_tool_router_set();
    let ac = set.get("ac").unwrap();
    let ok = json!({"resistance": 1e3, "capacitance": 1e-6, "points": 10});
    assert!(ac.check_arguments(&ok).is_ok());
    // Every group's keys and the tool's own, and nothing else.
    assert!(ac.check_arguments(&json!({"resistance": 1e3, "capacitance": 1e-6, "points": 10, "volts": 2.0})).is_ok());
    assert!(ac.check_arguments(&json!({"resistance": 1e3, "capacitance": 1e-6, "points": 10, "x": 1})).is_err());
    // Each group's bounds and rules hold beside the others.
    assert!(ac.check_arguments(&json!({"resistance": 1e3, "capacitance": 1e-6})).is_err());
    assert!(ac.check_arguments(&json!({"resistance": 1e3, "capacitance": 1e-6, "points": 0})).is_err());
    assert!(ac.check_arguments(&json!({"resistance": 1e6, "capacitance": 1e-3, "points": 10})).is_err());
    assert!(ac.check_arguments(&json!({"resistance": 1e3, "capacitance": 1e-6, "points": 10, "volts": 11.0})).is_err());
    assert!(set.get("tau").unwrap().check_arguments(&json!({"resistance": 1e3, "capacitance": 1e-6})).is_ok());
}
