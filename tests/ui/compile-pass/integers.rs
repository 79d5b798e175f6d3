//! Every integer kind, with inclusive and exclusive bounds and a default.
use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    /// All integers.
    #[hardened_tool(max_cost = 1e6, units = "cells", cost = a as f64 * f as f64)]
    #[allow(clippy::too_many_arguments)]
    async fn ints(
        &self,
        #[bounded(min = 0, max = 255)] a: u8,
        #[bounded(min = 0, max = 65_535)] b: u16,
        #[bounded(min = 1, max = 4_000_000_000)] c: u32,
        #[bounded(min = 0, max = 18_446_744_073_709_551_615)] d: u64,
        #[bounded(min = 0, exclusive_max = 1024)] e: usize,
        #[bounded(min = -128, max = 127, default = -1)] f: i8,
        #[bounded(exclusive_min = -10, max = 10)] g: i16,
        #[bounded(min = -2_147_483_648, max = 2_147_483_647)] h: i32,
        #[bounded(min = -9_223_372_036_854_775_808, max = 9_223_372_036_854_775_807)] i: i64,
        #[bounded(min = -1, max = 1, units = "steps")] j: isize,
    ) -> Result<Output<i64>, ToolError> {
        let _ = (b, c, d, e, g, h, j);
        Ok(Output::new(i))
    }
}

fn main() {
    let set = S::hardened_tool_router_set();
    let tool = set.get("ints").unwrap();
    // `f` given: its default (-1) would make the cost negative, which is refused.
    let ok = serde_json::json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 2, "g": 6, "h": 7, "i": 8, "j": 0});
    assert!(tool.check_arguments(&serde_json::json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "g": 6, "h": 7, "i": 8, "j": 0})).is_err());
    assert!(tool.check_arguments(&ok).is_ok());
    S::try_hardened_tool_router().unwrap();
}
