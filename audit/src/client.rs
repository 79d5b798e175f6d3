//! A raw JSON-RPC client of an MCP server, over stdio or streamable HTTP.
//!
//! Raw, not a typed SDK client, because the audit must put on the wire what
//! no typed client sends: `1e999`, `NaN`, truncated JSON, an oversized
//! message, a key no schema names. Every exchange is bounded by
//! [`Client::timeout`].

use std::io::Write as _;
use std::time::{Duration, Instant};

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
    /// `--confine` or `--private-network` was asked for and the server
    /// could not be started so (nothing was started).
    #[error("the server could not be started confined: {0}")]
    Confine(std::io::Error),
    /// The URL or the bearer token cannot be used.
    #[error("the target cannot be used: {0}")]
    Target(&'static str),
    /// No answer within the deadline.
    #[error("no answer within the deadline")]
    Timeout,
    /// Not waited for: the other request of an overlapped pair, whose
    /// answer alone decides ([`Awaited::Second`]), was answered first.
    #[error("not waited for past the answer that decided")]
    NotAwaited,
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

/// Answers seen before the deadline adapts to the server's pace.
const ADAPT_AFTER: u32 = 5;
/// The adapted deadline is this many times the slowest answer seen so far…
const ADAPT_FACTOR: u32 = 20;
/// …and never below this.
const ADAPT_FLOOR: Duration = Duration::from_secs(2);
/// Most bytes of one message written to the trace (a longer one is cut,
/// with its length).
const TRACE_MESSAGE_BYTES: usize = 64 * 1024;

/// The deadline of an exchange after `answered` answers, the slowest of
/// them `slowest`, with `ceiling` given (see [`Client::deadline`]).
fn adapted(ceiling: Duration, answered: u32, slowest: Duration) -> Duration {
    if answered < ADAPT_AFTER {
        return ceiling;
    }
    (slowest * ADAPT_FACTOR).max(ADAPT_FLOOR).min(ceiling)
}

/// The audited server, over one of the two transports.
pub struct Client {
    wire: Wire,
    next_id: i64,
    /// The deadline given: the ceiling of every exchange's.
    ceiling: Duration,
    /// Answers timed so far, and the slowest of them.
    answered: u32,
    slowest: Duration,
    /// `--trace FILE`: every exchange, one JSON object a line.
    trace: Option<Trace>,
    /// The first request that went unanswered since the server last
    /// answered one (its text, cut): where a silence began.
    silence: Option<String>,
}

/// The record of every exchange (`--trace`): `{"ms", "sent"}` for what the
/// audit sent (cut at 64 KiB, with `"bytes"`), `{"ms", "received"}` for the
/// answer, `{"ms", "failed"}` when none came.
struct Trace {
    file: std::io::BufWriter<std::fs::File>,
    start: Instant,
}

impl Trace {
    fn write(&mut self, mut record: Value) {
        record["ms"] = json!(self.start.elapsed().as_millis() as u64);
        let _ = writeln!(self.file, "{record}");
        let _ = self.file.flush();
    }
}

/// Which answers of an overlapped pair are waited for (each until the
/// deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaited {
    /// Both.
    Both,
    /// The second; the first only until the second is answered (then
    /// [`ClientError::NotAwaited`]): where the second's answer alone
    /// decides, a slow first is not waited out.
    Second,
}

/// What [`Client::overlapped`] saw: each answer with when it came, and
/// when the second request was sent, both counted from the first's
/// sending.
#[derive(Debug)]
pub struct Overlap {
    /// The answer to the first request.
    pub first: Result<(Value, Duration), ClientError>,
    /// The answer to the second.
    pub second: Result<(Value, Duration), ClientError>,
    /// When the second was sent.
    pub second_sent: Duration,
}

enum Wire {
    Stdio(StdioClient),
    Http(HttpClient),
}

impl Client {
    /// Starts the stdio server `program args` (the tail of its standard
    /// error kept, killed when the client is dropped).
    pub fn stdio(
        program: &str,
        args: &[String],
        timeout: Duration,
        isolation: crate::stdio::Isolation<'_>,
    ) -> Result<Self, ClientError> {
        let wire = Wire::Stdio(StdioClient::spawn(program, args, timeout, isolation)?);
        Ok(Self::new(wire, timeout))
    }

    /// The streamable HTTP endpoint `url`, with `bearer` sent as
    /// `Authorization: Bearer` when given.
    pub fn http(url: &str, bearer: Option<String>, timeout: Duration) -> Result<Self, ClientError> {
        let wire = Wire::Http(HttpClient::new(url, bearer, timeout)?);
        Ok(Self::new(wire, timeout))
    }

    fn new(wire: Wire, ceiling: Duration) -> Self {
        Self {
            wire,
            next_id: 1000,
            ceiling,
            answered: 0,
            slowest: Duration::ZERO,
            trace: None,
            silence: None,
        }
    }

    /// Writes every exchange from now on to `path` (created, or
    /// truncated).
    pub fn trace_to(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        let file = std::fs::File::create(path)?;
        self.trace = Some(Trace {
            file: std::io::BufWriter::new(file),
            start: Instant::now(),
        });
        Ok(())
    }

    /// The deadline of the next exchange: the one given until
    /// [`ADAPT_AFTER`] answers were timed, then [`ADAPT_FACTOR`] times the
    /// slowest of them (at least [`ADAPT_FLOOR`], at most the one given), so
    /// that a server that answers in milliseconds is not waited on for the
    /// whole deadline each time it leaves a call unanswered.
    fn deadline(&self) -> Duration {
        adapted(self.ceiling, self.answered, self.slowest)
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
        self.trace_sent(message);
        let deadline = self.deadline();
        self.set_timeout(deadline);
        let started = Instant::now();
        let answer = match &mut self.wire {
            Wire::Stdio(c) => match c.send_line(message).await {
                Ok(()) => c.response_to(id).await,
                Err(e) => Err(e),
            },
            Wire::Http(c) => c.exchange(message, id).await,
        };
        self.set_timeout(self.ceiling);
        if answer.is_ok() {
            self.timed(started.elapsed());
        }
        self.heard(answer.is_ok(), message);
        self.trace_answer(&answer);
        answer
    }

    /// Keeps where the current silence began: `message` if it went
    /// unanswered and began one, nothing once an answer comes.
    fn heard(&mut self, answered: bool, message: &[u8]) {
        match answered {
            true => self.silence = None,
            false if self.silence.is_none() => {
                let cut = &message[..message.len().min(crate::finding::EXCHANGE_CUT * 4)];
                self.silence = Some(String::from_utf8_lossy(cut).into_owned());
            }
            false => {}
        }
    }

    /// The first request the server has not answered since it last
    /// answered one (as sent, cut): where it fell silent, if it has.
    pub fn silence(&self) -> Option<&str> {
        self.silence.as_deref()
    }

    /// Two requests in flight at once: `first`, then `second` `gap` later
    /// (over stdio two lines whose answers are read in whatever order they
    /// come; over HTTP two `POST`s). Both are bounded by the deadline given,
    /// not the adapted one, from the first's sending: this is how a call
    /// that runs long is seen.
    pub async fn overlapped(
        &mut self,
        first: &Value,
        second: &Value,
        gap: Duration,
        awaited: Awaited,
    ) -> Overlap {
        let texts = [first.to_string(), second.to_string()];
        let ids = [first, second].map(|m| m.get("id").cloned().unwrap_or(Value::Null));
        for text in &texts {
            self.trace_sent(text.as_bytes());
        }
        let lines = [texts[0].as_bytes(), texts[1].as_bytes()];
        let o = match &mut self.wire {
            Wire::Stdio(c) => c.overlapped(lines, [&ids[0], &ids[1]], gap, awaited).await,
            Wire::Http(c) => c.overlapped(lines, [&ids[0], &ids[1]], gap, awaited).await,
        };
        if let Ok((_, took)) = &o.first {
            self.timed(*took);
        }
        match (&o.first, &o.second) {
            (Err(_), Err(_)) => self.heard(false, lines[0]),
            _ => self.heard(true, b""),
        }
        if let Ok((_, at)) = &o.second {
            self.timed(at.saturating_sub(o.second_sent));
        }
        // Recorded in the order the answers came, the missing ones last.
        let mut answers = [&o.first, &o.second];
        answers.sort_by_key(|a| a.as_ref().map_or(Duration::MAX, |(_, at)| *at));
        for answer in answers {
            self.trace_answer(&answer.as_ref().map(|(reply, _)| reply));
        }
        o
    }

    /// One more answer, which took `took`.
    fn timed(&mut self, took: Duration) {
        self.answered = self.answered.saturating_add(1);
        self.slowest = self.slowest.max(took);
    }

    fn trace_sent(&mut self, message: &[u8]) {
        if let Some(t) = &mut self.trace {
            let cut = &message[..message.len().min(TRACE_MESSAGE_BYTES)];
            let mut record = json!({"sent": String::from_utf8_lossy(cut)});
            if cut.len() < message.len() {
                record["bytes"] = json!(message.len());
            }
            t.write(record);
        }
    }

    fn trace_answer<V: serde::Serialize, E: std::fmt::Display>(&mut self, answer: &Result<V, E>) {
        if let Some(t) = &mut self.trace {
            t.write(match answer {
                Ok(reply) => json!({"received": reply}),
                Err(e) => json!({"failed": e.to_string()}),
            });
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
        let ceiling = self.ceiling;
        self.ceiling = startup;
        let answered = self.handshake().await;
        self.ceiling = ceiling;
        // The first answer includes the server's start: not a pace.
        (self.answered, self.slowest) = (0, Duration::ZERO);
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
        self.list("tools/list", "tools", max_pages).await
    }

    /// Every item of a paginated list (`prompts/list` and `prompts`,
    /// `resources/list` and `resources` …), following at most `max_pages`
    /// cursors.
    pub async fn list(
        &mut self,
        method: &str,
        key: &str,
        max_pages: usize,
    ) -> Result<Vec<Value>, ClientError> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..max_pages {
            let id = self.id();
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let reply = self
                .request(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
                .await?;
            let result = reply.get("result").ok_or(ClientError::Handshake)?;
            if let Some(list) = result.get(key).and_then(Value::as_array) {
                items.extend(list.iter().cloned());
            }
            match result.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => break,
            }
        }
        Ok(items)
    }

    /// Whether the server still answers (`ping`).
    pub async fn alive(&mut self) -> bool {
        let id = self.id();
        matches!(
            self.request(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).await,
            Ok(reply) if reply.get("result").is_some()
        )
    }

    /// Whether the server is a stdio child of the audit's (its only
    /// client), not an HTTP server others share.
    pub fn is_stdio(&self) -> bool {
        matches!(self.wire, Wire::Stdio(_))
    }

    /// Ends a stdio server (its input closed, then signals; see
    /// [`StdioClient::shut_down`]) and names the processes it left running,
    /// killed since; nothing over HTTP, where the server is not the audit's.
    pub async fn shut_down(&mut self, grace: Duration) -> Vec<String> {
        match &mut self.wire {
            Wire::Stdio(c) => c.shut_down(grace).await,
            Wire::Http(_) => Vec::new(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_adapts_to_a_fast_server_within_the_one_given() {
        let ms = Duration::from_millis;
        let ten = Duration::from_secs(10);
        // Until five answers were timed: the deadline given.
        assert_eq!(adapted(ten, 4, ms(1)), ten);
        // Then twenty times the slowest answer, at least two seconds…
        assert_eq!(adapted(ten, 5, ms(1)), ADAPT_FLOOR);
        assert_eq!(adapted(ten, 50, ms(300)), ms(6000));
        // …and never above the deadline given.
        assert_eq!(adapted(ten, 50, ms(900)), ten);
        assert_eq!(adapted(ms(500), 50, ms(1)), ms(500));
    }
}
