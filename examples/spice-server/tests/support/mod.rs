//! Shared by the SPICE server's tests.

/// Whether ngspice is on `PATH`. Without it the caller skips (saying so),
/// unless `HARDENED_MCP_REQUIRE_NGSPICE` is set (CI): then this fails.
pub fn ngspice_present() -> bool {
    if hardened_mcp::cli::find_on_path("ngspice").is_some() {
        return true;
    }
    assert!(
        std::env::var_os("HARDENED_MCP_REQUIRE_NGSPICE").is_none(),
        "ngspice is required here (HARDENED_MCP_REQUIRE_NGSPICE is set) but not on PATH"
    );
    eprintln!("ngspice is not installed: skipped");
    false
}
