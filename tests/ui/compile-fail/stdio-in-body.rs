use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(min = 1, max = 2)] n: u32) -> Result<Output<String>, ToolError> {
        println!("step {n} of 2");
        Ok(Output::new(format!("{n}")))
    }
}

fn main() {}
