//! `/console/audit`: verifies the hash-chained audit log as `switchyard audit verify` does —
//! every partition's chain and every signed checkpoint — and says what it found. The log spans
//! every tenant: only the operator's admin token sees this page.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{ConsoleState, caller, esc, not_operator, page, refusal};
use crate::auth::scope;

/// `GET /console/audit`: the verification, run now.
pub(super) async fn verify(State(state): State<ConsoleState>, headers: HeaderMap) -> Response {
    let s = match caller(&state, &headers, scope::READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Some(r) = not_operator(&s, "the audit log spans every tenant") {
        return r;
    }
    let Some((store, key, legacy)) = &state.audit else {
        let off = "<p id=\"verdict\">The audit log is off (<code>[audit] enabled = false</code>).</p>";
        return page("Audit log", Some(&s), off).into_response();
    };
    let report = match switchyard_policy::audit::verify(store.as_ref(), key, Some(legacy)).await {
        Ok(r) => r,
        Err(e) => return refusal(StatusCode::SERVICE_UNAVAILABLE, &e.message),
    };
    let (class, verdict) = if report.ok() { ("notice", "verified") } else { ("error", "TAMPERED") };
    let mut body = format!(
        "<p id=\"verdict\" class=\"{class}\" data-ok=\"{}\">The audit log is {verdict}: {} rows in {} partitions, \
         {} signed checkpoints, {} problems.</p>",
        report.ok(),
        report.rows,
        report.partitions,
        report.checkpoints,
        report.findings.len()
    );
    if !report.findings.is_empty() {
        body.push_str("<ul id=\"findings\">");
        for f in &report.findings {
            body.push_str(&format!("<li>{}</li>", esc(&f.to_string())));
        }
        body.push_str("</ul>");
    }
    body.push_str(
        "<p class=\"hint\">Export it for a SIEM with <code>switchyard audit export</code>; \
         <code>switchyard audit verify</code> runs the same check.</p>",
    );
    page("Audit log", Some(&s), &body).into_response()
}
