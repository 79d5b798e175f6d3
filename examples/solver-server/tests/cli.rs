//! The binary's command line: `--version`, a misspelled option answered
//! with a suggestion and exit status 2, `--completions bash`, and the run root
//! taken from `SOLVER_SERVER_RUN_ROOT` when `--run-root` is absent.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

fn run(args: &[&str]) -> std::process::Output {
    Command::new(SERVER)
        .args(args)
        .env_remove("SOLVER_SERVER_RUN_ROOT")
        .env_remove("SOLVER_SERVER_SOLVER")
        .env_remove("SOLVER_SERVER_HTTP")
        .env_remove("SOLVER_SERVER_TOKENS_FILE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn version_and_help_go_to_stdout() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("solver-server {}", env!("CARGO_PKG_VERSION"))
    );
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for mode in ["serve", "demo", "--completions"] {
        assert!(help.contains(mode), "{mode} missing from\n{help}");
    }
}

#[test]
fn a_misspelled_option_gets_a_suggestion_and_status_2() {
    let out = run(&["serve", "--run-rot", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("similar") && err.contains("'--run-root'"),
        "{err}"
    );
}

#[test]
fn bash_completions_name_the_binary() {
    let out = run(&["--completions", "bash"]);
    assert!(out.status.success());
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(
        script.lines().any(
            |l| l.trim().starts_with("complete -F") && l.trim_end().ends_with(" solver-server")
        ),
        "{script}"
    );
    assert!(script.contains("--expire-finished-hours"));
}

#[test]
fn the_environment_supplies_the_run_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("runs-from-env");
    // stdio serve with stdin at end of file: the run root is opened at
    // start, then the session ends at once.
    let mut child = Command::new(SERVER)
        .arg("serve")
        .env("SOLVER_SERVER_RUN_ROOT", &root)
        .env("SOLVER_SERVER_SOLVER", SOLVER)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("serve did not end at the end of its input");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        root.is_dir(),
        "the run root from the environment was not created"
    );
    // The command line wins over the environment.
    let flag_root = tmp.path().join("runs-from-flag");
    let _ = Command::new(SERVER)
        .args(["serve", "--run-root"])
        .arg(&flag_root)
        .env("SOLVER_SERVER_RUN_ROOT", tmp.path().join("unused"))
        .env("SOLVER_SERVER_SOLVER", SOLVER)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(flag_root.is_dir());
    assert!(!tmp.path().join("unused").exists());
}

/// Over HTTP with OAuth, the scopes published as supported are those the
/// tools declare (`Server::scopes`), which are the server's documented two.
#[test]
fn the_published_scopes_are_the_tools_own() {
    let tmp = tempfile::tempdir().unwrap();
    let server = solver_server::app::build_at(&tmp.path().join("runs"), SOLVER.as_ref()).unwrap();
    assert_eq!(server.scopes(), solver_server::app::SCOPES);
}
