use hardened_mcp::prelude::*;

#[derive(HardenedArgs)]
struct Grid {
    #[bounded(min = 2, max = 1000)]
    #[bounded(min = 2, max = 10)]
    nx: u32,
}

fn main() {}
