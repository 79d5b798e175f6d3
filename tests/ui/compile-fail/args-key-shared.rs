use hardened_mcp::prelude::*;

#[derive(HardenedArgs)]
struct Grid {
    #[bounded(min = 2, max = 1000)]
    nx: u32,
}

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[args] grid: Grid, #[bounded(min = 1, max = 2)] nx: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(grid.nx + nx))
    }
}

fn main() {}
