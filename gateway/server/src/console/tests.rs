//! The console against the real router, a real SQLite store and a policy that holds every
//! unlisted write, through `oneshot`: sign-in, the held list (its tenant only), and the checks
//! every form post passes (Host, Origin, CSRF token, scope).

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::{csrf_token, host_name, host_of_url, same_origin};
use crate::app::App;
use crate::config::Config;
use switchyard_contract::{Invocations as _, TenantId};

const TOKEN: &str = "test-token-0123456789";
const HOST: &str = "127.0.0.1:8787";
const ORIGIN: &str = "http://127.0.0.1:8787";

struct Harness {
    router: axum::Router,
    app: App,
    _dir: tempfile::TempDir,
}

async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("[server]\ndata_dir = \"{}\"\n[admin]\ntoken = \"{TOKEN}\"\n[policy]\n", dir.path().display());
    let cfg = Config::from_text(&text, "test", std::iter::empty()).unwrap();
    let app = App::build(&cfg).await.unwrap_or_else(|e| panic!("{e:#}"));
    Harness { router: app.router(&cfg), app, _dir: dir }
}

struct Sent {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn send(h: &Harness, req: Request<Body>) -> Sent {
    let resp = h.router.clone().oneshot(req).await.unwrap_or_else(|e| match e {});
    let (status, headers) = (resp.status(), resp.headers().clone());
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap_or_default();
    Sent { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
}

fn get(uri: &str, cookie: Option<&str>) -> Request<Body> {
    let mut r = Request::builder().uri(uri).header(header::HOST, HOST);
    if let Some(c) = cookie {
        r = r.header(header::COOKIE, c);
    }
    r.body(Body::empty()).unwrap()
}

fn post(uri: &str, cookie: Option<&str>, origin: Option<&str>, form: &str) -> Request<Body> {
    let mut r = Request::builder()
        .method("POST")
        .uri(uri)
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(c) = cookie {
        r = r.header(header::COOKIE, c);
    }
    if let Some(o) = origin {
        r = r.header(header::ORIGIN, o);
    }
    r.body(Body::from(form.to_string())).unwrap()
}

/// Signs in as the operator for `tenant`; returns the `Cookie` header to send.
async fn sign_in(h: &Harness, tenant: &str) -> String {
    let form = format!("token={TOKEN}&tenant={tenant}&name=reviewer");
    let sent = send(h, post("/console/login", None, Some(ORIGIN), &form)).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.body);
    let set = sent.headers.get(header::SET_COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/console"), "{set}");
    set.split(';').next().unwrap_or_default().to_string()
}

/// A call the policy holds (an unlisted write on the demo upstream), for `tenant`.
async fn held(h: &Harness, tenant: &str) -> String {
    let body = json!({"upstream": "demo", "operation": "count", "request": {"n": 1}}).to_string();
    let req = Request::builder()
        .method("POST")
        .uri("/admin/v1/invocations")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-switchyard-tenant", tenant)
        .header("x-switchyard-subject", "agent")
        .body(Body::from(body))
        .unwrap();
    let sent = send(h, req).await;
    let inv: Value = serde_json::from_str(&sent.body).unwrap_or_default();
    assert_eq!(inv["state"]["state"], "awaiting_approval", "{}", sent.body);
    inv["id"].as_str().unwrap_or_default().to_string()
}

fn csrf_of(cookie: &str) -> String {
    csrf_token(cookie.split_once('=').map_or("", |(_, v)| v))
}

#[tokio::test]
async fn pages_need_a_session_and_a_served_host() {
    let h = harness().await;
    let sent = send(&h, get("/console/approvals", None)).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER);
    assert_eq!(sent.headers.get(header::LOCATION).and_then(|v| v.to_str().ok()), Some("/console/login"));

    let login = send(&h, get("/console/login", None)).await;
    assert_eq!(login.status, StatusCode::OK);
    assert!(
        login.headers.get(header::CONTENT_SECURITY_POLICY).is_some()
            && login.headers.get(header::X_FRAME_OPTIONS).is_some()
    );

    // DNS rebinding: a name that points here but is not served.
    let rebound =
        Request::builder().uri("/console/login").header(header::HOST, "evil.example:8787").body(Body::empty());
    let sent = send(&h, rebound.unwrap()).await;
    assert_eq!(sent.status, StatusCode::FORBIDDEN, "{}", sent.body);

    let wrong = send(&h, post("/console/login", None, Some(ORIGIN), "token=nope&tenant=default")).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get(header::SET_COOKIE).is_none());
    let forged = send(&h, get("/console/approvals", Some("switchyard_console=00ff"))).await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED, "a cookie that is not a sign-in is refused");
}

#[tokio::test]
async fn the_list_shows_the_tenants_held_calls_only() {
    let h = harness().await;
    let ours = held(&h, "acme").await;
    let theirs = held(&h, "globex").await;
    let cookie = sign_in(&h, "acme").await;
    let list = send(&h, get("/console/approvals", Some(&cookie))).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains(&ours) && !list.body.contains(&theirs), "{}", list.body);
    let other = send(&h, get(&format!("/console/approvals/{theirs}"), Some(&cookie))).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND, "another tenant's call is not found: {}", other.body);
    let form = format!("csrf={}", csrf_of(&cookie));
    let sent =
        send(&h, post(&format!("/console/approvals/{theirs}/approve"), Some(&cookie), Some(ORIGIN), &form)).await;
    assert_eq!(sent.status, StatusCode::NOT_FOUND, "nor approved: {}", sent.body);
}

#[tokio::test]
async fn a_form_post_needs_this_origin_and_the_sessions_csrf_token() {
    let h = harness().await;
    let id = held(&h, "default").await;
    let cookie = sign_in(&h, "default").await;
    let csrf = csrf_of(&cookie);
    let show = send(&h, get(&format!("/console/approvals/{id}"), Some(&cookie))).await;
    assert!(show.body.contains(&format!("value=\"{csrf}\"")), "the form carries the token: {}", show.body);
    // The arguments as a table, and what decided the hold (the policy's version and tier).
    assert!(
        show.body.contains("<table id=\"arguments\"><tr><th scope=\"row\">n</th><td><code>1</code></td></tr>"),
        "{}",
        show.body
    );
    assert!(show.body.contains("<code id=\"basis\">policy "), "{}", show.body);
    let uri = format!("/console/approvals/{id}/approve");

    let cross = send(&h, post(&uri, Some(&cookie), Some("http://127.0.0.1:9999"), &format!("csrf={csrf}"))).await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "another origin: {}", cross.body);
    let no_origin = send(&h, post(&uri, Some(&cookie), None, &format!("csrf={csrf}"))).await;
    assert_eq!(no_origin.status, StatusCode::FORBIDDEN, "no Origin nor Referer");
    let no_token = send(&h, post(&uri, Some(&cookie), Some(ORIGIN), "")).await;
    assert_eq!(no_token.status, StatusCode::FORBIDDEN, "{}", no_token.body);
    assert!(no_token.body.contains("CSRF"), "{}", no_token.body);
    let other_session = csrf_of("switchyard_console=abcd");
    let wrong = send(&h, post(&uri, Some(&cookie), Some(ORIGIN), &format!("csrf={other_session}"))).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    let still = send(&h, get(&format!("/console/approvals/{id}"), Some(&cookie))).await;
    assert!(still.body.contains("awaiting_approval"), "nothing changed: {}", still.body);

    let ok = send(&h, post(&uri, Some(&cookie), Some(ORIGIN), &format!("csrf={csrf}"))).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER, "{}", ok.body);
    let after = send(&h, get(&format!("/console/approvals/{id}"), Some(&cookie))).await;
    assert!(!after.body.contains("awaiting_approval") && !after.body.contains("id=\"approve\""), "{}", after.body);
}

#[test]
fn hosts_origins_and_cookies_parse() {
    assert_eq!(host_name("127.0.0.1:80"), "127.0.0.1");
    assert_eq!(host_name("[::1]:8787"), "[::1]");
    assert_eq!(host_name("gw.example"), "gw.example");
    assert_eq!(host_of_url("https://user@GW.example:8443/x?y").as_deref(), Some("gw.example"));
    let mut h = axum::http::HeaderMap::new();
    h.insert(header::REFERER, axum::http::HeaderValue::from_static("http://a.test:1/console/approvals/x"));
    assert!(same_origin(&h, "a.test:1"));
    assert!(!same_origin(&h, "a.test:2"));
    h.insert(header::ORIGIN, axum::http::HeaderValue::from_static("null"));
    assert!(same_origin(&h, "a.test:1"), "an opaque origin falls back to the Referer");
}

/// The cookie is an opaque session id: it does not carry the token, and once signed out the
/// same cookie signs nobody in (before: the hex-encoded token, still accepted after logout).
#[tokio::test]
async fn the_cookie_is_an_opaque_session_ended_by_signing_out() {
    let h = harness().await;
    let cookie = sign_in(&h, "acme").await;
    let value = cookie.split_once('=').map_or("", |(_, v)| v);
    let decoded = hex::decode(value).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    assert!(!cookie.contains(TOKEN) && !decoded.contains(TOKEN), "the cookie carries the token: {cookie}");
    assert_eq!(send(&h, get("/console/approvals", Some(&cookie))).await.status, StatusCode::OK);

    let out = send(&h, post("/console/logout", Some(&cookie), Some(ORIGIN), "")).await;
    assert_eq!(out.status, StatusCode::UNAUTHORIZED, "{}", out.body);
    let replayed = send(&h, get("/console/approvals", Some(&cookie))).await;
    assert_eq!(replayed.status, StatusCode::UNAUTHORIZED, "a signed-out cookie still works: {}", replayed.body);

    // A second sign-in is a session of its own: ending one leaves the other.
    let (a, b) = (sign_in(&h, "acme").await, sign_in(&h, "acme").await);
    assert_ne!(a, b);
    send(&h, post("/console/logout", Some(&a), Some(ORIGIN), "")).await;
    assert_eq!(send(&h, get("/console/approvals", Some(&b))).await.status, StatusCode::OK);
}

/// A harness whose writes that take longer than 200 ms end `unknown` (the attempt times out).
async fn harness_with_timeouts() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[server]\ndata_dir = \"{}\"\n[admin]\ntoken = \"{TOKEN}\"\n[engine]\nattempt_timeout_ms = 200\n",
        dir.path().display()
    );
    let cfg = Config::from_text(&text, "test", std::iter::empty()).unwrap();
    let app = App::build(&cfg).await.unwrap_or_else(|e| panic!("{e:#}"));
    Harness { router: app.router(&cfg), app, _dir: dir }
}

/// A write of `tenant` whose outcome is lost: `unknown`.
async fn lost(h: &Harness, tenant: &str) -> String {
    let body = json!({"upstream": "demo", "operation": "count", "request": {"delay_ms": 2000}}).to_string();
    let req = Request::builder()
        .method("POST")
        .uri("/admin/v1/invocations?wait_ms=5000")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-switchyard-tenant", tenant)
        .body(Body::from(body))
        .unwrap();
    let sent = send(h, req).await;
    let inv: Value = serde_json::from_str(&sent.body).unwrap_or_default();
    assert_eq!(inv["state"]["state"], "unknown", "{}", sent.body);
    inv["id"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn calls_are_listed_by_state_and_an_unknown_one_is_reconciled_from_its_page() {
    let h = harness_with_timeouts().await;
    let ours = lost(&h, "acme").await;
    let theirs = lost(&h, "globex").await;
    let cookie = sign_in(&h, "acme").await;
    let unknown = send(&h, get("/console/invocations?state=unknown", Some(&cookie))).await;
    assert_eq!(unknown.status, StatusCode::OK);
    assert!(
        unknown.body.contains(&format!("data-id=\"{ours}\" data-state=\"unknown\" class=\"unknown\"")),
        "{}",
        unknown.body
    );
    assert!(!unknown.body.contains(&theirs), "another tenant's call is not listed");
    let none = send(&h, get("/console/invocations?state=succeeded", Some(&cookie))).await;
    assert!(none.body.contains("No calls."), "{}", none.body);
    let bad = send(&h, get("/console/invocations?state=lost", Some(&cookie))).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    let page = send(&h, get(&format!("/console/invocations/{ours}"), Some(&cookie))).await;
    assert!(page.body.contains("id=\"applied\"") && page.body.contains("outcome_unknown"), "{}", page.body);
    let uri = format!("/console/invocations/{ours}/reconcile");
    let csrf = csrf_of(&cookie);
    let no_token = send(&h, post(&uri, Some(&cookie), Some(ORIGIN), "decision=applied&result=%7B%7D")).await;
    assert_eq!(no_token.status, StatusCode::FORBIDDEN);
    let not_json =
        send(&h, post(&uri, Some(&cookie), Some(ORIGIN), &format!("csrf={csrf}&decision=applied&result=nope"))).await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST, "{}", not_json.body);
    let other = format!("/console/invocations/{theirs}/reconcile");
    let across =
        send(&h, post(&other, Some(&cookie), Some(ORIGIN), &format!("csrf={csrf}&decision=not_applied&message=x")))
            .await;
    assert_eq!(across.status, StatusCode::NOT_FOUND, "another tenant's call cannot be reconciled");
    let form = format!("csrf={csrf}&decision=applied&result=%7B%22counted%22%3A1%7D");
    let done = send(&h, post(&uri, Some(&cookie), Some(ORIGIN), &form)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let after = send(&h, get(&format!("/console/invocations/{ours}"), Some(&cookie))).await;
    assert!(after.body.contains("id=\"state\">succeeded") && after.body.contains("reconciled"), "{}", after.body);
    assert!(!after.body.contains("id=\"applied\""), "no form once settled");
}

/// The artifacts page lists the tenant's artifacts only, and a download is an attachment of
/// type `application/octet-stream` (never rendered on the console's origin) with the bytes.
#[tokio::test]
async fn artifacts_are_listed_and_downloaded_for_their_tenant_only() {
    use switchyard_contract::{InvocationId, TenantId};
    let h = harness().await;
    let request = switchyard_artifacts::PutRequest {
        tenant: TenantId::new("acme").unwrap(),
        invocation: InvocationId::new(),
        name: "report <1>.html".into(),
        media_type: "text/html".into(),
        chunk_seq: 0,
        retention_class: None,
    };
    let bytes = bytes::Bytes::from_static(b"<script>alert(1)</script>");
    let body: switchyard_contract::ByteStream = Box::pin(futures::stream::iter([Ok(bytes.clone())]));
    let meta = h.app.artifacts.put(request, body).await.unwrap();
    let id = meta.id.to_string();

    let acme = sign_in(&h, "acme").await;
    let list = send(&h, get("/console/artifacts", Some(&acme))).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert!(list.body.contains(&id) && list.body.contains("report &lt;1&gt;.html"), "{}", list.body);
    let got = send(&h, get(&format!("/console/artifacts/{id}/download"), Some(&acme))).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()), Some("application/octet-stream"));
    let disposition = got.headers.get(header::CONTENT_DISPOSITION).and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(disposition, "attachment; filename=\"report__1_.html\"");
    assert_eq!(got.body.as_bytes(), &bytes[..]);

    let other = sign_in(&h, "other").await;
    let list = send(&h, get("/console/artifacts", Some(&other))).await;
    assert!(!list.body.contains(&id), "another tenant's list: {}", list.body);
    let got = send(&h, get(&format!("/console/artifacts/{id}/download"), Some(&other))).await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    assert!(!got.body.contains("alert(1)"), "{}", got.body);
}

/// The audit page verifies the log (the held calls' decisions are in it) for the operator.
#[tokio::test]
async fn the_audit_page_verifies_the_log() {
    let h = harness().await;
    held(&h, "acme").await;
    held(&h, "other").await;
    let cookie = sign_in(&h, "acme").await;
    let page = send(&h, get("/console/audit", Some(&cookie))).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("data-ok=\"true\"") && page.body.contains("verified: 2 rows"), "{}", page.body);
}

/// The calls list filters by protocol (the upstreams that speak it) and by upstream.
#[tokio::test]
async fn calls_are_filtered_by_protocol_and_upstream() {
    let h = harness().await;
    let id = held(&h, "acme").await;
    let cookie = sign_in(&h, "acme").await;
    let listed = |path: &'static str| {
        let cookie = cookie.clone();
        let h = &h;
        async move { send(h, get(path, Some(&cookie))).await }
    };
    for path in ["/console/invocations?protocol=built-in", "/console/invocations?upstream=demo&protocol=built-in"] {
        let page = listed(path).await;
        assert!(page.status == StatusCode::OK && page.body.contains(&id), "{path}: {}", page.body);
    }
    for path in ["/console/invocations?upstream=elsewhere", "/console/invocations?upstream=elsewhere&protocol=built-in"]
    {
        let page = listed(path).await;
        assert!(page.status == StatusCode::OK && !page.body.contains(&id), "{path}: {}", page.body);
    }
    let page = listed("/console/invocations?protocol=mcp").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "no MCP upstream here: {}", page.body);
}

/// The policy simulator page: the ruling on the question in its form, from the same core as a
/// call (an unlisted `demo` write would be held), with the arguments shown back escaped; bad
/// arguments are said so; and nothing was admitted.
#[tokio::test]
async fn the_policy_page_rules_on_a_question_and_admits_nothing() {
    let h = harness().await;
    let cookie = sign_in(&h, "acme").await;
    let empty = send(&h, get("/console/policy", Some(&cookie))).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("id=\"simulate\"") && !empty.body.contains("id=\"ruling\""), "{}", empty.body);
    // The policy in force: its version, the defaults, and each list (empty here).
    assert!(empty.body.contains("<p id=\"in-force\">Policy <code>"), "{}", empty.body);
    assert!(empty.body.contains("A write no rule names is <b>sensitive</b>"), "{}", empty.body);
    assert!(empty.body.contains("<p id=\"rules\">None.</p>"), "{}", empty.body);

    let asked = "/console/policy?subject=bob&upstream=demo&operation=count&ingress=admin&arguments=%7B%22n%22%3A%22%3Cb%3E%22%7D";
    let sent = send(&h, get(asked, Some(&cookie))).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    assert!(sent.body.contains("data-decision=\"hold\""), "{}", sent.body);
    assert!(sent.body.contains("&lt;b&gt;") && !sent.body.contains("<b>\""), "arguments are escaped: {}", sent.body);

    let bad = send(&h, get("/console/policy?upstream=demo&operation=count&arguments=%5B1%5D", Some(&cookie))).await;
    assert!(bad.body.contains("must be a JSON object"), "{}", bad.body);
    let unknown = send(&h, get("/console/policy?upstream=nosuch&operation=x", Some(&cookie))).await;
    assert!(unknown.body.contains("no upstream named"), "{}", unknown.body);

    let listed = h.app.engine.list(&TenantId::new("acme").unwrap(), Default::default()).await;
    assert!(listed.is_ok_and(|p| p.items.is_empty()), "nothing was admitted");
}

/// The grants page: the operator mints a grant in the signed-in tenant (its token shown once,
/// and it works: the held write runs under it), sees it listed as active, revokes it (audited,
/// as the CLI does), and a form without its CSRF token, or another tenant's grant, changes
/// nothing.
#[tokio::test]
async fn the_operator_mints_lists_and_revokes_grants_from_the_console() {
    let h = harness().await;
    let cookie = sign_in(&h, "acme").await;
    let csrf = csrf_of(&cookie);
    let empty = send(&h, get("/console/grants", Some(&cookie))).await;
    assert!(empty.body.contains("id=\"mint\"") && empty.body.contains("No grants in this tenant"), "{}", empty.body);

    let forged = send(&h, post("/console/grants", Some(&cookie), Some(ORIGIN), "subject=agent&ceiling=critical")).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    let bad = format!("csrf={csrf}&subject=agent&ceiling=godlike");
    assert_eq!(
        send(&h, post("/console/grants", Some(&cookie), Some(ORIGIN), &bad)).await.status,
        StatusCode::BAD_REQUEST
    );

    let form = format!("csrf={csrf}&subject=agent&upstream=demo&operation=count&ceiling=sensitive&expires_in_s=600");
    let minted = send(&h, post("/console/grants", Some(&cookie), Some(ORIGIN), &form)).await;
    assert_eq!(minted.status, StatusCode::OK, "{}", minted.body);
    let token =
        minted.body.split("id=\"minted\" readonly size=\"80\" value=\"").nth(1).and_then(|r| r.split('"').next());
    let token = token.unwrap_or_else(|| panic!("no token: {}", minted.body)).to_string();
    let id = minted.body.split("Grant <code>").nth(1).and_then(|r| r.split('<').next()).unwrap_or_default().to_string();
    assert!(id.starts_with("grt_"), "{}", minted.body);

    // The grant works: the write that would wait for approval runs for `agent`.
    let body = json!({"upstream": "demo", "operation": "count", "request": {"n": 1}}).to_string();
    let req = Request::builder()
        .method("POST")
        .uri("/admin/v1/invocations")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-switchyard-tenant", "acme")
        .header("x-switchyard-subject", "agent")
        .header("switchyard-grant", token)
        .body(Body::from(body))
        .unwrap();
    let ran = send(&h, req).await;
    assert_eq!(ran.status, StatusCode::CREATED, "the grant lets it run: {}", ran.body);
    assert!(!ran.body.contains("awaiting_approval"), "{}", ran.body);

    let listed = send(&h, get("/console/grants", Some(&cookie))).await;
    assert!(listed.body.contains(&id) && listed.body.contains("<td>active</td>"), "{}", listed.body);
    let other = sign_in(&h, "globex").await;
    let elsewhere = format!("/console/grants/{id}/revoke");
    let denied = send(&h, post(&elsewhere, Some(&other), Some(ORIGIN), &format!("csrf={}", csrf_of(&other)))).await;
    assert_eq!(denied.status, StatusCode::NOT_FOUND, "another tenant's grant is not found: {}", denied.body);
    let revoked = send(&h, post(&elsewhere, Some(&cookie), Some(ORIGIN), &format!("csrf={csrf}"))).await;
    assert_eq!(revoked.status, StatusCode::SEE_OTHER, "{}", revoked.body);
    let listed = send(&h, get("/console/grants", Some(&cookie))).await;
    assert!(listed.body.contains("revoked by reviewer"), "{}", listed.body);
}

/// A harness over the configuration `text` (its data directory is added).
async fn harness_with(extra: &str) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("[server]\ndata_dir = \"{}\"\n[admin]\ntoken = \"{TOKEN}\"\n{extra}", dir.path().display());
    let cfg = Config::from_text(&text, "test", std::iter::empty()).unwrap();
    let app = App::build(&cfg).await.unwrap_or_else(|e| panic!("{e:#}"));
    Harness { router: app.router(&cfg), app, _dir: dir }
}

/// Sends `text` to the built-in echo agent with `headers` (the credential); the task's id.
async fn send_to_echo(h: &Harness, headers: &[(&str, &str)], id: &str, text: &str) -> String {
    let send_message = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}}});
    let mut req = Request::builder()
        .method("POST")
        .uri("/a2a/echo")
        .header(header::HOST, HOST)
        .header("content-type", "application/json")
        .header("a2a-version", "1.0");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let sent = send(h, req.body(Body::from(send_message.to_string())).unwrap()).await;
    let answer: Value = serde_json::from_str(&sent.body).unwrap_or_default();
    answer["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{}", sent.body)).to_string()
}

/// An A2A task as a conversation: the caller's message and the agent's answer in order, with
/// the status changes; another tenant's session gets "not found" for the same id.
#[tokio::test]
async fn an_a2a_task_reads_as_a_conversation_for_its_tenant_only() {
    let h = harness_with("[[a2a.agents]]\nname = \"echo\"\nkind = \"echo\"\n").await;
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("authorization", bearer.as_str()), ("x-switchyard-tenant", "acme")];
    let task = send_to_echo(&h, &headers, "m-console-1", "hello <console>").await;

    let cookie = sign_in(&h, "acme").await;
    let listed = send(&h, get("/console/tasks", Some(&cookie))).await;
    assert!(listed.body.contains(&format!("/console/tasks/echo/{task}")), "{}", listed.body);
    let shown = send(&h, get(&format!("/console/tasks/echo/{task}"), Some(&cookie))).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    let said = shown.body.find("hello &lt;console&gt;").unwrap_or_else(|| panic!("{}", shown.body));
    let done = shown.body.rfind("completed").unwrap_or_else(|| panic!("{}", shown.body));
    assert!(said < done, "the caller's message comes before the end: {}", shown.body);
    assert!(shown.body.contains("class=\"agent\""), "the agent's answer is a turn: {}", shown.body);

    let other = sign_in(&h, "globex").await;
    let hidden = send(&h, get(&format!("/console/tasks/echo/{task}"), Some(&other))).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.body);
    let nowhere = send(&h, get("/console/tasks/nosuch/x", Some(&cookie))).await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND);
}

/// A caller who reads only its own calls sees only its own A2A tasks: another subject's task of
/// the same tenant is neither listed nor opened (the same "not found" as a missing one).
#[tokio::test]
async fn another_subjects_task_is_neither_listed_nor_opened() {
    let key = |name: &str, secret: &str| {
        use sha2::Digest as _;
        format!(
            "[[auth.api_keys]]\nname = \"{name}\"\nsha256 = \"{}\"\ntenant = \"acme\"\nsubject = \"{name}\"\n\
             scopes = [\"invocations:read\", \"a2a:call\"]\n",
            hex::encode(sha2::Sha256::digest(secret.as_bytes()))
        )
    };
    let h = harness_with(&format!(
        "[auth]\nresource = \"http://127.0.0.1:8787\"\n{}{}\n[[a2a.agents]]\nname = \"echo\"\nkind = \"echo\"\n",
        key("amber", "amber-key-0123456789abcdef"),
        key("jade", "jade-key-0123456789abcdef0"),
    ))
    .await;
    let task =
        send_to_echo(&h, &[("authorization", "Bearer amber-key-0123456789abcdef")], "m-amber-1", "amber's own").await;
    let login = |token: &str| {
        let form = format!("token={token}&tenant=acme&name=x");
        send(&h, post("/console/login", None, Some(ORIGIN), &form))
    };
    let cookie_of = |sent: Sent| {
        let set = sent.headers.get(header::SET_COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        set.split(';').next().unwrap_or_default().to_string()
    };
    let amber = cookie_of(login("amber-key-0123456789abcdef").await);
    let jade = cookie_of(login("jade-key-0123456789abcdef0").await);
    assert!(send(&h, get("/console/tasks", Some(&amber))).await.body.contains(&task), "its own task is listed");
    assert!(!send(&h, get("/console/tasks", Some(&jade))).await.body.contains(&task), "another subject's is not");
    let theirs = send(&h, get(&format!("/console/tasks/echo/{task}"), Some(&jade))).await;
    let missing = send(&h, get("/console/tasks/echo/no-such-task", Some(&jade))).await;
    assert_eq!((theirs.status, missing.status), (StatusCode::NOT_FOUND, StatusCode::NOT_FOUND));
    assert_eq!(theirs.body.replace(&task, "ID"), missing.body.replace("no-such-task", "ID"), "exactly a miss");
    let operator = sign_in(&h, "acme").await;
    assert!(
        send(&h, get("/console/tasks", Some(&operator))).await.body.contains(&task),
        "the operator reads the tenant"
    );
}
