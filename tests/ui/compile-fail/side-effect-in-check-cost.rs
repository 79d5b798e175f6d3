use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 1e6, units = "cells", cost = { println!("estimating"); n * 2.0 })]
    async fn t(&self, #[bounded(min = 1, max = 1000)] n: u32) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(n))
    }
}

fn main() {}
