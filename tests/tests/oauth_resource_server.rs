//! The gateway as an OAuth protected resource, end to end: the real binary, a real local
//! issuer (discovery, JWKS, Ed25519-signed JWTs), and the admin API as the protected face.

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::issuer::TestIssuer;

const RESOURCE: &str = "https://gateway.test";
const API_KEY: &str = "sk_test_5b1f0c3e9d";

struct Setup {
    gw: Gateway,
    issuer: TestIssuer,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let issuer = TestIssuer::start().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let key_hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(API_KEY.as_bytes()))
    };
    let config = format!(
        r#"
[auth]
resource = "{RESOURCE}"
scopes_supported = ["invocations:read", "invocations:write", "invocations:reconcile"]

[[auth.issuers]]
issuer = "{issuer}"
jwks_min_refresh_ms = 0
tenants = ["red", "blue"]
introspection = {{ endpoint = "{issuer}/introspect", client_id = "{client_id}", client_secret = "{client_secret}", cache_s = 60 }}

[[auth.api_keys]]
name = "ci"
sha256 = "{key_hash}"
tenant = "green"
subject = "ci-bot"
scopes = ["invocations:read"]
"#,
        issuer = issuer.issuer,
        client_id = switchyard_tests::issuer::INTROSPECTION_CLIENT.0,
        client_secret = switchyard_tests::issuer::INTROSPECTION_CLIENT.1,
    );
    let path = dir.path().join("switchyard.toml");
    std::fs::write(&path, config).unwrap_or_else(|e| panic!("{e}"));
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(path), ..Options::default() });
    Setup { gw, issuer, _dir: dir }
}

/// Calls the admin API with a bearer credential (or none); returns status, challenge, body.
async fn call(
    gw: &Gateway,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> (u16, String, Value) {
    let mut req = gw.http.request(method.parse().unwrap_or(reqwest::Method::GET), format!("{}{path}", gw.base));
    if let Some(b) = bearer {
        req = req.bearer_auth(b);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = resp.status().as_u16();
    let challenge =
        resp.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    (status, challenge, resp.json().await.unwrap_or(Value::Null))
}

fn submit_body(key: &str) -> Option<Value> {
    Some(json!({"upstream": "demo", "operation": "echo", "request": {"k": key}, "idempotency_key": key}))
}

const RW: &str = "invocations:read invocations:write";

#[tokio::test]
async fn tokens_are_checked_and_tenants_are_isolated() {
    let s = setup().await;
    let gw = &s.gw;
    let metadata_url = format!("resource_metadata=\"{RESOURCE}/.well-known/oauth-protected-resource\"");

    // Metadata (RFC 9728), for the resource and for the admin API path.
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/admin/v1"] {
        let (status, _, doc) = call(gw, "GET", path, None, None).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(doc["resource"], RESOURCE);
        assert_eq!(doc["authorization_servers"], json!([s.issuer.issuer]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }

    // No token: 401 pointing at the metadata.
    let (status, challenge, _) = call(gw, "GET", "/admin/v1/invocations", None, None).await;
    assert_eq!(status, 401);
    assert!(challenge.starts_with("Bearer ") && challenge.contains(&metadata_url), "{challenge}");
    assert!(!challenge.contains("error="), "no error code when no token was sent: {challenge}");

    // A valid token for tenant red.
    let red = s.issuer.sign(&s.issuer.claims(RESOURCE, "red", "alice", RW, 300));
    let (status, _, inv) = call(gw, "POST", "/admin/v1/invocations?wait_ms=5000", Some(&red), submit_body("r1")).await;
    assert_eq!(status, 201, "{inv}");
    assert_eq!(inv["principal"], json!({"tenant": "red", "subject": "alice"}), "the tenant comes from the token");
    let id = inv["id"].as_str().unwrap_or_default().to_string();

    // Refused tokens: 401 invalid_token with a reason.
    let other_issuer = TestIssuer::start().await;
    let refused = [
        (
            "wrong audience",
            s.issuer.sign(&s.issuer.claims("https://elsewhere.test", "red", "alice", RW, 300)),
            "another audience",
        ),
        ("expired", s.issuer.sign(&s.issuer.claims(RESOURCE, "red", "alice", RW, -600)), "expired"),
        ("wrong issuer", other_issuer.sign(&other_issuer.claims(RESOURCE, "red", "alice", RW, 300)), "not trusted"),
        (
            "unpublished key",
            s.issuer.sign_with_unpublished_key(&s.issuer.claims(RESOURCE, "red", "alice", RW, 300)),
            "unknown",
        ),
        ("garbage", "not-a-token".to_string(), "not recognized"),
        (
            "a tenant the issuer may not name",
            s.issuer.sign(&s.issuer.claims(RESOURCE, "green", "alice", RW, 300)),
            "may not name tenant `green`",
        ),
    ];
    for (case, token, reason) in refused {
        let (status, challenge, body) = call(gw, "GET", "/admin/v1/invocations", Some(&token), None).await;
        assert_eq!(status, 401, "{case}: {body}");
        assert!(
            challenge.contains("error=\"invalid_token\"") && challenge.contains(&metadata_url),
            "{case}: {challenge}"
        );
        let msg = body["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(reason), "{case}: {msg}");
    }
    // A forged signature: red's token with blue's claims pasted in.
    let blue_claims = s.issuer.sign(&s.issuer.claims(RESOURCE, "blue", "mallory", RW, 300));
    let parts: Vec<&str> = red.split('.').collect();
    let forged = format!("{}.{}.{}", parts[0], blue_claims.split('.').nth(1).unwrap_or_default(), parts[2]);
    let (status, _, body) = call(gw, "GET", "/admin/v1/invocations", Some(&forged), None).await;
    assert_eq!(status, 401, "{body}");

    // Key rotation: a token signed with a newly published key is accepted after a re-read.
    let before = s.issuer.jwks_requests();
    s.issuer.rotate();
    let rotated = s.issuer.sign(&s.issuer.claims(RESOURCE, "red", "alice", RW, 300));
    let (status, _, body) = call(gw, "GET", &format!("/admin/v1/invocations/{id}"), Some(&rotated), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(s.issuer.jwks_requests() > before, "the unknown kid made the gateway re-read the keys");

    // Insufficient scope: 403 naming the scope needed.
    let reader = s.issuer.sign(&s.issuer.claims(RESOURCE, "red", "alice", "invocations:read", 300));
    let (status, challenge, _) = call(gw, "POST", "/admin/v1/invocations", Some(&reader), submit_body("r2")).await;
    assert_eq!(status, 403);
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"invocations:write\""),
        "{challenge}"
    );
    let (status, challenge, _) = call(
        gw,
        "POST",
        &format!("/admin/v1/invocations/{id}/reconcile"),
        Some(&red),
        Some(json!({"decision": "applied", "result": 1})),
    )
    .await;
    assert_eq!(status, 403, "reconcile needs its own scope");
    assert!(challenge.contains("invocations:reconcile"), "{challenge}");

    // Tenant isolation: blue cannot read, list, watch or cancel red's invocation — 404, not 403.
    let blue = s.issuer.sign(&s.issuer.claims(RESOURCE, "blue", "bob", RW, 300));
    for (method, path) in [
        ("GET", format!("/admin/v1/invocations/{id}")),
        ("GET", format!("/admin/v1/invocations/{id}/events")),
        ("POST", format!("/admin/v1/invocations/{id}/cancel")),
    ] {
        let (status, _, body) = call(gw, method, &path, Some(&blue), None).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
    }
    let (_, _, page) = call(gw, "GET", "/admin/v1/invocations", Some(&blue), None).await;
    assert_eq!(page["items"], json!([]));
    let (_, _, page) = call(gw, "GET", "/admin/v1/invocations", Some(&red), None).await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1));
    // A token cannot pick another tenant with the operator's header.
    let resp = gw
        .http
        .get(format!("{}/admin/v1/invocations/{id}", gw.base))
        .bearer_auth(&blue)
        .header("x-switchyard-tenant", "red")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);

    // An API key (stored hashed) maps to its tenant and scopes.
    let (status, _, page) = call(gw, "GET", "/admin/v1/invocations", Some(API_KEY), None).await;
    assert_eq!(status, 200);
    assert_eq!(page["items"], json!([]), "tenant green sees nothing of red's");
    let (status, _, _) = call(gw, "POST", "/admin/v1/invocations", Some(API_KEY), submit_body("g1")).await;
    assert_eq!(status, 403, "the key has only invocations:read");

    // The operator's admin token still works for any tenant.
    let (status, _) = gw.get("red", &format!("/admin/v1/invocations/{id}")).await.unwrap();
    assert_eq!(status, 200);

    // Upstream tool pins are gateway-wide: a tenant's token neither sees nor approves them, in
    // the admin API or in the console.
    let (status, _, _) = call(gw, "GET", "/admin/v1/upstreams", Some(&red), None).await;
    assert_eq!(status, 404);
    let (status, _, _) = call(gw, "POST", "/admin/v1/upstreams/demo/approve", Some(&red), Some(json!({}))).await;
    assert_eq!(status, 404);
    let cookie = gw.console_sign_in(&format!("token={red}")).await;
    let (status, _) = gw.console_page(&cookie, "/console/upstreams").await;
    assert_eq!(status, 403, "a tenant's token signs in, but the upstreams page is the operator's");

    // No token ever reaches the logs.
    let log = std::fs::read_to_string(gw.opts.data_dir.join("gateway.log")).unwrap_or_default();
    for token in [&red, &reader, &blue, &rotated] {
        let signature = token.rsplit('.').next().unwrap_or_default();
        assert!(!log.contains(signature), "a token signature appears in the log");
    }
    assert!(!log.contains(API_KEY));
}

/// Opaque tokens are introspected (RFC 7662) with the gateway's client credentials; active
/// answers are cached; inactive tokens and tokens for another audience are refused.
#[tokio::test]
async fn opaque_tokens_are_introspected() {
    let s = setup().await;
    let gw = &s.gw;
    let token = s.issuer.opaque(&s.issuer.claims(RESOURCE, "red", "carol", RW, 300));
    for _ in 0..3 {
        let (status, _, page) = call(gw, "GET", "/admin/v1/invocations", Some(&token), None).await;
        assert_eq!(status, 200, "{page}");
    }
    assert_eq!(s.issuer.introspections(), 1, "an active answer is reused");
    let (status, _, inv) =
        call(gw, "POST", "/admin/v1/invocations?wait_ms=5000", Some(&token), submit_body("o1")).await;
    assert_eq!(status, 201, "{inv}");
    assert_eq!(inv["principal"], json!({"tenant": "red", "subject": "carol"}));

    let (status, challenge, _) = call(gw, "GET", "/admin/v1/invocations", Some("opaque-never-issued"), None).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("invalid_token"), "{challenge}");
    let elsewhere = s.issuer.opaque(&s.issuer.claims("https://elsewhere.test", "red", "carol", RW, 300));
    let (status, _, body) = call(gw, "GET", "/admin/v1/invocations", Some(&elsewhere), None).await;
    assert_eq!(status, 401);
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("another audience"), "{body}");
    let expired = s.issuer.opaque(&s.issuer.claims(RESOURCE, "red", "carol", RW, -600));
    let (status, _, _) = call(gw, "GET", "/admin/v1/invocations", Some(&expired), None).await;
    assert_eq!(status, 401);
    let log = std::fs::read_to_string(gw.opts.data_dir.join("gateway.log")).unwrap_or_default();
    assert!(!log.contains(&token) && !log.contains(switchyard_tests::issuer::INTROSPECTION_CLIENT.1));
}

/// Artifacts sit behind the same checks: the owning tenant with `artifacts:read` gets the
/// bytes; another tenant gets 404; a token without the scope gets 403.
#[tokio::test]
async fn artifacts_are_served_to_their_tenant_only() {
    let s = setup().await;
    let gw = &s.gw;
    let red = s.issuer.sign(&s.issuer.claims(RESOURCE, "red", "alice", "invocations:write artifacts:read", 300));
    let (_, _, inv) = call(gw, "POST", "/admin/v1/invocations?wait_ms=5000", Some(&red), submit_body("art")).await;
    let inv_id = inv["id"].as_str().unwrap_or_default().to_string();
    let file = gw.opts.data_dir.join("report.txt");
    std::fs::write(&file, b"quarterly numbers").unwrap();
    let (ok, out) = gw.cli(&[
        "artifacts",
        "put",
        &file.display().to_string(),
        "--tenant",
        "red",
        "--invocation",
        &inv_id,
        "--media-type",
        "text/plain",
    ]);
    assert!(ok, "{out}");
    // The CLI prints the new artifact as JSON; its id is the one `art_…` string in it.
    let art = out.split('"').find(|w| w.starts_with("art_")).unwrap_or_default().to_string();
    assert!(art.starts_with("art_"), "{out}");

    let get = |token: String| {
        let url = format!("{}/artifacts/{art}", gw.base);
        async move { gw.http.get(url).bearer_auth(token).send().await.unwrap() }
    };
    let resp = get(red.clone()).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.text().await.unwrap_or_default(), "quarterly numbers");
    let blue = s.issuer.sign(&s.issuer.claims(RESOURCE, "blue", "bob", "artifacts:read", 300));
    assert_eq!(get(blue).await.status().as_u16(), 404, "another tenant: not found, not forbidden");
    let no_scope = s.issuer.sign(&s.issuer.claims(RESOURCE, "red", "alice", "invocations:read", 300));
    let resp = get(no_scope).await;
    assert_eq!(resp.status().as_u16(), 403);
    let challenge =
        resp.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(challenge.contains("scope=\"artifacts:read\""), "{challenge}");
    let (status, _, doc) = call(gw, "GET", "/.well-known/oauth-protected-resource/artifacts", None, None).await;
    assert_eq!((status, doc["resource"].as_str()), (200, Some(RESOURCE)));
}
