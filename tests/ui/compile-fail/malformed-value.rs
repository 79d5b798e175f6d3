use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0, name = 5)]
    async fn a(&self) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(0))
    }

    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0, check(true))]
    async fn b(&self) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(0))
    }

    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn c(&self, #[bounded(min, max = 2)] n: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(n))
    }

    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0, task = "sometimes")]
    async fn d(&self, ctx: ToolContext) -> Result<Output<u32>, ToolError> {
        let _ = ctx;
        Ok(Output::new(0))
    }
}

fn main() {}
