//! `/console/tasks`: the signed-in caller's A2A tasks (its tenant's, for a tenant-wide reader),
//! newest status first, per exposed agent, each with the run (invocation) that last wrote it.
//! Another tenant's tasks never show, nor another subject's to a caller who reads only its own.
//! `/console/tasks/{agent}/{id}`: one task as a conversation, read from its event log in order —
//! the messages (the caller's and the agent's), each part by its type (text; data as formatted
//! JSON; files and links as links, a kept artifact as its download), the status changes between
//! them, the artifacts as they came — and the run that last wrote it.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use switchyard_contract::{TaskId, TaskQuery, TaskScope};

use super::{ConsoleState, caller, esc, failure, page, refusal};
use crate::auth::scope;
use switchyard_a2a::hub::KEPT_SCHEME;

/// The most events of one task the conversation page reads.
const MAX_EVENTS: u32 = 500;

/// How many tasks of each agent the page shows.
const PER_AGENT: u32 = 50;

/// `GET /console/tasks`.
pub(super) async fn list(State(state): State<ConsoleState>, headers: HeaderMap) -> Response {
    let s = match caller(&state, &headers, scope::READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let Some(tasks) = &state.tasks else {
        return page("A2A tasks", Some(&s), "<p id=\"empty\">No A2A agent is configured.</p>").into_response();
    };
    let mut body = String::new();
    for agent in tasks.agents.iter() {
        let query = TaskQuery {
            scope: scope_of(&s),
            agent: agent.clone(),
            context_id: None,
            state: None,
            status_after_ms: None,
            after: None,
            limit: PER_AGENT,
        };
        let (rows, total) = match tasks.store.list(&query).await {
            Ok(found) => found,
            Err(e) => return failure(&e),
        };
        body.push_str(&format!("<h2>{}</h2>", esc(agent)));
        if rows.is_empty() {
            body.push_str("<p class=\"hint\">No task.</p>");
            continue;
        }
        body.push_str(&format!(
            "<table class=\"tasks\" data-agent=\"{}\"><thead><tr><th>Task</th><th>Context</th><th>State</th><th>Since</th>\
             <th>Last run</th></tr></thead><tbody>",
            esc(agent)
        ));
        for t in &rows {
            let run = t.run_cursor.as_ref().map_or_else(String::new, |r| {
                format!("<a href=\"/console/invocations/{0}\"><code>{0}</code></a>", r.invocation)
            });
            body.push_str(&format!(
                "<tr data-id=\"{}\"><td><a href=\"/console/tasks/{}/{}\"><code>{}</code></a></td><td><code>{}</code></td>\
                 <td>{}</td><td>{}</td><td>{run}</td></tr>",
                esc(t.id.as_str()),
                esc(&segment(agent)),
                esc(&segment(t.id.as_str())),
                esc(t.id.as_str()),
                esc(t.context_id.as_str()),
                esc(t.state.as_str()),
                switchyard_contract::iso8601(t.status_ms)
            ));
        }
        body.push_str("</tbody></table>");
        if total > i64::from(PER_AGENT) {
            body.push_str(&format!("<p class=\"hint\">The newest {PER_AGENT} of {total}.</p>"));
        }
    }
    page("A2A tasks", Some(&s), &body).into_response()
}

/// The tasks `s` reads: every subject's of the tenant for a tenant-wide reader (the operator,
/// `tasks:admin`), else only its own — another subject's task is as absent as a missing one.
fn scope_of(s: &super::Session) -> TaskScope {
    match s.who.tenant_wide() {
        true => TaskScope::tenant_wide(&s.who.principal, ""),
        false => TaskScope::of(&s.who.principal, ""),
    }
}

/// `s` as one URL path segment.
fn segment(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20")
}

/// `GET /console/tasks/{agent}/{id}`: the task as a conversation. Another subject's task (for a
/// caller who is not a tenant-wide reader) and another tenant's are "not found".
pub(super) async fn show(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path((agent, id)): Path<(String, String)>,
) -> Response {
    let s = match caller(&state, &headers, scope::READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let missing = || refusal(StatusCode::NOT_FOUND, &format!("task `{id}` not found"));
    let Some(tasks) = state.tasks.as_ref().filter(|t| t.agents.contains(&agent)) else { return missing() };
    let scope = scope_of(&s);
    let task_id = TaskId::from(id.as_str());
    let rec = match tasks.store.get(&scope, &task_id).await {
        Ok(Some(rec)) if rec.agent == agent => rec,
        Ok(_) => return missing(),
        Err(e) => return failure(&e),
    };
    let events = match tasks.store.events_after(&task_id, 0, MAX_EVENTS).await {
        Ok(e) => e,
        Err(e) => return failure(&e),
    };
    let run = rec.run_cursor.as_ref().map_or_else(String::new, |r| {
        format!("<dt>Last run</dt><dd><a href=\"/console/invocations/{0}\"><code>{0}</code></a></dd>", r.invocation)
    });
    let mut body = format!(
        "<dl><dt>Task</dt><dd><code id=\"task\">{}</code></dd><dt>Agent</dt><dd>{}</dd><dt>Context</dt>\
         <dd><code>{}</code></dd><dt>State</dt><dd id=\"state\">{}</dd><dt>Since</dt><dd>{}</dd>{run}</dl>\
         <h2>Conversation</h2><ol id=\"conversation\" class=\"conversation\">",
        esc(rec.id.as_str()),
        esc(&agent),
        esc(rec.context_id.as_str()),
        esc(rec.state.as_str()),
        switchyard_contract::iso8601(rec.status_ms),
    );
    let mut shown_first = false;
    for (_, event) in &events {
        body.push_str(&turn(event, &mut shown_first));
    }
    body.push_str("</ol>");
    if events.len() == MAX_EVENTS as usize {
        body.push_str(&format!("<p class=\"hint\">The first {MAX_EVENTS} events.</p>"));
    }
    page("A2A task", Some(&s), &body).into_response()
}

/// One event of the task's log as part of the conversation. The first task snapshot holds the
/// message that started the task; later snapshots are the gateway's bookkeeping (skipped).
fn turn(event: &Value, shown_first: &mut bool) -> String {
    if let Some(task) = event.get("task") {
        if std::mem::replace(shown_first, true) {
            return String::new();
        }
        let history = task.get("history").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let started = history.iter().map(message).collect::<String>();
        let state = task.pointer("/status/state").and_then(Value::as_str).unwrap_or_default();
        return format!("{started}<li class=\"status\">{}</li>", esc(&short(state)));
    }
    if let Some(m) = event.get("message") {
        return message(m);
    }
    if let Some(update) = event.get("statusUpdate") {
        let state = update.pointer("/status/state").and_then(Value::as_str).unwrap_or_default();
        let when = update.pointer("/status/timestamp").and_then(Value::as_str).unwrap_or_default();
        let said = update.pointer("/status/message").map(message).unwrap_or_default();
        return format!("{said}<li class=\"status\">{} <small>{}</small></li>", esc(&short(state)), esc(when));
    }
    if let Some(a) = event.pointer("/artifactUpdate/artifact") {
        let name = a.get("name").or_else(|| a.get("artifactId")).and_then(Value::as_str).unwrap_or("artifact");
        return format!("<li class=\"artifact\"><b>Artifact {}</b>{}</li>", esc(name), parts(a));
    }
    String::new()
}

/// `TASK_STATE_WORKING` as `working`.
fn short(state: &str) -> String {
    state.strip_prefix("TASK_STATE_").unwrap_or(state).to_ascii_lowercase().replace('_', " ")
}

/// A message as a turn: who said it, and its parts.
fn message(m: &Value) -> String {
    let who = match m.get("role").and_then(Value::as_str) {
        Some("ROLE_USER") => "user",
        _ => "agent",
    };
    format!("<li class=\"{who}\"><b>{}</b>{}</li>", if who == "user" { "Caller" } else { "Agent" }, parts(m))
}

/// The parts of a message or an artifact, each by its type.
fn parts(holder: &Value) -> String {
    let list = holder.get("parts").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .map(|p| {
            let name = p.get("filename").and_then(Value::as_str);
            let media = p.get("mediaType").and_then(Value::as_str).unwrap_or("");
            if let Some(t) = p.get("text").and_then(Value::as_str) {
                format!("<p class=\"text\">{}</p>", esc(t))
            } else if let Some(d) = p.get("data") {
                format!("<pre class=\"data\">{}</pre>", esc(&serde_json::to_string_pretty(d).unwrap_or_default()))
            } else if let Some(u) = p.get("url").and_then(Value::as_str) {
                match u.strip_prefix(KEPT_SCHEME) {
                    Some(id) => format!(
                        "<p class=\"file\"><a href=\"/console/artifacts/{}/download\">{}</a> <small>{}</small></p>",
                        esc(&segment(id)),
                        esc(name.unwrap_or(id)),
                        esc(media)
                    ),
                    // Only a web address is a link: an agent's `javascript:` or `data:` URL is text.
                    None if u.starts_with("https://") || u.starts_with("http://") => format!(
                        "<p class=\"link\"><a href=\"{}\" rel=\"noopener noreferrer\">{}</a> <small>{}</small></p>",
                        esc(u),
                        esc(name.unwrap_or(u)),
                        esc(media)
                    ),
                    None => format!("<p class=\"link\"><code>{}</code> <small>{}</small></p>", esc(u), esc(media)),
                }
            } else if let Some(raw) = p.get("raw").and_then(Value::as_str) {
                let bytes = raw.len() / 4 * 3;
                format!(
                    "<p class=\"file\">{} <small>{} · about {bytes} bytes, inline</small></p>",
                    esc(name.unwrap_or("bytes")),
                    esc(media)
                )
            } else {
                String::new()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_log_reads_as_a_conversation() {
        let user = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "report on <gateways>"}]});
        let events = [
            json!({"task": {"id": "t", "history": [user], "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            json!({"statusUpdate": {"status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-12-07T10:00:00Z"}}}),
            json!({"artifactUpdate": {"artifact": {"artifactId": "a", "name": "report", "parts": [
                {"data": {"n": 1}}, {"url": "switchyard-artifact:art_1", "filename": "r.pdf", "mediaType": "application/pdf"},
                {"url": "javascript:alert(1)"}]}}}),
            json!({"task": {"id": "t", "metadata": {"k": 1}}}),
            json!({"statusUpdate": {"status": {"state": "TASK_STATE_INPUT_REQUIRED",
                "message": {"role": "ROLE_AGENT", "parts": [{"text": "which colour?"}]}}}}),
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "green"}]}}),
        ];
        let mut first = false;
        let html: String = events.iter().map(|e| turn(e, &mut first)).collect();
        let order = [
            "report on &lt;gateways&gt;",
            "submitted",
            "working",
            "Artifact report",
            "&quot;n&quot;: 1",
            "/console/artifacts/art_1/download",
            "which colour?",
            "input required",
            "green",
        ];
        let mut at = 0;
        for want in order {
            let found = html[at..].find(want).unwrap_or_else(|| panic!("`{want}` after {at} in {html}"));
            at += found;
        }
        assert_eq!(html.matches("class=\"status\"").count(), 3, "a later snapshot is not a turn: {html}");
        assert!(!html.contains("href=\"javascript:") && html.contains("<code>javascript:alert(1)</code>"), "{html}");
    }
}
