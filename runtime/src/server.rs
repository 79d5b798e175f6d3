//! A complete MCP server without hand-written glue: the service, its tool
//! router and who it is, as one [`ServerHandler`].
//!
//! ```
//! use hardened_mcp::prelude::*;
//!
//! struct Beam;
//!
//! #[hardened_tools]
//! impl Beam {
//!     /// Mid-span deflection of a simply supported beam under a point load.
//!     #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
//!     async fn deflection(
//!         &self,
//!         #[bounded(min = 0.0, max = 1e7, units = "N")] load: f64,
//!     ) -> Result<Output<f64>, ToolError> {
//!         Ok(Output::new(load * 1e-9))
//!     }
//! }
//!
//! let server = Server::new("beam", "1.0.0", Beam, Beam::hardened_tool_router())
//!     .instructions("Beam formulas; loads in newtons.");
//! assert_eq!(server.tools().list_all().len(), 1);
//! // Serve it with `hardened_mcp::serve_stdio(server).await` in `main`.
//! ```
//!
//! [`Server`] merges with rmcp's own routers: pass
//! `Self::hardened_tool_router() + Self::tool_router()` as the tools. A
//! server that needs more of MCP than tools (prompts, resources) implements
//! [`ServerHandler`] itself with `#[tool_handler]` (see docs/guide.md).
//!
//! A call naming a tool the server does not have is answered with the
//! fixed `unknown_tool` error result ([`ToolError::UnknownTool`]): the
//! model reads that it should look at `tools/list`, and nothing of the name
//! it sent comes back.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::error::ToolError;

/// A service, its tools and its identity, served as one MCP server.
///
/// Cloning is cheap (shared pointers): the HTTP transport makes one handler
/// per session from it.
pub struct Server<S> {
    service: Arc<S>,
    tools: Arc<ToolRouter<S>>,
    info: Arc<ServerConfig>,
}

impl<S> Clone for Server<S> {
    fn clone(&self) -> Self {
        Self {
            service: Arc::clone(&self.service),
            tools: Arc::clone(&self.tools),
            info: Arc::clone(&self.info),
        }
    }
}

impl<S> std::fmt::Debug for Server<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.info.server_info.name)
            .field("version", &self.info.server_info.version)
            .finish_non_exhaustive()
    }
}

impl<S: Send + Sync + 'static> Server<S> {
    /// A server named `name` at `version` (what `initialize` reports; pass
    /// `env!("CARGO_PKG_VERSION")` for your crate's), serving `tools` on
    /// `service`. The tools capability is declared.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        service: S,
        tools: ToolRouter<S>,
    ) -> Self {
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(name, version));
        Self {
            service: Arc::new(service),
            tools: Arc::new(tools),
            info: Arc::new(info),
        }
    }

    /// What the model is told about the server as a whole on `initialize`.
    /// Server text: never put caller or solver text here.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.info).instructions = Some(text.into());
        self
    }

    /// A human-readable title for client user interfaces.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.info).server_info.title = Some(title.into());
        self
    }

    /// The service the tools run on.
    pub fn service(&self) -> &S {
        &self.service
    }

    /// The tool router served.
    pub fn tools(&self) -> &ToolRouter<S> {
        &self.tools
    }

    /// What `initialize` answers.
    pub fn info(&self) -> &ServerConfig {
        &self.info
    }
}

impl<S: Send + Sync + 'static> ServerHandler for Server<S> {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.tools.get(&request.name).is_none() {
            tracing::debug!("call of a tool this server does not have: refused");
            return Ok(CallToolResponse::Complete(
                ToolError::UnknownTool.into_call_tool_result(),
            ));
        }
        let tcc = ToolCallContext::new(&*self.service, request, context);
        self.tools.call(tcc).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut list = ListToolsResult::with_all_items(self.tools.list_all());
        // The list is the same for every caller: clients of protocol
        // versions with cache hints may share it (as rmcp's own handler).
        if context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
        {
            list = list.with_ttl_ms(0).with_cache_scope(CacheScope::Public);
        }
        Ok(list)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).cloned()
    }
}
