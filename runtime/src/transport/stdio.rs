//! The bounded stdio transport: newline-delimited JSON-RPC over any
//! `AsyncRead`/`AsyncWrite` pair, with a message-size ceiling enforced while
//! reading and a fixed error reply to every line that cannot be served.
//!
//! rmcp's own line transport stays silent on a line it cannot parse (a
//! literal `1e999` or `NaN`), so the client waits forever. This one answers:
//!
//! | the line | reply |
//! |---|---|
//! | longer than the ceiling (never buffered past it) | `-32700`, [`MSG_TOO_LARGE`], the id recovered from the bytes before the ceiling, or `null` |
//! | not UTF-8, or not JSON text (`NaN`, truncated, garbage) | `-32700`, [`MSG_PARSE`], `id: null` |
//! | JSON, but not a message rmcp accepts (array, number, bad params, `1e999` out of range) | `-32600`, [`MSG_INVALID`], the recovered id or `null` |
//! | a malformed notification or response (no `id`, or carries `result`/`error`) | none: JSON-RPC never answers those |
//! | empty or whitespace only | none: skipped |
//!
//! **The recovered id.** An id is echoed only when the line is well-formed
//! JSON (numbers are checked for grammar, not range), its top level is an
//! object, and that object has exactly one `id` member that is an integer
//! in `i64` range or a string of at most [`MAX_ECHOED_ID_BYTES`] bytes. Text
//! that is not JSON is never scanned for an id. For a line longer than the
//! ceiling the same rules apply to the bytes read before it: the id is
//! echoed when it is the value of a top-level member that ends before the
//! ceiling and everything before it is well-formed JSON; nothing past the
//! ceiling is held in memory to find it. Nothing else of a bad line
//! is ever written back or logged: log lines carry its length and category.
//!
//! **The error-storm rule.** Replies with `id: null` spend a token from a
//! bucket ([`StdioConfig::with_error_rate`]: burst 32, refilled at 8 per
//! second by default). With the bucket empty such a reply is dropped and
//! counted; the count is logged once, when the bucket next allows a reply
//! or the input ends. Replies that carry a recovered id are always sent:
//! they answer a request the client is waiting for, one reply per line, as
//! for any good request. So a flood of garbage costs bounded output and can
//! never fill the pipe that good replies travel on.
//!
//! All output, rmcp's and these replies, goes through one writer; a reply
//! is appended whole to its buffer, so messages never interleave, even when
//! a read is cancelled halfway through writing a reply.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::RequestId;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// Default ceiling on one incoming message, newline excluded: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Default number of `id: null` error replies that may be sent in a burst.
pub const DEFAULT_ERROR_BURST: u32 = 32;
/// Default refill rate of the error-reply bucket, replies per second.
pub const DEFAULT_ERROR_REFILL_PER_SEC: u32 = 8;
/// Longest string id that is echoed in an error reply.
pub const MAX_ECHOED_ID_BYTES: usize = 128;

/// Reply text for a line longer than the ceiling.
pub const MSG_TOO_LARGE: &str = "Parse error: message exceeds the size limit";
/// Reply text for a line that is not JSON.
pub const MSG_PARSE: &str = "Parse error: message is not valid JSON";
/// Reply text for JSON that is not an acceptable JSON-RPC message.
pub const MSG_INVALID: &str = "Invalid Request: not a valid JSON-RPC request";

const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Limits of a [`HardenedStdio`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioConfig {
    max_message_bytes: usize,
    error_burst: u32,
    error_refill_per_sec: u32,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            error_burst: DEFAULT_ERROR_BURST,
            error_refill_per_sec: DEFAULT_ERROR_REFILL_PER_SEC,
        }
    }
}

impl StdioConfig {
    /// Sets the ceiling on one incoming message in bytes (newline excluded;
    /// at least 1).
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes.max(1);
        self
    }

    /// Sets the error-storm bucket: at most `burst` `id: null` replies at
    /// once, refilled at `per_sec` replies per second. `burst = 0` drops
    /// every `id: null` reply.
    pub fn with_error_rate(mut self, burst: u32, per_sec: u32) -> Self {
        self.error_burst = burst;
        self.error_refill_per_sec = per_sec;
        self
    }

    /// The ceiling on one incoming message, in bytes.
    pub fn max_message_bytes(&self) -> usize {
        self.max_message_bytes
    }
}

/// A server transport over newline-delimited JSON-RPC, bounded and
/// answering every bad line; see the [module docs](self).
///
/// ```no_run
/// # async fn demo<S: rmcp::ServerHandler>(server: S) -> Result<(), Box<dyn std::error::Error>> {
/// use rmcp::ServiceExt;
/// use hardened_mcp::transport::HardenedStdio;
///
/// let running = server.serve(HardenedStdio::stdio()).await?;
/// running.waiting().await?;
/// # Ok(()) }
/// ```
pub struct HardenedStdio<R, W> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// Dropping the tail of an oversized line until its newline. Kept on
    /// the struct: `receive` is cancelled whenever rmcp's loop has other work.
    discarding: bool,
    outbox: Arc<Mutex<Outbox<W>>>,
    pending: Option<PendingReply>,
    budget: ErrorBudget,
    max_message_bytes: usize,
    /// The 2025-11-25 tasks adapter of this session.
    legacy: Arc<std::sync::Mutex<super::tasks2025::Legacy>>,
}

impl<R, W> std::fmt::Debug for HardenedStdio<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HardenedStdio")
            .field("max_message_bytes", &self.max_message_bytes)
            .finish_non_exhaustive()
    }
}

impl HardenedStdio<rmcp::transport::StdioReader, rmcp::transport::StdioWriter> {
    /// The process's stdin and stdout (rmcp's non-blocking pipe handles when
    /// both are pipes), with the default [`StdioConfig`].
    ///
    /// Must be called inside a Tokio runtime with I/O enabled.
    pub fn stdio() -> Self {
        let (r, w) = rmcp::transport::stdio_pipes();
        Self::new(r, w)
    }
}

impl<R, W> HardenedStdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Wraps a reader and a writer with the default [`StdioConfig`].
    pub fn new(reader: R, writer: W) -> Self {
        Self::with_config(reader, writer, StdioConfig::default())
    }

    /// Wraps a reader and a writer with the given limits.
    pub fn with_config(reader: R, writer: W, config: StdioConfig) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            discarding: false,
            outbox: Arc::new(Mutex::new(Outbox {
                out: Some(writer),
                buf: Vec::new(),
                sent: 0,
            })),
            pending: None,
            budget: ErrorBudget::new(config.error_burst, config.error_refill_per_sec),
            max_message_bytes: config.max_message_bytes,
            legacy: Arc::default(),
        }
    }

    /// Reads one line into `self.line` (newline excluded) without letting
    /// it grow past the ceiling. Cancellation-safe: bytes are consumed from
    /// the reader only together with their effect on `self`.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (consumed, step) = {
                let available = match self.reader.fill_buf().await {
                    Ok(available) => available,
                    Err(e) => return LineRead::Io(e),
                };
                if available.is_empty() {
                    return LineRead::Eof;
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let content = newline.unwrap_or(available.len());
                let consumed = newline.map_or(available.len(), |i| i + 1);
                if self.discarding {
                    let step = if newline.is_some() {
                        Step::DiscardDone
                    } else {
                        Step::More
                    };
                    (consumed, step)
                } else if self.line.len().saturating_add(content) > self.max_message_bytes {
                    // Up to the ceiling and not a byte further: the id may
                    // stand in that prefix.
                    let room = self.max_message_bytes.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&available[..room.min(content)]);
                    let id = recover_prefix_id(&self.line);
                    self.line.clear();
                    let step = if newline.is_some() {
                        Step::Oversized(id)
                    } else {
                        Step::OversizedDiscardRest(id)
                    };
                    (consumed, step)
                } else {
                    self.line.extend_from_slice(&available[..content]);
                    let step = if newline.is_some() {
                        Step::Line
                    } else {
                        Step::More
                    };
                    (consumed, step)
                }
            };
            self.reader.consume(consumed);
            match step {
                Step::Line => return LineRead::Line,
                Step::More => {}
                Step::DiscardDone => self.discarding = false,
                Step::Oversized(id) => return LineRead::Oversized(id),
                Step::OversizedDiscardRest(id) => {
                    self.discarding = true;
                    return LineRead::Oversized(id);
                }
            }
        }
    }

    /// Decides whether a rejected line gets a reply, and queues it.
    fn reject(&mut self, rejection: Rejection, id: Option<RequestId>, bytes: usize) {
        tracing::debug!(
            kind = rejection.as_str(),
            bytes,
            id_recovered = id.is_some(),
            "rejected an input line"
        );
        if id.is_none() && !self.budget.try_take(Instant::now()) {
            return;
        }
        let (code, message) = rejection.code_and_message();
        let reply = ErrorReply {
            jsonrpc: "2.0",
            id: id.as_ref(),
            error: ErrorBody { code, message },
        };
        match serde_json::to_vec(&reply) {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                self.pending = Some(PendingReply::Queue(bytes));
            }
            Err(e) => tracing::error!(error = %e, "could not encode an error reply"),
        }
    }

    /// Writes a queued error reply. Returns false when the output is gone.
    async fn deliver_pending(&mut self) -> bool {
        let mut outbox = self.outbox.lock().await;
        if let Some(PendingReply::Queue(bytes)) = self.pending.take() {
            // Appended whole under the lock: from here on, whoever drains
            // the outbox next writes it out, even if this future is dropped.
            outbox.buf.extend_from_slice(&bytes);
            self.pending = Some(PendingReply::Flush);
        }
        let ok = outbox.drain().await.is_ok();
        self.pending = None;
        ok
    }

    fn classify_line(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let adapted = self
            .legacy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .inbound(&self.line);
        let verdict = classify(adapted.as_deref().unwrap_or(&self.line));
        let bytes = self.line.len();
        self.line.clear();
        match verdict {
            Verdict::Message(m) => Some(*m),
            Verdict::Skip => None,
            Verdict::NoReply => {
                tracing::debug!(bytes, "dropped a malformed notification or response");
                None
            }
            Verdict::Reject(rejection, id) => {
                self.reject(rejection, id, bytes);
                None
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for HardenedStdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn name() -> Cow<'static, str> {
        "HardenedStdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outbox = Arc::clone(&self.outbox);
        let item = super::fixed::fix_outgoing(item);
        let amended = {
            let mut legacy = self
                .legacy
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if legacy.is_waiting() {
                serde_json::to_value(&item)
                    .ok()
                    .and_then(|v| legacy.outbound(&v))
            } else {
                None
            }
        };
        async move {
            let mut outbox = outbox.lock().await;
            match amended {
                Some(v) => outbox.push_message(&v)?,
                None => outbox.push_message(&item)?,
            }
            outbox.drain().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.pending.is_some() && !self.deliver_pending().await {
                return None;
            }
            match self.read_line().await {
                LineRead::Line => {
                    if let Some(message) = self.classify_line() {
                        return Some(message);
                    }
                }
                LineRead::Oversized(id) => {
                    self.reject(Rejection::TooLarge, id, self.max_message_bytes);
                }
                LineRead::Eof => {
                    if self.line.is_empty() {
                        self.budget.report_suppressed();
                        return None;
                    }
                    // A last line without a newline: serve it like any other.
                    if let Some(message) = self.classify_line() {
                        return Some(message);
                    }
                }
                LineRead::Io(e) => {
                    tracing::error!(kind = ?e.kind(), "reading the input failed");
                    self.budget.report_suppressed();
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut outbox = self.outbox.lock().await;
        let drained = outbox.drain().await;
        if let Some(mut out) = outbox.out.take() {
            out.shutdown().await?;
        }
        drained
    }
}

enum LineRead {
    Line,
    /// With the id recovered from the bytes before the ceiling, if any.
    Oversized(Option<RequestId>),
    Eof,
    Io(io::Error),
}

enum Step {
    Line,
    More,
    DiscardDone,
    Oversized(Option<RequestId>),
    OversizedDiscardRest(Option<RequestId>),
}

enum PendingReply {
    /// Encoded, not yet in the outbox.
    Queue(Vec<u8>),
    /// In the outbox, not yet known to be written.
    Flush,
}

/// The single writer: a buffer of whole messages and the count of its bytes
/// already written, so a cancelled drain resumes where it stopped.
struct Outbox<W> {
    out: Option<W>,
    buf: Vec<u8>,
    sent: usize,
}

impl<W: AsyncWrite + Unpin> Outbox<W> {
    fn push_message(&mut self, item: &impl serde::Serialize) -> io::Result<()> {
        if self.out.is_none() {
            return Err(closed());
        }
        let start = self.buf.len();
        if let Err(e) = serde_json::to_writer(&mut self.buf, item) {
            self.buf.truncate(start);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        self.buf.push(b'\n');
        Ok(())
    }

    async fn drain(&mut self) -> io::Result<()> {
        let Some(out) = self.out.as_mut() else {
            return Err(closed());
        };
        let result = async {
            while self.sent < self.buf.len() {
                let n = out.write(&self.buf[self.sent..]).await?;
                if n == 0 {
                    return Err(io::Error::from(io::ErrorKind::WriteZero));
                }
                self.sent += n;
            }
            self.buf.clear();
            self.sent = 0;
            out.flush().await
        }
        .await;
        if result.is_err() {
            // A broken output stays broken: stop buffering for it.
            self.out = None;
            self.buf = Vec::new();
            self.sent = 0;
        }
        result
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "transport is closed")
}

/// A token bucket for `id: null` error replies.
#[derive(Debug)]
struct ErrorBudget {
    capacity: f64,
    per_sec: f64,
    tokens: f64,
    last: Instant,
    suppressed: u64,
}

impl ErrorBudget {
    fn new(burst: u32, per_sec: u32) -> Self {
        Self {
            capacity: f64::from(burst),
            per_sec: f64::from(per_sec),
            tokens: f64::from(burst),
            last: Instant::now(),
            suppressed: 0,
        }
    }

    fn try_take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last);
        self.last = now;
        self.tokens = (self.tokens + elapsed.as_secs_f64() * self.per_sec).min(self.capacity);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.report_suppressed();
            true
        } else {
            self.suppressed = self.suppressed.saturating_add(1);
            false
        }
    }

    fn report_suppressed(&mut self) {
        if self.suppressed > 0 {
            tracing::warn!(
                dropped = self.suppressed,
                "error replies to malformed input were dropped by the rate limit"
            );
            self.suppressed = 0;
        }
    }

    #[cfg(test)]
    fn refill_time(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(1.0 / self.per_sec)
    }
}

#[derive(Serialize)]
struct ErrorReply<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RequestId>,
    error: ErrorBody,
}

#[derive(Serialize)]
struct ErrorBody {
    code: i32,
    message: &'static str,
}

/// Why a line is answered with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rejection {
    TooLarge,
    NotJson,
    NotRequest,
}

impl Rejection {
    fn code_and_message(self) -> (i32, &'static str) {
        match self {
            Self::TooLarge => (PARSE_ERROR, MSG_TOO_LARGE),
            Self::NotJson => (PARSE_ERROR, MSG_PARSE),
            Self::NotRequest => (INVALID_REQUEST, MSG_INVALID),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::TooLarge => "too-large",
            Self::NotJson => "not-json",
            Self::NotRequest => "not-a-request",
        }
    }
}

#[derive(Debug)]
enum Verdict {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    Skip,
    NoReply,
    Reject(Rejection, Option<RequestId>),
}

/// Classifies one line (newline excluded).
fn classify(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    // The fast path: a good message parses once, as in rmcp.
    let strict_error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(mut message) => {
            mark_rounded_numbers(&mut message, line);
            return Verdict::Message(Box::new(message));
        }
        Err(e) => e,
    };
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    if std::str::from_utf8(line).is_err() || serde_json::from_slice::<IgnoredAny>(line).is_err() {
        return Verdict::Reject(Rejection::NotJson, None);
    }
    tracing::trace!(category = ?strict_error.classify(), "JSON line is not an accepted message");
    match serde_json::from_slice::<Envelope>(line) {
        Ok(Envelope::Object {
            id,
            looks_like_response,
        }) => {
            if looks_like_response {
                return Verdict::NoReply;
            }
            match id {
                IdSlot::Absent => Verdict::NoReply,
                IdSlot::Valid(id) => Verdict::Reject(Rejection::NotRequest, Some(id)),
                IdSlot::Invalid => Verdict::Reject(Rejection::NotRequest, None),
            }
        }
        Ok(Envelope::NotObject) | Err(_) => Verdict::Reject(Rejection::NotRequest, None),
    }
}

/// Records, on a tool call, where its arguments hold numbers the parse
/// rounded into integers (the route refuses them where an integer is
/// declared).
fn mark_rounded_numbers(message: &mut RxJsonRpcMessage<RoleServer>, line: &[u8]) {
    use rmcp::model::ClientRequest as R;
    let rmcp::model::JsonRpcMessage::Request(r) = message else {
        return;
    };
    let extensions = match &mut r.request {
        R::CallToolRequest(call) => &mut call.extensions,
        // A task-augmented call of the 2025-11-25 era, renamed.
        R::CustomRequest(c) if super::tasks2025::is_private_tools_call(&c.method) => {
            &mut c.extensions
        }
        _ => return,
    };
    if let Some(found) = crate::args::lexeme::scan_call(line) {
        extensions.insert(found);
    }
}

/// The `id` of an oversized line, recovered from the bytes read before
/// the ceiling (`prefix`, at most the ceiling long).
///
/// The first top-level member named `"id"` is located by a scan that
/// tracks strings and nesting only; the prefix up to the end of that
/// member's value, closed with `}`, must then parse as a JSON object under
/// the same rules as a whole line ([`Envelope`]: well-formed, one `id`, an
/// integer in `i64` range or a short string, not a response). So an id is
/// echoed only when everything before it is well-formed JSON and the value
/// itself is complete (a number cut by the ceiling is never guessed at).
fn recover_prefix_id(prefix: &[u8]) -> Option<RequestId> {
    let prefix = prefix.strip_prefix(UTF8_BOM).unwrap_or(prefix);
    let end = first_id_member_end(prefix)?;
    let mut candidate = Vec::with_capacity(end + 1);
    candidate.extend_from_slice(&prefix[..end]);
    candidate.push(b'}');
    match serde_json::from_slice::<Envelope>(&candidate).ok()? {
        Envelope::Object {
            id: IdSlot::Valid(id),
            looks_like_response: false,
        } => Some(id),
        _ => None,
    }
}

/// The offset of the `,` or `}` that ends the value of the first member
/// of the top-level object whose key is written exactly `"id"`; `None`
/// when the prefix is not an object or ends before that.
fn first_id_member_end(b: &[u8]) -> Option<usize> {
    let start = b.iter().position(|c| !c.is_ascii_whitespace())?;
    if b[start] != b'{' {
        return None;
    }
    let mut depth = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    // At depth 1: the next string is a key (after `{` or `,`).
    let mut expect_key = true;
    let mut key_start = 0usize;
    let mut in_id_value = false;
    for (i, &c) in b.iter().enumerate().skip(start + 1) {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
                if depth == 1 && expect_key {
                    expect_key = false;
                    in_id_value = &b[key_start..i] == b"id";
                }
            }
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                key_start = i + 1;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 1 {
                    return in_id_value.then_some(i);
                }
                depth -= 1;
            }
            b',' if depth == 1 => {
                if in_id_value {
                    return Some(i);
                }
                expect_key = true;
            }
            _ => {}
        }
    }
    None
}

/// The members of a JSON line that decide how to answer it.
enum Envelope {
    NotObject,
    Object {
        id: IdSlot,
        looks_like_response: bool,
    },
}

enum IdSlot {
    Absent,
    Valid(RequestId),
    /// Present but not echoable (wrong type, too long, duplicated).
    Invalid,
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut id = IdSlot::Absent;
        let mut looks_like_response = false;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id => {
                    let candidate = map.next_value::<IdCandidate>()?;
                    id = match (id, candidate.0) {
                        (IdSlot::Absent, Some(v)) => IdSlot::Valid(v),
                        _ => IdSlot::Invalid,
                    };
                }
                Key::ResultOrError => {
                    looks_like_response = true;
                    map.next_value::<IgnoredAny>()?;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Envelope::Object {
            id,
            looks_like_response,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Envelope::NotObject)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Envelope, E> {
        Ok(Envelope::NotObject)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Envelope, E> {
        Ok(Envelope::NotObject)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Envelope, E> {
        Ok(Envelope::NotObject)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Envelope, E> {
        Ok(Envelope::NotObject)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Envelope, E> {
        Ok(Envelope::NotObject)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Envelope, E> {
        Ok(Envelope::NotObject)
    }
}

enum Key {
    Id,
    ResultOrError,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "id" => Key::Id,
                    "result" | "error" => Key::ResultOrError,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// An `id` member: `Some` when it can be echoed.
struct IdCandidate(Option<RequestId>);

impl<'de> Deserialize<'de> for IdCandidate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = IdCandidate;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON-RPC id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IdCandidate, E> {
                Ok(IdCandidate(Some(RequestId::Number(v))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IdCandidate, E> {
                Ok(IdCandidate(i64::try_from(v).ok().map(RequestId::Number)))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<IdCandidate, E> {
                Ok(IdCandidate(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<IdCandidate, E> {
                Ok(IdCandidate(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<IdCandidate, E> {
                Ok(IdCandidate(None))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IdCandidate, E> {
                Ok(IdCandidate(
                    (v.len() <= MAX_ECHOED_ID_BYTES).then(|| RequestId::String(Arc::from(v))),
                ))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IdCandidate, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IdCandidate(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IdCandidate, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IdCandidate(None))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::time::Duration;

    fn reject(line: &str) -> (Rejection, Option<RequestId>) {
        match classify(line.as_bytes()) {
            Verdict::Reject(r, id) => (r, id),
            other => panic!("{line:?} gave {other:?}"),
        }
    }

    #[test]
    fn good_messages_pass() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(classify(line), Verdict::Message(_)));
        let mut crlf_bom = UTF8_BOM.to_vec();
        crlf_bom.extend_from_slice(line);
        crlf_bom.extend_from_slice(b"\r");
        assert!(matches!(classify(&crlf_bom), Verdict::Message(_)));
    }

    #[test]
    fn blank_lines_are_skipped() {
        for line in ["", " ", "\t  ", "\r"] {
            assert!(
                matches!(classify(line.as_bytes()), Verdict::Skip),
                "{line:?}"
            );
        }
    }

    #[test]
    fn not_json_is_a_parse_error_without_id() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":NaN}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"#,
            r#"{"jsonrpc":"2.0","id":7} trailing"#,
            "\u{1}\u{2}garbage",
            "Infinity",
        ] {
            assert_eq!(reject(line), (Rejection::NotJson, None), "{line:?}");
        }
        let mut bad_utf8 = br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"s":""#.to_vec();
        bad_utf8.extend_from_slice(b"\xff\xfe\"}}");
        assert!(matches!(
            classify(&bad_utf8),
            Verdict::Reject(Rejection::NotJson, None)
        ));
    }

    #[test]
    fn out_of_range_number_keeps_the_id() {
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"x":1e999}}}"#;
        assert_eq!(
            reject(line),
            (Rejection::NotRequest, Some(RequestId::Number(7)))
        );
        let line = r#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"t","arguments":{"x":-1e999}}}"#;
        assert_eq!(
            reject(line),
            (Rejection::NotRequest, Some(RequestId::String("abc".into())))
        );
    }

    #[test]
    fn json_that_is_not_a_request_gets_invalid_request() {
        for line in ["[1,2,3]", "[]", "42", "\"x\"", "null", "true", "1e999"] {
            assert_eq!(reject(line), (Rejection::NotRequest, None), "{line:?}");
        }
        // Deeper than serde_json's recursion limit: JSON, but never a request.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{}{}}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        assert_eq!(
            reject(&deep),
            (Rejection::NotRequest, Some(RequestId::Number(9)))
        );
    }

    #[test]
    fn only_safe_ids_are_echoed() {
        let long = "x".repeat(MAX_ECHOED_ID_BYTES + 1);
        for id in [
            "1.5".to_owned(),
            "true".to_owned(),
            "[1]".to_owned(),
            "{\"a\":1}".to_owned(),
            "18446744073709551615".to_owned(),
            format!("\"{long}\""),
            "null".to_owned(),
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":1e999}}"#);
            assert_eq!(reject(&line), (Rejection::NotRequest, None), "{line}");
        }
        let dup = r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","params":1e999}"#;
        assert_eq!(reject(dup), (Rejection::NotRequest, None));
        // An id nested below the top level is not the message's id.
        let nested = r#"{"jsonrpc":"2.0","method":"ping","params":{"id":5,"x":1e999},"id":{}}"#;
        assert_eq!(reject(nested), (Rejection::NotRequest, None));
    }

    #[test]
    fn malformed_notifications_and_responses_get_no_reply() {
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":1e999}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"x":1e999}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":"nope"}"#,
        ] {
            assert!(
                matches!(classify(line.as_bytes()), Verdict::NoReply),
                "{line}"
            );
        }
    }

    #[test]
    fn an_oversized_prefix_gives_up_its_id_only_when_complete() {
        let id = |prefix: &str| recover_prefix_id(prefix.as_bytes());
        // The id member ends before the cut.
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            id(r#"  {"id" : "ab-1" , "params":[1,2,"#),
            Some(RequestId::String("ab-1".into()))
        );
        assert_eq!(
            id(r#"{"a":{"id":1},"b":["}",{"c":"\"id\""}],"id":-3,"#),
            Some(RequestId::Number(-3))
        );
        // Cut inside the id's value, or before it, or no object at all.
        for cut in [
            r#"{"jsonrpc":"2.0","id":12"#,
            r#"{"jsonrpc":"2.0","id":"ab"#,
            r#"{"method":"x","params":{"id":1,"#,
            r#"[{"id":1},"#,
            r#"{"a":{"id":4"#,
        ] {
            assert_eq!(id(cut), None, "{cut}");
        }
        // What precedes the id must be well-formed JSON.
        assert_eq!(id(r#"{"a":NaN,"id":5,"#), None);
        assert_eq!(id(r#"{"a" 1,"id":5,"#), None);
        // The same id rules as for a whole line: no floats, no long
        // strings, not a response, one id only.
        assert_eq!(id(r#"{"id":1.5,"#), None);
        assert_eq!(
            id(&format!(
                r#"{{"id":"{}","#,
                "x".repeat(MAX_ECHOED_ID_BYTES + 1)
            )),
            None
        );
        assert_eq!(id(r#"{"result":1,"id":5,"#), None);
        // An escaped key is not scanned for (no echo rather than a guess).
        assert_eq!(id(r#"{"\u0069d":5,"#), None);
    }

    #[test]
    fn bucket_allows_burst_then_refills() {
        let mut b = ErrorBudget::new(3, 10);
        let t0 = Instant::now();
        assert!(b.try_take(t0));
        assert!(b.try_take(t0));
        assert!(b.try_take(t0));
        assert!(!b.try_take(t0));
        assert!(!b.try_take(t0));
        assert_eq!(b.suppressed, 2);
        let t1 = t0 + b.refill_time();
        assert!(b.try_take(t1));
        assert_eq!(b.suppressed, 0);
        assert!(!b.try_take(t1));
        // Never more than the burst, however long the pause.
        let t2 = t1 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(b.try_take(t2));
        }
        assert!(!b.try_take(t2));
    }

    #[test]
    fn zero_burst_drops_everything() {
        let mut b = ErrorBudget::new(0, 10);
        let t = Instant::now() + Duration::from_secs(10);
        assert!(!b.try_take(t));
    }
}
