use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(max_len = 64)] working_dir: String) -> Result<Output<u32>, ToolError> {
        let _ = working_dir;
        Ok(Output::new(0))
    }
}

fn main() {}
