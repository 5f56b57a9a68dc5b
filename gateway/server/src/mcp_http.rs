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
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use switchyard_contract::BindingStore;
use switchyard_mcp::{Catalog, VirtualServerConfig};

use crate::api_error::ApiError;
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

/// `GET /admin/v1/upstreams`: every discovered MCP tool and skill with its binding (approved or
/// withheld after a schema or manifest change), and `POST /admin/v1/upstreams/{upstream}/approve`
/// (`{"tool"?}` or `{"skill"?}`: one tool or skill, else every changed one) — for operators
/// (admin token only): the pins are gateway-wide, not a tenant's.
pub fn upstreams_admin(catalog: Arc<Catalog>, bindings: Arc<dyn BindingStore>, gate: Gatekeeper) -> Router {
    Router::new()
        .route("/admin/v1/upstreams", get(list))
        .route("/admin/v1/upstreams/{upstream}/approve", post(approve))
        .with_state(UpstreamsState { catalog, bindings, gate })
}

/// The operator making `headers`' request, or the refusal to send (another caller is told the
/// route does not exist).
async fn operator(s: &UpstreamsState, headers: &HeaderMap) -> Result<crate::auth::Identity, Response> {
    let who = s.gate.identify(headers).await.map_err(IntoResponse::into_response)?;
    if who.access != crate::auth::Access::Operator {
        return Err(ApiError::from(switchyard_contract::Error::not_found("not found")).into_response());
    }
    Ok(who)
}

async fn list(State(s): State<UpstreamsState>, req: Request) -> Response {
    if let Err(r) = operator(&s, req.headers()).await {
        return r;
    }
    s.catalog.refresh_approvals().await;
    let bindings = match s.bindings.list(None).await {
        Ok(b) => b,
        Err(e) => return ApiError::from(e).into_response(),
    };
    axum::Json(json!({ "tools": s.catalog.status(), "bindings": bindings })).into_response()
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    tool: Option<String>,
    /// A skill by its path at the upstream (SEP-2640).
    skill: Option<String>,
}

async fn approve(
    State(s): State<UpstreamsState>,
    Path(upstream): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let who = match operator(&s, &headers).await {
        Ok(who) => who,
        Err(r) => return r,
    };
    let b: ApproveBody = if body.is_empty() {
        ApproveBody { tool: None, skill: None }
    } else {
        match serde_json::from_slice(&body) {
            Ok(b) => b,
            Err(e) => {
                let e = format!("the body must be {{\"tool\"?: string}} or {{\"skill\"?: string}}: {e}");
                return ApiError::invalid(e).into_response();
            }
        }
    };
    let known = match s.bindings.list(Some(&upstream)).await {
        Ok(k) => k,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let only = match (&b.tool, &b.skill) {
        (Some(_), Some(_)) => return ApiError::invalid("name a tool or a skill, not both").into_response(),
        (Some(t), None) => Some((t.as_str(), switchyard_mcp::catalog::TOOL_PINS, "tool")),
        (None, Some(k)) => Some((k.as_str(), switchyard_mcp::skills::SKILL_PINS, "skill")),
        (None, None) => None,
    };
    let missing = match only {
        Some((n, kinds, _)) => !known.iter().any(|k| k.name == n && kinds.contains(&k.kind.as_str())),
        None => known.is_empty(),
    };
    if missing {
        let what = only.map_or_else(|| "no pinned tools".to_string(), |(n, _, kind)| format!("no pinned {kind} `{n}`"));
        let e = switchyard_contract::Error::not_found(format!("upstream `{upstream}` has {what}"));
        return ApiError::from(e).into_response();
    }
    match s.bindings.approve(&upstream, only.map(|(n, kinds, _)| (n, kinds)), &who.principal.subject).await {
        Ok(n) => {
            s.catalog.approvals_changed().await;
            axum::Json(json!({ "upstream": upstream, "approved": n })).into_response()
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}
