//! `/console/grants`: the tenant's grants (durable ones and approvals' single-use ones), newest
//! first, with their status; and, for the operator's admin token, a form that mints a durable
//! grant for a subject up to a tier with an expiry (the token shown once, to copy) and a button
//! that revokes an active one. Minting and revoking are audited, as from the command line
//! (`switchyard grants`), through the same code.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use switchyard_policy::Tier;

use super::{ConsoleState, Session, caller, done, esc, form_post, not_operator, notice, page, refusal};
use crate::auth::{Access, scope};
use crate::grants::{Asked, GrantDesk, status};

/// `GET /console/grants`.
pub(super) async fn list(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let s = match caller(&state, &headers, scope::POLICY_READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let Some(desk) = &state.grants else {
        let off = "<p id=\"grants\">No policy is configured (no <code>[policy]</code>): grants have no effect.</p>";
        return page("Grants", Some(&s), off).into_response();
    };
    let body = format!("{}{}", notice(&q), listing(desk, &s).await);
    page("Grants", Some(&s), &body).into_response()
}

/// The tenant's grants, and for the operator the forms that change them.
async fn listing(desk: &GrantDesk, s: &Session) -> String {
    let operator = s.who.access == Access::Operator;
    let grants = match desk.list(Some(&s.who.principal.tenant)).await {
        Ok(g) => g,
        Err(e) => {
            return format!("<p class=\"error\" role=\"alert\">the grants cannot be read: {}</p>", esc(&e.to_string()));
        }
    };
    let mut out = String::new();
    if operator {
        out.push_str(&format!(
            "<form method=\"post\" action=\"/console/grants\" id=\"mint\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <label>Subject <input name=\"subject\" required></label>\
             <label>Upstream <input name=\"upstream\" value=\"*\"></label>\
             <label>Operation <input name=\"operation\" value=\"*\"></label>\
             <label>Up to <select name=\"ceiling\"><option>routine</option><option selected>sensitive</option>\
             <option>critical</option></select></label>\
             <label>For (seconds) <input name=\"expires_in_s\" value=\"3600\" inputmode=\"numeric\"></label>\
             <button type=\"submit\">Mint a grant</button></form>",
            csrf = esc(&s.csrf)
        ));
    }
    if grants.is_empty() {
        out.push_str("<p id=\"grants\">No grants in this tenant.</p>");
        return out;
    }
    out.push_str(
        "<table id=\"grants\"><tr><th>Grant</th><th>Subject</th><th>Upstream / operation</th><th>Up to</th>\
         <th>Until</th><th>Status</th><th></th></tr>",
    );
    for g in &grants {
        let claim = |k: &str| g.claims[k].as_str().unwrap_or("*").to_string();
        let until = g.claims["exp"].as_i64().map(|s| switchyard_contract::iso8601(s.saturating_mul(1000)));
        let active = g.revoked_by.is_none();
        let revoke = if operator && active {
            format!(
                "<form method=\"post\" action=\"/console/grants/{id}/revoke\"><input type=\"hidden\" name=\"csrf\" \
                 value=\"{csrf}\"><button type=\"submit\">Revoke</button></form>",
                id = esc(&g.id),
                csrf = esc(&s.csrf)
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code> / <code>{}</code></td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{revoke}</td></tr>",
            esc(&g.id),
            esc(&g.subject),
            esc(&claim("upstream")),
            esc(&claim("operation")),
            esc(&claim("ceiling")),
            esc(&until.unwrap_or_default()),
            esc(&status(g)),
        ));
    }
    out.push_str("</table>");
    out
}

/// `POST /console/grants`: mints a grant in the signed-in tenant (operator only); the token is
/// shown once.
pub(super) async fn mint(State(state): State<ConsoleState>, headers: HeaderMap, body: Bytes) -> Response {
    let (s, f) = match form_post(&state, &headers, scope::POLICY_READ, &body).await {
        Ok(posted) => posted,
        Err(r) => return r,
    };
    if let Some(r) = not_operator(&s, "minting grants") {
        return r;
    }
    let Some(desk) = &state.grants else { return refusal(StatusCode::CONFLICT, "no policy is configured") };
    let field = |k: &str, default: &str| {
        f.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).unwrap_or_else(|| default.into())
    };
    let ceiling: Tier = match serde_json::from_value(serde_json::Value::String(field("ceiling", ""))) {
        Ok(t) => t,
        Err(_) => return refusal(StatusCode::BAD_REQUEST, "the tier must be routine, sensitive or critical"),
    };
    let Ok(expires_in_s) = field("expires_in_s", "3600").parse::<u64>() else {
        return refusal(StatusCode::BAD_REQUEST, "the lifetime must be a whole number of seconds");
    };
    let asked = Asked {
        tenant: s.who.principal.tenant.clone(),
        subject: field("subject", ""),
        upstream: field("upstream", "*"),
        operation: field("operation", "*"),
        ceiling,
        expires_in_s,
    };
    let (token, claims) = match desk.mint(asked, &s.who.principal.subject).await {
        Ok(minted) => minted,
        Err(e) => return refusal(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let shown = format!(
        "<p class=\"notice\" role=\"status\">Grant <code>{id}</code> minted for {sub}, up to {tier}. Copy the token now: \
         it is not shown again.</p><label>Token <input id=\"minted\" readonly size=\"80\" value=\"{token}\"></label>\
         <p class=\"hint\">Present it as MCP <code>_meta[\"dev.switchyard/grant\"]</code> or the admin API's \
         <code>Switchyard-Grant</code> header.</p>",
        id = esc(&claims.jti),
        sub = esc(&claims.sub),
        tier = esc(claims.ceiling.as_str()),
        token = esc(&token),
    );
    let body = format!("{shown}{}", listing(desk, &s).await);
    page("Grants", Some(&s), &body).into_response()
}

/// `POST /console/grants/{id}/revoke` (operator only), for a grant of the signed-in tenant.
pub(super) async fn revoke(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let (s, _) = match form_post(&state, &headers, scope::POLICY_READ, &body).await {
        Ok(posted) => posted,
        Err(r) => return r,
    };
    if let Some(r) = not_operator(&s, "revoking grants") {
        return r;
    }
    let Some(desk) = &state.grants else { return refusal(StatusCode::CONFLICT, "no policy is configured") };
    match desk.revoke(&id, Some(&s.who.principal.tenant), &s.who.principal.subject).await {
        Ok(()) => {
            done("/console/grants", &format!("grant {id} is revoked; every replica refuses it at its next decision"))
        }
        Err(e) => refusal(StatusCode::NOT_FOUND, &e.to_string()),
    }
}
