//! `hardened-mcp-node`: the framework's Slurm node helper. Install it at
//! the same path on every node and name it in `SlurmConfig::helper`; the
//! fixed batch script of each job runs it with the run spec's path.

fn main() -> std::process::ExitCode {
    hardened_mcp::jobs::node_main(std::env::args_os().nth(1))
}
