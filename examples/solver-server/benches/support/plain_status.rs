//! The plain rmcp baseline the benchmarks measure against: the status
//! work of `heat_status` as a plain rmcp `#[tool]`, with no framework layer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hardened_mcp::prelude::*;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};

/// The plain server's report: the fields `heat_status` fills for a run
/// that never started.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct PlainReport {
    run_handle: String,
    state: &'static str,
    progress: Option<u64>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    limit: Option<&'static str>,
    wall_seconds: Option<f64>,
    cpu_seconds: Option<f64>,
    since_ms: Option<u64>,
    note: Option<&'static str>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct StatusArgs {
    /// The run handle.
    run: String,
}

/// The same status work as `heat_status`, with no framework layer: resolve
/// the handle for the caller, look up the run's slot, report the state.
#[derive(Clone)]
pub struct PlainStatus {
    runs: RunRoot,
    slots: Arc<Mutex<HashMap<String, ()>>>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl PlainStatus {
    #[tool(description = "Status of a run")]
    async fn status(
        &self,
        Parameters(StatusArgs { run }): Parameters<StatusArgs>,
    ) -> Result<Json<PlainReport>, ErrorData> {
        let dir = self
            .runs
            .resolve(&run, &CallerId::local())
            .map_err(|_| ErrorData::invalid_params("unknown run", None))?;
        let known = self
            .slots
            .lock()
            .unwrap()
            .contains_key(dir.handle().as_str());
        Ok(Json(PlainReport {
            run_handle: dir.handle().to_string(),
            state: if known { "running" } else { "interrupted" },
            progress: None,
            exit_code: None,
            signal: None,
            limit: None,
            wall_seconds: None,
            cpu_seconds: None,
            since_ms: None,
            note: None,
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for PlainStatus {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl PlainStatus {
    /// The plain server over `runs`.
    pub fn new(runs: RunRoot) -> Self {
        Self {
            runs,
            slots: Arc::default(),
            tool_router: Self::tool_router(),
        }
    }
}
