//! `GET /artifacts/{id}`: an artifact's bytes at a stable URL, so protocol faces can hand out
//! `url` parts and resource links instead of inlining large bytes.
//!
//! Authorized to the owning tenant only, through the [`Gatekeeper`]: the operator's admin token
//! with `X-Switchyard-Tenant` (default `default`), or an OAuth credential whose token names the
//! tenant and grants `artifacts:read`; or, without credentials, the `grant` of a link a face
//! handed its caller ([`ArtifactLinks`]: that artifact, that tenant, for an hour). Another tenant's artifact
//! answers 404, exactly like a missing one, so existence does not leak. Headers: `ETag`
//! (`"sha256:<hex>"`, strong: the bytes never change), `Content-Type`, `Content-Length`,
//! `Accept-Ranges`, single-range requests (206 / 416), `If-None-Match` (304). Bytes are served
//! only as they verify; a corrupt object aborts the response before its last chunk.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::TryStreamExt;
use switchyard_artifacts::{Artifacts, Download, RangeSpec};
use switchyard_contract::{
    ArtifactError, ArtifactId, ArtifactIndex, ArtifactLinks, Error, ErrorKind, ErrorSource, TenantId,
};

use crate::api_error::ApiError;
use crate::auth::{Gatekeeper, scope};
use crate::config::Config;

/// What the artifact endpoint needs.
#[derive(Debug, Clone)]
pub struct ArtifactsHttp {
    pub artifacts: Artifacts,
    pub gate: Gatekeeper,
    /// Checks the `grant` of a link a face handed out.
    pub links: ArtifactLinks,
}

/// `?grant=…`: the signed grant of a link a face handed its caller.
#[derive(Debug, serde::Deserialize)]
pub struct LinkQuery {
    grant: Option<String>,
}

/// Opens the configured byte store and joins it to the artifact index on the store database.
pub async fn open(cfg: &Config, index: std::sync::Arc<dyn ArtifactIndex>) -> anyhow::Result<Artifacts> {
    let store = cfg.artifacts.open_store(&cfg.server.data_dir).await?;
    Ok(Artifacts::new(store, index, cfg.artifacts.policy()))
}

/// The `/artifacts/{id}` route.
pub fn router(state: ArtifactsHttp) -> Router {
    Router::new().route("/artifacts/{id}", get(download)).with_state(state)
}

/// `bytes=a-b`, `bytes=a-`, `bytes=-n`. Anything else (several ranges, other units, garbage)
/// is ignored and the whole artifact served, as RFC 9110 allows.
fn parse_range(headers: &HeaderMap) -> Option<RangeSpec> {
    parse_range_value(headers.get(header::RANGE)?.to_str().ok()?)
}

/// The value of a `Range` header, as [`parse_range`] reads it.
pub fn parse_range_value(value: &str) -> Option<RangeSpec> {
    let spec = value.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    match (a.is_empty(), b.is_empty()) {
        (true, false) => Some(RangeSpec::Suffix(b.parse().ok()?)),
        (false, true) => Some(RangeSpec::From(a.parse().ok()?)),
        (false, false) => Some(RangeSpec::FromTo(a.parse().ok()?, b.parse().ok()?)),
        (true, true) => None,
    }
}

async fn download(
    State(state): State<ArtifactsHttp>,
    Path(id): Path<String>,
    Query(link): Query<LinkQuery>,
    headers: HeaderMap,
) -> Response {
    // A link's grant opens its one artifact, for the tenant it was given to, until it expires.
    if let Some(grant) = &link.grant {
        let now_s = u64::try_from(switchyard_contract::wall_clock_ms() / 1000).unwrap_or(0);
        let granted = id.parse().ok().and_then(|a| state.links.verify(grant, a, now_s));
        return match granted {
            Some(who) => serve(&state, &who.tenant, &id, &headers).await.unwrap_or_else(IntoResponse::into_response),
            None => ApiError::from(Error::new(
                ErrorKind::Unauthenticated,
                ErrorSource::Client,
                false,
                "this artifact link is not valid or has expired: ask for the result again for a fresh link",
            ))
            .into_response(),
        };
    }
    let who = match state.gate.identify(&headers).await {
        Ok(who) => who,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = state.gate.require(&who, &[scope::ARTIFACTS_READ]) {
        return refusal.into_response();
    }
    match serve(&state, &who.principal.tenant, &id, &headers).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

async fn serve(state: &ArtifactsHttp, tenant: &TenantId, id: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let not_found = || ApiError::from(Error::not_found("artifact not found"));
    let id: ArtifactId = id.parse().map_err(|_| not_found())?;
    let meta = match state.artifacts.get(Some(tenant), id).await {
        Ok(m) => m,
        Err(ArtifactError::NotFound) => return Err(not_found()),
        Err(e) => return Err(Error::from(e).into()),
    };
    let etag = format!("\"sha256:{}\"", meta.sha256.as_hex());
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "*" || v.split(',').any(|t| t.trim().trim_start_matches("W/") == etag))
    {
        return Ok(with_headers(StatusCode::NOT_MODIFIED, Body::empty(), &etag, None));
    }
    let download = match state.artifacts.open(Some(tenant), id, parse_range(headers)).await {
        Ok(d) => d,
        Err(ArtifactError::NotFound) => return Err(not_found()),
        Err(ArtifactError::RangeNotSatisfiable { size }) => {
            let mut resp = with_headers(StatusCode::RANGE_NOT_SATISFIABLE, Body::empty(), &etag, None);
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return Ok(resp);
        }
        Err(e) => return Err(Error::from(e).into()),
    };
    Ok(respond(download, &etag))
}

fn respond(d: Download, etag: &str) -> Response {
    let Download { meta, range, body } = d;
    let body = Body::from_stream(body.map_err(|e| std::io::Error::other(e.to_string())));
    let (status, len) = match range {
        Some(r) => (StatusCode::PARTIAL_CONTENT, r.len()),
        None => (StatusCode::OK, meta.size),
    };
    let mut resp = with_headers(status, body, etag, Some(&meta.media_type));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if let Some(r) = range
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {}-{}/{}", r.start, r.end, meta.size))
    {
        h.insert(header::CONTENT_RANGE, v);
    }
    let safe_name: String =
        meta.name.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe_name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    resp
}

fn with_headers(status: StatusCode, body: Body, etag: &str, media_type: Option<&str>) -> Response {
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=31536000, immutable"));
    // Producer-chosen media types must not run as active content on the gateway's origin.
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox"));
    if let Some(v) = media_type.and_then(|m| HeaderValue::from_str(m).ok()) {
        h.insert(header::CONTENT_TYPE, v);
    }
    resp
}

#[cfg(test)]
mod tests;
