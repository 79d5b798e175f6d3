//! A fake OAuth authorization server on loopback, for the tests of the
//! OAuth resource: its RFC 8414 metadata and a JWKS document.
#![allow(clippy::expect_used)] // test support: no loopback port is a broken test machine

use std::future::Future;

use serde_json::json;

/// Serves, on a fresh loopback port, the authorization server metadata
/// (`/.well-known/oauth-authorization-server`, naming the issuer and its
/// `jwks_uri`) and `/jwks`, which answers what `jwks` returns at each
/// fetch (so a test can count fetches, delay them or rotate keys). Returns
/// the issuer, `http://127.0.0.1:<port>`; the server lives as long as the
/// test's runtime.
pub async fn serve<F, Fut>(jwks: F) -> String
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = String> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port for the issuer");
    let issuer = format!(
        "http://{}",
        listener.local_addr().expect("the issuer's address")
    );
    let meta = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || {
                let meta = meta.clone();
                async move { axum::Json(meta) }
            }),
        )
        .route("/jwks", axum::routing::get(jwks));
    tokio::spawn(async move { axum::serve(listener, app).await });
    issuer
}
