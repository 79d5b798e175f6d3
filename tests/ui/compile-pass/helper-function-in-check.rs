//! A free function in `cost` and `check`: its name is not a parameter,
//! its arguments are.
use hardened_mcp::prelude::*;

fn courant(alpha: f64, dt: f64, cells: u32) -> f64 {
    alpha * dt * f64::from(cells) * f64::from(cells)
}

/// Inside `cost`, integer parameters are `f64`.
fn work(cells: f64, steps: f64) -> f64 {
    cells * steps
}

struct S;

#[hardened_tools]
impl S {
    /// A step.
    #[hardened_tool(
        max_cost = 1e5,
        units = "cell-steps",
        cost = work(cells, steps),
        check(courant(alpha, dt, cells) <= 0.5, "unstable time step")
    )]
    async fn step(
        &self,
        #[bounded(min = 1, max = 1000)] cells: u32,
        #[bounded(min = 1, max = 1000)] steps: u64,
        #[bounded(min = 1e-6, max = 1.0)] alpha: f64,
        #[bounded(min = 1e-9, max = 1.0)] dt: f64,
    ) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(courant(alpha, dt, cells)))
    }
}

fn main() {
    S::try_hardened_tool_router().unwrap();
    assert!(S::validate_step(&10, &10, &1.0, &1e-3).is_ok());
    assert!(S::validate_step(&100, &10, &1.0, &1e-3).is_err(), "unstable");
    assert!(S::validate_step(&1000, &1000, &1e-6, &1e-9).is_err(), "cost");
}
