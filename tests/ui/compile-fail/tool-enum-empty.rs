use hardened_mcp::prelude::*;

#[derive(Clone, Copy, ToolEnum)]
enum Mode {}

fn main() {}
