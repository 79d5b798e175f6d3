//! `spice-server`: `serve` (stdio, the default), `serve --http ADDR` and
//! `demo`; `--help` on each, `--version`, `--completions SHELL`.

use std::process::ExitCode;

use spice_server::cli::{APP, Mode};
use spice_server::{app, demo};

fn main() -> ExitCode {
    match APP.parse() {
        Mode::Serve(o) => o.server.serve(|setup| app::build(setup, &o.own)),
        // Quiet logs: the demo talks on stdout.
        Mode::Demo(d) => hardened_mcp::cli::block_on("warn", demo::run(d)),
    }
}
