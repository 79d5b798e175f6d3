use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0, name = "two words")]
    async fn t(&self) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(0))
    }
}

fn main() {}
