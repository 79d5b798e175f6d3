use hardened_mcp::prelude::*;

#[derive(Clone, Copy, ToolEnum)]
enum Mode<const N: usize> {
    Fast,
}

fn main() {}
