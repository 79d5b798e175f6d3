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
//! `Self::hardened_tool_router() + Self::tool_router()` as the tools. It
//! serves resources ([`Server::resources`], declared with
//! [`resources::Resources`]), prompts ([`Server::prompts`], declared with
//! [`prompts::Prompts`]) and the completions of their arguments
//! ([`completion`]), each hardened as tools are (docs/guide.md).
//!
//! A call naming a tool the server does not have is answered with the
//! fixed `unknown_tool` error result ([`ToolError::UnknownTool`]): the
//! model reads that it should look at `tools/list`, and nothing of the name
//! it sent comes back.

use std::sync::Arc;

pub mod completion;
pub mod prompts;
pub mod resources;
pub mod subscriptions;
#[cfg(test)]
pub(crate) mod test_args;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::ask::{Asking, StateKey};
use crate::context::ToolContext;
use crate::context::{LogLevel, LogThreshold};
use crate::error::ToolError;
#[cfg(feature = "jobs")]
use crate::jobs::{Desks, JobDesk};
use prompts::PromptSet;
use resources::ResourceSet;
use subscriptions::{MAX_WATCHES, Reader, Watches};

/// Where a server's tasks are: the job desk of one of its services.
#[cfg(feature = "jobs")]
type TaskSource<S> = dyn for<'a> Fn(&'a S) -> &'a JobDesk + Send + Sync;
#[cfg(feature = "jobs")]
type TaskSources<S> = Arc<Vec<Arc<TaskSource<S>>>>;
/// Without `jobs` a server serves no tasks.
#[cfg(not(feature = "jobs"))]
type TaskSources<S> = std::marker::PhantomData<fn() -> S>;

/// A service, its tools and its identity, served as one MCP server.
///
/// Cloning is cheap (shared pointers): the HTTP transport makes one handler
/// per session from it. A clone starts a session of its own: the log level
/// a client sets (`logging/setLevel`) and the resources it subscribes to
/// (`resources/subscribe`) are that clone's.
pub struct Server<S> {
    service: Arc<S>,
    tools: Arc<ToolRouter<S>>,
    info: Arc<ServerConfig>,
    /// Empty: the server serves no tasks.
    tasks: TaskSources<S>,
    /// `None`: the server serves no resources.
    resources: Option<Arc<ResourceSet<S>>>,
    /// `None`: the server serves no prompts.
    prompts: Option<Arc<PromptSet<S>>>,
    /// The log level the session set (`logging/setLevel`, 2025-11-25): a
    /// cell of its own in every clone, as each session is one.
    log_level: std::sync::Mutex<Option<LogLevel>>,
    /// How tools ask the client: the `requestState` key, its lifetime, the
    /// spent states (shared by every clone).
    asking: Asking,
    /// The resources the session watches (2025-11-25 subscriptions): a
    /// cell of its own in every clone.
    watches: std::sync::Mutex<Watches>,
    /// How often a watched resource is read.
    watch_interval: std::time::Duration,
}

impl<S> Clone for Server<S> {
    fn clone(&self) -> Self {
        Self {
            service: Arc::clone(&self.service),
            tools: Arc::clone(&self.tools),
            info: Arc::clone(&self.info),
            #[cfg(feature = "jobs")]
            tasks: Arc::clone(&self.tasks),
            #[cfg(not(feature = "jobs"))]
            tasks: std::marker::PhantomData,
            resources: self.resources.clone(),
            prompts: self.prompts.clone(),
            log_level: Default::default(),
            asking: self.asking.clone(),
            watches: Default::default(),
            watch_interval: self.watch_interval,
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
        #[allow(deprecated)] // SEP-2577 deprecates logging; 2025-11-25 clients use it
        let info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new(name, version));
        Self {
            service: Arc::new(service),
            tools: Arc::new(tools),
            info: Arc::new(info),
            tasks: Default::default(),
            resources: None,
            prompts: None,
            log_level: Default::default(),
            asking: Asking::default(),
            watches: Default::default(),
            watch_interval: subscriptions::WATCH_INTERVAL,
        }
    }

    /// How often a resource a client subscribed to is read to find a change
    /// (default [`subscriptions::WATCH_INTERVAL`]; at least
    /// [`subscriptions::MIN_WATCH_INTERVAL`]): a shorter interval tells
    /// clients sooner and reads more (see [`subscriptions`]).
    pub fn watch_interval(mut self, interval: std::time::Duration) -> Self {
        self.watch_interval = interval.max(subscriptions::MIN_WATCH_INTERVAL);
        self
    }

    /// Seals the `requestState` of input-required results (2026-07-28)
    /// with `key` instead of the random key made at start: replicas that
    /// share a key accept each other's states ([`StateKey`]).
    pub fn state_key(mut self, key: StateKey) -> Self {
        self.asking.set_key(key);
        self
    }

    /// Seals `requestState` with a key derived from `root`'s and records
    /// the spent states in `root`: the replicas over one run root open
    /// each other's states, and a state opens one call among all of them
    /// (with [`Server::state_key`] alone, replicas share the key but each
    /// keeps its own spent states).
    #[cfg(feature = "runs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "runs")))]
    pub fn states_in(mut self, root: &crate::runs::RunRoot) -> Self {
        self.asking.set_root(root);
        self
    }

    /// How long a sealed `requestState` stays valid (default ten minutes):
    /// the time a person has to answer a question.
    pub fn state_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.asking.set_ttl(ttl);
        self
    }

    /// Serves `resources` (declared with [`resources::Resources`]):
    /// `resources/list`, `resources/templates/list` and `resources/read`,
    /// under the rules of [`resources`], and subscriptions to any of them
    /// (`resources/subscribe`, `resources/unsubscribe`, the
    /// `resourceSubscriptions` of `subscriptions/listen`), under the rules
    /// of [`subscriptions`]. Declares the resources capability with
    /// `subscribe` (no list changes: the set is fixed).
    pub fn resources(mut self, resources: ResourceSet<S>) -> Self {
        let completes = resources.has_templates();
        self.resources = Some(Arc::new(resources));
        let capabilities = &mut Arc::make_mut(&mut self.info).capabilities;
        let mut served = rmcp::model::ResourcesCapability::default();
        served.subscribe = Some(true);
        capabilities.resources = Some(served);
        if completes {
            capabilities.completions = Some(Default::default());
        }
        self
    }

    /// Serves `prompts` (declared with [`prompts::Prompts`]):
    /// `prompts/list` and `prompts/get`, under the rules of [`prompts`].
    /// Declares the prompts capability (no list changes: the set is
    /// fixed) and completions ([`completion`]) of prompt arguments and
    /// template variables.
    pub fn prompts(mut self, prompts: PromptSet<S>) -> Self {
        self.prompts = Some(Arc::new(prompts));
        let capabilities = &mut Arc::make_mut(&mut self.info).capabilities;
        capabilities.prompts = Some(Default::default());
        capabilities.completions = Some(Default::default());
        self
    }

    /// Serves MCP tasks (feature `jobs`): the tools declared `task` whose bodies run a job
    /// ([`JobService::run`](crate::jobs::JobService::run)) answer a client
    /// that takes tasks with one, and `tasks/get`, `tasks/cancel` (and, in
    /// the 2025-11-25 protocol, `tasks/result` and `tasks/list`) answer
    /// from the run root through `project`'s job desk. Declares the tasks
    /// extension (`io.modelcontextprotocol/tasks`). Clients that do not
    /// take tasks keep the plain tools. Call it once per job service whose
    /// runs are tasks: each task is answered by the desk of its own job.
    ///
    /// A tool declared `task(detached)` is a task as a whole: the call is
    /// answered with the task at once, its body runs on in this server,
    /// its questions to the client wait as the task's `inputRequests`
    /// (answered with `tasks/update`), and its result is kept in a run of
    /// the first desk given here (its run root's quotas and expiry apply).
    #[cfg(feature = "jobs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "jobs")))]
    pub fn tasks<F>(mut self, project: F) -> Self
    where
        F: for<'a> Fn(&'a S) -> &'a JobDesk + Send + Sync + 'static,
    {
        Arc::make_mut(&mut self.tasks).push(Arc::new(project));
        let info = Arc::make_mut(&mut self.info);
        info.capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(
                rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                Default::default(),
            );
        self
    }

    /// The desks of the server's tasks; a server without tasks knows no
    /// task method.
    #[cfg(feature = "jobs")]
    fn desks(&self) -> Result<Desks<'_>, ErrorData> {
        if self.tasks.is_empty() {
            return Err(crate::tasks::method_not_found());
        }
        Ok(Desks(self.tasks.iter().map(|p| p(&self.service)).collect()))
    }

    /// Whether the server serves tasks (a `jobs` server that called
    /// [`Server::tasks`]).
    fn serves_tasks(&self) -> bool {
        #[cfg(feature = "jobs")]
        return !self.tasks.is_empty();
        #[cfg(not(feature = "jobs"))]
        return false;
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

    /// Every OAuth scope a served tool requires, sorted, each once: what
    /// an authorization server should offer a client of this server.
    pub fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = self
            .tools
            .list_all()
            .iter()
            .filter_map(|t| t.meta.as_ref()?.get(crate::transport::SCOPES_META_KEY))
            .filter_map(serde_json::Value::as_array)
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect();
        scopes.sort();
        scopes.dedup();
        scopes
    }

    /// What `initialize` answers.
    pub fn info(&self) -> &ServerConfig {
        &self.info
    }

    /// The log level this session set, if it set one.
    fn session_log_level(&self) -> Option<LogLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The prompts served; a server without them knows no prompt method.
    fn served_prompts(&self) -> Result<&PromptSet<S>, ErrorData> {
        self.prompts
            .as_deref()
            .ok_or_else(crate::tasks::method_not_found)
    }

    /// Who reads a watched resource for the caller of `context`.
    fn reader(&self, set: &Arc<ResourceSet<S>>, context: &RequestContext<RoleServer>) -> Reader<S> {
        let ctx = ToolContext::from_request(context);
        Reader {
            set: Arc::clone(set),
            service: Arc::clone(&self.service),
            caller: ctx.caller().clone(),
            scopes: ctx.scopes().cloned(),
            interval: self.watch_interval,
        }
    }

    /// The session's watches.
    fn watches(&self) -> std::sync::MutexGuard<'_, Watches> {
        self.watches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The resources served, shared; a server without them knows no
    /// resource method.
    fn served_resources_arc(&self) -> Result<&Arc<ResourceSet<S>>, ErrorData> {
        self.resources
            .as_ref()
            .ok_or_else(crate::tasks::method_not_found)
    }

    /// The resources served; a server without them knows no resource
    /// method.
    fn served_resources(&self) -> Result<&ResourceSet<S>, ErrorData> {
        self.resources
            .as_deref()
            .ok_or_else(crate::tasks::method_not_found)
    }
}

impl<S: Send + Sync + 'static> ServerHandler for Server<S> {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.serves_tasks()
            && context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks())
        {
            context.extensions.insert(crate::tasks::TasksAccepted);
        }
        // A detached body's task lives in the run root of the first job
        // desk given to `Server::tasks`.
        #[cfg(feature = "jobs")]
        if crate::tasks::tasks_accepted(&context.extensions)
            && let Some(first) = self.tasks.first()
        {
            context.extensions.insert(crate::route::DetachHome {
                service: Arc::clone(&self.service),
                desk: first(&self.service).clone(),
            });
        }
        if let Some(level) = self.session_log_level() {
            context.extensions.insert(LogThreshold(level));
        }
        let Some(tool) = self.tools.get(&request.name) else {
            tracing::debug!("call of a tool this server does not have: refused");
            return Ok(CallToolResponse::Complete(
                ToolError::UnknownTool.into_call_tool_result(),
            ));
        };
        if !self.serves_tasks() && task_only(tool) {
            // A server mistake, not the client's: its tasks were never
            // served (`Server::tasks`), so the tool could never run.
            let error = ToolError::internal(format_args!(
                "tool `{}` runs only as a task, but the server serves no tasks: call \
                 Server::tasks with the job service its body runs",
                request.name
            ));
            return Ok(CallToolResponse::Complete(error.into_call_tool_result()));
        }
        let round = self.asking.begin(
            &mut context,
            &format!("tools/call:{}", request.name),
            request.arguments.as_ref(),
            request.input_responses.as_ref(),
            request.request_state.as_deref(),
        )?;
        let tcc = ToolCallContext::new(&*self.service, request, context);
        let response = self.tools.call(tcc).await?;
        Ok(match self.asking.end(&round)? {
            Some(input_required) => CallToolResponse::InputRequired(input_required),
            None => response,
        })
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(self.served_resources()?.list())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(self.served_resources()?.templates())
    }

    #[allow(deprecated)] // SEP-2577 deprecates logging; 2025-11-25 clients use it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(LogLevel::from_rmcp(request.level));
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(self.served_prompts()?.list())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let prompts = self.served_prompts()?;
        let round = self.asking.begin(
            &mut context,
            &format!("prompts/get:{}", request.name),
            request.arguments.as_ref(),
            request.input_responses.as_ref(),
            request.request_state.as_deref(),
        )?;
        let ctx = crate::context::ToolContext::from_request(&context);
        let got = prompts
            .get(
                &self.service,
                &ctx,
                &request.name,
                request.arguments.as_ref(),
            )
            .await;
        match self.asking.end(&round)? {
            Some(input_required) => Ok(GetPromptResponse::InputRequired(input_required)),
            None => got.map(Into::into),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        if self.info.capabilities.completions.is_none() {
            return Err(crate::tasks::method_not_found());
        }
        let completions = match &request.r#ref {
            Reference::Prompt(p) => self.prompts.as_deref().and_then(|s| s.completions(&p.name)),
            Reference::Resource(r) => self
                .resources
                .as_deref()
                .and_then(|s| s.completions(&r.uri)),
            _ => None,
        };
        // An unknown prompt or template offers nothing, as an argument
        // without a closed list of values does.
        Ok(completions.map_or_else(
            || CompleteResult::new(Default::default()),
            |c| c.complete(&request.argument.name, &request.argument.value),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let ctx = crate::context::ToolContext::from_request(&context);
        let resources = self.served_resources()?;
        Ok(resources
            .read(&self.service, ctx.caller(), ctx.scopes(), &request.uri)?
            .into())
    }

    #[allow(deprecated)] // 2025-11-25 clients subscribe; 2026-07-28 ones listen
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let set = self.served_resources_arc()?;
        if crate::context::sessionless_http(&context) {
            // No session, no channel to announce a change on.
            return Err(subscriptions::sessionless());
        }
        if self.watches().has(&request.uri) {
            return Ok(());
        }
        if self.watches().full() {
            return Err(subscriptions::too_many());
        }
        let reader = self.reader(set, &context);
        // A resource the caller cannot read cannot be watched: the read's
        // own answer (unknown resource, or an internal error).
        let first = reader.digest(&request.uri).await?;
        let peer = context.peer.clone();
        let watch = reader.watch(request.uri.clone(), first, move |uri| {
            let peer = peer.clone();
            async move {
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
                    .is_ok()
            }
        });
        let mut watches = self.watches();
        if watches.full() {
            return Err(subscriptions::too_many());
        }
        watches.insert(request.uri, watch);
        Ok(())
    }

    #[allow(deprecated)] // 2025-11-25 clients subscribe; 2026-07-28 ones listen
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.served_resources()?;
        self.watches().remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Without resources nothing can be listened to (the set of tools
        // and prompts never changes): `subscriptions/listen` is unknown.
        self.resources.as_ref()?;
        let mut accepted = SubscriptionFilter::new();
        if let Some(uris) = &requested.resource_subscriptions {
            let mut kept: Vec<String> = Vec::new();
            for uri in uris {
                if kept.len() == MAX_WATCHES {
                    break;
                }
                if resources::is_uri(uri) && !kept.contains(uri) {
                    kept.push(uri.clone());
                }
            }
            accepted.resource_subscriptions = Some(kept);
        }
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut watches = Vec::new();
        if let (Some(set), Some(uris)) =
            (&self.resources, &context.accepted().resource_subscriptions)
        {
            let reader = self.reader(set, context.request_context());
            let mut asked: Vec<&String> = Vec::new();
            for uri in uris {
                if asked.len() < MAX_WATCHES && !asked.contains(&uri) {
                    asked.push(uri);
                }
            }
            for uri in asked {
                // A resource the caller cannot read is never announced (the
                // acknowledgement lists what was asked, whatever exists).
                let Ok(first) = reader.digest(uri).await else {
                    continue;
                };
                let sink = context.sink().clone();
                watches.push(reader.clone().watch(uri.clone(), first, move |uri| {
                    let sink = sink.clone();
                    async move { sink.notify_resource_updated(uri).await.is_ok() }
                }));
            }
        }
        context.cancelled().await;
        drop(watches);
        Ok(())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        #[cfg(not(feature = "jobs"))]
        return no_tasks(request, context);
        #[cfg(feature = "jobs")]
        {
            let caller = ToolContext::from_request(&context).caller().clone();
            let desks = self.desks()?;
            let task = desks
                .of(&caller, &request.task_id)?
                .get_task(&caller, &request.task_id)
                .await?;
            Ok(GetTaskResult::new(task))
        }
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        #[cfg(not(feature = "jobs"))]
        return no_tasks(request, context);
        #[cfg(feature = "jobs")]
        {
            let caller = ToolContext::from_request(&context).caller().clone();
            let desks = self.desks()?;
            desks
                .of(&caller, &request.task_id)?
                .cancel_task(&caller, &request.task_id)
                .await
        }
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        #[cfg(not(feature = "jobs"))]
        return no_tasks(request, context);
        #[cfg(feature = "jobs")]
        {
            let caller = ToolContext::from_request(&context).caller().clone();
            let desks = self.desks()?;
            desks.of(&caller, &request.task_id)?.update_task(
                &caller,
                &request.task_id,
                &request.input_responses,
            )
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        crate::transport::tasks2025::serve(self, request, context).await
    }
}

#[cfg(feature = "jobs")]
impl<S: Send + Sync + 'static> Server<S> {
    /// The job desks of the server's tasks, for the 2025-11-25 methods.
    pub(crate) fn task_desks(&self) -> Result<Desks<'_>, ErrorData> {
        self.desks()
    }
}

/// Whether `tool` is declared `task = "required"`.
fn task_only(tool: &Tool) -> bool {
    tool.meta
        .as_ref()
        .and_then(|m| m.get(crate::transport::tasks2025::TASK_TOOL_META_KEY))
        .and_then(serde_json::Value::as_str)
        == Some("required")
}

/// A task method of a server built without `jobs`: unknown, with the one
/// fixed text.
#[cfg(not(feature = "jobs"))]
fn no_tasks<T, P>(_request: P, _context: RequestContext<RoleServer>) -> Result<T, ErrorData> {
    Err(crate::tasks::method_not_found())
}
