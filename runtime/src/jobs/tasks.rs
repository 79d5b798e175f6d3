//! Jobs served as MCP tasks. A `task` tool whose body is
//! [`JobService::run`](super::JobService::run) answers a client that takes
//! tasks with one at once; the task is the job's run. Nothing of it lives
//! in memory: the task id is the run's handle, its record (creation time)
//! is an authenticated file in the run directory, and its status and
//! result are read from the run's job record and result file. So a task
//! answers only the caller that owns the run (anyone else gets the answer
//! of an unknown id), survives a restart of its server, and is answered by
//! any server process that shares the run root.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, DetailedTask, InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};

use super::detached::{self, Detached, Standing};
use super::report::{JobOutcomeOut, JobPhase, JobReport};
use super::service::JobDesk;
use super::status::{now_ms, sealed, unseal};
use crate::error::ToolError;
use crate::identity::CallerId;
use crate::output::Output;
use crate::runs::{FileName, RunDir, RunError};
use crate::tasks::unknown_task;

/// The run file that makes a run a task.
const TASK_FILE: FileName = FileName::fixed("mcp-task.json");
const TASK_LABEL: &[u8] = b"mcp-task";
/// The kind in the record of a task whose work is a tool's body.
const DETACHED_KIND: &str = "tool body";
/// How often clients are asked to poll.
pub const TASK_POLL_INTERVAL_MS: u64 = 500;
/// Longest a `tasks/cancel` waits for the cancelled run's end to be
/// recorded (a tree kill takes milliseconds; a cluster job's `scancel`
/// longer): past it the answer goes, and the task turns `cancelled` soon
/// after.
pub const CANCEL_SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(serde::Serialize, serde::Deserialize)]
struct TaskRecord {
    created_ms: u64,
    /// The job type whose desk made the task (absent in records of
    /// earlier versions: any desk of the run root answers those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
}

/// The task status of a run in `phase`: live runs work, a cancelled run is
/// a cancelled task, every other end completes the task (its result says
/// how the run ended).
fn task_status(phase: JobPhase) -> TaskStatus {
    match phase {
        JobPhase::Queued | JobPhase::Running => TaskStatus::Working,
        JobPhase::Cancelled => TaskStatus::Cancelled,
        _ => TaskStatus::Completed,
    }
}

impl JobDesk {
    /// Makes the run in `dir` a task: writes its record; returns the seed.
    pub(crate) fn make_task(&self, dir: &RunDir) -> Result<Task, ToolError> {
        self.make_task_of(dir, self.kind())
    }

    /// A task of `caller` whose work is a tool's body, in a fresh run of
    /// this desk's run root (its quotas apply), whose lease the answer
    /// holds while the body runs.
    pub(crate) fn start_detached(
        &self,
        caller: &CallerId,
    ) -> Result<(Arc<Detached>, Task), ToolError> {
        let (_, dir) = self.runs().create(caller)?;
        let lease = dir
            .lease()?
            .ok_or_else(|| ToolError::internal("a fresh run's lease is held elsewhere"))?;
        let task = self.make_task_of(&dir, DETACHED_KIND)?;
        Ok((Arc::new(Detached::new(dir, lease)), task))
    }

    fn make_task_of(&self, dir: &RunDir, kind: &str) -> Result<Task, ToolError> {
        let created_ms = now_ms();
        let record = TaskRecord {
            created_ms,
            kind: Some(kind.to_owned()),
        };
        let body = serde_json::to_vec(&record).map_err(ToolError::internal)?;
        dir.write_atomic(&TASK_FILE, &sealed(dir, TASK_LABEL, &body))?;
        let at = iso8601(created_ms);
        let task = Task::new(dir.handle().as_str(), TaskStatus::Working, at.clone(), at)
            .with_poll_interval_ms(TASK_POLL_INTERVAL_MS);
        Ok(self.with_ttl(task, false))
    }

    /// `task` with its time to live: the run root's idle limit for a run
    /// in its state (a task lives as long as its run, which a use keeps
    /// alive); none when runs never expire.
    fn with_ttl(&self, task: Task, finished: bool) -> Task {
        match self.runs().idle_limit(finished) {
            Some(limit) => task.with_ttl_ms(u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)),
            None => task,
        }
    }

    /// The run of task `task_id` of `caller`, when the task was made, and
    /// whether its work is a tool's body.
    fn task_run(&self, caller: &CallerId, task_id: &str) -> Result<(RunDir, u64, bool), ErrorData> {
        let dir = match self.runs().resolve(task_id, caller) {
            Ok(d) => d,
            Err(RunError::UnknownRun) => return Err(unknown_task()),
            Err(e) => {
                tracing::warn!(error = %e, "task lookup failed");
                return Err(unknown_task());
            }
        };
        let record = task_record(&dir)
            .filter(|r| {
                r.kind
                    .as_deref()
                    .is_none_or(|k| k == self.kind() || k == DETACHED_KIND)
            })
            .ok_or_else(unknown_task)?;
        let body = record.kind.as_deref() == Some(DETACHED_KIND);
        Ok((dir, record.created_ms, body))
    }

    /// Whether run `dir` holds a detached body's task (not a job's run).
    pub(super) fn holds_detached_task(&self, dir: &RunDir) -> bool {
        task_record(dir).is_some_and(|r| r.kind.as_deref() == Some(DETACHED_KIND))
    }

    /// The state of the detached task of run `dir`.
    fn detached_task(&self, task_id: &str, created_ms: u64, dir: &RunDir) -> DetailedTask {
        let payload = match detached::standing(dir) {
            Standing::Working => TaskPayload::Working,
            Standing::InputRequired(input_requests) => {
                TaskPayload::InputRequired { input_requests }
            }
            Standing::Completed(result) => TaskPayload::Completed { result },
            Standing::Failed(error) => TaskPayload::Failed { error },
            Standing::Cancelled => TaskPayload::Cancelled,
        };
        let live = matches!(
            payload,
            TaskPayload::Working | TaskPayload::InputRequired { .. }
        );
        let at = iso8601(created_ms);
        let task = Task::new(task_id, TaskStatus::Working, at, iso8601(now_ms()))
            .with_poll_interval_ms(TASK_POLL_INTERVAL_MS);
        DetailedTask::new(self.with_ttl(task, !live), payload)
    }

    /// `tasks/get`: the task's state, with its result once it ended. A task
    /// id that is malformed, unknown, not a task, or another caller's gets
    /// the same error. A server that implements `ServerHandler` itself
    /// forwards the tasks methods here; [`Server::tasks`](crate::Server::tasks)
    /// does it for the others.
    pub async fn get_task(
        &self,
        caller: &CallerId,
        task_id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let (dir, created_ms, body) = self.task_run(caller, task_id)?;
        if body {
            return Ok(self.detached_task(task_id, created_ms, &dir));
        }
        let report = self.report(caller, &dir);
        let task = self.with_ttl(
            task_of(task_id, created_ms, &report),
            !report.state.is_live(),
        );
        let payload = match task_status(report.state) {
            TaskStatus::Working => TaskPayload::Working,
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Completed {
                result: self.task_result_object(caller, &dir, report).await?,
            },
        };
        Ok(DetailedTask::new(task, payload))
    }

    /// The final result of a task's run (2025-11-25 `tasks/result`): the
    /// task tool's output (the run's report, and its result if it
    /// succeeded).
    pub async fn task_result(
        &self,
        caller: &CallerId,
        task_id: &str,
    ) -> Result<CallToolResult, ErrorData> {
        let (dir, created_ms, body) = self.task_run(caller, task_id)?;
        if body {
            return match self.detached_task(task_id, created_ms, &dir).payload {
                TaskPayload::Completed { result } => {
                    serde_json::from_value(serde_json::Value::Object(result))
                        .map_err(|_| ErrorData::internal_error("Internal error", None))
                }
                TaskPayload::Failed { error } => {
                    Err(serde_json::from_value(serde_json::Value::Object(error))
                        .unwrap_or_else(|_| ErrorData::internal_error("Internal error", None)))
                }
                _ => Err(ErrorData::invalid_request("the task has not ended", None)),
            };
        }
        let report = self.report(caller, &dir);
        self.outcome_result(caller, &dir, report).await
    }

    async fn task_result_object(
        &self,
        caller: &CallerId,
        dir: &RunDir,
        report: JobReport,
    ) -> Result<JsonObject, ErrorData> {
        let r = self.outcome_result(caller, dir, report).await?;
        match serde_json::to_value(r) {
            Ok(serde_json::Value::Object(m)) => Ok(m),
            _ => Err(ErrorData::internal_error(
                "task result not serialisable",
                None,
            )),
        }
    }

    async fn outcome_result(
        &self,
        caller: &CallerId,
        dir: &RunDir,
        report: JobReport,
    ) -> Result<CallToolResult, ErrorData> {
        let result = if report.state == JobPhase::Succeeded {
            match self.result_value(caller, dir).await {
                Ok(v) => Some(v),
                // A result refused (malformed, over its checks) is a tool
                // error, as the tool itself would have answered.
                Err(e) => return Ok(e.into_call_tool_result()),
            }
        } else {
            None
        };
        let succeeded = report.state == JobPhase::Succeeded;
        let mut out = Output::new(JobOutcomeOut {
            run_handle: dir.handle().to_string(),
            report,
            result,
        });
        if !succeeded {
            // A run that did not succeed is the tool's failure: the task
            // completes with an error result (`failed` is for protocol
            // errors), its report saying how the run ended.
            out = out.failed();
        }
        Ok(match out.into_call_tool_result("task") {
            Ok(r) => r,
            Err(e) => e.into_call_tool_result(),
        })
    }

    /// `tasks/cancel`: cancels the task's run and answers once the task is
    /// `cancelled` (the run's tree killed and its end recorded, within
    /// [`CANCEL_SETTLE`]). A task that had already ended keeps its status,
    /// and the answer is the acknowledgement all the same (cancelling is
    /// idempotent in the 2026-07-28 tasks extension).
    pub async fn cancel_task(&self, caller: &CallerId, task_id: &str) -> Result<(), ErrorData> {
        self.cancel_as_task(caller, task_id, true).await
    }

    /// `tasks/cancel` of 2025-11-25, which refuses to cancel a task that
    /// has already ended (invalid params).
    pub(crate) async fn cancel_live_task(
        &self,
        caller: &CallerId,
        task_id: &str,
    ) -> Result<(), ErrorData> {
        self.cancel_as_task(caller, task_id, false).await
    }

    async fn cancel_as_task(
        &self,
        caller: &CallerId,
        task_id: &str,
        ended_ok: bool,
    ) -> Result<(), ErrorData> {
        let (dir, _, body) = self.task_run(caller, task_id)?;
        if body {
            return match detached::request_cancel(&dir) {
                Ok(true) => Ok(()),
                Ok(false) if ended_ok => Ok(()),
                Ok(false) => Err(ErrorData::invalid_params(
                    "the task has already ended",
                    None,
                )),
                Err(e) => {
                    tracing::error!(error = %e, "a task's cancel request was not kept");
                    Err(ErrorData::internal_error("Internal error", None))
                }
            };
        }
        match self.cancel_run(caller, &dir) {
            Ok(done) if matches!(done.outcome, "cancelled" | super::service::CANCEL_REQUESTED) => {}
            Ok(_) if ended_ok => return Ok(()),
            Ok(_) => {
                return Err(ErrorData::invalid_params(
                    "the task has already ended",
                    None,
                ));
            }
            Err(ToolError::Rejected(why)) => return Err(ErrorData::invalid_request(why, None)),
            Err(e) => return Err(ErrorData::internal_error(e.to_string(), None)),
        }
        self.settle(caller, &dir).await;
        Ok(())
    }

    /// `tasks/update` (2026-07-28): the answers to a detached body's
    /// questions, each kept for the body; keys the task did not ask for
    /// are ignored, as the extension asks (a job's run asks nothing, so
    /// every key is). The answer is the acknowledgement; an unknown task is
    /// the one unknown-task error.
    pub fn update_task(
        &self,
        caller: &CallerId,
        task_id: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let (dir, _, body) = self.task_run(caller, task_id)?;
        if body {
            detached::answer(&dir, responses)?;
        }
        Ok(())
    }

    /// `tasks/list` (2025-11-25): the caller's tasks, newest state each.
    pub async fn list_tasks(&self, caller: &CallerId) -> Result<Vec<Task>, ErrorData> {
        let handles = self
            .runs()
            .list_bounded_async(caller, self.max_listed())
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut tasks = Vec::new();
        for handle in handles {
            let id = handle.as_str();
            if let Ok((dir, created_ms, body)) = self.task_run(caller, id) {
                if body {
                    tasks.push(self.detached_task(id, created_ms, &dir).task);
                    continue;
                }
                let report = self.report(caller, &dir);
                let mut task =
                    self.with_ttl(task_of(id, created_ms, &report), !report.state.is_live());
                task.status = task_status(report.state);
                tasks.push(task);
            }
        }
        Ok(tasks)
    }
}

/// The task record of run `dir`, if it is a task's.
fn task_record(dir: &RunDir) -> Option<TaskRecord> {
    let sealed = dir.read_bounded(&TASK_FILE, 512).ok()?;
    serde_json::from_slice(unseal(dir, TASK_LABEL, &sealed)?).ok()
}

/// The task of a run (status `working`; the caller sets the real one).
fn task_of(task_id: &str, created_ms: u64, report: &JobReport) -> Task {
    let mut task = Task::new(
        task_id,
        TaskStatus::Working,
        iso8601(created_ms),
        iso8601(report.since_ms.unwrap_or_else(now_ms)),
    )
    .with_poll_interval_ms(TASK_POLL_INTERVAL_MS);
    if let Some(text) = status_message(report) {
        task = task.with_status_message(text);
    }
    task
}

/// A server-authored line on a live task (numbers and fixed words only).
fn status_message(report: &JobReport) -> Option<String> {
    Some(match (report.state, &report.progress) {
        (JobPhase::Running, Some(p)) => format!("running: {} of {} {}", p.done, p.total, p.unit),
        (JobPhase::Running, None) => "running".to_owned(),
        (JobPhase::Queued, _) => "queued".to_owned(),
        (state, _) => match report.note {
            Some(note) => note.text().to_owned(),
            None => format!("{state:?}").to_lowercase(),
        },
    })
}

/// `ms` since the Unix epoch as an RFC 3339 UTC timestamp
/// (`2026-12-01T11:00:00.000Z`).
pub(crate) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The job desks a server answers tasks from ([`Server::tasks`](crate::Server::tasks),
/// once per job service): a task id is looked up in each, in order, and
/// answered by the one whose job made it; nobody's is the one unknown-task
/// answer.
pub(crate) struct Desks<'a>(pub(crate) Vec<&'a JobDesk>);

impl Desks<'_> {
    /// The desk of task `task_id` of `caller`.
    pub(crate) fn of(&self, caller: &CallerId, task_id: &str) -> Result<&JobDesk, ErrorData> {
        self.0
            .iter()
            .copied()
            .find(|d| d.task_run(caller, task_id).is_ok())
            .ok_or_else(unknown_task)
    }

    /// Every task of `caller`, each once.
    pub(crate) async fn list_tasks(&self, caller: &CallerId) -> Result<Vec<Task>, ErrorData> {
        let mut all: Vec<Task> = Vec::new();
        for desk in &self.0 {
            for t in desk.list_tasks(caller).await? {
                if !all.iter().any(|seen| seen.task_id == t.task_id) {
                    all.push(t);
                }
            }
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_122_800_123), "2026-12-01T11:00:00.123Z");
    }
}
