//! `spice-server`: `serve` (stdio, the default), `demo` and `completions`;
//! `--help` on each, `--version`.

use std::process::ExitCode;

use spice_server::cli::{self, Command};
use spice_server::{app, demo};

fn main() -> ExitCode {
    let command = match cli::parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        // Help and version to stdout (exit 0), usage errors to stderr (2).
        Err(e) => e.exit(),
    };
    if let Command::Completions(shell) = command {
        cli::completions(shell, &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
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
            eprintln!("spice-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match command {
        Command::Serve(o) => runtime.block_on(app::serve(o)),
        Command::Demo(o) => runtime.block_on(demo::run(o)),
        Command::Completions(_) => return ExitCode::FAILURE,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spice-server: {e}");
            ExitCode::FAILURE
        }
    }
}
