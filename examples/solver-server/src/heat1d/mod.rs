//! `heat1d`: the example's numerical solver, a 1-D heat-diffusion code.
//!
//! ```text
//! heat1d --input input.deck --output out/result.json
//! ```
//!
//! It runs as its own process, always through the sandbox: either the
//! `heat1d` executable, or the `solver-server` executable itself when started
//! under the name `heat1d` (the sandbox sets `argv[0]` to the solver id), so
//! that `cargo run -p solver-server` needs no second binary.
//!
//! The input is a plain file name in the working directory (the run
//! directory the sandbox starts it in); the output a plain name there or in
//! one subdirectory of it. Progress goes to stdout as
//! `PROGRESS <done> <total>` lines; diagnostics go to stderr. Exit codes:
//! 0 done, 2 usage, 3 bad deck, 4 unstable step, 5 cannot write the result.

mod deck;
mod numerics;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use numerics::{Boundary, Initial, MAX_COURANT, Problem};

/// Largest grid the solver accepts (the server's ceilings are lower).
const MAX_CELLS: usize = 10_000_000;
/// Progress lines per run, at most.
const PROGRESS_LINES: u64 = 100;

/// The solver's entry point: parses its command line (after `argv[0]`),
/// reads the deck, solves, writes the result; returns the exit code.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (input, output) = match args.as_slice() {
        [a, i, b, o]
            if a == "--input" && b == "--output" && deck::is_plain_name(i) && is_output_path(o) =>
        {
            (i.as_str(), o.as_str())
        }
        _ => {
            eprintln!("usage: heat1d --input NAME --output NAME (plain file names)");
            return ExitCode::from(2);
        }
    };
    let problem = match deck::parse(&deck::Cwd, input)
        .map_err(|e| e.to_string())
        .and_then(|d| problem(&d))
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("heat1d: {e}");
            return ExitCode::from(3);
        }
    };
    let stable = problem.courant() <= MAX_COURANT; // false for NaN too
    if !stable {
        eprintln!(
            "heat1d: unstable: courant number {} exceeds {MAX_COURANT}",
            problem.courant()
        );
        return ExitCode::from(4);
    }
    eprintln!(
        "heat1d: {} cells, {} steps, dt {}, courant {:.4}",
        problem.cells,
        problem.steps,
        problem.dt,
        problem.courant()
    );
    let every = (problem.steps / PROGRESS_LINES).max(1);
    let mut stdout = std::io::stdout().lock();
    let u = numerics::solve(&problem, every, |done| {
        // A closed stdout must not stop the computation.
        let _ = writeln!(stdout, "PROGRESS {done} {}", problem.steps);
    });
    let _ = stdout.flush();
    drop(stdout);
    match write_result(&problem, &u, output) {
        Ok(()) => {
            eprintln!("heat1d: done");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("heat1d: cannot write the result: {e}");
            ExitCode::from(5)
        }
    }
}

/// `NAME` or `DIR/NAME`, both plain names: the result may go to a
/// subdirectory of the working directory (where the sandbox lets it write).
fn is_output_path(o: &str) -> bool {
    match o.split_once('/') {
        Some((dir, name)) => deck::is_plain_name(dir) && deck::is_plain_name(name),
        None => deck::is_plain_name(o),
    }
}

fn problem(d: &BTreeMap<String, String>) -> Result<Problem, String> {
    const KNOWN: [&str; 8] = [
        "cells", "steps", "length", "alpha", "dt", "boundary", "initial", "mode",
    ];
    if let Some(k) = d.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!("unknown key `{k}`"));
    }
    let get = |k: &str| d.get(k).ok_or_else(|| format!("missing key `{k}`"));
    let num = |k: &str| -> Result<f64, String> {
        let v: f64 = get(k)?
            .parse()
            .map_err(|_| format!("`{k}` is not a number"))?;
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("`{k}` must be finite and positive"))
        }
    };
    let cells: usize = get("cells")?
        .parse()
        .map_err(|_| "`cells` is not an integer".to_owned())?;
    if !(2..=MAX_CELLS).contains(&cells) {
        return Err(format!("`cells` must be in 2..={MAX_CELLS}"));
    }
    let steps: u64 = get("steps")?
        .parse()
        .map_err(|_| "`steps` is not an integer".to_owned())?;
    let boundary = match get("boundary")?.as_str() {
        "dirichlet" => Boundary::Dirichlet,
        "neumann" => Boundary::Neumann,
        _ => return Err("`boundary` must be dirichlet or neumann".into()),
    };
    let mode = || -> Result<u32, String> {
        match get("mode")?.parse::<u32>() {
            Ok(m) if m >= 1 => Ok(m),
            _ => Err("`mode` must be a positive integer".into()),
        }
    };
    let initial = match get("initial")?.as_str() {
        "sine" => Initial::Sine { mode: mode()? },
        "cosine" => Initial::Cosine { mode: mode()? },
        "gaussian" => Initial::Gaussian,
        "step" => Initial::Step,
        _ => return Err("`initial` must be sine, cosine, gaussian or step".into()),
    };
    Ok(Problem {
        cells,
        steps,
        length: num("length")?,
        alpha: num("alpha")?,
        dt: num("dt")?,
        boundary,
        initial,
    })
}

fn write_result(p: &Problem, u: &[f64], output: &str) -> std::io::Result<()> {
    let x: Vec<f64> = (0..u.len()).map(|i| p.x(i)).collect();
    let mut result = serde_json::json!({
        "cells": p.cells,
        "steps": p.steps,
        "t_final": p.t_final(),
        "courant": p.courant(),
        "x": x,
        "u": u,
    });
    if let Some((l2, max)) = numerics::error_norms(p, u) {
        result["l2_error"] = l2.into();
        result["max_error"] = max.into();
    }
    // What a plot of the run names and draws: the boundary, the
    // diffusivity, and the exact solution at the nodes where there is one.
    result["boundary"] = match p.boundary {
        Boundary::Dirichlet => "dirichlet",
        Boundary::Neumann => "neumann",
    }
    .into();
    result["alpha"] = p.alpha.into();
    let exact: Option<Vec<f64>> = (0..u.len())
        .map(|i| p.analytic(p.x(i), p.t_final()))
        .collect();
    if let Some(exact) = exact {
        result["exact"] = exact.into();
    }
    if u.iter().any(|v| !v.is_finite()) {
        return Err(std::io::Error::other("non-finite values in the solution"));
    }
    let tmp = match output.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/.{name}.tmp"),
        None => format!(".{output}.tmp"),
    };
    let mut f = std::fs::File::create(&tmp)?;
    serde_json::to_writer(&mut f, &result)?;
    f.sync_all()?;
    std::fs::rename(&tmp, output)
}
