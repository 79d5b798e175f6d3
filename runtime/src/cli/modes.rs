//! A server's command line with two modes, `serve` (the default) and
//! `demo`, and what a demo needs: a run root of its own and a client
//! connected to the server in the same process.

use std::ffi::OsString;
use std::ops::Deref;

use clap::{Args, Command, CommandFactory, Parser, Subcommand};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};

use super::args::{RunArgs, SandboxArgs, ServerArgs};
use super::setup::StartError;
use super::{Parsed, finish, matched, with_env};
use crate::Server;
use crate::transport::HardenedStdio;

/// What a server's command line says of the server: its name (also the
/// prefix of its environment variables, as with [`parse`](super::parse)),
/// version and one-line description, and what its demo shows.
/// [`App::parse`] reads the command line into a [`Mode`].
///
/// ```no_run
/// use std::process::ExitCode;
///
/// use hardened_mcp::cli::{self, App, Mode};
/// # use hardened_mcp::prelude::*;
/// # struct Beam;
/// # #[hardened_tools]
/// # impl Beam {
/// #     /// A tool.
/// #     #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
/// #     async fn one(&self) -> Result<Output<u8>, ToolError> { Ok(Output::new(1)) }
/// # }
///
/// /// The beam server's own options (in both modes).
/// #[derive(Debug, Clone, clap::Args)]
/// #[command(next_help_heading = "Beam")]
/// struct BeamOptions {
///     /// Ask before deleting a run.
///     #[arg(long)]
///     confirm_delete: bool,
/// }
///
/// /// The demo's own options.
/// #[derive(Debug, Clone, clap::Args)]
/// #[command(next_help_heading = "Demo")]
/// struct DemoOptions {
///     /// Where to save the plot.
///     #[arg(long)]
///     plot: Option<std::path::PathBuf>,
/// }
///
/// const APP: App = App::new("beam-server", env!("CARGO_PKG_VERSION"), "Beams behind hardened MCP tools")
///     .demo("Run an in-process client session: a deflection and refused attacks");
///
/// fn main() -> ExitCode {
///     match APP.parse::<BeamOptions, DemoOptions>() {
///         Mode::Serve(o) => o.server.serve(|_setup| {
///             Ok(Server::new("beam", env!("CARGO_PKG_VERSION"), Beam, Beam::hardened_tool_router()))
///         }),
///         Mode::Demo(d) => cli::block_on("warn", async move {
///             let args = d.server_args()?;
///             // build the server with `args.setup()`, connect `InProcess`, call its tools
///             Ok(())
///         }),
///     }
/// }
/// ```
///
/// `beam-server [OPTIONS]` and `beam-server serve [OPTIONS]` serve
/// ([`ServerArgs`] and the server's own options); `beam-server demo
/// [OPTIONS]` takes the run root and sandbox options, the server's own and
/// the demo's, and no transport. `--help` on each, `--version`,
/// `--completions SHELL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct App {
    name: &'static str,
    version: &'static str,
    about: &'static str,
    demo: &'static str,
}

impl App {
    /// The server `name` (the command's name) at `version`
    /// (`env!("CARGO_PKG_VERSION")`), described by `about` (one line, no
    /// final period).
    pub const fn new(name: &'static str, version: &'static str, about: &'static str) -> Self {
        Self {
            name,
            version,
            about,
            demo: "Run the demo: a client session against the server in this process",
        }
    }

    /// What the demo mode does, for `--help` (one line, no final period).
    pub const fn demo(mut self, what: &'static str) -> Self {
        self.demo = what;
        self
    }

    /// The command: the two modes, `serve`'s options also without the
    /// mode, the environment variables of [`parse`](super::parse). For
    /// help, completions and tests.
    pub fn command<O: Args, D: Args>(&self) -> Command {
        let long_about = format!(
            "{}.\n\nWith no mode, serves MCP over stdio (as `serve`); the options below are \
             serve's. `{} <MODE> --help` shows a mode's options.",
            self.about, self.name
        );
        let command = Line::<O, D>::command()
            .name(self.name)
            .bin_name(self.name)
            .version(self.version)
            .about(self.about)
            .long_about(long_about)
            .mut_subcommand("demo", |s| s.about(self.demo));
        with_env(command)
    }

    /// Reads the process's arguments into the mode they choose, exiting as
    /// [`parse`](super::parse) does on `--help`, `--version`,
    /// `--completions SHELL` and usage errors.
    pub fn parse<O: Args, D: Args>(&self) -> Mode<O, D> {
        finish(self.try_parse_from(std::env::args_os()))
    }

    /// [`App::parse`] without exiting: `args` start with the program name.
    pub fn try_parse_from<O, D, I, T>(&self, args: I) -> Result<Parsed<Mode<O, D>>, clap::Error>
    where
        O: Args,
        D: Args,
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let parsed = matched::<Line<O, D>, _, _>(self.command::<O, D>(), args)?;
        Ok(parsed.map(|line| match line.mode {
            None => Mode::Serve(line.serve),
            Some(Modes::Serve(o)) => Mode::Serve(o),
            Some(Modes::Demo(d)) => Mode::Demo(d),
        }))
    }
}

/// The mode a command line chose.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // made once per process
pub enum Mode<O: Args, D: Args> {
    /// Serve (also with no mode named): the standard options and the
    /// server's own.
    Serve(ServeArgs<O>),
    /// Run the demo.
    Demo(DemoArgs<O, D>),
}

/// `serve`'s options: the standard ones and the server's own `O`.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct ServeArgs<O: Args> {
    /// Run root, sandbox, launcher, transport.
    #[command(flatten)]
    pub server: ServerArgs,
    /// The server's own.
    #[command(flatten)]
    pub own: O,
}

/// `demo`'s options: where runs go and how they are contained (no
/// transport: the client is in the process), the server's own `O` and the
/// demo's own `D`.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct DemoArgs<O: Args, D: Args> {
    /// The run root [default: a fresh private temporary directory, removed
    /// after].
    #[command(flatten)]
    pub runs: RunArgs,
    /// The sandbox and the launcher.
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// The server's own.
    #[command(flatten)]
    pub own: O,
    /// The demo's own.
    #[command(flatten)]
    pub demo: D,
}

impl<O: Args, D: Args> DemoArgs<O, D> {
    /// The server arguments of the demo: these run root and sandbox
    /// options over stdio. Without `--run-root`, the runs go to a fresh
    /// directory in the temporary directory (created private, with an
    /// unpredictable name), removed with everything in it when the value
    /// returned is dropped.
    pub fn server_args(&self) -> Result<DemoServerArgs, StartError> {
        let mut args = ServerArgs {
            runs: self.runs.clone(),
            sandbox: self.sandbox.clone(),
            ..ServerArgs::default()
        };
        let tmp = match args.runs.run_root {
            Some(_) => None,
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("hardened-mcp-demo-")
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                    .tempdir()
                    .map_err(|e| StartError::because("demo run root", e))?;
                args.runs.run_root = Some(dir.path().to_path_buf());
                Some(dir)
            }
        };
        Ok(DemoServerArgs { args, _tmp: tmp })
    }
}

/// A demo's [`ServerArgs`] ([`DemoArgs::server_args`]), holding its
/// temporary run root while it lives.
#[derive(Debug)]
pub struct DemoServerArgs {
    args: ServerArgs,
    _tmp: Option<tempfile::TempDir>,
}

impl Deref for DemoServerArgs {
    type Target = ServerArgs;

    fn deref(&self) -> &ServerArgs {
        &self.args
    }
}

/// The whole command line: a mode, or `serve`'s options with none.
#[derive(Parser)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_value_name = "MODE",
    subcommand_help_heading = "Modes"
)]
struct Line<O: Args, D: Args> {
    #[command(subcommand)]
    mode: Option<Modes<O, D>>,
    #[command(flatten)]
    serve: ServeArgs<O>,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum Modes<O: Args, D: Args> {
    /// Serve the tools over MCP: stdio (the default), or streamable HTTP with --http
    Serve(ServeArgs<O>),
    /// Run the demo (its text is the App's)
    Demo(DemoArgs<O, D>),
}

/// A server served in this process, over the hardened stdio transport on
/// an in-memory pipe, and a client session connected to it: what a demo
/// mode (or a test) talks to. It dereferences to the client's
/// [`RunningService`], whose methods (`list_all_tools`, `call_tool`, …)
/// make the requests.
pub struct InProcess<C: ClientHandler> {
    client: RunningService<RoleClient, C>,
    serving: tokio::task::JoinHandle<()>,
}

impl<C: ClientHandler> InProcess<C> {
    /// Serves `server` on a pipe of 1 MiB each way and connects `client`
    /// (`rmcp::model::ClientConfig::default()` for a plain client, a
    /// handler of your own to answer the server's questions) to it. A
    /// server that fails to start is logged; the client's start then
    /// fails, which is the error returned.
    pub async fn connect<S: Send + Sync + 'static>(
        server: Server<S>,
        client: C,
    ) -> Result<Self, StartError> {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server_io);
        let serving = tokio::spawn(async move {
            match server.serve(HardenedStdio::new(sr, sw)).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::error!(error = %e, "in-process server did not start"),
            }
        });
        let client = client
            .serve(tokio::io::split(client_io))
            .await
            .map_err(|e| StartError::because("in-process client session", e))?;
        Ok(Self { client, serving })
    }

    /// Calls the tool `name` with `arguments` (a JSON object) and waits for
    /// its result. A tool's error is a result (`is_error`), not an `Err`:
    /// that is a request the session could not make or answer.
    pub async fn call(
        &self,
        name: &'static str,
        arguments: serde_json::Value,
    ) -> Result<CallToolResult, StartError> {
        let serde_json::Value::Object(arguments) = arguments else {
            return Err(StartError::new("tool arguments must be a JSON object"));
        };
        self.client
            .call_tool(CallToolRequestParams::new(name).with_arguments(arguments))
            .await
            .map_err(|e| StartError::because(name, e))
    }

    /// Ends the session and waits for the server to stop.
    pub async fn close(self) {
        let _ = self.client.cancel().await;
        let _ = self.serving.await;
    }
}

impl<C: ClientHandler> Deref for InProcess<C> {
    type Target = RunningService<RoleClient, C>;

    fn deref(&self) -> &Self::Target {
        &self.client
    }
}

impl<C: ClientHandler> std::fmt::Debug for InProcess<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess").finish_non_exhaustive()
    }
}
