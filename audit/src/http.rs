//! The streamable HTTP target: each message is one `POST` to the endpoint;
//! the answer comes back as a JSON body or as a `text/event-stream` whose
//! events are read until the response with the request's id. Every wait is
//! bounded; redirects are never followed (a bearer token goes to the URL
//! given and nowhere else).

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use tokio::time::{Instant, timeout_at};

use crate::client::{Awaited, ClientError, Overlap};

/// Most bytes read from one HTTP answer; a longer one is cut there.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// The session header of the streamable HTTP transport.
const SESSION: &str = "mcp-session-id";

/// The protocol version header sent after the handshake.
const PROTOCOL: &str = "mcp-protocol-version";

/// An MCP server behind a streamable HTTP endpoint.
pub struct HttpClient {
    http: reqwest::Client,
    url: reqwest::Url,
    bearer: Option<HeaderValue>,
    session: Option<HeaderValue>,
    protocol: Option<HeaderValue>,
    /// The deadline of each exchange.
    pub timeout: Duration,
}

impl HttpClient {
    /// A client of the endpoint `url` (`http` or `https`).
    pub fn new(url: &str, bearer: Option<String>, timeout: Duration) -> Result<Self, ClientError> {
        let url = reqwest::Url::parse(url).map_err(|_| ClientError::Target("not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError::Target("the URL must be http:// or https://"));
        }
        let bearer = bearer
            .map(|t| {
                let mut v = HeaderValue::from_str(&format!("Bearer {}", t.trim()))
                    .map_err(|_| ClientError::Target("the bearer token is not a header value"))?;
                v.set_sensitive(true);
                Ok::<_, ClientError>(v)
            })
            .transpose()?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .build()
            .map_err(|_| ClientError::Target("no HTTP client could be built"))?;
        Ok(Self {
            http,
            url,
            bearer,
            session: None,
            protocol: None,
            timeout,
        })
    }

    /// Sends `MCP-Protocol-Version: version` from now on.
    pub fn set_protocol_version(&mut self, version: &str) -> Result<(), ClientError> {
        self.protocol = Some(HeaderValue::from_str(version).map_err(|_| ClientError::Handshake)?);
        Ok(())
    }

    /// Posts `body` and reads the response whose id is `id` (or `null`).
    ///
    /// An HTTP refusal without a JSON-RPC body (a `400` in plain text, a
    /// `413`, a `429`) is returned as a JSON-RPC error whose message is the
    /// body's text, so that the audit reads every refusal the same way and
    /// still sees a reflected canary.
    pub async fn exchange(&mut self, body: &[u8], id: &Value) -> Result<Value, ClientError> {
        let deadline = Instant::now() + self.timeout;
        let (answer, session) = self.answer(body, id, deadline).await?;
        if self.session.is_none() {
            self.session = session;
        }
        Ok(answer)
    }

    /// Posts `bodies[0]`, then `bodies[1]` `gap` later, each on its own
    /// connection, and reads both answers until the deadline; each with
    /// when it came, from the first's sending.
    pub async fn overlapped(
        &self,
        bodies: [&[u8]; 2],
        ids: [&Value; 2],
        gap: Duration,
        awaited: Awaited,
    ) -> Overlap {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let timed = |answer: Result<(Value, _), ClientError>| {
            answer.map(|(reply, _)| (reply, start.elapsed()))
        };
        let first = async { timed(self.answer(bodies[0], ids[0], deadline).await) };
        let second = async {
            tokio::time::sleep(gap).await;
            let sent = start.elapsed();
            (sent, timed(self.answer(bodies[1], ids[1], deadline).await))
        };
        let (first, (second_sent, second)) = match awaited {
            Awaited::Both => tokio::join!(first, second),
            Awaited::Second => {
                let (mut first, mut second) = (std::pin::pin!(first), std::pin::pin!(second));
                let mut answered = None;
                let decided = loop {
                    tokio::select! {
                        f = &mut first, if answered.is_none() => answered = Some(f),
                        s = &mut second => break s,
                    }
                };
                (answered.unwrap_or(Err(ClientError::NotAwaited)), decided)
            }
        };
        Overlap {
            first,
            second,
            second_sent,
        }
    }

    /// The answer to `body`, with the session id the server gave, if any.
    async fn answer(
        &self,
        body: &[u8],
        id: &Value,
        deadline: Instant,
    ) -> Result<(Value, Option<HeaderValue>), ClientError> {
        let response = self.post(body, deadline).await?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(ClientError::Unauthorized);
        }
        let session = response.headers().get(SESSION).cloned();
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if sse {
            return Ok((read_events(response, id, deadline).await?, session));
        }
        let bytes = read_body(response, deadline).await?;
        let answer = match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) if v.get("result").is_some() || v.get("error").is_some() => v,
            _ => json!({"jsonrpc": "2.0", "id": Value::Null, "error": {
                "code": i64::from(status.as_u16()),
                "message": String::from_utf8_lossy(&bytes)}}),
        };
        Ok((answer, session))
    }

    /// Posts a notification; any status is accepted (the audit does not
    /// judge notifications).
    pub async fn notify(&mut self, body: &[u8]) -> Result<(), ClientError> {
        let deadline = Instant::now() + self.timeout;
        let response = self.post(body, deadline).await?;
        read_body(response, deadline).await.map(drop)
    }

    async fn post(&self, body: &[u8], deadline: Instant) -> Result<reqwest::Response, ClientError> {
        let mut request = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(body.to_vec());
        if let Some(b) = &self.bearer {
            request = request.header(AUTHORIZATION, b.clone());
        }
        if let Some(s) = &self.session {
            request = request.header(SESSION, s.clone());
        }
        if let Some(p) = &self.protocol {
            request = request.header(PROTOCOL, p.clone());
        }
        match timeout_at(deadline, request.send()).await {
            Err(_) => Err(ClientError::Timeout),
            Ok(Err(e)) if e.is_timeout() => Err(ClientError::Timeout),
            Ok(Err(_)) => Err(ClientError::Closed),
            Ok(Ok(r)) => Ok(r),
        }
    }
}

/// The body, up to [`MAX_BODY`] bytes, by the deadline.
async fn read_body(
    mut response: reqwest::Response,
    deadline: Instant,
) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    loop {
        match timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(ClientError::Timeout),
            Ok(Err(_)) => return Err(ClientError::Closed),
            Ok(Ok(None)) => return Ok(out),
            Ok(Ok(Some(chunk))) => {
                let room = MAX_BODY.saturating_sub(out.len());
                out.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if out.len() >= MAX_BODY {
                    return Ok(out);
                }
            }
        }
    }
}

/// Reads server-sent events until one carries the response to `id` (or a
/// response with a `null` id); other events (notifications, the server's
/// own requests, priming events) are skipped.
async fn read_events(
    mut response: reqwest::Response,
    id: &Value,
    deadline: Instant,
) -> Result<Value, ClientError> {
    let mut buf: Vec<u8> = Vec::new();
    let mut seen = 0usize;
    loop {
        // Whole events so far: each ends with a blank line.
        while let Some(end) = event_end(&buf) {
            let event: Vec<u8> = buf.drain(..end).collect();
            if let Some(message) = event_data(&event)
                && (message.get("result").is_some() || message.get("error").is_some())
            {
                let got = message.get("id").cloned().unwrap_or(Value::Null);
                if &got == id || got.is_null() {
                    return Ok(message);
                }
            }
        }
        let chunk = match timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(ClientError::Timeout),
            Ok(Err(_) | Ok(None)) => return Err(ClientError::Closed),
            Ok(Ok(Some(chunk))) => chunk,
        };
        seen += chunk.len();
        if seen > MAX_BODY {
            return Err(ClientError::Closed);
        }
        buf.extend_from_slice(&chunk);
    }
}

/// The end (exclusive, separator included) of the first complete event.
fn event_end(buf: &[u8]) -> Option<usize> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The JSON message in an event's `data:` lines, if any.
fn event_data(event: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(event).ok()?;
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    if data.is_empty() {
        return None;
    }
    serde_json::from_str(&data.join("\n")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_on_blank_lines_and_join_their_data_lines() {
        let buf =
            b"id: 1\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":3,\"result\":{}}\n\nevent: x\n";
        let end = event_end(buf).unwrap();
        let v = event_data(&buf[..end]).unwrap();
        assert_eq!(v["id"], 3);
        assert_eq!(event_end(&buf[end..]), None);
        assert_eq!(event_data(b"id: 7\nretry: 100\n\n"), None);
        assert_eq!(event_end(b"data: 1\r\n\r\n"), Some(11));
    }

    #[test]
    fn only_http_urls_and_header_safe_tokens_are_taken() {
        let t = Duration::from_secs(1);
        assert!(HttpClient::new("file:///etc/passwd", None, t).is_err());
        assert!(HttpClient::new("not a url", None, t).is_err());
        assert!(HttpClient::new("http://127.0.0.1:1/mcp", Some("a\nb".into()), t).is_err());
        assert!(HttpClient::new("https://example.org/mcp", Some("tok\n".into()), t).is_ok());
    }
}
