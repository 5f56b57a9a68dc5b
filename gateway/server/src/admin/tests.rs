//! Admin API tests against the real router and a real SQLite store, through `oneshot`.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::app::App;
use crate::config::Config;

const TOKEN: &str = "test-token-0123456789";

struct Harness {
    router: axum::Router,
    _dir: tempfile::TempDir,
}

async fn harness(body_limit: usize) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    cfg.server.data_dir = dir.path().to_path_buf();
    cfg.server.body_limit_bytes = body_limit;
    cfg.admin.token.0 = TOKEN.into();
    let app = App::build(&cfg).await.unwrap_or_else(|e| panic!("{e:#}"));
    Harness { router: app.router(&cfg), _dir: dir }
}

async fn call(h: &Harness, method: &str, uri: &str, tenant: &str, body: Option<String>) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-switchyard-tenant", tenant)
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap();
    let resp = h.router.clone().oneshot(req).await.unwrap_or_else(|e| match e {});
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap_or_default();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn submit(op: &str, key: &str, request: Value) -> Option<String> {
    Some(json!({"upstream": "demo", "operation": op, "request": request, "idempotency_key": key}).to_string())
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_401_with_a_challenge() {
    let h = harness(4096).await;
    for auth in [None, Some("Bearer nope"), Some(TOKEN)] {
        let mut req = Request::builder().uri("/admin/v1/invocations");
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = h.router.clone().oneshot(req.body(Body::empty()).unwrap_or_default()).await;
        let resp = resp.unwrap_or_else(|e| match e {});
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert!(resp.headers().get("www-authenticate").is_some());
    }
}

#[tokio::test]
async fn bad_input_is_400_and_changes_nothing() {
    let h = harness(4096).await;
    let cases = [
        Some("not json".to_string()),
        Some(json!({"upstream": "demo"}).to_string()),
        Some(json!({"upstream": "demo", "operation": "echo", "extra": 1}).to_string()),
        submit("echo", "has space", json!({})),
    ];
    for body in cases {
        let (status, v) = call(&h, "POST", "/admin/v1/invocations", "t", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
        assert_eq!(v["error"]["kind"], "invalid_input");
    }
    let (status, _) = call(&h, "POST", "/admin/v1/invocations", "bad tenant", submit("echo", "k", json!({}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(&h, "GET", "/admin/v1/invocations/inv_nothex", "t", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(&h, "GET", "/admin/v1/invocations?limit=0", "t", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, v) =
        call(&h, "POST", "/admin/v1/invocations", "t", Some(json!({"upstream": "nope", "operation": "x"}).to_string()))
            .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{v}");
    let (_, page) = call(&h, "GET", "/admin/v1/invocations", "t", None).await;
    assert_eq!(page["items"], json!([]), "nothing was admitted");
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let h = harness(2048).await;
    let (status, v) =
        call(&h, "POST", "/admin/v1/invocations", "t", submit("echo", "k", json!({"pad": "x".repeat(4096)}))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
}

#[tokio::test]
async fn g2_same_key_is_one_invocation_and_a_different_body_is_409() {
    let h = harness(4096).await;
    let (s1, first) =
        call(&h, "POST", "/admin/v1/invocations?wait_ms=5000", "t", submit("count", "order-1", json!({"n": 1}))).await;
    assert_eq!(s1, StatusCode::CREATED);
    assert_eq!(first["state"]["state"], "succeeded");
    let (s2, again) = call(&h, "POST", "/admin/v1/invocations", "t", submit("count", "order-1", json!({"n": 1}))).await;
    assert_eq!(s2, StatusCode::OK);
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["state"], first["state"], "the retry gets the original result");
    let (s3, conflict) =
        call(&h, "POST", "/admin/v1/invocations", "t", submit("count", "order-1", json!({"n": 2}))).await;
    assert_eq!(s3, StatusCode::CONFLICT);
    let msg = conflict["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("order-1") && msg.contains("different request"), "{msg}");
    let (_, page) = call(&h, "GET", "/admin/v1/invocations", "t", None).await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn get_with_wait_ms_answers_once_the_invocation_settles_and_only_its_tenant() {
    let h = harness(4096).await;
    let (status, inv) = call(&h, "POST", "/admin/v1/invocations", "red", submit("echo", "w1", json!({}))).await;
    assert_eq!(status, StatusCode::CREATED, "{inv}");
    let path = format!("/admin/v1/invocations/{}", inv["id"].as_str().unwrap_or_default());
    let (status, done) = call(&h, "GET", &format!("{path}?wait_ms=5000"), "red", None).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["state"]["state"], "succeeded", "{done}");
    let (status, _) = call(&h, "GET", &format!("{path}?wait_ms=5000"), "blue", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another tenant's invocation is not waited on");
    let (status, err) = call(&h, "GET", &format!("{path}?wait_ms=999999999"), "red", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert!(err["error"]["message"].as_str().unwrap_or_default().contains("wait_ms must be at most"), "{err}");
    let (status, _) = call(&h, "GET", &format!("{path}?wait=1"), "red", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unknown parameters are refused");
}

#[tokio::test]
async fn other_tenants_get_404_and_reconcile_refuses_settled_invocations() {
    let h = harness(4096).await;
    let (_, inv) = call(&h, "POST", "/admin/v1/invocations?wait_ms=5000", "red", submit("echo", "k", json!({}))).await;
    let id = inv["id"].as_str().unwrap_or_default().to_string();
    for (method, path) in [
        ("GET", format!("/admin/v1/invocations/{id}")),
        ("GET", format!("/admin/v1/invocations/{id}/events")),
        ("POST", format!("/admin/v1/invocations/{id}/cancel")),
    ] {
        let (status, _) = call(&h, method, &path, "blue", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
    }
    let decision = Some(json!({"decision": "applied", "result": 1}).to_string());
    let (status, v) = call(&h, "POST", &format!("/admin/v1/invocations/{id}/reconcile"), "red", decision).await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let (status, events) = call(&h, "GET", &format!("/admin/v1/invocations/{id}/events"), "red", None).await;
    assert_eq!(status, StatusCode::OK);
    let seqs: Vec<u64> =
        events.as_array().map(|a| a.iter().filter_map(|e| e["seq"].as_u64()).collect()).unwrap_or_default();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(seqs.len() >= 3);
}

#[tokio::test]
async fn cancel_in_flight_is_confirmed_by_the_demo_upstream() {
    let h = harness(4096).await;
    let (_, inv) =
        call(&h, "POST", "/admin/v1/invocations", "t", submit("count", "slow", json!({"delay_ms": 20_000}))).await;
    let id = inv["id"].as_str().unwrap_or_default().to_string();
    // Wait until the attempt is recorded, then cancel.
    for _ in 0..100 {
        let (_, now) = call(&h, "GET", &format!("/admin/v1/invocations/{id}"), "t", None).await;
        if now["state"]["state"] == "dispatching" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (status, _) = call(&h, "POST", &format!("/admin/v1/invocations/{id}/cancel"), "t", None).await;
    assert!(status == StatusCode::ACCEPTED || status == StatusCode::OK);
    let mut last = Value::Null;
    for _ in 0..100 {
        (_, last) = call(&h, "GET", &format!("/admin/v1/invocations/{id}"), "t", None).await;
        if last["state"]["state"] == "canceled" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(last["state"]["state"], "canceled", "{last}");
    assert_eq!(last["cancel"]["by"]["tenant"], "t");
}

#[tokio::test]
async fn metrics_count_what_the_engine_did_for_the_operator_only() {
    let h = harness(4096).await;
    let (status, _) =
        call(&h, "POST", "/admin/v1/invocations?wait_ms=5000", "t1", submit("echo", "m1", json!({}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) =
        call(&h, "POST", "/admin/v1/invocations?wait_ms=5000", "t1", submit("echo", "m1", json!({}))).await;
    assert_eq!(status, StatusCode::OK, "the same key attaches");
    let scrape = |auth: Option<&str>| {
        let mut req = Request::builder().uri("/metrics");
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        h.router.clone().oneshot(req.body(Body::empty()).unwrap_or_default())
    };
    let refused = scrape(None).await.unwrap_or_else(|e| match e {});
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let resp = scrape(Some(&format!("Bearer {TOKEN}"))).await.unwrap_or_else(|e| match e {});
    assert_eq!(resp.status(), StatusCode::OK);
    let text = String::from_utf8_lossy(&axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap_or_default())
        .into_owned();
    for line in [
        "switchyard_invocations_admitted_total{ingress=\"admin\",upstream=\"demo\"} 1",
        "switchyard_invocations_settled_total{upstream=\"demo\",state=\"succeeded\"} 1",
        "switchyard_attempt_duration_seconds_count{upstream=\"demo\",state=\"succeeded\"} 1",
        "switchyard_policy_decisions_total{ingress=\"admin\",verdict=\"allow\"} 2",
        "switchyard_commit_duration_seconds_count{what=\"admission\"} 2",
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
}

/// The policy of [`with_policy`]: `demo` writes wait for approval, `count` is routine, a
/// `delay_ms` above 1000 is denied, one call per second per tenant.
const POLICY: &str = r#"[policy]
[[policy.rules]]
id = "slow-is-refused"
upstream = "demo"
deny = true
reason = "too slow"
[[policy.rules.when]]
pointer = "/delay_ms"
min = 1001
[[policy.rules]]
upstream = "demo"
operation = "count"
tier = "routine"
[[policy.quotas]]
id = "one-a-second"
upstream = "demo"
rate_per_s = 1.0
burst = 1
"#;

async fn with_policy() -> Harness {
    policy_harness(POLICY).await
}

/// A harness whose configuration adds `policy` (TOML).
async fn policy_harness(policy: &str) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("[server]\ndata_dir = \"{}\"\n[admin]\ntoken = \"{TOKEN}\"\n{policy}", dir.path().display());
    let cfg = Config::from_text(&text, "test", std::iter::empty()).unwrap();
    let app = App::build(&cfg).await.unwrap_or_else(|e| panic!("{e:#}"));
    Harness { router: app.router(&cfg), _dir: dir }
}

/// The policy simulator answers what a call would be told — allowed, held, denied with the
/// rule, deferred by an empty quota — from the same core, and changes nothing: no invocation,
/// no quota token spent (the same question asked twice gets the same answer, and a real call
/// afterwards still has its token).
#[tokio::test]
async fn the_policy_simulator_rules_like_a_call_and_changes_nothing() {
    let h = with_policy().await;
    let decide = |body: Value| {
        let h = &h;
        async move { call(h, "POST", "/admin/v1/policy/decide", "acme", Some(body.to_string())).await }
    };
    let count = json!({"upstream": "demo", "operation": "count", "request": {"delay_ms": 0}});
    for _ in 0..3 {
        let (status, got) = decide(count.clone()).await;
        assert_eq!(status, StatusCode::OK, "{got}");
        assert_eq!(got["decision"], "allow", "{got}");
        assert!(got["basis"].as_str().is_some_and(|b| b.contains("tier routine")), "{got}");
        assert_eq!(got["target"]["effect"], "write", "{got}");
    }
    let (_, held) =
        decide(json!({"upstream": "demo", "operation": "wipe", "subject": "bob", "request": {"delay_ms": 0}})).await;
    assert_eq!((held["decision"].clone(), held["subject"]["subject"].clone()), (json!("hold"), json!("bob")), "{held}");
    let (_, denied) = decide(json!({"upstream": "demo", "operation": "count", "request": {"delay_ms": 5000}})).await;
    assert_eq!(denied["decision"], "deny", "{denied}");
    assert!(denied["reason"].as_str().is_some_and(|r| r.contains("too slow")), "{denied}");
    assert!(denied["basis"].as_str().is_some_and(|b| b.contains("slow-is-refused")), "{denied}");
    // Nothing was admitted, and the quota's one token is still there for a real call.
    let (_, listed) = call(&h, "GET", "/admin/v1/invocations", "acme", None).await;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(0), "{listed}");
    let (status, _) =
        call(&h, "POST", "/admin/v1/invocations", "acme", submit("count", "k1", json!({"delay_ms": 0}))).await;
    assert_eq!(status, StatusCode::CREATED);
    // Now it is spent: the simulator says so, without spending more.
    let (_, deferred) = decide(count.clone()).await;
    assert_eq!(deferred["decision"], "defer", "{deferred}");
    assert!(deferred["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0), "{deferred}");
    // Bad input changes nothing and says what is wrong.
    for bad in [
        json!({"upstream": "demo"}),
        json!({"upstream": "nosuch", "operation": "count"}),
        json!({"upstream": "demo", "operation": "count", "request": {}, "arguments": {}}),
        json!({"upstream": "demo", "operation": "count", "ingress": "carrier-pigeon"}),
    ] {
        let (status, got) = decide(bad.clone()).await;
        assert!(status.is_client_error(), "{bad}: {status} {got}");
    }
}

/// The simulator and the admission decide alike: each case is asked first, then submitted, and
/// the submission is told what the simulator said (allow → 201, hold → 202, deny → 403, defer →
/// 429) — over the shipped `config/policy.toml` (a routine read, a held write, the envelope) and
/// over [`POLICY`] (a deny rule on an argument, and a quota whose one token the first admission
/// spends, so both then defer).
#[tokio::test]
async fn the_simulator_and_the_admission_decide_alike() {
    let shipped = include_str!("../../../../config/policy.toml");
    let cases: [(&str, &[(&str, Value)]); 2] = [
        (
            shipped,
            &[
                ("echo", json!({"n": 1})),
                ("count", json!({"n": 1})),
                ("drop_table", json!({})),
                ("echo", json!({"n": 2})),
            ],
        ),
        (
            POLICY,
            &[
                ("count", json!({"delay_ms": 0})),
                ("count", json!({"delay_ms": 0})),
                ("count", json!({"delay_ms": 5000})),
                ("wipe", json!({"delay_ms": 0})),
            ],
        ),
    ];
    for (policy, calls) in cases {
        let h = policy_harness(policy).await;
        let mut seen = Vec::new();
        for (i, (op, request)) in calls.iter().enumerate() {
            let asked = json!({"upstream": "demo", "operation": op, "request": request});
            let (_, said) = call(&h, "POST", "/admin/v1/policy/decide", "acme", Some(asked.to_string())).await;
            let (status, _) =
                call(&h, "POST", "/admin/v1/invocations", "acme", submit(op, &format!("k{i}"), request.clone())).await;
            let expected = match said["decision"].as_str() {
                Some("allow") => StatusCode::CREATED,
                Some("hold") => StatusCode::ACCEPTED,
                Some("deny") => StatusCode::FORBIDDEN,
                Some("defer") => StatusCode::TOO_MANY_REQUESTS,
                other => panic!("{op}: no decision: {other:?} in {said}"),
            };
            assert_eq!(status, expected, "{op} {request}: the simulator said {said}");
            seen.push(said["decision"].as_str().unwrap_or_default().to_string());
        }
        let all: std::collections::BTreeSet<&str> = seen.iter().map(String::as_str).collect();
        assert!(all.len() >= 3, "the cases cover several decisions: {seen:?}");
    }
}
