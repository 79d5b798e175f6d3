//! Asking the client: a question to the person behind it (elicitation, as
//! a form or a page to open), a completion from its model (sampling), its
//! roots; and the approval of a costly or destructive call
//! (`#[hardened_tool(confirm_above = ..)]`, `confirm`).
//!
//! One API for both protocol eras, on [`ToolContext`]:
//!
//! ```
//! use hardened_mcp::prelude::*;
//! use hardened_mcp::ask::Elicited;
//!
//! /// What the person picks.
//! #[derive(HardenedArgs)]
//! struct Mesh {
//!     /// Cells of the mesh.
//!     #[bounded(min = 8, max = 4096)]
//!     cells: u32,
//! }
//!
//! async fn choose(ctx: &ToolContext) -> Result<u32, ToolError> {
//!     match ctx.elicit::<Mesh>("mesh", "How many cells?").await? {
//!         Elicited::Accepted(m) => Ok(m.cells),
//!         Elicited::Declined | Elicited::Cancelled => Err(ToolError::NotApproved),
//!     }
//! }
//! ```
//!
//! - **2025-11-25**: the question goes to the client in the session, and
//!   the tool waits (at most ten minutes) for the answer.
//! - **2026-07-28**: the server keeps nothing between calls. A question
//!   without an answer ends the call (the `?` above returns
//!   [`ToolError::AwaitingInput`]) with an input-required result; the
//!   client calls again with the answers, and the tool runs again from the
//!   start, its questions answered this time. Write the body so that what
//!   comes before a question can run twice (check, estimate, read; start
//!   nothing). Several questions at once: ask them together
//!   (`futures::join!`) and all of them go in one round. The answers of
//!   earlier rounds travel in a sealed `requestState` ([`StateKey`]),
//!   bound to the caller, the tool and the arguments, opened once, and
//!   expiring after ten minutes.
//!
//! Every answer is untrusted input: an elicitation's content goes through
//! the type's strict parser and its bounds, exactly as tool arguments; a
//! model's or a client's text comes back as [`Untrusted`](crate::untrusted::Untrusted).
//! A client that did not declare what a question needs gets the fixed
//! error `-32021` naming the capability, and nothing runs.
//!
//! An approval is a guard for people, not an access control: the client
//! answers it, and a client can answer anything. Tools that destroy or
//! spend stay behind caller identity and scopes whatever was clicked.

mod answer;
mod form;
mod round;
mod state;

use serde_json::{Map, Value, json};

pub use crate::error::ClientNeed;
pub use answer::{Elicited, Roots, Sampled, Visited};
pub use state::StateKey;

pub(crate) use round::{Asking, Round, missing};

use crate::args::{Arg, ArgError, HardenedArgs};
use crate::context::ToolContext;
use crate::error::ToolError;

/// A sampling request: one user message to the client's model.
#[derive(Debug, Clone)]
pub struct Sampling {
    prompt: String,
    system: Option<String>,
    max_tokens: u32,
}

impl Sampling {
    /// Asks the client's model `prompt` (server-authored text), for at
    /// most 1000 tokens.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            system: None,
            max_tokens: 1000,
        }
    }

    /// At most `n` tokens.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }

    /// A system prompt (server-authored text).
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }
}

/// A request of the protocol's own shape, from its JSON.
fn request(json: Value) -> Result<rmcp::model::InputRequest, ToolError> {
    serde_json::from_value(json)
        .map_err(|e| ToolError::internal(format!("building a question to the client: {e}")))
}

impl ToolContext {
    /// The call's round, or the refusal of a context with no client to ask.
    fn round_for(&self, need: ClientNeed) -> Result<&Round, ToolError> {
        self.round().ok_or(ToolError::ClientCannotAnswer(need))
    }

    /// Whether the client declared what `need` asks (a tool can choose
    /// another way before asking).
    pub fn can_ask(&self, need: ClientNeed) -> bool {
        self.round().is_some_and(|r| r.declares(need))
    }

    /// Asks the person behind the client to fill in a form: `T`'s fields
    /// (flat: strings, numbers, integers, booleans, enum tokens, lists of
    /// tokens), with their bounds and defaults. `key` names the question
    /// (unique within the tool); `message` is server-authored text.
    ///
    /// The answer passes `T`'s strict parser and bounds before it is
    /// returned; one that does not is [`ToolError::AnswerRefused`], naming
    /// the field and the rule. In the 2026-07-28 era, the first time this
    /// is asked it returns [`ToolError::AwaitingInput`]: return it.
    pub async fn elicit<T: HardenedArgs>(
        &self,
        key: &'static str,
        message: impl Into<String>,
    ) -> Result<Elicited<T>, ToolError> {
        let round = self.round_for(ClientNeed::Elicitation)?;
        let form = form::form_of::<T>().ok_or_else(|| {
            ToolError::internal(format!(
                "question `{key}`: its answer type has a field no form can hold (nested)"
            ))
        })?;
        let req = request(json!({
            "method": "elicitation/create",
            "params": { "mode": "form", "message": message.into(), "requestedSchema": form },
        }))?;
        let raw = round.obtain(key, ClientNeed::Elicitation, req).await?;
        let parsed = answer::elicited::<T>(&raw);
        round.settle(key, raw, parsed)
    }

    /// Asks the person to open `url` (server-authored: a page of the
    /// server's own, e.g. to sign in or pay) in URL-mode elicitation.
    /// What they do there reaches the server out of band; the answer only
    /// says whether they agreed to go.
    pub async fn elicit_url(
        &self,
        key: &'static str,
        message: impl Into<String>,
        url: &str,
    ) -> Result<Visited, ToolError> {
        let round = self.round_for(ClientNeed::UrlElicitation)?;
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(ToolError::internal(format!(
                "question `{key}`: a URL elicitation needs an http(s) URL"
            )));
        }
        let req = request(json!({
            "method": "elicitation/create",
            "params": { "mode": "url", "message": message.into(), "url": url, "elicitationId": key },
        }))?;
        let raw = round.obtain(key, ClientNeed::UrlElicitation, req).await?;
        let parsed = answer::visited(&raw);
        round.settle(key, raw, parsed)
    }

    /// Asks the client's model for a completion. The text comes back as
    /// untrusted data: it was written by a model the server does not
    /// control, possibly steered by what the caller sent.
    pub async fn sample(
        &self,
        key: &'static str,
        sampling: Sampling,
    ) -> Result<Sampled, ToolError> {
        let round = self.round_for(ClientNeed::Sampling)?;
        let mut params = json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": sampling.prompt } }],
            "maxTokens": sampling.max_tokens,
        });
        if let Some(s) = sampling.system {
            params["systemPrompt"] = Value::from(s);
        }
        let req = request(json!({ "method": "sampling/createMessage", "params": params }))?;
        let raw = round.obtain(key, ClientNeed::Sampling, req).await?;
        let parsed = answer::sampled(&raw);
        round.settle(key, raw, parsed)
    }

    /// Asks the client for its roots (the places it shares), as untrusted
    /// data: a root is the client's claim, never a path this server opens.
    pub async fn roots(&self, key: &'static str) -> Result<Roots, ToolError> {
        let round = self.round_for(ClientNeed::Roots)?;
        let req = request(json!({ "method": "roots/list", "params": {} }))?;
        let raw = round.obtain(key, ClientNeed::Roots, req).await?;
        let parsed = answer::roots(&raw);
        round.settle(key, raw, parsed)
    }

    /// Asks the person to approve `message` (a yes/no form); `Ok` only
    /// when they accepted and said yes. The question's key is the
    /// framework's own (`hardened-mcp.approval`).
    pub async fn approve(&self, message: impl Into<String>) -> Result<(), ToolError> {
        match self.elicit::<Approval>(APPROVAL_KEY, message).await? {
            Elicited::Accepted(Approval { approve: true }) => Ok(()),
            _ => Err(ToolError::NotApproved),
        }
    }
}

/// The key of the framework's approval question.
pub const APPROVAL_KEY: &str = "hardened-mcp.approval";

/// The form of an approval: one yes/no field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Approval {
    /// Whether the person approved.
    pub approve: bool,
}

static APPROVE: crate::args::kind::BoolSpec = crate::args::kind::BoolSpec {
    default: None,
    doc: crate::args::kind::Doc {
        description: Some("Approve: yes to go ahead, no to stop."),
        units: None,
        header: None,
    },
};

impl HardenedArgs for Approval {
    const KEYS: &'static [&'static str] = &["approve"];

    fn parse(object: &Map<String, Value>) -> Result<Self, ArgError> {
        if object.keys().any(|k| k != "approve") {
            return Err(ArgError::unknown_argument_of(Self::KEYS));
        }
        match object.get("approve") {
            Some(v) => Ok(Self {
                approve: <bool as Arg>::parse(v, &APPROVE, "approve")?,
            }),
            None => Err(ArgError::missing("approve")),
        }
    }

    fn validate(&self) -> Result<(), ArgError> {
        Ok(())
    }

    fn schema(into: crate::schema::InputSchema) -> crate::schema::InputSchema {
        into.property("approve", <bool as Arg>::schema(&APPROVE), true)
    }

    fn spec_faults(_: &mut Vec<(&'static str, &'static str)>) {}
}

/// When a tool asks for approval (`#[hardened_tool(confirm_above = ..)]`,
/// `confirm`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Confirm {
    /// Never.
    Never,
    /// When the estimated cost is above this many units.
    Above(f64),
    /// Every call.
    Always,
}

/// The approval step of a tool that declares one: asks when `estimate`
/// calls for it, with a server-authored message showing the estimate.
pub(crate) async fn approve_call(
    ctx: &ToolContext,
    tool: &str,
    confirm: Confirm,
    estimate: f64,
    units: &str,
) -> Result<(), ToolError> {
    let message = match confirm {
        Confirm::Never => return Ok(()),
        Confirm::Above(threshold) if estimate <= threshold => return Ok(()),
        Confirm::Above(threshold) => format!(
            "Approve `{tool}`? Its estimated cost is {estimate} {units}, above the {threshold} \
             {units} this server runs without asking."
        ),
        Confirm::Always => format!("Approve `{tool}`? This server asks before every such call."),
    };
    ctx.approve(message).await
}
