use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    fn helper(&self) -> u32 {
        1
    }
}

fn main() {}
