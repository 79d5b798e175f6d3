//! One call's questions to the client, in the protocol era the call
//! speaks.
//!
//! - **2025-11-25** (a session): the question is a request to the client
//!   (`elicitation/create`, `sampling/createMessage`, `roots/list`), and
//!   the tool waits for the answer.
//! - **2026-07-28** (stateless): a question whose answer did not come with
//!   the call is collected; the call then ends with an input-required
//!   result listing every question asked, and a sealed `requestState`
//!   carrying the answers accepted so far. The client calls again with
//!   the answers, the tool runs again from the start, and this time its
//!   questions are answered.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ErrorCode, InputRequest, InputRequests, InputRequiredResult, InputResponses,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::Value;

use super::answer::AnswerFault;
use super::state::{self, Binding, Sealed, Spent, StateFault, StateKey};
use crate::error::{ClientNeed, ReferenceId, ToolError};

/// Whether `caps` (the client's declared capabilities) has what `need`
/// asks.
fn declared_in(need: ClientNeed, caps: Option<&ClientCapabilities>) -> bool {
    let Some(caps) = caps else { return false };
    match need {
        // An elicitation capability naming neither mode means form.
        ClientNeed::Elicitation => caps
            .elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none()),
        ClientNeed::UrlElicitation => caps.elicitation.as_ref().is_some_and(|e| e.url.is_some()),
        ClientNeed::Sampling => caps.sampling.is_some(),
        ClientNeed::Roots => caps.roots.is_some(),
    }
}

/// The error of a call that needs `need` from a client that did not
/// declare it: `-32021` with `requiredCapabilities` (HTTP 400 in the
/// 2026-07-28 era).
pub(crate) fn missing(need: ClientNeed) -> ErrorData {
    let required = match need {
        ClientNeed::UrlElicitation => serde_json::json!({ "elicitation": { "url": {} } }),
        other => serde_json::json!({ other.capability(): {} }),
    };
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        Some(serde_json::json!({ "requiredCapabilities": required })),
    )
}

/// How long a tool waits for a 2025-11-25 client to answer a question.
const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// Where a call's answers come from.
enum Source {
    /// 2026-07-28: with the call (`inputResponses`), or carried over from
    /// earlier rounds in the sealed state, which is bound to `binding`.
    Stateless {
        binding: Binding,
        responses: InputResponses,
        carried: BTreeMap<String, Value>,
    },
    /// 2025-11-25: from the client, asked in the session.
    Session(Peer<RoleServer>),
    /// 2026-07-28, in a detached body's task: the question waits in the
    /// task's run (the task is `input_required`) until `tasks/update`
    /// brings its answer.
    #[cfg(feature = "jobs")]
    Task(Arc<crate::jobs::Detached>),
}

/// What the questions of a call left behind.
#[derive(Default)]
struct Slot {
    /// Questions without an answer yet (2026-07-28).
    pending: InputRequests,
    /// Answers the tool took in this round (2026-07-28).
    accepted: BTreeMap<String, Value>,
    /// A protocol error that ends the call, whatever the tool returns.
    fault: Option<ErrorData>,
}

/// The questions and answers of one call.
pub(crate) struct Round {
    source: Source,
    /// The client's declared capabilities.
    caps: Option<ClientCapabilities>,
    slot: Mutex<Slot>,
}

impl std::fmt::Debug for Round {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Round").finish_non_exhaustive()
    }
}

impl Round {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        match self.slot.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Whether the client declared what `need` asks.
    pub(crate) fn declares(&self, need: ClientNeed) -> bool {
        declared_in(need, self.caps.as_ref())
    }

    /// The raw answer to `key`: carried, sent with the call, or asked for
    /// now (2025-11-25). Without one (2026-07-28), `request` joins the
    /// round's questions and the call must end: [`ToolError::AwaitingInput`].
    pub(crate) async fn obtain(
        &self,
        key: &'static str,
        need: ClientNeed,
        request: InputRequest,
    ) -> Result<Value, ToolError> {
        if !self.declares(need) {
            tracing::debug!(
                key,
                need = need.capability(),
                "a question to a client that cannot answer it: refused"
            );
            self.fail(missing(need));
            return Err(ToolError::ClientCannotAnswer(need));
        }
        match &self.source {
            Source::Stateless {
                responses, carried, ..
            } => {
                if let Some(v) = carried.get(key).or_else(|| responses.get(key)) {
                    return Ok(v.clone());
                }
                self.slot().pending.insert(key.to_owned(), request);
                Err(ToolError::AwaitingInput)
            }
            Source::Session(peer) => ask_peer(peer, request).await,
            #[cfg(feature = "jobs")]
            Source::Task(task) => task.ask(key, request).await,
        }
    }

    /// The round of the detached body of the call whose round is `call`
    /// (`None`: a call with no client to ask): a 2025-11-25 session's
    /// questions still go to the client in it; a stateless call's wait in
    /// the task's run.
    #[cfg(feature = "jobs")]
    pub(crate) fn in_task(call: Option<&Arc<Self>>, task: Arc<crate::jobs::Detached>) -> Arc<Self> {
        // A round of its own either way: the call's ends when the task is
        // answered, the body's when the body does.
        let source = match call.map(|r| &r.source) {
            Some(Source::Session(peer)) => Source::Session(peer.clone()),
            _ => Source::Task(task),
        };
        Arc::new(Self {
            source,
            caps: call.and_then(|r| r.caps.clone()),
            slot: Mutex::default(),
        })
    }

    /// The protocol error that ends the call, if one was met.
    #[cfg(feature = "jobs")]
    pub(crate) fn take_fault(&self) -> Option<ErrorData> {
        self.slot().fault.take()
    }

    /// Takes the answer to `key` as parsed: a well-formed answer is kept
    /// for the next round; one that is not an answer of the kind asked for
    /// ends the call with a protocol error.
    pub(crate) fn settle<T>(
        &self,
        key: &'static str,
        raw: Value,
        parsed: Result<T, AnswerFault>,
    ) -> Result<T, ToolError> {
        match parsed {
            Ok(t) => {
                if matches!(self.source, Source::Stateless { .. }) {
                    self.slot().accepted.insert(key.to_owned(), raw);
                }
                Ok(t)
            }
            Err(AnswerFault::Malformed) => {
                tracing::debug!(
                    key,
                    "an input response is not an answer of the kind asked for"
                );
                self.fail(ErrorData::invalid_params(
                    "an input response is not an answer of the kind the server asked for",
                    None,
                ));
                Err(ToolError::MalformedAnswer)
            }
            Err(AnswerFault::Refused(error)) => Err(ToolError::AnswerRefused {
                question: key,
                error,
            }),
        }
    }

    fn fail(&self, error: ErrorData) {
        self.slot().fault.get_or_insert(error);
    }
}

/// Asks a 2025-11-25 client, within [`ANSWER_WAIT`].
async fn ask_peer(peer: &Peer<RoleServer>, request: InputRequest) -> Result<Value, ToolError> {
    #[allow(deprecated)] // SEP-2577 deprecates sampling and roots; 2025-11-25 clients use them
    let answer = async {
        match request {
            InputRequest::Elicitation(r) => peer
                .create_elicitation(r.params)
                .await
                .map(|a| serde_json::to_value(a).unwrap_or(Value::Null)),
            InputRequest::CreateMessage(r) => peer
                .create_message(r.params)
                .await
                .map(|a| serde_json::to_value(a).unwrap_or(Value::Null)),
            InputRequest::ListRoots(_) => peer
                .list_roots()
                .await
                .map(|a| serde_json::to_value(a).unwrap_or(Value::Null)),
            _ => Err(rmcp::service::ServiceError::UnexpectedResponse),
        }
    };
    match tokio::time::timeout(ANSWER_WAIT, answer).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            let id = ReferenceId::new();
            tracing::info!(reference = %id, error = %e, "the client did not answer a question");
            Err(ToolError::NoAnswer)
        }
        Err(_) => {
            tracing::info!("the client did not answer a question in time");
            Err(ToolError::NoAnswer)
        }
    }
}

/// Where the nonces of spent states are kept: in this process, or in a
/// run root every replica shares.
#[derive(Debug, Clone)]
enum Ledger {
    Process(Arc<Spent>),
    #[cfg(feature = "runs")]
    Root(crate::runs::RunRoot),
}

impl Ledger {
    /// Claims `state`'s nonce: `false` if it was spent (or, for a root
    /// that cannot record it, in doubt: refused).
    fn claim(&self, state: &Sealed, now_ms: u64) -> bool {
        match self {
            Self::Process(spent) => spent.claim(state, now_ms),
            #[cfg(feature = "runs")]
            Self::Root(root) => match root.claim_state(&state.nonce, state.expires_ms, now_ms) {
                Ok(first) => first,
                Err(e) => {
                    tracing::error!(error = %e, "run root: cannot record a spent requestState; refused");
                    false
                }
            },
        }
    }
}

/// A server's sealing of `requestState`: its key, how long a state lives,
/// and the nonces already spent.
#[derive(Debug, Clone)]
pub(crate) struct Asking {
    key: Option<StateKey>,
    ttl: Duration,
    spent: Ledger,
}

impl Default for Asking {
    fn default() -> Self {
        Self {
            key: StateKey::random(),
            ttl: state::DEFAULT_TTL,
            spent: Ledger::Process(Arc::default()),
        }
    }
}

/// The fixed answer to a `requestState` that does not open.
fn bad_state(fault: StateFault) -> ErrorData {
    let id = ReferenceId::new();
    tracing::info!(reference = %id, %fault, "refused a requestState");
    ErrorData::invalid_params(
        "the requestState is invalid, expired or already used; call again without it",
        None,
    )
}

impl Asking {
    pub(crate) fn set_key(&mut self, key: StateKey) {
        self.key = Some(key);
    }

    /// Seals with `root`'s key and keeps spent states in `root`: every
    /// server process over it opens the others' states, once in all.
    #[cfg(feature = "runs")]
    pub(crate) fn set_root(&mut self, root: &crate::runs::RunRoot) {
        self.key = Some(StateKey::from_bytes(root.state_key_bytes()));
        self.spent = Ledger::Root(root.clone());
    }

    pub(crate) fn set_ttl(&mut self, ttl: Duration) {
        self.ttl = ttl;
    }

    /// The round of one request to `target` (`tools/call:<name>`,
    /// `prompts/get:<name>`) with `arguments`, put in the request's
    /// extensions for its [`ToolContext`](crate::ToolContext). In the
    /// 2026-07-28 era its `requestState` is opened (bound to the caller,
    /// `target` and `arguments`) and its nonce spent; one that does not
    /// open is a fixed error.
    pub(crate) fn begin(
        &self,
        rc: &mut RequestContext<RoleServer>,
        target: &str,
        arguments: Option<&serde_json::Map<String, Value>>,
        responses: Option<&InputResponses>,
        request_state: Option<&str>,
    ) -> Result<Arc<Round>, ErrorData> {
        let caps = rc.client_capabilities();
        // Only a stateless call can carry or receive a state: only it is
        // bound (the arguments written out once, in canonical form).
        let source = if stateless(rc) {
            let caller = crate::context::caller_of(rc);
            let binding = Binding::new(caller.as_str(), target, arguments);
            let carried = match request_state {
                None => BTreeMap::new(),
                Some(text) => {
                    let key = self
                        .key
                        .as_ref()
                        .ok_or_else(|| bad_state(StateFault::NoKey))?;
                    let now = state::now_ms();
                    let opened = state::open(key, &binding, text, now).map_err(bad_state)?;
                    if !self.spent.claim(&opened, now) {
                        return Err(bad_state(StateFault::Replayed));
                    }
                    opened.answers
                }
            };
            Source::Stateless {
                binding,
                responses: responses.cloned().unwrap_or_default(),
                carried,
            }
        } else {
            Source::Session(rc.peer.clone())
        };
        let round = Arc::new(Round {
            source,
            caps,
            slot: Mutex::default(),
        });
        rc.extensions.insert(Arc::clone(&round));
        Ok(round)
    }

    /// How the round ends: its protocol error, an input-required result
    /// (the questions without an answer, and the sealed answers so far),
    /// or `None`: the call's own result stands.
    pub(crate) fn end(&self, round: &Round) -> Result<Option<InputRequiredResult>, ErrorData> {
        let mut slot = round.slot();
        if let Some(fault) = slot.fault.take() {
            return Err(fault);
        }
        // Questions wait for a later round only in the stateless era (a
        // session's are asked at once).
        let Source::Stateless {
            binding, carried, ..
        } = &round.source
        else {
            return Ok(None);
        };
        if slot.pending.is_empty() {
            return Ok(None);
        }
        let mut answers = carried.clone();
        answers.append(&mut slot.accepted);
        let nonce = state::fresh_nonce().map_err(internal)?;
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let sealed = Sealed {
            nonce,
            expires_ms: state::now_ms().saturating_add(ttl_ms),
            answers,
        };
        let key = self
            .key
            .as_ref()
            .ok_or(StateFault::NoKey)
            .map_err(internal)?;
        let text = state::seal(key, binding, &sealed).map_err(internal)?;
        Ok(Some(InputRequiredResult::new(
            Some(std::mem::take(&mut slot.pending)),
            Some(text),
        )))
    }
}

/// The error of a state that cannot be sealed (no randomness): logged
/// with a reference id, answered with the fixed internal error.
fn internal(fault: StateFault) -> ErrorData {
    let id = ReferenceId::new();
    tracing::error!(reference = %id, %fault, "cannot seal a requestState");
    ErrorData::internal_error("Internal error", None)
}

/// Whether the request speaks the stateless 2026-07-28 era: it carries its
/// protocol version in `_meta`.
fn stateless(rc: &RequestContext<RoleServer>) -> bool {
    rc.meta
        .protocol_version()
        .is_some_and(|v| v.to_string().as_str() >= "2026-07-28")
}
