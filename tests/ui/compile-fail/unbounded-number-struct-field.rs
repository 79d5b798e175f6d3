use hardened_mcp::prelude::*;

#[derive(HardenedArgs)]
struct Grid {
    nx: u32,
    label: String,
}

fn main() {}
