//! The heat1d solver (work in progress).
fn main() {}
