//! The standard server command line (`hardened_mcp::cli`): what it
//! parses, what it refuses, where its values come from, and what a
//! `Setup` makes of them.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, Parser};
use hardened_mcp::cli::{self, Parsed, ProxyHeader, ServerArgs};

/// A server's own command line: the standard options and one of its own
/// that is required.
#[derive(Debug, Parser)]
#[command(name = "beam-server", version)]
struct Beam {
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    own: Own,
}

#[derive(Debug, Args)]
struct Own {
    /// The beam model.
    #[arg(long)]
    model: String,
}

fn parse(args: &[&str]) -> Result<Parsed<Beam>, clap::Error> {
    cli::try_parse_from::<Beam, _, _>(std::iter::once("beam-server").chain(args.iter().copied()))
}

fn args(args: &[&str]) -> ServerArgs {
    let mut full = vec!["--model", "m"];
    full.extend_from_slice(args);
    match parse(&full).unwrap() {
        Parsed::Args(b) => b.server,
        _ => panic!("not arguments"),
    }
}

fn kind(a: &[&str]) -> ErrorKind {
    let mut full = vec!["--model", "m"];
    full.extend_from_slice(a);
    parse(&full).err().map(|e| e.kind()).expect("an error")
}

#[test]
fn an_empty_command_line_is_the_default() {
    assert_eq!(args(&[]), ServerArgs::default());
    let d = ServerArgs::default();
    assert_eq!(d.runs.max_runs, cli::defaults::MAX_RUNS);
    assert_eq!(d.sandbox.max_running, cli::defaults::MAX_RUNNING);
    assert!(!d.sandbox.allow_weak_sandbox, "fail closed by default");
    assert_eq!(d.http.http, None, "stdio by default");
}

#[test]
fn every_group_parses() {
    let a = args(&[
        "--run-root",
        "/r",
        "--max-runs",
        "7",
        "--max-run-mib",
        "64",
        "--max-runs-per-minute",
        "3",
        "--expire-hours",
        "0.5",
        "--expire-finished-hours",
        "0.25",
        "--allow-weak-sandbox",
        "--max-running",
        "4",
        "--max-running-per-caller",
        "1",
        "--http",
        "127.0.0.1:9000",
        "--tokens-file",
        "t",
        "--allow-host",
        "mcp.example.org",
        "--allow-origin",
        "https://app.example.org",
        "--trusted-proxy",
        "10.0.0.5",
        "--trusted-proxy",
        "fd00::/8",
        "--forwarded-header",
        "forwarded",
        "--max-connections",
        "9",
        "--max-connections-per-caller",
        "2",
        "--max-sessions-per-caller",
        "3",
    ]);
    assert_eq!(a.runs.run_root, Some(PathBuf::from("/r")));
    assert_eq!(
        (
            a.runs.max_runs,
            a.runs.max_run_mib,
            a.runs.max_runs_per_minute
        ),
        (7, 64, 3)
    );
    assert_eq!(
        (a.runs.expire_hours, a.runs.expire_finished_hours),
        (0.5, 0.25)
    );
    assert!(a.sandbox.allow_weak_sandbox);
    assert_eq!(
        (a.sandbox.max_running, a.sandbox.max_running_per_caller),
        (4, 1)
    );
    assert_eq!(a.http.http, Some("127.0.0.1:9000".parse().unwrap()));
    assert_eq!(a.http.tokens_file, Some(PathBuf::from("t")));
    assert_eq!(a.http.allow_hosts, ["mcp.example.org"]);
    assert_eq!(a.http.allow_origins, ["https://app.example.org"]);
    assert_eq!(
        a.http.trusted_proxies,
        ["10.0.0.5/32".parse().unwrap(), "fd00::/8".parse().unwrap()]
    );
    assert_eq!(a.http.forwarded_header, ProxyHeader::Forwarded);
    assert_eq!(
        (
            a.http.max_connections,
            a.http.max_connections_per_caller,
            a.http.max_sessions_per_caller
        ),
        (9, 2, 3)
    );
}

#[test]
fn nonsense_values_are_usage_errors() {
    for bad in [
        &["--max-runs", "x"][..],
        &["--expire-hours", "0"],
        &["--expire-hours", "NaN"],
        &["--expire-finished-hours", "inf"],
        &["--expire-hours", "1e9"],
        &["--max-running", "0"],
        &["--max-running-per-caller", "0"],
        &["--max-connections", "0"],
        &["--http", "not-an-address"],
        &["--http", "127.0.0.1:1", "--trusted-proxy", "10.0.0.300"],
    ] {
        assert_eq!(kind(bad), ErrorKind::ValueValidation, "{bad:?}");
    }
    let e = parse(&["--model", "m", "--expire-hours", "NaN"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("takes a positive number of hours"), "{e}");
}

#[test]
fn http_options_need_http_and_pairs_go_together() {
    assert_eq!(
        kind(&["--tokens-file", "t"]),
        ErrorKind::MissingRequiredArgument
    );
    assert_eq!(
        kind(&["--allow-origin", "https://a.example"]),
        ErrorKind::MissingRequiredArgument
    );
    assert_eq!(
        kind(&["--http", "127.0.0.1:1", "--forwarded-header", "forwarded"]),
        ErrorKind::MissingRequiredArgument,
        "a header without a proxy to trust"
    );
    assert_eq!(
        kind(&[
            "--http",
            "127.0.0.1:1",
            "--oauth-issuer",
            "https://idp.example"
        ]),
        ErrorKind::MissingRequiredArgument
    );
    assert_eq!(
        kind(&["--oauth-resource", "https://mcp.example/mcp"]),
        ErrorKind::MissingRequiredArgument
    );
    assert_eq!(kind(&["--tokens", "a=b"]), ErrorKind::UnknownArgument);
}

#[test]
fn a_misspelled_option_gets_a_suggestion() {
    let e = parse(&["--model", "m", "--run-rot", "/r"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnknownArgument);
    assert!(e.to_string().contains("--run-root"), "{e}");
}

#[test]
fn environment_variables_are_named_after_the_command() {
    let command = cli::command::<Beam>();
    let env = |id: &str| {
        command
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("{id}"))
            .get_env()
            .map(|e| e.to_string_lossy().into_owned())
    };
    assert_eq!(env("run_root").as_deref(), Some("BEAM_SERVER_RUN_ROOT"));
    assert_eq!(env("http").as_deref(), Some("BEAM_SERVER_HTTP"));
    assert_eq!(
        env("tokens_file").as_deref(),
        Some("BEAM_SERVER_TOKENS_FILE")
    );
    for id in [
        "allow_weak_sandbox",
        "max_running",
        "trusted_proxies",
        "model",
    ] {
        assert_eq!(env(id), None, "{id} comes from the command line only");
    }
    // The same in a subcommand that flattens the options.
    #[derive(Debug, Parser)]
    #[command(name = "moded")]
    struct Moded {
        #[command(subcommand)]
        mode: Mode,
    }
    #[derive(Debug, clap::Subcommand)]
    enum Mode {
        Serve(ServerArgs),
    }
    let command = cli::command::<Moded>();
    let serve = command.find_subcommand("serve").unwrap();
    let run_root = serve
        .get_arguments()
        .find(|a| a.get_id() == "run_root")
        .unwrap();
    assert_eq!(
        run_root.get_env().map(|e| e.to_string_lossy().into_owned()),
        Some("MODED_RUN_ROOT".to_owned())
    );
}

#[test]
fn completions_need_nothing_else_and_stand_alone() {
    // The server's own required option is not needed to print them.
    let Ok(Parsed::Completions(script)) = parse(&["--completions", "bash"]) else {
        panic!("completions")
    };
    assert!(script.contains("beam-server"), "{script}");
    assert!(script.contains("--run-root") && script.contains("--model"));
    for shell in ["zsh", "fish"] {
        let Ok(Parsed::Completions(s)) = parse(&["--completions", shell]) else {
            panic!("{shell}")
        };
        assert!(s.contains("run-root"), "{shell}");
    }
    assert_eq!(
        parse(&["--completions", "bash", "--model", "m"])
            .unwrap_err()
            .kind(),
        ErrorKind::ArgumentConflict
    );
    assert_eq!(
        parse(&["--completions", "tcsh"]).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    // Without `--completions`, the server's required option is required.
    assert_eq!(
        parse(&[]).unwrap_err().kind(),
        ErrorKind::MissingRequiredArgument
    );
}

#[test]
fn the_node_helper_flag_stands_alone_and_is_hidden() {
    // The server's own required option is not needed either.
    let Ok(Parsed::SlurmNode(spec)) = parse(&["--slurm-node", "/runs/h/slurm-spec"]) else {
        panic!("node helper")
    };
    assert_eq!(spec, "/runs/h/slurm-spec");
    assert_eq!(
        parse(&["--slurm-node", "/s", "--http", "127.0.0.1:1"])
            .unwrap_err()
            .kind(),
        ErrorKind::ArgumentConflict
    );
    let help = parse(&["--help"]).unwrap_err();
    assert_eq!(help.kind(), ErrorKind::DisplayHelp);
    let help = help.to_string();
    assert!(!help.contains("slurm-node"), "{help}");
    for heading in ["Runs:", "Sandbox:", "HTTP:"] {
        assert!(help.contains(heading), "{heading} missing from\n{help}");
    }
    // The server's own option is not under the standard ones' last heading.
    let http = help.find("HTTP:").unwrap();
    assert!(
        help.find("--model").unwrap() < http,
        "--model under a standard heading:\n{help}"
    );
    cli::command::<Beam>().debug_assert();
}

#[tokio::test]
async fn a_setup_opens_the_run_root_the_options_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = ServerArgs::default();
    a.runs.run_root = Some(tmp.path().join("runs"));
    let mut setup = a.setup();
    let runs = setup.run_root("beam").unwrap();
    let (handle, _dir) = runs.create(&hardened_mcp::CallerId::local()).unwrap();
    assert!(handle.as_str().starts_with("beam_"), "{}", handle.as_str());
    assert!(tmp.path().join("runs").is_dir());
    assert!(setup.refuse_unused().is_ok());
    // A bad prefix is the server's mistake, said at start.
    assert!(a.setup().run_root("no spaces").is_err());
}

#[test]
fn options_a_server_does_not_use_are_refused_at_start() {
    let mut a = ServerArgs::default();
    assert!(a.setup().refuse_unused().is_ok(), "nothing given");
    a.runs.run_root = Some("/r".into());
    let e = a.setup().refuse_unused().unwrap_err().to_string();
    assert!(e.contains("--run-root"), "{e}");
    let mut a = ServerArgs::default();
    a.sandbox.partition = Some("debug".into());
    let e = a.setup().refuse_unused().unwrap_err().to_string();
    assert!(e.contains("--launcher"), "{e}");
}

#[tokio::test]
async fn a_slurm_launcher_refuses_a_run_root_in_memory() {
    use hardened_mcp::cli::LauncherKind;
    use hardened_mcp::sandbox::{Requirements, Sandbox, SandboxConfig, SolverRegistry};
    let shm = std::path::Path::new("/dev/shm");
    #[allow(clippy::unnecessary_cast)] // the field's type differs between targets
    let in_memory = rustix::fs::statfs(shm).is_ok_and(|s| s.f_type as i64 == 0x0102_1994);
    let tmp = tempfile::tempdir_in(if in_memory {
        shm
    } else {
        std::path::Path::new("/tmp")
    })
    .unwrap();
    let mut a = ServerArgs::default();
    a.runs.run_root = Some(tmp.path().join("runs"));
    a.sandbox.launcher = Some(LauncherKind::Slurm);
    let mut setup = a.setup();
    let sandbox = || {
        let registry = SolverRegistry::builder()
            .solver("true", "/bin/true")
            .build()
            .unwrap();
        let config = SandboxConfig {
            require: Requirements::none(),
            ..SandboxConfig::default()
        };
        Sandbox::new(registry, config).unwrap()
    };
    let e = setup.launcher(sandbox()).unwrap_err().to_string();
    assert!(e.contains("open the run root"), "{e}");
    setup.run_root("beam").unwrap();
    let result = setup.launcher(sandbox());
    if in_memory {
        let e = result.unwrap_err().to_string();
        assert!(e.contains("in memory"), "{e}");
    }
    // `--partition` with `--launcher local` is a contradiction.
    let mut a = ServerArgs::default();
    a.sandbox.launcher = Some(LauncherKind::Local);
    a.sandbox.partition = Some("debug".into());
    let e = a.setup().launcher(sandbox()).unwrap_err().to_string();
    assert!(e.contains("--partition"), "{e}");
}
