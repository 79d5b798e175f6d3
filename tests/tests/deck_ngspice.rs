//! The `Spice` profile against the real ngspice (when installed; CI
//! installs it with `apt-get install ngspice`): a raw netlist with a
//! `.control` block really runs `shell` (the positive control), while every
//! netlist the deck writer builds from hostile-looking identifiers and
//! random values simulates to the expected answer and runs nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hardened_mcp::deck::{Deck, DeckIdent, DeckText, DeckToken, DeckValue, Spice};
use proptest::prelude::*;

/// ngspice on `PATH`; where `HARDENED_MCP_REQUIRE_NGSPICE` is set (CI),
/// its absence fails the test instead of skipping it.
fn ngspice() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("ngspice"))
            .find(|p| p.is_file())
    });
    assert!(
        found.is_some() || std::env::var_os("HARDENED_MCP_REQUIRE_NGSPICE").is_none(),
        "ngspice is required here (HARDENED_MCP_REQUIRE_NGSPICE is set) but not on PATH"
    );
    found
}

/// Runs `ngspice -b -r out.raw input.cir` in `dir`, bounded in time.
fn run(ngspice: &Path, dir: &Path) -> bool {
    let mut child = Command::new(ngspice)
        .args(["-b", "-r", "out.raw", "input.cir"])
        .current_dir(dir)
        // ngspice 39 crashes (SIGSEGV) when HOME is unset.
        .env_clear()
        .env("HOME", dir)
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("ngspice did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Variable name → value from an ASCII raw file of one operating point.
fn read_raw(dir: &Path) -> Vec<(String, f64)> {
    let raw = std::fs::read_to_string(dir.join("out.raw")).unwrap();
    let (head, values) = raw.split_once("\nValues:").unwrap();
    let names: Vec<String> = head
        .split_once("\nVariables:")
        .unwrap()
        .1
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect();
    let numbers: Vec<f64> = values
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap())
        .collect();
    names.into_iter().zip(numbers).collect()
}

#[test]
fn positive_control_a_raw_control_block_runs_shell() {
    let Some(ngspice) = ngspice() else {
        eprintln!("ngspice is not installed: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("input.cir"),
        "raw\nV1 a 0 1.0\nR1 a 0 1.0\n.control\nshell touch pwned\nop\n.endc\n.end\n",
    )
    .unwrap();
    run(&ngspice, dir.path());
    assert!(
        dir.path().join("pwned").exists(),
        "ngspice ran no shell: the control proves nothing"
    );

    // The same lines cannot be produced by the deck writer.
    let mut deck = Deck::<Spice>::new();
    assert!(deck.statement(".control", []).is_err());
    assert!(deck.statement("shell", []).is_err());
    assert!(DeckText::<Spice>::new("x\nshell touch pwned").is_err());
    assert!(DeckText::<Spice>::new(".control").is_err());
}

struct Ascii;

impl DeckToken for Ascii {
    fn token(&self) -> &'static str {
        "ascii"
    }
}

fn node() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_]{1,32}",
        Just("shell".to_owned()),
        Just("control".to_owned()),
        Just("include".to_owned()),
        Just("endc".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn written_netlists_simulate_exactly_and_run_nothing(
        a in node(),
        b in node(),
        r1 in 1.0f64..1e6,
        r2 in 1.0f64..1e6,
    ) {
        let Some(ngspice) = ngspice() else {
            return Ok(());
        };
        let ground = |n: &str| n.chars().all(|c| c == '0') || n.eq_ignore_ascii_case("gnd");
        prop_assume!(!a.eq_ignore_ascii_case(&b) && !ground(&a) && !ground(&b));
        let node_a = DeckIdent::<Spice>::new(&a).unwrap();
        let node_b = DeckIdent::<Spice>::new(&b).unwrap();
        let zero = DeckIdent::<Spice>::new("0").unwrap();
        let mut deck = Deck::<Spice>::new();
        deck.set("r_two", r2).unwrap();
        deck.statement(".options", [DeckValue::named("filetype", Ascii).unwrap()]).unwrap();
        deck.statement("V1", [
            DeckValue::from_ident(node_a.clone()),
            DeckValue::from_ident(zero.clone()),
            DeckValue::number(2.0).unwrap(),
        ]).unwrap();
        deck.statement("R1", [
            DeckValue::from_ident(node_a),
            DeckValue::from_ident(node_b.clone()),
            DeckValue::number(r1).unwrap(),
        ]).unwrap();
        deck.statement("R2", [
            DeckValue::from_ident(node_b),
            DeckValue::from_ident(zero),
            DeckValue::number(r2).unwrap(),
        ]).unwrap();
        deck.statement(".op", []).unwrap();

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("input.cir"), deck.render().unwrap()).unwrap();
        prop_assert!(run(&ngspice, dir.path()));
        let values = read_raw(dir.path());
        let vb = values
            .iter()
            .find(|(name, _)| *name == format!("v({})", b.to_ascii_lowercase()))
            .map(|(_, v)| *v)
            .unwrap();
        let expected = 2.0 * r2 / (r1 + r2);
        prop_assert!((vb - expected).abs() <= 1e-9 * expected.abs().max(1e-12), "{} vs {}", vb, expected);
        // Only the files ngspice writes itself.
        let mut files: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        prop_assert_eq!(files, ["input.cir", "out.raw"]);
    }
}
