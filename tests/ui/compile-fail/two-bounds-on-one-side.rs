use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(min = 0, exclusive_min = 0, max = 5)] n: u32,
        #[bounded(min = 0, max = 5, exclusive_max = 6)] m: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(n + m))
    }
}

fn main() {}
