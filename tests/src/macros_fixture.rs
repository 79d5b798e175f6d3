//! A server with one hardened tool per parameter kind and limit, shared by
//! the macro tests (end-to-end, differential, canary, revalidation).

#![allow(clippy::expect_used)] // test support: a missing temp dir is a broken test machine

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use hardened_mcp::prelude::*;
use hardened_mcp::runs::FileName;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::Notify;

/// How the domain ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToolEnum)]
#[tool_enum(output)]
pub enum Boundary {
    /// Wraps around.
    Periodic,
    /// Fixed temperature.
    Fixed,
    /// Free outflow.
    #[tool_enum(rename = "open")]
    Outflow,
}

/// The estimate returned by `heat_estimate`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Estimate {
    /// Cells.
    pub cells: u32,
    /// Steps.
    pub steps: u64,
    /// Domain length in metres.
    pub length: f64,
    /// Courant number.
    pub courant: f64,
    /// Boundary.
    pub boundary: Boundary,
    /// Label.
    pub label: String,
    /// Weights.
    pub weights: Vec<f64>,
    /// Dry run.
    pub dry_run: bool,
    /// Offset.
    pub offset: Option<i32>,
}

/// A number the tool may fail to compute.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Value1 {
    /// The value.
    pub value: f64,
    /// A value that may be absent.
    pub maybe: Option<f64>,
}

/// A result with a secret-like field (must be refused at router build).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Leaky {
    /// Nested struct holding the secret-like field.
    pub session: Session,
}

/// Nested.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Session {
    /// Secret-like.
    pub access_token: String,
}

/// The arguments of `grid`, declared as one struct.
#[derive(Debug, Clone, HardenedArgs)]
pub struct GridArgs {
    /// Points along x.
    #[bounded(min = 2, max = 1000)]
    pub nx: u32,
    /// Points along y.
    #[bounded(min = 2, max = 1000)]
    pub ny: u32,
    /// A label for the grid.
    #[bounded(max_len = 16, charset = "identifier", default = "grid")]
    pub name: String,
}

/// The fixture server.
#[derive(Clone)]
pub struct Solver {
    router: ToolRouter<Self>,
    runs: RunRoot,
    _dir: Arc<RemoveOnDrop>,
    /// Released by tests to let `hold` return.
    pub gate: Arc<Notify>,
}

/// Removes the fixture's run root when the last server clone is dropped.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Default for Solver {
    fn default() -> Self {
        Self::new()
    }
}

impl Solver {
    /// The server with its merged router (hardened tools + one rmcp tool)
    /// and a fresh run root under the system temporary directory.
    pub fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "hm-macros-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let runs = RunRoot::open(&dir).expect("run root under the temp dir");
        Self {
            router: Self::hardened_tool_router() + Self::rmcp_router(),
            runs,
            _dir: Arc::new(RemoveOnDrop(dir)),
            gate: Arc::new(Notify::new()),
        }
    }
}

impl HasRunRoot for Solver {
    fn run_root(&self) -> &RunRoot {
        &self.runs
    }
}

const NOTE: FileName = FileName::fixed("note.txt");

#[tool_router(router = rmcp_router)]
impl Solver {
    /// A plain rmcp tool, merged with the hardened ones.
    #[tool(description = "Answers pong.")]
    fn ping(&self) -> String {
        "pong".to_owned()
    }
}

#[hardened_tools]
impl Solver {
    /// Estimate a 1-D heat-diffusion run.
    #[hardened_tool(
        max_cost = 2e9,
        units = "cell-steps",
        cost = cells as f64 * steps as f64,
        check(length >= courant, "the domain must be at least as long as the courant number"),
        annotations(read_only, idempotent)
    )]
    #[allow(clippy::too_many_arguments)]
    pub async fn heat_estimate(
        &self,
        ctx: ToolContext,
        #[bounded(min = 8, max = 200_000)] cells: u32,
        #[bounded(min = 1, max = 10_000_000)] steps: u64,
        #[bounded(min = 1e-3, max = 1e3, units = "m", description = "Domain length")] length: f64,
        #[bounded(min = 0.0, max = 0.5, finite)] courant: f64,
        boundary: Boundary,
        #[bounded(max_len = 16, charset = "identifier", default = "run")] label: String,
        #[bounded(max_items = 4, min = -1.0, max = 1.0)] weights: Option<Vec<f64>>,
        #[bounded(default = false)] dry_run: bool,
        #[bounded(min = -5, exclusive_max = 5)] offset: Option<i32>,
    ) -> Result<Output<Estimate>, ToolError> {
        let _ = ctx.caller();
        Ok(Output::new(Estimate {
            cells,
            steps,
            length,
            courant,
            boundary,
            label,
            weights: weights.unwrap_or_default(),
            dry_run,
            offset,
        })
        .with_warning("estimate only"))
    }

    /// Every remaining kind: small integers, f32, exclusive bounds, patterns.
    #[hardened_tool(max_cost = 100, units = "items", cost = tags.len() as f64, name = "kinds")]
    #[allow(clippy::too_many_arguments)]
    pub fn all_kinds(
        &self,
        #[bounded(min = 0, max = 255)] small: u8,
        #[bounded(min = -128, max = 127, default = -3)] signed: i8,
        #[bounded(exclusive_min = 0.0, exclusive_max = 1.0)] fraction: f32,
        #[bounded(min = 1, max = 64)] count: usize,
        #[bounded(min_len = 1, max_len = 32, pattern = "^[a-z]+(-[a-z]+)*$")] slug: String,
        #[bounded(max_items = 3, max_len = 8, charset = "alnum")] tags: Vec<String>,
        #[bounded(max_len = 40, charset = "text")] note: Option<String>,
        #[bounded(default = "fixed")] boundary: Boundary,
        #[bounded(max_items = 2)] flags: Option<Vec<bool>>,
    ) -> Result<Output<String>, ToolError> {
        let _ = (small, signed, fraction, count, tags, note, boundary, flags);
        Ok(Output::new(slug))
    }

    /// Returns a non-finite number when asked to.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    pub async fn compute(
        &self,
        #[bounded(min = -1.0, max = 1.0)] x: f64,
    ) -> Result<Output<Value1>, ToolError> {
        let value = if x == 0.0 { f64::NAN } else { 1.0 / x };
        Ok(Output::new(Value1 { value, maybe: None }))
    }

    /// Sleeps longer than its time limit.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, timeout_s = 0.2)]
    pub async fn slow(&self) -> Result<Output<bool>, ToolError> {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(Output::new(true))
    }

    /// Holds its slot until the gate opens (one call per caller).
    #[hardened_tool(
        max_cost = 1,
        units = "calls",
        cost = 1.0,
        concurrency = 1,
        timeout_s = 10
    )]
    pub async fn hold(&self) -> Result<Output<bool>, ToolError> {
        self.gate.notified().await;
        Ok(Output::new(true))
    }

    /// Creates a run and returns its handle.
    #[hardened_tool(max_cost = 1, units = "runs", cost = 1.0)]
    pub async fn run_create(&self, ctx: ToolContext) -> Result<Output<String>, ToolError> {
        let (handle, _dir) = self.runs.create(ctx.caller())?;
        Ok(Output::new(handle.as_str().to_owned()))
    }

    /// Writes a note into a run.
    #[hardened_tool(max_cost = 64, units = "characters", cost = text.chars().count() as f64)]
    pub async fn run_note(
        &self,
        run: RunDir,
        #[bounded(max_len = 64, charset = "printable")] text: String,
    ) -> Result<Output<String>, ToolError> {
        run.write_atomic(&NOTE, text.as_bytes())?;
        let back = run.read_bounded(&NOTE, 64)?;
        Ok(Output::new(String::from_utf8_lossy(&back).into_owned()))
    }

    /// Builds a grid (argument-struct form).
    #[hardened_tool(max_cost = 1e5, units = "points", cost = args.nx as f64 * args.ny as f64)]
    pub async fn grid(
        &self,
        ctx: ToolContext,
        #[args] args: GridArgs,
    ) -> Result<Output<u64>, ToolError> {
        let _ = (ctx.caller(), &args.name);
        Ok(Output::new(u64::from(args.nx) * u64::from(args.ny)))
    }

    /// Fails inside the server.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    pub async fn broken(
        &self,
        #[bounded(max_len = 64)] detail: String,
    ) -> Result<Output<bool>, ToolError> {
        Err(ToolError::internal(format_args!(
            "backend failed: {detail}"
        )))
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for Solver {}

/// A server whose output type has a secret-like field.
pub struct LeakyServer;

#[hardened_tools]
impl LeakyServer {
    /// Returns a session.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    pub async fn session(&self) -> Result<Output<Leaky>, ToolError> {
        Err(ToolError::NotFound)
    }
}
