use hardened_mcp::prelude::*;

#[derive(HardenedArgs)]
struct Grid {
    #[bounded(min = 2, max = 1000)]
    nx: u32,
    ctx: ToolContext,
}

fn main() {}
