use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 64, units = "characters", cost = name.len())]
    async fn t(&self, #[bounded(max_len = 64, charset = "alnum")] name: String) -> Result<Output<String>, ToolError> {
        Ok(Output::new(name))
    }
}

fn main() {}
