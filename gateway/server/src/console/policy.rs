//! `/console/policy`: the policy in force — its version, the default tiers and what each tier
//! does, and the envelope, rules, quotas and concurrency limits as tables — and the policy
//! simulator. Enter a subject (of the signed-in tenant), an upstream, an operation, the face the
//! call would come through and its arguments; the page shows what the policy enforcement point
//! would rule and on what basis, from the same core as `POST /admin/v1/policy/decide` — nothing
//! admitted, audited or spent. The form is a GET: it changes nothing, and the question stays in
//! the address for sharing.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_contract::{Ingress, Principal, Verdict};

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
    let body = format!("{}{result}{}", form(&s, &field), in_force(&state));
    page("Policy", Some(&s), &body).into_response()
}

/// The policy in force, as tables.
fn in_force(state: &ConsoleState) -> String {
    let Some((version, config)) = state.engine.policy_in_force() else {
        return "<h2>In force</h2><p id=\"in-force\">No policy is configured (no <code>[policy]</code>): every call \
                runs.</p>"
            .into();
    };
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let mut out = format!(
        "<h2>In force</h2><p id=\"in-force\">Policy <code>{}</code> (recorded with every decision). A write no rule \
         names is <b>{}</b>, a read <b>{}</b>; <b>routine</b> calls {}, <b>sensitive</b> ones {}, <b>critical</b> ones \
         {}. A held call waits {} s for approval.</p>",
        esc(&version),
        esc(&text(&config["default_write_tier"])),
        esc(&text(&config["default_read_tier"])),
        esc(&text(&config["tiers"]["routine"])),
        esc(&text(&config["tiers"]["sensitive"])),
        esc(&text(&config["tiers"]["critical"])),
        esc(&text(&config["approval_ttl_s"])),
    );
    for (key, title, about) in [
        ("envelope", "Envelope", "hard denies: nothing overrides them"),
        ("rules", "Rules", "denies, then the most severe tier a matching rule assigns"),
        ("quotas", "Quotas", "a call over one is told to retry later"),
        ("concurrency", "Concurrency limits", "a call over one waits its turn"),
    ] {
        out.push_str(&format!("<h3>{title}</h3><p class=\"hint\">{about}</p>{}", table(key, &config[key])));
    }
    for (key, title) in [("authzen", "AuthZEN decision point"), ("cedar", "Cedar policy set")] {
        if let Some(o) = config.get(key).filter(|v| !v.is_null()) {
            out.push_str(&format!("<h3>{title}</h3>{}", table(key, &Value::Array(vec![o.clone()]))));
        }
    }
    out
}

/// A list of objects as a table: a column per key, in the order keys first appear.
fn table(id: &str, list: &Value) -> String {
    let rows = list.as_array().map(Vec::as_slice).unwrap_or_default();
    if rows.is_empty() {
        return format!("<p id=\"{id}\">None.</p>");
    }
    let mut columns: Vec<&String> = Vec::new();
    for key in rows.iter().filter_map(Value::as_object).flat_map(|o| o.keys()) {
        if !columns.contains(&key) {
            columns.push(key);
        }
    }
    let cell = |v: Option<&Value>| match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => esc(s),
        Some(other) => format!("<code>{}</code>", esc(&other.to_string())),
    };
    let head: String = columns.iter().map(|c| format!("<th>{}</th>", esc(c))).collect();
    let body: String = rows
        .iter()
        .map(|r| {
            format!(
                "<tr>{}</tr>",
                columns.iter().map(|c| format!("<td>{}</td>", cell(r.get(c.as_str())))).collect::<String>()
            )
        })
        .collect();
    format!("<table id=\"{id}\"><tr>{head}</tr>{body}</table>")
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
    let principal = Principal::new(s.who.principal.tenant.clone(), subject);
    let submission = crate::admin::question(principal, field("upstream"), field("operation"), request, ingress);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_a_table_with_a_column_per_key_in_first_seen_order() {
        let rules = json!([
            {"id": "no-<wires>", "upstream": "bank", "deny": true},
            {"upstream": "bank", "operation": "pay", "when": [{"pointer": "/arguments/amount", "min": 100.0}]}
        ]);
        let html = table("rules", &rules);
        assert!(
            html.starts_with(
                "<table id=\"rules\"><tr><th>id</th><th>upstream</th><th>deny</th><th>operation</th><th>when</th></tr>"
            ),
            "{html}"
        );
        assert!(html.contains("<td>no-&lt;wires&gt;</td>") && html.contains("<td><code>true</code></td>"), "{html}");
        assert!(html.contains("/arguments/amount"), "{html}");
        assert_eq!(table("quotas", &json!([])), "<p id=\"quotas\">None.</p>");
    }
}
