//! The request's authority and origin, checked before anything else reads
//! them (DNS rebinding, request smuggling through a second `Host`, a
//! browser page of another site).
//!
//! - exactly one `Host` header; an absolute-form target's authority must be
//!   the same as the `Host` header's (`400` otherwise);
//! - the authority must be one of the allowed hosts (`403`): the configured
//!   list ([`HttpConfig::allowed_hosts`](super::HttpConfig::allowed_hosts)),
//!   or the loopback names;
//! - a request carrying `Origin` must come from the server's own origin
//!   (an `http` or `https` origin naming the request's allowed authority:
//!   a page the server itself, or the proxy in front of it, served) or
//!   from one the operator allows
//!   ([`HttpConfig::allowed_origins`](super::HttpConfig::allowed_origins);
//!   none by default), as the MCP transport rules require (`403`): a page
//!   of another site, the DNS-rebinding attack, names its own origin.
//!   Clients that are not browsers send no `Origin` and pass.
//!
//! The log lines say which rule refused a request, with the length of what
//! was refused; never the caller's text.

use http::{HeaderMap, Request, StatusCode, header};

/// The loopback names allowed when no host list is configured.
pub(super) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The allowed hosts and origins of one endpoint.
#[derive(Debug, Clone)]
pub(super) struct Gate {
    hosts: Vec<(String, Option<u16>)>,
    origins: Vec<String>,
}

impl Gate {
    /// A gate allowing `hosts` (`host` or `host:port` entries) and
    /// `origins` (`scheme://host[:port]`, or `null`).
    pub(super) fn new(hosts: &[String], origins: &[String]) -> Self {
        Self {
            hosts: hosts.iter().filter_map(|h| authority(h)).collect(),
            origins: origins.iter().map(|o| normalize_origin(o)).collect(),
        }
    }

    /// The status to refuse `req` with, if it must be refused.
    pub(super) fn refusal<B>(&self, req: &Request<B>) -> Option<StatusCode> {
        let headers = req.headers();
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = hosts.next();
        if hosts.next().is_some() {
            tracing::warn!("refused a request with two Host headers");
            return Some(StatusCode::BAD_REQUEST);
        }
        let from_header = match host.map(|h| h.to_str().ok().and_then(authority)) {
            Some(Some(a)) => Some(a),
            Some(None) => {
                tracing::warn!(
                    bytes = host.map_or(0, |h| h.len()),
                    "refused a request with a malformed Host header"
                );
                return Some(StatusCode::BAD_REQUEST);
            }
            None => None,
        };
        let from_target = req
            .uri()
            .authority()
            .map(|a| (normalize_host(a.host()), a.port_u16()));
        let named = match (from_header, from_target) {
            (Some(h), Some(t)) if h != t => {
                tracing::warn!(
                    "refused a request whose target names another host than its Host header"
                );
                return Some(StatusCode::BAD_REQUEST);
            }
            (Some(h), _) => h,
            (None, Some(t)) => t,
            // No authority at all: the transport answers 400 itself.
            (None, None) => return None,
        };
        let allowed = self
            .hosts
            .iter()
            .any(|(host, port)| *host == named.0 && port.is_none_or(|p| Some(p) == named.1));
        if !allowed {
            tracing::warn!(
                bytes = named.0.len(),
                "refused a request for a host this server does not answer (possible DNS rebinding)"
            );
            return Some(StatusCode::FORBIDDEN);
        }
        self.origin_refusal(headers, &named)
    }

    /// Refuses an `Origin` that is neither the request's own (`named`, the
    /// allowed authority it was sent to) nor one the operator allows.
    fn origin_refusal(
        &self,
        headers: &HeaderMap,
        named: &(String, Option<u16>),
    ) -> Option<StatusCode> {
        let mut values = headers.get_all(header::ORIGIN).iter();
        let origin = values.next()?;
        let allowed = values.next().is_none()
            && origin.to_str().is_ok_and(|o| {
                self.origins.contains(&normalize_origin(o)) || same_origin(o, named)
            });
        if allowed {
            return None;
        }
        tracing::warn!(
            bytes = origin.len(),
            "refused a request from an origin this server does not allow"
        );
        Some(StatusCode::FORBIDDEN)
    }
}

/// `host` or `host:port`, normalized (lowercase, no brackets).
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match http::uri::Authority::try_from(text) {
        Ok(a) if !a.as_str().contains('@') => Some((normalize_host(a.host()), a.port_u16())),
        _ => None,
    }
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Whether `origin` (`http://host[:port]` or `https://…`) names `named`,
/// the authority the request was sent to, ports compared after the
/// scheme's default is filled in on both sides (RFC 6454). Anything else
/// (`null`, another scheme, a path, user information) is not the same
/// origin.
fn same_origin(origin: &str, named: &(String, Option<u16>)) -> bool {
    let Some((scheme, rest)) = origin.trim().split_once("://") else {
        return false;
    };
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let bare = rest.strip_suffix('/').unwrap_or(rest);
    if bare.contains(['/', '?', '#']) {
        return false;
    }
    let Some((host, port)) = authority(bare) else {
        return false;
    };
    host == named.0 && port.unwrap_or(default) == named.1.unwrap_or(default)
}

/// An origin as compared: lowercase, without a trailing `/`.
fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn gate() -> Gate {
        Gate::new(
            &["localhost".into(), "mcp.example.org:8443".into()],
            &["https://app.example.org".into()],
        )
    }

    fn request(target: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().uri(target);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn host_target_and_origin_rules() {
        let g = gate();
        for (target, headers, want) in [
            ("/mcp", vec![("host", "localhost:3000")], None),
            ("/mcp", vec![("host", "LOCALHOST")], None),
            ("/mcp", vec![("host", "mcp.example.org:8443")], None),
            (
                "/mcp",
                vec![("host", "mcp.example.org:80")],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![("host", "evil.example")],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![("host", "localhost"), ("host", "evil.example")],
                Some(StatusCode::BAD_REQUEST),
            ),
            (
                "/mcp",
                vec![("host", "bad host")],
                Some(StatusCode::BAD_REQUEST),
            ),
            (
                "/mcp",
                vec![("host", "user@localhost")],
                Some(StatusCode::BAD_REQUEST),
            ),
            (
                "http://evil.example/mcp",
                vec![("host", "localhost")],
                Some(StatusCode::BAD_REQUEST),
            ),
            ("http://localhost/mcp", vec![("host", "localhost")], None),
            (
                "http://evil.example/mcp",
                vec![],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![("host", "localhost"), ("origin", "https://app.example.org")],
                None,
            ),
            (
                "/mcp",
                vec![("host", "localhost"), ("origin", "https://evil.example")],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![("host", "localhost"), ("origin", "null")],
                Some(StatusCode::FORBIDDEN),
            ),
            // The server's own origin: a page it (or its proxy) served.
            (
                "/mcp",
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "http://localhost:3000"),
                ],
                None,
            ),
            (
                "/mcp",
                vec![
                    ("host", "LOCALHOST:3000"),
                    ("origin", "http://localhost:3000/"),
                ],
                None,
            ),
            (
                "/mcp",
                vec![
                    ("host", "mcp.example.org:8443"),
                    ("origin", "https://mcp.example.org:8443"),
                ],
                None,
            ),
            (
                "/mcp",
                vec![("host", "localhost"), ("origin", "http://localhost:80")],
                None,
            ),
            (
                "/mcp",
                vec![("host", "localhost"), ("origin", "https://localhost")],
                None,
            ),
            // Another port, another host, another scheme, or more than an
            // origin: not the same origin.
            (
                "/mcp",
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "http://localhost:3001"),
                ],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![("host", "localhost:3000"), ("origin", "http://localhost")],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "http://127.0.0.1:3000"),
                ],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "ftp://localhost:3000"),
                ],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "http://evil@localhost:3000"),
                ],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "http://localhost:3000/x/"),
                ],
                Some(StatusCode::FORBIDDEN),
            ),
            (
                "/mcp",
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "http://localhost:3000"),
                    ("origin", "http://localhost:3000"),
                ],
                Some(StatusCode::FORBIDDEN),
            ),
        ] {
            assert_eq!(
                g.refusal(&request(target, &headers)),
                want,
                "{target} {headers:?}"
            );
        }
    }
}
