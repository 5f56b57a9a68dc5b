//! `/admin/v1/invocations` handlers: parse, call the engine, render.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchyard_contract::{
    Decision, IngressKey, Invocation, InvocationId, InvocationState, Invocations, ListQuery, StateName, Submission,
    client_stays,
};

use super::{AdminState, ApiError};
use crate::auth::Identity;

/// The body of `POST /admin/v1/invocations`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmitBody {
    upstream: String,
    operation: String,
    #[serde(default)]
    request: Value,
    idempotency_key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitQuery {
    /// Wait up to this long for a terminal (or `unknown`) state before answering.
    wait_ms: Option<u64>,
}

impl WaitQuery {
    /// The wait asked for (0 when none), refused above `max_ms`.
    fn wait_ms(&self, max_ms: u64) -> Result<u64, ApiError> {
        match self.wait_ms.unwrap_or(0) {
            wait if wait > max_ms => Err(ApiError::invalid(format!("wait_ms must be at most {max_ms}"))),
            wait => Ok(wait),
        }
    }
}

fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("request body is not valid: {e}")))
}

/// Invocation `id` if `who` may see it: its own, or any of its tenant's for a tenant-wide
/// reader. Another subject's answers exactly as an id that does not exist.
async fn owned(state: &AdminState, who: &Identity, id: InvocationId) -> Result<Invocation, ApiError> {
    let inv = state.engine.get(&who.principal.tenant, id).await?;
    if who.tenant_wide() || inv.principal.subject == who.principal.subject {
        Ok(inv)
    } else {
        Err(switchyard_contract::Error::invocation_not_found(id).into())
    }
}

fn id(raw: &str) -> Result<InvocationId, ApiError> {
    raw.parse().map_err(|e: switchyard_contract::id::ParseIdError| ApiError::invalid(e.to_string()))
}

pub(super) async fn submit(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    headers: HeaderMap,
    Query(q): Query<WaitQuery>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|_| ApiError::too_large(state.body_limit))?;
    let who = who.principal;
    let b: SubmitBody = parse(&body)?;
    let header_key = headers.get("idempotency-key").map(|v| v.to_str().map(str::to_string));
    let header_key = header_key.transpose().map_err(|_| ApiError::invalid("Idempotency-Key must be ASCII"))?;
    let key = match (header_key, b.idempotency_key) {
        (Some(h), Some(k)) if h != k => {
            return Err(ApiError::invalid("Idempotency-Key header and body idempotency_key differ"));
        }
        (h, k) => h.or(k).map(IngressKey::new).transpose()?,
    };
    let wait = q.wait_ms(state.max_wait_ms)?;
    let submission = Submission {
        principal: who,
        upstream: b.upstream,
        operation: b.operation,
        request: b.request,
        ingress_key: key,
        ingress: switchyard_contract::Ingress::Admin,
        caller: None,
        context: None,
        grant: headers.get("switchyard-grant").and_then(|v| v.to_str().ok()).map(str::to_string),
        parent: None,
        trace: headers.get("traceparent").and_then(|v| v.to_str().ok()).and_then(|t| {
            switchyard_contract::TraceParent::parse(t, headers.get("tracestate").and_then(|v| v.to_str().ok()))
        }),
    };
    let submitted = if wait > 0 {
        state.engine.submit_and_wait(submission, Duration::from_millis(wait), client_stays()).await?.submitted
    } else {
        state.engine.submit(submission).await?
    };
    let inv = submitted.invocation;
    let status = match (submitted.created, &inv.state) {
        // Held by the policy enforcement point: accepted, runs once approved.
        (_, InvocationState::AwaitingApproval) => StatusCode::ACCEPTED,
        (true, _) => StatusCode::CREATED,
        (false, _) => StatusCode::OK,
    };
    let mut resp = (status, Json(&inv)).into_response();
    if let Ok(loc) = HeaderValue::from_str(&format!("/admin/v1/invocations/{}", inv.id)) {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(resp)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListParams {
    state: Option<String>,
    upstream: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

pub(super) async fn list(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    Query(p): Query<ListParams>,
) -> Result<Response, ApiError> {
    let subject = (!who.tenant_wide()).then(|| who.principal.subject.clone());
    let who = who.principal;
    let filter = p
        .state
        .map(|s| StateName::parse(&s).ok_or_else(|| ApiError::invalid(format!("unknown state `{s}`"))))
        .transpose()?;
    let query = ListQuery {
        state: filter,
        upstreams: p.upstream.into_iter().collect(),
        limit: p.limit,
        cursor: p.cursor,
        subject,
    };
    let page = state.engine.list(&who.tenant, query).await?;
    Ok(Json(page).into_response())
}

/// The invocation; with `wait_ms`, once it settles (terminal, `unknown`, or held) or that
/// passes: a read answered through the MCP face before its outcome committed is seen recorded.
pub(super) async fn show(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    Path(raw): Path<String>,
    Query(q): Query<WaitQuery>,
) -> Result<Response, ApiError> {
    let id = id(&raw)?;
    let wait = q.wait_ms(state.max_wait_ms)?;
    let inv = owned(&state, &who, id).await?;
    let inv = match wait {
        0 => inv,
        wait => state.engine.wait(&who.principal.tenant, id, Duration::from_millis(wait)).await?,
    };
    Ok(Json(inv).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EventParams {
    after: Option<u64>,
    limit: Option<u32>,
}

/// JSON page of events, or with `Accept: text/event-stream` a live SSE stream that resumes
/// after `after` (or `Last-Event-ID`) and ends after the terminal event.
pub(super) async fn events(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    Query(p): Query<EventParams>,
) -> Result<Response, ApiError> {
    let inv = owned(&state, &who, id(&raw)?).await?.id;
    let who = who.principal;
    let wants_sse =
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/event-stream"));
    if !wants_sse {
        let limit = p.limit.unwrap_or(100);
        if !(1..=1000).contains(&limit) {
            return Err(ApiError::invalid("limit must be within 1..=1000"));
        }
        return Ok(Json(state.engine.events(&who.tenant, inv, p.after.unwrap_or(0), limit).await?).into_response());
    }
    let last_id = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    let after = p.after.or(last_id).unwrap_or(0);
    let stream = state.engine.watch(who.tenant, inv, after).map(|item| {
        Ok::<_, Infallible>(match item {
            Ok(ev) => SseEvent::default()
                .id(ev.seq.to_string())
                .event(ev.kind.name())
                .json_data(&ev)
                .unwrap_or_else(|_| SseEvent::default().event("error")),
            Err(e) => SseEvent::default().event("error").data(e.message),
        })
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

pub(super) async fn cancel(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = owned(&state, &who, id(&raw)?).await?.id;
    let inv = state.engine.cancel(&who.principal, id).await?;
    let status = if inv.state.is_terminal() { StatusCode::OK } else { StatusCode::ACCEPTED };
    Ok((status, Json(inv)).into_response())
}

pub(super) async fn reconcile(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    Path(raw): Path<String>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|_| ApiError::too_large(state.body_limit))?;
    let who = who.principal;
    let decision: Decision = parse(&body)?;
    Ok(Json(state.engine.reconcile(&who, id(&raw)?, decision).await?).into_response())
}

/// `POST …/{id}/approve`: lets a held call run (by someone other than its caller).
pub(super) async fn approve(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(state.engine.approve(&who.principal, id(&raw)?).await?).into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DenyBody {
    reason: Option<String>,
}

/// `POST …/{id}/deny` with an optional `{"reason": …}`: the held call fails, nothing runs.
pub(super) async fn deny(
    State(state): State<AdminState>,
    Extension(who): Extension<Identity>,
    Path(raw): Path<String>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|_| ApiError::too_large(state.body_limit))?;
    let b: DenyBody = if body.is_empty() { DenyBody::default() } else { parse(&body)? };
    let reason = b.reason.unwrap_or_else(|| format!("denied by {}", who.principal.subject));
    Ok(Json(state.engine.deny(&who.principal, id(&raw)?, reason).await?).into_response())
}
