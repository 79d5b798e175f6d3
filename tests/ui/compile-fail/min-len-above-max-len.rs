use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(min_len = 5, max_len = 2)] s: String) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(s.len() as u32))
    }
}

fn main() {}
