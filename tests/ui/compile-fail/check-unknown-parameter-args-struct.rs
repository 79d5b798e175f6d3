use hardened_mcp::prelude::*;

/// Two arrays whose lengths must agree; the rule names a field that is not there.
#[derive(HardenedArgs)]
#[hardened_args(check(xs.len() == y.len(), "xs and ys must be as long"))]
struct Series {
    /// Abscissae.
    #[bounded(max_items = 8, min = 0.0, max = 1.0)]
    xs: Vec<f64>,
    /// Ordinates.
    #[bounded(max_items = 8, min = 0.0, max = 1.0)]
    ys: Vec<f64>,
}

fn main() {}
