//! The admin HTTP API (`/admin/v1`), JSON over HTTP. Until the protocol faces land it is the
//! way in: submit, list, show, watch, cancel and reconcile invocations. Callers authenticate
//! through the [`Gatekeeper`]: the operator's admin token (tenant from `X-Switchyard-Tenant`,
//! default `default`; subject from `X-Switchyard-Subject`, default `admin`), or an OAuth
//! credential whose token names the tenant and grants the scopes each operation needs
//! (`invocations:read`, `invocations:write`, `invocations:reconcile`, `invocations:approve`,
//! `policy:read` for the policy simulator).

mod invocations;
mod policy;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use switchyard_contract::Engine;

use crate::auth::{Gatekeeper, scope};

pub use crate::api_error::ApiError;
pub(crate) use policy::question;

/// What the admin handlers share.
#[derive(Debug, Clone)]
pub struct AdminState {
    pub engine: Engine,
    pub gate: Gatekeeper,
    pub max_wait_ms: u64,
    pub body_limit: usize,
}

/// The `/admin/v1` routes, behind authentication and per-operation scopes.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin/v1/invocations", post(invocations::submit).get(invocations::list))
        .route("/admin/v1/invocations/{id}", get(invocations::show))
        .route("/admin/v1/invocations/{id}/events", get(invocations::events))
        .route("/admin/v1/invocations/{id}/cancel", post(invocations::cancel))
        .route("/admin/v1/invocations/{id}/reconcile", post(invocations::reconcile))
        .route("/admin/v1/invocations/{id}/approve", post(invocations::approve))
        .route("/admin/v1/invocations/{id}/deny", post(invocations::deny))
        .route("/admin/v1/policy/decide", post(policy::decide))
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize))
        .with_state(state)
}

/// The scope an admin operation needs.
fn needed(method: &Method, path: &str) -> &'static str {
    match (method, path) {
        (&Method::GET, _) => scope::READ,
        (_, "/admin/v1/policy/decide") => scope::POLICY_READ,
        (_, p) if p.ends_with("/reconcile") => scope::RECONCILE,
        (_, p) if p.ends_with("/approve") || p.ends_with("/deny") => scope::APPROVE,
        _ => scope::WRITE,
    }
}

async fn authorize(State(state): State<AdminState>, mut req: Request, next: Next) -> Response {
    let who = match state.gate.identify(req.headers()).await {
        Ok(who) => who,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = state.gate.require(&who, &[needed(req.method(), req.uri().path())]) {
        return refusal.into_response();
    }
    req.extensions_mut().insert(who);
    next.run(req).await
}

#[cfg(test)]
mod tests;
