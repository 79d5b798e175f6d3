use hardened_mcp::prelude::*;

#[derive(Clone, Copy, ToolEnum)]
enum Mode {
    Fast,
    #[tool_enum(rename = "fast")]
    Quick,
}

fn main() {}
