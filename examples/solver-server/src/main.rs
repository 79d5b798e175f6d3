//! `solver-server`: the example's binary. `serve` (stdio, the default),
//! `serve --http ADDR`, `demo`, `node` and `completions`; `--help` on each,
//! `--version`. Started under the
//! name `heat1d` (as the sandbox starts the default solver when no separate
//! `heat1d` executable sits beside it), it is the solver.

use std::process::ExitCode;

use solver_server::cli::{self, Command};
use solver_server::{app, demo};

fn main() -> ExitCode {
    if solver_server::config::started_as_solver() {
        return solver_server::heat1d::main();
    }
    let command = match cli::parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        // Help and version to stdout (exit 0), usage errors to stderr (2).
        Err(e) => e.exit(),
    };
    match command {
        Command::Node(spec) => return hardened_mcp::jobs::node_main(Some(spec)),
        Command::Completions(shell) => {
            cli::completions(shell, &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
        Command::Serve(_) | Command::Demo(_) => {}
    }
    // Logs go to stderr: in stdio mode stdout is the MCP channel.
    let default_level = if matches!(command, Command::Demo(_)) {
        "warn"
    } else {
        "info"
    };
    // To stderr (stdout is the MCP channel in stdio mode), redacted.
    hardened_mcp::logging::init(default_level);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("solver-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match command {
        Command::Serve(opts) => runtime.block_on(app::serve(opts)),
        Command::Demo(opts) => runtime.block_on(demo::run(opts)),
        Command::Node(_) | Command::Completions(_) => return ExitCode::FAILURE,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("solver-server: {e}");
            ExitCode::FAILURE
        }
    }
}
