//! Trusted reverse proxies: who the peer is when a proxy relays it.
//!
//! Behind a reverse proxy every connection comes from the proxy's address,
//! so a cap per peer address would be one cap for every caller. A server
//! configured with [`TrustedProxies`] takes the client's address from the
//! header the proxy sets, on connections from those addresses only; from
//! anyone else the header means nothing. The header is the one the proxy
//! is configured to write (never "whichever is present": a proxy that sets
//! `X-Forwarded-For` passes a client's own `Forwarded` header through
//! untouched), and the client is its rightmost address that is not itself
//! a trusted proxy: what the last trusted hop saw, which a client cannot
//! choose by writing addresses of its own to the left.

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;

pub use ipnet::IpNet;

/// The most chain elements read from a forwarding header, from the right.
const MAX_HOPS: usize = 32;

/// The header in which a trusted proxy names the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardedHeader {
    /// `Forwarded` (RFC 7239): the `for=` parameter of each element.
    Forwarded,
    /// `X-Forwarded-For`: a comma-separated list of addresses.
    XForwardedFor,
}

impl ForwardedHeader {
    fn name(self) -> &'static str {
        match self {
            Self::Forwarded => "forwarded",
            Self::XForwardedFor => "x-forwarded-for",
        }
    }
}

/// The reverse proxies whose forwarding header names the peer, for the
/// per-peer connection cap
/// ([`HttpConfig::trusted_proxies`](super::HttpConfig::trusted_proxies)).
///
/// ```
/// use hardened_mcp::transport::http::{ForwardedHeader, IpNet, TrustedProxies};
///
/// let nginx: IpNet = "10.0.0.5/32".parse().unwrap();
/// let proxies = TrustedProxies::new(ForwardedHeader::XForwardedFor, [nginx]);
/// assert!(proxies.is_trusted("10.0.0.5".parse().unwrap()));
/// assert!(!proxies.is_trusted("10.0.0.6".parse().unwrap()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedProxies {
    header: ForwardedHeader,
    nets: Vec<IpNet>,
}

impl TrustedProxies {
    /// Proxies at the addresses in `nets` (a single address is a `/32` or
    /// `/128`), which write the client's address into `header`.
    pub fn new(header: ForwardedHeader, nets: impl IntoIterator<Item = IpNet>) -> Self {
        Self {
            header,
            nets: nets.into_iter().map(|n| n.trunc()).collect(),
        }
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn is_trusted(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.nets.iter().any(|n| n.contains(&ip))
    }

    /// The client that a trusted proxy's request names: the rightmost
    /// address of the header's chain that is not a trusted proxy. `None`
    /// when the header is absent, or that element is not an address (for
    /// example `unknown`, an obfuscated name, or malformed): the request
    /// then counts for the proxy itself.
    pub(super) fn client(&self, headers: &HeaderMap) -> Option<IpAddr> {
        let mut elements: Vec<&str> = Vec::new();
        for value in headers.get_all(self.header.name()) {
            let text = value.to_str().ok()?;
            elements.extend(text.split(','));
        }
        for element in elements.iter().rev().take(MAX_HOPS) {
            let ip = match self.header {
                ForwardedHeader::XForwardedFor => parse_node(element.trim())?,
                ForwardedHeader::Forwarded => forwarded_for(element)?,
            };
            if !self.is_trusted(ip) {
                return Some(ip);
            }
        }
        None
    }
}

/// The `for=` node of one `Forwarded` element (`for=192.0.2.60;proto=http`,
/// `for="[2001:db8::1]:4711"`).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    let value = element.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("for")
            .then_some(value.trim())
    })?;
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    parse_node(value)
}

/// An address, with or without a port: `192.0.2.1`, `192.0.2.1:80`,
/// `2001:db8::1`, `[2001:db8::1]`, `[2001:db8::1]:80`.
fn parse_node(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Ok(sa) = text.parse::<SocketAddr>() {
        return Some(sa.ip().to_canonical());
    }
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    inner.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn proxies(header: ForwardedHeader) -> TrustedProxies {
        TrustedProxies::new(
            header,
            ["10.0.0.5/32".parse().unwrap(), "fd00::/64".parse().unwrap()],
        )
    }

    fn headers(name: &'static str, values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(name, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_rightmost_untrusted_address_is_the_client() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        let h = |v: &[&str]| p.client(&headers("x-forwarded-for", v));
        assert_eq!(h(&["192.0.2.7"]), ip("192.0.2.7"));
        // A client that writes an address of its own to the left gains
        // nothing: the proxy appended what it saw.
        assert_eq!(h(&["203.0.113.9, 192.0.2.7"]), ip("192.0.2.7"));
        // Trusted hops on the right are skipped.
        assert_eq!(h(&["192.0.2.7, 10.0.0.5"]), ip("192.0.2.7"));
        assert_eq!(h(&["192.0.2.7", "10.0.0.5"]), ip("192.0.2.7"));
        assert_eq!(h(&["[2001:db8::1]:4711, fd00::3"]), ip("2001:db8::1"));
        assert_eq!(h(&["::ffff:192.0.2.7"]), ip("192.0.2.7"));
        // Nothing usable: the request counts for the proxy.
        assert_eq!(h(&[]), None);
        assert_eq!(h(&["10.0.0.5"]), None);
        assert_eq!(h(&["192.0.2.7, garbage"]), None);
        assert_eq!(h(&["unknown"]), None);
    }

    #[test]
    fn forwarded_elements_name_the_client_in_for() {
        let p = proxies(ForwardedHeader::Forwarded);
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        let h = |v: &[&str]| p.client(&headers("forwarded", v));
        assert_eq!(
            h(&["for=192.0.2.60;proto=http;by=203.0.113.43"]),
            ip("192.0.2.60")
        );
        assert_eq!(
            h(&[r#"for=198.51.100.1, For="[2001:db8:cafe::17]:4711""#]),
            ip("2001:db8:cafe::17")
        );
        assert_eq!(h(&["for=192.0.2.60, for=10.0.0.5"]), ip("192.0.2.60"));
        assert_eq!(h(&["for=_hidden"]), None);
        assert_eq!(h(&["proto=https"]), None);
        // The other header is not read.
        assert_eq!(p.client(&headers("x-forwarded-for", &["192.0.2.7"])), None);
    }

    #[test]
    fn only_the_listed_networks_are_trusted() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        assert!(p.is_trusted("10.0.0.5".parse().unwrap()));
        assert!(p.is_trusted("::ffff:10.0.0.5".parse().unwrap()));
        assert!(p.is_trusted("fd00::9".parse().unwrap()));
        assert!(!p.is_trusted("10.0.0.4".parse().unwrap()));
        assert!(!p.is_trusted("fd00:0:0:1::9".parse().unwrap()));
    }
}
