use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(default = 1)] flag: bool) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(u32::from(flag)))
    }
}

fn main() {}
