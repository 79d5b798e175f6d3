use hardened_mcp::prelude::*;

#[derive(Clone, Copy, ToolEnum)]
struct Mode;

fn main() {}
