//! Round-trip latency of one small tool call: the hardened stdio transport
//! against rmcp's plain line transport, same server, same client, same kind
//! of pipe, measured in the same run.
//!
//! `cargo bench -p hardened-mcp --bench transport`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use hardened_mcp::transport::HardenedStdio;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, ServerCapabilities, ServerConfig};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use tokio::net::unix::pipe;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(Debug, Clone)]
struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    #[tool(description = "Echo the text")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn echo() -> Echo {
    Echo {
        tool_router: Echo::tool_router(),
    }
}

#[derive(Clone, Copy, Debug)]
enum Server {
    Plain,
    Hardened,
}

#[derive(Clone, Copy, Debug)]
enum Link {
    Duplex,
    OsPipe,
}

fn os_pipe() -> (pipe::Receiver, pipe::Sender) {
    let (r, w) = std::io::pipe().unwrap();
    let r: OwnedFd = r.into();
    let w: OwnedFd = w.into();
    (
        pipe::Receiver::from_owned_fd(r).unwrap(),
        pipe::Sender::from_owned_fd(w).unwrap(),
    )
}

/// Starts a server and returns a connected rmcp client.
async fn connect(server: Server, link: Link) -> RunningService<RoleClient, ()> {
    macro_rules! serve {
        ($sr:expr, $sw:expr, $cr:expr, $cw:expr) => {{
            let (sr, sw) = ($sr, $sw);
            tokio::spawn(async move {
                let running = match server {
                    Server::Plain => echo().serve((sr, sw)).await.unwrap(),
                    Server::Hardened => echo().serve(HardenedStdio::new(sr, sw)).await.unwrap(),
                };
                let _ = running.waiting().await;
            });
            ().serve(($cr, $cw)).await.unwrap()
        }};
    }
    match link {
        Link::Duplex => {
            let (cw, sr) = tokio::io::duplex(64 * 1024);
            let (sw, cr) = tokio::io::duplex(64 * 1024);
            serve!(sr, sw, cr, cw)
        }
        Link::OsPipe => {
            let (sr, cw) = os_pipe();
            let (cr, sw) = os_pipe();
            serve!(sr, sw, cr, cw)
        }
    }
}

fn round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut args = serde_json::Map::new();
    args.insert("text".into(), "hello".into());
    for link in [Link::Duplex, Link::OsPipe] {
        let mut group = c.benchmark_group(format!("tool_call_round_trip/{link:?}"));
        group.measurement_time(Duration::from_secs(8));
        for server in [Server::Plain, Server::Hardened] {
            let client = rt.block_on(connect(server, link));
            let params = CallToolRequestParams::new("echo").with_arguments(args.clone());
            group.bench_function(format!("{server:?}"), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        for _ in 0..iters {
                            let r = client.call_tool(params.clone()).await.unwrap();
                            std::hint::black_box(r);
                        }
                        start.elapsed()
                    })
                })
            });
            rt.block_on(async { drop(client.cancel().await) });
        }
        group.finish();
    }
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
