//! The example solver server (work in progress).
mod plot;
fn main() {}
