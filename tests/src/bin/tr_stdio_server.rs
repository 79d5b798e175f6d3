//! Test server for the transport tests: the plain rmcp `EchoServer` over the
//! process's stdin/stdout, through `HardenedStdio` (or, with `--plain`,
//! rmcp's own stdio transport, as a baseline). Logs go to stderr.

use hardened_mcp::transport::HardenedStdio;
use hardened_mcp_tests::tr_support::EchoServer;
use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let plain = std::env::args().any(|a| a == "--plain");
    let running = if plain {
        EchoServer::new()
            .serve(rmcp::transport::stdio_pipes())
            .await?
    } else {
        EchoServer::new().serve(HardenedStdio::stdio()).await?
    };
    running.waiting().await?;
    Ok(())
}
