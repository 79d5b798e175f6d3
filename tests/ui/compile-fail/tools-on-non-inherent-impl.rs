use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl Default for S {
    fn default() -> Self {
        S
    }
}

fn main() {}
