//! Tasks whose work is a tool's whole body (`#[hardened_tool(task(detached))]`):
//! the call is answered with a task at once and the body runs on in the
//! server that took the call. As a job's task, it lives in a run directory
//! of the caller (its handle is the task id), so that every server process
//! sharing the run root answers for it:
//!
//! - the body's questions to the client wait in the run ([`ASKED_FILE`]),
//!   shown as the task's `inputRequests` (status `input_required`); a
//!   `tasks/update` writes each answer asked for into a file of its own,
//!   where the body finds it;
//! - its result (or the protocol error that ended it) is kept in the run,
//!   sealed, until the task expires with its run;
//! - `tasks/cancel` leaves a sealed request the body's server acts on;
//! - the body's server holds the run's lease while the body runs: a task
//!   with neither a result nor a lease is one whose server stopped, and
//!   fails.
//!
//! Every file is sealed with the run root's key and bound to its run: none
//! is taken from anyone else, and nothing outside the server writes there.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, InputRequest, InputRequests, InputResponses, JsonObject};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::status::{now_ms, sealed, unseal};
use crate::error::ToolError;
use crate::runs::{FileName, RunDir, RunLease};

/// The questions a detached body asked and has no answer to yet.
const ASKED_FILE: FileName = FileName::fixed("mcp-asked.json");
/// How the body ended: its result, or the protocol error that ended it.
const ENDED_FILE: FileName = FileName::fixed("mcp-ended.json");
/// A cancel request, from `tasks/cancel`.
const CANCEL_FILE: FileName = FileName::fixed("mcp-cancel");

const ASKED_LABEL: &[u8] = b"mcp-asked";
const ENDED_LABEL: &[u8] = b"mcp-ended";
const CANCEL_LABEL: &[u8] = b"mcp-cancel";

/// The largest kept result read back (a larger one is kept as the fixed
/// internal error instead).
const MAX_ENDED_BYTES: usize = 16 << 20;
/// The largest set of questions, and the largest answer, kept.
const MAX_ASKED_BYTES: usize = 256 << 10;
/// How often the body's server looks for answers and cancel requests.
const POLL: Duration = Duration::from_millis(100);
/// How long a body waits for an answer.
const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// How a detached task stands, as its run's files say.
pub(crate) enum Standing {
    Working,
    InputRequired(InputRequests),
    Completed(JsonObject),
    Failed(JsonObject),
    Cancelled,
}

/// How a body ended, as kept.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Ended {
    Result(JsonObject),
    Error(JsonObject),
}

/// A body's end and when it was kept (ms since the epoch): a cancel
/// request made before it wins, one made after it changes nothing.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    at_ms: u64,
    ended: Ended,
}

/// The run of a detached body, held by the server that runs it: the run's
/// lease, the cancel token of the body, the questions' keys used so far.
pub(crate) struct Detached {
    dir: RunDir,
    _lease: RunLease,
    cancel: CancellationToken,
    asked: tokio::sync::Mutex<BTreeMap<&'static str, u32>>,
}

impl std::fmt::Debug for Detached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detached")
            .field("run", self.dir.handle())
            .finish_non_exhaustive()
    }
}

impl Detached {
    /// The body's run `dir`, whose lease this server now holds.
    pub(crate) fn new(dir: RunDir, lease: RunLease) -> Self {
        Self {
            dir,
            _lease: lease,
            cancel: CancellationToken::new(),
            asked: tokio::sync::Mutex::default(),
        }
    }

    /// The token the body's context is cancelled through.
    pub(crate) fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Cancels the body once a cancel request appears in its run, until
    /// the body ends (drop the future then).
    pub(crate) async fn watch_cancel(self: Arc<Self>) {
        loop {
            tokio::time::sleep(POLL).await;
            if cancel_requested(&self.dir).is_some() {
                self.cancel.cancel();
                return;
            }
        }
    }

    /// Keeps how the body ended: `result`, or the protocol `error` that
    /// ended it (a result too large to keep is the fixed internal error).
    pub(crate) fn end(&self, ended: Result<CallToolResult, ErrorData>) {
        let kept = match ended {
            Ok(result) => object(&result).map(Ended::Result),
            Err(error) => object(&error).map(Ended::Error),
        };
        let at_ms = now_ms();
        let keep = |ended| serde_json::to_vec(&Kept { at_ms, ended }).ok();
        let mut body = kept.and_then(keep);
        if body
            .as_ref()
            .is_none_or(|b| b.len() > MAX_ENDED_BYTES - 128)
        {
            tracing::error!("a task's result could not be kept whole: kept as an internal error");
            body = object(&ErrorData::internal_error("Internal error", None))
                .and_then(|e| keep(Ended::Error(e)));
        }
        let Some(body) = body else { return };
        if let Err(e) = self
            .dir
            .write_atomic(&ENDED_FILE, &sealed(&self.dir, ENDED_LABEL, &body))
        {
            tracing::error!(error = %e, "a task's result was not kept");
        }
        if let Err(e) = self.dir.record_usage(true) {
            tracing::warn!(error = %e, "a task's run usage was not recorded");
        }
    }

    /// The answer to the question `key` (`request`): asked in the run and
    /// waited for, at most ten minutes, until the body is cancelled.
    pub(crate) async fn ask(
        &self,
        key: &'static str,
        request: InputRequest,
    ) -> Result<Value, ToolError> {
        // A key asked again is a question of its own (`key#2`, …).
        let id = {
            let mut used = self.asked.lock().await;
            let n = used.entry(key).or_insert(0);
            *n += 1;
            if *n == 1 {
                key.to_owned()
            } else {
                format!("{key}#{n}")
            }
        };
        self.change_asked(|asked| {
            asked.insert(id.clone(), request);
        })
        .await?;
        let answer = tokio::select! {
            () = self.cancel.cancelled() => Err(ToolError::Cancelled),
            a = tokio::time::timeout(ANSWER_WAIT, self.answer_of(&id)) => {
                a.map_err(|_| ToolError::NoAnswer)
            }
        };
        self.change_asked(|asked| {
            asked.remove(&id);
        })
        .await?;
        if let Ok(name) = answer_file(&id) {
            let _ = self.dir.remove_file(&name);
        }
        answer
    }

    /// Waits for the answer to `id`.
    async fn answer_of(&self, id: &str) -> Value {
        loop {
            if let Some(v) = read_answer(&self.dir, id) {
                return v;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Changes the kept questions (only this server writes them: the
    /// body's questions are its own).
    async fn change_asked(&self, f: impl FnOnce(&mut InputRequests)) -> Result<(), ToolError> {
        let _one = self.asked.lock().await;
        let mut asked = read_asked(&self.dir);
        f(&mut asked);
        let body = serde_json::to_vec(&asked).map_err(ToolError::internal)?;
        if body.len() > MAX_ASKED_BYTES {
            return Err(ToolError::internal(
                "a task's questions are too large to keep",
            ));
        }
        self.dir
            .write_atomic(&ASKED_FILE, &sealed(&self.dir, ASKED_LABEL, &body))?;
        Ok(())
    }
}

/// `value` as a JSON object.
fn object(value: &impl serde::Serialize) -> Option<JsonObject> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The file of the answer to question `id`: named by a digest of it, so
/// that any key the server chose, of any length, names a file of its own.
fn answer_file(id: &str) -> Result<FileName, ToolError> {
    use sha2::Digest as _;
    use std::fmt::Write;
    let mut name = String::from("mcp-answer-");
    for b in &sha2::Sha256::digest(id.as_bytes())[..16] {
        let _ = write!(name, "{b:02x}");
    }
    FileName::new(&name).map_err(|_| ToolError::internal("a question's key names no file"))
}

fn answer_label(id: &str) -> Vec<u8> {
    [b"mcp-answer:".as_slice(), id.as_bytes()].concat()
}

fn read_sealed(dir: &RunDir, name: &FileName, label: &[u8], max: usize) -> Option<Vec<u8>> {
    let bytes = dir.read_bounded(name, max + 128).ok()?;
    unseal(dir, label, &bytes).map(<[u8]>::to_vec)
}

fn read_asked(dir: &RunDir) -> InputRequests {
    read_sealed(dir, &ASKED_FILE, ASKED_LABEL, MAX_ASKED_BYTES)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn read_answer(dir: &RunDir, id: &str) -> Option<Value> {
    let name = answer_file(id).ok()?;
    let body = read_sealed(dir, &name, &answer_label(id), MAX_ASKED_BYTES)?;
    serde_json::from_slice(&body).ok()
}

/// When a cancel request was made (ms since the epoch), if one was.
fn cancel_requested(dir: &RunDir) -> Option<u64> {
    let body = read_sealed(dir, &CANCEL_FILE, CANCEL_LABEL, 32)?;
    std::str::from_utf8(&body).ok()?.parse().ok()
}

/// How the detached task of run `dir` stands. A cancel request wins over
/// everything; a kept end over questions; questions answered but not yet
/// taken are no longer shown. A run with neither an end nor a lease lost
/// its server: the task failed.
pub(crate) fn standing(dir: &RunDir) -> Standing {
    let cancelled_ms = cancel_requested(dir);
    match read_ended(dir) {
        Some((at_ms, ended)) if cancelled_ms.is_none_or(|c| c > at_ms) => return ended,
        _ if cancelled_ms.is_some() => return Standing::Cancelled,
        _ => {}
    }
    let mut asked = read_asked(dir);
    asked.retain(|id, _| read_answer(dir, id).is_none());
    if !asked.is_empty() {
        return Standing::InputRequired(asked);
    }
    match dir.is_leased() {
        Ok(true) => Standing::Working,
        // The end may have been kept since it was looked for.
        _ => read_ended(dir).map(|(_, ended)| ended).unwrap_or_else(|| {
            tracing::warn!("a detached task's server stopped before its body ended");
            Standing::Failed(
                object(&ErrorData::internal_error(
                    "the server running the task stopped",
                    None,
                ))
                .unwrap_or_default(),
            )
        }),
    }
}

/// The kept end of run `dir`, and when it was kept.
fn read_ended(dir: &RunDir) -> Option<(u64, Standing)> {
    let body = read_sealed(dir, &ENDED_FILE, ENDED_LABEL, MAX_ENDED_BYTES)?;
    let kept: Kept = serde_json::from_slice(&body).ok()?;
    let standing = match kept.ended {
        Ended::Result(r) => Standing::Completed(r),
        Ended::Error(e) => Standing::Failed(e),
    };
    Some((kept.at_ms, standing))
}

/// Leaves a cancel request in run `dir`; `false` when the task had
/// already ended (its end kept, or its server gone). A request already
/// made stays as it was; an end kept after the request, in a race, wins
/// ([`standing`] compares the times).
pub(crate) fn request_cancel(dir: &RunDir) -> Result<bool, ToolError> {
    if cancel_requested(dir).is_some() {
        return Ok(true);
    }
    if read_ended(dir).is_some() || !dir.is_leased()? {
        return Ok(false);
    }
    let at_ms = now_ms().to_string();
    dir.write_atomic(&CANCEL_FILE, &sealed(dir, CANCEL_LABEL, at_ms.as_bytes()))?;
    Ok(true)
}

/// Takes the `responses` of a `tasks/update` to the questions of run
/// `dir` still waiting: each is kept for the body; keys the task did not
/// ask (or whose answer came already) are ignored, as the tasks extension
/// asks. An answer too large to keep is refused.
pub(crate) fn answer(dir: &RunDir, responses: &InputResponses) -> Result<(), ErrorData> {
    let asked = read_asked(dir);
    for (id, value) in responses.iter() {
        if !asked.contains_key(id) || read_answer(dir, id).is_some() {
            continue;
        }
        let body = serde_json::to_vec(value).unwrap_or_default();
        if body.len() > MAX_ASKED_BYTES {
            return Err(ErrorData::invalid_params(
                "an input response is too large",
                None,
            ));
        }
        let written = answer_file(id).and_then(|name| {
            dir.write_atomic(&name, &sealed(dir, &answer_label(id), &body))
                .map_err(ToolError::from)
        });
        if let Err(e) = written {
            tracing::error!(error = %e, "an input response was not kept");
            return Err(ErrorData::internal_error("Internal error", None));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::answer_file;

    #[test]
    fn every_key_names_one_file_of_its_own() {
        let long = "k".repeat(500);
        for key in ["a", "../x", "ab", "a#2", long.as_str()] {
            let name = answer_file(key).unwrap();
            assert!(name.as_str().starts_with("mcp-answer-"), "{key}");
            assert_eq!(name.as_str().len(), 11 + 32);
        }
        assert_ne!(answer_file("ab").unwrap(), answer_file("a#b").unwrap());
    }
}
