use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(
        &self,
        #[bounded(max_items = 4, same_len_as = weights, min = 0.0, max = 1.0)] xs: Vec<f64>,
        #[bounded(max_items = 4, same_len_as = n, min = 0.0, max = 1.0)] ys: Vec<f64>,
        #[bounded(max_items = 4, items(max_items = 4, same_len_as = m), min = 0.0, max = 1.0)] m: Vec<Vec<f64>>,
        #[bounded(min = 1, max = 4)] n: u32,
    ) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(xs.len() as u32 + ys.len() as u32 + m.len() as u32 + n))
    }
}

#[derive(HardenedArgs)]
struct Pair {
    #[bounded(max_items = 4, same_len_as = "b", min = 0.0, max = 1.0)]
    a: Vec<f64>,
}

fn main() {}
