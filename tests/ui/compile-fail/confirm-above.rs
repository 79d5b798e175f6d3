use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 100, units = "cell-steps", cost = cells as f64, confirm_above = 100)]
    async fn at_the_ceiling(&self, #[bounded(min = 1, max = 100)] cells: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(cells))
    }

    #[hardened_tool(max_cost = 100, units = "cell-steps", cost = cells as f64, confirm_above = 10, confirm)]
    async fn both(&self, #[bounded(min = 1, max = 100)] cells: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(cells))
    }
}

fn main() {}
