//! The stdio target: a child process, JSON-RPC lines out, lines in, every
//! wait bounded.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

use crate::client::ClientError;

/// Longest line read from the server; a longer one counts as a broken
/// answer.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// A running stdio server and the line channel to it.
pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
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
            timeout,
        })
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

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}
