//! `GET /metrics` of the real binary, read by Prometheus' own parser (the Python
//! `prometheus-client` 0.26.0): refused without the admin token; with it, the counts of what the
//! gateway did — rulings of the policy enforcement point, admissions, calls settled as
//! succeeded, failed, unknown and canceled, attempt timings, the `unknown` gauge — match the
//! calls this test made, and the gauge falls when the unknown call is reconciled.

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options, TOKEN};

const POLICY: &str = r#"
[engine]
attempt_timeout_ms = 2000

[policy]
[[policy.rules]]
upstream = "demo"
operation = "echo"
tier = "routine"
"#;

/// `(status, samples)` of a scrape with `token` (none: no credential).
async fn scrape(gw: &Gateway, token: &str) -> (u16, Vec<Value>) {
    scrape_at(&format!("{}/metrics", gw.base), token).await
}

async fn scrape_at(url: &str, token: &str) -> (u16, Vec<Value>) {
    let out = switchyard_tests::a2a::py_script("prom_scrape.py", &[url, token]).await;
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
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchyard.toml");
    std::fs::write(&config, POLICY).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });

    let (status, _) = scrape(&gw, "").await;
    assert_eq!(status, 401, "no credential, no metrics");

    let (status, ran) = gw.submit("default", "echo", json!({"n": 1}), None, 5000).await.unwrap();
    assert_eq!((status, ran["state"]["state"].as_str()), (201, Some("succeeded")), "{ran}");
    let (status, held) = gw.submit("default", "count", json!({"n": 2}), None, 0).await.unwrap();
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
        .unwrap();
    assert_eq!(denied.status().as_u16(), 200);

    // A write whose reply does not come within the attempt timeout: unknown.
    let (status, lost) = gw.submit("default", "count", json!({"delay_ms": 6000}), None, 5000).await.unwrap();
    assert_eq!(status, 202, "{lost}");
    let lost_id = lost["id"].as_str().unwrap_or_default().to_string();
    let ops = |path: String, body: Value| {
        let req = gw.http.post(format!("{}{path}", gw.base)).bearer_auth(TOKEN).header("x-switchyard-subject", "ops");
        async move { req.json(&body).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(ops(format!("/admin/v1/invocations/{lost_id}/approve"), json!({})).await, 200);
    let mut state = Value::Null;
    for _ in 0..100 {
        state = gw.get("default", &format!("/admin/v1/invocations/{lost_id}")).await.unwrap().1;
        if state["state"]["state"] == "unknown" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(state["state"]["state"], "unknown", "{state}");
    // A held call canceled before anyone decided.
    let (_, held) = gw.submit("default", "count", json!({"n": 3}), None, 0).await.unwrap();
    let held_id = held["id"].as_str().unwrap_or_default().to_string();
    assert_eq!(ops(format!("/admin/v1/invocations/{held_id}/cancel"), json!({})).await, 200);

    let (status, samples) = scrape(&gw, TOKEN).await;
    assert_eq!(status, 200);
    let admin = [("ingress", "admin")];
    assert_eq!(value(&samples, "switchyard_policy_decisions_total", &[admin[0], ("verdict", "allow")]), 1.0);
    assert_eq!(value(&samples, "switchyard_policy_decisions_total", &[admin[0], ("verdict", "hold")]), 3.0);
    assert_eq!(value(&samples, "switchyard_invocations_admitted_total", &[admin[0], ("upstream", "demo")]), 4.0);
    let settled =
        |state| value(&samples, "switchyard_invocations_settled_total", &[("upstream", "demo"), ("state", state)]);
    let counts = (settled("succeeded"), settled("failed"), settled("unknown"), settled("canceled"));
    assert_eq!(counts, (1.0, 1.0, 1.0, 1.0), "{samples:#?}");
    assert_eq!(value(&samples, "switchyard_invocations_unknown", &[("upstream", "demo")]), 1.0, "the unknown gauge");
    let attempts = [("upstream", "demo"), ("state", "succeeded")];
    assert_eq!(value(&samples, "switchyard_attempt_duration_seconds_count", &attempts), 1.0, "the held call never ran");
    assert!(value(&samples, "switchyard_attempt_duration_seconds_sum", &attempts) > 0.0);
    let lost_attempts = [("upstream", "demo"), ("state", "unknown")];
    assert_eq!(value(&samples, "switchyard_attempt_duration_seconds_count", &lost_attempts), 1.0);

    // Reconciled: the gauge falls back to nothing, the call counts again as what it came to.
    let status = ops(
        format!("/admin/v1/invocations/{lost_id}/reconcile"),
        json!({"decision": "not_applied", "message": "the upstream has no record"}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, samples) = scrape(&gw, TOKEN).await;
    assert_eq!(value(&samples, "switchyard_invocations_unknown", &[("upstream", "demo")]), 0.0);
    let failed = value(&samples, "switchyard_invocations_settled_total", &[("upstream", "demo"), ("state", "failed")]);
    assert_eq!(failed, 2.0, "the reconciled call counts as failed too");
}

/// The rest of the gateway as Prometheus sees it: A2A push deliveries by outcome and the
/// outbox's depth (a webhook that fails twice, then acknowledges), an A2A stream open while a
/// client follows a task and gone once it leaves, and an MCP upstream's sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_deliveries_open_streams_and_upstream_sessions_are_counted() {
    use std::time::Duration;
    use switchyard_tests::a2a::{Webhook, message, rpc, write_config};
    use switchyard_tests::mcp::{UpstreamSpec, call, connect};
    let dir = tempfile::tempdir().unwrap();
    let a2a = write_config(dir.path(), "", "anonymous = true");
    let mcp = switchyard_tests::mcp::write_config(dir.path(), &[UpstreamSpec::stdio("fx", &[])], "");
    let text = format!(
        "{}\n{}",
        std::fs::read_to_string(&mcp).unwrap_or_default(),
        std::fs::read_to_string(&a2a).unwrap_or_default()
    );
    std::fs::write(&a2a, text).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(a2a), ..Options::default() });
    let url = format!("{}/a2a/tck", gw.base);

    // Push: two failed attempts, then three deliveries.
    let hook = Webhook::start(2).await;
    let push = json!({"message": message("tck-stream-001"), "configuration": {"taskPushNotificationConfig": {"url": hook.url}}});
    let (_, sent) = rpc(&gw.http, &url, None, "SendMessage", push).await;
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    for _ in 0..150 {
        if hook.hits().iter().filter(|h| h.status == 200).count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, samples) = scrape(&gw, TOKEN).await;
    let pushes = |outcome| value(&samples, "switchyard_push_deliveries_total", &[("outcome", outcome)]);
    assert_eq!((pushes("delivered"), pushes("failed"), pushes("given_up")), (3.0, 2.0, 0.0), "{samples:#?}");
    assert_eq!(value(&samples, "switchyard_push_outbox_pending", &[]), 0.0);

    // A stream: a client follows a task that waits for input, then leaves.
    let (_, waiting) =
        rpc(&gw.http, &url, None, "SendMessage", json!({"message": message("tck-input-required")})).await;
    let task = waiting["result"]["task"]["id"].as_str().unwrap_or_default().to_string();
    assert!(!task.is_empty(), "{waiting}");
    let mut follow = gw
        .http
        .post(&url)
        .header("a2a-version", "1.0")
        .header("accept", "text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task}}))
        .send()
        .await
        .unwrap();
    let first = follow.chunk().await.unwrap().unwrap_or_default();
    assert!(String::from_utf8_lossy(&first).contains("data:"), "the stream began");
    let (_, samples) = scrape(&gw, TOKEN).await;
    assert_eq!(value(&samples, "switchyard_a2a_open_streams", &[]), 1.0, "one stream open");
    drop(follow);
    let mut open = 1.0;
    for _ in 0..50 {
        open = value(&scrape(&gw, TOKEN).await.1, "switchyard_a2a_open_streams", &[]);
        if open == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(open, 0.0, "the stream is counted until its client leaves");

    // MCP: after a call, its session is back in the pool, idle.
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let answer = client.call_tool(call("fx__echo", json!({"text": "hi"}))).await;
    assert!(answer.is_ok(), "{answer:?}");
    let (_, samples) = scrape(&gw, TOKEN).await;
    let sessions = |state| value(&samples, "switchyard_mcp_upstream_sessions", &[("upstream", "fx"), ("state", state)]);
    assert_eq!((sessions("in_use"), sessions("idle")), (0.0, 1.0), "{samples:#?}");
    assert!(value(&samples, "switchyard_mcp_upstream_sessions_max", &[("upstream", "fx")]) >= 1.0);
    assert!(samples.iter().any(|s| s["name"] == "switchyard_artifact_bytes_total"), "artifact bytes are exposed");
}

/// With `server.metrics_listen`, `/metrics` is served there only (still behind a credential).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_have_a_listener_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let port = switchyard_tests::gateway::free_port();
    let config = dir.path().join("switchyard.toml");
    std::fs::write(&config, format!("[server]\nmetrics_listen = \"127.0.0.1:{port}\"\n")).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let main = gw.http.get(format!("{}/metrics", gw.base)).bearer_auth(TOKEN).send().await;
    assert_eq!(main.map(|r| r.status().as_u16()).ok(), Some(404), "not on the main listener");
    let own = format!("http://127.0.0.1:{port}/metrics");
    let (status, _) = scrape_at(&own, "").await;
    assert_eq!(status, 401, "still behind a credential");
    let (status, samples) = scrape_at(&own, TOKEN).await;
    assert_eq!(status, 200);
    assert!(samples.iter().any(|s| s["name"] == "switchyard_lease_takeovers_total"), "{samples:#?}");
}

/// A bridged call is counted under the protocol its caller spoke: an MCP client's message to an
/// A2A agent (the built-in echo agent, as an MCP upstream) is an `mcp` admission and ruling,
/// though it passes the A2A face's checks; an A2A client's message to the same agent is `a2a`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_mcp_call_is_counted_as_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchyard.toml");
    let text = "[mcp]\nanonymous = true\n\n[a2a]\nanonymous = true\n\n[[a2a.agents]]\nname = \"echo\"\nkind = \"echo\"\n\n\
                [[mcp.upstreams]]\nname = \"assistant\"\nkind = \"a2a\"\nagent = \"echo\"\n";
    std::fs::write(&config, text).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let client = switchyard_tests::mcp::connect(&format!("{}/mcp", gw.base), true).await;
    for i in 0..2 {
        let params = switchyard_tests::mcp::call("assistant__send_message", json!({"text": format!("hi {i}")}));
        let r = client.call_tool(params).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
    let message = switchyard_tests::a2a::message("direct");
    let (status, sent) = switchyard_tests::a2a::rpc(
        &gw.http,
        &format!("{}/a2a/echo", gw.base),
        None,
        "SendMessage",
        json!({"message": message}),
    )
    .await;
    assert_eq!(status, 200, "{sent}");
    let (_, samples) = scrape(&gw, TOKEN).await;
    let upstream = ("upstream", "a2a-agent-echo");
    let admitted =
        |ingress| value(&samples, "switchyard_invocations_admitted_total", &[("ingress", ingress), upstream]);
    assert_eq!((admitted("mcp"), admitted("a2a")), (2.0, 1.0), "{samples:#?}");
    let decided = |ingress| value(&samples, "switchyard_policy_decisions_total", &[("ingress", ingress)]);
    assert_eq!((decided("mcp"), decided("a2a")), (2.0, 1.0), "{samples:#?}");
}
