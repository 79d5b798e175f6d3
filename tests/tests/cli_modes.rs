//! A server's command line with modes (`hardened_mcp::cli::App`): `serve`
//! by default or by name, `demo` with its own options and no transport, the
//! command's name in help, completions and environment variables; a demo's
//! temporary run root; and the in-process client a demo talks through.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use clap::Args;
use clap::error::ErrorKind;
use hardened_mcp::cli::{App, DemoArgs, InProcess, Mode, Parsed};
use hardened_mcp::prelude::*;
use rmcp::model::ClientConfig;
use serde_json::json;

const APP: App = App::new("beam-server", "1.2.3", "Beams behind hardened MCP tools")
    .demo("Run a deflection and refused attacks");

#[derive(Debug, Clone, Default, PartialEq, Args)]
#[command(next_help_heading = "Beam")]
struct Own {
    /// The beam model.
    #[arg(long)]
    model: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Args)]
#[command(next_help_heading = "Demo")]
struct Show {
    /// Where to save the plot.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn parse(args: &[&str]) -> Result<Parsed<Mode<Own, Show>>, clap::Error> {
    APP.try_parse_from(std::iter::once("beam-server").chain(args.iter().copied()))
}

fn mode(args: &[&str]) -> Mode<Own, Show> {
    match parse(args).unwrap() {
        Parsed::Args(m) => m,
        _ => panic!("not arguments"),
    }
}

#[test]
fn serve_is_the_default_and_a_mode_of_its_own() {
    let Mode::Serve(o) = mode(&["--model", "m", "--run-root", "/r"]) else {
        panic!("no mode is serve")
    };
    assert_eq!(o.own.model.as_deref(), Some("m"));
    assert_eq!(o.server.runs.run_root, Some(PathBuf::from("/r")));
    let Mode::Serve(o) = mode(&["serve", "--model", "n", "--http", "127.0.0.1:9"]) else {
        panic!("serve")
    };
    assert_eq!(o.own.model.as_deref(), Some("n"));
    assert!(o.server.http.http.is_some());
    // Options before a mode are not the mode's.
    assert!(parse(&["--model", "m", "demo"]).is_err());
}

#[test]
fn the_demo_takes_runs_sandbox_its_own_and_the_servers_but_no_transport() {
    let argv = ["demo", "--model", "m", "--plot", "p.png", "--max-runs", "3"];
    let Mode::Demo(d) = mode(&argv) else {
        panic!("demo")
    };
    assert_eq!(d.own.model.as_deref(), Some("m"));
    assert_eq!(d.demo.plot, Some(PathBuf::from("p.png")));
    assert_eq!(d.runs.max_runs, 3);
    assert!(!d.sandbox.allow_weak_sandbox, "fail closed by default");
    for bad in [
        &["demo", "--http", "127.0.0.1:1"][..],
        &["demo", "--tokens-file", "t"],
        &["serve", "--plot", "x"],
        &["--plot", "x"],
    ] {
        let kind = parse(bad).err().map(|e| e.kind());
        assert_eq!(kind, Some(ErrorKind::UnknownArgument), "{bad:?}");
    }
}

#[test]
fn help_version_and_completions_are_the_apps() {
    let help = parse(&["--help"]).unwrap_err();
    assert_eq!(help.kind(), ErrorKind::DisplayHelp);
    let help = help.to_string();
    for word in [
        "Beams behind hardened MCP tools.",
        "`beam-server <MODE>",
        "Run a deflection and refused attacks",
        "BEAM_SERVER_RUN_ROOT",
        "BEAM_SERVER_HTTP",
        "--model",
    ] {
        assert!(help.contains(word), "{word} missing from\n{help}");
    }
    let demo = parse(&["demo", "--help"]).unwrap_err().to_string();
    assert!(
        demo.contains("--plot") && demo.contains("BEAM_SERVER_RUN_ROOT"),
        "{demo}"
    );
    assert!(!demo.contains("--http"), "{demo}");
    let version = parse(&["--version"]).unwrap_err();
    assert_eq!(version.kind(), ErrorKind::DisplayVersion);
    assert_eq!(version.to_string().trim(), "beam-server 1.2.3");
    let Parsed::Completions(script) = parse(&["--completions", "bash"]).unwrap() else {
        panic!("completions")
    };
    assert!(
        script.contains("beam-server") && script.contains("--plot"),
        "{script}"
    );
    APP.command::<Own, Show>().debug_assert();
}

#[test]
fn a_demo_without_a_run_root_gets_a_private_one_removed_after() {
    let d = DemoArgs::<Own, Show>::default();
    let args = d.server_args().unwrap();
    let root = args.runs.run_root.clone().expect("a run root");
    let meta = std::fs::metadata(&root).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    std::fs::write(root.join("left-behind"), b"x").unwrap();
    assert_eq!(
        args.http.http, None,
        "the demo's server is not on the network"
    );
    drop(args);
    assert!(!root.exists(), "removed with what it holds");

    // A run root given is used as it is and kept.
    let kept = tempfile::tempdir().unwrap();
    let mut d = DemoArgs::<Own, Show>::default();
    d.runs.run_root = Some(kept.path().join("runs"));
    let args = d.server_args().unwrap();
    assert_eq!(args.runs.run_root, d.runs.run_root);
    drop(args);
    assert!(kept.path().exists());
}

struct Beam;

#[hardened_tools]
impl Beam {
    /// Deflection of a beam under a load.
    #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
    async fn deflect(
        &self,
        #[bounded(min = 0.0, max = 1e6, description = "Load")] load: f64,
    ) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(load / 2.0))
    }
}

#[tokio::test]
async fn an_in_process_client_calls_the_servers_tools() {
    let server = Server::new("beam", "1", Beam, Beam::hardened_tool_router());
    let client = InProcess::connect(server, ClientConfig::default())
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let ok = client.call("deflect", json!({"load": 3.0})).await.unwrap();
    assert_ne!(ok.is_error, Some(true));
    assert_eq!(ok.structured_content.unwrap()["data"], json!(1.5));
    // A tool's refusal is a result; arguments that are not an object are
    // refused before anything is sent.
    let refused = client.call("deflect", json!({"load": -1.0})).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(client.call("deflect", json!([1])).await.is_err());
    client.close().await;
}
