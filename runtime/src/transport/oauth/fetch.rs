//! Bounded fetches of the authorization server's documents (its metadata
//! and its JWKS): a deadline on the whole exchange, a ceiling on the body
//! read (never buffered past it), HTTPS except to a loopback host, no
//! redirects.

use std::time::Duration;

use crate::transport::oauth::OAuthError;

/// What one fetch may take.
#[derive(Debug, Clone, Copy)]
pub(super) struct FetchLimits {
    pub timeout: Duration,
    pub max_bytes: usize,
}

/// A client for the authorization server's documents.
#[derive(Debug, Clone)]
pub(super) struct Fetcher {
    client: reqwest::Client,
    limits: FetchLimits,
}

impl Fetcher {
    pub(super) fn new(limits: FetchLimits) -> Result<Self, OAuthError> {
        let client = reqwest::Client::builder()
            .timeout(limits.timeout)
            .connect_timeout(limits.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .https_only(false)
            .build()
            .map_err(|e| OAuthError::Client(e.to_string()))?;
        Ok(Self { client, limits })
    }

    /// GETs `url` (checked by [`check_url`]) and parses the body as JSON.
    pub(super) async fn json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<T, OAuthError> {
        check_url(url)?;
        let exchange = async {
            let mut response = self
                .client
                .get(url)
                .header(http::header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(failed)?;
            if !response.status().is_success() {
                return Err(OAuthError::Fetch(format!(
                    "status {}",
                    response.status().as_u16()
                )));
            }
            if response
                .content_length()
                .is_some_and(|n| n > self.limits.max_bytes as u64)
            {
                return Err(OAuthError::TooLarge);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(failed)? {
                if body.len() + chunk.len() > self.limits.max_bytes {
                    return Err(OAuthError::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            serde_json::from_slice(&body).map_err(|_| OAuthError::Malformed)
        };
        tokio::time::timeout(self.limits.timeout, exchange)
            .await
            .map_err(|_| OAuthError::Timeout)?
    }
}

/// An authorization server URL must be `https`, or `http` to a loopback
/// host (tests, a co-located provider).
pub(super) fn check_url(url: &str) -> Result<(), OAuthError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| OAuthError::InvalidUrl)?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        _ => Err(OAuthError::InsecureUrl),
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

fn failed(e: reqwest::Error) -> OAuthError {
    if e.is_timeout() {
        OAuthError::Timeout
    } else {
        OAuthError::Fetch(redact_url(&e.to_string()))
    }
}

/// reqwest's error texts may carry the URL; the URLs here are operator
/// configuration, but keep the detail short and single-line for the log.
fn redact_url(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        for ok in [
            "https://idp.example.org/realms/x",
            "http://127.0.0.1:8080/",
            "http://[::1]:9/",
            "http://localhost:3000/oidc",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://idp.example.org/",
            "http://10.0.0.1/",
            "ftp://127.0.0.1/",
            "not a url",
            "http://localhost.evil.example/",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
