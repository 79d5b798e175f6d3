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
use std::time::Duration;

use hardened_mcp::audio::Audio;
use hardened_mcp::image::Image;
use hardened_mcp::prelude::*;
use hardened_mcp::server::prompts::{PromptReply, PromptSet, PromptSpec, Prompts};
use hardened_mcp::server::resources::{ResourceBody, ResourceSet, ResourceSpec, Resources};
use hardened_mcp::transport::http::HttpConfig;

/// The fixture's tools (no state: every call stands alone).
#[derive(Debug, Clone, Copy)]
pub struct Fixture;

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

/// The fixture's prompts: plain, with checked arguments, with an embedded
/// resource, with an image.
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
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli: Cli = clap::Parser::parse();
    let tools = Fixture::hardened_tool_router_set().into_router()?;
    let server = Server::new(
        "hardened-mcp-conformance",
        env!("CARGO_PKG_VERSION"),
        Fixture,
        tools,
    )
    .instructions("The fixture of the MCP conformance suite: test tools, resources and prompts.")
    .resources(resources()?)
    .prompts(prompts()?);
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
