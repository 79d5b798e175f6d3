//! The node helper of the Slurm tests: the framework's `node_main`, as a
//! server's own helper binary would call it.

fn main() -> std::process::ExitCode {
    hardened_mcp::jobs::node_main(std::env::args_os().nth(1))
}
