//! Response bodies leaving the HTTP transport: every JSON-RPC error gets
//! the fixed text of its code ([`fix_error_json`], the rule stdio applies),
//! whether it travels in a JSON body or as an event of a stream, and every
//! error status of rmcp's gets a fixed body. The answer to a 2025-11-25
//! session's `initialize` or `tools/list` gains that era's task
//! declarations on the way ([`Legacy::outbound`]).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use futures::Stream;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody};

use super::{HttpBody, SESSION_NOT_FOUND_BODY};
use crate::transport::fixed::fix_error_json;
use crate::transport::tasks2025::Legacy;

/// Largest error body of rmcp's that is inspected.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Largest successful JSON body that is inspected; a larger one (rmcp never
/// makes one: results are bounded long before) is refused as a server error.
pub(super) const MAX_JSON_BODY: usize = 64 * 1024 * 1024;

/// Longest line of an event stream; a stream with a longer line is ended
/// (logged), since the line could not be checked.
pub(super) const MAX_EVENT_LINE: usize = 64 * 1024 * 1024;

/// The response with fixed error texts:
///
/// - an error status (4xx, 5xx) of rmcp's: a plain-text body becomes the
///   fixed text of its status; a JSON-RPC error keeps its id and code and
///   gets the fixed message of its code, without `data`;
/// - a JSON body: a JSON-RPC error in it is fixed the same way;
/// - an event stream: each `data:` line holding a JSON-RPC error is fixed
///   as it passes; other lines pass unchanged and unbuffered past their end.
///
/// With `amend`, the answer it waits for (in a JSON body or an event) is
/// amended by it.
pub(super) async fn fix_response(
    response: Response<HttpBody>,
    mut amend: Option<Legacy>,
) -> Response<HttpBody> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let is_stream = content_type.starts_with("text/event-stream");
    let is_json = content_type.starts_with("application/json");
    if is_stream {
        let (parts, body) = response.into_parts();
        let fixed = FixEvents::new(body.into_data_stream(), amend);
        return Response::from_parts(parts, StreamBody::new(fixed).boxed());
    }
    if status.is_client_error() || status.is_server_error() {
        return fix_error_status(response, is_json).await;
    }
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = http_body_util::Limited::new(body, MAX_JSON_BODY)
        .collect()
        .await
    else {
        tracing::error!("a JSON response body could not be read or is above the inspection limit");
        return fixed_text(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let bytes = collected.to_bytes();
    let changed = fix_error_json(&bytes).or_else(|| amended(amend.as_mut(), &bytes));
    match changed {
        Some(fixed) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Full::new(Bytes::from(fixed)).boxed())
        }
        None => Response::from_parts(parts, Full::new(bytes).boxed()),
    }
}

/// `message` amended by `legacy`, when it is the answer `legacy` waits for.
fn amended(legacy: Option<&mut Legacy>, message: &[u8]) -> Option<Vec<u8>> {
    let legacy = legacy.filter(|l| l.is_waiting())?;
    // Only answers (with a `result`) are amended: anything else stays unparsed.
    memchr::memmem::find(message, b"\"result\"")?;
    let value: serde_json::Value = serde_json::from_slice(message).ok()?;
    serde_json::to_vec(&legacy.outbound(&value)?).ok()
}

/// Several of rmcp's error bodies carry text that is not server-authored: a
/// serde message quoting the caller's JSON (`415`), a header value (`400`),
/// an internal error (`500`).
async fn fix_error_status(response: Response<HttpBody>, is_json: bool) -> Response<HttpBody> {
    let status = response.status();
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    if is_json {
        let collected = http_body_util::Limited::new(body, MAX_ERROR_BODY)
            .collect()
            .await
            .ok()
            .map(|c| c.to_bytes());
        if let Some(fixed_json) = collected.as_deref().and_then(fix_error_json) {
            return Response::from_parts(parts, Full::new(Bytes::from(fixed_json)).boxed());
        }
    }
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    let text = fixed_status_text(status);
    Response::from_parts(
        parts,
        Full::new(Bytes::from_static(text.as_bytes())).boxed(),
    )
}

fn fixed_text(status: StatusCode) -> Response<HttpBody> {
    super::fixed(status, fixed_status_text(status))
}

/// The fixed body of an error status produced by rmcp.
pub(super) fn fixed_status_text(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "Bad Request",
        StatusCode::FORBIDDEN => "Forbidden: Host or Origin header is not allowed",
        StatusCode::NOT_FOUND => SESSION_NOT_FOUND_BODY,
        StatusCode::METHOD_NOT_ALLOWED => "Method Not Allowed",
        StatusCode::NOT_ACCEPTABLE => {
            "Not Acceptable: Client must accept both application/json and text/event-stream"
        }
        StatusCode::PAYLOAD_TOO_LARGE => "Payload Too Large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            "Unsupported Media Type: the body must be one JSON-RPC message in application/json"
        }
        s if s.is_server_error() => "Internal Server Error",
        _ => "Request refused",
    }
}

/// A body that holds `guard` until it is dropped (an open stream's place
/// in a per-caller count).
pub(super) struct Holding<G> {
    body: HttpBody,
    _guard: G,
}

impl<G> Holding<G> {
    pub(super) fn new(body: HttpBody, guard: G) -> Self {
        Self {
            body,
            _guard: guard,
        }
    }
}

impl<G: Unpin> hyper::body::Body for Holding<G> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

type DataStream = http_body_util::BodyDataStream<HttpBody>;

/// An event stream with each JSON-RPC error in a `data:` line fixed.
///
/// Bytes are cut into lines; a complete line is checked and passed on at
/// once, so events flow with no delay beyond their own end. A line longer
/// than [`MAX_EVENT_LINE`] ends the stream.
pub(super) struct FixEvents {
    inner: DataStream,
    /// The bytes of a line not yet complete.
    partial: Vec<u8>,
    done: bool,
    /// The adapter whose awaited answer may be among the events.
    amend: Option<Legacy>,
}

impl FixEvents {
    fn new(inner: DataStream, amend: Option<Legacy>) -> Self {
        Self {
            inner,
            partial: Vec::new(),
            done: false,
            amend,
        }
    }

    /// Appends `chunk`; returns the complete lines (fixed) ready to send.
    fn feed(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(chunk.len());
        let mut rest = chunk;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            let (line, tail) = rest.split_at(nl + 1);
            rest = tail;
            if self.partial.is_empty() {
                push_fixed_line(&mut out, line, self.amend.as_mut());
            } else {
                self.partial.extend_from_slice(line);
                let whole = std::mem::take(&mut self.partial);
                push_fixed_line(&mut out, &whole, self.amend.as_mut());
            }
        }
        self.partial.extend_from_slice(rest);
        out
    }
}

/// `line` (its newline included) onto `out`, fixed when it is a `data:`
/// line holding a JSON-RPC error, amended when it holds the answer
/// `amend` waits for.
fn push_fixed_line(out: &mut Vec<u8>, line: &[u8], amend: Option<&mut Legacy>) {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    if let Some(data) = body.strip_prefix(b"data:") {
        let payload = data.strip_prefix(b" ").unwrap_or(data);
        if let Some(fixed) = fix_error_json(payload).or_else(|| amended(amend, payload)) {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(&fixed);
            out.push(b'\n');
            return;
        }
    }
    out.extend_from_slice(line);
}

impl Stream for FixEvents {
    type Item = Result<hyper::body::Frame<Bytes>, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => {
                    let out = this.feed(&chunk);
                    if this.partial.len() > MAX_EVENT_LINE {
                        tracing::error!(
                            "an event-stream line exceeded the inspection limit: stream ended"
                        );
                        this.done = true;
                        this.partial = Vec::new();
                    }
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(out)))));
                    }
                }
                Poll::Ready(Some(Err(never))) => match never {},
                Poll::Ready(None) => {
                    this.done = true;
                    if this.partial.is_empty() {
                        return Poll::Ready(None);
                    }
                    let last = std::mem::take(&mut this.partial);
                    let mut out = Vec::with_capacity(last.len());
                    push_fixed_line(&mut out, &last, this.amend.as_mut());
                    return Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(out)))));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn events(chunks: &[&[u8]]) -> String {
        let stream = futures::stream::iter(
            chunks
                .iter()
                .map(|c| {
                    Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(
                        Bytes::copy_from_slice(c),
                    ))
                })
                .collect::<Vec<_>>(),
        );
        let body: HttpBody = StreamBody::new(stream).boxed();
        let fixed = FixEvents::new(body.into_data_stream(), None);
        let frames = futures::executor::block_on(futures::StreamExt::collect::<Vec<_>>(fixed));
        let mut out = Vec::new();
        for f in frames {
            out.extend_from_slice(f.unwrap().data_ref().unwrap());
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn errors_in_events_are_fixed_wherever_chunks_split_them() {
        let error = br#"data: {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"CANARY","data":"CANARY"}}"#;
        let result =
            br#"data: {"jsonrpc":"2.0","id":4,"result":{"text":"error: CANARY is data here"}}"#;
        let mut stream = Vec::new();
        stream.extend_from_slice(b"id: 0\nretry: 3000\ndata:\n\n");
        stream.extend_from_slice(error);
        stream.extend_from_slice(b"\nid: 1\n\n:\n\n");
        stream.extend_from_slice(result);
        stream.extend_from_slice(b"\nid: 2\n\n");
        for split in [1, 7, 40, 90, stream.len() - 1] {
            let (a, b) = stream.split_at(split);
            let out = events(&[a, b]);
            assert_eq!(out.matches("CANARY").count(), 1, "split {split}: {out}");
            let fixed = out
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
                .find(|v| v.get("error").is_some())
                .unwrap();
            assert_eq!(
                fixed,
                serde_json::json!({"jsonrpc": "2.0", "id": 3,
                    "error": {"code": -32602, "message": "Invalid params"}})
            );
            assert!(out.contains(std::str::from_utf8(result).unwrap()), "{out}");
            assert!(out.starts_with("id: 0\nretry: 3000\ndata:\n\n"), "{out}");
            assert!(out.ends_with("\nid: 2\n\n"), "{out}");
        }
        // A last line without its newline is checked too.
        let out = events(&[error]);
        assert!(!out.contains("CANARY"), "{out}");
    }
}
