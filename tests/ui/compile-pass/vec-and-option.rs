//! Bounded Vecs (item bounds apply to each item), Vecs of Vecs, and Options.
use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    /// Vectors and options.
    #[hardened_tool(max_cost = 64, units = "points", cost = xs.len() as f64)]
    async fn vecs(
        &self,
        #[bounded(max_items = 64, min = -1.0, max = 1.0)] xs: Vec<f64>,
        #[bounded(max_items = 4, max_len = 8, charset = "alnum")] names: Vec<String>,
        #[bounded(max_items = 4, min = 0, max = 9)] ids: Option<Vec<u8>>,
        #[bounded(min = 1, max = 5)] order: Option<u32>,
        #[bounded(min = 1, max = 5, default = 2)] degree: Option<u32>,
    ) -> Result<Output<usize>, ToolError> {
        let _ = (names, ids, order);
        Ok(Output::new(xs.len() + degree.unwrap_or(0) as usize))
    }

    /// Arrays of arrays: a floor and a ceiling on both levels.
    #[hardened_tool(max_cost = 64, units = "cells", cost = (m.len() * 8) as f64)]
    async fn matrix(
        &self,
        #[bounded(min_items = 1, max_items = 8, items(min_items = 1, max_items = 8),
                  rectangular, min = -1.0, max = 1.0, finite)]
        m: Vec<Vec<f64>>,
        #[bounded(max_items = 2, items(max_items = 3), min = 0, max = 9)] w: Option<Vec<Vec<u8>>>,
        #[bounded(min_items = 1, max_items = 4, max_len = 8, charset = "alnum")] tags: Vec<String>,
    ) -> Result<Output<usize>, ToolError> {
        let _ = (w, tags);
        Ok(Output::new(m.len()))
    }
}

fn main() {
    S::try_hardened_tool_router().unwrap();
}
