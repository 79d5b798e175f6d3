//! A raw JSON-RPC client of an MCP server, over stdio or streamable HTTP.
//!
//! Raw, not a typed SDK client, because the audit must put on the wire what
//! no typed client sends: `1e999`, `NaN`, truncated JSON, an oversized
//! message, a key no schema names. Every exchange is bounded by
//! [`Client::timeout`].

use std::time::Duration;

use serde_json::{Value, json};

use crate::http::HttpClient;
use crate::stdio::StdioClient;

/// The protocol version the audit's handshake asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Why talking to the server failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be started.
    #[error("the server could not be started: {0}")]
    Spawn(std::io::Error),
    /// The URL or the bearer token cannot be used.
    #[error("the target cannot be used: {0}")]
    Target(&'static str),
    /// No answer within the deadline.
    #[error("no answer within the deadline")]
    Timeout,
    /// The server closed its output, exited, or refused the connection.
    #[error("the server closed the connection")]
    Closed,
    /// Writing to the server failed (it is gone).
    #[error("the server stopped reading")]
    Write,
    /// The handshake was refused or malformed.
    #[error("the initialize handshake failed")]
    Handshake,
    /// The server asks for credentials the audit was not given.
    #[error("the server requires authorization (HTTP 401): pass --bearer-file")]
    Unauthorized,
}

/// The audited server, over one of the two transports.
pub struct Client {
    wire: Wire,
    next_id: i64,
}

enum Wire {
    Stdio(StdioClient),
    Http(HttpClient),
}

impl Client {
    /// Starts the stdio server `program args` (the tail of its standard
    /// error kept, killed when the client is dropped).
    pub fn stdio(program: &str, args: &[String], timeout: Duration) -> Result<Self, ClientError> {
        Ok(Self::new(Wire::Stdio(StdioClient::spawn(
            program, args, timeout,
        )?)))
    }

    /// The streamable HTTP endpoint `url`, with `bearer` sent as
    /// `Authorization: Bearer` when given.
    pub fn http(url: &str, bearer: Option<String>, timeout: Duration) -> Result<Self, ClientError> {
        Ok(Self::new(Wire::Http(HttpClient::new(
            url, bearer, timeout,
        )?)))
    }

    fn new(wire: Wire) -> Self {
        Self {
            wire,
            next_id: 1000,
        }
    }

    /// What a stdio server last wrote to its standard error (raw: escape
    /// before showing); `None` over HTTP.
    pub async fn stderr_tail(&mut self) -> Option<String> {
        match &mut self.wire {
            Wire::Stdio(c) => Some(c.stderr_tail().await),
            Wire::Http(_) => None,
        }
    }

    /// A fresh request id.
    pub fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends one raw message (`message` need not be valid JSON) and waits
    /// for the response whose id is `id` (or `null`).
    pub async fn exchange(&mut self, message: &[u8], id: &Value) -> Result<Value, ClientError> {
        match &mut self.wire {
            Wire::Stdio(c) => {
                c.send_line(message).await?;
                c.response_to(id).await
            }
            Wire::Http(c) => c.exchange(message, id).await,
        }
    }

    /// Sends a notification (no answer expected).
    pub async fn notify(&mut self, message: &Value) -> Result<(), ClientError> {
        let text = message.to_string();
        match &mut self.wire {
            Wire::Stdio(c) => c.send_line(text.as_bytes()).await,
            Wire::Http(c) => c.notify(text.as_bytes()).await,
        }
    }

    /// The deadline of each exchange.
    pub fn timeout(&self) -> Duration {
        match &self.wire {
            Wire::Stdio(c) => c.timeout,
            Wire::Http(c) => c.timeout,
        }
    }

    fn set_timeout(&mut self, timeout: Duration) {
        match &mut self.wire {
            Wire::Stdio(c) => c.timeout = timeout,
            Wire::Http(c) => c.timeout = timeout,
        }
    }

    /// [`Client::handshake`], waiting up to `startup` (at least the
    /// exchange deadline) for the `initialize` answer: a server process
    /// that starts an interpreter or a package runner (`npx`, `uvx`) takes
    /// longer to answer its first message than any later one.
    pub async fn handshake_within(&mut self, startup: Duration) -> Result<Value, ClientError> {
        let exchange = self.timeout();
        self.set_timeout(startup);
        let answered = self.handshake().await;
        self.set_timeout(exchange);
        answered
    }

    /// Sends `message` and waits for the response with its id.
    pub async fn request(&mut self, message: &Value) -> Result<Value, ClientError> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        self.exchange(message.to_string().as_bytes(), &id).await
    }

    /// `initialize`, then `notifications/initialized`; returns the result.
    pub async fn handshake(&mut self) -> Result<Value, ClientError> {
        let id = self.id();
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "hardened-mcp-audit", "version": env!("CARGO_PKG_VERSION")}}});
        let reply = self.request(&init).await?;
        let result = reply.get("result").cloned().ok_or(ClientError::Handshake)?;
        if let (Wire::Http(c), Some(v)) = (
            &mut self.wire,
            result.get("protocolVersion").and_then(Value::as_str),
        ) {
            c.set_protocol_version(v)?;
        }
        self.notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(result)
    }

    /// Every tool of `tools/list`, following at most `max_pages` cursors.
    pub async fn list_tools(&mut self, max_pages: usize) -> Result<Vec<Value>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..max_pages {
            let id = self.id();
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let reply = self
                .request(
                    &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}),
                )
                .await?;
            let result = reply.get("result").ok_or(ClientError::Handshake)?;
            if let Some(list) = result.get("tools").and_then(Value::as_array) {
                tools.extend(list.iter().cloned());
            }
            match result.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => break,
            }
        }
        Ok(tools)
    }

    /// Whether the server still answers (`ping`).
    pub async fn alive(&mut self) -> bool {
        let id = self.id();
        matches!(
            self.request(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).await,
            Ok(reply) if reply.get("result").is_some()
        )
    }

    /// Whether the server has certainly stopped (a stdio child that
    /// exited; an HTTP server is judged by [`Client::alive`] alone).
    pub fn exited(&mut self) -> bool {
        match &mut self.wire {
            Wire::Stdio(c) => c.exited(),
            Wire::Http(_) => false,
        }
    }
}
