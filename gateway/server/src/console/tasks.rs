//! `/console/tasks`: the signed-in tenant's A2A tasks, newest status first, per exposed agent,
//! each with the run (invocation) that last wrote it. Another tenant's tasks never show.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use switchyard_contract::{TaskQuery, TaskScope};

use super::{ConsoleState, caller, esc, failure, page};
use crate::auth::scope;

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
            scope: TaskScope::tenant_wide(&s.who.principal, ""),
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
                "<tr data-id=\"{}\"><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{run}</td></tr>",
                esc(t.id.as_str()),
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
