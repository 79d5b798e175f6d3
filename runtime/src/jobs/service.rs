//! The life of a solver job, served: a [`JobService`] starts runs of one
//! [`SolverJob`] (run directory, input files written atomically, sandboxed
//! launch, persisted status), follows them (status, bounded wait, logs,
//! result, cancel, delete, list, sequences), re-attaches after a restart,
//! and serves all of that as hardened tools a server mounts under its
//! prefix ([`JobService::tools`]).
//!
//! Who follows a run is shared through the run root: the process that
//! tracks a live job holds the run's lease ([`RunDir::lease`]). A process
//! that finds a run recorded as queued or running with no lease held knows
//! that the server that followed it is gone (and a local run with it): it
//! records the run as interrupted, so that it never reads as unknown.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::kind::{PagedFile, Prepared, SolverJob};
use super::launcher::Launcher;
use super::report::{
    FilePage, JobDone, JobList, JobOutcome, JobPhase, JobProgress, JobReport, JobStarted,
    JobSummary, LogPage, LogStream, Note,
};
use super::status::{
    JobRecord, RecordedState, STDERR_LOG_FILE, STDOUT_LOG_FILE, cancel_request_present,
    cancel_requested, now_ms, read_job_record, request_cancel, write_job_record,
};
use super::table::{JobId, JobState, Jobs, StatusSink};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::identity::CallerId;
use crate::output::Output;
use crate::route::ToolSet;
use crate::runs::{HasRunRoot, RunDir, RunError, RunHandle, RunLease, RunRoot};
use crate::sandbox::{LimitHit, Outcome, Termination};
use crate::untrusted::{TextLimits, Untrusted};

/// How a [`JobService`] is sized.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobOptions {
    /// Jobs tracked in memory at once, running or finished (the oldest
    /// finished one is forgotten first; its record stays in its run).
    pub max_tracked: usize,
    /// Most runs one [`JobService::list`] reports.
    pub max_listed: usize,
    /// The largest persisted log read back by the log tool.
    pub max_log_bytes: usize,
    /// Whether the cancel and delete tools ask the person behind the
    /// client to approve each call ([`ToolContext::approve`]): a guard for
    /// people, not an access control (the write scopes are that).
    pub confirm_cancel_and_delete: bool,
}

impl Default for JobOptions {
    fn default() -> Self {
        Self {
            max_tracked: 1024,
            max_listed: 200,
            max_log_bytes: 1 << 20,
            confirm_cancel_and_delete: false,
        }
    }
}

/// The scopes a caller's access token must grant for the life-cycle tools
/// ([`JobService::tools`]): `read` for status, wait, log, result and
/// list; `write` for cancel and delete. Empty: no scope beyond the server's.
#[derive(Debug, Clone, Copy, Default)]
pub struct JobScopes {
    /// Scopes of the reading tools.
    pub read: &'static [&'static str],
    /// Scopes of the tools that change a run.
    pub write: &'static [&'static str],
}

/// The life-cycle tools, by their unprefixed names, and whether each
/// changes a run.
pub const LIFE_CYCLE_TOOLS: [(&str, bool); 8] = [
    ("status", false),
    ("wait", false),
    ("log", false),
    ("file", false),
    ("result", false),
    ("list", false),
    ("cancel", true),
    ("delete", true),
];

/// Where a run is, as this process tracks it.
#[derive(Debug, Clone)]
enum Slot {
    /// Its run directory exists, its launch is under way; cancelling the
    /// token cancels the run as soon as it is launched.
    Starting(CancellationToken),
    /// Planned in a sequence, waiting for its turn.
    Queued,
    /// Launched as this job of the table.
    Job(JobId),
}

/// The job-kind-independent part of a service: what the life-cycle tools
/// run on.
#[derive(Clone)]
pub struct JobDesk(Arc<Desk>);

struct Desk {
    runs: RunRoot,
    launcher: Launcher,
    jobs: Jobs,
    slots: Mutex<HashMap<String, Slot>>,
    options: JobOptions,
    progress_unit: &'static str,
    paged_files: &'static [PagedFile],
    /// The job's type, recorded in each task this desk makes: a task is
    /// answered by the desk of its own job.
    kind: &'static str,
    read_result: for<'a> fn(
        &'a (dyn Any + Send + Sync),
        &'a RunDir,
    ) -> BoxFuture<'a, Result<Value, ToolError>>,
    job: Arc<dyn Any + Send + Sync>,
}

impl JobDesk {
    /// Asks the person to approve `what` when the desk's options say so.
    pub(super) async fn confirm(
        &self,
        ctx: &ToolContext,
        what: &'static str,
    ) -> Result<(), ToolError> {
        if self.0.options.confirm_cancel_and_delete {
            ctx.approve(what).await
        } else {
            Ok(())
        }
    }

    /// Most runs a listing reports.
    pub(super) fn max_listed(&self) -> usize {
        self.0.options.max_listed
    }

    /// The job type this desk serves.
    pub(crate) fn kind(&self) -> &'static str {
        self.0.kind
    }
}

impl HasRunRoot for JobDesk {
    fn run_root(&self) -> &RunRoot {
        &self.0.runs
    }
}

impl std::fmt::Debug for JobDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobDesk")
            .field("jobs", &self.0.jobs)
            .finish_non_exhaustive()
    }
}

/// Serves the runs of one [`SolverJob`]: see the [module](crate::jobs) docs. Cheap
/// to clone; one per server, shared by every session.
pub struct JobService<J> {
    desk: JobDesk,
    job: Arc<J>,
}

impl<J> Clone for JobService<J> {
    fn clone(&self) -> Self {
        Self {
            desk: self.desk.clone(),
            job: Arc::clone(&self.job),
        }
    }
}

impl<J> std::fmt::Debug for JobService<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobService")
            .field("desk", &self.desk)
            .finish_non_exhaustive()
    }
}

/// A run planned in a sequence ([`JobService::plan`]): its directory exists,
/// its record says queued, and this value holds its lease until it is
/// launched or abandoned.
#[derive(Debug)]
pub struct PlannedRun {
    dir: RunDir,
    lease: RunLease,
    caller: CallerId,
}

impl PlannedRun {
    /// The run's handle.
    pub fn handle(&self) -> &RunHandle {
        self.dir.handle()
    }

    /// The run directory, for server records written before launch.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }
}

impl<J: SolverJob> JobService<J> {
    /// A service starting runs of `job` in `runs`, through `launcher`.
    pub fn new(job: J, runs: RunRoot, launcher: Launcher) -> Self {
        Self::with_options(job, runs, launcher, JobOptions::default())
    }

    /// As [`JobService::new`], sized by `options`.
    pub fn with_options(job: J, runs: RunRoot, launcher: Launcher, options: JobOptions) -> Self {
        let job = Arc::new(job);
        let erased: Arc<dyn Any + Send + Sync> = job.clone();
        Self {
            desk: JobDesk(Arc::new(Desk {
                runs,
                launcher,
                jobs: Jobs::new(options.max_tracked),
                slots: Mutex::new(HashMap::new()),
                options,
                progress_unit: J::PROGRESS_UNIT,
                paged_files: J::PAGED_FILES,
                kind: std::any::type_name::<J>(),
                read_result: erased_result::<J>,
                job: erased,
            })),
            job,
        }
    }

    /// The job declaration.
    pub fn job(&self) -> &J {
        &self.job
    }

    /// The run root.
    pub fn runs(&self) -> &RunRoot {
        &self.desk.0.runs
    }

    /// The launcher every run goes through.
    pub fn launcher(&self) -> &Launcher {
        &self.desk.0.launcher
    }

    /// The kind-independent part the life-cycle tools run on.
    pub fn desk(&self) -> &JobDesk {
        &self.desk
    }

    /// Starts a run of `params` for `caller`: a new run directory (the
    /// run root's quotas apply), the input files written atomically, the
    /// sandboxed launch (or the `sbatch` submission), the status persisted.
    /// Returns once launched. The file-system and cluster work runs on the
    /// blocking pool, never on the async worker.
    ///
    /// The arguments are turned into the run's request at once (`params`
    /// is not held across the launch).
    pub fn start(
        &self,
        caller: &CallerId,
        params: &J::Params,
    ) -> impl Future<Output = Result<JobStarted, ToolError>> + Send + 'static {
        let prepared = self.job.prepare(params);
        let (this, caller) = (self.clone(), caller.clone());
        async move {
            let prepared = prepared?;
            off_worker(move || this.start_prepared(&caller, prepared)).await
        }
    }

    fn start_prepared(
        &self,
        caller: &CallerId,
        prepared: Prepared,
    ) -> Result<JobStarted, ToolError> {
        let (handle, dir) = self.desk.0.runs.create(caller)?;
        let lease = dir.lease()?.ok_or_else(|| {
            ToolError::internal("a fresh run directory's lease is held elsewhere")
        })?;
        let cancel = CancellationToken::new();
        self.desk.set_slot(&handle, Slot::Starting(cancel.clone()));
        match self.desk.launch(caller, dir, lease, prepared, &cancel) {
            Ok(()) => Ok(JobStarted {
                run_handle: handle.to_string(),
                containment: self.desk.containment(),
            }),
            Err(e) => {
                // The run directory holds nothing worth keeping.
                self.desk.remove_slot(handle.as_str());
                if let Ok(dir) = self.desk.0.runs.resolve(handle.as_str(), caller)
                    && let Err(r) = dir.remove()
                {
                    tracing::warn!(error = %r, "a run that did not launch was not removed");
                }
                Err(e)
            }
        }
    }

    /// Plans a run for `caller` without launching it: its directory is
    /// created and recorded as queued (status reports `queued`; a cancel
    /// abandons it). Launch it with [`JobService::launch_planned`], or run
    /// several one after the other with [`JobService::run_sequence`]. Off
    /// the async worker, as [`JobService::start`].
    pub async fn plan(&self, caller: &CallerId) -> Result<PlannedRun, ToolError> {
        let (this, caller) = (self.clone(), caller.clone());
        off_worker(move || this.plan_blocking(&caller)).await
    }

    fn plan_blocking(&self, caller: &CallerId) -> Result<PlannedRun, ToolError> {
        let (handle, dir) = self.desk.0.runs.create(caller)?;
        let lease = dir.lease()?.ok_or_else(|| {
            ToolError::internal("a fresh run directory's lease is held elsewhere")
        })?;
        write_record(&dir, RecordedState::Queued, None);
        self.desk.set_slot(&handle, Slot::Queued);
        Ok(PlannedRun {
            dir,
            lease,
            caller: caller.clone(),
        })
    }

    /// Launches a planned run with `params`. `Ok(false)` when it was
    /// cancelled (or deleted) while queued: it is not launched. A launch
    /// that fails is recorded as not launched (its status says so). Off
    /// the async worker, as [`JobService::start`].
    pub fn launch_planned(
        &self,
        run: PlannedRun,
        params: &J::Params,
    ) -> impl Future<Output = Result<bool, ToolError>> + Send + 'static {
        let prepared = self.job.prepare(params);
        let this = self.clone();
        async move { off_worker(move || this.launch_planned_blocking(run, prepared)).await }
    }

    fn launch_planned_blocking(
        &self,
        run: PlannedRun,
        prepared: Result<Prepared, ToolError>,
    ) -> Result<bool, ToolError> {
        let key = run.dir.handle().as_str().to_owned();
        let cancel = CancellationToken::new();
        {
            let mut slots = self.desk.slots();
            if !matches!(slots.get(&key), Some(Slot::Queued)) {
                return Ok(false);
            }
            slots.insert(key.clone(), Slot::Starting(cancel.clone()));
        }
        // Cancelled through another server process while it waited.
        if cancel_requested(&run.dir) {
            self.desk.abandon(run);
            return Ok(false);
        }
        let record = run.dir.try_clone();
        let launched = prepared.and_then(|p| {
            self.desk
                .launch(&run.caller, run.dir, run.lease, p, &cancel)
        });
        if launched.is_err() {
            self.desk.remove_slot(&key);
            if let Ok(dir) = record {
                write_record(&dir, RecordedState::NotLaunched, None);
            }
        }
        launched.map(|()| true)
    }

    /// Runs planned runs one after the other in the background, each
    /// launched when the one before it has ended. A launch that fails stops
    /// the sequence: that run and the rest are recorded as not launched
    /// and abandoned.
    pub fn run_sequence(&self, steps: Vec<(PlannedRun, J::Params)>) {
        let service = self.clone();
        tokio::spawn(async move {
            let mut failed = false;
            for (run, params) in steps {
                if failed {
                    service.desk.abandon(run);
                    continue;
                }
                let handle = run.dir.handle().as_str().to_owned();
                let caller = run.caller.clone();
                match service.launch_planned(run, &params).await {
                    Ok(true) => service.desk.ended(&caller, &handle).await,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "a sequence step did not launch; the rest is abandoned");
                        failed = true;
                    }
                }
            }
        });
    }

    /// Runs `params` to its end for the caller of `ctx`, as the body of a
    /// long tool: starts the run, then waits at most `wait` (with progress
    /// notifications) and answers its report, with the typed result if it
    /// succeeded; a run still going when `wait` is up is answered as such
    /// (follow it with the status and wait tools). A run that ended
    /// without succeeding is answered as a failure ([`Output::failed`]:
    /// `isError`, the report saying how it ended).
    ///
    /// In a tool declared `task` (`#[hardened_tool(.., task)]`) called by a
    /// client that takes MCP tasks, it answers at once with a task instead:
    /// the run, followed through `tasks/get` and, in the 2025-11-25
    /// protocol, `tasks/result` (see [`Server::tasks`](crate::Server::tasks)).
    pub async fn run(
        &self,
        ctx: &ToolContext,
        params: &J::Params,
        wait: Duration,
    ) -> Result<Output<JobOutcome<J::Result>>, ToolError> {
        let started = self.start(ctx.caller(), params).await?;
        let dir = self
            .desk
            .0
            .runs
            .resolve(&started.run_handle, ctx.caller())?;
        if let Some(offer) = ctx.task_offer() {
            offer.accept(self.desk.make_task(&dir)?);
            let report = self.desk.report(ctx.caller(), &dir);
            return Ok(Output::new(JobOutcome {
                run_handle: started.run_handle,
                report,
                result: None,
            }));
        }
        let report = self.wait_or_cancel(ctx, &dir, wait).await?;
        let result = match report.state {
            JobPhase::Succeeded => Some(self.result(ctx.caller(), &dir).await?),
            _ => None,
        };
        // A run that ended without succeeding is the tool's failure (an
        // error result whose report says how); one still going is not.
        let failed = !report.state.is_live() && report.state != JobPhase::Succeeded;
        let out = Output::new(JobOutcome {
            run_handle: started.run_handle,
            report,
            result,
        });
        Ok(if failed { out.failed() } else { out })
    }

    /// Runs `params` to its end for the caller of `ctx` and answers its run
    /// directory and typed result: the body of a tool that shapes the
    /// result itself (the SPICE server's analyses). A run that did not
    /// succeed is the fixed error of how it ended (its limit, its exit);
    /// the run stays, for its status and log. Bounded by the run's own
    /// wall-time limit; a cancelled call cancels the run.
    pub async fn run_to_end(
        &self,
        ctx: &ToolContext,
        params: &J::Params,
    ) -> Result<(RunDir, J::Result), ToolError> {
        let started = self.start(ctx.caller(), params).await?;
        let dir = self
            .desk
            .0
            .runs
            .resolve(&started.run_handle, ctx.caller())?;
        let report = self.wait_or_cancel(ctx, &dir, UNTIL_THE_END).await?;
        if report.state != JobPhase::Succeeded {
            return Err(self.desk.failure(ctx.caller(), &dir, &report));
        }
        let result = self.result(ctx.caller(), &dir).await?;
        Ok((dir, result))
    }

    /// Waits (as [`JobService::wait`]); a cancelled call cancels the run.
    async fn wait_or_cancel(
        &self,
        ctx: &ToolContext,
        dir: &RunDir,
        limit: Duration,
    ) -> Result<JobReport, ToolError> {
        match self.desk.wait_report(ctx, dir, limit).await {
            Err(ToolError::Cancelled) => {
                if let Err(e) = self.desk.cancel_run(ctx.caller(), dir) {
                    tracing::warn!(error = %e, "a cancelled call's run was not cancelled");
                }
                Err(ToolError::Cancelled)
            }
            other => other,
        }
    }

    /// The status of a run of `caller`.
    pub fn status(&self, caller: &CallerId, run: &RunDir) -> JobReport {
        self.desk.report(caller, run)
    }

    /// Waits at most `limit` for a run to end, sending the caller progress
    /// notifications (when its call carries a progress token); returns the
    /// status then. Ends early with [`ToolError::Cancelled`] when the call
    /// is cancelled.
    pub async fn wait(
        &self,
        ctx: &ToolContext,
        run: &RunDir,
        limit: Duration,
    ) -> Result<JobReport, ToolError> {
        self.desk.wait_report(ctx, run, limit).await
    }

    /// The typed result of a run that succeeded, parsed strictly and
    /// checked ([`SolverJob::check_result`]); refused with a fixed text
    /// while the run has not succeeded.
    pub async fn result(&self, caller: &CallerId, run: &RunDir) -> Result<J::Result, ToolError> {
        self.desk.require_succeeded(caller, run)?;
        let bytes = read_result_bytes::<J>(run).await?;
        parse_result(&*self.job, &bytes)
    }

    /// Cancels a run of `caller` (kills its whole tree; a queued run is
    /// abandoned).
    pub fn cancel(&self, caller: &CallerId, run: &RunDir) -> Result<JobDone, ToolError> {
        self.desk.cancel_run(caller, run)
    }

    /// Deletes a run of `caller` and everything in it, cancelling it first.
    pub async fn delete(&self, caller: &CallerId, run: RunDir) -> Result<JobDone, ToolError> {
        self.desk.delete_run(caller, run).await
    }

    /// The runs of `caller` (at most [`JobOptions::max_listed`]), each with its state.
    pub async fn list(&self, caller: &CallerId) -> Result<JobList, ToolError> {
        self.desk.list_runs(caller).await
    }

    /// The life-cycle tools ([`LIFE_CYCLE_TOOLS`]: status, wait, log,
    /// result, list, cancel, delete), as hardened tools named
    /// `<prefix>_<name>` served on the server type `S`, which holds this
    /// service (`project` finds it). Merge them into the server's own set
    /// ([`ToolSet::merge`]); drop any the server writes itself
    /// ([`ToolSet::retain`]). The result tool's output schema is the typed
    /// result's; a result type with free text is a startup fault.
    pub fn tools<S, F>(prefix: &str, project: F, scopes: JobScopes) -> ToolSet<S>
    where
        S: 'static,
        F: for<'a> Fn(&'a S) -> &'a JobService<J> + Clone + Send + Sync + 'static,
    {
        let mut set = JobDesk::life_cycle_set().mount(prefix, move |s: &S| project(s).desk());
        for (name, writes) in LIFE_CYCLE_TOOLS {
            let needed = if writes { scopes.write } else { scopes.read };
            if !needed.is_empty() {
                set = set.require_scopes(&format!("{prefix}_{name}"), needed);
            }
        }
        let file_tool = format!("{prefix}_file");
        if J::PAGED_FILES.is_empty() {
            set = set.retain(|name| name != file_tool);
        } else {
            for fault in super::kind::paged_file_faults(J::PAGED_FILES) {
                set = set.fault(&file_tool, fault);
            }
            let keys: Vec<&str> = J::PAGED_FILES.iter().map(PagedFile::key).collect();
            set = set.with_input_enum(&file_tool, "name", &keys);
        }
        let result_tool = format!("{prefix}_result");
        for field in free_text_fields(&crate::output::root_schema::<J::Result>()) {
            set = set.fault(
                &result_tool,
                format!(
                    "result field `{field}` is free text the solver wrote; \
                 solver text reaches the model only through the log tool, framed as untrusted \
                 (make the field an enum, a number, or drop it)"
                ),
            );
        }
        let schema = crate::route::output_schema_of::<super::report::JobResultSchema<J::Result>>();
        set.with_output_schema(&result_tool, schema)
    }

    /// Starts the run root's expiry sweeper: every `every`, a bounded sweep
    /// (at most `budget` index entries) on the blocking pool. A run this
    /// process tracks as live (starting, queued, running) is never removed.
    /// Stops when the returned handle is dropped.
    pub fn start_expiry_sweeper(
        &self,
        every: Duration,
        budget: usize,
    ) -> tokio_util::task::AbortOnDropHandle<()> {
        let desk = self.desk.clone();
        let is_live: Arc<dyn Fn(&RunHandle) -> bool + Send + Sync> =
            Arc::new(move |h| desk.is_live(h.as_str()));
        self.desk
            .0
            .runs
            .start_expiry_sweeper(every, budget, is_live)
    }
}

// ---- the kind-independent desk ---------------------------------------------

impl JobDesk {
    pub(super) fn runs(&self) -> &RunRoot {
        &self.0.runs
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        // Every update is one insert or remove: a poisoned map is consistent.
        self.0.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_slot(&self, handle: &RunHandle, slot: Slot) {
        let mut slots = self.slots();
        // Forget runs whose jobs the table no longer tracks (bounded map).
        if slots.len() >= 2 * self.0.options.max_tracked.max(1) {
            let jobs = &self.0.jobs;
            slots.retain(|_, s| match s {
                Slot::Job(id) => jobs.is_tracked(id),
                _ => true,
            });
        }
        slots.insert(handle.as_str().to_owned(), slot);
    }

    fn remove_slot(&self, key: &str) -> Option<Slot> {
        self.slots().remove(key)
    }

    fn is_live(&self, key: &str) -> bool {
        match self.slots().get(key) {
            Some(Slot::Starting(_) | Slot::Queued) => true,
            Some(Slot::Job(id)) => self.0.jobs.is_live(id),
            None => false,
        }
    }

    /// Writes the inputs, launches, and hands the run to the job table
    /// (whose sink keeps the lease until the job's end is recorded).
    fn launch(
        &self,
        caller: &CallerId,
        dir: RunDir,
        lease: RunLease,
        prepared: Prepared,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        for (name, bytes) in &prepared.inputs {
            dir.write_atomic(name, bytes)?;
        }
        let running = self
            .0
            .launcher
            .launch(caller, &dir, prepared.request, cancel)?;
        self.track(caller, dir, lease, running)
    }

    fn track(
        &self,
        caller: &CallerId,
        dir: RunDir,
        lease: RunLease,
        running: super::RunningSolver,
    ) -> Result<(), ToolError> {
        let handle = dir.handle().clone();
        let watched = dir.try_clone();
        let sink = Arc::new(DeskSink { dir, _lease: lease });
        let id = self.0.jobs.start(caller, running, Some(sink))?;
        self.set_slot(&handle, Slot::Job(id.clone()));
        match watched {
            Ok(dir) => self.watch_cancel_requests(caller, dir, id),
            Err(e) => tracing::warn!(error = %e, "a run's cancel requests are not watched"),
        }
        Ok(())
    }

    /// Cancels the job `id` of the run in `dir` when another server process
    /// of the run root asks to ([`request_cancel`]), checking every
    /// [`CANCEL_WATCH`] while the job lives.
    fn watch_cancel_requests(&self, caller: &CallerId, dir: RunDir, id: JobId) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no async runtime: a run's cancel requests are not watched");
            return;
        };
        let (desk, caller) = (self.clone(), caller.clone());
        rt.spawn(async move {
            let key = dir.handle().as_str().to_owned();
            loop {
                tokio::time::sleep(CANCEL_WATCH).await;
                let followed = matches!(desk.slots().get(&key), Some(Slot::Job(j)) if *j == id);
                if !followed || !desk.0.jobs.is_live(&id) {
                    return;
                }
                if !cancel_request_present(&dir) {
                    continue;
                }
                let requested = {
                    let dir = dir.try_clone();
                    tokio::task::spawn_blocking(move || dir.is_ok_and(|d| cancel_requested(&d)))
                        .await
                        .unwrap_or(false)
                };
                if requested {
                    tracing::info!("cancelled a run at another server process's request");
                    if let Err(e) = desk.0.jobs.cancel(&caller, &id) {
                        tracing::warn!(error = %e, "a requested cancel failed");
                    }
                    return;
                }
            }
        });
    }

    /// Waits (at most [`CANCEL_SETTLE`](super::CANCEL_SETTLE)) for a run
    /// asked to cancel to end; its report then.
    pub(super) async fn settle(&self, caller: &CallerId, run: &RunDir) -> JobReport {
        let deadline = tokio::time::Instant::now() + super::CANCEL_SETTLE;
        loop {
            let report = self.report(caller, run);
            if !report.state.is_live() || tokio::time::Instant::now() >= deadline {
                return report;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits (at most [`CANCEL_SETTLE`](super::CANCEL_SETTLE)) for a run
    /// asked to cancel to end and for the process that follows it to let
    /// go of it (its lease, released after the end is recorded); whether
    /// both happened.
    async fn let_go(&self, caller: &CallerId, run: &RunDir) -> Result<bool, ToolError> {
        let deadline = tokio::time::Instant::now() + super::CANCEL_SETTLE;
        loop {
            if !self.report(caller, run).state.is_live() && !run.is_leased()? {
                return Ok(true);
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn abandon(&self, run: PlannedRun) {
        self.remove_slot(run.dir.handle().as_str());
        write_record(&run.dir, RecordedState::Abandoned, None);
    }

    /// Waits until the run is neither queued nor running (a sequence's
    /// step), polling the table.
    async fn ended(&self, caller: &CallerId, key: &str) {
        while self
            .live_status(caller, key)
            .is_some_and(|s| !matches!(s.state, JobState::Finished(_)))
        {
            tokio::time::sleep(POLL).await;
        }
    }

    /// The job table's status of the run `key`, when this process tracks
    /// it as a job.
    fn live_status(&self, caller: &CallerId, key: &str) -> Option<super::JobStatus> {
        match self.slots().get(key).cloned() {
            Some(Slot::Job(id)) => self.0.jobs.status(caller, &id).ok(),
            _ => None,
        }
    }

    fn containment(&self) -> String {
        self.0.launcher.sandbox().containment().to_string()
    }

    pub(super) fn report(&self, caller: &CallerId, run: &RunDir) -> JobReport {
        let mut report = JobReport::new(run.handle().to_string());
        let slot = self.slots().get(run.handle().as_str()).cloned();
        match slot {
            Some(Slot::Starting(_) | Slot::Queued) => report.state = JobPhase::Queued,
            Some(Slot::Job(id)) => match self.0.jobs.status(caller, &id) {
                // The table marks a job finished once its record is written:
                // the record is what every process reports from then on.
                Ok(js) if matches!(js.state, JobState::Finished(_)) => match read_job_record(run) {
                    Some(r) if r.state == RecordedState::Finished => {
                        fill_record(&mut report, &r);
                    }
                    _ => self.fill_live(&mut report, js.state),
                },
                Ok(js) => self.fill_live(&mut report, js.state),
                Err(_) => {
                    self.remove_slot(run.handle().as_str());
                    self.fill_unfollowed(caller, run, &mut report);
                }
            },
            None => self.fill_unfollowed(caller, run, &mut report),
        }
        report
    }

    fn fill_live(&self, report: &mut JobReport, state: JobState) {
        match state {
            JobState::Queued { elapsed } => {
                report.state = JobPhase::Queued;
                report.wall_seconds = Some(elapsed.as_secs_f64());
            }
            JobState::Running { elapsed, progress } => {
                report.state = JobPhase::Running;
                report.wall_seconds = Some(elapsed.as_secs_f64());
                report.progress = progress.map(|p| JobProgress {
                    done: p.done,
                    total: p.total,
                    unit: self.0.progress_unit,
                });
            }
            JobState::Finished(o) => fill_outcome(report, &o),
        }
    }

    /// A run this process does not follow: its record says how it ended;
    /// or another process follows it (it holds the lease); or nobody does,
    /// and its server stopped while it was queued or running: a Slurm job
    /// is re-attached, anything else is recorded as interrupted.
    fn fill_unfollowed(&self, caller: &CallerId, run: &RunDir, report: &mut JobReport) {
        let record = read_job_record(run);
        if let Some(r) = &record
            && !matches!(r.state, RecordedState::Queued | RecordedState::Running)
        {
            fill_record(report, r);
            return;
        }
        let lease = match run.lease() {
            Ok(Some(l)) => l,
            Ok(None) => {
                report.state = match record.map(|r| r.state) {
                    Some(RecordedState::Running) => JobPhase::Running,
                    _ => JobPhase::Queued,
                };
                report.note = Some(Note::FollowedElsewhere);
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "run lease not taken");
                report.state = JobPhase::Interrupted;
                report.note = Some(Note::Unfollowed);
                return;
            }
        };
        // Under the lease: the record cannot change under us any more,
        // unless a process of another run root version wrote it; re-read.
        let record = read_job_record(run);
        if let Some(r) = &record
            && !matches!(r.state, RecordedState::Queued | RecordedState::Running)
        {
            fill_record(report, r);
            return;
        }
        let was = record.as_ref().map(|r| r.state);
        if was == Some(RecordedState::Running) {
            match self
                .0
                .launcher
                .reattach(caller, run, &CancellationToken::new())
            {
                Ok(Some(running)) => match run.try_clone() {
                    Ok(dir) => match self.track(caller, dir, lease, running) {
                        Ok(()) => {
                            // Followed again: report as the table sees it
                            // (a cluster job may still be queued).
                            match self.live_status(caller, run.handle().as_str()) {
                                Some(js) => self.fill_live(report, js.state),
                                None => report.state = JobPhase::Running,
                            }
                            return;
                        }
                        Err(e) => tracing::warn!(error = %e, "re-attached run not tracked"),
                    },
                    Err(e) => tracing::warn!(error = %e, "re-attached run not tracked"),
                },
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "a run's cluster job was not re-attached"),
            }
        }
        write_record(
            run,
            RecordedState::Interrupted,
            Some(was.unwrap_or(RecordedState::Queued)),
        );
        report.state = JobPhase::Interrupted;
        report.note = Some(match was {
            Some(RecordedState::Running) => Note::InterruptedRunning,
            _ => Note::InterruptedQueued,
        });
        report.since_ms = Some(now_ms());
    }

    /// The fixed error of a run that ended without success: the sandbox's
    /// own (its limit, its exit) while this process knows the outcome.
    fn failure(&self, caller: &CallerId, run: &RunDir, report: &JobReport) -> ToolError {
        let live = self.live_status(caller, run.handle().as_str());
        if let Some(JobState::Finished(o)) = live.map(|s| s.state)
            && let Some(e) = o.error()
        {
            return e.into();
        }
        match report.state {
            JobPhase::Cancelled => ToolError::Cancelled,
            JobPhase::Interrupted => ToolError::rejected("the run was interrupted: start it again"),
            _ => ToolError::rejected("the solver run failed: its status and log say why"),
        }
    }

    fn require_succeeded(&self, caller: &CallerId, run: &RunDir) -> Result<(), ToolError> {
        match self.report(caller, run).state {
            JobPhase::Succeeded => Ok(()),
            JobPhase::Queued | JobPhase::Running => Err(ToolError::rejected(
                "the run has not finished yet: wait for it, then ask for its result",
            )),
            _ => Err(ToolError::rejected(
                "the run did not succeed, so it has no result: its status and log say why",
            )),
        }
    }

    pub(super) async fn result_value(
        &self,
        caller: &CallerId,
        run: &RunDir,
    ) -> Result<Value, ToolError> {
        self.require_succeeded(caller, run)?;
        (self.0.read_result)(&*self.0.job, run).await
    }

    pub(super) async fn wait_report(
        &self,
        ctx: &ToolContext,
        run: &RunDir,
        limit: Duration,
    ) -> Result<JobReport, ToolError> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut last = None;
        loop {
            let report = self.report(ctx.caller(), run);
            if !report.state.is_live() || tokio::time::Instant::now() >= deadline {
                return Ok(report);
            }
            if let Some(p) = &report.progress
                && last != Some(p.done)
            {
                last = Some(p.done);
                ctx.progress()
                    .report(p.done as f64, Some(p.total as f64), Some(p.unit))
                    .await;
            }
            tokio::select! {
                () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }

    /// A page of the run's paged file `key`.
    pub(super) async fn file_page(
        &self,
        run: &RunDir,
        key: &str,
        from_line: Option<u64>,
        lines: u32,
    ) -> Result<FilePage, ToolError> {
        let Some(paged) = self.0.paged_files.iter().find(|f| f.key == key) else {
            return Err(ToolError::rejected(
                "this server pages no file of that name (see the tool's `name` values)",
            ));
        };
        let read = paged
            .file
            .read_bounded(run, self.0.options.max_log_bytes)
            .await;
        let bytes = read.map_err(|e| match e {
            RunError::FileNotFound => {
                ToolError::rejected("the run has not written that file (yet)")
            }
            RunError::TooLarge => ToolError::rejected("the file is larger than this server pages"),
            RunError::FileRefused => ToolError::rejected("the file is not a plain file"),
            other => other.into(),
        })?;
        Ok(FilePage {
            run_handle: run.handle().to_string(),
            name: paged.key,
            lines: page_of_lines(bytes, from_line, lines),
        })
    }

    pub(super) async fn log_page(
        &self,
        caller: &CallerId,
        run: &RunDir,
        stream: LogStream,
        from_line: Option<u64>,
        lines: u32,
    ) -> Result<LogPage, ToolError> {
        let bytes = match self.live_status(caller, run.handle().as_str()) {
            // A finished job's logs are persisted; read them there (whole
            // head and tail, with the omission line).
            Some(js) if !matches!(js.state, JobState::Finished(_)) => {
                let log = match stream {
                    LogStream::Stdout => js.stdout,
                    LogStream::Stderr => js.stderr,
                };
                let mut b = log.head.into_untrusted_bytes();
                b.extend_from_slice(log.tail.as_untrusted_bytes());
                b
            }
            _ => {
                let name = match stream {
                    LogStream::Stdout => STDOUT_LOG_FILE,
                    LogStream::Stderr => STDERR_LOG_FILE,
                };
                match run
                    .read_bounded_async(&name, self.0.options.max_log_bytes)
                    .await
                {
                    Ok(b) => b,
                    Err(RunError::FileNotFound) => Vec::new(),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        Ok(LogPage {
            run_handle: run.handle().to_string(),
            stream,
            log: page_of_lines(bytes, from_line, lines),
        })
    }

    pub(super) fn cancel_run(&self, caller: &CallerId, run: &RunDir) -> Result<JobDone, ToolError> {
        let key = run.handle().as_str().to_owned();
        let mut slot = self.slots().get(&key).cloned();
        if slot.is_none() {
            // A run followed by nobody may be a cluster job to re-attach;
            // one followed by another process is cancelled there, at our
            // request.
            let report = self.report(caller, run);
            if report.note == Some(Note::FollowedElsewhere) {
                request_cancel(run)?;
                return Ok(JobDone {
                    run_handle: key,
                    outcome: CANCEL_REQUESTED,
                });
            }
            slot = self.slots().get(&key).cloned();
        }
        let outcome = match slot {
            Some(Slot::Job(id)) if self.0.jobs.cancel(caller, &id)? => "cancelled",
            Some(Slot::Starting(cancel)) => {
                cancel.cancel();
                "cancelled"
            }
            Some(Slot::Queued) => {
                self.remove_slot(&key);
                write_record(run, RecordedState::Abandoned, None);
                "cancelled"
            }
            _ => "not running",
        };
        Ok(JobDone {
            run_handle: key,
            outcome,
        })
    }

    pub(super) async fn delete_run(
        &self,
        caller: &CallerId,
        run: RunDir,
    ) -> Result<JobDone, ToolError> {
        let key = run.handle().as_str().to_owned();
        if !self.slots().contains_key(&key)
            && self.cancel_run(caller, &run)?.outcome == CANCEL_REQUESTED
            && !self.let_go(caller, &run).await?
        {
            return Err(ToolError::rejected(
                "the run is still followed by another server process of this run root (asked \
                 to cancel it): try again shortly",
            ));
        }
        match self.remove_slot(&key) {
            Some(Slot::Job(id)) => {
                let _ = self.0.jobs.forget(caller, &id);
            }
            Some(Slot::Starting(cancel)) => cancel.cancel(),
            Some(Slot::Queued) | None => {}
        }
        run.remove_async().await?;
        Ok(JobDone {
            run_handle: key,
            outcome: "deleted",
        })
    }

    pub(super) async fn list_runs(&self, caller: &CallerId) -> Result<JobList, ToolError> {
        let max = self.0.options.max_listed;
        let mut handles = self.0.runs.list_bounded_async(caller, max + 1).await?;
        let truncated = handles.len() > max;
        handles.truncate(max);
        let desk = self.clone();
        let caller = caller.clone();
        let runs = tokio::task::spawn_blocking(move || {
            handles
                .iter()
                .filter_map(|h| {
                    // A run deleted since the listing is left out, and
                    // so is a detached body's task (no job's run).
                    let dir = desk.0.runs.resolve(h.as_str(), &caller).ok()?;
                    if desk.holds_detached_task(&dir) {
                        return None;
                    }
                    Some(JobSummary {
                        run_handle: h.to_string(),
                        state: desk.report(&caller, &dir).state,
                    })
                })
                .collect()
        })
        .await
        .map_err(ToolError::internal)?;
        Ok(JobList { runs, truncated })
    }
}

/// A wait bounded only by the run's own wall-time limit.
const UNTIL_THE_END: Duration = Duration::from_secs(7 * 24 * 3600);

/// How often a wait or a sequence looks at a run.
const POLL: Duration = Duration::from_millis(50);

/// Runs `f` (file-system or cluster work) on tokio's blocking pool.
async fn off_worker<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "a blocking job step did not finish");
            Err(ToolError::internal("a job step did not finish"))
        }
    }
}
/// How often the process that follows a run looks for a cancel request.
const CANCEL_WATCH: Duration = Duration::from_millis(200);
/// The outcome of a cancel that another server process carries out.
pub(super) const CANCEL_REQUESTED: &str = "cancel requested";

/// The job table's sink for a desk's run: the authenticated record, the
/// logs, the bytes used (quota and retention read them), and the run's
/// lease, released when the job's end is recorded (the sink drops).
struct DeskSink {
    dir: RunDir,
    _lease: RunLease,
}

impl StatusSink for DeskSink {
    fn write_status(&self, json: &[u8]) -> std::io::Result<()> {
        write_job_record(&self.dir, json).map_err(std::io::Error::other)
    }

    fn write_logs(&self, outcome: &Outcome) -> std::io::Result<()> {
        let logs = self.dir.write_logs(outcome);
        if let Err(e) = self.dir.record_usage(true) {
            tracing::warn!(error = %e, "run usage not recorded");
        }
        logs
    }
}

/// Writes a record of a state the job table does not write itself.
fn write_record(dir: &RunDir, state: RecordedState, was: Option<RecordedState>) {
    let doc = serde_json::json!({
        "state": state,
        "was": was,
        "since_ms": now_ms(),
    });
    let written = serde_json::to_vec(&doc)
        .map_err(|e| e.to_string())
        .and_then(|b| write_job_record(dir, &b).map_err(|e| e.to_string()));
    if let Err(e) = written {
        tracing::warn!(run = %dir.handle(), error = %e, "job record not written");
    }
}

fn fill_outcome(report: &mut JobReport, o: &Outcome) {
    report.state = JobPhase::ended(o.cancelled, o.timed_out, o.success());
    match o.termination {
        Termination::Exited(code) => report.exit_code = Some(code),
        Termination::Signaled(sig) => report.signal = Some(sig),
        Termination::Killed | Termination::Unknown => {}
    }
    report.limit = o.limit.map(|l| l.describe());
    report.wall_seconds = Some(o.wall_time.as_secs_f64());
    report.cpu_seconds = o.cpu_time.map(|d| d.as_secs_f64());
}

fn fill_record(report: &mut JobReport, r: &JobRecord) {
    report.since_ms = r.since_ms;
    match r.state {
        RecordedState::Finished => {
            report.state = JobPhase::ended(r.cancelled, r.timed_out, r.success);
            match r.termination.as_deref() {
                Some("exited") => report.exit_code = r.code,
                Some("signaled") => report.signal = r.code,
                _ => {}
            }
            report.limit = r
                .limit
                .as_deref()
                .and_then(LimitHit::from_token)
                .map(LimitHit::describe);
            report.wall_seconds = r.wall_ms.map(|ms| ms as f64 / 1000.0);
            report.cpu_seconds = r.cpu_ms.map(|ms| ms as f64 / 1000.0);
        }
        RecordedState::NotLaunched => {
            report.state = JobPhase::Failed;
            report.note = Some(Note::NotLaunched);
        }
        RecordedState::Abandoned => {
            report.state = JobPhase::Cancelled;
            report.note = Some(Note::Abandoned);
        }
        RecordedState::Interrupted => {
            report.state = JobPhase::Interrupted;
            report.note = Some(match r.was {
                Some(RecordedState::Running) => Note::InterruptedRunning,
                _ => Note::InterruptedQueued,
            });
        }
        RecordedState::Queued => report.state = JobPhase::Queued,
        RecordedState::Running => report.state = JobPhase::Running,
    }
}

/// `lines` lines of untrusted text from line `from_line`, or the last
/// `lines` lines.
fn page_of_lines(bytes: Vec<u8>, from_line: Option<u64>, lines: u32) -> Untrusted<Vec<String>> {
    let limits = TextLimits::new(crate::paging::DEFAULT_TEXT_BYTES, lines);
    match from_line {
        Some(offset) => Untrusted::lines_page(bytes, offset, limits),
        None => Untrusted::lines_tail(bytes, limits),
    }
}

async fn read_result_bytes<J: SolverJob>(run: &RunDir) -> Result<Vec<u8>, ToolError> {
    let read = J::RESULT_FILE.read_bounded(run, J::MAX_RESULT_BYTES).await;
    read.map_err(|e| match e {
        RunError::FileNotFound => ToolError::rejected("the run succeeded but wrote no result file"),
        RunError::TooLarge => {
            ToolError::rejected("the run's result is larger than this server reads")
        }
        RunError::FileRefused => ToolError::rejected("the run's result file is not a plain file"),
        other => other.into(),
    })
}

fn parse_result<J: SolverJob>(job: &J, bytes: &[u8]) -> Result<J::Result, ToolError> {
    let parsed: J::Result = job.parse_result(bytes).map_err(|why| {
        tracing::warn!(parse = why, "a solver's result file does not parse");
        ToolError::rejected("the solver's result file is malformed")
    })?;
    job.check_result(&parsed).map_err(|why| {
        tracing::warn!(check = why, "a solver's result failed its check");
        ToolError::rejected("the solver's result failed the server's checks")
    })?;
    Ok(parsed)
}

/// The erased result reader of a desk of job kind `J` (the desk's tools
/// know no `J`).
fn erased_result<'a, J: SolverJob>(
    job: &'a (dyn Any + Send + Sync),
    run: &'a RunDir,
) -> BoxFuture<'a, Result<Value, ToolError>> {
    Box::pin(async move {
        let Some(job) = job.downcast_ref::<J>() else {
            return Err(ToolError::internal("job desk of another job kind"));
        };
        let bytes = read_result_bytes::<J>(run).await?;
        let parsed = parse_result(job, &bytes)?;
        serde_json::to_value(&parsed).map_err(ToolError::internal)
    })
}

/// Every place of `schema` (its `$defs` included) that admits free text:
/// a string without `enum` or `const`, by its path of property names.
fn free_text_fields(schema: &Value) -> Vec<String> {
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                let is_string = match m.get("type") {
                    Some(Value::String(t)) => t == "string",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                    _ => false,
                };
                if is_string && !m.contains_key("enum") && !m.contains_key("const") {
                    out.push(path.to_owned());
                }
                for (k, c) in m {
                    if let ("properties" | "$defs", Value::Object(named)) = (k.as_str(), c) {
                        for (name, s) in named {
                            walk(s, &format!("{path}.{name}"), out);
                        }
                    } else {
                        walk(c, path, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, path, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, "result", &mut out);
    out.sort();
    out.dedup();
    out
}
