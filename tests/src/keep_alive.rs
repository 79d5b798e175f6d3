//! One keep-alive HTTP/1.1 connection to an MCP endpoint at `/mcp`, for
//! latency tests and load benchmarks: each request is written whole, and
//! each answer (a JSON body or an event stream; sized or chunked) is read
//! to its very end, so that the connection can carry the next request.
//! Loopback only, every read bounded by [`REPLY_TIMEOUT`].

use std::net::SocketAddr;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

use crate::tr_support::{HttpReply, REPLY_TIMEOUT};

/// The headers a 2025-11-25 session sends besides its session id.
const ACCEPT: &str = "Accept: application/json, text/event-stream\r\n";

/// One open connection and the headers every request on it carries.
pub struct KeepAlive {
    stream: BufReader<TcpStream>,
    /// `Host`, `Accept`, `Content-Type` and maybe `Authorization`, each
    /// with its CRLF.
    fixed: String,
    /// The session id sent with every request, once there is one.
    pub session: Option<String>,
}

impl KeepAlive {
    /// Connects to `addr` (loopback), with `token` as the bearer token of
    /// every request.
    pub async fn connect(addr: SocketAddr, token: Option<&str>) -> std::io::Result<Self> {
        assert!(addr.ip().is_loopback(), "tests talk to loopback only");
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut fixed = format!(
            "Host: 127.0.0.1:{}\r\n{ACCEPT}Content-Type: application/json\r\n",
            addr.port()
        );
        if let Some(token) = token {
            fixed.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        Ok(Self {
            stream: BufReader::new(stream),
            fixed,
            session: None,
        })
    }

    /// POSTs `body` with `extra` headers and reads the whole answer; the
    /// body of the reply is everything the server sent (every event of a
    /// stream).
    pub async fn post(
        &mut self,
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<HttpReply> {
        tokio::time::timeout(REPLY_TIMEOUT, self.post_inner(extra, body))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
    }

    async fn post_inner(
        &mut self,
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<HttpReply> {
        let mut request = format!("POST /mcp HTTP/1.1\r\n{}", self.fixed);
        if let Some(session) = &self.session {
            request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        for (k, v) in extra {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        self.stream.get_mut().write_all(&bytes).await?;
        self.read_reply().await
    }

    async fn read_reply(&mut self) -> std::io::Result<HttpReply> {
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
        let mut line = String::new();
        if self.stream.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("status line"))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            if self.stream.read_line(&mut line).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let text = line.trim_end();
            if text.is_empty() {
                break;
            }
            if let Some((k, v)) = text.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _): &&(String, String)| k == name)
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        if let Some(len) = find("content-length") {
            let len: usize = len.parse().map_err(|_| bad("content-length"))?;
            body.resize(len, 0);
            self.stream.read_exact(&mut body).await?;
        } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            loop {
                line.clear();
                self.stream.read_line(&mut line).await?;
                let size = line.trim().split(';').next().unwrap_or("");
                let size = usize::from_str_radix(size, 16).map_err(|_| bad("chunk size"))?;
                if size == 0 {
                    // No trailers are sent: the blank line ends the answer.
                    line.clear();
                    self.stream.read_line(&mut line).await?;
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.stream.read_exact(&mut body[start..]).await?;
                let mut crlf = [0u8; 2];
                self.stream.read_exact(&mut crlf).await?;
            }
        }
        if let Some(session) = find("mcp-session-id") {
            self.session = Some(session);
        }
        Ok(HttpReply {
            status,
            headers,
            body,
        })
    }
}
