//! The heat job: validated specs, the solver's deck and argument vector,
//! its narrowed limits, and the result file it writes. The life cycle
//! (launch, status, wait, logs, cancel, delete, list, re-attach, expiry) is
//! the framework's [`JobService`].

use super::*;

/// One simulation: the arguments of `heat_start` and `heat_solve`; the
/// Courant rule is the struct's own, so every tool that takes it holds it.
#[derive(Debug, Clone, Copy, HardenedArgs)]
#[hardened_args(check(
    self.courant() <= 0.5,
    "unstable time step: diffusivity * dt / dx^2 must not exceed 0.5 (dx = length / cells)"
))]
pub struct Spec {
    /// Grid cells
    #[bounded(min = 8, max = 200_000)]
    pub cells: u32,
    /// Time steps
    #[bounded(min = 1, max = 10_000_000)]
    pub steps: u64,
    /// Rod length
    #[bounded(min = 1e-3, max = 1e3, units = "m")]
    pub length: f64,
    /// Thermal diffusivity
    #[bounded(min = 1e-9, max = 1e3, units = "m^2/s")]
    pub diffusivity: f64,
    /// Time step
    #[bounded(exclusive_min = 0.0, max = 1e3, units = "s")]
    pub dt: f64,
    /// Boundary condition at both ends of the rod.
    #[bounded(default = "dirichlet")]
    pub boundary: Boundary,
    /// Initial temperature profile.
    #[bounded(default = "sine")]
    pub initial: Initial,
    /// Mode number of sine/cosine
    #[bounded(min = 1, max = 64, default = 1)]
    pub mode: u32,
}

impl Spec {
    /// The Courant number of the explicit step.
    pub fn courant(&self) -> f64 {
        courant(self.diffusivity, self.dt, self.length, self.cells)
    }

    pub(super) fn deck(&self) -> Result<Vec<u8>, ToolError> {
        let mut deck = Deck::<KeyValue>::new();
        deck.set("cells", self.cells)?
            .set("steps", self.steps)?
            .set("length", self.length)?
            .set("alpha", self.diffusivity)?
            .set("dt", self.dt)?
            .set("boundary", self.boundary)?
            .set("initial", self.initial)?
            .set("mode", self.mode)?;
        Ok(deck.render()?)
    }
}

/// The `heat1d` solver as a job of the framework.
#[derive(Debug)]
pub(super) struct HeatJob;

impl SolverJob for HeatJob {
    type Params = Spec;
    type Result = SolverResult;
    const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT_DIR, RESULT_FILE);
    const MAX_RESULT_BYTES: usize = MAX_RESULT_BYTES;
    const PROGRESS_UNIT: &'static str = "time steps";

    fn prepare(&self, spec: &Spec) -> Result<Prepared, ToolError> {
        // The heat solver is one small process: its envelope is narrowed
        // well below the server's defaults.
        let limits = Limits {
            wall_time: RUN_WALL_TIME,
            memory: 256 << 20,
            processes: 4,
            disk_bytes: 64 << 20,
            disk_files: 256,
            tmp_size: 1 << 20,
            shm_size: 1 << 20,
            ..Limits::default()
        };
        let request = RunRequest::new(SOLVER_ID)
            .args(["--input", DECK_FILE.as_str(), "--output", "out/result.json"])
            .write_only_in(OUT_DIR)
            .limits(limits);
        Ok(Prepared::new(request).input(DECK_FILE, spec.deck()?))
    }

    fn check_result(&self, r: &SolverResult) -> Result<(), &'static str> {
        let finite =
            r.u.iter()
                .chain(&r.x)
                .chain([&r.t_final, &r.courant])
                .all(|v| v.is_finite());
        let exact_ok = r
            .exact
            .as_ref()
            .is_none_or(|e| e.len() == r.u.len() && e.iter().all(|v| v.is_finite()));
        let alpha_ok = r.alpha.is_none_or(f64::is_finite);
        if r.x.len() != r.u.len() || r.u.is_empty() || !finite || !exact_ok || !alpha_ok {
            return Err("inconsistent or non-finite data");
        }
        Ok(())
    }
}

/// The solver's result file, as the server reads it.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(super) struct SolverResult {
    pub(super) cells: u64,
    pub(super) steps: u64,
    pub(super) t_final: f64,
    pub(super) courant: f64,
    pub(super) x: Vec<f64>,
    pub(super) u: Vec<f64>,
    pub(super) l2_error: Option<f64>,
    pub(super) max_error: Option<f64>,
    /// "dirichlet" or "neumann" (anything else is not drawn).
    #[serde(default)]
    pub(super) boundary: Option<String>,
    /// The diffusivity, m²/s.
    #[serde(default)]
    pub(super) alpha: Option<f64>,
    /// The exact solution at the nodes, where one is known.
    #[serde(default)]
    pub(super) exact: Option<Vec<f64>>,
}

impl SolverResult {
    /// The boundary, as one of the server's own tokens.
    pub(super) fn boundary(&self) -> Option<Boundary> {
        self.boundary.as_deref().and_then(Boundary::from_token)
    }
}

/// A sweep's record ([`SWEEP_FILE`]): its points in order.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SweepRecord {
    pub(super) points: Vec<SweepRecordPoint>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SweepRecordPoint {
    pub(super) run_handle: String,
    pub(super) diffusivity: f64,
}

pub(super) fn summary_stats(u: &[f64]) -> (f64, f64, f64) {
    let min = u.iter().copied().fold(f64::INFINITY, f64::min);
    let max = u.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = u.iter().sum::<f64>() / u.len().max(1) as f64;
    (min, max, mean)
}
