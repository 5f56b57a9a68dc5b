//! `/console/artifacts`: the signed-in tenant's artifacts (what calls produced and the gateway
//! kept), newest first, each downloadable — as an attachment, never rendered on the console's
//! origin. Another tenant's artifact is not found.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use switchyard_contract::{ArtifactError, ArtifactId};

use super::{ConsoleState, caller, esc, next_page, page, refusal};
use crate::auth::scope;

/// `GET /console/artifacts[?cursor=…]`: 50 a page.
pub(super) async fn list(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let s = match caller(&state, &headers, scope::ARTIFACTS_READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let Some(artifacts) = &state.artifacts else {
        return page("Artifacts", Some(&s), "<p id=\"empty\">No artifact store here.</p>").into_response();
    };
    let found = match artifacts.list(&s.who.principal.tenant, None, 50, q.get("cursor").map(String::as_str)).await {
        Ok(p) => p,
        Err(e) => return refusal(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let mut body = String::new();
    if found.items.is_empty() {
        body.push_str("<p id=\"empty\">No artifact is kept for this tenant.</p>");
    } else {
        body.push_str(
            "<table id=\"artifacts\"><thead><tr><th>Name</th><th>Type</th><th>Size</th><th>Call</th><th>Kept</th>\
             <th>Until</th></tr></thead><tbody>",
        );
        for a in &found.items {
            let id = a.id.to_string();
            let call = a.invocation.to_string();
            body.push_str(&format!(
                "<tr data-id=\"{id}\"><td><a href=\"/console/artifacts/{id}/download\" download>{}</a></td><td><code>{}</code></td>\
                 <td>{}</td><td><a href=\"/console/invocations/{call}\"><code>{call}</code></a></td><td>{}</td><td>{}</td></tr>",
                esc(&a.name),
                esc(&a.media_type),
                a.size,
                switchyard_contract::iso8601(a.created_ms),
                a.expires_ms.map_or_else(|| "forever".to_string(), switchyard_contract::iso8601)
            ));
        }
        body.push_str("</tbody></table>");
    }
    body.push_str(&next_page("/console/artifacts?", found.next_cursor.as_ref()));
    page("Artifacts", Some(&s), &body).into_response()
}

/// `GET /console/artifacts/{id}/download`: the bytes (verified as they stream), as an
/// attachment of type `application/octet-stream`.
pub(super) async fn download(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
) -> Response {
    let s = match caller(&state, &headers, scope::ARTIFACTS_READ).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let not_found = || refusal(StatusCode::NOT_FOUND, "artifact not found");
    let (Some(artifacts), Ok(id)) = (&state.artifacts, raw.parse::<ArtifactId>()) else { return not_found() };
    let download = match artifacts.open(Some(&s.who.principal.tenant), id, None).await {
        Ok(d) => d,
        Err(ArtifactError::NotFound) => return not_found(),
        Err(e) => return refusal(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let name: String = download
        .meta
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect();
    let mut resp = Body::from_stream(download.body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(download.meta.size));
    resp
}
