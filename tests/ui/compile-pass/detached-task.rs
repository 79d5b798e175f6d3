//! Tools whose whole body is the task: a context is optional.
use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    /// Doubles `n`: a task for a client that takes tasks.
    #[hardened_tool(max_cost = 10, units = "sweeps", cost = n, task(detached))]
    async fn solve(&self, #[bounded(min = 1, max = 10)] n: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(2 * n))
    }

    /// Triples `n`: only as a task.
    #[hardened_tool(max_cost = 10, units = "sweeps", cost = n, task(required, detached))]
    async fn solve_as_task(
        &self,
        ctx: ToolContext,
        #[bounded(min = 1, max = 10)] n: u32,
    ) -> Result<Output<u32>, ToolError> {
        let _ = ctx.caller();
        Ok(Output::new(3 * n))
    }
}

fn main() {
    S::hardened_tool_router_set().into_router().unwrap();
}
