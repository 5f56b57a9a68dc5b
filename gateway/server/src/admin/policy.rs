//! `POST /admin/v1/policy/decide`: the policy simulator. What the policy enforcement point would
//! rule on a call — a subject of the caller's tenant, an upstream and operation, the request as
//! the face would submit it, the face it would come through — from the same decision core and
//! the same policy as every call, changing nothing: nothing is admitted or audited, and no quota
//! token or concurrency slot is taken.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchyard_contract::{Ingress, Principal, Submission, Verdict};

use super::{AdminState, ApiError};
use crate::auth::Identity;

/// The body of `POST /admin/v1/policy/decide`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecideBody {
    /// Who would call (default: the caller); always of the caller's tenant.
    subject: Option<String>,
    upstream: String,
    operation: String,
    /// The request as the face would submit it: argument conditions read it by JSON pointer.
    request: Option<Value>,
    /// For an MCP tool: its arguments, as the request `{"arguments": …}`.
    arguments: Option<Map<String, Value>>,
    /// The face the call would come through (default `admin`).
    #[serde(default = "admin")]
    ingress: Ingress,
    /// A grant the call would present (a compact JWS).
    grant: Option<String>,
    /// A request that reaches an upstream without an invocation of its own (`resource:…`,
    /// `prompt:…`, `task:…`): decided as a `read_only` operation.
    #[serde(default)]
    passage: bool,
}

fn admin() -> Ingress {
    Ingress::Admin
}

/// A call to put to the simulator: `principal`'s call of `operation` on `upstream` with
/// `request`, through the face `ingress`.
pub(crate) fn question(
    principal: Principal,
    upstream: String,
    operation: String,
    request: Value,
    ingress: Ingress,
) -> Submission {
    Submission {
        principal,
        upstream,
        operation,
        request,
        ingress_key: None,
        ingress,
        caller: None,
        context: None,
        grant: None,
        parent: None,
        trace: None,
    }
}

pub(super) async fn decide(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = body.map_err(|_| ApiError::too_large(state.body_limit))?;
    let b: DecideBody =
        serde_json::from_slice(&body).map_err(|e| ApiError::invalid(format!("request body is not valid: {e}")))?;
    let request = match (b.request, b.arguments) {
        (Some(_), Some(_)) => return Err(ApiError::invalid("give `request` or `arguments`, not both")),
        (Some(r), None) => r,
        (None, Some(a)) => json!({ "arguments": a }),
        (None, None) => json!({}),
    };
    let subject = b.subject.unwrap_or_else(|| who.principal.subject.clone());
    if subject.is_empty() {
        return Err(ApiError::invalid("subject must not be empty"));
    }
    let principal = Principal::new(who.principal.tenant.clone(), subject);
    let mut s = question(principal.clone(), b.upstream, b.operation, request, b.ingress);
    s.grant = b.grant;
    let (target, ruling) = state.engine.simulate(&s, b.passage).await?;
    let mut answer = json!({
        "decision": ruling.verdict.name(),
        "basis": ruling.basis,
        "subject": {"tenant": principal.tenant.as_str(), "subject": principal.subject},
        "target": target,
        "ingress": b.ingress,
    });
    match ruling.verdict {
        Verdict::Allow => {}
        Verdict::Deny { reason } | Verdict::Hold { reason } => answer["reason"] = json!(reason),
        Verdict::Defer { retry_after_ms, reason } => {
            answer["reason"] = json!(reason);
            answer["retry_after_ms"] = json!(retry_after_ms);
        }
    }
    Ok(Json(answer))
}
