//! The example solver server (work in progress).
fn main() {}
