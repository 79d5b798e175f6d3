//! f32 and f64, with exclusive bounds, units and defaults.
use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    /// Floats.
    #[hardened_tool(max_cost = 10, units = "evaluations", cost = 1.0, check(lo < hi, "lo must be below hi"))]
    async fn floats(
        &self,
        #[bounded(exclusive_min = 0.0, exclusive_max = 1.0)] fraction: f32,
        #[bounded(min = -1e3, max = 1e3, units = "K", finite)] lo: f64,
        #[bounded(min = -1e3, max = 1e3, units = "K", default = 100.0)] hi: f64,
    ) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(f64::from(fraction) * (hi - lo)))
    }
}

fn main() {
    S::try_hardened_tool_router().unwrap();
    assert!(S::validate_floats(&0.5, &1.0, &0.0).is_err());
    assert!(S::validate_floats(&0.5, &0.0, &1.0).is_ok());
}
