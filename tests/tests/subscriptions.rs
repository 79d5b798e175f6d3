//! Resource subscriptions in both eras: a 2025-11-25 session subscribes
//! (`resources/subscribe`) and hears of each change, and of nothing else;
//! a resource it cannot read cannot be subscribed to; unsubscribing, a
//! resource that stops being readable and the ceiling of watches end or
//! refuse a watch. A 2026-07-28 client listens (`subscriptions/listen`)
//! and hears, tagged with its subscription, of the resources it can read
//! only, until it cancels.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The 2025-11-25 subscription methods are what this test drives.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hardened_mcp::prelude::*;
use hardened_mcp::server::resources::{ResourceBody, ResourceSet, ResourceSpec, Resources};
use hardened_mcp::server::subscriptions::MAX_WATCHES;
use hardened_mcp::transport::{HardenedStdio, HttpConfig, HttpServer};
use hardened_mcp_tests::tr_support::{
    HttpClient, LineClient, initialize_request, initialized_notification, modern_request,
};
use rmcp::ServiceExt;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ResourceUpdatedNotificationParam,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use serde_json::{Value, json};

/// How often the test server reads what is watched.
const INTERVAL: Duration = Duration::from_millis(50);
/// Long enough for many reads: a change not announced by then never is.
const QUIET: Duration = Duration::from_millis(600);

/// A board whose counter the test moves.
#[derive(Debug, Clone, Default)]
struct Board {
    counter: Arc<AtomicU64>,
}

impl Board {
    fn bump(&self) {
        self.counter.fetch_add(1, Ordering::SeqCst);
    }
}

#[hardened_tools]
impl Board {
    /// Reads the counter.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn board_read(&self) -> Result<Output<u64>, ToolError> {
        Ok(Output::new(self.counter.load(Ordering::SeqCst)))
    }
}

/// The variable of `board://items/{id}`.
#[derive(HardenedArgs)]
struct Item {
    #[bounded(max_len = 4, pattern = "^[0-9]{1,4}$")]
    id: String,
}

fn spec(uri: &'static str, name: &'static str) -> ResourceSpec {
    ResourceSpec {
        uri,
        name,
        description: "A test resource.",
        mime_type: "text/plain",
        max_bytes: 64,
        scopes: &[],
    }
}

fn resources() -> ResourceSet<Board> {
    Resources::new()
        .fixed(spec("board://counter", "counter"), |b: &Board, _| {
            Ok(ResourceBody::text(
                b.counter.load(Ordering::SeqCst).to_string(),
            ))
        })
        // Never readable by anyone: the answer of another caller's run.
        .fixed(spec("board://hidden", "hidden"), |_, _| {
            Err(ToolError::NotFound)
        })
        // Readable while the counter is even.
        .fixed(spec("board://flaky", "flaky"), |b: &Board, _| {
            match b.counter.load(Ordering::SeqCst) % 2 {
                0 => Ok(ResourceBody::text("even")),
                _ => Err(ToolError::NotFound),
            }
        })
        .template(spec("board://items/{id}", "item"), |_, _, i: Item| {
            Ok(ResourceBody::text(i.id))
        })
        .build()
        .unwrap()
}

fn server(board: Board) -> Server<Board> {
    let tools = Board::hardened_tool_router_set().into_router().unwrap();
    Server::new("board", "1", board, tools)
        .resources(resources())
        .watch_interval(INTERVAL)
}

/// A 2025-11-25 client that writes down every update it hears of.
#[derive(Clone, Default)]
struct Listener {
    heard: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    fn heard(&self) -> Vec<String> {
        self.heard.lock().unwrap().clone()
    }

    /// Waits (bounded) until `n` updates were heard.
    async fn until(&self, n: usize) -> Vec<String> {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if self.heard.lock().unwrap().len() >= n {
                    return self.heard();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the update within its time")
    }
}

impl rmcp::ClientHandler for Listener {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard.lock().unwrap().push(params.uri);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("listener", "1"),
        )
    }
}

async fn session(board: Board, listener: Listener) -> RunningService<RoleClient, Listener> {
    let (a, b) = tokio::io::duplex(1 << 16);
    let server = server(board);
    tokio::spawn(async move {
        let running = server.serve(a).await.expect("server starts");
        let _ = running.waiting().await;
    });
    listener.serve(b).await.expect("client connects")
}

async fn subscribe(
    c: &RunningService<RoleClient, Listener>,
    uri: &str,
) -> Result<(), rmcp::ServiceError> {
    c.subscribe(SubscribeRequestParams::new(uri)).await
}

fn code(e: rmcp::ServiceError) -> i32 {
    match e {
        rmcp::ServiceError::McpError(e) => e.code.0,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

#[tokio::test]
async fn a_session_hears_of_each_change_of_what_it_subscribed_to_and_of_nothing_else() {
    let board = Board::default();
    let listener = Listener::default();
    let c = session(board.clone(), listener.clone()).await;
    subscribe(&c, "board://counter").await.unwrap();
    // Subscribing twice is one watch.
    subscribe(&c, "board://counter").await.unwrap();

    // No change, no update.
    tokio::time::sleep(QUIET).await;
    assert!(listener.heard().is_empty(), "{:?}", listener.heard());

    board.bump();
    assert_eq!(listener.until(1).await, ["board://counter"]);
    tokio::time::sleep(QUIET).await;
    assert_eq!(listener.heard().len(), 1, "one change, one update");
    board.bump();
    listener.until(2).await;

    // Unsubscribed: changes go unheard.
    c.unsubscribe(UnsubscribeRequestParams::new("board://counter"))
        .await
        .unwrap();
    board.bump();
    tokio::time::sleep(QUIET).await;
    assert_eq!(listener.heard().len(), 2, "{:?}", listener.heard());
    // Unsubscribing from what is not watched is no error.
    c.unsubscribe(UnsubscribeRequestParams::new("board://nothing"))
        .await
        .unwrap();
}

#[tokio::test]
async fn what_the_caller_cannot_read_cannot_be_subscribed_to() {
    let board = Board::default();
    let listener = Listener::default();
    let c = session(board.clone(), listener.clone()).await;
    // A resource the reader refuses and one that does not exist get the
    // same unknown-resource answer as a read.
    let hidden = code(subscribe(&c, "board://hidden").await.unwrap_err());
    let unknown = code(subscribe(&c, "board://nothing").await.unwrap_err());
    let read = c
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "board://hidden",
        ))
        .await
        .unwrap_err();
    assert_eq!(hidden, code(read));
    assert_eq!(hidden, unknown);
    // The positive control: a readable one is subscribed to.
    subscribe(&c, "board://counter").await.unwrap();
}

#[tokio::test]
async fn a_resource_that_stops_being_readable_is_announced_once_then_unwatched() {
    let board = Board::default();
    let listener = Listener::default();
    let c = session(board.clone(), listener.clone()).await;
    subscribe(&c, "board://flaky").await.unwrap();
    board.bump(); // odd: no longer readable
    assert_eq!(listener.until(1).await, ["board://flaky"]);
    board.bump(); // readable again, but the watch has ended
    tokio::time::sleep(QUIET).await;
    assert_eq!(listener.heard().len(), 1, "{:?}", listener.heard());
}

#[tokio::test]
async fn a_session_watches_a_bounded_number_of_resources() {
    let c = session(Board::default(), Listener::default()).await;
    for i in 0..MAX_WATCHES {
        subscribe(&c, &format!("board://items/{i}")).await.unwrap();
    }
    let refused = code(
        subscribe(&c, &format!("board://items/{MAX_WATCHES}"))
            .await
            .unwrap_err(),
    );
    assert_eq!(refused, -32600);
    // One freed, one more fits.
    c.unsubscribe(UnsubscribeRequestParams::new("board://items/0"))
        .await
        .unwrap();
    subscribe(&c, &format!("board://items/{MAX_WATCHES}"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_listener_hears_of_what_it_can_read_tagged_with_its_subscription() {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let board = Board::default();
    let srv = server(board.clone());
    tokio::spawn(async move {
        if let Ok(running) = srv.serve(HardenedStdio::new(server_r, server_w)).await {
            let _ = running.waiting().await;
        }
    });
    let mut client = LineClient::new(client_r, client_w);
    let uris = json!(["board://counter", "board://hidden", "board://counter"]);
    let listen = modern_request(
        7,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris, "toolsListChanged": true}}),
    );
    client.send(&listen).await.unwrap();
    let tag =
        |frame: &Value| frame["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    let ack = client.recv_within(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(tag(&ack), 7, "{ack}");
    // The resources asked for (repeats and all, as the SDK acknowledges);
    // tool lists never change, so not those.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": uris}),
        "{ack}"
    );

    // The watches start right after the acknowledgement: a change made
    // before their first read is their starting point, so bump until heard.
    let mut update = Value::Null;
    for _ in 0..20 {
        board.bump();
        if let Ok(frame) = client.recv_within(Duration::from_millis(500)).await {
            update = frame;
            break;
        }
    }
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(update["params"]["uri"], "board://counter", "{update}");
    assert_eq!(tag(&update), 7, "{update}");
    // One update for a resource asked twice; nothing of the hidden
    // resource, nothing unasked.
    assert!(
        client.recv_within(QUIET).await.is_err(),
        "a frame no change caused"
    );

    // Cancelled: the watches end with the request.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7}});
    client.send(&cancel).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    board.bump();
    while let Ok(frame) = client.recv_within(QUIET).await {
        assert_ne!(
            frame["method"], "notifications/resources/updated",
            "heard after cancelling: {frame}"
        );
    }
}

/// Over streamable HTTP a subscription needs a session: a stateless
/// server refuses it (nothing could announce a change), a server with
/// sessions takes it.
#[tokio::test]
async fn over_http_a_subscription_needs_a_session() {
    for sessions in [false, true] {
        let srv = server(Board::default());
        let config = HttpConfig::new()
            .session_mode(sessions)
            .sse_keep_alive(None);
        let running = HttpServer::new(move || Ok(srv.clone()), config)
            .unwrap()
            .start(tokio_util::sync::CancellationToken::new())
            .await
            .unwrap();
        let mut c = HttpClient::new(running.local_addr(), None);
        let init = c.post(&initialize_request(1)).await;
        assert_eq!(init.status, 200, "{}", init.text());
        c.session = init.header("mcp-session-id").map(str::to_owned);
        assert_eq!(c.session.is_some(), sessions);
        if sessions {
            assert_eq!(c.post(&initialized_notification()).await.status, 202);
        }
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                               "params": {"uri": "board://counter"}});
        let reply = c.post(&subscribe).await.rpc().unwrap();
        if sessions {
            assert_eq!(reply["result"], json!({}), "{reply}");
        } else {
            assert_eq!(reply["error"]["code"], -32600, "{reply}");
        }
        running.shutdown().await.unwrap();
    }
}
