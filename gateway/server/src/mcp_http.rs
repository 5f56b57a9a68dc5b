//! The MCP endpoints' authentication, and the admin view of upstream tool bindings.
//!
//! Every MCP request names its caller before rmcp sees it: the admin token (operator, tenant
//! from `X-Switchyard-Tenant`), an OAuth credential holding the endpoint's scope (its
//! `scope`, default `mcp:call`), or — only
//! when `mcp.anonymous` is on, which requires a loopback listener — nobody, as tenant
//! `default`, subject `anonymous`. The [`Principal`] goes into the request's extensions, where
//! the MCP face reads it.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use switchyard_contract::BindingStore;
use switchyard_mcp::{Catalog, VirtualServerConfig};

use crate::admin::ApiError;
use crate::auth::{Gatekeeper, scope};

/// `routes` (the endpoints of `servers`) behind authentication.
pub fn protect(routes: Router, gate: Gatekeeper, anonymous: bool, servers: &[VirtualServerConfig]) -> Router {
    let scopes =
        servers.iter().map(|s| (s.path.clone(), s.scope.clone().unwrap_or_else(|| scope::MCP.to_string()))).collect();
    crate::auth::protect(routes, gate, anonymous, scopes, scope::MCP, Vec::new())
}

#[derive(Clone)]
struct UpstreamsState {
    catalog: Arc<Catalog>,
    bindings: Arc<dyn BindingStore>,
    gate: Gatekeeper,
}

/// `GET /admin/v1/upstreams`: every discovered MCP tool with its binding (approved or
/// withheld after a schema change), for operators (admin token only).
pub fn upstreams_admin(catalog: Arc<Catalog>, bindings: Arc<dyn BindingStore>, gate: Gatekeeper) -> Router {
    Router::new().route("/admin/v1/upstreams", get(list)).with_state(UpstreamsState { catalog, bindings, gate })
}

async fn list(State(s): State<UpstreamsState>, req: Request) -> Response {
    let who = match s.gate.identify(req.headers()).await {
        Ok(who) => who,
        Err(refusal) => return refusal.into_response(),
    };
    if who.access != crate::auth::Access::Operator {
        return ApiError::from(switchyard_contract::Error::not_found("not found")).into_response();
    }
    s.catalog.refresh_approvals().await;
    let bindings = match s.bindings.list(None).await {
        Ok(b) => b,
        Err(e) => return ApiError::from(e).into_response(),
    };
    axum::Json(json!({ "tools": s.catalog.status(), "bindings": bindings })).into_response()
}
