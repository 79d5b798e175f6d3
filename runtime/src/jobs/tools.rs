//! The life-cycle tools of a [`JobService`](super::JobService), declared
//! once on the kind-independent [`JobDesk`] and mounted by each server
//! under its prefix ([`JobService::tools`](super::JobService::tools)).
//! Each body hands over to the desk; every argument went through the same
//! generated parser and revalidation as any hardened tool.

use std::time::Duration;

use super::report::{
    FilePage, JobDone, JobList, JobPhase, JobReport, JobResultOut, LogPage, LogStream,
};
use super::service::CANCEL_REQUESTED;
use super::service::JobDesk;
use crate::prelude::*;

#[hardened_tools(router = life_cycle_router)]
impl JobDesk {
    /// The status of a run: its state (queued, running, succeeded, failed,
    /// timed_out, cancelled, interrupted), its progress while it runs, and
    /// how it ended (exit code or signal, the limit that stopped it, wall
    /// and CPU time).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    pub async fn status(
        &self,
        ctx: ToolContext,
        run: RunDir,
    ) -> Result<Output<JobReport>, ToolError> {
        Ok(Output::new(self.report(ctx.caller(), &run)))
    }

    /// Wait at most `seconds` for a run to end, with progress notifications
    /// while it runs (when the call carries a progress token); returns its
    /// status, still running if the time ran out.
    #[hardened_tool(
        max_cost = 60,
        units = "seconds",
        cost = seconds,
        timeout_s = 65,
        concurrency = 4,
        annotations(read_only)
    )]
    pub async fn wait(
        &self,
        ctx: ToolContext,
        run: RunDir,
        #[bounded(min = 1, max = 60, default = 30, units = "s")] seconds: u32,
    ) -> Result<Output<JobReport>, ToolError> {
        let limit = Duration::from_secs(u64::from(seconds));
        Ok(Output::new(self.wait_report(&ctx, &run, limit).await?))
    }

    /// A page of a run's log (standard error by default), as untrusted
    /// data: `lines` lines from line `from_line` (0 is the first), or the
    /// last `lines` lines when `from_line` is omitted. A running solver's
    /// log holds its first and last bytes so far; a finished one's, the
    /// same with a line saying how many bytes were left out between them.
    #[hardened_tool(
        max_cost = 1000,
        units = "lines",
        cost = lines,
        annotations(read_only)
    )]
    pub async fn log(
        &self,
        ctx: ToolContext,
        run: RunDir,
        #[bounded(default = "stderr")] stream: LogStream,
        #[bounded(
            min = 0,
            max = 1_000_000_000,
            description = "First line of the page (0-based); omit for the last lines"
        )]
        from_line: Option<u64>,
        #[bounded(min = 1, max = 1000, default = 50)] lines: u32,
    ) -> Result<Output<LogPage>, ToolError> {
        let page = self
            .log_page(ctx.caller(), &run, stream, from_line, lines)
            .await?;
        Ok(Output::new(page))
    }

    /// A page of a text file the run writes (the server names the files it
    /// offers: `name`'s values), as untrusted data: `lines` lines from line
    /// `from_line` (0 is the first), or the last `lines` lines when
    /// `from_line` is omitted. Readable while the run goes on.
    #[hardened_tool(
        max_cost = 1000,
        units = "lines",
        cost = lines,
        annotations(read_only)
    )]
    pub async fn file(
        &self,
        run: RunDir,
        #[bounded(
            max_len = 32,
            pattern = "^[a-z][a-z0-9_]*$",
            description = "Which file"
        )]
        name: String,
        #[bounded(
            min = 0,
            max = 1_000_000_000,
            description = "First line of the page (0-based); omit for the last lines"
        )]
        from_line: Option<u64>,
        #[bounded(min = 1, max = 1000, default = 50)] lines: u32,
    ) -> Result<Output<FilePage>, ToolError> {
        Ok(Output::new(
            self.file_page(&run, &name, from_line, lines).await?,
        ))
    }

    /// The result of a run that succeeded, as the solver wrote it and the
    /// server checked it.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    pub async fn result(
        &self,
        ctx: ToolContext,
        run: RunDir,
    ) -> Result<Output<JobResultOut>, ToolError> {
        let result = self.result_value(ctx.caller(), &run).await?;
        Ok(Output::new(JobResultOut {
            run_handle: run.handle().to_string(),
            result,
        }))
    }

    /// The caller's runs, each with its state.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    pub async fn list(&self, ctx: ToolContext) -> Result<Output<JobList>, ToolError> {
        Ok(Output::new(self.list_runs(ctx.caller()).await?))
    }

    /// Cancel a run: kills the solver's whole process tree (a queued run is
    /// never launched). A run that has ended is left as it is. A run
    /// followed by another server process of the same run root is
    /// cancelled there (`cancel requested` when it has not ended yet).
    #[hardened_tool(
        max_cost = 1,
        units = "calls",
        cost = 1.0,
        annotations(destructive, idempotent)
    )]
    pub async fn cancel(
        &self,
        ctx: ToolContext,
        run: RunDir,
    ) -> Result<Output<JobDone>, ToolError> {
        self.confirm(
            &ctx,
            "Cancel this run? Its solver is stopped, and what it has not written is lost.",
        )
        .await?;
        let mut done = self.cancel_run(ctx.caller(), &run)?;
        if done.outcome == CANCEL_REQUESTED {
            // Carried out by the server process that follows the run.
            let report = self.settle(ctx.caller(), &run).await;
            if report.state == JobPhase::Cancelled {
                done.outcome = "cancelled";
            } else if !report.state.is_live() {
                done.outcome = "not running";
            }
        }
        Ok(Output::new(done))
    }

    /// Delete a run and everything in it, cancelling it first if it runs.
    #[hardened_tool(
        max_cost = 1,
        units = "calls",
        cost = 1.0,
        annotations(destructive, idempotent)
    )]
    pub async fn delete(
        &self,
        ctx: ToolContext,
        run: RunDir,
    ) -> Result<Output<JobDone>, ToolError> {
        self.confirm(
            &ctx,
            "Delete this run and everything in it? This cannot be undone.",
        )
        .await?;
        Ok(Output::new(self.delete_run(ctx.caller(), run).await?))
    }
}

impl JobDesk {
    /// The life-cycle tools, unprefixed, before mounting.
    pub(super) fn life_cycle_set() -> ToolSet<JobDesk> {
        Self::life_cycle_router_set()
    }
}
