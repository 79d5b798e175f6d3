//! A raw JSON-RPC client of a stdio MCP server: lines out, lines in, every
//! wait bounded. Raw because the audit must put bytes on the wire that no
//! typed client sends (`1e999`, `NaN`, truncated JSON, an oversized line).

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

/// The protocol version the audit's handshake asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Longest line read from the server; a longer one counts as a broken
/// answer.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Why talking to the server failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be started.
    #[error("the server could not be started: {0}")]
    Spawn(std::io::Error),
    /// No answer within the deadline.
    #[error("no answer within the deadline")]
    Timeout,
    /// The server closed its output or exited.
    #[error("the server closed its output")]
    Closed,
    /// Writing to the server failed (it is gone).
    #[error("the server stopped reading")]
    Write,
    /// The handshake was refused or malformed.
    #[error("the initialize handshake failed")]
    Handshake,
}

/// A running stdio server and the line channel to it.
pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
    /// The deadline of each exchange.
    pub timeout: Duration,
}

impl StdioClient {
    /// Starts `program` with `args` (stderr discarded, killed when dropped).
    pub fn spawn(program: &str, args: &[String], timeout: Duration) -> Result<Self, ClientError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(ClientError::Spawn)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Spawn(std::io::Error::other("no pipes")));
        };
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            next_id: 1000,
            timeout,
        })
    }

    /// A fresh request id.
    pub fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// `initialize`, then `notifications/initialized`; returns the result.
    pub async fn handshake(&mut self) -> Result<Value, ClientError> {
        let id = self.id();
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "mcp-audit", "version": env!("CARGO_PKG_VERSION")}}});
        let reply = self.request(&init).await?;
        let result = reply.get("result").cloned().ok_or(ClientError::Handshake)?;
        self.send_line(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
                .to_string()
                .as_bytes(),
        )
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

    /// Sends `message` and waits for the response with its id.
    pub async fn request(&mut self, message: &Value) -> Result<Value, ClientError> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        self.send_line(message.to_string().as_bytes()).await?;
        self.response_to(&id).await
    }

    /// Writes `line` and a newline.
    pub async fn send_line(&mut self, line: &[u8]) -> Result<(), ClientError> {
        let deadline = Instant::now() + self.timeout;
        let write = async {
            self.stdin.write_all(line).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        match timeout_at(deadline, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(ClientError::Write),
            Err(_) => Err(ClientError::Timeout),
        }
    }

    /// The next response whose id is `id` (or `null`, for a line the
    /// server could not read an id from), skipping notifications and
    /// answering the server's own requests with "method not found".
    pub async fn response_to(&mut self, id: &Value) -> Result<Value, ClientError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let message = self.read_message(deadline).await?;
            let is_response = message.get("result").is_some() || message.get("error").is_some();
            if is_response {
                let got = message.get("id").cloned().unwrap_or(Value::Null);
                if &got == id || got.is_null() {
                    return Ok(message);
                }
                continue;
            }
            if let (Some(req_id), Some(_)) = (message.get("id"), message.get("method")) {
                let refusal = json!({"jsonrpc": "2.0", "id": req_id,
                                     "error": {"code": -32601, "message": "Method not found"}});
                self.send_line(refusal.to_string().as_bytes()).await?;
            }
        }
    }

    async fn read_message(&mut self, deadline: Instant) -> Result<Value, ClientError> {
        loop {
            let mut line = Vec::new();
            let read = timeout_at(deadline, async {
                let mut limited = (&mut self.stdout).take(MAX_LINE as u64);
                limited.read_until(b'\n', &mut line).await
            });
            match read.await {
                Err(_) => return Err(ClientError::Timeout),
                Ok(Err(_)) | Ok(Ok(0)) => return Err(ClientError::Closed),
                Ok(Ok(_)) => {}
            }
            if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                return Ok(v);
            }
            // A line that is not JSON on the protocol channel: skipped here,
            // reported by the wire checks' accounting of unanswered lines.
        }
    }

    /// Whether the server still answers (`ping`).
    pub async fn alive(&mut self) -> bool {
        let id = self.id();
        matches!(
            self.request(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).await,
            Ok(reply) if reply.get("result").is_some()
        )
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}
