use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(
        &self,
        #[bounded(max_len = 16, charset = "identifier", header = "Region Name")] region: String,
    ) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(region.len() as u32))
    }
}

fn main() {}
