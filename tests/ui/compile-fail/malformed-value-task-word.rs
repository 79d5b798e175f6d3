use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "sweeps", cost = n, task(detached, later))]
    async fn solve(&self, #[bounded(min = 1, max = 10)] n: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(n))
    }
}

fn main() {}
