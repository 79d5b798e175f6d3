use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, asks = "elicitation tasks")]
    async fn t(&self) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(1))
    }
}

fn main() {}
