//! The one error-to-wire map of the gateway's own HTTP routes (the admin API, sign-in, the
//! artifact and MCP endpoints' refusals): each contract error kind to an HTTP status, written
//! out in full, with a JSON body `{"error": {kind, message, retry_safe, source}}`.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use switchyard_contract::{Error, ErrorKind, ErrorSource};

/// An error answered by the admin API.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    error: Error,
}

pub(crate) fn status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::InvalidInput => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl ApiError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::invalid_input(message).into()
    }

    pub fn too_large(limit: usize) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            error: Error::new(
                ErrorKind::InvalidInput,
                ErrorSource::Client,
                false,
                format!("request body exceeds {limit} bytes"),
            ),
        }
    }

    pub fn unauthenticated() -> Self {
        Error::new(ErrorKind::Unauthenticated, ErrorSource::Client, true, "a valid admin bearer token is required")
            .into()
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        // A quota deferred the call: the standard answer, with when to come back.
        let status = if error.retry_after_ms.is_some() { StatusCode::TOO_MANY_REQUESTS } else { status(error.kind) };
        Self { status, error }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = &self.error;
        let body = json!({ "error": { "kind": e.kind, "message": e.message, "retry_safe": e.retry_safe, "source": e.source } });
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(ms) = e.retry_after_ms
            && let Ok(v) = HeaderValue::from_str(&ms.div_ceil(1000).max(1).to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"switchyard-admin\""));
        }
        resp
    }
}
