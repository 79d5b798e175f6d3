//! Prompts a server serves: message templates whose arguments are the
//! fields of a `HardenedArgs` type, parsed and checked as tool arguments
//! before the prompt's body sees them.
//!
//! ```
//! use hardened_mcp::prelude::*;
//! use hardened_mcp::server::prompts::{PromptReply, PromptSpec, Prompts};
//!
//! struct Lab;
//!
//! #[derive(Clone, Copy, ToolEnum)]
//! enum Material { Copper, Steel }
//!
//! /// The arguments of `explain_run`.
//! #[derive(HardenedArgs)]
//! struct Explain {
//!     /// The material of the rod.
//!     material: Material,
//! }
//!
//! let prompts = Prompts::<Lab>::new()
//!     .prompt(
//!         PromptSpec { name: "units", description: "Which units the tools use." },
//!         |_lab, _caller| Ok(PromptReply::new().user("Which units do the heat tools use?")),
//!     )
//!     .prompt_with(
//!         PromptSpec { name: "explain_run", description: "Plan a heat run for one material." },
//!         |_lab, _caller, e: Explain| {
//!             let name = match e.material { Material::Copper => "copper", Material::Steel => "steel" };
//!             Ok(PromptReply::new().user(format!("Plan a heat-diffusion run for a {name} rod.")))
//!         },
//!     )
//!     .build()
//!     .unwrap();
//! assert_eq!(prompts.len(), 2);
//! ```
//!
//! The rules every `prompts/get` follows:
//!
//! - a name no declaration has, arguments the type refuses (a wrong type,
//!   a value out of its bounds, an unknown or missing key): `-32602` with
//!   the fixed text, nothing of the request in it;
//! - a reply over [`MAX_PROMPT_BYTES`], or a body's error: an internal
//!   error, the detail in the server log only.
//!
//! The argument values a prompt puts in its text are the checked ones; a
//! prompt argument arrives as text, so every field of the argument type is
//! a string or a unit enum (checked at [`Prompts::build`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::BoxFuture;

use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, ContentBlock, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage, Role,
};
use serde_json::{Map, Value};

use super::completion::{self, Completions};
use super::resources::ResourceBody;
use crate::args::HardenedArgs;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::identity::CallerId;
use crate::image::Image;

/// Most bytes of text and media one prompt answers: 1 MiB.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;
/// Most prompts one server declares.
pub const MAX_PROMPTS: usize = 1000;

/// How a prompt is described to clients.
#[derive(Debug, Clone, Copy)]
pub struct PromptSpec {
    /// The prompt's name (letters, digits, `_`, `-`, `.`).
    pub name: &'static str,
    /// What the prompt is for: server text.
    pub description: &'static str,
}

/// The messages a prompt answers.
#[derive(Debug, Clone, Default)]
pub struct PromptReply {
    messages: Vec<PromptMessage>,
    bytes: usize,
}

impl PromptReply {
    /// No messages yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(mut self, role: Role, content: ContentBlock, bytes: usize) -> Self {
        self.bytes = self.bytes.saturating_add(bytes);
        self.messages.push(PromptMessage::new(role, content));
        self
    }

    /// A user message of server text, in which the checked argument values
    /// may appear. Never text from outside the server.
    pub fn user(self, text: impl Into<String>) -> Self {
        let text = text.into();
        let n = text.len();
        self.push(Role::User, ContentBlock::text(text), n)
    }

    /// An assistant message of server text.
    pub fn assistant(self, text: impl Into<String>) -> Self {
        let text = text.into();
        let n = text.len();
        self.push(Role::Assistant, ContentBlock::text(text), n)
    }

    /// A user message holding a checked PNG image.
    pub fn user_image(self, image: Image) -> Self {
        let n = image.as_bytes().len();
        self.push(Role::User, image.into_content(), n)
    }

    /// A user message embedding a resource's contents at `uri` (text from
    /// outside the server marked as [`ResourceBody::untrusted`] marks it).
    pub fn user_resource(
        self,
        uri: impl Into<String>,
        mime_type: &str,
        body: ResourceBody,
    ) -> Self {
        let n = body.len();
        let contents = body.into_contents(&uri.into(), mime_type);
        self.push(Role::User, ContentBlock::resource(contents), n)
    }
}

/// A prompt's body: given its caller's context and raw arguments, the
/// reply (asynchronously: a body may ask the client first).
type Body<S> = Arc<
    dyn for<'a> Fn(
            &'a S,
            &'a ToolContext,
            &'a Map<String, Value>,
        ) -> BoxFuture<'a, Result<PromptReply, ToolError>>
        + Send
        + Sync,
>;

struct Declared<S> {
    spec: PromptSpec,
    arguments: Vec<PromptArgument>,
    completions: Completions,
    body: Body<S>,
}

/// The prompts a server serves, as declared; [`Prompts::build`] checks
/// them.
pub struct Prompts<S> {
    declared: Vec<Declared<S>>,
    faults: Vec<String>,
}

impl<S> Default for Prompts<S> {
    fn default() -> Self {
        Self {
            declared: Vec::new(),
            faults: Vec::new(),
        }
    }
}

impl<S> std::fmt::Debug for Prompts<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompts")
            .field("declared", &self.declared.len())
            .finish_non_exhaustive()
    }
}

impl<S: 'static> Prompts<S> {
    /// No prompts yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A prompt without arguments (a call that passes any is refused).
    pub fn prompt<F>(mut self, spec: PromptSpec, body: F) -> Self
    where
        F: Fn(&S, &CallerId) -> Result<PromptReply, ToolError> + Send + Sync + 'static,
    {
        self.declared.push(Declared {
            spec,
            arguments: Vec::new(),
            completions: Completions::default(),
            body: Arc::new(move |s, ctx, args| {
                let reply = if args.is_empty() {
                    body(s, ctx.caller())
                } else {
                    Err(ToolError::rejected("this prompt takes no arguments"))
                };
                Box::pin(std::future::ready(reply))
            }),
        });
        self
    }

    /// A prompt whose arguments are the fields of `A` (each a string or a
    /// unit enum), parsed and checked before `body` sees them. Their
    /// descriptions are the fields' doc comments; a field with a default is
    /// optional. A unit enum's values are offered as completions.
    pub fn prompt_with<A, F>(self, spec: PromptSpec, body: F) -> Self
    where
        A: HardenedArgs + 'static,
        F: Fn(&S, &CallerId, A) -> Result<PromptReply, ToolError> + Send + Sync + 'static,
    {
        self.prompt_asking(spec, move |s, ctx, args: A| {
            Box::pin(std::future::ready(body(s, ctx.caller(), args)))
        })
    }

    /// A prompt like [`Prompts::prompt_with`] whose body may ask the client
    /// first ([`ToolContext::elicit`] and the rest of
    /// [`hardened_mcp::ask`](crate::ask)): in the 2026-07-28 era a question
    /// ends `prompts/get` with an input-required result, and the client
    /// asks again with the answers.
    pub fn prompt_asking<A, F>(mut self, spec: PromptSpec, body: F) -> Self
    where
        A: HardenedArgs + 'static,
        F: for<'a> Fn(&'a S, &'a ToolContext, A) -> BoxFuture<'a, Result<PromptReply, ToolError>>
            + Send
            + Sync
            + 'static,
    {
        let mut arg_faults = Vec::new();
        A::spec_faults(&mut arg_faults);
        for (field, fault) in arg_faults {
            self.faults
                .push(format!("prompt `{}`: field `{field}`: {fault}", spec.name));
        }
        let schema = A::schema(crate::schema::InputSchema::new()).finish(0.0, "");
        self.faults.extend(
            completion::non_text_fields(&schema)
                .into_iter()
                .map(|f| format!("prompt `{}`: field `{f}` is not text (a string or a unit enum): a prompt argument is text", spec.name)),
        );
        self.declared.push(Declared {
            spec,
            arguments: arguments_of(&schema),
            completions: Completions::of(&schema),
            body: Arc::new(move |s, ctx, args| {
                let args = A::parse(args).and_then(|a| a.validate().map(|()| a));
                match args {
                    Ok(args) => body(s, ctx, args),
                    Err(e) => Box::pin(std::future::ready(Err(ToolError::InvalidArguments(e)))),
                }
            }),
        });
        self
    }

    /// The checked set, or every fault of the declarations: a name that is
    /// not one or is declared twice, an empty description, an argument
    /// that is not text, more than [`MAX_PROMPTS`] prompts.
    pub fn build(mut self) -> Result<PromptSet<S>, PromptFaults> {
        if self.declared.len() > MAX_PROMPTS {
            self.faults.push(format!(
                "{} prompts declared: at most {MAX_PROMPTS}",
                self.declared.len()
            ));
        }
        let mut names = BTreeSet::new();
        for d in &self.declared {
            let name = d.spec.name;
            if !names.insert(name) {
                self.faults
                    .push(format!("prompt `{name}` is declared twice"));
            }
            if name.is_empty()
                || name.len() > 128
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                self.faults.push(format!(
                    "prompt `{name}`: a name is 1 to 128 letters, digits, `_`, `-` or `.`"
                ));
            }
            if d.spec.description.trim().is_empty() {
                self.faults.push(format!(
                    "prompt `{name}`: the description must not be empty"
                ));
            }
        }
        if self.faults.is_empty() {
            Ok(PromptSet {
                declared: self.declared,
            })
        } else {
            Err(PromptFaults(self.faults))
        }
    }
}

/// Every fault of a set of prompt declarations, one a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the prompt declarations have faults:\n{}", .0.join("\n"))]
pub struct PromptFaults(pub Vec<String>);

/// A checked set of prompts, served by [`Server::prompts`](crate::Server::prompts).
pub struct PromptSet<S> {
    declared: Vec<Declared<S>>,
}

impl<S> std::fmt::Debug for PromptSet<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptSet")
            .field("declared", &self.declared.len())
            .finish()
    }
}

impl<S> PromptSet<S> {
    /// How many prompts the set declares.
    pub fn len(&self) -> usize {
        self.declared.len()
    }

    /// Whether it declares none.
    pub fn is_empty(&self) -> bool {
        self.declared.is_empty()
    }

    /// The prompts, as `prompts/list` answers them: the same for every
    /// caller (shareable by caches).
    pub fn list(&self) -> ListPromptsResult {
        let items = self
            .declared
            .iter()
            .map(|d| {
                let arguments = (!d.arguments.is_empty()).then(|| d.arguments.clone());
                Prompt::new(d.spec.name, Some(d.spec.description), arguments)
            })
            .collect();
        ListPromptsResult::with_all_items(items)
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Public)
    }

    /// The prompt `name` with `arguments` for the caller of `ctx` (see the
    /// module's rules).
    pub async fn get(
        &self,
        service: &S,
        ctx: &ToolContext,
        name: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<GetPromptResult, ErrorData> {
        let Some(declared) = self.declared.iter().find(|d| d.spec.name == name) else {
            tracing::debug!("get of a prompt this server does not have: refused");
            return Err(invalid_params());
        };
        let empty = Map::new();
        let reply = match (declared.body)(service, ctx, arguments.unwrap_or(&empty)).await {
            Ok(reply) => reply,
            Err(
                ToolError::InvalidArguments(_)
                | ToolError::Rejected(_)
                | ToolError::AnswerRefused { .. }
                | ToolError::NotApproved
                | ToolError::NoAnswer,
            ) => {
                tracing::debug!(
                    prompt = declared.spec.name,
                    "prompt arguments or answers refused"
                );
                return Err(invalid_params());
            }
            // The round's own answer (input-required, `-32021`, `-32602`)
            // replaces this one.
            Err(
                ToolError::AwaitingInput
                | ToolError::ClientCannotAnswer(_)
                | ToolError::MalformedAnswer,
            ) => return Err(invalid_params()),
            Err(e) => {
                let _ = ToolError::internal(format_args!(
                    "prompt `{}`: the body failed: {e}",
                    declared.spec.name
                ));
                return Err(ErrorData::internal_error("Internal error", None));
            }
        };
        if reply.bytes > MAX_PROMPT_BYTES {
            let _ = ToolError::internal(format_args!(
                "prompt `{}`: a reply of {} bytes is above {MAX_PROMPT_BYTES}",
                declared.spec.name, reply.bytes
            ));
            return Err(ErrorData::internal_error("Internal error", None));
        }
        Ok(GetPromptResult::new(reply.messages).with_description(declared.spec.description))
    }

    /// The completions of argument `argument` of prompt `name` for the
    /// typed `prefix`; `None` for a prompt or argument it does not have.
    pub(crate) fn completions(&self, name: &str) -> Option<&Completions> {
        self.declared
            .iter()
            .find(|d| d.spec.name == name)
            .map(|d| &d.completions)
    }
}

fn invalid_params() -> ErrorData {
    ErrorData::invalid_params("Invalid params", None)
}

/// The prompt arguments a schema's properties describe.
fn arguments_of(schema: &rmcp::model::JsonObject) -> Vec<PromptArgument> {
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let mut arg = PromptArgument::new(name).with_required(required.contains(name.as_str()));
            if let Some(d) = p.get("description").and_then(Value::as_str) {
                arg = arg.with_description(d);
            }
            arg
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::server::test_args::Note;

    fn spec(name: &'static str) -> PromptSpec {
        PromptSpec {
            name,
            description: "a prompt of the tests",
        }
    }

    fn set() -> PromptSet<()> {
        Prompts::<()>::new()
            .prompt(spec("plain"), |_, _| Ok(PromptReply::new().user("Hello.")))
            .prompt_with(spec("note"), |_, _, n: Note| {
                Ok(PromptReply::new()
                    .user(format!("Read note {} of {}.", n.note, n.owner))
                    .user_resource(
                        format!("lab://notes/{}/{}", n.owner, n.note),
                        "text/plain",
                        ResourceBody::text("the note"),
                    ))
            })
            .prompt(spec("huge"), |_, _| {
                Ok(PromptReply::new().user("x".repeat(MAX_PROMPT_BYTES + 1)))
            })
            .build()
            .unwrap()
    }

    fn get(name: &str, args: Option<Value>) -> Result<Value, ErrorData> {
        let args = args.map(|a| a.as_object().unwrap().clone());
        let ctx = ToolContext::detached(CallerId::local());
        futures::executor::block_on(set().get(&(), &ctx, name, args.as_ref()))
            .map(|r| serde_json::to_value(r).unwrap())
    }

    #[test]
    fn a_prompt_gets_its_checked_arguments() {
        let r = get(
            "note",
            Some(serde_json::json!({"owner": "ann", "note": "n1"})),
        )
        .unwrap();
        assert_eq!(r["messages"][0]["content"]["text"], "Read note n1 of ann.");
        assert_eq!(r["messages"][1]["content"]["type"], "resource");
        assert_eq!(
            r["messages"][1]["content"]["resource"]["uri"],
            "lab://notes/ann/n1"
        );
        let plain = get("plain", None).unwrap();
        assert_eq!(plain["messages"][0]["content"]["text"], "Hello.");
    }

    #[test]
    fn refused_arguments_and_unknown_names_are_invalid_params_alike() {
        for (name, args) in [
            ("note", Some(serde_json::json!({"owner": "ann"}))),
            (
                "note",
                Some(serde_json::json!({"owner": "A N N", "note": "n1"})),
            ),
            ("note", Some(serde_json::json!({"owner": 7, "note": "n1"}))),
            ("note", None),
            ("plain", Some(serde_json::json!({"x": "CANARY"}))),
            ("CANARY", None),
        ] {
            let e = get(name, args.clone()).unwrap_err();
            assert_eq!(e.code.0, -32602, "{name} {args:?}");
            assert_eq!(e.message, "Invalid params");
            assert!(e.data.is_none());
        }
    }

    #[test]
    fn a_reply_over_the_ceiling_is_an_internal_error() {
        assert_eq!(get("huge", None).unwrap_err().code.0, -32603);
    }

    #[test]
    fn the_list_describes_each_argument() {
        let list = serde_json::to_value(set().list()).unwrap();
        let note = &list["prompts"][1];
        assert_eq!(note["name"], "note");
        let args: Vec<&str> = note["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(args, ["note", "owner"]);
        assert_eq!(note["arguments"][0]["required"], true);
        assert!(list["prompts"][0].get("arguments").is_none());
        assert_eq!(list["cacheScope"], "public");
    }

    #[test]
    fn declaration_faults_are_reported_together() {
        let faults = Prompts::<()>::new()
            .prompt(spec("a"), |_, _| Ok(PromptReply::new()))
            .prompt(spec("a"), |_, _| Ok(PromptReply::new()))
            .prompt(spec("bad name"), |_, _| Ok(PromptReply::new()))
            .prompt(
                PromptSpec {
                    name: "b",
                    description: " ",
                },
                |_, _| Ok(PromptReply::new()),
            )
            .build()
            .unwrap_err()
            .0
            .join("\n");
        for expected in [
            "prompt `a` is declared twice",
            "prompt `bad name`: a name is",
            "prompt `b`: the description",
        ] {
            assert!(faults.contains(expected), "{expected}: {faults}");
        }
    }
}
