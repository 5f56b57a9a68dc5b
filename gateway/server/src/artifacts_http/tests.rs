//! `/artifacts/{id}` against the real router, a real SQLite index and the filesystem store.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use bytes::Bytes;
use switchyard_artifacts::PutRequest;
use switchyard_contract::{ArtifactMeta, InvocationId, TenantId};
use tower::ServiceExt;

use crate::app::App;
use crate::config::Config;

const TOKEN: &str = "test-token-0123456789";

struct Harness {
    app: App,
    router: axum::Router,
    dir: tempfile::TempDir,
}

async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    cfg.server.data_dir = dir.path().to_path_buf();
    cfg.admin.token.0 = TOKEN.into();
    let app = App::build(&cfg).await.unwrap_or_else(|e| panic!("{e:#}"));
    Harness { router: app.router(&cfg), app, dir }
}

async fn put(h: &Harness, tenant: &str, data: &'static [u8]) -> ArtifactMeta {
    let req = PutRequest {
        tenant: TenantId::new(tenant).unwrap(),
        invocation: InvocationId::new(),
        name: "report.txt".into(),
        media_type: "text/plain".into(),
        chunk_seq: 0,
        retention_class: None,
    };
    let body = Box::pin(futures::stream::iter([Ok(Bytes::from_static(data))]));
    h.app.artifacts.put(req, body).await.unwrap()
}

async fn get(h: &Harness, uri: &str, headers: &[(&str, &str)]) -> (StatusCode, axum::http::HeaderMap, Option<Bytes>) {
    let mut req = Request::builder().uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = h.router.clone().oneshot(req.body(Body::empty()).unwrap_or_default()).await;
    let resp = resp.unwrap_or_else(|e| match e {});
    let (status, headers) = (resp.status(), resp.headers().clone());
    (status, headers, axum::body::to_bytes(resp.into_body(), 1 << 20).await.ok())
}

const AUTH: (&str, &str) = ("authorization", "Bearer test-token-0123456789");
const DATA: &[u8] = b"0123456789abcdefghij";

#[tokio::test]
async fn the_owner_gets_the_bytes_with_etag_type_and_length() {
    let h = harness().await;
    let meta = put(&h, "acme", DATA).await;
    let (status, hd, body) =
        get(&h, &format!("/artifacts/{}", meta.id), &[AUTH, ("x-switchyard-tenant", "acme")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.as_deref(), Some(DATA));
    let etag = format!("\"sha256:{}\"", meta.sha256.as_hex());
    assert_eq!(hd.get(header::ETAG).and_then(|v| v.to_str().ok()), Some(etag.as_str()));
    assert_eq!(hd.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()), Some("text/plain"));
    assert_eq!(hd.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()), Some("20"));
    assert_eq!(hd.get(header::ACCEPT_RANGES).and_then(|v| v.to_str().ok()), Some("bytes"));
    let (status, _, _) =
        get(&h, &format!("/artifacts/{}", meta.id), &[AUTH, ("x-switchyard-tenant", "acme"), ("if-none-match", &etag)])
            .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn another_tenant_gets_404_exactly_like_a_missing_artifact() {
    let h = harness().await;
    let meta = put(&h, "acme", DATA).await;
    let uri = format!("/artifacts/{}", meta.id);
    let (other, _, other_body) = get(&h, &uri, &[AUTH, ("x-switchyard-tenant", "globex")]).await;
    let (default, _, _) = get(&h, &uri, &[AUTH]).await;
    let missing_uri = format!("/artifacts/{}", switchyard_contract::ArtifactId::new());
    let (missing, _, missing_body) = get(&h, &missing_uri, &[AUTH, ("x-switchyard-tenant", "globex")]).await;
    let (garbage, _, _) = get(&h, "/artifacts/not-an-id", &[AUTH, ("x-switchyard-tenant", "globex")]).await;
    assert_eq!([other, default, missing, garbage], [StatusCode::NOT_FOUND; 4]);
    assert_eq!(other_body, missing_body, "the answer does not tell existence apart");
    let (status, hd, _) = get(&h, &uri, &[("x-switchyard-tenant", "acme")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(hd.get(header::WWW_AUTHENTICATE).is_some());
}

#[tokio::test]
async fn ranges_are_served_and_unsatisfiable_ones_refused() {
    let h = harness().await;
    let meta = put(&h, "acme", DATA).await;
    let uri = format!("/artifacts/{}", meta.id);
    let t = ("x-switchyard-tenant", "acme");
    let (status, hd, body) = get(&h, &uri, &[AUTH, t, ("range", "bytes=2-5")]).await;
    assert_eq!((status, body.as_deref()), (StatusCode::PARTIAL_CONTENT, Some(&DATA[2..=5])));
    assert_eq!(hd.get(header::CONTENT_RANGE).and_then(|v| v.to_str().ok()), Some("bytes 2-5/20"));
    assert_eq!(hd.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()), Some("4"));
    let (status, _, body) = get(&h, &uri, &[AUTH, t, ("range", "bytes=-3")]).await;
    assert_eq!((status, body.as_deref()), (StatusCode::PARTIAL_CONTENT, Some(&DATA[17..])));
    let (status, hd, _) = get(&h, &uri, &[AUTH, t, ("range", "bytes=20-")]).await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(hd.get(header::CONTENT_RANGE).and_then(|v| v.to_str().ok()), Some("bytes */20"));
    let (status, _, body) = get(&h, &uri, &[AUTH, t, ("range", "bytes=0-1,4-5")]).await;
    assert_eq!((status, body.as_deref()), (StatusCode::OK, Some(DATA)), "multi-range falls back to the whole");
}

#[tokio::test]
async fn corrupt_bytes_abort_the_response() {
    let h = harness().await;
    let meta = put(&h, "acme", DATA).await;
    let path = h.dir.path().join("artifacts").join(&meta.location);
    std::fs::write(&path, b"0123456789abcdefghiX").unwrap();
    let (_, _, body) = get(&h, &format!("/artifacts/{}", meta.id), &[AUTH, ("x-switchyard-tenant", "acme")]).await;
    assert_eq!(body, None, "the body fails instead of completing with corrupt bytes");
}
