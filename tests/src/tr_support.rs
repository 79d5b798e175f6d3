//! Transport test support: a plain rmcp server (rmcp's own `#[tool_router]`,
//! independent of the framework's macros) and a raw line-level JSON-RPC
//! client for driving a stdio transport byte by byte.

use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use hardened_mcp::ToolContext;

/// Arguments of the `echo` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Text returned unchanged.
    pub text: String,
}

/// A trivial server: `echo`, `whoami` (the caller the transport
/// established), `request_headers` (the HTTP request headers a tool can
/// see) and `fail` (a JSON-RPC error quoting its argument).
#[derive(Debug, Clone)]
pub struct EchoServer {
    tool_router: ToolRouter<Self>,
}

impl Default for EchoServer {
    fn default() -> Self {
        Self::new()
    }
}

impl EchoServer {
    /// A new server.
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl EchoServer {
    /// Returns `text`.
    #[tool(description = "Echo the text")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    /// Returns the caller of this request.
    #[tool(description = "Who is calling")]
    fn whoami(&self, rc: RequestContext<RoleServer>) -> String {
        ToolContext::from_request(&rc).caller().to_string()
    }

    /// Fails with a JSON-RPC error built from the caller's text, as a
    /// careless handler would: the transports must not let it through.
    #[tool(description = "Fail, quoting the text")]
    fn fail(
        &self,
        Parameters(EchoArgs { text }): Parameters<EchoArgs>,
    ) -> Result<String, rmcp::ErrorData> {
        Err(rmcp::ErrorData::invalid_params(
            format!("bad text: {text}"),
            Some(json!({ "echo": text })),
        ))
    }

    /// Returns every HTTP request header (name: value) the tool can see.
    #[tool(description = "Request headers visible to tools")]
    fn request_headers(&self, rc: RequestContext<RoleServer>) -> String {
        rc.extensions
            .get::<http::request::Parts>()
            .map(|p| {
                p.headers
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Serves [`EchoServer`] over HTTP on an ephemeral loopback port with
/// `config` (SSE keep-alive off unless `config` sets it).
#[allow(clippy::unwrap_used)]
pub async fn start_echo_http(
    configure: impl FnOnce(hardened_mcp::transport::HttpConfig) -> hardened_mcp::transport::HttpConfig,
) -> hardened_mcp::transport::RunningHttpServer {
    use hardened_mcp::transport::{HttpConfig, HttpServer};
    let config = configure(HttpConfig::new().sse_keep_alive(None));
    HttpServer::new(|| Ok(EchoServer::new()), config)
        .unwrap()
        .start(tokio_util::sync::CancellationToken::new())
        .await
        .unwrap()
}

/// The 2026-07-28 protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";

/// A 2026-07-28 request: no handshake, the version and the client's
/// identity in `params._meta` (send with [`modern_headers`]).
pub fn modern_request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2026-07-28 `tools/call`.
pub fn modern_call(id: i64, tool: &str, arguments: Value) -> Value {
    modern_request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The headers a 2026-07-28 request carries over HTTP (SEP-2243).
pub fn modern_headers(
    method: &'static str,
    name: Option<&'static str>,
) -> Vec<(&'static str, &'static str)> {
    let mut h = vec![
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        h.push(("Mcp-Name", name));
    }
    h
}

/// How long a test waits for one reply before declaring a hang.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// The `initialize` request of the tests (a pre-2026 protocol version).
pub fn initialize_request(id: i64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "tr-test", "version": "0"}
        }
    })
}

/// The `notifications/initialized` notification.
pub fn initialized_notification() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// A `tools/call` request.
pub fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    })
}

/// The text of the first content item of a `tools/call` response.
pub fn result_text(response: &Value) -> Option<&str> {
    response
        .get("result")?
        .get("content")?
        .get(0)?
        .get("text")?
        .as_str()
}

/// A raw newline-delimited JSON-RPC client.
#[derive(Debug)]
pub struct LineClient<R, W> {
    reader: BufReader<R>,
    writer: W,
}

/// An error of the raw client; test code unwraps it.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// No line within [`REPLY_TIMEOUT`].
    #[error("no reply within the timeout")]
    Timeout,
    /// The server closed its output.
    #[error("the server closed its output")]
    Eof,
    /// I/O failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// A reply line is not JSON.
    #[error("reply is not JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineClient<R, W> {
    /// Wraps the client's ends of the pipes.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader: BufReader::new(reader),
            writer,
        }
    }

    /// Splits the client into its buffered reader and its writer.
    pub fn into_parts(self) -> (BufReader<R>, W) {
        (self.reader, self.writer)
    }

    /// Reassembles a client split by [`LineClient::into_parts`].
    pub fn from_parts(reader: BufReader<R>, writer: W) -> Self {
        Self { reader, writer }
    }

    /// The write half, for sending raw bytes.
    pub fn writer(&mut self) -> &mut W {
        &mut self.writer
    }

    /// Sends raw bytes followed by a newline.
    pub async fn send_raw(&mut self, line: &[u8]) -> Result<(), LineError> {
        self.writer.write_all(line).await?;
        self.writer.write_all(b"\n").await?;
        self.writer.flush().await?;
        Ok(())
    }

    /// Sends one JSON message.
    pub async fn send(&mut self, message: &Value) -> Result<(), LineError> {
        self.send_raw(&serde_json::to_vec(message)?).await
    }

    /// Reads the next line as JSON, waiting at most [`REPLY_TIMEOUT`].
    pub async fn recv(&mut self) -> Result<Value, LineError> {
        self.recv_within(REPLY_TIMEOUT).await
    }

    /// Reads the next line as JSON, waiting at most `limit`.
    pub async fn recv_within(&mut self, limit: Duration) -> Result<Value, LineError> {
        let mut line = String::new();
        let n = tokio::time::timeout(limit, self.reader.read_line(&mut line))
            .await
            .map_err(|_| LineError::Timeout)??;
        if n == 0 {
            return Err(LineError::Eof);
        }
        Ok(serde_json::from_str(&line)?)
    }

    /// Reads lines until the response with `id` arrives; returns it and the
    /// lines skipped on the way.
    pub async fn recv_response(&mut self, id: i64) -> Result<(Value, Vec<Value>), LineError> {
        let mut skipped = Vec::new();
        loop {
            let message = self.recv().await?;
            if message.get("id") == Some(&json!(id)) {
                return Ok((message, skipped));
            }
            skipped.push(message);
        }
    }

    /// Runs the MCP handshake.
    pub async fn handshake(&mut self) -> Result<Value, LineError> {
        self.send(&initialize_request(0)).await?;
        let (response, _) = self.recv_response(0).await?;
        self.send(&initialized_notification()).await?;
        Ok(response)
    }
}

/// A response read by [`http_request`].
#[derive(Debug, Clone)]
pub struct HttpReply {
    /// Status code.
    pub status: u16,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// Body bytes (for an SSE body: up to the first JSON-RPC response).
    pub body: Vec<u8>,
}

impl HttpReply {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC response in the body (plain JSON or the first SSE event
    /// carrying a `result` or an `error`).
    pub fn rpc(&self) -> Option<Value> {
        if let Ok(v) = serde_json::from_slice::<Value>(&self.body) {
            return Some(v);
        }
        sse_events(&self.body)
            .into_iter()
            .filter_map(|data| serde_json::from_str::<Value>(&data).ok())
            .find(|v| v.get("result").is_some() || v.get("error").is_some())
    }

    /// Everything a client receives, for leak searches.
    pub fn everything(&self) -> String {
        let mut all = format!("{}\n", self.status);
        for (k, v) in &self.headers {
            all.push_str(&format!("{k}: {v}\n"));
        }
        all.push_str(&self.text());
        all
    }
}

/// The `data` of each complete SSE event in `body`.
fn sse_events(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    text.split("\n\n")
        .map(|event| {
            event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|d| !d.is_empty())
        .collect()
}

/// Sends one HTTP/1.1 request on a fresh loopback connection
/// (`Connection: close`) and reads the reply, bounded by [`REPLY_TIMEOUT`].
/// `headers` are sent as given (include `Host`); `Content-Length` is added.
pub async fn http_request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpReply> {
    tokio::time::timeout(
        REPLY_TIMEOUT,
        http_request_inner(addr, method, path, headers, body),
    )
    .await
    .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
}

async fn http_request_inner(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpReply> {
    use tokio::io::AsyncReadExt;
    assert!(addr.ip().is_loopback(), "tests talk to loopback only");
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).await?;
    // The server may answer (401, 413) before reading the whole body.
    let _ = stream.write_all(body).await;
    let _ = stream.flush().await;

    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).await?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("bad status line"))?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v): &(String, String)| v.clone())
    };
    let is_sse = find("content-type").is_some_and(|v| v.starts_with("text/event-stream"));
    let mut body = Vec::new();
    if let Some(len) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body).await?;
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).await? == 0 {
                break;
            }
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| std::io::Error::other("bad chunk size"))?;
            if size == 0 {
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).await?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf).await?;
            if is_sse {
                let reply = HttpReply {
                    status,
                    headers: headers.clone(),
                    body: body.clone(),
                };
                if reply.rpc().is_some() {
                    break;
                }
            }
        }
    } else {
        reader.read_to_end(&mut body).await?;
    }
    Ok(HttpReply {
        status,
        headers,
        body,
    })
}

/// One HTTP client of an MCP endpoint at `/mcp`: a Host header, maybe a
/// bearer token, maybe a session; it keeps every reply it received.
pub struct HttpClient {
    /// Server address.
    pub addr: std::net::SocketAddr,
    /// Value of the Host header.
    pub host: String,
    /// Bearer token.
    pub token: Option<String>,
    /// Mcp-Session-Id.
    pub session: Option<String>,
    /// Every reply so far.
    pub seen: Vec<HttpReply>,
}

// A test client: an I/O failure is a test failure, so it panics.
#[allow(clippy::unwrap_used)]
impl HttpClient {
    /// A client of the server at `addr` (Host `127.0.0.1:port`).
    pub fn new(addr: std::net::SocketAddr, token: Option<&str>) -> Self {
        Self {
            addr,
            host: format!("127.0.0.1:{}", addr.port()),
            token: token.map(str::to_owned),
            session: None,
            seen: Vec::new(),
        }
    }

    /// Sends one request with the client's headers plus `extra`.
    pub async fn request(
        &mut self,
        method: &str,
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> HttpReply {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> = vec![
            ("Host", &self.host),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(auth) = &auth {
            headers.push(("Authorization", auth));
        }
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id", session));
        }
        headers.extend_from_slice(extra);
        let reply = http_request(self.addr, method, "/mcp", &headers, body)
            .await
            .unwrap();
        self.seen.push(reply.clone());
        reply
    }

    /// POSTs one JSON-RPC message.
    pub async fn post(&mut self, message: &Value) -> HttpReply {
        let body = serde_json::to_vec(message).unwrap();
        self.request("POST", &[], &body).await
    }

    /// Initializes a session; returns the initialize reply.
    pub async fn connect(&mut self) -> HttpReply {
        let reply = self.post(&initialize_request(1)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        self.session = reply.header("mcp-session-id").map(str::to_owned);
        assert!(self.session.is_some(), "no session id");
        let ack = self.post(&initialized_notification()).await;
        assert_eq!(ack.status, 202, "{}", ack.text());
        reply
    }

    /// Calls the `whoami` tool.
    pub async fn whoami(&mut self) -> HttpReply {
        self.post(&call(2, "whoami", json!({}))).await
    }
}
