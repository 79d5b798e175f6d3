//! The solver as a program, run directly (no sandbox) in a scratch working
//! directory: a deck with comments and an `include` solves and writes its
//! result; an unstable Courant number, a bad deck and a path argument are
//! refused with their exit codes and no result. The same holds for the
//! server binary started under the name `heat1d` (the multi-call path).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Output};

const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");
const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");

/// `heat1d --input input.deck --output out/result.json` in `dir`, through
/// the given executable, with `argv[0] = "heat1d"`.
fn solve(exe: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .arg0("heat1d")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .output()
        .unwrap()
}

const STANDARD: [&str; 4] = ["--input", "input.deck", "--output", "out/result.json"];

fn scratch(deck: &str, included: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("input.deck"), deck).unwrap();
    if let Some(text) = included {
        std::fs::write(dir.path().join("grid.deck"), text).unwrap();
    }
    dir
}

/// 32 cells on [0, 1], α = 1: dt = 0.4·dx² is stable, 0.6·dx² is not.
fn deck(courant: f64) -> String {
    let dt = courant / (32.0 * 32.0);
    format!(
        "# a comment line\n\
         include grid.deck   # cells and length come from here\n\
         steps = 200\n\
         alpha = 1.0\n\
         dt = {dt:e}\n\
         boundary = dirichlet\n\
         initial = sine\n\
         mode = 1\n"
    )
}

const GRID: &str = "cells = 32\nlength = 1.0\n";

#[test]
fn a_deck_with_comments_and_an_include_is_solved() {
    for exe in [SOLVER, SERVER] {
        let dir = scratch(&deck(0.4), Some(GRID));
        let out = solve(exe, dir.path(), &STANDARD);
        assert!(out.status.success(), "{exe}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.lines().any(|l| l == "PROGRESS 200 200"), "{stdout}");
        let result: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("out/result.json")).unwrap())
                .unwrap();
        assert_eq!(result["cells"], 32);
        assert!(result["max_error"].as_f64().unwrap() < 1e-3, "{result}");
    }
}

#[test]
fn an_unstable_step_is_refused_by_the_solver_itself() {
    for exe in [SOLVER, SERVER] {
        let dir = scratch(&deck(0.6), Some(GRID));
        let out = solve(exe, dir.path(), &STANDARD);
        assert_eq!(out.status.code(), Some(4), "{exe}: {out:?}");
        assert!(!dir.path().join("out/result.json").exists());
        // The positive control: the same deck at a stable step succeeds.
        let ok = scratch(&deck(0.5), Some(GRID));
        assert!(solve(exe, ok.path(), &STANDARD).status.success());
    }
}

#[test]
fn bad_decks_and_path_arguments_are_refused() {
    let missing_include = scratch(&deck(0.4), None);
    let out = solve(SOLVER, missing_include.path(), &STANDARD);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let unknown_key = scratch(&format!("{}shell = rm -rf /\n", deck(0.4)), Some(GRID));
    assert_eq!(
        solve(SOLVER, unknown_key.path(), &STANDARD).status.code(),
        Some(3)
    );
    let dir = scratch(&deck(0.4), Some(GRID));
    for args in [
        ["--input", "../input.deck", "--output", "out/result.json"],
        ["--input", "/etc/passwd", "--output", "out/result.json"],
        ["--input", "input.deck", "--output", "../result.json"],
        ["--input", "input.deck", "--output", "a/b/result.json"],
    ] {
        let out = solve(SOLVER, dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
    assert!(!dir.path().join("out/result.json").exists());
}
