use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(
        &self,
        #[bounded(max_items = 4, items(min_items = 3, max_items = 2), min = 0.0, max = 1.0)] m: Vec<Vec<f64>>,
    ) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(m.len() as u32))
    }
}

fn main() {}
