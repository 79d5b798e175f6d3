//! Unauthenticated load on an HTTP endpoint, for the load test and the
//! benchmark: connections that start a request head and never finish it
//! (reopened a while after the server closes them), and bursts of requests
//! with a wrong bearer token. Each attacker connection comes from a
//! loopback address of its own group (`127.0.0.2` and up), so per-address
//! caps see many peers, as they would from many hosts; the caller under
//! test keeps `127.0.0.1`. Loopback only; everything stops on
//! [`Load::stop`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;

/// What the load consists of.
#[derive(Debug, Clone, Copy)]
pub struct LoadShape {
    /// Unfinished requests held open at once.
    pub slow_headers: usize,
    /// Source addresses they are spread over.
    pub slow_peers: u8,
    /// How long an attacker waits to reopen a connection the server closed.
    pub reopen_after: Duration,
    /// Requests with a wrong token per burst.
    pub bad_token_burst: usize,
    /// Time between bursts.
    pub burst_every: Duration,
    /// Source addresses the bursts are spread over.
    pub burst_peers: u8,
}

impl Default for LoadShape {
    /// 300 unfinished requests from 20 addresses, reopened 500 ms after
    /// being closed; 40 wrong-token requests every 100 ms from 8 addresses.
    fn default() -> Self {
        Self {
            slow_headers: 300,
            slow_peers: 20,
            reopen_after: Duration::from_millis(500),
            bad_token_burst: 40,
            burst_every: Duration::from_millis(100),
            burst_peers: 8,
        }
    }
}

/// What the load did, counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct LoadReport {
    /// Unfinished-request connections opened (the first ones included).
    pub slow_opened: u64,
    /// Of those, the ones the server closed while the load ran.
    pub slow_closed_by_server: u64,
    /// Wrong-token requests sent.
    pub bad_sent: u64,
    /// Of those, answered `401`.
    pub bad_401: u64,
    /// Of those, refused before they were read (a `503` for the address,
    /// or the connection closed).
    pub bad_refused: u64,
}

#[derive(Default)]
struct Counters {
    slow_opened: AtomicU64,
    slow_closed: AtomicU64,
    bad_sent: AtomicU64,
    bad_401: AtomicU64,
    bad_refused: AtomicU64,
}

/// A running load.
pub struct Load {
    stop: CancellationToken,
    tasks: tokio::task::JoinSet<()>,
    counters: Arc<Counters>,
}

fn peer(group: u8, index: usize, count: u8) -> IpAddr {
    let n = u8::try_from(index % usize::from(count.max(1))).unwrap_or(0);
    IpAddr::V4(Ipv4Addr::new(127, group, 0, 2 + n))
}

async fn connect_from(source: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source, 0))?;
    socket.connect(addr).await
}

/// Starts `shape` against the endpoint at `addr` (`/mcp`).
pub async fn start(addr: SocketAddr, shape: LoadShape) -> Load {
    assert!(addr.ip().is_loopback(), "load goes to loopback only");
    let stop = CancellationToken::new();
    let counters = Arc::new(Counters::default());
    let mut tasks = tokio::task::JoinSet::new();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n",
        addr.port()
    );
    for i in 0..shape.slow_headers {
        let (stop, counters, head) = (stop.clone(), Arc::clone(&counters), head.clone());
        let source = peer(0, i, shape.slow_peers);
        tasks.spawn(async move {
            while !stop.is_cancelled() {
                let Ok(mut s) = connect_from(source, addr).await else {
                    tokio::time::sleep(shape.reopen_after).await;
                    continue;
                };
                counters.slow_opened.fetch_add(1, Ordering::Relaxed);
                if s.write_all(head.as_bytes()).await.is_ok() {
                    let mut sink = [0u8; 512];
                    tokio::select! {
                        () = stop.cancelled() => return,
                        _ = async { while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {} } => {
                            counters.slow_closed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(shape.reopen_after) => {}
                }
            }
        });
    }
    {
        let (stop, counters) = (stop.clone(), Arc::clone(&counters));
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer wrong-token-0123456789abcdef\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: 2\r\n\r\n{{}}",
            addr.port()
        );
        tasks.spawn(async move {
            let mut round = 0usize;
            while !stop.is_cancelled() {
                let mut burst = tokio::task::JoinSet::new();
                for i in 0..shape.bad_token_burst {
                    let (counters, request) = (Arc::clone(&counters), request.clone());
                    let source = peer(1, round + i, shape.burst_peers);
                    burst.spawn(async move {
                        counters.bad_sent.fetch_add(1, Ordering::Relaxed);
                        let answered = tokio::time::timeout(Duration::from_secs(5), async {
                            let mut s = connect_from(source, addr).await.ok()?;
                            s.write_all(request.as_bytes()).await.ok()?;
                            let mut reply = Vec::new();
                            s.read_to_end(&mut reply).await.ok()?;
                            Some(reply)
                        })
                        .await
                        .ok()
                        .flatten();
                        match answered {
                            Some(r) if r.starts_with(b"HTTP/1.1 401") => {
                                counters.bad_401.fetch_add(1, Ordering::Relaxed)
                            }
                            _ => counters.bad_refused.fetch_add(1, Ordering::Relaxed),
                        };
                    });
                }
                while burst.join_next().await.is_some() {}
                round += shape.bad_token_burst;
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(shape.burst_every) => {}
                }
            }
        });
    }
    Load {
        stop,
        tasks,
        counters,
    }
}

impl Load {
    /// Stops every attacker, closes their connections, and reports.
    pub async fn stop(mut self) -> LoadReport {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
        let c = &self.counters;
        LoadReport {
            slow_opened: c.slow_opened.load(Ordering::Relaxed),
            slow_closed_by_server: c.slow_closed.load(Ordering::Relaxed),
            bad_sent: c.bad_sent.load(Ordering::Relaxed),
            bad_401: c.bad_401.load(Ordering::Relaxed),
            bad_refused: c.bad_refused.load(Ordering::Relaxed),
        }
    }
}
