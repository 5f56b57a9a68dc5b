//! `/console/approvals`: the signed-in tenant's held calls, one call's details, and the forms
//! that approve or deny it (as the admin API's `approve` and `deny` do, as the signed-in
//! caller).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use switchyard_contract::{Invocation, InvocationState, Invocations, ListQuery, StateName};

use super::{ConsoleState, caller, done, esc, failure, form, next_page, notice, page, posted, refusal, viewed};
use crate::auth::scope;

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
    let query = ListQuery {
        state: Some(StateName::AwaitingApproval),
        limit: Some(50),
        cursor: q.get("cursor").cloned(),
        ..ListQuery::default()
    };
    let found = match state.engine.list(&s.who.principal.tenant, query).await {
        Ok(p) => p,
        Err(e) => return failure(&e),
    };
    let mut body = String::new();
    body.push_str(&notice(&q));
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
    body.push_str(&next_page("/console/approvals?", found.next_cursor.as_ref()));
    page("Held calls", Some(&s), &body).into_response()
}

/// `GET /console/approvals/{id}`: what the call would do, why it waits, and the forms.
pub(super) async fn show(State(state): State<ConsoleState>, headers: HeaderMap, Path(raw): Path<String>) -> Response {
    let (s, inv) = match viewed(&state, &headers, &raw).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let request = serde_json::to_string_pretty(&inv.request).unwrap_or_default();
    let id = inv.id.to_string();
    let hold = state.engine.hold_of(&inv).await;
    let basis = hold.as_ref().map_or_else(String::new, |h| {
        format!("<dt>Decided by</dt><dd><code id=\"basis\">{}</code></dd>", esc(&h.basis))
    });
    let mut body = format!(
        "<dl><dt>Call</dt><dd><code id=\"call\">{id}</code></dd><dt>State</dt><dd id=\"state\">{}</dd>\
         <dt>Caller</dt><dd>{}</dd><dt>Target</dt><dd><code>{}</code> ({})</dd><dt>Why it waits</dt><dd>{}</dd>{basis}\
         <dt>Request digest</dt><dd><code>{}</code></dd><dt>Waiting since</dt><dd>{}</dd></dl>\
         <h2>Arguments</h2>{}<details><summary>The request as submitted</summary><pre id=\"request\">{}</pre></details>",
        esc(inv.state.name().as_str()),
        esc(&inv.principal.subject),
        esc(&inv.target.to_string()),
        esc(&format!("{:?}", inv.target.effect).to_lowercase()),
        esc(&held_because(&state, &inv).await),
        esc(&inv.digest.to_string()),
        switchyard_contract::iso8601(inv.created_at_ms),
        arguments_table(&inv.request),
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

/// The call's arguments as a table of name and value: a tool call's (and a bridged call's)
/// `arguments`, else the request's own fields.
fn arguments_table(request: &serde_json::Value) -> String {
    let fields = request.get("arguments").and_then(serde_json::Value::as_object).or_else(|| request.as_object());
    let Some(fields) = fields.filter(|f| !f.is_empty()) else {
        return "<p id=\"arguments\">No arguments.</p>".into();
    };
    let rows: String = fields
        .iter()
        .map(|(name, value)| {
            let shown = match value {
                serde_json::Value::String(s) => esc(s),
                other => format!("<code>{}</code>", esc(&serde_json::to_string_pretty(other).unwrap_or_default())),
            };
            format!("<tr><th scope=\"row\">{}</th><td>{shown}</td></tr>", esc(name))
        })
        .collect();
    format!("<table id=\"arguments\">{rows}</table>")
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
    let (s, _, id) = match posted(state, headers, scope::APPROVE, raw, body).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let who = &s.who.principal;
    let result = match deny {
        None => state.engine.approve(who, id).await.map(|_| format!("{id} approved; it runs now")),
        Some(reason) => {
            let reason = if reason.is_empty() { format!("denied by {}", who.subject) } else { reason };
            if reason.len() > 500 {
                return refusal(StatusCode::BAD_REQUEST, "the reason must be at most 500 characters");
            }
            state.engine.deny(who, id, reason).await.map(|_| format!("{id} denied; nothing runs"))
        }
    };
    match result {
        Ok(message) => done("/console/approvals", &message),
        Err(e) => failure(&e),
    }
}
