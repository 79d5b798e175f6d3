//! The fixture's solver, run in the sandbox by the fixture's job tools
//! (`slow_compute`, `failing_job`, `test_tool_with_task`):
//!
//! - `conformance-job sleep MS OUT` sleeps `MS` milliseconds, then writes
//!   `{"slept_ms":MS}` to the file `OUT`;
//! - `conformance-job fail` exits at once with status 3.
//!
//! Any other command line exits with status 2.

use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [command, ms, out] if command == "sleep" => {
            let Ok(ms) = ms.parse::<u64>() else {
                return ExitCode::from(2);
            };
            std::thread::sleep(Duration::from_millis(ms));
            match std::fs::write(out, format!("{{\"slept_ms\":{ms}}}")) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(4),
            }
        }
        [command] if command == "fail" => ExitCode::from(3),
        _ => ExitCode::from(2),
    }
}
