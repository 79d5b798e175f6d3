//! OAuth 2.1 protected resource, as the MCP authorization specification
//! describes: the server validates JWT access tokens minted by an
//! authorization server it trusts, for this resource only.
//!
//! - **Discovery.** [`OAuth::discover`] reads the authorization server's
//!   metadata (RFC 8414 `/.well-known/oauth-authorization-server`, then
//!   OpenID `/.well-known/openid-configuration`), checks that it names the
//!   configured issuer (no mix-up), and fetches its JWKS. Every fetch has a
//!   deadline and a size ceiling; `https` only, except to a loopback host.
//! - **Tokens.** Signature against the issuer's key named by `kid`, with an
//!   allow-list of asymmetric algorithms (never `none`, never HMAC: a public
//!   key is never a shared secret); `iss` equal to the issuer; `aud`
//!   containing this resource (RFC 8707 audience binding: a token minted
//!   for another resource is refused, so no token passes through); `exp`
//!   and `nbf` with a small leeway; `sub` present.
//! - **Keys.** A token naming an unknown `kid` refreshes the JWKS, at most
//!   once per refresh interval (key rotation without a restart, without
//!   letting forged `kid`s drive fetches); keys older than the maximum age
//!   are refreshed on use.
//! - **Identity.** The caller is `oauth-` and a digest of issuer and
//!   subject: stable per subject, distinct across issuers, and in a name
//!   space no token-file caller may take ([`CallerId::RESERVED_PREFIXES`]).
//! - **Scopes.** The token's `scope` (or `scp`) claim; a tool declares the
//!   scopes it needs (`#[hardened_tool(scopes = "..")]`), and a call without
//!   them is refused (`403`, `insufficient_scope`).
//!
//! The metadata this resource publishes (RFC 9728) is [`OAuth::metadata`],
//! served by the HTTP transport at [`OAuth::metadata_path`].

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::identity::CallerId;

mod fetch;

use fetch::{FetchLimits, Fetcher};

/// Default clock leeway for `exp` and `nbf`.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// Largest accepted leeway.
pub const MAX_LEEWAY: Duration = Duration::from_secs(300);
/// Default least time between two JWKS fetches caused by unknown keys.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// Default age after which the keys are fetched again on use.
pub const DEFAULT_MAX_KEY_AGE: Duration = Duration::from_secs(3600);
/// Default deadline of one fetch from the authorization server.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Default ceiling on a fetched document.
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// Most keys taken from one JWKS.
pub const MAX_KEYS: usize = 32;
pub use super::auth::MAX_TOKEN_BYTES;
pub use super::scopes::{GrantedScopes, SCOPES_META_KEY};

/// The asymmetric algorithms accepted by default.
pub const DEFAULT_ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::EdDSA,
];

/// Why the OAuth configuration cannot be used (at start-up). The texts are
/// for the operator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A URL does not parse.
    #[error("an OAuth URL (issuer or resource) is not a valid absolute URL")]
    InvalidUrl,
    /// A URL is `http` to a host that is not loopback.
    #[error("the authorization server must be reached over https (http only on loopback)")]
    InsecureUrl,
    /// The resource URL has a query or fragment, or no host.
    #[error(
        "the resource must be an absolute https URL (http on loopback) without query or fragment"
    )]
    InvalidResource,
    /// A configured scope is not an RFC 6749 scope token.
    #[error("a supported scope is empty or has characters outside RFC 6749's scope-token")]
    InvalidScope,
    /// The algorithm allow-list is empty or holds an HMAC algorithm.
    #[error("the algorithm allow-list must be non-empty and asymmetric only (no HS256/384/512)")]
    ForbiddenAlgorithm,
    /// The leeway exceeds [`MAX_LEEWAY`].
    #[error("the clock leeway is above 300 s")]
    LeewayTooLarge,
    /// The HTTP client could not be built.
    #[error("the HTTP client for the authorization server could not be built: {0}")]
    Client(String),
    /// A fetch failed.
    #[error("fetching from the authorization server failed: {0}")]
    Fetch(String),
    /// A fetch did not finish in time.
    #[error("the authorization server did not answer in time")]
    Timeout,
    /// A document is above the size ceiling.
    #[error("a document of the authorization server is above the size ceiling")]
    TooLarge,
    /// A document is not the JSON expected.
    #[error("a document of the authorization server is malformed")]
    Malformed,
    /// The metadata names another issuer.
    #[error("the authorization server's metadata names another issuer")]
    IssuerMismatch,
    /// The metadata has no `jwks_uri`.
    #[error("the authorization server's metadata has no jwks_uri")]
    NoJwksUri,
    /// The JWKS has no key this resource can use.
    #[error("the authorization server's JWKS has no usable signing key")]
    NoUsableKeys,
}

/// Why a presented token was refused. Only [`TokenRefused::as_str`] is
/// logged; the caller sees the fixed `401`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenRefused {
    /// Not a JWT, too long, or its claims do not parse.
    Malformed,
    /// Its algorithm is not allowed, or does not match its key.
    Algorithm,
    /// No key of the issuer has its `kid` (after a refresh, if one was due).
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// Expired.
    Expired,
    /// Not valid yet.
    NotYetValid,
    /// Another issuer.
    Issuer,
    /// Minted for another resource.
    Audience,
    /// A required claim is missing or malformed.
    Claims,
}

impl TokenRefused {
    /// A fixed word for the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::Algorithm => "algorithm",
            Self::UnknownKey => "unknown-key",
            Self::Signature => "signature",
            Self::Expired => "expired",
            Self::NotYetValid => "not-yet-valid",
            Self::Issuer => "issuer",
            Self::Audience => "audience",
            Self::Claims => "claims",
        }
    }
}

/// What a validated access token establishes.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The caller: `oauth-` and a digest of issuer and subject.
    pub caller: CallerId,
    /// The scopes granted.
    pub scopes: GrantedScopes,
}

impl Grant {
    /// The caller and its scopes.
    pub(crate) fn into_parts(self) -> (CallerId, GrantedScopes) {
        (self.caller, self.scopes)
    }
}

/// The settings of an OAuth protected resource.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    issuer: String,
    resource: String,
    scopes_supported: Vec<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    refresh_interval: Duration,
    max_key_age: Duration,
    fetch_timeout: Duration,
    max_document_bytes: usize,
}

impl OAuthConfig {
    /// Tokens from `issuer` (the authorization server's issuer identifier,
    /// exactly as its metadata states it) for `resource` (this server's
    /// canonical URI, e.g. `https://mcp.example.org/mcp`, the audience the
    /// tokens must carry).
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: resource.into(),
            scopes_supported: Vec::new(),
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            leeway: DEFAULT_LEEWAY,
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            max_key_age: DEFAULT_MAX_KEY_AGE,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
        }
    }

    /// The scopes published in the resource metadata and in `401`
    /// challenges (what a client should ask for).
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The accepted signature algorithms (default [`DEFAULT_ALGORITHMS`]);
    /// HMAC algorithms are refused at start-up.
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// Clock leeway for `exp` and `nbf` (default [`DEFAULT_LEEWAY`], at
    /// most [`MAX_LEEWAY`]).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Least time between two JWKS fetches caused by unknown `kid`s
    /// (default [`DEFAULT_REFRESH_INTERVAL`]).
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// Age after which the keys are fetched again when used (default
    /// [`DEFAULT_MAX_KEY_AGE`]).
    pub fn max_key_age(mut self, age: Duration) -> Self {
        self.max_key_age = age;
        self
    }

    /// Deadline of one fetch (default [`DEFAULT_FETCH_TIMEOUT`]).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// Ceiling on a fetched document (default
    /// [`DEFAULT_MAX_DOCUMENT_BYTES`]).
    pub fn max_document_bytes(mut self, bytes: usize) -> Self {
        self.max_document_bytes = bytes;
        self
    }

    fn check(&self) -> Result<(), OAuthError> {
        fetch::check_url(&self.issuer)?;
        let resource = reqwest::Url::parse(&self.resource).map_err(|_| OAuthError::InvalidUrl)?;
        fetch::check_url(&self.resource).map_err(|_| OAuthError::InvalidResource)?;
        if resource.query().is_some() || resource.fragment().is_some() || resource.host().is_none()
        {
            return Err(OAuthError::InvalidResource);
        }
        if self.scopes_supported.iter().any(|s| !is_scope_token(s)) {
            return Err(OAuthError::InvalidScope);
        }
        let hmac = [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512];
        if self.algorithms.is_empty() || self.algorithms.iter().any(|a| hmac.contains(a)) {
            return Err(OAuthError::ForbiddenAlgorithm);
        }
        if self.leeway > MAX_LEEWAY {
            return Err(OAuthError::LeewayTooLarge);
        }
        Ok(())
    }
}

/// RFC 6749 `scope-token`: 1*( %x21 / %x23-5B / %x5D-7E ).
pub fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

/// A validating OAuth protected resource. Cheap to clone.
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.inner.config.issuer)
            .field("resource", &self.inner.config.resource)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: OAuthConfig,
    fetcher: Fetcher,
    jwks_uri: String,
    keys: RwLock<Keys>,
    /// When the keys were last fetched (single flight).
    refresh: tokio::sync::Mutex<Instant>,
    metadata_path: String,
    metadata_url: String,
}

/// The usable keys of the issuer, by `kid` (`None`: a key without one).
#[derive(Default)]
struct Keys {
    by_kid: HashMap<Option<String>, (DecodingKey, Option<Algorithm>)>,
}

/// The parts of the authorization server's metadata used here.
#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    jwks_uri: Option<String>,
}

#[derive(Deserialize)]
struct KeySetDoc {
    keys: Vec<serde_json::Value>,
}

/// The claims read from an access token (the registered ones are checked
/// by the validation).
#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScpClaim>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScpClaim {
    List(Vec<String>),
    Text(String),
}

impl OAuth {
    /// Checks `config`, reads the authorization server's metadata and
    /// fetches its keys.
    pub async fn discover(config: OAuthConfig) -> Result<Self, OAuthError> {
        config.check()?;
        let fetcher = Fetcher::new(FetchLimits {
            timeout: config.fetch_timeout,
            max_bytes: config.max_document_bytes,
        })?;
        let metadata = server_metadata(&fetcher, &config.issuer).await?;
        if metadata.issuer != config.issuer {
            return Err(OAuthError::IssuerMismatch);
        }
        let jwks_uri = metadata.jwks_uri.ok_or(OAuthError::NoJwksUri)?;
        fetch::check_url(&jwks_uri)?;
        let keys = fetch_keys(&fetcher, &jwks_uri, &config.algorithms).await?;
        if keys.by_kid.is_empty() {
            return Err(OAuthError::NoUsableKeys);
        }
        let (metadata_path, metadata_url) = metadata_location(&config.resource)?;
        tracing::info!(
            keys = keys.by_kid.len(),
            "OAuth: authorization server discovered"
        );
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                fetcher,
                jwks_uri,
                keys: RwLock::new(keys),
                refresh: tokio::sync::Mutex::new(Instant::now()),
                metadata_path,
                metadata_url,
            }),
        })
    }

    /// This resource's canonical URI (the audience tokens must carry).
    pub fn resource(&self) -> &str {
        &self.inner.config.resource
    }

    /// The path the resource metadata is served at (RFC 9728 §3.1:
    /// `/.well-known/oauth-protected-resource` followed by the resource's
    /// path).
    pub fn metadata_path(&self) -> &str {
        &self.inner.metadata_path
    }

    /// The absolute URL of the resource metadata (named in challenges).
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The scopes published as supported.
    pub fn scopes_supported(&self) -> &[String] {
        &self.inner.config.scopes_supported
    }

    /// The protected resource metadata document (RFC 9728).
    pub fn metadata(&self) -> serde_json::Value {
        let c = &self.inner.config;
        let mut doc = serde_json::json!({
            "resource": c.resource,
            "authorization_servers": [c.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !c.scopes_supported.is_empty()
            && let serde_json::Value::Object(m) = &mut doc
        {
            m.insert(
                "scopes_supported".into(),
                serde_json::json!(c.scopes_supported),
            );
        }
        doc
    }

    /// Validates an access token (see the [module docs](self)).
    pub async fn authenticate(&self, token: &str) -> Result<Grant, TokenRefused> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenRefused::Malformed);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenRefused::Malformed)?;
        if !self.inner.config.algorithms.contains(&header.alg) {
            return Err(TokenRefused::Algorithm);
        }
        self.refresh_if_old().await;
        let kid = header.kid.clone();
        let validated = match self.verify(token, &header, &kid) {
            Err(TokenRefused::UnknownKey) => {
                // A rotated key, perhaps: fetch the keys again (rate-limited).
                self.refresh(false).await;
                self.verify(token, &header, &kid)
            }
            other => other,
        }?;
        let c = &self.inner.config;
        let mut digest = Sha256::new();
        digest.update(c.issuer.as_bytes());
        digest.update([0u8]);
        digest.update(validated.sub.as_bytes());
        let hex: String = digest
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        let caller = CallerId::new(&format!("oauth-{hex}")).map_err(|_| TokenRefused::Claims)?;
        let mut scopes: Vec<String> = Vec::new();
        if let Some(s) = &validated.scope {
            scopes.extend(
                s.split(' ')
                    .filter(|s| is_scope_token(s))
                    .map(str::to_owned),
            );
        }
        match &validated.scp {
            Some(ScpClaim::List(list)) => {
                scopes.extend(list.iter().filter(|s| is_scope_token(s)).cloned());
            }
            Some(ScpClaim::Text(s)) => {
                scopes.extend(
                    s.split(' ')
                        .filter(|s| is_scope_token(s))
                        .map(str::to_owned),
                );
            }
            None => {}
        }
        Ok(Grant {
            caller,
            scopes: GrantedScopes::new(scopes),
        })
    }

    fn verify(
        &self,
        token: &str,
        header: &jsonwebtoken::Header,
        kid: &Option<String>,
    ) -> Result<Claims, TokenRefused> {
        let keys = self
            .inner
            .keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = match kid {
            Some(_) => keys.by_kid.get(kid),
            // Without a `kid`, only a sole key is unambiguous.
            None if keys.by_kid.len() == 1 => keys.by_kid.values().next(),
            None => None,
        };
        let Some((key, key_alg)) = entry else {
            return Err(TokenRefused::UnknownKey);
        };
        if key_alg.is_some_and(|a| a != header.alg) {
            return Err(TokenRefused::Algorithm);
        }
        let c = &self.inner.config;
        let mut v = Validation::new(header.alg);
        v.leeway = c.leeway.as_secs();
        v.validate_nbf = true;
        v.set_issuer(&[c.issuer.as_str()]);
        v.set_audience(&[c.resource.as_str()]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        match jsonwebtoken::decode::<Claims>(token, key, &v) {
            Ok(data) => {
                if data.claims.sub.is_empty() || data.claims.sub.len() > 1024 {
                    return Err(TokenRefused::Claims);
                }
                Ok(data.claims)
            }
            Err(e) => Err(refusal(e.kind())),
        }
    }

    async fn refresh_if_old(&self) {
        // Never waits on the hot path: a refresh in progress holds the lock,
        // and then nothing is due.
        let due = self
            .inner
            .refresh
            .try_lock()
            .is_ok_and(|last| last.elapsed() >= self.inner.config.max_key_age);
        if due {
            self.refresh(true).await;
        }
    }

    /// Fetches the keys again unless that happened within the refresh
    /// interval (`aged`: the maximum age passed). A failed fetch keeps the
    /// keys there were.
    async fn refresh(&self, aged: bool) {
        let mut last = self.inner.refresh.lock().await;
        let interval = if aged {
            self.inner.config.max_key_age
        } else {
            self.inner.config.refresh_interval
        };
        if last.elapsed() < interval {
            return;
        }
        *last = Instant::now();
        let fetched = fetch_keys(
            &self.inner.fetcher,
            &self.inner.jwks_uri,
            &self.inner.config.algorithms,
        )
        .await;
        match fetched {
            Ok(keys) if !keys.by_kid.is_empty() => {
                tracing::info!(keys = keys.by_kid.len(), "OAuth: signing keys refreshed");
                *self
                    .inner
                    .keys
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = keys;
            }
            Ok(_) => {
                tracing::warn!("OAuth: the refreshed JWKS has no usable key; kept the old keys")
            }
            Err(e) => {
                tracing::warn!(error = %e, "OAuth: refreshing the signing keys failed; kept the old keys")
            }
        }
    }
}

fn refusal(kind: &jsonwebtoken::errors::ErrorKind) -> TokenRefused {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::ExpiredSignature => TokenRefused::Expired,
        K::ImmatureSignature => TokenRefused::NotYetValid,
        K::InvalidIssuer => TokenRefused::Issuer,
        K::InvalidAudience => TokenRefused::Audience,
        K::InvalidSignature => TokenRefused::Signature,
        K::InvalidAlgorithm | K::InvalidAlgorithmName | K::InvalidKeyFormat => {
            TokenRefused::Algorithm
        }
        K::MissingRequiredClaim(_) | K::InvalidSubject => TokenRefused::Claims,
        _ => TokenRefused::Malformed,
    }
}

/// The authorization server's metadata: RFC 8414's location first, then
/// OpenID Connect's.
async fn server_metadata(fetcher: &Fetcher, issuer: &str) -> Result<ServerMetadata, OAuthError> {
    let url = reqwest::Url::parse(issuer).map_err(|_| OAuthError::InvalidUrl)?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let rfc8414 = format!("{origin}/.well-known/oauth-authorization-server{path}");
    let oidc = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    match fetcher.json::<ServerMetadata>(&rfc8414).await {
        Ok(m) => Ok(m),
        Err(first) => {
            tracing::debug!(error = %first, "OAuth: no RFC 8414 metadata; trying OpenID configuration");
            fetcher.json::<ServerMetadata>(&oidc).await
        }
    }
}

/// The keys of a JWKS this resource can use: asymmetric, for signatures,
/// of an allowed algorithm when they name one; at most [`MAX_KEYS`].
async fn fetch_keys(
    fetcher: &Fetcher,
    jwks_uri: &str,
    allowed: &[Algorithm],
) -> Result<Keys, OAuthError> {
    let doc: KeySetDoc = fetcher.json(jwks_uri).await?;
    if doc.keys.len() > MAX_KEYS {
        return Err(OAuthError::TooLarge);
    }
    let mut keys = Keys::default();
    for value in doc.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            continue;
        };
        use jsonwebtoken::jwk::AlgorithmParameters as P;
        if !matches!(
            jwk.algorithm,
            P::RSA(_) | P::EllipticCurve(_) | P::OctetKeyPair(_)
        ) {
            continue; // never a shared secret, nothing unknown
        }
        if jwk
            .common
            .public_key_use
            .as_ref()
            .is_some_and(|u| *u != jsonwebtoken::jwk::PublicKeyUse::Signature)
        {
            continue;
        }
        let alg = match jwk.common.key_algorithm {
            Some(ka) => match Algorithm::try_from(ka) {
                Ok(a) if allowed.contains(&a) => Some(a),
                _ => continue,
            },
            None => None,
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        keys.by_kid.insert(jwk.common.key_id.clone(), (key, alg));
    }
    Ok(keys)
}

/// The path and absolute URL of the resource metadata of `resource`.
fn metadata_location(resource: &str) -> Result<(String, String), OAuthError> {
    let url = reqwest::Url::parse(resource).map_err(|_| OAuthError::InvalidResource)?;
    let path = url.path().trim_end_matches('/');
    let metadata_path = format!("/.well-known/oauth-protected-resource{path}");
    let origin = url.origin().ascii_serialization();
    Ok((metadata_path.clone(), format!("{origin}{metadata_path}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_tokens_follow_rfc_6749() {
        for ok in [
            "heat:read",
            "a",
            "x.y/z",
            "!#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~",
        ] {
            assert!(is_scope_token(ok), "{ok}");
        }
        for bad in ["", "a b", "a\"b", "a\\b", "é", "a\n"] {
            assert!(!is_scope_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_metadata_location_follows_rfc_9728() {
        assert_eq!(
            metadata_location("https://mcp.example.org/mcp").ok(),
            Some((
                "/.well-known/oauth-protected-resource/mcp".to_owned(),
                "https://mcp.example.org/.well-known/oauth-protected-resource/mcp".to_owned()
            ))
        );
        assert_eq!(
            metadata_location("http://127.0.0.1:8080/")
                .ok()
                .map(|l| l.0),
            Some("/.well-known/oauth-protected-resource".to_owned())
        );
    }

    #[test]
    fn configurations_that_cannot_be_safe_are_refused() {
        let base = || OAuthConfig::new("https://idp.example.org", "https://mcp.example.org/mcp");
        assert!(base().check().is_ok());
        for (bad, why) in [
            (
                OAuthConfig::new("http://idp.example.org", "https://mcp.example.org/mcp"),
                "http issuer",
            ),
            (
                OAuthConfig::new("https://idp.example.org", "https://mcp.example.org/mcp?x=1"),
                "query",
            ),
            (
                OAuthConfig::new("https://idp.example.org", "mcp"),
                "relative",
            ),
            (base().algorithms([Algorithm::HS256]), "hmac"),
            (base().algorithms([]), "no algorithms"),
            (base().scopes_supported(["has space"]), "scope"),
            (base().leeway(Duration::from_secs(301)), "leeway"),
        ] {
            assert!(bad.check().is_err(), "{why}");
        }
    }

    #[test]
    fn granted_scopes_cover_exactly() {
        let g = GrantedScopes::new(["b".to_owned(), "a".to_owned(), "a".to_owned()]);
        assert!(g.covers(&["a", "b"]) && g.covers(&[]));
        assert!(!g.covers(&["a", "c"]));
        assert_eq!(g.as_slice(), ["a", "b"]);
    }
}
