use hardened_mcp::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

static CALLS: AtomicU64 = AtomicU64::new(0);

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(
        max_cost = 10,
        units = "calls",
        cost = 1.0,
        check(CALLS.fetch_add(1, Ordering::Relaxed) < 1000, "at most 1000 calls")
    )]
    async fn t(&self, #[bounded(min = 1, max = 2)] n: u32) -> Result<Output<u32>, ToolError> {
        let _ = CALLS.load(Ordering::Relaxed);
        Ok(Output::new(n))
    }
}

fn main() {}
