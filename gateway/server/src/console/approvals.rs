//! `/console/approvals`: the signed-in tenant's held calls, one call's details, and the forms
//! that approve or deny it (as the admin API's `approve` and `deny` do, as the signed-in
//! caller).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use switchyard_contract::{Invocation, InvocationId, InvocationState, Invocations, ListQuery, StateName};

use super::{ConsoleState, Session, csrf_ok, esc, failure, form, page, refusal, session};
use crate::auth::{Refusal, scope};

/// The signed-in caller holding `needed`, or the response to send instead.
pub(super) async fn caller(state: &ConsoleState, headers: &HeaderMap, needed: &str) -> Result<Session, Response> {
    let s = session(state, headers).await?;
    state.gate.require(&s.who, &[needed]).map_err(IntoResponse::into_response)?;
    Ok(s)
}

/// Why the policy enforcement point held `inv`.
async fn held_because(state: &ConsoleState, inv: &Invocation) -> String {
    state.engine.hold_reason(inv).await.unwrap_or_default()
}

/// `GET /console/approvals[?cursor=…&done=…]`: the held calls, newest first, 50 a page.
pub(super) async fn list(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let s = match caller(&state, &headers, scope::READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let query =
        ListQuery { state: Some(StateName::AwaitingApproval), limit: Some(50), cursor: q.get("cursor").cloned() };
    let found = match state.engine.list(&s.who.principal.tenant, query).await {
        Ok(p) => p,
        Err(e) => return failure(&e),
    };
    let mut body = String::new();
    if let Some(done) = q.get("done") {
        body.push_str(&format!("<p class=\"notice\" role=\"status\">{}</p>", esc(done)));
    }
    if found.items.is_empty() {
        body.push_str("<p id=\"empty\">No call waits for approval.</p>");
    } else {
        body.push_str(
            "<table id=\"held\"><thead><tr><th>Call</th><th>Caller</th><th>Target</th><th>Why it waits</th>\
             <th>Waiting since</th></tr></thead><tbody>",
        );
        for inv in &found.items {
            let id = inv.id.to_string();
            body.push_str(&format!(
                "<tr data-id=\"{id}\"><td><a href=\"/console/approvals/{id}\">{id}</a></td><td>{}</td><td><code>{}</code></td>\
                 <td>{}</td><td>{}</td></tr>",
                esc(&inv.principal.subject),
                esc(&inv.target.to_string()),
                esc(&held_because(&state, inv).await),
                switchyard_contract::iso8601(inv.created_at_ms)
            ));
        }
        body.push_str("</tbody></table>");
    }
    if let Some(next) = &found.next_cursor {
        let next: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
        body.push_str(&format!("<p><a href=\"/console/approvals?cursor={next}\">Next page</a></p>"));
    }
    page("Held calls", Some(&s), &body).into_response()
}

/// `GET /console/approvals/{id}`: what the call would do, why it waits, and the forms.
pub(super) async fn show(State(state): State<ConsoleState>, headers: HeaderMap, Path(raw): Path<String>) -> Response {
    let s = match caller(&state, &headers, scope::READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let inv = match load(&state, &s, &raw).await {
        Ok(inv) => inv,
        Err(r) => return r,
    };
    let request = serde_json::to_string_pretty(&inv.request).unwrap_or_default();
    let id = inv.id.to_string();
    let mut body = format!(
        "<dl><dt>Call</dt><dd><code id=\"call\">{id}</code></dd><dt>State</dt><dd id=\"state\">{}</dd>\
         <dt>Caller</dt><dd>{}</dd><dt>Target</dt><dd><code>{}</code> ({})</dd><dt>Why it waits</dt><dd>{}</dd>\
         <dt>Request digest</dt><dd><code>{}</code></dd><dt>Waiting since</dt><dd>{}</dd></dl>\
         <h2>Arguments</h2><pre id=\"request\">{}</pre>",
        esc(inv.state.name().as_str()),
        esc(&inv.principal.subject),
        esc(&inv.target.to_string()),
        esc(&format!("{:?}", inv.target.effect).to_lowercase()),
        esc(&held_because(&state, &inv).await),
        esc(&inv.digest.to_string()),
        switchyard_contract::iso8601(inv.created_at_ms),
        esc(&request)
    );
    if matches!(inv.state, InvocationState::AwaitingApproval) {
        let csrf = esc(&s.csrf);
        body.push_str(&format!(
            "<div class=\"actions\"><form method=\"post\" action=\"/console/approvals/{id}/approve\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><button type=\"submit\" id=\"approve\">Approve and run</button></form>\
             <form method=\"post\" action=\"/console/approvals/{id}/deny\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <label>Reason <input name=\"reason\" maxlength=\"500\"></label><button type=\"submit\" id=\"deny\">Deny</button></form></div>"
        ));
    }
    page("Held call", Some(&s), &body).into_response()
}

/// `POST /console/approvals/{id}/approve` (form: `csrf`).
pub(super) async fn approve(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    body: Bytes,
) -> Response {
    decide(&state, &headers, &raw, &body, None).await
}

/// `POST /console/approvals/{id}/deny` (form: `csrf`, `reason`).
pub(super) async fn deny(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    body: Bytes,
) -> Response {
    let reason = form(&body).get("reason").map(|r| r.trim().to_string()).unwrap_or_default();
    decide(&state, &headers, &raw, &body, Some(reason)).await
}

/// Approves (`deny` none) or denies the call as the signed-in caller, then back to the list.
async fn decide(state: &ConsoleState, headers: &HeaderMap, raw: &str, body: &Bytes, deny: Option<String>) -> Response {
    let s = match caller(state, headers, scope::APPROVE).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if !csrf_ok(&s, &form(body)) {
        return refusal(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or wrong: reload the page and try again",
        );
    }
    let id = match parse_id(raw) {
        Ok(id) => id,
        Err(r) => return r.into_response(),
    };
    let who = &s.who.principal;
    let done = match deny {
        None => state.engine.approve(who, id).await.map(|_| format!("{id} approved; it runs now")),
        Some(reason) => {
            let reason = if reason.is_empty() { format!("denied by {}", who.subject) } else { reason };
            if reason.len() > 500 {
                return refusal(StatusCode::BAD_REQUEST, "the reason must be at most 500 characters");
            }
            state.engine.deny(who, id, reason).await.map(|_| format!("{id} denied; nothing runs"))
        }
    };
    match done {
        Ok(done) => {
            let done: String = form_urlencoded::byte_serialize(done.as_bytes()).collect();
            Redirect::to(&format!("/console/approvals?done={done}")).into_response()
        }
        Err(e) => failure(&e),
    }
}

pub(super) fn parse_id(raw: &str) -> Result<InvocationId, Refusal> {
    raw.parse()
        .map_err(|e: switchyard_contract::id::ParseIdError| refusal(StatusCode::BAD_REQUEST, &e.to_string()).into())
}

/// The call `raw` names, of the signed-in tenant only (another tenant's is not found).
pub(super) async fn load(state: &ConsoleState, s: &Session, raw: &str) -> Result<Invocation, Response> {
    let id = parse_id(raw).map_err(IntoResponse::into_response)?;
    state.engine.get(&s.who.principal.tenant, id).await.map_err(|e| failure(&e))
}
