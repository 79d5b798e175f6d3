use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(
        &self,
        #[bounded(max_len = 8, pattern = "^\\d+$")] code: String,
        #[bounded(max_len = 8, pattern = "^[a-z]+.$")] word: String,
    ) -> Result<Output<usize>, ToolError> {
        Ok(Output::new(code.len() + word.len()))
    }
}

fn main() {}
