//! The loopback fetch probe (`--allow-valid-calls` only): a top-level
//! string named like a URL set to `http://127.0.0.1:PORT/TAG`, where the
//! audit listens. A request for that path arriving there means the tool
//! fetches whatever URL it is given, loopback included: through it a
//! caller reaches the services of the server's host and network (SSRF).
//! The listener answers `204 No Content` and records the paths asked for;
//! a server on another host cannot reach it, so there it finds nothing.
//!
//! A tool that refuses the plain URL is sent the same address spelt the
//! ways a filter on the URL's text misses and a resolver still reads as
//! 127.0.0.1 ([`SPELLINGS`]): one of those arriving is the same finding,
//! its evidence the spelling that passed. In the audit's private network
//! ([`crate::netns`]) the listener answers on every address, and a tool
//! that refuses each loopback spelling is sent the addresses of the
//! machines around a server ([`PRIVATE`]).
//!
//! A tool found fetching is then given a URL the listener answers with a
//! body of [`WHOLE_BODY`] bytes, its length declared: a server that reads
//! all of it, when what a caller needs of a page is its first megabytes,
//! holds whatever any URL sends it (memory, time): the listener counts
//! the bytes it could hand over before the server stopped reading
//! ([`Listener::streamed`]). In a private network a tool that refused
//! every internal address gets that URL on a public address ([`PUBLIC`]),
//! local there too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::netns::PrivateNetwork;

/// The audit's loopback address as its URLs write it: the plain form
/// first, then `localhost` and the forms `inet_aton` (C's resolvers,
/// Python's, Rust's) and the WHATWG URL parser (Node's) read as 127.0.0.1:
/// a short form, one 32-bit number, hexadecimal, octal, and IPv4 mapped in
/// IPv6.
pub const SPELLINGS: &[&str] = &[
    "127.0.0.1",
    "localhost",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "[::ffff:127.0.0.1]",
    "0.0.0.0",
];

/// The addresses of the machines around a server, tried only where the
/// listener is in a private network ([`crate::netns`]), where each is its
/// own and nothing else answers: the cloud metadata service (IPv4, and
/// IPv6 as one cloud spells it), the three private IPv4 ranges, carrier-grade
/// NAT, and unique local IPv6.
pub const PRIVATE: &[&str] = &[
    "169.254.169.254",
    "[fd00:ec2::254]",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.0.1",
    "100.64.0.1",
    "[fd00::1]",
];

/// A public address, tried (in a private network only, where it is local
/// like every other) for the whole-body probe of a tool that refuses every
/// internal address: fetching it is no SSRF, reading all it sends is
/// still `url-response-unbounded`.
pub const PUBLIC: &str = "1.1.1.1";

/// What an address a tool was given reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The server's own host ([`SPELLINGS`]).
    Loopback,
    /// Another machine of its network ([`PRIVATE`]).
    Private,
}

/// Most requests recorded.
const MAX_SEEN: usize = 64;

/// The length of the body a whole-body URL is answered with: far more
/// than any page a caller asks a tool to read, little for the machine.
pub const WHOLE_BODY: u64 = 64 << 20;

/// What ends the path of a whole-body URL.
const WHOLE: &str = "-whole-body";

/// Longest the listener streams one whole body.
const STREAM_FOR: Duration = Duration::from_secs(30);

/// The audit's loopback listener.
pub struct Listener {
    port: u16,
    /// In a private network: every address reaches it.
    private: bool,
    seen: Arc<Mutex<Vec<String>>>,
    /// Each whole-body path answered, with the bytes of the body the
    /// server took before it stopped reading.
    streamed: Arc<Mutex<Vec<(String, u64)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// Listens on a port of 127.0.0.1 the kernel picks, or with `net` on
    /// that port of every address of the private network (IPv4 and IPv6).
    pub async fn bind(net: Option<&PrivateNetwork>) -> std::io::Result<Self> {
        let listener = match net {
            None => TcpListener::bind(("127.0.0.1", 0)).await?,
            Some(net) => {
                let std = net.within(|| std::net::TcpListener::bind(("::", 0)))?;
                std.set_nonblocking(true)?;
                TcpListener::from_std(std)?
            }
        };
        let port = listener.local_addr()?.port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let streamed = Arc::new(Mutex::new(Vec::new()));
        let (record, bodies) = (Arc::clone(&seen), Arc::clone(&streamed));
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (record, bodies) = (Arc::clone(&record), Arc::clone(&bodies));
                tokio::spawn(async move {
                    let read =
                        tokio::time::timeout(Duration::from_secs(2), request_line(&mut stream));
                    let Ok(Some(line)) = read.await else {
                        return;
                    };
                    // `GET /path HTTP/1.1`: the path, the second word.
                    let head = String::from_utf8_lossy(&line).into_owned();
                    if let Some(path) = head.split_whitespace().nth(1)
                        && let Ok(mut seen) = record.lock()
                        && seen.len() < MAX_SEEN
                    {
                        seen.push(path.to_owned());
                    }
                    let path = head.split_whitespace().nth(1).unwrap_or_default();
                    if !path.ends_with(WHOLE) {
                        let _ = stream
                            .write_all(b"HTTP/1.0 204 No Content\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n")
                            .await;
                        return;
                    }
                    let sent = tokio::time::timeout(STREAM_FOR, whole_body(&mut stream));
                    let sent = sent.await.unwrap_or(0);
                    if let Ok(mut bodies) = bodies.lock()
                        && bodies.len() < MAX_SEEN
                    {
                        bodies.push((path.to_owned(), sent));
                    }
                });
            }
        });
        Ok(Self {
            port,
            private: net.is_some(),
            seen,
            streamed,
            task,
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The hosts a URL parameter is tried with, in turn: the loopback
    /// spelt every way, then (in a private network) the machines around.
    pub fn hosts(&self) -> Vec<(&'static str, Reach)> {
        let private = PRIVATE.iter().filter(|_| self.private);
        SPELLINGS
            .iter()
            .map(|h| (*h, Reach::Loopback))
            .chain(private.map(|h| (*h, Reach::Private)))
            .collect()
    }

    /// In a private network, a public address that reaches the listener
    /// there as every address does ([`PUBLIC`]); `None` on the loopback.
    pub fn public_host(&self) -> Option<&'static str> {
        self.private.then_some(PUBLIC)
    }

    /// The URL whose host is `host` (one of [`Listener::hosts`]) and whose path
    /// is `/tag`.
    pub fn url(&self, host: &str, tag: &str) -> String {
        format!("http://{host}:{}/{tag}", self.port)
    }

    /// The URL of `host` whose path is `/tag` and the listener answers
    /// with a body of [`WHOLE_BODY`] bytes.
    pub fn whole_body_url(&self, host: &str, tag: &str) -> String {
        self.url(host, &format!("{tag}{WHOLE}"))
    }

    /// How much of the whole body of `tag`'s URL the server took, once
    /// the listener has stopped sending it (all of it sent, the peer gone,
    /// or 30 s), waiting up to `grace` for that; `None` if it was not
    /// asked for or is still being sent.
    pub async fn streamed(&self, tag: &str, grace: Duration) -> Option<u64> {
        let path = format!("/{tag}{WHOLE}");
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let taken = self.streamed.lock().ok().and_then(|bodies| {
                bodies
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, sent)| *sent)
            });
            if taken.is_some() || tokio::time::Instant::now() >= deadline {
                return taken;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether a request for `/tag` arrived, waiting up to `grace` for one
    /// still on its way.
    pub async fn asked_for(&self, tag: &str, grace: Duration) -> bool {
        let path = format!("/{tag}");
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let arrived = self.seen.lock().is_ok_and(|seen| seen.contains(&path));
            if arrived || tokio::time::Instant::now() >= deadline {
                return arrived;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Answers with `200 OK` and a body of [`WHOLE_BODY`] bytes (lines of
/// text), its length declared; the bytes the peer took before it stopped
/// reading or closed (all but what the kernel's buffers hold), or all of
/// them.
async fn whole_body(stream: &mut tokio::net::TcpStream) -> u64 {
    let head = format!(
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {WHOLE_BODY}\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return 0;
    }
    let mut line = [b'a'; 1024];
    line[1023] = b'\n';
    let chunk = line.repeat(64);
    let mut sent = 0;
    while sent < WHOLE_BODY {
        if stream.write_all(&chunk).await.is_err() {
            break;
        }
        sent += chunk.len() as u64;
    }
    // Its request's headers, unread, would turn the close into a reset.
    let _ = stream.shutdown().await;
    let mut rest = [0u8; 4096];
    let drain = async { while let Ok(1..) = stream.read(&mut rest).await {} };
    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    sent
}

/// Longest request line read.
const MAX_LINE: usize = 1024;

/// The request line, read until its end: a client may send it in pieces
/// (an unbuffered `write!` sends each formatted part alone), and the first
/// read may hold only `GET /`. `None` when the peer closes first; a line
/// longer than [`MAX_LINE`] is cut there.
async fn request_line(stream: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    while !line.contains(&b'\n') && line.len() < MAX_LINE {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        line.extend_from_slice(buf.get(..n)?);
    }
    line.truncate(MAX_LINE);
    Some(line)
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_for_the_tag_is_seen_and_no_other() {
        let l = Listener::bind(None).await.unwrap();
        let url = l.url(SPELLINGS[0], "MCPAUDITabc-0");
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, path) = rest.split_once('/').unwrap();
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("GET /{path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.0 204"), "{answer}");
        assert!(l.asked_for("MCPAUDITabc-0", Duration::from_secs(2)).await);
        assert!(!l.asked_for("MCPAUDITabc-1", Duration::ZERO).await);
    }

    /// A reader that takes the whole body is counted as having taken it
    /// all; one that stops after 1 MiB and closes, as having taken far less.
    #[tokio::test]
    async fn a_whole_body_is_counted_as_far_as_it_was_taken() {
        let l = Listener::bind(None).await.unwrap();
        for (tag, limit) in [("MCPAUDITabc-3", u64::MAX), ("MCPAUDITabc-4", 1 << 20)] {
            let url = l.whole_body_url(SPELLINGS[0], tag);
            let rest = url.strip_prefix("http://").unwrap();
            let (addr, path) = rest.split_once('/').unwrap();
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET /{path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut read = Vec::new();
            let _ = (&mut s).take(limit).read_to_end(&mut read).await;
            drop(s);
            let taken = l.streamed(tag, Duration::from_secs(10)).await.unwrap();
            match limit {
                u64::MAX => {
                    assert_eq!(taken, WHOLE_BODY);
                    let head = read.len() as u64 - WHOLE_BODY;
                    assert!(read.starts_with(b"HTTP/1.0 200 OK\r\n") && head < 100);
                }
                _ => assert!(taken < WHOLE_BODY / 4, "{taken}"),
            }
        }
        assert_eq!(l.streamed("MCPAUDITabc-5", Duration::ZERO).await, None);
    }

    /// A request line sent in pieces, the listener reading between them:
    /// the path is the whole one, not the `/` of the first piece.
    #[tokio::test]
    async fn a_request_line_sent_in_pieces_is_read_whole() {
        let l = Listener::bind(None).await.unwrap();
        let url = l.url(SPELLINGS[0], "MCPAUDITabc-2");
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, path) = rest.split_once('/').unwrap();
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        for piece in ["GET /", path, " HTTP/1.0\r\n", "Host: x\r\n\r\n"] {
            s.write_all(piece.as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.0 204"), "{answer}");
        assert!(l.asked_for("MCPAUDITabc-2", Duration::from_secs(2)).await);
        assert!(
            !l.asked_for("", Duration::ZERO).await,
            "the first piece's `/` is not recorded"
        );
    }
}
