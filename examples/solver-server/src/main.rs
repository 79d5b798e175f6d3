//! `solver-server`: `serve` (stdio, the default), `serve --http ADDR` and
//! `demo`; `--help` on each, `--version`, `--completions SHELL`. Started
//! under the name `heat1d` (as the sandbox starts the default solver when
//! no separate `heat1d` executable sits beside it), it is the solver.

use std::process::ExitCode;

use solver_server::cli::{APP, Mode};
use solver_server::{app, demo};

fn main() -> ExitCode {
    if solver_server::config::started_as_solver() {
        return solver_server::heat1d::main();
    }
    match APP.parse() {
        Mode::Serve(o) => o.server.serve(|setup| app::build(setup, &o.own)),
        // Quiet logs: the demo talks on stdout.
        Mode::Demo(d) => hardened_mcp::cli::block_on("warn", demo::run(d)),
    }
}
