//! What goes over the wire: the argument enums and the output types.

use super::*;

/// Boundary condition at both ends of the rod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToolEnum)]
#[tool_enum(output)]
pub enum Boundary {
    /// Both ends held at zero.
    Dirichlet,
    /// No heat flux through the ends.
    Neumann,
}

/// Initial temperature profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToolEnum)]
#[tool_enum(output)]
pub enum Initial {
    /// sin(mode·π·x/L): exact solution known under Dirichlet ends.
    Sine,
    /// cos(mode·π·x/L): exact solution known under Neumann ends.
    Cosine,
    /// A narrow Gaussian bump in the middle.
    Gaussian,
    /// 1 on the middle half, 0 elsewhere.
    Step,
}

// ---- outputs -------------------------------------------------------------

/// A run that was started.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunStarted {
    /// The opaque handle naming the run in every other tool.
    pub run_handle: String,
    /// The estimated work, in cell-steps.
    pub cost: f64,
    /// The Courant number of the explicit scheme (stable up to 0.5).
    pub courant: f64,
    /// Simulated time at the end of the run, in seconds.
    pub t_final: f64,
    /// The containment the host gives the run (said once, here).
    pub containment: String,
}

/// One point of a sweep.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SweepPoint {
    /// The point's run handle.
    pub run_handle: String,
    /// The diffusivity of this point, in m²/s.
    pub diffusivity: f64,
}

/// A sweep that was started: one run per point, run one after the other.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SweepStarted {
    /// The points, in order.
    pub points: Vec<SweepPoint>,
    /// The estimated work of all points, in cell-steps.
    pub cost: f64,
}

/// A point of the solution profile.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProfilePoint {
    /// Position along the rod, in metres.
    pub x: f64,
    /// Temperature.
    pub u: f64,
}

/// The result of a finished run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunResult {
    /// The run handle.
    pub run_handle: String,
    /// Grid cells.
    pub cells: u64,
    /// Time steps.
    pub steps: u64,
    /// Simulated time at the end, in seconds.
    pub t_final: f64,
    /// The Courant number used.
    pub courant: f64,
    /// The profile at `t_final` at `max_points` evenly spaced nodes (all of
    /// them when there are fewer).
    pub profile: Vec<ProfilePoint>,
    /// Grid nodes in the full solution.
    pub total_points: u64,
    /// Whether `profile` holds fewer points than the solution.
    pub decimated: bool,
    /// Smallest temperature.
    pub min: f64,
    /// Largest temperature.
    pub max: f64,
    /// Mean temperature over the nodes.
    pub mean: f64,
    /// L2 error against the exact solution, where one is known.
    pub l2_error: Option<f64>,
    /// Max-norm error against the exact solution, where one is known.
    pub max_error: Option<f64>,
}

/// A plot that was rendered (the PNG is sent as image content).
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlotInfo {
    /// The run handle.
    pub run_handle: String,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Size of the PNG in bytes.
    pub bytes: u64,
}
