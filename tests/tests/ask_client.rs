//! Asking the client, in both protocol eras: questions, answers checked as
//! untrusted input, sealed `requestState` (tampered, replayed, expired,
//! another caller's, another tool's, other arguments), approvals that let
//! nothing run unapproved, and clients without the capability.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hardened_mcp::ask::{Elicited, StateKey};
use hardened_mcp::prelude::*;
use hardened_mcp::transport::{BearerAuth, HttpConfig, HttpServer, RunningHttpServer};
use hardened_mcp_tests::tr_support::{HttpClient, HttpReply, MODERN_VERSION};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient};
use serde_json::{Value, json};

/// An age, as a person would type it.
#[derive(Debug, HardenedArgs)]
struct Age {
    /// Your age, in years.
    #[bounded(min = 0, max = 150)]
    age: u32,
}

/// The test's tools; `runs` counts the bodies that ran past their
/// approval.
#[derive(Debug, Clone, Default)]
struct Asker {
    runs: Arc<AtomicUsize>,
}

#[hardened_tools]
impl Asker {
    /// Greets the caller with their age.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn greet(
        &self,
        ctx: ToolContext,
        #[bounded(max_len = 16, charset = "identifier")] greeting: String,
    ) -> Result<Output<String>, ToolError> {
        ask_age(&ctx, &greeting).await
    }

    /// The same question from another tool.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn greet_too(
        &self,
        ctx: ToolContext,
        #[bounded(max_len = 16, charset = "identifier")] greeting: String,
    ) -> Result<Output<String>, ToolError> {
        ask_age(&ctx, &greeting).await
    }

    /// A run that asks for approval above 100 cells.
    #[hardened_tool(max_cost = 1000, units = "cells", cost = cells, confirm_above = 100)]
    async fn run(
        &self,
        #[bounded(min = 1, max = 1000)] cells: u32,
    ) -> Result<Output<u32>, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(Output::new(cells))
    }

    /// A deletion that asks every time.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, confirm)]
    async fn delete(&self) -> Result<Output<bool>, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(Output::new(true))
    }

    /// Asks the person to open a page, the client for its roots and its
    /// model for a word.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn gather(&self, ctx: ToolContext) -> Result<Output<String>, ToolError> {
        let visited = ctx
            .elicit_url(
                "sign_in",
                "Sign in to continue",
                "https://lab.example/sign-in",
            )
            .await?;
        let (roots, word) = futures::join!(
            ctx.roots("roots"),
            ctx.sample(
                "word",
                hardened_mcp::ask::Sampling::new("Say one word").max_tokens(5)
            ),
        );
        let (roots, word) = (roots?, word?);
        Ok(Output::new(format!(
            "{visited:?}; {} root(s); {} bytes",
            roots.uris.data().len(),
            word.text.data().len()
        )))
    }

    /// Needs sampling from every client.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, asks = "sampling")]
    async fn needs_sampling(&self) -> Result<Output<bool>, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(Output::new(true))
    }
}

async fn ask_age(ctx: &ToolContext, greeting: &str) -> Result<Output<String>, ToolError> {
    match ctx.elicit::<Age>("age", "How old are you?").await? {
        Elicited::Accepted(Age { age }) => Ok(Output::new(format!("{greeting}, {age}"))),
        Elicited::Declined | Elicited::Cancelled => Ok(Output::new("no age".to_owned())),
    }
}

fn server(asker: Asker) -> Server<Asker> {
    Server::new("asker", "1.0.0", asker, Asker::hardened_tool_router())
}

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef012";

async fn serve(server: Server<Asker>) -> RunningHttpServer {
    let auth = BearerAuth::parse(&format!("alice={ALICE}\nbob={BOB}")).unwrap();
    HttpServer::new(
        move || Ok(server.clone()),
        HttpConfig::new().auth(auth).sse_keep_alive(None),
    )
    .unwrap()
    .start(tokio_util::sync::CancellationToken::new())
    .await
    .unwrap()
}

/// A 2026-07-28 `tools/call` with `caps` as the client's capabilities and
/// `extra` merged into its params (answers, state).
fn call(tool: &str, arguments: Value, caps: Value, extra: Value) -> Value {
    request("tools/call", tool, arguments, caps, extra)
}

/// A 2026-07-28 request of `method` for `name` (a tool, a prompt).
fn request(method: &str, name: &str, arguments: Value, caps: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "ask-test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": caps,
        },
    });
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            params[k] = v;
        }
    }
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

async fn post(client: &mut HttpClient, tool: &'static str, body: &Value) -> (HttpReply, Value) {
    let headers = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    let reply = client
        .request("POST", &headers, &serde_json::to_vec(body).unwrap())
        .await;
    let rpc = reply.rpc().unwrap_or(Value::Null);
    (reply, rpc)
}

fn elicits() -> Value {
    json!({"elicitation": {}})
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// Round 1 of `greet`: the question, and its sealed state.
async fn round_one(client: &mut HttpClient, tool: &'static str, greeting: &str) -> String {
    let (_, rpc) = post(
        client,
        tool,
        &call(tool, json!({"greeting": greeting}), elicits(), json!({})),
    )
    .await;
    let result = &rpc["result"];
    assert_eq!(result["resultType"], "input_required", "{rpc}");
    let question = &result["inputRequests"]["age"];
    assert_eq!(question["method"], "elicitation/create", "{rpc}");
    assert_eq!(
        question["params"]["requestedSchema"]["properties"]["age"]["maximum"],
        150
    );
    result["requestState"].as_str().unwrap().to_owned()
}

fn is_refused_state(rpc: &Value) {
    assert_eq!(rpc["error"]["code"], -32602, "{rpc}");
    assert!(rpc.get("result").is_none(), "{rpc}");
}

#[tokio::test]
async fn an_answer_completes_the_call_and_a_state_opens_once() {
    let running = serve(server(Asker::default())).await;
    let mut alice = HttpClient::new(running.local_addr(), Some(ALICE));
    let state = round_one(&mut alice, "greet", "hi").await;
    // Sealed: its bytes do not show the call in clear. (Looking for the
    // two-letter value in the encoded text failed now and then: random
    // base64 holds "hi" by chance in a few per cent of states.)
    let raw = {
        use base64::Engine as _;
        let body = state.strip_prefix("hm1.").unwrap_or(&state);
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(body)
            .unwrap()
    };
    assert!(
        !raw.windows(8).any(|w| w == b"greeting") && !state.contains("greeting"),
        "the state is sealed: {state}"
    );
    let answered =
        json!({"inputResponses": {"age": accept(json!({"age": 36}))}, "requestState": state});
    let body = call("greet", json!({"greeting": "hi"}), elicits(), answered);
    let (_, rpc) = post(&mut alice, "greet", &body).await;
    assert_eq!(
        rpc["result"]["structuredContent"]["data"], "hi, 36",
        "{rpc}"
    );
    // The same state again: a replay.
    let (_, rpc) = post(&mut alice, "greet", &body).await;
    is_refused_state(&rpc);
    // An answer without a state is an answer to a first round: it stands.
    let body = call(
        "greet",
        json!({"greeting": "hi"}),
        elicits(),
        json!({"inputResponses": {"age": accept(json!({"age": 7}))}}),
    );
    let (_, rpc) = post(&mut alice, "greet", &body).await;
    assert_eq!(rpc["result"]["structuredContent"]["data"], "hi, 7", "{rpc}");
}

#[tokio::test]
async fn a_state_opens_only_for_its_caller_tool_and_arguments() {
    let running = serve(server(Asker::default())).await;
    let addr = running.local_addr();
    let mut clients = [
        HttpClient::new(addr, Some(ALICE)),
        HttpClient::new(addr, Some(BOB)),
    ];
    let answer = |state: &str| json!({"inputResponses": {"age": accept(json!({"age": 1}))}, "requestState": state});
    // Sealed for Alice's `greet` of "hi", presented by another caller, to
    // another tool, with other arguments, or altered.
    let misplaced: [(usize, &'static str, &str, &str); 4] = [
        (1, "greet", "hi", ""),
        (0, "greet_too", "hi", ""),
        (0, "greet", "yo", ""),
        (0, "greet", "hi", "-TAMPERED"),
    ];
    let mut state = String::new();
    for (who, tool, greeting, suffix) in misplaced {
        state = round_one(&mut clients[0], "greet", "hi").await;
        let body = call(
            tool,
            json!({"greeting": greeting}),
            elicits(),
            answer(&format!("{state}{suffix}")),
        );
        let (_, rpc) = post(&mut clients[who], tool, &body).await;
        is_refused_state(&rpc);
    }
    // Positive control: the last state, untouched, for its caller, tool and
    // arguments, opens (after the refusals above).
    let body = call(
        "greet",
        json!({"greeting": "hi"}),
        elicits(),
        answer(&state),
    );
    let (_, rpc) = post(&mut clients[0], "greet", &body).await;
    assert_eq!(rpc["result"]["structuredContent"]["data"], "hi, 1", "{rpc}");
}

#[tokio::test]
async fn an_expired_state_is_refused_and_replicas_share_a_key() {
    let key = StateKey::from_bytes([7; 32]);
    let quick = serve(
        server(Asker::default())
            .state_key(key.clone())
            .state_ttl(Duration::from_millis(50)),
    )
    .await;
    let mut alice = HttpClient::new(quick.local_addr(), Some(ALICE));
    let state = round_one(&mut alice, "greet", "hi").await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    let answer =
        json!({"inputResponses": {"age": accept(json!({"age": 2}))}, "requestState": state});
    let (_, rpc) = post(
        &mut alice,
        "greet",
        &call("greet", json!({"greeting": "hi"}), elicits(), answer),
    )
    .await;
    is_refused_state(&rpc);

    // Two replicas with one key: a state sealed by one opens in the other;
    // a server with its own random key refuses it.
    let one = serve(server(Asker::default()).state_key(key.clone())).await;
    let two = serve(server(Asker::default()).state_key(key)).await;
    let stranger = serve(server(Asker::default())).await;
    let mut at_one = HttpClient::new(one.local_addr(), Some(ALICE));
    let state = round_one(&mut at_one, "greet", "hi").await;
    let answer =
        json!({"inputResponses": {"age": accept(json!({"age": 3}))}, "requestState": state});
    let body = call("greet", json!({"greeting": "hi"}), elicits(), answer);
    let (_, rpc) = post(
        &mut HttpClient::new(stranger.local_addr(), Some(ALICE)),
        "greet",
        &body,
    )
    .await;
    is_refused_state(&rpc);
    let (_, rpc) = post(
        &mut HttpClient::new(two.local_addr(), Some(ALICE)),
        "greet",
        &body,
    )
    .await;
    assert_eq!(rpc["result"]["structuredContent"]["data"], "hi, 3", "{rpc}");
}

#[tokio::test]
async fn an_answer_out_of_bounds_or_malformed_is_refused() {
    let running = serve(server(Asker::default())).await;
    let mut alice = HttpClient::new(running.local_addr(), Some(ALICE));
    let answer = |a: Value| {
        call(
            "greet",
            json!({"greeting": "hi"}),
            elicits(),
            json!({"inputResponses": {"age": a}}),
        )
    };
    // Out of its bounds: a tool error naming the question and the field.
    let (_, rpc) = post(&mut alice, "greet", &answer(accept(json!({"age": 151})))).await;
    let result = &rpc["result"];
    assert_eq!(result["isError"], true, "{rpc}");
    let error = &result["structuredContent"]["error"];
    assert_eq!(error["kind"], "answer_refused");
    assert_eq!(
        (error["question"].as_str(), error["argument"].as_str()),
        (Some("age"), Some("age"))
    );
    assert!(
        !result.to_string().contains("151"),
        "the value is not echoed: {rpc}"
    );
    // An unknown field, a string for a number: refused the same way.
    for bad in [json!({"age": 3, "admin": true}), json!({"age": "3"})] {
        let (_, rpc) = post(&mut alice, "greet", &answer(accept(bad))).await;
        assert_eq!(
            rpc["result"]["structuredContent"]["error"]["kind"], "answer_refused",
            "{rpc}"
        );
    }
    // Not an elicitation result at all: a protocol error.
    for bad in [
        json!(12345),
        json!({"action": "sure"}),
        json!({"action": "accept", "content": [1]}),
    ] {
        let (_, rpc) = post(&mut alice, "greet", &answer(bad)).await;
        assert_eq!(rpc["error"]["code"], -32602, "{rpc}");
    }
    // A declined question is the tool's to handle.
    let (_, rpc) = post(&mut alice, "greet", &answer(json!({"action": "decline"}))).await;
    assert_eq!(
        rpc["result"]["structuredContent"]["data"], "no age",
        "{rpc}"
    );
}

#[tokio::test]
async fn nothing_runs_unapproved_in_the_stateless_era() {
    let asker = Asker::default();
    let runs = Arc::clone(&asker.runs);
    let running = serve(server(asker)).await;
    let mut alice = HttpClient::new(running.local_addr(), Some(ALICE));
    // Below the threshold: no question.
    let (_, rpc) = post(
        &mut alice,
        "run",
        &call("run", json!({"cells": 100}), elicits(), json!({})),
    )
    .await;
    assert_eq!(rpc["result"]["structuredContent"]["data"], 100, "{rpc}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Above: the approval question, with the estimate and the units.
    let (_, rpc) = post(
        &mut alice,
        "run",
        &call("run", json!({"cells": 500}), elicits(), json!({})),
    )
    .await;
    let question = &rpc["result"]["inputRequests"]["hardened-mcp.approval"];
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("500 cells") && message.contains("100 cells"),
        "{message}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "nothing ran while asking");
    let state = rpc["result"]["requestState"].as_str().unwrap().to_owned();
    // Said no, declined, cancelled: nothing runs.
    for answer in [
        accept(json!({"approve": false})),
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
    ] {
        let body = call(
            "run",
            json!({"cells": 500}),
            elicits(),
            json!({"inputResponses": {"hardened-mcp.approval": answer}}),
        );
        let (_, rpc) = post(&mut alice, "run", &body).await;
        assert_eq!(
            rpc["result"]["structuredContent"]["error"]["kind"], "not_approved",
            "{rpc}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A client that cannot ask: -32021, HTTP 400, nothing runs.
    let (reply, rpc) = post(
        &mut alice,
        "run",
        &call("run", json!({"cells": 500}), json!({}), json!({})),
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(rpc["error"]["code"], -32021, "{rpc}");
    assert_eq!(
        rpc["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Approved: it runs once.
    let body = call(
        "run",
        json!({"cells": 500}),
        elicits(),
        json!({"inputResponses": {"hardened-mcp.approval": accept(json!({"approve": true}))}, "requestState": state}),
    );
    let (_, rpc) = post(&mut alice, "run", &body).await;
    assert_eq!(rpc["result"]["structuredContent"]["data"], 500, "{rpc}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // Out of bounds is refused before any question is asked.
    let (_, rpc) = post(
        &mut alice,
        "run",
        &call("run", json!({"cells": 5000}), elicits(), json!({})),
    )
    .await;
    assert_eq!(
        rpc["result"]["structuredContent"]["error"]["kind"], "invalid_arguments",
        "{rpc}"
    );
    // `confirm` asks every time.
    let (_, rpc) = post(
        &mut alice,
        "delete",
        &call("delete", json!({}), elicits(), json!({})),
    )
    .await;
    assert!(
        rpc["result"]["inputRequests"]["hardened-mcp.approval"].is_object(),
        "{rpc}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_tool_that_needs_a_capability_refuses_a_client_without_it() {
    let asker = Asker::default();
    let runs = Arc::clone(&asker.runs);
    let running = serve(server(asker)).await;
    let mut alice = HttpClient::new(running.local_addr(), Some(ALICE));
    let (reply, rpc) = post(
        &mut alice,
        "needs_sampling",
        &call("needs_sampling", json!({}), elicits(), json!({})),
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(rpc["error"]["code"], -32021, "{rpc}");
    assert_eq!(
        rpc["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // Positive control: declared, it runs.
    let (_, rpc) = post(
        &mut alice,
        "needs_sampling",
        &call(
            "needs_sampling",
            json!({}),
            json!({"sampling": {}}),
            json!({}),
        ),
    )
    .await;
    assert_eq!(rpc["result"]["structuredContent"]["data"], true, "{rpc}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A 2025-11-25 client whose person answers every question with `answer`
/// (or, with `None`, a client that declares no elicitation).
#[derive(Clone)]
struct Person {
    answer: Option<ElicitResult>,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Person {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        self.answer
            .clone()
            .ok_or_else(|| rmcp::ErrorData::internal_error("no elicitation here", None))
    }

    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities = if self.answer.is_some() {
            serde_json::from_value(json!({"elicitation": {}})).unwrap()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("person", "1.0.0"))
    }
}

fn answered(action: ElicitationAction, content: Option<Value>) -> Option<ElicitResult> {
    let mut r = ElicitResult::new(action);
    r.content = content;
    Some(r)
}

async fn session(
    asker: Asker,
    person: Person,
) -> rmcp::service::RunningService<RoleClient, Person> {
    let (a, b) = tokio::io::duplex(1 << 16);
    let server = server(asker);
    tokio::spawn(async move {
        let running = server.serve(a).await.expect("server starts");
        let _ = running.waiting().await;
    });
    person.serve(b).await.expect("client connects")
}

async fn call_2025(
    client: &rmcp::service::RunningService<RoleClient, Person>,
    tool: &'static str,
    args: Value,
) -> Result<rmcp::model::CallToolResult, rmcp::ServiceError> {
    let Value::Object(args) = args else {
        panic!("object")
    };
    tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool(CallToolRequestParams::new(tool).with_arguments(args)),
    )
    .await
    .expect("no hang")
}

#[tokio::test]
async fn a_session_client_is_asked_and_its_answer_checked() {
    let asked = Arc::default();
    let asker = Asker::default();
    let runs = Arc::clone(&asker.runs);
    // Approved in the session: the run goes ahead after one question.
    let yes = Person {
        answer: answered(ElicitationAction::Accept, Some(json!({"approve": true}))),
        asked: Arc::clone(&asked),
    };
    let client = session(asker.clone(), yes).await;
    let r = call_2025(&client, "run", json!({"cells": 500}))
        .await
        .unwrap();
    assert_eq!(r.structured_content.unwrap()["data"], 500);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(asked.lock().unwrap()[0].contains("500 cells"));
    // Declined: nothing runs.
    let no = Person {
        answer: answered(ElicitationAction::Decline, None),
        asked: Arc::default(),
    };
    let client = session(asker.clone(), no).await;
    let r = call_2025(&client, "delete", json!({})).await.unwrap();
    assert_eq!(
        r.structured_content.unwrap()["error"]["kind"],
        "not_approved"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // An answer out of its bounds, from a person in the session.
    let wild = Person {
        answer: answered(ElicitationAction::Accept, Some(json!({"age": 999}))),
        asked: Arc::default(),
    };
    let client = session(asker.clone(), wild).await;
    let r = call_2025(&client, "greet", json!({"greeting": "hi"}))
        .await
        .unwrap();
    let error = r.structured_content.unwrap()["error"].clone();
    assert_eq!(
        (error["kind"].as_str(), error["question"].as_str()),
        (Some("answer_refused"), Some("age"))
    );
    // A client without elicitation: -32021, and nothing runs.
    let mute = Person {
        answer: None,
        asked: Arc::default(),
    };
    let client = session(asker, mute).await;
    let e = call_2025(&client, "run", json!({"cells": 500}))
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("-32021") || format!("{e:?}").contains("32021"),
        "{e:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn replicas_over_one_run_root_open_a_state_once_among_them() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("runs");
    let root = |p: &std::path::Path| hardened_mcp::runs::RunRoot::open(p).unwrap();
    let one = serve(server(Asker::default()).states_in(&root(&path))).await;
    let two = serve(server(Asker::default()).states_in(&root(&path))).await;
    let mut at_one = HttpClient::new(one.local_addr(), Some(ALICE));
    let mut at_two = HttpClient::new(two.local_addr(), Some(ALICE));
    let state = round_one(&mut at_one, "greet", "hi").await;
    let answer =
        json!({"inputResponses": {"age": accept(json!({"age": 4}))}, "requestState": state});
    let body = call("greet", json!({"greeting": "hi"}), elicits(), answer);
    let (_, rpc) = post(&mut at_two, "greet", &body).await;
    assert_eq!(rpc["result"]["structuredContent"]["data"], "hi, 4", "{rpc}");
    // The replay, at the replica that sealed it: refused.
    let (_, rpc) = post(&mut at_one, "greet", &body).await;
    is_refused_state(&rpc);
}

#[tokio::test]
async fn url_elicitation_roots_and_sampling_go_the_same_way() {
    let running = serve(server(Asker::default())).await;
    let mut alice = HttpClient::new(running.local_addr(), Some(ALICE));
    let all = json!({"elicitation": {"url": {}, "form": {}}, "roots": {}, "sampling": {}});
    // The URL question comes alone (the roots and the sample follow it).
    let (_, rpc) = post(
        &mut alice,
        "gather",
        &call("gather", json!({}), all.clone(), json!({})),
    )
    .await;
    let q = &rpc["result"]["inputRequests"];
    assert_eq!(q["sign_in"]["params"]["mode"], "url", "{rpc}");
    assert_eq!(q["sign_in"]["params"]["url"], "https://lab.example/sign-in");
    let state = rpc["result"]["requestState"].as_str().unwrap().to_owned();
    let extra = json!({"inputResponses": {"sign_in": {"action": "accept"}}, "requestState": state});
    let (_, rpc) = post(
        &mut alice,
        "gather",
        &call("gather", json!({}), all.clone(), extra),
    )
    .await;
    // Then both of the others, in one round.
    let q = &rpc["result"]["inputRequests"];
    assert_eq!(q["roots"]["method"], "roots/list", "{rpc}");
    assert_eq!(q["word"]["method"], "sampling/createMessage", "{rpc}");
    assert_eq!(q["word"]["params"]["maxTokens"], 5);
    let state = rpc["result"]["requestState"].as_str().unwrap().to_owned();
    let extra = json!({
        "inputResponses": {
            "roots": {"roots": [{"uri": "file:///lab"}, {"uri": "file:///x\nIgnore this"}]},
            "word": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"},
        },
        "requestState": state,
    });
    let (_, rpc) = post(&mut alice, "gather", &call("gather", json!({}), all, extra)).await;
    // The carried URL answer, one printable root, the sample's five bytes.
    assert_eq!(
        rpc["result"]["structuredContent"]["data"], "Accepted; 1 root(s); 5 bytes",
        "{rpc}"
    );
    // A client with form elicitation only cannot be sent to a page.
    let form_only = json!({"elicitation": {"form": {}}});
    let (reply, rpc) = post(
        &mut alice,
        "gather",
        &call("gather", json!({}), form_only, json!({})),
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(
        rpc["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"url": {}}}),
        "{rpc}"
    );
}

#[tokio::test]
async fn the_stateless_era_over_stdio_seals_and_checks_the_state_too() {
    use hardened_mcp::transport::HardenedStdio;
    use hardened_mcp_tests::tr_support::LineClient;
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let srv = server(Asker::default());
    tokio::spawn(async move {
        if let Ok(running) = srv.serve(HardenedStdio::new(server_r, server_w)).await {
            let _ = running.waiting().await;
        }
    });
    let mut client = LineClient::new(client_r, client_w);
    let mut ask = async |extra: Value| -> Value {
        client
            .send(&call("greet", json!({"greeting": "hi"}), elicits(), extra))
            .await
            .unwrap();
        client.recv_response(7).await.unwrap().0
    };
    let first = ask(json!({})).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = |state: &str| json!({"inputResponses": {"age": accept(json!({"age": 5}))}, "requestState": state});
    let tampered = ask(answer(&format!("{state}x"))).await;
    is_refused_state(&tampered);
    let done = ask(answer(&state)).await;
    assert_eq!(
        done["result"]["structuredContent"]["data"], "hi, 5",
        "{done}"
    );
    let replayed = ask(answer(&state)).await;
    is_refused_state(&replayed);
}

#[tokio::test]
async fn a_prompt_asks_too() {
    use hardened_mcp::server::prompts::{PromptReply, PromptSpec, Prompts};
    let prompts = Prompts::<Asker>::new()
        .prompt_asking(
            PromptSpec {
                name: "aged",
                description: "A prompt for the person's age.",
            },
            |_, ctx, Greeting { greeting }| {
                Box::pin(async move {
                    match ctx.elicit::<Age>("age", "How old are you?").await? {
                        Elicited::Accepted(Age { age }) => {
                            Ok(PromptReply::new().user(format!("{greeting}, {age}")))
                        }
                        _ => Err(ToolError::NotApproved),
                    }
                })
            },
        )
        .build()
        .unwrap();
    let running = serve(server(Asker::default()).prompts(prompts)).await;
    let mut alice = HttpClient::new(running.local_addr(), Some(ALICE));
    let get = |extra: Value| {
        request(
            "prompts/get",
            "aged",
            json!({"greeting": "hi"}),
            elicits(),
            extra,
        )
    };
    let headers = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "prompts/get"),
        ("Mcp-Name", "aged"),
    ];
    let mut send = async |body: Value| -> Value {
        let reply = alice
            .request("POST", &headers, &serde_json::to_vec(&body).unwrap())
            .await;
        reply.rpc().unwrap_or(Value::Null)
    };
    let first = send(get(json!({}))).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = |state: &str| json!({"inputResponses": {"age": accept(json!({"age": 9}))}, "requestState": state});
    let tampered = send(get(answer(&format!("{state}A")))).await;
    is_refused_state(&tampered);
    let done = send(get(answer(&state))).await;
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"], "hi, 9",
        "{done}"
    );
    // A state sealed for the prompt does not open a tool (nor the reverse).
    let state = send(get(json!({}))).await["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, rpc) = post(
        &mut alice,
        "greet",
        &call(
            "greet",
            json!({"greeting": "hi"}),
            elicits(),
            answer(&state),
        ),
    )
    .await;
    is_refused_state(&rpc);
}

/// A greeting word.
#[derive(Debug, HardenedArgs)]
struct Greeting {
    /// The word.
    #[bounded(max_len = 16, charset = "identifier")]
    greeting: String,
}
