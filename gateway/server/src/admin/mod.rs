//! The admin HTTP API (`/admin/v1`), JSON over HTTP with a bearer token from configuration.
//! Until the protocol faces land it is the way in: submit, list, show, watch, cancel and
//! reconcile invocations. The caller names the tenant (`X-Switchyard-Tenant`, default
//! `default`) and subject (`X-Switchyard-Subject`, default `admin`).

mod error;
mod invocations;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use switchyard_contract::{Engine, Principal, TenantId};

pub use error::ApiError;

/// What the admin handlers share.
#[derive(Clone)]
pub struct AdminState {
    pub engine: Engine,
    pub token: Arc<str>,
    pub max_wait_ms: u64,
    pub body_limit: usize,
}

impl std::fmt::Debug for AdminState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminState").field("token", &"***").finish_non_exhaustive()
    }
}

/// The `/admin/v1` routes, behind the bearer-token check.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin/v1/invocations", post(invocations::submit).get(invocations::list))
        .route("/admin/v1/invocations/{id}", get(invocations::show))
        .route("/admin/v1/invocations/{id}/events", get(invocations::events))
        .route("/admin/v1/invocations/{id}/cancel", post(invocations::cancel))
        .route("/admin/v1/invocations/{id}/reconcile", post(invocations::reconcile))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state)
}

async fn require_token(State(state): State<AdminState>, req: Request, next: Next) -> Result<Response, ApiError> {
    let presented = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if constant_time_eq(presented.as_bytes(), state.token.as_bytes()) {
        Ok(next.run(req).await)
    } else {
        Err(ApiError::unauthenticated())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The calling principal from the tenant and subject headers.
fn principal(headers: &HeaderMap) -> Result<Principal, ApiError> {
    let header = |name: &str, default: &str| -> Result<String, ApiError> {
        match headers.get(name) {
            None => Ok(default.to_string()),
            Some(v) => v.to_str().map(str::to_string).map_err(|_| ApiError::invalid(format!("{name} must be ASCII"))),
        }
    };
    let tenant = TenantId::new(header("x-switchyard-tenant", "default")?)?;
    let subject = header("x-switchyard-subject", "admin")?;
    if subject.is_empty() || subject.len() > 200 {
        return Err(ApiError::invalid("X-Switchyard-Subject must be 1-200 characters"));
    }
    Ok(Principal::new(tenant, subject))
}

#[cfg(test)]
mod tests;
