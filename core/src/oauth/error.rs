//! The one error enum of the authorization server and its one mapping to the wire
//! (RFC 6749 §5.2 and §4.1.2.1, RFC 7591 §3.2.2, RFC 8707 §2).

use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderName, HeaderValue, StatusCode};
use serde_json::json;

use super::Route;
use crate::limit::Limited;
use crate::response::Response;

/// Why an OAuth request was refused. Each variant carries the server's own words
/// (`error_description`), never text the client sent.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// A parameter is missing, repeated, malformed or not supported.
    #[error("{0}")]
    InvalidRequest(&'static str),
    /// The client is unknown (or is not the one the grant was issued to, at `/token`).
    #[error("{0}")]
    InvalidClient(&'static str),
    /// The code or refresh token is unknown, expired, used, revoked, or bound to
    /// something else (client, redirect URI, verifier, resource).
    #[error("{0}")]
    InvalidGrant(&'static str),
    /// A grant type this client did not register for.
    #[error("{0}")]
    UnauthorizedClient(&'static str),
    /// A grant type other than `authorization_code` and `refresh_token`.
    #[error("{0}")]
    UnsupportedGrantType(&'static str),
    /// A response type other than `code`.
    #[error("{0}")]
    UnsupportedResponseType(&'static str),
    /// A scope this server does not know, or none the person may grant.
    #[error("{0}")]
    InvalidScope(&'static str),
    /// The person denied the request.
    #[error("{0}")]
    AccessDenied(&'static str),
    /// A `resource` (RFC 8707) that is not this server's.
    #[error("{0}")]
    InvalidTarget(&'static str),
    /// A redirect URI that may not be registered (RFC 7591).
    #[error("{0}")]
    InvalidRedirectUri(&'static str),
    /// Client metadata that may not be registered (RFC 7591).
    #[error("{0}")]
    InvalidClientMetadata(&'static str),
    /// The store failed (logged; the client gets a generic answer).
    #[error("{0}")]
    ServerError(&'static str),
}

impl OAuthError {
    /// The wire: the `error` code and the HTTP status of a JSON error answer. The only
    /// place either is decided.
    pub fn wire(&self) -> (&'static str, StatusCode) {
        match self {
            Self::InvalidRequest(_) => ("invalid_request", StatusCode::BAD_REQUEST),
            Self::InvalidClient(_) => ("invalid_client", StatusCode::UNAUTHORIZED),
            Self::InvalidGrant(_) => ("invalid_grant", StatusCode::BAD_REQUEST),
            Self::UnauthorizedClient(_) => ("unauthorized_client", StatusCode::BAD_REQUEST),
            Self::UnsupportedGrantType(_) => ("unsupported_grant_type", StatusCode::BAD_REQUEST),
            Self::UnsupportedResponseType(_) => {
                ("unsupported_response_type", StatusCode::BAD_REQUEST)
            }
            Self::InvalidScope(_) => ("invalid_scope", StatusCode::BAD_REQUEST),
            Self::AccessDenied(_) => ("access_denied", StatusCode::FORBIDDEN),
            Self::InvalidTarget(_) => ("invalid_target", StatusCode::BAD_REQUEST),
            Self::InvalidRedirectUri(_) => ("invalid_redirect_uri", StatusCode::BAD_REQUEST),
            Self::InvalidClientMetadata(_) => ("invalid_client_metadata", StatusCode::BAD_REQUEST),
            Self::ServerError(_) => ("server_error", StatusCode::INTERNAL_SERVER_ERROR),
        }
    }

    /// The `error` code alone (what a redirect back to the client carries).
    pub fn code(&self) -> &'static str {
        self.wire().0
    }

    /// `error_description`.
    pub fn description(&self) -> &'static str {
        match *self {
            Self::InvalidRequest(d)
            | Self::InvalidClient(d)
            | Self::InvalidGrant(d)
            | Self::UnauthorizedClient(d)
            | Self::UnsupportedGrantType(d)
            | Self::UnsupportedResponseType(d)
            | Self::InvalidScope(d)
            | Self::AccessDenied(d)
            | Self::InvalidTarget(d)
            | Self::InvalidRedirectUri(d)
            | Self::InvalidClientMetadata(d)
            | Self::ServerError(d) => d,
        }
    }
}

/// The answer to a request over the per-address limit of `/register`, `/authorize` and
/// `/token` ([`crate::RateLimit::check_peer`]): `429` with `Retry-After` (whole seconds)
/// and the same `RateLimit-Policy` / `RateLimit` headers as the MCP endpoint's `429`.
///
/// `/token` and `/register` are read by programs, so they get the RFC 6749 §5.2 JSON
/// shape with `temporarily_unavailable`, the code RFC 6749 §4.1.2.1 gives an overloaded
/// server (no RFC defines one for the token endpoint; clients show `error` and
/// `error_description` whatever the code). `/authorize` is a page a person reads: plain
/// text, not a redirect to the client (redirecting would mean validating the client and
/// its redirect URI, the very work being limited, and a client could not retry sooner
/// anyway).
pub fn limited(route: Route, l: &Limited) -> Response {
    let secs = l.retry_after_ms.div_ceil(1000).max(1);
    let description = format!(
        "too many requests from this address to the authorization server; retry in {secs} s"
    );
    let mut r = if route == Route::Authorize {
        let mut r = Response::empty(StatusCode::TOO_MANY_REQUESTS);
        r.headers.push((
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        ));
        r.body = format!("{description}\n").into_bytes();
        r
    } else {
        let body = json!({ "error": "temporarily_unavailable", "error_description": description });
        Response::json(
            StatusCode::TOO_MANY_REQUESTS,
            serde_json::to_vec(&body).unwrap_or_default(),
        )
    };
    for (name, value) in [
        (RETRY_AFTER, secs.to_string()),
        (
            HeaderName::from_static("ratelimit-policy"),
            l.policy.clone(),
        ),
        (HeaderName::from_static("ratelimit"), l.state.clone()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            r.headers.push((name, v));
        }
    }
    r.log.reason = Some(description.into());
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over the per-address limit: `429`, `Retry-After` in whole seconds (rounded up),
    /// the policy headers, JSON for the programs' endpoints and text for the page.
    #[test]
    fn the_rate_limited_answers() {
        let h = |r: &Response, name: &str| r.header(name).map(|v| v.to_str().unwrap().to_owned());
        let l = Limited {
            retry_after_ms: 1500,
            policy: "\"address\";q=60;w=60".into(),
            state: "\"address\";r=0;t=2".into(),
        };
        for route in [Route::Token, Route::Register] {
            let r = limited(route, &l);
            assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(h(&r, "retry-after"), Some("2".into()));
            assert_eq!(
                h(&r, "ratelimit-policy"),
                Some("\"address\";q=60;w=60".into())
            );
            assert_eq!(h(&r, "ratelimit"), Some("\"address\";r=0;t=2".into()));
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(body["error"], "temporarily_unavailable");
            assert!(
                body["error_description"]
                    .as_str()
                    .unwrap()
                    .contains("retry in 2 s")
            );
        }
        let page = limited(Route::Authorize, &l);
        assert_eq!(page.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(h(&page, "retry-after"), Some("2".into()));
        assert!(h(&page, "content-type").unwrap().starts_with("text/plain"));
        assert!(Route::Authorize.limited() && Route::Token.limited() && Route::Register.limited());
        assert!(!Route::Metadata.limited() && !Route::OpenId.limited() && !Route::Jwks.limited());
    }

    /// Every variant's code and status, pinned.
    #[test]
    fn the_mapping() {
        let table = [
            (OAuthError::InvalidRequest(""), "invalid_request", 400),
            (OAuthError::InvalidClient(""), "invalid_client", 401),
            (OAuthError::InvalidGrant(""), "invalid_grant", 400),
            (
                OAuthError::UnauthorizedClient(""),
                "unauthorized_client",
                400,
            ),
            (
                OAuthError::UnsupportedGrantType(""),
                "unsupported_grant_type",
                400,
            ),
            (
                OAuthError::UnsupportedResponseType(""),
                "unsupported_response_type",
                400,
            ),
            (OAuthError::InvalidScope(""), "invalid_scope", 400),
            (OAuthError::AccessDenied(""), "access_denied", 403),
            (OAuthError::InvalidTarget(""), "invalid_target", 400),
            (
                OAuthError::InvalidRedirectUri(""),
                "invalid_redirect_uri",
                400,
            ),
            (
                OAuthError::InvalidClientMetadata(""),
                "invalid_client_metadata",
                400,
            ),
            (OAuthError::ServerError(""), "server_error", 500),
        ];
        for (e, code, status) in table {
            assert_eq!(e.wire(), (code, StatusCode::from_u16(status).unwrap()));
        }
    }
}
