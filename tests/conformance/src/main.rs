//! The fixture server of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, run by `.ci/conformance`): the
//! tools its server scenarios call, by the names they call them, built
//! with hardened-mcp's public API only, and served over streamable HTTP
//! in both protocol eras.
//!
//! Every tool is a hardened tool (a cost ceiling, fixed error texts,
//! bounded arguments where it takes any): the point of the fixture is
//! that the suite passes *with* the hardening on. What the framework
//! cannot serve yet, and what it refuses on purpose, is listed in
//! `tests/conformance/expected-failures.yaml` and explained in
//! docs/protocol.md.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use hardened_mcp::ask::{ClientNeed, Elicited, Sampling};
use hardened_mcp::audio::Audio;
use hardened_mcp::image::Image;
use hardened_mcp::jobs::{JobOutcome, JobService, Launcher, Prepared, ResultFile, SolverJob};
use hardened_mcp::prelude::*;
use hardened_mcp::runs::FileName;
use hardened_mcp::sandbox::{Limits, RunRequest, Sandbox, SandboxConfig, SolverRegistry};
use hardened_mcp::server::prompts::{PromptReply, PromptSet, PromptSpec, Prompts};
use hardened_mcp::server::resources::{ResourceBody, ResourceSet, ResourceSpec, Resources};
use hardened_mcp::transport::http::HttpConfig;

/// The fixture's tools; their only state is the job service of the task
/// tools.
pub struct Fixture {
    jobs: JobService<Compute>,
}

/// The directory the fixture's solver writes its result in.
const OUT: FileName = FileName::fixed("out");

/// What the fixture's solver asks for: sleep, or fail.
#[derive(Debug, Clone, Copy)]
pub enum Work {
    /// Sleep this many milliseconds, then write the result.
    Sleep {
        /// How long.
        ms: u64,
    },
    /// Exit at once with a failure status.
    Fail,
}

/// What the fixture's solver writes: numbers only.
#[tool_output]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slept {
    /// Milliseconds slept.
    pub slept_ms: u64,
}

/// The fixture's job: `conformance-job` (src/bin) in the sandbox.
pub struct Compute;

impl SolverJob for Compute {
    type Params = Work;
    type Result = Slept;
    const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT, FileName::fixed("result.json"));

    fn prepare(&self, work: &Work) -> Result<Prepared, ToolError> {
        let limits = Limits {
            wall_time: Duration::from_secs(90),
            memory: 64 << 20,
            processes: 2,
            ..Limits::default()
        };
        let request = match *work {
            Work::Sleep { ms } => RunRequest::new("compute")
                .args([
                    "sleep".to_owned(),
                    ms.to_string(),
                    "out/result.json".to_owned(),
                ])
                .write_only_in(OUT),
            Work::Fail => RunRequest::new("compute").args(["fail"]),
        };
        Ok(Prepared::new(request.limits(limits)))
    }
}

/// A one-pixel red PNG, the image the image scenarios look for.
const RED_PIXEL: &[u8] = include_bytes!("red-pixel.png");

/// Eight frames of silence, mono 16-bit PCM at 8 kHz: the audio the
/// audio scenario looks for.
const SILENCE: &[u8] = include_bytes!("silence.wav");

/// What `test_image_content` answers besides its image.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ImageNote {
    /// Width of the image, in pixels.
    pub width: u32,
    /// Height of the image, in pixels.
    pub height: u32,
}

/// The sum `test_add` answers.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Sum {
    /// `a + b`.
    pub sum: f64,
}

#[hardened_tools]
impl Fixture {
    /// Names this fixture (scenario http-header-validation calls the first
    /// tool listed, in name order, with no arguments).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn about(&self) -> Result<Output<String>, ToolError> {
        Ok(Output::new(
            "The hardened-mcp conformance fixture.".to_owned(),
        ))
    }

    /// Answers a fixed text (scenario tools-call-simple-text).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_simple_text(&self) -> Result<Output<String>, ToolError> {
        Ok(Output::new(
            "This is a simple text response for testing.".to_owned(),
        ))
    }

    /// Answers a one-pixel PNG image (scenario tools-call-image).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_image_content(&self) -> Result<Output<ImageNote>, ToolError> {
        let image = Image::png(RED_PIXEL.to_vec()).map_err(ToolError::internal)?;
        let note = ImageNote {
            width: image.width(),
            height: image.height(),
        };
        Ok(Output::new(note).with_image(image))
    }

    /// Answers a short PCM WAV clip (scenario tools-call-audio).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_audio_content(&self) -> Result<Output<String>, ToolError> {
        let audio = Audio::wav(SILENCE.to_vec()).map_err(ToolError::internal)?;
        Ok(Output::new("an audio clip follows".to_owned()).with_audio(audio))
    }

    /// Answers an embedded text resource (scenario
    /// tools-call-embedded-resource).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_embedded_resource(&self) -> Result<Output<String>, ToolError> {
        Ok(
            Output::new("an embedded resource follows".to_owned()).with_resource(
                "test://embedded-resource",
                "text/plain",
                ResourceBody::text("This is an embedded resource content."),
            ),
        )
    }

    /// Answers text, an image and an embedded resource (scenario
    /// tools-call-mixed-content).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_multiple_content_types(&self) -> Result<Output<String>, ToolError> {
        let image = Image::png(RED_PIXEL.to_vec()).map_err(ToolError::internal)?;
        Ok(Output::new("Multiple content types test:".to_owned())
            .with_image(image)
            .with_resource(
                "test://mixed-content-resource",
                "application/json",
                ResourceBody::text(r#"{"test":"data","value":123}"#),
            ))
    }

    /// Always fails, with a fixed server-authored error (scenario
    /// tools-call-error).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_error_handling(&self) -> Result<Output<String>, ToolError> {
        Err(ToolError::Rejected(
            "this tool always fails: the conformance suite checks the error result",
        ))
    }

    /// Reports progress three times, then answers (scenario
    /// tools-call-with-progress): notifications go to a call that carries
    /// a progress token.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_tool_with_progress(&self, ctx: ToolContext) -> Result<Output<String>, ToolError> {
        for step in [0.0, 50.0, 100.0] {
            ctx.progress()
                .report(step, Some(100.0), Some("working"))
                .await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Output::new("progress reported".to_owned()))
    }

    /// Sends three log notifications, then answers (scenario
    /// tools-call-with-logging): sent at or above the level the client
    /// asked for.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_tool_with_logging(&self, ctx: ToolContext) -> Result<Output<String>, ToolError> {
        for message in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ] {
            ctx.log().send(LogLevel::Info, message).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Output::new("logged".to_owned()))
    }

    /// Echoes a value the client also sends in the `Mcp-Param-Value`
    /// header (scenario http-custom-header-server-validation): the
    /// transport refuses a request whose header and argument differ.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_custom_header(
        &self,
        #[bounded(max_len = 256, header = "Value", description = "Any short text")] value: String,
    ) -> Result<Output<String>, ToolError> {
        Ok(Output::new(value))
    }

    /// Adds two bounded numbers: the fixture's hardened arguments, refused
    /// out of bounds, non-finite, as strings or with unknown keys.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_add(
        &self,
        #[bounded(min = -1e6, max = 1e6, description = "First term")] a: f64,
        #[bounded(min = -1e6, max = 1e6, description = "Second term")] b: f64,
    ) -> Result<Output<Sum>, ToolError> {
        Ok(Output::new(Sum { sum: a + b }))
    }

    /// Asks the client's model to complete `prompt` (scenario
    /// tools-call-sampling, 2025-11-25) and answers with its text.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, asks = "sampling")]
    async fn test_sampling(
        &self,
        ctx: ToolContext,
        #[bounded(max_len = 1000, description = "What to ask the model")] prompt: String,
    ) -> Result<Output<String>, ToolError> {
        let sampled = ctx
            .sample("prompt", Sampling::new(prompt).max_tokens(100))
            .await?;
        Ok(Output::new(format!(
            "LLM response: {}",
            sampled.text.data()
        )))
    }

    /// Asks the person for a user name and an e-mail address (scenario
    /// tools-call-elicitation, 2025-11-25), with `message` as the question.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, asks = "elicitation")]
    async fn test_elicitation(
        &self,
        ctx: ToolContext,
        #[bounded(max_len = 1000, description = "The question")] message: String,
    ) -> Result<Output<String>, ToolError> {
        let answer = ctx.elicit::<Contact>("contact", message).await?;
        Ok(Output::new(format!("User response: {}", outcome(&answer))))
    }

    /// Asks for a form whose fields all have defaults (scenario
    /// elicitation-sep1034-defaults, 2025-11-25).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, asks = "elicitation")]
    async fn test_elicitation_sep1034_defaults(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        let answer = ctx
            .elicit::<Profile>("profile", "Please review your profile")
            .await?;
        Ok(Output::new(format!(
            "Elicitation completed: {}",
            outcome(&answer)
        )))
    }

    /// Asks for a form of single- and multi-select enums (scenario
    /// elicitation-sep1330-enums, 2025-11-25).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, asks = "elicitation")]
    async fn test_elicitation_sep1330_enums(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        let answer = ctx.elicit::<Choices>("choices", "Please choose").await?;
        Ok(Output::new(format!(
            "Elicitation completed: {}",
            outcome(&answer)
        )))
    }

    /// Needs sampling from every client (scenario server-stateless): a
    /// call that does not declare it is refused with -32021.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, asks = "sampling")]
    async fn test_missing_capability(&self) -> Result<Output<String>, ToolError> {
        Ok(Output::new("the client declared sampling".to_owned()))
    }

    /// Asks a question (scenario server-stateless): on the 2026-07-28 wire
    /// the question is an input-required result, never a request on the
    /// stream.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_streaming_elicitation(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        let answer = ctx
            .elicit::<Named>("user_name", "What is your name?")
            .await?;
        Ok(Output::new(format!(
            "Elicitation completed: {}",
            outcome(&answer)
        )))
    }

    /// Greets the person by the name they give (scenario
    /// input-required-result-basic-elicitation and its variants).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_elicitation(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        greet(&ctx, "user_name", "What is your name?").await
    }

    /// Asks the client's model a question (scenario
    /// input-required-result-basic-sampling).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_sampling(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        let sampled = ctx
            .sample(
                "capital_question",
                Sampling::new("What is the capital of France?").max_tokens(100),
            )
            .await?;
        Ok(Output::new(format!(
            "The model answered: {}",
            sampled.text.data()
        )))
    }

    /// Asks the client for its roots (scenario
    /// input-required-result-basic-list-roots).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_list_roots(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        let roots = ctx.roots("client_roots").await?;
        Ok(Output::new(format!(
            "Found {} root(s)",
            roots.uris.data().len()
        )))
    }

    /// Asks for a confirmation, the answers of the round sealed in
    /// `requestState` (scenario input-required-result-request-state).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_request_state(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        confirmed(&ctx).await
    }

    /// Asks three questions in one round (scenario
    /// input-required-result-multiple-input-requests).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_multiple_inputs(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        let (name, greeting, roots) = futures::join!(
            ctx.elicit::<Named>("user_name", "What is your name?"),
            ctx.sample(
                "greeting",
                Sampling::new("Generate a greeting").max_tokens(50)
            ),
            ctx.roots("client_roots"),
        );
        let (name, _greeting, roots) = (name?, greeting?, roots?);
        Ok(Output::new(format!(
            "{} with {} root(s)",
            outcome(&name),
            roots.uris.data().len()
        )))
    }

    /// Asks one question, then another (scenario
    /// input-required-result-multi-round).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_multi_round(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        let name = ctx
            .elicit::<Named>("step1", "Step 1: What is your name?")
            .await?;
        let color = ctx
            .elicit::<Colour>("step2", "Step 2: What is your favorite color?")
            .await?;
        match (name, color) {
            (Elicited::Accepted(n), Elicited::Accepted(c)) => {
                Ok(Output::new(format!("{} likes {}", n.name, c.color)))
            }
            _ => Err(ToolError::NotApproved),
        }
    }

    /// Asks for a confirmation whose sealed state a client may alter
    /// (scenario input-required-result-tampered-state): an altered state
    /// is refused.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_tampered_state(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        confirmed(&ctx).await
    }

    /// Asks only what the client declared (scenario
    /// input-required-result-capability-check).
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
    async fn test_input_required_result_capabilities(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<String>, ToolError> {
        if ctx.can_ask(ClientNeed::Elicitation) {
            return greet(&ctx, "user_name", "What is your name?").await;
        }
        if ctx.can_ask(ClientNeed::Sampling) {
            let sampled = ctx
                .sample(
                    "greeting",
                    Sampling::new("Generate a greeting").max_tokens(50),
                )
                .await?;
            return Ok(Output::new(format!(
                "The model answered: {}",
                sampled.text.data()
            )));
        }
        let roots = ctx.roots("client_roots").await?;
        Ok(Output::new(format!(
            "Found {} root(s)",
            roots.uris.data().len()
        )))
    }

    /// Answers after a short pause (scenario server-sse-polling). The
    /// framework never closes a call's event stream before its answer (a
    /// server MAY), so the answer comes on the stream the call opened,
    /// after the priming event that would let a client resume.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn test_reconnection(&self) -> Result<Output<String>, ToolError> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(Output::new("answered on the call's own stream".to_owned()))
    }

    /// Greets `name` (scenarios of the tasks extension): never a task.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn greet(
        &self,
        #[bounded(
            max_len = 64,
            pattern = "^[A-Za-z0-9 _.-]{1,64}$",
            description = "Who to greet"
        )]
        name: String,
    ) -> Result<Output<String>, ToolError> {
        Ok(Output::new(format!("Hello, {name}!")))
    }

    /// Runs the solver for `seconds` (scenarios of the tasks extension): a
    /// task for a client that takes tasks, else the answer when it ends.
    #[hardened_tool(max_cost = 60, units = "seconds", cost = seconds, timeout_s = 90, task)]
    async fn slow_compute(
        &self,
        ctx: ToolContext,
        #[bounded(
            min = 0.0,
            max = 60.0,
            description = "How long the run takes, in seconds"
        )]
        seconds: f64,
        #[bounded(
            max_len = 64,
            charset = "identifier",
            description = "A label for the run (not echoed)"
        )]
        label: Option<String>,
    ) -> Result<Output<JobOutcome<Slept>>, ToolError> {
        let _ = label;
        // Bounded to [0, 60] s above: whole milliseconds.
        let ms = (seconds * 1000.0).round() as u64;
        self.jobs
            .run(&ctx, &Work::Sleep { ms }, Duration::from_secs(80))
            .await
    }

    /// A run that fails (scenarios of the tasks extension): only as a
    /// task, which completes with an error result.
    #[hardened_tool(
        max_cost = 1,
        units = "runs",
        cost = 1.0,
        timeout_s = 30,
        task = "required"
    )]
    async fn failing_job(&self, ctx: ToolContext) -> Result<Output<JobOutcome<Slept>>, ToolError> {
        self.jobs
            .run(&ctx, &Work::Fail, Duration::from_secs(20))
            .await
    }

    /// A task whose body panics (scenario tasks-lifecycle): the framework
    /// fails the task with the fixed internal error, a protocol error
    /// (`failed`), and never leaves it working.
    #[hardened_tool(
        max_cost = 1,
        units = "calls",
        cost = 1.0,
        timeout_s = 30,
        task(required, detached)
    )]
    async fn protocol_error_job(&self) -> Result<Output<u32>, ToolError> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        std::panic::panic_any("protocol_error_job: the fixture's deliberate panic")
    }

    /// Asks the person's name, then runs as a task (scenario
    /// tasks-mrtr-composition): the question comes before the task.
    #[hardened_tool(
        max_cost = 1,
        units = "runs",
        cost = 1.0,
        timeout_s = 30,
        task = "required"
    )]
    async fn test_tool_with_task(
        &self,
        ctx: ToolContext,
    ) -> Result<Output<JobOutcome<Slept>>, ToolError> {
        match ctx
            .elicit::<Named>("user_name", "What is your name?")
            .await?
        {
            Elicited::Accepted(_) => {
                self.jobs
                    .run(&ctx, &Work::Sleep { ms: 100 }, Duration::from_secs(20))
                    .await
            }
            Elicited::Declined | Elicited::Cancelled => Err(ToolError::NotApproved),
        }
    }

    /// Asks the person to confirm deleting `filename` (one of the names
    /// the server knows, never a caller's path; the fixture deletes
    /// nothing), then answers (scenario
    /// tasks-mrtr-input): for a client that takes tasks, the whole body is
    /// the task, its question the task's input request.
    #[hardened_tool(
        max_cost = 1,
        units = "calls",
        cost = 1.0,
        timeout_s = 620,
        asks = "elicitation",
        task(detached)
    )]
    async fn confirm_delete(
        &self,
        ctx: ToolContext,
        filename: Deletable,
    ) -> Result<Output<&'static str>, ToolError> {
        let _ = filename;
        match ctx.elicit::<GoAhead>("confirm", "Delete the file?").await? {
            Elicited::Accepted(GoAhead { confirm: true, .. }) => Ok(Output::new("confirmed")),
            _ => Ok(Output::new("not confirmed")),
        }
    }

    /// Asks two questions at once, then says how many were accepted
    /// (scenario tasks-mrtr-input): as a task, both wait together.
    #[hardened_tool(
        max_cost = 1,
        units = "calls",
        cost = 1.0,
        timeout_s = 620,
        asks = "elicitation",
        task(detached)
    )]
    async fn multi_input(&self, ctx: ToolContext) -> Result<Output<String>, ToolError> {
        let (first, second) = futures::join!(
            ctx.elicit::<GoAhead>("first", "First: go ahead?"),
            ctx.elicit::<GoAhead>("second", "Second: go ahead?")
        );
        let accepted = [first?, second?]
            .iter()
            .filter(|a| matches!(a, Elicited::Accepted(GoAhead { confirm: true, .. })))
            .count();
        Ok(Output::new(format!("{accepted} of 2 accepted")))
    }
}

/// `accept`, `decline` or `cancel`.
fn outcome<T>(answer: &Elicited<T>) -> &'static str {
    match answer {
        Elicited::Accepted(_) => "accept",
        Elicited::Declined => "decline",
        Elicited::Cancelled => "cancel",
    }
}

/// Asks the person's name under `key` and greets them.
async fn greet(
    ctx: &ToolContext,
    key: &'static str,
    question: &str,
) -> Result<Output<String>, ToolError> {
    match ctx.elicit::<Named>(key, question).await? {
        Elicited::Accepted(Named { name }) => Ok(Output::new(format!("Hello, {name}!"))),
        Elicited::Declined | Elicited::Cancelled => Ok(Output::new("Hello, stranger!".to_owned())),
    }
}

/// Asks for a yes/no confirmation under `confirm`.
async fn confirmed(ctx: &ToolContext) -> Result<Output<String>, ToolError> {
    match ctx
        .elicit::<Confirmation>("confirm", "Please confirm")
        .await?
    {
        Elicited::Accepted(Confirmation { ok: true }) => {
            Ok(Output::new("state-ok: confirmed".to_owned()))
        }
        _ => Ok(Output::new("state-ok: not confirmed".to_owned())),
    }
}

/// A person's name.
#[derive(Debug, HardenedArgs)]
pub struct Named {
    /// Your name.
    #[bounded(max_len = 64, charset = "identifier")]
    pub name: String,
}

/// A favourite colour.
#[derive(Debug, HardenedArgs)]
pub struct Colour {
    /// Your favourite colour.
    #[bounded(max_len = 32, charset = "identifier")]
    pub color: String,
}

/// The files `confirm_delete` knows: a file name a caller may send is one
/// of a closed set, never a path.
#[derive(Debug, Clone, Copy, ToolEnum)]
pub enum Deletable {
    /// The input scenario's file.
    #[tool_enum(rename = "mrtr-input.txt")]
    MrtrInput,
    /// The resume scenario's file.
    #[tool_enum(rename = "mrtr-resume.txt")]
    MrtrResume,
}

/// A go-ahead, and who gives it.
#[derive(Debug, HardenedArgs)]
pub struct GoAhead {
    /// Whether to go ahead.
    pub confirm: bool,
    /// Who answers.
    #[bounded(max_len = 64, pattern = "^[A-Za-z0-9 _.-]{1,64}$")]
    pub name: Option<String>,
}

/// A yes/no confirmation.
#[derive(Debug, HardenedArgs)]
pub struct Confirmation {
    /// Whether to go ahead.
    pub ok: bool,
}

/// A user name and an e-mail address.
#[derive(Debug, HardenedArgs)]
pub struct Contact {
    /// User's response
    #[bounded(max_len = 64, charset = "identifier")]
    pub username: String,
    /// User's email address
    #[bounded(max_len = 254, pattern = "^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+$")]
    pub email: String,
}

/// An account's status (its options untitled: SEP-1034 looks for `enum`).
#[derive(Debug, Clone, Copy, ToolEnum)]
enum Status {
    Active,
    Inactive,
    Pending,
}

/// A profile whose every field has a default (SEP-1034).
#[allow(dead_code)]
#[derive(Debug, HardenedArgs)]
struct Profile {
    /// Your name.
    #[bounded(max_len = 64, default = "John Doe")]
    name: String,
    /// Your age.
    #[bounded(min = 0, max = 150, default = 30)]
    age: u32,
    /// Your score.
    #[bounded(min = 0.0, max = 100.0, default = 95.5)]
    score: f64,
    /// Your status.
    #[bounded(default = "active")]
    status: Status,
    /// Whether you are verified.
    #[bounded(default = true)]
    verified: bool,
}

/// Options 1 to 3, without titles: their variants have no doc comment.
#[derive(Debug, Clone, Copy, ToolEnum)]
enum Option123 {
    #[allow(clippy::enum_variant_names)]
    Option1,
    Option2,
    Option3,
}

/// Values 1 to 3.
#[derive(Debug, Clone, Copy, ToolEnum)]
pub enum Value123 {
    /// First Option.
    Value1,
    /// Second Option.
    Value2,
    /// Third Option.
    Value3,
}

/// Legacy options 1 to 3.
#[derive(Debug, Clone, Copy, ToolEnum)]
pub enum Opt123 {
    /// Option One.
    Opt1,
    /// Option Two.
    Opt2,
    /// Option Three.
    Opt3,
}

/// Single and multiple choices (SEP-1330): untitled where the variants
/// have no doc comment, titled (each variant's doc comment) where they
/// do.
#[allow(non_snake_case, dead_code)]
#[derive(Debug, HardenedArgs)]
struct Choices {
    /// One option.
    untitledSingle: Option123,
    /// One value.
    titledSingle: Value123,
    /// One legacy option.
    legacyEnum: Opt123,
    /// Several options.
    #[bounded(max_items = 3)]
    untitledMulti: Vec<Option123>,
    /// Several values.
    #[bounded(max_items = 3)]
    titledMulti: Vec<Value123>,
}

/// The variable of the template `test://template/{id}/data`: digits only.
#[derive(Debug, HardenedArgs)]
pub struct DataId {
    /// The record's id.
    #[bounded(max_len = 9, pattern = "^[0-9]{1,9}$")]
    pub id: String,
}

/// The fixture's resources: a text, a PNG, and a template whose variable
/// is a hardened argument.
fn resources() -> Result<ResourceSet<Fixture>, hardened_mcp::server::resources::ResourceFaults> {
    Resources::new()
        .fixed(
            ResourceSpec {
                uri: "test://static-text",
                name: "static-text",
                description: "A fixed text (scenario resources-read-text).",
                mime_type: "text/plain",
                max_bytes: 1024,
                scopes: &[],
            },
            |_, _| {
                Ok(ResourceBody::text(
                    "This is the content of the static text resource.",
                ))
            },
        )
        .fixed(
            ResourceSpec {
                uri: "test://watched-resource",
                name: "watched-resource",
                description: "A text clients subscribe to (scenarios resources-subscribe, \
                              resources-unsubscribe).",
                mime_type: "text/plain",
                max_bytes: 1024,
                scopes: &[],
            },
            |_, _| Ok(ResourceBody::text("Watched resource content")),
        )
        .fixed(
            ResourceSpec {
                uri: "test://static-binary",
                name: "static-binary",
                description: "A one-pixel PNG (scenario resources-read-binary).",
                mime_type: "image/png",
                max_bytes: 1024,
                scopes: &[],
            },
            |_, _| Ok(ResourceBody::blob(RED_PIXEL.to_vec())),
        )
        .template(
            ResourceSpec {
                uri: "test://template/{id}/data",
                name: "template-data",
                description: "A record by its numeric id, as JSON (scenario resources-templates-read).",
                mime_type: "application/json",
                max_bytes: 1024,
                scopes: &[],
            },
            |_, _, DataId { id }| {
                Ok(ResourceBody::text(format!(
                    r#"{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}"#
                )))
            },
        )
        .build()
}

/// The arguments of `test_prompt_with_arguments`.
#[derive(Debug, HardenedArgs)]
pub struct TwoArgs {
    /// The first argument.
    #[bounded(max_len = 64, charset = "identifier")]
    pub arg1: String,
    /// The second argument.
    #[bounded(max_len = 64, charset = "identifier")]
    pub arg2: String,
}

/// The argument of `test_prompt_with_embedded_resource` (the suite's name).
#[allow(non_snake_case)]
#[derive(Debug, HardenedArgs)]
pub struct EmbeddedUri {
    /// The URI the embedded resource is shown under.
    #[bounded(
        max_len = 256,
        pattern = "^[a-z][a-z0-9+.-]*://[A-Za-z0-9._~/-]{1,200}$"
    )]
    pub resourceUri: String,
}

/// No arguments.
#[derive(Debug, HardenedArgs)]
pub struct NoArgs {}

/// The context a prompt asks for.
#[derive(Debug, HardenedArgs)]
pub struct PromptContext {
    /// The context the prompt should use.
    #[bounded(max_len = 200, charset = "printable")]
    pub context: String,
}

/// The fixture's prompts: plain, with checked arguments, with an embedded
/// resource, with an image, and one that asks first.
fn prompts() -> Result<PromptSet<Fixture>, hardened_mcp::server::prompts::PromptFaults> {
    Prompts::new()
        .prompt(
            PromptSpec {
                name: "test_simple_prompt",
                description: "A prompt without arguments (scenario prompts-get-simple).",
            },
            |_, _| Ok(PromptReply::new().user("This is a simple prompt for testing.")),
        )
        .prompt_with(
            PromptSpec {
                name: "test_prompt_with_arguments",
                description: "A prompt of two checked arguments (scenario prompts-get-with-args).",
            },
            |_, _, TwoArgs { arg1, arg2 }| {
                Ok(PromptReply::new().user(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                )))
            },
        )
        .prompt_with(
            PromptSpec {
                name: "test_prompt_with_embedded_resource",
                description: "A prompt embedding a resource (scenario prompts-get-embedded-resource).",
            },
            |_, _, EmbeddedUri { resourceUri }| {
                Ok(PromptReply::new()
                    .user_resource(
                        resourceUri,
                        "text/plain",
                        ResourceBody::text("Embedded resource content for testing."),
                    )
                    .user("Please process the embedded resource above."))
            },
        )
        .prompt_asking(
            PromptSpec {
                name: "test_input_required_result_prompt",
                description: "A prompt that asks the person for its context first (scenario input-required-result-non-tool-request).",
            },
            |_, ctx, NoArgs {}| {
                Box::pin(async move {
                    let context = match ctx
                        .elicit::<PromptContext>("user_context", "What context should the prompt use?")
                        .await?
                    {
                        Elicited::Accepted(c) => c.context,
                        Elicited::Declined | Elicited::Cancelled => "none".to_owned(),
                    };
                    Ok(PromptReply::new().user(format!("Answer with this context in mind: {context}")))
                })
            },
        )
        .prompt(
            PromptSpec {
                name: "test_prompt_with_image",
                description: "A prompt holding an image (scenario prompts-get-with-image).",
            },
            |_, _| {
                let image = Image::png(RED_PIXEL.to_vec()).map_err(ToolError::internal)?;
                Ok(PromptReply::new()
                    .user_image(image)
                    .user("Please analyze the image above."))
            },
        )
        .build()
}

/// Serves the conformance fixture over streamable HTTP.
#[derive(Debug, clap::Parser)]
#[command(version, about)]
struct Cli {
    /// The loopback address to listen on; the MCP endpoint is
    /// http://ADDR/mcp
    #[arg(long, default_value = "127.0.0.1:3001")]
    http: SocketAddr,
    /// Directory holding the task tools' runs (created 0700)
    #[arg(long)]
    run_root: PathBuf,
    /// The task tools' solver [default: conformance-job next to this
    /// program]
    #[arg(long)]
    solver: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli: Cli = clap::Parser::parse();
    let solver = match cli.solver {
        Some(path) => path,
        None => std::env::current_exe()?.with_file_name("conformance-job"),
    };
    let registry = SolverRegistry::builder()
        .solver("compute", solver)
        .build()?;
    let sandbox = Sandbox::new(registry, SandboxConfig::default())?;
    let jobs = JobService::new(
        Compute,
        RunRoot::open(cli.run_root)?,
        Launcher::local(sandbox),
    );
    let tools = Fixture::hardened_tool_router_set().into_router()?;
    let server = Server::new(
        "hardened-mcp-conformance",
        env!("CARGO_PKG_VERSION"),
        Fixture { jobs },
        tools,
    )
    .instructions("The fixture of the MCP conformance suite: test tools, resources and prompts.")
    .resources(resources()?)
    .prompts(prompts()?)
    .tasks(|f: &Fixture| f.jobs.desk());
    // The suite opens a session per scenario and never ends one; every
    // request on loopback without tokens is the one local caller, whose
    // ceiling of open sessions (16 by default, each expiring when idle)
    // is raised to what one run of the suite opens.
    let config = HttpConfig::new()
        .bind(cli.http)
        .max_sessions_per_caller(1024);
    hardened_mcp::serve_http(server, config).await?;
    Ok(())
}
