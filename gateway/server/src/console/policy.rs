//! `/console/policy`: the policy simulator. Enter a subject (of the signed-in tenant), an
//! upstream, an operation, the face the call would come through and its arguments; the page
//! shows what the policy enforcement point would rule and on what basis, from the same core as
//! `POST /admin/v1/policy/decide` — nothing admitted, audited or spent. The form is a GET: it
//! changes nothing, and the question stays in the address for sharing.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_contract::{Ingress, Principal, Submission, Verdict};

use super::{ConsoleState, Session, caller, esc, page};
use crate::auth::scope;

/// `GET /console/policy[?upstream=…&operation=…]`: the form, and the ruling when it was filled.
pub(super) async fn simulate(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let s = match caller(&state, &headers, scope::POLICY_READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let field = |k: &str| q.get(k).map(|v| v.trim().to_string()).unwrap_or_default();
    let asked = !field("upstream").is_empty() || !field("operation").is_empty();
    let result = if asked { ruling(&state, &s, &field).await } else { String::new() };
    let body = format!("{}{result}", form(&s, &field));
    page("Policy simulator", Some(&s), &body).into_response()
}

fn form(s: &Session, field: &(dyn Fn(&str) -> String + Sync)) -> String {
    let subject = Some(field("subject")).filter(|v| !v.is_empty()).unwrap_or_else(|| s.who.principal.subject.clone());
    let ingress = field("ingress");
    let option = |v: &str, label: &str| {
        let selected = if ingress == v || (ingress.is_empty() && v == "mcp") { " selected" } else { "" };
        format!("<option value=\"{v}\"{selected}>{label}</option>")
    };
    let arguments = Some(field("arguments")).filter(|v| !v.is_empty()).unwrap_or_else(|| "{}".into());
    format!(
        "<p class=\"hint\">What the policy would rule on a call of tenant <b>{tenant}</b>, from the same decision \
         core and policy as every call. Nothing is admitted or audited, and no quota is spent.</p>\
         <form method=\"get\" action=\"/console/policy\" id=\"simulate\">\
         <label>Subject <input name=\"subject\" value=\"{subject}\"></label>\
         <label>Upstream <input name=\"upstream\" value=\"{upstream}\" required placeholder=\"e.g. github or a2a-agent-desk\"></label>\
         <label>Operation <input name=\"operation\" value=\"{operation}\" required placeholder=\"a tool, a skill, SendMessage\"></label>\
         <label>Through <select name=\"ingress\">{mcp}{a2a}{admin}</select></label>\
         <label>Arguments (JSON, read by rules at <code>/arguments/&lt;name&gt;</code>; the admin API's request as it is)\
         <textarea name=\"arguments\" rows=\"5\" cols=\"60\">{arguments}</textarea></label>\
         <button type=\"submit\">Decide</button></form>",
        tenant = esc(s.who.principal.tenant.as_str()),
        subject = esc(&subject),
        upstream = esc(&field("upstream")),
        operation = esc(&field("operation")),
        mcp = option("mcp", "an MCP client (tools/call)"),
        a2a = option("a2a", "an A2A client (SendMessage)"),
        admin = option("admin", "the admin API"),
        arguments = esc(&arguments),
    )
}

/// The ruling on the question in `field`, as a section of the page.
async fn ruling(state: &ConsoleState, s: &Session, field: &(dyn Fn(&str) -> String + Sync)) -> String {
    let error = |m: &str| format!("<p class=\"error\" role=\"alert\" id=\"ruling\">{}</p>", esc(m));
    let ingress = match field("ingress").as_str() {
        "" | "mcp" => Ingress::Mcp,
        "a2a" => Ingress::A2a,
        "admin" => Ingress::Admin,
        other => return error(&format!("unknown face `{other}`: mcp, a2a or admin")),
    };
    let raw = Some(field("arguments")).filter(|v| !v.is_empty()).unwrap_or_else(|| "{}".into());
    let arguments: Value = match serde_json::from_str(&raw) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return error("the arguments must be a JSON object"),
        Err(e) => return error(&format!("the arguments are not JSON: {e}")),
    };
    // An MCP tool's arguments are read at /arguments/<name>; the other faces' request as it is.
    let request = if ingress == Ingress::Mcp { json!({ "arguments": arguments }) } else { arguments };
    let subject = Some(field("subject")).filter(|v| !v.is_empty()).unwrap_or_else(|| s.who.principal.subject.clone());
    let submission = Submission {
        principal: Principal::new(s.who.principal.tenant.clone(), subject),
        upstream: field("upstream"),
        operation: field("operation"),
        request,
        ingress_key: None,
        ingress,
        context: None,
        grant: None,
        parent: None,
        trace: None,
    };
    let (target, ruling) = match state.engine.simulate(&submission, false).await {
        Ok(r) => r,
        Err(e) => return error(&e.message),
    };
    let (class, said) = match &ruling.verdict {
        Verdict::Allow => ("notice", "It would run.".to_string()),
        Verdict::Hold { reason } => ("error", format!("It would wait for approval: {reason}")),
        Verdict::Deny { reason } => ("error", format!("It would be refused: {reason}")),
        Verdict::Defer { retry_after_ms, reason } => {
            ("error", format!("It would be told to retry in {retry_after_ms} ms: {reason}"))
        }
    };
    format!(
        "<section id=\"ruling\" data-decision=\"{decision}\"><h2>{decision}</h2><p class=\"{class}\">{said}</p>\
         <dl><dt>Basis</dt><dd><code>{basis}</code></dd><dt>Target</dt><dd><code>{upstream}</code> / \
         <code>{operation}</code> ({effect})</dd></dl></section>",
        decision = ruling.verdict.name(),
        said = esc(&said),
        basis = esc(&ruling.basis),
        upstream = esc(&target.upstream),
        operation = esc(&target.operation),
        effect = esc(target.effect.as_str()),
    )
}
