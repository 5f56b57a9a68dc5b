//! `/console/upstreams`: every pinned upstream tool (its schema, and its description and
//! annotations), approved or withheld after a change, with the forms that approve what discovery
//! last saw — as `switchyard upstreams approve` does. The pins are gateway-wide, not a tenant's:
//! only the operator's admin token sees and approves them.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{ConsoleState, caller, done, esc, failure, form_post, not_operator, notice, page, refusal};
use crate::auth::scope;

/// `GET /console/upstreams[?done=…]`: the pins, withheld ones first, each with its form.
pub(super) async fn list(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let s = match caller(&state, &headers, scope::READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Some(r) = not_operator(&s, "upstream pins are gateway-wide") {
        return r;
    }
    let Some(pins) = &state.pins else {
        return page("Upstreams", Some(&s), "<p id=\"empty\">No MCP upstream is configured.</p>").into_response();
    };
    let all = match pins.bindings.list(None).await {
        Ok(b) => b,
        Err(e) => return failure(&e),
    };
    // One row per tool: its schema pin and its description pin, withheld tools first.
    let mut tools: Vec<(&str, &str, Vec<&switchyard_contract::Binding>)> = Vec::new();
    for b in &all {
        match tools.iter_mut().find(|(u, n, _)| *u == b.upstream && *n == b.name) {
            Some(t) => t.2.push(b),
            None => tools.push((&b.upstream, &b.name, vec![b])),
        }
    }
    tools.sort_by_key(|(u, n, pins)| (pins.iter().all(|b| b.is_approved()), *u, *n));
    let mut body = notice(&q);
    if tools.is_empty() {
        body.push_str("<p id=\"empty\">Nothing is pinned yet: tools are pinned when discovery first sees them.</p>");
    } else {
        body.push_str(
            "<table id=\"pins\"><thead><tr><th>Upstream</th><th>Tool</th><th>Status</th><th>Approved by</th>\
             <th>Changed</th><th></th></tr></thead><tbody>",
        );
        let csrf = esc(&s.csrf);
        for (upstream, name, pins) in &tools {
            let changed: Vec<&str> =
                pins.iter()
                    .filter(|b| !b.is_approved())
                    .map(|b| {
                        if b.kind == switchyard_mcp::catalog::TOOL_META {
                            "description or annotations"
                        } else {
                            "schema"
                        }
                    })
                    .collect();
            let latest = pins.iter().max_by_key(|b| b.updated_at_ms);
            let by = latest.and_then(|b| b.approved_by.as_deref()).unwrap_or("-");
            let when = latest.map_or(0, |b| b.updated_at_ms);
            let (class, status, form) = if changed.is_empty() {
                ("", "approved".to_string(), String::new())
            } else {
                (
                    "unknown",
                    format!("<b>withheld</b>: its {} changed", changed.join(" and ")),
                    format!(
                        "<form method=\"post\" action=\"/console/upstreams/{}/approve\">\
                         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"tool\" value=\"{}\">\
                         <button type=\"submit\" class=\"approve\">Approve</button></form>",
                        esc(upstream),
                        esc(name)
                    ),
                )
            };
            body.push_str(&format!(
                "<tr class=\"{class}\" data-upstream=\"{u}\" data-tool=\"{n}\"><td>{u}</td><td><code>{n}</code></td>\
                 <td class=\"status\">{status}</td><td>{}</td><td>{}</td><td>{form}</td></tr>",
                esc(by),
                switchyard_contract::iso8601(when),
                u = esc(upstream),
                n = esc(name),
            ));
        }
        body.push_str("</tbody></table>");
    }
    page("Upstream pins", Some(&s), &body).into_response()
}

/// `POST /console/upstreams/{upstream}/approve` (form: `csrf`, `tool`): approves what discovery
/// last saw of the tool (schema and description); the running gateways list it again.
pub(super) async fn approve(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path(upstream): Path<String>,
    body: Bytes,
) -> Response {
    let (s, f) = match form_post(&state, &headers, scope::READ, &body).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    if let Some(r) = not_operator(&s, "upstream pins are gateway-wide") {
        return r;
    }
    let Some(pins) = &state.pins else { return refusal(StatusCode::NOT_FOUND, "no MCP upstream is configured") };
    let Some(tool) = f.get("tool").filter(|t| !t.is_empty()) else {
        return refusal(StatusCode::BAD_REQUEST, "the form names no tool");
    };
    let known = match pins.bindings.list(Some(&upstream)).await {
        Ok(b) => b,
        Err(e) => return failure(&e),
    };
    let pins_of_tool = switchyard_mcp::catalog::TOOL_PINS;
    if !known.iter().any(|b| &b.name == tool && pins_of_tool.contains(&b.kind.as_str())) {
        return refusal(StatusCode::NOT_FOUND, &format!("upstream `{upstream}` has no pinned tool `{tool}`"));
    }
    let by = format!("{} (console)", s.who.principal.subject);
    match pins.bindings.approve(&upstream, Some((tool.as_str(), pins_of_tool)), &by).await {
        Ok(n) => {
            pins.catalog.approvals_changed().await;
            tracing::info!(upstream = %upstream, tool = %tool, by = %by, "tool pin approved in the console");
            done("/console/upstreams", &format!("{tool} of {upstream}: {n} change(s) approved; it is listed again"))
        }
        Err(e) => failure(&e),
    }
}
