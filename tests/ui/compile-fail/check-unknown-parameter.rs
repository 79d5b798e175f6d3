use hardened_mcp::prelude::*;

fn courant(alpha: f64, dt: f64) -> f64 {
    alpha * dt
}

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0, check(courant(alpha, step) <= 0.5, "unstable"))]
    async fn t(
        &self,
        #[bounded(min = 0.0, max = 1.0)] alpha: f64,
        #[bounded(min = 0.0, max = 1.0)] dt: f64,
    ) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(alpha * dt))
    }
}

fn main() {}
