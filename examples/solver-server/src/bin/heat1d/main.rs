//! `heat1d`: the example's numerical solver as its own executable (see
//! [`solver_server::heat1d`]).

fn main() -> std::process::ExitCode {
    solver_server::heat1d::main()
}
