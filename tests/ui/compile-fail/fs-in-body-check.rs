use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(
        max_cost = 10,
        units = "calls",
        cost = 1.0,
        check(std::fs::metadata("/etc/shadow").is_ok(), "the server is configured")
    )]
    async fn t(&self, #[bounded(min = 1, max = 2)] n: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(n))
    }
}

fn main() {}
