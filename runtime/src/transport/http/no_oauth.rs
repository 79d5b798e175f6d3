//! The HTTP server built without the `oauth` feature: its OAuth slot holds
//! a type no value can have, so every OAuth path is statically absent and
//! the server's code stays one code with or without the feature.

use crate::identity::CallerId;
use crate::transport::GrantedScopes;

/// No OAuth resource: uninhabited.
#[derive(Debug, Clone)]
pub(crate) enum OAuth {}

/// What a valid access token grants (never made here).
pub(crate) enum Grant {}

impl Grant {
    pub(crate) fn into_parts(self) -> (CallerId, GrantedScopes) {
        match self {}
    }
}

/// Why an access token was refused (never made here).
#[derive(Debug, Clone, Copy)]
pub(crate) enum TokenRefused {}

impl TokenRefused {
    pub(crate) fn as_str(self) -> &'static str {
        match self {}
    }
}

impl OAuth {
    pub(crate) fn metadata_path(&self) -> &str {
        match *self {}
    }

    pub(crate) fn metadata_url(&self) -> &str {
        match *self {}
    }

    pub(crate) fn scopes_supported(&self) -> &[String] {
        match *self {}
    }

    pub(crate) fn metadata(&self) -> serde_json::Value {
        match *self {}
    }

    pub(crate) async fn authenticate(&self, _token: &str) -> Result<Grant, TokenRefused> {
        match *self {}
    }
}
