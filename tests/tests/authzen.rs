//! An external policy decision point over the OpenID AuthZEN Authorization API 1.0, through the
//! real binary: a small PDP on loopback (written here) decides the calls of the tenant it is
//! configured for — allow, deny with its reason, hold for approval — and a PDP that does not
//! answer in time refuses the call (fail closed). The local envelope still comes first (the PDP
//! is not asked), another tenant keeps the local tiers, concurrent decisions share requests, a
//! decision is reused within its tier's TTL, and each decision's basis names the PDP (and a
//! reuse) in the audit log.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options, TOKEN};

/// What the PDP saw: the evaluations of each request.
#[derive(Default)]
struct Seen(Mutex<Vec<Vec<Value>>>);

impl Seen {
    fn evaluations(&self) -> Vec<Value> {
        self.0.lock().map(|r| r.iter().flatten().cloned().collect()).unwrap_or_default()
    }
    fn requests(&self) -> usize {
        self.0.lock().map(|r| r.len()).unwrap_or(0)
    }
}

fn decide(e: &Value) -> Value {
    match e["resource"]["properties"]["operation"].as_str() {
        Some("count") if e["subject"]["id"] == "bob" => {
            json!({"decision": false, "context": {"reason_user": {"en-403": "bob may not count"}}})
        }
        Some("review") => json!({"decision": false, "context": {"hold": true, "reason": "a human must look"}}),
        _ => json!({"decision": true}),
    }
}

/// Serves `POST /access/v1/evaluations` on 127.0.0.1:0; `slow` operations make it answer late.
async fn pdp(seen: Arc<Seen>) -> String {
    let app = axum::Router::new().route(
        "/access/v1/evaluations",
        post(move |Json(body): Json<Value>| {
            let seen = seen.clone();
            async move {
                let evaluations = body["evaluations"].as_array().cloned().unwrap_or_default();
                if let Ok(mut r) = seen.0.lock() {
                    r.push(evaluations.clone());
                }
                if evaluations.iter().any(|e| e["resource"]["properties"]["operation"] == "slow") {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                Json(json!({"evaluations": evaluations.iter().map(decide).collect::<Vec<_>>()}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn submit(gw: &Gateway, tenant: &str, subject: &str, op: &str) -> (u16, Value) {
    submit_n(gw, tenant, subject, op, 1).await
}

async fn submit_n(gw: &Gateway, tenant: &str, subject: &str, op: &str, amount: u32) -> (u16, Value) {
    let resp = gw
        .http
        .post(format!("{}/admin/v1/invocations", gw.base))
        .bearer_auth(TOKEN)
        .header("x-switchyard-tenant", tenant)
        .header("x-switchyard-subject", subject)
        .json(&json!({"upstream": "demo", "operation": op, "request": {"amount": amount}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authzen_pdp_decides_its_tenants_calls_and_fails_closed() {
    let seen = Arc::new(Seen::default());
    let url = pdp(seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchyard.toml");
    let text = format!(
        "[policy]\n[[policy.envelope]]\noperation = \"drop_*\"\nreason = \"never\"\n\
         [policy.authzen]\nurl = \"{url}\"\ntenants = [\"default\"]\ntimeout_ms = 400\n"
    );
    std::fs::write(&config, text).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });

    // Allowed by the PDP: a write the local tiers would have held runs at once.
    let (status, body) = submit(&gw, "default", "alice", "count").await;
    assert_eq!(status, 201, "{body}");
    // Denied, with the PDP's reason; nothing admitted.
    let (status, body) = submit(&gw, "default", "bob", "count").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("bob may not count"), "{body}");
    // Held for a human.
    let (status, body) = submit(&gw, "default", "alice", "review").await;
    assert_eq!((status, body["state"]["state"].as_str()), (202, Some("awaiting_approval")), "{body}");
    let first = seen.evaluations();
    assert_eq!(first.len(), 3, "{first:#?}");
    let e = &first[0];
    assert_eq!((e["subject"]["id"].as_str(), e["action"]["name"].as_str()), (Some("alice"), Some("submit")), "{e}");
    assert_eq!(e["resource"]["id"], "demo/count");
    assert_eq!(
        (e["context"]["tier"].as_str(), e["context"]["request"]["amount"].as_i64()),
        (Some("sensitive"), Some(1))
    );

    // No answer in time: refused, in about the timeout.
    let t0 = std::time::Instant::now();
    let (status, body) = submit(&gw, "default", "alice", "slow").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("did not decide"), "{body}");
    assert!(t0.elapsed() < Duration::from_millis(1500), "{:?}", t0.elapsed());
    // The local envelope comes first: the PDP is not asked.
    let asked = seen.evaluations().len();
    let (status, _) = submit(&gw, "default", "alice", "drop_table").await;
    assert_eq!(status, 403);
    // Another tenant keeps the local tiers (an unlisted write waits for approval).
    let (status, _) = submit(&gw, "other", "alice", "count").await;
    assert_eq!(status, 202);
    assert_eq!(seen.evaluations().len(), asked, "neither call reached the PDP");

    // Concurrent decisions share requests: every one is evaluated once.
    let before = (seen.evaluations().len(), seen.requests());
    let calls = (0..40).map(|i| submit_n(&gw, "default", "alice", "echo", 100 + i));
    let statuses: Vec<u16> = futures::future::join_all(calls).await.into_iter().map(|(s, _)| s).collect();
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let (evaluations, requests) = (seen.evaluations().len() - before.0, seen.requests() - before.1);
    assert_eq!(evaluations, 40);
    println!("40 concurrent decisions took {requests} PDP requests");
    // The same calls again: decided from the cache (their tier's TTL), the PDP is not asked.
    for i in 0..40 {
        assert_eq!(submit_n(&gw, "default", "alice", "echo", 100 + i).await.0, 201);
    }
    assert_eq!(seen.evaluations().len() - before.0, 40, "reused decisions");

    // Each decision's basis names the PDP in the audit log.
    let (ok, out) = gw.cli(&["audit", "export"]);
    assert!(ok, "{out}");
    assert!(out.contains("authzen http://127.0.0.1") && out.contains("denied: bob may not count"), "{out}");
    assert_eq!(out.matches("allowed (cached)").count(), 40, "the reuse is on the record");
}
