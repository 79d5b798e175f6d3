use hardened_mcp::prelude::*;

#[derive(Clone, Copy, ToolEnum)]
enum Mode {
    Fast,
    Slow(u32),
}

fn main() {}
