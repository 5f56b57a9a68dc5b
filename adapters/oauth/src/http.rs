//! The wire side: RFC 9728 protected-resource metadata and the RFC 6750 challenges.

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::config::AuthConfig;
use crate::error::AuthError;

/// The well-known path of the metadata for the resource as a whole.
pub const PRM_PATH: &str = "/.well-known/oauth-protected-resource";

/// The metadata document (RFC 9728 §2). `offline_access` is never advertised.
pub fn metadata(cfg: &AuthConfig) -> serde_json::Value {
    let scopes: Vec<&String> = cfg.scopes_supported.iter().filter(|s| *s != "offline_access").collect();
    json!({
        "resource": cfg.resource,
        "authorization_servers": cfg.issuers.iter().map(|i| &i.issuer).collect::<Vec<_>>(),
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
    })
}

/// The bearer credential from `Authorization: Bearer …` (never from the query string).
/// `Err` for an `Authorization` header of another form.
pub fn bearer(headers: &HeaderMap) -> Result<Option<&str>, AuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let value = value.to_str().map_err(|_| AuthError::invalid("the Authorization header is not ASCII"))?;
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => {
            Ok(Some(token.trim()))
        }
        _ => Err(AuthError::invalid("use `Authorization: Bearer <token>`")),
    }
}

fn quoted(s: &str) -> String {
    s.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect()
}

fn resource_metadata(cfg: &AuthConfig) -> String {
    format!("{}{PRM_PATH}", cfg.resource.trim_end_matches('/'))
}

fn challenge(status: StatusCode, value: String, error: &str, description: &str) -> Response {
    let body = json!({ "error": { "kind": if status == StatusCode::FORBIDDEN { "forbidden" } else { "unauthenticated" },
        "message": description, "retry_safe": true, "source": "client", "oauth_error": error } });
    let mut resp = (status, Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&value) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    resp
}

/// `401`: no or a bad credential. Points at the metadata; names the scopes that would help.
pub fn unauthorized(cfg: &AuthConfig, err: &AuthError, scopes: &[&str]) -> Response {
    let mut value = format!("Bearer resource_metadata=\"{}\"", resource_metadata(cfg));
    if !scopes.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
    }
    match err {
        AuthError::Missing => challenge(StatusCode::UNAUTHORIZED, value, "", "authentication is required"),
        AuthError::InvalidToken(m) => {
            value.push_str(&format!(", error=\"invalid_token\", error_description=\"{}\"", quoted(m)));
            challenge(StatusCode::UNAUTHORIZED, value, "invalid_token", m)
        }
        AuthError::Unavailable(m) => {
            tracing::warn!(error = %m, "token verification unavailable");
            let mut resp = challenge(
                StatusCode::SERVICE_UNAVAILABLE,
                value,
                "temporarily_unavailable",
                "cannot verify the token now; retry later",
            );
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            resp
        }
    }
}

/// `403 insufficient_scope` naming every scope the operation needs (for step-up).
pub fn insufficient_scope(cfg: &AuthConfig, needed: &[&str]) -> Response {
    let scope = quoted(&needed.join(" "));
    let value = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{}\"",
        resource_metadata(cfg)
    );
    challenge(StatusCode::FORBIDDEN, value, "insufficient_scope", &format!("this operation needs the scopes: {scope}"))
}
