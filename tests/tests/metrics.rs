//! `GET /metrics` of the real binary, read by Prometheus' own parser (the Python
//! `prometheus-client` 0.26.0): refused without the admin token; with it, the counts of what the
//! gateway did — rulings of the policy enforcement point, admissions, settled calls by state and
//! attempt timings — match the calls this test made.

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options, TOKEN};

const POLICY: &str = r#"
[policy]
[[policy.rules]]
upstream = "demo"
operation = "echo"
tier = "routine"
"#;

/// `(status, samples)` of a scrape with `token` (none: no credential).
async fn scrape(gw: &Gateway, token: &str) -> (u16, Vec<Value>) {
    let url = format!("{}/metrics", gw.base);
    let out = switchyard_tests::a2a::py_script("prom_scrape.py", &[&url, token]).await;
    assert!(out.status.success(), "the parser refused the exposition: {}", String::from_utf8_lossy(&out.stderr));
    let lines = switchyard_tests::a2a::lines(&out);
    let status = lines.first().and_then(|l| l["status"].as_u64()).unwrap_or(0);
    (u16::try_from(status).unwrap_or(0), lines.into_iter().skip(1).collect())
}

/// The value of sample `name` whose labels include `labels`.
fn value(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .map(|s| s["value"].as_f64().unwrap_or(0.0))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_the_gateway_did_and_prometheus_reads_them() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = dir.path().join("switchyard.toml");
    std::fs::write(&config, POLICY).unwrap_or_else(|e| panic!("{e}"));
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });

    let (status, _) = scrape(&gw, "").await;
    assert_eq!(status, 401, "no credential, no metrics");

    let (status, ran) =
        gw.submit("default", "echo", json!({"n": 1}), None, 5000).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((status, ran["state"]["state"].as_str()), (201, Some("succeeded")), "{ran}");
    let (status, held) =
        gw.submit("default", "count", json!({"n": 2}), None, 0).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 202, "{held}");
    let id = held["id"].as_str().unwrap_or_default();
    // Denied by someone other than its caller.
    let denied = gw
        .http
        .post(format!("{}/admin/v1/invocations/{id}/deny", gw.base))
        .bearer_auth(TOKEN)
        .header("x-switchyard-subject", "ops")
        .json(&json!({"reason": "no"}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(denied.status().as_u16(), 200);

    let (status, samples) = scrape(&gw, TOKEN).await;
    assert_eq!(status, 200);
    let admin = [("ingress", "admin")];
    assert_eq!(value(&samples, "switchyard_policy_decisions_total", &[admin[0], ("verdict", "allow")]), 1.0);
    assert_eq!(value(&samples, "switchyard_policy_decisions_total", &[admin[0], ("verdict", "hold")]), 1.0);
    assert_eq!(value(&samples, "switchyard_invocations_admitted_total", &[admin[0], ("upstream", "demo")]), 2.0);
    let settled =
        |state| value(&samples, "switchyard_invocations_settled_total", &[("upstream", "demo"), ("state", state)]);
    assert_eq!((settled("succeeded"), settled("failed")), (1.0, 1.0), "{samples:#?}");
    let attempts = [("upstream", "demo"), ("state", "succeeded")];
    assert_eq!(value(&samples, "switchyard_attempt_duration_seconds_count", &attempts), 1.0, "the held call never ran");
    assert!(value(&samples, "switchyard_attempt_duration_seconds_sum", &attempts) > 0.0);
}
