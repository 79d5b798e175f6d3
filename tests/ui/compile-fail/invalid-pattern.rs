use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(max_len = 8, pattern = "^(unclosed$")] word: String) -> Result<Output<u32>, ToolError> {
        let _ = word;
        Ok(Output::new(0))
    }
}

fn main() {}
