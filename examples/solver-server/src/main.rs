//! `solver-server`: `serve` (stdio, the default), `serve --http ADDR` and
//! `demo`; `--help` on each, `--version`, `--completions SHELL`. Started
//! under the name `heat1d` (as the sandbox starts the default solver when
//! no separate `heat1d` executable sits beside it), it is the solver.

use std::process::ExitCode;

use solver_server::cli::{Cli, Mode, Options};
use solver_server::{app, demo};

fn main() -> ExitCode {
    if solver_server::config::started_as_solver() {
        return solver_server::heat1d::main();
    }
    let cli: Cli = hardened_mcp::cli::parse();
    let serve = |o: Options| o.server.serve(|setup| app::build(setup, &o.heat));
    match cli.mode {
        None => serve(cli.serve),
        Some(Mode::Serve(o)) => serve(o),
        // Quiet logs: the demo talks on stdout.
        Some(Mode::Demo(o)) => hardened_mcp::cli::block_on("warn", demo::run(o)),
    }
}
