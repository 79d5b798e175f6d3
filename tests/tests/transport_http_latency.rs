//! No stall on streamed answers: a call answered as an event stream, on a
//! reused connection, completes in about a millisecond, not after the
//! client's delayed acknowledgement (about 40 ms) that Nagle's algorithm
//! waits for when the server does not set `TCP_NODELAY`.
//!
//! The one timing check of the suite, with an order of magnitude of
//! margin on both sides: the median of a few calls must stay under 15 ms
//! with the default configuration, and the positive control (a session's
//! calls with `tcp_nodelay(false)`) must show the stall, at least 30 ms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hardened_mcp::transport::HttpConfig;
use hardened_mcp_tests::keep_alive::KeepAlive;
use hardened_mcp_tests::tr_support::{
    call, initialize_request, initialized_notification, modern_call, modern_headers,
    start_echo_http,
};
use serde_json::json;

/// Calls timed per configuration (after one untimed call).
const CALLS: usize = 9;

/// The two ways a call is answered as an event stream: in a 2025-11-25
/// session, and as a 2026-07-28 request.
#[derive(Debug, Clone, Copy)]
enum Era {
    Session,
    Stateless,
}

/// The median time of [`CALLS`] `echo` calls on one connection.
async fn median_call(configure: fn(HttpConfig) -> HttpConfig, era: Era) -> Duration {
    let server = start_echo_http(configure).await;
    let mut conn = KeepAlive::connect(server.local_addr(), None).await.unwrap();
    let body = |v: serde_json::Value| serde_json::to_vec(&v).unwrap();
    if let Era::Session = era {
        let init = conn.post(&[], &body(initialize_request(1))).await.unwrap();
        assert_eq!(init.status, 200, "{}", init.text());
        assert!(conn.session.is_some(), "no session");
        let ack = conn
            .post(&[], &body(initialized_notification()))
            .await
            .unwrap();
        assert_eq!(ack.status, 202, "{}", ack.text());
    }
    let headers = match era {
        Era::Session => vec![],
        Era::Stateless => modern_headers("tools/call", Some("echo")),
    };
    let mut times = Vec::new();
    for i in 0..=CALLS {
        let id = i64::try_from(i).unwrap() + 2;
        let text = format!("hello {id}");
        let request = match era {
            Era::Session => call(id, "echo", json!({"text": text})),
            Era::Stateless => modern_call(id, "echo", json!({"text": text})),
        };
        let started = Instant::now();
        let reply = conn.post(&headers, &body(request)).await.unwrap();
        let took = started.elapsed();
        assert_eq!(reply.status, 200, "{era:?}: {}", reply.text());
        assert!(
            reply
                .header("content-type")
                .is_some_and(|t| t.starts_with("text/event-stream")),
            "{era:?}: not a stream: {:?}",
            reply.headers
        );
        assert_eq!(reply.rpc().unwrap()["id"], json!(id), "{}", reply.text());
        assert!(reply.text().contains(&text), "{}", reply.text());
        if i > 0 {
            times.push(took);
        }
    }
    server.shutdown().await.unwrap();
    times.sort();
    times[times.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_answers_on_a_reused_connection_do_not_stall() {
    for era in [Era::Session, Era::Stateless] {
        let fast = median_call(|c| c, era).await;
        assert!(
            fast < Duration::from_millis(15),
            "{era:?}: a streamed answer took {fast:?} (median)"
        );
    }
    // The positive control: without TCP_NODELAY a session's calls stall
    // (their stream's last chunk is a write of its own), so the check
    // above can see a stall. A stateless answer whose chunks leave in one
    // write may not stall even then.
    let slow = median_call(|c| c.tcp_nodelay(false), Era::Session).await;
    assert!(
        slow >= Duration::from_millis(30),
        "no stall without TCP_NODELAY ({slow:?}): the test cannot see one"
    );
}
