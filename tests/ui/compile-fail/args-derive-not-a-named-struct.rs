use hardened_mcp::prelude::*;

#[derive(HardenedArgs)]
struct Grid(u32);

fn main() {}
