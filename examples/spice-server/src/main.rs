//! `spice-server`: `serve` (stdio, the default), `serve --http ADDR` and
//! `demo`; `--help` on each, `--version`, `--completions SHELL`.

use std::process::ExitCode;

use spice_server::cli::{Cli, Mode, Options};
use spice_server::{app, demo};

fn main() -> ExitCode {
    let cli: Cli = hardened_mcp::cli::parse();
    let serve = |o: Options| o.server.serve(|setup| app::build(setup, &o.spice));
    match cli.mode {
        None => serve(cli.serve),
        Some(Mode::Serve(o)) => serve(o),
        // Quiet logs: the demo talks on stdout.
        Some(Mode::Demo(o)) => hardened_mcp::cli::block_on("warn", demo::run(o)),
    }
}
