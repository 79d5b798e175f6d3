//! Shared helpers of the hardened-mcp integration tests.
pub mod announce;
pub mod chapter;
pub mod doc_context;
pub mod doc_pages;
pub mod http_load;
pub mod keep_alive;
pub mod log_capture;
pub mod macros_fixture;
pub mod node;
pub mod oauth_issuer;
pub mod planted;
pub mod python;
pub mod slurm;
pub mod tasks;
pub mod tr_support;

/// `unshare` flags for the disk-full helpers, in the order tried: a plain
/// mount namespace (needs CAP_SYS_ADMIN), then one owned by a new user
/// namespace (unprivileged, where user namespaces are allowed).
pub const UNSHARE_ATTEMPTS: [&[&str]; 2] = [
    &["--mount", "--propagation", "private"],
    &[
        "--user",
        "--map-root-user",
        "--mount",
        "--propagation",
        "private",
    ],
];
