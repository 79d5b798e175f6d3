use hardened_mcp::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

static CALLS: AtomicU64 = AtomicU64::new(0);

/// A struct whose own rule counts its validations.
#[derive(HardenedArgs)]
#[hardened_args(check(CALLS.fetch_add(1, Ordering::Relaxed) < 1000, "at most 1000 calls"))]
struct Grid {
    /// Cells.
    #[bounded(min = 1, max = 10)]
    n: u32,
}

fn main() {
    let _ = CALLS.load(Ordering::Relaxed);
}
