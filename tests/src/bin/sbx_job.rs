//! Jobs test probe: `sbx_job <input> <output>`. The input's first line is
//! the mode, the rest is written to `<output>` as the result:
//! - `ok`: three `PROGRESS <i> 3` lines (and `step <i> of 3` lines in
//!   `trace.txt` beside the output), the result, exit 0;
//! - `slow`: progress once a second for a minute, then as `ok`;
//! - `fail`: a line on stderr, exit 3, no result.

use std::io::Write;
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(input), Some(output)) = (args.next(), args.next()) else {
        std::process::exit(2);
    };
    let Ok(text) = std::fs::read_to_string(&input) else {
        std::process::exit(2);
    };
    let (mode, result) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    let mut out = std::io::stdout().lock();
    let (steps, pause) = match mode {
        "ok" => (3, Duration::ZERO),
        "slow" => (60, Duration::from_secs(1)),
        _ => {
            eprintln!("probe: failing as asked");
            std::process::exit(3);
        }
    };
    let trace_path = std::path::Path::new(&output).with_file_name("trace.txt");
    let mut trace = std::fs::File::create(trace_path).ok();
    for i in 1..=steps {
        if let Some(t) = trace.as_mut() {
            let _ = writeln!(t, "step {i} of {steps}");
        }
        let _ = writeln!(out, "PROGRESS {i} {steps}");
        let _ = out.flush();
        std::thread::sleep(pause);
    }
    eprintln!("probe: done");
    if std::fs::write(&output, result).is_err() {
        std::process::exit(4);
    }
}
