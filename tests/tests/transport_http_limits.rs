//! What unauthenticated and authenticated clients may hold over HTTP, on
//! loopback: connections per peer address, connections that never finish
//! a request (the oldest is closed, a prompt client always gets in),
//! authenticated connections, sessions and open event streams per caller,
//! and the body deadline. Every refusal has a fixed text.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use hardened_mcp::transport::BearerAuth;
use hardened_mcp::transport::http::{
    BUSY_BODY, CALLER_CONNECTIONS_BODY, ForwardedHeader, IpNet, SESSION_LIMIT_BODY,
    STREAM_LIMIT_BODY, TIMEOUT_BODY, TrustedProxies,
};
use hardened_mcp_tests::tr_support::{
    HttpClient as Client, call, initialize_request, result_text, start_echo_http,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ALICE: &str = "alice-tok-Q7rT2vX9pL4mN8kJ";
const BOB: &str = "bob-tok-Z3wY6uH1cF5dG0sA";
const WAIT: Duration = Duration::from_secs(10);

fn tokens() -> BearerAuth {
    BearerAuth::parse(&format!("alice={ALICE}\nbob={BOB}")).unwrap()
}

/// A connection that starts a request head and never finishes it.
async fn slow_header(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    s
}

/// Whether the server closed `s` (EOF or reset) within `limit`; what it
/// said before closing is returned.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut seen = Vec::new();
    match tokio::time::timeout(limit, s.read_to_end(&mut seen)).await {
        Ok(_) => Some(String::from_utf8_lossy(&seen).into_owned()),
        Err(_) => None,
    }
}

async fn whoami_ok(addr: std::net::SocketAddr, token: &str) -> bool {
    let mut c = Client::new(addr, Some(token));
    c.connect().await;
    result_text(&c.whoami().await.rpc().unwrap()).is_some()
}

#[tokio::test]
async fn each_peer_address_has_its_cap() {
    let server = start_echo_http(|c| c.auth(tokens()).max_connections_per_peer(3)).await;
    let addr = server.local_addr();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(slow_header(addr).await);
    }
    // The fourth from the same address is answered 503 and closed at once.
    let mut fourth = TcpStream::connect(addr).await.unwrap();
    let said = closed_within(&mut fourth, WAIT).await.expect("closed");
    assert!(said.starts_with("HTTP/1.1 503 "), "{said}");
    assert!(said.ends_with(BUSY_BODY), "{said}");
    // A place comes back when a connection goes.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut c = Client::new(addr, Some(ALICE));
    assert_eq!(c.post(&initialize_request(1)).await.status, 200);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn unfinished_requests_cannot_lock_callers_out() {
    let grace = Duration::from_millis(200);
    let server = start_echo_http(|c| {
        c.auth(tokens())
            .max_unauthenticated_connections(8)
            .unauthenticated_grace(grace)
            .max_connections_per_peer(1000)
    })
    .await;
    let addr = server.local_addr();
    let mut oldest = slow_header(addr).await;
    let mut held = Vec::new();
    for _ in 0..7 {
        held.push(slow_header(addr).await);
    }
    // With nobody waiting, nobody is closed early, grace or not.
    assert!(
        closed_within(&mut oldest, grace * 2).await.is_none(),
        "closed although nobody waited"
    );
    // One more waits for a place: the oldest is closed to make one.
    held.push(slow_header(addr).await);
    assert!(
        closed_within(&mut oldest, WAIT).await.is_some(),
        "the oldest stays"
    );
    // Ten times the pool in unfinished requests; callers are still served.
    for _ in 0..80 {
        held.push(slow_header(addr).await);
    }
    for _ in 0..5 {
        assert!(whoami_ok(addr, ALICE).await);
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn authenticated_connections_have_their_ceiling() {
    let server = start_echo_http(|c| c.auth(tokens()).max_connections(1)).await;
    let addr = server.local_addr();
    // One authenticated keep-alive connection, held open.
    let (kept, status) = held_connection(addr, ALICE).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // A second authenticated connection is one too many.
    let mut bob = Client::new(addr, Some(BOB));
    let reply = bob.post(&initialize_request(1)).await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.text(), BUSY_BODY);
    assert_eq!(reply.header("connection"), Some("close"));
    drop(kept);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(bob.post(&initialize_request(1)).await.status, 200);
    server.shutdown().await.unwrap();
}

/// An authenticated keep-alive connection of `token`, held open after its
/// first answer (which it returns the status line of).
async fn held_connection(addr: std::net::SocketAddr, token: &str) -> (TcpStream, String) {
    held_connection_with(addr, token, "").await
}

/// [`held_connection`] with `extra` header lines (each ending in CRLF).
async fn held_connection_with(
    addr: std::net::SocketAddr,
    token: &str,
    extra: &str,
) -> (TcpStream, String) {
    let mut kept = TcpStream::connect(addr).await.unwrap();
    let body = serde_json::to_vec(&initialize_request(1)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {extra}Content-Length: {}\r\n\r\n",
        addr.port(),
        body.len()
    );
    kept.write_all(head.as_bytes()).await.unwrap();
    kept.write_all(&body).await.unwrap();
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(WAIT, kept.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    (kept, text)
}

/// One caller cannot hold every authenticated connection: past its share
/// it gets `429`, while another caller still gets in.
#[tokio::test]
async fn no_caller_holds_more_than_its_share_of_connections() {
    let server = start_echo_http(|c| {
        c.auth(tokens())
            .max_connections(8)
            .max_connections_per_caller(2)
    })
    .await;
    let addr = server.local_addr();
    let mut held = Vec::new();
    for _ in 0..2 {
        let (kept, status) = held_connection(addr, ALICE).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        held.push(kept);
    }
    let (_third, status) = held_connection(addr, ALICE).await;
    assert!(status.starts_with("HTTP/1.1 429"), "{status}");
    assert!(status.contains(CALLER_CONNECTIONS_BODY), "{status}");
    // Positive control: another caller, the same server, at once.
    assert!(whoami_ok(addr, BOB).await);
    // A place given back is alice's again.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(whoami_ok(addr, ALICE).await);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_caller_holds_at_most_its_sessions() {
    let server = start_echo_http(|c| c.auth(tokens()).max_sessions_per_caller(2)).await;
    let addr = server.local_addr();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let mut c = Client::new(addr, Some(ALICE));
        c.connect().await;
        sessions.push(c);
    }
    let mut third = Client::new(addr, Some(ALICE));
    let reply = third.post(&initialize_request(1)).await;
    assert_eq!(reply.status, 429, "{}", reply.text());
    assert_eq!(reply.text(), SESSION_LIMIT_BODY);
    // Other callers are not affected; requests in held sessions still work.
    assert!(whoami_ok(addr, BOB).await);
    assert!(result_text(&sessions[0].whoami().await.rpc().unwrap()).is_some());
    // Deleting one gives its place back.
    let deleted = sessions[0].request("DELETE", &[], b"").await;
    assert!(deleted.status < 300, "{}", deleted.status);
    third.connect().await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_caller_holds_at_most_its_open_streams() {
    let server = start_echo_http(|c| {
        c.auth(tokens())
            .max_streams_per_caller(1)
            .sse_keep_alive(Some(Duration::from_millis(50)))
    })
    .await;
    let addr = server.local_addr();
    let mut alice = Client::new(addr, Some(ALICE));
    alice.connect().await;
    let session = alice.session.clone().unwrap();
    // The session's standing event stream, held open.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {ALICE}\r\n\
         Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n",
        addr.port()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(WAIT, stream.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let said = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(
        said.starts_with("HTTP/1.1 200") && said.contains("text/event-stream"),
        "{said}"
    );
    // A call answered as a stream is one stream too many.
    let reply = alice.post(&call(3, "echo", json!({"text": "x"}))).await;
    assert_eq!(reply.status, 429, "{}", reply.text());
    assert_eq!(reply.text(), STREAM_LIMIT_BODY);
    // Bob has streams of his own.
    assert!(whoami_ok(addr, BOB).await);
    // Closing the stream gives its place back (noticed at the next
    // keep-alive write).
    drop(stream);
    let mut answered = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let reply = alice.post(&call(4, "echo", json!({"text": "y"}))).await;
        if reply.status == 200 {
            assert_eq!(result_text(&reply.rpc().unwrap()), Some("y"));
            answered = true;
            break;
        }
    }
    assert!(answered, "the stream's place never came back");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_refused() {
    let server = start_echo_http(|c| {
        c.auth(tokens())
            .body_read_timeout(Duration::from_millis(300))
    })
    .await;
    let addr = server.local_addr();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {ALICE}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 100\r\n\r\n{{\"jsonrpc\"",
        addr.port()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let said = closed_within(&mut s, WAIT).await.expect("closed");
    assert!(said.starts_with("HTTP/1.1 408"), "{said}");
    assert!(said.ends_with(TIMEOUT_BODY), "{said}");
    server.shutdown().await.unwrap();
}

fn xff(client: &str) -> String {
    // A client's own claim on the left; the proxy appended what it saw.
    format!("X-Forwarded-For: 198.51.100.66, {client}\r\n")
}

/// Behind a trusted proxy (loopback here), each request counts for the
/// client its `X-Forwarded-For` names: one client meets its cap while the
/// proxy itself holds more connections than any peer may.
#[tokio::test]
async fn a_trusted_proxys_clients_each_have_their_cap() {
    let loopback: IpNet = "127.0.0.1/32".parse().unwrap();
    let server = start_echo_http(|c| {
        c.auth(tokens())
            .max_connections_per_peer(2)
            .trusted_proxies(TrustedProxies::new(
                ForwardedHeader::XForwardedFor,
                [loopback],
            ))
    })
    .await;
    let addr = server.local_addr();
    let mut held = Vec::new();
    for _ in 0..2 {
        let (kept, status) = held_connection_with(addr, ALICE, &xff("192.0.2.1")).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        held.push(kept);
    }
    let (_third, status) = held_connection_with(addr, ALICE, &xff("192.0.2.1")).await;
    assert!(status.starts_with("HTTP/1.1 503"), "{status}");
    assert!(status.contains(BUSY_BODY), "{status}");
    // The proxy's other clients are served: five connections from one
    // address whose cap is two.
    for client in ["192.0.2.2", "192.0.2.3", "2001:db8::7"] {
        let (kept, status) = held_connection_with(addr, ALICE, &xff(client)).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{client}: {status}");
        held.push(kept);
    }
    // A request that names no client counts for the trusted proxy.
    let (_kept, status) = held_connection(addr, ALICE).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    server.shutdown().await.unwrap();
}

/// The positive control: from an address that is not a trusted proxy the
/// same headers name nobody, and the peer's own cap holds.
#[tokio::test]
async fn forwarding_headers_from_anyone_else_are_ignored() {
    let elsewhere: IpNet = "10.9.9.9/32".parse().unwrap();
    let server = start_echo_http(|c| {
        c.auth(tokens())
            .max_connections_per_peer(2)
            .trusted_proxies(TrustedProxies::new(
                ForwardedHeader::XForwardedFor,
                [elsewhere],
            ))
    })
    .await;
    let addr = server.local_addr();
    let mut held = Vec::new();
    for client in ["192.0.2.1", "192.0.2.2"] {
        let (kept, status) = held_connection_with(addr, ALICE, &xff(client)).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        held.push(kept);
    }
    // A third connection is refused before its request is read.
    let mut third = TcpStream::connect(addr).await.unwrap();
    let said = closed_within(&mut third, WAIT).await.expect("closed");
    assert!(said.starts_with("HTTP/1.1 503 "), "{said}");
    server.shutdown().await.unwrap();
}
