//! The stdio target: a child process, JSON-RPC lines out, lines in, every
//! wait bounded.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

use crate::client::{ClientError, Overlap};

/// Longest line read from the server; a longer one counts as a broken
/// answer.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Most bytes of the server's standard error kept (its last ones).
const STDERR_TAIL: usize = 8 * 1024;

/// A running stdio server and the line channel to it.
pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The last `STDERR_TAIL` bytes the server wrote to its standard
    /// error, read all along so that it never blocks on a full pipe.
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The task reading it, until the pipe closes.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    /// The deadline of each exchange.
    pub timeout: Duration,
}

impl StdioClient {
    /// Starts `program` with `args` (the tail of its standard error kept,
    /// killed when dropped).
    pub fn spawn(program: &str, args: &[String], timeout: Duration) -> Result<Self, ClientError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(ClientError::Spawn)?;
        let (Some(stdin), Some(stdout), Some(mut err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ClientError::Spawn(std::io::Error::other("no pipes")));
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr);
        let stderr_reader = tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut chunk).await {
                let Ok(mut kept) = tail.lock() else { return };
                kept.extend_from_slice(&chunk[..n]);
                let over = kept.len().saturating_sub(STDERR_TAIL);
                kept.drain(..over);
            }
        });
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            stderr,
            stderr_reader: Some(stderr_reader),
            timeout,
        })
    }

    /// The last lines the server wrote to its standard error (at most
    /// `STDERR_TAIL` bytes), as it wrote them: escape before showing.
    /// Waits at most half a second for the pipe to close first, so that
    /// a server that just exited has its last words read (one still
    /// running, or a child it left holding the pipe, costs that wait).
    pub async fn stderr_tail(&mut self) -> String {
        if let Some(reader) = self.stderr_reader.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
        }
        self.stderr
            .lock()
            .map(|kept| String::from_utf8_lossy(&kept).into_owned())
            .unwrap_or_default()
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
            let message = self.next_response(deadline).await?;
            let got = message.get("id").cloned().unwrap_or(Value::Null);
            if &got == id || got.is_null() {
                return Ok(message);
            }
        }
    }

    /// Sends `lines[0]`, then `lines[1]` `gap` later, and reads the answers
    /// to both (matched by `ids`, in whatever order they come) until the
    /// deadline; each with when it came, from the first's sending.
    pub async fn overlapped(
        &mut self,
        lines: [&[u8]; 2],
        ids: [&Value; 2],
        gap: Duration,
    ) -> Overlap {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let mut second_sent = Duration::ZERO;
        let mut end = self.send_line(lines[0]).await.err();
        if end.is_none() {
            tokio::time::sleep(gap).await;
            second_sent = start.elapsed();
            end = self.send_line(lines[1]).await.err();
        }
        let mut answers: [Option<(Value, Duration)>; 2] = [None, None];
        while end.is_none() && answers.iter().any(Option::is_none) {
            match self.next_response(deadline).await {
                Err(e) => end = Some(e),
                Ok(message) => {
                    let got = message.get("id").cloned().unwrap_or(Value::Null);
                    // A `null` id (one the server could not read): the
                    // first request still unanswered.
                    let slot = match ids.iter().position(|id| **id == got) {
                        Some(i) => answers.get_mut(i),
                        None if got.is_null() => answers.iter_mut().find(|a| a.is_none()),
                        None => None,
                    };
                    if let Some(slot) = slot
                        && slot.is_none()
                    {
                        *slot = Some((message, start.elapsed()));
                    }
                }
            }
        }
        let [first, second] = answers.map(|a| a.ok_or_else(|| lost(end.as_ref())));
        Overlap {
            first,
            second,
            second_sent,
        }
    }

    /// The next response the server sends by `deadline`, skipping
    /// notifications and answering the server's own requests with "method
    /// not found".
    async fn next_response(&mut self, deadline: Instant) -> Result<Value, ClientError> {
        loop {
            let message = self.read_message(deadline).await?;
            if message.get("result").is_some() || message.get("error").is_some() {
                return Ok(message);
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

/// Why a request left unanswered got no answer: the error that ended the
/// reading (`None`: the deadline).
fn lost(end: Option<&ClientError>) -> ClientError {
    match end {
        None | Some(ClientError::Timeout) => ClientError::Timeout,
        Some(ClientError::Write) => ClientError::Write,
        Some(_) => ClientError::Closed,
    }
}
