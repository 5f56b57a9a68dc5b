//! `/console/invocations`: the signed-in tenant's calls, filtered by state, `unknown` ones
//! first in the eye; one call's details and journal; and, for an `unknown` one, the form that
//! reconciles it (applied with its result, or not applied with a message), as the admin API's
//! `reconcile` does, as the signed-in caller.

use std::collections::HashMap;
use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::json;
use switchyard_contract::{Decision, Event, InvocationState, Invocations, ListQuery, StateName};

use super::{ConsoleState, caller, done, esc, failure, next_page, notice, page, posted, refusal, viewed};
use crate::auth::scope;

/// `GET /console/invocations[?state=…&cursor=…&done=…]`: newest first, 50 a page.
pub(super) async fn list(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let s = match caller(&state, &headers, scope::READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let filter = match q.get("state").filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => match StateName::parse(v) {
            Some(n) => Some(n),
            None => return refusal(StatusCode::BAD_REQUEST, &format!("`{v}` is not a state")),
        },
    };
    let upstream = q.get("upstream").map(|u| u.trim().to_string()).filter(|u| !u.is_empty());
    let protocol = q.get("protocol").filter(|p| !p.is_empty());
    // A protocol is the set of upstreams that speak it (from configuration).
    let of_protocol = match protocol {
        None => None,
        Some(p) => match state.protocols.iter().find(|(name, _)| name == p) {
            Some((_, ups)) => Some(ups.clone()),
            None => return refusal(StatusCode::BAD_REQUEST, &format!("`{p}` is not a protocol here")),
        },
    };
    let upstreams = match (&upstream, of_protocol) {
        (Some(u), Some(ups)) if !ups.contains(u) => Vec::new(),
        (Some(u), _) => vec![u.clone()],
        (None, Some(ups)) => ups,
        (None, None) => Vec::new(),
    };
    let nothing = (upstream.is_some() || protocol.is_some()) && upstreams.is_empty();
    let query =
        ListQuery { state: filter, upstreams, limit: Some(50), cursor: q.get("cursor").cloned(), subject: None };
    let found = if nothing {
        switchyard_contract::Page { items: Vec::new(), next_cursor: None }
    } else {
        match state.engine.list(&s.who.principal.tenant, query).await {
            Ok(p) => p,
            Err(e) => return failure(&e),
        }
    };
    let mut body = String::new();
    body.push_str(&notice(&q));
    let options: String = std::iter::once(("".to_string(), "any state".to_string()))
        .chain(StateName::ALL.iter().map(|n| (n.as_str().to_string(), n.as_str().to_string())))
        .map(|(v, label)| {
            let selected = if filter.map(StateName::as_str) == Some(v.as_str()) || (filter.is_none() && v.is_empty()) {
                " selected"
            } else {
                ""
            };
            format!("<option value=\"{v}\"{selected}>{label}</option>")
        })
        .collect();
    body.push_str(&format!(
        "<form method=\"get\" action=\"/console/invocations\" class=\"filters\"><label>State <select name=\"state\">{options}</select></label> \
         <label>Protocol <select name=\"protocol\">{}</select></label> \
         <label>Upstream <input name=\"upstream\" value=\"{}\" placeholder=\"any\"></label> <button type=\"submit\">Filter</button></form>",
        std::iter::once("")
            .chain(state.protocols.iter().map(|(p, _)| p.as_str()))
            .map(|p| {
                let selected = if protocol.map(String::as_str).unwrap_or("") == p { " selected" } else { "" };
                format!("<option value=\"{p}\"{selected}>{}</option>", if p.is_empty() { "any" } else { p })
            })
            .collect::<String>(),
        esc(upstream.as_deref().unwrap_or(""))
    ));
    if found.items.is_empty() {
        body.push_str("<p id=\"empty\">No calls.</p>");
    } else {
        body.push_str(
            "<table id=\"calls\"><thead><tr><th>Call</th><th>State</th><th>Caller</th><th>Target</th><th>Admitted</th>\
             </tr></thead><tbody>",
        );
        for inv in &found.items {
            let id = inv.id.to_string();
            let name = inv.state.name().as_str();
            let class = if matches!(inv.state, InvocationState::Unknown { .. }) { " class=\"unknown\"" } else { "" };
            body.push_str(&format!(
                "<tr data-id=\"{id}\" data-state=\"{name}\"{class}><td><a href=\"/console/invocations/{id}\">{id}</a></td>\
                 <td>{name}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                esc(&inv.principal.subject),
                esc(&inv.target.to_string()),
                switchyard_contract::iso8601(inv.created_at_ms)
            ));
        }
        body.push_str("</tbody></table>");
    }
    let up: String = form_urlencoded::byte_serialize(upstream.as_deref().unwrap_or("").as_bytes()).collect();
    let more = format!(
        "/console/invocations?state={}&amp;protocol={}&amp;upstream={up}&amp;",
        filter.map_or("", StateName::as_str),
        protocol.map_or("", |p| if state.protocols.iter().any(|(n, _)| n == p) { p.as_str() } else { "" })
    );
    body.push_str(&next_page(&more, found.next_cursor.as_ref()));
    page("Calls", Some(&s), &body).into_response()
}

/// `GET /console/invocations/{id}`: the call, its journal, and for an `unknown` one the
/// reconcile form.
pub(super) async fn show(State(state): State<ConsoleState>, headers: HeaderMap, Path(raw): Path<String>) -> Response {
    let (s, inv) = match viewed(&state, &headers, &raw).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let events = match state.engine.events(&inv.principal.tenant, inv.id, 0, 1000).await {
        Ok(e) => e,
        Err(e) => return failure(&e),
    };
    let id = inv.id.to_string();
    let state_json = serde_json::to_string_pretty(&inv.state).unwrap_or_default();
    // A call still under way follows its journal live (the page's one script).
    let live = if settled(&inv.state) {
        String::new()
    } else {
        let after = events.last().map_or(0, |e| e.seq);
        format!(" data-events=\"/console/invocations/{id}/events?after={after}\"")
    };
    let mut body = format!(
        "<dl><dt>Call</dt><dd><code id=\"call\">{id}</code></dd><dt>State</dt><dd id=\"state\">{}</dd>\
         <dt>Caller</dt><dd>{}</dd><dt>Target</dt><dd><code>{}</code></dd><dt>Attempts</dt><dd>{}</dd></dl>\
         <h2>Outcome</h2><pre id=\"outcome\">{}</pre><h2>Journal</h2><table id=\"journal\"{live}><thead><tr><th>#</th><th>At</th>\
         <th>What</th><th>Detail</th></tr></thead><tbody>",
        esc(inv.state.name().as_str()),
        esc(&inv.principal.subject),
        esc(&inv.target.to_string()),
        inv.attempts,
        esc(&state_json)
    );
    for e in &events {
        let (what, detail) = entry(e);
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            e.seq,
            switchyard_contract::iso8601(e.at_ms),
            esc(&what),
            esc(&detail)
        ));
    }
    body.push_str("</tbody></table>");
    if !live.is_empty() {
        body.push_str("<script src=\"/console/assets/live.js\" defer></script>");
    }
    if matches!(inv.state, InvocationState::Unknown { .. }) {
        let csrf = esc(&s.csrf);
        body.push_str(&format!(
            "<h2>Reconcile</h2><p class=\"hint\">The gateway cannot tell whether this write took effect upstream. \
             Check the upstream, then record what happened.</p><div class=\"actions\">\
             <form method=\"post\" action=\"/console/invocations/{id}/reconcile\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <input type=\"hidden\" name=\"decision\" value=\"applied\"><label>Result (JSON) <input name=\"result\" value=\"{{}}\"></label>\
             <button type=\"submit\" id=\"applied\">It was applied</button></form>\
             <form method=\"post\" action=\"/console/invocations/{id}/reconcile\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <input type=\"hidden\" name=\"decision\" value=\"not_applied\"><label>Message <input name=\"message\" maxlength=\"500\"></label>\
             <button type=\"submit\" id=\"not-applied\">It was not applied</button></form></div>"
        ));
    }
    page("Call", Some(&s), &body).into_response()
}

/// `POST /console/invocations/{id}/reconcile` (form: `csrf`, `decision` = `applied` with
/// `result` (JSON) or `not_applied` with `message`).
pub(super) async fn reconcile(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    body: Bytes,
) -> Response {
    let (s, f, id) = match posted(&state, &headers, scope::RECONCILE, &raw, &body).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let field = |k: &str| f.get(k).map(|v| v.trim().to_string()).unwrap_or_default();
    let decision = match field("decision").as_str() {
        "applied" => match serde_json::from_str(&field("result")) {
            Ok(result) => Decision::Applied { result },
            Err(e) => return refusal(StatusCode::BAD_REQUEST, &format!("the result is not JSON: {e}")),
        },
        "not_applied" if !field("message").is_empty() && field("message").len() <= 500 => {
            Decision::NotApplied { message: field("message") }
        }
        "not_applied" => return refusal(StatusCode::BAD_REQUEST, "say what happened (1 to 500 characters)"),
        _ => return refusal(StatusCode::BAD_REQUEST, "decision must be `applied` or `not_applied`"),
    };
    match state.engine.reconcile(&s.who.principal, id, decision).await {
        Ok(inv) => done("/console/invocations", &format!("{id} reconciled: {}", inv.state.name().as_str())),
        Err(e) => failure(&e),
    }
}

/// Whether the call has settled (its journal grows no more unless someone reconciles it).
fn settled(state: &InvocationState) -> bool {
    state.is_terminal() || matches!(state, InvocationState::Unknown { .. })
}

/// A journal entry as shown: what happened, and its details as JSON.
fn entry(e: &Event) -> (String, String) {
    let mut detail = serde_json::to_value(&e.kind).unwrap_or_default();
    let what = detail.get("type").and_then(|t| t.as_str()).unwrap_or("").to_string();
    if let Some(o) = detail.as_object_mut() {
        o.remove("type");
    }
    (what, detail.to_string())
}

/// `GET /console/invocations/{id}/events[?after=N]`: the call's new journal entries as
/// server-sent events (`change`: seq, at, what, detail, and the call's state and outcome after
/// it) until it settles; `Last-Event-ID` resumes. The signed-in tenant's calls only.
pub(super) async fn events(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (_, inv) = match viewed(&state, &headers, &raw).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let resumed = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    let after = resumed.or_else(|| q.get("after").and_then(|v| v.parse().ok())).unwrap_or(0);
    let (engine, tenant, id) = (state.engine.clone(), inv.principal.tenant.clone(), inv.id);
    let stream = state.engine.watch(tenant.clone(), id, after).then(move |item| {
        let (engine, tenant) = (engine.clone(), tenant.clone());
        async move {
            Ok::<_, Infallible>(match item {
                Ok(ev) => {
                    let now = engine.get(&tenant, id).await.ok();
                    let (what, detail) = entry(&ev);
                    let data = json!({
                        "seq": ev.seq,
                        "at": switchyard_contract::iso8601(ev.at_ms),
                        "what": what,
                        "detail": detail,
                        "state": now.as_ref().map(|i| i.state.name().as_str()),
                        "outcome": now.and_then(|i| serde_json::to_string_pretty(&i.state).ok()),
                    });
                    SseEvent::default().id(ev.seq.to_string()).event("change").data(data.to_string())
                }
                Err(e) => SseEvent::default().event("error").data(e.message),
            })
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

/// `GET /console/assets/live.js`: the call page's live journal.
pub(super) async fn live_js() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], LIVE_JS).into_response()
}

const LIVE_JS: &str = include_str!("assets/live.js");
